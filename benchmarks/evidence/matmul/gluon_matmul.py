"""A warp-specialized persistent matmul written in Gluon, against cuBLAS and the persistent
chapter's TMA kernel, on Hopper.

Triton 3.6 ignores `warp_specialize=True` on sm_90 at 8 warps (and fails to compile these
kernels at 4), so the matmul chapter's kernels keep every warp on both jobs: issuing the
TMA copies and the wgmma. Here the split is written by hand, as CUTLASS's "cooperative"
kernels do: one producer warp walks the program's tiles and copies A and B blocks into a
ring of STAGES shared-memory slots (TMA, one mbarrier per slot says "full"), and two
consumer warpgroups each multiply their 64 rows of the 128-row tile by the slot's B block
(wgmma, one in flight while the next is issued), release the slot ("empty", one arrive per
consumer) and, after the tile's last block, store their 64 x BLOCK_N of C through shared
memory with a TMA store that runs on while the next tile starts. Consumers get 240
registers a thread (setmaxnreg), the producer 24. Tiles are walked in GROUP_M-row groups
(the matmul chapter's order), one program per SM.

Every candidate is checked against cuBLAS (torch.matmul) before it is timed; then interleaved
passes of do_bench and CUDA-graph timing (scripts/probe_common.py). `--compile` compiles the
kernel for sm_90 without a GPU and prints its Hopper instructions and shared memory.

Usage (repository root, a CUDA GPU): python benchmarks/evidence/matmul/gluon_matmul.py --out DIR
[--budget S] (no --smoke: the interpreter does not run Gluon). Writes DIR/gluon_matmul.json (one point per line).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

ROWS_WG = 64  # rows of C per consumer warpgroup
BLOCK_M = 2 * ROWS_WG  # two consumers share a tile
COLS_K = 64  # 128 bytes of fp16: one swizzled row of a TMA box
WG_M = gl.constexpr(ROWS_WG)  # the same two, for the kernels
BLOCK_K = gl.constexpr(COLS_K)
CONSUMER_REGS = gl.constexpr(240)
PRODUCER_REGS = gl.constexpr(24)
MAXNREG = 168  # 3 warpgroups x 128 threads x 168 <= 65536 registers of an SM
# (BLOCK_N, STAGES, GROUP_M): shared memory is STAGES x (2 x 64 x 64 + 64 x BLOCK_N) x 2
# bytes for the ring plus 2 x 64 x BLOCK_N x 2 for C: 208 KB at 256 x 3, 160 KB at 128 x 4
CONFIGS = [(256, 3, 8), (128, 4, 8), (256, 3, 16), (128, 5, 8)]


@gluon.jit
def _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """(pid_m, pid_n) of tile number `tile`: GROUP_M rows of tiles walked column by
    column, so that programs running together share A's rows and B's columns in L2."""
    per_group = GROUP_M * num_pid_n
    first_m = (tile // per_group) * GROUP_M
    rows = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@gluon.jit
def _producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    num_pid_m = gl.cdiv(M, 2 * WG_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    nbytes: gl.constexpr = 2 * a_desc.block_type.nbytes + b_desc.block_type.nbytes
    c = 0  # blocks copied so far, over all tiles: slot c % STAGES
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * 2 * WG_M
        off_n = pid_n * BLOCK_N
        for k in range(k_steps):
            slot = c % STAGES
            mbarrier.wait(empty.index(slot), ((c // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(slot), nbytes)
            tma.async_copy_global_to_shared(a_desc, [off_m, k * BLOCK_K], ready.index(slot),
                                            a_bufs.index(2 * slot))
            tma.async_copy_global_to_shared(a_desc, [off_m + WG_M, k * BLOCK_K],
                                            ready.index(slot), a_bufs.index(2 * slot + 1))
            tma.async_copy_global_to_shared(b_desc, [k * BLOCK_K, off_n], ready.index(slot),
                                            b_bufs.index(slot))
            c += 1


@gluon.jit
def _consumer(c_desc, a_bufs, b_bufs, c_smem, ready, empty, M, N, K, WG: gl.constexpr,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    num_pid_m = gl.cdiv(M, 2 * WG_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_steps = gl.cdiv(K, BLOCK_K)
    c = 0  # blocks consumed so far, as the producer counts them
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([WG_M, BLOCK_N], gl.float32, acc_layout)
        for k in range(k_steps):
            slot = c % STAGES
            mbarrier.wait(ready.index(slot), (c // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(2 * slot + WG), b_bufs.index(slot), acc,
                                is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))  # the previous block's is done
            if k > 0:
                mbarrier.arrive(empty.index((c - 1) % STAGES))
            c += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((c - 1) % STAGES))
        tma.store_wait(0)  # the previous tile's C has left c_smem
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [pid_m * 2 * WG_M + WG * WG_M,
                                                 pid_n * BLOCK_N], c_smem)
    tma.store_wait(0)


@gluon.jit
def gluon_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_N: gl.constexpr,
                        STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [2 * STAGES] + a_desc.block_type.shape,
                                       a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape,
                                       b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, [2] + c_desc.block_type.shape, c_desc.layout)
    bar: gl.constexpr = mbarrier.MBarrierLayout()
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)  # the producer's expect; TMA's bytes
        mbarrier.init(empty.index(i), count=2)  # one arrive per consumer
    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (c_desc, a_bufs, b_bufs, c_smem.index(0), ready, empty, M, N, K, WG0,
                     BLOCK_N, STAGES, GROUP_M)),
        (_consumer, (c_desc, a_bufs, b_bufs, c_smem.index(1), ready, empty, M, N, K, WG1,
                     BLOCK_N, STAGES, GROUP_M)),
        (_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, BLOCK_N,
                     STAGES, GROUP_M)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


@functools.lru_cache
def _layout(rows: int, cols: int, dtype: torch.dtype):
    gdt = gl.float16 if dtype == torch.float16 else gl.bfloat16
    return gl.NVMMASharedLayout.get_default_for([rows, cols], gdt)


def descriptors(a, b, c, block_n: int):
    """TMA descriptors of A (64 x 64 boxes), B (64 x BLOCK_N) and C (64 x BLOCK_N)."""
    return (TensorDescriptor(a, list(a.shape), list(a.stride()), [ROWS_WG, COLS_K],
                             _layout(ROWS_WG, COLS_K, a.dtype)),
            TensorDescriptor(b, list(b.shape), list(b.stride()), [COLS_K, block_n],
                             _layout(COLS_K, block_n, b.dtype)),
            TensorDescriptor(c, list(c.shape), list(c.stride()), [ROWS_WG, block_n],
                             _layout(ROWS_WG, block_n, c.dtype)))


@functools.lru_cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def gluon_matmul(a, b, block_n: int = 256, stages: int = 3, group_m: int = 8):
    """C = A @ B (fp16 or bf16, row-major, 16-byte aligned rows), fp32 accumulation."""
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, block_n)
    grid = (min(tiles, _sm_count(a.device.index or 0)),)
    gluon_matmul_kernel[grid](*descriptors(a, b, c, block_n), M, N, K, BLOCK_N=block_n,
                              STAGES=stages, GROUP_M=group_m, num_warps=4, maxnreg=MAXNREG)
    return c


def compile_for_sm90(dtype=torch.float16, block_n=256, stages=3, group_m=8):
    """The kernel compiled for sm_90 without a GPU (the CompiledKernel)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    t = torch.empty(256, 256, dtype=dtype)
    descs = descriptors(t, t, t, block_n)
    sig = {n: mangle_type(d) for n, d in zip(("a_desc", "b_desc", "c_desc"), descs, strict=True)}
    sig.update(M="i32", N="i32", K="i32")
    consts = {"BLOCK_N": block_n, "STAGES": stages, "GROUP_M": group_m}
    sig.update(dict.fromkeys(consts, "constexpr"))
    src = GluonASTSource(gluon_matmul_kernel, sig, constexprs=consts)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "maxnreg": MAXNREG})


