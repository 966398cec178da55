"""Program ids benchmark: what is timed for examples/program_ids.py.

``whoami_kernel`` is a store-only kernel (one int32 per element), launched with 1, 4 and 16
warps per program and 1024 elements per program: ``num_warps`` is a launch option that changes
how many threads share one tile. Bytes moved: the owner map written once, ``4 * n``.
"""

import torch
import triton
from program_ids import DEVICE, whoami_kernel, whoami_torch

BENCHMARKS = [
    {
        "name": "whoami_num_warps",
        "x_name": "n",
        "x_vals": [2**16, 2**20, 2**24, 2**27],
        "tiny_x_vals": [17, 1025],
        "providers": ["triton-1warp", "triton-4warps", "triton-16warps"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """The launch for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    warps = {"triton-1warp": 1, "triton-4warps": 4, "triton-16warps": 16}[provider]
    owner = torch.empty(x, device=device, dtype=torch.int32)
    count = torch.empty(1, device=device, dtype=torch.int32)

    def fn():  # the bare launch: no .item(), so no host sync inside the timed call
        whoami_kernel[(triton.cdiv(x, 1024),)](owner, count, x, BLOCK_SIZE=1024, num_warps=warps)
        return owner

    return {
        "fn": fn,
        "ref": lambda: whoami_torch(x, 1024, device=device)[0],
        "work": 4 * x,  # bytes: one int32 written per element
        "rtol": 0.0,
        "atol": 0.0,
    }
