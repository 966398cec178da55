# %% [markdown]
# # Fused linear + bias + GELU: the epilogue that never leaves registers
#
# `C = gelu_tanh(A @ W + bias)` for `A` (M, K), `W` (K, N) and `bias` (N,), in fp16,
# bf16 or fp32, for any M, N, K and any layout, `W = fc.weight.t()` of an `nn.Linear`
# included.
# Eager PyTorch runs a matmul, then an add, then a GELU: three kernels and three
# round trips of C through memory. Here the bias and the activation are applied to
# the fp32 accumulator while it is still in registers, and C is written once.
#
# You will see:
#
# * a matmul kernel that loads tiles through tensor descriptors (TMA on Hopper),
#   reading W either row-major or as the transposed view `nn.Linear` hands you;
# * a pointer-and-mask kernel for layouts descriptors cannot take (odd widths, slices);
# * a fused epilogue: bias add and tanh-approximated GELU on the accumulator;
# * one kernel that runs one tile per program or, with a grid of one program
#   per SM, loops over tiles (a persistent kernel);
# * a store split in two halves, which frees shared memory for one more pipeline stage;
# * a comparison with eager PyTorch and with `torch.compile` of the same function.
#
# Run it with `python examples/linear_gelu.py`.

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
ON_GPU = torch.cuda.is_available()
# --8<-- [end:setup]


# %% [markdown]
# ## The epilogue
#
# The tanh form of GELU is `0.5 x (1 + tanh(u))` with
# `u = sqrt(2/pi) (x + 0.044715 x^3)`. Since `0.5 (1 + tanh(u)) = sigmoid(2u)`, it is
# also `x * sigmoid(2u)`: one exponential and one division per element, in fp32.


# %%
# --8<-- [start:epilogue]
@triton.jit
def gelu_tanh(x):
    """GELU, tanh approximation, as x * sigmoid(2u) (same value, one exp)."""
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2/pi) (x + 0.044715 x^3)
    return x * tl.sigmoid(2.0 * u)  # (1)!
# --8<-- [end:epilogue]


# %% [markdown]
# On a GPU the same formula can use the hardware's own tanh: `tanh.approx.f32` is one
# instruction of the special-function unit (relative error about 2^-11, fp16's
# rounding step), where `tl.sigmoid` costs an exponential and a division. The
# interpreter cannot run inline PTX, so the launcher asks for it on a GPU only.


# %%
# --8<-- [start:fast-epilogue]
@triton.jit
def gelu_tanh_approx(x):
    """GELU, tanh approximation, with the hardware tanh (tanh.approx.f32): GPU only."""
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [u],
                                  dtype=tl.float32, is_pure=True, pack=1)
    return 0.5 * x * (1.0 + t)
# --8<-- [end:fast-epilogue]


