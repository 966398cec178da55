# %% [markdown]
# # Constexpr specialization: what gets baked into a compiled kernel
#
# A Triton kernel is compiled for the values it sees. Arguments marked
# `tl.constexpr` are baked in (one binary per combination), and plain integer and
# pointer arguments are specialized on a few properties (equal to 1, divisible by
# 16, 16-byte aligned) so the compiler can emit wide vector loads.
#
# You will see:
#
# * an activation flag whose unused branches never reach the binary, and a
#   `tl.static_assert` that rejects a bad block size at compile time;
# * the specialization rules of triton 3.6 written out in plain Python, so you can
#   predict how many binaries a loop of shapes will cost;
# * a compilation counter (a `triton.knobs` hook) that checks the prediction on a GPU;
# * one copy kernel under four policies: specialized, `do_not_specialize`, unspecialized
#   with a hint on the mask, and with a hint on an argument that the compiler ignores;
# * a kernel that makes its size a constexpr and recompiles for every size.
#
# The interpreter (CPU) does not compile anything, so compilation counts and the
# speed of each variant are GPU-only; everything else runs on both.
#
# Run it with `python examples/constexpr_specialization.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# --8<-- [end:setup]


# %% [markdown]
# ## Input checks shared by the launchers


# %%
# --8<-- [start:validation]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _check_vector(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be float16, bfloat16 or float32, got {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous (stride 1), "
                         f"got stride {t.stride()}")
    if t.numel() > 2**31 - 1:  # the kernels compute program_id * BLOCK_SIZE in int32
        raise ValueError(f"{name} has {t.numel()} elements, more than 2**31 - 1: these "
                         "kernels compute int32 offsets")
    if t.device.type == "cpu" and not INTERPRETED:
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _check_block_size(block_size: int) -> None:
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two >= 16, got {block_size}")
# --8<-- [end:validation]


# %% [markdown]
# ## Flags that change the code: `tl.constexpr`
#
# `ACTIVATION` is a string known at compile time. The `if` chain runs while the
# kernel is being compiled, so a binary built for `"relu"` holds no GELU code at
# all. `BLOCK_SIZE` fixes the tile shape; `tl.static_assert` refuses a block size
# the kernel was not written for, before anything runs.


# %%
# --8<-- [start:kernel]
@triton.jit
def scale_act_kernel(
    x_ptr,  # pointer to the input
    y_ptr,  # pointer to the output
    n_elements,  # number of elements
    scale,  # a float multiplier: a plain runtime argument
    ACTIVATION: tl.constexpr,  # "none", "relu" or "gelu": chosen at compile time
    BLOCK_SIZE: tl.constexpr,  # elements per program
):
    tl.static_assert(BLOCK_SIZE >= 16, "BLOCK_SIZE must be at least 16")  # (1)!
    tl.static_assert((BLOCK_SIZE & (BLOCK_SIZE - 1)) == 0,
                     "BLOCK_SIZE must be a power of two")
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32) * scale
    if ACTIVATION == "relu":  # (2)!
        x = tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)  # NaN stays NaN
    elif ACTIVATION == "gelu":  # tanh form: x * sigmoid(2u) == 0.5x(1 + tanh(u))
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        x = x * tl.sigmoid(2.0 * u)
    else:
        tl.static_assert(ACTIVATION == "none",
                         "ACTIVATION must be 'none', 'relu' or 'gelu'")
    tl.store(y_ptr + offsets, x.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:kernel]


# %%
# --8<-- [start:launcher]
ACTIVATIONS = ("none", "relu", "gelu")


def scale_act(x: torch.Tensor, scale: float = 1.0, activation: str = "none",
              block_size: int = 1024) -> torch.Tensor:
    """Return activation(x * scale); one binary per (activation, block_size, dtype)."""
    _check_vector("x", x)
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    _check_block_size(block_size)
    y = torch.empty_like(x)
    n = x.numel()
    scale_act_kernel[(triton.cdiv(n, block_size),)](
        x, y, n, float(scale), ACTIVATION=activation, BLOCK_SIZE=block_size)
    return y


