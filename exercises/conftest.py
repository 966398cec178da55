"""Set-up for the exercises: the device, the interpreter, and which file a test checks.

On a machine without CUDA, TRITON_INTERPRET=1 is set before anything imports triton,
so every kernel runs in Triton's CPU interpreter on CPU tensors.

Each test checks the module named by the environment variable EXERCISE_IMPL, loaded
from the test's own folder: "starter" (the default: your work) or "solution" (what CI
checks, with scripts/check_exercises.py).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import zlib
from pathlib import Path

import pytest
import torch

ON_GPU = torch.cuda.is_available()
if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported anywhere

IMPLS = ("starter", "solution")


def impl_name() -> str:
    name = os.environ.get("EXERCISE_IMPL", "starter")
    if name not in IMPLS:
        raise pytest.UsageError(f"EXERCISE_IMPL must be one of {IMPLS}, got {name!r}")
    return name


def load_impl(folder: Path):
    """Import `<folder>/<EXERCISE_IMPL>.py` under a name of its own (every folder has a starter.py)."""
    name = impl_name()
    path = folder / f"{name}.py"
    module_name = f"exercise_{folder.name}_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # @triton.jit reads the kernel's source through the module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


@pytest.fixture(scope="module")
def impl(request):
    """The implementation under test: starter.py or solution.py next to the test file."""
    return load_impl(Path(request.module.__file__).resolve().parent)


@pytest.fixture
def device() -> torch.device:
    return torch.device("cuda" if ON_GPU else "cpu")


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """A different seed per test, the same on every run: a failure reproduces."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


def pytest_report_header(config):
    return f"exercises: testing {impl_name()}.py (EXERCISE_IMPL), device {'cuda' if ON_GPU else 'cpu (interpreter)'}"