# %%
# --8<-- [start:ordering]
@triton.jit
def tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Grouped ordering: GROUP_M tile rows share each column panel of W in L2."""
    pids_per_group = GROUP_M * num_pid_n
    first_m = (tile // pids_per_group) * GROUP_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile % pids_per_group) % rows_in_group
    pid_n = (tile % pids_per_group) // rows_in_group
    return pid_m, pid_n
# --8<-- [end:ordering]


# %% [markdown]
# ## The kernel
#
# The outer loop hands out tiles: program `p` takes tiles `p`, `p + P`, `p + 2P`, ...
# where `P` is the number of programs. With one program per tile it runs once;
# with one program per SM the same code is a persistent kernel.


# %%
# --8<-- [start:kernel]
@triton.jit
def linear_gelu_kernel(
    a_ptr, w_ptr, bias_ptr, c_ptr,  # A (M, K), W (K, N), bias (N,), C (M, N)
    M, N, K,
    stride_am, stride_wk, stride_wn, stride_bias, stride_cm,  # A, C: unit column stride
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # tile rows per group (L2 reuse)
    W_KMAJOR: tl.constexpr,  # W = weight.t() of an (N, K) weight, as in nn.Linear
    WARP_SPECIALIZE: tl.constexpr,  # a hint; Triton 3.6 ignores it at 8 warps on sm_90
    FLATTEN: tl.constexpr,  # merge the tile loop and the K loop into one pipelined loop
    EPILOGUE_SUBTILE: tl.constexpr,  # store C in two halves: half the shared memory
    PERSISTENT: tl.constexpr,  # read by the launcher's grid only: one program per SM
    FAST_GELU: tl.constexpr = False,  # hardware tanh (GPU only), not tl.sigmoid
):
    C_BLOCK_N: tl.constexpr = BLOCK_N // 2 if EPILOGUE_SUBTILE else BLOCK_N
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1],
                                       block_shape=[BLOCK_M, BLOCK_K])
    if W_KMAJOR:  # (1)!
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[stride_wn, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
    else:
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[K, N], strides=[stride_wk, 1],
                                           block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, C_BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)

    num_tiles = num_pid_m * num_pid_n
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0),  # (2)!
                         flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([off_m, k * BLOCK_K])  # (3)!
            if W_KMAJOR:
                w = w_desc.load([off_n, k * BLOCK_K]).T  # read transposed
            else:
                w = w_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, w, acc)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        bias_ptrs = bias_ptr + offs_n.to(tl.int64) * stride_bias
        bias = tl.load(bias_ptrs, mask=offs_n < N, other=0.0)  # (4)!
        if FAST_GELU:
            c = gelu_tanh_approx(acc + bias[None, :].to(tl.float32))
        else:
            c = gelu_tanh(acc + bias[None, :].to(tl.float32))  # (5)!
        c = c.to(c_ptr.dtype.element_ty)
        if EPILOGUE_SUBTILE:  # (6)!
            halves = tl.reshape(c, (BLOCK_M, 2, BLOCK_N // 2))
            c0, c1 = tl.split(tl.permute(halves, (0, 2, 1)))
            c_desc.store([off_m, off_n], c0)
            c_desc.store([off_m, off_n + BLOCK_N // 2], c1)
        else:
            c_desc.store([off_m, off_n], c)  # (7)!
# --8<-- [end:kernel]


# %% [markdown]
# ## The pointer kernel
#
# Descriptors cannot serve every layout: an output width N that leaves W's rows
# unaligned (45 fp16 elements are 90 bytes), a K that does the same to A's rows, a
# sliced or expanded input. For those the launcher uses a kernel that loads with
# pointers and masks, any strides, one program per tile, the same fused epilogue.


# %%
# --8<-- [start:pointer-kernel]
@triton.jit
def linear_gelu_pointer_kernel(
    a_ptr, w_ptr, bias_ptr, c_ptr,  # A (M, K), W (K, N), bias (N,), C (M, N)
    M, N, K,
    stride_am, stride_ak, stride_wk, stride_wn, stride_bias, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    INT64: tl.constexpr,  # 64-bit offsets: the launcher decides from the spans
):
    if INT64:  # (1)!
        i64 = tl.int64
        stride_am, stride_ak = tl.cast(stride_am, i64), tl.cast(stride_ak, i64)
        stride_wk, stride_wn = tl.cast(stride_wk, i64), tl.cast(stride_wn, i64)
        stride_cm, stride_cn = tl.cast(stride_cm, i64), tl.cast(stride_cn, i64)
        stride_bias = tl.cast(stride_bias, i64)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    in_m = offs_m[:, None] < M
    in_n = offs_n[None, :] < N
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # (2)!
        a = tl.load(a_ptrs, mask=in_m & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & in_n, other=0.0)
        acc = tl.dot(a, w, acc)
        a_ptrs += BLOCK_K * stride_ak
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0)
    c = gelu_tanh(acc + bias[None, :].to(tl.float32)).to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=in_m & in_n)
# --8<-- [end:pointer-kernel]


# %% [markdown]
# ## Configs
#
# Each config names the tile shape and whether the grid is persistent. On the GPU
# `@triton.autotune` times them all on the first call for each shape; the
# interpreter gets one small config. fp32 tiles are twice the bytes, so fp32 gets
# a list (and a tuner) of its own; so does the pointer kernel.


# %%
# --8<-- [start:autotune]
# Launch settings measured on an H200, one row per autotune candidate:
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, {options}); options are
# persistent (one program per SM), ws (warp specialization), subtile (C stored in
# halves) and fast (the hardware tanh). A sweep prints rows in this form.
GPU_CONFIGS = [  # (1)!
    (128, 256, 64, 8, 3, {"persistent": True, "fast": True}),
    (128, 256, 64, 8, 3, {"persistent": True, "ws": True, "fast": True}),
    (128, 256, 64, 8, 4, {"persistent": True, "subtile": True, "fast": True}),
    (128, 128, 64, 8, 4, {"persistent": True, "fast": True}),
    (128, 256, 64, 8, 3, {"persistent": False, "fast": True}),
]
GPU_CONFIGS_FP32 = [  # 4-byte tiles: half the K depth fits shared memory
    (128, 128, 32, 8, 3, {"persistent": True}),
    (128, 128, 32, 8, 3, {"persistent": False}),
    (128, 64, 32, 4, 4, {"persistent": True}),
]


def linear_gelu_configs(dtype: torch.dtype = torch.float16) -> list[triton.Config]:
    """Tile shapes and grid kinds for `linear_gelu_kernel`; one in the interpreter."""
    def c(bm, bn, bk, warps, stages, persistent, ws=False, subtile=False, fast=False):
        meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8,
                "WARP_SPECIALIZE": ws, "FLATTEN": persistent,
                "EPILOGUE_SUBTILE": subtile, "PERSISTENT": persistent,
                "FAST_GELU": fast}
        return triton.Config(meta, num_warps=warps, num_stages=stages)

    if not ON_GPU:
        return [c(64, 64, 32, 4, 1, persistent=False)]
    rows = GPU_CONFIGS_FP32 if dtype == torch.float32 else GPU_CONFIGS
    return [c(*row[:5], **row[5]) for row in rows]


def pointer_configs(dtype: torch.dtype = torch.float16) -> list[triton.Config]:
    """Tile shapes for `linear_gelu_pointer_kernel`; one in the interpreter."""
    def c(bm, bn, bk, warps, stages):
        meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
        return triton.Config(meta, num_warps=warps, num_stages=stages)

    if not ON_GPU:
        return [c(64, 64, 32, 4, 1)]
    if dtype == torch.float32:
        return [c(128, 128, 32, 8, 3), c(64, 128, 32, 4, 3), c(64, 64, 32, 4, 3)]
    return [c(128, 128, 64, 8, 3), c(128, 128, 32, 4, 4), c(64, 128, 32, 4, 4),
            c(64, 64, 32, 4, 3)]


def _grid(M: int, N: int, index: int | None):
    """One program per tile, or (PERSISTENT) at most one per SM of device `index`."""
    sms = _num_sms(index)

    def grid(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        return (min(tiles, sms) if meta.get("PERSISTENT") else tiles,)
    return grid


@functools.lru_cache  # once per device, not on every call
def _num_sms(index: int | None) -> int:
    if index is None:  # a CPU tensor: the interpreter
        return 4
    return torch.cuda.get_device_properties(index).multi_processor_count


def autotune_timer(kernel_call, quantiles):
    """Time each config inside a CUDA graph, so the host-side launch cost does not pick
    the winner.

    do_bench_cudagraph runs its first calls on a new side stream that does not wait for
    the caller's stream: the work the caller has queued must finish first, or those
    calls write the output while queued kernels still use its memory (see the matmul
    page, note 2 of the autotuning step)."""
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(kernel_call, rep=20, quantiles=quantiles)


_TUNED = {}


def tuned_kernel(kind: str, dtype: torch.dtype):
    """The tuned "descriptor" or "pointer" kernel for `dtype`, built on first use."""
    slot = (kind, dtype == torch.float32)  # fp32 has its own tiles
    if slot not in _TUNED:
        if kind == "descriptor":
            configs, kernel = linear_gelu_configs(dtype), linear_gelu_kernel
            key = ["M", "N", "K", "W_KMAJOR"]
        else:
            configs, kernel = pointer_configs(dtype), linear_gelu_pointer_kernel
            key = ["M", "N", "K"]
        tune = triton.autotune(configs=configs, key=key, do_bench=autotune_timer)
        _TUNED[slot] = tune(kernel)
    return _TUNED[slot]
# --8<-- [end:autotune]


# %% [markdown]
# ## The launcher
#
# Tensor descriptors need a unit stride along each row and 16-byte aligned rows.
# The launcher checks A, W (as it is, or as `W.t()`) and C on the host and picks the
# descriptor kernel when they fit, the pointer kernel otherwise; it never copies.


# %%
# --8<-- [start:launcher-checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
KERNELS = ("auto", "descriptor", "pointer")
MAX_DIM = 2**30  # tile coordinates are int32; offsets switch to int64 when needed


def _check_inputs(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> None:
    for name, t, dims in (("a", a, 2), ("w", w, 2), ("bias", bias, 1)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != dims:
            raise ValueError(f"{name} must be {dims}-D, got shape {tuple(t.shape)}")
        if t.device != a.device:
            raise ValueError(f"{name} must be on the same device as a ({a.device}), "
                             f"got {t.device}")
        if t.dtype != a.dtype:
            raise TypeError(f"{name} must have the same dtype as a ({a.dtype}), "
                            f"got {t.dtype}")
    if a.shape[1] != w.shape[0]:
        raise ValueError("a.shape[1] must equal w.shape[0] (the K dimension), "
                         f"got {tuple(a.shape)} @ {tuple(w.shape)}")
    if bias.shape[0] != w.shape[1]:
        raise ValueError(f"bias must have w.shape[1] = {w.shape[1]} elements, "
                         f"got {bias.shape[0]}")
    for name, size in (("a.shape[0] (M)", a.shape[0]), ("a.shape[1] (K)", a.shape[1]),
                       ("w.shape[1] (N)", w.shape[1])):
        if size >= MAX_DIM:
            raise ValueError(f"{name} is {size}: M, N and K must each be below 2**30 "
                             "(int32 tile coordinates)")
    if a.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("a is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def descriptor_ok(t: torch.Tensor) -> bool:
    """Can a tensor descriptor cover `t` row by row? Unit column stride, rows that do
    not overlap, 16-byte aligned base and row stride, at least 16 bytes per row."""
    size = t.element_size()
    return (t.stride(1) == 1 and t.stride(0) >= t.shape[1]
            and (t.stride(0) * size) % 16 == 0 and t.data_ptr() % 16 == 0
            and t.shape[1] * size >= 16)


def w_layout(a: torch.Tensor, w: torch.Tensor, c: torch.Tensor) -> str | None:
    """How descriptors can read W: "row-major" (K, N), "k-major" (w is weight.t() of an
    (N, K) weight), or None when a descriptor cannot serve A, W or C and the pointer
    kernel must run."""
    if not (descriptor_ok(a) and descriptor_ok(c)):
        return None
    if descriptor_ok(w):
        return "row-major"
    return "k-major" if descriptor_ok(w.t()) else None


def needs_int64(*tensors: torch.Tensor) -> bool:
    """True when the largest element offset into some tensor does not fit in int32."""
    spans = (sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
             for t in tensors)
    return any(span >= 2**31 for span in spans)
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher]
def linear_gelu(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor, *,
                kernel: str = "auto") -> torch.Tensor:
    """Return gelu_tanh(a @ w + bias) from one fused Triton kernel.

    w is (K, N): row-major, or `linear.weight.t()` as nn.Linear stores it (no copy).
    kernel: "descriptor" (tensor descriptors, TMA on Hopper), "pointer" (any strides) or
    "auto" (descriptors when A, W and C allow them, else pointers).
    When a row of N elements is not a multiple of 16 bytes, the result is a view into a
    buffer with padded rows.
    """
    _check_inputs(a, w, bias)
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    (M, K), N = a.shape, w.shape[1]
    pad = 16 // a.element_size()  # (1)!
    width = triton.cdiv(N, pad) * pad
    c = torch.empty((M, width), device=a.device, dtype=a.dtype)[:, :N]
    if M == 0 or N == 0:
        return c
    if K == 0:  # an empty sum: the result is gelu(bias) in every row
        return c.copy_(linear_gelu_reference(a, w, bias))
    layout = w_layout(a, w, c)  # (2)!
    if kernel == "descriptor" and layout is None:
        raise ValueError(
            "kernel='descriptor' needs a, w (or w.t()) and the output with unit column "
            "stride, 16-byte aligned base and rows, and at least 16 bytes per row; got "
            f"a.stride()={a.stride()}, w.stride()={w.stride()}, N={N}: use "
            "kernel='auto' to fall back to the pointer kernel"
        )
    grid = _grid(M, N, a.device.index)
    if kernel == "pointer" or layout is None:
        tuned_kernel("pointer", a.dtype)[grid](
            a, w, bias, c, M, N, K, a.stride(0), a.stride(1), w.stride(0), w.stride(1),
            bias.stride(0), c.stride(0), c.stride(1), INT64=needs_int64(a, w, bias, c))
        return c
    if a.is_cuda:  # descriptors made on the device need scratch memory (per thread)
        triton.set_allocator(_cuda_scratch)
    tuned_kernel("descriptor", a.dtype)[grid](
        a, w, bias, c, M, N, K, a.stride(0), w.stride(0), w.stride(1), bias.stride(0),
        c.stride(0), W_KMAJOR=layout == "k-major")
    return c


def _cuda_scratch(size: int, alignment: int, stream):
    return torch.empty(size, device="cuda", dtype=torch.int8)


def linear_gelu_torch(a: torch.Tensor, w: torch.Tensor,
                      bias: torch.Tensor) -> torch.Tensor:
    """The eager PyTorch version: matmul, add, GELU (three kernels on a GPU)."""
    return torch.nn.functional.gelu(a @ w + bias, approximate="tanh")


def linear_gelu_reference(a: torch.Tensor, w: torch.Tensor,
                          bias: torch.Tensor) -> torch.Tensor:
    """fp32 math throughout, rounded to a.dtype once at the end."""
    return linear_gelu_torch(a.float(), w.float(), bias.float()).to(a.dtype)
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd M, N and K, three layouts of W (an `nn.Linear` weight, a padded-row view, a
# contiguous tensor), fresh random data, and an fp32 reference.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 8, 8), (127, 255, 40), (70, 45, 33))) -> None:
    for M, N, K in shapes:
        a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
        fc = torch.nn.Linear(K, N, device=DEVICE, dtype=torch.float16)  # weight (N, K)
        width = (N + 7) // 8 * 8 + 8  # padded rows: 16-byte aligned, w a strided view
        padded = torch.randn(K, width, device=DEVICE, dtype=torch.float16) / K**0.5
        ws = (fc.weight.detach().t(),  # (1)!
              padded[:, :N],  # (2)!
              torch.randn(K, N, device=DEVICE, dtype=torch.float16) / K**0.5)  # (3)!
        bias = fc.bias.detach()
        for w in ws:
            ref = linear_gelu_reference(a, w, bias)
            out = linear_gelu(a, w, bias)
            torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2)
    print(f"linear_gelu: linear_gelu(a, w, bias) == gelu_tanh(a @ w + bias) on "
          f"{DEVICE.type} for (M, N, K) in {list(shapes)}, fp16, with w = "
          "fc.weight.t(), a padded-row view and a contiguous w")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
