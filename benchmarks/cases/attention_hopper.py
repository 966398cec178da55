"""Hopper attention benchmark: what is timed for examples/attention_hopper.py, forward and backward.

Batch 32 x 16 heads at every length, as in the attention case. Every (dtype, head_dim, causal) of
fp16 and bf16, head dims 64 and 128, at seq 1024 and 4096; the fp16 causal head-dim-128 case also
at 16384 (batch 32 x 16 there too: 2 GB per input, one point costs about as much as the sweep below
it). FLOPs: two matmuls of ``seq x seq x head_dim`` per (batch, head), ``4 * B * H * seq^2 * D``,
half of it when causal; a backward counts 2.5 times that (five matmuls for the forward's two).

A backward point times the backward alone, as the attention case does: each provider runs its
forward once with autograd recording (``triton-gluon`` when the point is built, the peers at
their first call, the output check), and ``fn`` calls
``torch.autograd.grad(out, (q, k, v), do, retain_graph=True)``. The peers' backward points are
the attention case's own (``benchmarks.cases.attention.bench_case``); ``triton-gluon`` is the same
with ``attention_hopper`` as the forward, so its backward runs the Gluon kernels.

Providers: ``triton-gluon`` is the Gluon kernel of this story (``attention_hopper``); ``triton`` is
examples/attention.py's FlashAttention-2 forward (``attention_forward``: the launcher alone, no
autograd); ``sdpa`` is ``scaled_dot_product_attention`` with PyTorch's own backend choice,
``sdpa-flash`` and ``sdpa-cudnn`` force a backend (the attention case's helper). Every provider of
a point gets the same inputs (a seeded generator) and is checked against one fp32 reference.

The kernel needs an sm_90 GPU and has no interpreter, so there are no tiny points: ``--tiny`` on
the CPU imports this case and runs nothing of it.
"""

import torch
from attention import attention_forward
from attention_hopper import DEVICE, attention_hopper

from benchmarks.cases import attention as attention_case
from benchmarks.cases.attention import SDPA_BACKENDS, _cached_reference, _reference, _sdpa

BATCH, HEADS = 32, 16
SEQS = [1024, 4096]
LONG_SEQS = [1024, 4096, 16384]
PROVIDERS = ["triton-gluon", "triton", "sdpa", "sdpa-flash", "sdpa-cudnn"]
# "sdpa", PyTorch's pick, is one of the two forced backends: the backward leaves it out (a backward
# point holds every provider's q, k, v, dO and output at once, about 11 GB each at 16384 tokens)
BWD_PROVIDERS = ["triton-gluon", "triton", "sdpa-flash", "sdpa-cudnn"]


def _spec(direction, dtype, head_dim, causal, seqs):
    """One bench (its title, ceiling and targets: presentation.yml)."""
    return {
        "name": f"attention_hopper_{direction}_{dtype}_d{head_dim}" + ("_causal" if causal else ""),
        "x_name": "seq",
        "x_vals": seqs,
        "tiny_x_vals": [],  # Gluon has no interpreter: nothing to run on the CPU
        "providers": PROVIDERS if direction == "fwd" else BWD_PROVIDERS,
        "metric": "TFLOP/s",
        "args": {"direction": direction, "dtype": dtype, "head_dim": head_dim, "causal": causal},
        "cudagraph_timing": direction == "fwd",  # the harness does not capture backward passes in a graph
    }


BENCHMARKS = [
    spec
    for direction in ("fwd", "bwd")
    for spec in (
        _spec(direction, "fp16", 128, False, SEQS),
        _spec(direction, "fp16", 128, True, LONG_SEQS),
        *(_spec(direction, dtype, head_dim, causal, SEQS)
          for dtype, head_dim in (("fp16", 64), ("bf16", 128), ("bf16", 64)) for causal in (False, True)),
    )
]
_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _backward_case(name, x, device, dt, head_dim, causal) -> dict:
    """triton-gluon's backward point, built as the attention case builds its peers' (same inputs)."""
    gen = torch.Generator(device=device).manual_seed(x)  # the attention case's order: q, k, v, then do
    leaves = tuple(torch.randn(BATCH, HEADS, x, head_dim, device=device, dtype=dt, generator=gen)
                   .requires_grad_(True) for _ in range(3))
    do = torch.randn(leaves[0].shape, device=device, dtype=dt, generator=gen)
    out = attention_hopper(*leaves, causal)  # the forward once, at set-up

    def fn():
        return torch.autograd.grad(out, leaves, do, retain_graph=True)

    key = (name, x, device.type)
    tol = 2 * (2e-2 if dt == torch.float16 else 4e-2)
    return {"fn": fn,
            "ref": lambda: _cached_reference(key, lambda: tuple(
                g.to(dt) for g in _reference(*leaves, causal, do))),
            "work": 2.5 * 4.0 * BATCH * HEADS * x * x * head_dim * (0.5 if causal else 1.0),
            "rtol": tol, "atol": tol}


def bench_case(name: str, provider: str, x: int, device=None, direction="fwd", dtype="fp16", head_dim=128,
               causal=False) -> dict:
    """Inputs and the callable for one benchmark point (see `BENCHMARKS`)."""
    device = DEVICE if device is None else device
    dt = _DTYPES[dtype]
    if direction == "bwd" and provider != "triton-gluon":
        return attention_case.bench_case(name, provider, x, device, "bwd", dtype, head_dim, causal)
    if direction == "bwd":
        return _backward_case(name, x, device, dt, head_dim, causal)
    gen = torch.Generator(device=device).manual_seed(x)  # the same inputs for every provider of the point
    q, k, v = (torch.randn(BATCH, HEADS, x, head_dim, device=device, dtype=dt, generator=gen) for _ in range(3))
    forwards = {
        "triton-gluon": lambda: attention_hopper(q, k, v, causal),
        "triton": lambda: attention_forward(q, k, v, causal)[0],
        "sdpa": lambda: _sdpa(q, k, v, causal),
        "sdpa-flash": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-flash"]),
        "sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"]),
    }
    key = (name, x, device.type)
    tol = 2e-2 if dtype == "fp16" else 4e-2
    return {"fn": forwards[provider],
            "ref": lambda: _cached_reference(key, lambda: _reference(q, k, v, causal).to(dt)),
            "work": 4.0 * BATCH * HEADS * x * x * head_dim * (0.5 if causal else 1.0),
            "rtol": tol, "atol": tol}
