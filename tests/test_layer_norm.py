import layer_norm as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, requires_gpu, tolerances

from benchmarks.cases import layer_norm as cases

FP32 = {"rtol": 1e-4, "atol": 1e-4}  # fp32 gradients: sums over a row and over rows, in another order than torch's
INF, NAN = float("inf"), float("nan")


def inputs(shape, dtype=torch.float32, scale=3.0):
    n = shape[-1]
    x = (scale * torch.randn(*shape, device=DEVICE) + 1).to(dtype)
    w = (1 + 0.5 * torch.randn(n, device=DEVICE)).to(dtype)
    b = torch.randn(n, device=DEVICE).to(dtype)
    return x, w, b


def grads(x, w, b, dy, fn=ex.layer_norm, eps=1e-5):
    xg, wg, bg = (t.clone().requires_grad_(True) for t in (x, w, b))
    fn(xg, wg, bg, eps).backward(dy)
    return xg.grad, wg.grad, bg.grad


def ref_grads(dy, x, w, b, eps=1e-5):
    """The reference gradients in float64, cast to the inputs' dtypes: torch's fp32 autograd rounds x - mean
    differently, which a constant row (x - mean = 0, rstd = 1 / sqrt(eps)) or N = 1 magnifies."""
    return tuple(g.to(x.dtype) for g in ex.layer_norm_grads_torch(dy.double(), x.double(), w.double(),
                                                                   b.double(), eps))


def assert_grads(got, want, **tol):
    for name, g, r in zip(("dx", "dweight", "dbias"), got, want, strict=True):
        assert g.dtype == r.dtype and g.shape == r.shape, name
        torch.testing.assert_close(g, r, equal_nan=True, msg=lambda m, name=name: f"{name}: {m}", **tol)


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_forward_matches_torch(n, dtype):
    x, w, b = inputs((5, n), dtype)
    y = ex.layer_norm(x, w, b)
    assert y.dtype == dtype and y.shape == x.shape
    torch.testing.assert_close(y, ex.layer_norm_torch(x, w, b), **tolerances(dtype))


def test_no_gradient_skips_the_autograd_function(monkeypatch):
    """Without a gradient to track, layer_norm launches the forward directly (LayerNormFunction.apply is not
    called) with the same values; with any one input requiring grad it takes the Function, whose gradient is right."""
    applied = []
    apply = ex.LayerNormFunction.apply
    monkeypatch.setattr(ex.LayerNormFunction, "apply", lambda *a: applied.append(1) or apply(*a))
    x, w, b = inputs((7, 33))
    y = ex.layer_norm(x, w, b)
    assert not applied and y.grad_fn is None
    torch.testing.assert_close(y, apply(x, w, b, 1e-5), rtol=0, atol=0)
    for i in range(3):
        args = [t.clone().requires_grad_(j == i) for j, t in enumerate((x, w, b))]
        with torch.no_grad():
            assert ex.layer_norm(*args).grad_fn is None and len(applied) == i
        y = ex.layer_norm(*args)
        assert len(applied) == i + 1
        assert type(y.grad_fn).__name__ == "LayerNormFunctionBackward"
        dy = torch.randn_like(y)
        y.backward(dy)
        want = ref_grads(dy, x, w, b)[i]
        torch.testing.assert_close(args[i].grad, want, **FP32)


def test_no_gradient_checks_the_inputs_once(monkeypatch):
    """The direct path does not repeat layer_norm's input checks in the launcher (host time per call),
    and a bad input still fails there with the checks' error."""
    checks = []
    check = ex._check_inputs
    monkeypatch.setattr(ex, "_check_inputs", lambda *a: checks.append(1) or check(*a))
    x, w, b = inputs((7, 33))
    ex.layer_norm(x, w, b)
    assert len(checks) == 1
    with pytest.raises(ValueError, match="eps must be positive"):
        ex.layer_norm(x, w, b, eps=0.0)


@pytest.mark.parametrize("n", [1, 17, 127, 781, 1025])
def test_gradients_match_torch_autograd(n):
    x, w, b = inputs((6, n))
    dy = torch.randn_like(x)
    assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **FP32)


def test_fp16_gradients():
    x, w, b = inputs((9, 300), torch.float16)
    dy = torch.randn_like(x)
    got = grads(x, w, b, dy)
    assert all(g.dtype == torch.float16 for g in got)
    assert_grads(got, ref_grads(dy, x, w, b), **tolerances(torch.float16))


