"""Property-based tests over every public launcher in examples/ (hypothesis).

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

import math
import sys
from unittest import mock

import attention
import autotune
import constexpr_specialization
import debugging
import dropout
import failure_modes
import int64_offsets
import launch_grids
import launch_overhead
import layer_norm
import linear_gelu
import masks
import matmul
import matmul_persistent
import persistent_rows
import program_ids
import pytest
import scan
import softmax
import split_k
import strides
import tensor_descriptors
import testing_kernels
import tile_compute
import timing_methods
import torch
import torch_op
import vector_add
from hypothesis import given, note
from hypothesis import strategies as st
from strategies import (
    DENSE,
    FLOAT_DTYPES,
    LAYOUTS_1D,
    LAYOUTS_2D,
    LIMITS,
    ON_GPU,
    ROW_MAJOR,
    SEEDS,
    VALUES,
    Name,
    T,
    accumulation_rtol,
    budget,
    cover,
    exact_fp32,
    expect,
    float_dtypes,
    launch,
    names_argument,
    shapes_2d,
    shapes_mm,
    sizes,
)

# NaN and inf inputs make numpy (the interpreter) warn about invalid values and overflow: expected here.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

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
    b = T(sb, dtypes[1], _layout_for(sb, layouts[1]), values[1], seed + 1)
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


# --------------------------------------------------------------------------- softmax


SOFTMAX_VARIANTS = [None, "row", "multirow", "online"] + (["split"] if ON_GPU else [])  # split: GPU only


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V,
       variant=st.sampled_from(SOFTMAX_VARIANTS), block_n=st.sampled_from([None, 16, 256]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES,
       variant=SOFTMAX_VARIANTS, block_n=[None, 16, 256], seed=[10])
def test_softmax(shape, dtype, layout, values, variant, block_n, seed):
    if variant in ("row", "multirow") and shape[1] > 16384:
        variant = "online"  # a forced one-tile variant on a very long row only measures the compiler
    x = T(shape, dtype, layout, values, seed)
    config = {"block_n": block_n} if variant in ("online", "split") and block_n else {}
    fits = True  # split refuses rows of more chunks than SMs
    if variant == "split":
        block = block_n or min(softmax.SPLIT_BLOCK, 1 << max(shape[1] - 1, 0).bit_length())
        fits = -(-shape[1] // block) <= torch.cuda.get_device_properties(0).multi_processor_count
    r = launch(softmax, "softmax", x, variant, **config, names=["x", "variant", "block_n"],
               must_accept=(row_major(x) or shape[1] == 1) and dtype in F3 and shape[1] >= 1 and fits)
    if r:
        expect(r.out, softmax.softmax_torch(r.inputs[0]), call=r.call)


# --------------------------------------------------------------------------- matmul family


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


@budget(0.25)  # autotuned: every new specialization compiles and times each config on a GPU
@given(mnk=shapes_mm(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=MM_VALUES,
       kernel=st.sampled_from(["auto", "pointer", "tma"]), group_m=st.sampled_from([8, 1, 3]), seed=SEEDS)
@cover(mnk=SMALL_MM, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       kernel=["auto", "pointer", "tma"], group_m=[8, 1], seed=[11])
def test_matmul(mnk, dtype, layouts, values, kernel, group_m, seed):
    M, N, K = mnk
    a = T((M, K), dtype, layouts[0], values[0], seed)
    b = T((K, N), dtype, layouts[1], values[1], seed + 1)
    r = launch(matmul, "matmul", a, b, group_m=group_m, kernel=kernel,
               must_accept=dtype in F3 and kernel != "tma")  # any strides, any sizes
    if r:
        check_matmul(r, dtype, K, lambda: matmul.matmul_torch(*r.inputs))


@budget(0.25)
@given(mnk=shapes_mm(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=MM_VALUES,
       variant=st.sampled_from(["auto", "tiles", "persistent", "tma"]), seed=SEEDS)
@cover(mnk=SMALL_MM, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       variant=["auto", "tiles", "persistent", "tma"], seed=[12])
def test_matmul_persistent(mnk, dtype, layouts, values, variant, seed):
    M, N, K = mnk
    a = T((M, K), dtype, layouts[0], values[0], seed)
    b = T((K, N), dtype, layouts[1], values[1], seed + 1)
    r = launch(matmul_persistent, "matmul_persistent", a, b, variant=variant,
               must_accept=dtype in F3 and variant != "tma" and at_least_one(M, N, K))
    if r:
        check_matmul(r, dtype, K, lambda: matmul_persistent.matmul_torch(*r.inputs))


@budget(0.25)
@given(mnk=shapes_mm(), dtype=float_dtypes(), layouts=st.tuples(L2, L2, L1),
       values=st.tuples(V, V, V).filter(lambda v: v[:2] != ("large", "large")),
       kernel=st.sampled_from(["auto", "pointer", "descriptor"]), seed=SEEDS)
@cover(mnk=SMALL_MM, dtype=DTYPES,
       layouts=[("contiguous", "contiguous", "contiguous"), ("contiguous", "transposed", "contiguous"),
                ("transposed", "contiguous", "strided"), ("padded", "transposed", "offset"),
                ("offset", "padded", "expanded"), ("expanded", "offset", "contiguous"),
                ("contiguous", "expanded", "contiguous"), ("row-offset", "transposed", "contiguous")],
       values=[("normal",) * 3, ("special", "normal", "normal"), ("normal", "large", "normal"),
               ("normal", "normal", "special"), ("large", "normal", "large")],
       kernel=["auto", "pointer", "descriptor"], seed=[13])
def test_linear_gelu(mnk, dtype, layouts, values, kernel, seed):
    M, N, K = mnk
    a = T((M, K), dtype, layouts[0], values[0], seed)
    w = T((K, N), dtype, layouts[1], values[1], seed + 1)  # "transposed" is nn.Linear's weight.t()
    bias = T((N,), dtype, layouts[2], values[2], seed + 2)
    r = launch(linear_gelu, "linear_gelu", a, w, bias, kernel=kernel,
               must_accept=dtype in F3 and kernel != "descriptor" and at_least_one(M, N, K))
    if r:
        a_, w_, bias_ = r.inputs
        check_matmul(r, dtype, K, lambda: linear_gelu.linear_gelu_reference(a_, w_, bias_), lipschitz=GELU_LIPSCHITZ,
                     scale=scale_mm(a_, w_) + bias_.double().abs())


@budget(0.3)
@given(mnk=shapes_mm(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=MM_VALUES,
       split=st.sampled_from([None, 1, 2, 3, 7]), blocks=st.sampled_from([(64, 128, 64), (16, 16, 16), (32, 64, 32)]),
       seed=SEEDS)
@cover(mnk=SMALL_MM, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       split=[None, 1, 2, 3, 7], blocks=[(64, 128, 64), (16, 16, 16)], seed=[14])
def test_split_k(mnk, dtype, layouts, values, split, blocks, seed):
    M, N, K = mnk
    a = T((M, K), dtype, layouts[0], values[0], seed)
    b = T((K, N), dtype, layouts[1], values[1], seed + 1)
    r = launch(split_k, "matmul_split_k", a, b, split, *blocks, must_accept=dtype in F3)  # any strides
    if r:
        check_matmul(r, dtype, K, lambda: split_k.matmul_split_k_torch(*r.inputs[:2]))


@budget(0.3)
@given(mnk=shapes_mm(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=MM_VALUES,
       out_layout=st.sampled_from([None, "contiguous", "transposed", "padded"]),
       precision=st.sampled_from(["tf32", "ieee"]), block=st.sampled_from([(64, 64, 32), (16, 16, 16), (32, 64, 16)]),
       seed=SEEDS)
@cover(mnk=SMALL_MM, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       out_layout=[None, "contiguous", "transposed", "padded"], precision=["tf32", "ieee"],
       block=[(64, 64, 32), (16, 16, 16)], seed=[15])
def test_testing_kernels_matmul_relu(mnk, dtype, layouts, values, out_layout, precision, block, seed):
    M, N, K = mnk
    x = T((M, K), dtype, layouts[0], values[0], seed)
    w = T((K, N), dtype, layouts[1], values[1], seed + 1)
    out = None if out_layout is None else T((M, N), dtype, out_layout, "poison", seed + 2)  # NaN until written
    r = launch(testing_kernels, "matmul_relu", x, w, out, input_precision=precision, block=block,
               must_accept=dtype in F3)  # any strides
    if r:
        check_matmul(r, dtype, K, lambda: testing_kernels.matmul_relu_torch(*r.inputs[:2]).to(dtype),
                     tf32=dtype == torch.float32 and ON_GPU and precision == "tf32")


@budget(0.3)
@given(mnk=shapes_mm(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=MM_VALUES,
       precision=st.sampled_from(["tf32", "ieee"]), seed=SEEDS)
@cover(mnk=SMALL_MM, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       precision=["tf32", "ieee"], seed=[16])
def test_failure_modes_matmul(mnk, dtype, layouts, values, precision, seed):
    M, N, K = mnk
    a = T((M, K), dtype, layouts[0], values[0], seed)
    b = T((K, N), dtype, layouts[1], values[1], seed + 1)
    r = launch(failure_modes, "matmul", a, b, precision=precision,
               must_accept=dtype in (torch.float16, torch.float32))  # any strides
    if r:
        check_matmul(r, dtype, K, lambda: failure_modes.matmul_torch(*r.inputs[:2]),
                     tf32=dtype == torch.float32 and ON_GPU and precision == "tf32")


@budget()
@given(tile=st.sampled_from([16, 32, 64, 128, 0, 1, 17]), dtype=float_dtypes(), layouts=st.tuples(L2, L2),
       values=MM_VALUES, precision=st.sampled_from(["tf32", "ieee"]), seed=SEEDS)
@cover(tile=[16, 32, 64, 128, 17, 1], dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D), values=value_pairs(),
       precision=["ieee", "tf32"], seed=[17])
def test_debugging_launch_tile_matmul(tile, dtype, layouts, values, precision, seed):
    a = T((tile, tile), dtype, layouts[0], values[0], seed)
    b = T((tile, tile), dtype, layouts[1], values[1], seed + 1)
    r = launch(debugging, "launch_tile_matmul", a, b, input_precision=precision,
               must_accept=dense(a, b) and tile in (16, 32, 64, 128) and dtype in F3)
    if r:
        c, _ = r.out
        a_, b_ = r.inputs
        r.out = c
        check_matmul(r, dtype, tile, lambda: (a_.float() @ b_.float()).to(dtype),
                     tf32=dtype == torch.float32 and ON_GPU and precision == "tf32")


# --------------------------------------------------------------------------- scan


@budget()
@given(shape=shapes_2d(max_cols=4096), dtype=float_dtypes(), layout=L2, values=V,
       block_n=st.sampled_from([None, 16, 64]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, block_n=[None, 16, 64], seed=[18])
def test_scan_cumsum(shape, dtype, layout, values, block_n, seed):
    x = T(shape, dtype, layout, values, seed)
    r = launch(scan, "cumsum", x, block_n, must_accept=(row_major(x) or shape[1] == 1) and dtype in F3)
    if r:
        xs = r.inputs[0]
        expect(r.out, scan.cumsum_torch(xs), scale=torch.cumsum(xs.double().abs(), -1),
               acc_rtol=accumulation_rtol(shape[1], dtype, tf32=False), call=r.call)


def _scan_scale(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The recurrence on |a| and |x| in float64: what the rounding error of h is relative to."""
    h = torch.empty(x.shape, dtype=torch.float64, device=x.device)
    state = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
    a, x = a.double().abs(), x.double().abs()
    for j in range(x.shape[1]):
        state = a[:, j] * state + x[:, j]
        h[:, j] = state
    return h


