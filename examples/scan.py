# %% [markdown]
# # Scans: `tl.cumsum` and a linear recurrence with `tl.associative_scan`
#
# A scan (prefix sum) turns `x` into `y[j] = x[0] + ... + x[j]`. Triton scans a
# tile in one call; a row longer than a tile is walked in chunks that carry the
# running total from one chunk to the next.
#
# The same machinery scans any associative operation. The second kernel runs
# the first-order linear recurrence `h[j] = a[j] * h[j-1] + x[j]` (the core of
# linear RNNs and state-space models) as a scan over `(a, x)` pairs.
#
# You will see:
#
# * `tl.cumsum` on a tile, and a carry between chunks of a long row;
# * `tl.associative_scan` with a combine function over a tuple of tiles;
# * how padding lanes are filled so they do not disturb the scan.
#
# Run it with `python examples/scan.py`.

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
# ## Cumulative sum along rows
#
# One program per row. Each chunk is scanned with `tl.cumsum`, shifted by the
# sum of everything before it, and stored; the chunk's total joins the carry.
# The sums run in fp32 whatever the input dtype.


# %%
# --8<-- [start:cumsum-kernel]
@triton.jit
def cumsum_kernel(
    x_ptr,  # pointer to the input, [M, N], unit column stride
    y_ptr,  # pointer to the output, same shape
    n_cols,  # N
    stride_xm,  # row stride of x, in elements
    stride_ym,  # row stride of y, in elements
    BLOCK_N: tl.constexpr,  # chunk length, a power of two
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    y_row = y_ptr + row * stride_ym
    cols = tl.arange(0, BLOCK_N)
    carry = tl.zeros((), dtype=tl.float32)  # (1)!
    for start in range(0, n_cols, BLOCK_N):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)  # (2)!
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)
# --8<-- [end:cumsum-kernel]


# %% [markdown]
# ## A linear recurrence as a scan
#
# Applying step `(a1, x1)` and then `(a2, x2)` to a state `h` gives
# `a2 * (a1 * h + x1) + x2`: the pair `(a1 * a2, a2 * x1 + x2)`. That combine is
# associative, so `tl.associative_scan` can evaluate all prefixes of a tile in
# parallel. The state carried in from the previous chunk enters through the chunk's
# first step, exactly as the sequential loop applies it.


# %%
# --8<-- [start:recurrence-kernel]
@triton.jit
def first_order_combine(a_left, x_left, a_right, x_right):
    """Step (a_left, x_left), then step (a_right, x_right), as one step."""
    return a_left * a_right, a_right * x_left + x_right


@triton.jit
def linear_scan_kernel(
    a_ptr,  # pointer to the decay factors a, [M, N]
    x_ptr,  # pointer to the inputs x, [M, N]
    h_ptr,  # pointer to the output h, [M, N]
    n_cols,  # N
    stride_am,  # row strides, in elements
    stride_xm,
    stride_hm,
    BLOCK_N: tl.constexpr,  # chunk length, a power of two
):
    row = tl.program_id(0).to(tl.int64)
    a_row, x_row = a_ptr + row * stride_am, x_ptr + row * stride_xm
    h_row = h_ptr + row * stride_hm
    cols = tl.arange(0, BLOCK_N)
    h_in = tl.zeros((), dtype=tl.float32)  # state entering the chunk: h[-1] = 0
    for start in range(0, n_cols, BLOCK_N):
        offs = start + cols
        mask = offs < n_cols
        a = tl.load(a_row + offs, mask=mask, other=1.0).to(tl.float32)  # (1)!
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.where(cols == 0, a * h_in + x, x)  # (2)!
        _, h = tl.associative_scan((a, x), axis=0,  # (3)!
                                   combine_fn=first_order_combine)
        tl.store(h_row + offs, h.to(h_ptr.dtype.element_ty), mask=mask)
        h_in = tl.sum(tl.where(cols == BLOCK_N - 1, h, 0.0), axis=0)  # (4)!
# --8<-- [end:recurrence-kernel]


# %% [markdown]
# ## Launchers and references
#
# Both take 2-D tensors whose rows are contiguous (any row stride), scan along
# the last dim, and return the input dtype. The references loop in float64.


# %%
# --8<-- [start:launcher-checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_ROWS = 2**31 - 1  # one program per row: the most a grid holds along axis 0


