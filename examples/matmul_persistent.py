# %% [markdown]
# # Persistent matmul with tensor descriptors
#
# `C = A @ B` three ways, all sharing one tile computation:
#
# * **tiles**: one program per output tile (the classic launch, grid = number of tiles);
# * **persistent**: a grid the size of the GPU, each program looping over tiles in a
#   grouped order;
# * **tma**: the persistent loop again, with loads and stores through tensor
#   descriptors that the launcher builds on the host (`TensorDescriptor`), which
#   Hopper turns into TMA copies.
#
# You will see:
#
# * a `@triton.jit` helper that computes one tile, called from two different kernels;
# * how a persistent grid is sized (SM count on a GPU, a fixed small number on the CPU);
# * the alignment rules tensor descriptors impose, and the launcher's fallback;
# * autotuned configs on a GPU, one fixed config under the interpreter.
#
# Run it with `python examples/matmul_persistent.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## Which tile does a program own?
#
# Tiles are numbered `0 .. num_tiles - 1`. Walking them row by row would make every
# program in flight read a different block-row of A and all of B; grouping `GROUP_M`
# block-rows together makes programs that run at the same time share their A and B
# tiles in L2.


# %%
# --8<-- [start:tile-helpers]
@triton.jit
def _tile_coords(tile_id, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of tile `tile_id` in grouped order."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * num_pid_n  # (1)!
    group = tile_id // tiles_per_group
    first_pid_m = group * GROUP_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_M)  # the last group may be shorter
    pid_m = first_pid_m + (tile_id % tiles_per_group) % group_rows
    pid_n = (tile_id % tiles_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _matmul_tile(
    a_ptr, b_ptr, c_ptr,  # pointers to A (M, K), B (K, N), C (M, N)
    M, N, K,  # problem size
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  # in elements
    pid_m, pid_n,  # which output tile to compute
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    INT64: tl.constexpr,  # 64-bit offsets (the launcher decides from the operands)
):
    """Compute and store one BLOCK_M x BLOCK_N tile of C = A @ B."""
    if INT64:  # an operand spans 2**31 elements or more: make every offset 64-bit
        stride_am = tl.cast(stride_am, tl.int64)
        stride_ak = tl.cast(stride_ak, tl.int64)
        stride_bk = tl.cast(stride_bk, tl.int64)
        stride_bn = tl.cast(stride_bn, tl.int64)
        stride_cm = tl.cast(stride_cm, tl.int64)
        stride_cn = tl.cast(stride_cn, tl.int64)
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M  # (2)!
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # fp32 accumulator
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # the last K step is ragged: mask it
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)  # input dtype out
# --8<-- [end:tile-helpers]


# %% [markdown]
# ## Two kernels, one tile computation
#
# The non-persistent kernel asks the hardware for one program per tile; the
# persistent kernel asks for a fixed number of programs and strides through the
# tiles itself.


# %%
# --8<-- [start:kernels]
@triton.jit
def matmul_tiles_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, INT64: tl.constexpr,
):
    """One program per output tile: grid = number of tiles."""
    pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    _matmul_tile(a_ptr, b_ptr, c_ptr, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, INT64)


@triton.jit
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, INT64: tl.constexpr,
):
    """A fixed grid (about one program per SM); each program loops over tiles."""
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0),  # (1)!
                            flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        _matmul_tile(a_ptr, b_ptr, c_ptr, M, N, K,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, INT64)
# --8<-- [end:kernels]


# %% [markdown]
# ## The TMA variant
#
# A tensor descriptor carries the base pointer, shape, strides and block shape of a
# 2-D tensor. `desc.load([row, col])` fetches a whole block; rows and columns past
# the shape read as zero and stores past it are dropped, so no masks are needed.
# On Hopper the compiler lowers these to TMA copies into shared memory, issued by
# a single thread, which frees the other warps for math. The launcher builds the
# three descriptors once, on the host, and passes them to the kernel as arguments.


