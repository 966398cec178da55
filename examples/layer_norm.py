# %% [markdown]
# # Layer norm: a forward, a backward and a two-stage dW/db reduction
#
# `layer_norm(x, weight, bias, eps)` over the last dimension of `x` (any leading
# shape), differentiable in `x`, `weight` and `bias`:
#
# 1. **forward**: one program per row; the row is one tile, its mean and
#    `rstd = 1 / sqrt(var + eps)` are computed in fp32 and saved for the backward;
# 2. **backward, stage 1**: each program walks a group of rows, writes `dx` for
#    each, and keeps running sums of `dy * x_hat` (dW) and `dy` (db) in registers,
#    written once at the end as one row of a `(num_groups, N)` fp32 buffer;
# 3. **backward, stage 2**: a small kernel adds the partial rows up, column by
#    column, in a fixed order: the same inputs give the same bits on every run.
#
# fp32, fp16 and bf16 in, the same dtype out, fp32 arithmetic inside. Wrapped as
# a `torch.autograd.Function` and, for `torch.compile`, as a
# `torch.library.triton_op`.
#
# Run it with `python examples/layer_norm.py`.

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
# ## The reference
#
# What we must match: `torch.nn.functional.layer_norm` computed in fp32 and cast
# back to the input's dtype; its gradients come from torch's autograd, in fp32 too.


# %%
# --8<-- [start:reference]
import functools
import math
from numbers import Real

import torch.nn.functional as F
from torch.library import triton_op, wrap_triton


def layer_norm_torch(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                     eps: float = 1e-5) -> torch.Tensor:
    """The plain torch reference: fp32 maths, result in x's dtype."""
    y = F.layer_norm(x.float(), x.shape[-1:], weight.float(), bias.float(), eps)
    return y.to(x.dtype)


def layer_norm_grads_torch(dy, x, weight, bias, eps: float = 1e-5):
    """(dx, dweight, dbias) of the reference, by torch's autograd in fp32 (float64
    stays float64), cast to the inputs' dtypes."""
    acc = torch.promote_types(x.dtype, torch.float32)
    xs, ws, bs = (t.detach().to(acc).requires_grad_(True) for t in (x, weight, bias))
    y = F.layer_norm(xs, x.shape[-1:], ws, bs, eps)
    grads = torch.autograd.grad(y, (xs, ws, bs), dy.to(acc))
    return tuple(g.to(t.dtype) for g, t in zip(grads, (x, weight, bias), strict=True))
# --8<-- [end:reference]


# %% [markdown]
# ## The forward kernel
#
# One program per row, the row is one tile of `BLOCK_N` lanes (the next power of
# two above `N`). Masked lanes load 0 and are zeroed again after the mean is
# subtracted, so they add nothing to either sum. The program also stores the row's
# mean and `rstd`: 8 bytes per row that save the backward a reduction.


# %%
# --8<-- [start:forward-kernel]
@triton.jit
def layer_norm_fwd_kernel(
    x_ptr,  # input, [M, N] with unit column stride
    y_ptr,  # output, [M, N] contiguous
    w_ptr,  # weight, [N]
    b_ptr,  # bias, [N]
    mean_ptr,  # [M] fp32: the mean of each row, saved for the backward
    rstd_ptr,  # [M] fp32: 1 / sqrt(var + eps) of each row
    n_cols,  # N
    stride_xm,  # elements between x[i, 0] and x[i + 1, 0]
    stride_ym,  # elements between y[i, 0] and y[i + 1, 0]
    eps,  # added to the variance
    BLOCK_N: tl.constexpr,  # a power of two >= N: the whole row is one tile
):
    row = tl.program_id(0).to(tl.int64)  # (1)!
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)  # (2)!
    var = tl.sum(xc * xc, axis=0) / n_cols  # (3)!
    rstd = tl.rsqrt(var + tl.cast(eps, tl.float32))  # (4)!
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
# --8<-- [end:forward-kernel]


# %% [markdown]
# ## Several rows per program
#
# For short rows one program per row leaves each program little to load and many
# programs to schedule: at `N = 1024` a row is 2 KB of fp16. `ROWS` rows per program
# make one `[ROWS, BLOCK_N]` tile, one load of several rows, and the statistics are
# reduced along `axis=1`. The launcher picks the tiling by `N` from `FWD_TABLE`.


