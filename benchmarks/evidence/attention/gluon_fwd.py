# ruff: noqa: B023, E501  (lambdas are used inside the iteration that made them; long table lines)
"""Probe: a Hopper (sm_90) attention forward written in Gluon, FlashAttention-3 style, against SDPA.

Our Triton attention forward reaches only 0.6-0.9x of SDPA-cuDNN on the H200, and Triton 3.6's
automatic `warp_specialize=True` does not compile an attention loop on sm_90. Gluon
(`triton.experimental.gluon`, shipped with Triton 3.6) lets the kernel say the schedule itself:

* one CTA per (128 query rows, batch*head); three partitions (`gl.warp_specialize`):
  a 1-warp producer that issues TMA loads of Q (once) and of the K and V tiles into a
  STAGES-deep shared-memory ring guarded by ready/empty mbarriers, and two 4-warp consumer
  warpgroups, each owning 64 of the 128 query rows (FA3's intra-CTA split; the consumers share
  every K/V tile and release it with one mbarrier arrive each, after their wgmma wait);
* each consumer: S = Q K^T with `warpgroup_mma` (Q and K in shared memory), online softmax in
  base 2 with scale*log2(e) folded in, P cast to fp16/bf16 in registers and converted to the
  wgmma A-operand layout (`DotOperandLayout`), O += P V with `warpgroup_mma` (A from registers);
  PIPELINE=True overlaps, FA3-style, the softmax of block j with the P V wgmma of block j-1
  (S of block j is issued before P V of block j-1, then waited with one group outstanding);
* causal: the key blocks left of the diagonal run unmasked, the diagonal blocks masked, the blocks
  right of the diagonal are skipped; query blocks are launched longest first;
* epilogue: O / l to fp16/bf16 through shared memory (the consumer's Q buffer) and a TMA store,
  and the fp32 log-sum-exp (natural log) per query row.

Limits: inputs (B, H, S, D) contiguous, fp16 or bf16, D in {64, 128}, S a multiple of 128 (the
2-D TMA descriptors over the (B*H*S, D) view never straddle two heads); the probe only uses
S = 1024 (correctness), 4096 and 16384.

The small exact checks of the Gluon kernels run first in a child process (killed after 90 s
without progress, so a kernel that deadlocks on its mbarriers is recorded as a hang instead of
stopping the probe); the parent then times only kernels that passed. The probe checks every
(dtype, D, causal) case and every kernel variant against torch's SDPA math
on fp32 inputs (and the log-sum-exp against torch.logsumexp of the scaled scores on a small
case) BEFORE timing it, catches every exception per case, times with triton.testing.do_bench
(median, warmup 25, rep 100) and do_bench_cudagraph (median), beside SDPA with the cuDNN and the
FLASH_ATTENTION backends; TFLOP/s = 4*B*H*S^2*D, half of it when causal.

Usage (repository root, H200):
    python3 benchmarks/evidence/attention/gluon_fwd.py --out DIR --budget 120
(--variants a,b picks kernel variants; pass 1 times every case with the SDPA peers and the first
variant, pass 2 the other variants, until the budget is spent.)
CPU only (no GPU): `--compile-only` compiles every kernel the probe would launch for sm_90
(GPUTarget("cuda", 90, 32), ptxas from the wheel) and prints registers/shared memory; `--cpu-smoke`
also runs the probe's bookkeeping on fake timings so the GPU run does not die on a Python error.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
import traceback
from pathlib import Path

import torch
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

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
WG_M = 64  # query rows per consumer warpgroup
BLOCK_M = 2 * WG_M  # query rows per CTA (two consumer warpgroups)


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------


@gluon.jit
def _producer(q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, k_ready, k_empty, v_ready,
              v_empty, row_q, row_kv, n_total, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    # Q: one 64-row tile per consumer warpgroup, each with its own barrier.
    for w in gl.static_range(2):
        mbarrier.expect(q_bars.index(w), q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [row_q + w * q_desc.block_type.shape[0], 0], q_bars.index(w),
                                        q_smem.index(w))
    for j in range(n_total):
        slot = j % STAGES
        phase = (j // STAGES) & 1
        # A fresh mbarrier counts as having completed phase 1: the first STAGES waits pass.
        mbarrier.wait(k_empty.index(slot), phase ^ 1)
        mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [row_kv + j * BLOCK_N, 0], k_ready.index(slot), k_bufs.index(slot))
        mbarrier.wait(v_empty.index(slot), phase ^ 1)
        mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [row_kv + j * BLOCK_N, 0], v_ready.index(slot), v_bufs.index(slot))


@gluon.jit
def _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK: gl.constexpr, BLOCK_N: gl.constexpr,
                   s_layout: gl.constexpr):
    """Online softmax of one S block (fp32, s_layout); returns (p fp32, alpha, m_new, l_new)."""
    if MASK:
        ROWS: gl.constexpr = s.type.shape[0]
        rows = q_row0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        keep = gl.expand_dims(cols, 0) <= gl.expand_dims(rows, 1)
        s = gl.where(keep, s, -float("inf"))
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
    l_new = l_i * alpha + gl.sum(p, axis=1)
    return p, alpha, m_new, l_new


@gluon.jit
def _step_simple(j, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, m_i, l_i, q_row0, qk_scale,
                 MASK: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, s_layout: gl.constexpr,
                 o_layout: gl.constexpr, p_layout: gl.constexpr):
    ROWS: gl.constexpr = q.type.shape[0]
    slot = j % STAGES
    phase = (j // STAGES) & 1
    mbarrier.wait(k_ready.index(slot), phase)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False, is_async=True)
    s = warpgroup_mma_wait(0, deps=(s, ))
    mbarrier.arrive(k_empty.index(slot))
    p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK, BLOCK_N, s_layout)
    p = gl.convert_layout(p.to(q.dtype), p_layout)
    o = o * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    mbarrier.wait(v_ready.index(slot), phase)
    o = warpgroup_mma(p, v_bufs.index(slot), o, is_async=True)
    o = warpgroup_mma_wait(0, deps=(o, p))[0]
    mbarrier.arrive(v_empty.index(slot))
    return o, m_i, l_i


@gluon.jit
def _step_pipelined(j, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p, m_i, l_i, q_row0,
                    qk_scale, MASK: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
                    s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr):
    # Block j's S = Q K_j^T and block j-1's O += P_{j-1} V_{j-1} are issued back to back; the
    # softmax of block j runs while P V is still on the tensor cores.
    ROWS: gl.constexpr = q.type.shape[0]
    slot = j % STAGES
    phase = (j // STAGES) & 1
    mbarrier.wait(k_ready.index(slot), phase)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False, is_async=True)
    prev = j - 1
    pslot = prev % STAGES
    pphase = (prev // STAGES) & 1
    mbarrier.wait(v_ready.index(pslot), pphase)
    o = warpgroup_mma(p, v_bufs.index(pslot), o, is_async=True)
    s = warpgroup_mma_wait(1, deps=(s, ))  # S done (issued first), P V may still run
    mbarrier.arrive(k_empty.index(slot))
    p_new, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK, BLOCK_N, s_layout)
    p_new = gl.convert_layout(p_new.to(q.dtype), p_layout)
    o, p = warpgroup_mma_wait(0, deps=(o, p))
    mbarrier.arrive(v_empty.index(pslot))
    o = o * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    return o, p_new, m_i, l_i


@gluon.jit
def _consumer(o_desc, lse_ptr, q_smem, k_bufs, v_bufs, q_bars, k_ready, k_empty, v_ready, v_empty, row_q,
              start_m, n_off, n_total, qk_scale, WG: gl.constexpr, BLOCK_N: gl.constexpr,
              HEAD_D: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, PIPELINE: gl.constexpr):
    ROWS: gl.constexpr = q_smem.type.shape[1]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    q = q_smem.index(WG)
    q_row0 = start_m + WG * ROWS  # first query row (within the head) of this warpgroup
    mbarrier.wait(q_bars.index(WG), 0)

    m_i = gl.full([ROWS], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.full([ROWS], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
    o = gl.zeros([ROWS, HEAD_D], gl.float32, o_layout)
    if PIPELINE:
        # Prologue: block 0's S and softmax (masked when causal: cheap, and right for start_m == 0).
        mbarrier.wait(k_ready.index(0), 0)
        s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
        s = warpgroup_mma(q, k_bufs.index(0).permute((1, 0)), s, use_acc=False, is_async=True)
        s = warpgroup_mma_wait(0, deps=(s, ))
        mbarrier.arrive(k_empty.index(0))
        p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, 0, q_row0, qk_scale, CAUSAL, BLOCK_N, s_layout)
        p = gl.convert_layout(p.to(q.dtype), p_layout)
        for j in range(1, n_off):
            o, p, m_i, l_i = _step_pipelined(j, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p,
                                             m_i, l_i, q_row0, qk_scale, False, BLOCK_N, STAGES, s_layout,
                                             o_layout, p_layout)
        for j in range(gl.maximum(n_off, 1), n_total):
            o, p, m_i, l_i = _step_pipelined(j, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p,
                                             m_i, l_i, q_row0, qk_scale, CAUSAL, BLOCK_N, STAGES, s_layout,
                                             o_layout, p_layout)
        last = n_total - 1
        lslot = last % STAGES
        mbarrier.wait(v_ready.index(lslot), (last // STAGES) & 1)
        o = warpgroup_mma(p, v_bufs.index(lslot), o, is_async=True)
        o = warpgroup_mma_wait(0, deps=(o, p))[0]
        mbarrier.arrive(v_empty.index(lslot))
    else:
        for j in range(0, n_off):
            o, m_i, l_i = _step_simple(j, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, m_i, l_i,
                                       q_row0, qk_scale, False, BLOCK_N, STAGES, s_layout, o_layout, p_layout)
        for j in range(n_off, n_total):
            o, m_i, l_i = _step_simple(j, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, m_i, l_i,
                                       q_row0, qk_scale, CAUSAL, BLOCK_N, STAGES, s_layout, o_layout, p_layout)

    # Epilogue: O / l through this warpgroup's (now unused) Q buffer and a TMA store; lse in nats.
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))
    o = o / gl.expand_dims(l_o, 1)
    q.store(o.to(o_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row_q + WG * ROWS, 0], q)
    lse = (m_i + gl.log2(l_i)) * 0.6931471805599453
    offs = row_q + WG * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
    gl.store(lse_ptr + offs, lse)
    tma.store_wait(0)


@gluon.jit
def gluon_attn_fwd_kernel(q_desc, k_desc, v_desc, o_desc, lse_ptr, seq_len, qk_scale,
                          BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                          CAUSAL: gl.constexpr, PIPELINE: gl.constexpr, CONSUMER_REGS: gl.constexpr):
    WG_ROWS: gl.constexpr = q_desc.block_type.shape[0]
    CTA_M: gl.constexpr = 2 * WG_ROWS
    n_m = seq_len // CTA_M
    pid_m = gl.program_id(0)
    if CAUSAL:
        pid_m = n_m - 1 - pid_m  # longest rows first
    off_bh = gl.program_id(1)
    start_m = pid_m * CTA_M
    row_q = off_bh * seq_len + start_m
    row_kv = off_bh * seq_len
    if CAUSAL:
        n_off = start_m // BLOCK_N
        n_total = (start_m + CTA_M) // BLOCK_N
    else:
        n_off = seq_len // BLOCK_N
        n_total = n_off

    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [2] + q_desc.block_type.shape, q_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_bufs = gl.allocate_shared_memory(dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(q_bars.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)  # one arrive per consumer warpgroup
        mbarrier.init(v_empty.index(i), count=2)

    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (o_desc, lse_ptr, q_smem, k_bufs, v_bufs, q_bars, k_ready, k_empty, v_ready, v_empty, row_q,
                     start_m, n_off, n_total, qk_scale, WG0, BLOCK_N, HEAD_D, STAGES, CAUSAL, PIPELINE)),
        (_consumer, (o_desc, lse_ptr, q_smem, k_bufs, v_bufs, q_bars, k_ready, k_empty, v_ready, v_empty, row_q,
                     start_m, n_off, n_total, qk_scale, WG1, BLOCK_N, HEAD_D, STAGES, CAUSAL, PIPELINE)),
        (_producer, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, k_ready, k_empty, v_ready, v_empty,
                     row_q, row_kv, n_total, BLOCK_N, STAGES)),
    ], [4, 1], [CONSUMER_REGS, 24])


# ---------------------------------------------------------------------------------------------
# Launcher
# ---------------------------------------------------------------------------------------------

# name -> (BLOCK_N for D=64, BLOCK_N for D=128, STAGES, PIPELINE, CONSUMER_REGS)
VARIANTS = {
    "ws-pipe-s2": (128, 128, 2, True, 240),
    "ws-pipe-s3": (128, 64, 3, True, 240),
    "ws-pipe-s2-n64": (64, 64, 2, True, 240),
    "ws-simple-s2": (128, 128, 2, False, 240),
}
MAXNREG = 168  # 3 warpgroups (2 consumers + producer, padded) x 128 threads x 168 <= 64K registers


def _descs(q, k, v, o, block_n):
    d = q.shape[-1]
    gdt = gl.float16 if q.dtype == torch.float16 else gl.bfloat16
    rows = q.shape[0] * q.shape[1] * q.shape[2]
    qo_layout = gl.NVMMASharedLayout.get_default_for([WG_M, d], gdt)
    kv_layout = gl.NVMMASharedLayout.get_default_for([block_n, d], gdt)
    return (TensorDescriptor(q, [rows, d], [d, 1], [WG_M, d], qo_layout),
            TensorDescriptor(k, [rows, d], [d, 1], [block_n, d], kv_layout),
            TensorDescriptor(v, [rows, d], [d, 1], [block_n, d], kv_layout),
            TensorDescriptor(o, [rows, d], [d, 1], [WG_M, d], qo_layout))


def _check_inputs(q, k, v):
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"q: dtype must be float16 or bfloat16, got {q.dtype}")
    for name, t in (("k", k), ("v", v)):
        if t.shape != q.shape or t.dtype != q.dtype:
            raise ValueError(f"{name}: shape and dtype must match q's {tuple(q.shape)} {q.dtype}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.is_contiguous():
            raise ValueError(f"{name}: must be contiguous (B, H, S, D)")
    if q.dim() != 4 or q.shape[-1] not in (64, 128):
        raise ValueError(f"q: must be (B, H, S, D) with D in (64, 128), got {tuple(q.shape)}")
    if q.shape[2] % BLOCK_M:
        raise ValueError(f"q: seq length must be a multiple of {BLOCK_M}, got {q.shape[2]}")


def gluon_attention(q, k, v, causal, variant="ws-pipe-s2", sm_scale=None):
    """Attention forward (B, H, S, D) -> (o, lse); lse is fp32 (B, H, S), natural log."""
    _check_inputs(q, k, v)
    bn64, bn128, stages, pipeline, regs = VARIANTS[variant]
    b, h, s, d = q.shape
    block_n = bn64 if d == 64 else bn128
    sm_scale = d**-0.5 if sm_scale is None else sm_scale
    o = torch.empty_like(q)
    lse = torch.empty(b, h, s, device=q.device, dtype=torch.float32)
    q_desc, k_desc, v_desc, o_desc = _descs(q, k, v, o, block_n)
    grid = (s // BLOCK_M, b * h)
    gluon_attn_fwd_kernel[grid](q_desc, k_desc, v_desc, o_desc, lse, s, sm_scale * LOG2E,
                                BLOCK_N=block_n, HEAD_D=d, STAGES=stages, CAUSAL=causal, PIPELINE=pipeline,
                                CONSUMER_REGS=regs, num_warps=4, maxnreg=MAXNREG)
    return o, lse


def compile_for_sm90(dtype, d, causal, variant):
    """Compile the kernel for sm_90 without a GPU; returns the CompiledKernel."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    bn64, bn128, stages, pipeline, regs = VARIANTS[variant]
    block_n = bn64 if d == 64 else bn128
    t = torch.empty(2 * 1024, d, dtype=dtype)
    descs = _descs(t.view(1, 2, 1024, d), t.view(1, 2, 1024, d), t.view(1, 2, 1024, d), t.view(1, 2, 1024, d),
                   block_n)
    sig = {name: mangle_type(x) for name, x in zip(("q_desc", "k_desc", "v_desc", "o_desc"), descs, strict=True)}
    sig.update(lse_ptr="*fp32", seq_len="i32", qk_scale="fp32")
    consts = dict(BLOCK_N=block_n, HEAD_D=d, STAGES=stages, CAUSAL=causal, PIPELINE=pipeline, CONSUMER_REGS=regs)
    for name in consts:
        sig[name] = "constexpr"
    src = GluonASTSource(gluon_attn_fwd_kernel, sig, constexprs=consts)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, maxnreg=MAXNREG))


