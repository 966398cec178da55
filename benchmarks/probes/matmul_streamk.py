# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: stream-K for the matmul shapes whose last wave is partly empty (H200), against cuBLAS.

At 2048^3, 128 x 256 tiles make 128 programs for 132 SMs; on the ragged 4000 x 3000 x 2000 they make
384 tiles, 2.9 waves; at 4096^3, 512 tiles, 3.9 waves. Stream-K cuts the last wave's work into equal
shares of K steps instead of whole tiles, so every SM gets the same amount of it:
* the kernel here runs a grid of one program per SM. The first SK_TILES tiles (in grouped order) are
  the stream-K part: their SK_TILES * cdiv(K, BLOCK_K) K steps are split into one contiguous range per
  program. A program walks its range tile by tile; a tile it covers whole is stored directly; a piece
  of a tile is stored to the program's own fp32 slot (two per program: its range's first and last
  piece), then the program counts itself in on the tile's counter (acq_rel atomic). The program that
  arrives last adds the other pieces to its own and stores the tile: nobody waits. The other tiles
  are then computed whole, one per program per round (data-parallel), as the persistent kernel does.
* SK_TILES = "all" (every tile in the stream-K part), "hybrid" (the partial last wave plus one full
  wave, so each program has more than one tile's K steps to share out), or "none" (the same kernel,
  data-parallel only: the baseline).
* the first run of this probe (run 30) found stream-K far slower; the second looks for where the time goes:
  the walk over a program's pieces as a `while` loop or as a `for` loop over a computed count (`for`),
  and, timed only, the same walk with every piece stored straight to C and no fix-up at all
  (`no fix-up`: a wrong result, the cost of the walk alone); with MATMUL_STREAMK=walk in the
  environment only those variants run, fp16 at 2048^3 and 4096^3, with each kernel's registers and
  spills.
