"""Tests for exercise 16: single-block fused attention.

Run: pytest exercises/16_attention
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
# fp32 tl.dot may run as tf32 on a GPU (10-bit mantissa); the interpreter: true fp32.
TOL = {
    torch.float32: (1e-2, 1e-2) if ON_GPU else (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}


def qkv(shape, device, dtype=torch.float32):
    return tuple(torch.randn(shape, device=device, dtype=dtype) for _ in range(3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq", [1, 17, 50, 128])
def test_matches_torch(impl, device, dtype, causal, seq):
    q, k, v = qkv((2, 3, seq, 32), device, dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.attention(q, k, v, causal), impl.attention_torch(q, k, v, causal),
                 rtol=rtol, atol=atol)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [16, 24, 64])
def test_head_dims(impl, device, causal, head_dim):
    """24 is not a power of two: its padding lanes must load 0 and not be stored."""
    q, k, v = qkv((1, 2, 33, head_dim), device)
    rtol, atol = TOL[torch.float32]
    assert_close(impl.attention(q, k, v, causal), impl.attention_torch(q, k, v, causal),
                 rtol=rtol, atol=atol)


@pytest.mark.parametrize("block_m", [16, 32, 64])
def test_query_blocks(impl, device, block_m):
    """Several query blocks per (batch, head), the last one ragged; causal, so each
    block sees a different number of keys."""
    q, k, v = qkv((2, 1, 100, 16), device)
    rtol, atol = TOL[torch.float32]
    out = impl.attention(q, k, v, True, block_m=block_m)
    assert_close(out, impl.attention_torch(q, k, v, True), rtol=rtol, atol=atol)


def test_scale_and_large_scores(impl, device):
    """Scores in the hundreds overflow exp in fp32 unless each row's maximum is
    subtracted first."""
    q, k, v = qkv((1, 2, 40, 32), device)
    # a GPU's tf32 dot rounds the scores, and the scale multiplies that error by 10
    rtol, atol = (1e-1, 1e-1) if ON_GPU else TOL[torch.float32]
    out = impl.attention(q, k, v, sm_scale=10.0)
    assert out.isfinite().all(), (
        "non-finite outputs: subtract the row maximum before exp"
    )
    assert_close(out, impl.attention_torch(q, k, v, sm_scale=10.0),
                 rtol=rtol, atol=atol)


def test_strided_inputs(impl, device):
    """q a transpose of (batch, seq, heads, head_dim), as a model often holds it."""
    q = torch.randn(2, 45, 3, 16, device=device).transpose(1, 2)
    _, k, v = qkv((2, 3, 45, 16), device)
    rtol, atol = TOL[torch.float32]
    assert_close(
        impl.attention(q, k, v), impl.attention_torch(q, k, v), rtol=rtol, atol=atol
    )


def test_launcher_refuses_bad_input(impl, device):
    q, k, v = qkv((1, 1, 8, 16), device)
    with pytest.raises(ValueError):
        impl.attention(q, k[:, :, :4], v)
    with pytest.raises(ValueError):
        impl.attention(*qkv((1, 1, 300, 16), device))
    with pytest.raises(TypeError):
        impl.attention(q, k.half(), v)
