# %% [markdown]
# # Launching a kernel: checks, grids and arguments
#
# The host side of a Triton kernel: what a launcher checks before it launches,
# how it sizes a 1-D, 2-D or 3-D grid, and what each kind of kernel argument
# turns into on the way to the GPU.
#
# You will see:
#
# * a kernel that takes every kind of argument: tensors (they arrive as pointers),
#   sizes, strides, runtime scalars and `tl.constexpr` meta-parameters;
# * a launcher that fails fast and loud on bad shapes, dtypes, devices, and on a
#   dtype the GPU is too old for (compute capability);
# * a grid given as a function of the meta-parameters, and grids given as tuples;
# * one kernel each for a 1-D, a 2-D and a 3-D grid.
#
# Run it with `python examples/launch_grids.py`.

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
# ## Every kind of argument
#
# `y = relu?(alpha * x + beta)` over a 1-D tensor that may be strided. The comments
# say what each argument becomes when the launcher passes it.


# %%
# --8<-- [start:args-kernel]
@triton.jit
def scale_shift_kernel(
    x_ptr,  # tensor -> pointer to x's first element (its dtype rides along)
    out_ptr,  # tensor -> pointer to the output
    n,  # size: a Python int becomes a 32-bit (or 64-bit) integer scalar
    stride_x,  # stride: elements between x[i] and x[i + 1]
    alpha,  # runtime scalar: a new value does not recompile
    beta,  # runtime scalar
    RELU: tl.constexpr,  # (1)!
    BLOCK_SIZE: tl.constexpr,  # tile size: shapes must be known at compile time
):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride_x, mask=mask)  # (2)!
    y = x * alpha + beta
    if RELU:  # resolved while compiling: the other branch is not in the binary
        y = tl.maximum(y, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN
    tl.store(out_ptr + offs, y, mask=mask)  # the store casts y to out's dtype
# --8<-- [end:args-kernel]


# %% [markdown]
# ## Validate, then launch
#
# Host code runs in Python before anything reaches the GPU, so that is the place to
# refuse bad input with a message a person can act on. A kernel that reads past the
# end of a tensor or gets the wrong dtype does not raise: it returns garbage or
# brings down the CUDA context several calls later.


# %%
# --8<-- [start:validate]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# A feature flag keyed on the GPU generation: this project runs bf16 kernels only
# on GPUs with native bf16 arithmetic, Ampere (compute capability 8.0) and newer.
MIN_CAPABILITY = {torch.bfloat16: (8, 0)}


@functools.lru_cache  # asked once per device (a tensor's device names its index)
def device_capability(device: torch.device):
    """(major, minor) of a GPU; None on the CPU, where the interpreter has no limits."""
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_capability(device)


def check_tensor(name: str, t, *, dim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != dim:
        raise ValueError(f"{name} must be {dim}-D, got shape {tuple(t.shape)}")


def check_device(name: str, t: torch.Tensor) -> None:
    """After check_same: the one device the tensors share must be able to run it."""
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    need = MIN_CAPABILITY.get(t.dtype)
    have = device_capability(t.device)
    if need is not None and have is not None and tuple(have) < need:
        raise TypeError(
            f"{name} is {t.dtype}, which needs compute capability {need[0]}.{need[1]} "
            f"or newer; {t.device} is {have[0]}.{have[1]}: use float16 or float32 on "
            "this GPU"
        )


def check_same(names: str, *ts: torch.Tensor) -> None:
    if len({t.dtype for t in ts}) > 1:
        dtypes = ", ".join(str(t.dtype) for t in ts)
        raise TypeError(f"{names} must have the same dtype, got {dtypes}")
    if len({t.device for t in ts}) > 1:
        devices = ", ".join(str(t.device) for t in ts)
        raise ValueError(f"{names} must be on the same device, got {devices}")


def check_block(name: str, value: int) -> None:
    if (isinstance(value, bool) or not isinstance(value, int) or value <= 0
            or value & (value - 1)):
        raise ValueError(f"{name} must be a positive power of two, got {value}")
    if value > 2**20:  # triton.TRITON_MAX_TENSOR_NUMEL: a bigger tile does not compile
        raise ValueError(f"{name} must be at most 2**20 (Triton's largest tile), "
                         f"got {value}")


INT32_MAX = 2**31 - 1


def check_offsets(name: str, t: torch.Tensor) -> None:
    """The kernels compute int32 offsets: refuse a tensor whose elements need more."""
    pairs = zip(t.shape, t.stride(), strict=True)
    span = sum((size - 1) * stride for size, stride in pairs) if t.numel() else 0
    last = max(span, t.numel() - 1)  # of t, or of an output of its shape
    if last > INT32_MAX:
        raise ValueError(
            f"{name} of shape {tuple(t.shape)} and stride {t.stride()} needs element "
            f"offsets up to {last}, more than an int32 holds (2**31 - 1); see "
            "examples/int64_offsets.py for int64 offsets"
        )
# --8<-- [end:validate]


# %% [markdown]
# ## A 1-D grid, given as a function
#
# `grid` can be a tuple or a function of the meta-parameters. Triton calls the
# function with the launch's arguments by name (constexprs included), so the grid
# follows `BLOCK_SIZE` wherever it is chosen, by you or later by an autotuner.


# %%
# --8<-- [start:launch-1d]
def _check_scale_shift(x, alpha, beta, block_size) -> None:
    check_tensor("x", x, dim=1)
    check_device("x", x)
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a Python float, "
                            f"got {type(value).__name__}")
    check_block("block_size", block_size)
    check_offsets("x", x)
    n = x.numel()
    if triton.cdiv(n, block_size) > INT32_MAX:
        raise ValueError(f"{n} elements in blocks of {block_size} need more programs "
                         "than grid axis 0 holds (2**31 - 1): use a larger block_size")


def scale_shift(x: torch.Tensor, alpha: float, beta: float = 0.0, *,
                relu: bool = False, block_size: int = 1024) -> torch.Tensor:
    """relu?(alpha * x + beta) for a 1-D x of any stride, as a contiguous tensor."""
    _check_scale_shift(x, alpha, beta, block_size)
    out = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # (1)!
    scale_shift_kernel[grid](
        x, out,  # tensors: Triton passes x.data_ptr() and reads the dtype
        n, x.stride(0),  # sizes and strides: plain ints
        float(alpha), float(beta),  # runtime scalars (fp32 in the kernel)
        RELU=relu, BLOCK_SIZE=block_size,  # constexprs: part of the kernel's identity
    )
    return out


def scale_shift_torch(x: torch.Tensor, alpha: float, beta: float = 0.0, *,
                      relu: bool = False) -> torch.Tensor:
    y = x.float() * alpha + beta
    return (y.clamp_min(0.0) if relu else y).to(x.dtype)
# --8<-- [end:launch-1d]


# %% [markdown]
# ## A 2-D grid: one program per (row tile, column tile)
#
# `out = x + bias[None, :]` for a matrix with any strides. Axis 0 of the grid walks
# the row tiles, axis 1 the column tiles; each program owns a `BLOCK_M x BLOCK_N` tile.


# %%
# --8<-- [start:grid-2d]
@triton.jit
def add_row_bias_kernel(
    x_ptr, bias_ptr, out_ptr,
    M, N,  # matrix shape
    stride_xm, stride_xn,  # x may be a transposed or sliced view
    stride_om, stride_on,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)  # which row tile
    pid_n = tl.program_id(axis=1)  # which column tile
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn,
                mask=mask)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N)
    out = x + bias[None, :]
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, out,
             mask=mask)


