# %% [markdown]
# # Attention on Hopper: warp-specialized kernels in Gluon
#
# `attention_hopper(q, k, v, causal, sm_scale)` computes the same
# `softmax(q @ k^T * sm_scale) @ v` as `examples/attention.py`, forward and
# backward (through autograd), written in **Gluon**
# (`triton.experimental.gluon`, shipped with Triton 3.6): a lower-level Triton
# dialect where the kernel, not the compiler, says which warps do what, which
# layouts tiles live in and when shared memory is reused.
# The schedule is FlashAttention-3's:
#
# * one persistent program (CTA) per SM, walking tiles of 128 query rows of
#   one (batch, head), in three *partitions* (`gl.warp_specialize`): a
#   one-warp **producer** that only issues TMA copies of Q, K and V tiles into
#   shared memory (K and V through a two-slot ring), and two four-warp
#   **consumer** warpgroups of 64 query rows each;
# * mbarriers say when a slot is full (the producer's copy landed) and when it
#   is empty again (both consumers are done with it);
# * each consumer computes `S = Q K^T` with an asynchronous `wgmma`, the online
#   softmax in base 2, and `O += P V` with `P` kept in registers; the `S` of the
#   next key block is issued before the `P V` of the current one, so the tensor
#   cores work while the softmax runs;
# * the producer runs ahead into the program's next tile while the consumers
#   finish the current one and store its O.
#
# The backward uses the same three partitions in two kernels, one for dK and
# dV (K and V stay, Q and dO stream) and one for dQ (the other way round).
#
# It needs an **sm_90 GPU** (H100, H200, GH200): wgmma, TMA and the register
# split between partitions are Hopper instructions, and Gluon has no CPU
# interpreter. On any other machine `python examples/attention_hopper.py`
# compiles the kernel for sm_90 (no GPU needed) and says that the numerical
# check needs an H100/H200.

# %%
# --8<-- [start:setup]
import functools
import math
import os

import torch

if not torch.cuda.is_available():  # the other examples' kernels run in the interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## The reference
#
# The formula in fp32 with explicit matmuls, like `examples/attention.py`'s,
# and the log-sum-exp of each row of scaled scores that the kernel also
# returns (natural log: what a backward pass needs).


# %%
# --8<-- [start:reference]
def attention_torch(q, k, v, causal: bool = False,
                    sm_scale: float | None = None) -> torch.Tensor:
    """The plain torch reference: fp32 maths, result in q's dtype."""
    s = _scores_torch(q, k, causal, sm_scale)
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)


def logsumexp_torch(q, k, causal: bool = False,
                    sm_scale: float | None = None) -> torch.Tensor:
    """fp32 (B, H, S): log(sum(exp(scores))) of each query row, natural log."""
    return torch.logsumexp(_scores_torch(q, k, causal, sm_scale), dim=-1)


def _scores_torch(q, k, causal, sm_scale):
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = (q.float() @ k.float().transpose(-1, -2)) * scale  # (B, H, seq_q, seq_k)
    if causal:
        future = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
    return s
# --8<-- [end:reference]


# %% [markdown]
# ## Tiles, registers and the per-head-dim table
#
# A CTA owns `BLOCK_M = 128` query rows, 64 per consumer warpgroup (a wgmma
# instruction works on 64 rows per warpgroup). Keys and values come in tiles of
# `BLOCK_N` rows through a ring of `STAGES` slots. Registers are split unevenly:
# `setmaxnreg` gives each consumer thread 240 registers (its S and O tiles live
# there) and the producer 24; `MAXNREG` caps the kernel as a whole so that the
# three warpgroups (the producer's one warp is padded to a warpgroup) fit in
# the 64K registers of an SM. The two combine functions are the reductions'
# (row max, row sum), written in Gluon: `gl.max` and `gl.sum` call Triton
# library functions, which a process that imported Triton with
# `TRITON_INTERPRET=1` has turned into interpreter code that Gluon cannot
# compile.


# %%
# --8<-- [start:constants]
LOG2E = 1.4426950408889634  # exp(x) = exp2(x * log2(e))
LN2 = gl.constexpr(0.6931471805599453)  # and back: ln(x) = log2(x) * ln(2)
WG_M = 64  # query rows per consumer warpgroup
BLOCK_M = 2 * WG_M  # query rows per CTA: two consumer warpgroups
HEAD_DIMS = (64, 128)
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
# head_dim -> the constexprs of the kernel: key/value rows per tile, ring slots
CONFIGS = {
    64: {"BLOCK_N": 128, "STAGES": 2},
    128: {"BLOCK_N": 128, "STAGES": 2},
}
CONSUMER_REGS = gl.constexpr(240)  # registers per thread, set by setmaxnreg
PRODUCER_REGS = gl.constexpr(24)
MAXNREG = 168  # 3 warpgroups x 128 threads x 168 <= 65536 registers of an SM
LOG2E_GL = gl.constexpr(LOG2E)  # the same constant, for the kernels
# The backward, head_dim -> the dK/dV kernel's (query rows per step, ring slots)
# and the dQ kernel's (key rows per step, ring slots)
BWD_CONFIGS = {
    64: {"dkdv": (64, 2), "dq": (128, 2)},
    128: {"dkdv": (64, 2), "dq": (64, 2)},
}


@gluon.jit
def _max_combine(a, b):
    return gl.maximum(a, b)


@gluon.jit
def _sum_combine(a, b):
    return a + b
# --8<-- [end:constants]


# %% [markdown]
# ## Persistent programs: one per SM, unit after unit
#
# A tile is 128 query rows of one (batch, head). Instead of one program per
# tile, the launch can start one program per SM and let each walk the work
# `pid, pid + num_programs, ...`. A program's producer then runs ahead: the
# next tile's first K and V blocks and its Q are in flight while the consumers
# still finish the current tile and store its O.
#
# A fixed walk only pays if every program gets the same amount of work. With
# the causal mask, query block `m` reads `m + 1` key blocks, so tiles differ
# up to `n_m`-fold. The unit of work is therefore a *pair*: query blocks
# `n_m - 1 - j` and `j` of one head, `n_m + 1` key blocks whatever `j` is (the
# long tile first; the middle block of an odd count is a unit alone). Without
# the mask a unit is one tile. Units run head by head, so programs working at
# the same time read the K and V of a few heads, which stay in L2. `_tile`
# says where tile `h` of a unit is; both partitions call it, so they agree on
# the order without talking.


