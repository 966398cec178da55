"""Torch operator benchmark: what is timed for examples/torch_op.py.

What one SiLU forward call costs on the host, in microseconds per call (``metric: "us"``, no
bytes or flops: ``work`` is 0): the bare kernel launch, the ``triton_op`` and the opaque
``custom_op``, ``torch.compile(fullgraph=True)`` of the ``triton_op``, and torch's own SiLU.
"""

import torch
import triton
from torch_op import BLOCK_SIZE, DEVICE, silu, silu_fwd_kernel, silu_opaque, silu_torch

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": "silu_op_overhead",
        "x_name": "n",
        "x_vals": [2**10, 2**16, 2**20],
        "tiny_x_vals": [17],
        "providers": ["raw-launch", "triton-op", "custom-op", "torch.compile", "torch"],
        "metric": "us",
        "args": {},
    },
]


def _silu_op(t: torch.Tensor) -> torch.Tensor:
    """What the torch.compile peer compiles (fullgraph=True): a call of the triton_op."""
    return silu(t)


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    t = torch.randn(x, device=device)
    out = torch.empty_like(t)
    grid = (triton.cdiv(x, BLOCK_SIZE),)

    def raw_launch():
        silu_fwd_kernel[grid](t, out, x, BLOCK_SIZE=BLOCK_SIZE)
        return out

    fns = {
        "raw-launch": raw_launch,
        "triton-op": lambda: silu(t),
        "custom-op": lambda: silu_opaque(t),
        "torch": lambda: silu_torch(t),
    }
    peer = compiled_peer(_silu_op, t, fullgraph=True) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: silu_torch(t.double()).float(),
        "work": 0.0,  # the metric is time per call
        "rtol": 1e-5,
        "atol": 1e-5,
    }
