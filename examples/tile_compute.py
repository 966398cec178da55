# %% [markdown]
# # Compute inside a tile: `tl.dot`, dtypes, loops and custom reductions
#
# The earlier chapters move data: load a tile, add, store. This file is about the
# arithmetic a program does on the tiles it holds, in a few small kernels:
#
# * the dtype an operation on two blocks returns, checked at compile time;
# * a batched matmul: `tl.dot` on tiles (K at least 16), an fp32 accumulator,
#   `input_precision` for fp32 inputs (`"ieee"`, `"tf32"`, `"tf32x3"`), `.to()`
#   back to the output dtype, `tl.expand_dims`, and a K loop pipelined by
#   `tl.range(..., num_stages=)`;
# * a polynomial by Horner's rule with a loop that `tl.static_range` unrolls at
#   compile time, scalar coefficients broadcast against a block, and dtype promotion
#   checked at compile time with `tl.static_assert`;
# * a row argmax whose `tl.reduce` takes a (value, index) pair and a combine function
#   of our own, inside a runtime loop over column blocks;
# * an `if` on a block, which the compiler refuses (the interpreter does not), beside
#   the per-lane `tl.where`.
#
# Run it with `python examples/tile_compute.py`.

# %%
# --8<-- [start:setup]
import functools
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## `tl.dot`: a batched matmul
#
# One program computes one `BLOCK_M x BLOCK_N` tile of one matrix of the batch,
# walking along K. `tl.dot(a, b, acc)` multiplies a `(BLOCK_M, BLOCK_K)` tile by a
# `(BLOCK_K, BLOCK_N)` tile and adds the product to `acc`: K must be at least 16 (32
# for 8-bit inputs; this launcher keeps M and N at 16 or more too), and the
# accumulator is fp32 whatever the inputs are.


