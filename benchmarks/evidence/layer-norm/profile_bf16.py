#!/usr/bin/env python3
"""Probe: Nsight Compute counters of the layer norm at N = 16384 in bf16, its two worst points.

Run 35 profiled the fp16 points only (``benchmarks/evidence/overview/run35/profile_missed.json``);
the bf16 forward and backward miss their targets by more. Three more cases for
``benchmarks/evidence/overview/profile_missed.py`` (kept as it was: it measured run 35), which
does the work: the forward, ``torch.compile``'s forward and the backward, bf16, N = 16384
(``M x N = 2^26``, as in ``benchmarks/cases/layer_norm.py``). This file stands in for the Python
interpreter of ``profile_missed.sh``: it loads that probe, adds its cases and calls the probe's
``main``. From the repository root, on a GPU with ``ncu``::

    OUT=DIR PYTHON=benchmarks/evidence/layer-norm/profile_bf16.py \\
        bash benchmarks/evidence/overview/profile_missed.sh ln_fwd_16384_bf16 \\
        ln_fwd_16384_bf16_compile ln_bwd_16384_bf16
"""

import importlib.util
import sys


def load(path: str):
    spec = importlib.util.spec_from_file_location("profile_missed", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["profile_missed"] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def cases(Case) -> dict:
    fwd = "layer norm forward bf16, N = 16384"
    return {
        "ln_fwd_16384_bf16": Case("layer_norm", "layer_norm_fwd_bf16", "triton", 16384, fwd,
                                  "ours", 35),
        "ln_fwd_16384_bf16_compile": Case("layer_norm", "layer_norm_fwd_bf16", "torch.compile",
                                          16384, fwd, "peer", 75),
        "ln_bwd_16384_bf16": Case("layer_norm", "layer_norm_bwd_bf16", "triton", 16384,
                                  "layer norm backward bf16, N = 16384 (against the copy ceiling)",
                                  "ours", 45),
    }


if __name__ == "__main__":
    probe = load(sys.argv[1])
    probe.CASES.update(cases(probe.Case))
    raise SystemExit(probe.main(sys.argv[2:]))
