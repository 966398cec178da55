import pytest
import tensor_descriptors as ex
import torch

from conftest import DEVICE, FLOAT_DTYPES


def x_(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


# Row strides must be multiples of 16 bytes: N a multiple of 4 (fp32) or 8 (fp16),
# or a view of the first N columns of wider rows.
CASES = {
    "1 x 8": lambda dtype: x_(1, 8, dtype=dtype),
    "17 x 8": lambda dtype: x_(17, 8, dtype=dtype),
    "127 x 40": lambda dtype: x_(127, 40, dtype=dtype),
    "781 x 16": lambda dtype: x_(781, 16, dtype=dtype),
    "33 x 17 of 33 x 24": lambda dtype: x_(33, 24, dtype=dtype)[:, :17],
    "rows 2, 5, 8 ... of 100 x 8": lambda dtype: x_(100, 8, dtype=dtype)[2::3],
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matches_torch(case, dtype):
    x = CASES[case](dtype)
    y = ex.transpose(x, block_m=32, block_n=32)
    assert y.shape == x.shape[::-1]
    assert (y.stride(0) * y.element_size()) % 16 == 0 and y.stride(1) == 1
    torch.testing.assert_close(y, ex.transpose_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("block_m, block_n", [(4, 4), (16, 64), (64, 16), (128, 128)])
def test_block_shapes(block_m, block_n):
    x = x_(45, 36)
    torch.testing.assert_close(ex.transpose(x, block_m=block_m, block_n=block_n), x.t(), rtol=0, atol=0)


def test_edges_are_clipped():
    # Poisoned, padded output: every element of y must be written, and the padding
    # columns beyond M must stay untouched (the descriptor clips the ragged blocks).
    M, N = 37, 20
    x = x_(M, N)
    buf = torch.full((N, 40), float("nan"), device=DEVICE)
    y = buf[:, :M]
    ex.transpose_desc_kernel[(3, 2)](x, y, M, N, x.stride(0), y.stride(0), BLOCK_M=16, BLOCK_N=16)
    torch.testing.assert_close(y, x.t(), rtol=0, atol=0)
    assert torch.isnan(buf[:, M:]).all()


@pytest.mark.parametrize(
    "x, kw, err, words",
    [
        ([[1.0]], {}, TypeError, "x must be a torch.Tensor"),
        (torch.ones(4, 4, dtype=torch.int32, device=DEVICE), {}, TypeError, "x must be float16"),
        (x_(16), {}, ValueError, "x must be 2-D"),
        (x_(8, 8).t()[:, :4], {}, ValueError, "stride 1 in its last dimension"),
        (x_(8, 17), {}, ValueError, "multiples of 16 bytes"),
        (x_(5, 8).view(-1)[1:33].view(4, 8), {}, ValueError, "multiples of 16 bytes"),
        (x_(8, 8), {"block_m": 2}, ValueError, "block_m must be a power of two from 4 to 256"),
        (x_(8, 8), {"block_n": 512}, ValueError, "block_n must be a power of two from 4 to 256"),
        (x_(8, 8), {"block_n": 48}, ValueError, "block_n must be a power of two"),
        (x_(8, 8, dtype=torch.float16), {"block_m": 4}, ValueError, "block_m must be a power of two from 8"),
    ],
)
def test_bad_inputs(x, kw, err, words):
    with pytest.raises(err, match=words):
        ex.transpose(x, **kw)


@pytest.mark.parametrize("provider", ["triton", "torch"])
def test_bench_case(provider):
    spec = ex.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = ex.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check()
    assert "transpose(x) == x.t()" in capsys.readouterr().out
