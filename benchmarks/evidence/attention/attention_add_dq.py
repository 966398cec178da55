"""Probe: the attention backward with dQ added by the dK/dV kernel (a TMA reduce), no dQ kernel.

The backward of ``examples/attention.py`` up to commit 19a2385 ran two large kernels: dK/dV
(one program per key block, walking the queries) and dQ (one program per query block, walking
the keys), each recomputing ``S = Q K^T`` and ``dP = dO V^T``: seven matmuls where the
algorithm needs five. With ``config["dkdv"]["ADD_DQ"]`` the descriptor dK/dV kernel also
computes each key block's share ``dS K`` of dQ and adds it to an fp32 buffer with one
``desc.atomic_add`` per step, which Triton lowers to a TMA reduce
(``cp.reduce.async.bulk.tensor...add``): the copy engine adds the tile in L2, the warps issue
one instruction. The buffer is cast to the input dtype at the end. An earlier attempt with
element atomics (``tl.atomic_add``, run 35) cost what it saved.

Run 49 measured it on an H100 (no H200 could be started that session), against
``examples/attention.py`` at commit 4c33674 (branch dq-reduce): the example on main plus
``run49/add_dq.patch``. It was slower than the two kernels at head dim 128 and at head dim 64
without the mask, so ``ADD_DQ`` was not kept and the example has no such option. To run this
probe again, apply the patch first: ``git apply benchmarks/evidence/attention/run49/add_dq.patch``.

Candidates at every point of the attention backward benchmark (``benchmarks/cases/attention.py``:
batch 32 x 16 heads), beside SDPA's cuDNN backend:

* "two kernels": ``ADD_DQ`` off, dK/dV tiles as at 19a2385 (``MAIN_DKDV``): the kernels
  measured in the committed results;
* "add dQ": the example's defaults (``ADD_DQ`` on where the dK/dV kernel uses descriptors);
* "add dQ, <tile>": ``ADD_DQ`` with another dK/dV tile (``OTHER_TILES``).

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` with do_bench only (a backward
is not captured in a CUDA graph here, as in the benchmark) and ``METHOD`` below, both in the
JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/attention_add_dq.py
--out DIR [--budget S]``; ``--smoke`` (CPU, interpreter) runs the bookkeeping on fake timings.
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
METHOD = ("Inputs: seeded torch.randn q, k, v and dO, batch 32 x 16 heads; every candidate's "
          "(dq, dk, dv) must match cuDNN's within 4e-2 (fp16) or 8e-2 (bf16), the benchmark's "
          "tolerance; each call runs the backward only (the forward ran once at set-up); "
          "TFLOP/s counts 2.5 x 4 * B * H * S^2 * D, halved under the causal mask. Timed with "
          "do_bench only (no CUDA-graph columns): the benchmark does not capture backward passes.")
# (head_dim, causal) -> the dK/dV setting of examples/attention.py at commit 19a2385
MAIN_DKDV = {
    (128, False): {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3, "TMA": True},
    (128, True): {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "num_stages": 3, "TMA": True},
    (64, False): {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2, "TMA": True},
    (64, True): {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4, "num_stages": 2, "TMA": False},
}
# (head_dim, causal) -> other dK/dV tiles with ADD_DQ: no spills when compiled for sm_90
OTHER_TILES = {
    (128, False): [(64, 64, 8, 3)],
    (128, True): [(64, 64, 8, 3)],
    (64, False): [(64, 64, 4, 3)],
    (64, True): [(64, 128, 8, 3), (64, 64, 4, 3)],
}


def points():
    from benchmarks.cases.attention import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["direction"] == "bwd":
            for seq in spec["x_vals"]:
                yield {**{k: v for k, v in spec["args"].items() if k != "direction"}, "seq": seq}


def main() -> None:
    args = probe_args()
    from benchmarks.cases.attention import BATCH, HEADS, SDPA_BACKENDS, _sdpa
    device, timing = timing_method(args.smoke)
    import attention as ex

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        d, causal, seq = pt["head_dim"], pt["causal"], pt["seq"]
        do = torch.randn(q.shape, device=device, dtype=q.dtype,
                         generator=torch.Generator(device=device).manual_seed(seq + 1))
        if device.type == "cuda":
            torch.cuda.empty_cache()
        o, lse = ex.attention_forward(q, k, v, causal)
        leaves = tuple(t.clone().requires_grad_(True) for t in (q, k, v))
        out = _sdpa(*leaves, causal, SDPA_BACKENDS["sdpa-cudnn"])

        def ours(dkdv):
            return lambda: ex.attention_backward(do, q, k, v, o, lse, causal, None, {"dkdv": dkdv})
        fns = {"sdpa-cudnn": lambda: torch.autograd.grad(out, leaves, do, retain_graph=True),
               "two kernels": ours({**MAIN_DKDV[(d, causal)], "ADD_DQ": False}),
               "add dQ": ours({})}
        for bm, bn, w, s in OTHER_TILES[(d, causal)]:
            fns[f"add dQ, {bm}x{bn} w{w} s{s}"] = ours(
                {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s, "TMA": True,
                 "ADD_DQ": True})
        flops = 2.5 * 4.0 * q.shape[0] * q.shape[1] * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), flops

    pts = list(points())
    if args.smoke:  # the interpreter: one point of each head dim and mask, fp16
        pts = [pt for pt in pts if pt["dtype"] == "fp16" and pt["seq"] == 1024]
    rows, skipped = run_points(pts, setup, PASSES, timing, args.budget, "sdpa-cudnn",
                               graphs=(False,))
    header = probe_header("benchmarks/evidence/attention/attention_add_dq.py", METHOD,
                          kernels="examples/attention.py, ADD_DQ off (19a2385's dK/dV tiles) and on",
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped)
    write_points(args.out / "attention_add_dq.json", header, rows)


if __name__ == "__main__":
    main()
