"""Exercise 16, Fused attention: softmax(q @ k^T * scale) @ v in one kernel.

For a short sequence: every key and value fits in one tile.
Write the body of `attention_kernel`; the launcher `attention` is complete.
Check your answer with `pytest exercises/16_attention`.
"""

import math
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_tensor(name: str, t, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
            "(Triton's interpreter)"
        )


MAX_SEQ = 256  # every key and value of a sequence in one tile
MAX_HEAD_DIM = 128
MAX_GRID_YZ = 65_535  # CUDA's limit on grid axis 1


# --8<-- [start:kernel]
@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,  # each (batch * heads, seq, head_dim), contiguous
    seq_len,  # queries and keys per (batch, head)
    head_dim,  # elements per query, key and value vector
    sm_scale,  # the softmax scale, usually 1 / sqrt(head_dim)
    BLOCK_M: tl.constexpr,  # queries per program, a power of two >= 16
    BLOCK_N: tl.constexpr,  # a power of two >= seq_len: every key in one tile
    BLOCK_D: tl.constexpr,  # a power of two >= head_dim (and >= 16)
    CAUSAL: tl.constexpr,  # True: query i attends to keys 0..i only
):
    """Write query block `program_id(0)` of o for (batch, head) `program_id(1)`.

    One program holds its queries and all of the sequence's keys and values, so no
    loop is needed: scores s = q @ k^T * sm_scale (BLOCK_M x BLOCK_N, fp32), a row
    softmax of s, then o = p @ v. Keys past seq_len (and, when CAUSAL, keys after
    the query) must get probability 0; padding lanes of head_dim must load 0.
    Store o in o's dtype, masked to seq_len rows and head_dim columns.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel writes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              sm_scale: float | None = None, *, block_m: int = 16) -> torch.Tensor:
    """softmax(q @ k^T * sm_scale) @ v for q, k, v of shape
    (batch, heads, seq, head_dim), seq <= 256; sm_scale defaults to
    1 / sqrt(head_dim)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_tensor(name, t, 4)
    if not q.shape == k.shape == v.shape:
        raise ValueError(f"q, k and v must have one shape, got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"q, k and v must have one dtype, got {q.dtype}, {k.dtype}, {v.dtype}"
        )
    batch, heads, seq_len, head_dim = q.shape
    if not 1 <= seq_len <= MAX_SEQ:
        raise ValueError(f"this kernel holds the whole sequence: 1 to {MAX_SEQ} "
                         f"positions, got {seq_len}")
    if not 1 <= head_dim <= MAX_HEAD_DIM:
        raise ValueError(f"head_dim must be 1 to {MAX_HEAD_DIM}, got {head_dim}")
    if block_m < 16 or block_m & (block_m - 1):
        raise ValueError("block_m must be a power of two >= 16 "
                         f"(tl.dot's smallest tile), got {block_m}")
    if batch * heads > MAX_GRID_YZ:
        raise ValueError(
            f"batch x heads = {batch * heads}: at most {MAX_GRID_YZ} (one grid axis)"
        )
    if q.numel() >= 2**31:  # int32 offsets
        raise ValueError("q is too large for this kernel's int32 offsets")
    scale = 1.0 / math.sqrt(head_dim) if sm_scale is None else float(sm_scale)
    q3, k3, v3 = (
        t.reshape(batch * heads, seq_len, head_dim).contiguous() for t in (q, k, v)
    )
    o = torch.empty_like(q3)
    if q3.numel() > 0:
        grid = (triton.cdiv(seq_len, block_m), batch * heads)
        attention_kernel[grid](q3, k3, v3, o, seq_len, head_dim, scale, BLOCK_M=block_m,
                               BLOCK_N=max(16, triton.next_power_of_2(seq_len)),
                               BLOCK_D=max(16, triton.next_power_of_2(head_dim)),
                               CAUSAL=causal)
    return o.reshape(q.shape)


def attention_torch(
    q, k, v, causal: bool = False, sm_scale: float | None = None
) -> torch.Tensor:
    """The plain torch reference: fp32 maths, result in q's dtype."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        future = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1)
        s = s.masked_fill(future, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    q, k, v = (torch.randn(2, 3, 50, 32, device=device) for _ in range(3))
    torch.testing.assert_close(attention(q, k, v, causal=True),
                               attention_torch(q, k, v, causal=True),
                               rtol=1e-2, atol=1e-2)
    print("attention matches torch")
