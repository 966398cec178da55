"""Probe for the guide chapter on persistent grids and the persistent TMA matmul: run once on the H200.

Answers, with the repository's own example kernels (examples/matmul_persistent.py and
examples/persistent_rows.py), launched directly with explicit configs (no autotune):

1. Does the rows example's self-check pass on CUDA? (The matmul launcher, which
   autotunes, runs last: section 7.)
2. cuBLAS fp16/bf16 TFLOP/s at S^3 (S = 1024..8192) and 4000x3000x2000: the bar to beat.
3. RMS-norm rows, fp32, 2^26 elements: one program per row vs persistent with
   programs_per_sm in {1, 4, 16, 32, 64} and the launcher's default (warp occupancy),
   by row length N. Decides the default programs_per_sm and where each launch wins.
4. Config sweep, fp16: every candidate config of the TMA, pointer-persistent and
   one-program-per-tile kernels at S^3 for S = 1024, 2048, 4096; then the best two of
   each on the ragged shape (a ragged shape compiles a second specialization, so only
   the best get it); do_bench / CUDA-graph TFLOP/s. Decides the autotune lists in
   matmul_configs() and where each variant wins.
   4b: a persistent grid of 2 programs per SM for 128x128 tiles (3 stages fit twice).
5. bf16: the best fp16 config of each variant per shape, again in bf16.
6. Host-side cost of one launch (wall clock, back-to-back): torch.matmul, pointer kernel,
   TMA kernel (allocator + descriptors).
7. The example's autotuned launcher on CUDA: TMA path and the pointer fallback.

A time guard stops the sweeps at about 78 s and says what it skipped.
Usage: python benchmarks/probes/persistent.py   (needs CUDA)

History. Run 1 (H200, 2026-11-29 23:38, 100 s) swept 128x256 / 128x128 / 64x128 / 128x64
tiles at S = 1024..8192: 128x256x64 (8 warps, 3 stages) won every variant from 2048 up,
64x128x64 won at 1024, and the pointer kernels collapsed on 4000x3000x2000 (N = 3000 is
not a multiple of 16); those winners are matmul_configs(). It also showed persistent rows
winning for short rows only with many programs per SM. Run 2 (this file) tries 256x128,
GROUP_M 4/16, BLOCK_K 128 and 64x64 tiles for 1024 and 2048, the occupancy default for
rows, and stops sweeping 8192 (run 1: every variant's best was 128x256 there).
"""

import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import matmul_persistent as mp  # noqa: E402
import persistent_rows as pr  # noqa: E402
import triton  # noqa: E402
from _examples import sm_count  # noqa: E402  (the probes' folder, sys.path[1])
from triton.testing import do_bench, do_bench_cudagraph  # noqa: E402

assert torch.cuda.is_available(), "this probe needs a GPU"
T0 = time.time()
BUDGET_S = 78
DEV = torch.device("cuda")
SMS = sm_count(DEV)
print(f"# {torch.cuda.get_device_name()} SMs={SMS} torch {torch.__version__} triton {triton.__version__}")
triton.set_allocator(mp._cuda_scratch)


def left() -> float:
    return BUDGET_S - (time.time() - T0)


def bench(fn, graph=True):
    """(do_bench ms, cudagraph ms) medians, short budgets."""
    ms = do_bench(fn, warmup=5, rep=25, return_mode="median")
    gms = do_bench_cudagraph(fn, rep=25, return_mode="median") if graph else float("nan")
    return ms, gms


SHAPES = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (8192,) * 3, (4000, 3000, 2000)]
LABEL = {s: (str(s[0]) if s[0] == s[1] == s[2] else "x".join(map(str, s))) for s in SHAPES}

print("\n## 1. self-checks on CUDA")
for mod in (pr,):
    try:
        mod.self_check()
    except Exception as err:  # keep going: the other answers are still useful
        print(f"FAIL {mod.__name__}: {type(err).__name__}: {str(err)[:300]}")
        traceback.print_exc(limit=3)

INPUTS = {}


def inputs(shape, dtype):
    if (shape, dtype) not in INPUTS:
        M, N, K = shape
        INPUTS[(shape, dtype)] = (torch.randn(M, K, device=DEV, dtype=dtype),
                                  torch.randn(K, N, device=DEV, dtype=dtype))
    return INPUTS[(shape, dtype)]


def tflops(shape, ms):
    M, N, K = shape
    return 2.0 * M * N * K / ms / 1e9


def cell(shape, ms, gms):
    return f"{tflops(shape, ms):4.0f}/{tflops(shape, gms):4.0f}"


print("\n## 2. cuBLAS (torch.matmul), TFLOP/s do_bench/cudagraph")
print(f"{'dtype':<6}" + "".join(f"{LABEL[s]:>16}" for s in SHAPES))
CUBLAS = {}
for dtype in (torch.float16, torch.bfloat16):
    cells = []
    for s in SHAPES:
        a, b = inputs(s, dtype)
        ms, gms = bench(lambda a=a, b=b: torch.matmul(a, b))
        CUBLAS[(s, dtype)] = (ms, gms)
        cells.append(cell(s, ms, gms))
    print(f"{str(dtype)[6:]:<6}" + "".join(f"{c:>16}" for c in cells))

