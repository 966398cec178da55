"""Tests for exercise 08: row softmax.

Run: pytest exercises/08_softmax
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
TOL = {
    torch.float32: (1e-5, 1e-6),
    torch.float16: (1e-3, 1e-4),
    torch.bfloat16: (1e-2, 1e-3),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_cols", [1, 7, 64, 100, 781, 1025])
def test_matches_torch(impl, device, dtype, n_cols):
    x = torch.randn(5, n_cols, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.softmax(x), impl.softmax_torch(x), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shift", [100.0, -100.0])
def test_large_inputs_do_not_overflow(impl, device, dtype, shift):
    """exp(100) overflows fp32: only a softmax that subtracts the row max survives."""
    x = (shift + 3 * torch.randn(4, 300, device=device)).to(dtype)
    y = impl.softmax(x)
    assert torch.isfinite(y).all()
    rtol, atol = TOL[dtype]
    assert_close(y, impl.softmax_torch(x), rtol=rtol, atol=atol)


def test_strided_rows(impl, device):
    """Rows 90 elements apart, 70 used: every other row of a wider tensor."""
    wide = torch.randn(12, 90, device=device)
    x = wide[::2, 10:80]
    assert_close(impl.softmax(x), impl.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_rows_sum_to_one(impl, device):
    y = impl.softmax(torch.randn(9, 333, device=device))
    assert_close(y.sum(dim=1), torch.ones(9, device=device))


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.softmax(torch.randn(8, 6, device=device).t())
    with pytest.raises(ValueError):
        impl.softmax(torch.randn(2, 10_000, device=device))
