"""Inputs, hypothesis profiles and checks for tests/test_properties_*.py.

`make(shape, dtype, layout, values, seed)` builds one input tensor, deterministically,
so that a failing example prints a one-line reproduction that rebuilds exactly the
tensors the test used:

    python -c "import sys; sys.path[:0] = ['tests', 'examples']; import torch; from strategies import make; \
import vector_add; print(vector_add.add(make((1025,), torch.float16, 'offset', 'special', seed=3), ...))"

Layouts (the view the launcher receives; the values are the same whatever the layout):

* ``contiguous``: a fresh tensor;
* ``strided``: every other element of the last dimension (``big[..., ::2]``);
* ``transposed``: the last two dimensions swapped (``big.transpose(-1, -2)``, as ``weight.t()``);
* ``padded``: rows padded to a multiple of 16 elements (``big[..., :N]``, row stride > N);
* ``offset``: a storage offset of one element (``flat[1:].view(shape)``): contiguous, misaligned base;
* ``row-offset``: a storage offset of one row (``big[1:]``): contiguous, aligned as the rows are;
* ``expanded``: stride 0 along the first dimension (``row.expand(shape)``).

Values: ``normal`` (standard normal), ``special`` (normal with NaN, +inf and -inf at a few
places), ``large`` (normal times 1e4 for fp16, 1e30 otherwise), ``poison`` (all NaN: an
output buffer whose unwritten elements show up). Integer dtypes: ``normal`` draws from
[-1000, 1000], ``special``/``large`` from the whole range, with its two ends present.

Profiles (env HYPOTHESIS_PROFILE; default "gpu" when CUDA is available, else "cpu"):
"cpu" (few examples, small sizes, derandomized: CI reproduces), "gpu" (more examples,
sizes up to a few million elements, derandomized) and "explore" (random, many examples,
shrinking on: for hunting bugs by hand).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent

ON_GPU = torch.cuda.is_available()
if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any example imports triton

from hypothesis import HealthCheck, Phase, currently_in_test_context, event, example, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support import DEVICE, FLOAT_DTYPES, tolerances  # noqa: E402

# --------------------------------------------------------------------------- profiles

_COMMON = {
    "deadline": None,  # the interpreter is slow, and a GPU compiles on first use
    "print_blob": True,
    "database": None,  # nothing written into the tree; derandomized profiles need none
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                              HealthCheck.function_scoped_fixture],  # conftest's autouse seed fixture
}
# No shrinking in the CI profiles: a shrink re-runs the kernel hundreds of times (and autotunes
# each new shape on a GPU); every example notes its own one-line reproduction instead.
settings.register_profile("cpu", max_examples=12, derandomize=True, phases=[Phase.explicit, Phase.generate],
                          **_COMMON)
settings.register_profile("gpu", max_examples=30, derandomize=True, phases=[Phase.explicit, Phase.generate],
                          **_COMMON)
settings.register_profile("explore", max_examples=300, derandomize=False, **_COMMON)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("gpu" if ON_GPU else "cpu")
settings.load_profile(PROFILE)


@dataclass(frozen=True)
class Limits:
    elems: int  # elements of a 1-D input
    elems_2d: int  # elements of a 2-D or 3-D input
    dim: int  # longest row of a 2-D input
    rows: int  # most rows of a 2-D input (the interpreter runs one program per row in many kernels)
    mm: int  # largest M, N or K of a matmul


SMALL = Limits(elems=4100, elems_2d=3000, dim=1100, rows=130, mm=130)
LARGE = Limits(elems=3_000_000, elems_2d=2_000_000, dim=70_000, rows=70_000, mm=1100)
LIMITS = SMALL if PROFILE == "cpu" or (PROFILE != "gpu" and not ON_GPU) else LARGE


def budget(share: float = 1.0):
    """Settings for one test: the profile's example count times `share` (autotuned launchers get less)."""
    current = settings.get_profile(PROFILE)
    return settings(current, max_examples=max(2, round(current.max_examples * share)))


# --------------------------------------------------------------------------- inputs

LAYOUTS_1D = ("contiguous", "strided", "offset", "expanded")
LAYOUTS_2D = ("contiguous", "transposed", "padded", "offset", "row-offset", "expanded")
DENSE = ("contiguous", "offset", "row-offset")  # layouts that are contiguous tensors (every launcher takes them)
ROW_MAJOR = ("contiguous", "padded", "offset", "row-offset", "expanded")  # unit stride along the last dimension
VALUES = ("normal", "special", "large")
LARGE_VALUE = {torch.float16: 1e4}  # 1e30 for the others (bf16 has fp32's range)