def scale_act_torch(x: torch.Tensor, scale: float = 1.0,
                    activation: str = "none") -> torch.Tensor:
    """The plain torch reference (computed in fp32, like the kernel)."""
    y = x.float() * scale
    if activation == "relu":
        y = torch.relu(y)
    elif activation == "gelu":
        y = torch.nn.functional.gelu(y, approximate="tanh")
    return y.to(x.dtype)
# --8<-- [end:launcher]


# %% [markdown]
# ## What Triton specializes on, in plain Python
#
# Every launch turns each argument into a small key; a new key means a new
# compilation. This function states triton 3.6's rules (the tests check it against
# Triton's own implementation, so it cannot drift silently).


# %%
# --8<-- [start:rules]
def specialization_of(arg, specialize: bool = True) -> tuple:
    """(type, property) that a triton 3.6 launch derives from a non-constexpr argument.

    property: "D" = divisible by 16 (ints) or 16-byte aligned (tensors), "" = neither,
    None = not looked at. `specialize=False` is what `do_not_specialize` gives.
    """
    if isinstance(arg, bool):
        return ("u1", None)  # bools and floats are never specialized
    if isinstance(arg, float):
        return ("fp32", None)
    if isinstance(arg, int):
        if specialize and arg == 1:
            return ("constexpr", 1)  # (1)!
        kind = ("i32" if -(2**31) <= arg < 2**31  # (2)!
                else "i64" if -(2**63) <= arg < 2**63 else "u64")
        return (kind, ("D" if arg % 16 == 0 else "") if specialize else None)
    if isinstance(arg, torch.Tensor):
        names = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
        kind = "*" + names.get(arg.dtype, "?")
        aligned = arg.data_ptr() % 16 == 0  # (3)!
        return (kind, ("D" if aligned else "") if specialize else None)
    raise TypeError("arg must be a bool, int, float or tensor, "
                    f"got {type(arg).__name__}")


def variants(calls, constexprs=(), do_not_specialize=()) -> int:
    """How many binaries a kernel needs for `calls`, a list of argument tuples.

    Positions in `constexprs` are keyed by value; the others by `specialization_of`.
    """
    keys = set()
    for args in calls:
        keys.add(tuple(a if i in constexprs
                       else specialization_of(a, i not in do_not_specialize)
                       for i, a in enumerate(args)))
    return len(keys)
# --8<-- [end:rules]


# %% [markdown]
# ## Counting compilations
#
# On a GPU, `triton.knobs.runtime.jit_post_compile_hook` is called after every
# compilation (including one served from the on-disk cache). The interpreter never
# compiles, so under it the count stays at zero.


# %%
# --8<-- [start:counter]
class CompileCounter:
    """Context manager that records every kernel compiled while it is active."""

    def __enter__(self):
        self.compiled = []  # one JITFunction per compilation
        self._previous = triton.knobs.runtime.jit_post_compile_hook

        def hook(*args, **kwargs):
            self.compiled.append(kwargs["fn"].jit_function)
            if self._previous is not None:
                return self._previous(*args, **kwargs)

        triton.knobs.runtime.jit_post_compile_hook = hook
        return self

    def __exit__(self, *exc):
        triton.knobs.runtime.jit_post_compile_hook = self._previous
        return False

    def count(self, kernel=None) -> int:
        """Compilations of `kernel` (of any kernel when None)."""
        return sum(kernel is None or k is kernel for k in self.compiled)
# --8<-- [end:counter]


# %% [markdown]
# ## One kernel, four specialization policies
#
# The same copy body, compiled four ways. `copy_kernel` lets Triton specialize.
# `copy_kernel_unspecialized` opts every argument out with `do_not_specialize`: one
# binary for all sizes and alignments, but the compiler can no longer prove that a
# group of 4 floats is aligned and entirely inside or outside the mask.
# `copy_kernel_hinted` opts only `n` out and restores the one fact that matters with
# `tl.max_constancy` on the mask: a promise the launcher must keep.
# `copy_kernel_argument_hint` tries the same with `tl.multiple_of` on the argument,
# which triton 3.6 ignores (the hint attaches to the operation that produced a value,
# and an argument has none).


# %%
# --8<-- [start:copy-kernels]
@triton.jit
def copy_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


