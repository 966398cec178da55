import pytest
import strides as ex
import torch
from support import DEVICE, FLOAT_DTYPES, requires_gpu, tolerances

from benchmarks.cases import strides as cases


def x_(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def views(dtype=torch.float32):
    """Non-contiguous 2-D views of every kind the launchers accept, on odd sizes."""
    base = x_(3, 37, 41, dtype=dtype)
    return {
        "contiguous": base[1],
        "t": base[1].t(),
        "step slice": base[1, ::2, ::3],
        "t of an offset slice": base[1, 1:, 5:].t(),
        "narrow": base[2].narrow(1, 3, 20),
        "select middle": base.select(1, 7),  # (3, 41), strides (37 * 41, 1)
        "select last": base.select(2, 40),  # (3, 37), strides (37 * 41, 41)
        "expand (stride 0)": x_(1, 17, dtype=dtype).expand(9, 17),
        "single row": base[0, 4:5],
        "single column": base[0, :, 6:7],
        "padded rows big[:, :K]": base[2][:, :30],
        "storage offset big[3:]": base[2][3:],
    }


VIEW_NAMES = list(views())


def test_views_are_what_they_claim():
    v = views()
    contiguous = ("contiguous", "single row", "storage offset big[3:]")
    assert all(v[k].is_contiguous() for k in contiguous)
    assert all(not t.is_contiguous() for k, t in v.items() if k not in contiguous)
    assert v["storage offset big[3:]"].storage_offset() > 0
    assert v["padded rows big[:, :K]"].stride() == (41, 1)


# ---- copy and transpose ------------------------------------------------------------


@pytest.mark.parametrize("name", VIEW_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_copy_2d_any_view(name, dtype):
    x = views(dtype)[name]
    y = ex.copy_2d(x)
    assert y.is_contiguous() and y.shape == x.shape
    torch.testing.assert_close(y, ex.copy_2d_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(1, 1), (1, 17), (127, 3), (33, 1025)])
def test_transpose(shape):
    x = x_(*shape)
    y = ex.transpose(x)
    assert y.is_contiguous() and y.shape == shape[::-1]
    torch.testing.assert_close(y, x.t().contiguous(), rtol=0, atol=0)


@pytest.mark.parametrize("block_m, block_n", [(2, 4), (16, 64), (128, 8)])
def test_copy_2d_block_shapes(block_m, block_n):
    x = x_(45, 70)[::3]
    torch.testing.assert_close(ex.copy_2d(x, block_m=block_m, block_n=block_n), x.contiguous(), rtol=0, atol=0)


@pytest.mark.parametrize("int64", [False, True])
def test_copy_2d_writes_every_element(int64):
    # The int64 variant is the same copy; only its index arithmetic is wider.
    x = x_(37, 41).t()
    y = torch.full((41, 37), float("nan"), device=DEVICE)
    ex.copy_2d_kernel[(3, 3)](x, y, 41, 37, *x.stride(), *y.stride(), BLOCK_M=16, BLOCK_N=16, INT64=int64)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, x.contiguous(), rtol=0, atol=0)


def test_copy_2d_keeps_nan_and_inf():
    x = x_(9, 13).t()
    x[2, ::3] = float("nan")
    x[5, 1] = float("inf")
    x[0, 4] = float("-inf")
    x[7, 7] = 3e38
    torch.testing.assert_close(ex.copy_2d(x, block_m=4, block_n=8), x.contiguous(), rtol=0, atol=0, equal_nan=True)


# ---- offsets past 2**31 - 1 and grid limits, decided on the host ------------------

def big_expanded():
    """torch.arange(70000)[None].expand(40000, 70000): 70,000 elements of storage, 2.8e9 of output."""
    return torch.empty(1, 70000).expand(40000, 70000)  # a CPU view: nothing of 2.8e9 elements is allocated


def test_reach():
    assert ex.reach(x_(3, 5)) == 14
    assert ex.reach(x_(3, 5).t()) == 14
    assert ex.reach(x_(6, 8)[::2, 1:4]) == 2 * 16 + 2
    assert ex.reach(big_expanded()) == 69_999
    assert ex.reach(torch.empty(0, 7)) == 0


