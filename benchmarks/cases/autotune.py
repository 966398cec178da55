"""Autotuned sum benchmark: what is timed for examples/autotune.py.

The atomic sum ``sum_`` against ``torch.sum`` on fp32 vectors. Bytes moved: the input read once,
``4 * n`` (the one-element output is negligible), whichever provider runs. The first call of
each size tunes the kernel; the runner's first (checking) call happens before timing starts.
"""

import torch
from autotune import DEVICE, sum_, sum_torch

BENCHMARKS = [
    {
        "name": "autotune_sum_fp32",
        "x_name": "n",
        "x_vals": [2**k for k in range(12, 29, 2)],
        "tiny_x_vals": [1, 1025, 4097],
        "providers": ["triton", "torch"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name: str, provider: str, x: int, device=None) -> dict:
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    a = torch.randn(x, device=device, dtype=torch.float32)
    fns = {"triton": lambda: sum_(a), "torch": lambda: a.sum().reshape(1)}
    return {
        "fn": fns[provider],
        "ref": lambda: sum_torch(a),
        "work": x * a.element_size(),  # bytes read
        "rtol": 1e-4,
        "atol": 1e-3 * x**0.5,  # fp32 rounding of a sum of x unit normals grows like sqrt(x)
    }
