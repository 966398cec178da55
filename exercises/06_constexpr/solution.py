"""Exercise 06, Constexpr specialization: one kernel, activation chosen at compile time.

Write the body of `activation_kernel`; the launcher `activation` is complete.
Check your answer with `pytest exercises/06_constexpr`.
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

ACTIVATIONS = ("relu", "leaky_relu", "sigmoid", "silu")


# --8<-- [start:kernel]
@triton.jit
def activation_kernel(
    x_ptr,  # pointer to the contiguous input
    y_ptr,  # pointer to the contiguous output, same length and dtype
    n_elements,  # number of elements
    ACTIVATION: tl.constexpr,  # one of ACTIVATIONS: each value compiles its own kernel
    NEG_SLOPE: tl.constexpr,  # slope of leaky_relu for x < 0
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    """Write y = ACTIVATION(x) for the tile of BLOCK_SIZE elements this program owns.

    relu: max(x, 0); leaky_relu: x if x >= 0 else NEG_SLOPE * x;
    sigmoid: 1 / (1 + exp(-x));
    silu: x * sigmoid(x). Branch on ACTIVATION with a plain `if`: it is a compile-time
    constant, so each compiled kernel keeps only its own branch. Compute in fp32 and
    store in y's dtype; mask the ragged last tile.
    """
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if ACTIVATION == "relu":
        y = tl.maximum(x, 0.0)
    elif ACTIVATION == "leaky_relu":
        y = tl.where(x >= 0, x, NEG_SLOPE * x)
    elif ACTIVATION == "sigmoid":
        y = tl.sigmoid(x)
    else:  # "silu"
        y = x * tl.sigmoid(x)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


def activation(
    x: torch.Tensor, name: str, *, neg_slope: float = 0.01, block_size: int = 256
) -> torch.Tensor:
    """ACTIVATION(x) for a contiguous 1-D float `x`; `name` is one of ACTIVATIONS."""
    _check_tensor("x", x, 1)
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    if name not in ACTIVATIONS:
        raise ValueError(f"name must be one of {ACTIVATIONS}, got {name!r}")
    if isinstance(neg_slope, bool) or not isinstance(neg_slope, (int, float)):
        raise TypeError(
            f"neg_slope must be a Python number, got {type(neg_slope).__name__}"
        )
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
    activation_kernel[(triton.cdiv(n, block_size),)](
        x, y, n, ACTIVATION=name, NEG_SLOPE=float(neg_slope), BLOCK_SIZE=block_size
    )
    return y


def activation_torch(
    x: torch.Tensor, name: str, *, neg_slope: float = 0.01
) -> torch.Tensor:
    """The plain torch reference (fp32 arithmetic, rounded to x's dtype)."""
    fns = {
        "relu": torch.relu,
        "leaky_relu": lambda t: torch.nn.functional.leaky_relu(t, neg_slope),
        "sigmoid": torch.sigmoid,
        "silu": torch.nn.functional.silu,
    }
    return fns[name](x.float()).to(x.dtype)


if __name__ == "__main__":
    x = torch.randn(1000, device="cuda" if torch.cuda.is_available() else "cpu")
    for name in ACTIVATIONS:
        torch.testing.assert_close(activation(x, name), activation_torch(x, name))
    print(f"activation matches torch for {ACTIVATIONS}")
