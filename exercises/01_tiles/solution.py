"""Exercise 01, Tiles and programs: reverse a 1-D tensor, y[i] = x[n - 1 - i].

Write the body of `reverse_kernel`; the launcher `reverse` is complete.
Check your answer with `pytest exercises/01_tiles`.
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
def reverse_kernel(
    x_ptr,  # pointer to the contiguous input
    y_ptr,  # pointer to the contiguous output, same length and dtype
    n_elements,  # number of elements in x and y
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    """Write y[i] = x[n_elements - 1 - i] for the tile of y this program owns.

    One program per tile of BLOCK_SIZE output elements: program pid owns
    y[pid * BLOCK_SIZE : (pid + 1) * BLOCK_SIZE]. The elements of x it needs are
    found by arithmetic on the tile's offsets. The last tile is ragged: lanes at or
    past n_elements must not be loaded or stored.
    """
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # the tile of y it owns
    mask = offs < n_elements
    x = tl.load(x_ptr + (n_elements - 1 - offs), mask=mask)  # mirrored elements
    tl.store(y_ptr + offs, x, mask=mask)
# --8<-- [end:kernel]


def reverse(x: torch.Tensor, block_size: int = 128) -> torch.Tensor:
    """Return x reversed, for a contiguous 1-D float tensor `x`."""
    _check_tensor("x", x, 1)
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    _check_block("block_size", block_size)
    n = x.numel()
    if n >= 2**31:  # int32 offsets
        raise ValueError(
            f"x has {n} elements, more than 2**31 - 1: "
            "this kernel computes int32 offsets"
        )
    y = torch.empty_like(x)
    if n == 0:
        return y
    reverse_kernel[(triton.cdiv(n, block_size),)](x, y, n, BLOCK_SIZE=block_size)
    return y


def reverse_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return torch.flip(x, dims=(0,))


if __name__ == "__main__":
    x = torch.randn(1000, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(reverse(x), reverse_torch(x), rtol=0, atol=0)
    print("reverse matches torch")
