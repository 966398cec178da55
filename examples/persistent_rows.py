# %% [markdown]
# # Persistent rows: RMS-norm launched two ways
#
# `y = x / sqrt(mean(x**2, dim=-1) + eps) * w` over an (M, N) tensor, one row at a time.
# The same row computation is launched two ways:
#
# * **one program per row**: grid = M, the hardware hands rows to SMs as they free up;
# * **persistent**: grid = SM count x programs per SM, each program loops over rows
#   `pid, pid + P, pid + 2P, ...` with `tl.range` and `tl.num_programs`.
#
# You will see:
#
# * a row helper written once and called from both kernels;
# * how the persistent grid is sized on a GPU and on the CPU;
# * the benchmark that shows where each launch wins: many short rows, few long rows.
#
# Run it with `python examples/persistent_rows.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit runs

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## One row, written once
#
# A row fits in one tile of `BLOCK_N` (the next power of two at or above N); the mask
# hides the padding. The helper reads the row, reduces it, scales it by the weight and
# writes it back. The weight is loaded by the caller, so a persistent program can load
# it once and reuse it for every row it handles.


# %%
# --8<-- [start:row]
@triton.jit
def _rms_norm_row(
    x_ptr, y_ptr,  # input (M, N) and output (M, N)
    w,  # the weight, already loaded: a (BLOCK_N,) fp32 tile
    row,  # which row to normalize
    N, stride_xm, stride_ym,  # row length and row strides (the last dim is contiguous)
    eps,  # added to the mean square
    BLOCK_N: tl.constexpr,  # power of two >= N
):
    row = tl.cast(row, tl.int64)  # (1)!
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / N + eps)  # padding lanes add 0 to the sum
    y = x / rms * w
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _load_weight(w_ptr, N, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    return tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
# --8<-- [end:row]


# %% [markdown]
# ## Two kernels
#
# The row helper is inlined into both; the launch differs, and so does how often
# the weight is read: once per row, or once per program.


# %%
# --8<-- [start:kernels]
@triton.jit
def rms_norm_rows_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr):
    """One program per row: grid = (M,)."""
    w = _load_weight(w_ptr, N, BLOCK_N)  # every program (= every row) loads the weight
    _rms_norm_row(x_ptr, y_ptr, w, tl.program_id(0), N, stride_xm, stride_ym, eps, BLOCK_N)


@triton.jit
def rms_norm_persistent_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr):
    """A fixed grid of P programs: program p handles rows p, p + P, p + 2P, ..."""
    w = _load_weight(w_ptr, N, BLOCK_N)  # (1)!
    for row in tl.range(tl.program_id(0), M, tl.num_programs(0)):  # (2)!
        _rms_norm_row(x_ptr, y_ptr, w, row, N, stride_xm, stride_ym, eps, BLOCK_N)
# --8<-- [end:kernels]


# %% [markdown]
# ## Launchers
#
# Both share the checks and the choice of `BLOCK_N` and `num_warps`. The persistent
# one sizes its grid as SM count x occupancy; on the CPU it uses a fixed small number.


# %%
# --8<-- [start:launchers]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_N = 32768  # one row must fit in one tile
MAX_ROWS = 2**31 - 1  # the most programs a grid holds along axis 0


