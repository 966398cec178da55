"""Layer norm's backward on rows longer than one program's registers: each program owns a
part of the columns for dx and dW/dB, and reads the whole row only for the row sums.

The example's stage 1 keeps a row's dW/dB accumulators in registers: a whole row of each in
fp32. At 16,384 that is half an SM's registers (one program per SM) and at 32,768 all of
them: the launcher's one-row kernel on 32 warps ran at 14% of copy there (run 55). Here
program (group, part) of PARTS per row group owns PARTS-th of the columns, as four pieces
of CHUNK = N / (4 PARTS) columns with their own accumulators (the example's four-piece
kernel on a part of the row). Pass 1 walks all 4 PARTS pieces of the row in a pipelined
loop, each only for its shares of c1 = sum(g * x_hat) and c2 = sum(g), g = dy * w; pass 2
loads the program's own four pieces again, writes their dx and adds to their accumulators.
The PARTS programs of a row group read each row together, so all but the first read of a
piece come from L2. No program waits for another. Stage 2 is the example's.

Every setting is checked against the example's launcher first, then timed in interleaved
passes (do_bench median, CUDA graph) beside it and a copy timed in the same run.

Usage (repository root, a CUDA GPU): python benchmarks/evidence/layer-norm/row_parts.py --out DIR
[--budget S] [--smoke]. Writes DIR/row_parts.json (one point per line).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]
if "--smoke" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import layer_norm as ex  # noqa: E402
import split_rows as sr  # noqa: E402  the copy ceiling, max_registers and runnable of run 55
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from scripts import probe_common as pc  # noqa: E402


@triton.jit
def row_parts_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    CHUNK: tl.constexpr,  # N / (4 PARTS): a program's part is four pieces
    PARTS: tl.constexpr,  # programs per row group
    NUM_STAGES: tl.constexpr,  # pieces in flight in pass 1
):
    part = tl.program_id(0) % PARTS
    group = tl.program_id(0) // PARTS
    n_groups = tl.num_programs(0) // PARTS
    c = tl.arange(0, CHUNK)
    own = part * 4 * CHUNK + c  # the first of this program's four pieces
    dw0 = tl.zeros([CHUNK], dtype=tl.float32)
    dw1, dw2, dw3 = dw0, dw0, dw0
    db0, db1, db2, db3 = dw0, dw0, dw0, dw0
    for i in range(group, n_rows, n_groups):
        row = tl.cast(i, tl.int64)
        x_row = x_ptr + row * stride_xm
        dy_row = dy_ptr + row * stride_dym
        dx_row = dx_ptr + row * stride_dxm
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        t1 = tl.zeros([CHUNK], dtype=tl.float32)
        t2 = tl.zeros([CHUNK], dtype=tl.float32)
        for p in tl.range(0, 4 * PARTS, num_stages=NUM_STAGES):  # the whole row
            h, g, _ = ex._bwd_piece(x_row, dy_row, w_ptr, p * CHUNK + c, n_cols, mean, rstd)
            t1 += g * h
            t2 += g
        c1 = tl.sum(t1, axis=0) / n_cols
        c2 = tl.sum(t2, axis=0) / n_cols
        dw0, db0 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, own, n_cols, mean, rstd,
                                    c1, c2, dw0, db0)
        dw1, db1 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, own + CHUNK, n_cols, mean,
                                    rstd, c1, c2, dw1, db1)
        dw2, db2 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, own + 2 * CHUNK, n_cols,
                                    mean, rstd, c1, c2, dw2, db2)
        dw3, db3 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, own + 3 * CHUNK, n_cols,
                                    mean, rstd, c1, c2, dw3, db3)
    out = group.to(tl.int64) * n_cols + own
    tl.store(dw_part_ptr + out, dw0, mask=own < n_cols)
    tl.store(db_part_ptr + out, db0, mask=own < n_cols)
    tl.store(dw_part_ptr + out + CHUNK, dw1, mask=own + CHUNK < n_cols)
    tl.store(db_part_ptr + out + CHUNK, db1, mask=own + CHUNK < n_cols)
    tl.store(dw_part_ptr + out + 2 * CHUNK, dw2, mask=own + 2 * CHUNK < n_cols)
    tl.store(db_part_ptr + out + 2 * CHUNK, db2, mask=own + 2 * CHUNK < n_cols)
    tl.store(dw_part_ptr + out + 3 * CHUNK, dw3, mask=own + 3 * CHUNK < n_cols)
    tl.store(db_part_ptr + out + 3 * CHUNK, db3, mask=own + 3 * CHUNK < n_cols)


COMPILED = {}  # setting -> the compiled stage 1


def row_parts_bwd(dy, x, w, mean, rstd, parts, warps, per_sm, stages):
    """(dx, dw, db): the stage 1 above, then the example's stage 2."""
    m, n = x.shape
    chunk = triton.next_power_of_2(triton.cdiv(n, 4 * parts))
    groups = max(1, min(m, ex._sm_count(x.device) * per_sm // parts))
    dx = torch.empty_like(x)
    dw_part = torch.empty(groups, n, device=x.device, dtype=torch.float32)
    db_part = torch.empty(groups, n, device=x.device, dtype=torch.float32)
    COMPILED[(parts, warps, per_sm, stages)] = row_parts_kernel[(groups * parts,)](
        dy, x, w, mean, rstd, dx, dw_part, db_part, m, n, dy.stride(0), x.stride(0), n,
        CHUNK=chunk, PARTS=parts, NUM_STAGES=stages, num_warps=warps,
        maxnreg=sr.max_registers(warps, per_sm))
    dw = torch.empty(n, device=x.device, dtype=w.dtype)
    db = torch.empty(n, device=x.device, dtype=w.dtype)
    block_g, block_cols, s2_warps, s2_stages = ex._reduce_tile(triton.next_power_of_2(n))
    ex.layer_norm_dwdb_kernel[(triton.cdiv(n, block_cols),)](
        dw_part, db_part, dw, db, groups, n,
        BLOCK_G=block_g, BLOCK_COLS=block_cols, NUM_STAGES=s2_stages, num_warps=s2_warps)
    return dx, dw, db


# (PARTS, warps, programs per SM, pass-1 stages) per row length
SETTINGS = {
    32768: [(2, 16, 1, 2), (2, 16, 1, 3), (2, 8, 1, 2), (4, 8, 2, 2), (4, 16, 1, 2), (4, 8, 2, 3),
            (8, 8, 2, 2), (8, 4, 4, 2)],
    16384: [(2, 8, 2, 2), (2, 16, 1, 2), (4, 8, 2, 2), (4, 4, 4, 2), (2, 8, 2, 3)],
}
SMOKE_SETTINGS = [(2, 4, 2, 1), (4, 4, 4, 2)]
# Run 58 (the probe at commit 285aa97) timed SETTINGS alone; with ROW_PARTS_DEEPER=1 (run 59)
# the deeper pass-1 pipelines below replace them, beside the best of run 58
DEEPER = {
    32768: [(2, 16, 1, 3), (2, 16, 1, 4), (2, 16, 1, 5), (2, 16, 1, 6), (4, 8, 2, 4),
            (4, 8, 2, 5)],
    16384: [(2, 8, 2, 3), (2, 8, 2, 4), (2, 8, 2, 5), (2, 8, 2, 6), (2, 16, 1, 4),
            (2, 16, 1, 5)],
}
if os.environ.get("ROW_PARTS_DEEPER") == "1":
    SETTINGS = DEEPER
# ROW_PARTS_WIDTHS="20480,24576" (run 60): rows between 16,384 and 32,768 columns (M = 2^26 // N
# rows), fp16 and bf16, with the two settings closest to the branch's launcher
WIDTHS = [int(n) for n in os.environ.get("ROW_PARTS_WIDTHS", "").split(",") if n]
for _n in WIDTHS:
    SETTINGS[_n] = [(2, 16, 1, 6), (2, 16, 1, 4)]


def label(s) -> str:
    return "parts{} w{} @{} s{}".format(*s)


def setup(pt: dict, device, smoke: bool):
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[pt["dtype"]]
    m, n = pt["M"], pt["N"]
    gen = torch.Generator(device=device).manual_seed(n)
    x, dy = (torch.randn(m, n, device=device, dtype=dtype, generator=gen) for _ in range(2))
    w, b = (torch.randn(n, device=device, dtype=dtype, generator=gen) for _ in range(2))
    _, mean, rstd = ex.layer_norm_fwd(x, w, b, 1e-5)
    fns = {"example": lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd)}
    for s in SMOKE_SETTINGS if smoke else SETTINGS[n]:
        fns[label(s)] = lambda s=s: row_parts_bwd(dy, x, w, mean, rstd, *s)
    return sr.runnable(pt, fns), 2e-2, 6 * m * n


def main() -> None:
    args = pc.probe_args()
    device, timing = pc.timing_method(args.smoke)
    widths = [(n, dt) for n in WIDTHS for dt in ("fp16", "bf16")] or [
        (32768, "fp16"), (16384, "fp16"), (32768, "bf16"), (16384, "bf16")]
    points = [{"M": 37, "N": 301, "dtype": "fp16"}] if args.smoke else [
        {"M": 2**26 // n, "N": n, "dtype": dt} for n, dt in widths]
    copy_gbps = None if args.smoke else sr.copy_ceiling(device)
    rows, skipped = pc.run_points(points, lambda pt: setup(pt, device, args.smoke), passes=3,
                                  timing=timing, budget_s=args.budget, ref="example",
                                  ref_key="example")
    for row in rows:
        work = 6 * row["M"] * row["N"]
        for key in ("do_bench", "cudagraph"):
            row.pop(f"tflops_{key}", None)
            if f"ms_{key}" in row:
                row[f"gbps_{key}"] = round(work / row[f"ms_{key}"] / 1e6, 1)
                if copy_gbps:
                    row[f"fraction_of_copy_{key}"] = round(row[f"gbps_{key}"] / copy_gbps, 4)
        table = SMOKE_SETTINGS if args.smoke else SETTINGS[row["N"]]
        setting = next((s for s in table if label(s) == row["candidate"]), None)
        if setting is not None:
            row.update(zip(("PARTS", "num_warps", "per_sm", "NUM_STAGES"), setting, strict=True))
            row["maxnreg"] = sr.max_registers(setting[1], setting[2])
            kernel = COMPILED.get(setting)
            for key in ("n_regs", "n_spills"):
                if hasattr(kernel, key):
                    row[key] = getattr(kernel, key)
    header = pc.probe_header(
        "benchmarks/evidence/layer-norm/row_parts.py",
        "Inputs: seeded randn x, dy, w, b (M x N = 2^26); mean and rstd from the example's forward. "
        "The reference is the example's layer_norm_bwd (dx, dW, dB); tolerance 2e-2 (rtol and atol). "
        "GB/s = 6 bytes an element (read x, dy; write dx) / time; the copy ceiling is a "
        "device-to-device copy of 2^27 fp32 values (do_bench median, rep 100), 2 x 4 bytes an "
        "element. n_spills counts 4-byte words (Triton's compiled-kernel metadata).",
        kernels="examples/layer_norm.py (the example's launcher, its piece helpers and stage 2); "
                "row_parts_kernel here",
        copy_gbps=round(copy_gbps, 1) if copy_gbps else None, smoke=args.smoke)
    pc.write_points(args.out / "row_parts.json", header,
                    rows + sr.ERRORS + [{**p, "check": "skipped (budget)"} for p in skipped])


if __name__ == "__main__":
    main()
