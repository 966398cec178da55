"""Tests for exercise 05: a tuple tl.reduce with a combine function of your own.

Run: pytest exercises/05_compute
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])


def check(impl, x):
    lo, hi = impl.row_minmax(x)
    want_lo, want_hi = impl.row_minmax_torch(x)
    assert_close(lo, want_lo, rtol=0, atol=0, equal_nan=True)
    assert_close(hi, want_hi, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_cols", [1, 17, 64, 1000, 1025])
def test_matches_torch(impl, device, dtype, n_cols):
    check(impl, torch.randn(6, n_cols, device=device, dtype=dtype))


def test_masked_lanes_change_nothing(impl, device):
    """Rows of only positive and only negative numbers, with a ragged tile: the
    padding must not win."""
    x = torch.rand(4, 17, device=device) + 1.0
    x[1::2] = -x[1::2]
    check(impl, x)


def test_nan_and_inf_like_torch(impl, device):
    x = torch.randn(4, 33, device=device)
    x[0, 5] = float("nan")  # NaN wins both
    x[1, 0], x[1, 32] = float("inf"), float("-inf")
    x[2] = float("-inf")
    check(impl, x)


@pytest.mark.parametrize("view", ["transposed", "padded rows", "strided columns"])
def test_views(impl, device, view):
    base = torch.randn(40, 40, device=device)
    x = {
        "transposed": base[:9].t(),
        "padded rows": base[:9, :30],
        "strided columns": base[:9, ::3],
    }[view]
    check(impl, x)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.row_minmax(torch.randn(3, 0, device=device))
    with pytest.raises(TypeError):
        impl.row_minmax(torch.ones(3, 4, dtype=torch.int32, device=device))