print("\n## 3. RMS-norm fp32, 2^26 elements, GB/s (do_bench): rows kernel, persistent x programs_per_sm, torch")
PPS = (1, 4, 16, 32, 64, None)  # None: the launcher's default (warp occupancy)
print(f"{'N':>6}{'rows':>8}" + "".join(f"{f'p{p}' if p else 'occ':>8}" for p in PPS) + f"{'torch':>8}")


def rows_line(N):
    M = 2**26 // N
    x = torch.randn(M, N, device=DEV)
    w = torch.randn(N, device=DEV)
    gb = (2 * M * N * 4) / 1e6
    fns = [lambda: pr.rms_norm_rows(x, w)]
    fns += [lambda p=p: pr.rms_norm_persistent(x, w, programs_per_sm=p) for p in PPS]
    fns += [lambda: torch.nn.functional.rms_norm(x, (N,), w, eps=1e-6)]
    ref = pr.rms_norm_torch(x, w)
    cells = []
    for fn in fns:
        try:
            ok = torch.allclose(fn(), ref, rtol=1e-4, atol=1e-4)
            cells.append(f"{gb / do_bench(fn, warmup=5, rep=20, return_mode='median'):.0f}" if ok else "BAD")
        except Exception as e:  # noqa: BLE001
            cells.append(type(e).__name__[:7])
    return cells


for N in (32, 128, 512, 2048, 8192, 32768):
    if left() < -10:
        print(f"  skipped (time): N={N}")
        continue
    print(f"{N:>6}" + "".join(f"{c:>8}" for c in rows_line(N)), flush=True)

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages[, WARP_SPECIALIZE, FLATTEN])
TMA_CFGS = [
    (128, 256, 64, 8, 8, 3, False, True),  # run 1 winner from 2048 up
    (128, 256, 64, 8, 8, 3, True, False),
    (256, 128, 64, 8, 8, 3, False, True),
    (128, 256, 64, 4, 8, 3, False, True),
    (128, 256, 64, 16, 8, 3, False, True),
    (128, 256, 128, 8, 8, 2, False, True),
    (64, 128, 64, 8, 4, 4, False, True),  # run 1 winner at 1024
    (64, 128, 64, 8, 4, 3, False, True),
    (64, 64, 64, 8, 4, 4, False, True),
]
PTR_CFGS = [
    (128, 256, 64, 8, 8, 3),  # run 1 winner from 2048 up
    (256, 128, 64, 8, 8, 3),
    (128, 256, 64, 8, 8, 4),
    (128, 256, 128, 8, 8, 2),
    (64, 128, 64, 8, 4, 4),  # run 1 winner at 1024
    (64, 128, 64, 8, 4, 3),
    (64, 64, 64, 8, 4, 4),
]


def launch(variant, cfg, a, b, programs_per_sm=1):
    """A callable that runs one variant with an explicit config and returns C."""
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=DEV, dtype=a.dtype)
    bm, bn, bk, gm, warps, stages = cfg[:6]
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, num_warps=warps, num_stages=stages)
    if variant == "tma":
        meta.update(WARP_SPECIALIZE=cfg[6], FLATTEN=cfg[7])
        kern = mp.matmul_tma_kernel[(min(SMS * programs_per_sm, tiles),)]

        def fn():
            kern(a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), **meta)  # row strides
            return c
    else:
        kern = (mp.matmul_tiles_kernel if variant == "tiles" else mp.matmul_persistent_kernel)
        grid = (tiles,) if variant == "tiles" else (min(SMS * programs_per_sm, tiles),)
        args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        meta["INT64"] = mp.needs_int64(a, b, c)  # as the launcher decides

        def fn():
            kern[grid](*args, **meta)
            return c
    return fn


def sweep(variant, cfgs, dtype, shapes_for_cfg):
    """Print one row per config; return {shape: [(graph ms, do_bench ms, cfg), ...]}."""
    scores = {s: [] for s in SHAPES}
    for cfg in cfgs:
        if left() < 0:
            print(f"  skipped (time): {variant} {cfg}")
            continue
        cells = []
        for s in SHAPES:
            if s not in shapes_for_cfg(cfg):
                cells.append("-")
                continue
            a, b = inputs(s, dtype)
            try:
                fn = launch(variant, cfg, a, b)
                out = fn()
                ref = CUBLAS_OUT.setdefault((s, dtype), torch.matmul(a, b))
                err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
                if not err < 1e-2:
                    cells.append(f"BAD{err:.0e}")
                    continue
                ms, gms = bench(fn)
                scores[s].append((gms, ms, cfg))
                cells.append(cell(s, ms, gms))
            except Exception as e:  # noqa: BLE001 - out of resources etc.: report and go on
                cells.append(type(e).__name__[:14])
        print(f"{variant:<11}{str(cfg):<36}" + "".join(f"{c:>16}" for c in cells), flush=True)
    return scores


