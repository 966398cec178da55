# %% [markdown]
# # Matrix multiplication: from a tiled K loop towards cuBLAS
#
# `C = A @ B` for `A` of shape (M, K) and `B` of shape (K, N), half-precision in,
# fp32 accumulation, the input dtype out. One program computes one
# `BLOCK_M x BLOCK_N` tile of `C` by walking along K.
#
# You will see:
#
# * the tiled K loop with an fp32 accumulator and `tl.dot`;
# * masks (and wrapped row indices) for M, N and K that are not multiples of a block;
# * program ordering: row-major against grouped ordering for L2 reuse (`GROUP_M`);
# * autotuning from a named config function (one fixed config under the interpreter);
# * a second kernel that loads tiles through tensor descriptors (TMA on Hopper);
# * a launcher that accepts any strides and picks the kernel from the shape.
#
# Run it with `python examples/matmul.py`.

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
# ## Which tile does a program own?
#
# The grid is one-dimensional: `num_pid_m * num_pid_n` programs. This helper turns
# a program id into tile coordinates. With `GROUP_M = 1` it is plain row-major
# order; with `GROUP_M = 8`, consecutive programs walk down a column of eight
# tile rows before moving right, so programs that run at the same time share
# panels of both A and B in L2.


# %%
# --8<-- [start:ordering]
@triton.jit
def tile_coords(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                GROUP_M: tl.constexpr):
    """Map a 1-D program id to the (row, column) of the output tile it owns."""
    num_pid_m = tl.cdiv(M, BLOCK_M)  # tiles down the rows of C
    num_pid_n = tl.cdiv(N, BLOCK_N)  # tiles across the columns of C
    pids_per_group = GROUP_M * num_pid_n  # (1)!
    group = pid // pids_per_group
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_M)  # (2)!
    pid_m = first_m + (pid % pids_per_group) % rows_in_group  # (3)!
    pid_n = (pid % pids_per_group) // rows_in_group
    return pid_m, pid_n
# --8<-- [end:ordering]


# %% [markdown]
# ## The kernel: a tiled K loop
#
# Every program builds two blocks of pointers, one into a `BLOCK_M x BLOCK_K`
# panel of A and one into a `BLOCK_K x BLOCK_N` panel of B, and walks them along
# K, accumulating `tl.dot` products in fp32 registers. Strides come in as
# arguments, so transposed and sliced inputs need no copy.


# %%
# --8<-- [start:kernel]
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # pointers to A (M, K), B (K, N) and C (M, N)
    M, N, K,  # problem size
    stride_am, stride_ak,  # elements between rows / columns of A
    stride_bk, stride_bn,  # ... of B
    stride_cm, stride_cn,  # ... of C
    BLOCK_M: tl.constexpr,  # rows of C per program
    BLOCK_N: tl.constexpr,  # columns of C per program
    BLOCK_K: tl.constexpr,  # depth of one step of the K loop
    GROUP_M: tl.constexpr,  # 1 = row-major program order, > 1 = grouped
):
    pid_m, pid_n = tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rows_a = (offs_m % M).to(tl.int64)  # (1)!
    cols_b = (offs_n % N).to(tl.int64)
    a_ptrs = a_ptr + rows_a[:, None] * stride_am + offs_k[None, :] * stride_ak  # (2)!
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols_b[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # (3)!
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # columns of A (rows of B) still to do
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)  # (4)!
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)  # (5)!
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(c_ptr.dtype.element_ty)  # (6)!
    rows_c = offs_m[:, None].to(tl.int64)
    c_ptrs = c_ptr + rows_c * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))  # (7)!
# --8<-- [end:kernel]


# %% [markdown]
# ## Autotuning
#
# The best tile shape depends on the problem size and the GPU. `@triton.autotune`
# times every config the first time it sees a new `(M, N, K, GROUP_M, dtypes)`
# key and reuses the winner. The interpreter cannot time anything, so there the
# function returns a single small config.


# %%
# --8<-- [start:autotune]
ON_GPU = torch.cuda.is_available()