# %%
# --8<-- [start:bmm-kernel]
@triton.jit
def bmm_kernel(
    a_ptr, b_ptr, c_ptr,  # (batch, M, K), (batch, K, N), (batch, M, N), any strides
    M, N, K,
    stride_ab, stride_am, stride_ak,
    stride_bb, stride_bk, stride_bn,
    stride_cb, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  # each >= 16
    PRECISION: tl.constexpr,  # "ieee", "tf32" or "tf32x3": how fp32 inputs multiply
    NUM_STAGES: tl.constexpr,  # how many K steps of loads are in flight at once
):
    batch = tl.program_id(axis=0).to(tl.int64)  # (1)!
    offs_m = tl.program_id(axis=1) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(axis=2) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rows = tl.expand_dims(offs_m, 1)  # (BLOCK_M, 1): the same as offs_m[:, None]  (2)!
    cols = tl.expand_dims(offs_n, 0)  # (1, BLOCK_N): the same as offs_n[None, :]
    a_base = a_ptr + batch * stride_ab
    b_base = b_ptr + batch * stride_bb
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # (3)!
    for k0 in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):  # (4)!
        k = k0 + offs_k
        a = tl.load(a_base + rows * stride_am + k[None, :] * stride_ak,
                    mask=(rows < M) & (k[None, :] < K), other=0.0)  # zeros add nothing
        b = tl.load(b_base + k[:, None] * stride_bk + cols * stride_bn,
                    mask=(k[:, None] < K) & (cols < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)  # (5)!
    c = acc.to(c_ptr.dtype.element_ty)  # (6)!
    c_ptrs = c_ptr + batch * stride_cb + rows * stride_cm + cols * stride_cn
    tl.store(c_ptrs, c, mask=(rows < M) & (cols < N))
# --8<-- [end:bmm-kernel]


# %% [markdown]
# The launcher checks everything the kernel assumes: three dimensions, one dtype,
# one device, matching sizes, offsets inside one matrix that fit in int32 (the batch
# offset is int64), and grid axes 1 and 2 within CUDA's 65,535.


# %%
# --8<-- [start:bmm-launcher]
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
PRECISIONS = ("ieee", "tf32", "tf32x3")
MAX_GRID_YZ = 65_535  # CUDA's limit on grid axes 1 and 2
INT32_MAX = 2**31 - 1


def _check_tensor(name: str, t, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _check_pow2(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or v & (v - 1):
        raise ValueError(f"{name} must be a power of two >= {lo}, got {v!r}")


@functools.lru_cache
def _capability(index: int) -> tuple[int, int]:
    return torch.cuda.get_device_capability(index)  # once per device, not per call


def _largest_offset(t: torch.Tensor, dims) -> int:
    """The largest element offset the kernel computes in int32 arithmetic, on `dims`."""
    return sum((t.shape[d] - 1) * t.stride(d) for d in dims if t.shape[d] > 0)


def _check_bmm(a, b, input_precision, num_stages, num_ctas) -> None:
    _check_tensor("a", a, 3)
    _check_tensor("b", b, 3)
    if b.dtype != a.dtype:
        raise TypeError("a and b must have the same dtype, "
                        f"got {a.dtype} and {b.dtype}")
    if b.device != a.device:
        raise ValueError("a and b must be on the same device, "
                         f"got {a.device} and {b.device}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError("a (batch, M, K) and b (batch, K, N) do not match: got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if input_precision not in PRECISIONS:
        raise ValueError(f"input_precision must be one of {PRECISIONS}, "
                         f"got {input_precision!r}")
    is_int = isinstance(num_stages, int) and not isinstance(num_stages, bool)
    if num_stages is not None and not (is_int and 1 <= num_stages <= 6):
        raise ValueError("num_stages must be None or an int from 1 to 6, "
                         f"got {num_stages!r}")
    if num_ctas not in (1, 2) or isinstance(num_ctas, bool):
        raise ValueError(f"num_ctas must be 1 or 2, got {num_ctas!r}")
    if num_ctas > 1 and a.is_cuda and _capability(a.device.index) < (9, 0):
        sm = "".join(map(str, _capability(a.device.index)))
        raise ValueError(f"num_ctas={num_ctas} needs an sm_90 (Hopper) GPU or newer; "
                         f"this one is sm_{sm}")
    for name, t in (("a", a), ("b", b)):
        if _largest_offset(t, (1, 2)) > INT32_MAX:
            raise ValueError(f"{name} has offsets past 2**31 - 1 inside one matrix: "
                             "this kernel computes them in int32")
    M, N, K = a.shape[1], b.shape[2], a.shape[2]
    if M * N - 1 > INT32_MAX:  # the output is contiguous: its last offset is M * N - 1
        raise ValueError(f"the output has {M * N} elements per matrix, "
                         "more than 2**31 - 1: int32 offsets")
    if K > 2**31 - 32:  # the K loop's counter is int32: k0 + BLOCK_K must not wrap
        raise ValueError(f"a has K = {K} columns, more than 2**31 - 32: "
                         "the K loop counts in int32")


def _pow2_block(n: int, lo: int, hi: int) -> int:
    return min(hi, max(lo, triton.next_power_of_2(n)))


def bmm_config(M: int, N: int, K: int, dtype: torch.dtype,
               input_precision: str) -> dict:
    """Tile shape, warps and pipelining depth: a rule read off a sweep on the H200,
    not a runtime search."""
    fma = dtype == torch.float32 and input_precision == "ieee"  # on the FMA units
    return {  # tl.dot needs K >= 16; M and N >= 16 by choice
        "BLOCK_M": _pow2_block(M, 16, 64 if fma else 128),
        "BLOCK_N": _pow2_block(N, 16, 64),
        "BLOCK_K": _pow2_block(K, 16, 32),
        "num_warps": 4,
        "NUM_STAGES": 3 if fma else (1 if K <= 128 else 2),  # 1 for <= 4 K steps
    }


def bmm(a: torch.Tensor, b: torch.Tensor, *, input_precision: str = "ieee",
        num_stages: int | None = None, num_ctas: int = 1) -> torch.Tensor:
    """a @ b for a of shape (batch, M, K) and b of shape (batch, K, N), any strides.

    fp32 accumulation, the input dtype out. `input_precision` only matters for fp32
    inputs: "ieee" is full fp32 (as torch's default), "tf32" rounds the inputs to 10
    mantissa bits on tensor cores, "tf32x3" splits each input in two tf32 parts to get
    most of fp32 back. `num_stages` overrides the pipelining depth of the K loop that
    `bmm_config` picks. `num_ctas=2` runs each program as a cluster of two thread
    blocks (Hopper and newer).
    """
    _check_bmm(a, b, input_precision, num_stages, num_ctas)
    (batch, M, K), N = a.shape, b.shape[2]
    c = torch.empty(batch, M, N, device=a.device, dtype=a.dtype)
    if c.numel() == 0:
        return c
    if K == 0:
        return c.zero_()  # an empty sum
    config = bmm_config(M, N, K, a.dtype, input_precision)
    if num_stages is not None:
        config["NUM_STAGES"] = num_stages
    grid = (batch, triton.cdiv(M, config["BLOCK_M"]), triton.cdiv(N, config["BLOCK_N"]))
    if max(grid[1:]) > MAX_GRID_YZ:
        raise ValueError(f"M={M} and N={N} need a grid of {grid[1:]} tiles, but grid "
                         f"axes 1 and 2 hold at most {MAX_GRID_YZ}")
    bmm_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                     PRECISION=input_precision, num_ctas=num_ctas, **config)
    return c


def bmm_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference (torch.bmm; full fp32 unless tf32 is switched on)."""
    return torch.bmm(a, b)
# --8<-- [end:bmm-launcher]


# %%
# --8<-- [start:two-ctas]
def check_two_ctas(device=DEVICE) -> None:
    """num_ctas=2 computes the same matrix as one thread block per program."""
    a = torch.randn(4, 64, 48, device=device)
    b = torch.randn(4, 48, 80, device=device)
    torch.testing.assert_close(bmm(a, b, num_ctas=2), bmm(a, b), rtol=0, atol=0)
# --8<-- [end:two-ctas]


# %% [markdown]
# ## Dtypes: what an operation on two blocks returns
#
# Triton promotes like C more than like torch in one place: int32 with uint32 gives
# uint32 (torch refuses to mix them, NumPy gives int64). A Python number takes the
# block's type where it can, so `int8_block * 2` is still int8 and wraps on overflow.
# Each rule below is checked by `tl.static_assert` when the kernel compiles: a wrong
# rule fails the launch.


# %%
# --8<-- [start:promotion]
@triton.jit
def promotion_rules_kernel(f16_ptr, f32_ptr, i8_ptr, i32_ptr, u32_ptr, i64_ptr):
    offs = tl.arange(0, 16)
    f16, f32 = tl.load(f16_ptr + offs), tl.load(f32_ptr + offs)
    i8, i32 = tl.load(i8_ptr + offs), tl.load(i32_ptr + offs)
    u32, i64 = tl.load(u32_ptr + offs), tl.load(i64_ptr + offs)
    tl.static_assert((f16 + f32).dtype == tl.float32)  # the wider float
    tl.static_assert((i32 + f16).dtype == tl.float16)  # int with float: the float
    tl.static_assert((i32 + i64).dtype == tl.int64)  # the wider int
    tl.static_assert((i32 + u32).dtype == tl.uint32)  # signed with unsigned: unsigned
    tl.static_assert((f16 + 1.5).dtype == tl.float16)  # a Python float: the block's
    tl.static_assert((i32 + 1.5).dtype == tl.float32)  # ... an int block becomes fp32
    tl.static_assert((i8 * 2).dtype == tl.int8)  # keeps int8: 100 * 2 wraps
    tl.static_assert(f16.to(tl.float32).dtype == tl.float32)  # .to() converts


def check_promotion_rules(device=None) -> None:
    """Compile (and run) the kernel above: each tl.static_assert is checked then."""
    device = DEVICE if device is None else device
    dtypes = (torch.float16, torch.float32, torch.int8, torch.int32, torch.uint32,
              torch.int64)
    bufs = [torch.zeros(16, device=device, dtype=d) for d in dtypes]
    promotion_rules_kernel[(1,)](*bufs)
# --8<-- [end:promotion]


# %% [markdown]
# ## `tl.static_range`, scalars and promotion: a polynomial
#
# `y = c[0] x^d + c[1] x^(d-1) + ... + c[d]` by Horner's rule. The degree is a
# `tl.constexpr`, so `tl.static_range` unrolls the loop while compiling: the kernel is a
# straight line of `d` multiply-adds. Each coefficient is a scalar load, broadcast
# against the block.


# %%
# --8<-- [start:polyval-kernel]
@triton.jit
def polyval_kernel(
    x_ptr,  # pointer to a contiguous input of n elements (fp16, bf16 or fp32)
    coef_ptr,  # pointer to DEGREE + 1 fp32 coefficients, highest power first
    y_ptr,  # pointer to the output, x's dtype
    n,
    DEGREE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(axis=0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.full((BLOCK,), tl.load(coef_ptr), dtype=tl.float32)  # c[0]: 0 * inf is NaN
    for i in tl.static_range(1, DEGREE + 1):  # (1)!
        c = tl.load(coef_ptr + i)  # a scalar: one value for the whole block
        y = y * x + c  # (2)!
    tl.static_assert(y.dtype == tl.float32)  # (3)!
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:polyval-kernel]


# %%
# --8<-- [start:polyval-launcher]
MAX_DEGREE = 16  # each degree is a separate compiled kernel, unrolled: keep them few


def _check_polyval(x, coeffs, block_size) -> None:
    _check_tensor("x", x, x.dim() if isinstance(x, torch.Tensor) else 1)
    if not isinstance(coeffs, torch.Tensor):
        raise TypeError(f"coeffs must be a torch.Tensor, got {type(coeffs).__name__}")
    if coeffs.dim() != 1 or not 1 <= coeffs.numel() <= MAX_DEGREE + 1:
        raise ValueError(f"coeffs must be 1-D with 1 to {MAX_DEGREE + 1} values, "
                         f"got shape {tuple(coeffs.shape)}")
    if not coeffs.is_floating_point():
        raise TypeError(f"coeffs must be a float tensor, got {coeffs.dtype}")
    if coeffs.device != x.device:
        raise ValueError("x and coeffs must be on the same device, "
                         f"got {x.device} and {coeffs.device}")
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    _check_pow2("block_size", block_size, 16)


def polyval(x: torch.Tensor, coeffs: torch.Tensor, *,
            block_size: int = 1024) -> torch.Tensor:
    """The polynomial with `coeffs` (highest power first, as numpy.polyval) at each x.

    Computed in fp32 whatever x's dtype; the result has x's dtype and shape.
    """
    _check_polyval(x, coeffs, block_size)
    coef = coeffs.to(torch.float32).contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        grid = (triton.cdiv(n, block_size),)
        polyval_kernel[grid](x, coef, y, n, DEGREE=coef.numel() - 1, BLOCK=block_size)
    return y


def polyval_torch(x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    """The plain torch reference: the same Horner steps in fp32."""
    c = coeffs.float().tolist()
    x32, y = x.float(), torch.full(x.shape, c[0], device=x.device, dtype=torch.float32)
    for ci in c[1:]:
        y = y * x32 + ci
    return y.to(x.dtype)
# --8<-- [end:polyval-launcher]


# %% [markdown]
# ## A condition on a block: refused by the compiler, not by the interpreter
#
# `if` takes a scalar. `relu_if_kernel` asks `if x > 0:` of a whole block, which has one
# answer per lane: the compiler refuses it. Triton's CPU interpreter does not: it treats
# the condition of any block of more than one element as true, so the kernel runs and
# returns x unchanged, negative lanes included. `relu_where_kernel` is the per-lane
# version, with `tl.where`.


# %%
# --8<-- [start:block-condition]
@triton.jit
def relu_if_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if x > 0:  # (1)!
        y = x
    else:
        y = tl.zeros_like(x)
    tl.store(y_ptr + offs, y, mask=offs < n)


@triton.jit
def relu_where_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.where(x < 0, 0.0, x), mask=offs < n)  # (2)!


def relu(x: torch.Tensor, *, kernel=relu_where_kernel,
         block_size: int = 1024) -> torch.Tensor:
    """max(x, 0) by `relu_where_kernel`, or by `relu_if_kernel` to see it refused."""
    _check_tensor("x", x, 1)
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    if kernel not in (relu_where_kernel, relu_if_kernel):
        raise ValueError("kernel must be relu_where_kernel or relu_if_kernel")
    _check_pow2("block_size", block_size, 2)
    y = torch.empty_like(x)
    if x.numel():
        kernel[(triton.cdiv(x.numel(), block_size),)](x, y, x.numel(), BLOCK=block_size)
    return y
# --8<-- [end:block-condition]


# %%
# --8<-- [start:block-condition-demo]
def show_block_condition(device=DEVICE) -> None:
    """Both ReLU kernels on four values: what each gives, or the compiler's refusal."""
    x = torch.tensor([-2.0, -0.5, 0.5, 3.0], device=device)
    print("tl.where:", relu(x).tolist())
    try:
        print("if on a block, interpreter:", relu(x, kernel=relu_if_kernel).tolist())
    except triton.CompilationError as err:
        print("if on a block, compiler:", type(err).__name__)
# --8<-- [end:block-condition-demo]


# %% [markdown]
# ## `tl.reduce` with a combine function: argmax
#
# `tl.max` gives the largest value of a block; the argmax needs its index too, and
# torch's rules for ties (the first index wins) and NaN (NaN is the largest). A combine
# function takes two (value, index) pairs and returns the winner. The same function
# serves twice: element-wise across the loop's column blocks, then in `tl.reduce`
# across the lanes of the last block.


# %%
# --8<-- [start:argmax-kernel]
@triton.jit
def argmax_combine(v1, i1, v2, i2):
    """The pair torch.argmax picks: larger value, NaN above all, then smaller index."""
    nan1, nan2 = v1 != v1, v2 != v2
    tie = (v1 == v2) | (nan1 & nan2)
    take2 = (nan2 & ~nan1) | ((v2 > v1) & ~nan1) | (tie & (i2 < i1))  # (1)!
    return tl.where(take2, v2, v1), tl.where(take2, i2, i1)


@triton.jit
def row_argmax_kernel(
    x_ptr,  # pointer to an (n_rows, n_cols) input, any strides
    out_ptr,  # pointer to the (n_rows,) int64 output
    n_cols,
    stride_row, stride_col,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(axis=0).to(tl.int64)
    lanes = tl.arange(0, BLOCK_N)
    best_v = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
    best_i = tl.full((BLOCK_N,), 2**31 - 1, dtype=tl.int32)  # loses every real tie
    for start in range(0, n_cols, BLOCK_N):  # (2)!
        cols = start + lanes
        ptrs = x_ptr + row * stride_row + cols.to(tl.int64) * stride_col  # (3)!
        v = tl.load(ptrs, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        best_v, best_i = argmax_combine(best_v, best_i, v, cols)
    _, idx = tl.reduce((best_v, best_i), 0, argmax_combine)  # (4)!
    tl.store(out_ptr + row, idx.to(tl.int64))
# --8<-- [end:argmax-kernel]


# %%
# --8<-- [start:argmax-launcher]
def row_argmax(x: torch.Tensor, *, block_n: int = 1024) -> torch.Tensor:
    """torch.argmax(x, dim=1) for a 2-D `x` of any strides (views included)."""
    _check_tensor("x", x, 2)
    if x.shape[1] == 0:
        raise ValueError(f"x must have at least one column, got shape {tuple(x.shape)}")
    _check_pow2("block_n", block_n, 16)
    if x.shape[1] > 2**31 - block_n:  # int32 columns: start + block_n must not wrap
        raise ValueError(f"x has {x.shape[1]} columns, more than 2**31 - block_n: "
                         "the column loop counts in int32")
    out = torch.empty(x.shape[0], device=x.device, dtype=torch.int64)
    if x.shape[0]:
        grid = (x.shape[0],)
        row_argmax_kernel[grid](x, out, x.shape[1], *x.stride(), BLOCK_N=block_n)
    return out


def row_argmax_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return torch.argmax(x, dim=1)
# --8<-- [end:argmax-launcher]


# %% [markdown]
# ## Check it
#
# Odd sizes that leave ragged tiles in every dimension, a transposed operand, ties and a
# NaN for the argmax. fp32 `ieee` is compared with torch at full fp32 (tf32 off).


# %%
# --8<-- [start:check]
def self_check() -> None:
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")  # the reference in full fp32
    try:
        for batch, m, n, k in ((1, 1, 1, 1), (3, 17, 33, 65), (2, 130, 70, 19)):
            a = torch.randn(batch, m, k, device=DEVICE)
            b = torch.randn(batch, n, k, device=DEVICE).transpose(1, 2)  # a view
            ref = bmm_torch(a, b)
            torch.testing.assert_close(bmm(a, b), ref, rtol=1e-4, atol=1e-4)
    finally:
        torch.set_float32_matmul_precision(previous)
    x = torch.randn(1000, device=DEVICE)
    coeffs = torch.tensor([0.5, -1.0, 2.0, 3.0], device=DEVICE)
    y = polyval(x, coeffs)
    torch.testing.assert_close(y, polyval_torch(x, coeffs), rtol=1e-6, atol=1e-5)
    x = torch.randn(5, 3000, device=DEVICE)
    x[1, 7] = x[1, 2000] = 100.0  # a tie: the first index wins
    x[2, 1234] = float("nan")  # NaN wins
    torch.testing.assert_close(row_argmax(x), row_argmax_torch(x), rtol=0, atol=0)
    check_promotion_rules()
    x = torch.randn(1000, device=DEVICE)
    torch.testing.assert_close(relu(x), torch.relu(x), rtol=0, atol=0)
    print(f"tile_compute: bmm, polyval, row_argmax and relu match torch on "
          f"{DEVICE.type}; the promotion rules hold")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
