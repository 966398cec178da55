# %% [markdown]
# # Tensor descriptors: a transpose without pointer arithmetic
#
# A tensor descriptor bundles what a 2-D pointer tile is built from (base pointer,
# shape, strides) with the shape of the block to move. `desc.load([row, col])`
# returns the block whose top-left element is `(row, col)`, padded with zeros where
# it hangs over the edge; `desc.store` drops the part that hangs over (on NVIDIA
# GPUs in whole 16-byte chunks: see the launcher). No offsets, no masks. On Hopper
# and later NVIDIA GPUs the copies run on the TMA engine.
#
# You will see:
#
# * `tl.make_tensor_descriptor` and its rules: last stride 1, other strides and the
#   base 16-byte aligned, at least 16 bytes per block row;
# * `triton.set_allocator`, which a kernel that builds descriptors needs on the GPU;
# * a transpose: load a block of `x`, `tl.trans` it, store it into `y`.
#
# Run it with `python examples/tensor_descriptors.py`.

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
# Program `(i, j)` reads block `(i, j)` of `x` and writes its transpose as block
# `(j, i)` of `y`. Blocks on the right and bottom edges are ragged; the descriptor
# handles them.


# %%
# --8<-- [start:kernel]
@triton.jit
def transpose_desc_kernel(
    x_ptr,  # pointer to x[0, 0]; x is (M, N) with stride (stride_xm, 1)
    y_ptr,  # pointer to y[0, 0]; y is (N, M) with stride (stride_ym, 1)
    M,
    N,
    stride_xm,
    stride_ym,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    x_desc = tl.make_tensor_descriptor(  # (1)!
        x_ptr, shape=[M, N], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_N]
    )
    y_desc = tl.make_tensor_descriptor(
        y_ptr, shape=[N, M], strides=[stride_ym, 1], block_shape=[BLOCK_N, BLOCK_M]
    )
    row = tl.program_id(axis=0) * BLOCK_M
    col = tl.program_id(axis=1) * BLOCK_N
    tile = x_desc.load([row, col])  # (2)!
    y_desc.store([col, row], tl.trans(tile))  # (3)!
# --8<-- [end:kernel]


# %% [markdown]
# ## The launcher
#
# The descriptor rules become input checks. A contiguous `(M, N)` fp32 tensor has
# a row stride of `4 * N` bytes, which is a multiple of 16 only when `N` is a
# multiple of 4; the launcher pads the output's rows so that any `M` works, and
# returns the `(N, M)` view of the padded buffer. The padding has a second use: on
# NVIDIA GPUs a TMA store writes whole 16-byte chunks, so a block that hangs over
# column `M` may also write the columns after it, up to the next 16-byte boundary.
# Those land in the launcher's own padding, never in another tensor's memory.


# %%
# --8<-- [start:checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
INT32_MAX = 2**31 - 1  # descriptor shapes and block coordinates are int32
MAX_STRIDE_BYTES = 2**40  # TMA strides are below 2**40 bytes
MAX_GRID_Y = 65535  # CUDA's limit on grid axis 1


def _check_inputs(x: torch.Tensor, block_m: int, block_n: int) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"x must be float16, bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D, got shape {tuple(x.shape)}")
    if x.numel() == 0:  # nothing to move, and an empty tensor's strides say nothing
        return
    size = x.element_size()
    if x.stride(1) != 1:
        raise ValueError(f"x must have stride 1 in its last dimension, "
                         f"got stride {x.stride()}")
    if (x.stride(0) * size) % 16 or x.data_ptr() % 16:  # (2)!
        raise ValueError(f"x's row stride ({x.stride(0)} elements) and start must be "
                         "multiples of 16 bytes, as tensor descriptors require")
    M, N = x.shape
    if M > 1 and x.stride(0) < N:  # (3)!
        raise ValueError(f"x's rows overlap (row stride {x.stride(0)} < {N} columns, "
                         "as in an expand): tensor descriptors need rows that do not")
    if max(M, N) > INT32_MAX or x.stride(0) * size >= MAX_STRIDE_BYTES:
        raise ValueError(f"x of shape {(M, N)}, row stride {x.stride(0)}: tensor "
                         f"descriptors take dimensions up to 2**31 - 1 and strides "
                         f"below 2**40 bytes")
    for name, v in (("block_m", block_m), ("block_n", block_n)):
        if not isinstance(v, int) or v & (v - 1) or not 16 // size <= v <= 256:
            raise ValueError(f"{name} must be a power of two from {16 // size} "
                             f"to 256, got {v}")
    if triton.cdiv(N, block_n) > MAX_GRID_Y:
        raise ValueError(f"x has N = {N} columns: {triton.cdiv(N, block_n)} blocks of "
                         f"block_n={block_n} are more than grid axis 1 holds "
                         f"({MAX_GRID_Y}); pass a larger block_n")
    if x.device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
# --8<-- [end:checks]


# --8<-- [start:launcher]
def _scratch(size: int, alignment: int, stream) -> torch.Tensor:
    """Kernels that build descriptors on the GPU need scratch memory for them."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


def transpose(x: torch.Tensor, *, block_m: int = 128,
              block_n: int = 64) -> torch.Tensor:
    """x.t() as an (N, M) tensor whose rows are padded to a multiple of 16 bytes."""
    _check_inputs(x, block_m, block_n)  # the descriptor rules, before any launch
    M, N = x.shape
    if x.numel() == 0:  # nothing to move
        return torch.empty((N, M), device=x.device, dtype=x.dtype)
    if x.device.type == "cuda":
        triton.set_allocator(_scratch)  # (1)!
    chunk = 16 // x.element_size()  # elements per 16-byte chunk
    m_padded = triton.cdiv(M, chunk) * chunk  # rows of y: a multiple of 16 bytes
    y = torch.empty((N, m_padded), device=x.device, dtype=x.dtype)[:, :M]
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    transpose_desc_kernel[grid](x, y, M, N, x.stride(0), y.stride(0),
                                BLOCK_M=block_m, BLOCK_N=block_n)
    return y


def transpose_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x.t().contiguous()
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd shapes, and a view that is not contiguous but still obeys the rules:
# 17 columns out of rows of 20 fp32 (80 bytes, a multiple of 16).


# %%
# --8<-- [start:check]
def self_check() -> None:
    cases = {
        "127 x 36": torch.randn(127, 36, device=DEVICE),
        "33 x 17 of 33 x 20": torch.randn(33, 20, device=DEVICE)[:, :17],
        "1 x 4": torch.randn(1, 4, device=DEVICE),
        "70 x 200 fp16": torch.randn(70, 200, device=DEVICE, dtype=torch.float16),
    }
    for x in cases.values():
        got = transpose(x, block_m=32, block_n=32)
        torch.testing.assert_close(got, transpose_torch(x), rtol=0, atol=0)
    print(f"tensor_descriptors: transpose(x) == x.t() on {DEVICE.type} "
          f"for {list(cases)}")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