@pytest.mark.parametrize("shape", [(33,), (2, 3, 45), (2, 1, 3, 17)])
def test_leading_shapes(shape):
    x, w, b = inputs(shape)
    torch.testing.assert_close(ex.layer_norm(x, w, b), ex.layer_norm_torch(x, w, b), **FP32)
    dy = torch.randn_like(x)
    assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **FP32)


@pytest.mark.parametrize("eps", [1e-5, 1e-12, 0.5, 3])
def test_eps_and_constant_rows(eps):
    # a constant row has variance 0: y = b exactly, and eps alone keeps rstd finite. The reference is
    # float64: torch's fp32 layer norm on the H200 put the mean of forty 7.0s an ulp off 7, which rstd =
    # 1e6 (eps 1e-12) turned into an error of 1.0 (benchmarks/evidence/layer-norm/run16); the kernel's mean is exact.
    x, w, b = inputs((4, 40))
    x[1] = 7.0
    x[2] = 0.0
    dy = torch.randn_like(x)
    y = ex.layer_norm(x, w, b, eps)
    want = torch.nn.functional.layer_norm(x.double(), (40,), w.double(), b.double(), eps).float()
    torch.testing.assert_close(y, want, **FP32)
    assert torch.equal(y[1], b) and torch.equal(y[2], b)
    assert_grads(grads(x, w, b, dy, eps=eps), ref_grads(dy, x, w, b, eps), rtol=1e-4, atol=1e-3)


def views():
    base = torch.randn(11, 2 * 333, device=DEVICE)
    big = torch.randn(12, 53, device=DEVICE)
    cube = torch.randn(3, 8, 2 * 40, device=DEVICE)
    return {
        "row-strided": base[::2, 5:338],  # rows 1332 apart, storage offset 5
        "offset": big[3:],
        "offset-slice": big[3:, 5:40],
        "expanded": torch.randn(1, 53, device=DEVICE).expand(6, 53),  # row stride 0
        "3-D padded rows": cube[:, :, :40],  # (3, 8, 40) with strides (640, 80, 1): one row stride of 80
        "column": torch.randn(1, 9, device=DEVICE).t(),  # (9, 1), stride (1, 9): N = 1
    }


@pytest.mark.parametrize("kind", list(views()))
def test_views(kind):
    x = views()[kind]
    n = x.shape[-1]
    w, b = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    torch.testing.assert_close(ex.layer_norm(x, w, b), ex.layer_norm_torch(x, w, b), **FP32)
    dy = torch.randn(x.shape, device=DEVICE)
    assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **FP32)


def test_strided_weight_and_bias_are_made_contiguous():
    x, _, _ = inputs((5, 30))
    w, b = torch.randn(60, device=DEVICE)[::2], torch.randn(31, device=DEVICE)[1:]
    torch.testing.assert_close(ex.layer_norm(x, w, b), ex.layer_norm_torch(x, w, b), **FP32)
    dy = torch.randn_like(x)
    assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **FP32)


