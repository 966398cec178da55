"""Tests for exercise 15: dropout from a seed, without a stored mask.

Run: pytest exercises/15_dropout
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
TOL = {
    torch.float32: (1e-6, 1e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}


def no_zeros(shape, device, dtype=torch.float32):
    """Values in [1, 2): an output of 0 can only mean "dropped"."""
    return (torch.rand(shape, device=device) + 1.0).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.1, 0.5])
@pytest.mark.parametrize("n", [1, 17, 1000, 4099])
def test_matches_torch(impl, device, dtype, p, n):
    """Kept elements are scaled by 1 / (1 - p), dropped ones are 0 (the mask is read
    off the output)."""
    x = no_zeros(n, device, dtype)
    y = impl.dropout(x, p, seed=123)
    rtol, atol = TOL[dtype]
    assert_close(y, impl.dropout_torch(x, y != 0, p), rtol=rtol, atol=atol)


@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 0.9])
def test_drops_a_fraction_p(impl, device, p):
    x = no_zeros(20_000, device)
    y = impl.dropout(x, p, seed=2024)
    assert y.isfinite().all(), "some elements were not written"
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - p) < 0.02, (
        f"dropped {dropped:.3f} of the elements, expected about {p}"
    )


def test_same_seed_same_mask_other_seed_other_mask(impl, device):
    x = no_zeros(3000, device)
    first, again, other = (impl.dropout(x, 0.5, seed=s) for s in (11, 11, 12))
    assert_close(first, again, rtol=0, atol=0)
    assert not torch.equal(first == 0, other == 0), "seeds 11 and 12 gave the same mask"


def test_mask_depends_on_the_index_only(impl, device):
    """Two inputs of one size, one seed: the same elements are dropped."""
    a, b = no_zeros(2000, device), no_zeros(2000, device)
    assert torch.equal(impl.dropout(a, 0.3, seed=5) == 0,
                       impl.dropout(b, 0.3, seed=5) == 0)


@pytest.mark.parametrize("block_size", [16, 64, 4096])
def test_mask_does_not_depend_on_the_block_size(impl, device, block_size):
    """Random bits from the tile's lane numbers alone would repeat in every tile."""
    x = no_zeros(3001, device)
    assert_close(impl.dropout(x, 0.5, seed=9, block_size=block_size),
                 impl.dropout(x, 0.5, seed=9), rtol=0, atol=0)


def test_backward_regenerates_the_mask(impl, device):
    """The gradient of dropout is dropout of the incoming gradient with the same seed:
    no mask is kept."""
    x = no_zeros((37, 41), device)
    y = impl.dropout(x, 0.4, seed=77)
    dy = torch.randn(37, 41, device=device)
    dx = impl.dropout(dy, 0.4, seed=77)
    assert_close(dx, impl.dropout_torch(dy, y != 0, 0.4))


def test_launcher_refuses_bad_input(impl, device):
    x = torch.randn(10, device=device)
    with pytest.raises(ValueError):
        impl.dropout(x, 1.0, seed=0)
    with pytest.raises(ValueError):
        impl.dropout(x, 0.5, seed=-1)
    with pytest.raises(TypeError):
        impl.dropout(torch.arange(10, device=device), 0.5, seed=0)
