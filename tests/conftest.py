"""Shared test set-up: the examples are importable, the device is picked at run time.

On a machine without CUDA, TRITON_INTERPRET=1 is set before anything imports
triton, so every kernel runs in Triton's CPU interpreter.
"""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

ON_GPU = torch.cuda.is_available()
if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = torch.device("cuda" if ON_GPU else "cpu")

# Sizes that are not multiples of any power-of-two block: they exercise every mask.
ODD_SIZES = [1, 17, 127, 781, 1023, 1025]


def tolerances(dtype: torch.dtype, device: torch.device = DEVICE, *, matmul: bool = False) -> dict:
    """(rtol, atol) for comparing a kernel with a float64/float32 reference.

    fp32 matmuls run as tf32 on a GPU (10-bit mantissa) but in true fp32 in the
    interpreter; half types keep 10 (fp16) or 7 (bf16) mantissa bits.
    """
    if dtype == torch.float32:
        if matmul and device.type == "cuda":
            return {"rtol": 1e-2, "atol": 1e-2}
        return {"rtol": 1e-5, "atol": 1e-5} if not matmul else {"rtol": 1e-4, "atol": 1e-4}
    if dtype == torch.float16:
        return {"rtol": 1e-2, "atol": 1e-2}
    if dtype == torch.bfloat16:
        return {"rtol": 2e-2, "atol": 2e-2}
    raise ValueError(f"no tolerance for {dtype}")


requires_gpu = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU; the interpreter cannot show this")
# bf16 is wrong in the interpreter (triton issues 4972, 11584): test it on the GPU only.
FLOAT_DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """A different seed per test, the same on every run (crc32, not the salted hash()):
    fresh random data, never zeros, and a failure that reproduces."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))
