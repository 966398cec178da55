# %% [markdown]
# # Timing a kernel: seven clocks, one launch
#
# `z = a * x + y` (saxpy), timed with the clocks people reach for, next to the kernel's
# true duration from the CUDA profiler. Each clock answers a different question.
#
# You will see:
#
# * why `time.perf_counter()` around a launch measures the *enqueue*, not the kernel;
# * what `triton.testing.do_bench` and `do_bench_cudagraph` measure (and that only the
#   first flushes the L2 cache between repetitions);
# * GB/s, TFLOP/s, arithmetic intensity and the roofline as small, tested functions;
# * `time_every_clock`: every clock's answer, at three sizes, on the GPU.
#
# Run it with `python examples/timing_methods.py` (on a CPU only the formulas and the
# kernel are checked: there is no GPU to time).

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
# ## The kernel
#
# Two reads and one write per element, almost no arithmetic: a memory-bound kernel whose
# ideal duration is bytes / bandwidth.


# %%
# --8<-- [start:kernel]
@triton.jit
def saxpy_kernel(
    x_ptr,  # pointer to x
    y_ptr,  # pointer to y
    z_ptr,  # pointer to the output
    a,  # the scalar
    n_elements,  # number of elements
    BLOCK_SIZE: tl.constexpr,  # elements per program
):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(z_ptr + offsets, a * x + y, mask=mask)


def _check_saxpy(a, x, y, block_size) -> None:
    for name, t in (("x", x), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != torch.float32:
            raise TypeError(f"{name} must be float32, got {t.dtype}")
        if t.dim() != 1 or not t.is_contiguous():
            raise ValueError(f"{name} must be 1-D and contiguous, got shape "
                             f"{tuple(t.shape)}, stride {t.stride()}")
    if x.shape != y.shape or x.device != y.device:
        raise ValueError(f"x and y must match in shape and device, got {tuple(x.shape)}"
                         f" on {x.device} and {tuple(y.shape)} on {y.device}")
    if not isinstance(a, (int, float)):
        raise TypeError(f"a must be a Python number, got {type(a).__name__}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    if block_size <= 0 or block_size & (block_size - 1):
        raise ValueError("block_size must be a positive power of two, "
                         f"got {block_size}")
    if x.numel() > 2**31 - 1:  # program_id(0) * BLOCK_SIZE is int32 arithmetic
        raise ValueError(f"x has {x.numel()} elements, more than 2**31 - 1: "
                         "saxpy_kernel computes int32 offsets")


def saxpy(a: float, x: torch.Tensor, y: torch.Tensor,
          block_size: int = 1024) -> torch.Tensor:
    """a * x + y for contiguous 1-D float32 tensors."""
    _check_saxpy(a, x, y, block_size)
    z = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, block_size),)
    saxpy_kernel[grid](x, y, z, float(a), n, BLOCK_SIZE=block_size)
    return z


def saxpy_torch(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return a * x + y
# --8<-- [end:kernel]


# %% [markdown]
# ## Units: GB/s, TFLOP/s and the roofline
#
# Throughput is work over median time. The roofline says how fast a kernel *could* be:
# the lower of the compute ceiling and bandwidth times arithmetic intensity.


# %%
# --8<-- [start:formulas]
def gbps(bytes_moved: float, ms: float) -> float:
    """Bandwidth in GB/s (10^9 bytes per second) from bytes and milliseconds."""
    return bytes_moved / (ms * 1e-3) / 1e9


def tflops(flops: float, ms: float) -> float:
    """Compute throughput in TFLOP/s (10^12 flops per second)."""
    return flops / (ms * 1e-3) / 1e12


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """Flops per byte of DRAM traffic."""
    return flops / bytes_moved


def ridge_point(peak_tflops: float, peak_gbps: float) -> float:
    """The intensity (flop/byte) where the bandwidth roof meets the compute roof."""
    return peak_tflops * 1e12 / (peak_gbps * 1e9)


def roofline_tflops(intensity: float, peak_tflops: float, peak_gbps: float) -> float:
    """The best TFLOP/s a kernel of this intensity can reach under both ceilings."""
    return min(peak_tflops, intensity * peak_gbps * 1e9 / 1e12)


def saxpy_work(n: int) -> tuple[float, float]:
    """(flops, bytes) of one saxpy over n fp32 elements: 2 flops, 12 bytes each."""
    return 2.0 * n, 12.0 * n
# --8<-- [end:formulas]


# %% [markdown]
# ## The clocks
#
# Each timer takes a callable and returns per-call times in milliseconds. The first two
# are what a Python programmer writes first; the rest are what a GPU needs.


# %%
# --8<-- [start:cpu-timers]
def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_perf_counter_no_sync(fn, reps=100):
    """Wrong: perf_counter around a launch, which returns as soon as it is queued."""
    times = []
    for _ in range(reps):
        _sync()  # start from an idle GPU so the queue never fills up
        t0 = time.perf_counter()
        out = fn()  # (1)!
        times.append((time.perf_counter() - t0) * 1e3)
        del out  # free the output outside the timed region
    return times


def time_perf_counter_sync(fn, reps=100):
    """Closer: wait for the GPU, then read the clock. Adds launch and sync latency."""
    times = []
    for _ in range(reps):
        _sync()
        t0 = time.perf_counter()
        out = fn()
        _sync()  # (2)!
        times.append((time.perf_counter() - t0) * 1e3)
        del out
    return times
# --8<-- [end:cpu-timers]


# %%
# --8<-- [start:gpu-timers]
def time_cuda_events(fn, reps=100):
    """CUDA events recorded on the stream around each launch; the L2 stays warm."""
    fn()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2 * reps)]
    pairs = list(zip(events[::2], events[1::2], strict=True))
    for start, end in pairs:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in pairs]