# %%
# --8<-- [start:tile]
@gluon.jit
def _unit_tiles(unit, seq_len, CTA_M: gl.constexpr, CAUSAL: gl.constexpr):
    """How many tiles work unit `unit` holds: a causal pair has 2 (1 in the middle)."""
    if CAUSAL:
        n_m = seq_len // CTA_M
        return gl.minimum(n_m - 2 * (unit % ((n_m + 1) // 2)), 2)
    else:
        return 1


@gluon.jit
def _tile(unit, h, seq_len, CTA_M: gl.constexpr, BLOCK_N: gl.constexpr,
          CAUSAL: gl.constexpr):
    """Tile h of work unit `unit`: (row_q, row_kv, start_m, n_full, n_blocks)."""
    n_m = seq_len // CTA_M
    if CAUSAL:  # unit j of a head: query blocks n_m - 1 - j, then j
        pairs = (n_m + 1) // 2
        head = unit // pairs
        pid_m = n_m - 1 - unit % pairs
        if h == 1:
            pid_m = unit % pairs
    else:
        head = unit // n_m
        pid_m = unit % n_m
    start_m = pid_m * CTA_M
    row_kv = head * seq_len  # row of this (batch, head) in (B*H*S, D)
    if CAUSAL:
        n_full = start_m // BLOCK_N
        n_blocks = (start_m + CTA_M) // BLOCK_N
    else:
        n_full = seq_len // BLOCK_N
        n_blocks = n_full
    return row_kv + start_m, row_kv, start_m, n_full, n_blocks
# --8<-- [end:tile]


# %% [markdown]
# ## The producer: TMA copies into the ring
#
# One warp. For each tile of its program's units it walks the key blocks: wait until
# slot `c % STAGES` is empty (`c` counts the blocks over all tiles, so the
# ring simply goes on from one tile to the next), announce how many bytes will
# land (`expect`), start the copy. After the first K it loads each consumer's
# 64 rows of Q, once the consumer has said (`q_empty`) that it no longer reads
# the previous tile's. The copy engine signals the "ready" barrier when the
# bytes are there. An mbarrier flips its phase each time its count is reached;
# waiting for phase `p ^ 1` on a fresh barrier returns at once, so the first
# pass over the ring does not wait.


# %%
# --8<-- [start:producer]
@gluon.jit
def _load_tile(q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, q_empty,
               k_ready, k_empty, v_ready, v_empty, row_q, row_kv, n_blocks, c, i,
               BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """Copy one tile: its K and V blocks into the ring from block c on, and its Q
    (the program's tile i). Returns c after the tile."""
    WG_ROWS: gl.constexpr = q_desc.block_type.shape[0]
    for j in range(n_blocks):
        slot = c % STAGES
        phase = (c // STAGES) & 1
        mbarrier.wait(k_empty.index(slot), phase ^ 1)
        mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [row_kv + j * BLOCK_N, 0],
                                        k_ready.index(slot), k_bufs.index(slot))
        if j == 0:  # Q after K_0: K_0 may land in a slot freed before Q's
            for wg in gl.static_range(2):  # one 64-row Q tile per consumer
                mbarrier.wait(q_empty.index(wg), (i & 1) ^ 1)
                mbarrier.expect(q_bars.index(wg), q_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(
                    q_desc, [row_q + wg * WG_ROWS, 0], q_bars.index(wg),
                    q_smem.index(wg))
        mbarrier.wait(v_empty.index(slot), phase ^ 1)
        mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [row_kv + j * BLOCK_N, 0],
                                        v_ready.index(slot), v_bufs.index(slot))
        c += 1
    return c


@gluon.jit
def _producer(q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, q_empty,
              k_ready, k_empty, v_ready, v_empty, seq_len, n_units,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    CTA_M: gl.constexpr = 2 * q_desc.block_type.shape[0]
    c = 0  # key blocks copied so far, over all tiles: slot c % STAGES
    i = 0  # tiles started so far: the phase of the Q barriers
    for unit in range(gl.program_id(0), n_units, gl.num_programs(0)):
        for h in range(_unit_tiles(unit, seq_len, CTA_M, CAUSAL)):
            row_q, row_kv, start_m, n_full, n_blocks = _tile(unit, h, seq_len, CTA_M,
                                                             BLOCK_N, CAUSAL)
            c = _load_tile(q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars,
                           q_empty, k_ready, k_empty, v_ready, v_empty, row_q, row_kv,
                           n_blocks, c, i, BLOCK_N, STAGES)
            i += 1
# --8<-- [end:producer]


# %% [markdown]
# ## The consumers: softmax and the two matmuls
#
# Each tile has a layout, chosen by the kernel: `S` and `O` live in wgmma's
# accumulator layout (`NVMMADistributedLayout`, version 3, the 4 warps of the
# warpgroup stacked along the rows), with `BLOCK_N` and `HEAD_D` columns.
#
# `_softmax_block` is the online softmax of `examples/attention.py` in base 2:
# `qk_scale = sm_scale * log2(e)` scales each exponent, the running max `m` (of
# the unscaled scores) and sum `l` are fp32, one value per row (a `SliceLayout`
# of S's layout).
#
# `_step` is one key block `j` of the tile (block `c` of the ring, counted
# over the program's tiles as the producer counts). It issues `S_j = Q K_j^T`,
# then `O += P_{j-1} V_{j-1}` (the previous block's probabilities, already in
# registers), and waits for `S_j` alone (`warpgroup_mma_wait(1)`: at most one
# wgmma still running). The softmax of block `j` then runs while `P V` is still
# on the tensor cores; only after it does the consumer wait for `P V`, release
# the slots it read (one `arrive` per consumer: each empty barrier counts two),
# and rescale `O` by `alpha = exp2(m_old - m_new)`.
#
# `P` never goes to shared memory: converted to fp16/bf16 and to the layout of
# wgmma's A operand (`DotOperandLayout`), it is read from registers.
#
# Under the causal mask only the key blocks that cross the diagonal (from
# `n_full` on) need the mask. Whether a block does is a runtime flag
# (`masked`), not a constexpr: a constexpr would compile the step twice, and
# a kernel that no longer fits the instruction cache keeps its warps waiting
# for instructions. Without the mask the flag is the constant `False` and the
# mask is compiled out.
#
# After a tile's last `P V` the consumer releases its Q buffer (`q_empty`), so
# the producer can load the next tile's Q while the consumer divides by `l`
# and stores O. O leaves through a buffer of its own and a TMA store that runs
# on into the next tile; `tma.store_wait(0)` before the buffer is written again
# makes sure the previous store has read it.


# %%
# --8<-- [start:softmax]
@gluon.jit
def _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, masked, BLOCK_N: gl.constexpr,
                   s_layout: gl.constexpr):
    """Online softmax of one fp32 S tile: (p, alpha, m_new, l_new)."""
    if masked:  # causal, on the diagonal: key column > query row is -inf
        ROWS: gl.constexpr = s.type.shape[0]
        rows = q_row0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        s = gl.where(gl.expand_dims(cols, 0) <= gl.expand_dims(rows, 1), s,
                     -float("inf"))
    # m in unscaled units; the difference is scaled (no FMA can form), so the row's
    # largest exponent is exactly 0
    m_new = gl.maximum(m_i, gl.reduce(s, 1, _max_combine))
    alpha = gl.exp2((m_i - m_new) * qk_scale)
    p = gl.exp2((s - gl.expand_dims(m_new, 1)) * qk_scale)
    l_new = l_i * alpha + gl.reduce(p, 1, _sum_combine)
    return p, alpha, m_new, l_new
# --8<-- [end:softmax]


# --8<-- [start:step]
@gluon.jit
def _step(j, c, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p, m_i,
          l_i, q_row0, qk_scale, masked, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
          s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr):
    """Key block j of the tile, block c of the ring (c - 1: the previous one)."""
    ROWS: gl.constexpr = q.type.shape[0]
    slot = c % STAGES
    mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False,
                      is_async=True)  # S_j = Q K_j^T
    prev = (c - 1) % STAGES
    mbarrier.wait(v_ready.index(prev), ((c - 1) // STAGES) & 1)
    o = warpgroup_mma(p, v_bufs.index(prev), o, is_async=True)  # O += P V, j - 1
    s = warpgroup_mma_wait(1, deps=(s,))  # S_j is done; P V may still run
    mbarrier.arrive(k_empty.index(slot))
    p_new, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, masked,
                                            BLOCK_N, s_layout)
    p_new = gl.convert_layout(p_new.to(q.dtype), p_layout)
    o, p = warpgroup_mma_wait(0, deps=(o, p))
    mbarrier.arrive(v_empty.index(prev))
    o = o * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    return o, p_new, m_i, l_i
# --8<-- [end:step]


# --8<-- [start:consumer]
@gluon.jit
def _attend_tile(o_desc, lse_ptr, q, o_buf, q_bar, q_free, k_bufs, v_bufs, k_ready,
                 k_empty, v_ready, v_empty, row_q, q_row0, n_full, n_blocks, c, i,
                 qk_scale, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
                 STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    """This warpgroup's 64 rows of one tile (rows row_q... of the (B*H*S, D) view,
    q_row0... of the head): the program's tile i, key blocks c... of the ring.
    Returns c after the tile."""
    ROWS: gl.constexpr = q.type.shape[0]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                 k_width=2)
    mbarrier.wait(q_bar, i & 1)
    m_i = gl.full([ROWS], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.full([ROWS], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
    o = gl.zeros([ROWS, HEAD_D], gl.float32, o_layout)

    # Block 0 by hand: its S and softmax (there is no P V to overlap yet).
    slot = c % STAGES
    mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False,
                      is_async=True)
    s = warpgroup_mma_wait(0, deps=(s,))
    mbarrier.arrive(k_empty.index(slot))
    # Blocks from n_full on cross the diagonal (causal only) and are masked. The
    # flag is a runtime value: one copy of the step serves both kinds of block.
    if CAUSAL:
        masked = n_full == 0
    else:  # a constant False: the mask is compiled out
        masked = False
    p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, 0, q_row0, qk_scale, masked,
                                        BLOCK_N, s_layout)
    p = gl.convert_layout(p.to(q.dtype), p_layout)
    for j in range(1, n_blocks):
        if CAUSAL:
            masked = j >= n_full
        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,
                               v_ready, v_empty, o, p, m_i, l_i, q_row0, qk_scale,
                               masked, BLOCK_N, STAGES, s_layout, o_layout, p_layout)
    c += n_blocks
    last = (c - 1) % STAGES  # the pipeline's tail: the last P V
    mbarrier.wait(v_ready.index(last), ((c - 1) // STAGES) & 1)
    o = warpgroup_mma(p, v_bufs.index(last), o, is_async=True)
    o = warpgroup_mma_wait(0, deps=(o, p))[0]
    mbarrier.arrive(v_empty.index(last))
    mbarrier.arrive(q_free)  # Q is read no more: the next tile's Q may come

    # O / l goes out through shared memory and a TMA store, which runs on while
    # the next tile starts; the log-sum-exp in natural log, one fp32 per row.
    o = o / gl.expand_dims(gl.convert_layout(l_i, gl.SliceLayout(1, o_layout)), 1)
    tma.store_wait(0)  # the previous tile's store has left o_buf
    o_buf.store(o.to(o_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row_q, 0], o_buf)
    lse = (m_i * qk_scale + gl.log2(l_i)) * LN2
    gl.store(lse_ptr + row_q + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout)),
             lse)
    return c


@gluon.jit
def _consumer(o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
              k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
              WG: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    ROWS: gl.constexpr = q_smem.type.shape[1]
    c = 0  # key blocks consumed so far, over all tiles, as the producer counts
    i = 0  # tiles done so far
    for unit in range(gl.program_id(0), n_units, gl.num_programs(0)):
        for h in range(_unit_tiles(unit, seq_len, 2 * ROWS, CAUSAL)):
            row_q, row_kv, start_m, n_full, n_blocks = _tile(unit, h, seq_len,
                                                             2 * ROWS, BLOCK_N, CAUSAL)
            c = _attend_tile(o_desc, lse_ptr, q_smem.index(WG), o_smem.index(WG),
                             q_bars.index(WG), q_empty.index(WG), k_bufs, v_bufs,
                             k_ready, k_empty, v_ready, v_empty, row_q + WG * ROWS,
                             start_m + WG * ROWS, n_full, n_blocks, c, i, qk_scale,
                             BLOCK_N, HEAD_D, STAGES, CAUSAL)
            i += 1
    tma.store_wait(0)  # the last tile's O has left shared memory
# --8<-- [end:consumer]


# %% [markdown]
# ## The kernel: shared memory, barriers, three partitions
#
# The entry point allocates the shared memory (Q and O tiles per consumer, the
# K and V rings) and the mbarriers, and hands them to the three partitions.
# The first entry of `gl.warp_specialize` runs on the kernel's own 4 warps
# (consumer 0); the other two get `[4, 1]` warps and `[240, 24]` registers per
# thread.


# %%
# --8<-- [start:kernel]
@gluon.jit
def attention_hopper_kernel(q_desc, k_desc, v_desc, o_desc, lse_ptr, seq_len,
                            n_units, qk_scale, BLOCK_N: gl.constexpr,
                            HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                            CAUSAL: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [2] + q_desc.block_type.shape,
                                       q_desc.layout)
    o_smem = gl.allocate_shared_memory(dtype, [2] + o_desc.block_type.shape,
                                       o_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES] + k_desc.block_type.shape,
                                       k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES] + v_desc.block_type.shape,
                                       v_desc.layout)
    bar: gl.constexpr = mbarrier.MBarrierLayout()
    q_bars = gl.allocate_shared_memory(gl.int64, [2, 1], bar)
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bar)
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    for i in gl.static_range(2):
        mbarrier.init(q_bars.index(i), count=1)  # the TMA copy completes it
        mbarrier.init(q_empty.index(i), count=1)  # its consumer is done with Q
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)  # one arrive per consumer
        mbarrier.init(v_empty.index(i), count=2)

    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                     k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                     WG0, BLOCK_N, HEAD_D, STAGES, CAUSAL)),
        (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                     k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                     WG1, BLOCK_N, HEAD_D, STAGES, CAUSAL)),
        (_producer, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, q_empty,
                     k_ready, k_empty, v_ready, v_empty, seq_len, n_units, BLOCK_N,
                     STAGES, CAUSAL)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])
