"""Exercise 15, Dropout: zero each element with probability p.

The dropped elements follow from a seed, without storing a mask.
Write the body of `dropout_kernel`; the launcher `dropout` is complete.
Check your answer with `pytest exercises/15_dropout`.
"""

import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_tensor(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
            "(Triton's interpreter)"
        )


# --8<-- [start:kernel]
@triton.jit
def dropout_kernel(
    x_ptr,  # pointer to the input, contiguous
    y_ptr,  # pointer to the output, contiguous, same dtype and size
    n_elements,  # number of elements
    p,  # the probability of dropping an element, 0 <= p < 1
    seed,  # the random stream: the same seed gives the same mask
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    """Write y = dropout(x) for the elements of tile `tl.program_id(0)`.

    Element i is kept when the uniform random number that `tl.rand` draws for
    (seed, i) is at least p; a kept element is scaled by 1 / (1 - p) (in fp32),
    a dropped one is 0. The random number must depend on the element's index in
    the whole tensor, nothing else: then the same seed gives the same mask for any
    BLOCK_SIZE, and the backward pass can draw it again instead of reading it.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel writes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def dropout(
    x: torch.Tensor, p: float, seed: int, *, block_size: int = 1024
) -> torch.Tensor:
    """Dropout of `x` (any shape): zero each element with probability p, scale the
    others by 1 / (1 - p). The mask is a function of (seed, element index) only."""
    _check_tensor("x", x)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        raise ValueError(f"p must be a float in [0, 1), got {p!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"seed must be an int in [0, 2**31), got {seed!r}")
    if block_size <= 0 or block_size & (block_size - 1):
        raise ValueError(
            f"block_size must be a positive power of two, got {block_size}"
        )
    if x.numel() >= 2**31:  # int32 offsets
        raise ValueError("x is too large for this kernel's int32 offsets")
    xc = x.contiguous()  # the mask follows the row-major index of each element
    y = torch.empty_like(xc)
    n = xc.numel()
    if n > 0:
        dropout_kernel[(triton.cdiv(n, block_size),)](xc, y, n, float(p), seed,
                                                      BLOCK_SIZE=block_size)
    return y


def dropout_torch(x: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    """The plain torch reference, given the keep-mask (True: kept): x / (1 - p) where
    kept, else 0, in fp32, rounded to x's dtype."""
    return torch.where(keep, x.float() / (1.0 - p), 0.0).to(x.dtype)


if __name__ == "__main__":
    x = torch.rand(1000, device="cuda" if torch.cuda.is_available() else "cpu") + 1.0
    y = dropout(x, 0.25, seed=7)
    torch.testing.assert_close(y, dropout_torch(x, y != 0, 0.25))
    kept = (y != 0).float().mean()
    print(f"dropout kept {kept:.3f} of the elements (expected about 0.75)")