def _check_inputs(x: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (M, N), got shape {tuple(x.shape)}")
    if not 1 <= x.shape[1] <= MAX_N:
        raise ValueError(f"x must have 1 to {MAX_N} columns, got {x.shape[1]}")
    if x.shape[1] > 1 and x.stride(1) != 1:
        raise ValueError(f"x must have a contiguous last dim (stride 1), got stride {x.stride()}")
    if weight.shape != (x.shape[1],) or (x.shape[1] > 1 and weight.stride(0) != 1):
        raise ValueError(f"weight must be contiguous with shape ({x.shape[1]},), got {tuple(weight.shape)}, "
                         f"stride {weight.stride()}")
    if weight.dtype != x.dtype:
        raise TypeError(f"x and weight must have the same dtype, got {x.dtype} and {weight.dtype}")
    if x.device != weight.device:
        raise ValueError(f"x and weight must be on the same device, got {x.device} and {weight.device}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 (Triton's interpreter)")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")


def _settings(n: int) -> tuple[int, int]:
    """(BLOCK_N, num_warps) for rows of n elements: more warps for longer rows."""
    block_n = triton.next_power_of_2(n)
    return block_n, min(16, max(1, block_n // 512))


def rms_norm_rows(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMS-norm with one program per row."""
    _check_inputs(x, weight, eps)
    if x.shape[0] > MAX_ROWS:
        raise ValueError(f"x has {x.shape[0]} rows: one program per row, at most 2**31 - 1 of them "
                         "(rms_norm_persistent takes any number)")
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    M, N = x.shape
    block_n, warps = _settings(N)
    rms_norm_rows_kernel[(M,)](x, weight, y, M, N, x.stride(0), y.stride(0), eps,
                               BLOCK_N=block_n, num_warps=warps)
    return y


# Resident blocks (programs) per SM, by compute capability (CUDA C Programming Guide, "Technical
# Specifications per Compute Capability"); a limit of its own, besides warp slots.
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16, (8, 9): 24, (9, 0): 32}


def warp_occupancy(device: torch.device, num_warps: int) -> int:
    """Programs of `num_warps` warps that fit on one SM: by its warp slots (64 on an H200), and by
    its limit on resident blocks (32 on an H200), whichever is smaller. Registers or shared memory
    can lower the real number; extra programs just queue."""
    props = torch.cuda.get_device_properties(device)
    by_warps = getattr(props, "max_threads_per_multi_processor", 2048) // (32 * num_warps)
    by_blocks = MAX_BLOCKS_PER_SM.get((props.major, props.minor), 16)  # 16: the smallest listed, when unknown
    return max(1, min(by_warps, by_blocks))


def persistent_grid(device: torch.device, programs_per_sm: int) -> int:
    """SM count x programs per SM on a GPU; a fixed small number under the interpreter."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count * programs_per_sm  # (1)!
    return 3


def rms_norm_persistent(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                        programs_per_sm: int | None = None) -> torch.Tensor:
    """RMS-norm with a persistent grid: each program loops over rows.

    programs_per_sm: None sizes the grid by warp occupancy (`warp_occupancy`)."""
    _check_inputs(x, weight, eps)
    if programs_per_sm is not None and (not isinstance(programs_per_sm, int) or programs_per_sm < 1):
        raise ValueError(f"programs_per_sm must be a positive int or None, got {programs_per_sm!r}")
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    M, N = x.shape
    block_n, warps = _settings(N)
    if programs_per_sm is None:
        programs_per_sm = warp_occupancy(x.device, warps) if x.device.type == "cuda" else 1
    grid = (min(M, persistent_grid(x.device, programs_per_sm)),)  # never more programs than rows
    rms_norm_persistent_kernel[grid](x, weight, y, M, N, x.stride(0), y.stride(0), eps,
                                     BLOCK_N=block_n, num_warps=warps)
    return y


def rms_norm_torch(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The plain torch reference, computed in fp32 and rounded to x's dtype."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
# --8<-- [end:launchers]


# %% [markdown]
# ## Check it
#
# Odd shapes, both launchers, and a row count that is not a multiple of the grid, so
# some persistent programs do one row fewer than others.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1), (17, 33), (127, 255), (301, 64))) -> None:
    for M, N in shapes:
        x = torch.randn(M, N, device=DEVICE)
        w = torch.randn(N, device=DEVICE)
        ref = rms_norm_torch(x, w)
        torch.testing.assert_close(rms_norm_rows(x, w), ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(rms_norm_persistent(x, w), ref, rtol=1e-5, atol=1e-5)
    print(f"persistent_rows: one-program-per-row and persistent RMS-norm == torch on {DEVICE.type} "
          f"for (M, N) in {[tuple(s) for s in shapes]}")
# --8<-- [end:check]


# %% [markdown]
# ## Benchmark spec
#
# The same 2^26 fp32 elements (256 MB, well past the 60 MB L2 of an H200) cut into
# rows of different lengths: from millions of 32-element rows to 2048 rows of 32768.
# Bytes moved: read x, write y (the weight is negligible).


# %%
TOTAL = 2**26

BENCHMARKS = [
    {
        "name": "persistent_rows_fp32",
        "title": "RMS-norm, fp32, 2^26 elements as (2^26 / N) x N",
        "x_name": "N",
        "x_vals": [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
        "tiny_x_vals": [32, 1024],
        "providers": ["triton", "triton-persistent", "torch", "torch.compile"],
        "metric": "GB/s",
        "ceiling": "copy",
        "cudagraph": False,
        "args": {},
    },
]


def bench_case(name: str, provider: str, x: int, device=None) -> dict:
    """Inputs and the callable for one benchmark point (see `BENCHMARKS`)."""
    device = DEVICE if device is None else device
    total = TOTAL if device.type == "cuda" else 2**12  # tiny runs under the interpreter
    M, N = max(1, total // x), x
    a = torch.randn(M, N, device=device, dtype=torch.float32)
    w = torch.randn(N, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: rms_norm_rows(a, w),
        "triton-persistent": lambda: rms_norm_persistent(a, w),
        "torch": lambda: torch.nn.functional.rms_norm(a, (N,), w, eps=1e-6),
    }
    peer = _compiled_peer(rms_norm_torch, a, w) if provider == "torch.compile" else {"fn": fns[provider]}
    return {**peer, "ref": lambda: rms_norm_torch(a, w), "work": 2 * M * N * 4 + N * 4,
            "rtol": 1e-5, "atol": 1e-5}


def _compiled_peer(fn, *inputs, **options) -> dict:
    """The torch.compile peer of one point: `scripts/bench.py` compiles `compile` itself, afresh for
    this shape (`dynamic=False`, after `torch.compiler.reset()`), and calls it on `inputs`; `fn`
    does the same on its first call, for a direct call of the case."""
    compiled = []

    def call():
        if not compiled:
            compiled.append(torch.compile(fn, dynamic=False, **options))
        return compiled[0](*inputs)

    return {"fn": call, "compile": fn, "inputs": inputs, "compile_options": options}


# %%
if __name__ == "__main__":
    self_check()
