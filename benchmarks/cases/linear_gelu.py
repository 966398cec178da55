"""Linear + bias + GELU benchmark: what is timed for examples/linear_gelu.py.

Three providers on the same inputs: eager PyTorch (cuBLAS matmul, then add, then GELU),
``torch.compile`` of that same function, and the fused kernel. The work counted is the matmul's
``2 * M * N * K`` flops (the epilogue is O(M * N)).
"""

import torch
from linear_gelu import DEVICE, linear_gelu, linear_gelu_reference, linear_gelu_torch

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": f"linear_gelu_{tag}",
        "x_name": "M x N x K",
        "x_vals": ["4096x4096x4096", "8192x8192x2048"],
        "tiny_x_vals": ["127x136x40"] if tag == "fp16" else [],  # bf16 is wrong in the interpreter
        "providers": ["torch", "torch.compile", "triton"],
        "metric": "TFLOP/s",
        "args": {},
    }
    for tag in ("fp16", "bf16")
]


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    M, N, K = (int(v) for v in str(x).split("x"))
    dtype = torch.bfloat16 if name.endswith("_bf16") else torch.float16
    a = torch.randn(M, K, device=device, dtype=dtype)
    w = torch.randn(K, N, device=device, dtype=dtype) / K**0.5
    bias = torch.randn(N, device=device, dtype=dtype)
    fns = {
        "torch": lambda: linear_gelu_torch(a, w, bias),
        "triton": lambda: linear_gelu(a, w, bias),
    }
    peer = compiled_peer(linear_gelu_torch, a, w, bias) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: linear_gelu_reference(a, w, bias),
        "work": 2.0 * M * N * K,  # flops of the matmul; the epilogue is O(M * N)
        "rtol": 2e-2 if dtype == torch.bfloat16 else 1e-2,  # 8 mantissa bits against fp16's 11
        "atol": 2e-2 if dtype == torch.bfloat16 else 1e-2,
    }
