import int64_offsets as ex
import pytest
import torch
from support import DEVICE, ODD_SIZES, requires_gpu

from benchmarks.cases import int64_offsets as cases

DTYPES = [torch.int8, torch.int32, torch.float16, torch.float32]


def data(n, dtype):
    if dtype.is_floating_point:
        return torch.randn(n, device=DEVICE, dtype=dtype)
    return torch.randint(-100, 100, (n,), device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offsets", ["auto", "int32", "int64"])
def test_matches_torch(n, dtype, offsets):
    x = data(n, dtype)
    torch.testing.assert_close(ex.add_one(x, offsets=offsets), ex.add_one_torch(x), rtol=0, atol=0)


def test_every_element_written():
    n = 1025
    x = data(n, torch.float32)
    y = torch.full((n,), float("nan"), device=DEVICE)
    ex.add_one_kernel[(ex.triton.cdiv(n, 256),)](x, y, n, BLOCK_SIZE=256, INT64=True)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)


def test_int32_arithmetic_wraps():
    # The interpreter computes pid * BLOCK_SIZE in int32, as the GPU does.
    assert ex.tile_starts(4, 2**30, int64=False) == [0, 2**30, -(2**31), -(2**30)]
    assert ex.tile_starts(4, 2**30, int64=True) == [0, 2**30, 2**31, 3 * 2**30]
    # 2**21 programs of 1024 elements: program 2**21 starts at 2**31, which wraps.
    assert ex.tile_starts(3, 2**30 + 2**29, int64=False)[2] == 3 * 2**30 - 2**32


# Meta tensors have a shape and no storage: the launcher's checks run, nothing launches.
BIG = torch.empty(2**31 + 5, dtype=torch.int8, device="meta")


def test_refuses_int32_offsets_that_wrap():
    with pytest.raises(ValueError, match="offsets='int32' wraps: x has 2147483653 elements, .* offset 2147484671"):
        ex.add_one(BIG, offsets="int32", block_size=1024)


def test_refuses_more_tiles_than_a_grid_holds():
    with pytest.raises(ValueError, match="x has 2147483653 elements: 2147483653 tiles of block_size=1 are more than"):
        ex.add_one(BIG, block_size=1)
    with pytest.raises(ValueError, match="offsets='int32' wraps"):
        ex.add_one(BIG, offsets="int32", block_size=2)  # 2**30 + 3 tiles fit the grid; the offsets do not


def test_special_values_and_views():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, -1.0], device=DEVICE)
    torch.testing.assert_close(ex.add_one(x), x + 1, rtol=0, atol=0, equal_nan=True)
    i8 = torch.tensor([127, -128, 0], dtype=torch.int8, device=DEVICE)
    assert torch.equal(ex.add_one(i8), i8 + 1)  # 127 + 1 wraps to -128, as in torch
    big = data(100, torch.float16)
    torch.testing.assert_close(ex.add_one(big[37:]), big[37:] + 1, rtol=0, atol=0)  # a storage offset
    empty = torch.empty(0, device=DEVICE)
    assert ex.add_one(empty).shape == (0,)


@pytest.mark.parametrize(
    "x, kw, err, words",
    [
        ([1], {}, TypeError, "x must be a torch.Tensor"),
        (torch.zeros(3, dtype=torch.float64, device=DEVICE), {}, TypeError, "x must be int8"),
        (torch.zeros(2, 3, device=DEVICE), {}, ValueError, "x must be 1-D and contiguous"),
        (torch.zeros(8, device=DEVICE)[::2], {}, ValueError, "x must be 1-D and contiguous"),
        (torch.zeros(8, device=DEVICE), {"offsets": "int16"}, ValueError, "offsets must be 'auto', 'int32' or 'int64'"),
        (torch.zeros(8, device=DEVICE), {"block_size": 1000}, ValueError, "block_size must be a power of two from 1"),
        (torch.zeros(8, device=DEVICE), {"block_size": 2**21}, ValueError, "block_size must be a power of two from 1"),
        (torch.zeros(8, device=DEVICE), {"block_size": 0}, ValueError, "block_size must be a power of two from 1"),
        (torch.zeros(8, device=DEVICE), {"block_size": 64.0}, ValueError, "block_size must be a power of two from 1"),
        (torch.zeros(1, device=DEVICE).expand(8), {}, ValueError, "x must be 1-D and contiguous"),  # stride 0
    ],
)
def test_bad_inputs(x, kw, err, words):
    with pytest.raises(err, match=words):
        ex.add_one(x, **kw)


@requires_gpu
@pytest.mark.skipif(
    torch.cuda.is_available() and torch.cuda.mem_get_info()[0] < 20 * 2**30,
    reason="needs about 20 GB of free GPU memory",
)
def test_past_2_31_elements_on_the_gpu():
    """int32 offsets send the last tiles 2**32 elements back; int64 offsets do not.

    x and y sit 2**32 bytes into int8 buffers, so the wrapped addresses are valid
    memory (inside the buffers' padding) and the damage can be inspected instead of
    killing the CUDA context with an illegal memory access.
    """
    n, pad, poison = 2**31 + 2**20 + 17, 2**32, 127
    buf_x = torch.zeros(pad + n, dtype=torch.int8, device="cuda")
    buf_y = torch.full((pad + n,), poison, dtype=torch.int8, device="cuda")
    x, y = buf_x[pad:], buf_y[pad:]
    x.copy_(torch.randint(-100, 100, (n,), dtype=torch.int8, device="cuda"))
    tail = slice(2**31, n)  # the elements whose int32 offsets wrap
    expected_tail = x[tail] + 1

    grid = (ex.triton.cdiv(n, 1024),)
    ex.add_one_kernel[grid](x, y, n, BLOCK_SIZE=1024, INT64=False)
    torch.cuda.synchronize()
    assert (y[tail] == poison).all()  # never written
    assert (buf_y[tail] == 1).all()  # written instead: 2**32 bytes earlier, x's padding (0) + 1
    assert torch.equal(y[: 2**20], x[: 2**20] + 1)  # the first tiles are fine

    buf_y.fill_(poison)
    out = ex.add_one(x)  # "auto" picks int64 offsets
    assert torch.equal(out[tail], expected_tail)
    assert torch.equal(out[:: 2**20], x[:: 2**20] + 1)
    ex.add_one_kernel[grid](x, y, n, BLOCK_SIZE=1024, INT64=True)
    torch.cuda.synchronize()
    assert torch.equal(y[tail], expected_tail)
    assert (buf_y[:pad] == poison).all()  # nothing written outside y


@pytest.mark.parametrize("provider", ["triton_int32", "triton_int64", "torch"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 1025))
    assert "int32 wraps at 2**31" in capsys.readouterr().out
