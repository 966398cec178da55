# %% [markdown]
# # Split-K matmul: many programs, one output tile, `tl.atomic_add`
#
# `C = A @ B` for a small `M x N` output and a long `K`. A classic tiled matmul
# gives one program per output tile: at 256 x 256 with 64 x 64 tiles that is
# 16 programs on a GPU with 132 SMs, each walking all of `K` alone. Split-K
# cuts `K` into `S` slices and launches `S` programs per tile; each adds its
# partial tile into `C` with `tl.atomic_add`.
#
# You will see:
#
# * a 3-D grid: output tile (m, n) and K slice;
# * an fp32 output that must be zeroed before the launch;
# * why the result is not bit-reproducible on a GPU, and how the tests cope;
# * a rule for choosing `S` from the shape and the SM count.
#
# Run it with `python examples/split_k.py`.

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
# Program `(pid_m, pid_n, pid_k)` multiplies the `k_per_split`-long slice
# `pid_k` of row block `pid_m` of A by the same slice of column block `pid_n`
# of B, in fp32. With one slice it stores its tile; with several, every slice
# adds its tile into C, in whatever order the programs finish.


# %%
# --8<-- [start:kernel]
@triton.jit
def matmul_split_k_kernel(
    a_ptr,  # pointer to A, [M, K]
    b_ptr,  # pointer to B, [K, N]
    c_ptr,  # pointer to C, [M, N], fp32; zeroed by the launcher when ATOMIC
    M, N, K,  # problem size
    stride_am, stride_ak,  # strides of A, in elements
    stride_bk, stride_bn,  # strides of B
    stride_cm, stride_cn,  # strides of C
    k_per_split,  # length of one K slice, a multiple of BLOCK_K
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ATOMIC: tl.constexpr,  # True when there is more than one K slice
    INT64: tl.constexpr,  # True when an offset can pass 2**31 - 1
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)  # (1)!
    if INT64:  # (4)!
        pid_m, pid_n, pid_k = pid_m.to(tl.int64), pid_n.to(tl.int64), pid_k.to(tl.int64)
        stride_ak = tl.cast(stride_ak, tl.int64)
        stride_bk = tl.cast(stride_bk, tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = pid_k * k_per_split + tl.arange(0, BLOCK_K)
    rows_a = offs_m % M  # (2)!
    cols_b = offs_n % N
    a_ptrs = a_ptr + rows_a[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols_b[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, tl.cdiv(k_per_split, BLOCK_K)):
        k_ok = offs_k + i * BLOCK_K < K  # the last slice may run past K
        a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    if ATOMIC:
        tl.atomic_add(c_ptrs, acc, mask=c_mask, sem="relaxed")  # (3)!
    else:
        tl.store(c_ptrs, acc, mask=c_mask)
# --8<-- [end:kernel]


# %% [markdown]
# ## The launcher
#
# It checks the operands, picks the number of slices `S` (unless told), zeroes
# C when `S > 1`, and launches a grid of `tiles x S` programs. The output is
# fp32: the partial tiles are added in fp32, and an fp16 C would lose the low
# bits of every addition.


# %%
# --8<-- [start:launcher-checks]
import functools

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
INT32_MAX = 2**31 - 1
MAX_GRID_YZ = 65535  # CUDA's limit on grid axes 1 and 2 (axis 0 takes up to 2**31 - 1)


def _check_inputs(a, b, block_m, block_n, block_k) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a and b do not chain: a is {tuple(a.shape)}, "
                         f"b is {tuple(b.shape)} (need a.shape[1] == b.shape[0])")
    if a.dtype != b.dtype:
        raise TypeError("a and b must have the same dtype, "
                        f"got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError("a and b must be on the same device, "
                         f"got {a.device} and {b.device}")
    if a.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("a is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k)):
        if v < 16 or v & (v - 1):
            raise ValueError(f"{name} must be a power of two >= 16 (tl.dot needs it), "
                             f"got {v}")


@functools.lru_cache
def _sm_count(index: int) -> int:
    """The SM count of GPU `index`, queried once: the launcher may ask on every call."""
    return torch.cuda.get_device_properties(index).multi_processor_count


def reach(t: torch.Tensor) -> int:
    """The largest element offset in the view t: sum of (size - 1) * |stride|."""
    if t.numel() == 0:
        return 0
    return sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride(), strict=True))


