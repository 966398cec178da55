"""What the probes share: importing an example by file path (probes run as scripts, so this folder,
not the repository root, is on sys.path: `from _examples import load_example`), a shape's label, the
GPU's SM count, the interleaved timing passes, the copy ceiling, and the wall-clock stand-in for
do_bench on a dry run."""

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_example(name: str):
    """examples/<name>.py as module `name` (also in sys.modules, as its dataclasses and pickles need)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shape_label(shape) -> str:
    """(S, S, S) -> "S"; any other (M, N, K) -> "MxNxK"."""
    return str(shape[0]) if shape[0] == shape[1] == shape[2] else "x".join(map(str, shape))


def sm_count(device=0) -> int:
    """How many SMs the GPU `device` has: the one place the probes ask."""
    import torch

    return torch.cuda.get_device_properties(device).multi_processor_count


def interleaved_times(cases: dict, passes: int = 3, timer=None, **bench) -> dict[str, list[float]]:
    """name -> the timer's median (ms) of each pass (`timer`: triton.testing.do_bench unless given, e.g.
    do_bench_cudagraph); a pass times every case once, in order, so a drift of the GPU's clocks spreads
    over all cases instead of landing on one."""
    if timer is None:
        from triton.testing import do_bench as timer

    times = {name: [] for name in cases}
    for _ in range(passes):
        for name, fn in cases.items():
            times[name].append(timer(fn, **bench))
    return times


def copy_ceiling() -> float:
    """GB/s of a 2 GiB fp32 device copy (read + write), timed as the benchmarks time their ceiling:
    do_bench median (L2 flushed), median of 3."""
    import statistics

    import torch
    from triton.testing import do_bench

    src = torch.empty(2**29, device="cuda")
    dst = torch.empty_like(src)
    ms = statistics.median(do_bench(lambda: dst.copy_(src), warmup=5, rep=60) for _ in range(3))
    return 2 * src.numel() * 4 / ms / 1e6


def wall_clock_bench(fn, **_) -> float:
    """A dry run's do_bench: the wall clock of one call in ms (no GPU timer), a smoke test only."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3
