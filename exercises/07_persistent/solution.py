"""Exercise 07, Persistent grids: clamp a 1-D tensor with a fixed number of programs.

y = clamp(x, lo, hi), launched on a grid of `num_programs` programs however long x is:
each program walks over the tiles with a grid-stride loop.
Write the body of `clamp_persistent_kernel`; the launcher `clamp_persistent` is
complete. Check your answer with `pytest exercises/07_persistent`.
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
def clamp_persistent_kernel(
    x_ptr,  # pointer to the contiguous input
    y_ptr,  # pointer to the contiguous output, same length and dtype
    lo,  # lower bound (fp32 scalar)
    hi,  # upper bound (fp32 scalar), lo <= hi
    n_elements,  # number of elements
    BLOCK_SIZE: tl.constexpr,  # elements per tile, a power of two
):
    """Write y = min(max(x, lo), hi) over every tile of BLOCK_SIZE elements.

    The grid is smaller than the number of tiles: program pid handles tiles pid,
    pid + P, pid + 2P, ... where P = tl.num_programs(0), until the tiles run out.
    Mask the ragged last tile. Compute in fp32 and store in y's dtype.
    """
    num_tiles = tl.cdiv(n_elements, BLOCK_SIZE)
    for tile in tl.range(tl.program_id(axis=0), num_tiles, tl.num_programs(axis=0)):
        offs = tile * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_elements
        x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
        y = tl.minimum(tl.maximum(x, lo), hi)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


def clamp_persistent(x: torch.Tensor, lo: float, hi: float, *, num_programs: int = 4,
                     block_size: int = 64) -> torch.Tensor:
    """clamp(x, lo, hi) for a contiguous 1-D float `x`, on at most `num_programs`
    programs."""
    _check_tensor("x", x, 1)
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{name} must be a Python number, got {type(v).__name__}")
    if not lo <= hi:
        raise ValueError(f"lo must be <= hi, got lo={lo}, hi={hi}")
    if not isinstance(num_programs, int) or num_programs < 1:
        raise ValueError(f"num_programs must be a positive int, got {num_programs!r}")
    _check_block("block_size", block_size)
    n = x.numel()
    if n >= 2**31 - block_size:  # int32 offsets, including the last tile's lanes
        raise ValueError(
            f"x has {n} elements: too many for this kernel's int32 offsets"
        )
    y = torch.empty_like(x)
    if n == 0:
        return y
    grid = (min(num_programs, triton.cdiv(n, block_size)),)  # never more than the tiles
    clamp_persistent_kernel[grid](x, y, float(lo), float(hi), n, BLOCK_SIZE=block_size)
    return y


def clamp_torch(x: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """The plain torch reference."""
    return torch.clamp(x, lo, hi)


if __name__ == "__main__":
    x = torch.randn(1000, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(clamp_persistent(x, -0.5, 0.5, num_programs=3),
                               clamp_torch(x, -0.5, 0.5), rtol=0, atol=0)
    print("clamp_persistent matches torch")