# --8<-- [end:kernel]


# %% [markdown]
# ## Checking the inputs
#
# The kernel reads Q, K, V and writes O through 2-D TMA descriptors over the
# `(batch * heads * seq, head_dim)` view of each tensor, in whole 64- and
# 128-row tiles: a sequence length that is a multiple of 128 keeps every tile
# inside one head, with no masks on the copies. Other lengths go to
# `examples/attention.py`'s `attention()`. TMA coordinates are int32, and a
# non-contiguous view (or a base address that is not 16-byte aligned) is
# copied to a fresh contiguous tensor first. The checks that need no GPU come
# first; the device must be an sm_90 GPU and Triton's interpreter off.


# %%
# --8<-- [start:checks]
def _interpreter_on() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "on", "true", "yes")


def _check_device(device: torch.device) -> None:
    if device.type != "cuda":
        raise ValueError(f"q is on {device}: attention_hopper needs an sm_90 GPU "
                         "(H100, H200)")
    major, minor = torch.cuda.get_device_capability(device)
    if (major, minor) != (9, 0):
        raise ValueError(
            f"q is on {torch.cuda.get_device_name(device)} (sm_{major}{minor}): "
            "Gluon's Hopper ops (wgmma, TMA, setmaxnreg) need an sm_90 GPU; "
            "use examples/attention.py's attention() elsewhere")