def time_do_bench(fn):
    """Triton's do_bench: 25 ms of warm-up, 100 ms of runs, L2 flushed before each."""
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="all")


def time_do_bench_cudagraph(fn):
    """do_bench_cudagraph: the launches replayed from a CUDA graph; no L2 flush."""
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="all")


def _flush_l2(buffer):
    buffer.zero_()  # writing 256 MB evicts everything the kernel left in the 60 MB L2


def time_profiler(fn, reps=50, flush=False, kernel_name="saxpy_kernel"):
    """The truth: the kernel's own duration on the GPU, as the CUDA profiler saw it."""
    from torch.profiler import ProfilerActivity, profile

    buffer = torch.empty(2**26, dtype=torch.float32, device="cuda") if flush else None
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            if flush:
                _flush_l2(buffer)
            fn()
        torch.cuda.synchronize()
    on_gpu = torch.autograd.DeviceType.CUDA
    times = [e.time_range.elapsed_us() / 1e3 for e in prof.events()
             if kernel_name in e.name and e.device_type == on_gpu]
    if not times:
        raise RuntimeError(f"the profiler recorded no kernel named {kernel_name!r}")
    return times
# --8<-- [end:gpu-timers]


# %% [markdown]
# ## Every clock, every size
#
# `time_every_clock` times the same launch with every clock that the device has. Small
# sizes show launch cost; a mid size fits in the 60 MB L2 (so the flush matters); the
# large one streams from HBM.


# %%
# --8<-- [start:measure]
TIMERS = {  # provider name -> (timer, needs CUDA)
    "perf_counter-no-sync": (time_perf_counter_no_sync, False),
    "perf_counter-sync": (time_perf_counter_sync, False),
    "cuda-events": (time_cuda_events, True),
    "do_bench": (time_do_bench, True),
    "do_bench_cudagraph": (time_do_bench_cudagraph, True),
    "profiler-warm-l2": (lambda fn: time_profiler(fn, flush=False), True),
    "profiler-flushed-l2": (lambda fn: time_profiler(fn, flush=True), True),
}
SIZES = {"cuda": [2**12, 2**20, 2**26], "cpu": [1025]}


def time_every_clock(device=None) -> list[tuple[int, str, list[float]]]:
    """(n, timer, per-call times in ms) for each size and each timer the device has."""
    device = torch.device(DEVICE if device is None else device)
    readings = []
    for n in SIZES[device.type]:
        x = torch.randn(n, device=device)
        y = torch.randn(n, device=device)
        fn = lambda: saxpy(2.0, x, y)  # noqa: B023 (used before the loop moves on)
        torch.testing.assert_close(fn(), saxpy_torch(2.0, x, y))
        for provider, (timer, needs_cuda) in TIMERS.items():
            if needs_cuda and device.type != "cuda":
                continue
            readings.append((n, provider, timer(fn)))
    return readings
# --8<-- [end:measure]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check(sizes=(1, 17, 1023, 1025, 4097)) -> None:
    for n in sizes:
        x = torch.randn(n, device=DEVICE)
        y = torch.randn(n, device=DEVICE)
        torch.testing.assert_close(saxpy(0.5, x, y), saxpy_torch(0.5, x, y))
    flops, nbytes = saxpy_work(2**20)
    assert abs(gbps(nbytes, 0.01) - 1258.29) < 0.01  # 12 MiB in 10 µs
    assert ridge_point(600.0, 4000.0) == 150.0  # flop/byte
    assert roofline_tflops(arithmetic_intensity(flops, nbytes), 600.0, 4000.0) < 1.0
    print(f"timing_methods: saxpy matches torch on {DEVICE.type} for n in "
          f"{list(sizes)}; GB/s, TFLOP/s and roofline formulas checked")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
