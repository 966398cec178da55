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
def rms_norm_rows_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps,
                         BLOCK_N: tl.constexpr):
    """One program per row: grid = (M,)."""
    w = _load_weight(w_ptr, N, BLOCK_N)  # every program (= every row) loads the weight
    row = tl.program_id(0)
    _rms_norm_row(x_ptr, y_ptr, w, row, N, stride_xm, stride_ym, eps, BLOCK_N)


@triton.jit
def rms_norm_persistent_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps,
                               BLOCK_N: tl.constexpr):
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
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (M, N), got shape {tuple(x.shape)}")
    if not 1 <= x.shape[1] <= MAX_N:
        raise ValueError(f"x must have 1 to {MAX_N} columns, got {x.shape[1]}")
    if x.shape[1] > 1 and x.stride(1) != 1:
        raise ValueError("x must have a contiguous last dim (stride 1), "
                         f"got stride {x.stride()}")
    if weight.shape != (x.shape[1],) or (x.shape[1] > 1 and weight.stride(0) != 1):
        raise ValueError(f"weight must be contiguous with shape ({x.shape[1]},), "
                         f"got {tuple(weight.shape)}, stride {weight.stride()}")
    if weight.dtype != x.dtype:
        raise TypeError("x and weight must have the same dtype, "
                        f"got {x.dtype} and {weight.dtype}")
    if x.device != weight.device:
        raise ValueError("x and weight must be on the same device, "
                         f"got {x.device} and {weight.device}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")


def _settings(n: int) -> tuple[int, int]:
    """(BLOCK_N, num_warps) for rows of n elements: more warps for longer rows."""
    block_n = triton.next_power_of_2(n)
    return block_n, min(16, max(1, block_n // 512))


def rms_norm_rows(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
                  ) -> torch.Tensor:
    """RMS-norm with one program per row."""
    _check_inputs(x, weight, eps)
    if x.shape[0] > MAX_ROWS:
        raise ValueError(f"x has {x.shape[0]} rows: one program per row, at most "
                         "2**31 - 1 of them (rms_norm_persistent takes any number)")
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    M, N = x.shape
    block_n, warps = _settings(N)
    rms_norm_rows_kernel[(M,)](x, weight, y, M, N, x.stride(0), y.stride(0), eps,
                               BLOCK_N=block_n, num_warps=warps)
    return y


# Resident blocks (programs) per SM, by compute capability (CUDA C Programming Guide,
# "Technical Specifications per Compute Capability"); a limit besides warp slots.
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16,
                     (8, 9): 24, (9, 0): 32}


@functools.lru_cache
def gpu_props(index: int | None):
    """The GPU's properties, asked once per device index, not on every launch."""
    return torch.cuda.get_device_properties(index)


def warp_occupancy(device: torch.device, num_warps: int) -> int:
    """Programs of `num_warps` warps that fit on one SM: by its warp slots (64 on an
    H200), and by its limit on resident blocks (32 on an H200), whichever is smaller.
    Registers or shared memory can lower the real number; extra programs just queue."""
    props = gpu_props(device.index)
    warp_slots = getattr(props, "max_threads_per_multi_processor", 2048) // 32
    by_warps = warp_slots // num_warps
    by_blocks = MAX_BLOCKS_PER_SM.get((props.major, props.minor), 16)  # 16: if unknown
    return max(1, min(by_warps, by_blocks))


def persistent_grid(device: torch.device, programs_per_sm: int) -> int:
    """SM count x programs per SM on a GPU; a small fixed number in the interpreter."""
    if device.type == "cuda":
        return gpu_props(device.index).multi_processor_count * programs_per_sm  # (1)!
    return 3


def rms_norm_persistent(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6,
                        programs_per_sm: int | None = None) -> torch.Tensor:
    """RMS-norm with a persistent grid: each program loops over rows.

    programs_per_sm: None sizes the grid by warp occupancy (`warp_occupancy`)."""
    _check_inputs(x, weight, eps)
    if programs_per_sm is not None and (
            not isinstance(programs_per_sm, int) or programs_per_sm < 1):
        raise ValueError("programs_per_sm must be a positive int or None, "
                         f"got {programs_per_sm!r}")
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    M, N = x.shape
    block_n, warps = _settings(N)
    if programs_per_sm is None:
        on_gpu = x.device.type == "cuda"
        programs_per_sm = warp_occupancy(x.device, warps) if on_gpu else 1
    grid = (min(M, persistent_grid(x.device, programs_per_sm)),)  # <= one per row
    rms_norm_persistent_kernel[grid](x, weight, y, M, N, x.stride(0), y.stride(0), eps,
                                     BLOCK_N=block_n, num_warps=warps)
    return y


def rms_norm_torch(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
                   ) -> torch.Tensor:
    """The plain torch reference, computed in fp32 and rounded to x's dtype."""
    xf = x.float()
    rms = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rms * weight.float()).to(x.dtype)
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
    print("persistent_rows: one-program-per-row and persistent RMS-norm == torch on "
          f"{DEVICE.type} for (M, N) in {[tuple(s) for s in shapes]}")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