@budget(0.5)
@given(shape=shapes_2d(max_elems=LIMITS.elems_2d // 3, max_cols=2048), dtype=float_dtypes(),
       layouts=st.tuples(L2, L2), values=st.tuples(st.sampled_from(["normal", "special"]), V),
       block_n=st.sampled_from([None, 16, 64]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D),
       values=[("normal", "normal"), ("special", "normal"), ("normal", "special"), ("normal", "large")],
       block_n=[None, 16, 64], seed=[19])
def test_scan_linear_scan(shape, dtype, layouts, values, block_n, seed):
    # a's values: normal or with NaN/inf, not 1e30 decays (the fp32 state would overflow where the
    # float64 reference does not: a property of the reference, not of the kernel).
    a = T(shape, dtype, layouts[0], values[0], seed)
    x = T(shape, dtype, layouts[1], values[1], seed + 1)
    r = launch(scan, "linear_scan", a, x, block_n,
               must_accept=(row_major(a, x) or shape[1] == 1) and dtype in F3)
    if r:
        a_, x_ = r.inputs[:2]
        ref = scan.linear_scan_torch(a_, x_)
        # The one documented difference (see scan.linear_scan): after an infinite decay, a tree scan
        # may add inf and -inf where the sequential loop multiplies one inf. Only there, and only
        # NaN for +-inf, is accepted.
        out = r.out.clone()
        tree = out.isnan() & ref.isinf() & (a_.isinf().cumsum(dim=1) > 0)
        out[tree] = ref[tree]
        expect(out, ref, scale=_scan_scale(a_, x_),
               acc_rtol=accumulation_rtol(shape[1], dtype, tf32=False), call=r.call)


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


# --------------------------------------------------------------------------- torch_op


def expect_silu_grad(got, want, x, dy, call):
    """dy * s * (1 + x * (1 - s)) cancels where silu' crosses 0 (x near -1.28): the error is relative
    to the three terms' magnitudes, not to the result."""
    s = torch.sigmoid(x.double())
    scale = dy.double().abs() * s * (1 + x.double().abs() * (1 - s))
    expect(got, want, scale=scale, acc_rtol=accumulation_rtol(3, x.dtype, tf32=False), call=call)


@st.composite
def shapes_any(draw):
    """A 1-D or 2-D shape."""
    return draw(st.one_of(st.tuples(sizes(LIMITS.elems)), shapes_2d()))


def _layout_for(shape, layout: str) -> str:
    """A 2-D layout name for a 1-D shape: the 1-D layouts have no transpose and no padding."""
    one_d = {"transposed": "strided", "padded": "strided", "row-offset": "offset"}
    return one_d.get(layout, layout) if len(shape) == 1 else layout


@budget()
@given(shape=shapes_any(), dtype=float_dtypes(), layouts=st.tuples(L2, L2), values=st.tuples(V, V),
       op=st.sampled_from(["silu", "silu_opaque"]), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), *SMALL_2D[:6], (0,), (1,)], dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D),
       values=value_pairs(), op=["silu", "silu_opaque"], seed=[22])