def _fill(shape: tuple, dtype: torch.dtype, values: str, g: torch.Generator) -> torch.Tensor:
    numel = math.prod(shape)
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        if values == "normal":
            return torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, shape, generator=g).to(dtype)
        x = torch.randint(info.min, min(info.max + 1, 2**63 - 1), shape, generator=g, dtype=torch.int64)
        if numel:
            ends = torch.randperm(numel, generator=g)[:2]
            x.view(-1)[ends] = torch.tensor([info.min, info.max])[: len(ends)]
        return x.to(dtype)
    if values == "poison":
        return torch.full(shape, float("nan"), dtype=dtype)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if values == "large":
        x *= LARGE_VALUE.get(dtype, 1e30)
    elif values == "special" and numel:
        flat = x.view(-1)
        specials = torch.tensor([float("nan"), float("inf"), float("-inf")], dtype=torch.float64)
        if numel < 3:  # one special value, which one depends on the seed
            flat[0] = specials[torch.randint(3, (1,), generator=g)]
        else:
            flat[torch.randperm(numel, generator=g)[:3]] = specials
    elif values not in ("normal", "special"):
        raise ValueError(f"values must be one of {VALUES + ('poison',)}, got {values!r}")
    return x.to(dtype)


def make(shape, dtype: torch.dtype, layout: str = "contiguous", values: str = "normal", seed: int = 0,
         device=None) -> torch.Tensor:
    """A tensor of `shape` and `dtype` with the given layout and values, the same on every call."""
    shape = tuple(int(s) for s in shape)
    if layout == "contiguous":
        storage, view = shape, lambda t: t
    elif layout == "strided" and shape:
        storage, view = shape[:-1] + (2 * shape[-1],), lambda t: t[..., ::2]
    elif layout == "transposed" and len(shape) >= 2:
        storage, view = shape[:-2] + (shape[-1], shape[-2]), lambda t: t.transpose(-1, -2)
    elif layout == "padded" and len(shape) >= 2:
        storage, view = shape[:-1] + ((shape[-1] // 16 + 1) * 16,), lambda t: t[..., :shape[-1]]
    elif layout == "offset":
        storage, view = (math.prod(shape) + 1,), lambda t: t[1:].view(shape)
    elif layout == "row-offset" and len(shape) >= 2:
        storage, view = (shape[0] + 1,) + shape[1:], lambda t: t[1:]
    elif layout == "expanded" and shape:
        storage, view = (1,) + shape[1:], lambda t: t.expand(shape)
    else:
        raise ValueError(f"layout {layout!r} does not apply to shape {shape}")
    g = torch.Generator().manual_seed(seed)
    return view(_fill(storage, dtype, values, g).to(DEVICE if device is None else device))


@dataclass(frozen=True)
class T:
    """The recipe of one input tensor; its repr is the `make(...)` call that builds it."""

    shape: tuple
    dtype: torch.dtype
    layout: str = "contiguous"
    values: str = "normal"
    seed: int = 0

    def build(self) -> torch.Tensor:
        return make(self.shape, self.dtype, self.layout, self.values, self.seed)

    def __repr__(self) -> str:
        return f"make({tuple(self.shape)!r}, {self.dtype}, {self.layout!r}, {self.values!r}, seed={self.seed})"

    @property
    def dense(self) -> bool:
        return self.layout in DENSE


@dataclass(frozen=True)
class Name:
    """An object of an example module passed as an argument (an autotuned kernel): shown by its name."""

    module: object
    attr: str

    def build(self):
        return getattr(self.module, self.attr)

    def __repr__(self) -> str:
        return f"{self.module.__name__}.{self.attr}"


def py(v) -> str:
    """Python source for an argument value."""
    if isinstance(v, float) and not math.isfinite(v):
        return f"float('{v}')"
    if isinstance(v, tuple):
        return "(" + ", ".join(py(e) for e in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(py(e) for e in v) + "]"
    return repr(v)  # T, Name, torch.dtype, str, int, bool, None


def build(v):
    return v.build() if isinstance(v, (T, Name)) else v


# --------------------------------------------------------------------------- strategies

# 0, 1, primes (2..2**21 - 9) and the powers of two with their neighbours (block size +-1).
PRIMES = (2, 3, 5, 7, 13, 17, 31, 61, 127, 251, 509, 1021, 2039, 4093, 8191, 16381, 65521, 262139, 1048573,
          2097143)
EDGES = sorted({0, 1, *PRIMES, *(p + d for p in (2**k for k in range(4, 22)) for d in (-1, 0, 1))})
SEEDS = st.integers(0, 2**16)


def sizes(hi: int, lo: int = 0, extra=()) -> st.SearchStrategy[int]:
    """An edge size (0, 1, a prime, a power of two or its neighbour) or any size in [lo, hi]."""
    edges = sorted({e for e in (*EDGES, *extra) if lo <= e <= hi})
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi)) if edges else st.integers(lo, hi)


@st.composite
def shapes_2d(draw, max_elems: int | None = None, max_dim: int | None = None, min_rows: int = 0,
              min_cols: int = 0, max_cols: int | None = None):
    """(M, N): balanced, wide (a few long rows) or tall (many short rows); M * N <= max_elems."""
    max_elems = max_elems or LIMITS.elems_2d
    max_dim = max_dim or LIMITS.dim
    max_rows = min(max_dim, LIMITS.rows)
    max_cols = min(max_dim, max_cols or max_dim)
    kind = draw(st.sampled_from(("balanced", "wide", "tall")))
    if kind == "wide":
        m = draw(sizes(3, min_rows))
        n = draw(sizes(min(max_cols, max_elems // max(m, 1)), min_cols))
    elif kind == "tall":
        n = draw(sizes(min(max_cols, 3 if min_cols <= 3 else min_cols), min_cols))
        m = draw(sizes(min(max_rows, max_elems // max(n, 1)), min_rows))
    else:
        side = max(1, math.isqrt(max_elems))
        m = draw(sizes(min(max_rows, side), min_rows))
        n = draw(sizes(min(max_cols, max_elems // max(m, 1), max(side, min_cols)), min_cols))
    return (m, max(min_cols, n))


@st.composite
def shapes_mm(draw, max_dim: int | None = None, min_dim: int = 0):
    """(M, N, K) for a matmul: each an edge size or any size up to max_dim, some of them wide or tall."""
    max_dim = max_dim or LIMITS.mm
    return tuple(draw(sizes(max_dim, min_dim)) for _ in range(3))


def float_dtypes(*, extra=(torch.float64,)) -> st.SearchStrategy[torch.dtype]:
    """fp32, fp16 (bf16 on a GPU only: the interpreter computes bf16 wrongly) and dtypes to refuse."""
    return st.sampled_from([*FLOAT_DTYPES, *extra])


def cover(**lists):
    """Explicit examples that visit every entry of every list at least once (lists are cycled, zipped)."""
    length = max(len(v) for v in lists.values())
    rows = [{k: v[i % len(v)] for k, v in lists.items()} for i in range(length)]

    def decorate(test):
        for row in reversed(rows):
            test = example(**row)(test)
        return test

    return decorate


# --------------------------------------------------------------------------- running a launcher


@dataclass
class Launched:
    out: object  # what the launcher returned
    inputs: tuple  # the positional arguments, tensors cloned before the call (for the reference)
    kwargs: dict  # the keyword arguments, tensors cloned before the call
    call: str  # the reproduction line


def repro(module, name: str, args, kwargs, suffix: str = "") -> str:
    parts = [py(a) for a in args] + [f"{k}={py(v)}" for k, v in kwargs.items()]
    call = f"{module.__name__}.{name}({', '.join(parts)}){suffix}"
    return ("python -c \"import sys; sys.path[:0] = ['tests', 'examples']; import torch; from strategies import make; "
            f"import {module.__name__}; print({call})\"")


def _clone(v):
    return v.clone() if isinstance(v, torch.Tensor) else v


def names_argument(err: Exception, names) -> bool:
    msg = str(err)
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", msg) for n in names)


def _note(text: str, how=note) -> None:
    """note() or event() inside a hypothesis test; nothing elsewhere (a plain test of this machinery)."""
    if currently_in_test_context():
        how(text)


def launch(module, name: str, *args, must_accept: bool, names=None, call_result: bool = False,
           **kwargs) -> Launched | None:
    """Build the inputs, note a one-line reproduction, run `module.name(*args, **kwargs)`.

    Returns None when the launcher refused the input with a ValueError or TypeError whose
    message names one of its arguments (and `must_accept` is False); anything else it raises
    fails the test. `call_result`: the launcher returns a callable (a launcher object); call it.
    """
    fn = getattr(module, name)
    call = repro(module, name, args, kwargs, "()" if call_result else "")
    _note(f"reproduce: {call}")
    if names is None:
        names = [p for p in inspect.signature(fn).parameters if p not in ("args", "kwargs")]
    built_args = [build(a) for a in args]
    built_kwargs = {k: build(v) for k, v in kwargs.items()}
    inputs = tuple(_clone(a) for a in built_args)
    kw_inputs = {k: _clone(v) for k, v in built_kwargs.items()}
    try:
        out = fn(*built_args, **built_kwargs)
        if call_result:
            out = out()
    except (ValueError, TypeError) as err:
        if must_accept:
            raise AssertionError(f"refused an input it must take ({type(err).__name__}: {err})\n  {call}") from err
        if not names_argument(err, names):
            raise AssertionError(f"refused with a message that names none of the arguments {list(names)}: "
                                 f"{type(err).__name__}: {err}\n  {call}") from err
        _note(f"refused: {type(err).__name__}: {err}")
        _note(f"{name}: refused", event)  # --hypothesis-show-statistics counts refusals and checks
        return None
    _note(f"{name}: compared with the reference", event)
    return Launched(out, inputs, kw_inputs, call)


# --------------------------------------------------------------------------- comparing


def tolerance(dtype: torch.dtype) -> dict:
    """conftest's per-dtype tolerance (float64 results: fp32's; integers: exact)."""
    if not dtype.is_floating_point:
        return {"rtol": 0.0, "atol": 0.0}
    return tolerances(torch.float32 if dtype == torch.float64 else dtype)


def accumulation_rtol(n_terms: int, input_dtype: torch.dtype, *, tf32: bool | None = None) -> float:
    """Error of an fp32 sum of `n_terms` products or values, relative to the sum of their magnitudes.

    fp32 inputs in a GPU `tl.dot` are rounded to tf32 first (conftest's matmul tolerance);
    otherwise the products are exact and only the fp32 additions round: an error that grows
    like sqrt(n) unit roundoffs (fp32's tolerance, 168 roundoffs, covers 64 terms).
    """
    if tf32 is None:
        tf32 = input_dtype == torch.float32 and DEVICE.type == "cuda"
    if tf32:
        return tolerances(torch.float32, matmul=True)["rtol"]
    return tolerances(torch.float32)["rtol"] * max(1.0, math.sqrt(n_terms) / 8)


def expect(got, want: torch.Tensor, *, scale: torch.Tensor | None = None, acc_rtol: float = 0.0,
           lipschitz: float = 1.0, call: str = "") -> None:
    """assert_close(got, want, equal_nan=True) at the output dtype's tolerance, and more:

    * `scale` (the same maths on |inputs|, e.g. |a| @ |b|) times `acc_rtol` is added to the
      absolute tolerance: the rounding error of a sum is relative to the sum of magnitudes,
      not to the (possibly cancelled) result; `lipschitz` bounds how an epilogue (GELU)
      scales that error;
    * at the overflow threshold one side may round to inf and the other to the largest
      finite value: that is allowed when the finite one lies within tolerance of it.
    """
    assert isinstance(got, torch.Tensor), f"expected a tensor, got {type(got).__name__}\n  {call}"
    assert got.shape == want.shape, f"shape {tuple(got.shape)}, expected {tuple(want.shape)}\n  {call}"
    assert got.dtype == want.dtype, f"dtype {got.dtype}, expected {want.dtype}\n  {call}"
    assert got.device == want.device, f"device {got.device}, expected {want.device}\n  {call}"
    if not got.dtype.is_floating_point:
        bad = got != want
        if bad.any():
            i = bad.nonzero()[0].tolist()
            raise AssertionError(f"{int(bad.sum())} of {got.numel()} elements differ; first at {i}: "
                                 f"got {got[tuple(i)].item()}, expected {want[tuple(i)].item()}\n  {call}")
        return
    tol = tolerance(got.dtype)
    g, w = got.double(), want.double()
    extra = torch.zeros_like(w) if scale is None else (acc_rtol * lipschitz * scale.double()).expand_as(w)
    extra = torch.nan_to_num(extra, nan=math.inf, posinf=math.inf)  # NaN/inf inputs: the NaN/inf check decides

    def allowed(v):
        return tol["atol"] + tol["rtol"] * v.abs() + extra

    finite = g.isfinite() & w.isfinite()
    ok = g.isnan() == w.isnan()
    ok &= ~finite | ((g - w).abs() <= allowed(w))
    same_inf = (g == w) & g.isinf()
    fmax = torch.finfo(got.dtype).max
    edge = (g.isinf() & w.isfinite() & (torch.sign(g) == torch.sign(w)) & (w.abs() + allowed(w) >= fmax)) | (
        w.isinf() & g.isfinite() & (torch.sign(g) == torch.sign(w)) & (g.abs() + allowed(g) >= fmax))
    ok &= finite | g.isnan() | same_inf | edge | (g.isnan() & w.isnan())
    if not bool(ok.all()):
        bad = (~ok).nonzero()
        first = [tuple(i) for i in bad[:5].tolist()]
        rows = "; ".join(f"{i}: got {g[i].item():.6g}, expected {w[i].item():.6g}"
                         + (f" +- {allowed(w)[i].item():.3g}" if w[i].isfinite() else "") for i in first)
        raise AssertionError(f"{bad.shape[0]} of {got.numel()} elements differ ({tol}, acc_rtol={acc_rtol:.3g}); "
                             f"{rows}\n  {call}")


@contextlib.contextmanager
def exact_fp32():
    """torch's fp32 matmuls in true fp32 (no TF32) while a reference is computed, whatever another test set."""
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved)
