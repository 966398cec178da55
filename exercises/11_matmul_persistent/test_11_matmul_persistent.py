"""Tests for exercise 11: a persistent tile loop for matmul.

Run: pytest exercises/11_matmul_persistent
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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (17, 33, 45), (64, 48, 80), (70, 19, 31)])
def test_matches_torch(impl, device, dtype, mkn):
    m, k, n = mkn
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(
        impl.matmul_persistent(a, b), impl.matmul_torch(a, b), rtol=rtol, atol=atol
    )


@pytest.mark.parametrize("num_programs", [1, 2, 3, 5, 100])
def test_every_tile_is_covered(impl, device, num_programs):
    """70 x 90 in 32 x 32 tiles is 3 x 3 = 9 tiles: with 1 to 5 programs some compute
    several; 100 programs are capped at 9 by the launcher, one tile each."""
    a = torch.randn(70, 24, device=device)
    b = torch.randn(24, 90, device=device)
    rtol, atol = TOL[torch.float32]
    assert_close(impl.matmul_persistent(a, b, num_programs=num_programs),
                 impl.matmul_torch(a, b), rtol=rtol, atol=atol)


def test_strided_inputs(impl, device):
    a = torch.randn(2 * 37, 29, device=device)[::2]
    b = torch.randn(43, 29, device=device).t()
    rtol, atol = TOL[torch.float32]
    assert_close(impl.matmul_persistent(a, b, num_programs=3), impl.matmul_torch(a, b),
                 rtol=rtol, atol=atol)


def test_non_square_tiles(impl, device):
    a = torch.randn(50, 40, device=device)
    b = torch.randn(40, 60, device=device)
    rtol, atol = TOL[torch.float32]
    out = impl.matmul_persistent(
        a, b, num_programs=2, block_m=16, block_n=64, block_k=32
    )
    assert_close(out, impl.matmul_torch(a, b), rtol=rtol, atol=atol)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.matmul_persistent(torch.randn(4, 5, device=device),
                               torch.randn(4, 5, device=device))
    with pytest.raises(ValueError):
        impl.matmul_persistent(torch.randn(4, 5, device=device),
                               torch.randn(5, 4, device=device), num_programs=0)
