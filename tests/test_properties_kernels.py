"""Property-based tests (hypothesis) of the worked kernels beside matmul.

softmax, scan, layer_norm, dropout and attention, and the gradients of the last three.

The property, the profiles and the sizes are described once, in tests/property_helpers.py.
"""

from __future__ import annotations

import math

import attention
import dropout
import layer_norm
import scan
import softmax
import torch
from hypothesis import given, note
from hypothesis import strategies as st
from property_helpers import (
    DTYPES,
    F3,
    L1,
    L2,
    PYTESTMARK,
    SMALL_2D,
    V,
    layout_for_shape,
    layout_pairs,
    row_major,
    shapes_any,
)
from strategies import (
    FLOAT_DTYPES,
    LAYOUTS_1D,
    LAYOUTS_2D,
    LIMITS,
    ON_GPU,
    ROW_MAJOR,
    SEEDS,
    VALUES,
    T,
    accumulation_rtol,
    budget,
    cover,
    exact_fp32,
    expect,
    float_dtypes,
    launch,
    shapes_2d,
    sizes,
)

pytestmark = PYTESTMARK


# --------------------------------------------------------------------------- softmax


SOFTMAX_VARIANTS = [None, "row", "multirow", "online"] + (["split"] if ON_GPU else [])  # split: GPU only


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layout=L2, values=V,
       variant=st.sampled_from(SOFTMAX_VARIANTS), block_n=st.sampled_from([None, 16, 256]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES,
       variant=SOFTMAX_VARIANTS, block_n=[None, 16, 256], seed=[10])
