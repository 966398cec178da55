# %% [markdown]
# # Strides and broadcasting: 2-D pointer tiles for any view
#
# Memory is flat. Element `(i, j)` of a 2-D tensor lives at
# `i * stride(0) + j * stride(1)` elements from its first element, and views such
# as `x.t()`, `x[::2]` or `x.narrow(1, 3, 40)` only change the strides and the
# start. A kernel that takes the strides as arguments works on all of them.
#
# You will see:
#
# * a 2-D copy whose pointer tile is built by broadcasting `[:, None]` against
#   `[None, :]`, and which turns any view into a contiguous tensor (a transpose
#   is a copy of `x.t()`);
# * the three broadcasting rules, written out in Python and checked against the kernel;
# * row sums and column sums: `tl.sum(tile, axis=1)` and `tl.sum(tile, axis=0)`.
#
# Run it with `python examples/strides.py`.

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
# ## A strided 2-D copy
#
# `offs_m[:, None]` has shape `(BLOCK_M, 1)` and `offs_n[None, :]` has shape
# `(1, BLOCK_N)`; any arithmetic between them broadcasts to `(BLOCK_M, BLOCK_N)`.
# With the strides of both tensors as arguments, the same kernel reads a
# contiguous tensor, a transposed one or a strided slice.


# %%
# --8<-- [start:copy-kernel]
@triton.jit
def copy_2d_kernel(
    x_ptr,  # pointer to the input's element (0, 0)
    y_ptr,  # pointer to the output's element (0, 0)
    M,  # rows
    N,  # columns
    stride_xm,  # elements between x[i, j] and x[i + 1, j]
    stride_xn,  # elements between x[i, j] and x[i, j + 1]
    stride_ym,
    stride_yn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    INT64: tl.constexpr,  # True when an offset can pass 2**31 - 1
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    if INT64:  # (2)!
        pid_m = pid_m.to(tl.int64)
        pid_n = pid_n.to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)  # (BLOCK_M, BLOCK_N)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn  # (1)!
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, tl.load(x_ptrs, mask=mask), mask=mask)
# --8<-- [end:copy-kernel]


# %%
# --8<-- [start:copy-launcher]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
INT32_MAX = 2**31 - 1
MAX_GRID_Y = 65535  # CUDA's limit on grid axis 1 (axis 0 holds 2**31 - 1 programs)


def _check_2d(name: str, x) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(x.shape)}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _check_blocks(block_m: int, block_n: int) -> None:
    for name, v in (("block_m", block_m), ("block_n", block_n)):
        if not isinstance(v, int) or v <= 0 or v & (v - 1):
            raise ValueError(f"{name} must be a positive power of two, got {v}")


def reach(t: torch.Tensor) -> int:
    """The largest element offset in the view t: sum of (size - 1) * |stride|."""
    pairs = zip(t.shape, t.stride(), strict=True)
    return sum((size - 1) * abs(stride) for size, stride in pairs) if t.numel() else 0


def copy_2d_launch(x: torch.Tensor, block_m: int, block_n: int) -> tuple:
    """Grid, arguments and constexprs that copy the 2-D view x into a row-major y."""
    M, N = x.shape
    args = [M, N, *x.stride(), N, 1]  # (1)!
    blocks = [block_m, block_n]
    if triton.cdiv(N, block_n) > MAX_GRID_Y:  # (2)!
        args = [N, M, x.stride(1), x.stride(0), 1, N]
        blocks = blocks[::-1]
    grid = (triton.cdiv(args[0], blocks[0]), triton.cdiv(args[1], blocks[1]))
    if grid[0] > INT32_MAX or grid[1] > MAX_GRID_Y:
        tiles = f"{triton.cdiv(M, block_m)} x {triton.cdiv(N, block_n)}"
        raise ValueError(f"x of shape {(M, N)} needs {tiles} tiles of {block_m} x "
                         f"{block_n}, more than a grid holds: pass larger blocks")
    ends = (grid[0] * blocks[0] - 1, grid[1] * blocks[1] - 1)  # of the last tiles
    largest = max(reach(x), M * N - 1, *ends)  # (3)!
    return grid, args, {"BLOCK_M": blocks[0], "BLOCK_N": blocks[1],
                        "INT64": largest > INT32_MAX}


def copy_2d(x: torch.Tensor, *, block_m: int = 64, block_n: int = 64) -> torch.Tensor:
    """A contiguous copy of the 2-D view `x`, whatever its strides: `x.contiguous()`."""
    _check_2d("x", x)
    _check_blocks(block_m, block_n)
    grid, args, meta = copy_2d_launch(x, block_m, block_n)
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)  # strides (N, 1)
    copy_2d_kernel[grid](x, y, *args, **meta)
    return y


