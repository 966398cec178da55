"""Debugging benchmark: what is timed for examples/debugging.py.

The row sum of a 4096-row fp32 matrix (8 rows in the interpreter), as a GB/s bench. Bytes
moved: x read once and one fp32 sum written per row.
"""

import torch
from debugging import DEVICE, row_sum, row_sum_torch

BENCHMARKS = [
    {
        "name": "row_sum_fp32",
        "x_name": "N",
        "x_vals": [256, 1024, 4096, 16384],
        "tiny_x_vals": [17, 100],
        "providers": ["triton", "torch"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    rows = 4096 if device.type == "cuda" else 8
    t = torch.randn(rows, x, device=device)
    fns = {"triton": lambda: row_sum(t), "torch": lambda: row_sum_torch(t)}
    return {
        "fn": fns[provider],
        "ref": lambda: row_sum_torch(t.double()).float(),
        "work": t.numel() * t.element_size() + rows * t.element_size(),  # bytes: read x, write sums
        "rtol": 1e-4,
        "atol": 1e-3,
    }