def test_launch_plan_small_views_keep_int32():
    for name, x in views().items():
        grid, args, meta = ex.copy_2d_launch(x, 64, 64)
        assert meta["INT64"] is False, name
        assert grid == (ex.triton.cdiv(x.shape[0], 64), ex.triton.cdiv(x.shape[1], 64))
        assert args == [*x.shape, *x.stride(), x.shape[1], 1]


def test_launch_plan_int64_when_the_output_passes_2_31():
    # The input reaches offset 69,999; the output will reach 2.8e9 - 1.
    grid, args, meta = ex.copy_2d_launch(big_expanded(), 64, 64)
    assert meta == {"BLOCK_M": 64, "BLOCK_N": 64, "INT64": True}
    assert grid == (625, 1094) and args == [40000, 70000, 0, 1, 70000, 1]


def test_launch_plan_int64_when_the_input_passes_2_31():
    # A transposed view of a (70000, 40000) tensor: its column stride is 40000.
    x = torch.empty(70000, 40000, device="meta").t()[:, :5]
    assert ex.reach(x) == 39_999 + 4 * 40_000 and ex.reach(x) < 2**31
    assert ex.copy_2d_launch(x, 64, 64)[2]["INT64"] is False
    x = torch.empty(70000, 40000, device="meta").t()
    assert ex.reach(x) == 2_799_999_999
    assert ex.copy_2d_launch(x, 64, 64)[2]["INT64"] is True


def test_launch_plan_boundary():
    # y of exactly 2**31 elements reaches 2**31 - 1: still int32. One more row: int64.
    x = torch.empty(1, 2**16).expand(2**15, 2**16)
    assert ex.copy_2d_launch(x, 64, 64)[2]["INT64"] is False
    x = torch.empty(1, 2**16).expand(2**15 + 1, 2**16)
    assert ex.copy_2d_launch(x, 64, 64)[2]["INT64"] is True


def test_launch_plan_swaps_axes_past_65535_column_tiles():
    x = torch.empty(3, 1).expand(3, 64 * 65535 + 1)  # 65536 column tiles of 64
    grid, args, meta = ex.copy_2d_launch(x, 32, 64)
    assert grid == (65536, 1)  # the column tiles on axis 0, the row tiles on axis 1
    assert args == [64 * 65535 + 1, 3, 0, 1, 1, 64 * 65535 + 1]  # the problem of x.t() -> y.t()
    assert (meta["BLOCK_M"], meta["BLOCK_N"]) == (64, 32)  # the tile turns with it
    assert ex.copy_2d_launch(x[:, 1:], 32, 64)[0] == (1, 65535)  # one tile fewer: no swap


def test_launch_plan_refuses_a_grid_too_large_both_ways():
    x = torch.empty(1, 1, device=DEVICE).expand(2 * 65536, 2 * 65536)
    with pytest.raises(ValueError, match="needs 65536 x 65536 tiles of 2 x 2, more than a grid holds"):
        ex.copy_2d(x, block_m=2, block_n=2)


def test_copy_2d_runs_the_swapped_grid(monkeypatch):
    # The interpreter has no grid limit: lower it to 2 tiles, so a 9 x 100 copy needs the swap.
    monkeypatch.setattr(ex, "MAX_GRID_Y", 2)
    for x in (x_(9, 100), x_(100, 9).t(), x_(1, 100).expand(9, 100)):
        grid = ex.copy_2d_launch(x, 8, 16)[0]
        assert grid == (7, 2)
        torch.testing.assert_close(ex.copy_2d(x, block_m=8, block_n=16), x.contiguous(), rtol=0, atol=0)
    with pytest.raises(ValueError, match="more than a grid holds"):
        ex.copy_2d(x_(17, 100), block_m=8, block_n=16)  # 3 row tiles and 7 column tiles


def test_ignoring_strides_is_wrong():
    # The same kernel given the contiguous strides (N, 1) of a transposed view reads
    # the untransposed memory: this is why launchers pass x.stride(i).
    x = x_(5, 7)
    v = x.t()  # shape (7, 5), strides (1, 7)
    y = torch.empty(7, 5, device=DEVICE)
    ex.copy_2d_kernel[(1, 1)](v, y, 7, 5, 5, 1, 5, 1, BLOCK_M=8, BLOCK_N=8, INT64=False)
    torch.testing.assert_close(y, x.reshape(7, 5), rtol=0, atol=0)  # the raw memory, not v
    assert not torch.equal(y, v)