def transpose(x: torch.Tensor, **blocks) -> torch.Tensor:
    """x.t() as a contiguous tensor: a copy of the transposed view, nothing more."""
    _check_2d("x", x)
    return copy_2d(x.t(), **blocks)


def copy_2d_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x.contiguous()
# --8<-- [end:copy-launcher]


# %% [markdown]
# ## The three broadcasting rules
#
# Triton broadcasts tiles exactly as NumPy and PyTorch broadcast arrays. Here are
# the rules as plain Python, and a kernel that adds an `(A0, A1)` tile to a
# `(B0, B1)` tile, or to a 1-D `(B1,)` tile, so that the tests can check the two agree.


# %%
# --8<-- [start:broadcast-rules]
def broadcast_shape(a: tuple, b: tuple) -> tuple:
    """The shape of `a + b` for tiles of shapes `a` and `b`, or ValueError."""
    a, b = tuple(a), tuple(b)
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a  # rule 1: pad the shorter shape with 1s on the left
    b = (1,) * (rank - len(b)) + b
    out = []
    for dim, (p, q) in enumerate(zip(a, b, strict=True)):
        if p == q or q == 1:
            out.append(p)  # rule 2: a dimension of size 1 stretches to match the other
        elif p == 1:
            out.append(q)
        else:  # rule 3: any other mismatch is an error
            raise ValueError(f"shapes {a} and {b} do not broadcast: {p} vs {q} in "
                             f"dimension {dim}")
    return tuple(out)
# --8<-- [end:broadcast-rules]


# %%
# --8<-- [start:broadcast-kernel]
MAX_TILE = 2**20  # Triton's limit on the elements of one tile


@triton.jit
def broadcast_add_kernel(
    a_ptr, b_ptr, out_ptr,  # contiguous inputs and output
    A0: tl.constexpr, A1: tl.constexpr,  # shape of a
    B0: tl.constexpr, B1: tl.constexpr,  # shape of b (B0 is ignored when B_1D)
    O0: tl.constexpr, O1: tl.constexpr,  # shape of the output
    B_1D: tl.constexpr,  # True: b is the 1-D tile (B1,)
):
    a = tl.load(a_ptr + tl.arange(0, A0)[:, None] * A1 + tl.arange(0, A1)[None, :])
    if B_1D:
        b = tl.load(b_ptr + tl.arange(0, B1))  # shape (B1,)
    else:
        b = tl.load(b_ptr + tl.arange(0, B0)[:, None] * B1 + tl.arange(0, B1)[None, :])
    tl.store(out_ptr + tl.arange(0, O0)[:, None] * O1 + tl.arange(0, O1)[None, :],
             a + b)


def _check_operands(a, b) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if not t.is_contiguous() or any(s <= 0 or s & (s - 1) for s in t.shape):
            raise ValueError(f"{name} must be contiguous with power-of-two sizes, "
                             f"got {tuple(t.shape)}")
        if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            raise ValueError(f"{name} is on the CPU: CPU tensors need "
                             "TRITON_INTERPRET=1 (Triton's interpreter)")
    if a.dim() != 2 or b.dim() not in (1, 2):
        raise ValueError(f"a must be 2-D and b 1-D or 2-D, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"a and b must be on the same device, got {a.device} "
                         f"and {b.device}")


