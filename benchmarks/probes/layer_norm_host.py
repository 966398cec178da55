# ruff: noqa: B023  (each lambda is timed inside the iteration that made it)
"""Probe: where the host time of one layer_norm call goes (do_bench was 4-5x the CUDA-graph time in run18).

Wall clock per call (1000 back-to-back calls, one synchronize), fp16, 4096 x 16384:
the public `layer_norm`, `layer_norm_fwd`, the kernel launched through `wrap_triton`, the kernel
launched directly, and `_check_inputs` alone; then the backward launcher likewise.
Usage: python benchmarks/probes/layer_norm_host.py   (needs CUDA)
"""

import time

import torch
from _examples import load_example  # this folder is on sys.path (see _examples.py)


def per_call_us(fn, calls=1000):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("layer_norm")
    import triton
    from torch.library import wrap_triton

    for m, n in ((64, 1024), (4096, 16384)):
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        w, b = torch.randn(n, device="cuda", dtype=torch.float16), torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        bn = triton.next_power_of_2(n)
        args = (x, y, w, b, mean, rstd, n, x.stride(0), n, 1e-5)
        cases = {
            "layer_norm (public, autograd.Function)": lambda: ex.layer_norm(x, w, b),
            "layer_norm_op (triton_op)": lambda: ex.layer_norm_op(x, w, b),
            "layer_norm_fwd (launcher)": lambda: ex.layer_norm_fwd(x, w, b),
            "wrap_triton(kernel)[grid]": lambda: wrap_triton(ex.layer_norm_fwd_kernel)[(m,)](
                *args, BLOCK_N=bn, num_warps=ex._num_warps(bn)),
            "kernel[grid] directly": lambda: ex.layer_norm_fwd_kernel[(m,)](*args, BLOCK_N=bn,
                                                                          num_warps=ex._num_warps(bn)),
            "_check_inputs only": lambda: ex._check_inputs(x, w, b, 1e-5),
            "F.layer_norm": lambda: torch.nn.functional.layer_norm(x, (n,), w, b),
        }
        print(f"== fp16 {m} x {n}: host wall clock per call, us")
        for name, fn in cases.items():
            print(f"  {per_call_us(fn):9.1f}  {name}")
        dy = torch.randn_like(x)
        _, mean, rstd = ex.layer_norm_fwd(x, w, b)
        print(f"  {per_call_us(lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd), 300):9.1f}  layer_norm_bwd (launcher)")


if __name__ == "__main__":
    main()
