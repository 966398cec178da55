"""Probe-only copy of the tensor-descriptor (TMA) and atomic-dQ attention kernels.

The kernels and launchers of examples/attention.py as they stand on branch `split-attn`
(commit 68c733a): the pointer forward and backward of today's example (unchanged), plus
tensor-descriptor versions of the forward, the dK/dV and the dQ kernels, an `ATOMIC_DQ`
option that folds dQ into the dK/dV kernel with fp32 `tl.atomic_add`, heaviest-first causal
order, and a `GPU_CONFIGS` table. Kept here, outside examples/, so that
benchmarks/evidence/attention/attention_tma_probe.py can time them on an H200 before any
of it goes into the teaching file. Trimmed to what the probe uses: no naive kernels, no
`triton_op` registration (so it can be imported beside examples/attention.py), plain
kernel launches instead of `wrap_triton`.

Per pass, `config={"fwd": {...}, "dkdv": {...}, "dq": {...}}` overrides BLOCK_M,
BLOCK_N, num_warps, num_stages, TMA (fwd, dkdv, dq) and ATOMIC_DQ (dkdv).
"""

import math
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def attention_torch(q, k, v, causal: bool = False,
                    sm_scale: float | None = None) -> torch.Tensor:
    """The plain torch reference: fp32 maths, result in q's dtype. Differentiable."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = (q.float() @ k.float().transpose(-1, -2)) * scale  # (B, H, seq_q, seq_k)
    if causal:
        future = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return (p @ v.float()).to(q.dtype)


LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))


@triton.jit
def _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, lo, hi,
               seq_k, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
               MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        start = tl.cast(start_n, tl.int64)
        k_ptrs = (k_base + start * stride_kn + offs_n[:, None] * stride_kn
                  + offs_d[None, :])
        v_ptrs = (v_base + start * stride_vn + offs_n[:, None] * stride_vn
                  + offs_d[None, :])
        if MASKED:
            key_ok = start_n + offs_n < seq_k
            k = tl.load(k_ptrs, mask=key_ok[:, None], other=0.0)
            v = tl.load(v_ptrs, mask=key_ok[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale  # log2 units
        if MASKED:
            keep = key_ok[None, :]
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= (start_n + offs_n)[None, :])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.math.exp2(m_i - m_new)  # how far the old maximum overshot: rescale
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None],
                     input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(
    Q, K, V, O, LSE,  # q, k, v, o: (B, H, seq, D), unit stride along D; LSE: fp32
    stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
    stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om,
    n_heads, seq_q, seq_k, qk_scale,  # qk_scale = sm_scale * log2(e)
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    start_m, h, z = (tl.program_id(0), tl.program_id(1).to(tl.int64),
                     tl.program_id(2).to(tl.int64))
    qk_scale = tl.cast(qk_scale, tl.float32)
    q_base = Q + z * stride_qz + h * stride_qh
    k_base = K + z * stride_kz + h * stride_kh
    v_base = V + z * stride_vz + h * stride_vh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < seq_q
    q = tl.load(q_base + offs_m[:, None].to(tl.int64) * stride_qm + offs_d[None, :],
                mask=row_ok[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)  # running max, log2 units
    l_i = tl.zeros([BLOCK_M], tl.float32)  # running sum of exp2(s - m_i)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:  # seq_q == seq_k: keys below the first query of this block need no mask
        n_free = start_m * BLOCK_M
        n_end = tl.minimum(n_free + BLOCK_M, seq_k)  # diagonal: masked; past: skipped
    else:
        n_free = (seq_k // BLOCK_N) * BLOCK_N  # whole blocks; the ragged last: masked
        n_end = seq_k
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                               offs_m, 0, n_free, seq_k, qk_scale,
                               BLOCK_N, HEAD_DIM, False, CAUSAL, PRECISION)
    acc, l_i, m_i = _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn,
                               offs_m, n_free, n_end, seq_k, qk_scale,
                               BLOCK_N, HEAD_DIM, True, CAUSAL, PRECISION)
    o = acc / l_i[:, None]
    lse = (m_i + tl.math.log2(l_i)) / 1.4426950408889634  # natural log (sm_scale q k^T)
    o_base = O + z * stride_oz + h * stride_oh
    tl.store(o_base + offs_m[:, None].to(tl.int64) * stride_om + offs_d[None, :],
             o.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + (z * n_heads + h) * seq_q + offs_m, lse, mask=row_ok)


@triton.jit
def attn_bwd_preprocess_kernel(O, DO, DELTA, stride_oz, stride_oh, stride_om,
                               stride_dz, stride_dh, stride_dm, n_heads, seq_q,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """delta[z, h, m] = sum_d dO[z, h, m, d] * O[z, h, m, d] in fp32."""
    start_m, h, z = (tl.program_id(0), tl.program_id(1).to(tl.int64),
                     tl.program_id(2).to(tl.int64))
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None].to(tl.int64)
    o = tl.load(O + z * stride_oz + h * stride_oh + rows * stride_om + offs_d[None, :],
                mask=(offs_m < seq_q)[:, None], other=0.0).to(tl.float32)
    do = tl.load(DO + z * stride_dz + h * stride_dh + rows * stride_dm
                 + offs_d[None, :], mask=(offs_m < seq_q)[:, None],
                 other=0.0).to(tl.float32)
    tl.store(DELTA + (z * n_heads + h) * seq_q + offs_m, tl.sum(o * do, axis=1),
             mask=offs_m < seq_q)


@triton.jit
def _dkdv_inner(dk, dv, k, v, q_base, do_base, lse_ptr, delta_ptr, stride_qm, stride_dm,
                offs_n, lo, hi, seq_q, qk_scale, BLOCK_M: tl.constexpr,
                HEAD_DIM: tl.constexpr, MASKED: tl.constexpr, PRECISION: tl.constexpr):
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in range(lo, hi, BLOCK_M):
        start = tl.cast(start_m, tl.int64)
        offs_m = start_m + offs_m0
        row_ok = offs_m < seq_q
        q_t = tl.load(q_base + start * stride_qm + offs_d[:, None]
                      + offs_m0[None, :] * stride_qm,
                      mask=row_ok[None, :], other=0.0)  # (D, BLOCK_M): q transposed
        do = tl.load(do_base + start * stride_dm + offs_m0[:, None] * stride_dm
                     + offs_d[None, :], mask=row_ok[:, None], other=0.0)
        lse2 = tl.load(lse_ptr + offs_m, mask=row_ok,
                       other=float("inf")) * 1.4426950408889634
        delta = tl.load(delta_ptr + offs_m, mask=row_ok, other=0.0)
        p_t = tl.math.exp2(tl.dot(k, q_t, input_precision=PRECISION) * qk_scale
                           - lse2[None, :])  # P^T
        if MASKED:  # a causal program's diagonal blocks: query m sees key n if m >= n
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=PRECISION)  # (dO V^T)^T
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q_t.dtype), tl.trans(q_t), dk, input_precision=PRECISION)
    return dk, dv


@triton.jit
def attn_bwd_dkdv_kernel(
    Q, K, V, DO, DK, DV, LSE, DELTA,
    stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
    stride_vz, stride_vh, stride_vn,
    stride_dz, stride_dh, stride_dm,  # dO; dK and dV are contiguous (B, H, seq_k, D)
    n_heads, seq_q, seq_k, sm_scale, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    start_n, h, z = (tl.program_id(0), tl.program_id(1).to(tl.int64),
                     tl.program_id(2).to(tl.int64))
    sm_scale, qk_scale = (tl.cast(sm_scale, tl.float32),
                          tl.cast(qk_scale, tl.float32))  # fp64 under Inductor
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    key_ok = offs_n < seq_k
    rows_n = offs_n[:, None].to(tl.int64)
    k = tl.load(K + z * stride_kz + h * stride_kh + rows_n * stride_kn
                + offs_d[None, :], mask=key_ok[:, None], other=0.0)
    v = tl.load(V + z * stride_vz + h * stride_vh + rows_n * stride_vn
                + offs_d[None, :], mask=key_ok[:, None], other=0.0)
    q_base = Q + z * stride_qz + h * stride_qh
    do_base = DO + z * stride_dz + h * stride_dh
    lse_ptr = LSE + (z * n_heads + h) * seq_q
    delta_ptr = DELTA + (z * n_heads + h) * seq_q
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    if CAUSAL:  # queries before this key block never see it: start at the diagonal
        m_diag = start_n * BLOCK_N
        m_free = tl.minimum(m_diag + BLOCK_N, seq_q)  # past the diagonal: no mask
        dk, dv = _dkdv_inner(dk, dv, k, v, q_base, do_base, lse_ptr, delta_ptr,
                             stride_qm, stride_dm, offs_n, m_diag, m_free, seq_q,
                             qk_scale, BLOCK_M, HEAD_DIM, True, PRECISION)
    else:
        m_free = 0
    dk, dv = _dkdv_inner(dk, dv, k, v, q_base, do_base, lse_ptr, delta_ptr,
                         stride_qm, stride_dm, offs_n, m_free, seq_q, seq_q,
                         qk_scale, BLOCK_M, HEAD_DIM, False, PRECISION)
    out = (z * n_heads + h) * seq_k * HEAD_DIM + rows_n * HEAD_DIM + offs_d[None, :]
    tl.store(DK + out, (dk * sm_scale).to(DK.dtype.element_ty), mask=key_ok[:, None])
    tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=key_ok[:, None])


@triton.jit
def _dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m,
              lo, hi, seq_k, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
              MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        start = tl.cast(start_n, tl.int64)
        offs_n = start_n + offs_n0
        k_ptrs = (k_base + start * stride_kn + offs_d[:, None]
                  + offs_n0[None, :] * stride_kn)  # (D, BLOCK_N)
        v_ptrs = (v_base + start * stride_vn + offs_d[:, None]
                  + offs_n0[None, :] * stride_vn)
        if MASKED:
            k_t = tl.load(k_ptrs, mask=(offs_n < seq_k)[None, :], other=0.0)
            v_t = tl.load(v_ptrs, mask=(offs_n < seq_k)[None, :], other=0.0)
        else:
            k_t = tl.load(k_ptrs)
            v_t = tl.load(v_ptrs)
        p = tl.math.exp2(tl.dot(q, k_t, input_precision=PRECISION) * qk_scale
                         - lse2[:, None])
        if MASKED:
            keep = (offs_n < seq_k)[None, :]
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, v_t, input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k_t.dtype), tl.trans(k_t), dq, input_precision=PRECISION)
    return dq


@triton.jit
def attn_bwd_dq_kernel(
    Q, K, V, DO, DQ, LSE, DELTA,
    stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
    stride_vz, stride_vh, stride_vn,
    stride_dz, stride_dh, stride_dm,  # dO; dQ is contiguous (B, H, seq_q, D)
    n_heads, seq_q, seq_k, sm_scale, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    start_m, h, z = (tl.program_id(0), tl.program_id(1).to(tl.int64),
                     tl.program_id(2).to(tl.int64))
    sm_scale, qk_scale = (tl.cast(sm_scale, tl.float32),
                          tl.cast(qk_scale, tl.float32))  # fp64 under Inductor
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < seq_q
    rows = offs_m[:, None].to(tl.int64)
    q = tl.load(Q + z * stride_qz + h * stride_qh + rows * stride_qm + offs_d[None, :],
                mask=row_ok[:, None], other=0.0)
    do = tl.load(DO + z * stride_dz + h * stride_dh + rows * stride_dm
                 + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    lse2 = tl.load(LSE + (z * n_heads + h) * seq_q + offs_m, mask=row_ok,
                   other=0.0) * 1.4426950408889634
    delta = tl.load(DELTA + (z * n_heads + h) * seq_q + offs_m, mask=row_ok, other=0.0)
    k_base = K + z * stride_kz + h * stride_kh
    v_base = V + z * stride_vz + h * stride_vh
    if CAUSAL:
        n_free = start_m * BLOCK_M
        n_end = tl.minimum(n_free + BLOCK_M, seq_k)
    else:
        n_free = (seq_k // BLOCK_N) * BLOCK_N
        n_end = seq_k
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    dq = _dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m,
                   0, n_free, seq_k, qk_scale, BLOCK_N, HEAD_DIM, False, CAUSAL,
                   PRECISION)
    dq = _dq_inner(dq, q, do, lse2, delta, k_base, v_base, stride_kn, stride_vn, offs_m,
                   n_free, n_end, seq_k, qk_scale, BLOCK_N, HEAD_DIM, True, CAUSAL,
                   PRECISION)
    out = (z * n_heads + h) * seq_q * HEAD_DIM + rows * HEAD_DIM + offs_d[None, :]
    tl.store(DQ + out, (dq * sm_scale).to(DQ.dtype.element_ty), mask=row_ok[:, None])


@triton.jit
def _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, z, h, offs_m, lo, hi, seq_k,
                   qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                   MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                   PRECISION: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        k = k_desc.load([z, h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = v_desc.load([z, h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION)  # scaled in the exp2
        if MASKED:
            keep = (start_n + offs_n < seq_k)[None, :]
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= (start_n + offs_n)[None, :])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])  # one fused multiply-add
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None],
                     input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd_tma_kernel(
    q_desc, k_desc, v_desc, o_desc, LSE,  # descriptors over (B, H, seq, D); LSE: fp32
    n_heads, seq_q, seq_k, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    start_m, h, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    if CAUSAL:  # heaviest first: the last block of queries sees every key
        start_m = tl.num_programs(0) - 1 - start_m
    qk_scale = tl.cast(qk_scale, tl.float32)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = q_desc.load([z, h, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        n_free = start_m * BLOCK_M
        n_end = tl.minimum(n_free + BLOCK_M, seq_k)
    else:
        n_free = (seq_k // BLOCK_N) * BLOCK_N
        n_end = seq_k
    acc, l_i, m_i = _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, z, h, offs_m,
                                   0, n_free, seq_k, qk_scale, BLOCK_N, HEAD_DIM,
                                   False, CAUSAL, PRECISION)
    acc, l_i, m_i = _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, z, h, offs_m,
                                   n_free, n_end, seq_k, qk_scale, BLOCK_N, HEAD_DIM,
                                   True, CAUSAL, PRECISION)
    o = (acc / l_i[:, None]).to(o_desc.dtype)
    o_desc.store([z, h, start_m * BLOCK_M, 0],
                 o.reshape(1, 1, BLOCK_M, HEAD_DIM))  # rows past seq_q: clipped
    lse = (m_i + tl.math.log2(l_i)) / 1.4426950408889634
    row = (z.to(tl.int64) * n_heads + h) * seq_q
    tl.store(LSE + row + offs_m, lse, mask=offs_m < seq_q)


@triton.jit
def _dkdv_tma_inner(dk, dv, k, v, q_desc, do_desc, z, h, lse_ptr, delta_ptr, dq_ptr,
                    offs_n, lo, hi, seq_q, qk_scale, BLOCK_M: tl.constexpr,
                    HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
                    ATOMIC_DQ: tl.constexpr, PRECISION: tl.constexpr):
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + offs_m0
        row_ok = offs_m < seq_q
        q = q_desc.load([z, h, start_m, 0]).reshape(BLOCK_M, HEAD_DIM)  # zeros past seq
        do = do_desc.load([z, h, start_m, 0]).reshape(BLOCK_M, HEAD_DIM)
        lse2 = tl.load(lse_ptr + offs_m, mask=row_ok,
                       other=float("inf")) * 1.4426950408889634
        delta = tl.load(delta_ptr + offs_m, mask=row_ok, other=0.0)
        p_t = tl.math.exp2(tl.dot(k, tl.trans(q), input_precision=PRECISION)
                           * qk_scale - lse2[None, :])  # P^T
        if MASKED:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=PRECISION)
        ds_t = (p_t * (dp_t - delta[None, :])).to(q.dtype)
        dk = tl.dot(ds_t, q, dk, input_precision=PRECISION)
        if ATOMIC_DQ:  # this key block's share of dQ = dS K (unscaled), into fp32
            dq = tl.dot(tl.trans(ds_t), k, input_precision=PRECISION)
            tl.atomic_add(dq_ptr + offs_m[:, None].to(tl.int64) * HEAD_DIM
                          + offs_d[None, :], dq, mask=row_ok[:, None], sem="relaxed")
    return dk, dv


@triton.jit
def attn_bwd_dkdv_tma_kernel(
    q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc, LSE, DELTA, DQ32,
    n_heads, seq_q, seq_k, sm_scale, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, ATOMIC_DQ: tl.constexpr, PRECISION: tl.constexpr,
):
    start_n, h, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    sm_scale, qk_scale = tl.cast(sm_scale, tl.float32), tl.cast(qk_scale, tl.float32)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k = k_desc.load([z, h, start_n * BLOCK_N, 0]).reshape(BLOCK_N, HEAD_DIM)
    v = v_desc.load([z, h, start_n * BLOCK_N, 0]).reshape(BLOCK_N, HEAD_DIM)
    row = (z.to(tl.int64) * n_heads + h) * seq_q
    lse_ptr, delta_ptr, dq_ptr = LSE + row, DELTA + row, DQ32 + row * HEAD_DIM
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    if CAUSAL:
        m_diag = start_n * BLOCK_N
        m_free = tl.minimum(m_diag + BLOCK_N, seq_q)
        dk, dv = _dkdv_tma_inner(dk, dv, k, v, q_desc, do_desc, z, h, lse_ptr,
                                 delta_ptr, dq_ptr, offs_n, m_diag, m_free, seq_q,
                                 qk_scale, BLOCK_M, HEAD_DIM, True, ATOMIC_DQ,
                                 PRECISION)
    else:
        m_free = 0
    dk, dv = _dkdv_tma_inner(dk, dv, k, v, q_desc, do_desc, z, h, lse_ptr, delta_ptr,
                             dq_ptr, offs_n, m_free, seq_q, seq_q, qk_scale, BLOCK_M,
                             HEAD_DIM, False, ATOMIC_DQ, PRECISION)
    dk_desc.store([z, h, start_n * BLOCK_N, 0],
                  (dk * sm_scale).to(dk_desc.dtype).reshape(1, 1, BLOCK_N, HEAD_DIM))
    dv_desc.store([z, h, start_n * BLOCK_N, 0],
                  dv.to(dv_desc.dtype).reshape(1, 1, BLOCK_N, HEAD_DIM))


@triton.jit
def _dq_tma_inner(dq, q, do, lse2, delta, k_desc, v_desc, z, h, offs_m, lo, hi, seq_k,
                  qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                  MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                  PRECISION: tl.constexpr):
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        k = k_desc.load([z, h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        v = v_desc.load([z, h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        p = tl.math.exp2(tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
                         - lse2[:, None])
        if MASKED:
            keep = (offs_n < seq_k)[None, :]
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PRECISION)
    return dq


@triton.jit
def attn_bwd_dq_tma_kernel(
    q_desc, k_desc, v_desc, do_desc, dq_desc, LSE, DELTA,
    n_heads, seq_q, seq_k, sm_scale, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    start_m, h, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    if CAUSAL:  # heaviest first, as in the forward
        start_m = tl.num_programs(0) - 1 - start_m
    sm_scale, qk_scale = tl.cast(sm_scale, tl.float32), tl.cast(qk_scale, tl.float32)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = offs_m < seq_q
    q = q_desc.load([z, h, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    do = do_desc.load([z, h, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
    row = (z.to(tl.int64) * n_heads + h) * seq_q
    lse2 = tl.load(LSE + row + offs_m, mask=row_ok, other=0.0) * 1.4426950408889634
    delta = tl.load(DELTA + row + offs_m, mask=row_ok, other=0.0)
    if CAUSAL:
        n_free = start_m * BLOCK_M
        n_end = tl.minimum(n_free + BLOCK_M, seq_k)
    else:
        n_free = (seq_k // BLOCK_N) * BLOCK_N
        n_end = seq_k
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    dq = _dq_tma_inner(dq, q, do, lse2, delta, k_desc, v_desc, z, h, offs_m, 0, n_free,
                       seq_k, qk_scale, BLOCK_N, HEAD_DIM, False, CAUSAL,
                       PRECISION)
    dq = _dq_tma_inner(dq, q, do, lse2, delta, k_desc, v_desc, z, h, offs_m, n_free,
                       n_end, seq_k, qk_scale, BLOCK_N, HEAD_DIM, True, CAUSAL,
                       PRECISION)
    dq_desc.store([z, h, start_m * BLOCK_M, 0],
                  (dq * sm_scale).to(dq_desc.dtype).reshape(1, 1, BLOCK_M, HEAD_DIM))


HEAD_DIMS = (16, 32, 64, 128)
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# fp32 inputs: true fp32 dots (slow, exact like the reference); "tf32" is faster
FP32_PRECISION = "ieee"
PASSES = ("fwd", "dkdv", "dq", "preprocess")
# e.g. {"fwd": {"BLOCK_N": 128, "num_stages": 4}}: applies to every call
CONFIG_OVERRIDES: dict[str, dict] = {}
MAX_GRID_YZ = 65535  # CUDA's limit on grid axes 1 and 2 (heads, batch)
_BASE_KEYS = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "PRECISION")
_PASS_KEYS = {"fwd": ("TMA",), "dkdv": ("TMA", "ATOMIC_DQ"), "dq": ("TMA",)}
INT32_MAX = 2**31 - 1  # CUDA's limit on grid axis 0


# fp16/bf16 on a GPU, per (pass, dtype, head_dim, causal); head dims 16 and 32 take
# the 64 row, bf16 without a row the fp16 one. TMA: tensor descriptors
# where the tensors allow them; ATOMIC_DQ (dkdv only): dQ by atomics in the dK/dV
# kernel, no dq launch. The probe passes its candidates as config= overrides.
GPU_CONFIGS: dict[tuple, dict] = {
    ("fwd", "fp16", 128, False): {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8,
                                  "num_stages": 3, "TMA": True},
    ("fwd", "fp16", 128, True): {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8,
                                 "num_stages": 3, "TMA": True},
    ("fwd", "fp16", 64, False): {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4,
                                 "num_stages": 3, "TMA": True},
    ("fwd", "fp16", 64, True): {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4,
                                "num_stages": 3, "TMA": True},
    # dkdv: keys stay (dK, dV accumulators), queries stream through. head_dim 64
    # without a causal mask: 64 x 128 tiles on 4 warps spill 190 registers a thread
    # and run 5x slower than 64 x 64 (measured on an H200)
    ("dkdv", "fp16", 128, False): {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8,
                                   "num_stages": 3, "TMA": True, "ATOMIC_DQ": False},
    ("dkdv", "fp16", 128, True): {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8,
                                  "num_stages": 3, "TMA": True, "ATOMIC_DQ": False},
    ("dkdv", "fp16", 64, False): {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4,
                                  "num_stages": 2, "TMA": True, "ATOMIC_DQ": False},
    ("dkdv", "fp16", 64, True): {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4,
                                 "num_stages": 2, "TMA": True, "ATOMIC_DQ": False},
    # dq: queries stay (dQ accumulator), keys stream through
    ("dq", "fp16", 128, False): {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8,
                                 "num_stages": 3, "TMA": True},
    ("dq", "fp16", 128, True): {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8,
                                "num_stages": 3, "TMA": True},
    ("dq", "fp16", 64, False): {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 8,
                                "num_stages": 3, "TMA": True},
    ("dq", "fp16", 64, True): {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 8,
                               "num_stages": 3, "TMA": True},
}


def _config(head_dim: int, dtype: torch.dtype, device: torch.device, pass_: str,
            causal: bool = False) -> dict:
    """Launch settings of one pass: BLOCK_M (queries), BLOCK_N (keys), num_warps,
    num_stages, PRECISION, TMA (fwd, dkdv, dq) and ATOMIC_DQ (dkdv)."""
    # fp16/bf16: PRECISION is ignored by tl.dot
    precision = FP32_PRECISION if dtype == torch.float32 else "tf32"
    if device.type != "cuda":  # the interpreter: small tiles, many blocks per test
        blocks = {"fwd": (32, 16), "dkdv": (16, 32), "dq": (32, 16),
                  "preprocess": (32, 0)}[pass_]
        cfg = {"BLOCK_M": blocks[0], "BLOCK_N": blocks[1], "num_warps": 4,
               "num_stages": 1, "TMA": True, "ATOMIC_DQ": False}
    elif dtype == torch.float32:  # twice the bytes per tile, and no tensor cores (ieee)
        blocks = {"fwd": (64, 32), "dkdv": (32, 64), "dq": (64, 32),
                  "preprocess": (64, 0)}[pass_]
        cfg = {"BLOCK_M": blocks[0], "BLOCK_N": blocks[1], "num_warps": 4,
               "num_stages": 2, "TMA": False, "ATOMIC_DQ": False}
    elif pass_ in ("fwd", "dkdv", "dq"):  # fp16/bf16 on a GPU: GPU_CONFIGS
        d = 128 if head_dim > 64 else 64
        name = "bf16" if dtype == torch.bfloat16 else "fp16"
        cfg = GPU_CONFIGS.get((pass_, name, d, causal),
                              GPU_CONFIGS[(pass_, "fp16", d, causal)])
    elif pass_ == "preprocess":
        cfg = {"BLOCK_M": 64, "BLOCK_N": 0, "num_warps": 4, "num_stages": 1}
    else:
        raise ValueError(f"pass_ must be one of {PASSES}, got {pass_!r}")
    cfg = {**cfg, "PRECISION": precision}
    keys = _BASE_KEYS + _PASS_KEYS.get(pass_, ())
    cfg = {key: val for key, val in cfg.items() if key in keys}
    return {**cfg, **CONFIG_OVERRIDES.get(pass_, {})}


def _resolve_config(q: torch.Tensor, pass_: str, config: dict | None,
                    causal: bool = False) -> dict:
    """The settings of one pass for q: _config's, with config[pass_] on top, checked."""
    return _checked_config({**_config(q.shape[-1], q.dtype, q.device, pass_, causal),
                            **((config or {}).get(pass_, {}))}, pass_)