def broadcast_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a + b by `broadcast_add_kernel`: a is 2-D, b 1-D or 2-D, sizes powers of two."""
    _check_operands(a, b)
    shape = broadcast_shape(a.shape, b.shape)  # ValueError here, before the kernel
    if shape[0] * shape[1] > MAX_TILE:
        raise ValueError(f"a + b has shape {shape}: one program holds it as one tile "
                         f"of at most {MAX_TILE} elements")
    dtype = torch.promote_types(a.dtype, b.dtype)
    out = torch.empty(shape, device=a.device, dtype=dtype)
    b0, b1 = (1, b.shape[0]) if b.dim() == 1 else b.shape
    broadcast_add_kernel[(1,)](a, b, out, *a.shape, b0, b1, *shape, B_1D=b.dim() == 1)
    return out
# --8<-- [end:broadcast-kernel]


# %% [markdown]
# ## Reductions and `axis`
#
# `tl.sum(tile, axis=1)` sums along a row: the `(BLOCK_M, BLOCK_N)` tile becomes
# `(BLOCK_M,)`. `axis=0` sums down the columns and leaves `(BLOCK_N,)`. Each
# program loops over the reduced dimension in steps of one tile and keeps an fp32
# accumulator; the masked lanes load `other=0.0`, the identity of a sum.


# %%
# --8<-- [start:sum-kernels]
@triton.jit
def row_sum_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    offs_m = tl.program_id(axis=0) * BLOCK_M + tl.arange(0, BLOCK_M)  # rows it owns
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):  # walk along the row
        offs_n = start + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tile = tl.load(x_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n,
                       mask=mask, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=1)  # (BLOCK_M, BLOCK_N) -> (BLOCK_M,)
    tl.store(out_ptr + offs_m, acc, mask=offs_m < M)


@triton.jit
def col_sum_kernel(
    x_ptr, out_ptr, M, N, stride_m, stride_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    offs_n = tl.program_id(axis=0) * BLOCK_N + tl.arange(0, BLOCK_N)  # columns it owns
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):  # walk down the columns
        offs_m = start + tl.arange(0, BLOCK_M)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        tile = tl.load(x_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n,
                       mask=mask, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)  # (BLOCK_M, BLOCK_N) -> (BLOCK_N,)
    tl.store(out_ptr + offs_n, acc, mask=offs_n < N)
# --8<-- [end:sum-kernels]


# %%
# --8<-- [start:sum-launchers]
def _check_int32_offsets(x: torch.Tensor, block_m: int, block_n: int) -> None:
    """Refuse a view whose int32 offsets (tile ends included) would pass 2**31 - 1."""
    M, N = x.shape
    largest = max(reach(x), triton.cdiv(M, block_m) * block_m - 1,
                  triton.cdiv(N, block_n) * block_n - 1)
    if largest > INT32_MAX:
        raise ValueError(f"x needs offsets up to {largest}: the sum kernels' int32 "
                         "offsets stop at 2**31 - 1")


def row_sum(x: torch.Tensor, *, block_m: int = 16, block_n: int = 128) -> torch.Tensor:
    """x.sum(dim=1) for any 2-D view, accumulated in fp32, returned in x.dtype."""
    _check_2d("x", x)
    _check_blocks(block_m, block_n)
    _check_int32_offsets(x, block_m, block_n)
    M, N = x.shape
    out = torch.empty(M, device=x.device, dtype=x.dtype)
    row_sum_kernel[(triton.cdiv(M, block_m),)](
        x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n
    )
    return out


def col_sum(x: torch.Tensor, *, block_m: int = 64, block_n: int = 64) -> torch.Tensor:
    """x.sum(dim=0) for any 2-D view, accumulated in fp32, returned in x.dtype."""
    _check_2d("x", x)
    _check_blocks(block_m, block_n)
    _check_int32_offsets(x, block_m, block_n)
    M, N = x.shape
    out = torch.empty(N, device=x.device, dtype=x.dtype)
    col_sum_kernel[(triton.cdiv(N, block_n),)](
        x, out, M, N, x.stride(0), x.stride(1), BLOCK_M=block_m, BLOCK_N=block_n
    )
    return out


def row_sum_torch(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(dim=1).to(x.dtype)


def col_sum_torch(x: torch.Tensor) -> torch.Tensor:
    return x.float().sum(dim=0).to(x.dtype)
# --8<-- [end:sum-launchers]


# %% [markdown]
# ## Check it
#
# Views with every kind of stride: contiguous, transposed, sliced with a step,
# narrowed, and a row picked by `select` from a 3-D tensor.


# %%
# --8<-- [start:check]
def views(x: torch.Tensor) -> dict:
    """Five 2-D views of one 3-D tensor, none of them contiguous but the first."""
    return {
        "contiguous": x[0],
        ".t()": x[0].t(),
        "[::2, ::3]": x[0, ::2, ::3],
        "narrow(1, 3, 20)": x[0].narrow(1, 3, 20),
        "select(2, 5)": x.select(2, 5),  # shape (2, 37): strides (37 * 41, 41)
    }


def self_check() -> None:
    x = torch.randn(2, 37, 41, device=DEVICE)
    for v in views(x).values():
        torch.testing.assert_close(copy_2d(v), copy_2d_torch(v), rtol=0, atol=0)
        torch.testing.assert_close(row_sum(v), row_sum_torch(v))
        torch.testing.assert_close(col_sum(v), col_sum_torch(v))
    torch.testing.assert_close(transpose(x[0]), x[0].t().contiguous(), rtol=0, atol=0)
    a, b = torch.randn(4, 1, device=DEVICE), torch.randn(8, device=DEVICE)
    torch.testing.assert_close(broadcast_add(a, b), a + b, rtol=0, atol=0)
    print(f"strides: copy_2d, row_sum and col_sum match torch on {DEVICE.type} "
          f"for {list(views(x))}")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
