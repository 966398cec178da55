"""Probe: does the Gluon attention forward want a second Q slot per consumer?

In ``examples/attention_hopper.py`` each consumer warpgroup has one
shared-memory slot for its 64 query rows. The producer can load the next tile's Q only
after the consumer has finished the current tile's last ``P V`` (``q_empty``), so every tile
may start with a wait for a TMA copy, and the first key block's ``S`` waits behind it. Short
tiles pay that most: at seq 1024 a tile has 8 key blocks, 4.5 on average under the causal
mask. With ``CONFIGS[d]["Q_STAGES"] = 2`` each consumer has two Q slots and the producer
loads tile ``i + 1``'s Q while tile ``i`` runs. This probe times the kernel with one and two
Q slots (the config switched for the call only), and at head dim 64 two Q slots with a
three-slot K/V ring, beside SDPA's cuDNN backend at every point of the Hopper attention
benchmark (``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads).

Run 88 measured it on an H100 (no H200 could be started that session), against
``examples/attention_hopper.py`` at commit b3f8066: the example on main plus
``run88/q_slots.patch``, which adds ``Q_STAGES``. Two Q slots were not faster at every point,
so the example keeps one Q tile per consumer and has no ``Q_STAGES``. To run this probe again,
apply the patch first: ``git apply benchmarks/evidence/attention/run88/q_slots.patch``.

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (``PASSES`` passes, the
reference cuDNN) and ``METHOD`` below, both written into the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_q_slots.py
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
# candidate -> the CONFIGS entries it sets; the last one at head dim 64 only
SETTINGS = {"1 Q slot": {"Q_STAGES": 1}, "2 Q slots": {"Q_STAGES": 2},
            "2 Q slots, 3 K/V slots": {"Q_STAGES": 2, "STAGES": 3}}


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["direction"] != "fwd":
            continue
        for seq in spec["x_vals"]:
            yield {**spec["args"], "seq": seq}


def with_config(ex, d, setting, fn):
    """fn() with the example's CONFIGS[d] updated by ``setting`` for the call only."""
    def run():
        saved = ex.CONFIGS[d]
        ex.CONFIGS[d] = {**saved, **setting}
        try:
            return fn()
        finally:
            ex.CONFIGS[d] = saved
    return run


def names(d):
    return [n for n in SETTINGS if d == 64 or "K/V" not in n]


def main() -> None:
    args = probe_args()
    from benchmarks.cases.attention_hopper import BATCH, HEADS
    device, timing = timing_method(args.smoke)
    if not args.smoke:
        import attention_hopper as ex

        from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        d, causal, seq = pt["head_dim"], pt["causal"], pt["seq"]
        if args.smoke:
            return dict.fromkeys(("sdpa-cudnn", *names(d)), lambda: q), 2e-2, 1.0
        torch.cuda.empty_cache()
        fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
        for name in names(d):
            fns[name] = with_config(ex, d, SETTINGS[name],
                                    lambda: ex.attention_hopper(q, k, v, causal))
        flops = 4.0 * BATCH * HEADS * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops

    rows, skipped = run_points(points(), setup, PASSES, timing, args.budget, "sdpa-cudnn")
    header = probe_header("benchmarks/evidence/attention/gluon_q_slots.py", METHOD,
                          kernels="examples/attention_hopper.py, CONFIGS switched per call: "
                                  + "; ".join(f"{n}: {s}" for n, s in SETTINGS.items()),
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped)
    write_points(args.out / "gluon_q_slots.json", header, rows)


if __name__ == "__main__":
    main()
