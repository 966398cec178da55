"""Tests for exercise 06: an activation chosen by a constexpr.

Run: pytest exercises/06_constexpr
"""

import pytest
import torch

from checking import assert_close

ON_GPU = torch.cuda.is_available()
# bf16 is wrong in Triton's interpreter (triton issues 4972, 11584): test on a GPU only.
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if ON_GPU else [])
TOL = {
    torch.float32: (1e-5, 1e-6),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1e-2, 1e-2),
}
ACTIVATIONS = ["relu", "leaky_relu", "sigmoid", "silu"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("n", [1, 257, 1000])
def test_matches_torch(impl, device, dtype, name, n):
    x = 4 * torch.randn(n, device=device, dtype=dtype)
    rtol, atol = TOL[dtype]
    assert_close(
        impl.activation(x, name), impl.activation_torch(x, name), rtol=rtol, atol=atol
    )


@pytest.mark.parametrize("slope", [0.0, 0.2, 3.0])
def test_leaky_relu_slope(impl, device, slope):
    x = torch.randn(300, device=device)
    assert_close(impl.activation(x, "leaky_relu", neg_slope=slope),
                 impl.activation_torch(x, "leaky_relu", neg_slope=slope))


def test_activations_differ(impl, device):
    """Each name selects its own branch: no two give the same output."""
    x = torch.linspace(-3, 3, 101, device=device)
    outs = {name: impl.activation(x, name) for name in ACTIVATIONS}
    for a in ACTIVATIONS:
        for b in ACTIVATIONS:
            if a < b:
                assert not torch.allclose(outs[a], outs[b]), (
                    f"{a} and {b} give the same output"
                )


def test_launcher_refuses_bad_input(impl, device):
    with pytest.raises(ValueError):
        impl.activation(torch.randn(10, device=device), "tanh")
    with pytest.raises(ValueError):
        impl.activation(torch.randn(10, 2, device=device)[:, 0], "relu")
