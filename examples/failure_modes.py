# %% [markdown]
# # Failure modes: kernels that are wrong in quiet ways, and their fixes
#
# Each section is a small kernel in a broken and a fixed form, chosen by a
# `tl.constexpr` flag so both compile from the same source:
#
# * int32 offsets that wrap past 2^31 elements (`INT64_OFFSETS`);
# * a store without a mask that writes past the end of its tensor (`MASKED`);
# * tiles too large for shared memory, and a launcher that falls back to smaller ones;
# * an fp32 `tl.dot` that is tf32 on the GPU and true fp32 in the interpreter,
#   and bf16 arithmetic, which the interpreter gets wrong.
#
# Autotuning pitfalls live in `examples/autotune.py`, recompile storms in
# `examples/constexpr_specialization.py`.
#
# Run it with `python examples/failure_modes.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
INT32_MAX = 2**31 - 1
FLOATS = (torch.float16, torch.bfloat16, torch.float32)


def _check_tensor(name: str, t, dtypes, dim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        allowed = [str(d) for d in dtypes]
        raise TypeError(f"{name} must have dtype in {allowed}, got {t.dtype}")
    if t.dim() != dim:
        raise ValueError(f"{name} must be {dim}-D, got shape {tuple(t.shape)}")
    if dim == 1 and not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous (stride 1), "
                         f"got stride {t.stride()}")
    if t.device.type == "cpu" and not INTERPRETED:
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _grid_1d(name: str, n: int, block_size: int, int64_offsets: bool = False) -> int:
    """Programs for n elements in block_size tiles; refuses int32 offsets that wrap."""
    if (not isinstance(block_size, int) or not 1 <= block_size <= 2**20
            or block_size & (block_size - 1)):
        raise ValueError("block_size must be a power of two from 1 to 2**20, "
                         f"got {block_size!r}")
    grid = triton.cdiv(n, block_size)
    if grid > INT32_MAX:
        raise ValueError(f"{name} has {n} elements: {grid} tiles are more than a grid "
                         "holds; raise block_size")
    if not int64_offsets and grid * block_size - 1 > INT32_MAX:
        raise ValueError(f"{name} has {n} elements: the last tile reaches offset "
                         f"{grid * block_size - 1}, and int32 offsets stop at "
                         "2**31 - 1")
    return grid


def reach(t: torch.Tensor) -> int:
    """The largest element offset in the view t: sum of (size - 1) * |stride|."""
    pairs = zip(t.shape, t.stride(), strict=True)
    return sum((size - 1) * abs(stride) for size, stride in pairs) if t.numel() else 0
# --8<-- [end:setup]


# %% [markdown]
# ## 1. int32 offsets past 2^31 elements
#
# `tl.program_id` is an int32 and so is `BLOCK_SIZE`, so `pid * BLOCK_SIZE` is
# computed in 32 bits. Past 2^31 elements it wraps to a negative offset: an illegal
# address, or (worse) a valid address before the tensor. Casting the program id to
# int64 first fixes it. `tile_offsets` shows the arithmetic on any device by
# pretending to be the program `first_tile`.


# %%
# --8<-- [start:int32]
@triton.jit
def fill_kernel(
    y_ptr,  # pointer to the output
    n_elements,  # number of elements: an i64 argument once it passes 2^31
    value,  # the value to write
    BLOCK_SIZE: tl.constexpr,
    INT64_OFFSETS: tl.constexpr,  # False: the bug; True: the fix
):
    pid = tl.program_id(0)  # int32
    if INT64_OFFSETS:
        pid = pid.to(tl.int64)  # (1)!
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (2)!
    mask = offsets < n_elements
    y = tl.zeros((BLOCK_SIZE,), tl.int32) + value
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def tile_offsets_kernel(out_ptr, first_tile, BLOCK_SIZE: tl.constexpr,
                        INT64_OFFSETS: tl.constexpr):
    tile = tl.program_id(0) + first_tile  # the tile a program of a huge grid would own
    if INT64_OFFSETS:
        tile = tile.to(tl.int64)
    offsets = tile * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    out = out_ptr + tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out, offsets.to(tl.int64))


