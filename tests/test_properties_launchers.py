"""Property-based tests (hypothesis): every launcher's block-size arguments, and the machinery.

The property, the profiles and the sizes are described once, in tests/property_helpers.py.
"""

from __future__ import annotations

import sys

import constexpr_specialization
import failure_modes
import int64_offsets
import launch_grids
import launch_overhead
import masks
import program_ids
import pytest
import scan
import softmax
import split_k
import strides
import tensor_descriptors
import tile_compute
import timing_methods
import torch
import vector_add
from hypothesis import given
from hypothesis import strategies as st
from property_helpers import (
    PYTESTMARK,
    scale_mm,
)
from strategies import (
    LAYOUTS_2D,
    T,
    accumulation_rtol,
    budget,
    cover,
    expect,
    launch,
)

pytestmark = PYTESTMARK


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


