import masks as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, tolerances

from benchmarks.cases import masks as cases


def x_(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


# ---- row max: the ragged tile inside a row, and the padding value ----------------


@pytest.mark.parametrize("n_cols", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_max_matches_torch(n_cols, dtype):
    x = x_(5, n_cols, dtype=dtype)
    x[1] = -x[1].abs() - 1  # an all-negative row
    torch.testing.assert_close(ex.row_max(x), ex.row_max_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("n_cols", [17, 781, 1023])
def test_zero_padding_breaks_all_negative_rows(n_cols):
    # A row of negative numbers whose length is not a power of two: the masked
    # lanes load `pad`, and a pad of 0.0 beats every real element.
    x = -x_(3, n_cols).abs() - 0.5
    assert (ex.row_max(x, pad=0.0) == 0.0).all()  # wrong: 0.0 is not in the row
    assert (ex.row_max_torch(x) < 0).all()
    torch.testing.assert_close(ex.row_max(x), ex.row_max_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("n_cols", [1, 16, 1024])
def test_zero_padding_is_harmless_without_masked_lanes(n_cols):
    # With n_cols a power of two the tile has no masked lanes: the pad is never used.
    x = -x_(3, n_cols).abs() - 0.5
    torch.testing.assert_close(ex.row_max(x, pad=0.0), ex.row_max_torch(x), rtol=0, atol=0)


def test_zero_padding_is_harmless_when_a_row_has_a_positive_element():
    x = x_(4, 17)
    x[:, 3] = x[:, 3].abs() + 0.1  # every row has a positive element
    torch.testing.assert_close(ex.row_max(x, pad=0.0), ex.row_max_torch(x), rtol=0, atol=0)


def test_row_max_writes_every_row():
    x = x_(9, 33)
    out = torch.full((9,), float("nan"), device=DEVICE)
    ex.row_max_kernel[(9,)](x, out, 33, BLOCK_N=64, PAD=float("-inf"))
    assert not torch.isnan(out).any()


# ---- bias + relu: 2-D masks by broadcasting, tl.where on values ------------------


@pytest.mark.parametrize("M, N", [(1, 1), (17, 1025), (1023, 17), (3, 781), (33, 1023)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_relu_matches_torch(M, N, dtype):
    x, b = x_(M, N, dtype=dtype), x_(N, dtype=dtype)
    y = ex.bias_relu(x, b)
    torch.testing.assert_close(y, ex.bias_relu_torch(x, b), **tolerances(dtype))
    assert (y >= 0).all() and (y == 0).any() == ((x + b) <= 0).any()


@pytest.mark.parametrize("block_m, block_n", [(4, 16), (64, 64), (2, 1024)])
def test_bias_relu_block_shapes(block_m, block_n):
    x, b = x_(37, 201), x_(201)
    y = ex.bias_relu(x, b, block_m=block_m, block_n=block_n)
    torch.testing.assert_close(y, ex.bias_relu_torch(x, b), rtol=0, atol=0)


def test_bias_relu_stores_stay_inside():
    # The output lives at the start of a longer NaN buffer: every element of the
    # (M, N) output must be written, and nothing after it.
    M, N, extra = 19, 45, 300
    x, b = x_(M, N), x_(N)
    buf = torch.full((M * N + extra,), float("nan"), device=DEVICE)
    ex.bias_relu_kernel[(ex.triton.cdiv(M, 16), ex.triton.cdiv(N, 32))](x, b, buf, M, N, BLOCK_M=16, BLOCK_N=32)
    torch.testing.assert_close(buf[: M * N].view(M, N), ex.bias_relu_torch(x, b), rtol=0, atol=0)
    assert torch.isnan(buf[M * N:]).all()


# ---- NaN, infinities and large magnitudes: as torch does ---------------------------

NAN, INF = float("nan"), float("inf")


def special_rows(n_cols, dtype):
    """Rows that each hold one kind of special value, among ordinary random ones."""
    big = torch.finfo(dtype).max
    x = x_(7, n_cols, dtype=dtype)
    x[0, n_cols // 2] = NAN  # NaN in the middle of a row
    x[1, -1] = NAN  # NaN in the last lane before the masked ones
    x[2, 0] = INF
    x[3] = -INF  # a row of -inf
    x[4, 0], x[4, -1] = -INF, NAN  # both
    x[5] = -big  # the most negative finite value, everywhere
    x[6, :: 2] = big  # the largest finite value
    return x


@pytest.mark.parametrize("n_cols", [1, 17, 1025])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_max_nan_inf_like_torch(n_cols, dtype):
    # torch.amax returns NaN for a row with a NaN; tl.max alone would skip it.
    x = special_rows(n_cols, dtype)
    got = ex.row_max(x)
    torch.testing.assert_close(got, ex.row_max_torch(x), rtol=0, atol=0, equal_nan=True)
    assert got[0].isnan() and got[1].isnan() and got[4].isnan()


@pytest.mark.parametrize("N", [1, 17, 300])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_relu_nan_inf_like_torch(N, dtype):
    # torch.relu keeps NaN; tl.where(z > 0, z, 0.0) would turn it into 0.
    x = special_rows(N, dtype)
    b = x_(N, dtype=dtype)
    if N > 1:
        b[-2] = NAN  # a NaN bias: a whole column of NaN
    got = ex.bias_relu(x, b)
    torch.testing.assert_close(got, ex.bias_relu_torch(x, b), rtol=0, atol=0, equal_nan=True)
    assert got[0, N // 2].isnan() and got[2, 0] == INF and got[3, 0] == 0


# ---- int32 offsets: refused before launching ---------------------------------------
# Meta tensors have a shape and no storage: the launchers' checks run, nothing is allocated.


def test_row_max_refuses_int32_offset_overflow():
    x = torch.empty(2**18 + 1, 8192, device="meta")  # 2**31 + 8192 elements
    with pytest.raises(ValueError, match=r"x has 2147491840 elements, more than 2\*\*31 - 1: .* int32 offsets"):
        ex.row_max(x)


def test_bias_relu_refuses_int32_offset_overflow():
    x = torch.empty(2**16, 2**15, device="meta")  # 2**31 elements: offset 2**31 - 1 is the last that fits
    with pytest.raises(ValueError, match=r"x has 2147483648 elements, more than 2\*\*31 - 1"):
        ex.bias_relu(x, torch.empty(2**15, device="meta"))


def test_bias_relu_refuses_too_many_column_tiles():
    N = 65_535 * 256 + 1
    with pytest.raises(ValueError, match=f"N={N} needs 65536 column tiles, but grid axis 1 holds at most 65535"):
        ex.bias_relu(torch.empty(1, N, device="meta"), torch.empty(N, device="meta"))


# ---- layouts ---------------------------------------------------------------------------


def test_views_with_a_storage_offset():
    # A contiguous view that starts inside its storage: the launcher passes its data_ptr.
    buf = x_(9, 33)
    x = buf[2:]
    assert x.is_contiguous() and x.storage_offset() == 66
    torch.testing.assert_close(ex.row_max(x), ex.row_max_torch(x), rtol=0, atol=0)
    b = x_(40)[7:]
    torch.testing.assert_close(ex.bias_relu(x, b), ex.bias_relu_torch(x, b), rtol=0, atol=0)


LAYOUTS = {
    "transposed": lambda: x_(6, 5).t(),
    "padded rows": lambda: x_(5, 8)[:, :6],
    "expanded rows": lambda: x_(1, 6).expand(5, 6),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_strided_layouts_are_refused(layout):
    x = LAYOUTS[layout]()
    assert x.shape == (5, 6) and not x.is_contiguous()
    with pytest.raises(ValueError, match="x must be 2-D and contiguous, got shape .5, 6., stride"):
        ex.row_max(x)
    with pytest.raises(ValueError, match="x must be contiguous, got stride"):
        ex.bias_relu(x, x_(6))


def test_expanded_bias_is_refused():
    with pytest.raises(ValueError, match=r"b must be contiguous, got stride \(0,\)"):
        ex.bias_relu(x_(3, 4), x_(1).expand(4))


# ---- bad inputs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([[1.0]], TypeError, "x must be a torch.Tensor"),
        (torch.ones(2, 3, dtype=torch.int32, device=DEVICE), TypeError, "x must be float16"),
        (x_(6), ValueError, "x must be 2-D and contiguous"),
        (x_(4, 6)[:, ::2], ValueError, "x must be 2-D and contiguous"),
        (x_(3, 0), ValueError, "1 to 8192 columns"),
        (x_(1, 8193), ValueError, "1 to 8192 columns"),
    ],
)
def test_row_max_bad_inputs(x, err, words):
    with pytest.raises(err, match=words):
        ex.row_max(x)


def test_row_max_bad_pad():
    with pytest.raises(TypeError, match="pad must be a float"):
        ex.row_max(x_(2, 3), pad=0)


@pytest.mark.parametrize(
    "x, b, kw, err, words",
    [
        (x_(3, 4), [1.0] * 4, {}, TypeError, "b must be a torch.Tensor"),
        (x_(3, 4), x_(3, 4), {}, ValueError, "b must be 1-D"),
        (x_(3, 4), x_(5), {}, ValueError, r"b must have x.shape\[1\] = 4 elements"),
        (x_(3, 4), x_(4, dtype=torch.float16), {}, TypeError, "same dtype"),
        (x_(4, 3).t(), x_(4), {}, ValueError, "x must be contiguous"),
        (x_(3, 4), x_(4), {"block_m": 3}, ValueError, "block_m must be a positive power of two"),
        (x_(3, 4), x_(4), {"block_n": 0}, ValueError, "block_n must be a positive power of two"),
    ],
)
def test_bias_relu_bad_inputs(x, b, kw, err, words):
    with pytest.raises(err, match=words):
        ex.bias_relu(x, b, **kw)


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_bias_relu_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.bias_relu(x_(3, 4), torch.randn(4))


# ---- the example as a whole --------------------------------------------------------


@pytest.mark.parametrize("provider", ["triton", "torch"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x, M=33)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] == (2 * 33 * x + x) * 4


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 17))
    ex.check_bias_relu(shapes=((3, 17),))
    out = capsys.readouterr().out
    assert "row_max and bias_relu match torch" in out and "bias_relu matches torch" in out


def test_padding_demo(capsys):
    ex.padding_demo()
    assert capsys.readouterr().out == "pad=0.0  -> 0.0\npad=-inf -> -1.0\n"