def test_torch_op_silu_forward_and_backward(shape, dtype, layouts, values, op, seed):
    x = T(shape, dtype, _layout_for(shape, layouts[0]), values[0], seed)
    dy = T(shape, dtype, _layout_for(shape, layouts[1]), values[1], seed + 1)
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
    x = T(shape, dtype, _layout_for(shape, layouts[0]), values[0], seed)
    dy = T(shape, dtype, _layout_for(shape, layouts[1]), values[1], seed + 1)
    r = launch(torch_op, "silu_forward", x, must_accept=dense(x) and dtype in F3)
    if r:
        expect(r.out, torch_op.silu_torch(*r.inputs), call=r.call)
    r = launch(torch_op, "silu_backward", x, dy, must_accept=dense(x, dy) and dtype in F3)
    if r:
        x_, dy_ = r.inputs
        ref = x_.detach().clone().requires_grad_()
        torch_op.silu_torch(ref).backward(dy_)
        expect_silu_grad(r.out, ref.grad, x_, dy_, r.call)


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
    x = T(shape, dtype, _layout_for(shape, layout), values, seed)
    extra = {"launches": 2} if launcher == "GraphLauncher" else {}
    r = launch(launch_overhead, launcher, x, alpha, **extra, call_result=launcher.endswith("Launcher"),
               must_accept=dense(x) and dtype in (torch.float16, torch.float32) and math.prod(shape) >= 1)
    if r:
        expect(r.out, launch_overhead.add_scalar_torch(r.inputs[0], alpha), call=r.call)


