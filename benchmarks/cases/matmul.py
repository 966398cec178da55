"""Matmul benchmark: what is timed for examples/matmul.py.

Every provider runs against cuBLAS (``torch.matmul``): the pointer kernel in row-major and in
grouped program order, and the descriptor (TMA) kernel. ``scripts/bench.py`` times each with
``do_bench`` and with CUDA graphs, which take the host-side launch cost out of small problems.
Work: ``2 * M * N * K`` flops (one multiply and one add per (m, n, k)), whichever provider runs.
"""

import torch
from matmul import DEVICE, matmul, matmul_torch

PROVIDERS = ["cublas", "triton-rowmajor", "triton-grouped", "triton-tma"]
_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def _square(tag: str) -> dict:
    """S x S x S products in ``tag`` (fp16 or bf16)."""
    return {
        "name": f"matmul_{tag}",
        "x_name": "S",
        "x_vals": [1024, 2048, 4096, 8192],
        "tiny_x_vals": [40, 136] if tag == "fp16" else [],  # bf16 is wrong in the interpreter
        "providers": PROVIDERS,
        "metric": "TFLOP/s",
        "args": {"dtype": tag},
    }


def _ragged(tag: str) -> dict:
    """One product whose M, N and K are not multiples of a tile."""
    return {
        "name": f"matmul_ragged_{tag}",
        "x_name": "M x N x K",
        "x_vals": ["4000x3000x2000"],
        "tiny_x_vals": ["127x136x40"] if tag == "fp16" else [],
        "providers": PROVIDERS,
        "metric": "TFLOP/s",
        "args": {"dtype": tag},
    }


BENCHMARKS = [_square(tag) for tag in ("fp16", "bf16")] + [_ragged(tag) for tag in ("fp16", "bf16")]


def _parse_shape(x) -> tuple[int, int, int]:
    """S for a square point, ``"MxNxK"`` for a ragged one."""
    if isinstance(x, int):
        return x, x, x
    m, n, k = (int(v) for v in str(x).split("x"))
    return m, n, k


def bench_case(name: str, provider: str, x, device=None, dtype: str = "fp16") -> dict:
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    M, N, K = _parse_shape(x)
    a = torch.randn(M, K, device=device, dtype=_DTYPES[dtype])
    b = torch.randn(K, N, device=device, dtype=_DTYPES[dtype]) / K**0.5
    fns = {
        "cublas": lambda: torch.matmul(a, b),
        "triton-rowmajor": lambda: matmul(a, b, group_m=1, kernel="pointer"),
        "triton-grouped": lambda: matmul(a, b, group_m=8, kernel="pointer"),
        "triton-tma": lambda: matmul(a, b, group_m=8, kernel="tma"),
    }
    tol = 2e-2 if dtype == "bf16" else 1e-2
    return {
        "fn": fns[provider],
        "ref": lambda: matmul_torch(a, b),
        "work": 2.0 * M * N * K,  # flops: one multiply and one add per (m, n, k)
        "rtol": tol,
        "atol": tol,
    }