# %%
# --8<-- [start:tma-kernel]
@triton.jit
def matmul_tma_kernel(
    a_desc, b_desc, c_desc,  # (1)!
    M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,  # a hint; Triton 3.6 ignores it at 8 warps on sm_90
    FLATTEN: tl.constexpr,  # fuse the tile loop and the K loop into one pipeline
    EPILOGUE_SUBTILE: tl.constexpr,  # store C in two (BLOCK_M, BLOCK_N / 2) halves
    WARP_SPECIALIZE_K: tl.constexpr = False,  # the same hint on the K loop
):
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0),
                            flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE_K):
            a = a_desc.load([off_m, k * BLOCK_K])  # (2)!
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        if EPILOGUE_SUBTILE:  # (4)!
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([off_m, off_n], left.to(c_desc.dtype))  # (3)!
            c_desc.store([off_m, off_n + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def tma_descriptors(a, b, c):
    """Host-side descriptors of A, B and C from their own shapes and strides (a view
    with padded rows keeps its real row stride). The block shapes are placeholders:
    `set_block_shapes` gives them the launched config's tiles."""
    return tuple(TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1])
                 for t in (a, b, c))


def set_block_shapes(nargs: dict) -> None:
    """Each TMA config's pre-hook: one TMA copy moves one tile, so the descriptors'
    block shapes are the config's (the autotuner calls it before every launch)."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // 2 if nargs["EPILOGUE_SUBTILE"] else bn]
# --8<-- [end:tma-kernel]


# %% [markdown]
# ## Launch settings
#
# On a GPU each kernel is autotuned over a short list of configs picked from
# measurements on an H200 (the Benchmarks page has the sweep). The interpreter cannot
# run a multi-config autotune, so on the CPU every kernel gets one small fixed config:
# small tiles make many tiles, so the persistent loop really loops.


# %%
# --8<-- [start:configs]
import functools

# Launch settings measured on an H200, one row per autotune candidate:
# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, {constexpr options}).
# The "tma" rows' options override TMA_DEFAULTS. A sweep prints rows in this form.
TMA_DEFAULTS = {"WARP_SPECIALIZE": False, "FLATTEN": True, "EPILOGUE_SUBTILE": False,
                "WARP_SPECIALIZE_K": False}
GPU_CONFIGS = {
    "tiles": [  # 128 x 128 x 32 measured best on ragged shapes (N = 3000); 64 x 128
        # x 128, 3 stages at 1024 (128 tiles for 132 SMs, a deep K step)
        (128, 256, 64, 8, 8, 3, {}),
        (64, 128, 128, 8, 4, 3, {}),
        (128, 128, 64, 8, 8, 4, {}),
        (64, 128, 64, 8, 4, 4, {}),
        (128, 128, 32, 8, 4, 4, {}),
    ],
    "persistent": [
        (128, 256, 64, 8, 8, 3, {}),
        (128, 128, 64, 8, 8, 4, {}),
        (64, 128, 64, 8, 4, 4, {}),
    ],
    "tma": [  # measured best (descriptors built on the host): 128 x 256 from 2048 up,
        # subtiled C with 4 stages at 2048 (fp16), 8192 (bf16) and on the ragged
        # 4000 x 3000 x 2000 (256 x 128 close behind); 64 x 128 at 1024
        (128, 256, 64, 8, 8, 3, {}),
        (128, 256, 64, 8, 8, 4, {"EPILOGUE_SUBTILE": True}),
        (256, 128, 64, 8, 8, 4, {"EPILOGUE_SUBTILE": True}),
        (128, 256, 64, 8, 8, 3, {"WARP_SPECIALIZE": True, "FLATTEN": False}),
        (64, 128, 128, 8, 4, 3, {}),
        (64, 128, 64, 8, 4, 4, {}),
    ],
}
# 4-byte elements: half the K depth fits shared memory (every variant)
GPU_CONFIGS_FP32 = [(128, 128, 32, 8, 8, 3, {}), (64, 128, 32, 8, 4, 3, {})]
CPU_CONFIG = (32, 32, 32, 4, 4, 1, {})  # the interpreter: one config, no tuning


def _cfg(bm, bn, bk, group_m, warps, stages, pre_hook=None, **extra):
    meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, **extra}
    return triton.Config(meta, num_warps=warps, num_stages=stages, pre_hook=pre_hook)


def matmul_configs(variant: str, dtype: torch.dtype = torch.float16) -> list:
    """Autotune candidates for `variant` and `dtype` here (one config on the CPU)."""
    if DEVICE.type != "cuda":
        rows = [CPU_CONFIG]
    elif dtype == torch.float32:
        rows = GPU_CONFIGS_FP32
    else:
        rows = GPU_CONFIGS[variant]
    if variant != "tma":
        return [_cfg(*row[:6], **row[6]) for row in rows]
    return [_cfg(*row[:6], pre_hook=set_block_shapes, **{**TMA_DEFAULTS, **row[6]})
            for row in rows]


def num_persistent_programs(device: torch.device) -> int:
    """How many programs a persistent grid launches: one per SM (a tile needs a whole
    SM's shared memory), or a fixed small number under the interpreter."""
    if device.type == "cuda":
        index = torch.cuda.current_device() if device.index is None else device.index
        return _sm_count(index)
    return 4


@functools.lru_cache
def _sm_count(index: int) -> int:
    """The SM count of GPU `index`, queried once: the launcher asks on every call."""
    return torch.cuda.get_device_properties(index).multi_processor_count


_KERNELS = {"tiles": matmul_tiles_kernel, "persistent": matmul_persistent_kernel,
            "tma": matmul_tma_kernel}
_TUNED = {}


def autotune_timer(kernel_call, quantiles):
    """Time each config in a CUDA graph: at 1024^3 and 2048^3 a launch outlasts the
    kernel, and `do_bench` would rank the configs by their launch cost."""
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(kernel_call, rep=20, quantiles=quantiles)


def tuned_kernel(variant: str, dtype: torch.dtype = torch.float16):
    """The autotuned wrapper of `variant`'s kernel for `dtype` (built on first use):
    one per dtype, since a descriptor argument does not add its dtype to the tuning
    key as a tensor does."""
    key = (variant, dtype)
    if key not in _TUNED:
        configs = matmul_configs(variant, dtype)
        tune = triton.autotune(configs=configs, key=["M", "N", "K"],
                               do_bench=autotune_timer)
        _TUNED[key] = tune(_KERNELS[variant])
    return _TUNED[key]
# --8<-- [end:configs]


# %% [markdown]
# ## The launcher
#
# It validates the inputs, allocates C in the input dtype and picks the variant.
# `variant="auto"` uses the TMA kernel when A, B and C satisfy the descriptor rules
# (row-major, 16-byte-aligned base and row stride) and falls back to the pointer-based
# persistent kernel otherwise; `variant="tma"` raises instead of falling back.


# %%
# --8<-- [start:launcher-checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
VARIANTS = ("auto", "tiles", "persistent", "tma")
MAX_DIM = 2**30  # tile coordinates are int32; element offsets turn int64 when needed


def _check_inputs(a, b, variant) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if t.numel() == 0:
            raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions must match: a is {tuple(a.shape)}, "
                         f"b is {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise TypeError("a and b must have the same dtype, "
                        f"got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError("a and b must be on the same device, "
                         f"got {a.device} and {b.device}")
    if a.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("a is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    dims = {"a.shape[0] (M)": a.shape[0], "a.shape[1] (K)": a.shape[1],
            "b.shape[1] (N)": b.shape[1]}
    for name, size in dims.items():
        if size >= MAX_DIM:
            raise ValueError(f"{name} is {size}: M, N and K must each be below 2**30 "
                             "(int32 tile coordinates)")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")


