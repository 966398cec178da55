# %% [markdown]
# # Fused linear + bias + GELU: the epilogue that never leaves registers
#
# `C = gelu_tanh(A @ W + bias)` for `A` (M, K), `W` (K, N) and `bias` (N,), in fp16.
# Eager PyTorch runs a matmul, then an add, then a GELU: three kernels and three
# round trips of C through memory. Here the bias and the activation are applied to
# the fp32 accumulator while it is still in registers, and C is written once.
#
# You will see:
#
# * a matmul kernel that loads tiles through tensor descriptors (TMA on Hopper);
# * a fused epilogue: bias add and tanh-approximated GELU on the accumulator;
# * one kernel that runs one tile per program or, with a grid of one program
#   per SM, loops over tiles (a persistent kernel);
# * a store split in two halves, which frees shared memory for one more pipeline stage;
# * a comparison with eager PyTorch and with `torch.compile` of the same function.
#
# Run it with `python examples/linear_gelu.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit runs

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
ON_GPU = torch.cuda.is_available()
# --8<-- [end:setup]


# %% [markdown]
# ## The epilogue
#
# The tanh form of GELU is `0.5 x (1 + tanh(u))` with `u = sqrt(2/pi) (x + 0.044715 x^3)`.
# Since `0.5 (1 + tanh(u)) = sigmoid(2u)`, it is also `x * sigmoid(2u)`: one
# exponential and one division per element, computed in fp32.


# %%
# --8<-- [start:epilogue]
@triton.jit
def gelu_tanh(x):
    """GELU, tanh approximation, as x * sigmoid(2u) (same value, one exp)."""
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)  # sqrt(2 / pi) * (x + 0.044715 x^3)
    return x * tl.sigmoid(2.0 * u)  # (1)!
