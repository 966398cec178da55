import pytest
import scan as ex
import torch
from support import DEVICE, requires_gpu, tolerances

from benchmarks.cases import scan as cases


def decays(m, n):
    return 0.5 + 0.5 * torch.rand(m, n, device=DEVICE)  # in (0.5, 1): the state neither dies nor explodes


@pytest.mark.parametrize("n", [1, 17, 127, 781, 1025])
@pytest.mark.parametrize("block_n", [16, None])
def test_cumsum_matches_torch(n, block_n):
    x = torch.randn(3, n, device=DEVICE)
    torch.testing.assert_close(ex.cumsum(x, block_n), ex.cumsum_torch(x), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("n", [1, 17, 130])
@pytest.mark.parametrize("block_n", [16, None])
def test_linear_scan_matches_loop(n, block_n):
    a, x = decays(2, n), torch.randn(2, n, device=DEVICE)
    torch.testing.assert_close(ex.linear_scan(a, x, block_n), ex.linear_scan_torch(a, x), rtol=1e-5, atol=1e-5)


def test_linear_scan_special_cases():
    # a = 1 is a cumulative sum; a = 0 forgets everything: h = x
    x = torch.randn(2, 100, device=DEVICE)
    ones, zeros = torch.ones_like(x), torch.zeros_like(x)
    torch.testing.assert_close(ex.linear_scan(ones, x, 32), ex.cumsum_torch(x), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ex.linear_scan(zeros, x, 32), x, rtol=0, atol=0)


def test_fp16():
    x = torch.randn(2, 300, device=DEVICE, dtype=torch.float16)
    out = ex.cumsum(x, 64)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, ex.cumsum_torch(x), **tolerances(torch.float16))


