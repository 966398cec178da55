"""Exercise 02, Launching a kernel: y = a * x + b on a 1-D tensor.

Write the body of `axpb_kernel`; the launcher `axpb` is complete.
Check your answer with `pytest exercises/02_launching`.
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
def axpb_kernel(
    x_ptr,  # pointer to the contiguous input
    y_ptr,  # pointer to the contiguous output, same length and dtype
    a,  # scalar, passed by value (fp32)
    b,  # scalar, passed by value (fp32)
    n_elements,  # number of elements in x and y
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    """Write y = a * x + b for the elements this program owns.

    The launcher starts cdiv(n_elements, BLOCK_SIZE) programs on a 1-D grid. Program
    `tl.program_id(0)` owns the BLOCK_SIZE consecutive elements starting at
    pid * BLOCK_SIZE; lanes at or past n_elements must not be loaded or stored.
    Compute in fp32 and store in y's dtype.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel changes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def axpb(x: torch.Tensor, a: float, b: float, block_size: int = 256) -> torch.Tensor:
    """Return a * x + b for a contiguous 1-D float tensor `x`, one program per
    block_size elements."""
    _check_tensor("x", x, 1)
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    for name, v in (("a", a), ("b", b)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name} must be a Python number, got {type(v).__name__}")
    _check_block("block_size", block_size)
    n = x.numel()
    if n >= 2**31:  # pid * BLOCK_SIZE + arange is int32 arithmetic
        raise ValueError(
            f"x has {n} elements, more than 2**31 - 1: "
            "this kernel computes int32 offsets"
        )
    y = torch.empty_like(x)
    if n == 0:
        return y
    grid = (triton.cdiv(n, block_size),)  # one program per tile, the last one ragged
    axpb_kernel[grid](x, y, float(a), float(b), n, BLOCK_SIZE=block_size)
    return y


def axpb_torch(x: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """The plain torch reference (fp32 arithmetic, rounded to x's dtype)."""
    return (a * x.float() + b).to(x.dtype)


if __name__ == "__main__":
    x = torch.randn(1000, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(axpb(x, 2.5, -1.0), axpb_torch(x, 2.5, -1.0))
    print("axpb matches torch")
