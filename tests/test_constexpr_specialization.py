import os

import constexpr_specialization as ex
import pytest
import torch
import triton
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, requires_gpu, tolerances
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend
from triton.compiler.errors import CompileTimeAssertionFailure
from triton.runtime.errors import InterpreterError

from benchmarks.cases import constexpr_specialization as cases

STATIC_ASSERT_ERRORS = (CompileTimeAssertionFailure, InterpreterError)  # GPU, interpreter


# ----------------------------------------------------------------------------- scale_act
@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("activation", ex.ACTIVATIONS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scale_act_matches_torch(n, activation, dtype):
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    torch.testing.assert_close(ex.scale_act(x, 0.75, activation), ex.scale_act_torch(x, 0.75, activation),
                               **tolerances(dtype))


@pytest.mark.parametrize("block_size", [16, 128, 4096])
def test_scale_act_block_sizes(block_size):
    x = torch.randn(1000, device=DEVICE)
    torch.testing.assert_close(ex.scale_act(x, 2.0, "gelu", block_size), ex.scale_act_torch(x, 2.0, "gelu"))


def test_scale_act_writes_every_element():
    n = 1025
    x = torch.randn(n, device=DEVICE)
    y = torch.full((n,), float("nan"), device=DEVICE)
    ex.scale_act_kernel[(triton.cdiv(n, 256),)](x, y, n, 1.0, ACTIVATION="relu", BLOCK_SIZE=256)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, torch.relu(x))