def tma_compatible(t: torch.Tensor) -> bool:
    """Tensor descriptors need a contiguous last dim, a 16-byte-aligned base and row
    stride, rows that do not overlap (no stride 0) and at least 16 bytes per row."""
    size = t.element_size()
    return (t.stride(1) == 1 and t.stride(0) >= t.shape[1]
            and (t.stride(0) * size) % 16 == 0
            and t.data_ptr() % 16 == 0 and t.shape[1] * size >= 16)
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher]
def _pick_variant(variant: str, a, b, c) -> str:
    """Resolve "auto" (tma when a, b and c fit descriptors, else persistent); refuse a
    "tma" that does not fit."""
    if variant not in ("tma", "auto"):  # tiles and persistent take any strides
        return variant
    fits_tma = all(tma_compatible(t) for t in (a, b, c))
    if variant == "tma" and not fits_tma:
        raise ValueError(
            "variant='tma' needs row-major a and b (unit column stride, rows that do "
            "not overlap) whose base and row stride are 16-byte aligned, with at least "
            f"16 bytes per row (and N * {a.element_size()} bytes divisible by 16); "
            f"got a.stride()={a.stride()}, b.stride()={b.stride()}, N={b.shape[1]}. "
            "Use variant='auto' to fall back.")
    if variant == "auto":
        return "tma" if fits_tma else "persistent"
    return variant