def _check_inputs(q, k, v, causal, sm_scale, programs=None, saved=None) -> float:
    """Validate; return sm_scale as a float (1/sqrt(head_dim) when None).
    saved: the backward's (do, o, lse), checked against q."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16 or bfloat16, got {t.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must have the same dtype, "
                        f"got {q.dtype}, {k.dtype} and {v.dtype}")
    if q.dim() != 4:
        raise ValueError(f"q must be 4-D (batch, heads, seq, head_dim), "
                         f"got shape {tuple(q.shape)}")
    for name, t in (("k", k), ("v", v)):
        if t.shape != q.shape:
            raise ValueError(f"{name} must have q's shape {tuple(q.shape)}, "
                             f"got {tuple(t.shape)}")
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"q, k and v must be on the same device, "
                         f"got {q.device}, {k.device} and {v.device}")
    B, H, S, D = q.shape
    if D not in HEAD_DIMS:
        raise ValueError(f"head_dim (q.shape[-1]) must be one of {HEAD_DIMS}, got {D}")
    if S % BLOCK_M:
        raise ValueError(
            f"seq (q.shape[2]) must be a multiple of {BLOCK_M}, got {S}: the kernel "
            f"moves whole tiles of the (batch*heads*seq, head_dim) view, and a "
            f"length that is a multiple of {BLOCK_M} keeps each inside one head; "
            "use examples/attention.py's attention() for other lengths")
    if B * H * S >= 2**31:
        raise ValueError(f"q has batch x heads x seq = {B * H * S} rows: TMA "
                         "coordinates are int32, at most 2**31 - 1")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float)):
        raise TypeError(f"sm_scale must be a float or None, "
                        f"got {type(sm_scale).__name__}")
    if not math.isfinite(sm_scale) or sm_scale <= 0:
        raise ValueError(f"sm_scale must be finite and > 0, got {sm_scale}")
    if programs is not None:
        if isinstance(programs, bool) or not isinstance(programs, int):
            raise TypeError(f"programs must be an int or None, "
                            f"got {type(programs).__name__}")
        if not 1 <= programs < 2**31:
            raise ValueError(f"programs must be in [1, 2**31), got {programs}")
    if saved is not None:
        _check_saved(q, *saved)
    if _interpreter_on():
        raise RuntimeError("TRITON_INTERPRET=1 is set: Gluon kernels have no "
                           "interpreter; run on an sm_90 GPU without it")
    _check_device(q.device)
    return float(sm_scale)


def _check_saved(q, do, o, lse) -> None:
    """The backward's inputs: do and o like q, lse the forward's (B, H, S) fp32."""
    for name, t in (("do", do), ("o", o), ("lse", lse)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.device != q.device:
            raise ValueError(f"{name} must be on q's device {q.device}, got {t.device}")
    for name, t in (("do", do), ("o", o)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name} must have q's dtype {q.dtype}, got {t.dtype}")
        if t.shape != q.shape:
            raise ValueError(f"{name} must have q's shape {tuple(q.shape)}, "
                             f"got {tuple(t.shape)}")
    if lse.dtype != torch.float32 or lse.shape != q.shape[:3]:
        raise ValueError(f"lse must be float32 of shape {tuple(q.shape[:3])} (the "
                         f"forward's), got {lse.dtype} {tuple(lse.shape)}")
# --8<-- [end:checks]


# %% [markdown]
# ## The launcher
#
# One program per SM (fewer if there are fewer work units); `programs=` sets
# another number. Programs next to each other take neighbouring units, which
# are mostly the query blocks of one head: they read the same K and V while
# those are in L2. The
# descriptors carry the tile shapes and the swizzled shared-memory layout the
# wgmma reads (`NVMMASharedLayout`).


# %%
# --8<-- [start:launcher]
def _tma_operand(t: torch.Tensor) -> torch.Tensor:
    """t itself if TMA can read it (contiguous, 16-byte aligned base), else a copy."""
    if t.is_contiguous() and t.data_ptr() % 16 == 0:
        return t
    return t.clone(memory_format=torch.contiguous_format)


@functools.lru_cache  # a frozen value per tile shape: built once, not on every call
def _smem_layout(block: int, d: int, dtype: torch.dtype) -> gl.NVMMASharedLayout:
    gdt = gl.float16 if dtype == torch.float16 else gl.bfloat16
    return gl.NVMMASharedLayout.get_default_for([block, d], gdt)


def _units(batch_heads: int, seq_len: int, causal: bool) -> int:
    """Work units (`_tile`): causal pairs of query blocks, or single query blocks."""
    n_m = seq_len // BLOCK_M
    return batch_heads * ((n_m + 1) // 2 if causal else n_m)


@functools.lru_cache
def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device: asked once, not on every call."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def _descriptors(q, k, v, o, block_n: int):
    rows, d = q.numel() // q.shape[-1], q.shape[-1]
    qo_layout = _smem_layout(WG_M, d, q.dtype)
    kv_layout = _smem_layout(block_n, d, q.dtype)
    return (TensorDescriptor(q, [rows, d], [d, 1], [WG_M, d], qo_layout),
            TensorDescriptor(k, [rows, d], [d, 1], [block_n, d], kv_layout),
            TensorDescriptor(v, [rows, d], [d, 1], [block_n, d], kv_layout),
            TensorDescriptor(o, [rows, d], [d, 1], [WG_M, d], qo_layout))


def attention_hopper_forward(q, k, v, causal: bool = False,
                             sm_scale: float | None = None, *,
                             programs: int | None = None,
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, lse): o like q (contiguous); lse (B, H, S), fp32, the natural-log
    log-sum-exp of each query row's scaled scores. programs: how many programs
    walk the work units (None: one per SM)."""
    sm_scale = _check_inputs(q, k, v, causal, sm_scale, programs)
    q, k, v = _tma_operand(q), _tma_operand(k), _tma_operand(v)
    return _forward(q, k, v, causal, sm_scale, programs)


def _forward(q, k, v, causal: bool, sm_scale: float, programs: int | None):
    """attention_hopper_forward after its checks, q, k and v readable by TMA."""
    B, H, S, D = q.shape
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, S), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    cfg = CONFIGS[D]
    descs = _descriptors(q, k, v, o, cfg["BLOCK_N"])
    n_units = _units(B * H, S, causal)
    grid = (min(n_units, programs or _sm_count(q.device)),)  # one per SM by default
    attention_hopper_kernel[grid](
        *descs, lse, S, n_units, sm_scale * LOG2E, HEAD_D=D, CAUSAL=causal, **cfg,
        num_warps=4, maxnreg=MAXNREG)
    return o, lse


