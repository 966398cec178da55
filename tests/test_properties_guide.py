"""Property-based tests (hypothesis) of the guide's launchers.

vector_add, masks, launch_grids, strides, tensor_descriptors, int64_offsets, program_ids,
constexpr_specialization, autotune, tile_compute and persistent_rows.

The property, the profiles and the sizes are described once, in tests/property_helpers.py.
"""

from __future__ import annotations

import autotune
import constexpr_specialization
import int64_offsets
import launch_grids
import masks
import persistent_rows
import program_ids
import strides
import tensor_descriptors
import tile_compute
import torch
import vector_add
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import (
    DTYPES,
    F3,
    L1,
    L2,
    MM_VALUES,
    PYTESTMARK,
    SMALL_2D,
    SMALL_MM,
    SMALL_N,
    WITH_1D,
    V,
    check_matmul,
    dense,
    layout_for_shape,
    layout_pairs,
    row_major,
    value_pairs,
)
from strategies import (
    LAYOUTS_1D,
    LAYOUTS_2D,
    LIMITS,
    ON_GPU,
    SEEDS,
    VALUES,
    Name,
    T,
    accumulation_rtol,
    budget,
    cover,
    expect,
    float_dtypes,
    launch,
    shapes_2d,
    shapes_mm,
    sizes,
)

pytestmark = PYTESTMARK


# --------------------------------------------------------------------------- vector_add


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layouts=st.tuples(L1, L1), values=st.tuples(V, V),
       block=st.sampled_from([1024, 16]), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_1D), values=value_pairs(), block=[1024, 16],
       seed=[1])
def test_vector_add(n, dtype, layouts, values, block, seed):
    x = T((n,), dtype, layouts[0], values[0], seed)
    y = T((n,), dtype, layouts[1], values[1], seed + 1)
    r = launch(vector_add, "add", x, y, block_size=block, must_accept=dense(x, y) and dtype in F3)
    if r:
        expect(r.out, vector_add.add_torch(*r.inputs), call=r.call)


# --------------------------------------------------------------------------- masks


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V, seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, seed=[2])
def test_masks_row_max(shape, dtype, layout, values, seed):
    x = T(shape, dtype, layout, values, seed)
    r = launch(masks, "row_max", x, must_accept=dense(x) and dtype in F3 and 1 <= shape[1] <= 8192)
    if r:
        expect(r.out, masks.row_max_torch(*r.inputs), call=r.call)


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layouts=st.tuples(L2, L1), values=st.tuples(V, V),
       blocks=st.sampled_from([(16, 256), (4, 16), (64, 32)]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=WITH_1D,
       values=value_pairs(), blocks=[(16, 256), (4, 16)], seed=[3])
def test_masks_bias_relu(shape, dtype, layouts, values, blocks, seed):
    x = T(shape, dtype, layouts[0], values[0], seed)
    b = T(shape[1:], dtype, layouts[1], values[1], seed + 1)
    r = launch(masks, "bias_relu", x, b, block_m=blocks[0], block_n=blocks[1],
               must_accept=dense(x, b) and dtype in F3)
    if r:
        expect(r.out, masks.bias_relu_torch(*r.inputs), call=r.call)


# --------------------------------------------------------------------------- launch_grids


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V,
       alpha=st.sampled_from([2.0, -0.75, 0.0, 1e3]), beta=st.sampled_from([0.0, 0.5, -3.0]), relu=st.booleans(),
       seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, alpha=[2.0, -0.75, 0.0], beta=[0.5, 0.0],
       relu=[True, False], seed=[4])
