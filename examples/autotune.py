# %% [markdown]
# # Autotuning: configs, keys, heuristics, and kernels that write in place
#
# `@triton.autotune` runs every config once per new *key*, keeps the fastest, and
# reuses it. That has three consequences this example makes visible:
#
# * the key decides how often tuning happens: a size that changes every call
#   re-tunes every call, so round it to a power of two first (bucketing);
# * tuning *runs the kernel*, several times: a kernel that writes in place or
#   accumulates with atomics needs `restore_value` / `reset_to_zero`, or its first
#   call returns garbage;
# * `prune_configs_by` and `@triton.heuristics` keep the work per key small.
#
# Multi-config autotuning needs a benchmark function. On a GPU that is Triton's
# `do_bench`; under the CPU interpreter the default one needs a GPU driver and fails,
# so this example passes its own wall-clock timer there (tested with triton 3.6.0).
#
# Run it with `python examples/autotune.py`.

# %%
# --8<-- [start:setup]
import os
import time

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# --8<-- [end:setup]


# %% [markdown]
# ## The benchmark the tuner uses, and a count of its runs


# %%
# --8<-- [start:tuning-bench]
TUNING_RUNS = {"count": 0}  # how many configs have been benchmarked, over all kernels


def tuning_bench(fn, quantiles):
    """Time one config for the autotuner: do_bench on a GPU, else a wall clock."""
    TUNING_RUNS["count"] += 1
    if not INTERPRETED:
        return triton.testing.do_bench(fn, quantiles=quantiles)
    start = time.perf_counter()
    fn()  # (1)!
    ms = (time.perf_counter() - start) * 1e3
    return [ms] * len(quantiles)
# --8<-- [end:tuning-bench]


# %% [markdown]
# ## An in-place kernel: configs, pruning, heuristics, `restore_value`


# %%
# --8<-- [start:configs]
def block_configs():
    """Candidate tile sizes; the autotuner benchmarks the ones the pruner keeps."""
    sizes = ((256, 2), (1024, 4), (4096, 8))  # (BLOCK_SIZE, num_warps)
    return [triton.Config({"BLOCK_SIZE": b}, num_warps=w) for b, w in sizes]


def prune_blocks(configs, named_args, **kwargs):
    """Drop tiles larger than the (bucketed) problem: they would time masked lanes."""
    largest = max(named_args["n_bucket"], 256)
    kept = [c for c in configs if c.kwargs["BLOCK_SIZE"] <= largest]
    return kept or configs[:1]


def bucket(n: int) -> int:
    """The autotune key for a size: the next power of two (1025..2048 share one)."""
    return triton.next_power_of_2(n)
# --8<-- [end:configs]


