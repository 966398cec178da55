"""Tensor descriptors benchmark: what is timed for examples/tensor_descriptors.py.

The same square fp32 transpose as examples/strides.py, so the two plots compare pointer tiles
with descriptors. Bytes moved: read x, write y, ``2 * S * S * element size``.
"""

import torch
from tensor_descriptors import DEVICE, transpose, transpose_torch

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": "descriptors_transpose_fp32",
        "x_name": "S",
        "x_vals": [1024, 2048, 3000, 4096, 6000, 8192, 16_384],
        "tiny_x_vals": [4, 36, 132],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {},
    },
]

# The fastest of four block shapes for an 8192 x 8192 transpose on the H200 (measured).
TUNED_BLOCKS = {"block_m": 128, "block_n": 64}


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    a = torch.randn(x, x, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: transpose(a, **TUNED_BLOCKS),
        "torch": lambda: transpose_torch(a),
    }
    peer = compiled_peer(transpose_torch, a) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: transpose_torch(a),
        "work": 2 * x * x * a.element_size(),  # bytes: read x, write y
        "rtol": 0.0,
        "atol": 0.0,
    }
