import pytest
import strides as ex
import torch

from conftest import DEVICE, FLOAT_DTYPES, tolerances


def x_(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def views(dtype=torch.float32):
    """Non-contiguous 2-D views of every kind the launchers accept, on odd sizes."""
    base = x_(3, 37, 41, dtype=dtype)
    return {
        "contiguous": base[1],
        "t": base[1].t(),
        "step slice": base[1, ::2, ::3],
        "t of an offset slice": base[1, 1:, 5:].t(),
        "narrow": base[2].narrow(1, 3, 20),
        "select middle": base.select(1, 7),  # (3, 41), strides (37 * 41, 1)
        "select last": base.select(2, 40),  # (3, 37), strides (37 * 41, 41)
        "expand (stride 0)": x_(1, 17, dtype=dtype).expand(9, 17),
        "single row": base[0, 4:5],
        "single column": base[0, :, 6:7],
    }


VIEW_NAMES = list(views())


def test_views_are_what_they_claim():
    v = views()
    assert v["contiguous"].is_contiguous()
    assert all(not t.is_contiguous() for k, t in v.items() if k not in ("contiguous", "single row"))


# ---- copy and transpose ------------------------------------------------------------


@pytest.mark.parametrize("name", VIEW_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_copy_2d_any_view(name, dtype):
    x = views(dtype)[name]
    y = ex.copy_2d(x)
    assert y.is_contiguous() and y.shape == x.shape
    torch.testing.assert_close(y, ex.copy_2d_torch(x), rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(1, 1), (1, 17), (127, 3), (33, 1025)])
def test_transpose(shape):
    x = x_(*shape)
    y = ex.transpose(x)
    assert y.is_contiguous() and y.shape == shape[::-1]
    torch.testing.assert_close(y, x.t().contiguous(), rtol=0, atol=0)


@pytest.mark.parametrize("block_m, block_n", [(2, 4), (16, 64), (128, 8)])
def test_copy_2d_block_shapes(block_m, block_n):
    x = x_(45, 70)[::3]
    torch.testing.assert_close(ex.copy_2d(x, block_m=block_m, block_n=block_n), x.contiguous(), rtol=0, atol=0)


def test_copy_2d_writes_every_element():
    x = x_(37, 41).t()
    y = torch.full((41, 37), float("nan"), device=DEVICE)
    ex.copy_2d_kernel[(3, 3)](x, y, 41, 37, *x.stride(), *y.stride(), BLOCK_M=16, BLOCK_N=16)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, x.contiguous(), rtol=0, atol=0)


def test_ignoring_strides_is_wrong():
    # The same kernel given the contiguous strides (N, 1) of a transposed view reads
    # the untransposed memory: this is why launchers pass x.stride(i).
    x = x_(5, 7)
    v = x.t()  # shape (7, 5), strides (1, 7)
    y = torch.empty(7, 5, device=DEVICE)
    ex.copy_2d_kernel[(1, 1)](v, y, 7, 5, 5, 1, 5, 1, BLOCK_M=8, BLOCK_N=8)
    torch.testing.assert_close(y, x.reshape(7, 5), rtol=0, atol=0)  # the raw memory, not v
    assert not torch.equal(y, v)


# ---- broadcasting ------------------------------------------------------------------

COMPATIBLE = [
    ((4, 8), (4, 8)),
    ((4, 1), (1, 8)),  # rule 2 on both sides: an outer sum
    ((4, 8), (1, 8)),
    ((4, 8), (4, 1)),
    ((1, 1), (2, 4)),
    ((4, 8), (8,)),  # rule 1: (8,) is read as (1, 8)
    ((4, 1), (8,)),
    ((2, 4), (1,)),
]
INCOMPATIBLE = [
    ((4, 8), (8, 4)),
    ((2, 8), (4, 8)),
    ((4, 8), (4,)),  # rule 1 pads on the left: (4,) is (1, 4), not (4, 1)
    ((4, 2), (1, 4)),
]


@pytest.mark.parametrize("a, b", COMPATIBLE)
def test_broadcast_rules_match_torch(a, b):
    assert ex.broadcast_shape(a, b) == tuple(torch.broadcast_shapes(a, b))
    assert ex.broadcast_shape(b, a) == tuple(torch.broadcast_shapes(a, b))


@pytest.mark.parametrize("a, b", COMPATIBLE)
def test_broadcast_kernel_compatible(a, b):
    ta, tb = x_(*a), x_(*b)
    torch.testing.assert_close(ex.broadcast_add(ta, tb), ta + tb, rtol=0, atol=0)


@pytest.mark.parametrize("a, b", INCOMPATIBLE)
def test_broadcast_rules_incompatible(a, b):
    with pytest.raises(ValueError, match="do not broadcast"):
        ex.broadcast_shape(a, b)
    with pytest.raises(RuntimeError):
        torch.broadcast_shapes(a, b)
    with pytest.raises(ValueError, match="do not broadcast"):
        ex.broadcast_add(x_(*a), x_(*b))