def test_row_strided_views():
    x = torch.randn(6, 500, device=DEVICE)[::2, 3:203]
    a = decays(6, 500)[1::2, :200]
    torch.testing.assert_close(ex.cumsum(x, 64), ex.cumsum_torch(x), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(ex.linear_scan(a, x, 64), ex.linear_scan_torch(a, x), rtol=1e-5, atol=1e-5)


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("block_n", [16, None])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_cumsum_nan_and_inf_match_torch(block_n, dtype):
    # As torch.cumsum: everything before a NaN is untouched, everything from it on is NaN;
    # +inf then -inf gives NaN from the -inf on; values past fp16's range become inf on the way out.
    x = torch.randn(6, 50, device=DEVICE).to(dtype)
    x[0, 20] = NAN  # in the second chunk of 16: the carry takes it to later chunks
    x[1, 3] = INF
    x[2, 5], x[2, 40] = INF, -INF
    x[3, 0] = -INF
    x[4, :] = torch.finfo(dtype).max / 4  # fp32: 4 steps from overflow; fp16: the output overflows
    x[5, 33] = NAN
    x[5, 10] = INF
    got = ex.cumsum(x, block_n)
    want = ex.cumsum_torch(x)
    torch.testing.assert_close(got, want, equal_nan=True, **tolerances(dtype))
    assert not torch.isnan(got[0, :20]).any() and torch.isnan(got[0, 20:]).all()
    assert torch.isinf(got[4, 4:]).all() and not torch.isinf(got[4, :3]).any()


def test_linear_scan_nan_and_inf_match_the_loop():
    a, x = decays(4, 70), torch.randn(4, 70, device=DEVICE)
    x[0, 20] = NAN  # NaN from 20 on: it is carried into every later chunk
    a[1, 35] = NAN
    x[2, 10] = INF  # +inf, shrinking by positive decays: stays +inf
    x[3, 5], x[3, 50] = INF, -INF  # then inf - inf: NaN
    got = ex.linear_scan(a, x, 16)
    want = ex.linear_scan_torch(a, x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert not torch.isnan(got[0, :20]).any() and torch.isnan(got[0, 20:]).all()
    assert torch.isinf(got[2, 10:]).all() and torch.isnan(got[3, 50:]).all()


def test_expanded_and_offset_views():
    # stride 0 rows (every row the same row), a storage offset, padded rows, a (M, 1) column
    row = torch.randn(1, 90, device=DEVICE)
    big = torch.randn(9, 90, device=DEVICE)
    for x in (row.expand(5, 90), big[4:], big[4:, :61], torch.randn(1, 7, device=DEVICE).t()):
        torch.testing.assert_close(ex.cumsum(x, 16), ex.cumsum_torch(x), rtol=1e-5, atol=1e-4)
        a = decays(1, x.shape[1]).expand(x.shape)  # one row of decays for every row of x
        torch.testing.assert_close(ex.linear_scan(a, x, 16), ex.linear_scan_torch(a, x), rtol=1e-5, atol=1e-5)


def test_more_rows_than_a_grid_holds_are_refused():
    x = torch.empty(1, 3, device=DEVICE).expand(2**31, 3)  # a stride-0 view: nothing of that size is allocated
    with pytest.raises(ValueError, match="x has 2147483648 rows: one program per row, at most 2\\*\\*31 - 1"):
        ex.cumsum(x)
    with pytest.raises(ValueError, match="a has 2147483648 rows"):
        ex.linear_scan(x, x)


def test_every_element_written():
    x = torch.randn(3, 200, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    ex.cumsum_kernel[(3,)](x, y, 200, x.stride(0), y.stride(0), BLOCK_N=64)
    assert not torch.isnan(y).any()
    a = decays(3, 200)
    h = torch.full_like(x, float("nan"))
    ex.linear_scan_kernel[(3,)](a, x, h, 200, a.stride(0), x.stride(0), h.stride(0), BLOCK_N=64)
    assert not torch.isnan(h).any()


def x_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([1.0], TypeError, "x must be a torch.Tensor"),
        (x_(2, 3).to(torch.int64), TypeError, "x must be float16"),
        (x_(5), ValueError, "x must be 2-D"),
        (x_(3, 4).t(), ValueError, "unit stride along its last dim"),
    ],
)
def test_cumsum_bad_inputs(x, err, words):
    with pytest.raises(err, match=words):
        ex.cumsum(x)


@pytest.mark.parametrize(
    "a, x, err, words",
    [
        (x_(2, 3), x_(2, 4), ValueError, "same shape"),
        (x_(2, 3), x_(2, 3, dtype=torch.float16), TypeError, "same dtype"),
        (x_(2, 3, 1), x_(2, 3), ValueError, "a must be 2-D"),
    ],
)
def test_linear_scan_bad_inputs(a, x, err, words):
    with pytest.raises(err, match=words):
        ex.linear_scan(a, x)


@pytest.mark.parametrize("block_n", [0, 8, 100, 2**21, 32.0])
def test_bad_block_n(block_n):
    with pytest.raises(ValueError, match="block_n must be a power of two from 16 to 2\\*\\*20"):
        ex.cumsum(x_(2, 3), block_n)


def test_bench_case_runs():
    case = cases.bench_case("cumsum_fp32", "triton", 300, elements=900)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
    case = cases.bench_case("linear_scan_fp32", "triton", 17, elements=34)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check(shapes=((2, 40),))
    assert "cumsum and linear_scan match" in capsys.readouterr().out


@requires_gpu
def test_long_rows_bf16_on_gpu():
    x = torch.randn(64, 65536, device=DEVICE)
    torch.testing.assert_close(ex.cumsum(x), ex.cumsum_torch(x), rtol=1e-4, atol=1e-2)
    xb = x[:, :4096].to(torch.bfloat16)
    torch.testing.assert_close(ex.cumsum(xb).float(), torch.cumsum(xb.double(), -1).float(), rtol=2e-2, atol=0.5)


@requires_gpu
def test_output_past_2_31_elements_on_gpu():
    # One row read 2^31 / 4096 + 3 times (stride 0), written to a 4.3 GB fp16 output: the row
    # offsets of the last rows pass 2^31 (the kernels compute them in int64).
    n = 4096
    m = 2**31 // n + 3
    x = torch.randn(1, n, device=DEVICE, dtype=torch.float16)
    a = (0.5 + 0.5 * torch.rand(1, n, device=DEVICE)).half()
    want_y, want_h = ex.cumsum_torch(x)[0], ex.linear_scan_torch(a, x)[0]
    for fn, args, want in ((ex.cumsum, (x.expand(m, n),), want_y),
                           (ex.linear_scan, (a.expand(m, n), x.expand(m, n)), want_h)):
        try:
            out = fn(*args)
            torch.cuda.synchronize()
        except torch.OutOfMemoryError:
            out = None
            torch.cuda.empty_cache()
            pytest.skip("needs 4.3 GB of free GPU memory")
        try:
            for i in (0, m - 4, m - 3, m - 1):  # row m - 3 starts past 2^31
                torch.testing.assert_close(out[i], want, **tolerances(torch.float16))
        finally:
            out = None
            torch.cuda.empty_cache()
