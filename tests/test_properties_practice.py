"""Property-based tests (hypothesis) of the practice pages' launchers.

torch_op, timing_methods, failure_modes, debugging and launch_overhead.

The property, the profiles and the sizes are described once, in tests/property_helpers.py.
"""

from __future__ import annotations

import math
import sys
from unittest import mock

import debugging
import failure_modes
import launch_overhead
import pytest
import timing_methods
import torch
import torch_op
from hypothesis import given, note
from hypothesis import strategies as st
from property_helpers import (
    DTYPES,
    F3,
    L1,
    L2,
    PYTESTMARK,
    SMALL_2D,
    SMALL_N,
    V,
    dense,
    layout_for_shape,
    layout_pairs,
    row_major,
    shapes_any,
    value_pairs,
)
from strategies import (
    LAYOUTS_1D,
    LAYOUTS_2D,
    LIMITS,
    ON_GPU,
    SEEDS,
    VALUES,
    T,
    accumulation_rtol,
    budget,
    cover,
    expect,
    float_dtypes,
    launch,
    names_argument,
    shapes_2d,
    sizes,
)

pytestmark = PYTESTMARK


# --------------------------------------------------------------------------- torch_op


def expect_silu_grad(got, want, x, dy, call):
    """dy * s * (1 + x * (1 - s)) cancels where silu' crosses 0 (x near -1.28): the error is relative
    to the three terms' magnitudes, not to the result."""
    s = torch.sigmoid(x.double())
    scale = dy.double().abs() * s * (1 + x.double().abs() * (1 - s))
    expect(got, want, scale=scale, acc_rtol=accumulation_rtol(3, x.dtype, tf32=False), call=call)


@budget()
@given(shape=shapes_any(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=st.tuples(V, V),
       op=st.sampled_from(["silu", "silu_opaque"]), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), *SMALL_2D[:6], (0,), (1,)], dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D),
       values=value_pairs(), op=["silu", "silu_opaque"], seed=[22])
def test_torch_op_silu_forward_and_backward(shape, dtype, layouts, values, op, seed):
    x = T(shape, dtype, layout_for_shape(shape, layouts[0]), values[0], seed)
    dy = T(shape, dtype, layout_for_shape(shape, layouts[1]), values[1], seed + 1)
    must = dense(x) and dtype in F3
    r = launch(torch_op, op, x, must_accept=must, names=["x"])
    if r:
        expect(r.out, torch_op.silu_torch(*r.inputs), call=r.call)
    # Backward through autograd: any dy layout (the op makes it contiguous).
    call = (f"python -c \"import sys; sys.path[:0] = ['tests', 'examples']; import torch; from strategies import make; "
            f"import torch_op; x = {x!r}.requires_grad_(); torch_op.{op}(x).backward({dy!r}); print(x.grad)\"")
    note(f"reproduce: {call}")
    xt, dyt = x.build().requires_grad_(), dy.build()
    try:
        getattr(torch_op, op)(xt).backward(dyt)
    except (ValueError, TypeError) as err:
        assert not must and names_argument(err, ["x", "dy"]), f"{type(err).__name__}: {err}\n  {call}"
        return
    ref = xt.detach().clone().requires_grad_()
    torch_op.silu_torch(ref).backward(dyt.clone())
    expect_silu_grad(xt.grad, ref.grad, xt.detach(), dyt, call)


@budget()
@given(shape=shapes_any(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=st.tuples(V, V), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), (1025, 3), *SMALL_2D[:5], (0,), (1,)], dtype=DTYPES,
       layouts=layout_pairs(LAYOUTS_2D),
       values=value_pairs(), seed=[23])
def test_torch_op_plain_launchers(shape, dtype, layouts, values, seed):
    x = T(shape, dtype, layout_for_shape(shape, layouts[0]), values[0], seed)
    dy = T(shape, dtype, layout_for_shape(shape, layouts[1]), values[1], seed + 1)
    r = launch(torch_op, "silu_forward", x, must_accept=dense(x) and dtype in F3)
    if r:
        expect(r.out, torch_op.silu_torch(*r.inputs), call=r.call)
    r = launch(torch_op, "silu_backward", x, dy, must_accept=dense(x, dy) and dtype in F3)
    if r:
        x_, dy_ = r.inputs
        ref = x_.detach().clone().requires_grad_()
        torch_op.silu_torch(ref).backward(dy_)
        expect_silu_grad(r.out, ref.grad, x_, dy_, r.call)