CUBLAS_OUT = {}
BEST = {}
print("\n## 4. fp16 config sweep, TFLOP/s do_bench/cudagraph (cfg = BM, BN, BK, GROUP_M, warps, stages[, WS, FLATTEN])")
print(f"{'':<47}" + "".join(f"{LABEL[s]:>16}" for s in SHAPES))
SQUARE, RAGGED = SHAPES[:3], SHAPES[4]  # 8192: see History


def top(scores, shapes, n):
    """The n configs with the best mean cudagraph rank over `shapes`."""
    ranks = {}
    for s in shapes:
        for i, (_, _, cfg) in enumerate(sorted(scores[s])):
            ranks.setdefault(cfg, []).append(i)
    return sorted(ranks, key=lambda c: sum(ranks[c]) / len(ranks[c]))[:n]


for variant, cfgs in (("tma", TMA_CFGS), ("persistent", PTR_CFGS), ("tiles", PTR_CFGS)):
    BEST[variant] = sweep(variant, cfgs, torch.float16, lambda cfg: SQUARE)
for variant in ("tma", "persistent", "tiles"):
    if left() > 0:
        ragged = sweep(variant, top(BEST[variant], SQUARE[1:], 2), torch.float16, lambda cfg: [RAGGED])
        BEST[variant][RAGGED] = ragged[RAGGED]
print("best cudagraph config per shape (fp16), and ratio to cuBLAS (do_bench / cudagraph):")
for variant in BEST:
    for s in SHAPES:
        if BEST[variant][s]:
            gms, ms, cfg = min(BEST[variant][s])
            cms, cgms = CUBLAS[(s, torch.float16)]
            print(f"  {variant:<11}{LABEL[s]:>15}  {str(cfg):<40} x{cms / ms:.2f} / x{cgms / gms:.2f}")

print("\n## 4b. persistent grid of 1 vs 2 programs per SM, tiles small enough for two per SM (fp16)")
print(f"{'':<47}" + "".join(f"{LABEL[s]:>16}" for s in SQUARE[1:]))
for variant, cfg in (("tma", (128, 128, 64, 8, 4, 3, False, True)), ("persistent", (128, 128, 64, 8, 4, 3))):
    for pps in (1, 2):
        if left() < 0:
            print(f"  skipped (time): {variant} {cfg} x{pps}")
            continue
        cells = []
        for s in SQUARE[1:]:
            a, b = inputs(s, torch.float16)
            try:
                fn = launch(variant, cfg, a, b, programs_per_sm=pps)
                fn()
                cells.append(cell(s, *bench(fn)))
            except Exception as e:  # noqa: BLE001
                cells.append(type(e).__name__[:14])
        print(f"{variant:<11}{str(cfg) + f' x{pps}/SM':<36}" + "".join(f"{c:>16}" for c in cells), flush=True)

print("\n## 5. bf16: the best fp16 config per variant and shape, TFLOP/s do_bench/cudagraph")
print(f"{'':<47}" + "".join(f"{LABEL[s]:>16}" for s in SHAPES))
for variant, cfgs in (("tma", TMA_CFGS), ("persistent", PTR_CFGS), ("tiles", PTR_CFGS)):
    if left() < 0:
        print(f"  skipped (time): bf16 {variant}")
        continue
    keep = {s: {c for _, _, c in sorted(BEST[variant][s])[:1]} for s in SHAPES}
    chosen = [c for c in cfgs if any(c in k for k in keep.values())]
    sweep(variant, chosen, torch.bfloat16, lambda cfg, keep=keep: [s for s in SHAPES if cfg in keep[s]])

print("\n## 6. host cost of one call, us (2000 back-to-back calls, 1024^3 fp16)")
a, b = inputs(SHAPES[0], torch.float16)
calls = [("torch.matmul", lambda: torch.matmul(a, b))]
if BEST["tma"][SHAPES[0]] and BEST["persistent"][SHAPES[0]]:
    calls += [("tma kernel, fixed config", launch("tma", min(BEST["tma"][SHAPES[0]])[2], a, b)),
              ("pointer kernel, fixed config", launch("persistent", min(BEST["persistent"][SHAPES[0]])[2], a, b))]
for name, fn in calls:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(2000):
        fn()
    torch.cuda.synchronize()
    print(f"  {name:<32}{(time.perf_counter() - t) / 2000 * 1e6:8.1f}")
print("\n## 7. the example's autotuned launcher on CUDA, 512^3 fp16 (auto -> tma) and a transposed B")
if left() > 12:
    try:
        a, b = inputs((512, 512, 512), torch.float16)
        for bb in (b, b.t().contiguous().t()):
            out = mp.matmul_persistent(a, bb)
            torch.testing.assert_close(out, mp.matmul_torch(a, bb), rtol=1e-2, atol=5e-2)
        print("  ok")
    except Exception as err:  # noqa: BLE001
        print(f"FAIL matmul_persistent: {type(err).__name__}: {str(err)[:300]}")
        traceback.print_exc(limit=3)
else:
    print("  skipped (time)")
print(f"\n# done in {time.time() - T0:.0f} s")