copy_kernel_unspecialized = triton.jit(  # (1)!
    do_not_specialize=["x_ptr", "y_ptr", "n_elements"])(copy_kernel.fn)


@triton.jit(do_not_specialize=["n_elements"])
def copy_kernel_hinted(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = tl.max_constancy(offsets < n_elements, 16)  # (2)!
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit(do_not_specialize=["n_elements"])
def copy_kernel_argument_hint(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    n_elements = tl.multiple_of(n_elements, 16)  # (3)!
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


COPY_POLICIES = {
    "specialize": copy_kernel,
    "no-specialize": copy_kernel_unspecialized,
    "hinted": copy_kernel_hinted,
    "argument-hint": copy_kernel_argument_hint,
}


def _check_copy(x, out, policy: str, block_size: int) -> None:
    """The checks of `copy`; out=None (a new tensor) needs none."""
    _check_vector("x", x)
    if policy not in COPY_POLICIES:
        raise ValueError(f"policy must be one of {tuple(COPY_POLICIES)}, "
                         f"got {policy!r}")
    _check_block_size(block_size)
    if out is not None:
        _check_vector("out", out)
        if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
            raise ValueError("out must match x in shape, dtype and device, got "
                             f"{tuple(out.shape)} {out.dtype} {out.device} for x "
                             f"{tuple(x.shape)} {x.dtype} {x.device}")
        gap = abs(out.data_ptr() - x.data_ptr())
        if 0 < gap < x.numel() * x.element_size():  # would read what others wrote
            raise ValueError("out must not partly overlap x: they start "
                             f"{gap // x.element_size()} elements apart")
    if policy in ("hinted", "argument-hint") and x.numel() % 16:
        raise ValueError(f"policy {policy!r} promises the compiler n % 16 == 0, "
                         f"got n = {x.numel()}")


def copy(x: torch.Tensor, out: torch.Tensor | None = None, policy: str = "specialize",
         block_size: int = 1024) -> torch.Tensor:
    """Copy x into out (a new tensor by default) with one of COPY_POLICIES."""
    _check_copy(x, out, policy, block_size)
    out = torch.empty_like(x) if out is None else out
    n = x.numel()
    kernel = COPY_POLICIES[policy]
    kernel[(triton.cdiv(n, block_size),)](x, out, n, BLOCK_SIZE=block_size)
    return out


def copy_torch(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
# --8<-- [end:copy-kernels]


# %% [markdown]
# ## A recompile storm
#
# Making a size a `tl.constexpr` looks harmless and compiles one binary per size.
# Inside a loop over sequence lengths that is a compilation per step.


# %%
# --8<-- [start:storm]
@triton.jit
def copy_kernel_constexpr_n(x_ptr, y_ptr, N: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < N  # N is baked in: every new N is a new binary
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def copy_constexpr_n(x: torch.Tensor, block_size: int = 1024) -> torch.Tensor:
    """Same result as `copy(x)`; the size is a constexpr (do not do this)."""
    _check_vector("x", x)
    _check_block_size(block_size)
    y = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), block_size),)
    copy_kernel_constexpr_n[grid](x, y, x.numel(), BLOCK_SIZE=block_size)
    return y
# --8<-- [end:storm]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1023, 1025, 4096)) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        for activation in ACTIVATIONS:
            torch.testing.assert_close(scale_act(x, 0.5, activation),
                                       scale_act_torch(x, 0.5, activation))
        for policy in ("specialize", "no-specialize"):
            torch.testing.assert_close(copy(x, policy=policy), x, rtol=0, atol=0)
        if n % 16 == 0:
            for policy in ("hinted", "argument-hint"):
                torch.testing.assert_close(copy(x, policy=policy), x, rtol=0, atol=0)
    keys = {n: specialization_of(n) for n in (1, 16, 17)}
    assert keys == {1: ("constexpr", 1), 16: ("i32", "D"), 17: ("i32", "")}, keys
    print(f"constexpr_specialization: scale_act and copy match torch on {DEVICE.type} "
          f"for n in {list(sizes)}; {variants([(n,) for n in range(1, 200)])} binaries "
          "predicted for n in 1..199")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
