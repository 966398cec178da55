# %% [markdown]
# # Shipping a kernel as a PyTorch operator
#
# SiLU, `y = x * sigmoid(x)`, as two Triton kernels (forward and backward) registered
# with PyTorch so that autograd, `torch.library.opcheck` and
# `torch.compile(fullgraph=True)` all understand it.
#
# You will see:
#
# * `torch.library.triton_op` + `torch.library.wrap_triton`: an operator whose Triton
#   kernels `torch.compile` can see into;
# * `torch.library.custom_op` + `register_fake`: an opaque operator with a hand-written
#   fake (shape-only) implementation, for comparison;
# * `register_autograd` with a backward kernel, checked by `opcheck`;
# * a start-up warm-up (benchmarks/cases/torch_op.py times each wrapper's cost).
#
# Run it with `python examples/torch_op.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl
from torch.library import custom_op, triton_op, wrap_triton

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## The kernels
#
# The derivative of `x * s` with `s = sigmoid(x)` is `s * (1 + x * (1 - s))`. Both
# kernels compute in fp32 and store in the tensor's own dtype.


# %%
# --8<-- [start:kernels]
@triton.jit
def silu_fwd_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)  # int64: past 2**31 too
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = x * tl.sigmoid(x)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_bwd_kernel(x_ptr, dy_ptr, dx_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    dy = tl.load(dy_ptr + offsets, mask=mask).to(tl.float32)
    s = tl.sigmoid(x)
    dx = dy * s * (1.0 + x * (1.0 - s))
    tl.store(dx_ptr + offsets, dx.to(dx_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernels]


# %% [markdown]
# ## Launchers
#
# Plain functions that check their inputs, allocate and launch through
# `wrap_triton`. Under `torch.compile` the launch is recorded into the graph.


# %%
# --8<-- [start:launchers]
BLOCK_SIZE = 1024
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous, got stride {t.stride()}")


def silu_forward(x: torch.Tensor) -> torch.Tensor:
    _check("x", x)
    y = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    wrap_triton(silu_fwd_kernel)[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE)  # (1)!
    return y


def silu_backward(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    _check("x", x)
    _check("dy", dy)
    if dy.shape != x.shape or dy.dtype != x.dtype:
        raise ValueError(f"dy must match x, got {tuple(dy.shape)} {dy.dtype} "
                         f"for x {tuple(x.shape)} {x.dtype}")
    dx = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    wrap_triton(silu_bwd_kernel)[grid](x, dy, dx, n, BLOCK_SIZE=BLOCK_SIZE)
    return dx


def silu_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return torch.nn.functional.silu(x)
# --8<-- [end:launchers]


# %% [markdown]
# ## The operator: `triton_op`
#
# `triton_op` registers the function as `torch.ops.tit.silu`. Its fake implementation
# is derived by running the same function on fake tensors (only shapes, no data), so
# the function must not read tensor values on the host. The backward is another
# `triton_op`.


# %%
# --8<-- [start:triton-op]
@triton_op("tit::silu_backward", mutates_args={})
def silu_backward_op(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return silu_backward(x, dy)


@triton_op("tit::silu", mutates_args={})  # (1)!
def silu(x: torch.Tensor) -> torch.Tensor:
    return silu_forward(x)


def _setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def _backward(ctx, dy):
    (x,) = ctx.saved_tensors
    return silu_backward_op(x, dy.contiguous())  # (2)!


silu.register_autograd(_backward, setup_context=_setup_context)
# --8<-- [end:triton-op]


# %% [markdown]
# ## The alternative: an opaque `custom_op` with a fake
#
# `custom_op` hides the body from the compiler: `torch.compile` calls it as a black
# box and needs a fake implementation, written by hand, to know the output's shape
# and dtype.


# %%
# --8<-- [start:custom-op]
@custom_op("tit::silu_opaque", mutates_args=())
def silu_opaque(x: torch.Tensor) -> torch.Tensor:
    return silu_forward(x)


@silu_opaque.register_fake
def _(x):
    return torch.empty_like(x)  # (1)!


@custom_op("tit::silu_opaque_backward", mutates_args=())
def silu_opaque_backward(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return silu_backward(x, dy)


@silu_opaque_backward.register_fake
def _(x, dy):
    return torch.empty_like(x)


silu_opaque.register_autograd(
    lambda ctx, dy: silu_opaque_backward(ctx.saved_tensors[0], dy.contiguous()),
    setup_context=_setup_context,
)
# --8<-- [end:custom-op]


# %% [markdown]
# ## Warm-up at start-up
#
# The first call for each new specialization compiles (on a GPU) or loads the kernel
# from `TRITON_CACHE_DIR`. A server does that before it takes traffic.


# %%
# --8<-- [start:warm-up]
def warm_up(dtypes=(torch.float32,), device=DEVICE) -> int:
    """Run forward and backward once per dtype; return how many kernels ran."""
    launched = 0
    for dtype in dtypes:
        for n in (1, 16, 17):  # three specializations  # (1)!
            x = torch.randn(n, device=device, dtype=dtype, requires_grad=True)
            silu(x).sum().backward()
            launched += 2
    if device.type == "cuda":
        torch.cuda.synchronize()
    return launched
# --8<-- [end:warm-up]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1025)) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE, requires_grad=True)
        ref = x.detach().clone().requires_grad_(True)
        dy = torch.randn(n, device=DEVICE)
        y = silu(x)
        y.backward(dy)
        silu_torch(ref).backward(dy)
        torch.testing.assert_close(y, silu_torch(ref))
        torch.testing.assert_close(x.grad, ref.grad)
    x = torch.randn(33, device=DEVICE, requires_grad=True)
    torch.library.opcheck(silu, (x,), test_utils=("test_schema",  # (1)!
                                                  "test_autograd_registration"))
    print("torch_op: torch.ops.tit.silu and its gradient match torch on "
          f"{DEVICE.type} for n in {list(sizes)}; opcheck (schema, autograd "
          "registration) passed")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
