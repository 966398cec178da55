import masks as ex
import pytest
import torch

from conftest import DEVICE, FLOAT_DTYPES, ODD_SIZES, tolerances


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
    spec = ex.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = ex.bench_case(spec["name"], provider, x, M=33)
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
