"""Exercise 10, Fused linear + bias + GELU: y = gelu_tanh(x @ w + bias) in one kernel.

The K loop is written for you; write the epilogue that follows it in
`linear_gelu_kernel`. The launcher `linear_gelu` is complete.
Check your answer with `pytest exercises/10_linear_gelu`.
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
def linear_gelu_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr,  # x (M, K), w (K, N), bias (N,), y (M, N)
    M, N, K,
    stride_xm, stride_xk,
    stride_wk, stride_wn,
    stride_bias,
    stride_ym, stride_yn,
    # tile sizes: powers of two, >= 16
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """Write the tile (program_id(0), program_id(1)) of y = gelu_tanh(x @ w + bias).

    After the K loop, `acc` holds the fp32 tile of x @ w. The epilogue, on that tile
    before it ever reaches memory: load the tile's slice of bias (masked) and add it
    to every row; apply the tanh GELU, gelu(z) = z * sigmoid(2u) with
    u = sqrt(2 / pi) * (z + 0.044715 * z**3); store in y's dtype, masked to the matrix.
    """
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + k[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(w_ptr + k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    # The epilogue: bias, GELU, store.
    # TODO: write the epilogue (see the docstring above).
    # Until you do, y is never written and the tests fail.
    pass
# --8<-- [end:kernel]


def linear_gelu(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor, *,
                block_m: int = 32, block_n: int = 32,
                block_k: int = 16) -> torch.Tensor:
    """gelu(x @ w + bias, approximate="tanh") for 2-D x (M, K), w (K, N) and 1-D
    bias (N,) of one dtype."""
    _check_tensor("x", x, 2)
    _check_tensor("w", w, 2)
    _check_tensor("bias", bias, 1)
    (M, K), (K2, N) = x.shape, w.shape
    if K != K2:
        raise ValueError(
            f"inner dimensions differ: x is {tuple(x.shape)}, w is {tuple(w.shape)}"
        )
    if bias.shape[0] != N:
        raise ValueError(
            f"bias must have w.shape[1] = {N} elements, got {bias.shape[0]}"
        )
    for name, t in (("w", w), ("bias", bias)):
        if t.dtype != x.dtype:
            raise TypeError(f"{name} must have x's dtype {x.dtype}, got {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"{name} must be on x's device {x.device}, got {t.device}")
    for name, v in (("block_m", block_m), ("block_n", block_n), ("block_k", block_k)):
        _check_block(name, v)
        if v < 16:
            raise ValueError(
                f"{name} must be at least 16 (tl.dot's smallest tile), got {v}"
            )
    for name, t in (("x", x), ("w", w), ("bias", bias)):
        _check_offsets(name, t)
    if M * N >= 2**31:
        raise ValueError("y is too large for this kernel's int32 offsets")
    if triton.cdiv(N, block_n) > MAX_GRID_YZ:
        raise ValueError(
            f"N={N} needs more than {MAX_GRID_YZ} column tiles: raise block_n"
        )
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    if M == 0 or N == 0:
        return y
    if K == 0:
        return linear_gelu_torch(x, w, bias)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    linear_gelu_kernel[grid](x, w, bias, y, M, N, K, x.stride(0), x.stride(1),
                             w.stride(0), w.stride(1), bias.stride(0), y.stride(0),
                             y.stride(1), BLOCK_M=block_m, BLOCK_N=block_n,
                             BLOCK_K=block_k)
    return y


def linear_gelu_torch(
    x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """The plain torch reference, computed in float64 and rounded to x's dtype."""
    z = x.double() @ w.double() + bias.double()
    return torch.nn.functional.gelu(z, approximate="tanh").to(x.dtype)


if __name__ == "__main__":
    x = torch.randn(40, 50, device="cuda" if torch.cuda.is_available() else "cpu")
    w = torch.randn(50, 30, device=x.device) / 7
    bias = torch.randn(30, device=x.device)
    torch.testing.assert_close(linear_gelu(x, w, bias), linear_gelu_torch(x, w, bias),
                               rtol=1e-2, atol=1e-2)
    print("linear_gelu matches torch")