@requires_gpu
def test_gpu_copy_2d_output_past_2_31_elements():
    # The input of issue 9: 70,000 elements read, 2.8e9 written (fp16: 5.6 GB). With int32
    # offsets the store of row 30679 (offset 30679 * 70000 > 2**31) would wrap.
    row = (torch.arange(70000, device=DEVICE) % 2039).to(torch.float16)  # exact in fp16
    x = row[None].expand(40000, 70000)
    assert ex.copy_2d_launch(x, 64, 64)[2]["INT64"]
    try:
        y = ex.copy_2d(x)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
        pytest.skip("needs 5.6 GB of free GPU memory")
    try:
        for i in (0, 1, 30677, 30678, 30679, 39998, 39999):  # row 30678 straddles offset 2**31
            assert torch.equal(y[i], row), f"row {i}"
    finally:
        del y
        torch.cuda.empty_cache()


@requires_gpu
def test_gpu_copy_2d_input_past_2_31_elements():
    # Only the input's offsets pass 2**31: x.t() of the first 5 columns of a (270000, 8000) fp16
    # tensor (4.3 GB) has strides (1, 8000), reaches offset 2.16e9, and makes a 1.35e6-element y.
    try:
        base = torch.empty(270_000, 8000, device=DEVICE, dtype=torch.float16)
    except torch.OutOfMemoryError:
        torch.cuda.empty_cache()
        pytest.skip("needs 4.3 GB of free GPU memory")
    try:
        base[:, :5].normal_()
        x = base[:, :5].t()
        assert ex.reach(x) > 2**31 and x.numel() < 2**21
        assert ex.copy_2d_launch(x, 64, 64)[2]["INT64"]
        torch.testing.assert_close(ex.copy_2d(x), x.contiguous(), rtol=0, atol=0)
        torch.testing.assert_close(ex.transpose(base[:, :5]), x.contiguous(), rtol=0, atol=0)
    finally:
        base = x = None
        torch.cuda.empty_cache()


@requires_gpu
def test_gpu_copy_2d_more_than_65535_column_tiles():
    # 78,126 tiles of 64 columns do not fit on grid axis 1: the launcher swaps the axes
    for x in (x_(3, 5_000_001), x_(5_000_001, 3).t(), x_(1, 5_000_001).expand(3, 5_000_001)):
        assert ex.copy_2d_launch(x, 64, 64)[0] == (78126, 1)
        torch.testing.assert_close(ex.copy_2d(x), x.contiguous(), rtol=0, atol=0)
        torch.testing.assert_close(ex.transpose(x.t()), x.contiguous(), rtol=0, atol=0)


# ---- broadcasting ------------------------------------------------------------------

COMPATIBLE = [
    ((4, 8), (4, 8)),
    ((4, 1), (1, 8)),  # rule 2 on both sides: an outer sum
    ((4, 8), (1, 8)),
    ((4, 8), (4, 1)),
    ((1, 1), (2, 4)),
    ((4, 8), (8,)),  # rule 1: (8,) is read as (1, 8)
    ((4, 1), (8,)),
    ((2, 4), (1,)),
]
INCOMPATIBLE = [
    ((4, 8), (8, 4)),
    ((2, 8), (4, 8)),
    ((4, 8), (4,)),  # rule 1 pads on the left: (4,) is (1, 4), not (4, 1)
    ((4, 2), (1, 4)),
]


@pytest.mark.parametrize("a, b", COMPATIBLE)
def test_broadcast_rules_match_torch(a, b):
    assert ex.broadcast_shape(a, b) == tuple(torch.broadcast_shapes(a, b))
    assert ex.broadcast_shape(b, a) == tuple(torch.broadcast_shapes(a, b))


@pytest.mark.parametrize("a, b", COMPATIBLE)
def test_broadcast_kernel_compatible(a, b):
    ta, tb = x_(*a), x_(*b)
    torch.testing.assert_close(ex.broadcast_add(ta, tb), ta + tb, rtol=0, atol=0)