def test_sum_backward_gets_an_expanded_dy():
    # y.sum() hands the backward a dy of stride 0: the autograd function makes it contiguous
    x, w, b = inputs((4, 70))
    xg = x.clone().requires_grad_(True)
    ex.layer_norm(xg, w, b).sum().backward()
    want = ref_grads(torch.ones_like(x), x, w, b)[0]
    torch.testing.assert_close(xg.grad, want, **FP32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_and_inf_rows_match_torch(dtype):
    # torch: a NaN or an inf in a row makes that row of y (and of dx) NaN; dweight is then NaN in every
    # column (it sums dy * x_hat over the rows); dbias sums dy alone and stays finite.
    x, w, b = inputs((6, 45), dtype)
    x[0, 7] = NAN
    x[1, 44] = INF
    x[2, 3], x[2, 30] = INF, -INF
    x[3, :] = -INF
    big = 6e4 if dtype == torch.float16 else 1e18  # finite; x * x would overflow in fp16, not in fp32 maths
    x[4, :3] = torch.tensor([big, -big, big / 2], dtype=dtype)
    want = ex.layer_norm_torch(x, w, b)
    assert torch.isnan(want[:4]).all() and torch.isfinite(want[4:]).all()
    torch.testing.assert_close(ex.layer_norm(x, w, b), want, equal_nan=True, **tolerances(dtype))
    if dtype == torch.float32:
        dy = torch.randn_like(x)
        got = grads(x, w, b, dy)
        want_g = ex.layer_norm_grads_torch(dy, x, w, b)  # fp32: rstd of row 4 is ~1e-18
        assert torch.isnan(want_g[1]).all() and torch.isfinite(want_g[2]).all()
        assert_grads(got, want_g, **FP32)


@pytest.mark.parametrize("num_groups", [1, 3, 7, 50, 64])
def test_parallel_dw_db_reduction(num_groups):
    # 50 rows in 1 to 50 groups (64 is clipped to 50): each group's partial row, then stage 2's sum
    x, w, b = inputs((50, 97))
    dy = torch.randn_like(x)
    y, mean, rstd = ex.layer_norm_fwd(x, w, b)
    got = ex.layer_norm_bwd(dy, x, w, mean, rstd, num_groups=num_groups)
    assert_grads(got, ref_grads(dy, x, w, b), **FP32)


def test_stage_two_walks_several_tiles_of_partial_rows():
    # more groups than stage 2's BLOCK_G: its loop over partial rows runs three times, the last one ragged
    m = 2 * ex._reduce_tile(32)[0] + 5
    x, w, b = inputs((m, 20))
    dy = torch.randn_like(x)
    _, mean, rstd = ex.layer_norm_fwd(x, w, b)
    got = ex.layer_norm_bwd(dy, x, w, mean, rstd, num_groups=m)
    assert_grads(got, ref_grads(dy, x, w, b), **FP32)


def test_backward_is_deterministic():
    x, w, b = inputs((40, 130))
    dy = torch.randn_like(x)
    _, mean, rstd = ex.layer_norm_fwd(x, w, b)
    first = ex.layer_norm_bwd(dy, x, w, mean, rstd, num_groups=6)
    again = ex.layer_norm_bwd(dy, x, w, mean, rstd, num_groups=6)
    for g, h in zip(first, again, strict=True):
        assert torch.equal(g, h)  # bit for bit: a fixed order of additions, no atomics


def test_forward_saves_mean_and_rstd():
    x, w, b = inputs((7, 33))
    _, mean, rstd = ex.layer_norm_fwd(x, w, b, 1e-3)
    assert mean.dtype == rstd.dtype == torch.float32 and mean.shape == rstd.shape == (7,)
    torch.testing.assert_close(mean, x.mean(1), **FP32)
    torch.testing.assert_close(rstd, torch.rsqrt(x.var(1, unbiased=False) + 1e-3), **FP32)


def test_kernels_write_every_element_of_poisoned_outputs():
    x, w, b = inputs((6, 100))
    y, mean, rstd = (torch.full_like(t, NAN) for t in (x, x[:, 0], x[:, 0]))
    ex.layer_norm_fwd_kernel[(6,)](x, y, w, b, mean, rstd, 100, 100, 100, 1e-5, BLOCK_N=128)
    assert not y.isnan().any() and not mean.isnan().any() and not rstd.isnan().any()
    torch.testing.assert_close(y, ex.layer_norm_torch(x, w, b), **FP32)
    dy = torch.randn_like(x)
    dx, dw_part, db_part = torch.full_like(x, NAN), torch.full((4, 100), NAN), torch.full((4, 100), NAN)
    dw_part, db_part = dw_part.to(DEVICE), db_part.to(DEVICE)
    ex.layer_norm_bwd_kernel[(4,)](dy, x, w, mean, rstd, dx, dw_part, db_part, 6, 100, 100, 100, 100, BLOCK_N=128,
                                   NUM_STAGES=3)
    assert not dx.isnan().any() and not dw_part.isnan().any() and not db_part.isnan().any()
    dw, db = torch.full_like(w, NAN), torch.full_like(b, NAN)
    ex.layer_norm_dwdb_kernel[(4,)](dw_part, db_part, dw, db, 4, 100, BLOCK_G=2, BLOCK_COLS=32, NUM_STAGES=3)
    assert_grads((dx, dw, db), ref_grads(dy, x, w, b), **FP32)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0,), (2, 0, 4)])
def test_empty_tensors(shape):
    x, w, b = inputs(shape)
    xg, wg, bg = (t.clone().requires_grad_(True) for t in (x, w, b))
    y = ex.layer_norm(xg, wg, bg)
    assert y.shape == x.shape and y.dtype == x.dtype
    y.backward(torch.randn_like(y))
    assert xg.grad.shape == x.shape and wg.grad.eq(0).all() and bg.grad.eq(0).all()


