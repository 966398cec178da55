"""Exercise 11, Persistent matmul: C = A @ B on a fixed number of programs.

A grid of `num_programs` programs (on a GPU, one per SM) walks over all the output
tiles: program pid computes tiles pid, pid + P, pid + 2P, ... Write the body of
`matmul_persistent_kernel`; the launcher `matmul_persistent` is complete.
Check your answer with `pytest exercises/11_matmul_persistent`.
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
def matmul_persistent_kernel(
    a_ptr, b_ptr, c_ptr,  # A is (M, K), B is (K, N), C is (M, N)
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    # tile sizes: powers of two, >= 16
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """Compute every BLOCK_M x BLOCK_N tile of C on P = tl.num_programs(0) programs.

    Number the tiles row by row: tile t has row-tile t // cdiv(N, BLOCK_N) and
    column-tile t % cdiv(N, BLOCK_N). Program pid loops over t = pid, pid + P, ...
    below the number of tiles; for each it runs the usual K loop (fp32 accumulator,
    tl.dot, masked loads with other=0.0) and stores the tile in C's dtype, masked.
    """
    # TODO: write the kernel body (see the docstring above).
    # Until you do, the kernel changes nothing and the tests fail.
    pass
# --8<-- [end:kernel]


def matmul_persistent(a: torch.Tensor, b: torch.Tensor, *,
                      num_programs: int | None = None, block_m: int = 32,
                      block_n: int = 32, block_k: int = 16) -> torch.Tensor:
    """A @ B for 2-D float tensors of one dtype, any strides, on at most
    `num_programs` programs (default: the GPU's SM count, or 4 in the interpreter)."""
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
    if num_programs is None:
        num_programs = (
            torch.cuda.get_device_properties(a.device).multi_processor_count
            if a.is_cuda else 4
        )
    if not isinstance(num_programs, int) or num_programs < 1:
        raise ValueError(f"num_programs must be a positive int, got {num_programs!r}")
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    if M == 0 or N == 0:
        return c
    if K == 0:
        return c.zero_()
    num_tiles = triton.cdiv(M, block_m) * triton.cdiv(N, block_n)
    grid = (min(num_programs, num_tiles),)
    matmul_persistent_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1),
                                   b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                   BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    return c


def matmul_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The plain torch reference, computed in float64 and rounded to a's dtype."""
    return (a.double() @ b.double()).to(a.dtype)


if __name__ == "__main__":
    a = torch.randn(40, 50, device="cuda" if torch.cuda.is_available() else "cpu")
    b = torch.randn(50, 70, device=a.device)
    torch.testing.assert_close(matmul_persistent(a, b, num_programs=3),
                               matmul_torch(a, b), rtol=1e-2, atol=1e-2)
    print("matmul_persistent matches torch")
