"""Exercise 04, Strides and broadcasting: add a row vector to each row of any 2-D view.

y = x + b[None, :] for any 2-D view `x` (transposed, sliced, expanded) and any 1-D
view `b`.
Write the body of `add_row_kernel`; the launcher `add_row` is complete.
Check your answer with `pytest exercises/04_strides`.
"""

import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_tensor(name: str, t, ndim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
            "(Triton's interpreter)"
        )


def _check_block(name: str, v: int) -> None:
    if not isinstance(v, int) or v <= 0 or v & (v - 1):
        raise ValueError(f"{name} must be a positive power of two, got {v!r}")

MAX_GRID_YZ = 65_535  # CUDA's limit on grid axis 1


# --8<-- [start:kernel]
@triton.jit
def add_row_kernel(
    x_ptr,  # pointer to x[0, 0]
    b_ptr,  # pointer to b[0]
    y_ptr,  # pointer to y[0, 0]
    M,  # rows
    N,  # columns
    stride_xm, stride_xn,  # x[i, j] is at x_ptr + i * stride_xm + j * stride_xn
    stride_b,  # b[j] is at b_ptr + j * stride_b
    stride_ym, stride_yn,  # y[i, j] is at y_ptr + i * stride_ym + j * stride_yn
    BLOCK_M: tl.constexpr,  # rows per tile
    BLOCK_N: tl.constexpr,  # columns per tile
):
    """Write y = x + b[None, :] on the BLOCK_M x BLOCK_N tile this program owns.

    The grid is 2-D: axis 0 counts tiles of rows, axis 1 tiles of columns. Build the
    tile's row and column offsets, turn them into 2-D pointers with the strides, load
    b once per tile as a row and broadcast it over the tile's rows. Mask both ragged
    edges. Never assume a stride is 1: x may be a transpose, a slice or an expand.
    """
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    mask = (offs_m[:, None] < M) & mask_n[None, :]
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn
    x = tl.load(x_ptrs, mask=mask)
    b = tl.load(b_ptr + offs_n * stride_b, mask=mask_n)
    y = x + b[None, :]
    y_ptrs = y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, y, mask=mask)
# --8<-- [end:kernel]


def add_row(
    x: torch.Tensor, b: torch.Tensor, *, block_m: int = 16, block_n: int = 32
) -> torch.Tensor:
    """x + b[None, :] as a new contiguous (M, N) tensor, for any strided 2-D `x` and
    1-D `b`."""
    _check_tensor("x", x, 2)
    _check_tensor("b", b, 1)
    M, N = x.shape
    if b.shape[0] != N:
        raise ValueError(f"b must have x.shape[1] = {N} elements, got {b.shape[0]}")
    if b.dtype != x.dtype:
        raise TypeError(
            f"x and b must have the same dtype, got {x.dtype} and {b.dtype}"
        )
    if b.device != x.device:
        raise ValueError(
            f"x and b must be on the same device, got {x.device} and {b.device}"
        )
    if min(x.stride()) < 0 or b.stride(0) < 0:
        raise ValueError("negative strides are not supported")
    _check_block("block_m", block_m)
    _check_block("block_n", block_n)
    last_offset = (M - 1) * x.stride(0) + (N - 1) * x.stride(1)
    if M * N >= 2**31 or last_offset >= 2**31:  # int32 offsets
        raise ValueError("x is too large for this kernel's int32 offsets")
    if triton.cdiv(N, block_n) > MAX_GRID_YZ:
        raise ValueError(
            f"N={N} needs more than {MAX_GRID_YZ} column tiles: raise block_n"
        )
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M == 0 or N == 0:
        return y
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    add_row_kernel[grid](x, b, y, M, N, x.stride(0), x.stride(1), b.stride(0),
                         y.stride(0), y.stride(1), BLOCK_M=block_m, BLOCK_N=block_n)
    return y


def add_row_torch(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x + b[None, :]


if __name__ == "__main__":
    x = torch.randn(40, 30, device="cuda" if torch.cuda.is_available() else "cpu")
    b = torch.randn(40, device=x.device)
    torch.testing.assert_close(
        add_row(x.t(), b), add_row_torch(x.t(), b), rtol=0, atol=0
    )
    print("add_row matches torch on a transposed view")
