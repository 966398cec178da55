# %% [markdown]
# # Fused attention: FlashAttention-2 forward and backward
#
# `attention(q, k, v, causal, sm_scale)` = `softmax(q @ k^T * sm_scale) @ v` per
# (batch, head), with q, k, v of shape `(batch, heads, seq, head_dim)`:
#
# 1. **naive**: three kernels (scores, row softmax, `P @ V`) that write the
#    `seq x seq` score matrix to memory and read it back;
# 2. **fused forward**: one program per block of queries walks the keys and
#    values once, with an online softmax (running max `m` and sum `l` in fp32),
#    and never writes the scores; causal programs stop at the diagonal;
# 3. **backward**: `delta = rowsum(dO * O)`, then one kernel for dK and dV (one
#    program per block of keys) and one for dQ (one program per block of
#    queries), both recomputing the probabilities from the saved log-sum-exp;
# 4. **tensor descriptors**: the same kernels with each tile moved by Hopper's
#    copy engine (TMA) instead of a block of pointers, where the tensors allow.
#
# fp16 and bf16 (and fp32, mainly for the interpreter) in, the same dtype out,
# fp32 accumulation inside. Registered as `torch.ops.tit.attention_fwd` with
# `triton_op`, so autograd and `torch.compile` see it.
#
# Run it with `python examples/attention.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]
# %% [markdown]
# ## The reference
#
# What every kernel must match: the formula in fp32, with explicit matmuls and
# `torch.softmax` (not `scaled_dot_product_attention`), cast back to the input
# dtype. Causal attention masks the keys after each query with `-inf`.


# %%
# --8<-- [start:reference]
import math  # noqa: E402

from torch.library import triton_op, wrap_triton  # noqa: E402  (used further down)
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


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
# --8<-- [end:reference]


# %% [markdown]
# ## Step 1: naive, three kernels
#
# Kernel 1 writes the scores `S = Q K^T * scale` (fp32) for every (query, key)
# pair; kernel 2 reads each row of `S`, normalizes it and writes `P` in the input
# dtype; kernel 3 multiplies `P @ V`. Correct, simple, and it moves
# `seq x seq` values through memory three times.


# %%
# --8<-- [start:naive-kernels]
@triton.jit
def naive_scores_kernel(
    Q, K, S,  # q, k: (B, H, seq, D), unit stride along D; S: contiguous fp32 scores
    stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
    n_heads, seq_q, seq_k, sm_scale,
    CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, PRECISION: tl.constexpr,
):
    pid_m, pid_n, bh = tl.program_id(0), tl.program_id(1), tl.program_id(2).to(tl.int64)
    sm_scale = tl.cast(sm_scale, tl.float32)  # fp32 from Triton, fp64 under Inductor
    z, h = bh // n_heads, bh % n_heads
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_q, rows_k = offs_m.to(tl.int64), offs_n.to(tl.int64)  # rows * strides: int64
    q = tl.load(Q + z * stride_qz + h * stride_qh + rows_q[:, None] * stride_qm
                + offs_d[None, :], mask=(offs_m < seq_q)[:, None], other=0.0)
    k = tl.load(K + z * stride_kz + h * stride_kh + rows_k[:, None] * stride_kn
                + offs_d[None, :], mask=(offs_n < seq_k)[:, None], other=0.0)
    s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * sm_scale
    if CAUSAL:
        s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
    s_ptrs = (S + bh * seq_q * seq_k + offs_m[:, None].to(tl.int64) * seq_k
              + offs_n[None, :])
    tl.store(s_ptrs, s, mask=(offs_m < seq_q)[:, None] & (offs_n < seq_k)[None, :])