@pytest.mark.parametrize("a, b", INCOMPATIBLE)
def test_broadcast_kernel_refuses_incompatible(a, b):
    # Skip the host-side check: Triton itself refuses the shapes while it builds the
    # kernel (CompilationError on a GPU, InterpreterError in the interpreter).
    ta, tb = x_(*a), x_(*b)
    b0, b1 = (1, b[0]) if len(b) == 1 else b
    out = torch.empty(8, 8, device=DEVICE)
    with pytest.raises(ex.triton.TritonError, match="incompatible dimensions"):
        ex.broadcast_add_kernel[(1,)](ta, tb, out, *a, b0, b1, 8, 8, B_1D=len(b) == 1)


# ---- reductions and axis -----------------------------------------------------------


@pytest.mark.parametrize("name", VIEW_NAMES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_row_and_col_sums_any_view(name, dtype):
    x = views(dtype)[name]
    tol = tolerances(dtype)
    torch.testing.assert_close(ex.row_sum(x), ex.row_sum_torch(x), **tol)
    torch.testing.assert_close(ex.col_sum(x), ex.col_sum_torch(x), **tol)


@pytest.mark.parametrize("M, N", [(1, 1), (17, 1025), (1023, 17), (781, 3)])
def test_sums_odd_shapes(M, N):
    x = x_(M, N)
    for got, dim in ((ex.row_sum(x), 1), (ex.col_sum(x), 0)):
        # Against a float64 sum, with the usual error scale of an fp32 sum of n terms:
        # sqrt(n) * eps * sqrt(sum x^2), times a safety factor. The order of the additions
        # is Triton's choice (it changed between 3.6 and 3.9); one missing or doubled term
        # (about |x_i| ~ 1) is still far outside this bound.
        ref = x.double().sum(dim=dim)
        n = x.shape[dim]
        scale = x.double().pow(2).sum(dim=dim).sqrt()
        bound = 8 * n**0.5 * torch.finfo(torch.float32).eps * scale + 1e-6
        assert ((got.double() - ref).abs() <= bound).all(), (got.double() - ref).abs().max()


def test_col_sum_is_row_sum_of_the_transpose():
    x = x_(45, 131)
    torch.testing.assert_close(ex.col_sum(x), ex.row_sum(x.t()), **tolerances(torch.float32))


def test_fp16_sum_accumulates_in_fp32():
    # One 2048 and 2048 ones: an fp16 running sum stalls at 2048 (its spacing there is 2).
    x = torch.ones(1, 2049, device=DEVICE, dtype=torch.float16)
    x[0, 0] = 2048
    assert ex.row_sum(x).item() == 4096  # exact in fp16
    assert ex.col_sum(x.t()).item() == 4096


# ---- bad inputs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([[1.0]], TypeError, "x must be a torch.Tensor"),
        (torch.ones(2, 3, dtype=torch.int64, device=DEVICE), TypeError, "x must be float16"),
        (x_(2, 3, 4), ValueError, "x must be 2-D"),
        (torch.empty(2**16, 2**16, device="meta"), ValueError, "int32 offsets stop at 2\\*\\*31 - 1"),
    ],
)
@pytest.mark.parametrize("fn", ["copy_2d", "transpose", "row_sum", "col_sum"])
def test_bad_inputs(fn, x, err, words):
    with pytest.raises(err, match=words):
        getattr(ex, fn)(x)


@pytest.mark.parametrize("kw", [{"block_m": 0}, {"block_n": 12}, {"block_m": 2.0}])
@pytest.mark.parametrize("fn", ["copy_2d", "transpose", "row_sum", "col_sum"])
def test_bad_blocks(fn, kw):
    name = next(iter(kw))
    with pytest.raises(ValueError, match=f"{name} must be a positive power of two"):
        getattr(ex, fn)(x_(3, 4), **kw)


@pytest.mark.parametrize(
    "a, b, err, words",
    [
        ([1.0], x_(4), TypeError, "a must be a torch.Tensor"),
        (x_(4, 3), x_(3), ValueError, "a must be contiguous with power-of-two sizes"),
        (x_(4, 4).t(), x_(4), ValueError, "a must be contiguous"),
        (x_(4), x_(4), ValueError, "a must be 2-D"),
        (x_(4, 4), x_(0), ValueError, "b must be contiguous with power-of-two sizes"),
    ],
)
def test_broadcast_add_bad_inputs(a, b, err, words):
    with pytest.raises(err, match=words):
        ex.broadcast_add(a, b)


# ---- the example as a whole --------------------------------------------------------


@pytest.mark.parametrize("provider", ["triton", "torch"])
def test_bench_case(provider):
    spec = ex.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = ex.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check()
    assert "copy_2d, row_sum and col_sum match torch" in capsys.readouterr().out
