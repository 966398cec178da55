"""Exercise 05, Compute inside a tile: the min and the max of each row in one pass.

(lo, hi) = (x.amin(dim=1), x.amax(dim=1)) for a 2-D `x` of any strides, with one
`tl.reduce` over a pair of blocks and a combine function of your own.
Write the bodies of `minmax_combine` and `row_minmax_kernel`; the launcher
`row_minmax` is complete. Check your answer with `pytest exercises/05_compute`.
"""

import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_COLS = 16384  # one tile per row


# --8<-- [start:kernel]
@triton.jit
def minmax_combine(lo1, hi1, lo2, hi2):
    """Combine two (min, max) pairs into one.

    NaN must win, as in torch.amin and torch.amax.
    """
    # TODO: return the (min, max) pair that combines both; NaN must win.
    return lo1, hi1


@triton.jit
def row_minmax_kernel(
    x_ptr,  # pointer to an (n_rows, n_cols) input, any strides
    lo_ptr,  # pointer to the (n_rows,) output of row minima, x's dtype
    hi_ptr,  # pointer to the (n_rows,) output of row maxima, x's dtype
    n_cols,
    stride_row, stride_col,
    BLOCK_N: tl.constexpr,  # a power of two >= n_cols
):
    """One program per row: the minimum and the maximum of the row.

    Load the row (masked lanes must change neither result), compute in fp32,
    reduce the pair (x, x) with `tl.reduce((a, b), 0, minmax_combine)` and
    store both.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel writes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def row_minmax(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(min, max) of each row of a 2-D float `x` of any strides."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"x must be float16, bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D, got shape {tuple(x.shape)}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            "x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
            "(Triton's interpreter)"
        )
    n_rows, n_cols = x.shape
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x must have 1 to {MAX_COLS} columns, got {n_cols}")
    lo = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    hi = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    if n_rows:
        row_minmax_kernel[(n_rows,)](x, lo, hi, n_cols, x.stride(0), x.stride(1),
                                     BLOCK_N=triton.next_power_of_2(n_cols))
    return lo, hi


def row_minmax_torch(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain torch reference."""
    return x.amin(dim=1), x.amax(dim=1)


if __name__ == "__main__":
    x = torch.randn(5, 1000, device="cuda" if torch.cuda.is_available() else "cpu")
    for got, want in zip(row_minmax(x), row_minmax_torch(x), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    print("row_minmax matches torch")
