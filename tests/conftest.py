"""pytest's set-up for tests/: a fresh seed per test, the random order's seed, big GPU tests one at a time.

Nothing imports this file: what tests share is in support.py (imported first here, so that
TRITON_INTERPRET is set before anything imports triton).
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
import torch
from support import ON_GPU


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """A different seed per test, the same on every run (crc32, not the salted hash()):
    fresh random data, never zeros, and a failure that reproduces."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


# ----------------------------------------------------------------------------- random order
# pytest-randomly runs the tests in a random order and prints its seed in the header
# ("Using --randomly-seed=N"); `pytest -p randomly --randomly-seed N` reruns one order and
# `-p no:randomly` runs them in file order. The seed is printed again at the end, where a
# long log is read first.


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None and config.pluginmanager.hasplugin("randomly"):
        terminalreporter.write_line(f"random order: --randomly-seed={seed} (rerun this order with it)")


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
