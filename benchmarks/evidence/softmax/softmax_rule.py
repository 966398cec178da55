# ruff: noqa: B023  (each lambda is timed inside the iteration that made it)
"""Probe (issue 11, item 2): how close can softmax over 2^26 fp32 elements get to the copy ceiling?

The Benchmarks page judges softmax against the copy ceiling of `scripts/bench.py`: a 2 GiB
device-to-device copy (4 GiB moved). Softmax over 2^26 fp32 elements moves 512 MB. This probe
times, with the bench's method (triton.testing.do_bench, L2 flushed, median; 3 interleaved passes,
median over passes), at each N of the softmax targets:

* the ceiling itself (2 GiB copy) and a copy of the same 256 MB the softmax reads (torch and a
  Triton copy kernel with softmax's own tile), which says what a pure stream of that size reaches;
* the example's default launch, and its launch settings swept through `softmax(..., **config)`:
  one program per row with 2 to 32 warps; several rows per program (1, 2, 4 rows) with a persistent
  grid (all blocks, or 4 / 8 programs per SM) and 1 or 3 stages;
* one program per row with eviction hints (load evict_first, store .cs): a kernel of this probe.

Prints one line per (N, label): GB/s, % of the 2 GiB ceiling, % of the same-size torch copy.
Usage: python benchmarks/probes/softmax_rule.py   (needs CUDA; about 3 minutes on the H200)
"""

from __future__ import annotations

import statistics
import time

import torch
import triton
import triton.language as tl
from _examples import load_example  # this folder is on sys.path (see _examples.py)

NS = [512, 781, 1024, 2048, 3000, 4096, 8192, 16384, 32768]
ELEMENTS = 2**26
PASSES = 3
BUDGET_S = 240.0


@triton.jit
def copy_rows_kernel(x_ptr, y_ptr, n_cols, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    """softmax_row_kernel without the maths: one row in, the same row out."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    tl.store(y_ptr + row * stride_ym + cols, tl.load(x_ptr + row * stride_xm + cols, mask=mask), mask=mask)


@triton.jit
def softmax_row_hinted_kernel(x_ptr, y_ptr, n_cols, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    """The example's softmax_row_kernel with streaming hints: read once, write once, keep neither in L2."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=float("-inf"), eviction_policy="evict_first")
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask, cache_modifier=".cs")


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    t0 = time.perf_counter()
    ex = load_example("softmax")
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    print(f"# {props.name}, {sms} SMs, torch {torch.__version__}, triton {triton.__version__}; "
          f"do_bench median (warmup 5 ms, rep 30 ms, L2 flushed), {PASSES} interleaved passes, median")

    def ms(fn) -> float:
        return triton.testing.do_bench(fn, warmup=5, rep=30, return_mode="median")

    big = torch.empty(2**29, device="cuda")  # 2 GiB
    big_out = torch.empty_like(big)
    ceiling_gbps = []
    for _ in range(PASSES):
        ceiling_gbps.append(2 * big.numel() * 4 / ms(lambda: big_out.copy_(big)) * 1e-6)
    big = big_out = None  # the memory back before the sweep
    torch.cuda.empty_cache()
    ceiling = statistics.median(ceiling_gbps)
    print(f"ceiling copy 2 GiB: {ceiling:.0f} GB/s")

    for n in NS:
        if time.perf_counter() - t0 > BUDGET_S:
            print(f"N = {n}: skipped (budget)")
            continue
        m = ELEMENTS // n
        x = torch.randn(m, n, device="cuda")
        y = torch.empty_like(x)
        ref = torch.softmax(x, dim=1)
        bn = triton.next_power_of_2(n)
        cases = {
            "copy (torch)": lambda: y.copy_(x),
            "copy (Triton, one row per program)": lambda: copy_rows_kernel[(m,)](
                x, y, n, n, n, BLOCK_N=bn, num_warps=ex._num_warps(bn)),
            "softmax default": lambda: ex.softmax(x),
            "torch.softmax": lambda: torch.softmax(x, dim=1),
            "row, hinted (evict_first, .cs)": lambda: softmax_row_hinted_kernel[(m,)](
                x, y, n, n, n, BLOCK_N=bn, num_warps=ex._num_warps(bn)),
        }
        for w in (2, 4, 8, 16, 32):
            if w * 32 <= max(bn, 64) * 2:  # at least half a value per thread
                cases[f"row, {w} warps"] = lambda w=w: ex.softmax(x, "row", num_warps=w)
        for rows in (1, 2, 4):
            if rows * bn > 32768:
                continue
            blocks = triton.cdiv(m, rows)
            for progs, label in ((blocks, "all blocks"), (4 * sms, "4/SM"), (8 * sms, "8/SM")):
                for stages in (1, 3):
                    cases[f"multirow {rows} rows, {label}, {stages} st"] = (
                        lambda rows=rows, progs=progs, stages=stages: ex.softmax(
                            x, "multirow", rows=rows, num_programs=progs, num_stages=stages))
        times: dict[str, list[float]] = {k: [] for k in cases}
        for label, fn in list(cases.items()):  # check each once (and compile it) before timing
            try:
                out = fn()
                if not label.startswith("copy"):
                    torch.testing.assert_close(out if isinstance(out, torch.Tensor) else y, ref, rtol=1e-5, atol=1e-6)
            except Exception as err:  # a setting that does not compile, launch or match: say so, drop it
                print(f"{n:>6} {label:40s} FAILED {type(err).__name__}: {str(err)[:70]}")
                del cases[label], times[label]
        for _ in range(PASSES):
            for label, fn in cases.items():
                times[label].append(ms(fn))
        same = 2 * ELEMENTS * 4 / statistics.median(times["copy (torch)"]) * 1e-6
        for label, samples in times.items():
            gbps = 2 * ELEMENTS * 4 / statistics.median(samples) * 1e-6
            spread = max(samples) / min(samples) - 1
            print(f"{n:>6} {label:40s} {gbps:6.0f} GB/s {100 * gbps / ceiling:5.1f}% of ceiling "
                  f"{100 * gbps / same:5.1f}% of same-size copy  spread {100 * spread:4.1f}%", flush=True)
        x = y = ref = None
        torch.cuda.empty_cache()
    print(f"# done in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
