import math

import dropout as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, ON_GPU, requires_gpu

from benchmarks.cases import dropout as cases

SEED = 1234
ALL_DTYPES = [*FLOAT_DTYPES, torch.float64]  # float64: for gradcheck


def data(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE).to(dtype)


def within_binomial(kept: int, n: int, p: float, sigmas: float = 6.0) -> bool:
    sd = math.sqrt(n * p * (1 - p))
    return abs(kept - n * (1 - p)) <= sigmas * sd + 1


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_matches_reference_given_the_mask(n, dtype):
    x = data(n, dtype=dtype)
    want = ex.dropout_reference(x, ex.dropout_mask(n, 0.3, SEED), 0.3)
    got = ex.dropout(x, 0.3, SEED)
    assert got.dtype == dtype and got.shape == x.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0)  # exact: same mask, same fp32 arithmetic


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_kept_values_are_x_times_the_fp32_scale(dtype):
    x = data(3001, dtype=dtype)
    p = 0.37
    y = ex.dropout(x, p, SEED)
    keep = ex.dropout_mask(3001, p, SEED)
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    scale = torch.tensor(1 / (1 - p), dtype=torch.float32).to(compute)  # the kernel's scale, rounded to fp32
    torch.testing.assert_close(y[keep], (x[keep].to(compute) * scale).to(dtype), rtol=0, atol=0)
    assert (y[~keep] == 0).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_p_zero_is_identity_and_p_one_is_zeros(dtype):
    x = data(1025, dtype=dtype)
    x[5] = float("nan")
    x[6] = float("inf")
    torch.testing.assert_close(ex.dropout(x, 0.0, SEED), x, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(ex.dropout(x, 0, SEED), x, rtol=0, atol=0, equal_nan=True)  # an int p is fine
    assert torch.equal(ex.dropout(x, 1.0, SEED), torch.zeros_like(x))  # NaN and inf dropped too
    assert ex.dropout_mask(1025, 0.0, SEED).all() and not ex.dropout_mask(1025, 1.0, SEED).any()


def test_nan_and_inf_propagate_where_kept_and_vanish_where_dropped():
    x = torch.full((2048,), float("nan"), device=DEVICE)
    x[1::3] = float("inf")
    x[2::3] = float("-inf")
    y = ex.dropout(x, 0.5, SEED)
    keep = ex.dropout_mask(2048, 0.5, SEED)
    assert torch.isnan(y[0::3][keep[0::3]]).all()
    assert (y[1::3][keep[1::3]] == float("inf")).all() and (y[2::3][keep[2::3]] == float("-inf")).all()
    assert (y[~keep] == 0).all()


def test_fp16_overflow_after_scaling_matches_the_reference():
    x = torch.full((300,), 60000.0, dtype=torch.float16, device=DEVICE)  # 60000 / 0.5 > fp16 max: inf
    y = ex.dropout(x, 0.5, SEED)
    torch.testing.assert_close(y, ex.dropout_reference(x, ex.dropout_mask(300, 0.5, SEED), 0.5), rtol=0, atol=0)
    assert torch.isinf(y[ex.dropout_mask(300, 0.5, SEED)]).all()


def test_empty_tensor():
    x = data(0)
    assert ex.dropout(x, 0.5, SEED).shape == (0,)
    assert ex.dropout_mask((0, 3), 0.5, SEED).shape == (0, 3)


def test_kernel_writes_every_element_of_a_poisoned_output():
    x = data(2049)
    y = torch.full_like(x, float("nan"))
    ex.dropout_kernel[(3,)](x, y, 2049, 0.5, 2.0, SEED, BLOCK_SIZE=1024)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, ex.dropout_reference(x, ex.dropout_mask(2049, 0.5, SEED), 0.5), rtol=0, atol=0)


# --------------------------------------------------------------------------- the random stream


def test_same_seed_same_mask_and_output():
    x = data(4099)
    assert torch.equal(ex.dropout(x, 0.5, SEED), ex.dropout(x, 0.5, SEED))
    assert torch.equal(ex.dropout_mask(4099, 0.5, SEED), ex.dropout_mask(4099, 0.5, SEED))


