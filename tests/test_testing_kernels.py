import pytest
import testing_kernels as ex
import torch
from support import DEVICE, FLOAT_DTYPES, ON_GPU, requires_gpu

from benchmarks.cases import testing_kernels as cases

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


# ---- NaN, infinities and large magnitudes ----------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_and_inf_like_torch(dtype):
    # torch.relu keeps NaN; tl.maximum(acc, 0.0) without propagate_nan returns 0 for it on a GPU.
    M, N, K = 17, 33, 9
    x, w = _inputs(M, N, K, dtype)
    x[2, 5] = float("nan")  # row 2: all NaN
    x[4, 1] = float("inf")  # row 4: +inf or, after the relu, 0, by the sign of w[1, n]
    w[3, 7] = float("-inf")  # column 7: the same by the sign of x[m, 3]; NaN where it meets row 4's +inf
    out = ex.matmul_relu(x, w)
    ref = ex.matmul_relu_torch(x, w)
    torch.testing.assert_close(out.double(), ref, equal_nan=True, **ex.tolerance(dtype, DEVICE, K))
    assert out[2].isnan().all() and out[4].isinf().any() and (out[4] == 0).any()


def test_large_magnitudes_scale_exactly():
    # Scaling an fp32 input by 2**120 scales every product exactly (tf32 keeps fp32's exponent range):
    # the result must be the reference's, 2**120 times larger, with no overflow on the way.
    M, N, K = 17, 33, 9
    x, w = _inputs(M, N, K)
    scale = 2.0**120
    out = ex.matmul_relu(x * scale, w)
    assert out.isfinite().all() and out.abs().max() > 1e36
    torch.testing.assert_close(out.double() / scale, ex.matmul_relu_torch(x, w), **ex.tolerance(x.dtype, DEVICE, K))


def test_fp16_overflow_is_inf_as_in_torch():
    # 33 products of 300 * 300 sum to 2.97e6, past fp16's 65504: torch's fp16 matmul gives inf,
    # and relu(-inf) = 0 in the column whose weights are negative.
    x = torch.full((5, 33), 300.0, device=DEVICE, dtype=torch.float16)
    w = torch.full((33, 7), 300.0, device=DEVICE, dtype=torch.float16)
    w[:, 0] = -300.0
    out = ex.matmul_relu(x, w)
    expected = ex.matmul_relu_torch(x, w).to(torch.float16)
    assert expected[:, 1:].isinf().all() and (expected[:, 0] == 0).all()
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


# ---- layouts ---------------------------------------------------------------------------

def test_padded_offset_and_expanded_layouts():
    M, N, K = 21, 35, 19
    w = t_(K + 3, N)[3:]  # a storage offset
    out_buf = torch.full((M, N + 5), float("nan"), device=DEVICE)
    out = out_buf[:, :N]  # padded rows: stride (N + 5, 1)
    for x in (t_(M, K + 4)[:, :K], t_(1, K).expand(M, K), t_(M, 1).expand(M, K)):
        ex.matmul_relu(x, w, out)
        torch.testing.assert_close(out.double(), ex.matmul_relu_torch(x, w), **ex.tolerance(x.dtype, DEVICE, K))
        assert out_buf[:, N:].isnan().all()  # the padding is never written


@pytest.mark.parametrize(
    "make_out, words",
    [
        (lambda x, w: torch.zeros(1, 1, device=DEVICE).expand(x.shape[0], w.shape[1]),
         r"out must not have elements that can share an address, got shape \(9, 9\) and stride \(0, 0\)"),
        (lambda x, w: torch.zeros(9, 1, device=DEVICE).expand(9, 9), "share an address"),
        (lambda x, w: torch.zeros(81, device=DEVICE).as_strided((9, 9), (1, 1)), "share an address"),
        (lambda x, w: x, "out must not overlap x"),
        (lambda x, w: w, "out must not overlap w"),
    ],
)
def test_unfillable_outputs_are_refused(make_out, words):
    buf = t_(2 * 81)
    x, w = buf[:81].view(9, 9), buf[81:].view(9, 9)
    with pytest.raises(ValueError, match=words):
        ex.matmul_relu(x, w, make_out(x, w))


def test_overlap_helpers():
    buf = t_(100)
    a = buf[:50].view(5, 10)
    assert ex._overlap(a, buf[49:60]) and not ex._overlap(a, buf[50:60])
    assert ex._overlap(buf[10:20].view(2, 5).t(), buf[19:25]) and not ex._overlap(buf[:10], buf[10:10])
    assert not ex._may_self_overlap(a) and not ex._may_self_overlap(a.t()) and not ex._may_self_overlap(buf[:5, None])
    assert not ex._may_self_overlap(t_(4, 9)[:, ::3]) and ex._may_self_overlap(buf[:1].expand(3))


# ---- int32 offsets and grid limits: refused before anything is allocated -----------------

def meta(*shape):
    return torch.empty(*shape, device="meta")


@pytest.mark.parametrize(
    "x, w, words",
    [
        (meta(2**16 + 1, 2**15), meta(2**15, 1), "x reaches element offset 2147516415, past 2\\*\\*31 - 1"),
        (meta(1, 2**15 + 1), meta(2**16, 2**15 + 1).t(), "w reaches element offset 2147549183"),
        (meta(2**16, 1), meta(1, 2**15 + 1), "out reaches element offset 2147549183"),  # the output it would allocate
        (meta(1, 16), meta(16, 65_535 * 64 + 1), r"needs 65536 column tiles, more than grid axis 1 holds \(65535\)"),
    ],
)
def test_limits_are_refused(x, w, words):
    with pytest.raises(ValueError, match=words):
        ex.matmul_relu(x, w)


@pytest.mark.parametrize("block", [(64, 64), (64, 64, 8), (48, 64, 32), (64, 64, 32.0)])
def test_bad_block(block):
    with pytest.raises(ValueError, match="block must be three powers of two >= 16"):
        ex.matmul_relu(t_(2, 3), t_(3, 2), block=block)


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
    for provider in cases.BENCHMARKS[0]["providers"]:
        case = cases.bench_case("matmul_relu_fp16", provider, 17)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] == 2 * 17**3


def test_self_check_runs(capsys):
    ex.self_check(shapes=((5, 7, 3),))
    assert "matches float64" in capsys.readouterr().out
