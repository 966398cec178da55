"""H200 probe for the softmax and split-K examples: which step and settings to pick.

Run on a GPU from the repository root: ``python benchmarks/probes/softmax.py``.
Prints compact tables (GB/s counts one read and one write of the tensor; % is of
the device-to-device copy measured in the same run). Stops starting new
measurements after BUDGET_S seconds (softmax) and SPLIT_K_BUDGET_S (split-K),
so the whole run stays under 90 s; what it skipped is counted at the end.

What run 1 (2026-11-29 23:41, M x N = 2^26 fp32) showed, and what this run checks:

* one program per row is 97-99% of copy for N = 512 ... 16384 once num_warps
  follows the block (about 16 elements per thread: 2 warps at 512, 32 at 16384);
  with too many warps it drops to 60-80%. Several rows per program (multirow)
  was never better at N >= 512. This run: the new default everywhere, and
  multirow against row at N = 128 and 256.
* the online kernel (two exps per element, one chunk in flight per program)
  peaked at 70% (N = 65536) and 64% (N = 262144): compute and loads do not
  overlap, and at 262144 the rows in flight (132 x 1 MB) overflow L2, so the
  second pass reads HBM again. This run: a candidate with one exp per element
  and the next chunk loaded before the current one is used (``online2`` below).
* split-K: 64x128x64 tiles, 4 warps, about two programs per SM matched cuBLAS
  at 256x256xK. This run: the rule in ``pick_split_k`` on the benchmark shapes.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import softmax as sm  # noqa: E402
from _examples import sm_count  # noqa: E402  (the probes' folder, sys.path[1])

BUDGET_S = 60.0  # softmax sections; split-K gets until SPLIT_K_BUDGET_S
SPLIT_K_BUDGET_S = 78.0
T0 = time.perf_counter()
ELEMS = 2**26
NS = [128, 256, 512, 781, 1024, 2048, 3000, 4096, 8192, 16384, 32768, 65536, 262144]
LONG_NS = [65536, 262144, 32768]
SKIPPED = []
DEV = torch.device("cuda")


@triton.jit
def softmax_online2_kernel(
    x_ptr, y_ptr, n_rows, n_cols, stride_xm, stride_ym,
    BLOCK_N: tl.constexpr, REVERSE: tl.constexpr,
):
    """Candidate: one exp per element in pass 1, next chunk loaded ahead in both passes."""
    cols = tl.arange(0, BLOCK_N)
    n_chunks = tl.cdiv(n_cols, BLOCK_N)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_xm
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
        m = tl.full([BLOCK_N], -3.0e38, tl.float32)  # finite start: no inf - inf
        s = tl.zeros([BLOCK_N], tl.float32)
        x_next = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        for c in range(0, n_chunks):
            x = x_next
            offs = (c + 1) * BLOCK_N + cols
            x_next = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
            e = tl.exp(-tl.abs(x - m))  # exp(m - x) if x is a new max, else exp(x - m)
            grow = x > m
            s = tl.where(grow, s * e + 1.0, s + e)
            m = tl.where(grow, x, m)
        row_max = tl.max(m, axis=0)
        inv_sum = 1.0 / tl.sum(s * tl.exp(m - row_max), axis=0)
        first = n_chunks - 1 if REVERSE else 0
        step = -1 if REVERSE else 1
        x_next = tl.load(x_row + first * BLOCK_N + cols, mask=first * BLOCK_N + cols < n_cols, other=0.0)
        for i in range(0, n_chunks):
            c = first + step * i
            x = x_next.to(tl.float32)
            offs_n = (c + step) * BLOCK_N + cols
            ok_n = (offs_n < n_cols) & (offs_n >= 0) & (i + 1 < n_chunks)
            x_next = tl.load(x_row + offs_n, mask=ok_n, other=0.0)
            offs = c * BLOCK_N + cols
            y = tl.exp(x - row_max) * inv_sum
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=offs < n_cols)


def online2(x, block_n, num_warps, num_programs, reverse=True):
    y = torch.empty_like(x)
    grid = (min(x.shape[0], num_programs),)
    softmax_online2_kernel[grid](x, y, x.shape[0], x.shape[1], x.stride(0), y.stride(0),
                                 BLOCK_N=block_n, REVERSE=reverse, num_warps=num_warps)
    return y


def left() -> float:
    return BUDGET_S - (time.perf_counter() - T0)


def ms_of(fn) -> float:
    return triton.testing.do_bench(fn, warmup=5, rep=20, return_mode="median")


def emit(section, n, label, gbps, copy, ok=True):
    pct = 100 * gbps / copy if copy else float("nan")
    print(f"{section:7s} {n:>7} {label:34s} {gbps:7.0f} GB/s {pct:5.1f}%{'' if ok else '  WRONG'}", flush=True)


def measure(section, n, label, fn, ref, nbytes, copy):
    """Check fn against ref once, then time it; skip when the budget is spent."""
    if left() < 0:
        SKIPPED.append(f"{section}/{n}/{label}")
        return None
    try:
        out = fn()
        ok = torch.allclose(out.float(), ref.float(), rtol=1e-2, atol=1e-6)
        ms = ms_of(fn)
    except Exception as err:  # a config that does not compile or launch: say so and go on
        print(f"{section:7s} {n:>7} {label:34s} FAILED {type(err).__name__}: {str(err)[:60]}", flush=True)
        return None
    gbps = nbytes / ms * 1e-6
    emit(section, n, label, gbps, copy, ok)
    return gbps


def main() -> None:
    global BUDGET_S
    dev = DEV
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    print(f"# {props.name}, {sms} SMs, L2 {props.L2_cache_size >> 20} MB, torch {torch.__version__}, "
          f"triton {triton.__version__}; do_bench median, warmup 5 ms, rep 20 ms")

    a = torch.empty(ELEMS, device=dev)
    b = torch.empty_like(a)
    copy = 2 * a.numel() * 4 / ms_of(partial(b.copy_, a)) * 1e-6
    emit("base", "-", "copy (ceiling)", copy, copy)
    del a, b

    inputs = {}

    def get(n, dtype=torch.float32, rows=None):
        key = (n, dtype, rows)
        if key not in inputs:
            inputs.clear()
            torch.cuda.empty_cache()
            x = torch.randn(rows or ELEMS // n, n, device=dev, dtype=dtype)
            inputs[key] = (x, torch.softmax(x.float(), dim=-1).to(dtype), 2 * x.numel() * x.element_size())
        return inputs[key]

    # base: torch and the launcher's current choice, every N
    for n in NS:
        x, ref, nbytes = get(n)
        measure("base", n, "torch.softmax", partial(torch.softmax, x, dim=-1), ref, nbytes, copy)
        measure("base", n, f"softmax() -> {sm.pick_variant(n)}", partial(sm.softmax, x), ref, nbytes, copy)

    # online2: the candidate for long rows (and 32768, where row is at 94%)
    for n in LONG_NS:
        x, ref, nbytes = get(n)
        for block_n, warps in ((4096, 8), (4096, 16), (8192, 16), (8192, 32), (16384, 32)):
            for reverse in (True, False):
                for progs in (32, 66, sms, 2 * sms):
                    if not reverse and progs not in (sms, 2 * sms):
                        continue
                    label = f"on2 b{block_n} w{warps} {'rev' if reverse else 'fwd'} p{progs}"
                    measure("online2", n, label, partial(online2, x, block_n, warps, progs, reverse),
                            ref, nbytes, copy)
        if n == 65536:
            measure("row", n, "row w32 (one 65536 tile)", partial(sm.softmax, x, "row", num_warps=32),
                    ref, nbytes, copy)

    # tiny: rows of 128 and 256, row vs multirow
    for n in (128, 256):
        x, ref, nbytes = get(n)
        for warps in (1, 2, 4):
            measure("tiny", n, f"row w{warps}", partial(sm.softmax, x, "row", num_warps=warps), ref, nbytes, copy)
        for tile in (2048, 4096, 8192):
            for warps in (2, 4, 8):
                cfg = dict(rows=tile // n, num_warps=warps)
                measure("tiny", n, f"mr rows{tile // n} w{warps}", partial(sm.softmax, x, "multirow", **cfg),
                        ref, nbytes, copy)

    # rows4k: the tutorial's sweep (4096 rows), current defaults
    for n in (256, 1024, 3000, 4096, 16384):
        x, ref, nbytes = get(n, rows=4096)
        measure("rows4k", n, "torch.softmax", partial(torch.softmax, x, dim=-1), ref, nbytes, copy)
        measure("rows4k", n, f"softmax() -> {sm.pick_variant(n)}", partial(sm.softmax, x), ref, nbytes, copy)

    # half: 16-bit inputs, current defaults
    for dtype in (torch.float16, torch.bfloat16):
        for n in (1024, 4096, 65536):
            x, ref, nbytes = get(n, dtype)
            tag = str(dtype).split(".")[1]
            measure("half", n, f"{tag} torch.softmax", partial(torch.softmax, x, dim=-1), ref, nbytes, copy)
            measure("half", n, f"{tag} softmax()", partial(sm.softmax, x), ref, nbytes, copy)
    inputs.clear()

    BUDGET_S = SPLIT_K_BUDGET_S
    split_k_section()
    print(f"# done in {time.perf_counter() - T0:.1f} s; skipped {len(SKIPPED)} measurements"
          + (f", first: {SKIPPED[0]}" if SKIPPED else ""))


def split_k_section() -> None:
    """Split-K matmul (fp16 in, fp32 out) against cuBLAS; TFLOP/s."""
    try:
        import split_k as sk
    except ImportError as err:
        print(f"# splitk: skipped ({err})")
        return
    dev = DEV
    sms = sm_count(dev)
    shapes = [(256, 256, k) for k in (1024, 4096, 16384, 65536)] + [(128, 128, 16384), (512, 512, 16384),
                                                                   (1024, 1024, 8192)]
    for m, n, k in shapes:
        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        b = torch.randn(k, n, device=dev, dtype=torch.float16)
        ref = a.float() @ b.float()
        flops = 2 * m * n * k
        shape = f"{m}x{n}x{k}"
        auto = sk.pick_split_k(m, n, k, sms)
        run_split_k(shape, flops, ref, "cublas fp16", partial(torch.matmul, a, b))
        run_split_k(shape, flops, ref, f"matmul_split_k() auto sk{auto}", partial(sk.matmul_split_k, a, b))
        for split in sorted({1, max(1, auto // 2), 2 * auto}):
            if split != auto and k // split >= 128:
                run_split_k(shape, flops, ref, f"matmul_split_k() sk{split}",
                            partial(sk.matmul_split_k, a, b, split_k=split))


def run_split_k(shape, flops, ref, label, fn) -> None:
    if left() < 0:
        SKIPPED.append(f"splitk/{shape}/{label}")
        return
    try:
        out = fn()
        ok = torch.allclose(out.float(), ref, rtol=2e-2, atol=2e-1)
        ms = ms_of(fn)
    except Exception as err:  # a config that does not compile or launch: say so and go on
        print(f"splitk  {shape:>16} {label:28s} FAILED {type(err).__name__}: {str(err)[:60]}", flush=True)
        return
    print(f"splitk  {shape:>16} {label:28s} {flops / ms * 1e-9:7.1f} TFLOP/s {ms * 1e3:8.1f} us"
          f"{'' if ok else '  WRONG'}", flush=True)


if __name__ == "__main__":
    main()
