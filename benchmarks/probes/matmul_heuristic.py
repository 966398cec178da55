# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: a rule instead of a runtime sweep for examples/matmul_persistent.py's launch settings (H200).

The launcher autotunes: the first call on a new (M, N, K) compiles and times every config of
`matmul_configs()`. This probe writes the picks down as a rule, `heuristic()`: the largest tile that
still gives nearly every SM a tile (128 x 256, then 128 x 128, then 64 x 128), the C tile stored in
halves from three waves of tiles up (descriptor kernel), and for pointer loads on rows that are not
16-element aligned the 128 x 128 x 32 tile the sweep picked on the ragged shape. For each shape, dtype
and variant it times
* the rule's config, launched directly (its first call: one compile, in a fresh process);
* the autotuned launcher (`matmul_persistent(a, b, variant=...)`; its first call: the other configs'
  compiles, then the sweep; the rule's config is already compiled by then, so the sweep's first call is
  a little cheaper here than in a fresh process);
* cuBLAS.
Each result is checked against an fp32 product before it is timed; kernel time is do_bench_cudagraph's
median, 3 interleaved passes, median over passes. A time guard stops starting new shapes after BUDGET_S.
Usage: python benchmarks/probes/matmul_heuristic.py   (on a CPU-only machine with TRITON_INTERPRET=1: a
dry run on tiny shapes, one config per kernel as the example does there; the times mean nothing)
"""

import math
import os
import statistics
import sys
import time

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import triton  # noqa: E402
from _examples import interleaved_times, load_example, shape_label, wall_clock_bench  # noqa: E402
from _examples import sm_count as gpu_sm_count  # noqa: E402

mpe = load_example("matmul_persistent")
DRY = not torch.cuda.is_available()
BUDGET_S = 150
VARIANTS = ("tiles", "persistent", "tma")
SHAPES = {  # (M, N, K): dtypes, in the order they are run (the time guard drops the last ones first)
    (1024, 1024, 1024): ("fp16",), (2048, 2048, 2048): ("fp16",), (4096, 4096, 4096): ("fp16",),
    (4000, 3000, 2000): ("fp16",), (8192, 8192, 8192): ("fp16",), (8192, 1024, 1024): ("fp16",),
    (1024, 8192, 4096): ("fp16",), (4096, 4096, 512): ("fp16",), (2048, 8192, 2048): ("fp16",),
    (3072, 3072, 3072): ("fp16",), (1536, 1536, 1536): ("fp16",), (512, 512, 512): ("fp16",),
    (777, 1000, 520): ("fp16",),
}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
if DRY:
    SHAPES = {(64, 96, 80): ("fp16",), (40, 24, 112): ("fp16",)}


def heuristic(M: int, N: int, K: int, variant: str, sm_count: int):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, extra constexprs) for this shape: no timing."""
    if DRY:
        return 32, 32, 32, 4, 1, ({"WARP_SPECIALIZE": False, "FLATTEN": True, "EPILOGUE_SUBTILE": False}
                                  if variant == "tma" else {})

    def tiles(bm, bn):
        return math.ceil(M / bm) * math.ceil(N / bn)

    full = 0.9 * sm_count  # "nearly every SM": 119 of 132
    if variant != "tma" and (N % 16 or K % 16):  # pointer loads on misaligned rows: the sweep's ragged pick
        bm, bn, bk, w, s = 128, 128, 32, 4, 4
    elif tiles(128, 256) >= full:
        bm, bn, bk, w, s = 128, 256, 64, 8, 3
    elif tiles(128, 128) >= full:
        bm, bn, bk, w, s = 128, 128, 64, 8, 4
    else:
        bm, bn, bk, w, s = 64, 128, 64, 4, 4
    extra = {}
    if variant == "tma":
        extra = {"WARP_SPECIALIZE": False, "FLATTEN": True, "EPILOGUE_SUBTILE": tiles(bm, bn) >= 3 * sm_count}
    return bm, bn, bk, w, s, extra


def launch(a, b, c, variant, cfg, sm_count):
    (M, K), N = a.shape, b.shape[1]
    bm, bn, bk, w, s, extra = cfg
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    grid = (tiles,) if variant == "tiles" else (min(sm_count, tiles),)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s, **extra)
    if variant == "tma":
        mpe.matmul_tma_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), **meta)
    else:
        kernel = mpe.matmul_tiles_kernel if variant == "tiles" else mpe.matmul_persistent_kernel
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     INT64=False, **meta)
    return c


def cfg_name(cfg) -> str:
    bm, bn, bk, w, s, extra = cfg
    return f"{bm}x{bn}x{bk} w{w} s{s}" + (" sub" if extra.get("EPILOGUE_SUBTILE") else "") + (
        " ws" if extra.get("WARP_SPECIALIZE") else "")


