"""Tile-compute benchmark: what is timed for examples/tile_compute.py.

A batch of S x S fp32 matrices, ``2**31 / S**3`` of them, so that every point does the same 4.3 GFLOP
(the work counted: ``2 * batch * S**3`` flops, one multiply and one add per (batch, m, n, k)): the
three input precisions; tf32 with one and with three stages instead of ``bmm_config``'s choice (one
up to K = 128, two above); tf32 with B stored K-contiguous (a transposed view of the same values);
tf32 with ``num_ctas=2``; against cuBLAS (``torch.bmm``) with tf32 off and on, and static
``torch.compile`` of the fp32 ``torch.bmm``.
"""

import torch
from tile_compute import DEVICE, bmm, bmm_torch

from benchmarks.cases.peers import compiled_peer

BENCHMARKS = [
    {
        "name": "tile_compute_bmm_fp32",
        "x_name": "S",
        "x_vals": [32, 64, 128, 256, 512],
        "tiny_x_vals": [16, 20],
        "providers": ["triton-ieee", "triton-tf32", "triton-tf32x3", "triton-tf32-1stage", "triton-tf32-3stages",
                      "triton-tf32-kmajor", "triton-tf32-2ctas", "torch", "torch-tf32", "torch.compile"],
        "metric": "TFLOP/s",
        "args": {},
    },
]


def _with_tf32(fn):
    """Call fn with cuBLAS allowed to use tf32 for fp32 matmuls, and put the setting back."""
    def call():
        previous = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high")  # "high": tf32 allowed
        try:
            return fn()
        finally:
            torch.set_float32_matmul_precision(previous)
    return call


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    batch = max(1, 2**31 // x**3)
    if torch.device(device).type != "cuda":
        batch = 2  # the interpreter only checks the code path: keep it quick
    a = torch.randn(batch, x, x, device=device)
    b = torch.randn(batch, x, x, device=device) / x**0.5
    b_kmajor = b.transpose(1, 2).contiguous().transpose(1, 2)  # the same matrix, K the contiguous dimension
    fns = {
        "triton-ieee": lambda: bmm(a, b, input_precision="ieee"),
        "triton-tf32": lambda: bmm(a, b, input_precision="tf32"),
        "triton-tf32x3": lambda: bmm(a, b, input_precision="tf32x3"),
        "triton-tf32-1stage": lambda: bmm(a, b, input_precision="tf32", num_stages=1),
        "triton-tf32-3stages": lambda: bmm(a, b, input_precision="tf32", num_stages=3),
        "triton-tf32-kmajor": lambda: bmm(a, b_kmajor, input_precision="tf32"),
        "triton-tf32-2ctas": lambda: bmm(a, b, input_precision="tf32", num_ctas=2),
        "torch": lambda: bmm_torch(a, b),
        "torch-tf32": _with_tf32(lambda: bmm_torch(a, b)),
    }
    tf32 = "tf32" in provider and "tf32x3" not in provider
    tol = 1e-2 if tf32 else 1e-4  # tf32 keeps 10 mantissa bits of each input
    return {
        **(compiled_peer(bmm_torch, a, b) if provider == "torch.compile" else {"fn": fns[provider]}),
        "ref": lambda: bmm_torch(a.double(), b.double()).float(),
        "work": 2.0 * batch * x**3,  # flops: one multiply and one add per (batch, m, n, k)
        "rtol": tol,
        "atol": tol,
    }