def test_broadcast_kernel_storage_offset_and_specials():
    a = x_(7, 4)[3:]  # contiguous, starting 12 elements into its storage
    b = x_(4)
    b[1] = float("nan")
    a[2, 3] = float("inf")
    torch.testing.assert_close(ex.broadcast_add(a, b), a + b, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("a, b", INCOMPATIBLE)
def test_broadcast_rules_incompatible(a, b):
    with pytest.raises(ValueError, match="do not broadcast"):
        ex.broadcast_shape(a, b)
    with pytest.raises(RuntimeError):
        torch.broadcast_shapes(a, b)
    with pytest.raises(ValueError, match="do not broadcast"):
        ex.broadcast_add(x_(*a), x_(*b))


@pytest.mark.parametrize("a, b", INCOMPATIBLE)
def test_broadcast_kernel_refuses_incompatible(a, b):
    # Skip the host-side check: Triton itself refuses the shapes while it builds the
    # kernel (CompilationError on a GPU, InterpreterError in the interpreter).
    ta, tb = x_(*a), x_(*b)
    b0, b1 = (1, b[0]) if len(b) == 1 else b
    out = torch.empty(8, 8, device=DEVICE)
    with pytest.raises(ex.triton.TritonError, match="incompatible dimensions"):
        ex.broadcast_add_kernel[(1,)](ta, tb, out, *a, b0, b1, 8, 8, B_1D=len(b) == 1)


# ---- reductions and axis -----------------------------------------------------------


@pytest.mark.parametrize("name", VIEW_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_and_col_sums_any_view(name, dtype):
    x = views(dtype)[name]
    tol = tolerances(dtype)
    torch.testing.assert_close(ex.row_sum(x), ex.row_sum_torch(x), **tol)
    torch.testing.assert_close(ex.col_sum(x), ex.col_sum_torch(x), **tol)


@pytest.mark.parametrize("M, N", [(1, 1), (17, 1025), (1023, 17), (781, 3)])
def test_sums_odd_shapes(M, N):
    x = x_(M, N)
    for got, dim in ((ex.row_sum(x), 1), (ex.col_sum(x), 0)):
        # Against a float64 sum, with the usual error scale of an fp32 sum of n terms:
        # sqrt(n) * eps * sqrt(sum x^2), times a safety factor. The order of the additions
        # is Triton's choice (it changed between 3.6 and 3.9); one missing or doubled term
        # (about |x_i| ~ 1) is still far outside this bound.
        ref = x.double().sum(dim=dim)
        n = x.shape[dim]
        scale = x.double().pow(2).sum(dim=dim).sqrt()
        bound = 8 * n**0.5 * torch.finfo(torch.float32).eps * scale + 1e-6
        assert ((got.double() - ref).abs() <= bound).all(), (got.double() - ref).abs().max()


def test_col_sum_is_row_sum_of_the_transpose():
    x = x_(45, 131)
    torch.testing.assert_close(ex.col_sum(x), ex.row_sum(x.t()), **tolerances(torch.float32))


def test_fp16_sum_accumulates_in_fp32():
    # One 2048 and 2048 ones: an fp16 running sum stalls at 2048 (its spacing there is 2).
    x = torch.ones(1, 2049, device=DEVICE, dtype=torch.float16)
    x[0, 0] = 2048
    assert ex.row_sum(x).item() == 4096  # exact in fp16
    assert ex.col_sum(x.t()).item() == 4096


# ---- bad inputs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([[1.0]], TypeError, "x must be a torch.Tensor"),
        (torch.ones(2, 3, dtype=torch.int64, device=DEVICE), TypeError, "x must be float16"),
        (x_(2, 3, 4), ValueError, "x must be 2-D"),
    ],
)
@pytest.mark.parametrize("fn", ["copy_2d", "transpose", "row_sum", "col_sum"])
def test_bad_inputs(fn, x, err, words):
    with pytest.raises(err, match=words):
        getattr(ex, fn)(x)


