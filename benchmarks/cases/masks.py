"""Masks benchmark: what is timed for examples/masks.py.

Bias + ReLU over 4096 rows, with column counts on and off the powers of two, to measure what a
ragged last tile costs (docs/guide/masks.md reads the result). Bytes moved: x read, b read and
y written once, ``(2 * M * N + N) * 4`` (fp32), whichever provider runs.
"""

import torch
from masks import DEVICE, bias_relu, bias_relu_torch

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": "masks_bias_relu_fp32",
        "x_name": "N",
        "x_vals": [1000, 1024, 3000, 4096, 6000, 8192, 12_000, 16_384],
        "tiny_x_vals": [1, 17, 1025],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {"M": 4096},
    },
]


def bench_case(name, provider, x, device=None, M=4096):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    if torch.device(device).type != "cuda":
        M = min(M, 64)  # the interpreter only checks the code path: keep it quick
    a = torch.randn(M, x, device=device, dtype=torch.float32)
    b = torch.randn(x, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: bias_relu(a, b),
        "torch": lambda: bias_relu_torch(a, b),
    }
    peer = compiled_peer(bias_relu_torch, a, b) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: bias_relu_torch(a, b),
        "work": (2 * M * x + x) * a.element_size(),  # bytes: read x and b, write y
        "rtol": 0.0,
        "atol": 0.0,
    }