def test_triton_op_forward_and_gradients():
    x, w, b = inputs((5, 77))
    dy = torch.randn_like(x)
    torch.testing.assert_close(ex.layer_norm_op(x, w, b), ex.layer_norm_torch(x, w, b), **FP32)
    assert_grads(grads(x, w, b, dy, fn=ex.layer_norm_op), ref_grads(dy, x, w, b), **FP32)


def test_triton_op_passes_opcheck():
    x, w, b = (t.requires_grad_(True) for t in inputs((4, 33)))
    torch.library.opcheck(ex.layer_norm_fwd_op, (x, w, b, 1e-5),
                          test_utils=("test_schema", "test_autograd_registration"))


def t_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


W7 = t_(7)


@pytest.mark.parametrize(
    "args, err, words",
    [
        (([[1.0]], W7, W7), TypeError, "x must be a torch.Tensor"),
        ((t_(2, 7), [1.0] * 7, W7), TypeError, "weight must be a torch.Tensor"),
        ((t_(2, 7), W7, None), TypeError, "bias must be a torch.Tensor"),
        ((t_(2, 7).to(torch.int32), W7, W7), TypeError, "x must be float16, bfloat16 or float32"),
        ((t_(2, 7, dtype=torch.float64), W7.double(), W7.double()), TypeError, "x must be float16"),
        ((t_(2, 7), W7.half(), W7), TypeError, "weight must have x's dtype"),
        ((t_(2, 7), W7, W7.half()), TypeError, "bias must have x's dtype"),
        ((t_(2, 7), t_(6), W7), ValueError, r"weight must have shape \(N,\) = \(7,\)"),
        ((t_(2, 7), W7, t_(1, 7)), ValueError, r"bias must have shape \(N,\)"),
        ((torch.tensor(1.0, device=DEVICE), t_(1), t_(1)), ValueError, "x must have at least one dimension"),
        ((t_(4, 14)[:, ::2], W7, W7), ValueError, "x must have unit stride along its last dim"),
        ((t_(7, 4).t(), W7, W7), ValueError, "x must have unit stride along its last dim"),
        ((t_(3, 8, 7)[:, :5], W7, W7), ValueError, "x's leading dimensions cannot be viewed"),
        ((t_(2, 1, 7).expand(2, 3, 7), W7, W7), ValueError, r"x's leading dimensions .* pass x.contiguous\(\)"),
        ((t_(1, ex.MAX_N + 1), t_(ex.MAX_N + 1), t_(ex.MAX_N + 1)), ValueError, "x's last dim N = 32769 is longer"),
    ],
)
def test_bad_inputs(args, err, words):
    with pytest.raises(err, match=words):
        ex.layer_norm(*args)
    with pytest.raises(err, match=words):
        ex.layer_norm_op(*args)


@pytest.mark.parametrize("eps, err", [(0.0, ValueError), (-1e-5, ValueError), (float("nan"), ValueError),
                                      (float("inf"), ValueError), ("1e-5", TypeError), (True, TypeError),
                                      (torch.tensor(1e-5), TypeError)])
def test_bad_eps(eps, err):
    x, w, b = inputs((2, 7))
    with pytest.raises(err, match="eps must be"):
        ex.layer_norm(x, w, b, eps)


def test_device_mismatch_and_cpu_without_the_interpreter(monkeypatch):
    x, w, b = inputs((2, 7))
    with pytest.raises(ValueError, match="weight must be on x's device"):
        ex.layer_norm(x, w.to("meta"), b)
    with pytest.raises(ValueError, match="bias must be on x's device"):
        ex.layer_norm(x, w, b.to("meta"))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="x is on the CPU: CPU tensors need TRITON_INTERPRET=1"):
        ex.layer_norm(x.cpu(), w.cpu(), b.cpu())


def test_backward_launcher_checks_its_inputs():
    x, w, b = inputs((5, 9))
    dy = torch.randn_like(x)
    _, mean, rstd = ex.layer_norm_fwd(x, w, b)
    with pytest.raises(ValueError, match="dy must match x"):
        ex.layer_norm_bwd(dy[:4], x, w, mean, rstd)
    with pytest.raises(ValueError, match="mean must be the forward's"):
        ex.layer_norm_bwd(dy, x, w, mean[:4], rstd)
    with pytest.raises(ValueError, match="rstd must be the forward's"):
        ex.layer_norm_bwd(dy, x, w, mean, rstd.double())
    with pytest.raises(ValueError, match="weight must be"):
        ex.layer_norm_bwd(dy, x, w[:8], mean, rstd)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="num_groups must be a positive int"):
            ex.layer_norm_bwd(dy, x, w, mean, rstd, num_groups=bad)