Each point is checked against an fp32 product (output prefilled with NaN) before it is timed, then
timed with do_bench (median, L2 flushed) and do_bench_cudagraph (median), beside cuBLAS and the
benchmarks' best kernel for the shape (examples/matmul_persistent.py, autotuned). A piece's counter is
reset by the program that stores the tile, so the counters are zeroed once, not per call.
Usage: python benchmarks/probes/matmul_streamk.py   (on a CPU-only machine with TRITON_INTERPRET=1:
a dry run on tiny shapes; its "timings" are wall clock and mean nothing)
"""

import os
import statistics
import sys

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from _examples import interleaved_times, load_example, shape_label, sm_count, wall_clock_bench  # noqa: E402

mm = load_example("matmul")  # tile_coords (grouped order)
mpe = load_example("matmul_persistent")  # the benchmarks' kernels, autotuned
DRY = not torch.cuda.is_available()
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
SHAPES = [(2048, 2048, 2048), (4000, 3000, 2000), (4096, 4096, 4096)]
CONFIGS = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4)]  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
MODES = ("none", "hybrid", "all")
# (mode, SEG_FOR, FIXUP): the piece walk as a for loop, and the fix-up (False: wrong result, timed only)
VARIANTS = [(m, False, True) for m in MODES]
if os.environ.get("MATMUL_STREAMK") == "walk":
    DTYPES = {"fp16": torch.float16}
    SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096)]
    CONFIGS = [(128, 256, 64, 8, 3)]
    VARIANTS = [("none", False, True), ("hybrid", False, True), ("hybrid", True, True), ("hybrid", True, False),
                ("all", False, True), ("all", True, True), ("all", True, False)]
if DRY:  # tiny shapes: 3 programs, ragged edges, tiles split into pieces; bf16 is wrong in the interpreter
    DTYPES = {"fp16": torch.float16}
    SHAPES = [(64, 112, 48), (40, 24, 112)]
    CONFIGS = [(32, 32, 16, 4, 1)]
    VARIANTS = [(m, f, True) for m in MODES for f in (False, True)] + [("all", True, False)]


@triton.jit
def _k_range(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, k0, k1,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The fp32 product of one tile's K steps k0 .. k1 - 1 (A, B row-major; rows past M, N wrap)."""
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = k0 * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k0, k1):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=tl.arange(0, BLOCK_K)[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=tl.arange(0, BLOCK_K)[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def _store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _piece(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           pid, grid, iters, units, u_begin, u_end, u, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, FIXUP: tl.constexpr):
    """The stream-K steps u .. (the end of u's tile or of the range) of program pid; returns where they end."""
    t = u // iters
    t_start = t * iters
    seg_end = tl.minimum(u_end, t_start + iters)
    pid_m, pid_n = mm.tile_coords(t, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = _k_range(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, u - t_start, seg_end - t_start,
                   BLOCK_M, BLOCK_N, BLOCK_K)
    if not FIXUP:  # timing only: every piece stored straight to C (a wrong result)
        _store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BLOCK_M, BLOCK_N)
    elif (u == t_start) & (seg_end == t_start + iters):  # the whole tile: no pieces
        _store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BLOCK_M, BLOCK_N)
    else:
        tile_elems = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        slot = 2 * pid + (u > u_begin).to(tl.int32)  # this range's first piece, or its last
        tl.store(part_ptr + slot.to(tl.int64) * BLOCK_M * BLOCK_N + tile_elems, acc)
        first = tl.cdiv((t_start + 1) * grid, units) - 1  # the program whose range holds the tile's first step
        last = tl.cdiv((t_start + iters) * grid, units) - 1  # ... and its last step
        tl.debug_barrier()  # every thread's piece is stored before the count says so
        arrived = tl.atomic_add(count_ptr + t, 1, sem="acq_rel")
        if arrived == last - first:  # the last piece to arrive adds the others and stores the tile
            for q in range(first, last + 1):
                if q != pid:
                    q_slot = 2 * q + ((q * units) // grid < t_start).to(tl.int32)
                    acc += tl.load(part_ptr + q_slot.to(tl.int64) * BLOCK_M * BLOCK_N + tile_elems, volatile=True)
            _store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BLOCK_M, BLOCK_N)
            tl.atomic_xchg(count_ptr + t, 0)  # ready for the next call
    return seg_end


@triton.jit
def streamk_kernel(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   sk_tiles, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, SEG_FOR: tl.constexpr, FIXUP: tl.constexpr):
    """grid = one program per SM; tiles 0 .. sk_tiles - 1 stream-K, the rest data-parallel (see the docstring
    at the top). part: (2 * grid, BLOCK_M * BLOCK_N) fp32 slots; count: one int32 per tile, zero between calls.
    The host guarantees sk_tiles * cdiv(K, BLOCK_K) >= grid (or sk_tiles = 0): every range holds a K step."""
    pid = tl.program_id(0)
    grid = tl.num_programs(0)
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    iters = tl.cdiv(K, BLOCK_K)
    units = sk_tiles * iters
    u_begin = (pid * units) // grid
    u_end = ((pid + 1) * units) // grid
    u = u_begin
    if SEG_FOR:  # the pieces as a counted loop: one per tile the range touches
        n_segs = tl.where(u_end > u_begin, (u_end - 1) // iters - u_begin // iters + 1, 0)
        for _ in range(0, n_segs):
            u = _piece(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K, stride_am, stride_bk, stride_cm, pid, grid,
                       iters, units, u_begin, u_end, u, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, FIXUP)
    else:
        while u < u_end:
            u = _piece(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K, stride_am, stride_bk, stride_cm, pid, grid,
                       iters, units, u_begin, u_end, u, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, FIXUP)
    for t in range(sk_tiles + pid, num_tiles, grid):  # the data-parallel part: whole tiles
        pid_m, pid_n = mm.tile_coords(t, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = _k_range(a_ptr, b_ptr, M, N, K, stride_am, stride_bk, pid_m, pid_n, 0, iters, BLOCK_M, BLOCK_N, BLOCK_K)
        _store_tile(c_ptr, acc, M, N, stride_cm, pid_m, pid_n, BLOCK_M, BLOCK_N)


def num_sms() -> int:  # 3 under the interpreter: tiny shapes still split tiles into pieces
    return 3 if DRY else sm_count()


def sk_tiles_for(mode: str, tiles: int, iters: int, grid: int) -> int:
    """How many tiles (from the first, in grouped order) go to the stream-K part."""
    if mode == "none":
        return 0
    partial = tiles % grid
    sk = tiles if mode == "all" or tiles <= grid else (partial + grid if partial else 0)
    return sk if sk * iters >= grid else 0  # fewer K steps than programs: no stream-K part


_BUFFERS = {}


_COMPILED = {}  # (cfg, seg_for, fixup) -> the compiled kernel (registers, spills)


def streamk(a, b, c, cfg, mode, seg_for=False, fixup=True):
    (M, K), N = a.shape, b.shape[1]
    bm, bn, bk, w, s = cfg
    grid = num_sms()
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    key = (a.device, bm, bn, tiles)
    if key not in _BUFFERS:  # slots and counters once per shape: the counters are left at zero by every call
        _BUFFERS[key] = (torch.empty((2 * grid, bm * bn), device=a.device, dtype=torch.float32),
                         torch.zeros(tiles, device=a.device, dtype=torch.int32))
    part, count = _BUFFERS[key]
    sk = sk_tiles_for(mode, tiles, triton.cdiv(K, bk), grid)
    _COMPILED[(cfg, seg_for, fixup)] = streamk_kernel[(grid,)](
        a, b, c, part, count, M, N, K, a.stride(0), b.stride(0), c.stride(0), sk, BLOCK_M=bm, BLOCK_N=bn,
        BLOCK_K=bk, GROUP_M=8, SEG_FOR=seg_for, FIXUP=fixup, num_warps=w, num_stages=s)
    return c


def main():
    sys.stdout.reconfigure(line_buffering=True)
    dev = torch.device("cpu" if DRY else "cuda")
    if DRY:
        do_bench = do_bench_cudagraph = wall_clock_bench
        print("# DRY RUN on the CPU interpreter: tiny shapes, 3 programs, fp16; numbers are meaningless")
    else:
        from triton.testing import do_bench, do_bench_cudagraph
        print(f"# {torch.cuda.get_device_name()} SMs={num_sms()} torch {torch.__version__} triton {triton.__version__}"
              "; 3 interleaved passes, median; cells: TFLOP/s do_bench / cudagraph, and cuBLAS graph time / this"
              " graph time")
    wrong = 0
    for dname, dtype in DTYPES.items():
        for M, N, K in SHAPES:
            torch.manual_seed(0)
            a = torch.randn(M, K, device=dev, dtype=dtype)
            b = torch.randn(K, N, device=dev, dtype=dtype)
            ref = a.float() @ b.float()
            c = torch.empty(M, N, device=dev, dtype=dtype)
            cases = {"cuBLAS torch.matmul": lambda: torch.matmul(a, b)}
            timing_only = set()  # wrong by design: launched once, not checked
            if not DRY:
                cases["benchmarks' best: matmul_persistent (auto)"] = lambda: mpe.matmul_persistent(a, b)
                cases["benchmarks' best: matmul_persistent (tiles)"] = (
                    lambda: mpe.matmul_persistent(a, b, variant="tiles"))
            for cfg in CONFIGS:
                tiles = triton.cdiv(M, cfg[0]) * triton.cdiv(N, cfg[1])
                seen = set()
                for mode, seg_for, fixup in VARIANTS:
                    sk = sk_tiles_for(mode, tiles, triton.cdiv(K, cfg[2]), num_sms())
                    if (sk, seg_for if sk else False, fixup if sk else True) in seen:
                        continue  # the same launch as an earlier variant's
                    seen.add((sk, seg_for if sk else False, fixup if sk else True))
                    name = (f"{cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]} {mode}{' for' if seg_for else ''}"
                            f"{'' if fixup else ' no fix-up'} ({sk} of {tiles} tiles stream-K)")
                    cases[name] = lambda cfg=cfg, m=mode, f=seg_for, x=fixup: streamk(a, b, c, cfg, m, f, x)
                    if not fixup:
                        timing_only.add(name)
            tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
            checked = {}
            for name, fn in cases.items():
                if name in timing_only:
                    fn()
                    checked[name] = True
                    continue
                for _ in range(2):  # twice: the second call runs on the counters the first left behind
                    c.fill_(float("nan"))
                    got = fn().float()
                    ok = torch.allclose(got, ref, rtol=tol, atol=tol * ref.abs().mean().item())
                    if not ok:
                        break
                checked[name] = ok
                if not ok:
                    wrong += 1
                    print(f"# WRONG, not timed: {name} {dname} {shape_label((M, N, K))}")
            good = {n: f for n, f in cases.items() if checked[n]}
            bench = interleaved_times(good, timer=do_bench, warmup=5, rep=20, return_mode="median")
            graph = interleaved_times(good, timer=do_bench_cudagraph, rep=10, return_mode="median")
            flops = 2.0 * M * N * K
            base = statistics.median(graph["cuBLAS torch.matmul"])
            print(f"\n## {dname} {shape_label((M, N, K))}")
            for name in good:
                t_b, t_g = statistics.median(bench[name]), statistics.median(graph[name])
                print(f"{name:<66}{flops / t_b / 1e9:>7.0f} /{flops / t_g / 1e9:>5.0f}  {base / t_g:.3f}x"
                      f"  ({max(graph[name]) / min(graph[name]) - 1:.1%})" + ("  wrong result, timed only"
                                                                             if name in timing_only else ""))
    for (cfg, seg_for, fixup), k in _COMPILED.items():
        if not DRY:
            print(f"# registers/spills: {cfg} for={seg_for} fix-up={fixup}: {k.n_regs} registers, {k.n_spills} spills")
    print(f"\n# checked against the fp32 product, each twice: {wrong} WRONG")


if __name__ == "__main__":
    main()
