# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: where the softmax launcher's gap to the copy ceiling goes, N = 2048 to 262144.

For each N (M x N = 2^26 fp32, as in the benchmarks) it times, with the benchmarks' method
(`triton.testing.do_bench` median, L2 flushed, 3 interleaved passes, median over passes):

* `torch copy`: `dst.copy_(x)` of the same bytes;
* `triton copy, same tiling`: a Triton kernel that loads and stores exactly the tiles the launcher's
  step uses (one program per row for step 1, one per chunk of a row for step 4, same block and warps),
  with no math: the floor of that tiling;
* for step 4 also `split, no exchange`: each chunk normalizes by its own max and sum (a wrong result,
  timed only) — the tiling plus the math, without the wait for the row's other chunks;
* `launcher`: `softmax(x)` as shipped.

So copy -> same-tiling copy is what the tiling costs, same-tiling copy -> launcher what the math
(and, for step 4, the exchange) costs. GB/s counts one read and one write; "% of ceiling" is against
the benchmarks' copy ceiling (a 2 GiB device copy, timed the same way in this run).
Usage: python benchmarks/probes/softmax_gap.py   (needs CUDA; about a minute)
"""

from __future__ import annotations

import statistics

import torch
import triton
import triton.language as tl
from _examples import copy_ceiling, interleaved_times, load_example, sm_count  # this folder is on sys.path


@triton.jit
def row_copy_kernel(x_ptr, y_ptr, n_cols, stride_xm, stride_ym, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_N)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask)
    tl.store(y_ptr + row * stride_ym + offs, x, mask=mask)


@triton.jit
def chunk_kernel(x_ptr, y_ptr, counter_ptr, n_cols, stride_xm, stride_ym, n_chunks,
                 BLOCK_N: tl.constexpr, MATH: tl.constexpr):
    ticket = tl.atomic_add(counter_ptr, 1)  # as the split kernel takes its chunk
    row = ticket // n_chunks
    chunk = ticket % n_chunks
    offs = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs < n_cols
    x = tl.load(x_ptr + tl.cast(row, tl.int64) * stride_xm + offs, mask=mask, other=float("-inf"))
    if MATH:  # the split kernel's math on its own chunk, no exchange
        m = tl.max(x, axis=0)
        e = tl.exp(x - m)
        x = e / tl.sum(e, axis=0)
    tl.store(y_ptr + tl.cast(row, tl.int64) * stride_ym + offs, x, mask=mask)


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("softmax")
    sms = sm_count()
    ceiling_gbps = copy_ceiling()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          "do_bench median (L2 flushed), median of 3 interleaved passes; GB/s = 2 x bytes of x / time")
    print(f"# copy ceiling (2 GiB device copy): {ceiling_gbps:.0f} GB/s")
    for n in (2048, 4096, 8192, 16384, 32768, 65536, 262144):
        x = torch.randn(2**26 // n, n, device="cuda")
        m = x.shape[0]
        y = torch.empty_like(x)
        variant = ex.pick_variant(n, sms)
        cases = {"torch copy": lambda: y.copy_(x)}
        if variant == "row":
            block = triton.next_power_of_2(n)
            warps = ex._num_warps(block)
            cases[f"triton copy, same tiling ({warps} warps)"] = lambda: row_copy_kernel[(m,)](
                x, y, n, x.stride(0), y.stride(0), BLOCK_N=block, num_warps=warps)
        elif variant == "split":
            block = ex.SPLIT_BLOCK
            chunks = triton.cdiv(n, block)
            warps = ex._split_warps(chunks)
            counter = torch.zeros(1, device="cuda", dtype=torch.int32)

            def chunked(math, block=block, warps=warps, chunks=chunks, counter=counter):
                counter.zero_()
                chunk_kernel[(m * chunks,)](x, y, counter, n, x.stride(0), y.stride(0), chunks,
                                            BLOCK_N=block, MATH=math, num_warps=warps)
            cases[f"triton copy, same tiling ({warps} warps)"] = lambda: chunked(False)
            cases["split, no exchange (wrong result)"] = lambda: chunked(True)
        cases[f"launcher ({variant})"] = lambda: ex.softmax(x)
        torch.testing.assert_close(ex.softmax(x), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)
        for name, fn in cases.items():
            if "copy" in name:
                fn()
                torch.testing.assert_close(y, x, rtol=0, atol=0)
        times = interleaved_times(cases, warmup=5, rep=30)
        print_table(f"N = {n}, M = {m}, launcher step: {variant}", times, x.numel() * 4, ceiling_gbps)


def print_table(title: str, times: dict[str, list[float]], nbytes: int, ceiling_gbps: float) -> None:
    """One table of cases: median ms over the passes, GB/s of one read and one write of nbytes, % of the
    copy ceiling, and the spread of the passes (max / min - 1)."""
    print(f"\n## {title}")
    print(f"{'case':40s} {'ms':>8s} {'GB/s':>8s} {'% of ceiling':>13s} {'spread':>7s}")
    for name, ts in times.items():
        ms = statistics.median(ts)
        gbps = 2 * nbytes / ms / 1e6
        print(f"{name:40s} {ms:8.4f} {gbps:8.0f} {100 * gbps / ceiling_gbps:12.1f}% {max(ts) / min(ts) - 1:7.1%}")


if __name__ == "__main__":
    main()
