"""Timing-methods benchmark: what is timed for examples/timing_methods.py.

``saxpy_fp32`` is the usual GB/s bench, timed both with ``do_bench`` and with ``do_bench_cudagraph``;
bytes moved: x and y read, z written once, ``12 * n`` (fp32), whichever provider runs.

``measure_rows`` adds the ``timing_methods`` rows: what each of the example's clocks
(``time_every_clock``) says one saxpy launch takes, in µs, at each size; no work is counted (``work``
0). Their title is in ``benchmarks/presentation.yml``.
"""

import statistics

import torch
from timing_methods import DEVICE, saxpy, saxpy_torch, saxpy_work, time_every_clock

BENCHMARKS = [
    {
        "name": "saxpy_fp32",
        "x_name": "n",
        "x_vals": [2**k for k in range(12, 29, 2)],
        "tiny_x_vals": [1, 1025],
        "providers": ["triton", "torch"],
        "metric": "GB/s",
        "args": {},
    },
]

CLOCKS = {  # the result file's `timing` column: which clock took each provider's time
    "perf_counter-no-sync": "host_wall", "perf_counter-sync": "host_wall", "cuda-events": "cuda_events",
    "do_bench": "do_bench", "do_bench_cudagraph": "cudagraph",
    "profiler-warm-l2": "profiler", "profiler-flushed-l2": "profiler",
}


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    a = torch.randn(x, device=device)
    b = torch.randn(x, device=device)
    fns = {"triton": lambda: saxpy(2.0, a, b), "torch": lambda: saxpy_torch(2.0, a, b)}
    return {
        "fn": fns[provider],
        "ref": lambda: saxpy_torch(2.0, a.double(), b.double()).float(),
        "work": saxpy_work(x)[1],  # bytes: read x, read y, write z
        "rtol": 1e-6,
        "atol": 1e-6,
    }


def _quantile(times, q):
    times = sorted(times)
    return times[min(len(times) - 1, int(q * len(times)))]


def measure_rows(device=None) -> list[dict]:
    """One row per (size, timer): what that timer says one saxpy launch takes, in µs."""
    rows = []
    for n, provider, ms in time_every_clock(device):
        p50 = statistics.median(ms)
        rows.append({
            "bench": "timing_methods", "x_name": "n", "x": n, "provider": provider,
            "timing": CLOCKS[provider], "metric": "us", "value": 1e3 * p50,
            "ms_p50": p50, "ms_p20": _quantile(ms, 0.2), "ms_p80": _quantile(ms, 0.8),
            "work": 0, "host_bound": None, "spread": None,  # spread: scripts/bench.py, over its passes
        })
    return rows
