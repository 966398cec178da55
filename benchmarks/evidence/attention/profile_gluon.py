#!/usr/bin/env python3
"""Probe: Nsight Compute counters of the Gluon attention forward at its weakest points, beside cuDNN.

More cases for ``benchmarks/evidence/overview/profile_missed.py`` (kept as it was: it measured
run 35), which does the work: the Gluon forward and SDPA's cuDNN backend at fp16, head dim 64,
causal, seq 1024, and at fp16, head dim 128, seq 1024 (batch 32 x 16, as in
``benchmarks/cases/attention_hopper.py``); the Gluon forward at head dim 64 without the mask and
the Gluon backward at head dim 64 without the mask (both seq 1024), for
``profile_gluon_sass.sh``. This file stands in for the Python interpreter of
``profile_missed.sh``, which runs ``$PYTHON benchmarks/evidence/overview/profile_missed.py ARGS``:
it loads that probe, adds its cases and calls the probe's ``main`` with ``ARGS``. From the
repository root, on an sm_90 GPU with ``ncu``::

    OUT=DIR PYTHON=benchmarks/evidence/attention/profile_gluon.py \\
        bash benchmarks/evidence/overview/profile_missed.sh gluon_d64_causal_1024 \\
        gluon_d64_causal_1024_cudnn gluon_d128_1024 gluon_d128_1024_cudnn
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from scripts.probe_common import profile_missed_with  # noqa: E402


def cases(Case) -> dict:
    d64 = "Gluon attention forward fp16, d64, causal, seq 1024, batch 32 x 16"
    d128 = "Gluon attention forward fp16, d128, seq 1024, batch 32 x 16"
    d64_full = "Gluon attention forward fp16, d64, seq 1024, batch 32 x 16"
    bwd = "Gluon attention backward fp16, d64, seq 1024, batch 32 x 16"
    return {
        "gluon_d64_causal_1024": Case("attention_hopper", "attention_hopper_fwd_fp16_d64_causal",
                                      "triton-gluon", 1024, d64, "ours", 45),
        "gluon_d64_causal_1024_cudnn": Case("attention_hopper", "attention_hopper_fwd_fp16_d64_causal",
                                            "sdpa-cudnn", 1024, d64, "peer", 40),
        "gluon_d128_1024": Case("attention_hopper", "attention_hopper_fwd_fp16_d128",
                                "triton-gluon", 1024, d128, "ours", 45),
        "gluon_d128_1024_cudnn": Case("attention_hopper", "attention_hopper_fwd_fp16_d128",
                                      "sdpa-cudnn", 1024, d128, "peer", 40),
        "gluon_d64_1024": Case("attention_hopper", "attention_hopper_fwd_fp16_d64",
                               "triton-gluon", 1024, d64_full, "ours", 45),
        # the backward's dQ and dK/dV kernels: profile_gluon_sass.sh picks one by name
        "gluon_bwd_d64_1024": Case("attention_hopper", "attention_hopper_bwd_fp16_d64",
                                   "triton-gluon", 1024, bwd, "ours", 40),
    }


if __name__ == "__main__":
    raise SystemExit(profile_missed_with(cases))
