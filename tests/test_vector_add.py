import pytest
import torch
import vector_add as ex

from conftest import DEVICE, FLOAT_DTYPES, ODD_SIZES


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


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.add(x_(4), torch.randn(4))


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 33))
    assert "add(x, y) == x + y" in capsys.readouterr().out
