"""Launch-grids benchmark: what is timed for examples/launch_grids.py.

The 2-D launch (``add_row_bias``, ``x + bias[None, :]``) against torch's broadcast add, 4096
rows, fp32. Bytes moved: x read, the bias row read, out written, ``(2 * rows * N + N) * 4``.
"""

import torch
from launch_grids import DEVICE, add_row_bias, add_row_bias_torch

BENCHMARKS = [
    {
        "name": "row_bias_2d_fp32",
        "x_name": "N",
        "x_vals": [256, 1024, 4096, 16384],
        "tiny_x_vals": [17, 130],
        "providers": ["triton", "torch"],
        "metric": "GB/s",
        "args": {"rows": 4096},
    },
]


def bench_case(name, provider, x, device=None, rows=4096):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    if device.type == "cpu":
        rows = min(rows, 33)  # the interpreter is slow: the CI run only checks correctness
    a = torch.randn(rows, x, device=device, dtype=torch.float32)
    bias = torch.randn(x, device=device, dtype=torch.float32)
    fns = {
        "triton": lambda: add_row_bias(a, bias),
        "torch": lambda: add_row_bias_torch(a, bias),
    }
    return {
        "fn": fns[provider],
        "ref": lambda: add_row_bias_torch(a, bias),
        "work": (2 * rows * x + x) * a.element_size(),  # bytes: read x and bias, write out
        "rtol": 0.0,
        "atol": 0.0,
    }