def attention_hopper(q, k, v, causal: bool = False, sm_scale: float | None = None,
                     *, programs: int | None = None) -> torch.Tensor:
    """softmax(q @ k^T * sm_scale) @ v per (batch, head), differentiable.

    q, k, v: (B, H, S, D), float16 or bfloat16, D in (64, 128), S a multiple of
    128 (a non-contiguous view is copied first); sm_scale defaults to 1/sqrt(D);
    programs: how many programs walk the forward's work units (None: one per
    SM). Needs an sm_90 GPU. When an input requires grad, autograd's backward
    runs the kernels of `attention_hopper_backward`.
    """
    if torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in (q, k, v)):
        return AttentionHopperFunction.apply(q, k, v, causal, sm_scale, programs)
    return attention_hopper_forward(q, k, v, causal, sm_scale, programs=programs)[0]
# --8<-- [end:launcher]


# %% [markdown]
# ## The backward: the same partitions, two kernels
#
# With `P = softmax(S)`, `S = Q K^T * sm_scale`, the gradients are
# `dV = P^T dO`, `dP = dO V^T`, `dS = P * (dP - delta)` with
# `delta = rowsum(dO * O)`, `dQ = dS K * sm_scale` and `dK = dS^T Q * sm_scale`.
# `P` is recomputed from `S` and the forward's log-sum-exp, never stored. The
# backward runs two kernels, dQ first:
#
# * `attention_hopper_dq_kernel`: one CTA per 128 queries. Q, dO, the
#   log-sum-exp and `delta` stay, K and V blocks stream, and `dQ += dS K`
#   accumulates in registers. Before its loop each consumer computes `delta`
#   for its 64 queries from the dO tile it already holds and the rows of O, and
#   stores it for the next kernel;
# * `attention_hopper_dkdv_kernel`: one CTA per 128 keys of a (batch, head),
#   64 per consumer warpgroup. Each consumer keeps its K and V tiles in shared
#   memory and its dK and dV in registers; the producer streams the Q and dO
#   tiles of every query block through the ring. The consumer works on
#   transposed tiles, `S^T = K Q^T` and `dP^T = V dO^T`, so that `P^T` and
#   `dS^T`, computed in registers, are the A operand of the next two wgmma
#   (`dV += P^T dO`, `dK += dS^T Q`) without a trip through shared memory.
#
# Two kernels instead of one recompute `S` and `dP` twice (seven matmuls where
# five would do), but neither needs atomics: each CTA owns what it writes. The
# two wgmma of a step are issued together and waited for one at a time, so the
# exponentials run while `dP^T` is still on the tensor cores. Under the causal
# mask the dK/dV kernel starts at the key block's diagonal and the dQ kernel
# stops there; only the blocks that cross it are masked. dK, dV and dQ leave
# through the shared memory of the K, V and Q tiles they replace.


# %%
# --8<-- [start:bwd-dkdv]
@gluon.jit
def _dkdv_producer(q_desc, do_desc, k_desc, v_desc, q_bufs, do_bufs, k_smem, v_smem,
                   kv_bar, ready, empty, row_kv, row_q0, m_lo, n_m,
                   STAGES: gl.constexpr):
    """K and V of the CTA's 128 keys once, then Q and dO block after block."""
    STEP_M: gl.constexpr = q_desc.block_type.shape[0]
    ROWS: gl.constexpr = k_desc.block_type.shape[0]  # keys per consumer
    mbarrier.expect(kv_bar, 2 * k_desc.block_type.nbytes + 2 * v_desc.block_type.nbytes)
    for wg in gl.static_range(2):
        tma.async_copy_global_to_shared(k_desc, [row_kv + wg * ROWS, 0], kv_bar,
                                        k_smem.index(wg))
        tma.async_copy_global_to_shared(v_desc, [row_kv + wg * ROWS, 0], kv_bar,
                                        v_smem.index(wg))
    for i in range(n_m):
        slot = i % STAGES
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(slot),
                        q_desc.block_type.nbytes + do_desc.block_type.nbytes)
        row = row_q0 + (m_lo + i) * STEP_M
        tma.async_copy_global_to_shared(q_desc, [row, 0], ready.index(slot),
                                        q_bufs.index(slot))
        tma.async_copy_global_to_shared(do_desc, [row, 0], ready.index(slot),
                                        do_bufs.index(slot))


@gluon.jit
def _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr, delta_ptr, dk,
               dv, keys, cols, row_q0, m_lo, qk_scale, MASK: gl.constexpr,
               STAGES: gl.constexpr, st_layout: gl.constexpr, op_layout: gl.constexpr):
    """Query block m_lo + i against this warpgroup's 64 keys: dK and dV updated."""
    STEP_M: gl.constexpr = q_bufs.type.shape[1]
    ROWS: gl.constexpr = k_wg.type.shape[0]
    slot = i % STAGES
    m0 = (m_lo + i) * STEP_M  # the block's first query, within the head
    lse2 = gl.load(lse_ptr + row_q0 + m0 + cols) * LOG2E_GL  # natural log -> base 2
    delta = gl.load(delta_ptr + row_q0 + m0 + cols)
    mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
    qb = q_bufs.index(slot)
    dob = do_bufs.index(slot)
    zero = gl.zeros([ROWS, STEP_M], gl.float32, st_layout)
    st = warpgroup_mma(k_wg, qb.permute((1, 0)), zero, use_acc=False, is_async=True)
    dpt = warpgroup_mma(v_wg, dob.permute((1, 0)), zero, use_acc=False, is_async=True)
    st = warpgroup_mma_wait(1, deps=(st,))  # S^T is done, dP^T may still run
    pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
    if MASK:  # a query before the key: P = 0
        pt = gl.where(gl.expand_dims(m0 + cols, 0) >= gl.expand_dims(keys, 1), pt, 0.0)
    p_op = gl.convert_layout(pt.to(qb.dtype), op_layout)
    dv = warpgroup_mma(p_op, dob, dv, is_async=True)  # dV += P^T dO
    dpt = warpgroup_mma_wait(1, deps=(dpt,))  # dP^T is done, dV may still run
    dst = pt * (dpt - gl.expand_dims(delta, 0))
    ds_op = gl.convert_layout(dst.to(qb.dtype), op_layout)
    dk = warpgroup_mma(ds_op, qb, dk, is_async=True)  # dK += dS^T Q
    dv, dk, p_op, ds_op = warpgroup_mma_wait(0, deps=(dv, dk, p_op, ds_op))
    mbarrier.arrive(empty.index(slot))
    return dk, dv