# --------------------------------------------------------------------------- block-size arguments

BAD_BLOCKS = [0, 3, 48, 1000, -64]


def _vec(n=1025, dtype=torch.float32, seed=0):
    return T((n,), dtype, "contiguous", "normal", seed)


def _mat(m=33, n=65, dtype=torch.float32, seed=0):
    return T((m, n), dtype, "contiguous", "normal", seed)


# (module, launcher, positional args, keyword holding the block size, reference on the built inputs)
BLOCK_CASES = {
    "vector_add.add": (vector_add, "add", (_vec(), _vec(seed=1)), "block_size", lambda x, y: x + y),
    "launch_grids.scale_shift": (launch_grids, "scale_shift", (_vec(), 2.0), "block_size",
                                 lambda x, a: launch_grids.scale_shift_torch(x, a)),
    "launch_grids.add_row_bias": (launch_grids, "add_row_bias", (_mat(), _vec(65)), "block_m",
                                  launch_grids.add_row_bias_torch),
    "launch_grids.add_batch_bias": (launch_grids, "add_batch_bias", (T((2, 3, 65), torch.float32), _mat(2, 65)),
                                    "block_n", launch_grids.add_batch_bias_torch),
    "masks.bias_relu": (masks, "bias_relu", (_mat(), _vec(65)), "block_n", masks.bias_relu_torch),
    "strides.copy_2d": (strides, "copy_2d", (_mat(),), "block_m", strides.copy_2d_torch),
    "strides.row_sum": (strides, "row_sum", (_mat(),), "block_n", strides.row_sum_torch),
    "strides.col_sum": (strides, "col_sum", (_mat(),), "block_m", strides.col_sum_torch),
    "softmax.softmax[online]": (softmax, "softmax", (_mat(), "online"), "block_n", softmax.softmax_torch),
    "softmax.softmax[multirow]": (softmax, "softmax", (_mat(), "multirow"), "rows", softmax.softmax_torch),
    "scan.cumsum": (scan, "cumsum", (_mat(),), "block_n", scan.cumsum_torch),
    "split_k.matmul_split_k": (split_k, "matmul_split_k", (_mat(33, 40), _mat(40, 17, seed=1)), "block_k",
                               split_k.matmul_split_k_torch),
    "tensor_descriptors.transpose": (tensor_descriptors, "transpose", (_mat(33, 64),), "block_m",
                                     tensor_descriptors.transpose_torch),
    "constexpr_specialization.scale_act": (constexpr_specialization, "scale_act", (_vec(),), "block_size",
                                           constexpr_specialization.scale_act_torch),
    "constexpr_specialization.copy": (constexpr_specialization, "copy", (_vec(),), "block_size",
                                      constexpr_specialization.copy_torch),
    "constexpr_specialization.copy_constexpr_n": (constexpr_specialization, "copy_constexpr_n", (_vec(),),
                                                  "block_size", constexpr_specialization.copy_torch),
    "timing_methods.saxpy": (timing_methods, "saxpy", (2.0, _vec(), _vec(seed=1)), "block_size",
                             timing_methods.saxpy_torch),
    "failure_modes.fill": (failure_modes, "fill", (T((1025,), torch.int32), 5), "block_size",
                           lambda y, v: torch.full_like(y, v)),
    "failure_modes.scale": (failure_modes, "scale", (_vec(), 2.0), "block_size",
                            lambda x, a: (x.float() * a).to(x.dtype)),
    "failure_modes.add": (failure_modes, "add", (_vec(), _vec(seed=1)), "block_size", lambda x, y: x + y),
    "failure_modes.tile_offsets": (failure_modes, "tile_offsets", (5, 2), "block_size", None),
    "int64_offsets.add_one": (int64_offsets, "add_one", (_vec(),), "block_size", int64_offsets.add_one_torch),
    "int64_offsets.tile_starts": (int64_offsets, "tile_starts", (3,), "block_size", None),
    "program_ids.whoami": (program_ids, "whoami", (1025,), "block_size", None),
    "program_ids.whoami_2d": (program_ids, "whoami_2d", (33, 65), "block_n", None),
    "launch_overhead.WarmLauncher": (launch_overhead, "WarmLauncher", (_vec(), 1.5), "block_size",
                                     launch_overhead.add_scalar_torch),
    "tile_compute.polyval": (tile_compute, "polyval", (_vec(), T((3,), torch.float32)), "block_size",
                             tile_compute.polyval_torch),
    "tile_compute.row_argmax": (tile_compute, "row_argmax", (_mat(),), "block_n", tile_compute.row_argmax_torch),
}
BLOCK_REFERENCES = {  # launchers of sizes, not tensors: their own reference, given the block size
    "failure_modes.tile_offsets": lambda b: [(5 + t) * b + j for t in range(2) for j in range(b)],
    "int64_offsets.tile_starts": lambda b: [i * b for i in range(3)],
    "program_ids.whoami": lambda b: program_ids.whoami_torch(1025, b),
    "program_ids.whoami_2d": lambda b: program_ids.whoami_2d_torch(33, 65, 16, b),
}


