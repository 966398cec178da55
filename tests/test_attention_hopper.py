"""Tests of examples/attention_hopper.py, the Gluon (sm_90) attention forward and backward.

Gluon has no interpreter: on the CPU these tests check every refusal (the checks that need no GPU
come before the device check) and compile the kernels for sm_90; the numerical tests run only on an
sm_90 GPU (H100, H200):

    python -m pytest -q -p no:randomly tests/test_attention_hopper.py
"""

import math

import attention_hopper as ex
import pytest
import torch
from hypothesis import given, note
from hypothesis import strategies as st
from strategies import SEEDS, T, budget, cover, exact_fp32, expect, launch
from support import DEVICE, ON_GPU

ON_SM90 = ON_GPU and torch.cuda.get_device_capability() == (9, 0)
# Gluon is experimental: the story is written against Triton 3.6 (its page says so). Triton 3.9
# removed tma.async_copy_shared_to_global, so under another release the kernel does not compile.
gluon_of_triton_36 = pytest.mark.skipif(not ex.triton.__version__.startswith("3.6."),
                                        reason="the Gluon kernel is written against Triton 3.6")
requires_sm90 = pytest.mark.skipif(not ON_SM90, reason="needs an sm_90 GPU (H100, H200): Gluon's Hopper ops")
HALF = [torch.float16, torch.bfloat16]


def qkv(b, h, s, d, dtype=torch.float16, device=DEVICE):
    return tuple(torch.randn(b, h, s, d, device=device, dtype=dtype) for _ in range(3))


def meta(*shape, dtype=torch.float16):
    """A tensor with a shape and no storage: the size checks run without allocating."""
    return torch.empty(shape, device="meta", dtype=dtype)


# --- refusals: all but the device's run on the CPU -------------------------------------------------

def _q(**kw):
    return torch.randn(1, 2, 128, 64, **kw).half()


BAD = [  # (q, k, v, kwargs) builder, error, message
    (lambda: ([1.0], _q(), _q(), {}), TypeError, "q must be a torch.Tensor, got list"),
    (lambda: (_q(), None, _q(), {}), TypeError, "k must be a torch.Tensor, got NoneType"),
    (lambda: (_q().float(), _q(), _q(), {}), TypeError, "q must be float16 or bfloat16, got torch.float32"),
    (lambda: (_q(), _q(), _q().to(torch.int16), {}), TypeError, "v must be float16 or bfloat16, got torch.int16"),
    (lambda: (_q(), _q().bfloat16(), _q(), {}), TypeError, "q, k and v must have the same dtype"),
    (lambda: (_q()[0], _q()[0], _q()[0], {}), ValueError, r"q must be 4-D \(batch, heads, seq, head_dim\)"),
    (lambda: (_q(), _q()[:, :1], _q(), {}), ValueError, r"k must have q's shape \(1, 2, 128, 64\)"),
    (lambda: (_q(), _q(), _q()[..., :32], {}), ValueError, r"v must have q's shape"),
    (lambda: (_q(), meta(1, 2, 128, 64), _q(), {}), ValueError, "q, k and v must be on the same device"),
    (lambda: (meta(1, 2, 128, 32),) * 3 + ({},), ValueError, r"head_dim \(q.shape\[-1\]\) must be one of \(64, 128\)"),
    (lambda: (meta(1, 2, 100, 64),) * 3 + ({},), ValueError,
     r"seq \(q.shape\[2\]\) must be a multiple of 128, got 100: .*attention\(\) for other lengths"),
    (lambda: (meta(1, 1, 1, 64),) * 3 + ({},), ValueError, "must be a multiple of 128, got 1"),
    (lambda: (meta(2**10, 2**7, 2**14, 64),) * 3 + ({},), ValueError,
     r"batch x heads x seq = 2147483648 rows: TMA coordinates are int32"),
    (lambda: (_q(), _q(), _q(), {"causal": 1}), TypeError, "causal must be a bool, got int"),
    (lambda: (_q(), _q(), _q(), {"causal": None}), TypeError, "causal must be a bool, got NoneType"),
    (lambda: (_q(), _q(), _q(), {"sm_scale": "0.1"}), TypeError, "sm_scale must be a float or None, got str"),
    (lambda: (_q(), _q(), _q(), {"sm_scale": True}), TypeError, "sm_scale must be a float or None, got bool"),
    (lambda: (_q(), _q(), _q(), {"sm_scale": 0.0}), ValueError, r"sm_scale must be finite and > 0, got 0.0"),
    (lambda: (_q(), _q(), _q(), {"sm_scale": -1}), ValueError, "sm_scale must be finite and > 0"),
    (lambda: (_q(), _q(), _q(), {"sm_scale": math.inf}), ValueError, "sm_scale must be finite and > 0"),
    (lambda: (_q(), _q(), _q(), {"sm_scale": math.nan}), ValueError, "sm_scale must be finite and > 0"),
    (lambda: (_q(), _q(), _q(), {"programs": 2.0}), TypeError, "programs must be an int or None, got float"),
    (lambda: (_q(), _q(), _q(), {"programs": True}), TypeError, "programs must be an int or None, got bool"),
    (lambda: (_q(), _q(), _q(), {"programs": 0}), ValueError, r"programs must be in \[1, 2\*\*31\), got 0"),
    (lambda: (_q(), _q(), _q(), {"programs": 2**31}), ValueError, "programs must be in"),
]


