import launch_grids as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, ON_GPU, requires_gpu, tolerances

from benchmarks.cases import launch_grids as cases


def x_(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


# --- 1-D grid, every kind of argument ---------------------------------------------------------

@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("relu", [False, True])
def test_scale_shift_matches_torch(n, dtype, relu):
    x = x_(n, dtype=dtype)
    got = ex.scale_shift(x, 1.75, -0.5, relu=relu)
    torch.testing.assert_close(got, ex.scale_shift_torch(x, 1.75, -0.5, relu=relu), **tolerances(dtype))
    if relu:
        assert (got >= 0).all()


@pytest.mark.parametrize("step", [2, 3])
def test_scale_shift_strided_input(step):
    x = x_(781 * step)[::step]
    assert x.stride(0) == step
    torch.testing.assert_close(ex.scale_shift(x, -2.0, 3.0), ex.scale_shift_torch(x, -2.0, 3.0))


def test_scale_shift_expanded_input():
    x = x_(1).expand(127)  # stride 0: every element reads the same value
    torch.testing.assert_close(ex.scale_shift(x, 0.5, 1.0), ex.scale_shift_torch(x, 0.5, 1.0))


@pytest.mark.parametrize("block_size", [16, 128, 2048])
def test_scale_shift_block_sizes(block_size):
    x = x_(1025)
    torch.testing.assert_close(ex.scale_shift(x, 3.0, block_size=block_size), ex.scale_shift_torch(x, 3.0))


def test_grid_function_sees_block_size():
    # The grid lambda reads BLOCK_SIZE from the launch: with 16 it needs 65 programs for 1025
    # elements; a grid stuck at 1025 // 1024 + 1 = 2 programs would leave NaNs behind.
    x = x_(1025)
    out = torch.full_like(x, float("nan"))
    n = x.numel()
    ex.scale_shift_kernel[lambda meta: (ex.triton.cdiv(n, meta["BLOCK_SIZE"]),)](
        x, out, n, 1, 1.0, 0.0, RELU=False, BLOCK_SIZE=16)
    assert not torch.isnan(out).any()
    torch.testing.assert_close(out, x)


def test_scale_shift_writes_every_element():
    n = 1023
    x = x_(n)
    out = torch.full((n,), float("nan"), device=DEVICE)
    ex.scale_shift_kernel[(ex.triton.cdiv(n, 128),)](x, out, n, 1, 2.0, 0.0, RELU=False, BLOCK_SIZE=128)
    assert not torch.isnan(out).any()


# --- 2-D grid ------------------------------------------------------------------------------------

@pytest.mark.parametrize("M, N", [(1, 1), (17, 127), (33, 65), (70, 129)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_bias_matches_torch(M, N, dtype):
    x, bias = x_(M, N, dtype=dtype), x_(N, dtype=dtype)
    torch.testing.assert_close(ex.add_row_bias(x, bias), ex.add_row_bias_torch(x, bias), rtol=0, atol=0)


@pytest.mark.parametrize("M, N", [(33, 65), (5, 200)])
def test_row_bias_transposed_and_sliced(M, N):
    bias = x_(N)
    xt = x_(N, M).t()  # strides (1, M)
    torch.testing.assert_close(ex.add_row_bias(xt, bias), ex.add_row_bias_torch(xt, bias), rtol=0, atol=0)
    xs = x_(M, 2 * N)[:, ::2]  # strides (2N, 2)
    torch.testing.assert_close(ex.add_row_bias(xs, bias), ex.add_row_bias_torch(xs, bias), rtol=0, atol=0)


@pytest.mark.parametrize("block_m, block_n", [(16, 16), (64, 32)])
def test_row_bias_block_sizes(block_m, block_n):
    x, bias = x_(70, 129), x_(129)
    got = ex.add_row_bias(x, bias, block_m=block_m, block_n=block_n)
    torch.testing.assert_close(got, ex.add_row_bias_torch(x, bias), rtol=0, atol=0)


def test_row_bias_writes_every_element():
    M, N = 37, 65
    x, bias = x_(M, N), x_(N)
    out = torch.full((M, N), float("nan"), device=DEVICE)
    grid = (ex.triton.cdiv(M, 16), ex.triton.cdiv(N, 32))
    ex.add_row_bias_kernel[grid](x, bias, out, M, N, *x.stride(), *out.stride(), BLOCK_M=16, BLOCK_N=32)
    assert not torch.isnan(out).any()


# --- 3-D grid ------------------------------------------------------------------------------------

@pytest.mark.parametrize("B, M, N", [(1, 1, 1), (3, 5, 129), (2, 17, 33)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batch_bias_matches_torch(B, M, N, dtype):
    x, bias = x_(B, M, N, dtype=dtype), x_(B, N, dtype=dtype)
    torch.testing.assert_close(ex.add_batch_bias(x, bias), ex.add_batch_bias_torch(x, bias), rtol=0, atol=0)


def test_batch_bias_non_contiguous():
    x = x_(5, 130, 3).permute(0, 2, 1)  # (5, 3, 130)
    bias = x_(130, 5).t()  # (5, 130), strides (1, 5)
    got = ex.add_batch_bias(x, bias, block_n=32)
    torch.testing.assert_close(got, ex.add_batch_bias_torch(x, bias), rtol=0, atol=0)


def test_batch_bias_writes_every_element():
    B, M, N = 2, 3, 65
    x, bias = x_(B, M, N), x_(B, N)
    out = torch.full((B, M, N), float("nan"), device=DEVICE)
    ex.add_batch_bias_kernel[(B, M, ex.triton.cdiv(N, 16))](
        x, bias, out, N, *x.stride(), *bias.stride(), *out.stride(), BLOCK_N=16)
    assert not torch.isnan(out).any()


def test_batch_bias_grid_limit():
    x = torch.zeros(1, 1, 1, device=DEVICE).expand(1, 65_536, 1)  # no memory behind the rows
    with pytest.raises(ValueError, match="grid axes 1 and 2 hold at most 65535"):
        ex.add_batch_bias(x, torch.zeros(1, 1, device=DEVICE))
    x = torch.zeros(1, 1, 1, device=DEVICE).expand(1, 1, 65_536 * 16 + 1)
    with pytest.raises(ValueError, match="grid axes 1 and 2"):
        ex.add_batch_bias(x, torch.zeros(1, 65_536 * 16 + 1, device=DEVICE), block_n=16)


@requires_gpu
def test_driver_rejects_grid_axis_1_over_limit():
    # What the launcher's check saves the caller from: the driver's bare "invalid argument".
    x = x_(1, 65_536, 4)
    bias = x_(1, 4)
    out = torch.empty_like(x)
    with pytest.raises(RuntimeError, match="invalid argument"):
        ex.add_batch_bias_kernel[(1, 65_536, 1)](
            x, bias, out, 4, *x.stride(), *bias.stride(), *out.stride(), BLOCK_N=4)
        torch.cuda.synchronize()


# --- layouts: padded rows, storage offsets, expanded views ----------------------------------------

def test_layouts_with_offsets_padding_and_broadcast():
    M, N, B = 19, 37, 3
    bias = x_(N + 5)[5:]  # a storage offset
    for x in (x_(M, N + 7)[:, :N],  # padded rows: stride (N + 7, 1)
              x_(M + 2, N)[2:],  # a storage offset
              x_(1, N).expand(M, N),  # every row the same memory: stride (0, 1)
              x_(M, 1).expand(M, N)):  # stride (1, 0)
        torch.testing.assert_close(ex.add_row_bias(x, bias), ex.add_row_bias_torch(x, bias), rtol=0, atol=0)
    x3 = x_(B, M, N + 3)[:, :, 3:]  # padded and offset
    for bias2 in (x_(1, N).expand(B, N), x_(B, N + 1)[:, 1:]):
        torch.testing.assert_close(ex.add_batch_bias(x3, bias2), ex.add_batch_bias_torch(x3, bias2), rtol=0, atol=0)
    x1 = x_(M * 3 + 1)[1::3]
    torch.testing.assert_close(ex.scale_shift(x1, 2.0, 1.0, relu=True), ex.scale_shift_torch(x1, 2.0, 1.0, relu=True))


# --- NaN, infinities and large magnitudes ----------------------------------------------------------

def special(n, dtype=torch.float32):
    """Random values with NaN, +inf, -inf and the largest finite magnitudes mixed in."""
    x = x_(n, dtype=dtype)
    big = torch.finfo(dtype).max
    x[:: 7], x[1:: 7], x[2:: 7], x[3:: 7], x[4:: 7] = float("nan"), float("inf"), float("-inf"), big, -big
    return x


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("relu", [False, True])
def test_scale_shift_nan_inf_like_torch(dtype, relu):
    # relu: tl.maximum(y, 0.0) alone turns NaN into 0 on a GPU; torch keeps NaN.
    x = special(131, dtype)
    got = ex.scale_shift(x, 1.5, -0.25, relu=relu)  # big * 1.5 overflows to inf, in both
    ref = ex.scale_shift_torch(x, 1.5, -0.25, relu=relu)
    torch.testing.assert_close(got, ref, equal_nan=True, **tolerances(dtype))
    assert got[::7].isnan().all() and got[3::7].eq(float("inf")).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bias_adds_nan_inf_like_torch(dtype):
    x = special(5 * 33, dtype).view(5, 33)
    bias = special(33, dtype).flip(0)
    torch.testing.assert_close(ex.add_row_bias(x, bias), ex.add_row_bias_torch(x, bias), rtol=0, atol=0,
                               equal_nan=True)
    x3, bias3 = x.view(5, 1, 33).expand(5, 2, 33), special(5 * 33, dtype).view(5, 33)
    torch.testing.assert_close(ex.add_batch_bias(x3, bias3), ex.add_batch_bias_torch(x3, bias3), rtol=0, atol=0,
                               equal_nan=True)


# --- int32 offsets: refused before anything is allocated --------------------------------------------
# Expanded views and meta tensors (shape and strides, no storage) reach 2**31 without the memory.

def meta(shape, stride=None):
    if stride is None:
        return torch.empty(shape, device="meta")
    return torch.empty_strided(shape, stride, device="meta")


OFFSET_CASES = {
    "expanded, 2**31 + 1 elements": (lambda: ex.scale_shift(x_(1).expand(2**31 + 1), 1.0), "x", 2**31),
    "strided 1-D": (lambda: ex.scale_shift(meta((2049,), (2**20,)), 1.0), "x", 2**31),
    "padded rows": (lambda: ex.add_row_bias(meta((2**16 + 1, 2**15 + 1))[:, :5], meta((5,))), "x",
                    2**16 * (2**15 + 1) + 4),
    "transposed": (lambda: ex.add_row_bias(meta((2**15 + 1, 2**16)).t(), meta((2**15 + 1,))), "x", 2**31 + 2**16 - 1),
    "expanded rows": (lambda: ex.add_row_bias(x_(1, 2**16).expand(2**15 + 1, 2**16), x_(2**16)), "x",
                      2**31 + 2**16 - 1),
    "3-D batch stride": (lambda: ex.add_batch_bias(meta((3, 2, 4), (2**30, 4, 1)), meta((3, 4))), "x",
                         2**31 + 4 + 3),
    "3-D bias": (lambda: ex.add_batch_bias(meta((3, 2, 4)), meta((3, 4), (2**30, 1))), "bias", 2**31 + 3),
}


@pytest.mark.parametrize("case", OFFSET_CASES)
def test_int32_offset_limit_is_refused(case):
    call, name, last = OFFSET_CASES[case]
    with pytest.raises(ValueError, match=rf"{name} of shape .* needs element offsets up to {last}, "
                                         r"more than an int32 holds \(2\*\*31 - 1\)"):
        call()


def test_int32_offset_limit_boundary():
    # The last offset 2**31 - 1 still fits: accepted (checked without launching).
    ex.check_offsets("x", x_(1).expand(2**31))
    ex.check_offsets("x", meta((2**16, 2**15)))
    ex.check_offsets("x", meta((2, 2), (2**31 - 2, 1)))
    with pytest.raises(ValueError, match="up to 2147483648"):
        ex.check_offsets("x", meta((2, 2), (2**31 - 1, 1)))
    ex.check_offsets("x", x_(0, 5))  # nothing to reach


def test_row_bias_grid_axis_1_limit():
    N = 65_535 * 64 + 1
    with pytest.raises(ValueError, match="needs 65536 column tiles on grid axis 1, which holds at most 65535"):
        ex.add_row_bias(meta((1, N)), meta((N,)))


# --- validation ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "call, err, words",
    [
        (lambda: ex.scale_shift([1.0, 2.0], 1.0), TypeError, "x must be a torch.Tensor"),
        (lambda: ex.scale_shift(x_(4).to(torch.int32), 1.0), TypeError, "x must be float16, bfloat16 or float32"),
        (lambda: ex.scale_shift(x_(2, 3), 1.0), ValueError, "x must be 1-D"),
        (lambda: ex.scale_shift(x_(4), x_(1)), TypeError, "alpha must be a Python float"),
        (lambda: ex.scale_shift(x_(4), 1.0, True), TypeError, "beta must be a Python float"),
        (lambda: ex.scale_shift(x_(4), 1.0, block_size=100), ValueError, "block_size must be a positive power"),
        (lambda: ex.add_row_bias(x_(3, 4), x_(5)), ValueError, "bias must have x.shape.1. = 4 elements"),
        (lambda: ex.add_row_bias(x_(3), x_(3)), ValueError, "x must be 2-D"),
        (lambda: ex.add_row_bias(x_(3, 4), x_(4, dtype=torch.float16)), TypeError, "x and bias must have the same"),
        (lambda: ex.add_row_bias(x_(3, 4), x_(8)[::2]), ValueError, "bias must be contiguous"),
        (lambda: ex.add_row_bias(x_(3, 4), x_(4), block_m=0), ValueError, "block_m must be a positive power"),
        (lambda: ex.add_batch_bias(x_(2, 3, 4), x_(3, 4)), ValueError, r"bias must have shape \(B, N\)"),
        (lambda: ex.add_batch_bias(x_(2, 3, 4), x_(2, 4), block_n=48), ValueError, "block_n must be a positive"),
    ],
)
def test_bad_inputs(call, err, words):
    with pytest.raises(err, match=words):
        call()


@pytest.mark.skipif(not ON_GPU, reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="x and bias must be on the same device"):
        ex.add_row_bias(x_(3, 4), torch.randn(4))


def test_bf16_refused_on_old_gpu(monkeypatch):
    # Pretend the tensor lives on a Turing GPU (compute capability 7.5): the launcher must
    # refuse bf16 before launching anything, and name the argument and both capabilities.
    monkeypatch.setattr(ex, "device_capability", lambda device: (7, 5))
    x = torch.randn(17, device=DEVICE).to(torch.bfloat16)
    with pytest.raises(TypeError, match=r"x is torch.bfloat16, which needs compute capability 8.0 .* is 7.5"):
        ex.scale_shift(x, 1.0)
    with pytest.raises(TypeError, match="x is torch.bfloat16"):
        ex.add_row_bias(x_(3, 4).to(torch.bfloat16), x_(4).to(torch.bfloat16))
    # fp16 and fp32 are fine on the same GPU
    ex.check_device("x", x_(17, dtype=torch.float16))
    ex.check_device("x", x_(17))


@pytest.mark.parametrize("cap", [(8, 0), (9, 0), (10, 0)])
def test_bf16_allowed_from_ampere(monkeypatch, cap):
    monkeypatch.setattr(ex, "device_capability", lambda device: cap)
    ex.check_device("x", x_(17).to(torch.bfloat16))  # no error


def test_device_capability():
    cap = ex.device_capability(DEVICE)
    if ON_GPU:
        assert cap == torch.cuda.get_device_capability(DEVICE)
    else:
        assert cap is None  # the interpreter has no compute capability to check


@requires_gpu
def test_bf16_on_gpu():
    x = x_(1025).to(torch.bfloat16)
    torch.testing.assert_close(ex.scale_shift(x, 1.5, 0.25), ex.scale_shift_torch(x, 1.5, 0.25),
                               **tolerances(torch.bfloat16))


# --- the example as a whole ------------------------------------------------------------------------

def test_self_check_runs(capsys):
    ex.self_check()
    assert "1-D, 2-D and 3-D launches match torch" in capsys.readouterr().out


@pytest.mark.parametrize("provider", ["triton", "torch"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x, **spec["args"])
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] > 0


def test_grid_and_tile_limits_refused_before_launch():
    # 2**31 elements pass the int32 offset check, but in blocks of 1 they need 2**31 programs, one more
    # than grid axis 0 holds; a tile past 2**20 elements does not compile. Meta tensors: no memory.
    x = torch.empty(2**31, device="meta")
    with pytest.raises(ValueError, match="more programs than grid axis 0 holds"):
        ex.scale_shift(x, 1.0, block_size=1)
    with pytest.raises(ValueError, match="at most 2\\*\\*20"):
        ex.scale_shift(torch.zeros(8, device=DEVICE), 1.0, block_size=2**21)
