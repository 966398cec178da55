# %% [markdown]
# # Masks: ragged tiles, padding values and `tl.where`
#
# Tiles have power-of-two shapes; tensors do not. A mask marks the lanes of a tile
# that lie inside the tensor, and every load and store that could step outside
# carries it.
#
# You will see:
#
# * a row max whose masked lanes are padded with `other=-inf`, and why `0.0` is wrong;
# * a 2-D bias + ReLU epilogue whose mask is built by broadcasting a row mask
#   against a column mask, and whose ReLU is a `tl.where` on computed values;
# * a self-check on sizes that are not multiples of any block size.
#
# Run it with `python examples/masks.py`.

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
# ## A row max: what the masked lanes hold
#
# One program per row; the whole row fits in one tile of `BLOCK_N >= n_cols` lanes.
# The lanes past the end of the row are not loaded: they get the value `PAD`.
# A max only ignores them when `PAD` can never win, so `PAD` must be `-inf`.


# %%
# --8<-- [start:row-max-kernel]
@triton.jit
def max_nan(a, b):
    """max(a, b), NaN if either is NaN (as torch.amax): the reduction's combine step."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def row_max_kernel(
    x_ptr,  # pointer to a contiguous (n_rows, n_cols) input
    out_ptr,  # pointer to the (n_rows,) output
    n_cols,  # elements per row
    BLOCK_N: tl.constexpr,  # lanes per tile, a power of two >= n_cols
    PAD: tl.constexpr,  # value of the lanes the mask switches off
):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols  # (1)!
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=PAD)  # (2)!
    tl.store(out_ptr + row, tl.reduce(x.to(tl.float32), 0, max_nan))  # (3)!
# --8<-- [end:row-max-kernel]


# %%
# --8<-- [start:row-max-launcher]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_COLS = 8192  # one tile per row, in registers: longer rows need a loop (see softmax)


def _check_row_max(x, pad) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"x must be float16, bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2 or not x.is_contiguous():
        raise ValueError(f"x must be 2-D and contiguous, got shape {tuple(x.shape)}, "
                         f"stride {x.stride()}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if not isinstance(pad, float):
        raise TypeError(f"pad must be a float, got {type(pad).__name__}")
    if not 1 <= x.shape[1] <= MAX_COLS:
        raise ValueError(f"x must have 1 to {MAX_COLS} columns, got {x.shape[1]}")
    if x.numel() > 2**31 - 1:  # row * n_cols + cols is int32 arithmetic
        raise ValueError(f"x has {x.numel()} elements, more than 2**31 - 1: "
                         "this kernel computes int32 offsets")


def row_max(x: torch.Tensor, *, pad: float = float("-inf")) -> torch.Tensor:
    """Max of each row of a contiguous 2-D `x`.

    `pad` fills the masked lanes. Only -inf is correct for a max; the argument
    exists so that the tests can show what 0.0 does.
    """
    _check_row_max(x, pad)
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    block_n = triton.next_power_of_2(n_cols)  # the smallest power of two >= n_cols
    row_max_kernel[(n_rows,)](x, out, n_cols, BLOCK_N=block_n, PAD=pad)
    return out


def row_max_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x.amax(dim=1)
# --8<-- [end:row-max-launcher]


# %% [markdown]
# One row, three negative numbers, a tile of four lanes: one lane is masked off,
# and the padding value decides the answer.


# %%
# --8<-- [start:padding-demo]
def padding_demo() -> None:
    x = torch.tensor([[-3.0, -1.0, -2.0]], device=DEVICE)  # a 4-lane tile, 1 masked
    print(f"pad=0.0  -> {row_max(x, pad=0.0).item()}")  # the masked lane wins
    print(f"pad=-inf -> {row_max(x).item()}")  # the real maximum
# --8<-- [end:padding-demo]


# %% [markdown]
# ## Bias + ReLU on a 2-D grid: masks by broadcasting, `tl.where` for values
#
# Each program owns a `BLOCK_M x BLOCK_N` tile. A column mask of shape
# `(BLOCK_N,)` guards the bias load; the tile mask is the row mask `[:, None]`
# AND the column mask `[None, :]`. The ReLU chooses between two values that
# are already computed, so it is a `tl.where`, not a mask.


# %%
# --8<-- [start:bias-relu-kernel]
@triton.jit
def bias_relu_kernel(
    x_ptr,  # pointer to a contiguous (M, N) input
    b_ptr,  # pointer to the (N,) bias
    y_ptr,  # pointer to the contiguous (M, N) output
    M,  # rows
    N,  # columns
    BLOCK_M: tl.constexpr,  # rows per tile
    BLOCK_N: tl.constexpr,  # columns per tile
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    mask_n = offs_n < N
    mask = (offs_m[:, None] < M) & mask_n[None, :]  # (1)!
    offs = offs_m[:, None] * N + offs_n[None, :]  # (2)!
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs_n, mask=mask_n)  # (3)!
    z = x + b[None, :]
    y = tl.where(z < 0, 0.0, z)  # (4)!
    tl.store(y_ptr + offs, y, mask=mask)  # (5)!
# --8<-- [end:bias-relu-kernel]


# %%
# --8<-- [start:bias-relu-launcher]
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_GRID_YZ = 65_535  # CUDA's limit on grid axis 1


def _check_tensor(name: str, t, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous, got stride {t.stride()}")


def _check_bias_relu(x, b, block_m, block_n) -> None:
    _check_tensor("x", x, 2)
    _check_tensor("b", b, 1)
    if b.shape[0] != x.shape[1]:
        raise ValueError(f"b must have x.shape[1] = {x.shape[1]} elements, "
                         f"got {b.shape[0]}")
    if b.dtype != x.dtype:
        raise TypeError("x and b must have the same dtype, "
                        f"got {x.dtype} and {b.dtype}")
    if b.device != x.device:
        raise ValueError("x and b must be on the same device, "
                         f"got {x.device} and {b.device}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    for name, v in (("block_m", block_m), ("block_n", block_n)):
        if v <= 0 or v & (v - 1):
            raise ValueError(f"{name} must be a positive power of two, got {v}")
    if x.numel() > 2**31 - 1:  # offs_m * N + offs_n is int32 arithmetic
        raise ValueError(f"x has {x.numel()} elements, more than 2**31 - 1: "
                         "this kernel computes int32 offsets")
    N = x.shape[1]
    if triton.cdiv(N, block_n) > MAX_GRID_YZ:
        raise ValueError(f"N={N} needs {triton.cdiv(N, block_n)} column tiles, but "
                         f"grid axis 1 holds at most {MAX_GRID_YZ}: raise block_n")


def bias_relu(x: torch.Tensor, b: torch.Tensor, *, block_m: int = 16,
              block_n: int = 256) -> torch.Tensor:
    """relu(x + b) for a contiguous (M, N) `x` and an (N,) bias `b`."""
    _check_bias_relu(x, b, block_m, block_n)
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))  # ragged on both axes
    bias_relu_kernel[grid](x, b, y, M, N, BLOCK_M=block_m, BLOCK_N=block_n)
    return y


def bias_relu_torch(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return torch.relu(x + b)
# --8<-- [end:bias-relu-launcher]


# %% [markdown]
# ## Check it
#
# All-negative rows catch a wrong `PAD`; column counts such as 17 and 1025 leave
# a ragged last tile; the outputs are compared exactly (a max and a ReLU have one
# right answer, and the add rounds the same way in both).


# %%
# --8<-- [start:check-bias-relu]
def check_bias_relu(shapes=((1, 1), (17, 1025), (1023, 17), (5, 781))) -> None:
    for m, n in shapes:
        x = torch.randn(m, n, device=DEVICE)
        b = torch.randn(n, device=DEVICE)
        y = bias_relu(x, b)
        torch.testing.assert_close(y, bias_relu_torch(x, b), rtol=0, atol=0)
    print(f"bias_relu matches torch on {DEVICE.type} for (M, N) in {list(shapes)}")
# --8<-- [end:check-bias-relu]


def self_check(sizes=(1, 17, 781, 1023, 1025)) -> None:
    for n in sizes:
        x = torch.randn(7, n, device=DEVICE)
        x[::2] = -x[::2].abs() - 1.0  # every other row is all negative
        torch.testing.assert_close(row_max(x), row_max_torch(x), rtol=0, atol=0)
        b = torch.randn(n, device=DEVICE)
        y = bias_relu(x, b)
        torch.testing.assert_close(y, bias_relu_torch(x, b), rtol=0, atol=0)
    print(f"masks: row_max and bias_relu match torch on {DEVICE.type} "
          f"for 7 x n, n in {list(sizes)}")


# %%
if __name__ == "__main__":
    padding_demo()
    check_bias_relu()
    self_check()