@pytest.mark.parametrize("case", sorted(BLOCK_CASES))
@budget(0.2)
@given(block=st.sampled_from(BAD_BLOCKS))
@cover(block=BAD_BLOCKS)
def test_block_size_arguments(case, block):
    """A tile size that is not a power of two (or not positive) is refused, naming the argument, or works."""
    module, name, args, key, ref = BLOCK_CASES[case]
    extra = {"int64": True} if case == "int64_offsets.tile_starts" else {}
    r = launch(module, name, *args, **{key: block}, **extra, must_accept=False, names=[key],
               call_result=name == "WarmLauncher")
    if r is None:
        return
    if case in BLOCK_REFERENCES:
        want = BLOCK_REFERENCES[case](block)
        got = r.out
        if isinstance(want, tuple):  # whoami: (owner, count)
            expect(got[0], want[0], call=r.call)
            assert got[1] == want[1], r.call
        elif isinstance(want, list):
            assert got == want, r.call
        else:
            expect(got, want, call=r.call)
        return
    scale = {"row_sum": lambda x: x.double().abs().sum(1), "col_sum": lambda x: x.double().abs().sum(0),
             "matmul_split_k": scale_mm}.get(name)
    tensors = [t for t in r.inputs if isinstance(t, torch.Tensor)][:2 if name == "matmul_split_k" else 1]
    expect(r.out, ref(*r.inputs), scale=None if scale is None else scale(*tensors),
           acc_rtol=accumulation_rtol(65, torch.float32), call=r.call)


# --------------------------------------------------------------------------- the machinery itself


def test_make_builds_the_layouts_it_names():
    shape = (5, 7)
    for layout in LAYOUTS_2D:
        t = T(shape, torch.float32, layout, "normal", 3).build()
        assert t.shape == shape, layout
        if layout == "transposed":
            assert t.stride() == (1, 5)
        elif layout == "padded":
            assert t.stride() == (16, 1)
        elif layout in ("offset", "row-offset"):
            assert t.is_contiguous() and t.storage_offset() == (1 if layout == "offset" else 7)
        elif layout == "expanded":
            assert t.stride() == (0, 1)
        else:
            assert t.is_contiguous() and t.storage_offset() == 0
        assert torch.equal(t, T(shape, torch.float32, layout, "normal", 3).build()), "make() is deterministic"
    assert T((4,), torch.float32, "strided").build().stride() == (2,)
    special = T((1000,), torch.float16, "contiguous", "special", 1).build()
    assert special.isnan().sum() == 1 and (special == float("inf")).sum() == 1 and (special == -float("inf")).sum() == 1
    ints = T((9,), torch.int8, "contiguous", "large", 2).build()
    assert ints.min() == -128 and ints.max() == 127  # both ends of the range are present


def test_expect_catches_what_it_must():
    want = torch.tensor([1.0, float("nan"), float("inf"), -2.0])
    expect(want.clone(), want)
    for got in (torch.tensor([1.001, float("nan"), float("inf"), -2.0]),  # off by 1e-3 at fp32's 1e-5
                torch.tensor([1.0, 0.0, float("inf"), -2.0]),  # a NaN lost
                torch.tensor([1.0, float("nan"), float("-inf"), -2.0]),  # an inf with the wrong sign
                torch.tensor([1.0, float("nan"), 3e38, -2.0])):  # inf where the reference has no overflow
        with pytest.raises(AssertionError):
            expect(got, torch.tensor([1.0, float("nan"), float("inf"), -2.0]) if got[2] != 3e38 else
                   torch.tensor([1.0, float("nan"), 3.0, -2.0]))
    with pytest.raises(AssertionError):
        expect(want.half(), want)  # the dtype is part of the answer
    # A sum whose terms cancel: the error allowed is relative to the sum of magnitudes.
    expect(torch.tensor([1e-3]), torch.tensor([0.0]), scale=torch.tensor([1e3]), acc_rtol=1e-5)
    with pytest.raises(AssertionError):
        expect(torch.tensor([1e-1]), torch.tensor([0.0]), scale=torch.tensor([1e3]), acc_rtol=1e-5)
    # Rounding at the overflow threshold: 65504 and inf are both right for fp16 when the exact value is ~65519.
    expect(torch.tensor([float("inf")], dtype=torch.float16), torch.tensor([65504.0], dtype=torch.float16))


def test_refusals_must_name_an_argument():
    def refuse(x, block_size=1):
        raise ValueError("unsupported input")

    module = type(sys)("fake")
    module.refuse = refuse
    with pytest.raises(AssertionError, match="names none of the arguments"):
        launch(module, "refuse", T((3,), torch.float32), must_accept=False)
    with pytest.raises(AssertionError, match="refused an input it must take"):
        launch(module, "refuse", T((3,), torch.float32), must_accept=True)