@pytest.mark.parametrize(
    "x, largest",
    [
        (torch.empty(2**16, 2**16, device="meta"), 2**32 - 1),  # 2**32 elements: the last offset
        (torch.empty(2**16, 2**15 + 1, device="meta")[:, 1:], 2**31 + 2**16 - 2),  # padded rows
        (torch.empty(1, 1, device=DEVICE).expand(2**31 + 1, 1), 2**31 + 15),  # stride 0: the row index itself
        (torch.empty(1, 1, device=DEVICE).expand(1, 2**31 + 1), 2**31 + 127),  # the column index (128-wide tiles)
    ],
)
@pytest.mark.parametrize("fn", ["row_sum", "col_sum"])
def test_sums_refuse_int32_overflow(fn, x, largest):
    # checked before anything is allocated or launched: meta tensors and stride-0 views cost nothing
    with pytest.raises(ValueError, match="int32 offsets stop at 2\\*\\*31 - 1") as info:
        getattr(ex, fn)(x)
    if fn == "row_sum":  # row_sum's default tiles are 16 x 128
        assert f"needs offsets up to {largest}:" in str(info.value)


def test_sums_accept_the_largest_int32_view():
    # 2**31 - 1 is the last offset int32 can hold; the check stops exactly there
    ex._check_int32_offsets(torch.empty(2**15, 2**16, device="meta"), 16, 128)
    with pytest.raises(ValueError, match="needs offsets up to 2147549183:"):  # 2**31 + 2**16 - 1
        ex._check_int32_offsets(torch.empty(2**15 + 1, 2**16, device="meta"), 16, 128)


def test_sums_of_nan_and_inf_match_torch():
    x = x_(7, 300)
    x[1, 5] = float("nan")
    x[2, 17] = float("inf")
    x[3, 9], x[3, 200] = float("inf"), float("-inf")  # inf - inf: NaN
    x[4, :] = 3e38  # fp32 overflow in the sum: inf, as in torch's fp32 sum
    x[5, 3] = float("-inf")
    for got, ref in ((ex.row_sum(x), ex.row_sum_torch(x)), (ex.col_sum(x), ex.col_sum_torch(x)),
                     (ex.col_sum(x.t()), ex.row_sum_torch(x))):
        torch.testing.assert_close(got, ref, equal_nan=True, **tolerances(torch.float32))
    assert ex.row_sum(x)[4] == float("inf") and torch.isnan(ex.row_sum(x)[[1, 3]]).all()


def test_fp16_sums_overflow_like_torch():
    # fp32 accumulation, then fp16 output: 2 x 60000 is 120000, past fp16's 65504, so inf
    x = torch.full((3, 2), 60000.0, device=DEVICE, dtype=torch.float16)
    torch.testing.assert_close(ex.row_sum(x), ex.row_sum_torch(x))
    assert ex.row_sum(x).isinf().all()
    torch.testing.assert_close(ex.col_sum(x), ex.col_sum_torch(x))  # 180000: inf too


@pytest.mark.parametrize("kw", [{"block_m": 0}, {"block_n": 12}, {"block_m": 2.0}])
@pytest.mark.parametrize("fn", ["copy_2d", "transpose", "row_sum", "col_sum"])
def test_bad_blocks(fn, kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"{name} must be a positive power of two"):
        getattr(ex, fn)(x_(3, 4), **kw)


@pytest.mark.parametrize(
    "a, b, err, words",
    [
        ([1.0], x_(4), TypeError, "a must be a torch.Tensor"),
        (x_(4, 3), x_(3), ValueError, "a must be contiguous with power-of-two sizes"),
        (x_(4, 4).t(), x_(4), ValueError, "a must be contiguous"),
        (x_(1, 4).expand(4, 4), x_(4), ValueError, "a must be contiguous"),  # stride 0
        (x_(4, 8)[:, :4], x_(4), ValueError, "a must be contiguous"),  # padded rows
        (x_(4), x_(4), ValueError, "a must be 2-D"),
        (x_(4, 4), x_(0), ValueError, "b must be contiguous with power-of-two sizes"),
        (x_(4, 4), torch.ones(4, dtype=torch.int32, device=DEVICE), TypeError, "b must be float16"),
        (torch.empty(2**11, 2**10, device=DEVICE), x_(1), ValueError, "one tile of at most 1048576 elements"),
    ],
)
def test_broadcast_add_bad_inputs(a, b, err, words):
    with pytest.raises(err, match=words):
        ex.broadcast_add(a, b)


# ---- the example as a whole --------------------------------------------------------


@pytest.mark.parametrize("provider", ["triton", "torch"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check()
    assert "copy_2d, row_sum and col_sum match torch" in capsys.readouterr().out
