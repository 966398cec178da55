import pytest
import scan as ex
import torch

from conftest import DEVICE, requires_gpu, tolerances


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


@pytest.mark.parametrize("block_n", [0, 8, 100])
def test_bad_block_n(block_n):
    with pytest.raises(ValueError, match="block_n must be a power of two >= 16"):
        ex.cumsum(x_(2, 3), block_n)


def test_bench_case_runs():
    case = ex.bench_case("cumsum_fp32", "triton", 300, elements=900)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
    case = ex.bench_case("linear_scan_fp32", "triton", 17, elements=34)
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