# --------------------------------------------------------------------------- timing_methods


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layouts=st.tuples(L1, L1), values=st.tuples(V, V),
       a=st.sampled_from([2.0, -1.5, 0.0, 3]), block=st.sampled_from([1024, 16]), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_1D), values=value_pairs(), a=[2.0, -1.5, 0.0, 3],
       block=[1024, 16], seed=[29])
def test_timing_methods_saxpy(n, dtype, layouts, values, a, block, seed):
    x = T((n,), dtype, layouts[0], values[0], seed)
    y = T((n,), dtype, layouts[1], values[1], seed + 1)
    r = launch(timing_methods, "saxpy", a, x, y, block, must_accept=dense(x, y) and dtype == torch.float32)
    if r:
        _, x_, y_ = r.inputs[:3]
        scale = (x_.double() * a).abs() + y_.double().abs()  # a * x + y may be one fma on a GPU
        expect(r.out, timing_methods.saxpy_torch(a, x_, y_), scale=scale,
               acc_rtol=accumulation_rtol(2, dtype, tf32=False), call=r.call)


# --------------------------------------------------------------------------- failure_modes

FILL_DTYPES = (torch.int8, torch.int32, torch.float32)


@budget()
@given(n=sizes(LIMITS.elems), dtype=st.sampled_from([*FILL_DTYPES, torch.float16, torch.int64]), layout=L1,
       value=st.one_of(st.sampled_from([0, -1, 127, 128, -129, 2**31 - 1, 2**31, -(2**31) - 1]),
                       st.integers(-(2**40), 2**40)),
       block=st.sampled_from([1024, 16]), seed=SEEDS)
@cover(n=SMALL_N, dtype=[*FILL_DTYPES, torch.float16], layout=LAYOUTS_1D,
       value=[7, -128, 127, 2**31 - 1, -(2**31), 128, 2**31], block=[1024, 16], seed=[30])
def test_failure_modes_fill(n, dtype, layout, value, block, seed):
    # A value the dtype cannot hold must be refused: torch.full refuses it too (it would wrap in the kernel).
    holds = dtype.is_floating_point or torch.iinfo(dtype).min <= value <= torch.iinfo(dtype).max
    y = T((n,), dtype, layout, "normal", seed)
    r = launch(failure_modes, "fill", y, value, block_size=block,
               must_accept=dense(y) and dtype in FILL_DTYPES and holds and abs(value) < 2**31)
    if r:
        assert holds, f"fill accepted {value}, which {dtype} cannot hold\n  {r.call}"
        expect(r.out, torch.full_like(r.inputs[0], value), call=r.call)