def _checked_config(cfg: dict, pass_: str) -> dict:
    unknown = set(cfg) - set(_BASE_KEYS + _PASS_KEYS.get(pass_, ()))
    if unknown:
        raise TypeError(f"config[{pass_!r}] has unknown keys {sorted(unknown)}")
    for key in _PASS_KEYS.get(pass_, ()):
        if not isinstance(cfg.get(key, False), bool):
            raise TypeError(f"config[{pass_!r}][{key!r}] must be a bool, "
                            f"got {cfg[key]!r}")
    for key in ("BLOCK_M", "BLOCK_N") if pass_ != "preprocess" else ("BLOCK_M",):
        b = cfg[key]
        if not isinstance(b, int) or b < 16 or b & (b - 1):
            raise ValueError(f"config[{pass_!r}][{key!r}] must be a power of two >= 16 "
                             f"(a tl.dot side), got {b!r}")
    big, small = {"fwd": ("BLOCK_M", "BLOCK_N"), "dq": ("BLOCK_M", "BLOCK_N"),
                  "dkdv": ("BLOCK_N", "BLOCK_M")}.get(pass_, ("BLOCK_M", "BLOCK_M"))
    if cfg[big] % cfg[small]:  # the causal split needs the diagonal on a block edge
        raise ValueError(f"config[{pass_!r}]: {big} must be a multiple of {small}, "
                         f"got {cfg[big]} and {cfg[small]}")
    return cfg


