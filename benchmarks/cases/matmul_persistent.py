"""Persistent matmul benchmark: what is timed for examples/matmul_persistent.py.

Square sizes and one ragged shape, in fp16 and bf16, each against cuBLAS (``torch.matmul``).
Timed twice: ``do_bench`` (it includes the host-side launch cost when the kernel is short) and
a CUDA graph (the kernel alone). Work: ``2 * M * N * K`` flops, whichever provider runs. bf16 is
wrong under the interpreter, so the bf16 benches have no tiny sizes.
"""

import torch
from matmul_persistent import DEVICE, matmul_persistent, matmul_torch

PROVIDERS = ["cublas", "triton", "triton-persistent", "triton-persistent-tma"]
_VARIANT_OF = {"triton": "tiles", "triton-persistent": "persistent", "triton-persistent-tma": "tma"}


def _square(tag: str) -> dict:
    """S x S x S products in ``tag`` (fp16 or bf16)."""
    return {
        "name": f"matmul_persistent_{tag}",
        "x_name": "S",
        "x_vals": [1024, 2048, 4096, 8192],
        "tiny_x_vals": [40, 136] if tag == "fp16" else [],  # aligned: the TMA provider needs it
        "providers": PROVIDERS,
        "metric": "TFLOP/s",
        "args": {"dtype": tag},
    }


def _ragged(tag: str) -> dict:
    """The ragged 4000 x 3000 x 2000 product (no dimension a multiple of 128) in ``tag``."""
    return {
        "name": f"matmul_persistent_ragged_{tag}",
        "x_name": "M x N x K",
        "x_vals": ["4000x3000x2000"],
        "tiny_x_vals": ["127x248x40"] if tag == "fp16" else [],
        "providers": PROVIDERS,
        "metric": "TFLOP/s",
        "args": {"dtype": tag},
    }


BENCHMARKS = [_square(tag) for tag in ("fp16", "bf16")] + [_ragged(tag) for tag in ("fp16", "bf16")]


def bench_case(name: str, provider: str, x, device=None, dtype: str = "fp16") -> dict:
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    M, N, K = (int(v) for v in x.split("x")) if isinstance(x, str) else (x, x, x)
    a = torch.randn(M, K, device=device, dtype=torch_dtype)
    b = torch.randn(K, N, device=device, dtype=torch_dtype)
    if provider == "cublas":
        fn = lambda: torch.matmul(a, b)  # noqa: E731
    else:
        fn = lambda: matmul_persistent(a, b, variant=_VARIANT_OF[provider])  # noqa: E731
    tol = 2e-2 if dtype == "bf16" else 1e-2
    return {
        "fn": fn,
        "ref": lambda: matmul_torch(a, b),
        "work": 2.0 * M * N * K,  # flops: one multiply and one add per (m, n, k)
        "rtol": tol,
        "atol": tol * max(1.0, K**0.5 / 8),
    }
