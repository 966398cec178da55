# %% [markdown]
# # Launch overhead: what one kernel launch costs the host
#
# Every `kernel[grid](...)` call runs Python on the CPU before the GPU sees any
# work: the launcher's checks, the output allocation, Triton binding the arguments
# and finding the compiled kernel, and the driver call. For a tiny tensor that host
# work takes longer than the kernel itself, so the host, not the GPU, sets the speed.
#
# You will see:
#
# * a tiny kernel launched four ways: through a checking launcher, through
#   `@triton.autotune`, through a pre-compiled handle, and replayed from a CUDA graph;
# * how to measure host time per launch (a wall clock around many launches) and GPU
#   time per launch (`triton.testing.do_bench`), and how to read the gap;
# * a table of both clocks for every way of launching.
#
# Run it with `python examples/launch_overhead.py`.

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
# --8<-- [end:setup]


# %% [markdown]
# ## A kernel with almost no work
#
# `out = x + alpha`. At a few thousand elements the GPU finishes it in a few
# microseconds; everything else in this file is about the time around it.


# %%
# --8<-- [start:kernel]
@triton.jit
def add_scalar_kernel(
    x_ptr,  # pointer to the input
    out_ptr,  # pointer to the output
    n,  # number of elements
    alpha,  # runtime scalar
    BLOCK_SIZE: tl.constexpr,
):
    offs = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + alpha, mask=mask)


def check_input(x) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in (torch.float16, torch.float32):
        raise TypeError(f"x must be float16 or float32, got {x.dtype}")
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous, got stride {x.stride()}")
    if x.numel() == 0:
        raise ValueError("x must have at least one element")
    if x.numel() > 2**31 - 1:  # program_id * BLOCK_SIZE is int32 arithmetic
        raise ValueError(f"x has {x.numel()} elements, more than 2**31 - 1: "
                         "add_scalar_kernel computes int32 offsets")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def add_scalar(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """x + alpha: check, allocate, size the grid, launch. The everyday launcher."""
    check_input(x)
    out = torch.empty_like(x)
    n = x.numel()
    add_scalar_kernel[(triton.cdiv(n, 1024),)](x, out, n, alpha, BLOCK_SIZE=1024)
    return out


def add_scalar_torch(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x + alpha
# --8<-- [end:kernel]


# %% [markdown]
# ## The same kernel under `@triton.autotune`
#
# The autotuner times every config the first time it sees a new key (here `n`),
# then on every later call looks the winner up in a dictionary and launches it.
# That lookup is extra host work on every call.


# %%
# --8<-- [start:autotuned]
def autotune_configs():
    if not torch.cuda.is_available():  # the default do_bench needs a GPU: one config
        return [triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]
    sizes = ((256, 2), (1024, 4), (4096, 8))  # (BLOCK_SIZE, num_warps)
    return [triton.Config({"BLOCK_SIZE": b}, num_warps=w) for b, w in sizes]


add_scalar_autotuned_kernel = triton.autotune(
    configs=autotune_configs(), key=["n"])(add_scalar_kernel)


def add_scalar_autotuned(x: torch.Tensor, alpha: float) -> torch.Tensor:
    check_input(x)
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # tuner picks BLOCK_SIZE
    add_scalar_autotuned_kernel[grid](x, out, n, alpha)
    return out
# --8<-- [end:autotuned]


# %% [markdown]
# ## Cutting the host work
#
# Two ways, both measured by the benchmark:
#
# * **Warm launcher**: do the checks, the allocation and Triton's compile-cache
#   lookup once, keep the compiled kernel, and on the hot path call only its
#   launcher. Valid only while the arguments keep the same dtypes, alignment and
#   sizes: nothing re-checks them.
# * **CUDA graph**: record many launches once, then replay them with one call.
#   The replay skips Python and the driver's per-launch work altogether.
#
# Neither works in the interpreter; there they fall back to plain launches.


# %%
# --8<-- [start:warm]
class WarmLauncher:
    """out = x + alpha for one fixed x: all host work done up front, launch only."""

    def __init__(self, x: torch.Tensor, alpha: float, block_size: int = 1024):
        check_input(x)
        if not (isinstance(block_size, int) and block_size > 0
                and block_size & (block_size - 1) == 0):
            raise ValueError("block_size must be a positive power of two, "
                             f"got {block_size}")
        self.out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, block_size), 1, 1)
        args = (x, self.out, n, alpha, block_size)  # every argument, constexprs too
        if x.device.type == "cuda":
            compiled = add_scalar_kernel.warmup(  # (1)!
                *args[:4], BLOCK_SIZE=block_size, grid=grid)
            run = compiled[grid]  # (2)!
            self._launch = lambda: run(*args)
        else:  # interpreter: no compiled kernel to hold on to; launch through the JIT
            kernel = add_scalar_kernel[grid]
            self._launch = lambda: kernel(*args[:4], BLOCK_SIZE=block_size)

    def __call__(self) -> torch.Tensor:
        self._launch()
        return self.out