def test_too_many_rows_are_refused_before_anything_is_allocated(monkeypatch):
    x = torch.zeros(1, 1, device=DEVICE).expand(2**31, 1)  # 2**31 rows of one element, no memory
    w = torch.ones(1, device=DEVICE)

    def no_allocation(*args, **kwargs):
        raise AssertionError(f"torch.empty{args} called before the refusal")

    monkeypatch.setattr(torch, "empty", no_allocation)
    with pytest.raises(ValueError, match="x has 2147483648 rows"):
        ex.layer_norm_fwd(x, w, w)


def test_eager_calls_launch_directly_and_the_operator_through_wrap_triton(monkeypatch):
    """wrap_triton costs ~145 us of host time per eager launch against 15 us for a direct one
    (benchmarks/evidence/layer-norm/run18/probe_layer_norm_host.txt): the eager path must not use it."""
    calls = []

    def counting(kernel):
        calls.append(kernel.__name__ if hasattr(kernel, "__name__") else kernel.fn.__name__)
        return kernel

    monkeypatch.setattr(ex, "wrap_triton", counting)
    x, w, b = inputs((5, 33))
    dy = torch.randn_like(x)
    assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **FP32)
    assert calls == []
    assert_grads(grads(x, w, b, dy, fn=ex.layer_norm_op), ref_grads(dy, x, w, b), **FP32)
    assert calls == ["layer_norm_fwd_kernel", "layer_norm_bwd_kernel", "layer_norm_dwdb_kernel"]


def test_launch_settings():
    assert [ex._num_warps(n) for n in (1, 1024, 2048, 4096, 8192, 16384, 32768)] == [4, 4, 4, 8, 8, 16, 32]
    # stage 1's (warps, programs per SM, stages) as measured fastest on the H200; never more programs than rows
    assert [ex._bwd_settings(n) for n in (512, 1024, 2048, 4096, 8192, 16384, 32768)] == [
        (4, 8, 3), (4, 8, 3), (8, 4, 3), (8, 2, 3), (8, 1, 3), (8, 1, 1), (32, 1, 1)]
    sms = ex._sm_count(torch.device("cpu"))
    assert [ex._num_groups(10**6, n, torch.device("cpu")) for n in (512, 1024, 2048, 4096, 8192, 16384, 32768)] == [
        8 * sms, 8 * sms, 4 * sms, 2 * sms, sms, sms, sms]
    assert [ex._reduce_tile(n) for n in (1024, 2048, 4096)] == [(256, 8, 8, 1), (256, 16, 8, 1), (64, 32, 4, 3)]
    few = ex._num_groups(3, 1024, torch.device("cpu"))
    assert few == 3 and type(few) is int  # torch.sym_min of two ints is an int


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("provider", ["triton", "torch", "torch.compile"])
def test_bench_case_runs(provider, backward):
    case = cases.bench_case("layer_norm", provider, 64, elements=64 * 5, backward=backward)
    fn = (lambda: case["compile"](*case["inputs"])) if "compile" in case else case["fn"]
    out, ref = fn(), case["ref"]()
    for o, r in zip(out if backward else [out], ref if backward else [ref], strict=True):
        torch.testing.assert_close(o, r, rtol=case["rtol"], atol=case["atol"])
    es = 2
    assert case["work"] == (3 * 5 * 64 * es + 8 * 5 + 3 * 64 * es if backward else 2 * 5 * 64 * es + 2 * 64 * es)


def test_benchmarks_cover_forward_and_backward():
    specs = {s["name"]: s for s in cases.BENCHMARKS}
    assert set(specs) == {"layer_norm_fwd_fp16", "layer_norm_fwd_bf16", "layer_norm_bwd_fp16", "layer_norm_bwd_bf16"}
    for spec in specs.values():
        assert spec["x_vals"] == [1024, 2048, 4096, 8192, 16384]
        gpu_only = ["liger"] if torch.cuda.is_available() else []  # Liger's kernels fail in the interpreter
        assert spec["providers"] == ["triton", "torch", "torch.compile", *gpu_only]
    assert specs["layer_norm_bwd_bf16"]["tiny_x_vals"] == []  # bf16 is wrong in the interpreter