@budget()
@given(first=st.one_of(st.sampled_from([0, 1, 2**31 // 4 - 1, 2**31 // 1024, 2**31 - 3, 2**31 - 1, -1]),
                       st.integers(0, 2**31 - 1)),
       n_tiles=st.integers(1, 4), block=st.sampled_from([4, 1, 64, 1024]))
@cover(first=[0, 2**31 // 4 - 1, 2**31 - 3, 2**31 - 2, -1], n_tiles=[2, 1, 4], block=[4, 1, 64, 1024])
def test_failure_modes_tile_offsets(first, n_tiles, block):
    r = launch(failure_modes, "tile_offsets", first, n_tiles, block, must_accept=0 <= first < 2**31 - n_tiles)
    if r:
        want = [(first + t) * block + j for t in range(n_tiles) for j in range(block)]
        assert r.out == want, f"got {r.out[:8]}..., expected {want[:8]}...\n  {r.call}"


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layouts=st.tuples(L1, st.sampled_from([None, *LAYOUTS_1D])),
       values=V, alpha=st.sampled_from([2.0, -0.5, 0.0, 1e3]), block=st.sampled_from([256, 16]), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES,
       layouts=[("contiguous", None), ("contiguous", "contiguous"), ("offset", "offset"), ("strided", None),
                ("expanded", None), ("contiguous", "strided"), ("contiguous", "expanded")],
       values=VALUES, alpha=[2.0, -0.5, 0.0], block=[256, 16], seed=[31])
def test_failure_modes_scale(n, dtype, layouts, values, alpha, block, seed):
    x = T((n,), dtype, layouts[0], values, seed)
    out = None if layouts[1] is None else T((n,), dtype, layouts[1], "poison", seed + 1)
    r = launch(failure_modes, "scale", x, alpha, out, block_size=block,
               must_accept=dense(x) and (out is None or dense(out)) and dtype in F3)
    if r:
        expect(r.out, (r.inputs[0].float() * alpha).to(dtype), call=r.call)


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layouts=st.tuples(L1, L1), values=st.tuples(V, V),
       block=st.sampled_from([1024, 16]), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_1D), values=value_pairs(), block=[1024, 16], seed=[32])
def test_failure_modes_add(n, dtype, layouts, values, block, seed):
    x = T((n,), dtype, layouts[0], values[0], seed)
    y = T((n,), dtype, layouts[1], values[1], seed + 1)
    r = launch(failure_modes, "add", x, y, block_size=block, must_accept=dense(x, y) and dtype in F3)
    if r:
        expect(r.out, r.inputs[0] + r.inputs[1], call=r.call)


# --------------------------------------------------------------------------- debugging


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(extra=(torch.float16, torch.float64)), layout=L2, values=V, seed=SEEDS)
@cover(shape=SMALL_2D, dtype=[torch.float32, torch.float16], layout=LAYOUTS_2D, values=VALUES, seed=[34])
def test_debugging_row_sum(shape, dtype, layout, values, seed):
    x = T(shape, dtype, layout, values, seed)
    r = launch(debugging, "row_sum", x, must_accept=row_major(x) and dtype == torch.float32 and shape[1] <= 16384)
    if r:
        xs = r.inputs[0]
        expect(r.out, debugging.row_sum_torch(xs), scale=xs.double().abs().sum(1),
               acc_rtol=accumulation_rtol(shape[1], dtype, tf32=False), call=r.call)


@pytest.mark.skipif(ON_GPU, reason="row_sum_in_pdb runs under the interpreter only (it refuses the GPU by design)")
@budget(0.5)
@given(shape=shapes_2d(max_elems=1000), dtype=float_dtypes(), layout=L2, values=V, seed=SEEDS)
@cover(shape=SMALL_2D[:6], dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, seed=[35])
def test_debugging_row_sum_in_pdb(shape, dtype, layout, values, seed):
    x = T(shape, dtype, layout, values, seed)
    with mock.patch.object(sys, "breakpointhook", lambda *args, **kwargs: None):  # breakpoint() does nothing
        r = launch(debugging, "row_sum_in_pdb", x, must_accept=row_major(x) and dtype == torch.float32)
    if r:
        xs = r.inputs[0]
        expect(r.out, debugging.row_sum_torch(xs), scale=xs.double().abs().sum(1),
               acc_rtol=accumulation_rtol(shape[1], dtype, tf32=False), call=r.call)


# --------------------------------------------------------------------------- launch_overhead


@budget()
@given(shape=shapes_any(), dtype=float_dtypes(extra=(torch.bfloat16, torch.float64)), layout=L2, values=V,
       alpha=st.sampled_from([1.5, -3.0, 0.0, 1e3]),
       launcher=st.sampled_from(["add_scalar", "add_scalar_autotuned", "WarmLauncher", "GraphLauncher"]), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), (4093,), (33, 17), (64, 65), (1,), (0,)],
       dtype=[torch.float32, torch.float16, torch.bfloat16],
       layout=LAYOUTS_2D, values=VALUES, alpha=[1.5, -3.0], launcher=["add_scalar", "add_scalar_autotuned",
                                                                      "WarmLauncher", "GraphLauncher"], seed=[36])
def test_launch_overhead_launchers(shape, dtype, layout, values, alpha, launcher, seed):
    x = T(shape, dtype, layout_for_shape(shape, layout), values, seed)
    extra = {"launches": 2} if launcher == "GraphLauncher" else {}
    r = launch(launch_overhead, launcher, x, alpha, **extra, call_result=launcher.endswith("Launcher"),
               must_accept=dense(x) and dtype in (torch.float16, torch.float32) and math.prod(shape) >= 1)
    if r:
        expect(r.out, launch_overhead.add_scalar_torch(r.inputs[0], alpha), call=r.call)