def needs_int64(a, b, grid, block_m: int, block_n: int, block_k: int,
                k_per_split: int) -> bool:
    """Refuse a grid CUDA cannot launch; True when an offset the kernel computes
    passes 2**31 - 1."""
    if grid[0] > INT32_MAX or grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
        raise ValueError(f"the grid {grid} (M tiles, N tiles, K slices) is too large: "
                         f"CUDA launches at most {INT32_MAX} x {MAX_GRID_YZ} x "
                         f"{MAX_GRID_YZ}; pass a larger block_n or fewer slices")
    m, n = a.shape[0], b.shape[1]
    largest = max(
        reach(a), reach(b), m * n - 1,  # the last element of A, B and C
        grid[0] * block_m - 1, grid[1] * block_n - 1,  # the last row and column
        grid[2] * k_per_split - 1,  # the last k
        block_k * max(abs(a.stride(1)), abs(b.stride(0))),  # one step along K
    )
    return largest > INT32_MAX
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher]
def pick_split_k(m: int, n: int, k: int, sms: int, block_m: int = 64,
                 block_n: int = 128, block_k: int = 64) -> int:
    """Slices of K: up to two programs per SM, each slice at least 8 * block_k long."""
    tiles = triton.cdiv(m, block_m) * triton.cdiv(n, block_n)
    split = 1
    while tiles * split * 2 <= 2 * sms and k // (split * 2) >= 8 * block_k:  # (1)!
        split *= 2
    return split


def matmul_split_k(a, b, split_k=None, block_m=64, block_n=128, block_k=64,
                   num_warps=4, num_stages=4):
    """C = A @ B in fp32, K cut into `split_k` slices (None: chosen from the shape)."""
    _check_inputs(a, b, block_m, block_n, block_k)
    (m, k), n = a.shape, b.shape[1]
    if split_k is None:
        sms = _sm_count(a.device.index) if a.is_cuda else 4
        split_k = pick_split_k(m, n, k, sms, block_m, block_n, block_k)
    if not isinstance(split_k, int) or split_k < 1:
        raise ValueError(f"split_k must be a positive int, got {split_k!r}")
    k_per_split = triton.cdiv(triton.cdiv(k, split_k), block_k) * block_k  # (2)!
    split_k = triton.cdiv(k, k_per_split) if k else 1  # no empty slices
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), device=a.device, dtype=torch.float32)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n), split_k)
    int64 = needs_int64(a, b, grid, block_m, block_n, block_k, k_per_split)  # (3)!
    atomic = split_k > 1
    alloc = torch.zeros if atomic else torch.empty  # atomics add into C: start at 0
    c = alloc((m, n), device=a.device, dtype=torch.float32)
    matmul_split_k_kernel[grid](
        a, b, c, m, n, k,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        k_per_split,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, ATOMIC=atomic, INT64=int64,
        num_warps=num_warps, num_stages=num_stages,
    )
    return c


def matmul_split_k_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference, in fp32."""
    return a.float() @ b.float()
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd shapes, several slice counts including one that does not divide K, a
# transposed operand. fp32 inputs in the interpreter are true fp32, and the
# tolerance allows only for the changed order of the additions; on a GPU an fp32
# `tl.dot` runs in tf32 (10-bit mantissa), so the check there allows ~1e-2.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1, 1), (17, 33, 300), (127, 65, 1025))) -> None:
    tol = 1e-2 if DEVICE.type == "cuda" else 1e-4  # tf32 on a GPU, fp32 interpreted
    for m, n, k in shapes:
        a = torch.randn(m, k, device=DEVICE)
        b = torch.randn(n, k, device=DEVICE).t()  # column-major B: strides, not copies
        want = matmul_split_k_torch(a, b)
        for split in (1, 3, 8, None):
            got = matmul_split_k(a, b, split_k=split)
            torch.testing.assert_close(got, want, rtol=tol, atol=tol * k**0.5)
    print(f"split_k: matmul_split_k(a, b) matches a @ b on {DEVICE.type} for (M, N, K)"
          f" in {[tuple(s) for s in shapes]} with 1, 3, 8 and auto K slices")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