@gluon.jit
def _dkdv_consumer(dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,
                   v_smem, kv_bar, ready, empty, row_kv, row_q0, key0, m_lo, n_m,
                   n_diag, qk_scale, sm_scale, WG: gl.constexpr, HEAD_D: gl.constexpr,
                   STAGES: gl.constexpr):
    STEP_M: gl.constexpr = q_bufs.type.shape[1]
    ROWS: gl.constexpr = k_smem.type.shape[1]  # keys per consumer
    st_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, STEP_M, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                  k_width=2)
    k_wg = k_smem.index(WG)
    v_wg = v_smem.index(WG)
    dk = gl.zeros([ROWS, HEAD_D], gl.float32, acc_layout)
    dv = gl.zeros([ROWS, HEAD_D], gl.float32, acc_layout)
    keys = key0 + WG * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, st_layout))
    cols = gl.arange(0, STEP_M, layout=gl.SliceLayout(0, st_layout))
    mbarrier.wait(kv_bar, 0)
    for i in range(0, n_diag):  # query blocks that cross the diagonal: masked
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale,
                            True, STAGES, st_layout, op_layout)
    for i in range(n_diag, n_m):
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale,
                            False, STAGES, st_layout, op_layout)
    # K and V are read no more: their tiles carry dK and dV out
    k_wg.store((dk * sm_scale).to(k_wg.dtype))
    v_wg.store(dv.to(v_wg.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(dk_desc, [row_kv + WG * ROWS, 0], k_wg)
    tma.async_copy_shared_to_global(dv_desc, [row_kv + WG * ROWS, 0], v_wg)
    tma.store_wait(0)


@gluon.jit
def attention_hopper_dkdv_kernel(q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc,
                                 lse_ptr, delta_ptr, seq_len, qk_scale, sm_scale,
                                 HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                                 CAUSAL: gl.constexpr):
    STEP_M: gl.constexpr = q_desc.block_type.shape[0]
    BLOCK_KV: gl.constexpr = 2 * k_desc.block_type.shape[0]  # two consumers' keys
    dtype: gl.constexpr = q_desc.dtype
    n_kv = seq_len // BLOCK_KV
    j = gl.program_id(0) % n_kv  # key block; with the mask block 0 has most queries
    row_q0 = gl.program_id(0) // n_kv * seq_len  # the (batch, head)'s first row
    row_kv = row_q0 + j * BLOCK_KV
    if CAUSAL:  # queries before the key block are not visited
        m_lo = j * (BLOCK_KV // STEP_M)
        n_diag = BLOCK_KV // STEP_M
    else:
        m_lo = 0
        n_diag = 0
    n_m = seq_len // STEP_M - m_lo
    q_bufs = gl.allocate_shared_memory(dtype, [STAGES] + q_desc.block_type.shape,
                                       q_desc.layout)
    do_bufs = gl.allocate_shared_memory(dtype, [STAGES] + do_desc.block_type.shape,
                                        do_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [2] + k_desc.block_type.shape,
                                       k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [2] + v_desc.block_type.shape,
                                       v_desc.layout)
    bar: gl.constexpr = mbarrier.MBarrierLayout()
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], bar)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    mbarrier.init(kv_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)  # one arrive per consumer
    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_dkdv_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,
                          v_smem, kv_bar, ready, empty, row_kv, row_q0, j * BLOCK_KV,
                          m_lo, n_m, n_diag, qk_scale, sm_scale, WG0, HEAD_D, STAGES)),
        (_dkdv_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,
                          v_smem, kv_bar, ready, empty, row_kv, row_q0, j * BLOCK_KV,
                          m_lo, n_m, n_diag, qk_scale, sm_scale, WG1, HEAD_D, STAGES)),
        (_dkdv_producer, (q_desc, do_desc, k_desc, v_desc, q_bufs, do_bufs, k_smem,
                          v_smem, kv_bar, ready, empty, row_kv, row_q0, m_lo, n_m,
                          STAGES)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])
# --8<-- [end:bwd-dkdv]


# %%
# --8<-- [start:bwd-dq]
@gluon.jit
def _dq_producer(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_bufs, v_bufs,
                 q_bar, ready, empty, row_q, row_kv0, n_blocks, STAGES: gl.constexpr):
    """Q and dO of the CTA's 128 queries once, then K and V block after block."""
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    ROWS: gl.constexpr = q_desc.block_type.shape[0]  # queries per consumer
    mbarrier.expect(q_bar, 2 * q_desc.block_type.nbytes + 2 * do_desc.block_type.nbytes)
    for wg in gl.static_range(2):
        tma.async_copy_global_to_shared(q_desc, [row_q + wg * ROWS, 0], q_bar,
                                        q_smem.index(wg))
        tma.async_copy_global_to_shared(do_desc, [row_q + wg * ROWS, 0], q_bar,
                                        do_smem.index(wg))
    for j in range(n_blocks):
        slot = j % STAGES
        mbarrier.wait(empty.index(slot), ((j // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(slot),
                        k_desc.block_type.nbytes + v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [row_kv0 + j * BLOCK_N, 0],
                                        ready.index(slot), k_bufs.index(slot))
        tma.async_copy_global_to_shared(v_desc, [row_kv0 + j * BLOCK_N, 0],
                                        ready.index(slot), v_bufs.index(slot))


@gluon.jit
def _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta, rows,
             qk_scale, MASK: gl.constexpr, STAGES: gl.constexpr,
             s_layout: gl.constexpr, op_layout: gl.constexpr):
    """Key block j against this warpgroup's 64 queries: dQ updated."""
    BLOCK_N: gl.constexpr = k_bufs.type.shape[1]
    ROWS: gl.constexpr = q_wg.type.shape[0]
    slot = j % STAGES
    mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
    kb = k_bufs.index(slot)
    zero = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q_wg, kb.permute((1, 0)), zero, use_acc=False, is_async=True)
    dp = warpgroup_mma(do_wg, v_bufs.index(slot).permute((1, 0)), zero, use_acc=False,
                       is_async=True)
    s = warpgroup_mma_wait(1, deps=(s,))  # S is done, dP may still run
    p = gl.exp2(s * qk_scale - gl.expand_dims(lse2, 1))
    if MASK:  # a key after the query: P = 0
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        p = gl.where(gl.expand_dims(rows, 1) >= gl.expand_dims(cols, 0), p, 0.0)
    dp = warpgroup_mma_wait(0, deps=(dp,))
    ds = p * (dp - gl.expand_dims(delta, 1))
    ds_op = gl.convert_layout(ds.to(kb.dtype), op_layout)
    dq = warpgroup_mma(ds_op, kb, dq, is_async=True)  # dQ += dS K
    dq, ds_op = warpgroup_mma_wait(0, deps=(dq, ds_op))
    mbarrier.arrive(empty.index(slot))
    return dq


@gluon.jit
def _delta(o_ptr, delta_ptr, do_wg, row0, HEAD_D: gl.constexpr):
    """delta = rowsum(dO * O) of the 64 rows from row0, in fp32, stored for the
    dK/dV kernel: dO from this consumer's tile, O's rows from global memory."""
    ROWS: gl.constexpr = do_wg.type.shape[0]
    TPR: gl.constexpr = HEAD_D // 8  # threads along a row, 8 elements (16 bytes) each
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [32 // TPR, TPR], [4, 1], [1, 0])
    rows = row0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, layout))
    offs = gl.expand_dims(rows.to(gl.int64) * HEAD_D, 1) + gl.expand_dims(cols, 0)
    prod = gl.load(o_ptr + offs).to(gl.float32) * do_wg.load(layout).to(gl.float32)
    delta = gl.reduce(prod, 1, _sum_combine)
    gl.store(delta_ptr + rows, delta)
    return delta


