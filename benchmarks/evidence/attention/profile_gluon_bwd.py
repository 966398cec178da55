#!/usr/bin/env python3
"""Probe: Nsight Compute counters of the Gluon attention backward where it is short of cuDNN.

Four cases for ``benchmarks/evidence/overview/profile_missed.py`` (kept as it was), which does the
work, as ``profile_gluon.py`` does for the forward: the backward of
``benchmarks/cases/attention_hopper.py`` (``attention_hopper_bwd_*``: the forward once at set-up,
the profiled call ``torch.autograd.grad``) for ``triton-gluon`` (the delta, dK/dV and dQ kernels
of ``examples/attention_hopper.py``) and for SDPA's cuDNN backend, at fp16, head dim 64, seq 1024
(the lowest fp16 point of the H100 benchmark) and fp16, head dim 128, seq 4096 (batch 32 x 16). From
the repository root, on an sm_90 GPU with ``ncu``::

    OUT=DIR PYTHON=benchmarks/evidence/attention/profile_gluon_bwd.py \\
        bash benchmarks/evidence/overview/profile_missed.sh gluon_bwd_d64_1024 \\
        gluon_bwd_d64_1024_cudnn gluon_bwd_d128_4096 gluon_bwd_d128_4096_cudnn

In run 81 (an H100) that command profiled no kernel: ncu's ``--target-processes
application-only``, which ``profile_missed.sh`` passes, found none ("No kernels were profiled").
The run that gave ``run81/profile_gluon_bwd.json`` set ``NCU=/tmp/ncu_all``, a wrapper that
passes every argument to ``ncu`` but ``application-only``, replaced by ``all``::

    #!/bin/bash
    args=(); for a in "$@"; do [ "$a" = application-only ] && a=all; args+=("$a"); done
    exec ncu "${args[@]}"
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from scripts.probe_common import profile_missed_with  # noqa: E402


def cases(Case) -> dict:
    d64 = "Gluon attention backward fp16, d64, seq 1024, batch 32 x 16"
    d128 = "Gluon attention backward fp16, d128, seq 4096, batch 32 x 16"
    return {
        "gluon_bwd_d64_1024": Case("attention_hopper", "attention_hopper_bwd_fp16_d64",
                                   "triton-gluon", 1024, d64, "ours", 60),
        "gluon_bwd_d64_1024_cudnn": Case("attention_hopper", "attention_hopper_bwd_fp16_d64",
                                         "sdpa-cudnn", 1024, d64, "peer", 60),
        "gluon_bwd_d128_4096": Case("attention_hopper", "attention_hopper_bwd_fp16_d128",
                                    "triton-gluon", 4096, d128, "ours", 75),
        "gluon_bwd_d128_4096_cudnn": Case("attention_hopper", "attention_hopper_bwd_fp16_d128",
                                          "sdpa-cudnn", 4096, d128, "peer", 75),
    }


if __name__ == "__main__":
    raise SystemExit(profile_missed_with(cases))
