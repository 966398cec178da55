"""Tests for exercise 03: subtract each row's minimum.

Run: pytest exercises/03_masks
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
TOL = {
    torch.float32: (1e-6, 1e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_cols", [1, 3, 17, 64, 100, 1025])
def test_matches_torch(impl, device, dtype, n_cols):
    x = torch.randn(6, n_cols, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.sub_row_min(x), impl.sub_row_min_torch(x), rtol=rtol, atol=atol)


@pytest.mark.parametrize("n_cols", [3, 17, 100])
def test_all_positive_rows(impl, device, n_cols):
    """Every value above 1: a masked lane read as 0.0 would be taken for the minimum."""
    x = torch.rand(5, n_cols, device=device) + 1.0
    assert_close(impl.sub_row_min(x), impl.sub_row_min_torch(x), rtol=0, atol=0)


def test_padded_rows(impl, device):
    """A column slice: rows start 50 elements apart; lanes past 37 hold other data."""
    wide = torch.randn(7, 50, device=device)
    wide[:, 37:] = -1e6  # would win the min if read
    x = wide[:, :37]
    assert not x.is_contiguous()
    assert_close(impl.sub_row_min(x), impl.sub_row_min_torch(x), rtol=0, atol=0)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.sub_row_min(torch.randn(8, 6, device=device).t())  # columns not contiguous
    with pytest.raises(ValueError):
        impl.sub_row_min(torch.randn(8, device=device))