class GraphLauncher:
    """`launches` launches of out = x + alpha in one CUDA graph; a call replays them."""

    def __init__(self, x: torch.Tensor, alpha: float, launches: int = 100):
        check_input(x)
        self.out = torch.empty_like(x)
        self.launches = launches
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)

        def launch():
            add_scalar_kernel[grid](x, self.out, n, alpha, BLOCK_SIZE=1024)

        if x.device.type != "cuda":  # interpreter, no graphs: `launches` plain launches
            self._replay = lambda: [launch() for _ in range(launches)]
            return
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # compile and warm up outside the capture
            launch()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):  # (3)!
            for _ in range(launches):
                launch()
        self._replay = self.graph.replay

    def __call__(self) -> torch.Tensor:
        self._replay()
        return self.out
# --8<-- [end:warm]


# %% [markdown]
# ## Seeing launch overhead yourself
#
# Two clocks. A host wall clock around many back-to-back calls, with one
# synchronize at the end, measures what a Python loop of launches costs: whichever
# of the CPU and the GPU is slower sets it. `do_bench` measures between CUDA events
# around each call, after an L2 flush that hides only part of the host's work: on a
# kernel of a few microseconds, launch cost shows up in it too. A CUDA-graph replay
# leaves the host out. When the wall clock is much larger than the graph time, the
# GPU is waiting for the CPU.


# %%
# --8<-- [start:measure]
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def host_us_per_call(fn, device=DEVICE, calls: int = 1000, warmup: int = 20) -> float:
    """Wall-clock microseconds per call of fn(), calls issued back to back."""
    for _ in range(warmup):  # compile, autotune, fill caches
        fn()
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)  # once: the launches overlap with the GPU's work
    return (time.perf_counter() - start) / calls * 1e6


def gpu_us_per_call(fn) -> float:
    """GPU time per call of fn() in microseconds (CUDA events; needs a GPU)."""
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def overhead_table(n=1024, device=DEVICE) -> list[tuple[str, float, float | None]]:
    """(provider, host µs per launch, GPU µs per launch or None) for n elements."""
    x = torch.randn(n, device=device)
    on_gpu = device.type == "cuda"
    calls = 1000 if on_gpu else 5  # the interpreter is slow: a few calls suffice
    rows = []
    for provider in PROVIDERS:
        fn = make_fn(provider, x, 1.0, launches=None if on_gpu else 2)
        per_fn = getattr(fn, "launches", 1)  # a graph replay makes several launches
        host = host_us_per_call(fn, device, max(1, calls // per_fn), warmup=2) / per_fn
        gpu = gpu_us_per_call(fn) / per_fn if device.type == "cuda" else None
        rows.append((provider, host, gpu))
    return rows
# --8<-- [end:measure]


# %% [markdown]
# ## Check it
#
# Every way of launching must give x + alpha, on sizes around the block size.


# %%
# --8<-- [start:check]
CALLS_PER_FN = {"triton-cudagraph": 100}  # a call of the graph replays 100 launches


def make_fn(provider: str, x: torch.Tensor, alpha: float, launches: int | None = None):
    """A callable: `provider` launches once (a graph: `launches` times), returns out."""
    if provider == "torch":
        return lambda: add_scalar_torch(x, alpha)
    if provider == "triton":
        return lambda: add_scalar(x, alpha)
    if provider == "triton-autotuned":
        return lambda: add_scalar_autotuned(x, alpha)
    if provider == "triton-warm-launcher":
        return WarmLauncher(x, alpha)
    if provider == "triton-cudagraph":
        return GraphLauncher(x, alpha, launches=launches or CALLS_PER_FN[provider])
    raise ValueError(f"provider must be one of {PROVIDERS}, got {provider!r}")


PROVIDERS = ["torch", "triton", "triton-autotuned", "triton-warm-launcher",
             "triton-cudagraph"]


def self_check(sizes=(1, 17, 1025)) -> None:
    launches = None if DEVICE.type == "cuda" else 2
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        for provider in PROVIDERS:
            fn = make_fn(provider, x, 0.5, launches=launches)
            torch.testing.assert_close(fn(), add_scalar_torch(x, 0.5), rtol=0, atol=0)
    print(f"launch_overhead: {len(PROVIDERS)} ways of launching give x + alpha on "
          f"{DEVICE.type} for n in {list(sizes)}")
# --8<-- [end:check]


def main() -> None:
    self_check()
    where = ("GPU" if DEVICE.type == "cuda"
             else "CPU interpreter: host times are the interpreter's, not a GPU's")
    print(f"n = 1024 ({where})")
    print(f"{'provider':<22}{'host us/launch':>16}{'GPU us/launch':>16}")
    for provider, host, gpu in overhead_table(1024):
        print(f"{provider:<22}{host:>16.1f}{'-' if gpu is None else f'{gpu:.1f}':>16}")


# %%
if __name__ == "__main__":
    main()