def _check_row_bias(x, bias, block_m, block_n) -> None:
    check_tensor("x", x, dim=2)
    check_tensor("bias", bias, dim=1)
    check_same("x and bias", x, bias)
    check_device("x", x)
    if bias.shape[0] != x.shape[1]:
        raise ValueError(f"bias must have x.shape[1] = {x.shape[1]} elements, "
                         f"got {bias.shape[0]}")
    if bias.stride(0) != 1:
        raise ValueError("bias must be contiguous (stride 1), "
                         f"got stride {bias.stride()}")
    check_block("block_m", block_m)
    check_block("block_n", block_n)
    check_offsets("x", x)


def add_row_bias(x: torch.Tensor, bias: torch.Tensor, *, block_m: int = 32,
                 block_n: int = 64) -> torch.Tensor:
    """x + bias[None, :] for x of shape (M, N) with any strides, bias of shape (N,)."""
    _check_row_bias(x, bias, block_m, block_n)
    M, N = x.shape
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))  # a plain tuple works too
    if grid[1] > 65_535:  # CUDA's limit on grid axis 1 (see the 3-D grid below)
        raise ValueError(f"x of shape {(M, N)} needs {grid[1]} column tiles on grid "
                         "axis 1, which holds at most 65535: raise block_n")
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    add_row_bias_kernel[grid](
        x, bias, out, M, N,
        x.stride(0), x.stride(1), out.stride(0), out.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n,
    )
    return out