def matmul_persistent(a: torch.Tensor, b: torch.Tensor, *,
                      variant: str = "auto") -> torch.Tensor:
    """C = A @ B with fp32 accumulation, returned in the input dtype.

    variant: "tiles" (one program per tile), "persistent" (pointer loads, SM-sized
    grid), "tma" (tensor descriptors, SM-sized grid) or "auto" (tma when possible,
    else persistent).
    """
    _check_inputs(a, b, variant)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    variant = _pick_variant(variant, a, b, c)
    kernel = tuned_kernel(variant, a.dtype)
    n_programs = num_persistent_programs(a.device)

    def grid(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        return (tiles,) if variant == "tiles" else (min(n_programs, tiles),)  # (1)!

    if variant == "tma":  # descriptors built once here, not in every program
        kernel[grid](*tma_descriptors(a, b, c), M, N, K)
    else:
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                     b.stride(1), c.stride(0), c.stride(1), INT64=needs_int64(a, b, c))
    return c


def needs_int64(*tensors: torch.Tensor) -> bool:
    """True when the largest element offset into some operand does not fit in int32."""
    spans = (zip(t.shape, t.stride(), strict=True) for t in tensors)
    return any(sum((n - 1) * s for n, s in span) >= 2**31 for span in spans)


def matmul_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference: fp32 product, rounded to the input dtype."""
    return (a.float() @ b.float()).to(a.dtype)
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd shapes (no dimension a multiple of the block), every variant, and a transposed
# B, which has no contiguous last dim, so "auto" must fall back to the pointer kernel.


# %%
# --8<-- [start:check]
def self_check(shapes=((127, 255, 33), (1, 17, 5), (64, 96, 80))) -> None:
    dtype = torch.float16
    tol = {"rtol": 1e-2, "atol": 1e-2}
    for M, N, K in shapes:
        a = torch.randn(M, K, device=DEVICE, dtype=dtype)
        b = torch.randn(K, N, device=DEVICE, dtype=dtype)
        ref = matmul_torch(a, b)
        for variant in ("tiles", "persistent", "auto"):
            got = matmul_persistent(a, b, variant=variant)
            torch.testing.assert_close(got, ref, **tol)
    bt = torch.randn(40, 48, device=DEVICE, dtype=dtype).t()  # (48, 40), stride (1, 48)
    a = torch.randn(31, 48, device=DEVICE, dtype=dtype)
    torch.testing.assert_close(matmul_persistent(a, bt), matmul_torch(a, bt), **tol)
    print(f"matmul_persistent: tiles, persistent and tma == fp32 torch on {DEVICE.type}"
          f" for (M, N, K) in {[tuple(s) for s in shapes]} and a transposed B")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
