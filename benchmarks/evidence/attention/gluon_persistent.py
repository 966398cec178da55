"""Probe: the Gluon attention forward with persistent programs, against one program per tile.

``examples/attention_hopper.py``'s kernel walks its tiles (128 query rows of one batch x head)
``pid, pid + num_programs, ...``; its launcher takes ``programs=``. With one program per SM a
program's producer runs ahead into its next tile, so the prologue (Q and the first K, V copies)
and the epilogue (the O store) of a tile overlap another tile's work; with one program per tile
the same kernel runs the schedule the story had before it was persistent (each program one
tile, new programs placed by the hardware as SMs free up). In between, two tiles per program.
This probe times the three, and the launcher's own choice, beside SDPA's cuDNN backend at every
point of the Hopper attention benchmark (``benchmarks/cases/attention_hopper.py``: batch 32 x 16
heads). ``ping-pong``: the launcher's programs with the two consumer warpgroups issuing their
matmuls in turns (``CONFIGS[d]["PINGPONG"]``), first checked in a child process (a hang is
reported, not waited for).

Method: per point, inputs ``torch.randn`` (seeded); each candidate's output is checked against
cuDNN's (``torch.testing.assert_close``, 2e-2 fp16, 4e-2 bf16) before it is timed; then
``PASSES`` interleaved passes of ``triton.testing.do_bench`` (warmup 25, rep 100, median) and
``do_bench_cudagraph`` (rep 20, median); a point keeps the median over passes and the spread
(max / min - 1). TFLOP/s = 4 * B * H * S^2 * D, half of it when causal; ``ratio_to_cudnn`` =
cuDNN's time / the candidate's, in the same pass and timing.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_persistent.py
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

from scripts.probe_common import environment, write_points  # noqa: E402

PASSES = 3
CANDIDATES = {  # name -> programs, from the number of tiles and of SMs (None: the launcher's)
    "launcher": lambda tiles, sms: None,
    "one per SM": lambda tiles, sms: sms,
    "two tiles per program": lambda tiles, sms: (tiles + 1) // 2,
    "one per tile": lambda tiles, sms: tiles,
    "ping-pong": lambda tiles, sms: None,  # the launcher's programs, CONFIGS[d]["PINGPONG"] on
}


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        for seq in spec["x_vals"]:
            yield {**spec["args"], "seq": seq}


def runner(ex, q, k, v, causal, programs, pingpong=False):
    """The example's launcher with ``programs(tiles, sms)`` programs; pingpong: with the
    consumers issuing their matmuls in turns (the config switched on for the call only)."""
    B, H, S, D = q.shape
    n = programs(B * H * (S // ex.BLOCK_M), ex._sm_count(q.device))
    cfg = ex.CONFIGS[D]

    def run():
        saved = cfg["PINGPONG"]
        cfg["PINGPONG"] = pingpong
        try:
            return ex.attention_hopper(q, k, v, causal, programs=n)
        finally:
            cfg["PINGPONG"] = saved
    return run


def pingpong_check() -> str:
    """Run the ping-pong kernel on small inputs against the fp32 reference, in this process;
    the parent runs it as a child with a timeout (a wrong mbarrier phase hangs the GPU)."""
    import attention_hopper as ex
    for dtype in (torch.float16, torch.bfloat16):
        for d in (64, 128):
            for causal in (False, True):
                q, k, v = (torch.randn(2, 3, 512, d, device="cuda", dtype=dtype) for _ in range(3))
                out = runner(ex, q, k, v, causal, lambda tiles, sms: 5, pingpong=True)()
                ref = ex.attention_torch(q, k, v, causal)
                torch.testing.assert_close(out, ref, rtol=3e-2, atol=3e-2)
                out = runner(ex, q, k, v, causal, lambda tiles, sms: tiles, pingpong=True)()
                torch.testing.assert_close(out, ref, rtol=3e-2, atol=3e-2)
    torch.cuda.synchronize()
    return "pass"


def callables(names, q, k, v, causal, smoke):
    """name -> a call that returns the output (the same tensor on each call for ours)."""
    if smoke:
        return dict.fromkeys(names, lambda: q)
    import attention_hopper as ex

    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa
    fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
    for name in names[1:]:
        fns[name] = runner(ex, q, k, v, causal, CANDIDATES[name], name == "ping-pong")
    return fns


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--pingpong-check", action="store_true", help="(the child process) check ping-pong only")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds: no new point starts after them (the rest are listed as skipped)")
    args = ap.parse_args()
    if args.pingpong_check:
        print(pingpong_check())
        return
    t0 = time.time()
    candidates = dict(CANDIDATES)
    pingpong = "not run (smoke)"
    if not args.smoke:
        import subprocess
        try:
            child = subprocess.run([sys.executable, __file__, "--out", str(args.out), "--pingpong-check"],
                                   capture_output=True, text=True, timeout=180)
            pingpong = "pass" if child.returncode == 0 else "FAIL: " + (child.stderr or child.stdout)[-400:]
        except subprocess.TimeoutExpired:
            pingpong = "hang: no result in 180 s"
        print("ping-pong check:", pingpong, flush=True)
        if pingpong != "pass":
            del candidates["ping-pong"]
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
        names = ["sdpa-cudnn", *candidates]
        shape = (BATCH, HEADS, seq, d) if not args.smoke else (1, 1, 128, d)
        gen = torch.Generator(device=device).manual_seed(seq)
        q, k, v = (torch.randn(shape, device=device, dtype=dt, generator=gen) for _ in range(3))
        fns, checks = callables(names, q, k, v, causal, args.smoke), {}
        ref = fns["sdpa-cudnn"]()
        tol = 2e-2 if dt == torch.float16 else 4e-2
        for name in names[1:]:
            try:
                torch.testing.assert_close(fns[name](), ref, rtol=tol, atol=tol)
                checks[name] = "pass"
            except AssertionError as err:
                checks[name] = "FAIL: " + str(err).splitlines()[0]
        del ref
        ms = {(n, g): [] for n in names for g in (False, True)}
        for _ in range(PASSES):
            for name in names:
                if checks.get(name, "pass") == "pass":
                    for graph in (False, True):
                        ms[(name, graph)].append(timing(fns[name], graph))
        flops = 4.0 * shape[0] * shape[1] * seq * seq * d * (0.5 if causal else 1.0)
        for name in names:
            row = {"candidate": name, **pt, "batch": shape[0], "heads": shape[1],
                   "check": checks.get(name, "reference")}
            for graph, key in ((False, "do_bench"), (True, "cudagraph")):
                runs = ms[(name, graph)]
                if not runs:
                    continue
                mid = sorted(runs)[len(runs) // 2]
                ref_runs = ms[("sdpa-cudnn", graph)]
                row[f"ms_{key}"] = round(mid, 5)
                row[f"tflops_{key}"] = round(flops / mid / 1e9, 1)
                row[f"spread_{key}"] = round(max(runs) / min(runs) - 1, 4)
                row[f"ratio_to_cudnn_{key}"] = round(
                    sorted(r / m for r, m in zip(ref_runs, runs, strict=True))[len(runs) // 2], 4)
            out.append(row)
            print(row, flush=True)
        del q, k, v, fns
        if not args.smoke:
            torch.cuda.empty_cache()
    header = {"probe": "benchmarks/evidence/attention/gluon_persistent.py",
              "kernels": "examples/attention_hopper.py", **environment(),
              "method": __doc__.split("Method: ")[1].split("\n\nUsage")[0].replace("\n", " "),
              "passes": PASSES, "pingpong_check": pingpong, "budget_s": args.budget,
              "spent_s": round(time.time() - t0, 1), "skipped": skipped}
    write_points(args.out / "gluon_persistent.json", header, out)


if __name__ == "__main__":
    main()
