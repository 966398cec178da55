"""Vector add benchmark: what is timed for examples/vector_add.py.

``scripts/bench.py`` checks each provider's output against the reference before timing it, and
refuses to record a wrong kernel. Bytes moved: two reads and one write, ``3 * n * element size``.
"""

import torch
from vector_add import DEVICE, add, add_torch

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": "vector_add_fp32",
        "x_name": "n",
        "x_vals": [2**k for k in range(12, 29, 2)],
        "tiny_x_vals": [1, 1025, 4097],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    a = torch.randn(x, device=device, dtype=torch.float32)
    b = torch.randn(x, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: add(a, b),
        "torch": lambda: add_torch(a, b),
    }
    peer = compiled_peer(add_torch, a, b) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: add_torch(a, b),
        "work": 3 * x * a.element_size(),  # bytes: read x, read y, write z
        "rtol": 0.0,
        "atol": 0.0,
    }