def add_row_bias_torch(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return x + bias[None, :]
# --8<-- [end:grid-2d]


# %% [markdown]
# ## A 3-D grid: (batch, row, column tile)
#
# `out[b] = x[b] + bias[b][None, :]`: every batch element has its own bias row.
# One program per (batch, row, column tile). On NVIDIA GPUs grid axis 0 may hold
# up to 2^31 - 1 programs but axes 1 and 2 only 65,535 each, so the launcher checks.


# %%
# --8<-- [start:grid-3d]
MAX_GRID_YZ = 65_535  # CUDA's limit on grid axes 1 and 2 (axis 0: 2**31 - 1)


@triton.jit
def add_batch_bias_kernel(
    x_ptr, bias_ptr, out_ptr,
    N,
    stride_xb, stride_xm, stride_xn,
    stride_bb, stride_bn,
    stride_ob, stride_om, stride_on,
    BLOCK_N: tl.constexpr,
):
    b = tl.program_id(axis=0)  # batch element
    m = tl.program_id(axis=1)  # row
    pid_n = tl.program_id(axis=2)  # column tile
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs_n < N
    x = tl.load(x_ptr + b * stride_xb + m * stride_xm + offs_n * stride_xn, mask=mask)
    bias = tl.load(bias_ptr + b * stride_bb + offs_n * stride_bn, mask=mask)
    tl.store(out_ptr + b * stride_ob + m * stride_om + offs_n * stride_on, x + bias,
             mask=mask)


def _check_batch_bias(x, bias, block_n) -> None:
    check_tensor("x", x, dim=3)
    check_tensor("bias", bias, dim=2)
    check_same("x and bias", x, bias)
    check_device("x", x)
    B, M, N = x.shape
    if tuple(bias.shape) != (B, N):
        raise ValueError(f"bias must have shape (B, N) = {(B, N)}, "
                         f"got {tuple(bias.shape)}")
    check_block("block_n", block_n)
    check_offsets("x", x)
    check_offsets("bias", bias)


def add_batch_bias(x: torch.Tensor, bias: torch.Tensor, *,
                   block_n: int = 128) -> torch.Tensor:
    """x[b] + bias[b][None, :] for x (B, M, N) and bias (B, N), any strides."""
    _check_batch_bias(x, bias, block_n)
    B, M, N = x.shape
    grid = (B, M, triton.cdiv(N, block_n))
    if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
        raise ValueError(
            f"x of shape {tuple(x.shape)} needs grid {grid}, but grid axes 1 and 2 "
            f"hold at most {MAX_GRID_YZ} programs: fold rows into axis 0 or raise "
            "block_n"
        )
    out = torch.empty((B, M, N), device=x.device, dtype=x.dtype)
    add_batch_bias_kernel[grid](
        x, bias, out, N,
        *x.stride(), *bias.stride(), *out.stride(),
        BLOCK_N=block_n,
    )
    return out


def add_batch_bias_torch(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return x + bias[:, None, :]
# --8<-- [end:grid-3d]


# %% [markdown]
# ## Check it
#
# Odd sizes, a strided vector, a transposed matrix and a permuted batch, all against
# the torch references.


# %%
# --8<-- [start:check]
def self_check() -> None:
    for n in (1, 17, 1025):
        x = torch.randn(2 * n, device=DEVICE)[::2]  # a strided view: stride 2
        for relu in (False, True):
            torch.testing.assert_close(scale_shift(x, 1.5, -0.25, relu=relu),
                                       scale_shift_torch(x, 1.5, -0.25, relu=relu))
    for M, N in ((1, 1), (33, 65), (70, 129)):
        x = torch.randn(N, M, device=DEVICE).t()  # a transposed view: strides (1, M)
        bias = torch.randn(N, device=DEVICE)
        torch.testing.assert_close(add_row_bias(x, bias), add_row_bias_torch(x, bias),
                                   rtol=0, atol=0)
    x = torch.randn(5, 130, 3, device=DEVICE).permute(0, 2, 1)  # (5, 3, 130), strided
    bias = torch.randn(5, 130, device=DEVICE)
    torch.testing.assert_close(add_batch_bias(x, bias), add_batch_bias_torch(x, bias),
                               rtol=0, atol=0)
    print(f"launch_grids: 1-D, 2-D and 3-D launches match torch on {DEVICE.type}, "
          "strided inputs included")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
