"""Persistent rows benchmark: what is timed for examples/persistent_rows.py.

The same 2^26 fp32 elements (256 MB, well past the 60 MB L2 of an H200) cut into rows of different
lengths: from millions of 32-element rows to 2048 rows of 32768. Bytes moved: read x, write y, and
the weight once (``2 * M * N * 4 + N * 4``), whichever provider runs.
"""

import torch
from persistent_rows import DEVICE, rms_norm_persistent, rms_norm_rows, rms_norm_torch

from benchmarks.cases.peers import compiled_peer

TOTAL = 2**26

BENCHMARKS = [
    {
        "name": "persistent_rows_fp32",
        "x_name": "N",
        "x_vals": [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
        "tiny_x_vals": [32, 1024],
        "providers": ["triton", "triton-persistent", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    total = TOTAL if device.type == "cuda" else 2**12  # tiny runs under the interpreter
    M, N = max(1, total // x), x
    a = torch.randn(M, N, device=device, dtype=torch.float32)
    w = torch.randn(N, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: rms_norm_rows(a, w),
        "triton-persistent": lambda: rms_norm_persistent(a, w),
        "torch": lambda: torch.nn.functional.rms_norm(a, (N,), w, eps=1e-6),
    }
    peer = compiled_peer(rms_norm_torch, a, w) if provider == "torch.compile" else {"fn": fns[provider]}
    return {**peer, "ref": lambda: rms_norm_torch(a, w), "work": 2 * M * N * 4 + N * 4, "rtol": 1e-5, "atol": 1e-5}
