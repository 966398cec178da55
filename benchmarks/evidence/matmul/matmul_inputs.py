# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: why the benchmarks and the probe `matmul_directions` time the same 1024^3 kernel differently.

run29's benchmark put the launcher's best 1024^3 point (`matmul_persistent(a, b, variant="tiles")`,
autotuned to 64 x 128 x 64, 4 warps, 4 stages) at 0.86x of cuBLAS in CUDA-graph time; the probe
`matmul_directions` (MATMUL_DIRECTIONS=small), launching that kernel with that config directly, at
0.90x. The two differ in two ways, and this probe separates them, fp16 and bf16, at 1024^3 and at the
ragged 4000 x 3000 x 2000 (where the two also disagreed about cuBLAS's graph time):
* the inputs: the benchmarks' `bench_case` draws A and B from randn; the probe scales B by 1/sqrt(K);
* the call: the launcher (input checks, output allocation, the autotuner's dispatch) against
  `matmul_tiles_kernel[grid](...)` with the config fixed.
Each (inputs, call) pair and cuBLAS is timed with do_bench (median, L2 flushed) and
do_bench_cudagraph (median), 3 interleaved passes, median over passes.
Usage: python benchmarks/probes/matmul_inputs.py   (needs CUDA; under a minute)
"""

import statistics

import torch
import triton
from _examples import interleaved_times, load_example, shape_label  # this folder is on sys.path

mp = load_example("matmul_persistent")
SHAPES = [(1024, 1024, 1024), (4000, 3000, 2000)]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def direct(a, b, c, cfg):
    """matmul_tiles_kernel with the autotuner's chosen config, launched without the launcher."""
    (M, K), N = a.shape, b.shape[1]
    kw = dict(cfg.kwargs)
    grid = (triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"]),)
    mp.matmul_tiles_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                 c.stride(0), c.stride(1), **kw, INT64=False, num_warps=cfg.num_warps,
                                 num_stages=cfg.num_stages)
    return c


def main():
    if not torch.cuda.is_available():
        raise SystemExit("needs CUDA")
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}; "
          "3 interleaved passes, median; cells: do_bench us / cudagraph us (spread of the graph time over passes)")
    for dname, dtype in DTYPES.items():
        for M, N, K in SHAPES:
            torch.manual_seed(0)
            a = torch.randn(M, K, device="cuda", dtype=dtype)
            b_bench = torch.randn(K, N, device="cuda", dtype=dtype)
            b_probe = (b_bench.float() / K**0.5).to(dtype)
            c = torch.empty(M, N, device="cuda", dtype=dtype)
            mp.matmul_persistent(a, b_bench, variant="tiles")  # autotunes this shape
            cfg = mp.tuned_kernel("tiles", dtype).best_config
            cases = {}
            for bname, b in (("randn B (benchmarks)", b_bench), ("B / sqrt(K) (probe)", b_probe)):
                ref = a.float() @ b.float()
                for call, fn in (("launcher", lambda: mp.matmul_persistent(a, b, variant="tiles")),
                                 ("direct kernel", lambda: direct(a, b, c, cfg)),
                                 ("cuBLAS", lambda: torch.matmul(a, b))):
                    tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
                    torch.testing.assert_close(fn().float(), ref, rtol=tol, atol=tol * ref.abs().mean().item())
                    cases[f"{call:<14}{bname}"] = fn
            bench = interleaved_times(cases, warmup=5, rep=20, return_mode="median")
            torch.cuda.synchronize()
            from triton.testing import do_bench_cudagraph
            graph = interleaved_times(cases, timer=do_bench_cudagraph, rep=10, return_mode="median")
            print(f"\n## {dname} {shape_label((M, N, K))}, tiles config {cfg}")
            for case in cases:
                g = graph[case]
                print(f"{case:<40}{statistics.median(bench[case]) * 1e3:>9.2f} / {statistics.median(g) * 1e3:>7.2f}"
                      f"  ({max(g) / min(g) - 1:.1%})")


if __name__ == "__main__":
    main()