# %%
# --8<-- [start:forward-variants]
@triton.jit
def layer_norm_fwd_rows_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr,  # as layer_norm_fwd_kernel
    n_rows,  # M: the last tile's rows past M are masked
    n_cols, stride_xm, stride_ym, eps,
    ROWS: tl.constexpr,  # rows per program, one [ROWS, BLOCK_N] tile
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    rmask = rows < n_rows
    cmask = cols < n_cols
    mask = rmask[:, None] & cmask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    xc = tl.where(mask, x - mean[:, None], 0.0)
    var = tl.sum(xc * xc, axis=1) / n_cols
    rstd = tl.rsqrt(var + tl.cast(eps, tl.float32))
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    y_offs = rows[:, None] * stride_ym + cols[None, :]
    tl.store(y_ptr + y_offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + rows, mean, mask=rmask)
    tl.store(rstd_ptr + rows, rstd, mask=rmask)
# --8<-- [end:forward-variants]


# %% [markdown]
# ## The backward, stage 1: dx, and partial dW and db per group of rows
#
# With `x_hat = (x - mean) * rstd` and `g = dy * w`:
#
# * `dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat))`, means over the row;
# * `dW = sum over rows of dy * x_hat` and `db = sum over rows of dy`.
#
# `dx` is per row. dW and db are sums over all `M` rows. Each program takes every
# `num_programs`-th row, keeps its share of the two sums in registers, and writes
# it once, as its own row of a `(num_groups, N)` fp32 buffer: no two programs
# ever write the same address.


# %%
# --8<-- [start:backward-kernel]
@triton.jit
def layer_norm_bwd_kernel(
    dy_ptr,  # gradient of the output, [M, N] with unit column stride
    x_ptr,  # the forward's input, [M, N] with unit column stride
    w_ptr,  # weight, [N]
    mean_ptr,  # [M] fp32, from the forward
    rstd_ptr,  # [M] fp32, from the forward
    dx_ptr,  # gradient of the input, [M, N] contiguous
    dw_part_ptr,  # [num_groups, N] fp32: this program's share of dW, row program_id
    db_part_ptr,  # [num_groups, N] fp32: the same for db
    n_rows,  # M
    n_cols,  # N
    stride_dym,  # row stride of dy, in elements
    stride_xm,  # row stride of x
    stride_dxm,  # row stride of dx
    BLOCK_N: tl.constexpr,  # a power of two >= N
    NUM_STAGES: tl.constexpr,  # rows whose loads are in flight at once
):
    group = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for i in tl.range(group, n_rows, tl.num_programs(0), num_stages=NUM_STAGES):  # (1)!
        row = tl.cast(i, tl.int64)  # int64 before the multiply by a stride
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0)
        dy = dy.to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w  # dL/dx_hat; 0 in the masked lanes
        c1 = tl.sum(g * x_hat, axis=0) / n_cols
        c2 = tl.sum(g, axis=0) / n_cols
        dx = (g - (x_hat * c1 + c2)) * rstd  # (2)!
        dx = dx.to(dx_ptr.dtype.element_ty)
        tl.store(dx_ptr + row * stride_dxm + cols, dx, mask=mask)
        dw_acc += dy * x_hat
        db_acc += dy
    part = group.to(tl.int64) * n_cols + cols  # (3)!
    tl.store(dw_part_ptr + part, dw_acc, mask=mask)
    tl.store(db_part_ptr + part, db_acc, mask=mask)
# --8<-- [end:backward-kernel]


# %% [markdown]
# ## The backward for long rows: two passes over four chunks
#
# At `N = 16384` a whole row of `x`, `dy` and `w` in fp32 plus the two
# accumulators is more than an SM's registers hold, and the shipped stage 1
# spills. This variant splits the row into four `CHUNK`-wide pieces, each with its
# own pair of accumulators (four pairs: the same bytes as one full row, but no
# piece of `x` or `dy` has to stay live beside them). Pass 1 loads the four pieces
# for `c1` and `c2`; pass 2 loads them again (from L1 or L2), writes `dx` and adds
# to that piece's accumulators. `w` is loaded per row, not held.


# %%
# --8<-- [start:backward-long-kernel]
@triton.jit
def _bwd_piece(x_row, dy_row, w_ptr, cols, n_cols, mean, rstd):
    """x_hat, g = dy * w and dy of one piece of a row, fp32, 0 past N."""
    mask = cols < n_cols
    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_row + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
    return x_hat, dy * w, dy


@triton.jit
def _bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, cols, n_cols, mean, rstd, c1, c2,
                  dw, db):
    """Pass 2 on one piece: store its dx, return its accumulators updated."""
    x_hat, g, dy = _bwd_piece(x_row, dy_row, w_ptr, cols, n_cols, mean, rstd)
    dx = (g - (x_hat * c1 + c2)) * rstd
    tl.store(dx_row + cols, dx.to(dx_row.dtype.element_ty), mask=cols < n_cols)
    return dw + dy * x_hat, db + dy


