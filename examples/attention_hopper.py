# %% [markdown]
# # Attention on Hopper: a warp-specialized forward in Gluon
#
# `attention_hopper(q, k, v, causal, sm_scale)` computes the same
# `softmax(q @ k^T * sm_scale) @ v` as `examples/attention.py`, forward only,
# written in **Gluon** (`triton.experimental.gluon`, shipped with Triton 3.6): a
# lower-level Triton dialect where the kernel, not the compiler, says which
# warps do what, which layouts tiles live in and when shared memory is reused.
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
# After a tile's last `P V` the consumer releases its Q buffer (`q_empty`), so
# the producer can load the next tile's Q while the consumer divides by `l`
# and stores O. O leaves through a buffer of its own and a TMA store that runs
# on into the next tile; `tma.store_wait(0)` before the buffer is written again
# makes sure the previous store has read it.


# %%
# --8<-- [start:softmax]
@gluon.jit
def _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK: gl.constexpr,
                   BLOCK_N: gl.constexpr, s_layout: gl.constexpr):
    """Online softmax of one fp32 S tile: (p, alpha, m_new, l_new)."""
    if MASK:  # causal, on the diagonal: key column > query row is -inf
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
          l_i, q_row0, qk_scale, MASK: gl.constexpr, BLOCK_N: gl.constexpr,
          STAGES: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr,
          p_layout: gl.constexpr):
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
    p_new, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK,
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

    # Block 0 by hand: its S and softmax (masked when causal: needed when the
    # tile starts at query 0, harmless otherwise).
    slot = c % STAGES
    mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False,
                      is_async=True)
    s = warpgroup_mma_wait(0, deps=(s,))
    mbarrier.arrive(k_empty.index(slot))
    p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, 0, q_row0, qk_scale, CAUSAL,
                                        BLOCK_N, s_layout)
    p = gl.convert_layout(p.to(q.dtype), p_layout)
    for j in range(1, n_full):  # key blocks left of the diagonal: no mask
        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,
                               v_ready, v_empty, o, p, m_i, l_i, q_row0, qk_scale,
                               False, BLOCK_N, STAGES, s_layout, o_layout, p_layout)
    for j in range(gl.maximum(n_full, 1), n_blocks):  # on the diagonal: masked
        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,
                               v_ready, v_empty, o, p, m_i, l_i, q_row0, qk_scale,
                               CAUSAL, BLOCK_N, STAGES, s_layout, o_layout, p_layout)
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


def _check_inputs(q, k, v, causal, sm_scale, programs=None) -> float:
    """Validate; return sm_scale as a float (1/sqrt(head_dim) when None)."""
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
    if _interpreter_on():
        raise RuntimeError("TRITON_INTERPRET=1 is set: Gluon kernels have no "
                           "interpreter; run on an sm_90 GPU without it")
    _check_device(q.device)
    return float(sm_scale)
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
    B, H, S, D = q.shape
    q, k, v = _tma_operand(q), _tma_operand(k), _tma_operand(v)
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
    """softmax(q @ k^T * sm_scale) @ v per (batch, head), forward only.

    q, k, v: (B, H, S, D), float16 or bfloat16, D in (64, 128), S a multiple of
    128 (a non-contiguous view is copied first); sm_scale defaults to 1/sqrt(D);
    programs: how many programs walk the work units (None: one per SM).
    Needs an sm_90 GPU.
    """
    return attention_hopper_forward(q, k, v, causal, sm_scale, programs=programs)[0]
# --8<-- [end:launcher]


# %% [markdown]
# ## Compiling without a GPU
#
# Triton compiles for a target it is told, not only for the GPU it runs on:
# `compile_for_sm90` builds the kernel for sm_90 (PTX, then a cubin with the
# wheel's `ptxas`) on any machine, from the signature the launcher would pass,
# and returns the compiled kernel. A launch compiles for the GPU at hand, so
# naming another target takes `GluonASTSource` and `mangle_type`, Triton
# internals that may move between versions. The PTX shows the Hopper
# instructions the Gluon code asked for.


# %%
# --8<-- [start:compile-check]
def compile_for_sm90(dtype: torch.dtype = torch.float16, head_dim: int = 128,
                     causal: bool = False):
    """Compile attention_hopper_kernel for sm_90 (no GPU needed): the CompiledKernel."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    if dtype not in SUPPORTED_DTYPES or head_dim not in HEAD_DIMS:
        raise ValueError(f"dtype and head_dim must be one of {SUPPORTED_DTYPES} and "
                         f"{HEAD_DIMS}, got {dtype} and {head_dim}")
    cfg = CONFIGS[head_dim]
    t = torch.empty(1, 1, BLOCK_M, head_dim, dtype=dtype)  # stands in for q, k, v, o
    descs = _descriptors(t, t, t, t, cfg["BLOCK_N"])
    names = ("q_desc", "k_desc", "v_desc", "o_desc")
    signature = {n: mangle_type(d) for n, d in zip(names, descs, strict=True)}
    signature.update(lse_ptr="*fp32", seq_len="i32", n_units="i32", qk_scale="fp32")
    constexprs = {**cfg, "HEAD_D": head_dim, "CAUSAL": causal}
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    src = GluonASTSource(attention_hopper_kernel, signature, constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "maxnreg": MAXNREG})


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
# the output and the log-sum-exp against the fp32 reference. Elsewhere: the
# kernel is compiled for sm_90, which proves it builds, and nothing runs.


# %%
# --8<-- [start:check]
def self_check() -> None:
    if DEVICE.type != "cuda" or torch.cuda.get_device_capability() != (9, 0):
        kernel = compile_for_sm90(torch.float16, 128, True)
        used = ", ".join(f"{n} x{c}" for n, c in hopper_instructions(kernel).items())
        print(f"attention_hopper: compiled for sm_90 (fp16, head_dim 128, causal; "
              f"{kernel.metadata.shared} bytes of shared memory; PTX: {used}); "
              "the numerical check needs an H100/H200")
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
    print(f"attention_hopper: output and log-sum-exp match the fp32 reference on "
          f"{torch.cuda.get_device_name()} for fp16 and bf16, head_dim 64 and 128, "
          "seq 128 and 384, causal and not")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
