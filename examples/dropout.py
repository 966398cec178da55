# %% [markdown]
# # Dropout: a mask you never store
#
# `dropout(x, p, seed)` zeroes each element with probability `p` and scales the
# others by `1 / (1 - p)`. The keep-mask comes from `tl.rand(seed, offsets)`,
# Triton's counter-based (Philox) generator: the same seed and element index
# always give the same random number, so the mask is never written to memory.
# The backward pass regenerates it from the seed.
#
# You will see:
#
# * one `@triton.jit` helper that decides "keep" from (seed, element index), used
#   by the forward kernel and by a kernel that writes the mask for tests;
# * a launcher that validates `x`, `p` and `seed`, and a torch reference given a
#   mask;
# * a `torch.autograd.Function` whose backward is the forward kernel run on `dy`;
# * the same operator registered with `torch.library.triton_op`, `gradcheck` in
#   float64, `opcheck`, and a small model that uses it.
#
# Run it with `python examples/dropout.py`.

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
# ## The kernels
#
# `_keep` is the whole random part: one Philox draw per element index, compared
# with `p`. The forward kernel and the mask kernel both call it with the same
# `(seed, offsets)`, so they agree bit for bit.


# %%
# --8<-- [start:kernel]
@triton.jit
def _keep(seed, offsets, p):
    """True where the element at `offsets` survives: a draw in [0, 1) that is >= p."""
    return tl.rand(seed, offsets) >= p  # (1)!


@triton.jit(do_not_specialize=["seed"])  # (2)!
def dropout_kernel(
    x_ptr,  # pointer to the input, contiguous
    y_ptr,  # pointer to the output, same dtype and size
    n_elements,  # number of elements
    p,  # drop probability, already rounded to fp32 on the host
    scale,  # 1 / (1 - p) rounded to fp32 (0 when p == 1)
    seed,  # the random stream: 0 <= seed < 2**63
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (3)!
    p, scale = tl.cast(p, tl.float32), tl.cast(scale, tl.float32)  # fp64 via Inductor
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    if x.dtype != tl.float64:
        x = x.to(tl.float32)  # fp16, bf16, fp32: scale in fp32
    y = tl.where(_keep(seed, offsets, p), x * scale, 0.0)  # (4)!
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["seed", "start"])
def dropout_mask_kernel(mask_ptr, n_elements, p, seed, start, BLOCK_SIZE: tl.constexpr):
    """Write the keep-mask (torch.bool) that `dropout_kernel` uses for elements
    start, start + 1, ..."""
    offsets = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    keep = _keep(seed, start + offsets, tl.cast(p, tl.float32))
    tl.store(mask_ptr + offsets, keep, mask=offsets < n_elements)
# --8<-- [end:kernel]


# %% [markdown]
# ## The launcher
#
# It checks every argument, rounds `p` and the scale to fp32 once on the host (the
# GPU and the interpreter then compare and multiply with the same values), and
# launches on a contiguous copy when `x` is a view. The mask depends on the
# element's logical (row-major) index only, so a view and its contiguous copy,
# or two tensors of different shapes with the same number of elements, get the
# same mask for the same seed.


# %%
# --8<-- [start:launcher-checks]
import struct  # noqa: E402

from torch.library import triton_op, wrap_triton  # noqa: E402  (see "The operator")

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
BLOCK_SIZE = 1024
MAX_SEED = 2**63 - 1  # int64 seeds (the operator's schema); Philox keys on all 64 bits


def _check_p(p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"p must be a float in [0, 1], got {type(p).__name__}")
    if not 0.0 <= p <= 1.0:  # NaN fails this too
        raise ValueError(f"p must be in [0, 1], got {p}")
    return float(p)


def _check_seed(seed) -> None:
    if isinstance(seed, torch.SymInt):  # symbolic under torch.compile: checked later
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be in [0, 2**63 - 1], got {seed}")


