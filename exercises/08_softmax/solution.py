"""Exercise 08, Fused softmax: softmax over each row, stable for large inputs.

Write the body of `softmax_kernel`; the launcher `softmax` is complete.
Check your answer with `pytest exercises/08_softmax`.
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
def softmax_kernel(
    x_ptr,  # pointer to x[0, 0]; columns are contiguous
    y_ptr,  # pointer to y[0, 0]; columns are contiguous
    n_cols,  # elements per row
    stride_xm,  # elements between the starts of two rows of x
    stride_ym,  # elements between the starts of two rows of y
    BLOCK_N: tl.constexpr,  # lanes per tile, a power of two >= n_cols
):
    """Write row `tl.program_id(0)` of y = softmax(x, dim=1).

    One program per row, the whole row in one tile. Subtract the row's maximum before
    exp so that large inputs do not overflow; masked lanes must contribute nothing to
    the maximum or the sum. Compute in fp32 and store in y's dtype.
    """
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=float("-inf"))
    x = x.to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)  # exp(-inf) = 0 on the masked lanes
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


def softmax(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=1) for a 2-D float `x` whose columns are contiguous."""
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
    softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0),
                              BLOCK_N=triton.next_power_of_2(n_cols))
    return y


def softmax_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference (fp32 arithmetic, rounded to x's dtype)."""
    return torch.softmax(x.float(), dim=1).to(x.dtype)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = 100.0 + torch.randn(4, 100, device=device)
    torch.testing.assert_close(softmax(x), softmax_torch(x))
    print("softmax matches torch")
