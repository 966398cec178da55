"""Failure-modes benchmark: what is timed for examples/failure_modes.py.

What the int64 fix costs: a fill with int32 offsets against the same fill with int64 offsets,
below 2^31 elements where both are correct. Bytes moved: 1 byte written per element (int8).
"""

import torch
from failure_modes import DEVICE, fill

BENCHMARKS = [
    {
        "name": "failure_modes_fill_int8",
        "x_name": "n",
        "x_vals": [2**k for k in range(16, 31, 2)],
        "tiny_x_vals": [1, 1025, 4097],
        "providers": ["triton-int64", "triton-int32", "torch"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    y = torch.empty(x, device=device, dtype=torch.int8)
    fns = {
        "triton-int64": lambda: fill(y, 7, int64_offsets=True),
        "triton-int32": lambda: fill(y, 7, int64_offsets=False),
        "torch": lambda: y.fill_(7),
    }
    return {
        "fn": fns[provider],
        "ref": lambda: torch.full((x,), 7, device=device, dtype=torch.int8),
        "work": x * y.element_size(),  # bytes written
        "rtol": 0.0,
        "atol": 0.0,
    }
