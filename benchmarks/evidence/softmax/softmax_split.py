# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: the split softmax (step 4) on long rows, by chunk length and warp count.

For N = 65536 and 262144 (M x N = 2^26 fp32, as in the benchmarks) it times `softmax(x, "split")` for
chunk lengths 4096, 8192, 16384 and warp counts 4 to 32, beside the online step and a torch copy of the
same bytes, with the benchmarks' method (`triton.testing.do_bench` median, L2 flushed, 3 interleaved
passes, median over passes). GB/s counts one read and one write of the matrix.
Usage: python benchmarks/probes/softmax_split.py   (needs CUDA; about a minute)
"""

from __future__ import annotations

import statistics

import torch
import triton
from _examples import interleaved_times, load_example  # this folder is on sys.path (see _examples.py)


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("softmax")
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          "do_bench median (L2 flushed), median of 3 interleaved passes; GB/s = 2 x bytes of x / time")
    for n in (65536, 262144):
        x = torch.randn(2**26 // n, n, device="cuda")
        want = ex.softmax_torch(x)
        dst = torch.empty_like(x)
        cases = {"torch copy (same bytes)": lambda: dst.copy_(x),
                 "online (step 3)": lambda: ex.softmax(x, "online")}
        for block in (4096, 8192, 16384):
            for warps in (4, 8, 16, 32):
                cases[f"split block_n={block} num_warps={warps}"] = (
                    lambda b=block, w=warps: ex.softmax(x, "split", block_n=b, num_warps=w))
        for name, fn in cases.items():
            if not name.startswith("torch"):
                torch.testing.assert_close(fn(), want, rtol=1e-5, atol=1e-6)
        times = interleaved_times(cases, warmup=5, rep=30)
        copy_ms = statistics.median(times["torch copy (same bytes)"])
        print(f"\n## N = {n}, M = {x.shape[0]}")
        print(f"{'case':38s} {'ms':>8s} {'GB/s':>8s} {'% of copy':>10s} {'spread':>7s}")
        for name, ts in times.items():
            ms = statistics.median(ts)
            gbps = 2 * x.numel() * 4 / ms / 1e6
            print(f"{name:38s} {ms:8.4f} {gbps:8.0f} {100 * copy_ms / ms:9.1f}% {max(ts) / min(ts) - 1:7.1%}")


if __name__ == "__main__":
    main()