@triton.jit
def layer_norm_bwd_long_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,  # as layer_norm_bwd_kernel
    CHUNK: tl.constexpr,  # BLOCK_N // 4: a row is four pieces
    NUM_STAGES: tl.constexpr,  # rows whose loads are in flight at once
):
    group = tl.program_id(0)
    c = tl.arange(0, CHUNK)
    dw0 = tl.zeros([CHUNK], dtype=tl.float32)
    dw1, dw2, dw3 = dw0, dw0, dw0
    db0, db1, db2, db3 = dw0, dw0, dw0, dw0
    for i in tl.range(group, n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        row = tl.cast(i, tl.int64)
        x_row = x_ptr + row * stride_xm
        dy_row = dy_ptr + row * stride_dym
        dx_row = dx_ptr + row * stride_dxm
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        h0, g0, _ = _bwd_piece(x_row, dy_row, w_ptr, c, n_cols, mean, rstd)
        h1, g1, _ = _bwd_piece(x_row, dy_row, w_ptr, c + CHUNK, n_cols, mean, rstd)
        h2, g2, _ = _bwd_piece(x_row, dy_row, w_ptr, c + 2 * CHUNK, n_cols, mean, rstd)
        h3, g3, _ = _bwd_piece(x_row, dy_row, w_ptr, c + 3 * CHUNK, n_cols, mean, rstd)
        c1 = tl.sum(g0 * h0 + g1 * h1 + g2 * h2 + g3 * h3, axis=0) / n_cols
        c2 = tl.sum(g0 + g1 + g2 + g3, axis=0) / n_cols
        dw0, db0 = _bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c, n_cols, mean, rstd,
                                 c1, c2, dw0, db0)
        dw1, db1 = _bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c + CHUNK, n_cols, mean,
                                 rstd, c1, c2, dw1, db1)
        dw2, db2 = _bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c + 2 * CHUNK, n_cols,
                                 mean, rstd, c1, c2, dw2, db2)
        dw3, db3 = _bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c + 3 * CHUNK, n_cols,
                                 mean, rstd, c1, c2, dw3, db3)
    part = group.to(tl.int64) * n_cols + c
    tl.store(dw_part_ptr + part, dw0, mask=c < n_cols)
    tl.store(db_part_ptr + part, db0, mask=c < n_cols)
    tl.store(dw_part_ptr + part + CHUNK, dw1, mask=c + CHUNK < n_cols)
    tl.store(db_part_ptr + part + CHUNK, db1, mask=c + CHUNK < n_cols)
    tl.store(dw_part_ptr + part + 2 * CHUNK, dw2, mask=c + 2 * CHUNK < n_cols)
    tl.store(db_part_ptr + part + 2 * CHUNK, db2, mask=c + 2 * CHUNK < n_cols)
    tl.store(dw_part_ptr + part + 3 * CHUNK, dw3, mask=c + 3 * CHUNK < n_cols)
    tl.store(db_part_ptr + part + 3 * CHUNK, db3, mask=c + 3 * CHUNK < n_cols)
# --8<-- [end:backward-long-kernel]


# %% [markdown]
# ## The backward, stage 2: add the partial rows up
#
# Each program owns `BLOCK_COLS` columns and walks down the `num_groups` partial
# rows in `BLOCK_G`-row tiles, in the same order on every run.


# %%
# --8<-- [start:reduce-kernel]
@triton.jit
def layer_norm_dwdb_kernel(
    dw_part_ptr,  # [num_groups, N] fp32, from stage 1
    db_part_ptr,  # [num_groups, N] fp32
    dw_ptr,  # [N], in the weight's dtype
    db_ptr,  # [N], in the bias's dtype
    n_groups,  # num_groups
    n_cols,  # N
    BLOCK_G: tl.constexpr,  # partial rows per step
    BLOCK_COLS: tl.constexpr,  # columns per program
    NUM_STAGES: tl.constexpr,  # partial-row tiles in flight at once
):
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_mask = cols < n_cols
    dw = tl.zeros([BLOCK_G, BLOCK_COLS], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_COLS], dtype=tl.float32)
    for g0 in tl.range(0, n_groups, BLOCK_G, num_stages=NUM_STAGES):
        groups = g0 + tl.arange(0, BLOCK_G)
        mask = (groups < n_groups)[:, None] & col_mask[None, :]
        offs = groups.to(tl.int64)[:, None] * n_cols + cols[None, :]  # past 2**31 too
        dw += tl.load(dw_part_ptr + offs, mask=mask, other=0.0)
        db += tl.load(db_part_ptr + offs, mask=mask, other=0.0)
    dw, db = tl.sum(dw, axis=0), tl.sum(db, axis=0)
    tl.store(dw_ptr + cols, dw.to(dw_ptr.dtype.element_ty), mask=col_mask)
    tl.store(db_ptr + cols, db.to(db_ptr.dtype.element_ty), mask=col_mask)
