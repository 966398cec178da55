"""Probe: one barrier wait and one release per key block in the Gluon attention forward.

``examples/attention_hopper.py``'s ring has a ready and an empty barrier for K and another
pair for V: per key block each consumer waits twice and releases twice, and the sm_90 PTX puts
a 128-thread ``bar.sync`` before each release and before the first wait. The candidate (the
example as of commit ``a1d8ae2``) puts ``K_j`` and ``V_{j-1}``, the two operands one step
reads, in one ring entry under one ready and one empty barrier: one wait and one release per
block (PTX: two ``bar.sync`` per block in the loop instead of three). This probe times both
kernels beside SDPA's cuDNN backend at every point of the Hopper attention benchmark
(``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads).

Both kernels are read from files: "two barriers" from ``--baseline`` (default: the example,
whose kernel is the one at commit ``debee3d``), "one barrier" from ``--candidate`` (default
``test-artifacts/attention_hopper_a1d8ae2.py``, written by ``git show
a1d8ae2:examples/attention_hopper.py > FILE``). Run 47 ran the probe on the a1d8ae2 tree,
where the two were the other way round: the example held the candidate and the baseline came
from ``git show debee3d:...``; the kernels timed are the same.

Method: ``run_points`` of ``scripts/probe_common.py`` with ``PASSES`` passes. Inputs are
seeded ``torch.randn``; both kernels must match cuDNN's output (``assert_close``, 2e-2 fp16,
4e-2 bf16) before they are timed; each pass times every candidate with ``do_bench`` (warmup 25,
rep 100, median) and ``do_bench_cudagraph`` (rep 20); a row keeps the median over passes, the
spread (max / min - 1) and the median of the per-pass ratios cuDNN time / candidate time.
TFLOP/s counts 4 * B * H * S^2 * D, halved under the causal mask.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_one_barrier.py
[--baseline FILE] [--candidate FILE] --out DIR [--budget S]``; ``--smoke`` (CPU) runs the bookkeeping on fake timings.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402

from scripts.probe_common import environment, run_points, write_points  # noqa: E402

PASSES = 3
NAMES = ("sdpa-cudnn", "two barriers", "one barrier")


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        for seq in spec["x_vals"]:
            yield {**spec["args"], "seq": seq}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rel(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--baseline", type=Path, help="the two-barrier kernel's file",
                    default=ROOT / "examples" / "attention_hopper.py")
    ap.add_argument("--candidate", type=Path, help="the one-barrier kernel's file",
                    default=ROOT / "test-artifacts" / "attention_hopper_a1d8ae2.py")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds: no new point starts after them (the rest are listed as skipped)")
    args = ap.parse_args()
    from benchmarks.cases.attention_hopper import BATCH, HEADS
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    if args.smoke:
        device = torch.device("cpu")

        def timing(fn, graph):
            return 1.0 + 0.1 * graph
    else:
        from triton.testing import do_bench, do_bench_cudagraph

        from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa
        old = load(args.baseline, "attention_hopper_two_barriers")
        new = load(args.candidate, "attention_hopper_one_barrier")
        device = torch.device("cuda")

        def timing(fn, graph):
            return do_bench_cudagraph(fn, rep=20) if graph else do_bench(
                fn, warmup=25, rep=100, return_mode="median")

    def setup(pt):
        dt, d, causal, seq = dts[pt["dtype"]], pt["head_dim"], pt["causal"], pt["seq"]
        shape = (BATCH, HEADS, seq, d) if not args.smoke else (1, 1, 128, d)
        gen = torch.Generator(device=device).manual_seed(seq)
        q, k, v = (torch.randn(shape, device=device, dtype=dt, generator=gen) for _ in range(3))
        if args.smoke:
            fns = dict.fromkeys(NAMES, lambda: q)
        else:
            torch.cuda.empty_cache()
            cudnn = SDPA_BACKENDS["sdpa-cudnn"]
            fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, cudnn),
                   "two barriers": lambda: old.attention_hopper(q, k, v, causal),
                   "one barrier": lambda: new.attention_hopper(q, k, v, causal)}
        flops = 4.0 * shape[0] * shape[1] * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (2e-2 if dt == torch.float16 else 4e-2), flops

    rows, skipped = run_points(points(), setup, PASSES, timing, args.budget, "sdpa-cudnn")
    header = {"probe": "benchmarks/evidence/attention/gluon_one_barrier.py",
              "kernels": f"two barriers: {rel(args.baseline)}; one barrier: {rel(args.candidate)}",
              **environment(),
              "method": __doc__.split("Method: ")[1].split("\n\nUsage")[0].replace("\n", " "),
              "batch": BATCH if not args.smoke else 1, "heads": HEADS if not args.smoke else 1,
              "passes": PASSES, "budget_s": args.budget, "skipped": skipped}
    write_points(args.out / "gluon_one_barrier.json", header, rows)


if __name__ == "__main__":
    main()
