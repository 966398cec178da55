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
# * the benchmark spec, whose metric is host microseconds per launch.
#
# Run it with `python examples/launch_overhead.py`.

# %%
# --8<-- [start:setup]
import os
import time

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit runs

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
        raise ValueError(f"x has {x.numel()} elements, more than 2**31 - 1: add_scalar_kernel computes int32 offsets")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 (Triton's interpreter)")


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
    if not torch.cuda.is_available():  # the interpreter runs a single config only
        return [triton.Config({"BLOCK_SIZE": 1024}, num_warps=4)]
    return [triton.Config({"BLOCK_SIZE": b}, num_warps=w) for b, w in ((256, 2), (1024, 4), (4096, 8))]


add_scalar_autotuned_kernel = triton.autotune(configs=autotune_configs(), key=["n"])(add_scalar_kernel)


def add_scalar_autotuned(x: torch.Tensor, alpha: float) -> torch.Tensor:
    check_input(x)
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # the tuner picks BLOCK_SIZE
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
        if not isinstance(block_size, int) or block_size <= 0 or block_size & (block_size - 1):
            raise ValueError(f"block_size must be a positive power of two, got {block_size}")
        self.out = torch.empty_like(x)
        n = x.numel()
        grid = (triton.cdiv(n, block_size), 1, 1)
        args = (x, self.out, n, alpha, block_size)  # every argument, constexprs included
        if x.device.type == "cuda":
            compiled = add_scalar_kernel.warmup(*args[:4], BLOCK_SIZE=block_size, grid=grid)  # (1)!
            run = compiled[grid]  # (2)!
            self._launch = lambda: run(*args)
        else:  # interpreter: no compiled kernel to hold on to; launch through the JIT
            self._launch = lambda: add_scalar_kernel[grid](*args[:4], BLOCK_SIZE=block_size)

    def __call__(self) -> torch.Tensor:
        self._launch()
        return self.out


class GraphLauncher:
    """`launches` launches of out = x + alpha recorded in one CUDA graph; a call replays them all."""

    def __init__(self, x: torch.Tensor, alpha: float, launches: int = 100):
        check_input(x)
        self.out = torch.empty_like(x)
        self.launches = launches
        n = x.numel()
        grid = (triton.cdiv(n, 1024),)

        def launch():
            add_scalar_kernel[grid](x, self.out, n, alpha, BLOCK_SIZE=1024)

        if x.device.type != "cuda":  # no graphs in the interpreter: replay means `launches` plain launches
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


def overhead_table(n: int = 1024, device=DEVICE) -> list[tuple[str, float, float | None]]:
    """(provider, host µs per launch, GPU µs per launch or None) for a tensor of n elements."""
    x = torch.randn(n, device=device)
    on_gpu = device.type == "cuda"
    calls = 1000 if on_gpu else 5  # the interpreter is slow: a few calls suffice
    rows = []
    for provider in PROVIDERS:
        fn = make_fn(provider, x, 1.0, launches=None if on_gpu else 2)
        per_fn = getattr(fn, "launches", 1)  # a graph replay makes several launches
        host = host_us_per_call(fn, device, calls=max(1, calls // per_fn), warmup=2) / per_fn
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
CALLS_PER_FN = {"triton-cudagraph": 100}  # one call of the graph provider replays 100 launches


def make_fn(provider: str, x: torch.Tensor, alpha: float, launches: int | None = None):
    """A no-argument callable that launches `provider` once (the graph: `launches` times) and returns out."""
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


PROVIDERS = ["torch", "triton", "triton-autotuned", "triton-warm-launcher", "triton-cudagraph"]


def self_check(sizes=(1, 17, 1025)) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        for provider in PROVIDERS:
            fn = make_fn(provider, x, 0.5, launches=None if DEVICE.type == "cuda" else 2)
            torch.testing.assert_close(fn(), add_scalar_torch(x, 0.5), rtol=0, atol=0)
    print(f"launch_overhead: {len(PROVIDERS)} ways of launching give x + alpha on {DEVICE.type} for n in {list(sizes)}")
# --8<-- [end:check]


def main() -> None:
    self_check()
    where = "GPU" if DEVICE.type == "cuda" else "CPU interpreter: host times are the interpreter's, not a GPU's"
    print(f"n = 1024 ({where})")
    print(f"{'provider':<22}{'host us/launch':>16}{'GPU us/launch':>16}")
    for provider, host, gpu in overhead_table(1024):
        print(f"{provider:<22}{host:>16.1f}{'-' if gpu is None else f'{gpu:.1f}':>16}")


# %% [markdown]
# ## Benchmark spec
#
# The metric is `us`: `scripts/bench.py` times host wall-clock microseconds per
# call of `fn` (warm-up, many back-to-back calls, one synchronize, divide) and
# divides by `calls_per_fn` for providers whose `fn` makes several launches.


# %%
BENCHMARKS = [
    {
        "name": "launch_overhead",
        "title": "Host time per launch of out = x + alpha (lower is better)",
        "x_name": "n",
        "x_vals": [1, 1024, 2**16, 2**20],
        "tiny_x_vals": [1, 1024],
        "providers": PROVIDERS,
        "metric": "us",
        "ceiling": None,
        "cudagraph": False,
        "calls_per_fn": CALLS_PER_FN,
        "args": {},
    },
]


EXTRA_BENCHMARKS = [
    {
        "name": "launch_overhead_gpu",
        "title": "GPU time per launch of out = x + alpha (do_bench median, µs)",
        "x_name": "n",
        "metric": "us",
        "ceiling": None,
    },
]


def measure_rows(device=None) -> list[dict]:
    """GPU-side time per launch (do_bench) for every provider and size: the other half of the
    host-vs-GPU comparison. `scripts/bench.py` calls it on the GPU; on the CPU there is no GPU clock."""
    device = torch.device(DEVICE if device is None else device)
    if device.type != "cuda":
        return []
    rows = []
    for x in BENCHMARKS[0]["x_vals"]:
        for provider in PROVIDERS:
            case = bench_case("launch_overhead", provider, x, device=device)
            torch.testing.assert_close(case["fn"](), case["ref"](), rtol=0, atol=0)
            per = CALLS_PER_FN.get(provider, 1)
            p50, p20, p80 = (t / per for t in triton.testing.do_bench(
                case["fn"], warmup=10, rep=40, quantiles=[0.5, 0.2, 0.8]))  # per pass of scripts/bench.py
            rows.append({
                "bench": "launch_overhead_gpu", "x_name": "n", "x": x, "provider": provider,
                "timing": "do_bench", "metric": "us", "value": round(1e3 * p50, 3),
                "ms_p50": f"{p50:.6g}", "ms_p20": f"{p20:.6g}", "ms_p80": f"{p80:.6g}", "work": case["work"],
                "host_bound": None, "spread": None,  # spread: scripts/bench.py, over its passes
            })
    return rows


def bench_case(name: str, provider: str, x: int, device=None) -> dict:
    """One benchmark point (see `BENCHMARKS`). On the CPU the cudagraph provider makes plain launches."""
    device = DEVICE if device is None else device
    a = torch.randn(x, device=device, dtype=torch.float32)
    return {
        "fn": make_fn(provider, a, 1.0),
        "ref": lambda: add_scalar_torch(a, 1.0),
        "work": 2 * x * a.element_size(),  # bytes: read x, write out
        "rtol": 0.0,
        "atol": 0.0,
    }


# %%
if __name__ == "__main__":
    main()
