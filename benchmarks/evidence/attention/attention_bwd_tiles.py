"""Probe: other tiles for the attention backward's two kernels at head dim 128.

At head dim 128 the backward's dK/dV kernel (64 keys x 128-wide accumulators for dK and dV,
queries streaming through in 64-row blocks, 8 warps, 3 stages, tensor descriptors) spills
registers to local memory (run 35's Nsight Compute profile). This probe times other tiles,
warps and stages for the dK/dV kernel and for the dQ kernel through the launcher's ``config``
argument (no change to the example), one kernel's setting changed at a time, beside the
shipped settings and SDPA's cuDNN backend, and records each compiled kernel's registers
per thread and spilled bytes (``n_regs``, ``n_spills`` of Triton's compiled kernel).

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (``PASSES`` passes, the
reference cuDNN, ``do_bench`` only) and ``METHOD`` below, both written into the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/attention_bwd_tiles.py
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
METHOD = ("Inputs: seeded torch.randn q, k, v and dO, batch 32 x 16 heads; every candidate's "
          "(dq, dk, dv) must match cuDNN's within 4e-2 (fp16) or 8e-2 (bf16), the benchmark's "
          "tolerance; each call runs the backward only (the forward ran once at set-up); "
          "TFLOP/s counts 2.5 x 4 * B * H * S^2 * D, halved under the causal mask. Timed with "
          "do_bench only: the benchmark does not capture backward passes.")
# (pass, BLOCK_M, BLOCK_N, num_warps, num_stages); the other pass keeps _config's setting
SETTINGS = [("dkdv", 64, 128, 8, 2), ("dkdv", 32, 128, 8, 3), ("dkdv", 32, 128, 4, 3),
            ("dkdv", 64, 64, 4, 3), ("dkdv", 16, 128, 8, 4), ("dq", 128, 128, 8, 2),
            ("dq", 64, 64, 4, 3), ("dq", 128, 32, 8, 4)]
POINTS = [{"dtype": dt, "head_dim": 128, "causal": c, "seq": s}
          for dt, c, s in (("fp16", False, 4096), ("fp16", True, 4096), ("bf16", False, 4096),
                           ("fp16", True, 16384))]


def compiled(kernels) -> set:
    """(kernel name, id) of every compiled variant of ``kernels`` so far."""
    return {(k.__name__, id(ck)) for k in kernels
            for caches in getattr(k, "device_caches", {}).values() for ck in caches[0].values()}


def usage(kernels, new: set) -> list[dict]:
    """Registers per thread and spilled bytes of the compiled variants in ``new``."""
    return [{"kernel": k.__name__, "registers": ck.n_regs, "spills": ck.n_spills}
            for k in kernels for caches in getattr(k, "device_caches", {}).values()
            for ck in caches[0].values() if (k.__name__, id(ck)) in new]


def main() -> None:
    args = probe_args()
    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa
    device, timing = timing_method(args.smoke)
    import attention as ex
    kernels = (ex.attn_bwd_dkdv_tma_kernel, ex.attn_bwd_dq_tma_kernel,
               ex.attn_bwd_dkdv_kernel, ex.attn_bwd_dq_kernel)
    errors, resources = {}, {}

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        causal, seq = pt["causal"], pt["seq"]
        if args.smoke:  # the bookkeeping only: no kernel runs
            labels = ["sdpa-cudnn", "shipped", *(f"{p} {bm}x{bn} w{w} s{s}" for p, bm, bn, w, s in SETTINGS)]
            return dict.fromkeys(labels, lambda: q), 4e-2, 1.0
        do = torch.randn(q.shape, device=device, dtype=q.dtype,
                         generator=torch.Generator(device=device).manual_seed(seq + 1))
        torch.cuda.empty_cache()
        o, lse = ex.attention_forward(q, k, v, causal)
        leaves = tuple(t.clone().requires_grad_(True) for t in (q, k, v))
        out = _sdpa(*leaves, causal, SDPA_BACKENDS["sdpa-cudnn"])
        fns = {"sdpa-cudnn": lambda: torch.autograd.grad(out, leaves, do, retain_graph=True)}
        where = f"{pt['dtype']} {'causal ' if causal else ''}{seq}"
        for label, cfg in [("shipped", None)] + [
                (f"{p} {bm}x{bn} w{w} s{s}", {p: {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w,
                                                  "num_stages": s}})
                for p, bm, bn, w, s in SETTINGS]:
            def fn(cfg=cfg):
                return ex.attention_backward(do, q, k, v, o, lse, causal, None, cfg)
            before = compiled(kernels)
            try:  # compile here: a setting the GPU cannot hold is listed, not timed
                fn()
                torch.cuda.synchronize()
                fns[label] = fn
            except Exception as err:  # noqa: BLE001 - OutOfResources, compile errors
                errors[f"{where}: {label}"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            new = usage(kernels, compiled(kernels) - before)
            if new:
                resources[label] = new
        flops = 2.5 * 4.0 * q.shape[0] * q.shape[1] * seq * seq * 128 * (0.5 if causal else 1.0)
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), flops

    rows, skipped = run_points(POINTS, setup, PASSES, timing, args.budget, "sdpa-cudnn",
                               graphs=(False,))
    header = probe_header("benchmarks/evidence/attention/attention_bwd_tiles.py", METHOD,
                          kernels="examples/attention.py attention_backward, settings through config",
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped, errors=errors, resources=resources)
    write_points(args.out / "attention_bwd_tiles.json", header, rows)


if __name__ == "__main__":
    main()