def _check(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D (rows, cols), got shape {tuple(t.shape)}")
    if t.shape[1] > 1 and t.stride(1) != 1:
        raise ValueError(f"{name} must have unit stride along its last dim, "
                         f"got strides {t.stride()}")
    if t.shape[0] > MAX_ROWS:
        raise ValueError(f"{name} has {t.shape[0]} rows: one program per row, "
                         "at most 2**31 - 1 of them")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _check_pair(a: torch.Tensor, x: torch.Tensor) -> None:
    _check("a", a)
    _check("x", x)
    if a.shape != x.shape:
        raise ValueError("a and x must have the same shape, "
                         f"got {tuple(a.shape)} and {tuple(x.shape)}")
    if a.dtype != x.dtype:
        raise TypeError("a and x must have the same dtype, "
                        f"got {a.dtype} and {x.dtype}")
    if a.device != x.device:
        raise ValueError("a and x must be on the same device, "
                         f"got {a.device} and {x.device}")
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher]
def _block_n(n_cols: int, block_n: int | None) -> int:
    if block_n is None:
        return min(2048, triton.next_power_of_2(max(n_cols, 16)))
    b = block_n
    if not isinstance(b, int) or not 16 <= b <= 2**20 or b & (b - 1):
        raise ValueError("block_n must be a power of two from 16 to 2**20 "
                         f"(Triton's largest tile), got {block_n}")
    return block_n


def cumsum(x: torch.Tensor, block_n: int | None = None) -> torch.Tensor:
    """Cumulative sum along the last dim of a 2-D tensor, accumulated in fp32."""
    _check("x", x)
    block = _block_n(x.shape[1], block_n)
    y = torch.empty_like(x)
    if x.numel():
        cumsum_kernel[(x.shape[0],)](x, y, x.shape[1], x.stride(0), y.stride(0),
                                     BLOCK_N=block, num_warps=4 if block <= 1024 else 8)
    return y


def linear_scan(a: torch.Tensor, x: torch.Tensor, block_n: int | None = None
                ) -> torch.Tensor:
    """h[:, j] = a[:, j] * h[:, j - 1] + x[:, j] with h[:, -1] = 0, along the last dim.

    One difference from the sequential loop: after an infinite decay factor in a row,
    an element the loop makes +-inf may come out NaN, because the scan regroups the
    products (inf - inf)."""
    _check_pair(a, x)
    block = _block_n(x.shape[1], block_n)
    h = torch.empty_like(x)
    if x.numel():
        linear_scan_kernel[(x.shape[0],)](a, x, h, x.shape[1], a.stride(0), x.stride(0),
                                          h.stride(0), BLOCK_N=block,
                                          num_warps=4 if block <= 1024 else 8)
    return h


def cumsum_torch(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x.double(), dim=-1).to(x.dtype)


def linear_scan_torch(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The recurrence, one column at a time, in float64: slow and obviously right."""
    h = torch.empty_like(x, dtype=torch.float64)
    state = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
    for j in range(x.shape[1]):
        state = a[:, j].double() * state + x[:, j].double()
        h[:, j] = state
    return h.to(x.dtype)
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Rows longer than one chunk (`block_n=64` on 300 columns), a row-strided view,
# and decays in (0.5, 1) so the state neither dies nor explodes.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1), (3, 300), (2, 1025))) -> None:
    for m, n in shapes:
        x = torch.randn(m, n, device=DEVICE)
        a = 0.5 + 0.5 * torch.rand(m, n, device=DEVICE)
        for block_n in (64, None):
            torch.testing.assert_close(cumsum(x, block_n), cumsum_torch(x),
                                       rtol=1e-5, atol=1e-4)
            torch.testing.assert_close(linear_scan(a, x, block_n),
                                       linear_scan_torch(a, x), rtol=1e-5, atol=1e-5)
    view = torch.randn(5, 400, device=DEVICE)[:, 7:307]  # rows 400 apart
    torch.testing.assert_close(cumsum(view, 64), cumsum_torch(view),
                               rtol=1e-5, atol=1e-4)
    print(f"scan: cumsum and linear_scan match float64 loops on {DEVICE.type} for "
          f"shapes {[tuple(s) for s in shapes]}, chunked and whole-row, and a "
          "row-strided view")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
