"""Attention benchmark: what is timed for examples/attention.py.

Batch 32 x 16 heads at every length. Every (dtype, head_dim, causal) of fp16 and bf16, head dims
64 and 128, at seq 1024 and 4096, forward and backward; the fp16 causal head-dim-128 case also at
16384 (one point there costs about as much as the whole sweep below it).

FLOPs: the forward does two matmuls of ``seq x seq x head_dim`` per (batch, head),
``4 * B * H * seq^2 * D``, half of it when causal; the backward is counted as 2.5 times the
forward (its five matmuls; ours does seven, recomputing ``S`` in both kernels). A backward point
times the backward only: each provider runs its forward once at set-up with autograd recording,
and ``fn`` calls ``torch.autograd.grad(out, (q, k, v), do, retain_graph=True)``, the same for all.

``sdpa`` is ``scaled_dot_product_attention`` with PyTorch's own backend choice (``sdpa_backend``
says which); ``sdpa-flash`` and ``sdpa-cudnn`` force a backend; ``flex`` is ``flex_attention``
compiled for the shape, forward and backward. The naive version's three kernels are also timed
one by one in GB/s of the bytes each must move (``naive_bytes``), against the copy ceiling.
Every provider of a point gets the same inputs (a seeded generator), so the fp32 reference is
computed once per point. On the CPU (the ``--tiny`` check) there is no backend choice and
``flex`` runs uncompiled.
"""

import math

import torch
from attention import DEVICE, attention, attention_naive, attention_torch, naive_bytes, naive_stages

from benchmarks.cases.peers import compiled_peer

BATCH, HEADS = 32, 16
SEQS = [1024, 4096]
LONG_SEQS = [1024, 4096, 16384]
SDPA_BACKENDS = {"sdpa-flash": "FLASH_ATTENTION", "sdpa-cudnn": "CUDNN_ATTENTION"}
PEERS = ["triton", "sdpa", "sdpa-flash", "sdpa-cudnn"]
NAIVE_STAGES = ["scores", "softmax", "pv"]
NAIVE_BATCH = 4  # the traffic bench: S alone is 4.3 GB at seq 4096 (34 GB at batch 32)


def _spec(direction, dtype, head_dim, causal, seqs, tiny, flex=False, naive=False):
    """One forward or backward bench (its title, ceiling and targets: presentation.yml)."""
    return {
        "name": f"attention_{direction}_{dtype}_d{head_dim}" + ("_causal" if causal else ""),
        "x_name": "seq",
        "x_vals": seqs,
        "tiny_x_vals": tiny if dtype == "fp16" else [],  # bf16 is wrong in the interpreter
        "providers": PEERS + (["flex"] if flex else []) + (["naive"] if naive else []),
        "metric": "TFLOP/s",
        "args": {"direction": direction, "dtype": dtype, "head_dim": head_dim, "causal": causal},
        "cudagraph_timing": direction == "fwd",  # this harness does not capture backward passes in a graph
    }


BENCHMARKS = [
    _spec("fwd", "fp16", 128, False, SEQS, [17, 64], naive=True),
    _spec("fwd", "fp16", 128, True, LONG_SEQS, [64], flex=True),
    _spec("bwd", "fp16", 128, False, SEQS, [17]),
    _spec("bwd", "fp16", 128, True, LONG_SEQS, [40], flex=True),
    *(_spec(direction, dtype, head_dim, causal, SEQS, [33])
      for dtype, head_dim in (("fp16", 64), ("bf16", 128), ("bf16", 64))
      for causal in (False, True) for direction in ("fwd", "bwd")),
    {
        "name": "attention_naive_traffic",
        "x_name": "seq",
        "x_vals": SEQS,
        "tiny_x_vals": [33],
        "providers": NAIVE_STAGES,
        "metric": "GB/s",
        "args": {"direction": "naive", "dtype": "fp16", "head_dim": 128, "causal": False},
    },
]
_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def sdpa_backend(q, k, v, causal: bool = False) -> str:
    """The backend scaled_dot_product_attention picks for these inputs (torch's private chooser)."""
    from torch.nn.attention import SDPBackend

    choice = torch._fused_sdp_choice(q, k, v, None, 0.0, causal)
    return SDPBackend(choice).name


def _sdpa(q, k, v, causal, backend=None):
    if backend is None or q.device.type != "cuda":  # the CPU has no backend choice to force
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _flex_mask(seq, device, causal):
    if not causal:
        return None
    from torch.nn.attention.flex_attention import create_block_mask

    return create_block_mask(lambda b, h, m, n: m >= n, None, None, seq, seq, device=str(device))


def _flex(q, k, v, block_mask):
    """What the flex peer compiles: flex_attention with a causal block mask (or none)."""
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=block_mask)


