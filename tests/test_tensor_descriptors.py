import pytest
import tensor_descriptors as ex
import torch
from support import DEVICE, FLOAT_DTYPES, requires_gpu

from benchmarks.cases import tensor_descriptors as cases


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
        ex.triton.set_allocator(ex._scratch)  # descriptors built in a kernel need scratch memory on the GPU
    ex.transpose_desc_kernel[(3, 2)](x, y, M, N, x.stride(0), y.stride(0), BLOCK_M=16, BLOCK_N=16)
    torch.testing.assert_close(y, x.t(), rtol=0, atol=0)
    assert torch.isnan(buf[:, boundary:]).all(), "the store wrote past the 16-byte boundary of y's rows"
    if DEVICE.type == "cpu":
        assert torch.isnan(buf[:, M:boundary]).all(), "the interpreter's store must clip per element"
    else:  # the TMA store may fill up to the boundary, only with the zero padding of the load
        tail = buf[:, M:boundary]
        assert (torch.isnan(tail) | (tail == 0)).all()


def test_nan_and_inf_are_moved_unchanged():
    x = x_(33, 24)
    x[3, ::5] = float("nan")
    x[7, 2], x[8, 3], x[9, 4] = float("inf"), -float("inf"), 3e38
    torch.testing.assert_close(ex.transpose(x, block_m=16, block_n=16), x.t(), rtol=0, atol=0, equal_nan=True)


def test_storage_offset_view():
    x = x_(40, 24)[4:]  # starts 4 * 96 bytes in: still 16-byte aligned
    assert x.storage_offset() > 0
    torch.testing.assert_close(ex.transpose(x, block_m=16, block_n=16), x.t(), rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(0, 8), (5, 0), (0, 0)])
def test_empty(shape):
    y = ex.transpose(x_(*shape))
    assert y.shape == shape[::-1]


def meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, device="meta", dtype=dtype)  # a shape and no memory


@pytest.mark.parametrize(
    "x, kw, words",
    [
        (x_(1, 8).expand(5, 8), {}, "x's rows overlap \\(row stride 0 < 8 columns"),
        (x_(64).as_strided((5, 16), (8, 1)), {}, "x's rows overlap \\(row stride 8 < 16 columns"),
        (meta(2**31, 8), {}, "tensor descriptors take dimensions up to 2\\*\\*31 - 1"),
        (meta(8, 2**31 + 8)[:, :2**31], {}, "dimensions up to 2\\*\\*31 - 1"),
        (meta(2, 2**39 + 8)[:, :8], {}, "strides below 2\\*\\*40 bytes"),  # 2**40 + 16 bytes between rows
        (meta(2, 65536 * 64 + 8), {"block_n": 64}, "65537 blocks of block_n=64 are more than grid axis 1 holds"),
    ],
)
def test_descriptor_limits_are_refused(x, kw, words):
    with pytest.raises(ValueError, match=words):
        ex.transpose(x, **kw)


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
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check()
    assert "transpose(x) == x.t()" in capsys.readouterr().out


@requires_gpu
def test_gpu_more_than_2_31_elements():
    # 65,539 x 32,768 fp16 (4.3 GB in, 4.3 GB out): every dimension fits an int32, the
    # offsets do not; the TMA engine computes addresses in 64 bits.
    M, N = 2**16 + 3, 2**15
    try:
        x = torch.empty(M, N, device=DEVICE, dtype=torch.float16).normal_()
        y = ex.transpose(x)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        x = y = None
        torch.cuda.empty_cache()
        pytest.skip("needs 8.6 GB of free GPU memory")
    try:
        for i in (0, 1, M // 2, M - 2, M - 1):
            assert torch.equal(y[:, i], x[i]), f"column {i}"
        for j in (0, N - 1):
            assert torch.equal(y[j], x[:, j]), f"row {j}"
    finally:
        x = y = None
        torch.cuda.empty_cache()
