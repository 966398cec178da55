"""Tests for exercise 10: the bias + GELU epilogue of a matmul.

Run: pytest exercises/10_linear_gelu
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


def inputs(m, k, n, device, dtype):
    x = torch.randn(m, k, device=device, dtype=dtype)
    w = (torch.randn(k, n, device=device) / k**0.5).to(dtype)  # x @ w near unit scale
    bias = torch.randn(n, device=device, dtype=dtype)
    return x, w, bias


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "mkn", [(1, 1, 1), (16, 16, 16), (17, 33, 45), (64, 48, 80), (31, 70, 19)]
)
def test_matches_torch(impl, device, dtype, mkn):
    x, w, bias = inputs(*mkn, device, dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.linear_gelu(x, w, bias), impl.linear_gelu_torch(x, w, bias),
                 rtol=rtol, atol=atol)


def test_bias_matters(impl, device):
    """A large bias pushes every column into GELU's linear (positive) or zero
    (negative) region."""
    x, w, _ = inputs(20, 24, 40, device, torch.float32)
    bias = torch.where(torch.arange(40, device=device) % 2 == 0, 8.0, -8.0)
    rtol, atol = TOL[torch.float32]
    assert_close(impl.linear_gelu(x, w, bias), impl.linear_gelu_torch(x, w, bias),
                 rtol=rtol, atol=atol)


def test_strided_inputs(impl, device):
    """x is a transpose, w every other column of a wider matrix, bias a strided
    slice."""
    x = torch.randn(30, 21, device=device).t()
    w = torch.randn(30, 2 * 35, device=device)[:, ::2] / 5
    bias = torch.randn(3 * 35, device=device)[::3]
    rtol, atol = TOL[torch.float32]
    assert_close(impl.linear_gelu(x, w, bias), impl.linear_gelu_torch(x, w, bias),
                 rtol=rtol, atol=atol)


def test_launcher_refuses_bad_input(impl, device):
    x, w, bias = inputs(4, 5, 6, device, torch.float32)
    with pytest.raises(ValueError):
        impl.linear_gelu(x, w, bias[:5])
    with pytest.raises(TypeError):
        impl.linear_gelu(x, w, bias.half())