def test_self_check_runs(capsys):
    ex.self_check(shapes=((2, 33),))
    assert "match torch" in capsys.readouterr().out


def test_gradient_checks_and_model_run(capsys):
    # on a GPU: all four opcheck checks on both operators (test_aot_dispatch_dynamic traces the backward with
    # a symbolic row count), and the model compiled with static and with dynamic shapes against eager mode
    ex.check_gradients(rows=3, cols=9)
    ex.check_model(seq=5)
    out = capsys.readouterr().out
    assert "match float64 autograd" in out
    assert ("static and dynamic shapes, matches eager" if DEVICE.type == "cuda" else "ran eagerly") in out


# ----------------------------------------------------------------------------- GPU only


@requires_gpu
@pytest.mark.parametrize("n", [1024, 4096, 16384, 32768])
def test_bf16_and_long_rows_on_gpu(n):
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        x, w, b = inputs((64, n), dtype)
        dy = torch.randn_like(x)
        torch.testing.assert_close(ex.layer_norm(x, w, b), ex.layer_norm_torch(x, w, b), **tolerances(dtype))
        tol = FP32 if dtype == torch.float32 else tolerances(dtype)
        assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **tol)


@requires_gpu
def test_many_rows_use_the_default_groups_on_gpu():
    # the default stage-1 grid (a multiple of the SM count) on more rows than groups
    x, w, b = inputs((20000, 1536), torch.float16)
    dy = torch.randn_like(x)
    assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **tolerances(torch.float16))


@requires_gpu
def test_torch_compile_fullgraph_on_gpu():
    x, w, b = inputs((300, 2048), torch.float16)
    dy = torch.randn_like(x)
    compiled = torch.compile(ex.layer_norm_op, fullgraph=True)
    torch.testing.assert_close(compiled(x, w, b), ex.layer_norm_torch(x, w, b), **tolerances(torch.float16))
    assert_grads(grads(x, w, b, dy, fn=compiled), ref_grads(dy, x, w, b),
                 **tolerances(torch.float16))


@requires_gpu
def test_more_than_2_31_elements_on_gpu():
    # 131075 rows of 16384 fp16: row * stride passes 2^31 in the last three rows. dy is zero except in the
    # last rows, so dweight and dbias are those rows' sums and the reference needs only them. ~30 GB at peak
    # (the second backward: one group per row, two 8.6 GB fp32 partial buffers).
    n = 16384
    m = 2**31 // n + 3
    x = y = dy = dx = None
    try:
        x = torch.empty(m, n, device=DEVICE, dtype=torch.float16).normal_()
        w = (1 + 0.5 * torch.randn(n, device=DEVICE)).half()
        b = torch.randn(n, device=DEVICE).half()
        y, mean, rstd = ex.layer_norm_fwd(x, w, b)
        torch.cuda.synchronize()
        last = slice(m - 5, m)
        torch.testing.assert_close(y[last], ex.layer_norm_torch(x[last], w, b), **tolerances(torch.float16))
        torch.testing.assert_close(y[:2], ex.layer_norm_torch(x[:2], w, b), **tolerances(torch.float16))
        y = None
        torch.cuda.empty_cache()
        dy = torch.zeros_like(x)
        dy[last] = torch.randn(5, n, device=DEVICE).half()
        dx, dw, db = ex.layer_norm_bwd(dy, x, w, mean, rstd)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        x = y = dy = dx = None
        torch.cuda.empty_cache()
        pytest.skip("not enough GPU memory for four 2^31-element fp16 tensors")
    try:
        want = ref_grads(dy[last], x[last], w, b)
        assert_grads((dx[last], dw, db), want, **tolerances(torch.float16))
        assert dx[: m - 5].count_nonzero() == 0  # dy = 0 gives dx = 0
        # one group per row: the (m, n) fp32 partial buffers pass 2**31 elements from group 131072 on
        dx = None
        torch.cuda.empty_cache()
        try:
            _, dw_m, db_m = ex.layer_norm_bwd(dy, x, w, mean, rstd, num_groups=m)
            torch.cuda.synchronize()
        except torch.OutOfMemoryError:
            pytest.skip("not enough GPU memory for two 2^31-element fp32 partial buffers")
        for name, got, expected in (("dweight", dw_m, want[1]), ("dbias", db_m, want[2])):
            torch.testing.assert_close(got, expected, **tolerances(torch.float16),
                                       msg=lambda msg, n=name: f"{n}: {msg}")
    finally:
        del x, dy, dx
        torch.cuda.empty_cache()


