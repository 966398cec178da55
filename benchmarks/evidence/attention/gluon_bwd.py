"""Probe: an attention backward in Gluon, warp-specialized, beside the example's and cuDNN's.

The backward of ``examples/attention.py`` runs two large Triton kernels (dK/dV: one program per
key block walking the queries; dQ: one program per query block walking the keys), both on
tensor descriptors, neither warp-specialized: Triton 3.6's ``tl.range(warp_specialize=True)``
does not compile these loops on sm_90. ``examples/attention_hopper.py`` showed that a forward
written in Gluon with a TMA producer warp and two wgmma consumer warpgroups reaches cuDNN's
speed at head dim 128. This probe writes the backward's two kernels the same way:

* ``gluon_dkdv_kernel``: one CTA per 128-key block of a (batch, head); consumer warpgroup
  ``wg`` owns keys ``64 wg ... 64 wg + 63`` (their K and V tiles, and the dK and dV
  accumulators in registers); the one-warp producer streams the ``BLOCK_M``-row Q and dO
  tiles of the query blocks through a ring of ``STAGES`` slots. Per query block a consumer
  issues ``S^T = K Q^T`` and ``dP^T = V dO^T`` as asynchronous wgmma, exponentiates ``S^T``
  while ``dP^T`` runs, issues ``dV += P^T dO`` (``P^T`` from registers), forms
  ``dS^T = P^T (dP^T - delta)`` while ``dV`` runs, issues ``dK += dS^T Q``, and frees the
  slot. dK and dV leave through the K and V tiles' shared memory and TMA stores.
* ``gluon_dq_kernel``: one CTA per 128-query block; consumer ``wg`` owns 64 query rows (Q,
  dO, the log-sum-exp, ``delta`` and the dQ accumulator); the producer streams K and V
  blocks of ``BLOCK_N`` keys. Per key block: ``S = Q K^T`` and ``dP = dO V^T``,
  ``P = exp2(S * scale - lse)``, ``dS = P (dP - delta)``, ``dQ += dS K``.

``delta = rowsum(dO * O)`` is the example's own preprocess kernel in every candidate. With the
causal mask the query (dK/dV) or key (dQ) blocks that cross the diagonal are masked, the
others are not visited past it. Candidates, at every point of the attention backward
benchmark (``benchmarks/cases/attention.py``: batch 32 x 16 heads), beside SDPA's cuDNN backend:

* "example": ``examples/attention.attention_backward``, the kernels of the committed results;
* "gluon dK/dV + example dQ": the Gluon dK/dV kernel and the example's dQ kernel;
* "gluon dK/dV + gluon dQ": both kernels in Gluon.

Every candidate's ``(dq, dk, dv)`` is checked against cuDNN's before it is timed.
``--compile`` compiles the Gluon kernels for sm_90 without a GPU and prints their registers,
spills and shared memory.

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` with do_bench only (as the
benchmark, which does not capture a backward in a CUDA graph) and ``METHOD`` below, both in
the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_bwd.py
--out DIR [--budget S]``; ``python benchmarks/evidence/attention/gluon_bwd.py --compile``
anywhere.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402
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

PASSES = 3
METHOD = ("Inputs: seeded torch.randn q, k, v and dO, batch 32 x 16 heads; every candidate's "
          "(dq, dk, dv) must match cuDNN's within 4e-2 (fp16) or 8e-2 (bf16), the benchmark's "
          "tolerance; each call runs the backward only (the forward ran once at set-up, the "
          "example's); TFLOP/s counts 2.5 x 4 * B * H * S^2 * D, halved under the causal mask. "
          "Timed with do_bench only (no CUDA-graph columns), as the benchmark times a backward.")
LOG2E = 1.4426950408889634
KV_BLOCK = 128  # keys per dK/dV CTA: 64 per consumer warpgroup
Q_BLOCK = 128  # queries per dQ CTA: 64 per consumer warpgroup
WG_ROWS = 64
# head_dim -> (dK/dV: BLOCK_M queries per step, STAGES), (dQ: BLOCK_N keys per step, STAGES)
DKDV = {64: (64, 2), 128: (64, 2)}
DQ = {64: (128, 2), 128: (64, 2)}
CONSUMER_REGS = gl.constexpr(240)
PRODUCER_REGS = gl.constexpr(24)
MAXNREG = 168


@gluon.jit
def _dkdv_producer(q_desc, do_desc, k_desc, v_desc, q_bufs, do_bufs, k_smem, v_smem, kv_bar,
                   ready, empty, row_kv, row_q0, m_lo, n_m, STAGES: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    mbarrier.expect(kv_bar, 2 * k_desc.block_type.nbytes + 2 * v_desc.block_type.nbytes)
    for wg in gl.static_range(2):
        tma.async_copy_global_to_shared(k_desc, [row_kv + wg * 64, 0], kv_bar,
                                        k_smem.index(wg))
        tma.async_copy_global_to_shared(v_desc, [row_kv + wg * 64, 0], kv_bar,
                                        v_smem.index(wg))
    for i in range(n_m):
        slot = i % STAGES
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(slot),
                        q_desc.block_type.nbytes + do_desc.block_type.nbytes)
        row = row_q0 + (m_lo + i) * BLOCK_M
        tma.async_copy_global_to_shared(q_desc, [row, 0], ready.index(slot),
                                        q_bufs.index(slot))
        tma.async_copy_global_to_shared(do_desc, [row, 0], ready.index(slot),
                                        do_bufs.index(slot))


@gluon.jit
def _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr, delta_ptr, dk, dv,
               keys, cols, row_q0, m_lo, qk_scale, MASK: gl.constexpr,
               STAGES: gl.constexpr, st_layout: gl.constexpr, op_layout: gl.constexpr):
    BLOCK_M: gl.constexpr = q_bufs.type.shape[1]
    slot = i % STAGES
    m0 = (m_lo + i) * BLOCK_M  # first query of the block, within the head
    lse2 = gl.load(lse_ptr + row_q0 + m0 + cols) * 1.4426950408889634
    delta = gl.load(delta_ptr + row_q0 + m0 + cols)
    mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
    qb = q_bufs.index(slot)
    dob = do_bufs.index(slot)
    zero = gl.zeros([64, BLOCK_M], gl.float32, st_layout)
    st = warpgroup_mma(k_wg, qb.permute((1, 0)), zero, use_acc=False, is_async=True)
    dpt = warpgroup_mma(v_wg, dob.permute((1, 0)), zero, use_acc=False, is_async=True)
    st = warpgroup_mma_wait(1, deps=(st,))  # S^T done, dP^T may run
    pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
    if MASK:  # a query before the key: P = 0
        pt = gl.where(gl.expand_dims(m0 + cols, 0) >= gl.expand_dims(keys, 1), pt, 0.0)
    p_op = gl.convert_layout(pt.to(qb.dtype), op_layout)
    dv = warpgroup_mma(p_op, dob, dv, is_async=True)  # dV += P^T dO
    dpt = warpgroup_mma_wait(1, deps=(dpt,))  # dP^T done, dV may run
    dst = pt * (dpt - gl.expand_dims(delta, 0))
    ds_op = gl.convert_layout(dst.to(qb.dtype), op_layout)
    dk = warpgroup_mma(ds_op, qb, dk, is_async=True)  # dK += dS^T Q
    dv, dk, p_op, ds_op = warpgroup_mma_wait(0, deps=(dv, dk, p_op, ds_op))
    mbarrier.arrive(empty.index(slot))
    return dk, dv


@gluon.jit
def _dkdv_consumer(dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem, v_smem,
                   kv_bar, ready, empty, row_kv, row_q0, key0, m_lo, n_m, n_diag, qk_scale,
                   sm_scale, WG: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr):
    BLOCK_M: gl.constexpr = q_bufs.type.shape[1]
    st_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_M, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                  k_width=2)
    k_wg = k_smem.index(WG)
    v_wg = v_smem.index(WG)
    dk = gl.zeros([64, HEAD_D], gl.float32, acc_layout)
    dv = gl.zeros([64, HEAD_D], gl.float32, acc_layout)
    keys = key0 + WG * 64 + gl.arange(0, 64, layout=gl.SliceLayout(1, st_layout))
    cols = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, st_layout))
    mbarrier.wait(kv_bar, 0)
    for i in range(0, n_diag):  # query blocks that cross the diagonal: masked
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale, True,
                            STAGES, st_layout, op_layout)
    for i in range(n_diag, n_m):
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale, False,
                            STAGES, st_layout, op_layout)
    # K and V are read no more: their tiles hold dK and dV on the way out
    k_wg.store((dk * sm_scale).to(k_wg.dtype))
    v_wg.store(dv.to(v_wg.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(dk_desc, [row_kv + WG * 64, 0], k_wg)
    tma.async_copy_shared_to_global(dv_desc, [row_kv + WG * 64, 0], v_wg)
    tma.store_wait(0)


@gluon.jit
def gluon_dkdv_kernel(q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc, lse_ptr, delta_ptr,
                      seq_len, qk_scale, sm_scale, HEAD_D: gl.constexpr,
                      STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    j = gl.program_id(0)  # key block: with the mask, block 0 (the most queries) first
    row_q0 = gl.program_id(1) * seq_len  # the (batch, head)'s first row
    row_kv = row_q0 + j * 128
    if CAUSAL:
        m_lo = j * (128 // BLOCK_M)
        n_diag = 128 // BLOCK_M
    else:
        m_lo = 0
        n_diag = 0
    n_m = seq_len // BLOCK_M - m_lo
    q_bufs = gl.allocate_shared_memory(dtype, [STAGES] + q_desc.block_type.shape,
                                       q_desc.layout)
    do_bufs = gl.allocate_shared_memory(dtype, [STAGES] + do_desc.block_type.shape,
                                        do_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [2] + k_desc.block_type.shape, k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [2] + v_desc.block_type.shape, v_desc.layout)
    bar: gl.constexpr = mbarrier.MBarrierLayout()
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], bar)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    mbarrier.init(kv_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)
    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_dkdv_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,
                          v_smem, kv_bar, ready, empty, row_kv, row_q0, j * 128, m_lo, n_m,
                          n_diag, qk_scale, sm_scale, WG0, HEAD_D, STAGES)),
        (_dkdv_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,
                          v_smem, kv_bar, ready, empty, row_kv, row_q0, j * 128, m_lo, n_m,
                          n_diag, qk_scale, sm_scale, WG1, HEAD_D, STAGES)),
        (_dkdv_producer, (q_desc, do_desc, k_desc, v_desc, q_bufs, do_bufs, k_smem, v_smem,
                          kv_bar, ready, empty, row_kv, row_q0, m_lo, n_m, STAGES)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


@gluon.jit
def _dq_producer(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_bufs, v_bufs, q_bar,
                 ready, empty, row_q, row_kv0, n_blocks, STAGES: gl.constexpr):
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    mbarrier.expect(q_bar, 2 * q_desc.block_type.nbytes + 2 * do_desc.block_type.nbytes)
    for wg in gl.static_range(2):
        tma.async_copy_global_to_shared(q_desc, [row_q + wg * 64, 0], q_bar,
                                        q_smem.index(wg))
        tma.async_copy_global_to_shared(do_desc, [row_q + wg * 64, 0], q_bar,
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
             qk_scale, MASK: gl.constexpr, STAGES: gl.constexpr, s_layout: gl.constexpr,
             op_layout: gl.constexpr):
    BLOCK_N: gl.constexpr = k_bufs.type.shape[1]
    slot = j % STAGES
    mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
    kb = k_bufs.index(slot)
    zero = gl.zeros([64, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q_wg, kb.permute((1, 0)), zero, use_acc=False, is_async=True)
    dp = warpgroup_mma(do_wg, v_bufs.index(slot).permute((1, 0)), zero, use_acc=False,
                       is_async=True)
    s = warpgroup_mma_wait(1, deps=(s,))
    p = gl.exp2(s * qk_scale - gl.expand_dims(lse2, 1))
    if MASK:  # a key after the query: P = 0
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        p = gl.where(gl.expand_dims(rows, 1) >= gl.expand_dims(cols, 0), p, 0.0)
    dp = warpgroup_mma_wait(0, deps=(dp,))
    ds_op = gl.convert_layout((p * (dp - gl.expand_dims(delta, 1))).to(kb.dtype), op_layout)
    dq = warpgroup_mma(ds_op, kb, dq, is_async=True)  # dQ += dS K
    dq, ds_op = warpgroup_mma_wait(0, deps=(dq, ds_op))
    mbarrier.arrive(empty.index(slot))
    return dq


@gluon.jit
def _dq_consumer(dq_desc, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs, v_bufs, q_bar, ready,
                 empty, row_q, q0, n_full, n_blocks, qk_scale, sm_scale, WG: gl.constexpr,
                 HEAD_D: gl.constexpr, STAGES: gl.constexpr):
    BLOCK_N: gl.constexpr = k_bufs.type.shape[1]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                  k_width=2)
    q_wg = q_smem.index(WG)
    do_wg = do_smem.index(WG)
    offs = gl.arange(0, 64, layout=gl.SliceLayout(1, s_layout))
    rows = q0 + WG * 64 + offs  # query index within the head
    lse2 = gl.load(lse_ptr + row_q + WG * 64 + offs) * 1.4426950408889634
    delta = gl.load(delta_ptr + row_q + WG * 64 + offs)
    dq = gl.zeros([64, HEAD_D], gl.float32, acc_layout)
    mbarrier.wait(q_bar, 0)
    for j in range(0, n_full):
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta, rows,
                      qk_scale, False, STAGES, s_layout, op_layout)
    for j in range(n_full, n_blocks):  # key blocks that cross the diagonal: masked
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta, rows,
                      qk_scale, True, STAGES, s_layout, op_layout)
    q_wg.store((dq * sm_scale).to(q_wg.dtype))  # Q is read no more: dQ leaves through it
    fence_async_shared()
    tma.async_copy_shared_to_global(dq_desc, [row_q + WG * 64, 0], q_wg)
    tma.store_wait(0)


@gluon.jit
def gluon_dq_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, lse_ptr, delta_ptr, seq_len,
                    qk_scale, sm_scale, HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                    CAUSAL: gl.constexpr):
    BLOCK_N: gl.constexpr = k_desc.block_type.shape[0]
    dtype: gl.constexpr = q_desc.dtype
    m = gl.program_id(0)
    if CAUSAL:  # the longest query blocks first
        m = gl.num_programs(0) - 1 - m
    row_kv0 = gl.program_id(1) * seq_len
    q0 = m * 128
    if CAUSAL:
        n_full = q0 // BLOCK_N
        n_blocks = (q0 + 128) // BLOCK_N
    else:
        n_full = seq_len // BLOCK_N
        n_blocks = n_full
    q_smem = gl.allocate_shared_memory(dtype, [2] + q_desc.block_type.shape, q_desc.layout)
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
        (_dq_consumer, (dq_desc, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs, v_bufs, q_bar,
                        ready, empty, row_q, q0, n_full, n_blocks, qk_scale, sm_scale, WG0,
                        HEAD_D, STAGES)),
        (_dq_consumer, (dq_desc, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs, v_bufs, q_bar,
                        ready, empty, row_q, q0, n_full, n_blocks, qk_scale, sm_scale, WG1,
                        HEAD_D, STAGES)),
        (_dq_producer, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_bufs, v_bufs,
                        q_bar, ready, empty, row_q, row_kv0, n_blocks, STAGES)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


def _layout(block: int, d: int, dtype: torch.dtype) -> gl.NVMMASharedLayout:
    gdt = gl.float16 if dtype == torch.float16 else gl.bfloat16
    return gl.NVMMASharedLayout.get_default_for([block, d], gdt)


def _desc(t: torch.Tensor, block: int) -> TensorDescriptor:
    """A 2-D descriptor over the (B*H*S, D) view of a contiguous t, moving (block, D) tiles."""
    rows, d = t.numel() // t.shape[-1], t.shape[-1]
    return TensorDescriptor(t, [rows, d], [d, 1], [block, d], _layout(block, d, t.dtype))


def _dkdv_args(q, k, v, do, dk, dv, lse, delta, sm_scale, setting=None):
    bm, stages = setting or DKDV[q.shape[-1]]
    return ((_desc(q, bm), _desc(k, WG_ROWS), _desc(v, WG_ROWS), _desc(do, bm),
             _desc(dk, WG_ROWS), _desc(dv, WG_ROWS), lse, delta, q.shape[2],
             sm_scale * LOG2E, sm_scale), stages)


def _dq_args(q, k, v, do, dq, lse, delta, sm_scale, setting=None):
    bn, stages = setting or DQ[q.shape[-1]]
    return ((_desc(q, WG_ROWS), _desc(k, bn), _desc(v, bn), _desc(do, WG_ROWS),
             _desc(dq, WG_ROWS), lse, delta, q.shape[2], sm_scale * LOG2E, sm_scale), stages)


def gluon_backward(do, q, k, v, o, lse, causal, gluon_dq=True, sm_scale=None, dkdv=None,
                   dq_setting=None):
    """(dq, dk, dv): the example's preprocess, Gluon dK/dV, and a Gluon or the example's dQ.
    q, k, v, do, o: contiguous (B, H, S, D), S a multiple of 128, D 64 or 128; dkdv,
    dq_setting: (BLOCK_M, STAGES) and (BLOCK_N, STAGES) in place of DKDV's and DQ's."""
    import attention as ex

    B, H, S, D = q.shape
    sm_scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(lse)
    pre = ex._resolve_config(q, "preprocess", None)
    ex.attn_bwd_preprocess_kernel[(triton_cdiv(S, pre["BLOCK_M"]), H, B)](
        o, do, delta, *o.stride()[:3], *do.stride()[:3], H, S, HEAD_DIM=D,
        BLOCK_M=pre["BLOCK_M"], num_warps=pre["num_warps"])
    args, stages = _dkdv_args(q, k, v, do, dk, dv, lse, delta, sm_scale, dkdv)
    gluon_dkdv_kernel[(S // KV_BLOCK, B * H)](*args, HEAD_D=D, STAGES=stages, CAUSAL=causal,
                                              num_warps=4, maxnreg=MAXNREG)
    if not gluon_dq:
        dq = torch.empty_like(q)
        cfg = ex._resolve_config(q, "dq", None, causal)
        cfg.pop("TMA")
        bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
        ex.attn_bwd_dq_tma_kernel[(triton_cdiv(S, bm), H, B)](
            ex._desc(q, bm), ex._desc(k, bn), ex._desc(v, bn), ex._desc(do, bm),
            ex._desc(dq, bm), lse, delta, H, S, S, sm_scale, sm_scale * LOG2E, HEAD_DIM=D,
            CAUSAL=causal, **cfg)
        return dq, dk, dv
    dq = torch.empty_like(q)
    args, stages = _dq_args(q, k, v, do, dq, lse, delta, sm_scale, dq_setting)
    gluon_dq_kernel[(S // Q_BLOCK, B * H)](*args, HEAD_D=D, STAGES=stages, CAUSAL=causal,
                                           num_warps=4, maxnreg=MAXNREG)
    return dq, dk, dv


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def compile_for_sm90(which: str, dtype: torch.dtype, head_dim: int, causal: bool):
    """Compile gluon_dkdv_kernel or gluon_dq_kernel for sm_90 without a GPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    t = torch.empty(1, 1, 128, head_dim, dtype=dtype)
    lse = torch.empty(1, 1, 128)
    if which == "dkdv":
        args, stages = _dkdv_args(t, t, t, t, t, t, lse, lse, 1.0)
        names = ("q_desc", "k_desc", "v_desc", "do_desc", "dk_desc", "dv_desc")
        kernel = gluon_dkdv_kernel
    else:
        args, stages = _dq_args(t, t, t, t, t, lse, lse, 1.0)
        names = ("q_desc", "k_desc", "v_desc", "do_desc", "dq_desc")
        kernel = gluon_dq_kernel
    signature = {n: mangle_type(d) for n, d in zip(names, args, strict=False)}
    signature.update(lse_ptr="*fp32", delta_ptr="*fp32", seq_len="i32", qk_scale="fp32",
                     sm_scale="fp32")
    constexprs = {"HEAD_D": head_dim, "STAGES": stages, "CAUSAL": causal}
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    src = GluonASTSource(kernel, signature, constexprs=constexprs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "maxnreg": MAXNREG})


