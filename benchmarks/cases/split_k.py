"""Split-K matmul benchmark: what is timed for examples/split_k.py.

Small outputs (M = N = 256) and a long K: the case split-K is for. ``triton`` picks its number
of K slices from the shape, ``triton-nosplit`` is the same kernel with one slice, ``cublas`` is
``torch.matmul`` (fp16 out, fp32 accumulation). Work: ``2 * M * N * K`` flops, whichever
provider runs.
"""

import torch
from split_k import DEVICE, matmul_split_k, matmul_split_k_torch

BENCHMARKS = [
    {
        "name": "split_k_fp16",
        "x_name": "K",
        "x_vals": [1024, 2048, 4096, 8192, 16384, 32768, 65536],
        "tiny_x_vals": [64, 300],
        "providers": ["triton", "triton-nosplit", "cublas"],
        "metric": "TFLOP/s",
        "args": {"m": 256, "n": 256},
    },
]


def bench_case(name: str, provider: str, x: int, device=None, m=256, n=256) -> dict:
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    dtype = torch.float16 if device.type == "cuda" else torch.float32  # fp16 dot: GPU only
    a = torch.randn(m, x, device=device, dtype=dtype)
    b = torch.randn(x, n, device=device, dtype=dtype)
    fns = {
        "triton": lambda: matmul_split_k(a, b),
        "triton-nosplit": lambda: matmul_split_k(a, b, split_k=1),
        "cublas": lambda: a @ b,
    }
    return {
        "fn": fns[provider],
        "ref": lambda: matmul_split_k_torch(a, b),
        "work": 2.0 * m * n * x,  # flops: one multiply and one add per (m, n, k)
        "rtol": 2e-2,
        "atol": 1.0,  # cuBLAS may reduce in fp16 and rounds C to fp16
    }
