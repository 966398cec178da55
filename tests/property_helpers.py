"""What the property-based tests share (tests/test_properties_*.py, split by subject).

One property for all of them: for any input a user can pass (sizes 0, 1, primes and block
sizes +-1, wide and tall shapes; every dtype, with a few it must refuse; contiguous,
strided, transposed, padded-row, storage-offset and expanded layouts; normal values, NaN,
+-inf and large magnitudes) the launcher either returns what the torch reference returns,
at the output dtype's tolerance (conftest's `tolerances()`, NaN where the reference has
NaN), or refuses the input with a ValueError or TypeError whose message names one of its
arguments. It never crashes and never returns a wrong answer. Inputs inside a launcher's
documented contract (contiguous tensors of a supported dtype at least) must be accepted.

Each test covers every layout, value kind and dtype once through explicit examples, then
draws more. A failure prints the exact call as a one-line `python -c ...` reproduction
(hypothesis shows it under "reproduce:"). Profiles and sizes: tests/strategies.py
(`HYPOTHESIS_PROFILE=cpu|gpu|explore`).

bf16 is drawn on a GPU only: the interpreter computes bf16 wrongly.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import strategies as st
from strategies import (
    DENSE,
    FLOAT_DTYPES,
    LAYOUTS_1D,
    LAYOUTS_2D,
    LIMITS,
    ROW_MAJOR,
    VALUES,
    T,
    accumulation_rtol,
    exact_fp32,
    expect,
    shapes_2d,
    sizes,
)

# NaN and inf inputs make numpy (the interpreter) warn about invalid values and overflow: expected here.
PYTESTMARK = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F3 = (torch.float16, torch.bfloat16, torch.float32)  # what the float launchers document
DTYPES = [*FLOAT_DTYPES, torch.float64]  # for explicit examples: every dtype drawn, one to refuse
L1 = st.sampled_from(LAYOUTS_1D)
L2 = st.sampled_from(LAYOUTS_2D)
V = st.sampled_from(VALUES)
GELU_LIPSCHITZ = 1.13  # max |d gelu_tanh / dz|: how far an error in a @ w + bias can move the output


def layout_pairs(layouts):
    """Each layout for the first input with a contiguous second, then the other way round."""
    return [(lay, "contiguous") for lay in layouts] + [("contiguous", lay) for lay in layouts[1:]]


WITH_1D = [(lay, LAYOUTS_1D[i % len(LAYOUTS_1D)]) for i, lay in enumerate(LAYOUTS_2D)]  # a matrix and a vector


def value_pairs():
    return [(v, "normal") for v in VALUES] + [("normal", v) for v in VALUES[1:]]


def scale_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a| @ |b| in float64: the sum of magnitudes each output element's rounding error is relative to."""
    return a.double().abs() @ b.double().abs()


def dense(*recipes: T) -> bool:
    return all(r.layout in DENSE for r in recipes)


def row_major(*recipes: T) -> bool:
    return all(r.layout in ROW_MAJOR for r in recipes)


def at_least_one(*dims: int) -> bool:
    return all(d >= 1 for d in dims)


# Sizes for the explicit examples (within every profile). `cover` zips its lists, so the sizes
# that show something come first: every layout and value kind meets one of them; 0 and 1 come last.
SMALL_N = [1025, 17, 4093, 1023, 127, 129, 31, 0, 1, 2]
SMALL_2D = [(17, 33), (31, 127), (64, 65), (3, 1025), (129, 3), (33, 17), (1, 1), (0, 5), (5, 0)]
SMALL_MM = [(17, 33, 9), (127, 65, 33), (64, 128, 16), (3, 129, 130), (130, 2, 61), (33, 17, 65), (65, 3, 127),
            (9, 130, 17), (31, 31, 31), (2, 5, 129), (129, 64, 2), (1, 1, 1), (0, 5, 3), (5, 3, 0)]


# Both operands 1e30: every fp32 product overflows before any sum, and how tensor cores round an
# overflowing product is not the kernel's doing. One large operand still reaches 1e33 sums.
MM_VALUES = st.tuples(V, V).filter(lambda v: v != ("large", "large"))


def check_matmul(r, dtype, k: int, reference, *, tf32=None, lipschitz=1.0, scale=None):
    """Compare a matmul-like result with `reference()` (run in true fp32), error relative to |a| @ |b|."""
    a, b = r.inputs[0], r.inputs[1]
    with exact_fp32():
        ref = reference()
    expect(r.out, ref, scale=scale_mm(a, b) if scale is None else scale,
           acc_rtol=accumulation_rtol(k, dtype, tf32=tf32), lipschitz=lipschitz, call=r.call)


@st.composite
def shapes_any(draw):
    """A 1-D or 2-D shape."""
    return draw(st.one_of(st.tuples(sizes(LIMITS.elems)), shapes_2d()))


def layout_for_shape(shape, layout: str) -> str:
    """A 2-D layout name for a 1-D shape: the 1-D layouts have no transpose and no padding."""
    one_d = {"transposed": "strided", "padded": "strided", "row-offset": "offset"}
    return one_d.get(layout, layout) if len(shape) == 1 else layout