def _check_fill(y, value) -> None:
    _check_tensor("y", y, (torch.int8, torch.int32, torch.float32), 1)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"value must be an int or a float, got {type(value).__name__}")
    if not y.dtype.is_floating_point:
        info = torch.iinfo(y.dtype)
        if not (isinstance(value, int) and info.min <= value <= info.max):
            raise ValueError(f"value must be an integer that {y.dtype} holds, "
                             f"got {value!r}")


def fill(y: torch.Tensor, value: int | float, int64_offsets: bool = True,
         block_size: int = 1024) -> torch.Tensor:
    """Write `value` into every element of the 1-D tensor y, in place."""
    _check_fill(y, value)
    grid = _grid_1d("y", y.numel(), block_size, int64_offsets)  # (3)!
    fill_kernel[(grid,)](y, y.numel(), value, BLOCK_SIZE=block_size,
                         INT64_OFFSETS=int64_offsets)
    return y


def tile_offsets(first_tile: int, n_tiles: int = 2, block_size: int = 4,
                 int64_offsets: bool = True) -> list[int]:
    """The offsets of programs first_tile .. first_tile + n_tiles - 1, flattened."""
    if not isinstance(n_tiles, int) or not 1 <= n_tiles <= 2**20:
        raise ValueError(f"n_tiles must be an int from 1 to 2**20, got {n_tiles!r}")
    _grid_1d("out", n_tiles * block_size, block_size)  # block_size: a power of two
    if not isinstance(first_tile, int) or not 0 <= first_tile < 2**31 - n_tiles:
        raise ValueError("first_tile must be in [0, 2**31 - n_tiles), "
                         f"got {first_tile}")
    out = torch.empty(n_tiles * block_size, device=DEVICE, dtype=torch.int64)
    tile_offsets_kernel[(n_tiles,)](out, first_tile, BLOCK_SIZE=block_size,
                                    INT64_OFFSETS=int64_offsets)
    return out.tolist()
# --8<-- [end:int32]


# %% [markdown]
# ## 2. A missing mask
#
# Without a mask the last program loads and stores a whole tile, past the end of
# the tensor. Nothing reports it: not the GPU (the bytes belong to the same
# allocation), and not the interpreter, which reads and writes CPU memory as told.


# %%
# --8<-- [start:mask]
@triton.jit
def scale_kernel(x_ptr, y_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr,
                 MASKED: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if MASKED:
        mask = offsets < n_elements
        y = tl.load(x_ptr + offsets, mask=mask).to(tl.float32) * alpha
        tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:  # the bug: every lane of the last tile reads and writes
        y = tl.load(x_ptr + offsets).to(tl.float32) * alpha
        tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty))


def _check_out(x, out) -> None:
    _check_tensor("out", out, FLOATS, 1)
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError("out must match x in shape and dtype, got "
                         f"{tuple(out.shape)} {out.dtype}")
    if out.device != x.device:
        raise ValueError(f"out must be on x's device, got {out.device} and {x.device}")
    gap = abs(out.data_ptr() - x.data_ptr())
    if 0 < gap < x.numel() * x.element_size():  # programs would read what others wrote
        raise ValueError("out must not partly overlap x: they start "
                         f"{gap // x.element_size()} elements apart")


def scale(x: torch.Tensor, alpha: float, out: torch.Tensor | None = None,
          masked: bool = True, block_size: int = 256) -> torch.Tensor:
    """out = x * alpha. `masked=False` (the bug) touches up to block_size - 1 past x."""
    _check_tensor("x", x, FLOATS, 1)
    out = torch.empty_like(x) if out is None else out
    _check_out(x, out)
    grid = _grid_1d("x", x.numel(), block_size)  # int32 offsets: refused past 2**31 - 1
    scale_kernel[(grid,)](x, out, x.numel(), float(alpha), BLOCK_SIZE=block_size,
                          MASKED=masked)
    return out