# %%
# --8<-- [start:scale-kernel]
@triton.autotune(
    configs=block_configs(),
    key=["n_bucket"],  # (1)!
    prune_configs_by={"early_config_prune": prune_blocks},
    restore_value=["x_ptr"],  # (2)!
    do_bench=tuning_bench,
)
@triton.heuristics(  # (3)!
    {"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})
@triton.jit
def scale_inplace_kernel(
    x_ptr,  # pointer to the tensor, read and overwritten
    n_elements,  # number of elements
    n_bucket,  # bucket(n_elements): only the autotune key reads it
    alpha,  # the factor
    BLOCK_SIZE: tl.constexpr,  # from the chosen config
    EVEN: tl.constexpr,  # from the heuristic: no ragged tile, so no mask
):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * alpha)
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(x_ptr + offsets, x * alpha, mask=mask)
# --8<-- [end:scale-kernel]


# %%
# --8<-- [start:launchers]
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
    if t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if t.numel() > 2**31 - 1:  # both kernels compute program_id * BLOCK_SIZE in int32
        raise ValueError(f"{name} has {t.numel()} elements, more than 2**31 - 1: "
                         "these kernels compute int32 offsets")
    if t.device.type == "cpu" and not INTERPRETED:
        raise ValueError(f"{name} is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def scale_(x: torch.Tensor, alpha: float, kernel=scale_inplace_kernel) -> torch.Tensor:
    """Multiply x by alpha in place and return x (autotuned per size bucket)."""
    _check_vector("x", x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # (1)!
    kernel[grid](x, n, bucket(n), float(alpha))
    return x


def scale_torch(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return (x.float() * alpha).to(x.dtype)
# --8<-- [end:launchers]


# %% [markdown]
# ## An accumulating kernel: `reset_to_zero`
#
# Each program adds its partial sum into one fp32 scalar with an atomic. Every
# benchmarked run adds the total again, so the output must be zeroed before each one.


# %%
# --8<-- [start:sum-kernel]
@triton.autotune(
    configs=block_configs(),
    key=["n_bucket"],
    prune_configs_by={"early_config_prune": prune_blocks},
    reset_to_zero=["out_ptr"],  # (1)!
    do_bench=tuning_bench,
)
@triton.jit
def sum_kernel(x_ptr, out_ptr, n_elements, n_bucket, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offsets, mask=offsets < n_elements, other=0.0).to(tl.float32)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))  # one atomic per program


def sum_(x: torch.Tensor, kernel=sum_kernel) -> torch.Tensor:
    """Sum of x as a 1-element fp32 tensor (atomics: the last bits vary per run)."""
    _check_vector("x", x)
    n = x.numel()
    out = torch.zeros(1, device=x.device, dtype=torch.float32)
    kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, out, n, bucket(n))
    return out


def sum_torch(x: torch.Tensor) -> torch.Tensor:
    return x.double().sum().float().reshape(1)
# --8<-- [end:sum-kernel]


# %% [markdown]
# ## The same kernels, tuned wrongly
#
# Built from the same `@triton.jit` functions; only the autotune options differ.
# The failure-modes page runs each of them.


# %%
# --8<-- [start:pitfalls]
def tuned(kernel, key, **options):
    """A fresh autotuner over `kernel` (a @jit or @heuristics function), own cache."""
    prune = {"early_config_prune": prune_blocks}
    return triton.autotune(configs=block_configs(), key=key, do_bench=tuning_bench,
                           prune_configs_by=prune, **options)(kernel)


_scale_body = scale_inplace_kernel.fn  # the @heuristics(@jit) function inside
_sum_body = sum_kernel.fn

scale_no_restore = tuned(_scale_body, ["n_bucket"])  # (1)!
sum_no_reset = tuned(_sum_body, ["n_bucket"])  # (2)!
scale_key_per_size = tuned(_scale_body, ["n_elements"], restore_value=["x_ptr"])  # (3)!
scale_key_missing = tuned(_scale_body, [], restore_value=["x_ptr"])  # (4)!
scale_bucketed = tuned(_scale_body, ["n_bucket"], restore_value=["x_ptr"])


def tunings(kernel) -> int:
    """How many keys `kernel` has been tuned for (one entry per key in its cache)."""
    return len(kernel.cache)
# --8<-- [end:pitfalls]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1023, 1025, 4099)) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        expected = scale_torch(x, 0.5)
        torch.testing.assert_close(scale_(x, 0.5), expected)  # tunes once per bucket
        torch.testing.assert_close(sum_(x), sum_torch(x), rtol=1e-5, atol=1e-4)
    x = torch.randn(1000, device=DEVICE)
    wrong = scale_(x.clone(), 2.0, kernel=scale_no_restore)  # tuning ran it many times
    ratio = float((wrong / x).mean())
    print(f"autotune: scale_ and sum_ match torch on {DEVICE.type} for n in "
          f"{list(sizes)} ({tunings(scale_inplace_kernel)} tunings, "
          f"{TUNING_RUNS['count']} benchmarked configs); without restore_value the "
          f"first call returned {ratio:.3g} * x instead of 2 * x")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
