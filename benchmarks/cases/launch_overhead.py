"""Launch-overhead benchmark: what is timed for examples/launch_overhead.py.

The metric is ``us``: ``scripts/bench.py`` times host wall-clock microseconds per call of ``fn``
(warm-up, many back-to-back calls, one synchronize, divide) and divides by ``calls_per_fn`` for
providers whose ``fn`` makes several launches (a CUDA-graph replay of 100 launches). The work
recorded is the bytes of one launch, x read and out written once (``2 * n * 4``, fp32); at these
sizes the time is the launch's, not the bytes'.

``measure_rows`` adds the ``launch_overhead_gpu`` rows: the GPU time per launch (``do_bench``) of
every provider at every size, the other half of the host-vs-GPU comparison. Their title is in
``benchmarks/presentation.yml``.
"""

import torch
import triton
from launch_overhead import CALLS_PER_FN, DEVICE, PROVIDERS, add_scalar_torch, make_fn

BENCHMARKS = [
    {
        "name": "launch_overhead",
        "x_name": "n",
        "x_vals": [1, 1024, 2**16, 2**20],
        "tiny_x_vals": [1, 1024],
        "providers": PROVIDERS,
        "metric": "us",
        "calls_per_fn": CALLS_PER_FN,
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """One benchmark point (see ``BENCHMARKS``). On the CPU the cudagraph provider makes plain launches."""
    device = DEVICE if device is None else device
    a = torch.randn(x, device=device, dtype=torch.float32)
    return {
        "fn": make_fn(provider, a, 1.0),
        "ref": lambda: add_scalar_torch(a, 1.0),
        "work": 2 * x * a.element_size(),  # bytes: read x, write out
        "rtol": 0.0,
        "atol": 0.0,
    }


def measure_rows(device=None) -> list[dict]:
    """GPU-side time per launch (do_bench) for every provider and size: the other half of the
    host-vs-GPU comparison. ``scripts/bench.py`` calls it on the GPU; on the CPU there is no GPU clock."""
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