def x_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "kwargs, err, words",
    [
        (dict(x=[1.0]), TypeError, "x must be a torch.Tensor"),
        (dict(x=x_(4).to(torch.int32)), TypeError, "x must be float16"),
        (dict(x=x_(2, 3)), ValueError, "x must be 1-D"),
        (dict(x=x_(8)[::2]), ValueError, "x must be contiguous"),
        (dict(x=x_(4), activation="tanh"), ValueError, "activation must be one of"),
        (dict(x=x_(4), block_size=8), ValueError, "block_size must be a power of two >= 16"),
        (dict(x=x_(4), block_size=100), ValueError, "block_size must be a power of two >= 16"),
    ],
)
def test_scale_act_bad_inputs(kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.scale_act(**kwargs)


def special(n, dtype=torch.float32):
    """Random values with NaN, +-inf, the largest finite magnitudes and moderately large ones mixed in."""
    x = x_(n, dtype=dtype)
    big = torch.finfo(dtype).max
    x[::8], x[1::8], x[2::8], x[3::8], x[4::8] = float("nan"), float("inf"), float("-inf"), big, -big
    x[5::8], x[6::8] = 50.0, -50.0  # x**3 is large; the GELU's sigmoid saturates
    return x


@pytest.mark.parametrize("activation", ex.ACTIVATIONS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scale_act_nan_inf_like_torch(activation, dtype):
    # relu: tl.maximum(x, 0.0) alone turns NaN into 0 on a GPU; torch.relu keeps NaN.
    x = special(131, dtype)
    got = ex.scale_act(x, 0.5, activation)
    torch.testing.assert_close(got, ex.scale_act_torch(x, 0.5, activation), equal_nan=True, **tolerances(dtype))
    assert got[::8].isnan().all() and got[1::8].eq(float("inf")).all()


def test_refuses_more_than_2_31_elements():
    # Meta tensors: the checks see the shape, nothing is allocated or launched.
    x = torch.empty(2**31, device="meta")
    words = r"x has 2147483648 elements, more than 2\*\*31 - 1: these kernels compute int32 offsets"
    for call in (lambda: ex.scale_act(x), lambda: ex.copy(x), lambda: ex.copy_constexpr_n(x)):
        with pytest.raises(ValueError, match=words):
            call()
    ex._check_vector("x", torch.empty(2**31 - 1, device="meta"))  # the largest accepted


@pytest.mark.parametrize("shift", [1, -1, 1023])
def test_copy_refuses_a_partly_overlapping_out(shift):
    buf = x_(3100)
    x, out = buf[1024:2048], buf[1024 + shift:2048 + shift]
    with pytest.raises(ValueError, match=f"out must not partly overlap x: they start {abs(shift)} elements apart"):
        ex.copy(x, out)


def test_copy_into_itself_or_a_neighbour():
    buf = x_(2048)
    before = buf.clone()
    torch.testing.assert_close(ex.copy(buf[:1024], buf[:1024]), before[:1024], rtol=0, atol=0)  # the same memory
    ex.copy(buf[:1024], buf[1024:])  # adjacent, no overlap
    torch.testing.assert_close(buf[1024:], before[:1024], rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["expanded", "strided", "2-D"])
def test_non_contiguous_vectors_are_refused(layout):
    x = {"expanded": lambda: x_(1).expand(17), "strided": lambda: x_(34)[::2], "2-D": lambda: x_(3, 4).t()}[layout]()
    words = "x must be 1-D" if layout == "2-D" else r"x must be contiguous \(stride 1\)"
    for call in (lambda: ex.scale_act(x), lambda: ex.copy(x), lambda: ex.copy_constexpr_n(x)):
        with pytest.raises(ValueError, match=words):
            call()


@pytest.mark.parametrize(
    "constexprs, words",
    [
        (dict(ACTIVATION="relu", BLOCK_SIZE=8), "BLOCK_SIZE must be at least 16"),
        (dict(ACTIVATION="relu", BLOCK_SIZE=48), "BLOCK_SIZE must be a power of two"),
        (dict(ACTIVATION="tanh", BLOCK_SIZE=64), "ACTIVATION must be 'none', 'relu' or 'gelu'"),
    ],
)
def test_static_assert_rejects_bad_constexprs(constexprs, words):
    # Calling the kernel directly skips the launcher's checks: tl.static_assert is the last guard.
    x = x_(64)
    with pytest.raises(STATIC_ASSERT_ERRORS, match=words):
        ex.scale_act_kernel[(1,)](x, torch.empty_like(x), 64, 1.0, **constexprs)


# ----------------------------------------------------------------------------- the rules
def _triton_key(arg, specialize=True):
    return native_specialize_impl(BaseBackend, arg, False, specialize, True)


def test_rules_match_triton():
    buf = torch.empty(64, device=DEVICE)
    args = [0, 1, 2, 15, 16, 17, 32, -1, -16, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40 + 16, 2**63,
            0.5, 1.0, True, False, buf, buf[1:], buf[4:], buf[2:].to(torch.float16), buf.to(torch.float16)[1:]]
    for arg in args:
        for specialize in (True, False):
            expected = tuple(_triton_key(arg, specialize))
            assert ex.specialization_of(arg, specialize) == expected, (arg, specialize)


def test_rules_reject_unknown_types():
    with pytest.raises(TypeError, match="arg must be a bool, int, float or tensor"):
        ex.specialization_of("relu")


def test_predicted_variants():
    x = x_(16)
    sizes = range(1, 200)
    assert ex.variants([(x, x, n) for n in sizes]) == 3  # n == 1, n % 16 == 0, the rest
    assert ex.variants([(x, x, n) for n in sizes], do_not_specialize=(0, 1, 2)) == 1
    assert ex.variants([(x, x, n) for n in sizes], constexprs=(2,)) == 199  # a constexpr size: a storm
    buf = x_(64)
    assert ex.variants([(buf[off:], buf, 32) for off in range(8)]) == 2  # 16-byte aligned or not
    assert ex.variants([(n, "relu") for n in (16, 32)] + [(16, "gelu")], constexprs=(1,)) == 2


# ----------------------------------------------------------------------------- copy policies
@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("policy", ["specialize", "no-specialize"])
def test_copy_policies(n, policy):
    x = x_(n)
    torch.testing.assert_close(ex.copy(x, policy=policy), x, rtol=0, atol=0)


@pytest.mark.parametrize("n", [16, 1024, 4112])
@pytest.mark.parametrize("policy", ["hinted", "argument-hint"])
def test_copy_hinted(n, policy):
    x = x_(n)
    torch.testing.assert_close(ex.copy(x, policy=policy), x, rtol=0, atol=0)


@pytest.mark.parametrize("policy", ["hinted", "argument-hint"])
def test_copy_hinted_refuses_a_broken_promise(policy):
    with pytest.raises(ValueError, match="promises the compiler n % 16 == 0, got n = 17"):
        ex.copy(x_(17), policy=policy)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_copy_misaligned_views(offset):
    src, dst = x_(1100), torch.full((1100,), float("nan"), device=DEVICE)
    ex.copy(src[offset:offset + 1025], dst[offset:offset + 1025])
    torch.testing.assert_close(dst[offset:offset + 1025], src[offset:offset + 1025], rtol=0, atol=0)
    assert torch.isnan(dst[:offset]).all() and torch.isnan(dst[offset + 1025:]).all()  # nothing else touched


@pytest.mark.parametrize(
    "kwargs, err, words",
    [
        (dict(x=x_(4), policy="fast"), ValueError, "policy must be one of"),
        (dict(x=x_(4), out=x_(5)), ValueError, "out must match x"),
        (dict(x=x_(4), out=x_(4, dtype=torch.float16)), ValueError, "out must match x"),
        (dict(x=x_(4), out=x_(8)[::2]), ValueError, "out must be contiguous"),
        (dict(x=x_(4), block_size=0), ValueError, "block_size must be a power of two"),
    ],
)
def test_copy_bad_inputs(kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.copy(**kwargs)


@pytest.mark.parametrize("n", [1, 17, 1025])
def test_copy_constexpr_n(n):
    x = x_(n)
    torch.testing.assert_close(ex.copy_constexpr_n(x), x, rtol=0, atol=0)


# ----------------------------------------------------------------------------- counting compilations
def test_counter_restores_previous_hook():
    seen = []
    previous = lambda *a, **kw: seen.append(kw["fn"].name)
    triton.knobs.runtime.jit_post_compile_hook = previous
    try:
        with ex.CompileCounter():
            assert triton.knobs.runtime.jit_post_compile_hook is not previous
        assert triton.knobs.runtime.jit_post_compile_hook is previous
    finally:
        triton.knobs.runtime.jit_post_compile_hook = None


@pytest.mark.skipif(DEVICE.type == "cuda", reason="checks the interpreter's behaviour")
def test_interpreter_compiles_nothing():
    with ex.CompileCounter() as counter:
        for n in (1, 16, 17):
            ex.copy(x_(n))
    assert counter.count() == 0


@requires_gpu
def test_gpu_compilations_match_prediction():
    x = x_(256)
    sizes = list(range(1, 200, 3))
    for policy, kernel, dns in [("specialize", ex.copy_kernel, ()),
                                ("no-specialize", ex.copy_kernel_unspecialized, (0, 1, 2))]:
        kernel.device_caches.clear()  # forget earlier tests' binaries (the disk cache still serves them)
        with ex.CompileCounter() as counter:
            for n in sizes:
                ex.copy(x[:n], policy=policy)
        assert counter.count(kernel) == ex.variants([(x, x, n) for n in sizes], do_not_specialize=dns)


@requires_gpu
def test_gpu_constexpr_size_recompiles_every_size():
    x = x_(256)
    ex.copy_kernel_constexpr_n.device_caches.clear()
    with ex.CompileCounter() as counter:
        for n in range(100, 112):
            ex.copy_constexpr_n(x[:n])
        for n in range(100, 112):  # second pass: all cached
            ex.copy_constexpr_n(x[:n])
    assert counter.count(ex.copy_kernel_constexpr_n) == 12


@requires_gpu
def test_gpu_misaligned_pointer_is_a_new_variant():
    x = x_(256)
    ex.copy_kernel.device_caches.clear()
    with ex.CompileCounter() as counter:
        for off in range(8):
            ex.copy(x[off:off + 64])
    assert counter.count(ex.copy_kernel) == 2


@requires_gpu
def test_gpu_specialization_gives_vector_loads():
    x = x_(4096)
    y = torch.empty_like(x)
    ptx = {}
    for policy, kernel in ex.COPY_POLICIES.items():
        compiled = kernel[(4,)](x, y, 4096, BLOCK_SIZE=1024)
        ptx[policy] = compiled.asm["ptx"]
    assert "ld.global.v4" in ptx["specialize"]
    assert "ld.global.v4" in ptx["hinted"]  # the hint on the mask restores 128-bit loads
    assert "ld.global.v4" not in ptx["no-specialize"]
    assert "ld.global.v4" not in ptx["argument-hint"]  # triton 3.6 ignores a hint on an argument


@requires_gpu
def test_gpu_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    fresh = triton.jit(ex.copy_kernel.fn)  # a new in-memory cache: this launch must compile
    x = x_(1000)
    fresh[(1,)](x, torch.empty_like(x), 1000, BLOCK_SIZE=1024)
    files = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert any(f.endswith(".cubin") for f in files), files
    assert any(f.endswith(".ptx") for f in files), files
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path)


# ----------------------------------------------------------------------------- bench spec and self-check
@pytest.mark.parametrize("provider", cases.BENCHMARKS[0]["providers"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] == 8 * x


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 33))
    assert "3 binaries predicted" in capsys.readouterr().out
