# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: matmul techniques this project has not measured yet, against cuBLAS in the same run (H200).

Answers, fp16 and bf16, at S^3 (S = 1024, 2048, 4096, 8192) and the ragged 4000x3000x2000:
1. A persistent tensor-descriptor (TMA) kernel written here: grid = min(#SMs, #tiles), grouped tile
   order, FLATTEN or WARP_SPECIALIZE on the tile loop (never both: Triton 3.6 on Hopper does not
   combine them), and EPILOGUE_SUBTILE: the C tile is stored as two halves, so the next tile's loads
   overlap the store and the smaller epilogue buffer leaves room for one more stage.
2. num_ctas=2 (thread-block clusters) on the shipped non-persistent `matmul_tma_kernel`
   (examples/matmul.py), beside num_ctas=1. A failure to compile or launch is a result too.
3. Split-K at 1024^3 and 4000x3000x2000, SPLIT_K 2 and 4: each program computes one K slice of a C
   tile in fp32; slices are summed by fp32 atomics (then a cast) or in a workspace by a second
   kernel. The timed call includes those extra steps.
4. cuBLAS (torch.matmul) on the same tensors: the bar.
Every point is checked against an fp32 product (output prefilled with NaN) before it is timed; a wrong
one prints WRONG and is not timed. Kernels are compiled and launched once in a process pool first
(Triton's disk cache); one that failed there is not launched again (a bad launch poisons a context).
Timing: do_bench (median, L2 flushed) and do_bench_cudagraph (median); cells print "do_bench/cudagraph"
TFLOP/s (2*M*N*K / time) and cuBLAS cudagraph time / this cudagraph time; a summary table ends the
run. A time guard stops starting new points after about 100 s and lists what it skipped.
With MATMUL_DIRECTIONS=tiles in the environment it times only other tile shapes for the persistent TMA
kernel at 2048^3 and the ragged shape (where run24's best missed cuBLAS), beside run24's best; with
MATMUL_DIRECTIONS=small, smaller tiles, deeper pipelines, one program per tile and split-K at 1024^3,
and every candidate and cuBLAS at 1024 x 1024 x 64 (one K step: the fixed cost of a launch, its prologue
and its epilogue), beside the pointer-load kernel the benchmarks' best 1024^3 point runs
(examples/matmul_persistent.py's `matmul_tiles_kernel`, each of its autotune configs) and an empty kernel
on the same grid (the launch floor); the summary adds each point's CUDA-graph time in microseconds.
Usage: python benchmarks/probes/matmul_directions.py   (on a CPU-only machine with TRITON_INTERPRET=1:
a dry run of every code path on tiny shapes; the "timings" are wall clock and mean nothing)
"""

import functools
import multiprocessing as mp
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, wait

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from _examples import load_example, shape_label, sm_count, wall_clock_bench  # noqa: E402  (this folder is on sys.path, see _examples.py)

mm = load_example("matmul")  # matmul_tma_kernel (non-persistent, in-kernel descriptors), tile_coords
mpe = load_example("matmul_persistent")  # matmul_tiles_kernel (one program per tile, pointer loads)
BUDGET_S = 100
DRY = not torch.cuda.is_available()
RAGGED = (4000, 3000, 2000)
SHAPES = [(1024,) * 3, (2048,) * 3, (4096,) * 3, (8192,) * 3, RAGGED]
SPLITK_SHAPES = [(1024,) * 3, RAGGED]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
_WORKSPACES = {}  # split-K fp32 buffers, by (M, N, device, layers)
# ("pers", BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, EPILOGUE_SUBTILE, FLATTEN, WARP_SPECIALIZE)
# ("ctas", BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, num_ctas)
# ("splitk", BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, SPLIT_K, reduction: "atomic" | "sum")
# ("tiles", BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): matmul_persistent.py's matmul_tiles_kernel
CANDIDATES = [
    ("pers", 128, 256, 64, 8, 3, False, True, False),
    ("pers", 128, 256, 64, 8, 3, True, True, False),
    ("pers", 128, 256, 64, 8, 4, True, True, False),  # the halved epilogue buffer makes room for stage 4
    ("pers", 128, 256, 64, 8, 3, False, False, True),
    ("pers", 128, 256, 64, 8, 3, True, False, True),
    ("pers", 128, 128, 64, 8, 4, False, True, False),
    ("pers", 128, 128, 64, 8, 4, True, True, False),
    ("pers", 128, 128, 64, 4, 4, True, True, False),
    ("pers", 128, 128, 64, 8, 4, True, False, True),  # at 4 warps, sub + ws fails Hopper's WS data partition
    ("pers", 128, 128, 128, 8, 3, True, True, False),
    ("pers", 64, 128, 64, 4, 4, False, True, False),
    ("pers", 64, 128, 64, 4, 4, True, True, False),
    ("ctas", 128, 256, 64, 8, 3, 1),  # baseline for the cluster rows
    ("ctas", 128, 256, 64, 8, 3, 2),
    ("ctas", 256, 128, 64, 8, 3, 2),
    ("ctas", 128, 128, 64, 4, 4, 2),
    ("splitk", 128, 128, 64, 8, 4, 2, "atomic"),
    ("splitk", 128, 128, 64, 8, 4, 4, "atomic"),
    ("splitk", 128, 128, 64, 8, 4, 2, "sum"),
    ("splitk", 128, 128, 64, 8, 4, 4, "sum"),
    ("splitk", 64, 128, 64, 4, 4, 2, "sum"),
    ("splitk", 64, 128, 64, 4, 4, 4, "atomic"),
]
if os.environ.get("MATMUL_DIRECTIONS") == "tiles":  # run27: other tile shapes where 128x256x64 misses cuBLAS
    SHAPES, SPLITK_SHAPES = [(2048,) * 3, RAGGED], []
    CANDIDATES = [
        ("pers", 128, 256, 64, 8, 3, False, True, False),  # run24's best at 2048^3 and ragged: the baseline
        ("pers", 128, 256, 128, 8, 2, True, True, False),  # half the K steps; only a halved C fits beside 2 stages
        ("pers", 256, 128, 64, 8, 3, False, True, False),  # the transposed tile: 8 x 16 tiles at 2048
        ("pers", 256, 128, 64, 8, 4, True, True, False),
        ("pers", 128, 256, 64, 8, 4, True, False, True),
        ("pers", 128, 128, 64, 8, 5, True, True, False),  # 2 waves of smaller tiles, deeper pipeline
    ]
SPECIALIZATIONS = [(1024,) * 3, RAGGED]  # shapes that stand for every compiled specialization of SHAPES
if os.environ.get("MATMUL_DIRECTIONS") == "small":  # 1024^3, where the best variant is ~0.86x of cuBLAS
    # K = 64 is one step of the main loop: the grid's launch, prologue and epilogue alone, for both sides
    SHAPES, SPLITK_SHAPES, SPECIALIZATIONS = [(1024,) * 3, (1024, 1024, 64)], [(1024,) * 3], [(1024,) * 3]
    CANDIDATES = [
        ("pers", 64, 128, 64, 4, 4, False, True, False),  # run24's best at 1024^3: the baseline
        ("pers", 64, 128, 64, 4, 6, False, True, False),
        ("pers", 64, 128, 128, 4, 3, False, True, False),
        ("pers", 64, 64, 64, 4, 4, False, True, False),  # 256 tiles: two per SM
        ("pers", 64, 64, 128, 4, 3, False, True, False),
        ("pers", 128, 64, 64, 4, 4, False, True, False),
        ("ctas", 64, 128, 64, 4, 4, 1),  # one program per tile, no persistence
        ("ctas", 64, 64, 64, 4, 4, 1),
        ("splitk", 64, 64, 64, 4, 4, 2, "sum"),
        ("splitk", 64, 128, 64, 4, 4, 2, "atomic"),
        # the pointer-load kernel of the benchmarks' best 1024^3 point, with each config it autotunes over
        ("tiles", 128, 256, 64, 8, 3),
        ("tiles", 128, 128, 64, 8, 4),
        ("tiles", 64, 128, 64, 4, 4),
        ("tiles", 128, 128, 32, 4, 4),
    ]
if DRY:  # tiny shapes and blocks; bf16 is wrong under the interpreter
    RAGGED = (40, 24, 16)
    SHAPES = SPLITK_SHAPES = SPECIALIZATIONS = [(64, 64, 64), RAGGED]
    DTYPES = {"fp16": torch.float16}
    CANDIDATES = [
        ("pers", 32, 32, 32, 4, 1, False, True, False),
        ("pers", 32, 32, 32, 4, 1, True, True, False),
        ("pers", 16, 32, 16, 4, 1, True, False, True),  # warp_specialize: ignored by the interpreter
        ("ctas", 32, 32, 32, 4, 1, 1),
        ("ctas", 32, 32, 32, 4, 1, 2),  # num_ctas: ignored by the interpreter
        ("splitk", 32, 32, 16, 4, 1, 2, "atomic"),
        ("splitk", 16, 32, 16, 4, 1, 4, "sum"),
        ("tiles", 32, 32, 32, 4, 1),
    ]


@triton.jit
def persistent_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                          FLATTEN: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """grid = min(#SMs, #tiles); each program walks tiles start, start + grid, ... in grouped order."""
    C_BLOCK_N: tl.constexpr = BLOCK_N // 2 if EPILOGUE_SUBTILE else BLOCK_N
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, C_BLOCK_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    step = tl.num_programs(0)
    tile_id_c = tl.program_id(0) - step  # a second counter for the epilogue: no value shared with the loads
    for tile_id in tl.range(tl.program_id(0), num_tiles, step, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = mm.tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        tile_id_c += step
        pid_m, pid_n = mm.tile_coords(tile_id_c, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        if EPILOGUE_SUBTILE:  # (BM, BN) -> (BM, 2, BN/2) -> (BM, BN/2, 2) -> two (BM, BN/2) halves
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def splitk_kernel(a_ptr, b_ptr, ws_ptr, M, N, K, stride_am, stride_bk, stride_wm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  SPLIT_K: tl.constexpr, ATOMIC: tl.constexpr):
    """grid = (#tiles, SPLIT_K): program (t, s) adds the s-th K slice of tile t in fp32, either
    atomically into ws (M, N) or into its own layer s of ws (SPLIT_K, M, N)."""
    pid_m, pid_n = mm.tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    pid_k = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    k_lo = pid_k * per_split
    k_hi = tl.minimum(k_lo + per_split, k_tiles)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    ptrs = ws_ptr + offs_m[:, None] * stride_wm + offs_n[None, :]
    if ATOMIC:
        tl.atomic_add(ptrs, acc, mask=mask, sem="relaxed")
    else:
        tl.store(ptrs + pid_k * M * stride_wm, acc, mask=mask)


@triton.jit
def empty_kernel(c_ptr):
    """Does nothing: its time on a grid is the floor under any kernel launched on that grid."""
    pass


@triton.jit
def splitk_sum_kernel(ws_ptr, c_ptr, MN, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """c (contiguous, MN elements) = sum over s of layer s of ws, cast to c's dtype."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.load(ws_ptr + offs, mask=mask, other=0.0)
    for s in tl.static_range(1, SPLIT_K):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def name(c) -> str:
    if c[0] == "cublas":
        return "cuBLAS torch.matmul"
    kind, bm, bn, bk, w, s, *rest = c
    head = f"{kind} {bm}x{bn}x{bk} w{w} s{s}"
    if kind == "pers":
        return head + "".join(f" {n}" for n, on in zip(("sub", "flat", "ws"), rest, strict=True) if on)
    if kind == "tiles":
        return head
    return head + (f" ctas{rest[0]}" if kind == "ctas" else f" k{rest[0]} {rest[1]}")


def first_line(err) -> str:
    return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:200]}"


@functools.cache
def num_sms() -> int:  # 3 under the interpreter: tiny shapes still give programs 2 tiles and 1 tile
    return 3 if DRY else sm_count()


def launch(c, a, b, out):
    """One call of candidate c: out = a @ b (returns the result; cuBLAS allocates its own)."""
    if c[0] == "cublas":
        return torch.matmul(a, b)
    (M, K), N = a.shape, b.shape[1]
    kind, bm, bn, bk, w, s, *rest = c
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    strides = (a.stride(0), b.stride(0))
    if kind == "pers":
        sub, flat, ws = rest
        persistent_tma_kernel[(min(num_sms(), tiles),)](
            a, b, out, M, N, K, *strides, out.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
            EPILOGUE_SUBTILE=sub, FLATTEN=flat, WARP_SPECIALIZE=ws, num_warps=w, num_stages=s)
    elif kind == "tiles":
        mpe.matmul_tiles_kernel[(tiles,)](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                         out.stride(0), out.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                         GROUP_M=8, INT64=False, num_warps=w, num_stages=s)
    elif kind == "ctas":
        mm.matmul_tma_kernel[(tiles,)](a, b, out, M, N, K, *strides, out.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                                       BLOCK_K=bk, GROUP_M=8, WARP_SPECIALIZE=False, num_warps=w, num_stages=s,
                                       num_ctas=rest[0])
    else:
        split, mode = rest
        key = (M, N, a.device, split if mode == "sum" else 1)
        if key not in _WORKSPACES:
            _WORKSPACES[key] = torch.empty((key[3], M, N), device=a.device, dtype=torch.float32)
        ws = _WORKSPACES[key]
        if mode == "atomic":
            ws.zero_()
        splitk_kernel[(tiles, split)](a, b, ws, M, N, K, *strides, N, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                      GROUP_M=8, SPLIT_K=split, ATOMIC=mode == "atomic", num_warps=w, num_stages=s)
        if mode == "atomic":
            out.copy_(ws[0])
        else:
            splitk_sum_kernel[(triton.cdiv(M * N, 1024),)](ws, out, M * N, SPLIT_K=split, BLOCK=1024, num_warps=4)
    return out


def _alloc(size, align, stream):  # scratch for descriptors made in a kernel (tl.make_tensor_descriptor)
    return torch.empty(size, device="cuda", dtype=torch.int8)


def _compile_job(job):
    """Pool worker: one launch with the timed run's dtypes and specialization, filling Triton's disk cache."""
    try:
        triton.set_allocator(_alloc)
        c, dtype, (M, N, K) = job
        a = torch.randn(M, K, device="cuda", dtype=DTYPES[dtype])
        b = torch.randn(K, N, device="cuda", dtype=DTYPES[dtype])
        launch(c, a, b, torch.empty(M, N, device="cuda", dtype=DTYPES[dtype]))
        torch.cuda.synchronize()
        return None
    except Exception as err:
        return first_line(err)


def precompile(jobs, seconds):
    """Compile + launch every job in spawned processes; return {job: first error line} (timeouts included)."""
    pool = ProcessPoolExecutor(max_workers=max(1, min(14, (os.cpu_count() or 2) - 2)),
                               mp_context=mp.get_context("spawn"))
    futures = {pool.submit(_compile_job, job): job for job in jobs}
    done, pending = wait(futures, timeout=seconds)
    errors = {}
    for f in done:
        try:
            if f.result():
                errors[futures[f]] = f.result()
        except Exception as err:  # a worker died (the pool is broken): compile these on first use instead
            print(f"# precompile of {name(futures[f][0])} {futures[f][1]}: {type(err).__name__}")
    stuck = [f for f in pending if not f.cancel()]  # queued jobs are cancelled: they compile on first use
    errors.update({futures[f]: f"still running after {seconds:.0f} s (hang or slow compile)" for f in stuck})
    if stuck:
        for proc in list(pool._processes.values()):  # our own workers; one may be stuck in a kernel
            proc.kill()
    pool.shutdown(wait=not stuck, cancel_futures=True)
    return errors


def main():
    sys.stdout.reconfigure(line_buffering=True)  # partial output survives a kill
    t0 = time.time()
    if DRY:
        do_bench = do_bench_cudagraph = wall_clock_bench
        dev = torch.device("cpu")
        print("# DRY RUN on the CPU interpreter (fp16 only, tiny shapes, no compile pool): numbers are meaningless;"
              " num_ctas and warp_specialize are accepted but ignored by the interpreter")
    else:
        from triton.testing import do_bench, do_bench_cudagraph

        dev = torch.device("cuda")
        triton.set_allocator(_alloc)
        print(f"# {torch.cuda.get_device_name()} SMs={num_sms()} torch {torch.__version__} triton {triton.__version__}"
              "; timing: do_bench median (L2 flushed, warmup 5 ms, rep 20 ms) / do_bench_cudagraph median (rep 10 ms)")

    # every (candidate, dtype, specialization): S^3 sizes specialize alike (all divisible by 16), N = 3000 differs
    jobs = [(c, d, s) for c in CANDIDATES for d in DTYPES for s in SPECIALIZATIONS]
    errors = {}
    if not DRY:
        errors = precompile(jobs, seconds=max(20.0, 0.6 * BUDGET_S - (time.time() - t0)))
        print(f"# compiled and launched {len(jobs)} kernels in {time.time() - t0:.0f} s, {len(errors)} failed:")
        for (c, d, s), msg in errors.items():
            print(f"#   {name(c)} {d} {shape_label(s)}: {msg}")

    inputs = {}

    def get(shape, dtype):
        if (shape, dtype) not in inputs:
            M, N, K = shape
            a = torch.randn(M, K, device=dev, dtype=DTYPES[dtype])
            b = (torch.randn(K, N, device=dev) / K**0.5).to(DTYPES[dtype])
            ref = a.float() @ b.float()  # fp32 product: the reference for cuBLAS too
            inputs[(shape, dtype)] = (a, b, ref, torch.empty(M, N, device=dev, dtype=DTYPES[dtype]))
        return inputs[(shape, dtype)]

    def tflops(shape, ms):
        return 2.0 * shape[0] * shape[1] * shape[2] / ms / 1e9

    results, cublas = {}, {}  # (c, dtype, shape) and (dtype, shape) -> (do_bench, cudagraph) TFLOP/s
    skipped, counts = [], {"correct": 0, "WRONG": 0, "error": 0}

    def point(c, dtype, shape):
        """Check, then time one (candidate, dtype, shape): a cell of the table."""
        if shape not in (SPLITK_SHAPES if c[0] == "splitk" else SHAPES):
            return "-"
        spec = RAGGED if shape == RAGGED else (1024,) * 3
        if (c, dtype, spec) in errors:
            return "compile/launch"
        if time.time() - t0 > BUDGET_S:
            skipped.append(f"{name(c)} {dtype} {shape_label(shape)}")
            return "skipped"
        a, b, ref, out = get(shape, dtype)
        fn = lambda: launch(c, a, b, out)
        try:
            out.fill_(float("nan"))
            got = fn().float()
            tol = 2e-2 if dtype == "bf16" else 1e-2
            scale = ref.abs().mean().item()
            if not torch.allclose(got, ref, rtol=tol, atol=tol * scale):
                err = (got - ref).abs().max().item() / scale
                print(f"# WRONG, not timed: {name(c)} {dtype} {shape_label(shape)}: max error {err:.3g} x mean |ref|")
                counts["WRONG"] += 1
                return "WRONG"
            counts["correct"] += 1
            ms = do_bench(fn, warmup=5, rep=20, return_mode="median")
            if not DRY:
                torch.cuda.synchronize()
            gms = do_bench_cudagraph(fn, rep=10, return_mode="median")
        except Exception as err:
            print(f"# {name(c)} {dtype} {shape_label(shape)}: {first_line(err)}")
            counts["error"] += 1
            return type(err).__name__[:14]
        v = results[(c, dtype, shape)] = (tflops(shape, ms), tflops(shape, gms))
        if c[0] == "cublas":
            cublas[(dtype, shape)] = v
            return f"{v[0]:.0f}/{v[1]:.0f}"
        base = cublas.get((dtype, shape))
        return f"{v[0]:.0f}/{v[1]:.0f}" + (f" {v[1] / base[1]:.2f}x" if base else "")

    def row(text, cells):
        print(f"{text:<36}" + "".join(f"{x:>16}" for x in cells))

    sections = [("cuBLAS", [("cublas",)]),
                ("persistent TMA (this probe)", [c for c in CANDIDATES if c[0] == "pers"]),
                ("non-persistent matmul_tma_kernel, num_ctas", [c for c in CANDIDATES if c[0] == "ctas"]),
                ("split-K, SPLIT_K slices reduced by fp32 atomics or a sum kernel",
                 [c for c in CANDIDATES if c[0] == "splitk"]),
                ("matmul_persistent.py's matmul_tiles_kernel (one program per tile, pointer loads)",
                 [c for c in CANDIDATES if c[0] == "tiles"])]
    for title, cands in sections:
        print(f"\n## {title}: TFLOP/s do_bench/cudagraph, ratio = cuBLAS cudagraph time / this cudagraph time")
        row("dtype candidate", [shape_label(s) for s in SHAPES])
        for c in cands:
            for dtype in DTYPES:  # dtypes interleaved, so a time-guard stop cuts both alike
                row(f"{dtype} {name(c)}", [point(c, dtype, s) for s in SHAPES])
        print(f"# {time.time() - t0:.0f} s elapsed")

    if os.environ.get("MATMUL_DIRECTIONS") == "small" or DRY:
        floor = torch.empty(1, device=dev)
        for grid in (128, num_sms()):
            fn = lambda: empty_kernel[(grid,)](floor)
            fn()
            ms = do_bench(fn, warmup=5, rep=20, return_mode="median")
            gms = do_bench_cudagraph(fn, rep=10, return_mode="median")
            print(f"# launch floor: an empty kernel on {grid} programs: do_bench {ms * 1e3:.2f} us, "
                  f"cudagraph {gms * 1e3:.2f} us")

    print("\n## summary: best candidate per shape, dtype and technique (by cudagraph time)")
    print(f"{'dtype':<6}{'shape':<16}{'technique':<10}{'best candidate':<34}{'do_bench':>9}{'cudagraph':>10}"
          f"{'vs cuBLAS':>10}{'graph us':>10}")
    for dtype in DTYPES:
        for shape in SHAPES:
            base = cublas.get((dtype, shape))
            for kind in ("cublas", "pers", "ctas", "splitk", "tiles"):
                mine = [(v, c) for (c, d, s), v in results.items() if c[0] == kind and d == dtype and s == shape]
                if not mine:
                    continue
                v, c = max(mine, key=lambda t: t[0][1])
                ratio = f"{v[1] / base[1]:.2f}x" if base else "-"
                us = 2.0 * shape[0] * shape[1] * shape[2] / v[1] / 1e6  # TFLOP/s back to microseconds
                print(f"{dtype:<6}{shape_label(shape):<16}{kind:<10}{name(c):<34}{v[0]:>9.0f}{v[1]:>10.0f}{ratio:>10}"
                      f"{us:>10.2f}")
    print("# checked against the fp32 product: " + ", ".join(f"{n} {k}" for k, n in counts.items())
          + f"; {len(errors)} (candidate, dtype, specialization) failed to compile or launch")
    if skipped:
        print(f"# time guard ({BUDGET_S} s): skipped {len(skipped)} points: " + "; ".join(skipped))
    print(f"# done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
