"""Shared test set-up: the examples are importable, the device is picked at run time.

On a machine without CUDA, TRITON_INTERPRET=1 is set before anything imports
triton, so every kernel runs in Triton's CPU interpreter.
"""

from __future__ import annotations

import os
import random
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


# ----------------------------------------------------------------------------- random order
# `pytest --shuffle-seed N` (or PYTEST_SHUFFLE_SEED=N) runs the collected tests in an
# order shuffled by that seed. The same seed gives the same order in every process, so
# pytest-xdist's workers (-n 8), which each collect and must agree, see one order.
# scripts/gpu_check.py runs the whole suite this way on a GPU to expose tests that only
# pass after (or before) another one. No seed: the usual file order.
SHUFFLE_ENV = "PYTEST_SHUFFLE_SEED"


def pytest_addoption(parser):
    parser.addoption(
        "--shuffle-seed", action="store", default=None, metavar="N",
        help=f"run the tests in an order shuffled with integer seed N (default: ${SHUFFLE_ENV}, else file order)",
    )


def shuffle_seed(config) -> int | None:
    raw = config.getoption("--shuffle-seed", default=None)
    if raw is None:
        raw = os.environ.get(SHUFFLE_ENV) or None
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(f"--shuffle-seed / {SHUFFLE_ENV} must be an integer, got {raw!r}") from None


def shuffle_items(items: list, seed: int) -> None:
    """Shuffle in place; depends only on the seed and the collected order."""
    random.Random(seed).shuffle(items)


def pytest_report_header(config):
    seed = shuffle_seed(config)
    if seed is not None:
        return f"shuffle seed: {seed} (tests run in random order; rerun this order with --shuffle-seed {seed})"


@pytest.hookimpl(trylast=True)  # after any other plugin has selected and ordered the items
def pytest_collection_modifyitems(session, config, items):
    seed = shuffle_seed(config)
    if seed is not None:
        shuffle_items(items, seed)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    seed = shuffle_seed(config)
    if seed is not None:
        terminalreporter.write_line(f"shuffle seed: {seed} (rerun this order with --shuffle-seed {seed})")


# --------------------------------------------------------------------------- big GPU tests, one at a time
# Tests that allocate gigabytes (past 2**31 elements) would run out of GPU memory if several xdist
# workers ran them at once. A file lock on the machine lets one such test run at a time, and the
# worker hands its cached blocks back to the driver before it releases the lock.
BIG_GPU_NAMES = ("2_31", "2_to_31", "_large")
BIG_GPU_LOCK = Path(os.environ.get("BIG_GPU_LOCK", "/tmp/triton-in-tiles-big-gpu.lock"))


def _is_big_gpu_test(item) -> bool:
    name = getattr(item, "originalname", item.name)
    return ON_GPU and (item.get_closest_marker("big_gpu") is not None or any(p in name for p in BIG_GPU_NAMES))


def pytest_configure(config):
    config.addinivalue_line("markers", "big_gpu: allocates gigabytes on the GPU; runs alone across workers")


@pytest.fixture(autouse=True)
def _one_big_gpu_test_at_a_time(request):
    if not _is_big_gpu_test(request.node):
        yield
        return
    import fcntl

    with open(BIG_GPU_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        torch.cuda.empty_cache()
        try:
            yield
        finally:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            fcntl.flock(lock, fcntl.LOCK_UN)
