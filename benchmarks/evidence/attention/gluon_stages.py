"""Probe: how many K/V ring slots the Gluon attention forward wants at head dim 64.

``examples/attention_hopper.py`` copies K and V blocks (128 keys) into a ring of
``CONFIGS[d]["STAGES"]`` shared-memory slots. At head dim 64 a slot pair is 32 KB, so shared
memory holds up to four (at head dim 128, 64 KB: two fit beside Q and O). A deeper ring lets
the producer run further ahead, across tiles too, which matters where each key block is
little work. This probe times the example's kernel with 2, 3 and 4 slots (the config switched
for the call only) beside SDPA's cuDNN backend at the head-dim-64 points of the Hopper
attention benchmark (``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads).

Method: per point, inputs ``torch.randn`` (seeded); each candidate's output is checked against
cuDNN's (``torch.testing.assert_close``, 2e-2 fp16, 4e-2 bf16) before it is timed; then
``PASSES`` interleaved passes of ``triton.testing.do_bench`` (warmup 25, rep 100, median) and
``do_bench_cudagraph`` (rep 20, median); a point keeps the median over passes and the spread
(max / min - 1). TFLOP/s = 4 * B * H * S^2 * D, half of it when causal; ``ratio_to_cudnn`` =
cuDNN's time / the candidate's, in the same pass and timing.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_stages.py
--out DIR [--budget S]``; ``--smoke`` (CPU) runs the bookkeeping on fake timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    check_against,
    environment,
    summarize,
    time_interleaved,
    write_points,
)

PASSES = 3
STAGES = (2, 3, 4)


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["head_dim"] == 64:
            for seq in spec["x_vals"]:
                yield {**spec["args"], "seq": seq}


def with_stages(ex, stages, fn):
    """fn() with the example's head-dim-64 ring set to ``stages`` slots for the call only."""
    def run():
        saved = ex.CONFIGS[64]
        ex.CONFIGS[64] = {**saved, "STAGES": stages}
        try:
            return fn()
        finally:
            ex.CONFIGS[64] = saved
    return run


def callables(q, k, v, causal, smoke) -> dict:
    names = ["sdpa-cudnn", *(f"{s} slots" for s in STAGES)]
    if smoke:
        return dict.fromkeys(names, lambda: q)
    import attention_hopper as ex

    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa
    fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
    for s in STAGES:
        fns[f"{s} slots"] = with_stages(ex, s, lambda: ex.attention_hopper(q, k, v, causal))
    return fns


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds: no new point starts after them (the rest are listed as skipped)")
    args = ap.parse_args()
    t0 = time.time()
    if args.smoke:
        def timing(fn, graph):
            return 1.0 + 0.1 * graph
        device = torch.device("cpu")
    else:
        from triton.testing import do_bench, do_bench_cudagraph

        def timing(fn, graph):
            return do_bench_cudagraph(fn, rep=20) if graph else do_bench(
                fn, warmup=25, rep=100, return_mode="median")
        device = torch.device("cuda")
    from benchmarks.cases.attention_hopper import BATCH, HEADS
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    out, skipped = [], []
    for pt in points():
        if time.time() - t0 > args.budget:
            skipped.append(pt)
            continue
        dt, d, causal, seq = dts[pt["dtype"]], pt["head_dim"], pt["causal"], pt["seq"]
        shape = (BATCH, HEADS, seq, d) if not args.smoke else (1, 1, 128, d)
        gen = torch.Generator(device=device).manual_seed(seq)
        q, k, v = (torch.randn(shape, device=device, dtype=dt, generator=gen) for _ in range(3))
        fns = callables(q, k, v, causal, args.smoke)
        tol = 2e-2 if dt == torch.float16 else 4e-2
        checks = check_against({n: f for n, f in fns.items() if n != "sdpa-cudnn"},
                               fns["sdpa-cudnn"](), tol, tol)
        timed = {n: f for n, f in fns.items() if checks.get(n, "pass") == "pass"}
        ms = time_interleaved(timed, PASSES, timing)
        flops = 4.0 * shape[0] * shape[1] * seq * seq * d * (0.5 if causal else 1.0)
        for name in fns:
            row = {"candidate": name, **pt, "batch": shape[0], "heads": shape[1],
                   "check": checks.get(name, "reference")}
            if name in timed:
                for graph, key in ((False, "do_bench"), (True, "cudagraph")):
                    row.update(summarize(ms[(name, graph)], ms[("sdpa-cudnn", graph)], flops, key))
            out.append(row)
            print(row, flush=True)
        del q, k, v, fns
        if not args.smoke:
            torch.cuda.empty_cache()
    header = {"probe": "benchmarks/evidence/attention/gluon_stages.py",
              "kernels": "examples/attention_hopper.py", **environment(),
              "method": __doc__.split("Method: ")[1].split("\n\nUsage")[0].replace("\n", " "),
              "passes": PASSES, "budget_s": args.budget,
              "spent_s": round(time.time() - t0, 1), "skipped": skipped}
    write_points(args.out / "gluon_stages.json", header, out)


if __name__ == "__main__":
    main()