@gluon.jit
def _dq_consumer(dq_desc, o_ptr, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs, v_bufs,
                 q_bar, ready, empty, row_q, q0, n_full, n_blocks, qk_scale, sm_scale,
                 WG: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr):
    BLOCK_N: gl.constexpr = k_bufs.type.shape[1]
    ROWS: gl.constexpr = q_smem.type.shape[1]  # queries per consumer
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                  k_width=2)
    q_wg = q_smem.index(WG)
    do_wg = do_smem.index(WG)
    offs = gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
    rows = q0 + WG * ROWS + offs  # query index within the head
    lse2 = gl.load(lse_ptr + row_q + WG * ROWS + offs) * LOG2E_GL
    mbarrier.wait(q_bar, 0)  # Q and dO are in shared memory
    delta = _delta(o_ptr, delta_ptr, do_wg, row_q + WG * ROWS, HEAD_D)
    delta = gl.convert_layout(delta, gl.SliceLayout(1, s_layout))
    dq = gl.zeros([ROWS, HEAD_D], gl.float32, acc_layout)
    for j in range(0, n_full):
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta,
                      rows, qk_scale, False, STAGES, s_layout, op_layout)
    for j in range(n_full, n_blocks):  # key blocks that cross the diagonal: masked
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta,
                      rows, qk_scale, True, STAGES, s_layout, op_layout)
    q_wg.store((dq * sm_scale).to(q_wg.dtype))  # Q is read no more: dQ leaves in it
    fence_async_shared()
    tma.async_copy_shared_to_global(dq_desc, [row_q + WG * ROWS, 0], q_wg)
    tma.store_wait(0)


@gluon.jit
def attention_hopper_dq_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, o_ptr, lse_ptr,
                               delta_ptr, seq_len, qk_scale, sm_scale,
                               HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                               CAUSAL: gl.constexpr):
    CTA_M: gl.constexpr = 2 * q_desc.block_type.shape[0]  # two consumers' queries
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    n_q = seq_len // CTA_M
    m = gl.program_id(0) % n_q
    if CAUSAL:  # the longest query blocks first
        m = n_q - 1 - m
    row_kv0 = gl.program_id(0) // n_q * seq_len
    q0 = m * CTA_M
    if CAUSAL:  # key blocks up to the diagonal; the last ones cross it
        n_full = q0 // BLOCK_N
        n_blocks = (q0 + CTA_M) // BLOCK_N
    else:
        n_full = seq_len // BLOCK_N
        n_blocks = n_full
    q_smem = gl.allocate_shared_memory(dtype, [2] + q_desc.block_type.shape,
                                       q_desc.layout)
    do_smem = gl.allocate_shared_memory(dtype, [2] + do_desc.block_type.shape,
                                        do_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES] + k_desc.block_type.shape,
                                       k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES] + v_desc.block_type.shape,
                                       v_desc.layout)
    bar: gl.constexpr = mbarrier.MBarrierLayout()
    q_bar = gl.allocate_shared_memory(gl.int64, [1], bar)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    mbarrier.init(q_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)
    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    row_q = row_kv0 + q0
    gl.warp_specialize([
        (_dq_consumer, (dq_desc, o_ptr, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs,
                        v_bufs, q_bar, ready, empty, row_q, q0, n_full, n_blocks,
                        qk_scale, sm_scale, WG0, HEAD_D, STAGES)),
        (_dq_consumer, (dq_desc, o_ptr, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs,
                        v_bufs, q_bar, ready, empty, row_q, q0, n_full, n_blocks,
                        qk_scale, sm_scale, WG1, HEAD_D, STAGES)),
        (_dq_producer, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_bufs,
                        v_bufs, q_bar, ready, empty, row_q, row_kv0, n_blocks, STAGES)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])
# --8<-- [end:bwd-dq]


# %% [markdown]
# ## The backward's launcher and autograd
#
# `attention_hopper_backward` takes what the forward saved (`o`, `lse`) and the
# gradient of the output, and launches the two kernels: one CTA per 128 queries
# (dQ, which also writes `delta`), then one per 128 keys (dK/dV) of every
# (batch, head), in a one-dimensional grid (a grid's second and third axes stop
# at 65535, which `batch * heads` may pass). The CTAs of one head are
# neighbours, so the Q and dO (or K and V) they all read stay in L2.
# `AttentionHopperFunction` wires the two passes into autograd. It saves the
# tensors the forward's kernel read (a copy, where the input was a view TMA
# cannot read), so its backward starts at `_backward`: no second round of
# checks and copies.


# %%
# --8<-- [start:bwd-launcher]
def _bwd_descriptors(q, k, v, do, dq, dk, dv):
    """The TMA descriptors of the dK/dV kernel and of the dQ kernel."""
    rows, d = q.numel() // q.shape[-1], q.shape[-1]
    bm, bn = BWD_CONFIGS[d]["dkdv"][0], BWD_CONFIGS[d]["dq"][0]
    built = {}  # one descriptor per (tensor, tile), shared where both kernels take it

    def desc(t, block):
        if (id(t), block) not in built:
            layout = _smem_layout(block, d, t.dtype)
            built[id(t), block] = TensorDescriptor(t, [rows, d], [d, 1], [block, d],
                                                   layout)
        return built[id(t), block]

    return ((desc(q, bm), desc(k, WG_M), desc(v, WG_M), desc(do, bm), desc(dk, WG_M),
             desc(dv, WG_M)),
            (desc(q, WG_M), desc(k, bn), desc(v, bn), desc(do, WG_M), desc(dq, WG_M)))


