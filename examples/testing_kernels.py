# %% [markdown]
# # Testing a kernel: references, tolerances and poisoned outputs
#
# `out = relu(x @ w)` as one tiled Triton kernel, and the tests that keep it honest.
#
# You will see:
#
# * a reference computed in float64, so the only error left is the kernel's;
# * tolerances chosen per dtype *and* device: an fp32 `tl.dot` is tf32 on an NVIDIA GPU
#   but true fp32 in the CPU interpreter;
# * odd shapes and non-contiguous inputs (the kernel takes strides);
# * a deliberately broken variant that only stores positive results, which a zero-filled
#   output hides and a NaN-filled ("poisoned") output exposes.
#
# Run it with `python examples/testing_kernels.py`.

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
# One program computes one `BLOCK_M x BLOCK_N` tile of the output, walking over `K`
# in steps of `BLOCK_K`. Every pointer is built from strides, so transposed or sliced
# inputs work without a copy. `SKIP_ZEROS` switches on the bug the tests must catch.


# %%
# --8<-- [start:kernel]
@triton.jit
def matmul_relu_kernel(
    x_ptr, w_ptr, out_ptr,  # pointers to x (M, K), w (K, N), out (M, N)
    M, N, K,  # problem size
    stride_xm, stride_xk,  # strides of x, in elements
    stride_wk, stride_wn,  # strides of w
    stride_om, stride_on,  # strides of out
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,  # "tf32" (the GPU default for fp32) or "ieee"
    SKIP_ZEROS: tl.constexpr,  # the bug: store only positive results
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        w = tl.load(w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc, input_precision=INPUT_PRECISION)  # (1)!
    acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)  # (3)!
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if SKIP_ZEROS:
        mask = mask & (acc > 0.0)  # (2)!
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on,
             acc.to(out_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


# %% [markdown]
# ## The launcher and the reference
#
# The launcher checks its inputs and accepts an optional `out`: that is what lets a test
# hand the kernel a buffer already full of NaN. The reference runs in float64.


# %%
# --8<-- [start:launcher]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_inputs(x, w, out, input_precision, block):
    for name, t in (("x", x), ("w", w)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, "
                            f"got {t.dtype}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"x and w do not chain: x is {tuple(x.shape)}, "
                         f"w is {tuple(w.shape)}")
    if x.dtype != w.dtype:
        raise TypeError("x and w must have the same dtype, "
                        f"got {x.dtype} and {w.dtype}")
    if x.device != w.device:
        raise ValueError("x and w must be on the same device, "
                         f"got {x.device} and {w.device}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if out is not None:
        _check_out(x, w, out)
    # a new out is contiguous: its last element is at M * N - 1
    out_last = x.shape[0] * w.shape[1] - 1 if out is None else _last_offset(out)
    lasts = {"x": _last_offset(x), "w": _last_offset(w), "out": out_last}
    for name, last in lasts.items():
        if last > 2**31 - 1:
            raise ValueError(f"{name} reaches element offset {last}, past 2**31 - 1: "
                             "the kernel computes int32 offsets")
    if input_precision not in ("tf32", "ieee"):
        raise ValueError("input_precision must be 'tf32' or 'ieee', "
                         f"got {input_precision!r}")
    if len(block) != 3 or any(not isinstance(b, int) or b < 16 or b & (b - 1)
                              for b in block):
        raise ValueError("block must be three powers of two >= 16 "
                         f"(BLOCK_M, BLOCK_N, BLOCK_K), got {block}")


def _check_out(x, w, out):
    expected = (x.shape[0], w.shape[1])
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != expected:
        raise ValueError(f"out must be a tensor of shape {expected}")
    if out.dtype != x.dtype or out.device != x.device:
        raise TypeError(f"out must be {x.dtype} on {x.device}, "
                        f"got {out.dtype} on {out.device}")
    if _may_self_overlap(out):
        raise ValueError("out must not have elements that can share an address, "
                         f"got shape {tuple(out.shape)} and stride {out.stride()}")
    for name, t in (("x", x), ("w", w)):
        if _overlap(out, t):
            raise ValueError(f"out must not overlap {name}: programs would read "
                             "values others already wrote")


def _last_offset(t: torch.Tensor) -> int:
    """How far t's last element lies from its first, in elements."""
    if t.numel() == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the memory from a's first to last element meets b's."""
    if a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1 = a0 + _last_offset(a) * a.element_size()
    b1 = b0 + _last_offset(b) * b.element_size()
    return a0 <= b1 and b0 <= a1


def _may_self_overlap(t: torch.Tensor) -> bool:
    """True for an expanded view (stride 0) and any layout where two elements may
    share an address."""
    reach = 0  # the farthest offset the smaller-stride dimensions reach
    sizes = zip(t.shape, t.stride(), strict=True)
    for stride, size in sorted((st, sz) for sz, st in sizes if sz > 1):
        if stride <= reach:
            return True
        reach += (size - 1) * stride
    return False


def matmul_relu(x, w, out=None, *, input_precision="tf32", block=(64, 64, 32),
                _skip_zeros=False):
    """relu(x @ w), accumulated in fp32. x (M, K) and w (K, N) may have any strides."""
    _check_inputs(x, w, out, input_precision, block)
    (M, K), N = x.shape, w.shape[1]
    bm, bn, bk = block
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
    if grid[1] > 65_535:  # CUDA's limit on grid axis 1
        raise ValueError(f"N = {N} needs {grid[1]} column tiles, more than grid axis 1 "
                         "holds (65535): raise BLOCK_N")
    if out is None:
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    matmul_relu_kernel[grid](
        x, w, out, M, N, K,
        x.stride(0), x.stride(1), w.stride(0), w.stride(1),
        out.stride(0), out.stride(1),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        INPUT_PRECISION=input_precision, SKIP_ZEROS=_skip_zeros,
    )
    return out


def matmul_relu_broken(x, w, out=None, **kw):
    """The same kernel with SKIP_ZEROS on: correct only if `out` starts as zeros."""
    return matmul_relu(x, w, out, _skip_zeros=True, **kw)


def matmul_relu_torch(x, w):
    """The reference, in float64: its own rounding error is far below the kernel's."""
    return torch.relu(x.double() @ w.double())
# --8<-- [end:launcher]


# %% [markdown]
# ## Tolerances
#
# The error of a dot product grows with the length of the sum and with the rounding
# unit of the inputs. fp32 inputs keep 24 mantissa bits in the interpreter but only 11
# (tf32) on a GPU's tensor cores unless you ask for `input_precision="ieee"`.


# %%
# --8<-- [start:tolerance]
def unit_roundoff(dtype, device, input_precision="tf32"):
    """Relative rounding error of one input element as the kernel's tl.dot sees it."""
    if dtype == torch.float32:
        tf32 = device.type == "cuda" and input_precision == "tf32"
        return 2.0**-11 if tf32 else 2.0**-24  # (1)!
    return {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}[dtype]


def tolerance(dtype, device, k, input_precision="tf32"):
    """rtol/atol for relu(x @ w) with standard-normal inputs and an inner size of k."""
    u = unit_roundoff(dtype, device, input_precision)
    # Each product carries about 2u relative error; summed over k random terms the
    # absolute error grows like sqrt(k). The fp32 accumulator rounds every partial sum
    # (whose size also grows like sqrt(k)), and the output is rounded to its dtype.
    out_u = {torch.float32: 2.0**-24, torch.float16: 2.0**-11,
             torch.bfloat16: 2.0**-8}[dtype]
    atol = 16 * u * k**0.5 + 4 * 2.0**-24 * k + 4 * out_u
    return {"rtol": 4 * out_u + 4 * u, "atol": atol}


def dot_error(x, w, **kw):
    """Largest absolute error of the kernel against the float64 reference."""
    err = matmul_relu(x, w, **kw).double() - matmul_relu_torch(x, w)
    return err.abs().max().item()
# --8<-- [end:tolerance]


# %% [markdown]
# ## Check it
#
# Odd shapes, a transposed `w`, and an output poisoned with NaN before the launch.


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1, 1), (17, 33, 9), (127, 255, 33))) -> None:
    for M, N, K in shapes:
        x = torch.randn(M, K, device=DEVICE)
        w = torch.randn(N, K, device=DEVICE).t()  # a transposed view: strides (1, K)
        out = torch.full((M, N), float("nan"), device=DEVICE)  # poisoned
        matmul_relu(x, w, out)
        torch.testing.assert_close(out.double(), matmul_relu_torch(x, w),
                                   **tolerance(x.dtype, DEVICE, K))
    print(f"testing_kernels: relu(x @ w) matches float64 on {DEVICE.type}, "
          f"transposed w, poisoned out, shapes {list(shapes)}")
# --8<-- [end:check]


# %% [markdown]
# ## The bug that zeros hide
#
# `matmul_relu_broken` leaves every output element that should be zero untouched.
# Into a zero-filled buffer it looks perfect; into a NaN-filled one it does not.


# %%
# --8<-- [start:poison]
def compare_fills(M=33, N=65, K=17):
    """Run the broken kernel into a zeroed and a poisoned buffer; report each result."""
    x = torch.randn(M, K, device=DEVICE)
    w = torch.randn(K, N, device=DEVICE)
    ref = matmul_relu_torch(x, w)
    tol = tolerance(x.dtype, DEVICE, K)
    report = {}
    for fill in ("zeros", "nan"):
        value = 0.0 if fill == "zeros" else float("nan")
        out = torch.full((M, N), value, device=DEVICE)
        matmul_relu_broken(x, w, out)
        try:
            torch.testing.assert_close(out.double(), ref, **tol)
            report[fill] = "passed"
        except AssertionError:
            unwritten = int(torch.isnan(out).sum())
            report[fill] = f"failed: {unwritten} elements never written"
    return report
# --8<-- [end:poison]


# %%
if __name__ == "__main__":
    self_check()
    print(f"testing_kernels: broken kernel -> {compare_fills()}")
