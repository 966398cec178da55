"""Tests for exercise 12: row sums with tl.sum.

Run: pytest exercises/12_reductions
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
    torch.bfloat16: (2e-2, 2e-2),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_cols", [1, 17, 64, 65, 300, 1025])
def test_matches_torch(impl, device, dtype, n_cols):
    x = torch.randn(6, n_cols, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.row_sum(x), impl.row_sum_torch(x), rtol=rtol, atol=atol)


@pytest.mark.parametrize("block_n", [16, 32, 128, 2048])
def test_block_sizes(impl, device, block_n):
    """Rows longer and shorter than one chunk."""
    x = torch.randn(4, 700, device=device)
    assert_close(
        impl.row_sum(x, block_n=block_n), impl.row_sum_torch(x), rtol=1e-5, atol=1e-4
    )


def test_strided_views(impl, device):
    base = torch.randn(60, 90, device=device)
    expanded = torch.randn(1, 77, device=device).expand(5, 77)
    for x in (base.t(), base[1::3, ::2], expanded):
        assert_close(impl.row_sum(x), impl.row_sum_torch(x), rtol=1e-5, atol=1e-4)


def test_all_positive_values(impl, device):
    # a sum near 500: fp16 accumulation would drift
    x = torch.rand(3, 1000, device=device, dtype=torch.float16)
    assert_close(impl.row_sum(x), impl.row_sum_torch(x), rtol=1e-3, atol=1e-3)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.row_sum(torch.randn(10, device=device))
    with pytest.raises(ValueError):
        impl.row_sum(torch.randn(3, 10, device=device), block_n=48)
