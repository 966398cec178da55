# ruff: noqa: B023  (each lambda is timed inside the iteration that made it)
"""Probe: where the host time of one layer_norm call goes (do_bench was 4-5x the CUDA-graph time in run18).

Wall clock per call (1000 back-to-back calls, one synchronize), fp16, 64 x 1024 and 4096 x 16384:
the public `layer_norm` (no input requires grad: the launcher, called directly), the same through
`LayerNormFunction.apply` (its path before the direct call) and with an input that requires grad,
`layer_norm_fwd`, the kernel launched through `wrap_triton`, the kernel launched directly, and
`_check_inputs` alone; then the backward launcher likewise.

Then the forward's `do_bench` against its CUDA-graph time, pass by pass, at the benchmarks' shapes
(2^26 elements, bf16 and fp16, N = 1024 and 8192, where run25's `do_bench` points of the bf16 forward
were flagged host-bound): the benchmarks' settings (warmup 5 ms, rep 30 ms, L2 flushed), 5 passes each,
interleaved, for `layer_norm`, `LayerNormFunction.apply`, the kernel launched directly and `F.layer_norm`.
If only the calls with the most host time stay above their graph time, the host is the cause.
Usage: python benchmarks/probes/layer_norm_host.py   (needs CUDA)
"""

import time

import torch
from _examples import interleaved_times, load_example  # this folder is on sys.path (see _examples.py)


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
        wg = w.clone().requires_grad_(True)
        y = torch.empty_like(x)
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        bn = triton.next_power_of_2(n)
        args = (x, y, w, b, mean, rstd, n, x.stride(0), n, 1e-5)
        cases = {
            "layer_norm (public; no grad: the launcher)": lambda: ex.layer_norm(x, w, b),
            "LayerNormFunction.apply (the path before)": lambda: ex.LayerNormFunction.apply(x, w, b, 1e-5),
            "layer_norm, w requires grad (the Function)": lambda: ex.layer_norm(x, wg, b),
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
    do_bench_passes(ex)


def do_bench_passes(ex, passes=5) -> None:
    import triton
    from triton.testing import do_bench_cudagraph

    print("\n== forward, 2^26 elements: do_bench median per pass (warmup 5 ms, rep 30 ms, L2 flushed) and "
          "do_bench_cudagraph median (rep 2 ms), ms")
    for dtype in (torch.bfloat16, torch.float16):
        for n in (1024, 8192):
            m = 2**26 // n
            x = torch.randn(m, n, device="cuda", dtype=dtype)
            w = 1 + 0.1 * torch.randn(n, device="cuda", dtype=dtype)
            b = 0.1 * torch.randn(n, device="cuda", dtype=dtype)
            y = torch.empty_like(x)
            mean, rstd = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
            bn = triton.next_power_of_2(n)
            cases = {
                "layer_norm": lambda: ex.layer_norm(x, w, b),
                "LayerNormFunction.apply": lambda: ex.LayerNormFunction.apply(x, w, b, 1e-5),
                "kernel[grid] directly": lambda: ex.layer_norm_fwd_kernel[(m,)](
                    x, y, w, b, mean, rstd, n, x.stride(0), n, 1e-5, BLOCK_N=bn, num_warps=ex._num_warps(bn)),
                "F.layer_norm": lambda: torch.nn.functional.layer_norm(x, (n,), w, b),
            }
            times = interleaved_times(cases, passes=passes, warmup=5, rep=30)
            print(f"-- {str(dtype).removeprefix('torch.')} {m} x {n}")
            for name, fn in cases.items():
                graph = do_bench_cudagraph(fn, rep=2)
                ratios = " ".join(f"{t / graph:5.2f}" for t in times[name])
                print(f"  {name:26s} graph {graph:.4f}  do_bench {' '.join(f'{t:.4f}' for t in times[name])}"
                      f"  (x graph: {ratios})")


if __name__ == "__main__":
    main()
