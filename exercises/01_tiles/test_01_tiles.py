"""Tests for exercise 01: reverse a vector.

Run: pytest exercises/01_tiles
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 17, 127, 128, 129, 1000, 3001])
def test_reverse_matches_torch(impl, device, dtype, n):
    x = torch.randn(n, device=device, dtype=dtype)
    assert_close(impl.reverse(x), impl.reverse_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("block_size", [16, 32, 1024])
def test_block_sizes(impl, device, block_size):
    x = torch.arange(777, device=device, dtype=torch.float32)
    assert_close(
        impl.reverse(x, block_size=block_size), impl.reverse_torch(x), rtol=0, atol=0
    )


def test_reverse_twice_is_identity(impl, device):
    x = torch.randn(515, device=device)
    assert_close(impl.reverse(impl.reverse(x)), x, rtol=0, atol=0)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.reverse(torch.randn(10, 2, device=device)[:, 0])  # a strided view
    with pytest.raises(ValueError):
        impl.reverse(torch.randn(3, 3, device=device))