@triton.jit
def naive_softmax_kernel(S, P, seq_k, BLOCK_N: tl.constexpr):
    """One program per row of S (fp32): two passes over the row, P in P's dtype."""
    row = tl.program_id(0).to(tl.int64) * seq_k
    cols = tl.arange(0, BLOCK_N)
    m = tl.full([BLOCK_N], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, seq_k, BLOCK_N):  # pass 1: running max and sum, per lane
        s = tl.load(S + row + start + cols, mask=start + cols < seq_k,
                    other=float("-inf"))
        m_new = tl.maximum(m, s)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # lanes with only -inf
        l = l * tl.exp(m - m_safe) + tl.exp(s - m_safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    inv_sum = 1.0 / tl.sum(l * tl.exp(m - row_max), axis=0)
    for start in range(0, seq_k, BLOCK_N):  # pass 2: normalize and write
        s = tl.load(S + row + start + cols, mask=start + cols < seq_k,
                    other=float("-inf"))
        p = tl.exp(s - row_max) * inv_sum
        tl.store(P + row + start + cols, p.to(P.dtype.element_ty),
                 mask=start + cols < seq_k)


@triton.jit
def naive_pv_kernel(
    P, V, O,  # P: contiguous (B, H, seq_q, seq_k); V: (B, H, seq_k, D); O: contiguous
    stride_vz, stride_vh, stride_vn,
    n_heads, seq_q, seq_k,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    PRECISION: tl.constexpr,
):
    pid_m, bh = tl.program_id(0), tl.program_id(1).to(tl.int64)
    z, h = bh // n_heads, bh % n_heads
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    p_rows = P + bh * seq_q * seq_k + offs_m[:, None].to(tl.int64) * seq_k
    v_base = V + z * stride_vz + h * stride_vh
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start in range(0, seq_k, BLOCK_N):
        keys = start + offs_n
        p = tl.load(p_rows + keys[None, :],
                    mask=(offs_m < seq_q)[:, None] & (keys < seq_k)[None, :], other=0.0)
        v = tl.load(v_base + keys[:, None].to(tl.int64) * stride_vn + offs_d[None, :],
                    mask=(keys < seq_k)[:, None], other=0.0)
        acc = tl.dot(p, v, acc, input_precision=PRECISION)
    o_ptrs = (O + bh * seq_q * HEAD_DIM + offs_m[:, None].to(tl.int64) * HEAD_DIM
              + offs_d[None, :])
    tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=(offs_m < seq_q)[:, None])
# --8<-- [end:naive-kernels]


# %%
# --8<-- [start:naive-launcher]
def attention_naive(q, k, v, causal: bool = False,
                    sm_scale: float | None = None) -> torch.Tensor:
    """Attention as three kernels through HBM: S (fp32), P (input dtype), O."""
    stages = naive_stages(q, k, v, causal, sm_scale)
    for name in ("scores", "softmax", "pv"):
        stages[name]()
    return stages["o"]


def naive_stages(q, k, v, causal: bool = False, sm_scale: float | None = None) -> dict:
    """The three launches of `attention_naive` as separate calls, and the buffers they
    pass on: {"scores", "softmax", "pv": callables, run in that order; "s", "p", "o":
    their outputs}. The benchmark times each launch alone to measure its traffic."""
    sm_scale = _check_inputs(q, k, v, causal, sm_scale)
    B, H, M, D = q.shape
    N = k.shape[2]
    if B * H > MAX_GRID_YZ:  # kernels 1 and 3 put every (batch, head) on one grid axis
        raise ValueError(f"q has batch x heads = {B * H}: the naive kernels take at "
                         f"most {MAX_GRID_YZ} (one grid axis); use attention()")
    if B * H * M > INT32_MAX:  # kernel 2: one program per row of S
        raise ValueError(f"q has batch x heads x seq_q = {B * H * M} rows of scores: "
                         f"the naive softmax takes at most {INT32_MAX} (one program "
                         "per row); use attention()")
    o = torch.empty((B, H, M, D), device=q.device, dtype=q.dtype)
    s = torch.empty((B, H, M, N), device=q.device, dtype=torch.float32)
    p = torch.empty((B, H, M, N), device=q.device, dtype=q.dtype)
    if o.numel() == 0:
        return {"scores": lambda: None, "softmax": lambda: None, "pv": lambda: None,
                "s": s, "p": p, "o": o}
    bm, bn = (16, 16) if q.device.type == "cpu" else (64, 64)
    precision = FP32_PRECISION if q.dtype == torch.float32 else "tf32"
    softmax_block = min(4096, triton.next_power_of_2(N))

    def scores():
        naive_scores_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn), B * H)](
            q, k, s, *q.stride()[:3], *k.stride()[:3], H, M, N, sm_scale,
            CAUSAL=causal, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, PRECISION=precision)

    def softmax():
        naive_softmax_kernel[(B * H * M,)](s, p, N, BLOCK_N=softmax_block,
                                           num_warps=8 if softmax_block >= 2048 else 4)

    def pv():
        naive_pv_kernel[(triton.cdiv(M, bm), B * H)](
            p, v, o, *v.stride()[:3], H, M, N, HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn,
            PRECISION=precision)

    return {"scores": scores, "softmax": softmax, "pv": pv, "s": s, "p": p, "o": o}