# --------------------------------------------------------------------------- layer_norm

LN_LAYOUTS = [(lay, LAYOUTS_1D[i % len(LAYOUTS_1D)], LAYOUTS_1D[(i + 1) % len(LAYOUTS_1D)])
              for i, lay in enumerate(LAYOUTS_2D)]  # x's layout with weight's and bias's


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layouts=st.tuples(L2, L1, L1), values=st.tuples(V, V, V),
       eps=st.sampled_from([1e-5, 1.0, 1e-12, 0.0, -1e-3, float("nan")]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=LN_LAYOUTS,
       values=[(v, "normal", "normal") for v in VALUES] + [("normal", "special", "large"),
                                                           ("normal", "large", "special")],
       eps=[1e-5, 1.0, 1e-12, 0.0, float("nan")], seed=[60])
def test_layer_norm(shape, dtype, layouts, values, eps, seed):
    x = T(shape, dtype, layouts[0], values[0], seed)
    w = T(shape[1:], dtype, layouts[1], values[1], seed + 1)
    b = T(shape[1:], dtype, layouts[2], values[2], seed + 2)
    r = launch(layer_norm, "layer_norm", x, w, b, eps,  # weight and bias: any strides (made contiguous)
               must_accept=row_major(x) and dtype in F3 and eps > 0 and shape[1] <= layer_norm.MAX_N)
    if r:
        expect(r.out, layer_norm.layer_norm_torch(*r.inputs), call=r.call)


# --------------------------------------------------------------------------- dropout

DROPOUT_PS = [0.3, 0.0, 1.0, 0.9, 1.5, -0.1]  # the last two must be refused, naming p
DROPOUT_SEEDS = [7, 0, 2**31 + 7, 2**63 - 1, 2**63]  # 2**63: refused, naming seed


@budget()
@given(shape=shapes_any(), dtype=float_dtypes(extra=(torch.float64, torch.int32)), layout=L2, values=V,
       p=st.sampled_from(DROPOUT_PS), rng=st.sampled_from(DROPOUT_SEEDS), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), (1025, 3), *SMALL_2D[:5], (0,), (1,)],
       dtype=[*DTYPES, torch.int32], layout=LAYOUTS_2D, values=VALUES, p=DROPOUT_PS, rng=DROPOUT_SEEDS, seed=[61])
def test_dropout(shape, dtype, layout, values, p, rng, seed):
    """Any layout: every output element is 0 or x * fp32(1 / (1 - p)) as the mask of (rng, row-major
    index) says, the same as for the contiguous copy, and the same on a second call."""
    x = T(shape, dtype, _layout_for(shape, layout), values, seed)
    ok = dtype in (*F3, torch.float64) and 0 <= p <= 1 and 0 <= rng < 2**63
    r = launch(dropout, "dropout", x, p, rng, must_accept=ok)
    if r:
        x_ = r.inputs[0]
        expect(r.out, dropout.dropout_reference(x_, dropout.dropout_mask(shape, p, rng), p), call=r.call)
        expect(dropout.dropout(x_.contiguous(), p, rng), r.out, call=r.call)  # deterministic, layout-free


# --------------------------------------------------------------------------- attention

ATTN_HEAD_DIMS = [16, 32, 64, 16, 32, 64, 8, 17]  # the last two must be refused, naming head_dim
ATTN_LAYOUTS = [("contiguous",) * 3, ("padded", "offset", "expanded"), ("offset", "row-offset", "padded"),
                ("transposed", "contiguous", "contiguous"), ("expanded", "padded", "row-offset"),
                ("row-offset", "expanded", "offset")]


@st.composite
def shapes_attention(draw):
    """(batch, heads, seq, head_dim), tiny: the interpreter runs every (block, head) program."""
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(sizes(70)), draw(st.sampled_from(ATTN_HEAD_DIMS)))


@budget()
@given(shape=shapes_attention(), dtype=float_dtypes(),
       layouts=st.one_of(st.sampled_from(ATTN_LAYOUTS), st.tuples(L2, L2, L2)),
       values=st.tuples(V, V, st.sampled_from(["normal", "large"])), causal=st.booleans(), seed=SEEDS)
@cover(shape=[(2, 2, 17, 16), (1, 2, 33, 32), (1, 1, 1, 64), (2, 1, 31, 16), (1, 2, 64, 32), (1, 1, 0, 16),
              (2, 2, 13, 32), (1, 1, 5, 17), (1, 2, 9, 8)],
       dtype=[*FLOAT_DTYPES, torch.float32, torch.float16, torch.float64], layouts=ATTN_LAYOUTS,
       values=[("normal", "normal", "normal"), ("special", "normal", "normal"), ("normal", "special", "large"),
               ("large", "normal", "normal"), ("normal", "large", "normal")],
       causal=[False, True], seed=[62])