# --8<-- [end:mask]


# %% [markdown]
# ## 3. Tiles too large for shared memory
#
# A matmul's tiles are staged in shared memory, `num_stages` deep. On an H200 a
# program gets at most about 227 KB; 128 x 256 x 128 fp16 tiles pipelined 4 deep need
# more, and the first launch raises `OutOfResources`. The launcher tries configs from
# largest to smallest and remembers the first one that runs on this device. What is
# remembered is only a first guess: shared memory depends on the inputs too. With
# strides that are not multiples of 16 bytes Triton cannot pipeline the loads, keeps
# one stage, and the large tiles fit (96 KiB); with aligned strides they are staged
# 4 deep (384 KiB) and do not. So a remembered config that fails falls back to the
# rest of the list.


# %%
# --8<-- [start:matmul]
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # C (M x N) = A (M x K) @ B (K x N)
    M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,  # "tf32" (the GPU's default for fp32) or "ieee"
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


MATMUL_CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), largest first
    (128, 256, 128, 8, 4),
    (128, 128, 64, 4, 3),
    (64, 64, 32, 4, 2),
]
_WORKING_CONFIG = {}  # (device, dtype, precision) -> the first config that launched


def _launch_matmul(a, b, c, config, precision):
    bm, bn, bk, warps, stages = config
    grid = (triton.cdiv(a.shape[0], bm), triton.cdiv(b.shape[1], bn))
    matmul_kernel[grid](a, b, c, a.shape[0], b.shape[1], a.shape[1],
                        *a.stride(), *b.stride(), *c.stride(),
                        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, INPUT_PRECISION=precision,
                        num_warps=warps, num_stages=stages)


def _check_matmul(a, b, precision: str, configs) -> None:
    for name, t in (("a", a), ("b", b)):
        _check_tensor(name, t, (torch.float16, torch.float32), 2)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a and b do not chain: a is {tuple(a.shape)}, "
                         f"b is {tuple(b.shape)}")
    if a.dtype != b.dtype or a.device != b.device:
        raise ValueError("a and b must share dtype and device, got "
                         f"{a.dtype}/{a.device} and {b.dtype}/{b.device}")
    if precision not in ("tf32", "ieee"):
        raise ValueError(f"precision must be 'tf32' or 'ieee', got {precision!r}")
    M, N = a.shape[0], b.shape[1]
    largest = max(reach(a), reach(b), M * N - 1)  # the last element of A, B and C
    if largest > INT32_MAX:
        raise ValueError(f"a, b or c reaches element offset {largest}: "
                         "this matmul's int32 offsets stop at 2**31 - 1")
    if triton.cdiv(N, min(cfg[1] for cfg in configs)) > 65535:
        raise ValueError(f"b has N = {N} columns: more tiles than grid axis 1 holds "
                         "(65535)")


def matmul(a: torch.Tensor, b: torch.Tensor, precision: str = "tf32",
           configs=MATMUL_CONFIGS) -> torch.Tensor:
    """a @ b with the largest config this device can run; fp32 accumulation."""
    _check_matmul(a, b, precision, configs)
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    key = (str(a.device), a.dtype, precision, tuple(configs))
    remembered = [_WORKING_CONFIG[key]] if key in _WORKING_CONFIG else []
    candidates = remembered + [cfg for cfg in configs if cfg not in remembered]  # (2)!
    for config in candidates:
        try:
            _launch_matmul(a, b, c, config, precision)
        except OutOfResources:  # (1)!
            continue
        _WORKING_CONFIG[key] = config
        return c
    raise RuntimeError(f"no matmul config fits this device; tried {candidates}")


