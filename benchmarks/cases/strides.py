"""Strides benchmark: what is timed for examples/strides.py.

A transpose of a square fp32 matrix (``transpose``, a copy of ``x.t()``): every element is
read once and written once, ``2 * S * S * 4`` bytes, so it is measured against the copy
ceiling. ``torch`` is ``x.t().contiguous()``.
"""

import torch
from strides import DEVICE, transpose

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": "strides_transpose_fp32",
        "x_name": "S",
        "x_vals": [1024, 2048, 3000, 4096, 6000, 8192, 16_384],
        "tiny_x_vals": [1, 33, 129],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {},
    },
]

# The fastest of five block shapes for an 8192 x 8192 transpose on the H200 (measured).
TUNED_BLOCKS = {"block_m": 64, "block_n": 64}


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    a = torch.randn(x, x, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: transpose(a, **TUNED_BLOCKS),
        "torch": lambda: a.t().contiguous(),
    }
    peer = compiled_peer(_torch_transpose, a) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: a.t().contiguous(),
        "work": 2 * x * x * a.element_size(),  # bytes: read x, write y
        "rtol": 0.0,
        "atol": 0.0,
    }


def _torch_transpose(a: torch.Tensor) -> torch.Tensor:
    """What the torch.compile peer compiles: the same call as the "torch" provider."""
    return a.t().contiguous()
