"""Tests for exercise 02: y = a * x + b.

Run: pytest exercises/02_launching
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
@pytest.mark.parametrize("n", [1, 17, 255, 256, 257, 1000, 4099])
def test_axpb_matches_torch(impl, device, dtype, n):
    x = torch.randn(n, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(
        impl.axpb(x, 2.5, -0.75), impl.axpb_torch(x, 2.5, -0.75), rtol=rtol, atol=atol
    )


@pytest.mark.parametrize("block_size", [16, 64, 1024])
def test_block_sizes(impl, device, block_size):
    x = torch.randn(333, device=device)
    assert_close(
        impl.axpb(x, -3.0, 1.0, block_size=block_size), impl.axpb_torch(x, -3.0, 1.0)
    )


def test_output_is_new_and_input_untouched(impl, device):
    x = torch.randn(100, device=device)
    before = x.clone()
    y = impl.axpb(x, 0.0, 4.0)
    assert_close(y, torch.full_like(x, 4.0))
    assert_close(x, before, rtol=0, atol=0)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.axpb(torch.randn(10, 2, device=device)[:, 0], 1.0, 0.0)  # a strided view
    with pytest.raises(TypeError):
        impl.axpb(torch.arange(10, device=device), 1.0, 0.0)
    with pytest.raises(ValueError):
        impl.axpb(torch.randn(10, device=device), 1.0, 0.0, block_size=100)