def compile_report() -> None:
    from scripts.probe_common import ptxas_usage

    for which in ("dkdv", "dq"):
        for d in (64, 128):
            for causal in (False, True):
                k = compile_for_sm90(which, torch.float16, d, causal)
                print(which, f"d{d}", "causal" if causal else "full",
                      ptxas_usage(k.asm["ptx"]), f"shared {k.metadata.shared}", flush=True)


def check() -> None:
    """Small shapes on the GPU: each Gluon kernel's gradients against the fp32 reference."""
    import attention as ex

    torch.manual_seed(0)
    failed = []
    for dtype in (torch.float16, torch.bfloat16):
        tol = 2e-2 if dtype == torch.float16 else 4e-2
        for d in (64, 128):
            for causal in (False, True):
                for seq in (128, 384):
                    q, k, v, do = (torch.randn(2, 3, seq, d, device="cuda", dtype=dtype)
                                   for _ in range(4))
                    o, lse = ex.attention_forward(q, k, v, causal)
                    leaves = tuple(t.float().requires_grad_(True) for t in (q, k, v))
                    ref = torch.autograd.grad(
                        ex.attention_torch(*leaves, causal).float(), leaves, do.float())
                    base = ex.attention_backward(do, q, k, v, o, lse, causal)
                    for gluon_dq in (False, True):
                        got = gluon_backward(do, q, k, v, o, lse, causal, gluon_dq)
                        for name, g, b, r in zip("qkv", got, base, ref, strict=True):
                            err = (g.float() - r).abs().max().item()
                            err_ex = (b.float() - r).abs().max().item()
                            print(f"{dtype} d{d} causal={causal} seq={seq} "
                                  f"gluon_dq={gluon_dq} d{name}: max err {err:.3g} "
                                  f"(example's {err_ex:.3g})", flush=True)
                            if not err <= max(2 * err_ex, tol):
                                failed.append((dtype, d, causal, seq, gluon_dq, name))
    print("check passed" if not failed else f"check FAILED: {failed}")
    if failed:
        raise SystemExit(1)