def test_attention(shape, dtype, layouts, values, causal, seed):
    """v draws no NaN/inf: a causal kernel never reads the values past a query's diagonal block, where the
    reference multiplies 0 * NaN into every row (see docs/kernels/attention.md, Pitfalls)."""
    q, k, v = (T(shape, dtype, layouts[i], values[i], seed + i) for i in range(3))
    must = row_major(q, k, v) and dtype in F3 and shape[3] in attention.HEAD_DIMS
    r = launch(attention, "attention", q, k, v, causal, must_accept=must, names=["q", "k", "v", "head_dim"])
    if r:
        q_, k_, v_ = r.inputs[:3]
        with exact_fp32():
            ref = attention.attention_torch(q_, k_, v_, causal)
            scale = attention.attention_torch(q_.double(), k_.double(), v_.double().abs(), causal)  # P @ |V|
        # P is rounded to the input dtype before P @ V (as in FlashAttention): for fp16/bf16 the error is
        # that rounding, relative to P @ |V|
        acc = accumulation_rtol(shape[2], dtype) if dtype == torch.float32 else torch.finfo(dtype).eps
        expect(r.out, ref, scale=scale, acc_rtol=acc, call=r.call)


# --------------------------------------------------------------------------- gradients of the capstone kernels
# The three differentiable launchers, backward through autograd on drawn shapes, layouts and dy layouts,
# against torch's autograd in float64 (cast to the input dtype). Inputs the forward tests above show refused
# are not drawn here: every call must succeed.

def grad_call(module, fn: str, tensors: dict, args: str, dy: T) -> str:
    """A one-line reproduction: build the inputs with requires_grad, call, backward, print the gradients."""
    build = "; ".join(f"{k} = {v!r}.requires_grad_()" for k, v in tensors.items())
    grads = ", ".join(f"{k}.grad" for k in tensors)
    return (f"python -c \"import sys; sys.path[:0] = ['tests', 'examples']; import torch; from strategies import make; "
            f"import {module.__name__}; {build}; {module.__name__}.{fn}({args}).backward({dy!r}); print({grads})\"")


def float64_leaves(*tensors):
    return tuple(t.detach().double().requires_grad_() for t in tensors)


LN_GRAD_LAYOUTS = [lay for lay in LAYOUTS_2D if lay in ROW_MAJOR]  # the layouts layer_norm takes for x


@budget()
@given(shape=shapes_2d(max_cols=layer_norm.MAX_N), dtype=st.sampled_from(FLOAT_DTYPES),
       layouts=st.tuples(st.sampled_from(LN_GRAD_LAYOUTS), L1, L2), eps=st.sampled_from([1e-5, 1e-3, 1.0]),
       op=st.sampled_from(["layer_norm", "layer_norm_op"]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=FLOAT_DTYPES, layouts=[(lay, LAYOUTS_1D[i % 4], LAYOUTS_2D[(i + 1) % 6])
                                                    for i, lay in enumerate(LN_GRAD_LAYOUTS)],
       eps=[1e-5, 1.0], op=["layer_norm", "layer_norm_op"], seed=[64])
def test_layer_norm_gradients(shape, dtype, layouts, eps, op, seed):
    """dx, dweight and dbias. The error of a sum is relative to the sum of its terms' magnitudes: dweight
    and dbias sum over the M rows, dx's two row means over the N columns."""
    x, w = T(shape, dtype, layouts[0], "normal", seed), T(shape[1:], dtype, layouts[1], "normal", seed + 1)
    b, dy = T(shape[1:], dtype, "contiguous", "normal", seed + 2), T(shape, dtype, layouts[2], "normal", seed + 3)
    call = grad_call(layer_norm, op, {"x": x, "w": w, "b": b}, f"x, w, b, {eps!r}", dy)
    note(f"reproduce: {call}")
    xt, wt, bt = (t.build().requires_grad_() for t in (x, w, b))
    dyt = dy.build()
    getattr(layer_norm, op)(xt, wt, bt, eps).backward(dyt)
    x64, w64, b64 = float64_leaves(xt, wt, bt)
    torch.nn.functional.layer_norm(x64, shape[1:], w64, b64, eps).backward(dyt.double())
    with torch.no_grad():
        xd, wd, dyd = x64.detach(), w64.detach(), dyt.double()
        mean = xd.mean(-1, keepdim=True)
        rstd = ((xd - mean).square().mean(-1, keepdim=True) + eps).rsqrt()
        x_hat, g = ((xd - mean) * rstd).abs(), (dyd * wd).abs()
        scale_dx = rstd * (g + x_hat * (g * x_hat).mean(-1, keepdim=True) + g.mean(-1, keepdim=True))
        scales = (scale_dx, (dyd.abs() * x_hat).sum(0), dyd.abs().sum(0))
    for got, want, scale, n_terms in zip((xt.grad, wt.grad, bt.grad), (x64.grad, w64.grad, b64.grad), scales,
                                         (shape[1], shape[0], shape[0]), strict=True):
        expect(got, want.to(dtype), scale=scale, acc_rtol=accumulation_rtol(n_terms, torch.float32, tf32=False),
               call=call)


@budget()
@given(shape=shapes_any(), dtype=st.sampled_from([*FLOAT_DTYPES, torch.float64]), layouts=st.tuples(L2, L2),
       dy_values=V, p=st.sampled_from([0.3, 0.0, 1.0, 0.9]), rng=st.sampled_from([7, 2**31 + 7, 2**63 - 1]),
       op=st.sampled_from(["dropout", "dropout_op"]), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), (1025, 3), *SMALL_2D[:5], (0,), (1,)],
       dtype=[*FLOAT_DTYPES, torch.float64], layouts=layout_pairs(LAYOUTS_2D), dy_values=VALUES,
       p=[0.3, 0.0, 1.0, 0.9], rng=[7, 2**31 + 7, 2**63 - 1], op=["dropout", "dropout_op"], seed=[65])
