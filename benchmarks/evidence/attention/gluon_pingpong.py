"""Probe: do the Gluon attention forward's two consumer warpgroups want to take turns?

In ``examples/attention_hopper.py`` both consumers wait for the same key block, issue their
``S = Q K^T`` and ``P V`` at once and run their softmax at the same time, so both use the
exponential unit (16 ``ex2`` a clock per SM on Hopper) together while the tensor cores have
only the ``P V`` left to do. At head dim 64 a key block's exponentials take about as many
clocks as its matmuls, so the softmax shows. With ``CONFIGS[d]["PINGPONG"]`` the consumers
issue their matmuls in turns (FlashAttention-3's ping-pong): one's softmax runs under the
other's matmuls. This probe times the example's kernel with the switch off ("lockstep") and
on ("ping-pong"), set for the call only, beside SDPA's cuDNN backend at every point of the
Hopper attention benchmark (``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads).

Run 50 measured it on an H100 (no H200 could be started that session), against
``examples/attention_hopper.py`` at commit 4c33674 (branch dq-reduce): the example on main plus
``run50/pingpong.patch``. Ping-pong was not faster than lockstep, so the switch was not kept and
the example has no ``PINGPONG``. To run this probe again, apply the patch first:
``git apply benchmarks/evidence/attention/run50/pingpong.patch``.

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (``PASSES`` passes, the
reference cuDNN) and ``METHOD`` below, both written into the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_pingpong.py
--out DIR [--budget S]``; ``--smoke`` (CPU) runs the bookkeeping on fake timings.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    attention_inputs,
    probe_args,
    probe_header,
    run_points,
    timing_method,
    write_points,
)

PASSES = 3
METHOD = ("Inputs: seeded torch.randn, batch 32 x 16 heads; tolerance 2e-2 (fp16), 4e-2 (bf16); "
          "TFLOP/s counts 4 * B * H * S^2 * D, halved under the causal mask.")
SETTINGS = {"lockstep": False, "ping-pong": True}


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        for seq in spec["x_vals"]:
            yield {**spec["args"], "seq": seq}


def with_pingpong(ex, d, on, fn):
    """fn() with the example's PINGPONG for head dim d set to ``on`` for the call only."""
    def run():
        saved = ex.CONFIGS[d]
        ex.CONFIGS[d] = {**saved, "PINGPONG": on}
        try:
            return fn()
        finally:
            ex.CONFIGS[d] = saved
    return run


def main() -> None:
    args = probe_args()
    from benchmarks.cases.attention_hopper import BATCH, HEADS
    device, timing = timing_method(args.smoke)
    if not args.smoke:
        import attention_hopper as ex

        from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        if args.smoke:
            return dict.fromkeys(("sdpa-cudnn", *SETTINGS), lambda: q), 2e-2, 1.0
        torch.cuda.empty_cache()
        d, causal, seq = pt["head_dim"], pt["causal"], pt["seq"]
        fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
        for name, on in SETTINGS.items():
            fns[name] = with_pingpong(ex, d, on, lambda: ex.attention_hopper(q, k, v, causal))
        flops = 4.0 * BATCH * HEADS * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops

    rows, skipped = run_points(points(), setup, PASSES, timing, args.budget, "sdpa-cudnn")
    header = probe_header("benchmarks/evidence/attention/gluon_pingpong.py", METHOD,
                          kernels="examples/attention_hopper.py, PINGPONG off and on",
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped)
    write_points(args.out / "gluon_pingpong.json", header, rows)


if __name__ == "__main__":
    main()
