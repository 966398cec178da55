# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: do first (autotuning) calls race with work still queued on the caller's stream?

run20 and run21 each saw one wrong answer from a first call on 777 x 1000 x 520 (linear_gelu bf16,
matmul fp16) while 16 test processes shared the GPU. Suspected cause: the autotuners time configs with
`triton.testing.do_bench_cudagraph`, whose warm-up calls run on a new side stream that does not wait
for the caller's stream, so they write the new output C while kernels queued on the caller's stream may
still use C's memory (a block the caching allocator just got back, e.g. from the reference's fp32
temporaries computed one line before).

Each trial builds a fresh autotuner around `examples/matmul.py`'s `matmul_tma_kernel` (so the call
autotunes), queues milliseconds of matmuls on the caller's stream, computes the reference
`(a.float() @ b.float()).to(fp16)` (its temporaries freed, its cast still queued), allocates C and calls
the autotuner. Two timers: `plain` (do_bench_cudagraph as it is) and `synchronized`
(torch.cuda.synchronize() first). Prints how many trials gave a wrong reference or output for each.
Usage: python benchmarks/probes/autotune_race.py [TRIALS]   (needs CUDA; about a minute for 40 trials)
"""

from __future__ import annotations

import sys
import time

import torch
import triton
from _examples import load_example  # this folder is on sys.path (see _examples.py)


def plain(kernel_call, quantiles):
    return triton.testing.do_bench_cudagraph(kernel_call, rep=20, quantiles=quantiles)


def synchronized(kernel_call, quantiles):
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(kernel_call, rep=20, quantiles=quantiles)


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    ex = load_example("matmul")
    triton.set_allocator(ex._tma_scratch)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          f"{trials} trials per timer, fp16 777 x 1000 x 520, matmul_tma_kernel, fresh autotuner per trial")
    busy = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    M, N, K = 777, 1000, 520
    for name, timer in (("plain", plain), ("synchronized", synchronized), ("plain", plain)):
        wrong_ref = wrong_out = 0
        t0 = time.perf_counter()
        for _ in range(trials):
            tuned = triton.autotune(configs=ex.matmul_tma_configs(), key=["M", "N", "K", "GROUP_M"],
                                    do_bench=timer)(ex.matmul_tma_kernel)
            a = torch.randn(M, K, device="cuda", dtype=torch.float16)
            b = torch.randn(K, N, device="cuda", dtype=torch.float16) / K**0.5
            torch.cuda.synchronize()
            for _ in range(10):
                busy @ busy  # milliseconds of work queued on the caller's stream
            ref = (a.float() @ b.float()).to(torch.float16)
            c = torch.empty(M, N, device="cuda", dtype=torch.float16)
            grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
            tuned[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), GROUP_M=8)
            torch.cuda.synchronize()
            exact = (a.double() @ b.double()).to(torch.float16)  # computed after everything settled
            wrong_ref += not torch.allclose(ref, exact, rtol=1e-2, atol=1e-2)
            wrong_out += not torch.allclose(c, exact, rtol=1e-2, atol=1e-2)
        print(f"{name:13s} wrong reference {wrong_ref:3d} / {trials}, wrong output {wrong_out:3d} / {trials} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
