"""The exercises' comparison: `assert_close`, whose failure says where and by how much.

    from checking import assert_close
    assert_close(got, expected, rtol=1e-3, atol=1e-3)

It passes and fails exactly as `torch.testing.assert_close` does for tensors of the same
shape and dtype, but a failure reads like

    37 of 600 elements differ (rtol=0.001, atol=0.001)
    max abs error 3.1e-01 at index (2, 17): got 0.512, expected 0.823
    first wrong at index (0, 4): got 1.25, expected 1.5

and an element the kernel never wrote reads as "not written": the tests fill every
output with NaN before the launch (exercises/conftest.py), so it never shows up as old
memory.
"""

from __future__ import annotations

import torch

# torch.testing.assert_close's defaults, used when a test gives no tolerance.
DEFAULT_TOL = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def _where(index: tuple[int, ...]) -> str:
    return str(index[0]) if len(index) == 1 else "(" + ", ".join(map(str, index)) + ")"


def _index(flat: int, shape: torch.Size) -> tuple[int, ...]:
    out = []
    for size in reversed(shape):
        out.append(flat % size)
        flat //= size
    return tuple(reversed(out)) or (0,)


def assert_close(actual, expected, *, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False) -> None:
    """Fail, with the largest error and the first wrong index, unless actual is close
    to expected."""
    __tracebackhide__ = True  # pytest shows the test's line, not this one
    if not isinstance(actual, torch.Tensor):
        raise AssertionError(f"expected a torch.Tensor, got {type(actual).__name__}")
    if actual.shape != expected.shape:
        raise AssertionError(
            f"shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
        )
    if actual.dtype != expected.dtype:
        raise AssertionError(f"dtype {actual.dtype}, expected {expected.dtype}")
    if actual.device != expected.device:
        raise AssertionError(f"device {actual.device}, expected {expected.device}")
    if rtol is None or atol is None:
        rtol, atol = DEFAULT_TOL.get(expected.dtype, (0.0, 0.0))
    got = actual.detach().cpu().reshape(-1).double()
    want = expected.detach().cpu().reshape(-1).double()
    wrong = ~torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not wrong.any():
        return

    def show(i: int) -> str:
        return (f"index {_where(_index(i, actual.shape))}: "
                f"got {got[i].item():.6g}, expected {want[i].item():.6g}")

    lines = [f"{int(wrong.sum())} of {got.numel()} elements differ "
             f"(rtol={rtol:g}, atol={atol:g})"]
    unwritten = wrong & got.isnan() & ~want.isnan()
    if unwritten.all():
        lines.append("no element was written: the output is still all NaN, "
                     "as the test filled it")
    elif unwritten.any():
        first = int(unwritten.nonzero()[0])
        lines.append(f"{int(unwritten.sum())} of them are NaN: not written by the "
                     "kernel (every output starts as NaN), or a NaN it computed; "
                     f"the first at {show(first)}")
    numbers = wrong & ~got.isnan()
    if numbers.any():
        error = torch.where(numbers, (got - want).abs(), -1.0)
        error = error.nan_to_num(nan=float("inf"))
        worst = int(error.argmax())
        lines.append(f"max abs error {error[worst].item():.1e} at {show(worst)}")
        lines.append(f"first wrong at {show(int(wrong.nonzero()[0]))}")
    raise AssertionError("\n".join(lines))