def matmul_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp64 reference, returned in a's dtype."""
    return (a.double() @ b.double()).to(a.dtype)
# --8<-- [end:matmul]


# %% [markdown]
# ## 4. The interpreter is not the GPU
#
# Two differences that change results. The interpreter keeps an fp32 `tl.dot` in
# true fp32, while a GPU uses tf32 unless asked for `"ieee"`. And the interpreter
# holds bf16 values as raw 16-bit integers (triton issues 4972, 11584): converting
# them to fp32 is exact, but arithmetic directly in bf16 returns garbage (or raises,
# when a Python float is involved). `UPCAST` picks the safe form.


# %%
# --8<-- [start:precision]
@triton.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n_elements, BLOCK_SIZE: tl.constexpr,
               UPCAST: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if UPCAST:  # compute in fp32, round once on the way out
        x = x.to(tl.float32)
        y = y.to(tl.float32)
    tl.store(z_ptr + offsets, (x + y).to(z_ptr.dtype.element_ty), mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, upcast: bool = True,
        block_size: int = 1024) -> torch.Tensor:
    _check_tensor("x", x, FLOATS, 1)
    _check_tensor("y", y, FLOATS, 1)
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"x and y must match in shape and dtype, got {tuple(x.shape)} "
                         f"{x.dtype}, {tuple(y.shape)} {y.dtype}")
    grid = _grid_1d("x", x.numel(), block_size)  # int32 offsets: refused past 2**31 - 1
    z = torch.empty_like(x)
    add_kernel[(grid,)](x, y, z, x.numel(), BLOCK_SIZE=block_size, UPCAST=upcast)
    return z


def bf16_error(n: int = 1000, upcast: bool = False) -> float:
    """Largest |add(x, y) - (x + y)| for bf16 inputs, reference rounded from fp32."""
    x = torch.randn(n, device=DEVICE, dtype=torch.bfloat16)
    y = torch.randn(n, device=DEVICE, dtype=torch.bfloat16)
    expected = (x.float() + y.float()).to(torch.bfloat16).float()
    return float((add(x, y, upcast=upcast).float() - expected).abs().max())


def dot_error(n: int = 127, precision: str = "tf32") -> float:
    """Max error of an fp32 n x n x n matmul vs fp64, over the largest |entry|."""
    a = torch.randn(n, n, device=DEVICE)
    b = torch.randn(n, n, device=DEVICE)
    exact = a.double() @ b.double()
    got = matmul(a, b, precision=precision, configs=MATMUL_CONFIGS[2:]).double()
    return float((got - exact).abs().max() / exact.abs().max())
# --8<-- [end:precision]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check() -> None:
    first = 2**31 // 4 - 1  # the tiles below and above 2^31 (4 elements each)
    assert tile_offsets(first, int64_offsets=True)[4] == 2**31
    assert tile_offsets(first, int64_offsets=False)[4] == -(2**31)  # wrapped
    y = fill(torch.zeros(1025, device=DEVICE, dtype=torch.int8), 3)
    assert bool((y == 3).all())
    guard = torch.full((2048,), -1.0, device=DEVICE)
    x = torch.randn(1000, device=DEVICE)
    scale(x, 2.0, out=guard[:1000], masked=True)
    assert bool((guard[1000:] == -1.0).all())
    a = torch.randn(127, 33, device=DEVICE)
    b = torch.randn(33, 255, device=DEVICE)
    got = matmul(a, b, precision="ieee", configs=MATMUL_CONFIGS[2:])  # fast to compile
    torch.testing.assert_close(got, matmul_torch(a, b), rtol=1e-4, atol=1e-4)
    print(f"failure_modes: on {DEVICE.type}, int32 offsets wrap at 2^31 and int64 ones "
          "do not; masked stores stay in bounds; matmul matches fp64 (fp32 dot error "
          f"tf32 {dot_error():.1e}, ieee {dot_error(precision='ieee'):.1e})")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