def label(cfg) -> str:
    return "gluon-ws 128x{} s{} g{}".format(*cfg)


def setup(pt: dict, device):
    import matmul_persistent as mp

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[pt["dtype"]]
    gen = torch.Generator(device=device).manual_seed(pt["M"] + pt["N"] + pt["K"])
    a = torch.randn(pt["M"], pt["K"], device=device, dtype=dtype, generator=gen)
    b = torch.randn(pt["K"], pt["N"], device=device, dtype=dtype, generator=gen)
    fns = {"cublas": lambda: torch.matmul(a, b),
           "triton-persistent-tma": lambda: mp.matmul_persistent(a, b, variant="tma")}
    for cfg in CONFIGS:
        fns[label(cfg)] = lambda cfg=cfg: gluon_matmul(a, b, *cfg)
    return fns, 5e-2, 2.0 * pt["M"] * pt["N"] * pt["K"]


def main() -> None:
    from scripts import probe_common as pc

    if "--compile" in sys.argv:
        for cfg in CONFIGS:
            k = compile_for_sm90(torch.float16, *cfg)
            ptx = k.asm["ptx"]
            print(label(cfg), {"wgmma": ptx.count("wgmma.mma_async"),
                               "tma": ptx.count("cp.async.bulk.tensor"),
                               "setmaxnreg": ptx.count("setmaxnreg")},
                  "shared", k.metadata.shared, pc.ptxas_usage(ptx))
        return
    args = pc.probe_args()
    device, timing = pc.timing_method(args.smoke)
    shapes = [(4096,) * 3, (8192,) * 3, (2048,) * 3, (4000, 3000, 2000), (1024,) * 3]
    points = [{"M": m, "N": n, "K": k, "dtype": dt} for dt in ("fp16", "bf16")
              for m, n, k in shapes]
    rows, skipped = pc.run_points(points, lambda pt: setup(pt, device), passes=3,
                                  timing=timing, budget_s=args.budget, ref="cublas",
                                  ref_key="cublas")
    header = pc.probe_header(
        "benchmarks/evidence/matmul/gluon_matmul.py",
        "Inputs: seeded randn A (M x K) and B (K x N), row-major. Reference: cuBLAS "
        "(torch.matmul); tolerance 5e-2 (rtol and atol). TFLOP/s = 2 M N K / time. "
        "triton-persistent-tma is examples/matmul_persistent.py's matmul_persistent(variant='tma') "
        "(its autotuner, run at the first call); gluon-ws 128xN sS gG is gluon_matmul_kernel here "
        "with BLOCK_N = N, STAGES = S, GROUP_M = G, one program per SM.",
        kernels="gluon_matmul_kernel here; examples/matmul_persistent.py",
        configs=[label(c) for c in CONFIGS])
    pc.write_points(args.out / "gluon_matmul.json", header,
                    rows + [{**p, "check": "skipped (budget)"} for p in skipped])


if __name__ == "__main__":
    main()