# --8<-- [end:reduce-kernel]


# %% [markdown]
# ## The launchers
#
# They validate, view `x` as `M` rows of `N`, size the launches and run the
# kernels. `layer_norm_fwd` returns `(y, mean, rstd)`; `layer_norm_bwd` returns
# `(dx, dweight, dbias)`. Called eagerly, they launch the kernels directly. The
# `triton_op` below calls them with `wrap=True`: then each launch goes through
# `wrap_triton`, so `torch.compile` and fake tensors see the kernel. Only there:
# called eagerly outside an operator, `wrap_triton` costs several times a direct
# launch's host time (the Launch overhead page measures both).


# %%
# --8<-- [start:launcher-limits]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_N = 32768  # (1)!
INT32_MAX = 2**31 - 1  # the most programs along grid axis 0


def _num_warps(block_n: int) -> int:
    """At most 32 fp32 values of a row per thread: 4 warps up to 2048, 8 up to 8192,
    then 16 and 32."""
    if block_n <= 2048:
        return 4
    return 8 if block_n <= 8192 else 16 if block_n <= 16384 else 32


def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device; a small stand-in for the interpreter."""
    return _gpu_sm_count(device.index) if device.type == "cuda" else 4


@functools.lru_cache
def _gpu_sm_count(index: int | None) -> int:
    """Asked once per device index, not on every launch."""
    return torch.cuda.get_device_properties(index).multi_processor_count


def _bwd_settings(block_n: int) -> tuple[int, int, int]:
    """Stage 1's (warps, programs per SM, pipeline stages), the fastest measured on the
    H200: the shorter the row, the more programs share an SM. At 16384 every setting
    spills; pipelining does not pay there."""
    if block_n <= 1024:
        return 4, 8, 3
    if block_n <= 2048:
        return 8, 4, 3
    if block_n <= 4096:
        return 8, 2, 3
    if block_n <= 8192:
        return 8, 1, 3
    return (8, 1, 1) if block_n == 16384 else (32, 1, 1)


# Per BLOCK_N, the forward's tiling where it is not one row per program with
# _num_warps warps: ("rows", ROWS, warps) for layer_norm_fwd_rows_kernel, ("row",
# BLOCK_N, warps) for the one-row kernel with other warps (the fastest measured on
# an H200: two rows per program at 1024, 8 warps at 16384). Stage 1 of the
# backward where not _bwd_settings: (kind, warps, programs per SM, stages), kind
# "long" for layer_norm_bwd_long_kernel (16 warps, one program per SM at 16384),
# "row" for layer_norm_bwd_kernel.
FWD_TABLE: dict[int, tuple[str, int, int]] = {
    1024: ("rows", 2, 4), 16384: ("row", 16384, 8)}
BWD_TABLE: dict[int, tuple[str, int, int, int]] = {16384: ("long", 16, 1, 1)}


def _bwd_plan(block_n: int) -> tuple[bool, int, int, int]:
    """(long kernel?, warps, programs per SM, stages) of stage 1."""
    plan = BWD_TABLE.get(int(block_n))  # a SymInt under torch.compile: not hashable
    if plan is not None:
        return plan[0] == "long", *plan[1:]
    return False, *_bwd_settings(block_n)


def _reduce_tile(block_n: int) -> tuple[int, int, int, int]:
    """Stage 2's (partial rows per step, columns per program, warps, stages): many
    programs over narrow columns when there are many partial rows (short rows), the
    128-byte tile pipelined otherwise."""
    if block_n <= 1024:
        return 256, 8, 8, 1
    if block_n <= 2048:
        return 256, 16, 8, 1
    return 64, 32, 4, 3


def _num_groups(n_rows: int, block_n: int, device: torch.device,
                num_groups: int | None = None) -> int:
    """Stage 1's grid: `num_groups` if given, else `_bwd_settings`' programs per SM; at
    most one per row. n_rows >= 1; under torch.compile with dynamic shapes it is a
    torch.SymInt, and so is the result."""
    if num_groups is None:
        per_sm = _bwd_plan(block_n)[2]  # (2)!
        return torch.sym_min(n_rows, _sm_count(device) * per_sm)
    g = num_groups
    if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= INT32_MAX:
        raise ValueError("num_groups must be a positive int (programs of stage 1), "
                         f"got {num_groups!r}")
    return torch.sym_min(num_groups, n_rows)  # a group with no rows would add zeros
# --8<-- [end:launcher-limits]


# --8<-- [start:launcher-launch]
def _launcher(kernel, wrap: bool):
    """kernel[grid](...) eagerly; wrap_triton(kernel)[grid](...) in a triton_op."""
    return wrap_triton(kernel) if wrap else kernel


def _launch(kernel, grid, args: tuple, constexprs: dict, num_warps: int,
            wrap: bool = False) -> None:
    """kernel[grid](*args, **constexprs, num_warps=num_warps), through wrap_triton
    when wrap (inside a triton_op)."""
    _launcher(kernel, wrap)[grid](*args, **constexprs, num_warps=num_warps)
# --8<-- [end:launcher-launch]


# --8<-- [start:launcher-checks]
def _check_tensor(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _rows(name: str, t: torch.Tensor) -> torch.Tensor:
    """t as an [M, N] view with unit column stride (N = t.shape[-1]), or a ValueError
    naming t."""
    if t.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension, got a 0-d tensor")
    m, n = math.prod(t.shape[:-1]), t.shape[-1]
    try:
        rows = t.view(m, n)
    except RuntimeError:
        raise ValueError(f"{name}'s leading dimensions cannot be viewed as one row "
                         f"dimension (strides {t.stride()} for shape "
                         f"{tuple(t.shape)}): pass {name}.contiguous()") from None
    if n > 1 and rows.stride(1) != 1:
        raise ValueError(f"{name} must have unit stride along its last dim, "
                         f"got strides {t.stride()}")
    return rows


def _check_inputs(x, weight, bias, eps) -> None:
    for name, t in (("x", x), ("weight", weight), ("bias", bias)):
        _check_tensor(name, t)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension (the one normalized), "
                         "got a 0-d tensor")
    n = x.shape[-1]
    for name, t in (("weight", weight), ("bias", bias)):
        if t.shape != (n,):
            raise ValueError(f"{name} must have shape (N,) = ({n},), the last dim of "
                             f"x, got {tuple(t.shape)}")
        if t.dtype != x.dtype:
            raise TypeError(f"{name} must have x's dtype {x.dtype}, got {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"{name} must be on x's device {x.device}, got {t.device}")
    if isinstance(eps, bool) or not isinstance(eps, Real):
        raise TypeError(f"eps must be a real number, got {type(eps).__name__}")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be positive and finite, got {eps}")
    if n > MAX_N:
        raise ValueError(f"x's last dim N = {n} is longer than MAX_N = {MAX_N}, "
                         "the longest row one tile holds")
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher-fwd]
def layer_norm_fwd(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   eps: float = 1e-5, *, wrap: bool = False):
    """(y, mean, rstd): y like x (contiguous), mean and rstd fp32 of shape (M,),
    M = x.numel() // N. wrap: launch through wrap_triton (inside a triton_op)."""
    _check_inputs(x, weight, bias, eps)
    return _layer_norm_fwd(x, weight, bias, eps, wrap)


