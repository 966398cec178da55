"""Layer norm's backward on long rows with each row split across programs: the last
program to finish its slice of a row block computes the block's dx.

The example's stage 1 holds a whole row per program (at N = 16384 its four pieces, with
their dW/dB accumulators, do not fit in the registers: sm90_registers.py). Here program
(group, part) owns CHUNK columns of every row of its group's row blocks (ROWS rows each):
it loads x and dy for its slice only, adds to its slice's dW/dB accumulators (they need
no c1 or c2), and stores its shares of the block's two row sums (sum(g * x_hat),
sum(g), g = dy * w). It then adds one to the block's counter (an atomic, after a barrier
so that every thread's shares are stored first). The program that finds the counter at
SPLIT - 1 is the last: every share is stored, so it adds them up (in slice order: the
same sums on every run) and writes dx for the whole block, re-reading x and dy, which the
other slices' programs have just read (L2). No program waits for another, so any grid
runs, and the interpreter (one program after another) runs it too. The partial dW/dB
rows are summed by the example's own stage 2.

Every candidate's dx, dW and dB are checked against the example's launcher first; then
the candidates and the example are timed in interleaved passes (do_bench median, CUDA
graph), beside a device-to-device copy timed in the same run (the benchmarks' copy
ceiling). GB/s by the bytes the backward must move: read x and dy, write dx.

Usage (repository root, a CUDA GPU): python benchmarks/evidence/layer-norm/split_rows.py --out DIR
[--budget S] [--smoke]. Writes DIR/split_rows.json (one point per line).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))
if "--smoke" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import layer_norm as ex  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from scripts import probe_common as pc  # noqa: E402


@triton.jit
def split_rows_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    sums_ptr,  # [n_blocks, SPLIT, 2, ROWS] fp32: each slice's shares of the two sums
    count_ptr,  # [n_blocks] int32, zeros: slices of the block done
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    ROWS: tl.constexpr, CHUNK: tl.constexpr, SPLIT: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    part = tl.program_id(0) % SPLIT
    group = tl.program_id(0) // SPLIT
    n_groups = tl.num_programs(0) // SPLIT
    c = tl.arange(0, CHUNK)
    r = tl.arange(0, ROWS)
    cols = part * CHUNK + c
    cmask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([CHUNK], dtype=tl.float32)
    db_acc = tl.zeros([CHUNK], dtype=tl.float32)
    n_blocks = tl.cdiv(n_rows, ROWS)
    for blk in tl.range(group, n_blocks, n_groups, num_stages=NUM_STAGES):
        rows = (blk * ROWS + r).to(tl.int64)
        rmask = rows < n_rows
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
        dy = tl.load(dy_ptr + rows[:, None] * stride_dym + cols[None, :], mask=mask,
                     other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + rows, mask=rmask, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
        x_hat = tl.where(mask, (x.to(tl.float32) - mean[:, None]) * rstd[:, None], 0.0)
        g = dy * w[None, :]
        dw_acc += tl.sum(dy * x_hat, axis=0)
        db_acc += tl.sum(dy, axis=0)
        share = (tl.cast(blk, tl.int64) * SPLIT + part) * 2 * ROWS
        tl.store(sums_ptr + share + r, tl.sum(g * x_hat, axis=1))
        tl.store(sums_ptr + share + ROWS + r, tl.sum(g, axis=1))
        tl.debug_barrier()  # every thread's shares stored before the counter moves
        done = tl.atomic_add(count_ptr + blk, 1, sem="acq_rel", scope="gpu")
        if done == SPLIT - 1:  # the last slice of this block: every share is in
            c1 = tl.zeros([ROWS], dtype=tl.float32)
            c2 = tl.zeros([ROWS], dtype=tl.float32)
            first = tl.cast(blk, tl.int64) * SPLIT * 2 * ROWS
            for p in tl.static_range(SPLIT):
                c1 += tl.load(sums_ptr + first + p * 2 * ROWS + r, cache_modifier=".cg")
                c2 += tl.load(sums_ptr + first + p * 2 * ROWS + ROWS + r, cache_modifier=".cg")
            c1 = c1 / n_cols
            c2 = c2 / n_cols
            for p in range(SPLIT):
                pc = p * CHUNK + c
                pm = rmask[:, None] & (pc < n_cols)[None, :]
                xp = tl.load(x_ptr + rows[:, None] * stride_xm + pc[None, :], mask=pm, other=0.0)
                dyp = tl.load(dy_ptr + rows[:, None] * stride_dym + pc[None, :], mask=pm,
                              other=0.0).to(tl.float32)
                wp = tl.load(w_ptr + pc, mask=pc < n_cols, other=0.0).to(tl.float32)
                xh = (xp.to(tl.float32) - mean[:, None]) * rstd[:, None]
                dxp = (dyp * wp[None, :] - (xh * c1[:, None] + c2[:, None])) * rstd[:, None]
                tl.store(dx_ptr + rows[:, None] * stride_dxm + pc[None, :],
                         dxp.to(dx_ptr.dtype.element_ty), mask=pm)
    out = group.to(tl.int64) * n_cols + cols
    tl.store(dw_part_ptr + out, dw_acc, mask=cmask)
    tl.store(db_part_ptr + out, db_acc, mask=cmask)


@triton.jit
def split_rows_fwd_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr,
    stats_ptr,  # [n_blocks, SPLIT, 2, ROWS] fp32: each slice's sum and centred sum of squares
    count_ptr,  # [n_blocks] int32, zeros
    n_rows, n_cols, stride_xm, stride_ym, eps,
    ROWS: tl.constexpr, CHUNK: tl.constexpr, SPLIT: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    """The forward the same way: each slice stores its sum and its sum of squares about
    its own mean; the last slice of a block combines them (Chan's formula, in slice order),
    stores mean and rstd, and writes y for the whole block, re-reading x (L2)."""
    part = tl.program_id(0) % SPLIT
    group = tl.program_id(0) // SPLIT
    n_groups = tl.num_programs(0) // SPLIT
    c = tl.arange(0, CHUNK)
    r = tl.arange(0, ROWS)
    cols = part * CHUNK + c
    cmask = cols < n_cols
    n_blocks = tl.cdiv(n_rows, ROWS)
    for blk in tl.range(group, n_blocks, n_groups, num_stages=NUM_STAGES):
        rows = (blk * ROWS + r).to(tl.int64)
        rmask = rows < n_rows
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask,
                    other=0.0).to(tl.float32)
        n_own = tl.minimum(n_cols - part * CHUNK, CHUNK).to(tl.float32)
        s = tl.sum(x, axis=1)
        d = tl.where(mask, x - (s / n_own)[:, None], 0.0)
        share = (tl.cast(blk, tl.int64) * SPLIT + part) * 2 * ROWS
        tl.store(stats_ptr + share + r, s)
        tl.store(stats_ptr + share + ROWS + r, tl.sum(d * d, axis=1))
        tl.debug_barrier()
        done = tl.atomic_add(count_ptr + blk, 1, sem="acq_rel", scope="gpu")
        if done == SPLIT - 1:
            first = tl.cast(blk, tl.int64) * SPLIT * 2 * ROWS
            total = tl.zeros([ROWS], dtype=tl.float32)
            for p in tl.static_range(SPLIT):
                total += tl.load(stats_ptr + first + p * 2 * ROWS + r, cache_modifier=".cg")
            mean = total / n_cols
            m2 = tl.zeros([ROWS], dtype=tl.float32)
            for p in tl.static_range(SPLIT):
                n_p = tl.minimum(n_cols - p * CHUNK, CHUNK).to(tl.float32)
                s_p = tl.load(stats_ptr + first + p * 2 * ROWS + r, cache_modifier=".cg")
                q_p = tl.load(stats_ptr + first + p * 2 * ROWS + ROWS + r, cache_modifier=".cg")
                dm = s_p / n_p - mean
                m2 += q_p + n_p * dm * dm
            rstd = tl.rsqrt(m2 / n_cols + tl.cast(eps, tl.float32))
            tl.store(mean_ptr + rows, mean, mask=rmask)
            tl.store(rstd_ptr + rows, rstd, mask=rmask)
            for p in range(SPLIT):
                pc = p * CHUNK + c
                pm = rmask[:, None] & (pc < n_cols)[None, :]
                xp = tl.load(x_ptr + rows[:, None] * stride_xm + pc[None, :], mask=pm,
                             other=0.0).to(tl.float32)
                wp = tl.load(w_ptr + pc, mask=pc < n_cols, other=0.0).to(tl.float32)
                bp = tl.load(b_ptr + pc, mask=pc < n_cols, other=0.0).to(tl.float32)
                yp = (xp - mean[:, None]) * rstd[:, None] * wp[None, :] + bp[None, :]
                tl.store(y_ptr + rows[:, None] * stride_ym + pc[None, :],
                         yp.to(y_ptr.dtype.element_ty), mask=pm)


def split_rows_fwd(x, w, b, rows, chunk, warps, per_sm, stages, eps=1e-5):
    """(y, mean, rstd) from split_rows_fwd_kernel."""
    m, n = x.shape
    split = triton.cdiv(n, chunk)
    n_blocks = triton.cdiv(m, rows)
    groups = max(1, min(n_blocks, ex._sm_count(x.device) * per_sm // split))
    y = torch.empty_like(x)
    mean = torch.empty(m, device=x.device, dtype=torch.float32)
    rstd = torch.empty(m, device=x.device, dtype=torch.float32)
    stats = torch.empty(n_blocks * split * 2 * rows, device=x.device, dtype=torch.float32)
    count = torch.zeros(n_blocks, device=x.device, dtype=torch.int32)
    COMPILED[("fwd", rows, chunk, warps, per_sm, stages)] = split_rows_fwd_kernel[(groups * split,)](
        x, y, w, b, mean, rstd, stats, count, m, n, x.stride(0), n, eps,
        ROWS=rows, CHUNK=chunk, SPLIT=split, NUM_STAGES=stages, num_warps=warps,
        maxnreg=max_registers(warps, per_sm))
    return y, mean, rstd


def max_registers(warps: int, per_sm: int) -> int:
    """The most registers per thread that let ``per_sm`` programs of ``warps`` warps share an
    SM's 65,536 (a multiple of 8, at most 255): passed to ptxas as ``maxnreg``, so the grid
    below is resident at once (it may spill; the kernel's counts are recorded)."""
    return min(255, 65536 // (32 * warps * per_sm) // 8 * 8)


COMPILED = {}  # setting -> the compiled stage 1 (its n_regs and n_spills)


def split_rows_bwd(dy, x, w, mean, rstd, rows, chunk, warps, per_sm, stages):
    """(dx, dw, db): the split-row stage 1 above, then the example's stage 2."""
    m, n = x.shape
    split = triton.cdiv(n, chunk)
    n_blocks = triton.cdiv(m, rows)
    groups = max(1, min(n_blocks, ex._sm_count(x.device) * per_sm // split))
    dx = torch.empty_like(x)
    dw_part = torch.empty(groups, n, device=x.device, dtype=torch.float32)
    db_part = torch.empty(groups, n, device=x.device, dtype=torch.float32)
    sums = torch.empty(n_blocks * split * 2 * rows, device=x.device, dtype=torch.float32)
    count = torch.zeros(n_blocks, device=x.device, dtype=torch.int32)
    COMPILED[(rows, chunk, warps, per_sm, stages)] = split_rows_kernel[(groups * split,)](
        dy, x, w, mean, rstd, dx, dw_part, db_part, sums, count,
        m, n, dy.stride(0), x.stride(0), n,
        ROWS=rows, CHUNK=chunk, SPLIT=split, NUM_STAGES=stages, num_warps=warps,
        maxnreg=max_registers(warps, per_sm))
    dw = torch.empty(n, device=x.device, dtype=w.dtype)
    db = torch.empty(n, device=x.device, dtype=w.dtype)
    block_g, block_cols, s2_warps, s2_stages = ex._reduce_tile(triton.next_power_of_2(n))
    ex.layer_norm_dwdb_kernel[(triton.cdiv(n, block_cols),)](
        dw_part, db_part, dw, db, groups, n,
        BLOCK_G=block_g, BLOCK_COLS=block_cols, NUM_STAGES=s2_stages, num_warps=s2_warps)
    return dx, dw, db


# (ROWS, CHUNK, warps, programs per SM, stages) per row length; SPLIT = N / CHUNK programs
# share a row, and the grid is programs per SM x the SMs (max_registers makes them fit)
SETTINGS = {
    16384: [(1, 4096, 8, 2, 2), (1, 4096, 8, 2, 3), (2, 2048, 8, 2, 3), (2, 2048, 4, 4, 3),
            (1, 2048, 4, 4, 3), (2, 4096, 16, 1, 2), (1, 8192, 16, 1, 2), (4, 1024, 4, 4, 3),
            (2, 2048, 8, 3, 2), (1, 4096, 16, 1, 3), (2, 4096, 8, 1, 2), (1, 2048, 8, 2, 3)],
    8192: [(1, 4096, 8, 2, 3), (2, 2048, 8, 2, 3), (2, 2048, 4, 4, 3), (1, 2048, 4, 4, 3)],
    32768: [(1, 4096, 8, 2, 3), (2, 2048, 8, 2, 3), (1, 8192, 16, 1, 2), (2, 4096, 16, 1, 2)],
}
FWD_SETTINGS = {
    16384: [(1, 4096, 8, 2, 2), (1, 4096, 4, 4, 3), (2, 2048, 4, 4, 3), (1, 2048, 4, 4, 3),
            (4, 1024, 4, 4, 3), (2, 4096, 8, 2, 2), (1, 8192, 8, 2, 2), (2, 2048, 8, 2, 3),
            (1, 1024, 4, 8, 3)],
    8192: [(1, 4096, 8, 2, 2), (1, 2048, 4, 4, 3), (2, 2048, 4, 4, 3), (4, 1024, 4, 4, 3),
           (1, 1024, 4, 8, 2)],
    4096: [(1, 2048, 4, 4, 3), (2, 1024, 4, 4, 3), (4, 1024, 4, 4, 2), (2, 2048, 8, 2, 3),
           (1, 1024, 4, 8, 2)],
}
SMOKE_SETTINGS = [(1, 64, 4, 2, 1), (2, 32, 4, 4, 2), (4, 128, 4, 1, 1)]


def label(s):
    return "rows{} c{} w{} @{} s{}".format(*s)


ERRORS = []  # rows of the candidates that raised (not compiled or not launched)


def runnable(pt: dict, fns: dict) -> dict:
    """``fns`` less the candidates whose first call raises (each recorded in ERRORS)."""
    kept = {}
    for name, fn in fns.items():
        try:
            fn()
            kept[name] = fn
        except Exception as err:  # noqa: BLE001 - recorded; the other candidates still run
            if name == "example":
                raise
            ERRORS.append({"candidate": name, **pt, "check": "error",
                           "error": f"{type(err).__name__}: {str(err)[-300:]}"})
    return kept


def setup(pt: dict, device, smoke: bool):
    """The point's calls (the example's and each setting's), tolerance and bytes."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[pt["dtype"]]
    m, n = pt["M"], pt["N"]
    gen = torch.Generator(device=device).manual_seed(n)
    x, dy = (torch.randn(m, n, device=device, dtype=dtype, generator=gen) for _ in range(2))
    w, b = (torch.randn(n, device=device, dtype=dtype, generator=gen) for _ in range(2))
    if pt["pass"] == "fwd":
        fns = {"example": lambda: ex.layer_norm_fwd(x, w, b, 1e-5)}
        for s in SMOKE_SETTINGS if smoke else FWD_SETTINGS[n]:
            fns[label(s)] = lambda s=s: split_rows_fwd(x, w, b, *s)
        return runnable(pt, fns), 2e-2, 4 * m * n  # bytes: read x; write y
    _, mean, rstd = ex.layer_norm_fwd(x, w, b, 1e-5)
    fns = {"example": lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd)}
    for s in SMOKE_SETTINGS if smoke else SETTINGS[n]:
        fns[label(s)] = lambda s=s: split_rows_bwd(dy, x, w, mean, rstd, *s)
    return runnable(pt, fns), 2e-2, 6 * m * n  # bytes: read x, dy; write dx


def copy_ceiling(device) -> float:
    """GB/s of a device-to-device copy of 2^27 fp32 values (do_bench median)."""
    src = torch.empty(2**27, device=device, dtype=torch.float32).normal_()
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), rep=100, return_mode="median")
    return 2 * src.numel() * 4 / ms / 1e6


def main() -> None:
    args = pc.probe_args()
    device, timing = pc.timing_method(args.smoke)
    points = [{"pass": p, "M": 37, "N": 301, "dtype": "fp16"} for p in ("bwd", "fwd")]
    if not args.smoke:
        points = [{"pass": "bwd", "M": 2**26 // n, "N": n, "dtype": dt}
                  for n, dt in ((16384, "fp16"), (16384, "bf16"), (8192, "fp16"), (32768, "fp16"))]
        points += [{"pass": "fwd", "M": 2**26 // n, "N": n, "dtype": dt}
                   for n, dt in ((16384, "fp16"), (8192, "fp16"), (4096, "fp16"), (16384, "bf16"))]
    copy_gbps = None if args.smoke else copy_ceiling(device)
    rows, skipped = pc.run_points(points, lambda pt: setup(pt, device, args.smoke), passes=3,
                                  timing=timing, budget_s=args.budget, ref="example",
                                  ref_key="example")
    for row in rows:
        work = (6 if row["pass"] == "bwd" else 4) * row["M"] * row["N"]
        for key in ("do_bench", "cudagraph"):
            row.pop(f"tflops_{key}", None)
            if f"ms_{key}" in row:
                gbps = work / row[f"ms_{key}"] / 1e6
                row[f"gbps_{key}"] = round(gbps, 1)
                if copy_gbps:
                    row[f"fraction_of_copy_{key}"] = round(gbps / copy_gbps, 4)
        table = SMOKE_SETTINGS if args.smoke else (
            SETTINGS if row["pass"] == "bwd" else FWD_SETTINGS)[row["N"]]
        setting = next((s for s in table if label(s) == row["candidate"]), None)
        if setting is not None:
            row.update(zip(("ROWS", "CHUNK", "num_warps", "per_sm", "NUM_STAGES"), setting,
                           strict=True))
            row["maxnreg"] = max_registers(setting[2], setting[3])
            kernel = COMPILED.get(setting if row["pass"] == "bwd" else ("fwd", *setting))
            for key in ("n_regs", "n_spills"):
                if hasattr(kernel, key):
                    row[key] = getattr(kernel, key)
    header = pc.probe_header(
        "benchmarks/evidence/layer-norm/split_rows.py",
        "Inputs: seeded randn x, dy, w, b (M x N = 2^26); mean and rstd from the example's forward. "
        "The reference is the example's launcher: layer_norm_bwd (dx, dW, dB) for pass bwd, "
        "layer_norm_fwd (y, mean, rstd) for pass fwd; tolerance 2e-2 (rtol and atol). GB/s = 6 "
        "bytes an element for bwd (read x, dy; write dx), 4 for fwd (read x; write y) / time; the "
        "copy ceiling is a device-to-device copy of 2^27 "
        "fp32 values (do_bench median, rep 100), 2 x 4 bytes an element.",
        kernels="examples/layer_norm.py (the example's launchers and stage 2); split_rows_kernel and "
                "split_rows_fwd_kernel here",
        copy_gbps=round(copy_gbps, 1) if copy_gbps else None, smoke=args.smoke)
    pc.write_points(args.out / "split_rows.json", header,
                    rows + ERRORS + [{**p, "check": "skipped (budget)"} for p in skipped])


if __name__ == "__main__":
    main()
