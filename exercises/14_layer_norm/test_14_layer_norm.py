"""Tests for exercise 14: the layer norm forward.

Run: pytest exercises/14_layer_norm
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
TOL = {
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}


def params(n, device, dtype):
    return (torch.randn(n, device=device, dtype=dtype),
            torch.randn(n, device=device, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_cols", [1, 3, 17, 100, 781, 1025])
def test_matches_torch(impl, device, dtype, n_cols):
    x = torch.randn(6, n_cols, device=device, dtype=dtype)
    w, b = params(n_cols, device, dtype)
    rtol, atol = TOL[dtype]
    assert_close(
        impl.layer_norm(x, w, b), impl.layer_norm_torch(x, w, b), rtol=rtol, atol=atol
    )


@pytest.mark.parametrize("n_cols", [5, 100, 1000])
def test_mean_and_rstd(impl, device, n_cols):
    """The fp32 statistics of each row, as a backward pass would read them."""
    x = 3 * torch.randn(7, n_cols, device=device) + 2
    w, b = params(n_cols, device, torch.float32)
    _, mean, rstd = impl.layer_norm_with_stats(x, w, b)
    want_mean, want_rstd = impl.stats_torch(x)
    assert_close(mean, want_mean, rtol=1e-5, atol=1e-5)
    assert_close(rstd, want_rstd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_cols", [3, 100, 1000])
def test_large_mean_small_spread(impl, device, n_cols):
    """Rows near 100 that vary by about 0.1: in fp32, E[x^2] - E[x]^2 loses most
    digits of the variance (two numbers near 10000 whose difference is 0.01); the mean
    of (x - mean)^2 keeps them."""
    x = 100 + 0.1 * torch.randn(4, n_cols, device=device)
    w, b = params(n_cols, device, torch.float32)
    assert_close(
        impl.layer_norm(x, w, b), impl.layer_norm_torch(x, w, b), rtol=1e-2, atol=1e-2
    )


@pytest.mark.parametrize("eps", [1e-5, 0.1])
def test_eps_and_a_constant_row(impl, device, eps):
    """A constant row has variance 0: eps alone keeps 1 / sqrt(var + eps) finite."""
    x = torch.randn(3, 40, device=device)
    x[1] = 7.0
    w, b = params(40, device, torch.float32)
    assert_close(impl.layer_norm(x, w, b, eps), impl.layer_norm_torch(x, w, b, eps),
                 rtol=1e-5, atol=1e-5)


def test_strided_rows_and_leading_dims(impl, device):
    """Rows 60 elements apart (a column slice), and a 3-D input normalized over its
    last dimension."""
    x = torch.randn(9, 60, device=device)[:, 5:50]
    w, b = params(45, device, torch.float32)
    assert_close(
        impl.layer_norm(x, w, b), impl.layer_norm_torch(x, w, b), rtol=1e-5, atol=1e-5
    )
    x3 = torch.randn(2, 5, 33, device=device)
    w, b = params(33, device, torch.float32)
    assert_close(impl.layer_norm(x3, w, b), impl.layer_norm_torch(x3, w, b),
                 rtol=1e-5, atol=1e-5)


def test_launcher_refuses_bad_input(impl, device):
    x = torch.randn(4, 8, device=device)
    w, b = params(8, device, torch.float32)
    with pytest.raises(ValueError):
        impl.layer_norm(x, w[:5], b[:5])
    with pytest.raises(TypeError):
        impl.layer_norm(x, w.half(), b)