# ---------------------------------------------------------------------------------------------
# Probe
# ---------------------------------------------------------------------------------------------

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {"fp16": 2e-2, "bf16": 3e-2}
# (dtype, D, causal, B, H, S): the timed cases, most important first
CASES = [(dt, d, c, 32, 16, 4096) for dt in ("fp16", "bf16") for d in (128, 64) for c in (True, False)]
CASES.insert(2, ("fp16", 128, True, 2, 16, 16384))
SMALL = (2, 4, 1024)  # (B, H, S) of the exact check against fp32 math


def tail(err: BaseException, n: int = 6) -> str:
    lines = traceback.format_exception(type(err), err, err.__traceback__)
    text = "".join(lines).strip().splitlines()
    return "\n".join(text[-n:])


def reference(q, k, v, causal):
    """fp32 SDPA math and the natural-log lse of the scaled (masked) scores."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    qf, kf, vf = q.float(), k.float(), v.float()
    with sdpa_kernel(SDPBackend.MATH):
        o = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal)
    s = (qf @ kf.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return o, torch.logsumexp(s, dim=-1)


def sdpa_fn(backend_name):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)

    def run(q, k, v, causal):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal), None
    return run


def gluon_fn(variant, smoke):
    def run(q, k, v, causal):
        if smoke:  # no GPU: compile for sm_90 (exercises the kernel build), then report "not run"
            compile_for_sm90(q.dtype, q.shape[-1], causal, variant)
            raise RuntimeError("cpu smoke: compiled for sm_90, not run (no GPU)")
        return gluon_attention(q, k, v, causal, variant)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds; no new measurement starts after it")
    ap.add_argument("--compile-only", action="store_true", help="compile every kernel for sm_90 on the CPU")
    ap.add_argument("--cpu-smoke", action="store_true", help="dry run of the probe logic on the CPU")
    ap.add_argument("--small-checks", action="store_true", help=argparse.SUPPRESS)  # child process mode
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ",".join(VARIANTS))
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]

    if args.compile_only:
        compile_all(variants)
        return
    if args.small_checks:
        small_checks(variants)
        return
    smoke = args.cpu_smoke or not torch.cuda.is_available()
    if smoke and not args.cpu_smoke:
        sys.exit("no CUDA device: use --cpu-smoke or --compile-only")
    dev = torch.device("cpu" if smoke else "cuda")
    t_start = time.perf_counter()
    out_dir = args.out or Path("gluon_fwd_out")
    out_dir.mkdir(parents=True, exist_ok=True)

    if smoke:
        def bench(fn):
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        bench_graph = bench
        cases = [("fp16", 128, True, 1, 2, 128), ("fp16", 128, False, 1, 2, 128), ("bf16", 64, True, 1, 2, 128)]
        small = (1, 2, 256)
    else:
        from triton.testing import do_bench, do_bench_cudagraph

        def bench(fn):
            return do_bench(fn, warmup=25, rep=100, return_mode="median")

        def bench_graph(fn):
            return do_bench_cudagraph(fn, rep=100, return_mode="median")
        cases = CASES
        small = SMALL

    peers = {"sdpa-cudnn": sdpa_fn("CUDNN_ATTENTION"), "sdpa-flash": sdpa_fn("FLASH_ATTENTION")}
    if smoke:
        peers = {"sdpa-math(cpu smoke)": sdpa_fn("MATH")}
    candidates = dict(peers)
    candidates.update({f"gluon {v}": gluon_fn(v, smoke) for v in variants})
    gen = torch.Generator(device=dev).manual_seed(0)
    points, skipped = [], []
    small_ok = {}  # (candidate, dtype, d, causal) -> (ok, error)
    compiled = set()

    if not smoke and variants:
        # The small exact checks of every gluon kernel run first in a child process with a time limit:
        # a kernel that deadlocks on its mbarriers must not hang the whole probe. The child's compiled
        # kernels stay in Triton's on-disk cache, so this process does not compile them again.
        small_ok.update(run_small_checks_child(variants, timeout=max(90.0, 0.6 * args.budget)))
        compiled.update(small_ok)

    def over_budget():
        return time.perf_counter() - t_start > args.budget

    # Pass 1: every case with the peers and the first gluon variant; pass 2: the other variants.
    first = [f"gluon {variants[0]}"] if variants else []
    order = [(case, name) for case in cases for name in list(peers) + first]
    order += [(case, f"gluon {v}") for v in variants[1:] for case in cases]
    inputs = {}
    for case, name in order:
        dt, d, causal, b, h, s = case
        label = f"{dt} d{d} {'causal' if causal else 'full'} {b}x{h}x{s}"
        if over_budget():
            skipped.append(f"{name} @ {label}")
            continue
        point = {"candidate": name, "dtype": dt, "head_dim": d, "causal": causal, "batch": b, "heads": h, "seq": s}
        fn = candidates[name]
        dtype, tol = DTYPES[dt], TOL[dt]
        t0 = time.perf_counter()
        try:
            # exact check on a small case first (fp32 math reference, and the lse), once per kernel
            key = (name, dt, d, causal)
            if key not in small_ok:
                try:
                    _small_check(fn, dt, d, causal, dev, gen, small)
                    small_ok[key] = (True, None)
                except Exception as err:  # noqa: BLE001 - a failing kernel is a result too
                    small_ok[key] = (False, tail(err))
                if name.startswith("gluon"):
                    compiled.add(key)
            ok, err_text = small_ok[key]
            point["check_small"] = "pass" if ok else "FAIL"
            if not ok:
                point["error"] = err_text
                raise _Skip
            if case not in inputs:
                inputs.clear()
                inputs[case] = tuple(torch.randn(b, h, s, d, device=dev, dtype=dtype, generator=gen) for _ in range(3))
                inputs[case] += (sdpa_fn("FLASH_ATTENTION" if not smoke else "MATH")(*inputs[case], causal)[0],)
            q, k, v, ref_big = inputs[case]
            o, _ = fn(q, k, v, causal)
            torch.testing.assert_close(o, ref_big, atol=tol, rtol=tol)  # against SDPA-flash on the timed shape
            point["check_timed_shape_vs_sdpa_flash"] = "pass"
            flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
            call = lambda: fn(q, k, v, causal)
            ms = bench(call)
            point["ms_do_bench"], point["tflops_do_bench"] = ms, flops / ms / 1e9
            try:
                msg = bench_graph(call)
                point["ms_cudagraph"], point["tflops_cudagraph"] = msg, flops / msg / 1e9
            except Exception as err:  # noqa: BLE001
                point["cudagraph_error"] = tail(err, 3)
        except _Skip:
            pass
        except Exception as err:  # noqa: BLE001
            point.setdefault("check_timed_shape_vs_sdpa_flash", "FAIL/error")
            point["error"] = tail(err)
        point["seconds"] = round(time.perf_counter() - t0, 2)
        points.append(point)
        print(f"  {name:22s} {label:28s} {point.get('check_small', '?'):5s} "
              f"{point.get('tflops_do_bench', float('nan')):7.1f} {point.get('tflops_cudagraph', float('nan')):7.1f} "
              f"TFLOP/s  ({point['seconds']} s)", flush=True)

    result = {
        "probe": "benchmarks/evidence/attention/gluon_fwd.py",
        "gpu": "cpu smoke" if smoke else torch.cuda.get_device_name(),
        "torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0],
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "method": (f"correctness: small case (B,H,S)={small} vs fp32 SDPA math + lse vs torch.logsumexp, atol=rtol "
                   "2e-2 fp16 / 3e-2 bf16; timed shape vs SDPA FLASH_ATTENTION output; timing: "
                   "triton.testing.do_bench(warmup=25, rep=100) median and do_bench_cudagraph(rep=100) median; "
                   "TFLOP/s = 4*B*H*S^2*D (x0.5 causal)"),
        "variants": {k: dict(zip(("block_n_d64", "block_n_d128", "stages", "pipeline", "consumer_regs"), v, strict=True))
                     for k, v in VARIANTS.items() if k in variants},
        "maxnreg": MAXNREG,
        "gluon_kernels_compiled": len(compiled),
        "budget_s": args.budget, "elapsed_s": round(time.perf_counter() - t_start, 1),
        "skipped": skipped, "points": points,
    }
    (out_dir / "gluon_fwd.json").write_text(json.dumps(result, indent=1))
    print_table(result)


class _Skip(Exception):
    pass


def print_table(result):
    print(f"\n# {result['gpu']}, torch {result['torch']}, triton {result['triton']}, {result['date']}")
    print(f"# {result['method']}")
    print(f"{'case':30s} {'candidate':22s} {'small':5s} {'big':5s} {'ms':>8s} {'TFLOP/s':>8s} {'graph ms':>9s} {'TFLOP/s':>8s}")
    for p in result["points"]:
        label = f"{p['dtype']} d{p['head_dim']} {'causal' if p['causal'] else 'full'} {p['batch']}x{p['heads']}x{p['seq']}"
        big = p.get("check_timed_shape_vs_sdpa_flash", "-")[:5]
        print(f"{label:30s} {p['candidate']:22s} {p.get('check_small', '?'):5s} {big:5s} "
              f"{p.get('ms_do_bench', math.nan):8.3f} {p.get('tflops_do_bench', math.nan):8.1f} "
              f"{p.get('ms_cudagraph', math.nan):9.3f} {p.get('tflops_cudagraph', math.nan):8.1f}")
        if "error" in p:
            print("    " + p["error"].replace("\n", "\n    "))
    if result["skipped"]:
        print(f"# skipped (budget {result['budget_s']} s): " + "; ".join(result["skipped"]))
    print(f"# gluon kernels compiled: {result['gluon_kernels_compiled']}, elapsed {result['elapsed_s']} s")


def compile_all(variants):
    """--compile-only: build every kernel the probe launches, for sm_90, on this (CPU) machine."""
    import subprocess
    import tempfile

    cuobjdump = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    for variant in variants:
        for dt in DTYPES:
            for d in (64, 128):
                for causal in (False, True):
                    label = f"{variant:16s} {dt} d{d} {'causal' if causal else 'full  '}"
                    t0 = time.perf_counter()
                    try:
                        kern = compile_for_sm90(DTYPES[dt], d, causal, variant)
                    except Exception as err:  # noqa: BLE001
                        print(f"{label} FAILED: {tail(err, 3)}", flush=True)
                        continue
                    usage = ""
                    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
                        f.write(kern.asm["cubin"])
                        f.flush()
                        res = subprocess.run([str(cuobjdump), "--dump-resource-usage", f.name], capture_output=True,
                                             text=True, check=False)
                        for line in res.stdout.splitlines():
                            if "REG:" in line:
                                usage = " ".join(line.split())
                    print(f"{label} ok {time.perf_counter() - t0:5.1f} s, smem {kern.metadata.shared} B, {usage}",
                          flush=True)



def _small_check(fn, dt, d, causal, dev, gen, small):
    dtype, tol = DTYPES[dt], TOL[dt]
    q, k, v = (torch.randn(*small, d, device=dev, dtype=dtype, generator=gen) for _ in range(3))
    o, lse = fn(q, k, v, causal)
    ref_o, ref_lse = reference(q, k, v, causal)
    torch.testing.assert_close(o.float(), ref_o, atol=tol, rtol=tol)
    if lse is not None:
        torch.testing.assert_close(lse, ref_lse, atol=tol, rtol=tol)


def small_checks(variants):
    """Child process: one JSON line per gluon kernel with the small exact check's outcome."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    for v in variants:
        for dt, d, causal in [(dt, d, c) for dt, d, c, *_ in CASES if (dt, d, c) != ("fp16", 128, True)] + [("fp16", 128, True)]:
            try:
                _small_check(gluon_fn(v, False), dt, d, causal, "cuda", gen, SMALL)
                torch.cuda.synchronize()
                res = {"ok": True, "error": None}
            except Exception as err:  # noqa: BLE001
                res = {"ok": False, "error": tail(err)}
            print("SMALLCHECK " + json.dumps({"key": [f"gluon {v}", dt, d, causal], **res}), flush=True)


