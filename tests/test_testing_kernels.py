import pytest
import testing_kernels as ex
import torch

from conftest import DEVICE, FLOAT_DTYPES, ON_GPU, requires_gpu

SHAPES = [(1, 1, 1), (17, 33, 9), (127, 255, 33)]


def _inputs(M, N, K, dtype=torch.float32):
    return torch.randn(M, K, device=DEVICE, dtype=dtype), torch.randn(K, N, device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matches_float64_reference(shape, dtype):
    M, N, K = shape
    x, w = _inputs(M, N, K, dtype)
    out = ex.matmul_relu(x, w)
    assert out.dtype == dtype and out.shape == (M, N)
    torch.testing.assert_close(out.double(), ex.matmul_relu_torch(x, w), **ex.tolerance(dtype, DEVICE, K))


def test_non_contiguous_inputs_and_output():
    M, N, K = 33, 47, 21
    x = torch.randn(M, 2 * K, device=DEVICE)[:, ::2]  # every other column: stride (2K, 2)
    w = torch.randn(N, K, device=DEVICE).t()  # transposed view: stride (1, K)
    out = torch.full((N, M), float("nan"), device=DEVICE).t()  # the output may be strided too
    assert not (x.is_contiguous() or w.is_contiguous() or out.is_contiguous())
    ex.matmul_relu(x, w, out)
    torch.testing.assert_close(out.double(), ex.matmul_relu_torch(x, w), **ex.tolerance(x.dtype, DEVICE, K))


@pytest.mark.parametrize("block", [(16, 16, 16), (32, 64, 16)])
def test_block_shapes(block):
    x, w = _inputs(45, 70, 40)
    torch.testing.assert_close(ex.matmul_relu(x, w, block=block).double(), ex.matmul_relu_torch(x, w),
                               **ex.tolerance(x.dtype, DEVICE, 40))


def test_correct_kernel_writes_every_element():
    x, w = _inputs(65, 33, 17)
    out = torch.full((65, 33), float("nan"), device=DEVICE)
    ex.matmul_relu(x, w, out)
    assert not torch.isnan(out).any()


def test_zero_filled_output_hides_the_bug():
    x, w = _inputs(33, 65, 17)
    out = torch.zeros(33, 65, device=DEVICE)
    ex.matmul_relu_broken(x, w, out)
    # passes: every element the kernel skipped should have been 0, and 0 is what was there
    torch.testing.assert_close(out.double(), ex.matmul_relu_torch(x, w), **ex.tolerance(x.dtype, DEVICE, 17))


def test_poisoned_output_exposes_the_bug():
    x, w = _inputs(33, 65, 17)
    out = torch.full((33, 65), float("nan"), device=DEVICE)
    ex.matmul_relu_broken(x, w, out)
    ref = ex.matmul_relu_torch(x, w)
    assert torch.isnan(out).sum() == (ref == 0).sum() > 0
    with pytest.raises(AssertionError):
        torch.testing.assert_close(out.double(), ref, **ex.tolerance(x.dtype, DEVICE, 17))


def test_compare_fills_report():
    report = ex.compare_fills()
    assert report["zeros"] == "passed"
    assert report["nan"].startswith("failed:") and "never written" in report["nan"]


@pytest.mark.skipif(ON_GPU, reason="the interpreter's fp32 dot; the GPU's is tested below")
def test_interpreter_fp32_dot_is_true_fp32():
    # The kernel asks for tf32, but the interpreter computes in fp32: the error is tiny.
    x, w = _inputs(127, 255, 33)
    err = ex.dot_error(x, w, input_precision="tf32")
    assert err < ex.tolerance(torch.float32, DEVICE, 33, "ieee")["atol"]
    assert ex.unit_roundoff(torch.float32, DEVICE) == 2.0**-24


@requires_gpu
def test_gpu_fp32_dot_is_tf32_unless_ieee():
    x, w = _inputs(127, 255, 33)
    tf32 = ex.dot_error(x, w, input_precision="tf32")
    ieee = ex.dot_error(x, w, input_precision="ieee")
    assert ieee < ex.tolerance(torch.float32, DEVICE, 33, "ieee")["atol"]
    assert tf32 < ex.tolerance(torch.float32, DEVICE, 33, "tf32")["atol"]
    assert tf32 > 10 * ieee  # tf32 keeps 10 mantissa bits, fp32 keeps 23
    assert tf32 > ex.tolerance(torch.float32, DEVICE, 33, "ieee")["atol"]  # a fp32 tolerance would fail


@requires_gpu
def test_gpu_bf16():
    x, w = _inputs(127, 255, 33, torch.bfloat16)
    torch.testing.assert_close(ex.matmul_relu(x, w).double(), ex.matmul_relu_torch(x, w),
                               **ex.tolerance(torch.bfloat16, DEVICE, 33))


def t_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "x, w, out, err, words",
    [
        ([[1.0]], t_(1, 1), None, TypeError, "x must be a torch.Tensor"),
        (t_(2, 3), t_(3, 2).to(torch.int32), None, TypeError, "w must be float16"),
        (t_(3), t_(3, 2), None, ValueError, "x must be 2-D"),
        (t_(2, 3), t_(4, 2), None, ValueError, "x and w do not chain"),
        (t_(2, 3), t_(3, 2, dtype=torch.float16), None, TypeError, "same dtype"),
        (t_(2, 3), t_(3, 2), t_(3, 3), ValueError, r"out must be a tensor of shape \(2, 2\)"),
        (t_(2, 3), t_(3, 2), t_(2, 2, dtype=torch.float16), TypeError, "out must be torch.float32"),
    ],
)
def test_bad_inputs(x, w, out, err, words):
    with pytest.raises(err, match=words):
        ex.matmul_relu(x, w, out)


def test_bad_input_precision():
    with pytest.raises(ValueError, match="input_precision must be 'tf32' or 'ieee'"):
        ex.matmul_relu(t_(2, 3), t_(3, 2), input_precision="fp64")


def test_bench_case_tiny():
    for provider in ex.BENCHMARKS[0]["providers"]:
        case = ex.bench_case("matmul_relu_fp16", provider, 17)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] == 2 * 17**3


def test_self_check_runs(capsys):
    ex.self_check(shapes=((5, 7, 3),))
    assert "matches float64" in capsys.readouterr().out