def naive_bytes(batch, heads, seq_q, seq_k, head_dim, dtype=torch.float16) -> dict:
    """Bytes each naive kernel must move at least: inputs read, outputs written once."""
    e = torch.empty((), dtype=dtype).element_size()
    rows, scores = batch * heads, batch * heads * seq_q * seq_k
    moved = {
        "scores": rows * (seq_q + seq_k) * head_dim * e + scores * 4,  # Q, K; S (fp32)
        "softmax": scores * 4 + scores * e,  # read S; write P
        "pv": (scores * e + rows * seq_k * head_dim * e  # read P, V; write O
               + rows * seq_q * head_dim * e),
    }
    return {**moved, "total": sum(moved.values())}


def fused_bytes(batch, heads, seq_q, seq_k, head_dim, dtype=torch.float16) -> int:
    """Bytes the fused forward must move at least: read Q, K, V; write O, lse (fp32)."""
    e = torch.empty((), dtype=dtype).element_size()
    rows = batch * heads
    return rows * (2 * seq_q + 2 * seq_k) * head_dim * e + rows * seq_q * 4
# --8<-- [end:naive-launcher]


# %% [markdown]
# ## Step 2: the fused forward
#
# One program owns `BLOCK_M` queries of one (batch, head) and walks the keys
# and values in blocks of `BLOCK_N`. For each block it computes the scores in
# registers, updates the running maximum `m` and the running sum `l` of each
# query row, rescales the accumulator by `exp(m_old - m_new)` and adds `P V`.
# At the end `O = acc / l`, and `lse = m + log(l)` is saved for the backward.
# Everything runs in base 2: `log2(e)` is folded into the scale once, so each
# exponential is one `exp2`.
#
# The walk is split in two: blocks that need no mask (all keys valid, all below
# the diagonal) and the one or two blocks that do (the ragged last block, or the
# diagonal of a causal program). Causal programs never visit the blocks above
# the diagonal: half the work at long sequences.


# %%
# --8<-- [start:fwd-kernel]
LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))


@triton.jit
def _fwd_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, lo, hi,
               seq_k, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
               MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        start = tl.cast(start_n, tl.int64)  # (1)!
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
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # (2)!
        alpha = tl.math.exp2(m_i - m_new)  # how far the old maximum overshot: rescale
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None],
                     input_precision=PRECISION)  # (3)!
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
                     tl.program_id(2).to(tl.int64))  # (4)!
    qk_scale = tl.cast(qk_scale, tl.float32)  # (5)!
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
# --8<-- [end:fwd-kernel]


# %% [markdown]
# ## Step 3: the backward
#
# With `P = exp(S - lse)` recomputed from the saved log-sum-exp, the gradients are
# `dV = P^T dO`, `dP = dO V^T`, `dS = P * (dP - delta)` with
# `delta = rowsum(dO * O)`, `dQ = scale * dS K` and `dK = scale * dS^T Q`.
#
# dK and dV sum over queries, dQ over keys. Rather than one program writing into
# the other's sums with atomics, two kernels each own what they write: one
# program per block of keys walks the queries (dK, dV), one program per block of
# queries walks the keys (dQ). Both recompute `S` and `P`: 7 matmuls instead of
# 5, no atomics, deterministic results.


# %%
# --8<-- [start:bwd-kernels]
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
                       other=float("inf")) * 1.4426950408889634  # (1)!
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
# --8<-- [end:bwd-kernels]


