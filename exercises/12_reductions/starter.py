"""Exercise 12, Reductions: the sum of each row, for rows of any length.

Write the body of `row_sum_kernel`; the launcher `row_sum` is complete.
Check your answer with `pytest exercises/12_reductions`.
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


def _check_block(name: str, v: int) -> None:
    if not isinstance(v, int) or v <= 0 or v & (v - 1):
        raise ValueError(f"{name} must be a positive power of two, got {v!r}")


# --8<-- [start:kernel]
@triton.jit
def row_sum_kernel(
    x_ptr,  # pointer to x[0, 0]
    out_ptr,  # pointer to the contiguous (n_rows,) output
    n_cols,  # elements per row
    stride_xm, stride_xn,  # x[i, j] is at x_ptr + i * stride_xm + j * stride_xn
    BLOCK_N: tl.constexpr,  # columns per step, a power of two; rows may be longer
):
    """Write out[row] = sum of row `tl.program_id(0)` of x.

    One program per row. The row may be longer than BLOCK_N: walk it in chunks of
    BLOCK_N columns, adding each chunk into an fp32 accumulator of BLOCK_N lanes
    (masked lanes must add 0), then reduce the accumulator with tl.sum and store
    the total in out's dtype.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel changes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def row_sum(x: torch.Tensor, *, block_n: int = 64) -> torch.Tensor:
    """x.sum(dim=1) for a 2-D float `x` with any strides, accumulated in fp32."""
    _check_tensor("x", x, 2)
    _check_block("block_n", block_n)
    n_rows, n_cols = x.shape
    if min(x.stride()) < 0:
        raise ValueError(f"x has a negative stride {x.stride()}: not supported")
    # past the last chunk's lanes
    last = (n_rows - 1) * x.stride(0) + (n_cols - 1 + block_n) * x.stride(1)
    if n_rows * n_cols >= 2**31 or last >= 2**31:  # int32 offsets
        raise ValueError("x is too large for this kernel's int32 offsets")
    out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    if n_rows == 0:
        return out
    if n_cols == 0:
        return out.zero_()
    row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), BLOCK_N=block_n)
    return out


def row_sum_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference, computed in float64 and rounded to x's dtype."""
    return x.double().sum(dim=1).to(x.dtype)


if __name__ == "__main__":
    x = torch.randn(5, 300, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(row_sum(x), row_sum_torch(x), rtol=1e-5, atol=1e-4)
    print("row_sum matches torch")
