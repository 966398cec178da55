"""Scan benchmark: what is timed for examples/scan.py.

Rows of ``N`` with ``M * N = 2**24`` fp32 elements. Bytes moved: cumsum reads x and writes y
(``2 * M * N * 4``); the linear recurrence reads a and x and writes h (``3 * M * N * 4``).
"""

import torch
from scan import DEVICE, cumsum, cumsum_torch, linear_scan, linear_scan_torch

from benchmarks.cases.peers import compiled_peer

SCAN_NS = [256, 1024, 4096, 16384, 65536]
BENCHMARKS = [
    {
        "name": "cumsum_fp32",
        "x_name": "N",
        "x_vals": SCAN_NS,
        "tiny_x_vals": [17, 300],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {"elements": 2**24},
    },
    {
        "name": "linear_scan_fp32",
        "x_name": "N",
        "x_vals": SCAN_NS,
        "tiny_x_vals": [17, 300],
        "providers": ["triton"],
        "metric": "GB/s",
        "args": {"elements": 2**24},
    },
]


def bench_case(name, provider, x, device=None, elements=2**24):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    m = max(1, elements // x)
    if device.type != "cuda":
        m = min(m, 4)  # the interpreter's tiny run checks the code path, not the size
    xs = torch.randn(m, x, device=device)
    if name == "cumsum_fp32":
        fns = {
            "triton": lambda: cumsum(xs),
            "torch": lambda: torch.cumsum(xs, dim=-1),
        }
        peer = compiled_peer(_torch_cumsum, xs) if provider == "torch.compile" else {"fn": fns[provider]}
        return {**peer, "ref": lambda: cumsum_torch(xs), "work": 2 * xs.numel() * 4,
                "rtol": 1e-4, "atol": 1e-3 * x**0.5}
    a = 0.5 + 0.5 * torch.rand(m, x, device=device)
    # the reference loops over columns (N small launches): slow, but run once per point
    return {"fn": lambda: linear_scan(a, xs), "ref": lambda: linear_scan_torch(a, xs),
            "work": 3 * xs.numel() * 4, "rtol": 1e-4, "atol": 1e-4}


def _torch_cumsum(t: torch.Tensor) -> torch.Tensor:
    """What the torch.compile peer compiles: the same call as the "torch" provider."""
    return torch.cumsum(t, dim=-1)