def test_liger_case_calls_its_forward_and_backward(monkeypatch):
    """The liger provider (GPU only: Liger's kernels fail in the interpreter) with a stand-in module of
    Liger 0.8.5's signatures: forward -> (Y, X, Mean, RSTD, BLOCK_SIZE, num_warps), backward from those."""
    import sys
    import types

    calls = []

    def forward(x, w, b, eps):
        calls.append("fwd")
        y, mean, rstd = torch.ops.aten.native_layer_norm(x, [x.shape[-1]], w, b, eps)
        return y, x, mean.view(-1), rstd.view(-1), 1024, 4

    def backward(dy, x, w, b, mean, rstd):
        calls.append("bwd")
        return torch.ops.aten.native_layer_norm_backward(dy, x, x.shape[-1:], mean.view(-1, 1), rstd.view(-1, 1),
                                                         w, b, [True, True, True])

    mod = types.ModuleType("liger_kernel.ops.layer_norm")
    mod.layer_norm_forward, mod.layer_norm_backward = forward, backward
    pkg, ops = types.ModuleType("liger_kernel"), types.ModuleType("liger_kernel.ops")
    ops.layer_norm, pkg.ops = mod, ops
    monkeypatch.setitem(sys.modules, "liger_kernel", pkg)
    monkeypatch.setitem(sys.modules, "liger_kernel.ops", ops)
    monkeypatch.setitem(sys.modules, "liger_kernel.ops.layer_norm", mod)
    for backward_ in (False, True):
        case = cases.bench_case("layer_norm", "liger", 64, elements=64 * 5, backward=backward_)
        out, ref = case["fn"](), case["ref"]()
        for o, r in zip(out if backward_ else [out], ref if backward_ else [ref], strict=True):
            torch.testing.assert_close(o.float(), r.float(), rtol=case["rtol"], atol=case["atol"])
    assert calls == ["fwd", "fwd", "bwd"]


@pytest.mark.parametrize("fwd", [("rows", 4, 4), ("row", 16, 8)])
@pytest.mark.parametrize("long", [False, True])
def test_table_variants_match_torch(monkeypatch, fwd, long):
    """Every kernel the launchers can pick from FWD_TABLE / BWD_TABLE, on rows shorter than, equal to and
    longer than the tile or chunk, against float64 autograd."""
    for bn in (32, 64, 128):
        monkeypatch.setitem(ex.FWD_TABLE, bn, fwd)
        if long:
            monkeypatch.setitem(ex.BWD_TABLE, bn, ("long", 4, 2, 1))
    for m, n in ((7, 17), (9, 64), (5, 100)):
        x, w, b = inputs((m, n))
        torch.testing.assert_close(ex.layer_norm(x, w, b), ex.layer_norm_torch(x, w, b), **FP32)
        dy = torch.randn_like(x)
        assert_grads(grads(x, w, b, dy), ref_grads(dy, x, w, b), **FP32)


@requires_gpu
def test_unaligned_views_dtypes_and_row_counts_on_gpu():
    """An unaligned view, another dtype and a row count whose % 16 differs: each compiles its own
    specialization of the kernels, and each gets the right answer."""
    base = torch.randn(48, 65, device=DEVICE)
    for x in (base[:32, :64], base[:32, 1:], base[:33, :64], base[:32, :64].to(torch.bfloat16),
              base[:32, :64].half(), base[:32, 1:].half()):
        xc = x.contiguous() if x.stride(0) != x.shape[1] and x.dtype != torch.float32 else x
        w, b = torch.randn(64, device=DEVICE).to(x.dtype), torch.randn(64, device=DEVICE).to(x.dtype)
        torch.testing.assert_close(ex.layer_norm(xc, w, b), ex.layer_norm_torch(xc, w, b), **tolerances(x.dtype))
        dy = torch.randn_like(xc)
        want = ex.layer_norm_grads_torch(dy, xc, w, b)
        got = ex.layer_norm_bwd(dy, xc, w, *ex.layer_norm_fwd(xc, w, b)[1:])
        for g, r in zip(got, want, strict=True):
            torch.testing.assert_close(g.float(), r.float(), rtol=2e-2, atol=2e-2 * max(1.0, r.abs().max().item()))
