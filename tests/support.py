"""What the tests share and import by name (`from support import DEVICE, tolerances`).

The device is picked at run time: on a machine without CUDA, TRITON_INTERPRET=1 is set
before anything imports triton, so every kernel runs in Triton's CPU interpreter. The
examples are importable as modules (`pythonpath` in pyproject.toml); pytest's fixtures and
hooks live in conftest.py, which nothing imports.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent

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


def timer_call_order(example, monkeypatch) -> list[str]:
    """What an example's `autotune_timer` calls, in order, with torch.cuda.synchronize and
    triton.testing.do_bench_cudagraph recorded instead of run: the timer must finish the caller's
    queued work before do_bench_cudagraph warms up on its side stream (run20, run21)."""
    calls = []
    monkeypatch.setattr(example.torch.cuda, "synchronize", lambda *args, **kwargs: calls.append("synchronize"))
    monkeypatch.setattr(example.triton.testing, "do_bench_cudagraph",
                        lambda fn, **kwargs: calls.append("do_bench_cudagraph") or [1.0, 1.0, 1.0])
    example.autotune_timer(lambda: None, (0.5, 0.2, 0.8))
    return calls


def first_calls_on_a_busy_stream(dtype: torch.dtype, call_and_reference) -> None:
    """A first call autotunes. With the caller's stream still busy, the reference computed just before it
    (its temporaries freed, the kernels that read them still queued) and the new output can share memory:
    the autotuner's side-stream warm-up must not write the output before that work is done (run20, run21).
    `call_and_reference(m)` makes operands with M = m rows, computes the reference, then calls the
    launcher, and returns (output, reference); a new M each time, so each call autotunes."""
    busy = torch.randn(8192, 8192, device=DEVICE, dtype=dtype)
    for m in range(771, 787, 2):  # odd row counts
        for _ in range(10):
            busy @ busy  # milliseconds of queued work on the caller's stream
        out, ref = call_and_reference(m)
        torch.testing.assert_close(out, ref, **tolerances(dtype), msg=lambda msg, m=m: f"M={m}: {msg}")
