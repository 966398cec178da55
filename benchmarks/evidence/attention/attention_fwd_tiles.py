"""Probe: larger tiles and deeper pipelines for the Triton attention forward.

``examples/attention.py``'s forward (``attention_forward``, tensor descriptors) takes its
launch settings from ``_config``: at head dim 128, 128 x 128 tiles on 8 warps with 3
stages; at head dim 64, 128 x 64 tiles on 4 warps with 3 stages. Those came from the sweep
of run 16 (pointer loads, before descriptors), whose grid stopped at 128 queries per
program and 3 stages, and its best was at that edge. This probe times settings past that
edge through the launcher's ``config`` argument (no change to the example): 256 queries per
program (8 or 16 warps), 2 to 4 stages, beside the shipped setting and SDPA's cuDNN backend,
fp16 and bf16, at the forward benchmark's shapes (batch 32 x 16 heads,
``benchmarks/cases/attention.py``). A setting that does not compile (shared memory, too
many registers) is listed in the header with its error, not timed.

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (``PASSES`` passes, the
reference cuDNN) and ``METHOD`` below, both written into the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/attention_fwd_tiles.py
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
BATCH, HEADS = 32, 16
METHOD = ("Inputs: seeded torch.randn, batch 32 x 16 heads; tolerance 2e-2 (fp16), 4e-2 (bf16) "
          "against cuDNN's output; TFLOP/s counts 4 * B * H * S^2 * D, halved under the causal "
          "mask. Each candidate is attention_forward(q, k, v, causal, config={'fwd': ...}).")
# (BLOCK_M, BLOCK_N, num_warps, num_stages); the first of each head dim is _config's
SETTINGS = {
    128: [(128, 128, 8, 3), (128, 128, 8, 2), (128, 128, 8, 4), (128, 64, 8, 4),
          (256, 128, 16, 2), (256, 128, 16, 3), (256, 64, 8, 3), (256, 64, 16, 3)],
    64: [(128, 64, 4, 3), (128, 64, 4, 4), (128, 64, 8, 3), (128, 128, 8, 3),
         (128, 128, 4, 3), (256, 64, 8, 3), (256, 128, 8, 3), (256, 128, 16, 3)],
}
POINTS = [{"dtype": dt, "head_dim": d, "causal": c, "seq": s}
          for dt, d, c, s in (("fp16", 128, False, 4096), ("fp16", 128, True, 4096),
                              ("fp16", 128, True, 16384), ("fp16", 64, False, 4096),
                              ("fp16", 64, True, 4096), ("bf16", 128, False, 4096),
                              ("bf16", 64, True, 4096))]


def name(setting, shipped: bool) -> str:
    bm, bn, w, s = setting
    return f"{bm}x{bn} w{w} s{s}" + (" (shipped)" if shipped else "")


def main() -> None:
    args = probe_args()
    device, timing = timing_method(args.smoke)
    errors = {}
    if not args.smoke:
        import attention as ex

        from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        d, causal, seq = pt["head_dim"], pt["causal"], pt["seq"]
        names = [name(s, i == 0) for i, s in enumerate(SETTINGS[d])]
        if args.smoke:
            return dict.fromkeys(("sdpa-cudnn", *names), lambda: q), 2e-2, 1.0
        torch.cuda.empty_cache()
        fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
        for label, (bm, bn, w, s) in zip(names, SETTINGS[d], strict=True):
            cfg = {"fwd": {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s}}

            def fn(cfg=cfg):
                return ex.attention_forward(q, k, v, causal, config=cfg)[0]
            try:  # compile here: a setting the GPU cannot hold is listed, not timed
                fn()
                torch.cuda.synchronize()
                fns[label] = fn
            except Exception as err:  # noqa: BLE001 - OutOfResources, compile errors
                errors[f"{pt['dtype']} d{d} {'causal ' if causal else ''}{seq}: {label}"] = (
                    f"{type(err).__name__}: {str(err).splitlines()[0][:200]}")
        flops = 4.0 * BATCH * HEADS * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops

    rows, skipped = run_points(POINTS, setup, PASSES, timing, args.budget, "sdpa-cudnn")
    header = probe_header("benchmarks/evidence/attention/attention_fwd_tiles.py", METHOD,
                          kernels="examples/attention.py attention_forward (descriptors), "
                                  "settings through config",
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped, errors=errors)
    write_points(args.out / "attention_fwd_tiles.json", header, rows)


if __name__ == "__main__":
    main()
