"""Exercise 03, Masks: subtract each row's minimum, y = x - x.min(dim=1, keepdim=True).

Write the body of `sub_row_min_kernel`; the launcher `sub_row_min` is complete.
Check your answer with `pytest exercises/03_masks`.
"""

import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_tensor(name: str, t, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
            "(Triton's interpreter)"
        )


MAX_COLS = 8192  # one tile per row, held in registers


# --8<-- [start:kernel]
@triton.jit
def sub_row_min_kernel(
    x_ptr,  # pointer to x[0, 0]; rows may be padded (stride_xm >= n_cols);
            # columns are contiguous
    y_ptr,  # pointer to the contiguous (n_rows, n_cols) output
    n_cols,  # elements per row
    stride_xm,  # elements between the starts of two rows of x
    BLOCK_N: tl.constexpr,  # lanes per tile, a power of two >= n_cols
):
    """Write row `tl.program_id(0)` of y: that row of x minus the row's minimum.

    One program per row, the whole row in one tile of BLOCK_N lanes. The lanes at or
    past n_cols are masked off: choose what a masked load gives them (`other=`) so
    that they can never be the minimum, and do not store them.
    """
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=float("inf"))
    x = x.to(tl.float32)
    y = x - tl.min(x, axis=0)
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


def sub_row_min(x: torch.Tensor) -> torch.Tensor:
    """x minus each row's minimum, for a 2-D float `x` whose columns are contiguous."""
    _check_tensor("x", x, 2)
    n_rows, n_cols = x.shape
    if x.stride(1) != 1 and n_cols > 1:
        raise ValueError(
            f"x's columns must be contiguous (stride(1) == 1), got stride {x.stride()}"
        )
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x must have 1 to {MAX_COLS} columns, got {n_cols}")
    if n_rows * max(x.stride(0), n_cols) >= 2**31:  # int32 offsets
        raise ValueError("x is too large for this kernel's int32 offsets")
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    if n_rows == 0:
        return y
    block_n = triton.next_power_of_2(n_cols)
    sub_row_min_kernel[(n_rows,)](x, y, n_cols, x.stride(0), BLOCK_N=block_n)
    return y


def sub_row_min_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference (fp32 arithmetic, rounded to x's dtype)."""
    xf = x.float()
    return (xf - xf.amin(dim=1, keepdim=True)).to(x.dtype)


if __name__ == "__main__":
    x = torch.rand(5, 100, device="cuda" if torch.cuda.is_available() else "cpu") + 1.0
    torch.testing.assert_close(sub_row_min(x), sub_row_min_torch(x), rtol=0, atol=0)
    print("sub_row_min matches torch")
