"""Property-based tests (hypothesis) of the matmul family.

matmul, matmul_persistent, linear_gelu, split_k, and the matmuls of the practice pages
(testing_kernels, failure_modes, debugging).

The property, the profiles and the sizes are described once, in tests/property_helpers.py.
"""

from __future__ import annotations

import debugging
import failure_modes
import linear_gelu
import matmul
import matmul_persistent
import split_k
import testing_kernels
import torch
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import (
    DTYPES,
    F3,
    GELU_LIPSCHITZ,
    L1,
    L2,
    MM_VALUES,
    PYTESTMARK,
    SMALL_MM,
    V,
    at_least_one,
    check_matmul,
    dense,
    layout_pairs,
    scale_mm,
    value_pairs,
)
from strategies import (
    LAYOUTS_2D,
    ON_GPU,
    SEEDS,
    T,
    budget,
    cover,
    float_dtypes,
    launch,
    shapes_mm,
)

pytestmark = PYTESTMARK


# --------------------------------------------------------------------------- matmul family


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


