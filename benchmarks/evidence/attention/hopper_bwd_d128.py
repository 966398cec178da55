"""Probe: the Gluon attention backward at head dim 128, 32 or 64 query rows per dK/dV step.

Nsight Compute found the dK/dV kernel spilling at head dim 128 (run 81,
``profile_gluon_bwd.py``): compiled for sm_90, the setting it ran with,
``BWD_CONFIGS[128]["dkdv"] = (64, 2)`` (64 query rows per step, two ring slots), stores 44 and
loads 48 bytes a thread to local memory inside the loop, where each consumer warpgroup already
holds dK and dV (64 x 128 fp32 each) beside the step's S^T and dP^T. With 32 query rows a step
the two step tiles halve and ptxas reports no spills, with two or three slots; the example used
(32, 2) when this probe ran (commit 1714b4f, run 82) and went back to (64, 2) after it. This probe
times the settings at every head-dim-128 point of the backward benchmark, fp16 and bf16, with
cuDNN's backward as the reference: candidates ``triton-gluon`` (the example as it is),
``triton-gluon dkdv 64x2`` (the spilling setting), ``triton-gluon dkdv 32x3`` and, added after
run 82 so that a rerun times it beside the example's (64, 2), ``triton-gluon dkdv 32x2`` (in
run 82 that was the example's own setting, the ``triton-gluon`` rows); the Gluon candidates call
``attention_hopper_backward`` directly, cuDNN runs through ``torch.autograd.grad``; each one's ``(dq, dk, dv)`` is
checked against cuDNN's before it is timed (the tolerances, the inputs and the timing of
``hopper_bwd.py``, whose ``points`` and ``with_configs`` it uses). Before timing, it prints
ptxas's registers and spills of each setting (``--compile`` does only that, on any machine).

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/hopper_bwd_d128.py
--out DIR [--budget S]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402

PASSES = 3
SETTINGS = {"dkdv 64x2": (64, 2), "dkdv 32x2": (32, 2), "dkdv 32x3": (32, 3)}


def compile_report() -> None:
    import attention_hopper as ex

    from scripts.probe_common import ptxas_usage

    saved = ex.BWD_CONFIGS[128]
    for name, dkdv in {"example": saved["dkdv"], **SETTINGS}.items():
        ex.BWD_CONFIGS[128] = {**saved, "dkdv": dkdv}
        try:
            for dtype in (torch.float16, torch.bfloat16):
                k = ex.compile_for_sm90(dtype, 128, False, kernel="dkdv")
                print(name, dkdv, dtype, ptxas_usage(k.asm["ptx"]), flush=True)
        finally:
            ex.BWD_CONFIGS[128] = saved


def main() -> None:
    from hopper_bwd import METHOD, backward_flops, backward_inputs, points, with_configs

    from scripts.probe_common import (
        probe_args,
        probe_header,
        run_points,
        timing_method,
        write_points,
    )
    args = probe_args()
    if args.smoke:
        raise SystemExit("hopper_bwd_d128.py needs an sm_90 GPU: Gluon has no interpreter")
    compile_report()
    device, timing = timing_method(args.smoke)
    import attention_hopper as ex

    from benchmarks.cases.attention import BATCH, HEADS, SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v, do, leaves = backward_inputs(pt, device, args.smoke)
        causal, d = pt["causal"], pt["head_dim"]
        out = _sdpa(*leaves, causal, SDPA_BACKENDS["sdpa-cudnn"])
        o, lse = ex.attention_hopper_forward(q, k, v, causal)

        def gluon():
            return ex.attention_hopper_backward(do, q, k, v, o, lse, causal)

        fns = {"sdpa-cudnn": lambda: torch.autograd.grad(out, leaves, do, retain_graph=True),
               "triton-gluon": gluon}
        for name, dkdv in SETTINGS.items():
            fns[f"triton-gluon {name}"] = with_configs(ex, d, {**ex.BWD_CONFIGS[d], "dkdv": dkdv}, gluon)
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), backward_flops(q, pt)

    pts = [pt for pt in points() if pt["head_dim"] == 128 and pt["pass"] == "bwd"]
    rows, skipped = run_points(pts, setup, PASSES, timing, args.budget, "sdpa-cudnn", graphs=(False,))
    header = probe_header("benchmarks/evidence/attention/hopper_bwd_d128.py", METHOD,
                          kernels="examples/attention_hopper.py's backward (delta, dK/dV, dQ kernels)",
                          bwd_configs={str(k): v for k, v in ex.BWD_CONFIGS.items()},
                          settings=SETTINGS, batch=BATCH, heads=HEADS, passes=PASSES,
                          budget_s=args.budget, skipped=skipped)
    write_points(args.out / "hopper_bwd_d128.json", header, rows)


if __name__ == "__main__":
    if "--compile" in sys.argv:
        compile_report()
    else:
        main()