def test_mask_depends_on_the_element_index_only():
    # the same number of elements in another shape: the same mask in row-major order
    flat = data(35 * 29)
    y_flat = ex.dropout(flat, 0.4, SEED)
    y_2d = ex.dropout(flat.view(35, 29), 0.4, SEED)
    y_3d = ex.dropout(flat.view(5, 7, 29), 0.4, SEED)
    assert y_2d.shape == (35, 29) and y_3d.shape == (5, 7, 29)
    assert torch.equal(y_2d.reshape(-1), y_flat) and torch.equal(y_3d.reshape(-1), y_flat)
    assert torch.equal(ex.dropout_mask((35, 29), 0.4, SEED).reshape(-1), ex.dropout_mask(35 * 29, 0.4, SEED))


def test_mask_is_a_prefix_of_a_longer_mask():
    # element i's mask does not depend on the tensor's length; `start` picks a window of it
    long = ex.dropout_mask(3000, 0.5, SEED)
    assert torch.equal(ex.dropout_mask(1000, 0.5, SEED), long[:1000])
    assert torch.equal(ex.dropout_mask(1000, 0.5, SEED, start=1500), long[1500:2500])


@pytest.mark.parametrize("other", [SEED + 1, SEED + 2**32, 0, 2**31 + 5, ex.MAX_SEED])
def test_different_seeds_give_different_masks(other):
    # the high 32 bits of the seed matter too (SEED + 2**32): Philox keys on all 64 bits
    a = ex.dropout_mask(4096, 0.5, SEED)
    b = ex.dropout_mask(4096, 0.5, other)
    agree = (a == b).float().mean().item()
    assert 0.45 < agree < 0.55, agree  # independent masks agree on about half the elements at p = 0.5


@pytest.mark.parametrize("start", [2**31, 2**32, 2**32 + 4096, 2**40])
def test_masks_past_2_32_elements_do_not_repeat_the_head(start):
    # tl.rand splits an int64 offset into two 32-bit counter words: element 2**32 + i is not element i
    head = ex.dropout_mask(4096, 0.5, SEED)
    far = ex.dropout_mask(4096, 0.5, SEED, start=start)
    agree = (head == far).float().mean().item()
    assert 0.45 < agree < 0.55, agree


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 0.01])
def test_keep_rate_within_six_sigma(p):
    n = 2**13
    kept = int(ex.dropout_mask(n, p, SEED + int(100 * p)).sum())
    assert within_binomial(kept, n, p), (kept, n * (1 - p))


def test_mask_has_no_short_period():
    # neighbouring blocks of a good stream are independent: compare block 0 with blocks 1..3
    m = ex.dropout_mask(4096, 0.5, SEED).view(4, 1024)
    for i in range(1, 4):
        assert 0.4 < (m[0] == m[i]).float().mean().item() < 0.6


# --------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("view", ["transposed", "strided", "expanded", "offset"])
def test_views_give_the_mask_of_their_contiguous_copy(view):
    base = data(40, 66)
    x = {"transposed": base.t(), "strided": base[:, ::2], "expanded": base[:1].expand(7, 66),
         "offset": base.view(-1)[3:1003].view(20, 50)}[view]
    y = ex.dropout(x, 0.3, SEED)
    assert y.shape == x.shape and y.is_contiguous()
    assert torch.equal(y, ex.dropout(x.contiguous(), 0.3, SEED))
    assert torch.equal(x, x.clone())  # the input is not written


# --------------------------------------------------------------------------- autograd


