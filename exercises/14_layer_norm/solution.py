"""Exercise 14, Layer norm: the forward pass.

y = (x - mean) / sqrt(var + eps) * weight + bias.
Write the body of `layer_norm_fwd_kernel`; the launcher `layer_norm` is complete.
Check your answer with `pytest exercises/14_layer_norm`.
"""

import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import torch.nn.functional as F
import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_tensor(name: str, t, ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(
            f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
            "(Triton's interpreter)"
        )


MAX_COLS = 8192  # one tile per row, held in registers


# --8<-- [start:kernel]
@triton.jit
def layer_norm_fwd_kernel(
    x_ptr,  # pointer to x[0, 0]; columns are contiguous
    y_ptr,  # pointer to the contiguous (n_rows, n_cols) output
    w_ptr,  # pointer to the weight, (n_cols,) contiguous
    b_ptr,  # pointer to the bias, (n_cols,) contiguous
    mean_ptr,  # pointer to the (n_rows,) fp32 means, which you write
    rstd_ptr,  # pointer to the (n_rows,) fp32 1 / sqrt(var + eps), which you write
    n_cols,  # elements per row
    stride_xm,  # elements between the starts of two rows of x
    eps,  # added to the variance
    BLOCK_N: tl.constexpr,  # lanes per tile, a power of two >= n_cols
):
    """Normalize row `tl.program_id(0)` of x and store it, its mean and its rstd.

    One program per row, the whole row in one tile. In fp32: the mean, then the
    variance as the mean of (x - mean)**2 (the biased variance, as torch uses), then
    rstd = 1 / sqrt(var + eps) and y = (x - mean) * rstd * weight + bias. The lanes
    past n_cols must add nothing to either sum, and are not stored.
    """
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    # the masked lanes loaded 0, so x - mean is -mean there: zero them again
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
# --8<-- [end:kernel]


def layer_norm_with_stats(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                          eps: float = 1e-5):
    """(y, mean, rstd): layer norm over the last dimension of `x` (any leading
    shape), and the fp32 mean and 1 / sqrt(var + eps) of each row, as a backward
    pass would reuse them."""
    _check_tensor("x", x)
    _check_tensor("weight", weight, 1)
    _check_tensor("bias", bias, 1)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    n_cols = x.shape[-1]
    if weight.shape != (n_cols,) or bias.shape != (n_cols,):
        raise ValueError(f"weight and bias must have shape ({n_cols},), "
                         f"got {tuple(weight.shape)} and {tuple(bias.shape)}")
    if not weight.dtype == bias.dtype == x.dtype:
        raise TypeError("x, weight and bias must have one dtype, "
                        f"got {x.dtype}, {weight.dtype}, {bias.dtype}")
    if not 1 <= n_cols <= MAX_COLS:
        raise ValueError(f"x must have 1 to {MAX_COLS} elements in its last dimension, "
                         f"got {n_cols}")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps}")
    x2 = x.reshape(-1, n_cols)  # a view when it can be
    if x2.stride(1) != 1 and n_cols > 1:
        x2 = x2.contiguous()
    weight, bias = weight.contiguous(), bias.contiguous()
    n_rows = x2.shape[0]
    if n_rows * max(x2.stride(0), n_cols) >= 2**31:  # int32 offsets
        raise ValueError("x is too large for this kernel's int32 offsets")
    y = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
    if n_rows > 0:
        layer_norm_fwd_kernel[(n_rows,)](x2, y, weight, bias, mean, rstd, n_cols,
                                         x2.stride(0), eps,
                                         BLOCK_N=triton.next_power_of_2(n_cols))
    return y.reshape(x.shape), mean.reshape(x.shape[:-1]), rstd.reshape(x.shape[:-1])


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> torch.Tensor:
    """F.layer_norm(x, x.shape[-1:], weight, bias, eps), computed by the kernel."""
    return layer_norm_with_stats(x, weight, bias, eps)[0]


def layer_norm_torch(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                     eps: float = 1e-5) -> torch.Tensor:
    """The plain torch reference (fp32 arithmetic, rounded to x's dtype)."""
    y = F.layer_norm(x.float(), x.shape[-1:], weight.float(), bias.float(), eps)
    return y.to(x.dtype)


def stats_torch(
    x: torch.Tensor, eps: float = 1e-5
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, rstd) of each row of x over its last dimension, in fp32."""
    var, mean = torch.var_mean(x.float(), dim=-1, correction=0)
    return mean, torch.rsqrt(var + eps)


if __name__ == "__main__":
    x = torch.randn(5, 100, device="cuda" if torch.cuda.is_available() else "cpu")
    w, b = torch.randn(100, device=x.device), torch.randn(100, device=x.device)
    torch.testing.assert_close(layer_norm(x, w, b), layer_norm_torch(x, w, b))
    print("layer_norm matches torch")