def _check_inputs(q, k, v, causal, sm_scale) -> float:
    """Validate; return sm_scale as a float (1/sqrt(head_dim) when None)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D (batch, heads, seq, head_dim), "
                             f"got shape {tuple(t.shape)}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape, "
                         f"got {tuple(k.shape)} and {tuple(v.shape)}")
    B, H, M, D = q.shape
    if (k.shape[0], k.shape[1], k.shape[3]) != (B, H, D):
        raise ValueError(f"k must match q in batch, heads and head_dim, "
                         f"got {tuple(k.shape)} for q {tuple(q.shape)}")
    if causal is not False and k.shape[2] != M:
        raise ValueError(f"causal attention needs k and q of the same seq length, "
                         f"got {k.shape[2]} and {M}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"q, k and v must have the same dtype, "
                        f"got {q.dtype}, {k.dtype} and {v.dtype}")
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"q, k and v must be on the same device, "
                         f"got {q.device}, {k.device} and {v.device}")
    if D not in HEAD_DIMS:
        raise ValueError(f"head_dim (q.shape[-1]) must be one of {HEAD_DIMS}, got {D}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.stride(-1) != 1:
            raise ValueError(f"{name} must have unit stride along head_dim (its last "
                             f"dim), got strides {t.stride()}")
    if M > 0 and k.shape[2] == 0 and B * H > 0:
        raise ValueError("k must have at least one key (seq_k >= 1) when q has "
                         "queries: softmax over no keys")
    if B > MAX_GRID_YZ or H > MAX_GRID_YZ:
        raise ValueError(f"q must have at most {MAX_GRID_YZ} batches and heads "
                         f"(grid axes 2 and 1), got {B} and {H}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float)):
        raise TypeError(f"sm_scale must be a float or None, "
                        f"got {type(sm_scale).__name__}")
    if not math.isfinite(sm_scale) or sm_scale <= 0:
        raise ValueError(f"sm_scale must be finite and > 0, got {sm_scale}")
    if q.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("q is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    return float(sm_scale)


def _check_bwd_inputs(do, o, lse, q):
    """Validate the backward's extra inputs; return do, o, lse in the layout the kernels
    read (an expanded do has stride 0 along head_dim: copied)."""
    for name, t in (("do", do), ("o", o)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.shape != q.shape or t.dtype != q.dtype or t.device != q.device:
            raise ValueError(f"{name} must match q, got {tuple(t.shape)} {t.dtype} "
                             f"{t.device} for q {tuple(q.shape)} {q.dtype} {q.device}")
    if (not isinstance(lse, torch.Tensor) or lse.shape != q.shape[:3]
            or lse.dtype != torch.float32):
        raise ValueError("lse must be the forward's fp32 log-sum-exp, "
                         "of shape (batch, heads, seq_q)")
    do = do if do.stride(-1) == 1 else do.contiguous()
    o = o if o.stride(-1) == 1 else o.contiguous()
    return do, o, lse.contiguous()


def _descriptor_ok(*tensors) -> bool:
    """Whether tensor descriptors can cover these (B, H, seq, D) tensors: unit last
    stride, the other strides and the start multiples of 16 bytes (TMA's rules).
    The start is checked through the storage offset: torch allocates 16-byte
    aligned storage, and a fake tensor under torch.compile has no data pointer."""
    for t in tensors:
        e = t.element_size()
        if t.stride(-1) != 1 or (t.storage_offset() * e) % 16:
            return False
        if any(s <= 0 or (s * e) % 16 for s in t.stride()[:-1]):
            return False
    return True


def _desc(t: torch.Tensor, block: int):
    """A descriptor over t's 4-D shape and strides, moving (1, 1, block, D) tiles."""
    return TensorDescriptor.from_tensor(t, [1, 1, block, t.shape[-1]])


def attention_forward(q, k, v, causal: bool = False, sm_scale: float | None = None,
                      config: dict | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(o, lse): o like q (contiguous); lse, (B, H, seq_q), the fp32 natural-log
    log-sum-exp of each query row."""
    sm_scale = _check_inputs(q, k, v, causal, sm_scale)
    B, H, M, _ = q.shape
    N, D = k.shape[2], int(q.shape[3])  # a plain int D even when torch.compile traces
    o = torch.empty((B, H, M, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, M), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    cfg = _resolve_config(q, "fwd", config)
    tma = cfg.pop("TMA", False) and _descriptor_ok(q, k, v)
    grid = (triton.cdiv(M, cfg["BLOCK_M"]), H, B)
    if tma:  # descriptors over the 4-D tensors, bounds per head
        bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
        attn_fwd_tma_kernel[grid](
            _desc(q, bm), _desc(k, bn), _desc(v, bn), _desc(o, bm), lse, H, M, N,
            sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
        return o, lse
    attn_fwd_kernel[grid](
        q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
        *o.stride()[:3], H, M, N, sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
    return o, lse


def attention_backward(do, q, k, v, o, lse, causal: bool = False,
                       sm_scale: float | None = None, config: dict | None = None,
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) in q's dtype, from the forward's o and lse."""
    sm_scale = _check_inputs(q, k, v, causal, sm_scale)
    do, o, lse = _check_bwd_inputs(do, o, lse, q)
    B, H, M, _ = q.shape
    N, D = k.shape[2], int(q.shape[3])
    dq = torch.empty((B, H, M, D), device=q.device, dtype=q.dtype)
    dk = torch.empty((B, H, N, D), device=q.device, dtype=q.dtype)
    dv = torch.empty((B, H, N, D), device=q.device, dtype=q.dtype)
    if dq.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    delta = torch.empty_like(lse)
    pre = _resolve_config(q, "preprocess", config)
    attn_bwd_preprocess_kernel[(triton.cdiv(M, pre["BLOCK_M"]), H, B)](
        o, do, delta, *o.stride()[:3], *do.stride()[:3], H, M, HEAD_DIM=D,
        BLOCK_M=pre["BLOCK_M"], num_warps=pre["num_warps"])
    cfg = _resolve_config(q, "dkdv", config, causal)
    dq_cfg = _resolve_config(q, "dq", config, causal)
    tma_ok = _descriptor_ok(q, k, v, do)
    tma, dq_tma = cfg.pop("TMA", False) and tma_ok, dq_cfg.pop("TMA", False) and tma_ok
    atomic = cfg.pop("ATOMIC_DQ", False) and tma  # the pointer kernels: two passes
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3])
    if tma:
        dq32 = (torch.zeros((B, H, M, D), device=q.device, dtype=torch.float32)
                if atomic else lse)  # lse: a placeholder the kernel never touches
        attn_bwd_dkdv_tma_kernel[(triton.cdiv(N, bn), H, B)](
            _desc(q, bm), _desc(k, bn), _desc(v, bn), _desc(do, bm), _desc(dk, bn),
            _desc(dv, bn), lse, delta, dq32, H, M, N, sm_scale, sm_scale * LOG2E,
            HEAD_DIM=D, CAUSAL=causal, ATOMIC_DQ=atomic, **cfg)
        if atomic:
            return (dq32 * sm_scale).to(q.dtype), dk, dv
    else:
        attn_bwd_dkdv_kernel[(triton.cdiv(N, bn), H, B)](
            q, k, v, do, dk, dv, lse, delta, *strides, H, M, N, sm_scale,
            sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
    bm, bn = dq_cfg["BLOCK_M"], dq_cfg["BLOCK_N"]
    if dq_tma:
        attn_bwd_dq_tma_kernel[(triton.cdiv(M, bm), H, B)](
            _desc(q, bm), _desc(k, bn), _desc(v, bn), _desc(do, bm), _desc(dq, bm),
            lse, delta, H, M, N, sm_scale, sm_scale * LOG2E, HEAD_DIM=D,
            CAUSAL=causal, **dq_cfg)
    else:
        attn_bwd_dq_kernel[(triton.cdiv(M, bm), H, B)](
            q, k, v, do, dq, lse, delta, *strides, H, M, N, sm_scale,
            sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **dq_cfg)
    return dq, dk, dv
