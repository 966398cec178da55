"""Probe: the backward of examples/attention_hopper.py (Gluon) beside cuDNN's, FlashAttention-2's
and examples/attention.py's, at every point of the attention backward benchmark.

``attention_hopper_backward`` runs three Gluon kernels (delta, dK/dV, dQ; each of the last two
with a one-warp TMA producer and two wgmma consumer warpgroups). Candidates, per point
(``benchmarks/cases/attention.py``'s backward points, batch 32 x 16 heads):

* pass "bwd": the backward alone, the forward run once at set-up: ``sdpa-cudnn`` (reference),
  ``sdpa-flash``, ``triton`` (``examples/attention.attention_backward``, the kernels of the
  committed results) and ``triton-gluon`` (``attention_hopper_backward``);
  at head dim 64 also ``triton-gluon`` with other settings of ``BWD_CONFIGS`` (``OTHER_CONFIGS``:
  a third ring slot for dK/dV, 64-key or three-slot dQ steps), the candidates for the point
  where the two-kernel backward was short of cuDNN;
* pass "fwd+bwd": a training step's attention through autograd, ``out = f(q, k, v)`` then
  ``torch.autograd.grad(out, (q, k, v), do)``: ``sdpa-cudnn`` (reference) and ``triton-gluon``
  (``attention_hopper``).

Every candidate's ``(dq, dk, dv)`` is checked against the reference's before it is timed.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/hopper_bwd.py
--out DIR [--budget S]``. There is no ``--smoke`` run on the CPU: every candidate but cuDNN's
needs the GPU (Gluon has no interpreter).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402

PASSES = 3
# head_dim -> {name: BWD_CONFIGS entry} timed beside the example's own (compiled for sm_90 on
# the CPU without spills)
OTHER_CONFIGS = {64: {"dkdv 3 slots": {"dkdv": (64, 3), "dq": (128, 2)},
                      "dq 64 keys": {"dkdv": (64, 2), "dq": (64, 2)},
                      "dq 3 slots": {"dkdv": (64, 2), "dq": (128, 3)}}}
METHOD = ("Inputs: seeded torch.randn q, k, v and dO, batch 32 x 16 heads; every candidate's "
          "(dq, dk, dv) must match cuDNN's within 4e-2 (fp16) or 8e-2 (bf16), the benchmark's "
          "tolerance. TFLOP/s counts 2.5 x 4 * B * H * S^2 * D for a backward and 3.5 x for "
          "forward + backward, halved under the causal mask. Timed with do_bench only (no "
          "CUDA-graph columns), as the benchmark times a backward.")


def points():
    from benchmarks.cases.attention import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["direction"] == "bwd":
            for seq in spec["x_vals"]:
                for pass_ in ("bwd", "fwd+bwd"):
                    yield {**{k: v for k, v in spec["args"].items() if k != "direction"},
                           "seq": seq, "pass": pass_}


def with_configs(ex, head_dim, cfg, fn):
    """fn run with BWD_CONFIGS[head_dim] set to cfg (and restored)."""
    def run():
        saved = ex.BWD_CONFIGS[head_dim]
        ex.BWD_CONFIGS[head_dim] = cfg
        try:
            return fn()
        finally:
            ex.BWD_CONFIGS[head_dim] = saved
    return run


def backward_inputs(pt, device, smoke=False):
    """(q, k, v, dO, leaves) of a backward point: the benchmark's seeded q, k, v (batch 32 x 16
    heads), dO seeded with seq + 1, and copies of q, k, v that require grad (for autograd)."""
    from benchmarks.cases.attention import BATCH, HEADS
    from scripts.probe_common import attention_inputs

    q, k, v = attention_inputs(pt, BATCH, HEADS, device, smoke)
    do = torch.randn(q.shape, device=device, dtype=q.dtype,
                     generator=torch.Generator(device=device).manual_seed(pt["seq"] + 1))
    torch.cuda.empty_cache()
    return q, k, v, do, tuple(t.clone().requires_grad_(True) for t in (q, k, v))


def backward_flops(q, pt, factor=2.5):
    """FLOPs of a point: factor x the forward's 4 * B * H * S^2 * D, halved under the mask."""
    return factor * 4.0 * q.shape[0] * q.shape[1] * pt["seq"] ** 2 * pt["head_dim"] * (
        0.5 if pt["causal"] else 1)


def main() -> None:
    from scripts.probe_common import (
        probe_args,
        probe_header,
        run_points,
        timing_method,
        write_points,
    )
    args = probe_args()
    if args.smoke:
        raise SystemExit("hopper_bwd.py needs an sm_90 GPU: Gluon has no interpreter")
    device, timing = timing_method(args.smoke)
    import attention as fa2
    import attention_hopper as ex

    from benchmarks.cases.attention import BATCH, HEADS, SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v, do, leaves = backward_inputs(pt, device, args.smoke)
        causal, d = pt["causal"], pt["head_dim"]

        def sdpa(backend):
            return _sdpa(*leaves, causal, SDPA_BACKENDS[backend])

        if pt["pass"] == "bwd":
            outs = {b: sdpa(b) for b in SDPA_BACKENDS}
            o2, lse2 = fa2.attention_forward(q, k, v, causal)
            o, lse = ex.attention_hopper_forward(q, k, v, causal)
            fns = {"sdpa-cudnn": lambda: torch.autograd.grad(
                       outs["sdpa-cudnn"], leaves, do, retain_graph=True),
                   "sdpa-flash": lambda: torch.autograd.grad(
                       outs["sdpa-flash"], leaves, do, retain_graph=True),
                   "triton": lambda: fa2.attention_backward(do, q, k, v, o2, lse2, causal),
                   "triton-gluon": lambda: ex.attention_hopper_backward(do, q, k, v, o, lse,
                                                                        causal)}
            for name, cfg in OTHER_CONFIGS.get(d, {}).items():
                fns[f"triton-gluon {name}"] = with_configs(
                    ex, d, cfg, lambda: ex.attention_hopper_backward(do, q, k, v, o, lse, causal))
            factor = 2.5
        else:
            fns = {"sdpa-cudnn": lambda: torch.autograd.grad(sdpa("sdpa-cudnn"), leaves, do),
                   "triton-gluon": lambda: torch.autograd.grad(
                       ex.attention_hopper(*leaves, causal), leaves, do)}
            factor = 3.5
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), backward_flops(q, pt, factor)

    rows, skipped = run_points(list(points()), setup, PASSES, timing, args.budget,
                               "sdpa-cudnn", graphs=(False,))
    header = probe_header("benchmarks/evidence/attention/hopper_bwd.py", METHOD,
                          kernels="examples/attention_hopper.py's backward (attention_hopper_"
                                  "delta_kernel, _dkdv_kernel, _dq_kernel), examples/attention.py"
                                  "'s backward",
                          bwd_configs={str(k): v for k, v in ex.BWD_CONFIGS.items()},
                          other_configs={str(k): v for k, v in OTHER_CONFIGS.items()},
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped)
    write_points(args.out / "hopper_bwd.json", header, rows)


if __name__ == "__main__":
    main()
