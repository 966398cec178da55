"""Tests for exercise 09: tiled matmul with tl.dot.

Run: pytest exercises/09_matmul
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
@pytest.mark.parametrize(
    "mkn", [(1, 1, 1), (16, 16, 16), (17, 33, 45), (64, 48, 80), (31, 70, 19)]
)
def test_matches_torch(impl, device, dtype, mkn):
    m, k, n = mkn
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(impl.matmul(a, b), impl.matmul_torch(a, b), rtol=rtol, atol=atol)


def test_strided_inputs(impl, device):
    """A is every other column of a wider matrix; B is a transpose (column-major)."""
    a = torch.randn(37, 2 * 29, device=device)[:, ::2]
    b = torch.randn(43, 29, device=device).t()
    rtol, atol = TOL[torch.float32]
    assert_close(impl.matmul(a, b), impl.matmul_torch(a, b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("blocks", [(16, 16, 16), (32, 16, 32), (16, 64, 16)])
def test_tile_shapes(impl, device, blocks):
    bm, bn, bk = blocks
    a = torch.randn(40, 50, device=device)
    b = torch.randn(50, 36, device=device)
    rtol, atol = TOL[torch.float32]
    assert_close(impl.matmul(a, b, block_m=bm, block_n=bn, block_k=bk),
                 impl.matmul_torch(a, b), rtol=rtol, atol=atol)


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.matmul(torch.randn(4, 5, device=device), torch.randn(4, 5, device=device))
    with pytest.raises(ValueError):
        impl.matmul(torch.randn(4, 5, device=device), torch.randn(5, 4, device=device),
                    block_k=8)
