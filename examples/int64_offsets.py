# %% [markdown]
# # int64 offsets: kernels past 2**31 elements
#
# `tl.program_id` is an int32, and so is `pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)`.
# Once a tensor has more than 2**31 - 1 elements, the offsets of its last tiles
# no longer fit: they wrap around to negative numbers, the mask `offsets < n` lets
# them through, and the kernel reads and writes 2**32 elements before the
# address it meant. Casting the program id to int64 first makes every offset
# computed from it int64.
#
# You will see:
#
# * one kernel with an `INT64` switch, so the broken and the fixed version differ
#   in a single line;
# * a launcher that picks int64 offsets when the tensor needs them;
# * that the interpreter wraps int32 arithmetic exactly as the GPU does, though
#   only a GPU has the memory and the speed to run the kernel at 2**31 elements.
#
# Run it with `python examples/int64_offsets.py`.

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
# `y = x + 1`, elementwise. With `INT64=False` this is the vector-add pattern of
# the first chapters, and it is right for any tensor below 2**31 elements.


# %%
# --8<-- [start:kernel]
@triton.jit
def add_one_kernel(
    x_ptr,  # pointer to the input
    y_ptr,  # pointer to the output
    n_elements,  # an int64 argument when it is 2**31 or more
    BLOCK_SIZE: tl.constexpr,
    INT64: tl.constexpr,  # compute offsets in int64
):
    pid = tl.program_id(axis=0)  # int32
    if INT64:
        pid = pid.to(tl.int64)  # (1)!
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (2)!
    mask = offsets < n_elements  # (3)!
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x + 1, mask=mask)
# --8<-- [end:kernel]


# %% [markdown]
# ## The launcher
#
# int64 offsets cost registers and a few instructions per element, so the
# launcher uses them only when the last offset does not fit in an int32, and
# refuses a request for int32 offsets that would wrap. Its input checks come
# first, in a helper of their own.


# %%
# --8<-- [start:checks]
SUPPORTED_DTYPES = (torch.int8, torch.int16, torch.int32, torch.float16, torch.float32)
INT32_MAX = 2**31 - 1


def _check_inputs(x: torch.Tensor, block_size: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"x must be int8, int16, int32, float16 or float32, "
                        f"got {x.dtype}")
    if x.dim() != 1 or not x.is_contiguous():
        raise ValueError(f"x must be 1-D and contiguous, got shape {tuple(x.shape)}, "
                         f"stride {x.stride()}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if (not isinstance(block_size, int) or not 1 <= block_size <= 2**20
            or block_size & (block_size - 1)):
        raise ValueError(f"block_size must be a power of two from 1 to 2**20 "
                         f"(Triton's largest tile), got {block_size}")
    n = x.numel()
    grid = triton.cdiv(n, block_size)
    if grid > INT32_MAX:  # the most programs a grid holds along axis 0
        raise ValueError(f"x has {n} elements: {grid} tiles of block_size={block_size} "
                         f"are more than a grid holds ({INT32_MAX}); "
                         "pass a larger block_size")
# --8<-- [end:checks]


# --8<-- [start:launcher]
def add_one(x: torch.Tensor, *, offsets: str = "auto",
            block_size: int = 4096) -> torch.Tensor:
    """x + 1 for a contiguous 1-D `x`; `offsets` is "auto", "int32" or "int64"."""
    _check_inputs(x, block_size)  # dtype, layout, device, block size, grid size
    n = x.numel()
    grid = triton.cdiv(n, block_size)
    last_offset = grid * block_size - 1  # the last tile's largest offset (1)!
    if offsets == "auto":
        offsets = "int64" if last_offset > INT32_MAX else "int32"
    if offsets not in ("int32", "int64"):
        raise ValueError(f"offsets must be 'auto', 'int32' or 'int64', got {offsets!r}")
    if offsets == "int32" and last_offset > INT32_MAX:
        raise ValueError(f"offsets='int32' wraps: x has {n} elements, "
                         f"the last tile reaches offset {last_offset}")
    y = torch.empty_like(x)
    add_one_kernel[(grid,)](x, y, n, BLOCK_SIZE=block_size, INT64=offsets == "int64")
    return y


def add_one_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x + 1
# --8<-- [end:launcher]


# %% [markdown]
# ## What int32 does at 2**31
#
# The overflow is in the arithmetic, and the interpreter does that arithmetic in
# int32 too. This kernel stores `pid * BLOCK_SIZE` for a few programs: with
# `BLOCK_SIZE = 2**30`, program 2 computes 2**31, which an int32 holds as -2**31.


# %%
# --8<-- [start:wrap]
@triton.jit
def tile_start_kernel(out_ptr, BLOCK_SIZE: tl.constexpr, INT64: tl.constexpr):
    pid = tl.program_id(axis=0)
    if INT64:
        pid = pid.to(tl.int64)
    tl.store(out_ptr + pid, pid * BLOCK_SIZE)  # out is int64: the stored value is exact


def tile_starts(n_programs: int, block_size: int, *, int64: bool) -> list:
    """The first offset of each program's tile, as the kernel computes it."""
    out = torch.zeros(n_programs, dtype=torch.int64, device=DEVICE)
    tile_start_kernel[(n_programs,)](out, BLOCK_SIZE=block_size, INT64=int64)
    return out.tolist()
# --8<-- [end:wrap]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1023, 1025, 98_432)) -> None:
    for n in sizes:
        x = torch.randint(-100, 100, (n,), dtype=torch.int8, device=DEVICE)
        for offsets in ("int32", "int64"):
            got = add_one(x, offsets=offsets)
            torch.testing.assert_close(got, add_one_torch(x), rtol=0, atol=0)
    # int32: 2 * 2**30 and 3 * 2**30 come back 2**32 too small, i.e. negative
    wrapped = [0, 2**30, 2**31 - 2**32, 3 * 2**30 - 2**32]
    assert tile_starts(4, 2**30, int64=False) == wrapped
    assert tile_starts(4, 2**30, int64=True) == [0, 2**30, 2**31, 3 * 2**30]
    print(f"int64_offsets: add_one matches torch on {DEVICE.type} for n in "
          f"{list(sizes)}; int32 wraps at 2**31")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
