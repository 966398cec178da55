"""Set-up for the exercises: the device, the interpreter, and which file a test checks.

On a machine without CUDA, TRITON_INTERPRET=1 is set before anything imports triton,
so every kernel runs in Triton's CPU interpreter on CPU tensors.

Each test checks the module named by the environment variable EXERCISE_IMPL, loaded
from the test's own folder: "starter" (the default: your work) or "solution" (what CI
checks, with scripts/check_exercises.py).

Three things make a failure easy to read:

* every output a launcher allocates with `torch.empty` or `torch.empty_like` starts as
  NaN, so an element the kernel never writes reads as "not written", not as old memory;
* test IDs name their parameters: `test_matches_torch[n=1000-float16]`;
* `checking.assert_close` (next to this file) reports the largest error and the first
  wrong index.
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
    """Import `<folder>/<EXERCISE_IMPL>.py` under a name of its own (every folder
    has a starter.py)."""
    name = impl_name()
    path = folder / f"{name}.py"
    module_name = f"exercise_{folder.name}_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # @triton.jit reads the kernel's source through the module
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


@pytest.fixture(scope="module")
def impl(request):
    """The implementation under test: starter.py or solution.py beside the test file."""
    return load_impl(Path(request.module.__file__).resolve().parent)


@pytest.fixture
def device() -> torch.device:
    return torch.device("cuda" if ON_GPU else "cpu")


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """A different seed per test, the same on every run: a failure reproduces."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


_EMPTY, _EMPTY_LIKE = torch.empty, torch.empty_like


def _nan_filled(t: torch.Tensor) -> torch.Tensor:
    return t.fill_(float("nan")) if t.is_floating_point() else t


@pytest.fixture(autouse=True)
def _unwritten_outputs_are_nan(monkeypatch):
    """Fill new float tensors from torch.empty / empty_like with NaN during a test."""
    monkeypatch.setattr(
        torch, "empty", lambda *args, **kwargs: _nan_filled(_EMPTY(*args, **kwargs))
    )
    monkeypatch.setattr(
        torch, "empty_like",
        lambda *args, **kwargs: _nan_filled(_EMPTY_LIKE(*args, **kwargs)),
    )


def pytest_make_parametrize_id(config, val, argname):
    """Readable test IDs: `float16` for a dtype, else `n=1000` or `mkn=17x33x45`."""
    if isinstance(val, torch.dtype):
        return str(val).removeprefix("torch.")
    if isinstance(val, tuple):
        return f"{argname}=" + "x".join(map(str, val))
    return f"{argname}={val}"


# Two warnings come from Triton's interpreter itself, not from a kernel, and are
# silenced (exactly these two, even under -W error):
# * Triton 3.6 turns a one-element NumPy array into a Python int for a loop bound
#   such as `range(0, K, BLOCK_K)` or `tl.range(tl.program_id(0), ...)`, which
#   NumPy 1.25+ deprecates;
# * NumPy warns when exp overflows to inf, which a GPU does silently and kernels rely on
#   (sigmoid(-100) = 1 / (1 + inf) = 0). A softmax that overflows still fails its tests.
_INTERPRETER_WARNINGS = (
    "ignore:Conversion of an array with ndim > 0 to a scalar is deprecated"
    ":DeprecationWarning:triton.runtime.interpreter",
    "ignore:overflow encountered in exp:RuntimeWarning:triton.runtime.interpreter",
)


def pytest_collection_modifyitems(config, items):
    if not ON_GPU:
        for item in items:
            for warning in _INTERPRETER_WARNINGS:
                item.add_marker(pytest.mark.filterwarnings(warning))


def pytest_report_header(config):
    device = "cuda" if ON_GPU else "cpu (interpreter)"
    return f"exercises: testing {impl_name()}.py (EXERCISE_IMPL), device {device}"
