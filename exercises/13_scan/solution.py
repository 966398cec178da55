"""Exercise 13, Scans: the exclusive prefix sum of each row.

y[i, j] = x[i, 0] + ... + x[i, j - 1].
Write the body of `exclusive_cumsum_kernel`; the launcher `exclusive_cumsum` is
complete. Check your answer with `pytest exercises/13_scan`.
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


MAX_COLS = 4096  # one tile per row, held in registers


# --8<-- [start:kernel]
@triton.jit
def exclusive_cumsum_kernel(
    x_ptr,  # pointer to x[0, 0]; columns are contiguous
    y_ptr,  # pointer to y[0, 0]; columns are contiguous
    n_cols,  # elements per row
    stride_xm,  # elements between the starts of two rows of x
    stride_ym,  # elements between the starts of two rows of y
    BLOCK_N: tl.constexpr,  # lanes per tile, a power of two >= n_cols
):
    """Write row `tl.program_id(0)` of the exclusive prefix sum.

    y[j] = x[0] + ... + x[j - 1], and y[0] = 0.

    One program per row, the whole row in one tile. tl.cumsum gives the inclusive
    prefix sum; turn it into the exclusive one. Masked lanes must add nothing.
    Accumulate in fp32 and store in y's dtype.
    """
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    y = tl.cumsum(x, axis=0) - x  # inclusive minus the element itself
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


def exclusive_cumsum(x: torch.Tensor) -> torch.Tensor:
    """The exclusive prefix sum along dim 1 of a 2-D float `x` whose columns are
    contiguous."""
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
    exclusive_cumsum_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0),
                                       BLOCK_N=triton.next_power_of_2(n_cols))
    return y


def exclusive_cumsum_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference, computed in float64 and rounded to x's dtype."""
    xd = x.double()
    return (torch.cumsum(xd, dim=1) - xd).to(x.dtype)


if __name__ == "__main__":
    x = torch.randn(5, 300, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(exclusive_cumsum(x), exclusive_cumsum_torch(x),
                               rtol=1e-5, atol=1e-4)
    print("exclusive_cumsum matches torch")