def _layer_norm_fwd(x, weight, bias, eps, wrap=False):
    """layer_norm_fwd after _check_inputs, for a caller that has just made them."""
    x2 = _rows("x", x)
    n_rows, n_cols = x2.shape
    if n_rows > INT32_MAX:  # refused before anything is allocated
        raise ValueError(f"x has {n_rows} rows: one program per row allows at most "
                         "2**31 - 1")
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    if n_rows == 0 or n_cols == 0:  # an empty y (and NaN statistics for N = 0)
        return y, mean.fill_(float("nan")), rstd.fill_(float("nan"))
    block_n = triton.next_power_of_2(n_cols)
    w, b = weight.contiguous(), bias.contiguous()  # (1)!
    kind, size, warps = FWD_TABLE.get(  # int(): under torch.compile N may be a SymInt
        int(block_n), ("row", block_n, _num_warps(block_n)))
    if kind == "rows":
        _launch(layer_norm_fwd_rows_kernel, (triton.cdiv(n_rows, size),),
                (x2, y, w, b, mean, rstd, n_rows, n_cols, x2.stride(0), n_cols,
                 float(eps)), {"ROWS": size, "BLOCK_N": block_n}, warps, wrap)
    else:
        _launch(layer_norm_fwd_kernel, (n_rows,),
                (x2, y, w, b, mean, rstd, n_cols, x2.stride(0), n_cols, float(eps)),
                {"BLOCK_N": block_n}, warps, wrap)
    return y, mean, rstd