def test_dropout_gradients(shape, dtype, layouts, dy_values, p, rng, op, seed):
    """dx = dy where the forward kept x (times 1 / (1 - p)), 0 where it dropped it: the mask of x's
    row-major index, regenerated, whatever the layouts of x and dy."""
    x = T(shape, dtype, _layout_for(shape, layouts[0]), "normal", seed)
    dy = T(shape, dtype, _layout_for(shape, layouts[1]), dy_values, seed + 1)
    call = grad_call(dropout, op, {"x": x}, f"x, {p!r}, {rng!r}", dy)
    note(f"reproduce: {call}")
    xt, dyt = x.build().requires_grad_(), dy.build()
    getattr(dropout, op)(xt, p, rng).backward(dyt)
    expect(xt.grad, dropout.dropout_reference(dyt, dropout.dropout_mask(shape, p, rng), p), call=call)


@st.composite
def attention_grad_shapes(draw):
    """(batch, heads, seq_q, seq_k, head_dim) the launcher takes; seq_k differs from seq_q when not causal."""
    seq_q = draw(sizes(70))
    seq_k = draw(st.one_of(st.just(seq_q), sizes(70, lo=1 if seq_q else 0)))
    head_dim = draw(st.sampled_from([16, 32, 64, *([128] if ON_GPU else [])]))
    return draw(st.integers(1, 2)), draw(st.integers(1, 2)), seq_q, seq_k, head_dim


ROW_MAJOR_4D = st.sampled_from(ROW_MAJOR)


@budget(0.5)
@given(shape=attention_grad_shapes(), dtype=st.sampled_from(FLOAT_DTYPES),
       layouts=st.tuples(ROW_MAJOR_4D, ROW_MAJOR_4D, ROW_MAJOR_4D, L2), causal=st.booleans(), seed=SEEDS)
@cover(shape=[(2, 2, 17, 17, 16), (1, 2, 33, 20, 32), (1, 1, 1, 1, 64), (2, 1, 31, 31, 16), (1, 2, 64, 64, 32),
              (1, 1, 5, 70, 16)],
       dtype=FLOAT_DTYPES, layouts=[("contiguous",) * 3 + ("transposed",), ("padded", "offset", "expanded", "padded"),
                                    ("offset", "row-offset", "padded", "expanded"),
                                    ("expanded", "padded", "row-offset", "contiguous"),
                                    ("row-offset", "expanded", "offset", "offset")],
       causal=[False, True], seed=[66])
def test_attention_gradients(shape, dtype, layouts, causal, seed):
    """dq, dk, dv. The errors are relative to magnitudes (float64): dv = P^T dO to P^T |dO|; dS = P * (dP -
    delta) to P * (|dO| |V|^T + rowsum(|dO| * P |V|)), and dq, dk to |dS| |K| and |dS|^T |Q|. fp16/bf16
    round P and dS to the input dtype before their products (as FlashAttention does): 2 eps of the dtype."""
    b, h, m, n, d = shape
    causal = causal and m == n
    q = T((b, h, m, d), dtype, layouts[0], "normal", seed)
    k, v = (T((b, h, n, d), dtype, layouts[i], "normal", seed + i) for i in (1, 2))
    do = T((b, h, m, d), dtype, layouts[3], "normal", seed + 3)
    call = grad_call(attention, "attention", {"q": q, "k": k, "v": v}, f"q, k, v, {causal}", do)
    note(f"reproduce: {call}")
    qt, kt, vt = (t.build().requires_grad_() for t in (q, k, v))
    dot = do.build()
    attention.attention(qt, kt, vt, causal).backward(dot)
    q64, k64, v64 = float64_leaves(qt, kt, vt)
    attention.attention_torch(q64, k64, v64, causal).backward(dot.double())
    with torch.no_grad():
        qd, kd, vd, dod = q64.detach(), k64.detach(), v64.detach(), dot.double()
        sm = 1 / math.sqrt(d)
        s = qd @ kd.transpose(-1, -2) * sm
        if causal:
            s = s.masked_fill(torch.ones(m, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        prob = torch.softmax(s, -1) if n else s
        delta = (dod.abs() * (prob @ vd.abs())).sum(-1, keepdim=True)
        ds = prob * (dod.abs() @ vd.abs().transpose(-1, -2) + delta)
        scales = (sm * ds @ kd.abs(), sm * ds.transpose(-1, -2) @ qd.abs(), prob.transpose(-1, -2) @ dod.abs())
    acc = (accumulation_rtol(max(m, n, d), dtype, tf32=False) if dtype == torch.float32
           else 2 * torch.finfo(dtype).eps)
    for got, want, scale in zip((qt.grad, kt.grad, vt.grad), (q64.grad, k64.grad, v64.grad), scales, strict=True):
        expect(got, want.to(dtype), scale=scale.expand_as(want), acc_rtol=acc, call=call)