def _check_x(x, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16, float32 or float64, "
                        f"got {x.dtype}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _fp32(v: float) -> float:
    """v rounded to fp32, as a Python float: the value the kernel sees on every
    backend. Plain Python (no tensor, no .item()): torch.compile traces this."""
    return struct.unpack("f", struct.pack("f", v))[0]
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher]
def _dropout(x: torch.Tensor, p: float, seed: int, name: str = "x",
             wrap: bool = False) -> torch.Tensor:
    _check_x(x, name)
    p = _check_p(p)
    _check_seed(seed)
    x = x.contiguous()  # (1)!
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    p32 = _fp32(p)
    scale = 0.0 if p32 == 1.0 else _fp32(1.0 / (1.0 - p32))
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    launch = wrap_triton(dropout_kernel) if wrap else dropout_kernel  # (2)!
    launch[grid](x, y, n, p32, scale, seed, BLOCK_SIZE=BLOCK_SIZE)
    return y


def _check_mask_args(shape, p, seed, start, device) -> tuple[float, int]:
    """(p, number of elements) for `dropout_mask`, after checking every argument."""
    p = _check_p(p)
    _check_seed(seed)
    if isinstance(start, bool) or not isinstance(start, int):
        raise TypeError(f"start must be an int, got {type(start).__name__}")
    if not 0 <= start <= MAX_SEED:
        raise ValueError(f"start must be in [0, 2**63 - 1], got {start}")
    if device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("device is the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    n = torch.empty(shape, device="meta").numel()  # no memory: the size, checked first
    if start > 2**63 - n:  # the last index, start + n - 1, must be an int64
        raise ValueError("start + numel must be at most 2**63, "
                         f"got start = {start} for {n} elements")
    return p, n


def dropout_mask(shape, p: float, seed: int, device=None, start: int = 0
                 ) -> torch.Tensor:
    """The keep-mask (torch.bool, `shape`) that `dropout(x, p, seed)` uses for any x
    of that many elements; `start`: the mask of elements start, start + 1, ... of a
    larger x (row-major order)."""
    device = DEVICE if device is None else torch.device(device)
    p, n = _check_mask_args(shape, p, seed, start, device)
    keep = torch.empty(shape, dtype=torch.bool, device=device)
    if n:
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        dropout_mask_kernel[grid](keep, n, _fp32(p), seed, start, BLOCK_SIZE=BLOCK_SIZE)
    return keep


def dropout_reference(x: torch.Tensor, keep: torch.Tensor, p: float) -> torch.Tensor:
    """The plain torch reference, given the mask: x * scale where kept, 0 elsewhere,
    with the kernel's arithmetic (fp32 scale; fp32 maths for fp16/bf16/fp32, fp64
    for fp64)."""
    p32 = _fp32(_check_p(p))
    scale = 0.0 if p32 == 1.0 else _fp32(1.0 / (1.0 - p32))
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    scale = torch.tensor(scale, dtype=torch.float32).to(compute)
    kept = (x.to(compute) * scale).to(x.dtype)
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    return torch.where(keep.to(x.device), kept, zero)
# --8<-- [end:launcher]


# %% [markdown]
# ## Autograd: the backward regenerates the mask
#
# `y = x * keep * scale`, so `dx = dy * keep * scale`: the same kernel, run on `dy`
# with the same seed. Nothing is saved for backward but two numbers.


# %%
# --8<-- [start:autograd-function]
class DropoutFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p, seed):
        ctx.p, ctx.seed = p, seed  # (1)!
        return _dropout(x, p, seed)

    @staticmethod
    def backward(ctx, dy):
        return DropoutFunction.apply(dy, ctx.p, ctx.seed), None, None  # (2)!