def attention_hopper_backward(do, q, k, v, o, lse, causal: bool = False,
                              sm_scale: float | None = None,
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of attention_hopper for the output gradient do, given the
    forward's o and lse (attention_hopper_forward). Same constraints as the
    forward; do and o may be any layout (copied where TMA cannot read them)."""
    sm_scale = _check_inputs(q, k, v, causal, sm_scale, saved=(do, o, lse))
    q, k, v, o = (_tma_operand(t) for t in (q, k, v, o))
    return _backward(do, q, k, v, o, lse.contiguous(), causal, sm_scale)


def _backward(do, q, k, v, o, lse, causal: bool, sm_scale: float):
    """attention_hopper_backward after its checks: q, k, v and o readable by TMA,
    lse contiguous; do (autograd's output gradient) may be any layout."""
    B, H, S, D = q.shape
    do = _tma_operand(do)
    dq, dk, dv = (torch.empty(q.shape, device=q.device, dtype=q.dtype) for _ in "qkv")
    if q.numel() == 0:
        return dq, dk, dv
    delta = torch.empty_like(lse)  # written by the dQ kernel, read by the dK/dV kernel
    dkdv_descs, dq_descs = _bwd_descriptors(q, k, v, do, dq, dk, dv)
    scales = (S, sm_scale * LOG2E, sm_scale)
    cfg = BWD_CONFIGS[D]
    attention_hopper_dq_kernel[(B * H * (S // BLOCK_M),)](  # 128 queries per CTA
        *dq_descs, o, lse, delta, *scales, HEAD_D=D, STAGES=cfg["dq"][1],
        CAUSAL=causal, num_warps=4, maxnreg=MAXNREG)
    attention_hopper_dkdv_kernel[(B * H * (S // BLOCK_M),)](  # 128 keys per CTA
        *dkdv_descs, lse, delta, *scales, HEAD_D=D, STAGES=cfg["dkdv"][1],
        CAUSAL=causal, num_warps=4, maxnreg=MAXNREG)
    return dq, dk, dv


class AttentionHopperFunction(torch.autograd.Function):
    """attention_hopper's forward and backward, for autograd."""

    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale, programs):
        sm_scale = _check_inputs(q, k, v, causal, sm_scale, programs)
        q, k, v = _tma_operand(q), _tma_operand(k), _tma_operand(v)
        o, lse = _forward(q, k, v, causal, sm_scale, programs)
        # what the kernels read is kept (a copy of a view, not the view): the backward
        # neither checks nor copies it again
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.sm_scale = causal, sm_scale
        return o

    @staticmethod
    def backward(ctx, do):
        if torch.is_grad_enabled():  # create_graph=True: no kernel for a grad of a grad
            raise RuntimeError("attention_hopper has no double backward "
                               "(create_graph=True)")
        dq, dk, dv = _backward(do, *ctx.saved_tensors, ctx.causal, ctx.sm_scale)
        return dq, dk, dv, None, None, None
# --8<-- [end:bwd-launcher]


# %% [markdown]
# ## Compiling without a GPU
#
# Triton compiles for a target it is told, not only for the GPU it runs on:
# `compile_for_sm90` builds a kernel for sm_90 (PTX, then a cubin with the
# wheel's `ptxas`) on any machine, from the signature the launcher would pass,
# and returns the compiled kernel. A launch compiles for the GPU at hand, so
# naming another target takes `GluonASTSource` and `mangle_type`, Triton
# internals that may move between versions. The PTX shows the Hopper
# instructions the Gluon code asked for.


# %%
# --8<-- [start:compile-check]
def compile_for_sm90(dtype: torch.dtype = torch.float16, head_dim: int = 128,
                     causal: bool = False, kernel: str = "forward"):
    """Compile a kernel of this story for sm_90 (no GPU needed): the
    CompiledKernel. kernel: "forward", or the backward's "dq" or "dkdv"."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    if dtype not in SUPPORTED_DTYPES or head_dim not in HEAD_DIMS:
        raise ValueError(f"dtype and head_dim must be one of {SUPPORTED_DTYPES} and "
                         f"{HEAD_DIMS}, got {dtype} and {head_dim}")
    t = torch.empty(1, 1, BLOCK_M, head_dim, dtype=dtype)  # stands in for q, k, v, ...
    options = {"num_warps": 4, "maxnreg": MAXNREG}
    if kernel == "forward":
        cfg = CONFIGS[head_dim]
        descs = _descriptors(t, t, t, t, cfg["BLOCK_N"])
        names = ("q_desc", "k_desc", "v_desc", "o_desc")
        scalars = {"lse_ptr": "*fp32", "seq_len": "i32", "n_units": "i32",
                   "qk_scale": "fp32"}
        fn = attention_hopper_kernel
    elif kernel in ("dkdv", "dq"):
        cfg = {"STAGES": BWD_CONFIGS[head_dim][kernel][1]}
        dkdv, dq = _bwd_descriptors(t, t, t, t, t, t, t)
        descs = dkdv if kernel == "dkdv" else dq
        names = ("q_desc", "k_desc", "v_desc", "do_desc",
                 *(("dk_desc", "dv_desc") if kernel == "dkdv" else ("dq_desc",)))
        scalars = {"lse_ptr": "*fp32", "delta_ptr": "*fp32", "seq_len": "i32",
                   "qk_scale": "fp32", "sm_scale": "fp32"}
        if kernel == "dq":  # O's rows, for delta
            scalars = {"o_ptr": mangle_type(t), **scalars}
        fn = {"dkdv": attention_hopper_dkdv_kernel,
              "dq": attention_hopper_dq_kernel}[kernel]
    else:
        raise ValueError("kernel must be 'forward', 'dq' or 'dkdv', "
                         f"got {kernel!r}")
    signature = {n: mangle_type(d) for n, d in zip(names, descs, strict=True)}
    signature.update(scalars)
    constexprs = {**cfg, "HEAD_D": head_dim, "CAUSAL": causal}
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    src = GluonASTSource(fn, signature, constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def hopper_instructions(kernel) -> dict:
    """How often the PTX of a compiled kernel uses each Hopper feature."""
    ptx = kernel.asm["ptx"]
    return {"wgmma": ptx.count("wgmma.mma_async"),
            "tma copy": ptx.count("cp.async.bulk.tensor"),
            "mbarrier wait": ptx.count("mbarrier.try_wait"),
            "setmaxnreg": ptx.count("setmaxnreg")}
# --8<-- [end:compile-check]


# %% [markdown]
# ## Check it
#
# On an sm_90 GPU: fp16 and bf16, head dims 64 and 128, causal and not, at
# 128 and 384 queries (one and three CTAs per head) on 3 x 5 (batch, heads),
# the output, the log-sum-exp and the three gradients against the fp32
# reference (the gradients through torch's autograd of it). Elsewhere: the
# kernels are compiled for sm_90, which proves they build, and nothing runs.


# %%
# --8<-- [start:check]
def self_check() -> None:
    if DEVICE.type != "cuda" or torch.cuda.get_device_capability() != (9, 0):
        kernel = compile_for_sm90(torch.float16, 128, True)
        used = ", ".join(f"{n} x{c}" for n, c in hopper_instructions(kernel).items())
        backward = [compile_for_sm90(torch.float16, 128, True, name).metadata.shared
                    for name in ("dq", "dkdv")]
        print(f"attention_hopper: compiled for sm_90 (fp16, head_dim 128, causal; "
              f"{kernel.metadata.shared} bytes of shared memory; PTX: {used}), and "
              f"the backward's dQ and dK/dV kernels ({backward[0]} and "
              f"{backward[1]} bytes); the numerical check needs an H100/H200")
        return
    for dtype in SUPPORTED_DTYPES:
        tol = 2e-2 if dtype == torch.float16 else 3e-2
        for head_dim in HEAD_DIMS:
            for seq in (128, 384):
                for causal in (False, True):
                    q, k, v = (torch.randn(3, 5, seq, head_dim, device=DEVICE,
                                           dtype=dtype) for _ in range(3))
                    o, lse = attention_hopper_forward(q, k, v, causal)
                    torch.testing.assert_close(o, attention_torch(q, k, v, causal),
                                               rtol=tol, atol=tol)
                    torch.testing.assert_close(lse, logsumexp_torch(q, k, causal),
                                               rtol=tol, atol=tol)
                    do = torch.randn_like(q)
                    grads = attention_hopper_backward(do, q, k, v, o, lse, causal)
                    leaves = [t.float().requires_grad_() for t in (q, k, v)]
                    out = attention_torch(*leaves, causal).float()
                    want = torch.autograd.grad(out, leaves, do.float())
                    for got, ref in zip(grads, want, strict=True):
                        torch.testing.assert_close(got, ref.to(dtype), rtol=tol,
                                                   atol=2 * tol)
    print(f"attention_hopper: output, log-sum-exp and gradients match the fp32 "
          f"reference on {torch.cuda.get_device_name()} for fp16 and bf16, "
          "head_dim 64 and 128, seq 128 and 384, causal and not")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