def test_softmax(shape, dtype, layout, values, variant, block_n, seed):
    if variant in ("row", "multirow") and shape[1] > 16384:
        variant = "online"  # a forced one-tile variant on a very long row only measures the compiler
    x = T(shape, dtype, layout, values, seed)
    config = {"block_n": block_n} if variant in ("online", "split") and block_n else {}
    fits = True  # split refuses rows of more chunks than SMs
    if variant == "split":
        block = block_n or min(softmax.SPLIT_BLOCK, 1 << max(shape[1] - 1, 0).bit_length())
        fits = -(-shape[1] // block) <= torch.cuda.get_device_properties(0).multi_processor_count
    r = launch(softmax, "softmax", x, variant, **config, names=["x", "variant", "block_n"],
               must_accept=(row_major(x) or shape[1] == 1) and dtype in F3 and shape[1] >= 1 and fits)
    if r:
        expect(r.out, softmax.softmax_torch(r.inputs[0]), call=r.call)


# --------------------------------------------------------------------------- scan


@budget()
@given(shape=shapes_2d(max_cols=4096), dtype=float_dtypes(), layout=L2, values=V,
       block_n=st.sampled_from([None, 16, 64]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layout=LAYOUTS_2D, values=VALUES, block_n=[None, 16, 64], seed=[18])
def test_scan_cumsum(shape, dtype, layout, values, block_n, seed):
    x = T(shape, dtype, layout, values, seed)
    r = launch(scan, "cumsum", x, block_n, must_accept=(row_major(x) or shape[1] == 1) and dtype in F3)
    if r:
        xs = r.inputs[0]
        expect(r.out, scan.cumsum_torch(xs), scale=torch.cumsum(xs.double().abs(), -1),
               acc_rtol=accumulation_rtol(shape[1], dtype, tf32=False), call=r.call)


def _scan_scale(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The recurrence on |a| and |x| in float64: what the rounding error of h is relative to."""
    h = torch.empty(x.shape, dtype=torch.float64, device=x.device)
    state = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
    a, x = a.double().abs(), x.double().abs()
    for j in range(x.shape[1]):
        state = a[:, j] * state + x[:, j]
        h[:, j] = state
    return h


@budget(0.5)
@given(shape=shapes_2d(max_elems=LIMITS.elems_2d // 3, max_cols=2048), dtype=float_dtypes(),
       layouts=st.tuples(L2, L2), values=st.tuples(st.sampled_from(["normal", "special"]), V),
       block_n=st.sampled_from([None, 16, 64]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=layout_pairs(LAYOUTS_2D),
       values=[("normal", "normal"), ("special", "normal"), ("normal", "special"), ("normal", "large")],
       block_n=[None, 16, 64], seed=[19])
def test_scan_linear_scan(shape, dtype, layouts, values, block_n, seed):
    # a's values: normal or with NaN/inf, not 1e30 decays (the fp32 state would overflow where the
    # float64 reference does not: a property of the reference, not of the kernel).
    a = T(shape, dtype, layouts[0], values[0], seed)
    x = T(shape, dtype, layouts[1], values[1], seed + 1)
    r = launch(scan, "linear_scan", a, x, block_n,
               must_accept=(row_major(a, x) or shape[1] == 1) and dtype in F3)
    if r:
        a_, x_ = r.inputs[:2]
        ref = scan.linear_scan_torch(a_, x_)
        # The one documented difference (see scan.linear_scan): after an infinite decay, a tree scan
        # may add inf and -inf where the sequential loop multiplies one inf. Only there, and only
        # NaN for +-inf, is accepted.
        out = r.out.clone()
        tree = out.isnan() & ref.isinf() & (a_.isinf().cumsum(dim=1) > 0)
        out[tree] = ref[tree]
        expect(out, ref, scale=_scan_scale(a_, x_),
               acc_rtol=accumulation_rtol(shape[1], dtype, tf32=False), call=r.call)


# --------------------------------------------------------------------------- layer_norm

LN_LAYOUTS = [(lay, LAYOUTS_1D[i % len(LAYOUTS_1D)], LAYOUTS_1D[(i + 1) % len(LAYOUTS_1D)])
              for i, lay in enumerate(LAYOUTS_2D)]  # x's layout with weight's and bias's


@budget()
@given(shape=shapes_2d(), dtype=float_dtypes(), layouts=st.tuples(L2, L1, L1), values=st.tuples(V, V, V),
       eps=st.sampled_from([1e-5, 1.0, 1e-12, 0.0, -1e-3, float("nan")]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=DTYPES, layouts=LN_LAYOUTS,
       values=[(v, "normal", "normal") for v in VALUES] + [("normal", "special", "large"),
                                                           ("normal", "large", "special")],
       eps=[1e-5, 1.0, 1e-12, 0.0, float("nan")], seed=[60])
def test_layer_norm(shape, dtype, layouts, values, eps, seed):
    x = T(shape, dtype, layouts[0], values[0], seed)
    w = T(shape[1:], dtype, layouts[1], values[1], seed + 1)
    b = T(shape[1:], dtype, layouts[2], values[2], seed + 2)
    r = launch(layer_norm, "layer_norm", x, w, b, eps,  # weight and bias: any strides (made contiguous)
               must_accept=row_major(x) and dtype in F3 and eps > 0 and shape[1] <= layer_norm.MAX_N)
    if r:
        expect(r.out, layer_norm.layer_norm_torch(*r.inputs), call=r.call)


# --------------------------------------------------------------------------- dropout

DROPOUT_PS = [0.3, 0.0, 1.0, 0.9, 1.5, -0.1]  # the last two must be refused, naming p
DROPOUT_SEEDS = [7, 0, 2**31 + 7, 2**63 - 1, 2**63]  # 2**63: refused, naming seed


@budget()
@given(shape=shapes_any(), dtype=float_dtypes(extra=(torch.float64, torch.int32)), layout=L2, values=V,
       p=st.sampled_from(DROPOUT_PS), rng=st.sampled_from(DROPOUT_SEEDS), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), (1025, 3), *SMALL_2D[:5], (0,), (1,)],
       dtype=[*DTYPES, torch.int32], layout=LAYOUTS_2D, values=VALUES, p=DROPOUT_PS, rng=DROPOUT_SEEDS, seed=[61])
def test_dropout(shape, dtype, layout, values, p, rng, seed):
    """Any layout: every output element is 0 or x * fp32(1 / (1 - p)) as the mask of (rng, row-major
    index) says, the same as for the contiguous copy, and the same on a second call."""
    x = T(shape, dtype, layout_for_shape(shape, layout), values, seed)
    ok = dtype in (*F3, torch.float64) and 0 <= p <= 1 and 0 <= rng < 2**63
    r = launch(dropout, "dropout", x, p, rng, must_accept=ok)
    if r:
        x_ = r.inputs[0]
        expect(r.out, dropout.dropout_reference(x_, dropout.dropout_mask(shape, p, rng), p), call=r.call)
        expect(dropout.dropout(x_.contiguous(), p, rng), r.out, call=r.call)  # deterministic, layout-free


# --------------------------------------------------------------------------- attention

ATTN_HEAD_DIMS = [16, 32, 64, 16, 32, 64, 8, 17]  # the last two must be refused, naming head_dim
ATTN_LAYOUTS = [("contiguous",) * 3, ("padded", "offset", "expanded"), ("offset", "row-offset", "padded"),
                ("transposed", "contiguous", "contiguous"), ("expanded", "padded", "row-offset"),
                ("row-offset", "expanded", "offset")]


@st.composite
def shapes_attention(draw):
    """(batch, heads, seq, head_dim), tiny: the interpreter runs every (block, head) program."""
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(sizes(70)), draw(st.sampled_from(ATTN_HEAD_DIMS)))


@budget()
@given(shape=shapes_attention(), dtype=float_dtypes(),
       layouts=st.one_of(st.sampled_from(ATTN_LAYOUTS), st.tuples(L2, L2, L2)),
       values=st.tuples(V, V, st.sampled_from(["normal", "large"])), causal=st.booleans(), seed=SEEDS)
@cover(shape=[(2, 2, 17, 16), (1, 2, 33, 32), (1, 1, 1, 64), (2, 1, 31, 16), (1, 2, 64, 32), (1, 1, 0, 16),
              (2, 2, 13, 32), (1, 1, 5, 17), (1, 2, 9, 8)],
       dtype=[*FLOAT_DTYPES, torch.float32, torch.float16, torch.float64], layouts=ATTN_LAYOUTS,
       values=[("normal", "normal", "normal"), ("special", "normal", "normal"), ("normal", "special", "large"),
               ("large", "normal", "normal"), ("normal", "large", "normal")],
       causal=[False, True], seed=[62])
def test_attention(shape, dtype, layouts, values, causal, seed):
    """v draws no NaN/inf: a causal kernel never reads the values past a query's diagonal block, where the
    reference multiplies 0 * NaN into every row (see docs/kernels/attention.md, Pitfalls)."""
    q, k, v = (T(shape, dtype, layouts[i], values[i], seed + i) for i in range(3))
    must = row_major(q, k, v) and dtype in F3 and shape[3] in attention.HEAD_DIMS
    r = launch(attention, "attention", q, k, v, causal, must_accept=must, names=["q", "k", "v", "head_dim"])
    if r:
        q_, k_, v_ = r.inputs[:3]
        with exact_fp32():
            ref = attention.attention_torch(q_, k_, v_, causal)
            scale = attention.attention_torch(q_.double(), k_.double(), v_.double().abs(), causal)  # P @ |V|
        # P is rounded to the input dtype before P @ V (as in FlashAttention): for fp16/bf16 the error is
        # that rounding, relative to P @ |V|
        acc = accumulation_rtol(shape[2], dtype) if dtype == torch.float32 else torch.finfo(dtype).eps
        expect(r.out, ref, scale=scale, acc_rtol=acc, call=r.call)


# --------------------------------------------------------------------------- gradients of the capstone kernels
# The three differentiable launchers, backward through autograd on drawn shapes, layouts and dy layouts,
# against torch's autograd in float64 (cast to the input dtype). Inputs the forward tests above show refused
# are not drawn here: every call must succeed.

def grad_call(module, fn: str, tensors: dict, args: str, dy: T) -> str:
    """A one-line reproduction: build the inputs with requires_grad, call, backward, print the gradients."""
    build = "; ".join(f"{k} = {v!r}.requires_grad_()" for k, v in tensors.items())
    grads = ", ".join(f"{k}.grad" for k in tensors)
    return (f"python -c \"import sys; sys.path[:0] = ['tests', 'examples']; import torch; from strategies import make; "
            f"import {module.__name__}; {build}; {module.__name__}.{fn}({args}).backward({dy!r}); print({grads})\"")


def float64_leaves(*tensors):
    return tuple(t.detach().double().requires_grad_() for t in tensors)


LN_GRAD_LAYOUTS = [lay for lay in LAYOUTS_2D if lay in ROW_MAJOR]  # the layouts layer_norm takes for x


@budget()
@given(shape=shapes_2d(max_cols=layer_norm.MAX_N), dtype=st.sampled_from(FLOAT_DTYPES),
       layouts=st.tuples(st.sampled_from(LN_GRAD_LAYOUTS), L1, L2), eps=st.sampled_from([1e-5, 1e-3, 1.0]),
       op=st.sampled_from(["layer_norm", "layer_norm_op"]), seed=SEEDS)
@cover(shape=SMALL_2D, dtype=FLOAT_DTYPES, layouts=[(lay, LAYOUTS_1D[i % 4], LAYOUTS_2D[(i + 1) % 6])
                                                    for i, lay in enumerate(LN_GRAD_LAYOUTS)],
       eps=[1e-5, 1.0], op=["layer_norm", "layer_norm_op"], seed=[64])
def test_layer_norm_gradients(shape, dtype, layouts, eps, op, seed):
    """dx, dweight and dbias. The error of a sum is relative to the sum of its terms' magnitudes: dweight
    and dbias sum over the M rows, dx's two row means over the N columns."""
    x, w = T(shape, dtype, layouts[0], "normal", seed), T(shape[1:], dtype, layouts[1], "normal", seed + 1)
    b, dy = T(shape[1:], dtype, "contiguous", "normal", seed + 2), T(shape, dtype, layouts[2], "normal", seed + 3)
    call = grad_call(layer_norm, op, {"x": x, "w": w, "b": b}, f"x, w, b, {eps!r}", dy)
    note(f"reproduce: {call}")
    xt, wt, bt = (t.build().requires_grad_() for t in (x, w, b))
    dyt = dy.build()
    getattr(layer_norm, op)(xt, wt, bt, eps).backward(dyt)
    x64, w64, b64 = float64_leaves(xt, wt, bt)
    torch.nn.functional.layer_norm(x64, shape[1:], w64, b64, eps).backward(dyt.double())
    with torch.no_grad():
        xd, wd, dyd = x64.detach(), w64.detach(), dyt.double()
        mean = xd.mean(-1, keepdim=True)
        rstd = ((xd - mean).square().mean(-1, keepdim=True) + eps).rsqrt()
        x_hat, g = ((xd - mean) * rstd).abs(), (dyd * wd).abs()
        scale_dx = rstd * (g + x_hat * (g * x_hat).mean(-1, keepdim=True) + g.mean(-1, keepdim=True))
        scales = (scale_dx, (dyd.abs() * x_hat).sum(0), dyd.abs().sum(0))
    for got, want, scale, n_terms in zip((xt.grad, wt.grad, bt.grad), (x64.grad, w64.grad, b64.grad), scales,
                                         (shape[1], shape[0], shape[0]), strict=True):
        expect(got, want.to(dtype), scale=scale, acc_rtol=accumulation_rtol(n_terms, torch.float32, tf32=False),
               call=call)


@budget()
@given(shape=shapes_any(), dtype=st.sampled_from([*FLOAT_DTYPES, torch.float64]), layouts=st.tuples(L2, L2),
       dy_values=V, p=st.sampled_from([0.3, 0.0, 1.0, 0.9]), rng=st.sampled_from([7, 2**31 + 7, 2**63 - 1]),
       op=st.sampled_from(["dropout", "dropout_op"]), seed=SEEDS)
@cover(shape=[(1025,), (7, 33), (3, 1025), (1025, 3), *SMALL_2D[:5], (0,), (1,)],
       dtype=[*FLOAT_DTYPES, torch.float64], layouts=layout_pairs(LAYOUTS_2D), dy_values=VALUES,
       p=[0.3, 0.0, 1.0, 0.9], rng=[7, 2**31 + 7, 2**63 - 1], op=["dropout", "dropout_op"], seed=[65])
def test_dropout_gradients(shape, dtype, layouts, dy_values, p, rng, op, seed):
    """dx = dy where the forward kept x (times 1 / (1 - p)), 0 where it dropped it: the mask of x's
    row-major index, regenerated, whatever the layouts of x and dy."""
    x = T(shape, dtype, layout_for_shape(shape, layouts[0]), "normal", seed)
    dy = T(shape, dtype, layout_for_shape(shape, layouts[1]), dy_values, seed + 1)
    call = grad_call(dropout, op, {"x": x}, f"x, {p!r}, {rng!r}", dy)
    note(f"reproduce: {call}")
    xt, dyt = x.build().requires_grad_(), dy.build()
    getattr(dropout, op)(xt, p, rng).backward(dyt)
    expect(xt.grad, dropout.dropout_reference(dyt, dropout.dropout_mask(shape, p, rng), p), call=call)


@st.composite
def attention_grad_shapes(draw):
    """(batch, heads, seq_q, seq_k, head_dim) the launcher takes; seq_k differs from seq_q when not causal."""
    seq_q = draw(sizes(70))
    seq_k = draw(st.one_of(st.just(seq_q), sizes(70, lo=1 if seq_q else 0)))
    head_dim = draw(st.sampled_from([16, 32, 64, *([128] if ON_GPU else [])]))
    return draw(st.integers(1, 2)), draw(st.integers(1, 2)), seq_q, seq_k, head_dim


ROW_MAJOR_4D = st.sampled_from(ROW_MAJOR)


@budget(0.5)
@given(shape=attention_grad_shapes(), dtype=st.sampled_from(FLOAT_DTYPES),
       layouts=st.tuples(ROW_MAJOR_4D, ROW_MAJOR_4D, ROW_MAJOR_4D, L2), causal=st.booleans(), seed=SEEDS)
@cover(shape=[(2, 2, 17, 17, 16), (1, 2, 33, 20, 32), (1, 1, 1, 1, 64), (2, 1, 31, 31, 16), (1, 2, 64, 64, 32),
              (1, 1, 5, 70, 16)],
       dtype=FLOAT_DTYPES, layouts=[("contiguous",) * 3 + ("transposed",), ("padded", "offset", "expanded", "padded"),
                                    ("offset", "row-offset", "padded", "expanded"),
                                    ("expanded", "padded", "row-offset", "contiguous"),
                                    ("row-offset", "expanded", "offset", "offset")],
       causal=[False, True], seed=[66])
def test_attention_gradients(shape, dtype, layouts, causal, seed):
    """dq, dk, dv. The errors are relative to magnitudes (float64): dv = P^T dO to P^T |dO|; dS = P * (dP -
    delta) to P * (|dO| |V|^T + rowsum(|dO| * P |V|)), and dq, dk to |dS| |K| and |dS|^T |Q|. fp16/bf16
    round P and dS to the input dtype before their products (as FlashAttention does): 2 eps of the dtype."""
    b, h, m, n, d = shape
    causal = causal and m == n
    q = T((b, h, m, d), dtype, layouts[0], "normal", seed)
    k, v = (T((b, h, n, d), dtype, layouts[i], "normal", seed + i) for i in (1, 2))
    do = T((b, h, m, d), dtype, layouts[3], "normal", seed + 3)
    call = grad_call(attention, "attention", {"q": q, "k": k, "v": v}, f"q, k, v, {causal}", do)
    note(f"reproduce: {call}")
    qt, kt, vt = (t.build().requires_grad_() for t in (q, k, v))
    dot = do.build()
    attention.attention(qt, kt, vt, causal).backward(dot)
    q64, k64, v64 = float64_leaves(qt, kt, vt)
    attention.attention_torch(q64, k64, v64, causal).backward(dot.double())
    with torch.no_grad():
        qd, kd, vd, dod = q64.detach(), k64.detach(), v64.detach(), dot.double()
        sm = 1 / math.sqrt(d)
        s = qd @ kd.transpose(-1, -2) * sm
        if causal:
            s = s.masked_fill(torch.ones(m, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        prob = torch.softmax(s, -1) if n else s
        delta = (dod.abs() * (prob @ vd.abs())).sum(-1, keepdim=True)
        ds = prob * (dod.abs() @ vd.abs().transpose(-1, -2) + delta)
        scales = (sm * ds @ kd.abs(), sm * ds.transpose(-1, -2) @ qd.abs(), prob.transpose(-1, -2) @ dod.abs())
    acc = (accumulation_rtol(max(m, n, d), dtype, tf32=False) if dtype == torch.float32
           else 2 * torch.finfo(dtype).eps)
    for got, want, scale in zip((qt.grad, kt.grad, vt.grad), (q64.grad, k64.grad, v64.grad), scales, strict=True):
        expect(got, want.to(dtype), scale=scale.expand_as(want), acc_rtol=acc, call=call)
