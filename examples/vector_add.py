# %% [markdown]
# # Vector add: the smallest complete Triton kernel
#
# `z = x + y` over two 1-D tensors. One program owns one tile of `BLOCK_SIZE`
# elements; a mask keeps the last, ragged tile inside the tensor.
#
# You will see:
#
# * the device chosen at run time (CUDA when present, else the CPU interpreter);
# * a kernel, a launcher that validates its inputs, and a plain torch reference;
# * a self-check on sizes that are not multiples of the block size.
#
# Run it with `python examples/vector_add.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## The kernel
#
# Each program reads its id, builds the offsets of the tile it owns, masks the
# lanes that fall past the end, loads, adds and stores.


# %%
# --8<-- [start:kernel]
@triton.jit
def add_kernel(
    x_ptr,  # pointer to the first input
    y_ptr,  # pointer to the second input
    z_ptr,  # pointer to the output
    n_elements,  # number of elements in each vector
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(axis=0)  # which tile this program owns (an int32)
    offsets = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (1)!
    mask = offsets < n_elements  # (2)!
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, x + y, mask=mask)
# --8<-- [end:kernel]


# %% [markdown]
# ## A first launch
#
# The launch in its plainest form: two inputs, an output, a grid of one program per
# tile, and a check against torch. `add` below wraps the same launch with checks of
# its inputs.


# %%
# --8<-- [start:first-launch]
def first_launch(n: int = 98_432, block_size: int = 1024) -> None:
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    z = torch.empty_like(x)
    grid = (triton.cdiv(n, block_size),)  # one program per tile
    add_kernel[grid](x, y, z, n, BLOCK_SIZE=block_size)
    torch.testing.assert_close(z, x + y)  # the same numbers as torch
    print(f"add_kernel: z == x + y for n = {n}")
# --8<-- [end:first-launch]


# %% [markdown]
# ## The launcher
#
# Host code: check the inputs, allocate the output, size the grid, launch. The
# checks come first, in a helper of their own.


# %%
# --8<-- [start:checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_PROGRAMS = 2**31 - 1  # CUDA's limit on grid axis 0


def _check_inputs(x: torch.Tensor, y: torch.Tensor, block_size: int) -> None:
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != 1:
            raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (stride 1), "
                             f"got stride {t.stride()}")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape, "
                         f"got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, "
                        f"got {x.dtype} and {y.dtype}")
    if x.device != y.device:
        raise ValueError(f"x and y must be on the same device, "
                         f"got {x.device} and {y.device}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if block_size <= 0 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a positive power of two, "
                         f"got {block_size}")
    n = x.numel()
    if n > MAX_PROGRAMS * block_size:  # more than MAX_PROGRAMS tiles
        raise ValueError(f"block_size={block_size} needs {triton.cdiv(n, block_size)} "
                         f"programs for {n} elements, more than grid axis 0 holds "
                         f"({MAX_PROGRAMS}): use a larger block_size")
# --8<-- [end:checks]


# --8<-- [start:launcher]
def add(x: torch.Tensor, y: torch.Tensor, block_size: int = 1024) -> torch.Tensor:
    """Return x + y computed by `add_kernel`, one program per `block_size` tile."""
    _check_inputs(x, y, block_size)  # types, shapes, devices, the grid's size
    n = x.numel()
    z = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # (1)!
    add_kernel[grid](x, y, z, n, BLOCK_SIZE=block_size)
    return z


def add_torch(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x + y
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Fresh random data, sizes that are not multiples of the block size, and an exact
# comparison: an fp32 add has one correct answer.


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1023, 1025, 98_432)) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        y = torch.randn(n, device=DEVICE)
        torch.testing.assert_close(add(x, y), add_torch(x, y), rtol=0, atol=0)
    print(f"vector_add: add(x, y) == x + y on {DEVICE.type} for n in {list(sizes)}")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
