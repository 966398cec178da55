"""pytest's set-up for tests/: a fresh seed per test, the random order, big GPU tests one at a time.

Nothing imports this file: what tests share is in support.py (imported first here, so that
TRITON_INTERPRET is set before anything imports triton).
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
import torch
from support import ON_GPU, SHUFFLE_ENV, shuffle_items, shuffle_seed


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """A different seed per test, the same on every run (crc32, not the salted hash()):
    fresh random data, never zeros, and a failure that reproduces."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


# ----------------------------------------------------------------------------- random order
# SHUFFLE_ENV, shuffle_seed and shuffle_items live in support.py (tests/test_verified.py tests them).


def pytest_addoption(parser):
    parser.addoption(
        "--shuffle-seed", action="store", default=None, metavar="N",
        help=f"run the tests in an order shuffled with integer seed N (default: ${SHUFFLE_ENV}, else file order)",
    )


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