@pytest.mark.parametrize("fn", [ex.attention_hopper, ex.attention_hopper_forward])
@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs_are_refused(i, fn):
    build, error, match = BAD[i]
    q, k, v, kwargs = build()
    with pytest.raises(error, match=match):
        fn(q, k, v, **kwargs)


def test_the_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1 is set: Gluon kernels have no interpreter"):
        ex.attention_hopper(*qkv(1, 1, 128, 64))


def test_cpu_tensors_are_refused(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q, k, v = qkv(1, 1, 128, 64, device="cpu")
    with pytest.raises(ValueError, match=r"q is on cpu: attention_hopper needs an sm_90 GPU \(H100, H200\)"):
        ex.attention_hopper(q, k, v)


def test_other_gpus_are_refused(monkeypatch):
    monkeypatch.setattr(ex.torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    monkeypatch.setattr(ex.torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100")
    with pytest.raises(ValueError, match=r"q is on NVIDIA A100 \(sm_80\): Gluon's Hopper ops .* need an sm_90 GPU"):
        ex._check_device(torch.device("cuda", 0))
    if ON_GPU:  # and through the launcher
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
        with pytest.raises(ValueError, match=r"\(sm_80\): Gluon's Hopper ops"):
            ex.attention_hopper(*qkv(1, 1, 128, 64))


def test_views_are_copied_only_when_tma_cannot_read_them():
    t = torch.randn(2, 3, 128, 64).half()
    assert ex._tma_operand(t) is t
    for view in (t.transpose(1, 2).contiguous().transpose(1, 2),  # a (B, S, H, D) tensor seen as (B, H, S, D)
                 t[:, :, 64:],  # a slice along seq
                 torch.cat([torch.zeros(1).half(), t.flatten()])[1:].view(t.shape),  # 2-byte aligned base
                 t[:1].expand(2, 3, 128, 64)):
        copy = ex._tma_operand(view)
        assert copy.is_contiguous() and copy.data_ptr() % 16 == 0 and torch.equal(copy, view)


def test_reference_matches_sdpa_math():
    q, k, v = qkv(2, 3, 40, 16, dtype=torch.float32, device="cpu")
    for causal in (False, True):
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.3)
        torch.testing.assert_close(ex.attention_torch(q, k, v, causal, 0.3), want, rtol=1e-5, atol=1e-5)
        s = (q @ k.transpose(-1, -2)) * 0.3
        if causal:
            s = s.masked_fill(torch.ones(40, 40, dtype=torch.bool).triu(1), -math.inf)
        torch.testing.assert_close(ex.logsumexp_torch(q, k, causal, 0.3), torch.logsumexp(s, -1))


# --- compiled for sm_90 on any machine ---------------------------------------------------------------

@gluon_of_triton_36
def test_compiles_for_sm90_without_a_gpu():
    kernel = ex.compile_for_sm90(torch.bfloat16, 64, False)
    assert ".target sm_90a" in kernel.asm["ptx"]
    used = ex.hopper_instructions(kernel)
    assert all(n > 0 for n in used.values()), used  # wgmma, TMA copies, mbarrier waits, setmaxnreg
    assert 0 < kernel.metadata.shared <= 227 * 1024  # an H100/H200 SM gives a CTA at most 227 KB


def test_compile_for_sm90_takes_what_the_launcher_takes():
    with pytest.raises(ValueError, match="dtype and head_dim must be one of"):
        ex.compile_for_sm90(torch.float32, 64, False)
    with pytest.raises(ValueError, match="dtype and head_dim must be one of"):
        ex.compile_for_sm90(torch.float16, 96, False)


@gluon_of_triton_36
@pytest.mark.skipif(ON_SM90, reason="on an sm_90 GPU the self-check runs the kernel (test_gpu_self_check)")
def test_self_check_compiles_off_hopper(capsys):
    ex.self_check()
    out = capsys.readouterr().out
    assert "attention_hopper: compiled for sm_90" in out and "needs an H100/H200" in out


# --- on an sm_90 GPU ---------------------------------------------------------------------------------

def reference(q, k, v, causal=False, sm_scale=None):
    return ex.attention_torch(q, k, v, causal, sm_scale), ex.logsumexp_torch(q, k, causal, sm_scale)


def tol(dtype):
    return {torch.float16: {"rtol": 2e-2, "atol": 2e-2}, torch.bfloat16: {"rtol": 3e-2, "atol": 3e-2}}[dtype]


@requires_sm90
@pytest.mark.parametrize("seq", [128, 256, 1024])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("dtype", HALF)
def test_gpu_matches_reference(dtype, head_dim, causal, seq):
    q, k, v = qkv(3, 5, seq, head_dim, dtype)
    o, lse = ex.attention_hopper_forward(q, k, v, causal)
    o_ref, lse_ref = reference(q, k, v, causal)
    assert o.dtype == dtype and o.shape == q.shape and lse.dtype == torch.float32 and lse.shape == q.shape[:3]
    torch.testing.assert_close(o, o_ref, **tol(dtype))
    torch.testing.assert_close(lse, lse_ref, **tol(dtype))
    torch.testing.assert_close(ex.attention_hopper(q, k, v, causal), o, rtol=0, atol=0)


@requires_sm90
@pytest.mark.parametrize("programs", [1, 7, 132, None])
@pytest.mark.parametrize("seq", [512, 640])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_gpu_each_program_walks_many_tiles(head_dim, causal, seq, programs):
    """Fewer programs than work units (4 x 9 heads of 4 or 5 query blocks: 144 or 180 tiles, in
    72 or 108 causal pairs): each walks several, the ring's slots and the barriers' phases carried
    from one tile to the next. seq 640 has an odd number of query blocks: the middle one of each
    causal head is a unit alone. None: one program per SM."""
    q, k, v = qkv(4, 9, seq, head_dim, torch.bfloat16)
    o, lse = ex.attention_hopper_forward(q, k, v, causal, programs=programs)
    o_ref, lse_ref = reference(q, k, v, causal)
    torch.testing.assert_close(o, o_ref, **tol(torch.bfloat16))
    torch.testing.assert_close(lse, lse_ref, **tol(torch.bfloat16))
    torch.testing.assert_close(ex.attention_hopper(q, k, v, causal, programs=programs), o, rtol=0, atol=0)


def test_work_units_are_query_blocks_or_causal_pairs():
    assert ex._units(36, 512, False) == 36 * 4  # one unit per 128-query block
    assert ex._units(36, 512, True) == 36 * 2  # blocks (3, 0) and (2, 1) of each head
    assert ex._units(36, 640, True) == 36 * 3  # (4, 0), (3, 1) and the middle block 2 alone
    assert ex._units(1, 128, True) == 1


@requires_sm90
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_lse_is_the_logsumexp_of_the_scaled_scores(causal):
    q, k, v = qkv(2, 3, 384, 64)
    _, lse = ex.attention_hopper_forward(q, k, v, causal, sm_scale=0.3)
    s = (q.float() @ k.float().transpose(-1, -2)) * 0.3
    if causal:
        s = s.masked_fill(torch.ones(384, 384, dtype=torch.bool, device=DEVICE).triu(1), -math.inf)
    torch.testing.assert_close(lse, torch.logsumexp(s, dim=-1), rtol=1e-2, atol=1e-2)


@requires_sm90
@pytest.mark.parametrize("dtype", HALF)
def test_gpu_transposed_views_are_taken(dtype):
    b, s, h, d = 2, 256, 3, 128
    q, k, v = (torch.randn(b, s, h, d, device=DEVICE, dtype=dtype).transpose(1, 2) for _ in range(3))
    before = q.clone()
    o = ex.attention_hopper(q, k, v, causal=True)
    assert o.is_contiguous() and torch.equal(q, before)
    torch.testing.assert_close(o, ex.attention_torch(q, k, v, True), **tol(dtype))


@requires_sm90
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_nan_in_q_spoils_only_its_row(causal):
    q, k, v = qkv(2, 3, 256, 64)
    q[1, 2, 77, 5] = math.nan
    o, lse = ex.attention_hopper_forward(q, k, v, causal)
    row = torch.zeros(o.shape[:3], dtype=torch.bool, device=DEVICE)
    row[1, 2, 77] = True
    assert o[row].isnan().all() and lse[row].isnan().all()
    assert not o[~row].isnan().any() and not lse[~row].isnan().any()
    o_ref = ex.attention_torch(q, k, v, causal)
    torch.testing.assert_close(o, o_ref, **tol(torch.float16), equal_nan=True)


@requires_sm90
def test_gpu_empty_batch():
    q, k, v = qkv(0, 2, 128, 64)
    o, lse = ex.attention_hopper_forward(q, k, v)
    assert o.shape == q.shape and lse.shape == (0, 2, 128)


@requires_sm90
def test_gpu_self_check(capsys):
    ex.self_check()
    assert "match the fp32 reference" in capsys.readouterr().out


LAYOUTS = ["contiguous", "transposed", "offset", "row-offset", "expanded", "padded"]


@requires_sm90
@budget(0.4)
@given(b=st.integers(1, 3), h=st.integers(1, 3), blocks=st.integers(1, 4), head_dim=st.sampled_from([64, 128]),
       dtype=st.sampled_from(HALF), layouts=st.tuples(*[st.sampled_from(LAYOUTS)] * 3),
       q_values=st.sampled_from(["normal", "special", "large"]), causal=st.booleans(),
       sm_scale=st.sampled_from([None, 0.05, 1.0]), seed=SEEDS)
@cover(b=[3, 1], h=[1, 2], blocks=[1, 3], head_dim=[64, 128], dtype=HALF,
       layouts=[("contiguous",) * 3, tuple(LAYOUTS[1:4])], q_values=["special", "large"],
       causal=[True, False], sm_scale=[None, 0.05], seed=[7])
def test_gpu_property_matches_the_reference(b, h, blocks, head_dim, dtype, layouts, q_values, causal, sm_scale, seed):
    """Any (B, H, 128 * n, D) input in any layout (copied where TMA cannot read it): the output is the
    reference's, NaN where it has NaN. v and k hold no NaN/inf: a causal program never reads the keys past
    its diagonal, where the reference multiplies 0 * NaN into the row."""
    shape = (b, h, 128 * blocks, head_dim)
    q = T(shape, dtype, layouts[0], q_values, seed)
    k = T(shape, dtype, layouts[1], "normal", seed + 1)
    v = T(shape, dtype, layouts[2], "normal", seed + 2)
    r = launch(ex, "attention_hopper", q, k, v, causal, sm_scale, must_accept=True)
    q_, k_, v_ = r.inputs[:3]
    with exact_fp32():
        ref = ex.attention_torch(q_, k_, v_, causal, sm_scale)
        scale = ex.attention_torch(q_.double(), k_.double(), v_.double().abs(), causal, sm_scale)  # P @ |V|
    # P is rounded to the input dtype before P @ V: an error relative to P @ |V|
    expect(r.out, ref, scale=scale, acc_rtol=torch.finfo(dtype).eps, call=r.call)


# --- the backward ------------------------------------------------------------------------------------

def _saved(q):
    """A valid (do, o, lse) for q: any tensor of q's shape, dtype and device, and an fp32 (B, H, S)."""
    if not isinstance(q, torch.Tensor) or q.dim() != 4:
        q = _q()
    return torch.empty_like(q), torch.empty_like(q), torch.empty(q.shape[:3], device=q.device)


BAD_SAVED = [  # (do, o, lse) from a valid triple, error, message
    (lambda do, o, lse: (None, o, lse), TypeError, "do must be a torch.Tensor, got NoneType"),
    (lambda do, o, lse: (do, o.numpy(), lse), TypeError, "o must be a torch.Tensor, got ndarray"),
    (lambda do, o, lse: (do, o, [0.0]), TypeError, "lse must be a torch.Tensor, got list"),
    (lambda do, o, lse: (do.float(), o, lse), TypeError, "do must have q's dtype torch.float16, got torch.float32"),
    (lambda do, o, lse: (do, o.bfloat16(), lse), TypeError, "o must have q's dtype"),
    (lambda do, o, lse: (do[:, :1], o, lse), ValueError, r"do must have q's shape \(1, 2, 128, 64\), got \(1, 1,"),
    (lambda do, o, lse: (do, o[..., :32], lse), ValueError, r"o must have q's shape"),
    (lambda do, o, lse: (do, o, lse.half()), ValueError, r"lse must be float32 of shape \(1, 2, 128\) \(the forward"),
    (lambda do, o, lse: (do, o, lse[..., :64]), ValueError, r"lse must be float32 of shape \(1, 2, 128\)"),
    (lambda do, o, lse: (do.to("meta"), o, lse), ValueError, "do must be on q's device cpu, got meta"),
    (lambda do, o, lse: (do, o, lse.to("meta")), ValueError, "lse must be on q's device"),
]


@pytest.mark.parametrize("i", [i for i, (build, _, _) in enumerate(BAD) if "programs" not in build()[3]])
def test_backward_refuses_what_the_forward_refuses(i):
    build, error, match = BAD[i]
    q, k, v, kwargs = build()
    with pytest.raises(error, match=match):
        ex.attention_hopper_backward(*_saved(q)[:1], q, k, v, *_saved(q)[1:], **kwargs)


@pytest.mark.parametrize("i", range(len(BAD_SAVED)))
def test_backward_refuses_bad_saved_tensors(i):
    bad, error, match = BAD_SAVED[i]
    q = _q()
    do, o, lse = bad(*_saved(q))
    with pytest.raises(error, match=match):
        ex.attention_hopper_backward(do, q, q, q, o, lse)


def test_backward_refuses_cpu_tensors_after_the_other_checks(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q = _q()
    with pytest.raises(ValueError, match=r"q is on cpu: attention_hopper needs an sm_90 GPU"):
        ex.attention_hopper_backward(*_saved(q)[:1], q, q, q, *_saved(q)[1:])


@gluon_of_triton_36
@pytest.mark.parametrize("kernel", ["dkdv", "dq"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_backward_kernels_compile_for_sm90_without_a_gpu(kernel, head_dim):
    compiled = ex.compile_for_sm90(torch.float16, head_dim, True, kernel)
    used = ex.hopper_instructions(compiled)
    assert all(n > 0 for n in used.values()), used
    assert 0 < compiled.metadata.shared <= 227 * 1024


def test_compile_for_sm90_names_its_kernels():
    with pytest.raises(ValueError, match="kernel must be 'forward', 'dq' or 'dkdv', got 'dv'"):
        ex.compile_for_sm90(torch.float16, 64, False, "dv")


def grad_reference(q, k, v, do, causal=False, sm_scale=None):
    """(dq, dk, dv): torch's autograd of the fp32 reference, in q's dtype."""
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    with exact_fp32():
        out = ex.attention_torch(*leaves, causal, sm_scale).float()
        grads = torch.autograd.grad(out, leaves, do.float())
    return tuple(g.to(q.dtype) for g in grads)


def assert_grads_close(got, want, dtype):
    """Each gradient within the dtype's tolerance of the reference, the absolute part scaled by the
    reference's largest value: each is a sum over the sequence of terms rounded to fp16/bf16."""
    t = tol(dtype)["rtol"]
    for name, g, w in zip(("dq", "dk", "dv"), got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        scale = max(1.0, w.float().abs().max().item())
        torch.testing.assert_close(g, w, rtol=t, atol=t * scale, msg=lambda m, n=name: f"{n}: {m}")


@requires_sm90
@pytest.mark.parametrize("seq", [128, 256, 640])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("dtype", HALF)
def test_gpu_backward_matches_autograd_of_the_reference(dtype, head_dim, causal, seq):
    q, k, v = qkv(3, 5, seq, head_dim, dtype)
    do = torch.randn_like(q)
    o, lse = ex.attention_hopper_forward(q, k, v, causal)
    got = ex.attention_hopper_backward(do, q, k, v, o, lse, causal)
    assert_grads_close(got, grad_reference(q, k, v, do, causal), dtype)


@requires_sm90
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_autograd_runs_the_backward(causal):
    q, k, v = (t.requires_grad_() for t in qkv(2, 3, 384, 128, torch.bfloat16))
    out = ex.attention_hopper(q, k, v, causal, 0.2)
    assert out.requires_grad and out.grad_fn is not None
    do = torch.randn_like(out)
    out.backward(do)
    o, lse = ex.attention_hopper_forward(q.detach(), k.detach(), v.detach(), causal, 0.2)
    direct = ex.attention_hopper_backward(do, q.detach(), k.detach(), v.detach(), o, lse, causal, 0.2)
    for leaf, want in zip((q, k, v), direct, strict=True):  # the same kernels: bit for bit
        torch.testing.assert_close(leaf.grad, want, rtol=0, atol=0)
    assert_grads_close((q.grad, k.grad, v.grad), grad_reference(q, k, v, do, causal, 0.2), torch.bfloat16)


@requires_sm90
def test_gpu_autograd_keeps_what_the_kernels_read():
    """Views TMA cannot read are copied once, in the forward: the copies are saved (the backward
    neither checks nor copies them again) and the gradients reach the views' leaves. A
    contiguous input is saved itself, so an in-place change before backward is still caught."""
    b, s, h, d = 2, 256, 3, 64
    q, k, v = (torch.randn(b, s, h, d, device=DEVICE, dtype=torch.float16).requires_grad_()
               for _ in range(3))
    out = ex.attention_hopper(*(t.transpose(1, 2) for t in (q, k, v)), True)
    saved = out.grad_fn.saved_tensors
    assert all(t.is_contiguous() for t in saved[:3])
    do = torch.randn_like(out)
    out.backward(do)
    want = grad_reference(*(t.transpose(1, 2) for t in (q, k, v)), do, True)
    assert_grads_close(tuple(t.grad.transpose(1, 2) for t in (q, k, v)), want, torch.float16)
    q2, k2, v2 = (t.requires_grad_() for t in qkv(1, 2, 128, 64))
    out2 = ex.attention_hopper(q2, k2, v2)
    assert out2.grad_fn.saved_tensors[0].data_ptr() == q2.data_ptr()
    with torch.no_grad():
        q2.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out2.sum().backward()


@requires_sm90
def test_gpu_a_second_derivative_is_refused():
    """create_graph=True asks for a backward that is itself differentiable: refused, not a silent
    constant (a loss whose output gradient does not require grad would make it one)."""
    q, k, v = (t.requires_grad_() for t in qkv(1, 2, 128, 64))
    with pytest.raises(RuntimeError, match=r"attention_hopper has no double backward \(create_graph=True\)"):
        torch.autograd.grad(ex.attention_hopper(q, k, v).sum(), (q,), create_graph=True)


@requires_sm90
def test_gpu_no_grad_takes_the_forward_only():
    q, k, v = (t.requires_grad_() for t in qkv(1, 2, 128, 64))
    with torch.no_grad():
        out = ex.attention_hopper(q, k, v)
    assert out.grad_fn is None and not out.requires_grad


@requires_sm90
def test_gpu_backward_takes_any_output_gradient_layout():
    """The gradient of out.sum() is an expanded tensor (every stride 0): copied, like a transposed view."""
    q, k, v = (t.requires_grad_() for t in qkv(2, 3, 256, 64))
    ex.attention_hopper(q, k, v, True).sum().backward()
    ones = torch.ones(q.shape, device=DEVICE, dtype=q.dtype)
    assert_grads_close((q.grad, k.grad, v.grad), grad_reference(q, k, v, ones, True), q.dtype)
    b, s, h, d = 2, 256, 3, 64  # and inputs and an output gradient in (B, S, H, D) memory
    q2, k2, v2, do = (torch.randn(b, s, h, d, device=DEVICE, dtype=torch.float16).transpose(1, 2)
                      for _ in range(4))
    o, lse = ex.attention_hopper_forward(q2, k2, v2)
    got = ex.attention_hopper_backward(do, q2, k2, v2, o.transpose(1, 2).contiguous().transpose(1, 2), lse)
    assert_grads_close(got, grad_reference(q2, k2, v2, do), torch.float16)


@requires_sm90
def test_gpu_backward_grid_is_one_dimensional_past_65535_heads():
    """70,000 (batch, head) pairs: more than a grid's second axis takes. Each head's gradients are the
    same, bit for bit, as those of a call on a few heads alone (nothing is shared between heads)."""
    q, k, v, do = (torch.randn(1, 70_000, 128, 64, device=DEVICE, dtype=torch.float16) for _ in range(4))
    o, lse = ex.attention_hopper_forward(q, k, v, True)
    full = ex.attention_hopper_backward(do, q, k, v, o, lse, True)
    for part in (slice(0, 3), slice(69_997, 70_000)):
        alone = ex.attention_hopper_backward(*(t[:, part] for t in (do, q, k, v, o, lse)), True)
        for a, b in zip(full, alone, strict=True):
            torch.testing.assert_close(a[:, part], b, rtol=0, atol=0)


@requires_sm90
@pytest.mark.skipif(ON_GPU and torch.cuda.mem_get_info()[0] < 40 * 2**30, reason="needs about 40 GB of free GPU memory")
def test_gpu_backward_past_2_31_elements():
    """131,073 heads of 128 x 128: 2**31 + 16384 elements a tensor, so the dQ kernel's reads of O
    (for delta) pass int32 offsets. The last heads' gradients equal, bit for bit, those of a call
    on them alone, whose offsets are small; so do the first heads'."""
    h = 2**31 // (128 * 128) + 1
    q, k, v, do = (torch.randn(1, h, 128, 128, device=DEVICE, dtype=torch.float16) for _ in range(4))
    o, lse = ex.attention_hopper_forward(q, k, v)
    full = ex.attention_hopper_backward(do, q, k, v, o, lse)
    for part in (slice(0, 2), slice(h - 2, h)):
        alone = ex.attention_hopper_backward(*(t[:, part] for t in (do, q, k, v, o, lse)))
        for a, b in zip(full, alone, strict=True):
            torch.testing.assert_close(a[:, part], b, rtol=0, atol=0)
    del q, k, v, do, o, lse, full
    torch.cuda.empty_cache()


@requires_sm90
def test_gpu_backward_nan_in_q_spoils_only_what_reads_it():
    q, k, v = qkv(2, 3, 256, 64)
    do = torch.randn_like(q)
    q[1, 2, 77, 5] = math.nan
    o, lse = ex.attention_hopper_forward(q, k, v)
    dq, dk, dv = ex.attention_hopper_backward(do, q, k, v, o, lse)
    row = torch.zeros(q.shape[:3], dtype=torch.bool, device=DEVICE)
    row[1, 2, 77] = True
    assert dq[row].isnan().all() and not dq[~row].isnan().any()  # dQ of a row reads only that row's Q
    head = torch.zeros(q.shape[:2], dtype=torch.bool, device=DEVICE)
    head[1, 2] = True
    for g in (dk, dv):  # every key of the head met that query; other heads did not
        assert g[head].isnan().any() and not g[~head].isnan().any()


@requires_sm90
def test_gpu_backward_empty_batch():
    q, k, v = qkv(0, 2, 128, 64)
    o, lse = ex.attention_hopper_forward(q, k, v)
    grads = ex.attention_hopper_backward(torch.randn_like(q), q, k, v, o, lse)
    assert all(g.shape == q.shape for g in grads)


@requires_sm90
@budget(0.4)
@given(b=st.integers(1, 3), h=st.integers(1, 3), blocks=st.integers(1, 4), head_dim=st.sampled_from([64, 128]),
       dtype=st.sampled_from(HALF), layouts=st.tuples(*[st.sampled_from(LAYOUTS)] * 4), causal=st.booleans(),
       sm_scale=st.sampled_from([None, 0.05, 1.0]), seed=SEEDS)
@cover(b=[3, 1], h=[1, 2], blocks=[1, 3], head_dim=[64, 128], dtype=HALF,
       layouts=[("contiguous",) * 4, tuple(LAYOUTS[1:5])], causal=[True, False], sm_scale=[None, 1.0], seed=[7])
def test_gpu_property_backward_matches_the_reference(b, h, blocks, head_dim, dtype, layouts, causal, sm_scale,
                                                     seed):
    """Any (B, H, 128 * n, D) inputs and output gradient in any layout: the gradients of the fp32
    reference's autograd."""
    shape = (b, h, 128 * blocks, head_dim)
    recipes = [T(shape, dtype, layout, "normal", seed + i) for i, layout in enumerate(layouts)]
    note(f"reproduce: q, k, v, do = {recipes}; o, lse = attention_hopper_forward(q, k, v, {causal}, "
         f"{sm_scale}); attention_hopper_backward(do, q, k, v, o, lse, {causal}, {sm_scale})")
    q, k, v, do = (r.build() for r in recipes)
    before = [t.clone() for t in (q, k, v, do)]
    o, lse = ex.attention_hopper_forward(q, k, v, causal, sm_scale)
    got = ex.attention_hopper_backward(do, q, k, v, o, lse, causal, sm_scale)
    assert all(torch.equal(a, b) for a, b in zip((q, k, v, do), before, strict=True))  # inputs untouched
    assert_grads_close(got, grad_reference(q, k, v, do, causal, sm_scale), dtype)