# %% [markdown]
# ## Step 5: tensor descriptors (TMA) on Hopper
#
# The same three kernels, with every `(BLOCK, head_dim)` tile of q, k, v, dO and
# the outputs moved by a tensor descriptor instead of a block of pointers: on
# sm_90 the copy engine (TMA) fetches the tile into shared memory while the warps
# compute. The descriptors are built on the host over the 4-D tensors with their
# real strides, with a block of `(1, 1, BLOCK, head_dim)`: the bounds are those of
# one head, so a ragged last block loads zeros and stores nothing past `seq`, and
# strided views work. The launcher falls back to the pointer kernels above when a
# tensor breaks the descriptor rules (16-byte aligned start and strides).
#
# One more change: causal programs start with the heaviest blocks of queries
# (the last ones, which see the most keys), so that the short ones fill the tail
# of the launch instead of leaving one long program running alone at the end.


# %%
# --8<-- [start:tma-fwd]
@triton.jit
def _fwd_tma_inner(acc, l_i, m_i, q, k_desc, v_desc, z, h, offs_m, lo, hi, seq_k,
                   qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                   MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                   PRECISION: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        k = k_desc.load([z, h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)  # (1)!
        v = v_desc.load([z, h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale  # log2 units
        if MASKED:
            keep = (start_n + offs_n < seq_k)[None, :]
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= (start_n + offs_n)[None, :])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
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
        start_m = tl.num_programs(0) - 1 - start_m  # (2)!
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
                 o.reshape(1, 1, BLOCK_M, HEAD_DIM))  # (3)!
    lse = (m_i + tl.math.log2(l_i)) / 1.4426950408889634
    row = (z.to(tl.int64) * n_heads + h) * seq_q
    tl.store(LSE + row + offs_m, lse, mask=offs_m < seq_q)


# --8<-- [end:tma-fwd]


# --8<-- [start:tma-bwd]
@triton.jit
def _dkdv_tma_inner(dk, dv, k, v, q_desc, do_desc, z, h, lse_ptr, delta_ptr, offs_n,
                    lo, hi, seq_q, qk_scale, BLOCK_M: tl.constexpr,
                    HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
                    PRECISION: tl.constexpr):
    offs_m0 = tl.arange(0, BLOCK_M)
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
    return dk, dv


@triton.jit
def attn_bwd_dkdv_tma_kernel(
    q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc, LSE, DELTA,
    n_heads, seq_q, seq_k, sm_scale, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    start_n, h, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    sm_scale, qk_scale = tl.cast(sm_scale, tl.float32), tl.cast(qk_scale, tl.float32)
    offs_n = start_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k = k_desc.load([z, h, start_n * BLOCK_N, 0]).reshape(BLOCK_N, HEAD_DIM)
    v = v_desc.load([z, h, start_n * BLOCK_N, 0]).reshape(BLOCK_N, HEAD_DIM)
    row = (z.to(tl.int64) * n_heads + h) * seq_q
    lse_ptr, delta_ptr = LSE + row, DELTA + row
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    if CAUSAL:
        m_diag = start_n * BLOCK_N
        m_free = tl.minimum(m_diag + BLOCK_N, seq_q)
        dk, dv = _dkdv_tma_inner(dk, dv, k, v, q_desc, do_desc, z, h, lse_ptr,
                                 delta_ptr, offs_n, m_diag, m_free, seq_q, qk_scale,
                                 BLOCK_M, HEAD_DIM, True, PRECISION)
    else:
        m_free = 0
    dk, dv = _dkdv_tma_inner(dk, dv, k, v, q_desc, do_desc, z, h, lse_ptr, delta_ptr,
                             offs_n, m_free, seq_q, seq_q, qk_scale, BLOCK_M,
                             HEAD_DIM, False, PRECISION)
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
# --8<-- [end:tma-bwd]


# %% [markdown]
# ## Launch settings
#
# One function holds every launch setting: a fixed choice per head dim and dtype
# (no autotuning at run time), small tiles in the interpreter so that short
# test sequences still span several blocks. `CONFIG_OVERRIDES` (module-wide) and
# the launchers' `config=` argument replace any of them, for tuning on a GPU.


# %%
# --8<-- [start:config]
HEAD_DIMS = (16, 32, 64, 128)
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# fp32 inputs: true fp32 dots (slow, exact like the reference); "tf32" is faster
FP32_PRECISION = "ieee"
PASSES = ("fwd", "dkdv", "dq", "preprocess")
# e.g. {"fwd": {"BLOCK_N": 128, "num_stages": 4}}: applies to every call
CONFIG_OVERRIDES: dict[str, dict] = {}
MAX_GRID_YZ = 65535  # CUDA's limit on grid axes 1 and 2 (heads, batch)
_BASE_KEYS = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "PRECISION")
INT32_MAX = 2**31 - 1  # CUDA's limit on grid axis 0


def _config(head_dim: int, dtype: torch.dtype, device: torch.device, pass_: str,
            causal: bool = False) -> dict:
    """Launch settings of one pass: BLOCK_M (queries), BLOCK_N (keys), num_warps,
    num_stages, PRECISION and (not for preprocess) TMA: tensor descriptors."""
    # fp16/bf16: PRECISION is ignored by tl.dot
    precision = FP32_PRECISION if dtype == torch.float32 else "tf32"
    if device.type != "cuda":  # the interpreter: small tiles, many blocks per test
        blocks = {"fwd": (32, 16), "dkdv": (16, 32), "dq": (32, 16),
                  "preprocess": (32, 0)}[pass_]
        cfg = {"BLOCK_M": blocks[0], "BLOCK_N": blocks[1], "num_warps": 4,
               "num_stages": 1, "TMA": True}
    elif dtype == torch.float32:  # twice the bytes per tile, and no tensor cores (ieee)
        blocks = {"fwd": (64, 32), "dkdv": (32, 64), "dq": (64, 32),
                  "preprocess": (64, 0)}[pass_]
        cfg = {"BLOCK_M": blocks[0], "BLOCK_N": blocks[1], "num_warps": 4,
               "num_stages": 2, "TMA": False}
    # fp16/bf16 on a GPU: the fastest settings of sweeps on an H200
    # (the attention Benchmarks page has them)
    elif pass_ == "fwd":  # 128 queries per program, 128 keys (64 at head_dim 64)
        cfg = ({"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3}
               if head_dim == 128 else
               {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3})
        cfg["TMA"] = True
    elif pass_ == "dkdv":  # keys stay (dK, dV accumulators), queries stream through
        # head_dim <= 64 without a causal mask: 64 x 128 tiles on 4 warps spill 190
        # registers a thread and run 5x slower than 64 x 64; with the mask they are
        # the fastest, but only with pointer loads (descriptors: 3x slower)
        cfg = ({"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3,
                "TMA": True}
               if head_dim == 128 else
               {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4, "num_stages": 2,
                "TMA": False}
               if causal else
               {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2,
                "TMA": True})
    elif pass_ == "dq":  # queries stay (dQ accumulator), keys stream through
        cfg = ({"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 3}
               if head_dim == 128 else
               {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 8, "num_stages": 3})
        cfg["TMA"] = True
    elif pass_ == "preprocess":
        cfg = {"BLOCK_M": 64, "BLOCK_N": 0, "num_warps": 4, "num_stages": 1}
    else:
        raise ValueError(f"pass_ must be one of {PASSES}, got {pass_!r}")
    if pass_ == "preprocess":
        cfg.pop("TMA", None)
    return {**cfg, "PRECISION": precision, **CONFIG_OVERRIDES.get(pass_, {})}


def _resolve_config(q: torch.Tensor, pass_: str, config: dict | None,
                    causal: bool = False) -> dict:
    """The settings of one pass for q: _config's, with config[pass_] on top, checked."""
    return _checked_config({**_config(q.shape[-1], q.dtype, q.device, pass_, causal),
                            **((config or {}).get(pass_, {}))}, pass_)


def _checked_config(cfg: dict, pass_: str) -> dict:
    keys = set(_BASE_KEYS) | ({"TMA"} if pass_ != "preprocess" else set())
    unknown = set(cfg) - keys
    if unknown:
        raise TypeError(f"config[{pass_!r}] has unknown keys {sorted(unknown)}")
    if not isinstance(cfg.get("TMA", False), bool):
        raise TypeError(f"config[{pass_!r}]['TMA'] must be a bool, got {cfg['TMA']!r}")
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
# --8<-- [end:config]


# %% [markdown]
# ## The launchers
#
# They validate the inputs (`_check_inputs`, below them on the pages), allocate
# the outputs and launch with the settings above. Every stride of q, k, v, o and
# dO is a kernel argument, so views (a `(batch, seq, heads, head_dim)` tensor
# transposed to `(batch, heads, seq, head_dim)`, a slice with a storage offset)
# work without a copy; the head dim must have unit stride. Inside the
# `triton_op` below they launch through `wrap_triton`, which lets `torch.compile`
# see the kernels; called directly they launch the kernels themselves. An eager
# `wrap_triton` launch costs host time, and it files every argument that is not a
# tensor or a number (a tensor descriptor, and with it its tensor) in a table
# that is never emptied: the memory of every output would stay allocated.


# %%
# --8<-- [start:checks]
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
# --8<-- [end:checks]


# --8<-- [start:launchers]
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


def _launcher(kernel, wrap: bool):
    """kernel[grid](...) eagerly; wrap_triton(kernel)[grid](...) in a triton_op."""
    return wrap_triton(kernel) if wrap else kernel


def attention_forward(q, k, v, causal: bool = False, sm_scale: float | None = None,
                      config: dict | None = None, wrap: bool = False,
                      ) -> tuple[torch.Tensor, torch.Tensor]:
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
    grid = (triton.cdiv(M, cfg["BLOCK_M"]), H, B)  # (1)!
    if tma:  # Step 5: descriptors over the 4-D tensors, bounds per head
        bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
        _launcher(attn_fwd_tma_kernel, wrap)[grid](
            _desc(q, bm), _desc(k, bn), _desc(v, bn), _desc(o, bm), lse, H, M, N,
            sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
        return o, lse
    _launcher(attn_fwd_kernel, wrap)[grid](
        q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3],
        *o.stride()[:3], H, M, N, sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
    return o, lse


def attention_backward(do, q, k, v, o, lse, causal: bool = False,
                       sm_scale: float | None = None, config: dict | None = None,
                       wrap: bool = False,
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
    _launcher(attn_bwd_preprocess_kernel, wrap)[(triton.cdiv(M, pre["BLOCK_M"]), H, B)](
        o, do, delta, *o.stride()[:3], *do.stride()[:3], H, M, HEAD_DIM=D,
        BLOCK_M=pre["BLOCK_M"], num_warps=pre["num_warps"])
    cfg = _resolve_config(q, "dkdv", config, causal)
    dq_cfg = _resolve_config(q, "dq", config, causal)
    tma_ok = _descriptor_ok(q, k, v, do)
    tma, dq_tma = cfg.pop("TMA", False) and tma_ok, dq_cfg.pop("TMA", False) and tma_ok
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3])
    if tma:  # Step 5: descriptors, as in the forward
        _launcher(attn_bwd_dkdv_tma_kernel, wrap)[(triton.cdiv(N, bn), H, B)](
            _desc(q, bm), _desc(k, bn), _desc(v, bn), _desc(do, bm), _desc(dk, bn),
            _desc(dv, bn), lse, delta, H, M, N, sm_scale, sm_scale * LOG2E,
            HEAD_DIM=D, CAUSAL=causal, **cfg)
    else:
        _launcher(attn_bwd_dkdv_kernel, wrap)[(triton.cdiv(N, bn), H, B)](
            q, k, v, do, dk, dv, lse, delta, *strides, H, M, N, sm_scale,
            sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
    bm, bn = dq_cfg["BLOCK_M"], dq_cfg["BLOCK_N"]
    if dq_tma:
        _launcher(attn_bwd_dq_tma_kernel, wrap)[(triton.cdiv(M, bm), H, B)](
            _desc(q, bm), _desc(k, bn), _desc(v, bn), _desc(do, bm), _desc(dq, bm),
            lse, delta, H, M, N, sm_scale, sm_scale * LOG2E, HEAD_DIM=D,
            CAUSAL=causal, **dq_cfg)
    else:
        _launcher(attn_bwd_dq_kernel, wrap)[(triton.cdiv(M, bm), H, B)](
            q, k, v, do, dq, lse, delta, *strides, H, M, N, sm_scale,
            sm_scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **dq_cfg)
    return dq, dk, dv
# --8<-- [end:launchers]


# %% [markdown]
# ## Making it differentiable
#
# Two ways, both calling the same launchers:
#
# * `AttentionFunction`, a `torch.autograd.Function`: the shortest path to
#   `loss.backward()`, and the one that takes `config=` overrides;
# * `torch.ops.tit.attention_fwd`, a `triton_op` with `register_autograd`: what
#   `attention()` calls, and what `torch.compile(fullgraph=True)` can trace into.
#   Under the interpreter it runs eagerly on CPU tensors, but `torch.compile` and
#   `opcheck`'s fake-tensor checks need a GPU (`wrap_triton` would run the
#   interpreted kernel on fake tensors).


# %%
# --8<-- [start:autograd]
class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, sm_scale, config):
        o, lse = attention_forward(q, k, v, causal, sm_scale, config)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.sm_scale, ctx.config = causal, sm_scale, config
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = attention_backward(do, q, k, v, o, lse, ctx.causal, ctx.sm_scale,
                                        ctx.config)
        return dq, dk, dv, None, None, None


def attention_function(q, k, v, causal: bool = False, sm_scale: float | None = None,
                       config: dict | None = None):
    """Fused attention through the autograd.Function, with per-pass config overrides."""
    return AttentionFunction.apply(q, k, v, causal, sm_scale, config)


@triton_op("tit::attention_bwd", mutates_args={})
def _attention_bwd_op(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, causal: bool,
                      sm_scale: float,
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return attention_backward(do, q, k, v, o, lse, causal, sm_scale, wrap=True)


@triton_op("tit::attention_fwd", mutates_args={})
def _attention_fwd_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                      sm_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    return attention_forward(q, k, v, causal, sm_scale, wrap=True)


def _setup_context(ctx, inputs, output):
    q, k, v, causal, sm_scale = inputs
    o, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.sm_scale = causal, sm_scale


def _backward(ctx, do, _dlse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = _attention_bwd_op(do, q, k, v, o, lse, ctx.causal, ctx.sm_scale)
    return dq, dk, dv, None, None


_attention_fwd_op.register_autograd(_backward, setup_context=_setup_context)


def attention(q, k, v, causal: bool = False,
              sm_scale: float | None = None) -> torch.Tensor:
    """softmax(q @ k^T * sm_scale) @ v per (batch, head); sm_scale defaults to
    1/sqrt(head_dim).

    q: (B, H, seq_q, D); k, v: (B, H, seq_k, D), seq_k == seq_q when causal.
    Differentiable.
    """
    sm_scale = _check_inputs(q, k, v, causal, sm_scale)
    return _attention_fwd_op(q, k, v, causal, sm_scale)[0]
# --8<-- [end:autograd]


# %% [markdown]
# ## Checked from outside: float64 autograd and `opcheck`
#
# The launchers take no float64, so `gradcheck` cannot run; the comparison it
# makes is done by hand: the output and `dq`, `dk`, `dv` in fp32 against torch's
# autograd of the formula in float64, causal and not, on a sequence that is no
# multiple of any block. Then `opcheck` on `torch.ops.tit.attention_fwd`: all four
# checks on a GPU, the two that need no fake tensors in the interpreter.


# %%
# --8<-- [start:autograd-checks]
def attention_float64(q, k, v, causal: bool) -> torch.Tensor:
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool,
                                     device=s.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.double()


def check_gradients(batch: int = 1, heads: int = 2, seq: int = 20,
                    head_dim: int = 16) -> None:
    tol = 1e-2 if DEVICE.type == "cuda" else 1e-4  # (1)!
    q, k, v, do = (torch.randn(batch, heads, seq, head_dim, device=DEVICE)
                   for _ in range(4))
    checks = ("test_schema", "test_autograd_registration")
    if DEVICE.type == "cuda":
        checks += ("test_faketensor", "test_aot_dispatch_dynamic")
    for causal in (False, True):
        leaves64 = [t.double().requires_grad_(True) for t in (q, k, v)]
        out64 = attention_float64(*leaves64, causal)
        want = (out64.detach(), *torch.autograd.grad(out64, leaves64, do.double()))
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        out = attention(*leaves, causal)
        got = (out.detach(), *torch.autograd.grad(out, leaves, do))
        for name, g, r in zip(("o", "dq", "dk", "dv"), got, want, strict=True):
            torch.testing.assert_close(
                g.double(), r, rtol=tol, atol=tol,
                msg=lambda m, n=name, c=causal: f"causal={c}, {n}: {m}")
        torch.library.opcheck(_attention_fwd_op,
                              (q.clone().requires_grad_(True), k, v, causal, 0.25),
                              test_utils=checks)
    print(f"attention: o, dq, dk and dv match float64 autograd, causal and not; "
          f"opcheck {list(checks)} passed on {DEVICE.type}")
# --8<-- [end:autograd-checks]


# %% [markdown]
# ## In a model, under `torch.compile`
#
# A pre-norm causal self-attention block whose `q`, `k` and `v` are strided
# views of one projection, as in a real model, compiled with `fullgraph=True`
# and compared with eager mode: the output and every parameter's gradient.


# %%
# --8<-- [start:model]
class AttentionBlock(torch.nn.Module):
    def __init__(self, dim: int = 64, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm = torch.nn.LayerNorm(dim)
        self.qkv, self.out = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (batch, seq, dim)
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, s, 3, self.heads,
                                              d // self.heads).permute(2, 0, 3, 1, 4)
        o = attention(q, k, v, causal=True)  # (batch, heads, seq, dim / heads)
        return x + self.out(o.transpose(1, 2).reshape(b, s, d))


def check_model(batch: int = 2, seq: int = 50, dim: int = 64) -> None:
    torch.manual_seed(0)
    model = AttentionBlock(dim).to(DEVICE)
    x = torch.randn(batch, seq, dim, device=DEVICE)
    eager = model(x)
    eager.square().mean().backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    if DEVICE.type != "cuda":
        print("attention: block forward and backward ran eagerly "
              "(torch.compile of a triton_op needs a GPU)")
        return
    torch.compiler.reset()
    model.zero_grad()
    out = torch.compile(model, fullgraph=True)(x)
    out.square().mean().backward()
    torch.testing.assert_close(out, eager, rtol=2e-3, atol=2e-3)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad, grads[name], rtol=2e-3, atol=2e-3,
                                   msg=lambda m, n=name: f"{n}: {m}")
    print("attention: block under torch.compile(fullgraph=True) matches eager, "
          "output and gradients")
# --8<-- [end:model]


# %% [markdown]
# ## Check it
#
# Odd sequence lengths (one query, a ragged last block), causal and not, against
# the fp32 reference: the output, the log-sum-exp and the three gradients.


# %%
# --8<-- [start:check]
def self_check(seqs=(1, 33), head_dim=32) -> None:
    dtype = torch.float16 if DEVICE.type == "cuda" else torch.float32
    tol = 2e-2 if dtype == torch.float16 else 1e-4
    for seq in seqs:
        for causal in (False, True):
            q, k, v = (torch.randn(2, 1, seq, head_dim, device=DEVICE, dtype=dtype,
                                   requires_grad=True) for _ in range(3))
            do = torch.randn_like(q)
            out = attention(q, k, v, causal)
            out.backward(do)
            q32, k32, v32 = (t.detach().float().requires_grad_(True) for t in (q, k, v))
            ref = attention_torch(q32, k32, v32, causal)
            ref.backward(do.float())
            torch.testing.assert_close(out, ref.to(dtype), rtol=tol, atol=tol)
            for got, want in zip((q.grad, k.grad, v.grad),
                                 (q32.grad, k32.grad, v32.grad), strict=True):
                torch.testing.assert_close(got, want.to(dtype), rtol=tol, atol=tol)
    naive = attention_naive(q.detach(), k.detach(), v.detach(), True)
    torch.testing.assert_close(
        naive, attention_torch(q.detach(), k.detach(), v.detach(), True),
        rtol=tol, atol=tol)
    print(f"attention: fused forward, backward and the naive kernels match the fp32 "
          f"reference on {DEVICE.type} ({dtype}) for seq in {list(seqs)}, "
          f"head_dim {head_dim}, causal and not")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
    check_gradients()
    check_model()
