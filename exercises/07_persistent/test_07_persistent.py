"""Tests for exercise 07: a grid-stride loop with a fixed number of programs.

Run: pytest exercises/07_persistent
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4097])
def test_matches_torch(impl, device, dtype, n):
    x = torch.randn(n, device=device, dtype=dtype)
    assert_close(impl.clamp_persistent(x, -0.5, 0.75), impl.clamp_torch(x, -0.5, 0.75),
                 rtol=0, atol=0)


@pytest.mark.parametrize("num_programs", [1, 2, 3, 7, 1000])
def test_every_tile_is_covered(impl, device, num_programs):
    """Far more tiles than programs: each program must loop over its share."""
    x = torch.randn(2001, device=device)  # 32 tiles of 64
    assert_close(impl.clamp_persistent(x, -1.0, 1.0, num_programs=num_programs),
                 impl.clamp_torch(x, -1.0, 1.0), rtol=0, atol=0)


@pytest.mark.parametrize("block_size", [16, 256])
def test_block_sizes(impl, device, block_size):
    x = torch.randn(999, device=device)
    assert_close(
        impl.clamp_persistent(x, 0.0, 0.5, num_programs=3, block_size=block_size),
        impl.clamp_torch(x, 0.0, 0.5), rtol=0, atol=0,
    )


def test_launcher_refuses_bad_input(impl, device):
    x = torch.randn(10, device=device)
    with pytest.raises(ValueError):
        impl.clamp_persistent(x, 1.0, -1.0)
    with pytest.raises(ValueError):
        impl.clamp_persistent(x, -1.0, 1.0, num_programs=0)