def dropout(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    """Dropout with a keep-mask drawn from (seed, element index); differentiable."""
    _check_x(x)  # checked here too: a bad call fails before autograd records it
    _check_p(p)
    _check_seed(seed)
    return DropoutFunction.apply(x, p, seed)
# --8<-- [end:autograd-function]


# %% [markdown]
# ## The operator: `triton_op`
#
# The same launcher registered as `torch.ops.tit.dropout`, so that `torch.compile`
# sees the kernel and `opcheck` can test the registration. Its backward calls the
# operator itself on `dy`.


# %%
# --8<-- [start:triton-op]
@triton_op("tit::dropout", mutates_args={})
def dropout_op(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    return _dropout(x, p, seed, wrap=True)


def _setup_context(ctx, inputs, output):
    _, ctx.p, ctx.seed = inputs


def _backward(ctx, dy):
    return dropout_op(dy, ctx.p, ctx.seed), None, None


dropout_op.register_autograd(_backward, setup_context=_setup_context)
# --8<-- [end:triton-op]


# %% [markdown]
# ## Testing the backward
#
# `gradcheck` compares the backward with finite differences. It needs float64 (fp32
# differences are too coarse), and the kernel takes float64, in the interpreter
# and on the GPU. `opcheck` checks the registration. On the CPU only two of
# `opcheck`'s checks can run for a `triton_op` (see "Shipping in PyTorch").


# %%
# --8<-- [start:autograd-checks]
def check_gradients(n: int = 6, p: float = 0.3, seed: int = 1234) -> None:
    x = torch.randn(n, dtype=torch.float64, device=DEVICE, requires_grad=True)
    for fn in (dropout, dropout_op):
        assert torch.autograd.gradcheck(lambda t, fn=fn: fn(t, p, seed), (x,))  # (1)!
    assert torch.autograd.gradgradcheck(lambda t: dropout(t, p, seed), (x,))
    dy = torch.randn(n, dtype=torch.float64, device=DEVICE)
    (dx,) = torch.autograd.grad(dropout(x, p, seed), x, dy)
    want = dropout_reference(dy, dropout_mask(n, p, seed), p)
    torch.testing.assert_close(dx, want, rtol=0, atol=0)
    checks = ("test_schema", "test_autograd_registration")
    if DEVICE.type == "cuda":
        checks += ("test_faketensor", "test_aot_dispatch_dynamic")  # (2)!
    torch.library.opcheck(dropout_op, (x.float(), p, seed), test_utils=checks)
    print(f"dropout: gradcheck, gradgradcheck and opcheck {list(checks)} passed on "
          f"{DEVICE.type}")
# --8<-- [end:autograd-checks]


# %% [markdown]
# ## In a model, under `torch.compile`
#
# A two-layer MLP with dropout between the layers. The seed is an argument of
# `forward`: the caller decides it (a step counter, say), and the same seed gives
# the same mask in eager mode and in the compiled model.


# %%
# --8<-- [start:model]
class MLP(torch.nn.Module):
    def __init__(self, d: int = 64, hidden: int = 256, p: float = 0.1):
        super().__init__()
        self.up, self.down = torch.nn.Linear(d, hidden), torch.nn.Linear(hidden, d)
        self.p = p

    def forward(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        h = torch.relu(self.up(x))
        if self.training:
            h = dropout_op(h, self.p, seed)
        return self.down(h)


def check_model(seed: int = 7) -> None:
    torch.manual_seed(0)
    model = MLP().to(DEVICE)
    x = torch.randn(8, 64, device=DEVICE)
    eager = model(x, seed)
    eager.sum().backward()
    grad = model.up.weight.grad.clone()
    if DEVICE.type != "cuda":  # (1)!
        print("dropout: MLP forward and backward ran eagerly (torch.compile of a "
              "triton_op needs a GPU)")
        return
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True)
    out = compiled(x, seed)
    out.sum().backward()
    torch.testing.assert_close(out, eager)  # same seed, same mask: compiled == eager
    torch.testing.assert_close(model.up.weight.grad, grad)
    print("dropout: MLP under torch.compile(fullgraph=True) matches eager, forward "
          "and backward")
# --8<-- [end:model]


# %% [markdown]
# ## Check it
#
# Odd sizes, every p that is special, the mask against `dropout_mask`, and the
# kept values against the reference, exactly.


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1025, 4099), seed: int = 2024) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        for p in (0.0, 0.25, 1.0):
            want = dropout_reference(x, dropout_mask(n, p, seed), p)
            torch.testing.assert_close(dropout(x, p, seed), want, rtol=0, atol=0)
    torch.testing.assert_close(dropout(x, 0.0, seed), x, rtol=0, atol=0)
    assert not dropout(x, 1.0, seed).any()
    kept = dropout_mask(2**14, 0.25, seed).float().mean().item()
    assert abs(kept - 0.75) < 6 * (0.75 * 0.25 / 2**14) ** 0.5, kept
    print(f"dropout: kernel == reference given its mask on {DEVICE.type} for n in "
          f"{list(sizes)}, p in [0, 0.25, 1]; keep rate {kept:.4f} at p = 0.25")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
    check_gradients()
    check_model()
