import pytest
import tile_compute as ex
import torch
import triton
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, ON_GPU, requires_gpu, tolerances
from triton.compiler.errors import CompileTimeAssertionFailure
from triton.runtime.errors import InterpreterError

from benchmarks.cases import tile_compute as cases

NAN, INF = float("nan"), float("inf")


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def bmm_ref(a, b):
    """float64 product, rounded to the inputs' dtype."""
    return torch.bmm(a.double(), b.double()).to(a.dtype)


def bmm_tol(dtype, precision="ieee"):
    if dtype == torch.float32 and precision == "tf32" and ON_GPU:
        return tolerances(torch.float32, matmul=True)  # 10 mantissa bits per input
    if dtype == torch.float32:
        return {"rtol": 1e-4, "atol": 1e-4}
    return tolerances(dtype)


# ---- bmm: tl.dot, the fp32 accumulator, input precision ------------------------------

BMM_SHAPES = [(1, 1, 1, 1), (3, 17, 33, 65), (2, 130, 70, 19), (1, 16, 16, 16), (4, 65, 1, 127)]


@pytest.mark.parametrize("batch, M, N, K", BMM_SHAPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bmm_matches_torch(batch, M, N, K, dtype):
    a, b = rand(batch, M, K, dtype=dtype), rand(batch, K, N, dtype=dtype) / K**0.5
    c = ex.bmm(a, b)
    assert c.dtype == dtype and c.shape == (batch, M, N)
    torch.testing.assert_close(c, bmm_ref(a, b), **bmm_tol(dtype))


@pytest.mark.parametrize("precision", ex.PRECISIONS)
@pytest.mark.parametrize("num_stages", [1, 3])
def test_bmm_precisions_and_stages(precision, num_stages):
    a, b = rand(2, 70, 90), rand(2, 90, 33) / 90**0.5
    got = ex.bmm(a, b, input_precision=precision, num_stages=num_stages)
    torch.testing.assert_close(got, bmm_ref(a, b), **bmm_tol(torch.float32, precision))


@requires_gpu
def test_tf32_loses_bits_that_ieee_and_tf32x3_keep():
    # On tensor cores "tf32" rounds each input to 10 mantissa bits; "tf32x3" adds the products of
    # the rounding remainders back; "ieee" is plain fp32. The interpreter ignores the option.
    a, b = rand(4, 128, 128), rand(4, 128, 128) / 128**0.5
    want = torch.bmm(a.double(), b.double())
    err = {p: (ex.bmm(a, b, input_precision=p).double() - want).abs().max().item() for p in ex.PRECISIONS}
    assert err["tf32"] > 20 * err["ieee"], err
    assert err["tf32"] > 20 * err["tf32x3"], err


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_half_inputs_accumulate_in_fp32(dtype):
    # 4096 products of 1.0 summed: an fp16 running sum would stop at 2048 (2049 is not an fp16 number).
    K = 4096
    a = torch.ones(1, 16, K, device=DEVICE, dtype=dtype)
    b = torch.ones(1, K, 16, device=DEVICE, dtype=dtype)
    c = ex.bmm(a, b)
    assert (c == K).all()


LAYOUTS = {
    "a transposed": lambda: (rand(3, 33, 17).transpose(1, 2), rand(3, 33, 20)),
    "b transposed": lambda: (rand(3, 17, 33), rand(3, 20, 33).transpose(1, 2)),
    "padded rows": lambda: (rand(3, 17, 48)[:, :, :33], rand(3, 33, 32)[:, :, :20]),
    "storage offset": lambda: (rand(4, 17, 33)[1:], rand(3 * 33 * 20 + 5)[5:].view(3, 33, 20)),
    "expanded batch": lambda: (rand(1, 17, 33).expand(3, 17, 33), rand(3, 33, 20)),
    "batch-minor": lambda: (rand(17, 33, 3).permute(2, 0, 1), rand(33, 3, 20).permute(1, 0, 2)),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bmm_any_strides(layout):
    a, b = LAYOUTS[layout]()
    assert a.shape == (3, 17, 33) and b.shape == (3, 33, 20)
    torch.testing.assert_close(ex.bmm(a, b), bmm_ref(a, b), **bmm_tol(torch.float32))


def test_bmm_leaves_its_inputs_alone():
    a, b = rand(2, 19, 40), rand(2, 40, 23).transpose(1, 2).contiguous().transpose(1, 2)
    a0, b0 = a.clone(), b.clone()
    c = ex.bmm(a, b)
    assert c.is_contiguous() and c.shape == (2, 19, 23)
    assert torch.equal(a, a0) and torch.equal(b, b0) and a.stride() == a0.stride() and b.stride() == b0.stride()


@pytest.mark.parametrize("shape_a, shape_b", [((0, 3, 4), (0, 4, 5)), ((2, 0, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 0))])
def test_bmm_empty(shape_a, shape_b):
    c = ex.bmm(rand(*shape_a), rand(*shape_b))
    assert c.shape == (shape_a[0], shape_a[1], shape_b[2])


def test_bmm_k_zero_is_zeros():
    c = ex.bmm(rand(2, 3, 0), rand(2, 0, 5))
    assert c.shape == (2, 3, 5) and (c == 0).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bmm_nan_inf_like_torch(dtype):
    a, b = rand(2, 17, 20, dtype=dtype), rand(2, 20, 9, dtype=dtype)
    a[0, 3, 5] = NAN  # row 3 of c[0] is NaN
    a[1, 4, 0] = INF  # row 4 of c[1]: +-inf, with the sign of b[1, 0, j]
    got, want = ex.bmm(a, b), bmm_ref(a, b)
    torch.testing.assert_close(got, want, equal_nan=True, **bmm_tol(dtype))
    assert got[0, 3].isnan().all() and got[1, 4].isinf().any()


@requires_gpu
def test_bmm_batch_offsets_past_2_31():
    # The second matrix of a starts 2**31 elements into its storage: the batch offset must be int64.
    buf = torch.zeros(2**31 + 64 * 64, device=DEVICE, dtype=torch.float16)
    buf[2**31:] = torch.randn(64 * 64, device=DEVICE, dtype=torch.float16)
    a = buf.as_strided((2, 64, 64), (2**31, 64, 1))
    b = rand(2, 64, 32, dtype=torch.float16)
    torch.testing.assert_close(ex.bmm(a, b), bmm_ref(a, b), **bmm_tol(torch.float16))
    assert ex.bmm(a, b)[1].abs().sum() > 0


def test_bmm_refuses_int32_offsets_inside_one_matrix():
    a = torch.empty(1, 2**16, 2**15 + 1, device="meta")  # one matrix past 2**31 - 1
    with pytest.raises(ValueError, match=r"a has offsets past 2\*\*31 - 1 inside one matrix"):
        ex.bmm(a, torch.empty(1, 2**15 + 1, 16, device="meta"))
    with pytest.raises(ValueError, match=r"the output has 2147516416 elements per matrix"):
        ex.bmm(torch.empty(1, 2**16 + 1, 16, device="meta"), torch.empty(1, 16, 2**15, device="meta"))


def test_bmm_refuses_a_k_loop_that_would_wrap():
    K = 2**31 - 16  # every offset fits in int32, but k0 + BLOCK_K would wrap past 2**31 - 1
    with pytest.raises(ValueError, match=r"a has K = 2147483632 columns, more than 2\*\*31 - 32: the K loop counts"):
        ex.bmm(torch.empty(1, 1, K, device="meta"), torch.empty(1, K, 1, device="meta"))


def test_bmm_refuses_too_many_tiles():
    M = 65_535 * 64 + 1
    with pytest.raises(ValueError, match=r"need a grid of \(65536, 1\) tiles, but grid axes 1 and 2 hold at most"):
        ex.bmm(torch.empty(1, M, 16, device="meta"), torch.empty(1, 16, 16, device="meta"))


@pytest.mark.parametrize(
    "a, b, kwargs, err, words",
    [
        ([[1.0]], rand(1, 1, 1), {}, TypeError, "a must be a torch.Tensor"),
        (rand(1, 2, 2), "b", {}, TypeError, "b must be a torch.Tensor"),
        (torch.ones(1, 2, 2, dtype=torch.int32, device=DEVICE), rand(1, 2, 2), {}, TypeError, "a must be float16"),
        (rand(2, 2), rand(1, 2, 2), {}, ValueError, r"a must be 3-D, got shape \(2, 2\)"),
        (rand(1, 2, 2), rand(1, 2, 2, dtype=torch.float16), {}, TypeError, "a and b must have the same dtype"),
        (rand(1, 2, 3), rand(1, 2, 3), {}, ValueError, r"do not match: got shapes \(1, 2, 3\) and \(1, 2, 3\)"),
        (rand(2, 2, 3), rand(1, 3, 3), {}, ValueError, "do not match"),
        (rand(1, 2, 2), rand(1, 2, 2), {"input_precision": "fp32"}, ValueError, "input_precision must be one of"),
        (rand(1, 2, 2), rand(1, 2, 2), {"num_stages": 0}, ValueError, "num_stages must be None or an int from 1 to 6"),
        (rand(1, 2, 2), rand(1, 2, 2), {"num_stages": 2.0}, ValueError, "num_stages must be None or an int"),
        (rand(1, 2, 2), rand(1, 2, 2), {"num_ctas": 4}, ValueError, "num_ctas must be 1 or 2, got 4"),
        (rand(1, 2, 2), rand(1, 2, 2), {"num_ctas": True}, ValueError, "num_ctas must be 1 or 2, got True"),
    ],
)
def test_bmm_bad_inputs(a, b, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.bmm(a, b, **kwargs)


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bmm_two_ctas_per_program(precision, dtype):
    # num_ctas=2 makes each program a cluster of two thread blocks on Hopper; the interpreter ignores it
    a, b = rand(3, 70, 40, dtype=dtype), rand(3, 40, 90, dtype=dtype).transpose(1, 2).contiguous().transpose(1, 2)
    out = ex.bmm(a, b, input_precision=precision, num_ctas=2)
    torch.testing.assert_close(out, ex.bmm(a, b, input_precision=precision), rtol=0, atol=0)
    torch.testing.assert_close(out.double(), bmm_ref(a, b).to(out.dtype).double(), **bmm_tol(dtype, precision))


@requires_gpu
def test_bmm_refuses_two_ctas_before_hopper(monkeypatch):
    monkeypatch.setattr(ex, "_capability", lambda index: (8, 0))  # bmm caches the real one
    with pytest.raises(ValueError, match="num_ctas=2 needs an sm_90 .Hopper. GPU or newer; this one is sm_80"):
        ex.bmm(rand(1, 16, 16), rand(1, 16, 16), num_ctas=2)


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x = torch.randn(1, 2, 2)
    with pytest.raises(ValueError, match="a is on the CPU: CPU tensors need TRITON_INTERPRET=1"):
        ex.bmm(x, x)
    with pytest.raises(ValueError, match="x is on the CPU"):
        ex.polyval(x, torch.ones(2))
    with pytest.raises(ValueError, match="x is on the CPU"):
        ex.row_argmax(x[0])


def test_bmm_refuses_mixed_devices():
    with pytest.raises(ValueError, match="a and b must be on the same device"):
        ex.bmm(rand(1, 2, 2), torch.empty(1, 2, 2, device="meta"))


# ---- polyval: tl.static_range, scalar loads, promotion ---------------------------------


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_polyval_matches_torch(n, dtype):
    x = rand(n, dtype=dtype)
    coeffs = torch.tensor([0.25, -1.5, 2.0, 0.5, -3.0], device=DEVICE)
    torch.testing.assert_close(ex.polyval(x, coeffs), ex.polyval_torch(x, coeffs), **tolerances(dtype))


@pytest.mark.parametrize("degree", [0, 1, 7, ex.MAX_DEGREE])
def test_polyval_every_degree(degree):
    x = rand(300) / 2
    coeffs = torch.randn(degree + 1, device=DEVICE)
    torch.testing.assert_close(ex.polyval(x, coeffs), ex.polyval_torch(x, coeffs), rtol=1e-5, atol=1e-5)


def test_polyval_against_the_formula():
    x = torch.linspace(-2, 2, 101, device=DEVICE)
    got = ex.polyval(x, torch.tensor([1.0, 0.0, -2.0, 3.0], device=DEVICE))  # x^3 - 2x + 3
    torch.testing.assert_close(got, x**3 - 2 * x + 3, rtol=1e-5, atol=1e-5)


def test_polyval_keeps_shape_and_takes_float64_coefficients():
    x = rand(7, 33)
    coeffs = torch.tensor([1.0, 2.0, 3.0], device=DEVICE, dtype=torch.float64)
    y = ex.polyval(x, coeffs)
    assert y.shape == (7, 33) and y.dtype == torch.float32
    torch.testing.assert_close(y, ex.polyval_torch(x, coeffs))


@pytest.mark.parametrize("block_size", [16, 128, 4096])
def test_polyval_block_sizes(block_size):
    x, coeffs = rand(1000), torch.tensor([1.0, -1.0], device=DEVICE)
    torch.testing.assert_close(ex.polyval(x, coeffs, block_size=block_size), ex.polyval_torch(x, coeffs))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_polyval_nan_inf_like_torch(dtype):
    x = rand(40, dtype=dtype)
    x[0], x[1], x[2] = NAN, INF, -INF
    coeffs = torch.tensor([1.0, 0.0, 1.0], device=DEVICE)  # x^2 + 1: +-inf -> inf
    got = ex.polyval(x, coeffs)
    torch.testing.assert_close(got, ex.polyval_torch(x, coeffs), equal_nan=True, **tolerances(dtype))
    assert got[0].isnan() and got[1] == INF and got[2] == INF


def test_polyval_views():
    base = rand(50)
    x = base[3:43]  # contiguous, with a storage offset
    coeffs = torch.tensor([2.0, 1.0], device=DEVICE)
    torch.testing.assert_close(ex.polyval(x, coeffs), ex.polyval_torch(x, coeffs))
    with pytest.raises(ValueError, match=r"x must be contiguous, got stride \(2,\)"):
        ex.polyval(base[::2], coeffs)
    with pytest.raises(ValueError, match="x must be contiguous"):
        ex.polyval(rand(5, 6).t(), coeffs)


@requires_gpu
def test_polyval_past_2_31_elements():
    n = 2**31 + 1000
    x = torch.full((n,), 2.0, device=DEVICE, dtype=torch.float16)
    x[-10:] = 3.0
    y = ex.polyval(x, torch.tensor([1.0, 1.0], device=DEVICE))  # x + 1
    assert (y[-10:] == 4.0).all() and (y[-1010:-10] == 3.0).all() and y[0] == 3.0


@pytest.mark.parametrize(
    "x, coeffs, kwargs, err, words",
    [
        ([1.0], torch.ones(2), {}, TypeError, "x must be a torch.Tensor"),
        (rand(4), [1.0], {}, TypeError, "coeffs must be a torch.Tensor"),
        (torch.ones(4, dtype=torch.int32, device=DEVICE), torch.ones(2), {}, TypeError, "x must be float16"),
        (rand(4), torch.ones(2, 2), {}, ValueError, r"coeffs must be 1-D with 1 to 17 values, got shape \(2, 2\)"),
        (rand(4), torch.ones(0), {}, ValueError, "coeffs must be 1-D with 1 to 17 values"),
        (rand(4), torch.ones(18), {}, ValueError, "coeffs must be 1-D with 1 to 17 values"),
        (rand(4), torch.ones(2, dtype=torch.int64), {}, TypeError, "coeffs must be a float tensor"),
        (rand(4), torch.ones(2), {"block_size": 8}, ValueError, "block_size must be a power of two >= 16"),
        (rand(4), torch.ones(2), {"block_size": 100}, ValueError, "block_size must be a power of two"),
    ],
)
def test_polyval_bad_inputs(x, coeffs, kwargs, err, words):
    if isinstance(coeffs, torch.Tensor):
        coeffs = coeffs.to(DEVICE)
    with pytest.raises(err, match=words):
        ex.polyval(x, coeffs, **kwargs)


def test_polyval_refuses_mixed_devices():
    with pytest.raises(ValueError, match="x and coeffs must be on the same device"):
        ex.polyval(rand(4), torch.ones(2, device="meta"))


# ---- row_argmax: tl.reduce with a combine function of our own ---------------------------


@pytest.mark.parametrize("n_cols", ODD_SIZES + [3000])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_argmax_matches_torch(n_cols, dtype):
    x = rand(6, n_cols, dtype=dtype)
    torch.testing.assert_close(ex.row_argmax(x, block_n=256), ex.row_argmax_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("block_n", [16, 64, 1024])
def test_row_argmax_ties_pick_the_first_index(block_n):
    x = torch.zeros(4, 300, device=DEVICE)
    x[0, [5, 200]] = 1.0  # a tie across two column blocks
    x[1, [17, 18]] = 1.0  # a tie inside one block
    x[3, :] = float("-inf")  # every column equal
    got = ex.row_argmax(x, block_n=block_n)
    assert got.tolist() == [5, 17, 0, 0]
    torch.testing.assert_close(got, ex.row_argmax_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_argmax_nan_and_inf_like_torch(dtype):
    x = rand(5, 1025, dtype=dtype)
    x[0, 900] = NAN  # NaN beats every number
    x[1, 3] = INF
    x[2, 1024] = INF  # in the ragged last tile
    x[3, 10], x[3, 500] = INF, NAN  # NaN beats inf
    got = ex.row_argmax(x, block_n=256)
    assert got.tolist()[:4] == [900, 3, 1024, 500]
    torch.testing.assert_close(got, ex.row_argmax_torch(x), rtol=0, atol=0)


def test_row_argmax_first_nan_wins():
    x = torch.zeros(1, 100, device=DEVICE)
    x[0, [40, 7, 90]] = NAN
    assert ex.row_argmax(x, block_n=16).tolist() == [7]


ARGMAX_LAYOUTS = {
    "transposed": lambda: rand(40, 9).t(),
    "padded rows": lambda: rand(9, 64)[:, :40],
    "storage offset": lambda: rand(10, 40)[1:],
    "expanded rows": lambda: rand(1, 40).expand(9, 40),
    "strided columns": lambda: rand(9, 80)[:, ::2],
}


@pytest.mark.parametrize("layout", ARGMAX_LAYOUTS)
def test_row_argmax_views(layout):
    x = ARGMAX_LAYOUTS[layout]()
    assert x.shape == (9, 40)
    torch.testing.assert_close(ex.row_argmax(x, block_n=16), ex.row_argmax_torch(x), rtol=0, atol=0)


def test_row_argmax_no_rows():
    assert ex.row_argmax(rand(0, 5)).shape == (0,)


@requires_gpu
def test_row_argmax_past_2_31_elements():
    n_cols = 2**30 + 7  # row 2 starts past 2**31 elements: the row offset must be int64
    x = torch.zeros(3, n_cols, device=DEVICE, dtype=torch.float16)
    x[2, n_cols - 3] = x[1, 5] = x[0, 12345] = 1.0
    assert ex.row_argmax(x).tolist() == [12345, 5, n_cols - 3]
    del x
    # A transposed view: column j of a row sits at offset 3 * j, past 2**31 for the last columns,
    # so the column offset must be int64 too.
    base = torch.zeros(n_cols, 3, device=DEVICE, dtype=torch.float16)
    base[n_cols - 2, 0] = base[7, 1] = base[n_cols - 1, 2] = 1.0
    assert ex.row_argmax(base.t()).tolist() == [n_cols - 2, 7, n_cols - 1]


def test_row_argmax_refuses_a_column_loop_that_would_wrap():
    x = torch.empty(1, 2**31 - 1000, device="meta")  # start + block_n would wrap past 2**31 - 1
    with pytest.raises(ValueError, match=r"x has 2147482648 columns, more than 2\*\*31 - block_n"):
        ex.row_argmax(x, block_n=1024)


@pytest.mark.parametrize(
    "x, kwargs, err, words",
    [
        ([[1.0]], {}, TypeError, "x must be a torch.Tensor"),
        (torch.ones(2, 3, dtype=torch.int64, device=DEVICE), {}, TypeError, "x must be float16"),
        (rand(6), {}, ValueError, r"x must be 2-D, got shape \(6,\)"),
        (rand(3, 0), {}, ValueError, "x must have at least one column"),
        (rand(3, 5), {"block_n": 8}, ValueError, "block_n must be a power of two >= 16"),
        (rand(3, 5), {"block_n": 48}, ValueError, "block_n must be a power of two"),
    ],
)
def test_row_argmax_bad_inputs(x, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.row_argmax(x, **kwargs)


# ---- promotion rules: checked by tl.static_assert while compiling ---------------------------


def test_promotion_rules_hold():
    ex.check_promotion_rules()  # a rule that does not hold fails the compile


def test_a_wrong_promotion_rule_fails_the_compile():
    @ex.triton.jit
    def wrong(i32_ptr, u32_ptr):
        offs = ex.tl.arange(0, 16)
        ex.tl.static_assert((ex.tl.load(i32_ptr + offs) + ex.tl.load(u32_ptr + offs)).dtype == ex.tl.int64)

    # compiled: CompileTimeAssertionFailure; the interpreter wraps an AssertionError in an InterpreterError
    expected = CompileTimeAssertionFailure if ON_GPU else InterpreterError
    with pytest.raises(expected, match=None if ON_GPU else "AssertionError"):
        wrong[(1,)](torch.zeros(16, device=DEVICE, dtype=torch.int32),
                    torch.zeros(16, device=DEVICE, dtype=torch.uint32))


# ---- the example as a whole -----------------------------------------------------------


def test_self_check_runs(capsys):
    ex.self_check()
    assert "bmm, polyval, row_argmax and relu match torch" in capsys.readouterr().out


def test_self_check_leaves_the_matmul_precision_as_it_was():
    before = torch.get_float32_matmul_precision()
    ex.self_check()
    assert torch.get_float32_matmul_precision() == before


@pytest.mark.parametrize("provider", [p for p in cases.BENCHMARKS[0]["providers"] if p != "torch.compile"])
def test_bench_case(provider):  # the torch.compile peer: tests/test_results_pipeline.py
    case = cases.bench_case("tile_compute_bmm_fp32", provider, 16)
    out = case["fn"]()
    torch.testing.assert_close(out, case["ref"](), rtol=case["rtol"], atol=case["atol"])
    assert case["work"] == 2.0 * (2 if not ON_GPU else 2**31 // 16**3) * 16**3


# ---- a condition on a block: tl.where, and the compiler's refusal ----------------------


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_relu_matches_torch(n, dtype):
    x = rand(n, dtype=dtype)
    torch.testing.assert_close(ex.relu(x), torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize("block_size", [2, 16, 4096])
def test_relu_block_sizes_nan_inf(block_size):
    x = rand(1000)
    x[::7] = float("nan")
    x[1::7] = float("inf")
    x[2::7] = -float("inf")
    x[3::7] = -0.0
    torch.testing.assert_close(ex.relu(x, block_size=block_size), torch.relu(x), rtol=0, atol=0, equal_nan=True)


def test_relu_empty():
    assert ex.relu(rand(0)).shape == (0,)


@pytest.mark.parametrize(
    "x, kwargs, err, words",
    [
        ([1.0], {}, TypeError, "x must be a torch.Tensor"),
        (torch.ones(4, dtype=torch.int32, device=DEVICE), {}, TypeError, "x must be float16"),
        (rand(2, 2), {}, ValueError, r"x must be 1-D, got shape \(2, 2\)"),
        (rand(8)[::2], {}, ValueError, r"x must be contiguous, got stride \(2,\)"),
        (rand(8), {"kernel": None}, ValueError, "kernel must be relu_where_kernel or relu_if_kernel"),
        (rand(8), {"block_size": 3}, ValueError, "block_size must be a power of two >= 2, got 3"),
        (rand(8), {"block_size": 1}, ValueError, "block_size must be a power of two >= 2, got 1"),
    ],
)
def test_relu_bad_inputs(x, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.relu(x, **kwargs)


@requires_gpu
def test_if_on_a_block_does_not_compile():
    with pytest.raises(triton.CompilationError):
        ex.relu(rand(100), kernel=ex.relu_if_kernel)


@pytest.mark.skipif(ON_GPU, reason="the interpreter's gap; on a GPU the compiler refuses (test above)")
def test_interpreter_takes_a_block_condition_as_true():
    # An interpreter gap the page shows: `if block:` is "true" for any block of more than one
    # element, so the kernel returns x unchanged, negative lanes included.
    x = torch.tensor([-2.0, -0.5, 0.5, 3.0], device=DEVICE)
    assert ex.relu(x, kernel=ex.relu_if_kernel).tolist() == x.tolist()
    assert ex.relu(x[:1], kernel=ex.relu_if_kernel, block_size=2).tolist() == [-2.0]  # 2 lanes, one masked: true
