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
    # Poisoned output inside a wider buffer: every element of y must be written, and the
    # block that hangs over y's last column must be clipped. On NVIDIA GPUs a TMA store
    # writes whole 16-byte chunks, so it may also write the columns from M up to the next
    # 16-byte boundary of the row (37 fp32 -> 40); the interpreter clips per element.
    # Nothing from that boundary on may change on either device: that is why `transpose`
    # pads its output rows to a multiple of 16 bytes.
    M, N = 37, 20
    boundary = 40  # 37 fp32 = 148 bytes, rounded up to 160 bytes
    x = x_(M, N)
    buf = torch.full((N, 64), float("nan"), device=DEVICE)
    y = buf[:, :M]
    if DEVICE.type == "cuda":
        ex._set_allocator_once()  # descriptors built in a kernel need scratch memory on the GPU
    ex.transpose_desc_kernel[(3, 2)](x, y, M, N, x.stride(0), y.stride(0), BLOCK_M=16, BLOCK_N=16)
    torch.testing.assert_close(y, x.t(), rtol=0, atol=0)
    assert torch.isnan(buf[:, boundary:]).all(), "the store wrote past the 16-byte boundary of y's rows"
    if DEVICE.type == "cpu":
        assert torch.isnan(buf[:, M:boundary]).all(), "the interpreter's store must clip per element"
    else:  # the TMA store may fill up to the boundary, only with the zero padding of the load
        tail = buf[:, M:boundary]
        assert (torch.isnan(tail) | (tail == 0)).all()


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