# --8<-- [end:epilogue]


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
    a_ptr, w_ptr, bias_ptr, c_ptr,  # A (M, K), W (K, N), bias (N,), C (M, N); rows contiguous
    M, N, K,
    stride_am, stride_wk, stride_cm,  # row strides (elements); column strides are 1
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # tile rows per group (L2 reuse)
    WARP_SPECIALIZE: tl.constexpr,  # split TMA loads and tensor-core math between warps
    FLATTEN: tl.constexpr,  # merge the tile loop and the K loop into one pipelined loop
    EPILOGUE_SUBTILE: tl.constexpr,  # store C in two halves: half the shared memory for the store
    PERSISTENT: tl.constexpr,  # read by the launcher's grid only: one program per SM
):
    C_BLOCK_N: tl.constexpr = BLOCK_N // 2 if EPILOGUE_SUBTILE else BLOCK_N
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[K, N], strides=[stride_wk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, C_BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)

    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0),  # (1)!
                         flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([off_m, k * BLOCK_K])  # (2)!
            w = w_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, w, acc)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)  # (3)!
        c = gelu_tanh(acc + bias[None, :].to(tl.float32)).to(c_ptr.dtype.element_ty)  # (4)!
        if EPILOGUE_SUBTILE:  # (5)!
            c0, c1 = tl.split(tl.permute(tl.reshape(c, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            c_desc.store([off_m, off_n], c0)
            c_desc.store([off_m, off_n + BLOCK_N // 2], c1)
        else:
            c_desc.store([off_m, off_n], c)  # (6)!
# --8<-- [end:kernel]


# %% [markdown]
# ## Configs
#
# Each config names the tile shape and whether the grid is persistent. On the GPU
# `@triton.autotune` times them all on the first call for each shape; the
# interpreter gets one small config.


# %%
# --8<-- [start:autotune]
def linear_gelu_configs() -> list[triton.Config]:
    """Tile shapes and grid kinds for `linear_gelu_kernel`; one config under the interpreter."""
    if not ON_GPU:
        meta = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "WARP_SPECIALIZE": False,
                "FLATTEN": False, "EPILOGUE_SUBTILE": False, "PERSISTENT": False}
        return [triton.Config(meta, num_warps=4, num_stages=1)]

    def c(bm, bn, bk, warps, stages, persistent, ws=False, subtile=False):
        meta = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "WARP_SPECIALIZE": ws,
                "FLATTEN": persistent, "EPILOGUE_SUBTILE": subtile, "PERSISTENT": persistent}
        return triton.Config(meta, num_warps=warps, num_stages=stages)

    return [  # (1)!
        c(128, 256, 64, 8, 3, persistent=True),
        c(128, 256, 64, 8, 3, persistent=True, ws=True),
        c(128, 256, 64, 8, 4, persistent=True, subtile=True),
        c(128, 128, 64, 8, 4, persistent=True),
        c(128, 256, 64, 8, 3, persistent=False),
    ]


def _grid(M: int, N: int):
    """One program per tile, or (PERSISTENT) at most one program per SM."""
    def grid(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        return (min(tiles, _num_sms()) if meta["PERSISTENT"] else tiles,)
    return grid


def _num_sms() -> int:
    return torch.cuda.get_device_properties(0).multi_processor_count if ON_GPU else 4


def autotune_timer(kernel_call, quantiles):
    """Time each config inside a CUDA graph, so the host-side launch cost does not pick the winner."""
    return triton.testing.do_bench_cudagraph(kernel_call, rep=20, quantiles=quantiles)


linear_gelu_tuned = triton.autotune(configs=linear_gelu_configs(), key=["M", "N", "K"], do_bench=autotune_timer)(
    linear_gelu_kernel
)
# --8<-- [end:autotune]


# %% [markdown]
# ## The launcher
#
# Tensor descriptors need a unit stride along each row and 16-byte aligned rows;
# the launcher checks this and says so instead of copying behind your back.


# %%
# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
_ALLOCATOR_SET = []


def _check_inputs(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> None:
    for name, t, dims in (("a", a, 2), ("w", w, 2), ("bias", bias, 1)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16 or bfloat16, got {t.dtype}")
        if t.dim() != dims:
            raise ValueError(f"{name} must be {dims}-D, got shape {tuple(t.shape)}")
        if t.device != a.device:
            raise ValueError(f"{name} must be on the same device as a ({a.device}), got {t.device}")
        if t.dtype != a.dtype:
            raise TypeError(f"{name} must have the same dtype as a ({a.dtype}), got {t.dtype}")
    if a.shape[1] != w.shape[0]:
        raise ValueError(f"a.shape[1] must equal w.shape[0] (the K dimension), got {tuple(a.shape)} @ {tuple(w.shape)}")
    if bias.shape[0] != w.shape[1]:
        raise ValueError(f"bias must have w.shape[1] = {w.shape[1]} elements, got {bias.shape[0]}")
    if bias.stride(0) != 1:
        raise ValueError(f"bias must be contiguous, got stride {bias.stride()}")
    for name, t in (("a", a), ("w", w)) if a.numel() and w.numel() else ():  # empty: nothing to load
        size = t.element_size()
        if t.stride(1) != 1 or (t.stride(0) * size) % 16 or t.data_ptr() % 16 or t.shape[1] * size < 16:
            raise ValueError(
                f"{name} must have unit column stride, 16-byte aligned rows and at least 16 bytes per row "
                f"(tensor descriptors); got shape {tuple(t.shape)}, stride {t.stride()}: use .contiguous() "
                "and a last dimension that is a multiple of 8"
            )
    if a.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("a is on the CPU: CPU tensors need TRITON_INTERPRET=1 (Triton's interpreter)")


def linear_gelu(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Return gelu_tanh(a @ w + bias) from one fused Triton kernel.

    When N is not a multiple of 8 the result is a view into a buffer with padded rows.
    """
    _check_inputs(a, w, bias)
    (M, K), N = a.shape, w.shape[1]
    pad = 16 // a.element_size()  # (1)!
    c = torch.empty((M, triton.cdiv(N, pad) * pad), device=a.device, dtype=a.dtype)[:, :N]
    if M == 0 or N == 0:
        return c
    if K == 0:  # an empty sum: the result is gelu(bias) in every row
        return c.copy_(linear_gelu_reference(a, w, bias))
    if a.is_cuda and not _ALLOCATOR_SET:  # descriptors made on the device need scratch memory
        triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
        _ALLOCATOR_SET.append(True)
    linear_gelu_tuned[_grid(M, N)](a, w, bias, c, M, N, K, a.stride(0), w.stride(0), c.stride(0))
    return c


def linear_gelu_torch(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The eager PyTorch version: matmul, add, GELU (three kernels on a GPU)."""
    return torch.nn.functional.gelu(a @ w + bias, approximate="tanh")


def linear_gelu_reference(a: torch.Tensor, w: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """fp32 math throughout, rounded to a.dtype once at the end."""
    return linear_gelu_torch(a.float(), w.float(), bias.float()).to(a.dtype)
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd M and N (K must keep rows 16-byte aligned: a multiple of 8 in fp16), fresh
# random data, and an fp32 reference.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 8, 8), (127, 255, 40), (70, 33, 136))) -> None:
    for M, N, K in shapes:
        a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
        width = (N + 7) // 8 * 8 + 8  # padded rows: 16-byte aligned, so w is a strided view
        w = (torch.randn(K, width, device=DEVICE, dtype=torch.float16) / K**0.5)[:, :N]  # (1)!
        bias = torch.randn(N, device=DEVICE, dtype=torch.float16)
        torch.testing.assert_close(linear_gelu(a, w, bias), linear_gelu_reference(a, w, bias), rtol=1e-2, atol=1e-2)
    print(f"linear_gelu: linear_gelu(a, w, bias) == gelu_tanh(a @ w + bias) on {DEVICE.type} "
          f"for (M, N, K) in {list(shapes)}, fp16")
# --8<-- [end:check]


# %% [markdown]
# ## Benchmark spec
#
# Three providers on the same inputs: eager PyTorch (cuBLAS matmul, then add,
# then GELU), `torch.compile` of that same function, and the fused kernel. The
# work counted is the matmul's `2 * M * N * K` flops.


# %%
BENCHMARKS = [
    {
        "name": "linear_gelu_fp16",
        "title": "gelu_tanh(A @ W + bias), fp16",
        "x_name": "M x N x K",
        "x_vals": ["4096x4096x4096", "8192x8192x2048"],
        "tiny_x_vals": ["127x136x40"],
        "providers": ["torch", "torch.compile", "triton"],
        "metric": "TFLOP/s",
        "ceiling": "fp16",
        "cudagraph": True,
        "args": {},
    },
]

_COMPILED = {}


def _compiled_linear_gelu():
    if "fn" not in _COMPILED:
        _COMPILED["fn"] = torch.compile(linear_gelu_torch)
    return _COMPILED["fn"]


def bench_case(name: str, provider: str, x, device=None) -> dict:
    """Inputs and the callable for one benchmark point (see `BENCHMARKS`)."""
    device = DEVICE if device is None else device
    M, N, K = (int(v) for v in str(x).split("x"))
    a = torch.randn(M, K, device=device, dtype=torch.float16)
    w = torch.randn(K, N, device=device, dtype=torch.float16) / K**0.5
    bias = torch.randn(N, device=device, dtype=torch.float16)
    fns = {
        "torch": lambda: linear_gelu_torch(a, w, bias),
        "torch.compile": lambda: _compiled_linear_gelu()(a, w, bias),
        "triton": lambda: linear_gelu(a, w, bias),
    }
    return {
        "fn": fns[provider],
        "ref": lambda: linear_gelu_reference(a, w, bias),
        "work": 2.0 * M * N * K,  # flops of the matmul; the epilogue is O(M * N)
        "rtol": 1e-2,
        "atol": 1e-2,
    }


# %%
if __name__ == "__main__":
    self_check()