def test_launch_grids_scale_shift(n, dtype, layout, values, alpha, beta, relu, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(launch_grids, "scale_shift", x, alpha, beta, relu=relu, must_accept=dtype in F3)  # any stride
    if r:
        xs = r.inputs[0]
        scale = (xs.double() * alpha).abs() + abs(beta)  # two terms: x * alpha + beta may be one fma
        expect(r.out, launch_grids.scale_shift_torch(xs, alpha, beta, relu=relu), scale=scale,
               acc_rtol=accumulation_rtol(2, dtype, tf32=False), call=r.call)


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layouts=st.tuples(L2, L1), values=st.tuples(V, V),
       blocks=st.sampled_from([(32, 64), (4, 16), (16, 128)]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=WITH_1D,
       values=value_pairs(), blocks=[(32, 64), (4, 16)], seed=[5])
def test_launch_grids_add_row_bias(shape, dtype, layouts, values, blocks, seed):
    x = T(shape, dtype, layouts[0], values[0], seed)
    bias = T(shape[1:], dtype, layouts[1], values[1], seed + 1)
    r = launch(launch_grids, "add_row_bias", x, bias, block_m=blocks[0], block_n=blocks[1],
               must_accept=dense(bias) and dtype in F3)  # x: any strides
    if r:
        expect(r.out, launch_grids.add_row_bias_torch(*r.inputs), call=r.call)


@st.composite
def shapes_3d(draw):
    b = draw(sizes(5))
    m = draw(sizes(max(20, LIMITS.rows // 8)))
    n = draw(sizes(max(1, LIMITS.elems_2d // max(1, b * m))))
    return (b, m, n)


@budget()
@given(shape=shapes_3d(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=st.tuples(V, V),
       block=st.sampled_from([128, 16, 1024]), seed=SEEDS)
@cover(shape=[(2, 3, 17), (0, 3, 5), (1, 1, 1), (3, 1, 1025), (5, 20, 3), (2, 0, 4)], dtype=DTYPES,
       layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(), block=[128, 16], seed=[6])
def test_launch_grids_add_batch_bias(shape, dtype, layouts, values, block, seed):
    x = T(shape, dtype, layouts[0], values[0], seed)
    bias = T((shape[0], shape[2]), dtype, layouts[1], values[1], seed + 1)
    r = launch(launch_grids, "add_batch_bias", x, bias, block_n=block, must_accept=dtype in F3)  # any strides
    if r:
        expect(r.out, launch_grids.add_batch_bias_torch(*r.inputs), call=r.call)


# --------------------------------------------------------------------------- strides


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V,
       blocks=st.sampled_from([(64, 64), (8, 16), (4, 128)]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, blocks=[(64, 64), (8, 16)], seed=[7])
def test_strides_copy_2d_and_transpose(shape, dtype, layout, values, blocks, seed):
    x = T(shape, dtype, layout, values, seed)
    kw = {"block_m": blocks[0], "block_n": blocks[1]}
    r = launch(strides, "copy_2d", x, must_accept=dtype in F3, **kw)  # any 2-D view
    if r:
        expect(r.out, strides.copy_2d_torch(*r.inputs), call=r.call)
        assert r.out.is_contiguous(), r.call
    r = launch(strides, "transpose", x, must_accept=dtype in F3, names=["x", "block_m", "block_n"], **kw)
    if r:
        expect(r.out, r.inputs[0].t().contiguous(), call=r.call)


@st.composite
def broadcast_operands(draw):
    """a (A0, A1) and b (B1,) or (B0, B1): mostly powers of two that broadcast, sometimes not."""
    def dim():
        return draw(st.one_of(st.sampled_from([1, 2, 4, 16, 64]), st.sampled_from([0, 3, 5])))

    a = (dim(), dim())
    kind = draw(st.sampled_from(["same", "1-D", "row", "column", "other"]))
    b = {"same": a, "1-D": a[1:], "row": (1, a[1]), "column": (a[0], 1), "other": (dim(), dim())}[kind]
    return a, b


@budget()
@given(ab=broadcast_operands(), dtypes=st.tuples(float_dtypes(), float_dtypes()), layouts=st.tuples(L2, L2),
       values=st.tuples(V, V), seed=SEEDS)
@cover(ab=[((4, 16), (16,)), ((1, 64), (16, 1)), ((16, 4), (16, 4)), ((2, 2), (3,)), ((4, 3), (4, 3)),
           ((64, 64), (1, 64))],
       dtypes=[(torch.float32, torch.float16), (torch.float16, torch.float16), (torch.float32, torch.float32)],
       layouts=[("contiguous", "contiguous"), ("offset", "contiguous"), ("contiguous", "offset"),
                ("transposed", "contiguous"), ("padded", "contiguous"), ("contiguous", "expanded")],
       values=value_pairs(), seed=[8])
def test_strides_broadcast_add(ab, dtypes, layouts, values, seed):
    (sa, sb) = ab
    a = T(sa, dtypes[0], layouts[0], values[0], seed)
    b = T(sb, dtypes[1], layout_for_shape(sb, layouts[1]), values[1], seed + 1)
    pow2 = all(s > 0 and s & (s - 1) == 0 for s in (*sa, *sb))
    fits = all(p == q or 1 in (p, q) for p, q in zip(sa[::-1], sb[::-1], strict=False))
    r = launch(strides, "broadcast_add", a, b,
               must_accept=dense(a, b) and pow2 and fits and dtypes[0] in F3 and dtypes[1] in F3)
    if r:
        expect(r.out, r.inputs[0] + r.inputs[1], call=r.call)


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V,
       blocks=st.sampled_from([(16, 128), (64, 64), (8, 32)]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, blocks=[(16, 128), (8, 32)], seed=[9])
def test_strides_row_sum_and_col_sum(shape, dtype, layout, values, blocks, seed):
    x = T(shape, dtype, layout, values, seed)
    kw = {"block_m": blocks[0], "block_n": blocks[1]}
    for name, ref, dim in (("row_sum", strides.row_sum_torch, 1), ("col_sum", strides.col_sum_torch, 0)):
        r = launch(strides, name, x, must_accept=dtype in F3, **kw)  # any 2-D view
        if r:
            xs = r.inputs[0]
            expect(r.out, ref(xs), scale=xs.double().abs().sum(dim),
                   acc_rtol=accumulation_rtol(shape[dim], dtype, tf32=False), call=r.call)


# --------------------------------------------------------------------------- tensor_descriptors


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V,
       blocks=st.sampled_from([(128, 64), (16, 16), (32, 256)]), seed=SEEDS)
@cover(shape=[(17, 32), (1, 8), (33, 100), (0, 16), (5, 3), (64, 65), (127, 16)], dtype=DTYPES, layout=LAYOUTS_2D,
       values=VALUES, blocks=[(128, 64), (16, 16)], seed=[21])
def test_tensor_descriptors_transpose(shape, dtype, layout, values, blocks, seed):
    x = T(shape, dtype, layout, values, seed)
    size = torch.empty((), dtype=dtype).element_size()
    aligned = layout == "padded" or (layout in ("contiguous", "row-offset") and shape[1] * size % 16 == 0)
    r = launch(tensor_descriptors, "transpose", x, block_m=blocks[0], block_n=blocks[1],
               must_accept=aligned and dtype in F3 and shape[0] >= 1 and shape[1] * size >= 16)
    if r:
        expect(r.out, tensor_descriptors.transpose_torch(*r.inputs), call=r.call)


# --------------------------------------------------------------------------- int64_offsets

ADD_ONE_DTYPES = (torch.int8, torch.int16, torch.int32, torch.float16, torch.float32)


@budget()
@given(n=sizes(LIMITS.elems), dtype=st.sampled_from([*ADD_ONE_DTYPES, torch.int64, torch.float64]), layout=L1,
       values=V, offsets=st.sampled_from(["auto", "int32", "int64"]), block=st.sampled_from([4096, 16]),
       seed=SEEDS)
@cover(n=SMALL_N, dtype=[*ADD_ONE_DTYPES, torch.int64], layout=LAYOUTS_1D, values=VALUES,
       offsets=["auto", "int32", "int64"], block=[4096, 16], seed=[33])
def test_int64_offsets_add_one(n, dtype, layout, values, offsets, block, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(int64_offsets, "add_one", x, offsets=offsets, block_size=block,
               must_accept=dense(x) and dtype in ADD_ONE_DTYPES)
    if r:
        expect(r.out, int64_offsets.add_one_torch(*r.inputs), call=r.call)


@budget()
@given(n_programs=sizes(300 if not ON_GPU else 100_000, 1), block=st.sampled_from([1, 16, 2**20, 2**30]))
@cover(n_programs=[1, 3, 17], block=[2**30, 16, 1])
def test_int64_offsets_tile_starts(n_programs, block):
    r = launch(int64_offsets, "tile_starts", n_programs, block, int64=True, must_accept=True)
    assert r.out == [i * block for i in range(n_programs)], r.call


# --------------------------------------------------------------------------- program_ids


@budget()
@given(n=sizes(LIMITS.elems), block=st.sampled_from([256, 16, 1024, 1]), num_warps=st.sampled_from([4, 1, 8]))
@cover(n=[0, 1, 17, 1025, 4093], block=[256, 16, 1], num_warps=[4, 1])
def test_program_ids_whoami(n, block, num_warps):
    r = launch(program_ids, "whoami", n, block, num_warps=num_warps, must_accept=n >= 1)
    if r:
        owner, count = r.out
        want_owner, want_count = program_ids.whoami_torch(n, block)
        expect(owner, want_owner, call=r.call)
        assert count == want_count, f"num_programs {count}, expected {want_count}\n  {r.call}"


@budget()
@given(shape=shapes_2d(max_elems=LIMITS.elems_2d // 3), blocks=st.sampled_from([(16, 32), (2, 16), (64, 4)]))
@cover(shape=SMALL_2D, blocks=[(16, 32), (2, 16), (64, 4)])
def test_program_ids_whoami_2d(shape, blocks):
    M, N = shape
    r = launch(program_ids, "whoami_2d", M, N, *blocks, must_accept=M >= 1 and N >= 1)
    if r:
        expect(r.out, program_ids.whoami_2d_torch(M, N, *blocks), call=r.call)


@budget()
@given(n=sizes(300 if not ON_GPU else 100_000))
@cover(n=[0, 1, 17, 257])
def test_program_ids_take_tickets(n):
    r = launch(program_ids, "take_tickets", n, must_accept=n >= 1)
    if r:
        assert r.out.shape == (n,) and r.out.dtype == torch.int32, r.call
        assert program_ids.is_permutation(r.out), f"tickets are not a permutation of 0..{n - 1}\n  {r.call}"


# --------------------------------------------------------------------------- constexpr_specialization


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V, scale=st.sampled_from([1.0, -2.0, 0.5, 1e3]),
       activation=st.sampled_from(["none", "relu", "gelu"]), block=st.sampled_from([1024, 16]), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, scale=[1.0, -2.0],
       activation=["none", "relu", "gelu"], block=[1024, 16], seed=[26])
def test_constexpr_specialization_scale_act(n, dtype, layout, values, scale, activation, block, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(constexpr_specialization, "scale_act", x, scale, activation, block,
               must_accept=dense(x) and dtype in F3)
    if r:
        expect(r.out, constexpr_specialization.scale_act_torch(r.inputs[0], scale, activation), call=r.call)


POLICIES = ["specialize", "no-specialize", "hinted", "argument-hint"]


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layouts=st.tuples(L1, st.sampled_from([None, *LAYOUTS_1D])),
       values=V, policy=st.sampled_from(POLICIES), block=st.sampled_from([1024, 16]), seed=SEEDS)
@cover(n=[1040, 16, 1024, 1025, 4096, 17, 0, 1], dtype=DTYPES,
       layouts=[("contiguous", None), ("contiguous", "contiguous"), ("offset", "offset"), ("strided", None),
                ("expanded", None), ("contiguous", "strided"), ("contiguous", "expanded")],
       values=VALUES, policy=POLICIES, block=[1024, 16], seed=[27])
def test_constexpr_specialization_copy(n, dtype, layouts, values, policy, block, seed):
    x = T((n,), dtype, layouts[0], values, seed)
    out = None if layouts[1] is None else T((n,), dtype, layouts[1], "poison", seed + 1)
    must = dense(x) and (out is None or dense(out)) and dtype in F3 and (policy in POLICIES[:2] or n % 16 == 0)
    r = launch(constexpr_specialization, "copy", x, out, policy, block, must_accept=must)
    if r:
        expect(r.out, constexpr_specialization.copy_torch(r.inputs[0]), call=r.call)


@budget(0.3)  # a new binary per size on a GPU: the point of the story
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V, block=st.sampled_from([1024, 16]),
       seed=SEEDS)
@cover(n=[1025, 17, 4093, 33, 0, 1], dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, block=[1024, 16], seed=[28])
def test_constexpr_specialization_copy_constexpr_n(n, dtype, layout, values, block, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(constexpr_specialization, "copy_constexpr_n", x, block, must_accept=dense(x) and dtype in F3)
    if r:
        expect(r.out, constexpr_specialization.copy_torch(r.inputs[0]), call=r.call)


# --------------------------------------------------------------------------- autotune

SCALE_KERNELS = ["scale_inplace_kernel", "scale_bucketed", "scale_key_per_size", "scale_key_missing"]


@budget(0.5)
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V, alpha=st.sampled_from([2.0, -0.5, 0.0, 1e3]),
       kernel=st.sampled_from(SCALE_KERNELS), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, alpha=[2.0, -0.5, 0.0], kernel=SCALE_KERNELS,
       seed=[24])
def test_autotune_scale_(n, dtype, layout, values, alpha, kernel, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(autotune, "scale_", x, alpha, kernel=Name(autotune, kernel), must_accept=dense(x) and dtype in F3
               and n >= 1)
    if r:
        expect(r.out, autotune.scale_torch(r.inputs[0], alpha), call=r.call)


@budget(0.5)
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V, seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, seed=[25])
def test_autotune_sum_(n, dtype, layout, values, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(autotune, "sum_", x, must_accept=dense(x) and dtype in F3 and n >= 1)
    if r:
        xs = r.inputs[0]
        expect(r.out, autotune.sum_torch(xs), scale=xs.double().abs().sum().reshape(1),
               acc_rtol=accumulation_rtol(n, dtype, tf32=False), call=r.call)


# --------------------------------------------------------------------------- tile_compute


@budget(0.25)
@given(mnk=shapes_mm(), batch=st.sampled_from([1, 3, 2]), dtype=float_dtypes(), layouts=st.tuples(L2, L2),
       values=MM_VALUES, precision=st.sampled_from(["ieee", "tf32", "tf32x3"]), seed=SEEDS)
@cover(mnk=SMALL_MM, batch=[3, 1], dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       precision=["ieee", "tf32x3", "tf32"], seed=[40])
def test_tile_compute_bmm(mnk, batch, dtype, layouts, values, precision, seed):
    M, N, K = mnk
    a = T((batch, M, K), dtype, layouts[0], values[0], seed)
    b = T((batch, K, N), dtype, layouts[1], values[1], seed + 1)
    r = launch(tile_compute, "bmm", a, b, input_precision=precision, must_accept=dtype in F3)  # any strides
    if r:
        check_matmul(r, dtype, K, lambda: tile_compute.bmm_torch(*r.inputs),
                     tf32=ON_GPU and dtype == torch.float32 and precision == "tf32")


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V, degree=st.integers(0, 16),
       block=st.sampled_from([1024, 16, 256]), seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, degree=[3, 0, 16, 1], block=[1024, 16],
       seed=[41])
def test_tile_compute_polyval(n, dtype, layout, values, degree, block, seed):
    x = T((n,), dtype, layout, values, seed)
    coeffs = T((degree + 1,), torch.float32, "contiguous", "normal", seed + 1)
    r = launch(tile_compute, "polyval", x, coeffs, block_size=block, must_accept=dense(x) and dtype in F3)
    if r:
        xs, cs = r.inputs
        # Horner's rounding error is relative to the same steps on |x| and |c| (and a GPU may fuse each
        # multiply-add into one rounding where torch rounds twice)
        scale = tile_compute.polyval_torch(xs.double().abs(), cs.double().abs()).double()
        expect(r.out, tile_compute.polyval_torch(xs, cs), scale=scale,
               acc_rtol=accumulation_rtol(degree + 1, torch.float32, tf32=False), call=r.call)


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V, block_n=st.sampled_from([64, 16, 128]),
       seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, block_n=[64, 16], seed=[42])
def test_tile_compute_row_argmax(shape, dtype, layout, values, block_n, seed):
    # block_n stays small: the interpreter runs a custom tl.reduce one lane at a time (1024 lanes x 130 rows: ~1 min)
    x = T(shape, dtype, layout, values, seed)
    r = launch(tile_compute, "row_argmax", x, block_n=block_n, must_accept=dtype in F3 and shape[1] >= 1)
    if r:
        expect(r.out, tile_compute.row_argmax_torch(r.inputs[0]), call=r.call)


@budget()
@given(n=sizes(LIMITS.elems), dtype=float_dtypes(), layout=L1, values=V, block=st.sampled_from([1024, 2, 128]),
       seed=SEEDS)
@cover(n=SMALL_N, dtype=DTYPES, layout=LAYOUTS_1D, values=VALUES, block=[1024, 2], seed=[43])
def test_tile_compute_relu(n, dtype, layout, values, block, seed):
    x = T((n,), dtype, layout, values, seed)
    r = launch(tile_compute, "relu", x, block_size=block, must_accept=dense(x) and dtype in F3)
    if r:
        expect(r.out, torch.relu(r.inputs[0]), call=r.call)


# --------------------------------------------------------------------------- persistent_rows


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layouts=st.tuples(L2, L1), values=st.tuples(V, V),
       eps=st.sampled_from([1e-6, 1e-2]), programs_per_sm=st.sampled_from([None, 1, 2]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=WITH_1D,
       values=value_pairs(), eps=[1e-6, 1e-2], programs_per_sm=[None, 2], seed=[20])
def test_persistent_rows_rms_norm(shape, dtype, layouts, values, eps, programs_per_sm, seed):
    x = T(shape, dtype, layouts[0], values[0], seed)
    weight = T(shape[1:], dtype, layouts[1], values[1], seed + 1)
    must = row_major(x) and dense(weight) and dtype in F3 and 1 <= shape[1] <= 32768
    for name, extra in (("rms_norm_rows", {}), ("rms_norm_persistent", {"programs_per_sm": programs_per_sm})):
        r = launch(persistent_rows, name, x, weight, eps, **extra, must_accept=must)
        if r:
            expect(r.out, persistent_rows.rms_norm_torch(*r.inputs), call=r.call)


