"""int64 offsets benchmark: what is timed for examples/int64_offsets.py.

What int64 offsets cost on tensors that do not need them: the same kernel with either switch, on
int8 data (the cheapest bytes, so index arithmetic shows most). Bytes moved: read x, write y,
``2 * n * element size``.
"""

import torch
from int64_offsets import DEVICE, add_one, add_one_torch

BENCHMARKS = [
    {
        "name": "int64_offsets_add_one_int8",
        "x_name": "n",
        "x_vals": [2**k for k in range(16, 31, 2)],
        "tiny_x_vals": [1, 1025],
        "providers": ["triton_int32", "triton_int64", "torch"],
        "metric": "GB/s",
        "args": {},
    },
]

# The fastest of 1024, 4096 and 16384 for int8 at n = 2**28 on the H200 (measured).
BENCH_BLOCK = 4096


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    a = torch.randint(-100, 100, (x,), dtype=torch.int8, device=device)
    fns = {
        "triton_int32": lambda: add_one(a, offsets="int32", block_size=BENCH_BLOCK),
        "triton_int64": lambda: add_one(a, offsets="int64", block_size=BENCH_BLOCK),
        "torch": lambda: add_one_torch(a),
    }
    return {
        "fn": fns[provider],
        "ref": lambda: add_one_torch(a),
        "work": 2 * x * a.element_size(),  # bytes: read x, write y
        "rtol": 0.0,
        "atol": 0.0,
    }
