"""Tests for exercise 04: add a row vector to a strided 2-D view.

Run: pytest exercises/04_strides
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (16, 32), (33, 65), (70, 19)])
def test_contiguous(impl, device, dtype, shape):
    x = torch.randn(*shape, device=device, dtype=dtype)
    b = torch.randn(shape[1], device=device, dtype=dtype)
    assert_close(impl.add_row(x, b), impl.add_row_torch(x, b), rtol=0, atol=0)


def views(device):
    base = torch.randn(41, 58, device=device)
    return {
        "transpose": base.t(),  # strides (1, 58)
        "every other row and third column": base[::2, 1::3],
        "column slice": base[3:40, 5:50],
        "expanded row (stride 0)": torch.randn(1, 29, device=device).expand(23, 29),
    }


@pytest.mark.parametrize("name", ["transpose", "every other row and third column",
                                  "column slice", "expanded row (stride 0)"])
def test_strided_views(impl, device, name):
    x = views(device)[name]
    b = torch.randn(2 * x.shape[1], device=device)[::2]  # b strided too
    y = impl.add_row(x, b)
    assert y.is_contiguous() and y.shape == x.shape
    assert_close(y, impl.add_row_torch(x, b), rtol=0, atol=0)


@pytest.mark.parametrize("block_m, block_n", [(16, 16), (32, 64), (64, 16)])
def test_tile_shapes(impl, device, block_m, block_n):
    x = torch.randn(50, 77, device=device).t()
    b = torch.randn(50, device=device)
    assert_close(impl.add_row(x, b, block_m=block_m, block_n=block_n),
                 impl.add_row_torch(x, b), rtol=0, atol=0)


def test_launcher_refuses_bad_input(impl, device):
    x = torch.randn(4, 5, device=device)
    with pytest.raises(ValueError):
        impl.add_row(x, torch.randn(4, device=device))
    with pytest.raises(TypeError):
        impl.add_row(x, torch.randn(5, device=device, dtype=torch.float16))