def tuned_name(variant: str, dtype) -> str:
    c = mpe.tuned_kernel(variant, dtype).best_config
    k = c.kwargs
    extra = {n: k[n] for n in ("WARP_SPECIALIZE", "EPILOGUE_SUBTILE") if n in k}
    return cfg_name((k["BLOCK_M"], k["BLOCK_N"], k["BLOCK_K"], c.num_warps, c.num_stages, extra))


def first_call(fn) -> float:
    """Seconds for one call, synchronized (a first call: compiles, and for the launcher the sweep)."""
    t = time.perf_counter()
    fn()
    if not DRY:
        torch.cuda.synchronize()
    return time.perf_counter() - t


def main():
    sys.stdout.reconfigure(line_buffering=True)
    t0 = time.time()
    if DRY:
        dev, sm_count, graph_timer = torch.device("cpu"), 3, wall_clock_bench
        print("# DRY RUN on the CPU interpreter: tiny shapes, one config per kernel; numbers are meaningless")
    else:
        from triton.testing import do_bench_cudagraph as graph_timer

        dev = torch.device("cuda")
        sm_count = gpu_sm_count()
        triton.set_allocator(mpe._cuda_scratch)  # the launcher sets it too, on its first TMA call
        print(f"# {torch.cuda.get_device_name()} SMs={sm_count} torch {torch.__version__} triton {triton.__version__}"
              "; CUDA-graph time (do_bench_cudagraph median, rep 10 ms), 3 interleaved passes, median")
    print(f"{'shape':<16}{'dtype':<6}{'variant':<11}{'rule':<20}{'sweep picked':<20}{'rule us':>9}{'sweep us':>10}"
          f"{'sweep/rule':>11}{'cuBLAS us':>10}{'1st call s: rule':>18}{'sweep':>7}")
    ratios, firsts, skipped, wrong = {v: [] for v in VARIANTS}, [0.0, 0.0], [], 0
    for (M, N, K), dnames in SHAPES.items():
        for dname in dnames:
            if time.time() - t0 > BUDGET_S:
                skipped.append(f"{shape_label((M, N, K))} {dname}")
                continue
            dtype = DTYPES[dname]
            torch.manual_seed(0)
            a = torch.randn(M, K, device=dev, dtype=dtype)
            b = torch.randn(K, N, device=dev, dtype=dtype)
            c = torch.empty(M, N, device=dev, dtype=dtype)
            ref = a.float() @ b.float()
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
            atol = tol * ref.abs().mean().item()
            rows, cases = [], {"cuBLAS": lambda: torch.matmul(a, b)}
            for variant in VARIANTS:
                cfg = heuristic(M, N, K, variant, sm_count)
                rule = lambda variant=variant, cfg=cfg: launch(a, b, c, variant, cfg, sm_count)
                sweep = lambda variant=variant: mpe.matmul_persistent(a, b, variant=variant)
                t_rule = first_call(rule)
                t_sweep = first_call(sweep)
                ok = all(torch.allclose(f().float(), ref, rtol=tol, atol=atol) for f in (rule, sweep))
                if not ok:
                    wrong += 1
                    print(f"# WRONG, not timed: {shape_label((M, N, K))} {dname} {variant}")
                    continue
                cases[f"{variant} rule"], cases[f"{variant} sweep"] = rule, sweep
                rows.append((variant, cfg, t_rule, t_sweep))
            times = interleaved_times(cases, timer=graph_timer, rep=10, return_mode="median")
            cublas = statistics.median(times["cuBLAS"])
            for variant, cfg, t_rule, t_sweep in rows:
                r, s = statistics.median(times[f"{variant} rule"]), statistics.median(times[f"{variant} sweep"])
                ratios[variant].append(s / r)
                firsts[0] += t_rule
                firsts[1] += t_sweep
                print(f"{shape_label((M, N, K)):<16}{dname:<6}{variant:<11}{cfg_name(cfg):<20}"
                      f"{tuned_name(variant, dtype):<20}{r * 1e3:>9.2f}{s * 1e3:>10.2f}{s / r:>11.3f}"
                      f"{cublas * 1e3:>10.2f}{t_rule:>18.2f}{t_sweep:>7.2f}")
    print("\n## sweep time / rule time (above 1: the rule's config is faster), per variant")
    for variant, rs in ratios.items():
        if rs:
            geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
            print(f"{variant:<11} {len(rs)} points: geometric mean {geo:.3f}, min {min(rs):.3f}, max {max(rs):.3f}")
    print(f"# first calls, summed: the rule {firsts[0]:.1f} s, the sweep {firsts[1]:.1f} s; {wrong} WRONG")
    if skipped:
        print(f"# time guard ({BUDGET_S} s): skipped " + ", ".join(skipped))
    print(f"# done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
