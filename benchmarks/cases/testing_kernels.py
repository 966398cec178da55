"""relu(x @ w) benchmark: what is timed for examples/testing_kernels.py.

Square fp16 inputs (fp32 under the interpreter), fp32 accumulation, against ``torch.relu(a @ b)``.
Work: ``2 * S**3`` flops, two per multiply-add, whichever provider runs. The reference for the
output check is the fp32 product of the same inputs, rounded to their dtype.
"""

import torch
from testing_kernels import DEVICE, matmul_relu, tolerance

BENCHMARKS = [
    {
        "name": "matmul_relu_fp16",
        "x_name": "S",
        "x_vals": [512, 1024, 2048, 4096],
        "tiny_x_vals": [17, 64],
        "providers": ["triton", "torch"],
        "metric": "TFLOP/s",
        "args": {},
    },
]


def bench_case(name: str, provider: str, x: int, device=None) -> dict:
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    a = torch.randn(x, x, device=device, dtype=dtype)
    b = torch.randn(x, x, device=device, dtype=dtype)
    block = (128, 128, 64) if device.type == "cuda" else (64, 64, 32)
    fns = {
        "triton": lambda: matmul_relu(a, b, block=block),
        "torch": lambda: torch.relu(a @ b),
    }
    tol = tolerance(dtype, device, x)
    return {
        "fn": fns[provider],
        "ref": lambda: torch.relu(a.float() @ b.float()).to(dtype),
        "work": 2.0 * x * x * x,  # flops: one multiply and one add per (m, n, k)
        "rtol": tol["rtol"],
        "atol": tol["atol"],
    }