def _reference(q, k, v, causal, do=None):
    """fp32 reference output (do None) or gradients, a few heads at a time (S of 16 x 16384^2 is 17 GB)."""
    outs = [torch.empty(t.shape, device=t.device) for t in ((q,) if do is None else (q, k, v))]
    per = max(1, 2**28 // (q.shape[2] * k.shape[2]))
    for b in range(q.shape[0]):
        for h in range(0, q.shape[1], per):
            sl = (slice(b, b + 1), slice(h, h + per))
            qs, ks, vs = (t[sl].detach().float().requires_grad_(do is not None) for t in (q, k, v))
            o = attention_torch(qs, ks, vs, causal)
            got = (o.detach(),) if do is None else torch.autograd.grad(o, (qs, ks, vs), do[sl].float())
            for out, g in zip(outs, got, strict=True):
                out[sl] = g
    return outs[0] if do is None else tuple(outs)


_REFERENCE_CACHE: dict = {}  # the last point's reference: every provider of a point shares its inputs


def _cached_reference(key, compute):
    if key not in _REFERENCE_CACHE:
        _REFERENCE_CACHE.clear()  # one point at a time: a 16384 backward reference holds 6 GB
        _REFERENCE_CACHE[key] = compute()
    return _REFERENCE_CACHE[key]


def _naive_case(key, provider, q, k, v, dt):
    """One naive kernel alone, on the buffers of the kernels before it: the three kernels run once
    per point, and every provider (kernel) of the point times its own launch on the shared buffers."""
    def run_all():
        stages = naive_stages(q, k, v)
        for name in NAIVE_STAGES:
            stages[name]()
        return stages

    stages = _cached_reference(key, run_all)
    out = {"scores": "s", "softmax": "p", "pv": "o"}[provider]
    want = stages[out].clone()  # what the chain produced; the reference below checks the chain itself
    scale = 1.0 / math.sqrt(q.shape[-1])
    refs = {"scores": lambda: (q.float() @ k.float().transpose(-1, -2)) * scale,
            "softmax": lambda: torch.softmax(stages["s"], dim=-1).to(dt),
            "pv": lambda: (stages["p"].float() @ v.float()).to(dt)}

    def fn():
        stages[provider]()
        return stages[out]

    def ref():
        torch.testing.assert_close(want, refs[provider](), rtol=2e-2, atol=2e-2)  # the chain's own output
        return want  # and the timed launch must reproduce it exactly (the same inputs, the same kernel)

    return {"fn": fn, "ref": ref, "work": naive_bytes(*q.shape[:3], k.shape[2], q.shape[3], dt)[provider],
            "rtol": 0.0, "atol": 0.0}


def bench_case(name: str, provider: str, x: int, device=None, direction="fwd", dtype="fp16", head_dim=128,
               causal=False) -> dict:
    """Inputs and the callable for one benchmark point (see `BENCHMARKS`)."""
    device = DEVICE if device is None else device
    batch, heads = BATCH, HEADS
    if device.type != "cuda":
        batch, heads = 1, 2  # the interpreter's tiny run checks the code path, not the size
    dt = _DTYPES[dtype]
    gen = torch.Generator(device=device).manual_seed(x)  # the same inputs for every provider of the point
    q, k, v = (torch.randn(batch, heads, x, head_dim, device=device, dtype=dt, generator=gen) for _ in range(3))
    key = (name, x, device.type)
    if direction == "naive":
        return _naive_case(key, provider, q[:NAIVE_BATCH], k[:NAIVE_BATCH], v[:NAIVE_BATCH], dt)
    flops = 4.0 * batch * heads * x * x * head_dim * (0.5 if causal else 1.0)
    forwards = {
        "triton": lambda a, b, c: attention(a, b, c, causal),
        "sdpa": lambda a, b, c: _sdpa(a, b, c, causal),
        "sdpa-flash": lambda a, b, c: _sdpa(a, b, c, causal, SDPA_BACKENDS["sdpa-flash"]),
        "sdpa-cudnn": lambda a, b, c: _sdpa(a, b, c, causal, SDPA_BACKENDS["sdpa-cudnn"]),
        "naive": lambda a, b, c: attention_naive(a, b, c, causal),
    }
    tol = 2e-2 if dtype == "fp16" else 4e-2
    if direction == "fwd":
        if provider == "flex":
            peer = compiled_peer(_flex, q, k, v, _flex_mask(x, device, causal))
        else:
            peer = {"fn": lambda: forwards[provider](q, k, v)}
        ref = lambda: _cached_reference(key, lambda: _reference(q, k, v, causal).to(dt))  # noqa: E731
        return {**peer, "ref": ref, "work": flops, "rtol": tol, "atol": tol}
    # backward: the forward runs once here (flex compiled on its first call), fn runs only the backward
    leaves = tuple(t.requires_grad_(True) for t in (q, k, v))
    do = torch.randn(q.shape, device=device, dtype=dt, generator=gen)
    state = {}

    def fn():
        if "out" not in state:
            if provider == "flex" and device.type == "cuda":
                torch.compiler.reset()  # a fresh dynamo cache for this shape (the runner does this for "compile")
                state["out"] = torch.compile(_flex, dynamic=False)(*leaves, _flex_mask(x, device, causal))
            elif provider == "flex":  # flex_attention has no CPU backward: the --tiny check runs the reference
                state["out"] = attention_torch(*leaves, causal)
            else:
                state["out"] = forwards[provider](*leaves)
        return torch.autograd.grad(state["out"], leaves, do, retain_graph=True)

    def ref():
        return _cached_reference(key, lambda: tuple(g.to(dt) for g in _reference(q, k, v, causal, do)))

    return {"fn": fn, "ref": ref, "work": 2.5 * flops, "rtol": 2 * tol, "atol": 2 * tol}
