"""Exercise 09, Matrix multiplication: C = A @ B with a tiled K loop and tl.dot.

Write the body of `matmul_kernel`; the launcher `matmul` is complete.
Check your answer with `pytest exercises/09_matmul`.
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


def _check_offsets(name: str, t: torch.Tensor) -> None:
    """The kernel computes int32 offsets: the last element must lie within 2**31 - 1
    of the first."""
    if min(t.stride(), default=0) < 0:
        raise ValueError(f"{name} has a negative stride {t.stride()}: not supported")
    last_offset = sum(
        (size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True)
    )
    if last_offset >= 2**31:
        raise ValueError(f"{name} is too large for this kernel's int32 offsets")


# --8<-- [start:kernel]
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr,  # A is (M, K), B is (K, N), C is (M, N)
    M, N, K,
    stride_am, stride_ak,  # A[i, k] is at a_ptr + i * stride_am + k * stride_ak
    stride_bk, stride_bn,  # B[k, j] is at b_ptr + k * stride_bk + j * stride_bn
    stride_cm, stride_cn,  # C[i, j] is at c_ptr + i * stride_cm + j * stride_cn
    # tile sizes: powers of two, >= 16
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """Write the BLOCK_M x BLOCK_N tile of C at (program_id(0), program_id(1)).

    Keep an fp32 accumulator; walk K in steps of BLOCK_K, loading a BLOCK_M x BLOCK_K
    tile of A and a BLOCK_K x BLOCK_N tile of B each step and adding their tl.dot.
    Masked loads must give 0.0, so the ragged edges of M, N and K add nothing.
    Store the accumulator in C's dtype, masked to the matrix.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel changes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def matmul(a: torch.Tensor, b: torch.Tensor, *, block_m: int = 32, block_n: int = 32,
           block_k: int = 16) -> torch.Tensor:
    """A @ B for 2-D float tensors of one dtype, with any strides; C is a new
    contiguous (M, N) tensor."""
    _check_tensor("a", a, 2)
    _check_tensor("b", b, 2)
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(
            f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}"
        )
    if a.dtype != b.dtype:
        raise TypeError(
            f"a and b must have the same dtype, got {a.dtype} and {b.dtype}"
        )
    if a.device != b.device:
        raise ValueError(
            f"a and b must be on the same device, got {a.device} and {b.device}"
        )
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k)):
        _check_block(name, v)
        if v < 16:
            raise ValueError(
                f"{name} must be at least 16 (tl.dot's smallest tile), got {v}"
            )
    _check_offsets("a", a)
    _check_offsets("b", b)
    if M * N >= 2**31:
        raise ValueError("C is too large for this kernel's int32 offsets")
    if triton.cdiv(N, block_n) > MAX_GRID_YZ:
        raise ValueError(
            f"N={N} needs more than {MAX_GRID_YZ} column tiles: raise block_n"
        )
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                        b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    return c


def matmul_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference, computed in float64 and rounded to a's dtype."""
    return (a.double() @ b.double()).to(a.dtype)


if __name__ == "__main__":
    a = torch.randn(40, 50, device="cuda" if torch.cuda.is_available() else "cpu")
    b = torch.randn(50, 30, device=a.device)
    torch.testing.assert_close(matmul(a, b), matmul_torch(a, b), rtol=1e-2, atol=1e-2)
    print("matmul matches torch")
