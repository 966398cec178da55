import math

import attention as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, ON_GPU, requires_gpu, tolerances

from benchmarks.cases import attention as cases

INTERPRETER_FAKE = "under TRITON_INTERPRET=1, wrap_triton runs the kernel on fake tensors and fails"
FP32 = {"rtol": 2e-4, "atol": 2e-4}  # fp32 ieee dots; exp2 and the online rescaling round differently


def tol(dtype):
    return FP32 if dtype == torch.float32 else tolerances(dtype)


def qkv(b, h, m, d, dtype=torch.float32, n=None, grad=True):
    n = m if n is None else n
    shapes = ((b, h, m, d), (b, h, n, d), (b, h, n, d))
    return tuple(torch.randn(s, device=DEVICE, dtype=dtype).requires_grad_(grad) for s in shapes)


def reference(q, k, v, do, causal=False, sm_scale=None):
    """fp32 reference output, lse and gradients (torch autograd through attention_torch)."""
    q32, k32, v32 = (t.detach().float().requires_grad_(True) for t in (q, k, v))
    out = ex.attention_torch(q32, k32, v32, causal, sm_scale)
    out.backward(do.float())
    scale = 1 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = (q32.detach() @ k32.detach().transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return out.detach(), torch.logsumexp(s, dim=-1), (q32.grad, k32.grad, v32.grad)


def check_all(q, k, v, causal=False, sm_scale=None, **close):
    """Forward through torch.ops.tit.attention_fwd (and its lse), backward through autograd."""
    close = close or tol(q.dtype)
    do = torch.randn(q.shape, device=DEVICE, dtype=q.dtype)
    o_ref, lse_ref, grads_ref = reference(q, k, v, do, causal, sm_scale)
    o, lse = ex.attention_forward(q.detach(), k.detach(), v.detach(), causal, sm_scale)
    torch.testing.assert_close(lse, lse_ref, **close)
    out = ex.attention(q, k, v, causal, sm_scale)
    torch.testing.assert_close(out, o_ref.to(q.dtype), **close)
    torch.testing.assert_close(out, o)
    out.backward(do)
    for name, t, g in zip("qkv", (q, k, v), grads_ref, strict=True):
        assert t.grad.dtype == t.dtype, name
        torch.testing.assert_close(t.grad, g.to(t.dtype), **close, msg=lambda m, n=name: f"d{n}: {m}")


# Odd lengths: one query, a ragged last block, exactly one block, several blocks with a ragged end.
CASES = [(1, 16), (17, 32), (64, 64), (100, 16), (130, 32)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq, head_dim", CASES)
def test_forward_backward_lse_match_reference(seq, head_dim, causal):
    batch, heads = (2, 3) if seq <= 64 else (1, 2)  # the interpreter is slow: fewer heads on long rows
    check_all(*qkv(batch, heads, seq, head_dim), causal)


@pytest.mark.parametrize("causal", [False, True])
def test_head_dim_128(causal):
    check_all(*qkv(1, 2, 33, 128), causal)


@pytest.mark.parametrize("dtype", [d for d in FLOAT_DTYPES if d != torch.float32])
@pytest.mark.parametrize("causal", [False, True])
def test_half_precision(dtype, causal):
    check_all(*qkv(2, 2, 50, 64, dtype), causal)


def test_cross_attention_lengths():
    # non-causal: seq_k may differ from seq_q (more keys, fewer keys)
    check_all(*qkv(2, 2, 17, 32, n=45))
    check_all(*qkv(1, 2, 50, 16, n=3))


@pytest.mark.parametrize("sm_scale", [0.3, 2, 1e-3])
def test_sm_scale_given(sm_scale):
    check_all(*qkv(1, 2, 40, 32), causal=True, sm_scale=sm_scale)


def test_views_transposed_offset_expanded():
    b, s, h, d = 2, 37, 2, 32
    q = torch.randn(b, s, h, d, device=DEVICE).transpose(1, 2)  # (b, h, s, d) view of a (b, s, h, d) tensor
    buf = torch.randn(b * h * s * d + 5, device=DEVICE)
    k = buf[5:].view(b, h, s, d)  # a storage offset of 5 elements
    v = torch.randn(1, h, s, d, device=DEVICE).expand(b, h, s, d)  # stride 0 along batch
    assert not q.is_contiguous() and k.storage_offset() == 5 and v.stride(0) == 0
    for t in (q, k, v):
        t.requires_grad_(True)
    for causal in (False, True):
        for t in (q, k, v):
            t.grad = None
        check_all(q, k, v, causal)


def test_broadcast_gradient():
    # .sum().backward() hands the backward an expanded dO (stride 0 everywhere): made contiguous
    q, k, v = qkv(1, 2, 20, 16)
    ex.attention(q, k, v, True).sum().backward()
    q32, k32, v32 = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    ex.attention_torch(q32, k32, v32, True).sum().backward()
    for got, want in zip((q.grad, k.grad, v.grad), (q32.grad, k32.grad, v32.grad), strict=True):
        torch.testing.assert_close(got, want, **FP32)


def test_nan_query_row_like_the_reference():
    # A NaN in query row 20 makes that row's scores NaN: its output, its lse and its dQ are NaN, and, as
    # every key's dK and dV sum over that row, all of dK and dV (non-causal) -- as in the reference.
    q, k, v = qkv(1, 2, 45, 32)
    with torch.no_grad():
        q[0, 1, 20, 3] = float("nan")
    do = torch.randn_like(q)
    for causal in (False, True):
        for t in (q, k, v):
            t.grad = None
        o_ref, lse_ref, (dq_ref, dk_ref, dv_ref) = reference(q, k, v, do, causal)
        out, lse = ex.attention_forward(q.detach(), k.detach(), v.detach(), causal)
        assert out[0, 1, 20].isnan().all() and not out[0, 1, :20].isnan().any() and not out[0, 0].isnan().any()
        torch.testing.assert_close(out, o_ref, equal_nan=True, **FP32)
        torch.testing.assert_close(lse, lse_ref, equal_nan=True, **FP32)
        ex.attention(q, k, v, causal).backward(do)
        torch.testing.assert_close(q.grad, dq_ref, equal_nan=True, **FP32)  # only row 20 of head 1 is NaN
        assert q.grad[0, 1].isnan().sum() == 32 and not q.grad[0, 0].isnan().any()
        if not causal:
            torch.testing.assert_close(k.grad, dk_ref, equal_nan=True, **FP32)
            torch.testing.assert_close(v.grad, dv_ref, equal_nan=True, **FP32)
        else:
            # The reference multiplies the masked-out probabilities (0 * NaN) of row 20 into every key; the
            # kernel never visits keys after row 20's block, so their dK and dV stay finite.
            assert dv_ref[0, 1].isnan().all()
            assert v.grad[0, 1, :20].isnan().all() and not v.grad[0, 1, 32:].isnan().any()
            assert not k.grad[0, 0].isnan().any() and not v.grad[0, 0].isnan().any()


def test_large_scores_do_not_overflow():
    # scores in the hundreds: only the running max keeps exp finite (the sensitivity to rounding in the
    # scores grows with their size, hence the looser tolerance)
    q, k, v = qkv(1, 1, 50, 16, grad=False)
    check_all((q * 10).requires_grad_(), (k * 10).requires_grad_(), v.requires_grad_(), causal=True,
              rtol=2e-3, atol=2e-3)


def test_autograd_function_with_config_overrides():
    q, k, v = qkv(1, 2, 70, 32)
    cfg = {"fwd": {"BLOCK_M": 64, "BLOCK_N": 16}, "dkdv": {"BLOCK_M": 16, "BLOCK_N": 64},
           "dq": {"BLOCK_M": 16, "BLOCK_N": 16}}
    do = torch.randn_like(q)
    o_ref, _, grads = reference(q, k, v, do, True)
    out = ex.attention_function(q, k, v, True, None, cfg)
    out.backward(do)
    torch.testing.assert_close(out, o_ref, **FP32)
    for t, g in zip((q, k, v), grads, strict=True):
        torch.testing.assert_close(t.grad, g, **FP32)


@pytest.mark.parametrize("cfg", [
    {"fwd": {"TMA": False}, "dkdv": {"TMA": False}, "dq": {"TMA": False}},  # pointer kernels
    {"fwd": {"TMA": True}, "dkdv": {"TMA": True}, "dq": {"TMA": True}},  # descriptors
    {"dkdv": {"TMA": False}, "dq": {"TMA": True}},  # mixed, as at head dim 64 causal
])
@pytest.mark.parametrize("causal", [False, True])
def test_kernel_variants(cfg, causal):
    q, k, v = qkv(2, 2, 37, 32, n=None if causal else 45)
    do = torch.randn_like(q)
    o_ref, lse_ref, grads = reference(q, k, v, do, causal)
    o, lse = ex.attention_forward(q.detach(), k.detach(), v.detach(), causal, None, cfg)
    torch.testing.assert_close(lse, lse_ref, **FP32)
    out = ex.attention_function(q, k, v, causal, None, cfg)
    out.backward(do)
    torch.testing.assert_close(out, o_ref, **FP32)
    for t, g in zip((q, k, v), grads, strict=True):
        torch.testing.assert_close(t.grad, g, **FP32)


def test_descriptor_rules():
    x = torch.randn(2, 3, 40, 16)
    assert ex._descriptor_ok(x, x.transpose(1, 2).contiguous().transpose(1, 2))
    assert not ex._descriptor_ok(torch.randn(2, 3, 40, 18)[..., :16])  # 36-byte rows
    assert not ex._descriptor_ok(torch.randn(641)[1:].view(1, 1, 40, 16))  # 4-byte start
    assert not ex._descriptor_ok(x[:1].expand(2, 3, 40, 16))  # stride 0
    assert not ex._descriptor_ok(x.transpose(2, 3))  # last stride not 1


def test_default_settings_use_descriptors_where_measured_faster():
    gpu = torch.device("cuda")
    for pass_ in ("fwd", "dkdv", "dq"):
        for d in (64, 128):
            for causal in (False, True):
                cfg = ex._config(d, torch.float16, gpu, pass_, causal)
                # head dim 64 with the mask: descriptor loads spill in the dK/dV kernel
                assert cfg["TMA"] is not (pass_ == "dkdv" and d == 64 and causal)
        assert ex._config(64, torch.float32, gpu, pass_)["TMA"] is False
    assert "TMA" not in ex._config(64, torch.float16, gpu, "preprocess")


def test_module_config_overrides(monkeypatch):
    monkeypatch.setitem(ex.CONFIG_OVERRIDES, "fwd", {"BLOCK_M": 16, "BLOCK_N": 16})
    assert ex._config(64, torch.float16, torch.device("cuda"), "fwd")["BLOCK_M"] == 16
    check_all(*qkv(1, 1, 40, 16), causal=True)


@pytest.mark.parametrize("config, error, match", [
    ({"fwd": {"BLOCK_M": 48}}, ValueError, r"config\['fwd'\]\['BLOCK_M'\] must be a power of two"),
    ({"fwd": {"BLOCK_M": 16, "BLOCK_N": 32}}, ValueError, "BLOCK_M must be a multiple of BLOCK_N"),
    ({"dkdv": {"BLOCK_M": 64, "BLOCK_N": 32}}, ValueError, "BLOCK_N must be a multiple of BLOCK_M"),
    ({"fwd": {"block": 16}}, TypeError, "unknown keys"),
    ({"preprocess": {"TMA": True}}, TypeError, "unknown keys"),
    ({"dq": {"TMA": 1}}, TypeError, r"config\['dq'\]\['TMA'\] must be a bool"),
])
def test_bad_config(config, error, match):
    q, k, v = qkv(1, 1, 8, 16, grad=False)
    with pytest.raises(error, match=match):
        o, lse = ex.attention_forward(q, k, v, True, None, config)
        ex.attention_backward(torch.ones_like(o), q, k, v, o, lse, True, None, config)


def test_config_shapes_on_the_gpu_are_consistent():
    # every GPU setting passes the launcher's own checks (tiles powers of two, causal alignment)
    gpu = torch.device("cuda")
    for d in ex.HEAD_DIMS:
        for dtype in ex.SUPPORTED_DTYPES:
            for pass_ in ex.PASSES:
                for causal in (False, True):
                    cfg = ex._config(d, dtype, gpu, pass_, causal)
                    assert ex._checked_config(cfg, pass_) == cfg  # the launcher's own checks pass
                    assert cfg["num_warps"] in (1, 2, 4, 8, 16) and cfg["num_stages"] >= 1
                    assert cfg["PRECISION"] == ("ieee" if dtype == torch.float32 else "tf32")
    with pytest.raises(ValueError, match="pass_ must be one of"):
        ex._config(64, torch.float16, gpu, "bwd")


def test_dkdv_setting_depends_on_the_mask():
    # run25's probe: 64 x 128 tiles on 4 warps spill at head dim 64 and are 5x slower without the mask
    gpu = torch.device("cuda")
    plain = ex._config(64, torch.float16, gpu, "dkdv", causal=False)
    masked = ex._config(64, torch.float16, gpu, "dkdv", causal=True)
    assert (plain["BLOCK_M"], plain["BLOCK_N"], plain["num_warps"]) == (64, 64, 4)
    assert (masked["BLOCK_M"], masked["BLOCK_N"], masked["num_warps"]) == (64, 128, 4)


def meta_qkv(b, h, m, d=16):
    return tuple(torch.empty(b, h, m, d, device="meta") for _ in range(3))  # shapes only, no memory


@pytest.mark.parametrize("b, h", [(65536, 1), (1, 65536)])
def test_more_than_65535_batches_or_heads_are_refused(b, h):
    with pytest.raises(ValueError, match="q must have at most 65535 batches and heads"):
        ex.attention_forward(*meta_qkv(b, h, 1))


@pytest.mark.parametrize("b, h, m, words", [(2, 40000, 1, "batch x heads = 80000"),
                                            (1, 65535, 32769, "batch x heads x seq_q = 2147516415")])
def test_naive_refuses_grids_it_cannot_launch(b, h, m, words):
    with pytest.raises(ValueError, match=words):
        ex.attention_naive(*meta_qkv(b, h, m))


def test_empty_sequences():
    q, k, v = qkv(2, 3, 0, 16)
    out = ex.attention(q, k, v, True)
    assert out.shape == (2, 3, 0, 16)
    out.sum().backward()
    assert q.grad.shape == q.shape and k.grad.shape == k.shape
    q, k, v = qkv(0, 3, 5, 16)
    assert ex.attention(q, k, v).shape == (0, 3, 5, 16)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq", [17, 70])
def test_naive_matches_reference(seq, causal):
    q, k, v = qkv(2, 1, seq, 32, grad=False)
    torch.testing.assert_close(ex.attention_naive(q, k, v, causal), ex.attention_torch(q, k, v, causal), **FP32)


def test_naive_fp16_and_cross_lengths():
    q, k, v = qkv(1, 2, 33, 64, torch.float16, n=70, grad=False)
    torch.testing.assert_close(ex.attention_naive(q, k, v, False, 0.2), ex.attention_torch(q, k, v, False, 0.2),
                               **tolerances(torch.float16))


def test_bytes_moved():
    b, h, s, d = 16, 16, 1024, 128
    naive = ex.naive_bytes(b, h, s, s, d, torch.float16)
    io = b * h * s * d * 2  # one (b, h, s, d) fp16 tensor
    scores = b * h * s * s
    assert naive["scores"] == 2 * io + 4 * scores
    assert naive["softmax"] == 6 * scores
    assert naive["pv"] == 2 * scores + 2 * io
    assert naive["total"] == naive["scores"] + naive["softmax"] + naive["pv"]
    assert ex.fused_bytes(b, h, s, s, d, torch.float16) == 4 * io + 4 * b * h * s
    assert naive["total"] / ex.fused_bytes(b, h, s, s, d) > 10  # at seq 1024 the scores dominate


BAD = [
    (lambda q, k, v: ex.attention([1.0], k, v), TypeError, "q must be a torch.Tensor"),
    (lambda q, k, v: ex.attention(q, None, v), TypeError, "k must be a torch.Tensor"),
    (lambda q, k, v: ex.attention(q, k, v.double()), TypeError, "v must be float16, bfloat16 or float32"),
    (lambda q, k, v: ex.attention(q.to(torch.int32), k, v), TypeError, "q must be float16"),
    (lambda q, k, v: ex.attention(q[0], k, v), ValueError, r"q must be 4-D \(batch, heads, seq, head_dim\)"),
    (lambda q, k, v: ex.attention(q, k[None], v), ValueError, "k must be 4-D"),
    (lambda q, k, v: ex.attention(q, k, v[:, :, :5]), ValueError, "k and v must have the same shape"),
    (lambda q, k, v: ex.attention(q, k[:1], v[:1]), ValueError, "k must match q in batch, heads and head_dim"),
    (lambda q, k, v: ex.attention(q, k[:, :, :5], v[:, :, :5], True), ValueError,
     "causal attention needs k and q of the same seq length"),
    (lambda q, k, v: ex.attention(q, k.half(), v), TypeError, "q, k and v must have the same dtype"),
    (lambda q, k, v: ex.attention(q, k.to("meta"), v), ValueError, "q, k and v must be on the same device"),
    (lambda q, k, v: ex.attention(*(torch.randn(2, 2, 16, 24, device=DEVICE) for _ in range(3))), ValueError,
     r"head_dim \(q.shape\[-1\]\) must be one of \(16, 32, 64, 128\), got 24"),
    (lambda q, k, v: ex.attention(q.transpose(2, 3), k, v), ValueError,
     "q must have unit stride along head_dim"),
    (lambda q, k, v: ex.attention(q, k[:, :, :0], v[:, :, :0]), ValueError, "k must have at least one key"),
    (lambda q, k, v: ex.attention(q, k, v, causal=1), TypeError, "causal must be a bool, got int"),
    (lambda q, k, v: ex.attention(q, k, v, causal=None), TypeError, "causal must be a bool"),
    (lambda q, k, v: ex.attention(q, k, v, sm_scale="0.1"), TypeError, "sm_scale must be a float or None, got str"),
    (lambda q, k, v: ex.attention(q, k, v, sm_scale=True), TypeError, "sm_scale must be a float"),
    (lambda q, k, v: ex.attention(q, k, v, sm_scale=0.0), ValueError, "sm_scale must be finite and > 0, got 0.0"),
    (lambda q, k, v: ex.attention(q, k, v, sm_scale=-1.0), ValueError, "sm_scale must be finite and > 0"),
    (lambda q, k, v: ex.attention(q, k, v, sm_scale=float("inf")), ValueError, "sm_scale must be finite"),
    (lambda q, k, v: ex.attention(q, k, v, sm_scale=float("nan")), ValueError, "sm_scale must be finite"),
    (lambda q, k, v: ex.attention_naive(q[..., :8], k[..., :8], v[..., :8]), ValueError, "head_dim"),
    (lambda q, k, v: ex.attention_backward(q, q, k, v, q[:1], torch.zeros(2, 2, 16)), ValueError,
     "o must match q"),
    (lambda q, k, v: ex.attention_backward(q, q, k, v, q, torch.zeros(2, 2, 15)), ValueError,
     "lse must be the forward's fp32 log-sum-exp"),
    (lambda q, k, v: ex.attention_backward(None, q, k, v, q, torch.zeros(2, 2, 16)), TypeError,
     "do must be a torch.Tensor"),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_inputs_are_refused(i):
    fn, error, match = BAD[i]
    q, k, v = qkv(2, 2, 16, 16, grad=False)
    with pytest.raises(error, match=match):
        fn(q, k, v)


@pytest.mark.skipif(ON_GPU, reason="the refusal is for CPU tensors without the interpreter")
def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    q, k, v = qkv(1, 1, 4, 16, grad=False)
    with pytest.raises(ValueError, match="q is on the CPU: CPU tensors need TRITON_INTERPRET=1"):
        ex.attention(q, k, v)


def test_opcheck_schema_and_autograd_registration():
    q, k, v = qkv(1, 2, 20, 16)
    torch.library.opcheck(ex._attention_fwd_op, (q, k, v, True, 0.25),
                          test_utils=("test_schema", "test_autograd_registration"))


@pytest.mark.xfail(not ON_GPU, reason=INTERPRETER_FAKE, strict=True)
def test_gpu_opcheck_all():
    q, k, v = qkv(1, 2, 20, 16)
    torch.library.opcheck(ex._attention_fwd_op, (q, k, v, True, 0.25))


@pytest.mark.xfail(not ON_GPU, reason=INTERPRETER_FAKE, strict=True)
def test_gpu_compile_fullgraph_module():
    torch._dynamo.reset()
    model = ex.AttentionBlock().to(DEVICE)
    compiled = torch.compile(model, fullgraph=True, backend="inductor" if ON_GPU else "aot_eager")
    x = torch.randn(2, 50, 64, device=DEVICE)
    y = compiled(x)
    y.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = model(x)
    want.sum().backward()
    torch.testing.assert_close(y, want, rtol=1e-3, atol=1e-3)
    for g, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-3, atol=1e-3)


def test_eager_block_matches_reference():
    model = ex.AttentionBlock().to(DEVICE)
    x = torch.randn(2, 30, 64, device=DEVICE)
    got = model(x)
    b, s, dim = x.shape
    q, k, v = model.qkv(model.norm(x)).view(b, s, 3, 2, dim // 2).permute(2, 0, 3, 1, 4)  # strided views
    want = x + model.out(ex.attention_torch(q, k, v, True).transpose(1, 2).reshape(b, s, dim))
    torch.testing.assert_close(got, want, **FP32)


def test_gradient_checks_and_model_run(capsys):
    # on a GPU: all four opcheck checks and the block compiled with fullgraph=True against eager mode
    ex.check_gradients(seq=9)
    ex.check_model(seq=13)
    out = capsys.readouterr().out
    assert "match float64 autograd" in out
    assert ("matches eager" if ON_GPU else "ran eagerly") in out


@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq", [1024, 4095])
def test_gpu_long_sequences_head_dim_128(seq, causal, dtype):
    loose = {"rtol": 3e-2, "atol": 3e-2} if dtype == torch.float16 else {"rtol": 6e-2, "atol": 6e-2}
    check_all(*qkv(2, 4, seq, 128, dtype), causal, **loose)


@requires_gpu
def test_gpu_sdpa_backend_is_named():
    q, k, v = qkv(1, 2, 128, 64, torch.float16, grad=False)
    assert cases.sdpa_backend(q, k, v, True) in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


@requires_gpu
@pytest.mark.skipif(ON_GPU and torch.cuda.mem_get_info()[0] < 40 * 2**30, reason="needs about 40 GB of free GPU memory")
def test_gpu_offsets_past_2_31_large():
    # (1, 1040, 16384, 128) fp16: 2.2e9 elements per tensor, so head offsets pass 2**31 elements
    b, h, s, d = 1, 1040, 16384, 128
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    out, lse = ex.attention_forward(q, k, v, True)
    for head in (0, h - 1):
        sl = (slice(0, 1), slice(head, head + 1))
        torch.testing.assert_close(out[sl], ex.attention_torch(q[sl], k[sl], v[sl], True), rtol=3e-2, atol=3e-2)
    del q, k, v, out, lse
    torch.cuda.empty_cache()


def test_self_check_runs(capsys):
    ex.self_check(seqs=(3,))
    assert "match the fp32 reference" in capsys.readouterr().out


SM90_COMPILE = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "0"  # compile for real, with no GPU present
sys.path.insert(0, "examples")
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import mangle_type
from triton.tools.tensor_descriptor import TensorDescriptor
import attention as ex

KERNELS = {"fwd": ex.attn_fwd_tma_kernel, "dkdv": ex.attn_bwd_dkdv_tma_kernel,
           "dq": ex.attn_bwd_dq_tma_kernel}
for dtype in (torch.float16, torch.bfloat16):
    for d in (64, 128):
        for causal in (False, True):
            for pass_, kernel in KERNELS.items():
                cfg = ex._config(d, dtype, torch.device("cuda"), pass_, causal)
                if not cfg.pop("TMA"):
                    continue
                t = torch.empty(1, 1, 256, d, dtype=dtype)
                consts = {"HEAD_DIM": d, "CAUSAL": causal, **cfg}
                sig = {}
                for p in kernel.params:
                    n = p.name
                    if n.endswith("_desc"):  # keys and values (and dK, dV) move BLOCK_N rows
                        rows = cfg["BLOCK_N"] if n[0] in "kv" or n[1:2] in "kv" else cfg["BLOCK_M"]
                        sig[n] = mangle_type(TensorDescriptor.from_tensor(t, [1, 1, rows, d]))
                    elif n in consts:
                        sig[n] = "constexpr"
                    else:
                        sig[n] = {"LSE": "*fp32", "DELTA": "*fp32", "sm_scale": "fp32",
                                  "qk_scale": "fp32"}.get(n, "i32")
                meta = {n: v for n, v in consts.items() if sig.get(n) == "constexpr"}
                k = triton.compile(ASTSource(kernel, sig, meta), target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]})
                print(pass_, k.metadata.shared, k.asm["ptx"].count("cp.async.bulk.tensor"))
"""


@pytest.mark.skipif(ON_GPU, reason="the GPU tests run every descriptor kernel")
def test_descriptor_kernels_compile_for_hopper():
    # the interpreter never compiles: the TMA copies and the shared-memory budget of each
    # default GPU setting are only checked by compiling for sm_90 (ptxas ships with triton)
    import subprocess
    import sys

    root = ex.__file__.rsplit("/examples/", 1)[0]
    out = subprocess.run([sys.executable, "-c", SM90_COMPILE], cwd=root, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line.split() for line in out.stdout.splitlines()]
    assert len(rows) == 22, rows  # 2 dtypes x 2 head dims x 2 masks x 3 passes, less dK/dV at 64 causal
    for pass_, shared, copies in rows:
        assert 0 < int(shared) <= 232448, (pass_, shared)  # 227 KB per block on sm_90
        assert int(copies) > 0, pass_  # the loads went through the copy engine


@pytest.mark.parametrize("tma", [False, True])
def test_direct_calls_leave_no_reference_to_their_tensors(tma):
    # descriptors hold their tensors: an eager wrap_triton launch would file them in
    # torch's kernel side table for good, and every output would stay allocated
    import gc
    import weakref

    cfg = {p: {"TMA": tma} for p in ("fwd", "dkdv", "dq")}
    q, k, v = qkv(1, 2, 40, 16, grad=False)
    o, lse = ex.attention_forward(q, k, v, True, None, cfg)
    grads = ex.attention_backward(torch.ones_like(o), q, k, v, o, lse, True, None, cfg)
    refs = [weakref.ref(t) for t in (o, lse, *grads)]
    del o, lse, grads
    gc.collect()
    assert all(r() is None for r in refs)