def points():
    from benchmarks.cases.attention import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["direction"] == "bwd":
            for seq in spec["x_vals"]:
                yield {**{k: v for k, v in spec["args"].items() if k != "direction"}, "seq": seq}


def main() -> None:
    if "--compile" in sys.argv:
        compile_report()
        return
    if "--check" in sys.argv:
        check()
        return
    from scripts.probe_common import (
        attention_inputs,
        probe_args,
        probe_header,
        run_points,
        timing_method,
        write_points,
    )
    args = probe_args()
    from benchmarks.cases.attention import BATCH, HEADS, SDPA_BACKENDS, _sdpa
    device, timing = timing_method(args.smoke)
    import attention as ex

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        d, causal, seq = pt["head_dim"], pt["causal"], pt["seq"]
        do = torch.randn(q.shape, device=device, dtype=q.dtype,
                         generator=torch.Generator(device=device).manual_seed(seq + 1))
        torch.cuda.empty_cache()
        o, lse = ex.attention_forward(q, k, v, causal)
        leaves = tuple(t.clone().requires_grad_(True) for t in (q, k, v))
        out = _sdpa(*leaves, causal, SDPA_BACKENDS["sdpa-cudnn"])
        fns = {"sdpa-cudnn": lambda: torch.autograd.grad(out, leaves, do, retain_graph=True),
               "example": lambda: ex.attention_backward(do, q, k, v, o, lse, causal),
               "gluon dK/dV + example dQ": lambda: gluon_backward(do, q, k, v, o, lse, causal,
                                                                  gluon_dq=False),
               "gluon dK/dV + gluon dQ": lambda: gluon_backward(do, q, k, v, o, lse, causal),
               "gluon, 3 slots": lambda: gluon_backward(
                   do, q, k, v, o, lse, causal, dkdv=(DKDV[d][0], 3),
                   dq_setting=(DQ[d][0], 3))}
        flops = 2.5 * 4.0 * q.shape[0] * q.shape[1] * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), flops

    rows, skipped = run_points(list(points()), setup, PASSES, timing, args.budget,
                               "sdpa-cudnn", graphs=(False,))
    header = probe_header("benchmarks/evidence/attention/gluon_bwd.py", METHOD,
                          kernels="gluon_dkdv_kernel, gluon_dq_kernel (this file); "
                                  "examples/attention.py's backward",
                          dkdv_settings={str(k): v for k, v in DKDV.items()},
                          dq_settings={str(k): v for k, v in DQ.items()},
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped)
    write_points(args.out / "gluon_bwd.json", header, rows)


if __name__ == "__main__":
    main()