# --8<-- [end:launcher-fwd]


# --8<-- [start:launcher-bwd-checks]
def _check_bwd_inputs(dy, x, weight, mean, rstd) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, dy) as [M, N] row views, once every argument of layer_norm_bwd is checked."""
    for name, t in (("dy", dy), ("x", x), ("weight", weight)):
        _check_tensor(name, t)
    if dy.shape != x.shape or dy.dtype != x.dtype or dy.device != x.device:
        raise ValueError(f"dy must match x, got {tuple(dy.shape)} {dy.dtype} "
                         f"{dy.device} for x {tuple(x.shape)} {x.dtype} {x.device}")
    x2, dy2 = _rows("x", x), _rows("dy", dy)
    n_rows, n_cols = x2.shape
    if weight.shape != (n_cols,) or weight.dtype != x.dtype \
            or weight.device != x.device:
        raise ValueError(f"weight must be ({n_cols},) {x.dtype} on {x.device}, "
                         f"got {tuple(weight.shape)} {weight.dtype} {weight.device}")
    for name, t in (("mean", mean), ("rstd", rstd)):
        if not isinstance(t, torch.Tensor) or t.shape != (n_rows,) \
                or t.dtype != torch.float32 or t.device != x.device \
                or not t.is_contiguous():
            raise ValueError(f"{name} must be the forward's contiguous fp32 "
                             f"({n_rows},) tensor on {x.device}")
    if n_rows and n_cols > MAX_N:  # an empty x has zero sums, whatever its N
        raise ValueError(f"x's last dim N = {n_cols} is longer than MAX_N = {MAX_N}")
    return x2, dy2
# --8<-- [end:launcher-bwd-checks]


# --8<-- [start:launcher]
def layer_norm_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                   mean: torch.Tensor, rstd: torch.Tensor,
                   num_groups: int | None = None, *, wrap: bool = False):
    """(dx, dweight, dbias) from the forward's input, mean and rstd. num_groups: stage
    1's grid; wrap: launch through wrap_triton (inside a triton_op)."""
    x2, dy2 = _check_bwd_inputs(dy, x, weight, mean, rstd)
    n_rows, n_cols = x2.shape
    dx = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    if n_rows == 0 or n_cols == 0:  # a sum over no rows is zero
        return dx, torch.zeros_like(weight), torch.zeros_like(weight)
    block_n = triton.next_power_of_2(n_cols)
    groups = _num_groups(n_rows, block_n, x.device, num_groups)  # SymInt if dynamic
    dw_part = torch.empty(groups, n_cols, device=x.device, dtype=torch.float32)  # (2)!
    db_part = torch.empty(groups, n_cols, device=x.device, dtype=torch.float32)
    long, warps, _, stages = _bwd_plan(block_n)
    args = (dy2, x2, weight.contiguous(), mean, rstd, dx, dw_part, db_part,
            n_rows, n_cols, dy2.stride(0), x2.stride(0), n_cols)
    if long and block_n >= 4:
        _launch(layer_norm_bwd_long_kernel, (groups,), args,
                {"CHUNK": block_n // 4, "NUM_STAGES": stages}, warps, wrap)
    else:
        _launch(layer_norm_bwd_kernel, (groups,), args,
                {"BLOCK_N": block_n, "NUM_STAGES": stages}, warps, wrap)
    dw = torch.empty(n_cols, device=x.device, dtype=weight.dtype)
    db = torch.empty(n_cols, device=x.device, dtype=weight.dtype)
    block_g, block_cols, warps, stages = _reduce_tile(block_n)
    _launch(layer_norm_dwdb_kernel, (triton.cdiv(n_cols, block_cols),),
            (dw_part, db_part, dw, db, groups, n_cols),
            {"BLOCK_G": block_g, "BLOCK_COLS": block_cols, "NUM_STAGES": stages},
            warps, wrap)
    return dx, dw, db
# --8<-- [end:launcher]


# %% [markdown]
# ## Autograd
#
# `torch.autograd.Function` ties the two launchers together: the forward saves
# `x`, `weight`, `mean` and `rstd`; the backward gets `dy` from autograd. Autograd
# may hand over a `dy` with any strides (an `expand`ed tensor of ones after
# `y.sum()`, for instance), so the backward makes it contiguous first.
# When no gradient can flow (inference, `torch.no_grad()`, inputs that do not
# require grad), `layer_norm` calls the forward launcher directly: nothing needs
# saving, and `Function.apply` is host time the GPU may end up waiting for.


# %%
# --8<-- [start:autograd]
class LayerNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = layer_norm_fwd(x, weight, bias, eps)
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = layer_norm_bwd(dy.contiguous(), x, weight, mean, rstd)
        return dx, dw, db, None  # no gradient for eps


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> torch.Tensor:
    """Layer norm over the last dim of x, computed in fp32; differentiable in x, weight
    and bias.

    x: float16, bfloat16 or float32, any leading shape, unit stride along the last
    dim, leading dims that view as one row dim (else pass x.contiguous()). weight,
    bias: (N,), x's dtype and device (any strides: made contiguous, N elements each).
    """
    _check_inputs(x, weight, bias, eps)
    needs_grad = x.requires_grad or weight.requires_grad or bias.requires_grad
    if torch.is_grad_enabled() and needs_grad:
        return LayerNormFunction.apply(x, weight, bias, eps)
    return _layer_norm_fwd(x, weight, bias, eps)[0]  # (1)!
# --8<-- [end:autograd]


# %% [markdown]
# ## For `torch.compile`: a `triton_op`
#
# The same launchers registered as `torch.ops.tit.layer_norm_fwd` and
# `torch.ops.tit.layer_norm_bwd` (see the SiLU of `examples/torch_op.py`), with
# the backward attached by `register_autograd`. `torch.compile(fullgraph=True)`
# traces through `layer_norm_op` and sees the kernels instead of a graph break.


# %%
# --8<-- [start:triton-op]
@triton_op("tit::layer_norm_fwd", mutates_args={})
def layer_norm_fwd_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                      eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return layer_norm_fwd(x, weight, bias, eps, wrap=True)


@triton_op("tit::layer_norm_bwd", mutates_args={})
def layer_norm_bwd_op(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      mean: torch.Tensor, rstd: torch.Tensor
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return layer_norm_bwd(dy, x, weight, mean, rstd, wrap=True)


def _setup_context(ctx, inputs, output):
    x, weight, _bias, _eps = inputs
    _y, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)


def _backward(ctx, dy, _dmean, _drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dw, db = layer_norm_bwd_op(dy.contiguous(), x, weight, mean, rstd)
    return dx, dw, db, None


layer_norm_fwd_op.register_autograd(_backward, setup_context=_setup_context)


def layer_norm_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                  eps: float = 1e-5) -> torch.Tensor:
    """layer_norm through the registered operator: checked here, then
    torch.ops.tit.layer_norm_fwd."""
    _check_inputs(x, weight, bias, eps)
    return layer_norm_fwd_op(x, weight, bias, float(eps))[0]
# --8<-- [end:triton-op]


# %% [markdown]
# ## Checked from outside: float64 autograd and `opcheck`
#
# The launchers take no float64, so `gradcheck` cannot run on them. The
# comparison it makes can be done by hand: both entry points' output and three
# gradients in fp32 against torch's autograd run in float64 on
# `F.layer_norm`. Then `opcheck` on both registered operators. On a GPU that
# includes `test_aot_dispatch_dynamic`, which traces the backward with symbolic
# shapes: the row count is a `torch.SymInt` there, and so is stage 1's group
# count (`torch.sym_min` in `_num_groups` keeps it one instead of asking for a
# plain int). On the CPU only two of `opcheck`'s checks can run for a
# `triton_op` (see "Shipping in PyTorch").


# %%
# --8<-- [start:autograd-checks]
def check_gradients(rows: int = 6, cols: int = 37, eps: float = 1e-5) -> None:
    x, dy = (torch.randn(rows, cols, device=DEVICE) for _ in range(2))
    w, b = torch.randn(cols, device=DEVICE), torch.randn(cols, device=DEVICE)
    x64, w64, b64 = (t.double().requires_grad_(True) for t in (x, w, b))
    y64 = F.layer_norm(x64, (cols,), w64, b64, eps)
    want = (y64.detach(), *torch.autograd.grad(y64, (x64, w64, b64), dy.double()))
    for fn in (layer_norm, layer_norm_op):
        xg, wg, bg = (t.clone().requires_grad_(True) for t in (x, w, b))
        y = fn(xg, wg, bg, eps)
        got = (y.detach(), *torch.autograd.grad(y, (xg, wg, bg), dy))
        for name, g, r in zip(("y", "dx", "dweight", "dbias"), got, want, strict=True):
            msg = lambda m, f=fn.__name__, n=name: f"{f}, {n}: {m}"
            torch.testing.assert_close(g.double(), r, rtol=1e-4, atol=1e-4, msg=msg)
    checks = ("test_schema", "test_autograd_registration")
    if DEVICE.type == "cuda":
        checks += ("test_faketensor", "test_aot_dispatch_dynamic")
    xg = x.clone().requires_grad_(True)
    torch.library.opcheck(layer_norm_fwd_op, (xg, w, b, eps), test_utils=checks)
    _, mean, rstd = layer_norm_fwd(x, w, b, eps)
    torch.library.opcheck(layer_norm_bwd_op, (dy, x, w, mean, rstd), test_utils=checks)
    print("layer_norm: y, dx, dweight and dbias match float64 autograd; opcheck "
          f"{list(checks)} passed on {DEVICE.type}")
# --8<-- [end:autograd-checks]


# %% [markdown]
# ## In a model, under `torch.compile`
#
# A pre-norm residual MLP. Compiled with `fullgraph=True`, once with static
# shapes and once with `dynamic=True` (the row count symbolic, as a model that
# sees many sequence lengths gets it), and compared with eager mode: the output
# and every parameter's gradient.


# %%
# --8<-- [start:model]
class PreNormMLP(torch.nn.Module):
    def __init__(self, d: int = 64, hidden: int = 128):
        super().__init__()
        self.norm_weight = torch.nn.Parameter(torch.ones(d))
        self.norm_bias = torch.nn.Parameter(torch.zeros(d))
        self.up, self.down = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = layer_norm_op(x, self.norm_weight, self.norm_bias)
        return x + self.down(torch.relu(self.up(h)))


def check_model(batch: int = 3, seq: int = 11, d: int = 64) -> None:
    torch.manual_seed(0)
    model = PreNormMLP(d).to(DEVICE)
    x = torch.randn(batch, seq, d, device=DEVICE)
    eager = model(x)
    eager.square().mean().backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    if DEVICE.type != "cuda":  # (1)!
        print("layer_norm: MLP forward and backward ran eagerly (torch.compile of a "
              "triton_op needs a GPU)")
        return
    for dynamic in (False, True):
        torch.compiler.reset()
        model.zero_grad()
        out = torch.compile(model, fullgraph=True, dynamic=dynamic)(x)
        out.square().mean().backward()
        torch.testing.assert_close(out, eager, rtol=2e-3, atol=2e-3)
        for name, p in model.named_parameters():
            msg = lambda m, n=name, dyn=dynamic: f"dynamic={dyn}, {n}: {m}"
            torch.testing.assert_close(p.grad, grads[name], rtol=2e-3, atol=2e-3,
                                       msg=msg)
    print("layer_norm: MLP under torch.compile(fullgraph=True), static and dynamic "
          "shapes, matches eager")
# --8<-- [end:model]


# %% [markdown]
# ## Check it
#
# Odd row lengths, a 3-D input, a row-strided view, and the gradients of all
# three inputs against torch's autograd, with several rows per group.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1), (7, 17), (33, 781), (5, 1025)), eps=1e-5) -> None:
    tol = {"rtol": 1e-4, "atol": 1e-4}
    for m, n in shapes:
        x = 3 * torch.randn(m, n, device=DEVICE) + 1
        w, b = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
        xg, wg, bg = (t.clone().requires_grad_(True) for t in (x, w, b))
        y = layer_norm(xg, wg, bg, eps)
        torch.testing.assert_close(y, layer_norm_torch(x, w, b, eps), **tol)
        dy = torch.randn_like(y)
        y.backward(dy)
        wants = layer_norm_grads_torch(dy, x, w, b, eps)
        for got, want in zip((xg.grad, wg.grad, bg.grad), wants, strict=True):
            torch.testing.assert_close(got, want, **tol)
    # 3-D, rows 600 apart, a storage offset
    x = torch.randn(2, 9, 2 * 300, device=DEVICE)[:, 1:7, 5:305]
    w, b = torch.randn(300, device=DEVICE), torch.randn(300, device=DEVICE)
    x2 = x.reshape(-1, 300)
    want = layer_norm_torch(x2, w, b)
    torch.testing.assert_close(layer_norm_op(x2, w, b), want, **tol)
    want = layer_norm_torch(x[0], w, b)
    torch.testing.assert_close(layer_norm(x[0], w, b), want, **tol)
    print("layer_norm: forward and the gradients of x, weight and bias match torch on "
          f"{DEVICE.type} for shapes {[tuple(s) for s in shapes]} and a row-strided "
          "view")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
    check_gradients()
    check_model()
