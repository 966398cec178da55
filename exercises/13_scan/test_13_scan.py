"""Tests for exercise 13: exclusive prefix sums with tl.cumsum.

Run: pytest exercises/13_scan
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
TOL = {
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 5e-2),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_cols", [1, 2, 17, 64, 300, 1025])
def test_matches_torch(impl, device, dtype, n_cols):
    x = torch.randn(5, n_cols, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.exclusive_cumsum(x), impl.exclusive_cumsum_torch(x),
                 rtol=rtol, atol=atol)


def test_first_column_is_zero_and_ones_count(impl, device):
    """Over a row of ones the exclusive sum is 0, 1, 2, ...: the inclusive one would
    be off by one."""
    x = torch.ones(3, 100, device=device)
    expected = torch.arange(100, device=device, dtype=torch.float32).expand(3, 100)
    assert_close(impl.exclusive_cumsum(x), expected, rtol=0, atol=0)


def test_strided_rows(impl, device):
    wide = torch.randn(11, 130, device=device)
    x = wide[::2, 7:120]  # rows 260 elements apart, 113 used
    assert_close(impl.exclusive_cumsum(x), impl.exclusive_cumsum_torch(x),
                 rtol=1e-5, atol=1e-4)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.exclusive_cumsum(torch.randn(8, 6, device=device).t())
    with pytest.raises(ValueError):
        impl.exclusive_cumsum(torch.randn(2, 5000, device=device))