@pytest.mark.parametrize("fn", [ex.dropout, ex.dropout_op], ids=["function", "triton_op"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_backward_regenerates_the_mask(fn, dtype):
    x = data(1030, dtype=dtype).requires_grad_(True)
    dy = data(1030, dtype=dtype)
    y = fn(x, 0.25, SEED)
    y.backward(dy)
    keep = ex.dropout_mask(1030, 0.25, SEED)
    torch.testing.assert_close(x.grad, ex.dropout_reference(dy, keep, 0.25), rtol=0, atol=0)
    assert torch.equal(keep, y.detach() != 0) or bool((x.detach()[keep] == 0).any())


@pytest.mark.parametrize("fn", [ex.dropout, ex.dropout_op], ids=["function", "triton_op"])
def test_backward_with_a_broadcast_and_a_transposed_gradient(fn):
    x = data(33, 17).requires_grad_(True)
    fn(x, 0.5, SEED).sum().backward()  # dy: one value expanded (stride 0)
    keep = ex.dropout_mask((33, 17), 0.5, SEED)
    torch.testing.assert_close(x.grad, ex.dropout_reference(torch.ones(33, 17, device=DEVICE), keep, 0.5))
    x.grad = None
    dy = data(17, 33).t()
    fn(x, 0.5, SEED).backward(dy)
    torch.testing.assert_close(x.grad, ex.dropout_reference(dy.contiguous(), keep, 0.5), rtol=0, atol=0)


def test_backward_through_a_view_input():
    base = data(20, 30).requires_grad_(True)
    ex.dropout(base.t(), 0.5, SEED).sum().backward()
    keep_t = ex.dropout_mask((30, 20), 0.5, SEED)  # the mask of the transposed view, row-major
    torch.testing.assert_close(base.grad, ex.dropout_reference(torch.ones(30, 20, device=DEVICE), keep_t, 0.5).t())


def test_gradcheck_on_a_2d_view_in_float64():
    # (check_gradients, below, runs gradcheck on both entry points and gradgradcheck on a vector)
    x = torch.randn(3, 2, dtype=torch.float64, device=DEVICE).t().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: ex.dropout(t, 0.4, SEED), (x,))


def test_self_check_and_gradient_check_run():
    ex.self_check(sizes=(17,))
    ex.check_gradients(n=2)


def test_model_runs_eagerly_and_is_deterministic():
    torch.manual_seed(0)
    model = ex.MLP(d=8, hidden=32).to(DEVICE)
    x = data(3, 8)
    a, b = model(x, 5), model(x, 5)
    assert torch.equal(a, b) and not torch.equal(a, model(x, 6))
    model.eval()
    torch.testing.assert_close(model(x, 5), model.down(torch.relu(model.up(x))))  # eval: no dropout


# --------------------------------------------------------------------------- the operator


def test_opcheck_schema_and_autograd_registration():
    torch.library.opcheck(ex.dropout_op, (data(33).requires_grad_(), 0.5, SEED),
                          test_utils=("test_schema", "test_autograd_registration"))
    x = data(9)
    assert torch.equal(torch.ops.tit.dropout(x, 0.5, SEED), ex.dropout(x, 0.5, SEED))


FAKE_XFAIL = pytest.mark.xfail(not ON_GPU, strict=True, reason="in the interpreter wrap_triton cannot trace: "
                                                                 "fake-tensor checks and torch.compile need a GPU")


@FAKE_XFAIL
def test_opcheck_fake_tensor_on_cpu_fails_and_passes_on_gpu():
    torch.library.opcheck(ex.dropout_op, (data(33).requires_grad_(), 0.5, SEED),
                          test_utils=("test_faketensor", "test_aot_dispatch_dynamic"))


@FAKE_XFAIL
def test_compile_fullgraph_on_cpu_fails_and_passes_on_gpu():
    torch.compiler.reset()
    x = data(1025).requires_grad_(True)
    out = torch.compile(lambda t: ex.dropout_op(t, 0.5, SEED) * 2.0, fullgraph=True)(x)
    out.sum().backward()
    keep = ex.dropout_mask(1025, 0.5, SEED)
    torch.testing.assert_close(out, 2.0 * ex.dropout_reference(x.detach(), keep, 0.5))
    torch.testing.assert_close(x.grad, 2.0 * ex.dropout_reference(torch.ones_like(x), keep, 0.5))


@requires_gpu
def test_gpu_model_compiled_matches_eager():
    torch.compiler.reset()
    ex.check_model()


@requires_gpu
def test_gpu_compiled_model_with_changing_seeds():
    # a new int seed on each call: dynamo recompiles or makes it symbolic; the masks must still follow the seed
    torch.compiler.reset()
    torch.manual_seed(0)
    model = ex.MLP(d=16, hidden=64).to(DEVICE)
    compiled = torch.compile(model)
    x = data(4, 16)
    for seed in (1, 2, 3, 2**40):
        torch.testing.assert_close(compiled(x, seed), model(x, seed))


@requires_gpu
def test_gpu_bf16_matches_reference():
    x = data(4099, dtype=torch.bfloat16)
    want = ex.dropout_reference(x, ex.dropout_mask(4099, 0.2, SEED), 0.2)
    torch.testing.assert_close(ex.dropout(x, 0.2, SEED), want, rtol=0, atol=0)


@requires_gpu
def test_gpu_past_2_31_elements():
    n = 2**31 + 1025  # 4 GiB of fp16 in, 4 GiB out
    x = torch.ones(n, dtype=torch.float16, device=DEVICE)
    y = ex.dropout(x, 0.5, SEED)
    del x
    scale = torch.tensor(2.0, dtype=torch.float16, device=DEVICE)
    tail = y[-4096:]
    assert ((tail == 0) | (tail == scale)).all()
    keep_tail = ex.dropout_mask(4096, 0.5, SEED, start=n - 4096)
    assert torch.equal(tail != 0, keep_tail)  # the exact Philox draws of elements past 2**31
    keep_head = ex.dropout_mask(4096, 0.5, SEED)
    assert torch.equal(y[:4096] != 0, keep_head)
    assert 0.45 < (keep_tail == keep_head).float().mean().item() < 0.55  # not a wrapped copy of the head
    at_2_31 = ex.dropout_mask(1024, 0.5, SEED, start=2**31)
    assert torch.equal(y[2**31:2**31 + 1024] != 0, at_2_31)
    assert within_binomial(int((y[2**31:] != 0).sum()), 1025, 0.5)


# --------------------------------------------------------------------------- bad inputs


# (argument, inputs, what dropout() raises, what the operator does): the operator's schema
# (Tensor x, float p, SymInt seed) converts or refuses arguments before our checks run:
# "schema" = the dispatcher's RuntimeError, which names the argument; "accepts" = converted
# (True -> 1.0 or 1, a 0-dim tensor -> its value) and run.
BAD = [
    ("x", lambda: ([1.0, 2.0], 0.5, SEED), TypeError, "schema"),
    ("x", lambda: (torch.arange(5, device=DEVICE), 0.5, SEED), TypeError, TypeError),
    ("x", lambda: (torch.ones(5, dtype=torch.complex64, device=DEVICE), 0.5, SEED), TypeError, TypeError),
    ("p", lambda: (data(5), "0.5", SEED), TypeError, "schema"),
    ("p", lambda: (data(5), True, SEED), TypeError, "accepts"),
    ("p", lambda: (data(5), torch.tensor(0.5), SEED), TypeError, "accepts"),
    ("p", lambda: (data(5), -0.1, SEED), ValueError, ValueError),
    ("p", lambda: (data(5), 1.5, SEED), ValueError, ValueError),
    ("p", lambda: (data(5), float("nan"), SEED), ValueError, ValueError),
    ("seed", lambda: (data(5), 0.5, 1.0), TypeError, "schema"),
    ("seed", lambda: (data(5), 0.5, True), TypeError, "accepts"),
    ("seed", lambda: (data(5), 0.5, None), TypeError, "schema"),
    ("seed", lambda: (data(5), 0.5, -1), ValueError, ValueError),
    ("seed", lambda: (data(5), 0.5, 2**63), ValueError, "schema"),
]


@pytest.mark.parametrize("i", range(len(BAD)), ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_inputs_name_the_argument(i):
    name, args, err, op_err = BAD[i]
    with pytest.raises(err, match=rf"^{name}\b"):
        ex.dropout(*args())
    if op_err == "accepts":
        assert ex.dropout_op(*args()).shape == (5,)
    elif op_err == "schema":
        with pytest.raises(RuntimeError, match=rf"for argument '{name}'"):
            ex.dropout_op(*args())
    else:
        with pytest.raises(op_err, match=rf"^{name}\b"):
            ex.dropout_op(*args())


@pytest.mark.parametrize("kwargs, name, err", [
    ({"p": 2.0}, "p", ValueError), ({"seed": -5}, "seed", ValueError), ({"seed": 0.5}, "seed", TypeError),
    ({"start": -1}, "start", ValueError), ({"start": 1.0}, "start", TypeError),
    ({"start": 2**63}, "start", ValueError), ({"start": 2**63 - 9}, "start", ValueError)])
def test_mask_bad_inputs_name_the_argument(kwargs, name, err):
    args = {"p": 0.5, "seed": SEED, **kwargs}
    with pytest.raises(err, match=rf"^{name}\b"):
        ex.dropout_mask(10, **args)


def test_cpu_tensor_without_the_interpreter_is_refused(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="^x is on the CPU"):
        ex.dropout(torch.ones(4), 0.5, SEED)
    with pytest.raises(ValueError, match="^device is the CPU"):
        ex.dropout_mask(4, 0.5, SEED, device="cpu")


def test_backward_gradient_of_a_bad_dtype_names_dy():
    with pytest.raises(TypeError, match="^dy"):
        ex._dropout(torch.ones(3, dtype=torch.int32, device=DEVICE), 0.5, SEED, name="dy")


# --------------------------------------------------------------------------- the benchmark check


@pytest.mark.parametrize("provider", ["triton", "torch", "torch.compile"])
def test_bench_check_refuses_a_wrong_peer(provider, monkeypatch):
    from scripts import bench

    case = cases.bench_case("dropout_fp16", provider, 4097, device=DEVICE)
    fn = case["fn"] if provider != "torch.compile" else (lambda: case["compile"](*case["inputs"]))
    bench.check_output(fn(), case["ref"](), case["rtol"], case["atol"])  # a right answer passes
    if provider == "triton":
        wrong = fn().clone()
        wrong[(wrong != 0).nonzero()[0]] = 0  # one kept element dropped
        with pytest.raises(AssertionError):
            bench.check_output(wrong, case["ref"](), case["rtol"], case["atol"])
    else:
        t = torch.randn(4097, device=DEVICE, dtype=torch.float16)
        with pytest.raises(AssertionError, match="keep rate"):
            cases._peer_reference(t, torch.nn.functional.dropout(t, p=0.5, training=True), cases.BENCH_P)
        y = torch.nn.functional.dropout(t, p=cases.BENCH_P, training=True) * 1.1  # wrong scale
        with pytest.raises(AssertionError):
            bench.check_output(y, cases._peer_reference(t, y, cases.BENCH_P), case["rtol"], case["atol"])


# --------------------------------------------------------------------------- reproducible across backends

# Recorded once under the interpreter (Triton 3.6.0). Philox is integer arithmetic and the conversion
# to a float in [0, 1) rounds the same way everywhere, so a GPU must give the same bits.
GOLDEN = {
    (128, 1234, 0): "01010001100100101111001101011110100111101010101011011100110110001100110000101100101100110101010"
                    "110000010100100001001001101110110",
    (64, 2**63 - 1, 2**32 + 5): "1001011001000110110111000011010111101010011111101001101011010111",
}


@pytest.mark.parametrize("n, seed, start", list(GOLDEN))
def test_mask_bits_match_the_recorded_ones(n, seed, start):
    bits = "".join("1" if b else "0" for b in ex.dropout_mask(n, 0.5, seed, start=start).tolist())
    assert bits == GOLDEN[(n, seed, start)]


def test_output_matches_the_recorded_one():
    x = torch.linspace(-2, 2, 16, dtype=torch.float16).to(DEVICE)  # built on the CPU: the same values
    want = [-2.857421875, -2.4765625, -2.095703125, -1.71484375, -1.333984375, -0.95263671875, -0.57177734375,
            -0.191162109375, 0.0, 0.57177734375, 0.95263671875, 1.333984375, 1.71484375, 2.095703125, 2.4765625, 0.0]
    assert ex.dropout(x, 0.3, 99).tolist() == want


def test_mask_reaches_the_last_int64_index():
    # 10 elements from 2**63 - 10: the last index is 2**63 - 1, the largest an int64 counter holds
    last = ex.dropout_mask(10, 0.5, SEED, start=2**63 - 10)
    assert torch.equal(last[9:], ex.dropout_mask(1, 0.5, SEED, start=2**63 - 1))
    assert torch.equal(last[:4], ex.dropout_mask(4, 0.5, SEED, start=2**63 - 10))


def test_eager_calls_launch_directly_and_the_operator_through_wrap_triton(monkeypatch):
    """wrap_triton costs ~10x a direct launch on the host (docs/kernels/layer-norm.md): eager dropout and its
    backward never go through it; the triton_op does, so torch.compile can trace it."""
    calls = []

    def counting(kernel):
        calls.append(kernel)
        return kernel

    monkeypatch.setattr(ex, "wrap_triton", counting)
    x = data(33).requires_grad_()
    ex.dropout(x, 0.5, SEED).backward(torch.ones(33, device=DEVICE))
    assert calls == []
    ex.dropout_op(x.detach(), 0.5, SEED)
    assert calls == [ex.dropout_kernel]