def run_small_checks_child(variants, timeout, stall=90.0):
    """Run small_checks in a child; kill it after `timeout` s, or after `stall` s without a report (a hang)."""
    import queue
    import subprocess
    import threading

    cmd = [sys.executable, str(Path(__file__).resolve()), "--small-checks", "--variants", ",".join(variants)]
    print(f"# small exact checks of the gluon kernels in a child process (limit {timeout:.0f} s, "
          f"{stall:.0f} s without progress = hang)", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout] + [lines.put(None)], daemon=True).start()
    err_tail: list[str] = []
    threading.Thread(target=lambda: err_tail.extend(proc.stderr), daemon=True).start()
    out, note = {}, None
    while True:
        left = timeout - (time.perf_counter() - t0)
        try:
            line = lines.get(timeout=max(0.1, min(stall, left)))
        except queue.Empty:
            line = ""
        if line is None:
            proc.wait()
            if proc.returncode:
                note = f"child exit code {proc.returncode}: {''.join(err_tail)[-800:]}"
            break
        if line.startswith("SMALLCHECK "):
            r = json.loads(line[len("SMALLCHECK "):])
            out[tuple(r["key"])] = (r["ok"], r["error"])
            print(f"#   {r['key']}: {'pass' if r['ok'] else 'FAIL'}", flush=True)
            last = time.perf_counter()
        elif line == "":
            since = time.perf_counter() - (last if out else t0)
            if time.perf_counter() - t0 >= timeout or since >= stall:
                proc.kill()
                note = (f"not reached: the child was stopped at its {timeout:.0f} s limit"
                        if since < stall else f"HANG? no report for {since:.0f} s, child killed")
                break
    for v in variants:  # kernels the child did not report
        for dt, d, causal, *_ in CASES:
            out.setdefault((f"gluon {v}", dt, d, causal), (False, note or "not reported by the child"))
    print(f"# child done in {time.perf_counter() - t0:.0f} s: {sum(ok for ok, _ in out.values())}/{len(out)} pass"
          + (f"; {note}" if note else ""), flush=True)
    return out

if __name__ == "__main__":
    main()
