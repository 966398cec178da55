import pytest
import torch
import torch_op as ex
from support import DEVICE, FLOAT_DTYPES, ON_GPU, requires_gpu, tolerances

from benchmarks.cases import torch_op as cases

INTERPRETER_FAKE = "under TRITON_INTERPRET=1, wrap_triton runs the kernel on fake tensors and fails"


@pytest.mark.parametrize("n", [1, 17, 1023, 1025, 4099])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_forward_matches_torch(n, dtype):
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    ref = ex.silu_torch(x.double()).to(dtype)
    torch.testing.assert_close(ex.silu(x), ref, **tolerances(dtype))
    torch.testing.assert_close(ex.silu_opaque(x), ref, **tolerances(dtype))
    torch.testing.assert_close(torch.ops.tit.silu(x), ref, **tolerances(dtype))


@pytest.mark.parametrize("op", [ex.silu, ex.silu_opaque], ids=["triton_op", "custom_op"])
@pytest.mark.parametrize("shape", [(1,), (1025,), (7, 33)])
def test_backward_matches_torch(op, shape):
    x = torch.randn(*shape, device=DEVICE, requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    dy = torch.randn(*shape, device=DEVICE)
    op(x).backward(dy)
    ex.silu_torch(ref).backward(dy)
    torch.testing.assert_close(x.grad, ref.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", [ex.silu, ex.silu_opaque], ids=["triton_op", "custom_op"])
def test_backward_with_a_broadcast_gradient(op):
    # .sum().backward() hands the backward an expanded gradient: stride 0, not contiguous.
    x = torch.randn(1025, device=DEVICE, requires_grad=True)
    op(x).sum().backward()
    ref = x.detach().clone().requires_grad_(True)
    ex.silu_torch(ref).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad, rtol=1e-5, atol=1e-5)


def special(n, dtype=torch.float32):
    """Random values with NaN, +-inf, the largest finite magnitudes and moderately large ones mixed in."""
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    big = torch.finfo(dtype).max
    x[::8], x[1::8], x[2::8], x[3::8], x[4::8] = float("nan"), float("inf"), float("-inf"), big, -big
    x[5::8], x[6::8] = 100.0, -100.0  # sigmoid saturates at 1 and 0
    return x


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_forward_nan_inf_like_torch(dtype):
    x = special(129, dtype)
    got = ex.silu(x)
    torch.testing.assert_close(got, ex.silu_torch(x.double()).to(dtype), equal_nan=True, **tolerances(dtype))
    assert got[::8].isnan().all() and got[2::8].isnan().all()  # silu(-inf) = -inf * 0 = NaN, in torch too
    assert got[1::8].eq(float("inf")).all()


def test_backward_nan_inf_like_torch():
    x = special(129).requires_grad_(True)
    ref = x.detach().clone().requires_grad_(True)
    dy = torch.randn(129, device=DEVICE)
    ex.silu(x).backward(dy)
    ex.silu_torch(ref).backward(dy)
    torch.testing.assert_close(x.grad, ref.grad, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_views_with_a_storage_offset():
    buf = torch.randn(5, 40, device=DEVICE)
    x = buf[1:]  # contiguous, 40 elements into its storage
    assert x.is_contiguous() and x.storage_offset() == 40
    torch.testing.assert_close(ex.silu(x), ex.silu_torch(x))
    dy = torch.randn(4, 40, device=DEVICE)
    torch.testing.assert_close(ex.silu_backward(x, dy), torch.ops.aten.silu_backward(dy, x))


@pytest.mark.parametrize("layout", ["transposed", "padded rows", "expanded"])
def test_non_contiguous_inputs_are_refused(layout):
    x = {"transposed": lambda: torch.randn(5, 4, device=DEVICE).t(),
         "padded rows": lambda: torch.randn(4, 8, device=DEVICE)[:, :5],
         "expanded": lambda: torch.randn(1, 5, device=DEVICE).expand(4, 5)}[layout]()
    with pytest.raises(ValueError, match=r"x must be contiguous, got stride \("):
        ex.silu(x)
    with pytest.raises(ValueError, match="x must be contiguous"):
        ex.silu_backward(x, torch.ones(4, 5, device=DEVICE))


@requires_gpu
@pytest.mark.skipif(ON_GPU and torch.cuda.mem_get_info()[0] < 24 * 2**30, reason="needs about 24 GB of free GPU memory")
def test_gpu_past_2_31_elements():
    # int64 offsets: the programs past 2**31 elements read and write where they should.
    n = 2**31 + 4099
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = ex.silu(x)
    for part in (slice(0, 4096), slice(2**31 - 4096, 2**31 + 4096), slice(n - 8192, n)):
        torch.testing.assert_close(y[part], ex.silu_torch(x[part]), **tolerances(torch.float16))
    dx = ex.silu_backward(x, y)
    part = slice(n - 8192, n)
    x64 = x[part].double().requires_grad_(True)
    ex.silu_torch(x64).backward(y[part].double())
    torch.testing.assert_close(dx[part], x64.grad.half(), **tolerances(torch.float16))
    del x, y, dx
    torch.cuda.empty_cache()


def test_launchers_reject_bad_inputs():
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        ex.silu_forward([1.0])
    with pytest.raises(TypeError, match="x must be float16, bfloat16 or float32"):
        ex.silu_forward(torch.ones(4, dtype=torch.int32, device=DEVICE))
    with pytest.raises(ValueError, match="x must be contiguous"):
        ex.silu_forward(torch.ones(8, device=DEVICE)[::2])
    with pytest.raises(ValueError, match="dy must be contiguous"):
        ex.silu_backward(torch.ones(4, device=DEVICE), torch.ones(1, device=DEVICE).expand(4))
    with pytest.raises(ValueError, match="dy must match x"):
        ex.silu_backward(torch.ones(4, device=DEVICE), torch.ones(5, device=DEVICE))


@pytest.mark.parametrize("op", [ex.silu, ex.silu_opaque], ids=["triton_op", "custom_op"])
def test_opcheck_schema_and_autograd(op):
    x = torch.randn(65, device=DEVICE, requires_grad=True)
    torch.library.opcheck(op, (x,), test_utils=("test_schema", "test_autograd_registration"))


def test_opcheck_all_custom_op():
    # The hand-written fake never touches the kernel, so every check runs, on CPU too.
    torch.library.opcheck(ex.silu_opaque, (torch.randn(65, device=DEVICE, requires_grad=True),))


@pytest.mark.xfail(not ON_GPU, reason=INTERPRETER_FAKE, strict=True)
def test_gpu_opcheck_all_triton_op():
    torch.library.opcheck(ex.silu, (torch.randn(65, device=DEVICE, requires_grad=True),))


@pytest.mark.xfail(not ON_GPU, reason=INTERPRETER_FAKE, strict=True)
def test_gpu_compile_fullgraph_triton_op():
    torch._dynamo.reset()
    f = torch.compile(lambda v: ex.silu(v) * 2.0, fullgraph=True, backend="aot_eager" if not ON_GPU else "inductor")
    x = torch.randn(1025, device=DEVICE, requires_grad=True)
    y = f(x)
    y.sum().backward()
    ref = x.detach().clone().requires_grad_(True)
    torch.testing.assert_close(y, ex.silu_torch(ref) * 2.0)
    (ex.silu_torch(ref) * 2.0).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad)


def test_compile_fullgraph_custom_op():
    torch._dynamo.reset()
    # aot_eager on CPU: the same tracing as inductor, without a C++ build of the rest
    f = torch.compile(lambda v: ex.silu_opaque(v) * 2.0, fullgraph=True,
                      backend="inductor" if ON_GPU else "aot_eager")
    x = torch.randn(1025, device=DEVICE, requires_grad=True)
    y = f(x)
    y.sum().backward()
    ref = x.detach().clone().requires_grad_(True)
    torch.testing.assert_close(y, ex.silu_torch(ref) * 2.0)
    (ex.silu_torch(ref) * 2.0).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad)


def test_warm_up():
    assert ex.warm_up() == 6


@requires_gpu
def test_gpu_warm_up_all_dtypes():
    assert ex.warm_up(dtypes=(torch.float32, torch.float16, torch.bfloat16)) == 18


@pytest.mark.parametrize("provider", cases.BENCHMARKS[0]["providers"])
def test_bench_case(provider):
    if provider == "torch.compile" and not ON_GPU:
        pytest.skip("torch.compile through a triton_op needs a GPU (see test_gpu_compile_fullgraph_triton_op)")
    case = cases.bench_case("silu_op_overhead", provider, 17)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
    assert cases.BENCHMARKS[0]["metric"] == "us" and case["work"] == 0.0


def test_self_check_runs(capsys):
    ex.self_check(sizes=(3,))
    assert "opcheck (schema, autograd registration) passed" in capsys.readouterr().out