def matmul_configs() -> list[triton.Config]:
    """Tile shapes for `matmul_kernel`: a short list on a GPU, one on the CPU."""
    c = triton.Config
    if not ON_GPU:
        return [c({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_stages=1)]
    return [  # (1)!
        c({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        c({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}, num_warps=4, num_stages=4),
        c({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4, num_stages=4),
    ]


def autotune_timer(kernel_call, quantiles):
    """Time each config in a CUDA graph: at 1024^3 a launch outlasts the kernel."""
    torch.cuda.synchronize()  # (2)!
    return triton.testing.do_bench_cudagraph(  # (3)!
        kernel_call, rep=20, quantiles=quantiles)


matmul_kernel_tuned = triton.autotune(
    configs=matmul_configs(), key=["M", "N", "K", "GROUP_M"], do_bench=autotune_timer
)(matmul_kernel)
# --8<-- [end:autotune]


# %% [markdown]
# ## Loading tiles through tensor descriptors
#
# On Hopper, a tensor descriptor hands the copy of a whole tile to the TMA unit:
# no pointer blocks, no masks (out-of-bounds reads return zero and out-of-bounds
# writes are dropped), and the tile lands in shared memory in the layout the
# tensor cores want. Descriptors need a unit stride in the last dimension and
# 16-byte aligned rows; the launcher falls back to `matmul_kernel` otherwise.


# %%
# --8<-- [start:tma-kernel]
@triton.jit
def matmul_tma_kernel(
    a_ptr, b_ptr, c_ptr,  # row-major A (M, K), B (K, N), C (M, N)
    M, N, K,
    stride_am, stride_bk, stride_cm,  # row strides; the column stride is 1
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,  # split loads and math between warp groups
):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1],
                                       block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    pid_m, pid_n = tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([off_m, k * BLOCK_K])  # (1)!
        b = b_desc.load([k * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))  # (2)!
# --8<-- [end:tma-kernel]


# %%
# --8<-- [start:tma-autotune]
def matmul_tma_configs(dtype: torch.dtype = torch.float16) -> list[triton.Config]:
    """Tile shapes for `matmul_tma_kernel` and `dtype`; one under the interpreter."""

    def c(bm, bn, bk, warps, stages):
        meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "WARP_SPECIALIZE": False}
        return triton.Config(meta, num_warps=warps, num_stages=stages)

    if not ON_GPU:
        return [c(64, 64, 32, 4, 1)]
    if dtype == torch.float32:  # 4-byte elements: smaller N and K fit in 227 KB
        return [c(128, 128, 32, 8, 3), c(128, 128, 32, 8, 4), c(128, 64, 32, 4, 4)]
    return [c(128, 256, 64, 8, 3), c(128, 256, 64, 8, 4), c(256, 128, 64, 8, 3)]


def _tma_tuned(dtype: torch.dtype):
    configs = matmul_tma_configs(dtype)
    return triton.autotune(configs=configs, key=["M", "N", "K", "GROUP_M"],
                           do_bench=autotune_timer)(matmul_tma_kernel)


matmul_tma_kernel_tuned = _tma_tuned(torch.float16)
# fp32 tiles take twice the shared memory: a tuner of their own, with smaller tiles.
matmul_tma_kernel_tuned_fp32 = _tma_tuned(torch.float32)
# --8<-- [end:tma-autotune]


# %% [markdown]
# ## The launcher
#
# Host code: validate, allocate, pick a kernel, launch. `kernel="auto"` uses the
# descriptor kernel on a Hopper-or-newer GPU for large problems and for strides that
# are not multiples of 16, and the pointer kernel everywhere else; `group_m=1` gives
# row-major program order. On the H200 the descriptor kernel was clearly ahead only
# on strides that are not multiples of 16; on large aligned shapes it is level with
# the pointer kernel or narrowly ahead (docs/kernels/matmul.md has the measurements).


# %%
# --8<-- [start:launcher-checks]
import functools

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
INT32_MAX = 2**31 - 1
# rows and columns are int64 offsets; steps along K are not
MAX_BLOCK_K = max(cfg.kwargs["BLOCK_K"] for cfg in matmul_configs())
KERNELS = ("auto", "pointer", "tma")


def _check_inputs(a, b, group_m, kernel) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError("a.shape[1] must equal b.shape[0] (the K dimension), "
                         f"got {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise TypeError("a and b must have the same dtype, "
                        f"got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError("a and b must be on the same device, "
                         f"got {a.device} and {b.device}")
    if a.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("a is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if not isinstance(group_m, int) or group_m < 1:
        raise ValueError(f"group_m must be a positive int, got {group_m!r}")
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")


def tma_compatible(*tensors: torch.Tensor) -> bool:
    """True when every 2-D tensor can back a tensor descriptor: unit column stride,
    16-byte aligned rows that do not overlap (an expanded tensor's row stride 0 takes
    the pointer kernel)."""
    for t in tensors:
        size = t.element_size()
        if (t.stride(1) != 1 or (t.stride(0) * size) % 16 or t.data_ptr() % 16
                or (t.shape[1] * size) < 16):
            return False
        if t.shape[0] > 1 and t.stride(0) < t.shape[1]:
            return False
    return True


@functools.cache
def _has_tma(device: torch.device) -> bool:
    """Hopper (compute capability 9) and newer copy tiles with TMA (asked per call)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher]
def _use_tma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> bool:
    """kernel="auto": descriptors where they win on the H200, pointers elsewhere."""
    half = a.dtype in (torch.float16, torch.bfloat16)
    if not (_has_tma(a.device) and half and tma_compatible(a, b, c)):
        return False
    M, K = a.shape
    N = b.shape[1]
    aligned = all(s % 16 == 0 for s in (a.stride(0), b.stride(0), c.stride(0)))  # (1)!
    return not aligned or M * N * K >= 4096**3 // 2


def _pick_kernel(a, b, c, kernel: str) -> bool:
    """True for the descriptor kernel; refuses strides the chosen kernel cannot take."""
    use_tma = _use_tma(a, b, c) if kernel == "auto" else kernel == "tma"
    k_reach = max(a.stride(1), b.stride(0)) * MAX_BLOCK_K  # int32 steps along K
    if not use_tma and k_reach > INT32_MAX:
        if kernel == "auto" and _has_tma(a.device) and tma_compatible(a, b, c):
            return True  # descriptors take 64-bit strides
        raise ValueError(
            "the pointer kernel steps along K in int32 offsets of up to "
            f"{MAX_BLOCK_K} x the K stride; a.stride(1) = {a.stride(1)} and "
            f"b.stride(0) = {b.stride(0)} reach {k_reach}, past 2**31 - 1: "
            "pass a.contiguous() / b.contiguous(), or kernel='tma' on a Hopper GPU")
    if use_tma and not tma_compatible(a, b, c):
        raise ValueError("kernel='tma' needs a and b with unit column stride and "
                         "16-byte aligned rows; "
                         f"got strides {a.stride()} and {b.stride()}")
    return use_tma


def _tma_scratch(size: int, alignment: int, stream) -> torch.Tensor:
    """Scratch memory for descriptors built in kernels (tl.make_tensor_descriptor)."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


def matmul(a: torch.Tensor, b: torch.Tensor, *, group_m: int = 8,
           kernel: str = "auto") -> torch.Tensor:
    """Return a @ b (fp32 accumulation, a.dtype out) computed by a Triton kernel."""
    _check_inputs(a, b, group_m, kernel)
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    if _pick_kernel(a, b, c, kernel):
        fp32 = a.dtype == torch.float32
        tuned = matmul_tma_kernel_tuned_fp32 if fp32 else matmul_tma_kernel_tuned
        args = (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
        if a.is_cuda:
            triton.set_allocator(_tma_scratch)  # (2)!
    else:
        tuned = matmul_kernel_tuned
        args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1))

    def grid(meta):  # (3)!
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    tuned[grid](*args, GROUP_M=group_m)  # a new (M, N, K, GROUP_M, dtypes) autotunes
    return c


def matmul_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference: fp32 math, the input dtype out."""
    return (a.float() @ b.float()).to(a.dtype)
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd shapes exercise every mask; transposed and sliced views exercise the
# strides. fp16 has a 10-bit mantissa, so the comparison has a tolerance.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1, 1), (127, 255, 33), (70, 33, 129))) -> None:
    tol = {"rtol": 1e-2, "atol": 1e-2}
    for M, N, K in shapes:
        for dtype in (torch.float32, torch.float16):
            a = torch.randn(M, K, device=DEVICE, dtype=dtype)
            b = torch.randn(K, N, device=DEVICE, dtype=dtype) / K**0.5
            torch.testing.assert_close(matmul(a, b), matmul_torch(a, b), **tol)
            bt = b.t().contiguous().t()  # same values, column-major layout
            got = matmul(a, bt, group_m=1)
            torch.testing.assert_close(got, matmul_torch(a, b), **tol)
    print(f"matmul: matmul(a, b) == a @ b on {DEVICE.type} for (M, N, K) in "
          f"{list(shapes)}, fp32 and fp16, row- and column-major B")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
