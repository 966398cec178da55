import pytest
import torch
import vector_add as ex
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, ON_GPU, requires_gpu


@pytest.mark.parametrize("n", ODD_SIZES + [98_432])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matches_torch(n, dtype):
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    y = torch.randn(n, device=DEVICE, dtype=dtype)
    torch.testing.assert_close(ex.add(x, y), ex.add_torch(x, y), rtol=0, atol=0)


@pytest.mark.parametrize("block_size", [16, 128, 4096])
def test_block_sizes(block_size):
    x = torch.randn(1000, device=DEVICE)
    y = torch.randn(1000, device=DEVICE)
    torch.testing.assert_close(ex.add(x, y, block_size=block_size), x + y, rtol=0, atol=0)


def test_every_element_written():
    # Poison the output: a lane the kernel never stores to would keep its NaN.
    n = 1025
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    z = torch.full((n,), float("nan"), device=DEVICE)
    ex.add_kernel[(ex.triton.cdiv(n, 256),)](x, y, z, n, BLOCK_SIZE=256)
    assert not torch.isnan(z).any()


def x_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "x, y, err, words",
    [
        ([1.0], x_(1), TypeError, "x must be a torch.Tensor"),
        (x_(4), x_(4).to(torch.int32), TypeError, "y must be float16"),
        (x_(2, 3), x_(2, 3), ValueError, "x must be 1-D"),
        (x_(8)[::2], x_(4), ValueError, "x must be contiguous"),
        (x_(4), x_(5), ValueError, "same shape"),
        (x_(4), x_(4, dtype=torch.float16), TypeError, "same dtype"),
    ],
)
def test_bad_inputs(x, y, err, words):
    with pytest.raises(err, match=words):
        ex.add(x, y)


@pytest.mark.parametrize("block_size", [0, 100, -4])
def test_bad_block_size(block_size):
    with pytest.raises(ValueError, match="block_size must be a positive power of two"):
        ex.add(x_(4), x_(4), block_size=block_size)


@pytest.mark.parametrize("layout", ["expanded", "strided"])
def test_non_contiguous_inputs_are_refused(layout):
    x = x_(1).expand(9) if layout == "expanded" else x_(18)[::2]
    with pytest.raises(ValueError, match=r"x must be contiguous \(stride 1\), got stride"):
        ex.add(x, x_(9))
    with pytest.raises(ValueError, match=r"y must be contiguous \(stride 1\), got stride"):
        ex.add(x_(9), x)


def test_views_with_a_storage_offset():
    buf = x_(2100)
    x, y = buf[3:1028], buf[1031:2056]  # contiguous, not 16-byte aligned
    torch.testing.assert_close(ex.add(x, y), x + y, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_inf_like_torch(dtype):
    n = 1025
    x, y = x_(n, dtype=dtype), x_(n, dtype=dtype)
    big = torch.finfo(dtype).max
    x[::5], x[1::5], x[2::5], x[3::5] = float("nan"), float("inf"), float("-inf"), big
    y[1::5], y[2::5], y[3::5] = float("-inf"), float("-inf"), big  # inf - inf = NaN, big + big = inf
    z = ex.add(x, y)
    torch.testing.assert_close(z, ex.add_torch(x, y), rtol=0, atol=0, equal_nan=True)
    assert z[1::5].isnan().all() and z[3::5].eq(float("inf")).all()


def test_refuses_a_grid_past_axis_0():
    # A meta tensor: a shape with no memory behind it, so nothing is allocated or launched.
    x = torch.empty(2**31 + 4099, device="meta", dtype=torch.float16)
    with pytest.raises(ValueError, match="block_size=1 needs 2147487747 programs .* grid axis 0 holds .2147483647."):
        ex.add(x, x, block_size=1)


@requires_gpu
@pytest.mark.skipif(ON_GPU and torch.cuda.mem_get_info()[0] < 20 * 2**30, reason="needs about 20 GB of free GPU memory")
def test_gpu_past_2_31_elements():
    # int64 offsets: with int32 ones, the programs past 2**31 elements would compute negative
    # offsets and die with an illegal memory access. Three fp16 tensors of 4 GiB each.
    n = 2**31 + 4099
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.randn(n, device="cuda", dtype=torch.float16)
    z = ex.add(x, y)
    torch.cuda.synchronize()
    for part in (slice(0, 4096), slice(2**31 - 4096, 2**31 + 4096), slice(n - 8192, n)):
        torch.testing.assert_close(z[part], x[part] + y[part], rtol=0, atol=0)
    assert torch.equal(z, torch.add(x, y, out=y))  # every element, the reference written over y
    del x, y, z
    torch.cuda.empty_cache()


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.add(x_(4), torch.randn(4))


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 33))
    assert "add(x, y) == x + y" in capsys.readouterr().out
