"""Run the stories' benchmark cases and write tidy result files.

On a CUDA machine::

    python -m scripts.bench --all                    # every example (about 6-7 minutes on an H200)
    python -m scripts.bench --example softmax        # one (or several) examples
    python -m scripts.bench --all --passes 5         # more passes per point (default 3)

measures the ceilings of this GPU (device-to-device copy, cuBLAS fp16/bf16 at
8192^3) and then, for each story, every (bench, x, provider) point of the
``BENCHMARKS`` of its case file, ``benchmarks/cases/<story>.py`` (which imports the
kernels from ``examples/<story>.py``; its ``bench_case`` builds one point's inputs
and callable; an optional ``measure_rows`` adds rows it times itself):

* For each x, every provider's case is built and its output checked against the
  reference before anything is timed; a provider that fails the check is not
  recorded and the run exits non-zero. A ``torch.compile`` peer (a case with a
  ``"compile"`` key) is compiled here, afresh for each x, with ``dynamic=False``
  and after ``torch.compiler.reset()``: dynamo keeps its compiled code on the
  function's code object, so one compiled function reused across sizes turns
  dynamic after the second size and falls back to eager after 8 recompiles.
  Every provider is warmed (the output check plus ``WARM_CALLS`` calls) before timing.
* The providers are timed in interleaved passes (pass 1 over all providers, then
  pass 2, ...; ``--passes``, at least 3 by default). Each device-timed point is
  timed with ``do_bench`` (L2 flushed, median) and with ``do_bench_cudagraph``
  (CUDA-graph replay, median) in every pass. The CSV keeps the median over passes
  as the row's time and ``value``, ``spread`` = max / min - 1 over the passes, and
  ``host_bound`` on the do_bench row (see ``results.is_host_bound``). A spec's
  ``"cudagraph": True`` only asks its plot to draw the CUDA-graph series too; a spec's
  ``"cudagraph_timing": False`` (or ``--no-graph REGEX``) means no CUDA-graph capture is
  even tried for that bench (this harness does not capture backward passes: the autograd engine
  ran them outside its capture; and a failed capture
  breaks the CUDA RNG for every later point).
* ``"metric": "us"`` benches are host wall-clock costs per call (``timing=host_wall``).
* Every device-timed point also gets a ``host_call`` row (metric ``us``): the host time of one
  call alone, the CPU time from entering the call to its return, calls issued back to back on an
  idle queue (``time_host_call``). It is what a user's Python loop pays per call before the GPU
  even starts, beside the kernel time: the launcher's checks, allocations and launches.

Results go to ``benchmarks/results/<gpu>/<story>.csv`` with a ``<story>.meta.json``
holding the GPU, versions, date, method, the ceilings measured in the same run, how each
provider was built (``peers``), the sha256 of the two files measured (``sources``: the
example and its case file), of their measured code (``code_sha256``: comments and
docstrings left out, see ``results.measured_code``) and the git commit. Titles and targets
are not here: ``benchmarks/presentation.yml``. A story's files are replaced whole.

Without a GPU (CI), ``--tiny`` runs the same code path under Triton's
interpreter at the cases' ``tiny_x_vals``: every check, no timing, no files
(a ``torch.compile`` peer is checked uncompiled: Inductor on a CPU builds C++).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

from scripts import results

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# Per pass. 30 ms of do_bench repetitions give ~35 samples of the longest memory-bound kernels here
# (~0.8 ms with the L2 flush), ~15 of the 8192^3 matmuls and hundreds of the short ones: the old
# single-pass files show p20..p80 within +-0.5% of the median at the large sizes, so the median of
# one pass is good to well under the 5% a re-run must reproduce; what varies between runs is what
# the passes measure (spread). The warm-up is short because every provider is warmed before its
# first pass and the passes keep the GPU busy. Budget: ~670 device points x 3 passes x (~37 ms
# do_bench + ~27 ms graph) is ~130 s of timing for --all.
WARMUP_MS, REP_MS = 5, 30
GRAPH_REP_MS = 2  # do_bench_cudagraph: 10 replays of a graph of about 2 ms of calls (sized from plain launches)
PASSES = 3
WARM_CALLS = 3  # calls after the output check (which also compiles) and before timing
HOST_CALLS, HOST_REPEATS = 1000, 3  # host-side cost: calls per sample, samples per pass
# host_call rows: enough calls for ~HOST_CALL_MS of GPU work, between HOST_CALL_MIN and _MAX calls
HOST_CALL_MS, HOST_CALL_MIN, HOST_CALL_MAX = 40, 5, 200


def method(passes: int) -> str:
    return (
        f"{passes} interleaved passes, median over passes (spread = max/min - 1 over passes); per pass: "
        f"triton.testing.do_bench median (warmup={WARMUP_MS} ms, rep={REP_MS} ms, L2 flushed before each call) and "
        f"do_bench_cudagraph median (rep={GRAPH_REP_MS} ms, 10 graph replays, L2 not flushed); "
        f"host_bound: do_bench > {results.HOST_BOUND_RATIO:.2f} x CUDA-graph time and do_bench < "
        f"{1e3 * results.HOST_BOUND_MAX_MS:.0f} us, or do_bench > {results.HOST_BOUND_LONG_RATIO:.2f} x CUDA-graph "
        f"time (derived again when the files are read); torch.compile peers: dynamic=False, compiled per shape after "
        f"torch.compiler.reset(), warmed before timing; 'us' rows (timing=host_wall): host wall clock per call, "
        f"median of {HOST_REPEATS} x {HOST_CALLS} back-to-back calls per pass; host_call rows: host time of one "
        f"call (perf_counter around the call alone), calls issued back to back after a synchronize "
        f"({HOST_CALL_MIN}-{HOST_CALL_MAX} calls, about {HOST_CALL_MS} ms of GPU work), first pass only, median"
    )


def example_names() -> list[str]:
    """The stories: every example (each has a case file, ``benchmarks/cases/<story>.py``)."""
    return [p.stem for p in results.example_files(EXAMPLES)]


def gpu_slug(name: str) -> str:
    m = re.search(r"(H200|H100|A100|B200|L40S|L4|A10G|RTX \w+)", name)
    return (m.group(1) if m else name).lower().replace(" ", "-")


def driver_version() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def git_state(path: Path | None = None) -> tuple[str, bool | None]:
    """(commit, whether ``path`` (default: any tracked file) differs from it or is untracked);
    ("unknown", None) without git. With a path, "clean" means the commit holds exactly the
    file that was measured. BENCH_GIT_COMMIT, when set, names the commit instead: the lent GPU machine
    gets the working tree without its .git (benchmarks/gpu_background.sh passes the commit it was
    started from), and any .git found there is a leftover of an older copy."""
    if os.environ.get("BENCH_GIT_COMMIT"):
        return os.environ["BENCH_GIT_COMMIT"], None  # whether a file differs is then unknown: the sources' sha256 say
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                timeout=20, check=True).stdout.strip()
        which = ["--", str(path)] if path is not None else ["--untracked-files=no"]
        status = subprocess.run(["git", "status", "--porcelain", *which], cwd=ROOT,
                                capture_output=True, text=True, timeout=20, check=True).stdout
        return commit or "unknown", bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        return "unknown", None


def check_output(out, ref, rtol: float, atol: float) -> None:
    import torch

    if isinstance(out, (tuple, list)):
        for o, r in zip(out, ref, strict=True):
            check_output(o, r, rtol, atol)
        return
    if out.dtype != ref.dtype:
        out, ref = out.double(), ref.double()
    torch.testing.assert_close(out, ref, rtol=rtol, atol=atol)


def _quantile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def time_do_bench(fn) -> tuple[float, float, float]:
    """(p50, p20, p80) in ms: CUDA events around each call, L2 flushed before it."""
    from triton.testing import do_bench

    p50, p20, p80 = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, quantiles=[0.5, 0.2, 0.8])
    return p50, p20, p80


def time_graph(fn) -> tuple[float, float, float]:
    """(p50, p20, p80) in ms per call, over do_bench_cudagraph's 10 replays (no host cost, warm L2)."""
    import torch
    from triton.testing import do_bench_cudagraph

    torch.cuda.synchronize()  # its warm-up runs on a side stream that does not wait for queued work
    p50, p20, p80 = do_bench_cudagraph(fn, rep=GRAPH_REP_MS, quantiles=[0.5, 0.2, 0.8])
    return p50, p20, p80


def time_host(fn, calls_per_fn: int = 1) -> tuple[float, float, float]:
    """Host-side cost of one call in ms (p50, p20, p80): back-to-back calls, one sync at the end."""
    import torch

    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(HOST_REPEATS):
        t0 = time.perf_counter()
        for _ in range(HOST_CALLS):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e3 / (HOST_CALLS * calls_per_fn))
    return results.median(samples), _quantile(samples, 0.2), _quantile(samples, 0.8)


def time_host_call(fn, gpu_ms: float) -> tuple[float, float, float]:
    """Host time of one call in ms (p50, p20, p80): perf_counter around each call alone. The queue
    is drained first and the calls (about HOST_CALL_MS of GPU work) are issued back to back, so a
    call waits neither for the GPU nor for a full launch queue: what is timed is the host's own work
    (checks, allocations, launches). A call that synchronizes inside includes its GPU time."""
    import torch

    calls = max(HOST_CALL_MIN, min(HOST_CALL_MAX, int(HOST_CALL_MS / max(gpu_ms, 1e-3))))
    torch.cuda.synchronize()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return results.median(samples), _quantile(samples, 0.2), _quantile(samples, 0.8)


def measure_ceilings(passes: int = PASSES) -> dict:
    import torch
    from triton.testing import do_bench

    def ms(fn) -> float:
        return results.median(do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median") for _ in range(passes))

    ceilings = {}
    n = (2 << 30) // 4  # 2 GiB of fp32
    buffers = {"src": torch.randn(n, device="cuda")}
    buffers["dst"] = torch.empty_like(buffers["src"])
    ceilings["copy_gbps"] = round(2 * n * 4 / ms(lambda: buffers["dst"].copy_(buffers["src"])) / 1e6, 1)
    buffers.clear()
    s = 8192
    for dtype, key in ((torch.float16, "cublas_fp16_tflops"), (torch.bfloat16, "cublas_bf16_tflops")):
        a = torch.randn(s, s, device="cuda", dtype=dtype)
        b = torch.randn(s, s, device="cuda", dtype=dtype)
        ceilings[key] = round(2 * s**3 / ms(lambda a=a, b=b: torch.matmul(a, b)) / 1e9, 1)
    torch.cuda.empty_cache()
    return ceilings


# --- turning passes into rows (pure: unit-tested with made-up numbers) ---------------------------

def _flag(value: bool | None) -> str:
    return "" if value is None else str(bool(value)).lower()


Times = list[tuple[float, float, float]]  # per pass: (p50, p20, p80) in ms


def point_rows(base: dict, metric: str, work: float, samples: dict[str, Times]) -> list[dict]:
    """The CSV rows of one (bench, x, provider) point from its per-pass (p50, p20, p80) times in ms,
    keyed by timing ("do_bench", "cudagraph", "host_wall" or "host_call"). The row's time is the median over
    the passes, ``spread`` their max / min - 1, ``host_bound`` compares do_bench with the graph time. A
    host_call row's metric is always ``us`` (host time per call)."""
    graph = samples.get("cudagraph") or []
    graph_ms = results.median([s[0] for s in graph]) if graph else None
    rows = []
    for timing in ("do_bench", "cudagraph", "host_wall", "host_call"):
        passes = samples.get(timing) or []
        if not passes:
            continue
        ms = results.median([s[0] for s in passes])
        if metric == "us" or timing == "host_call":
            value = ms * 1e3
        else:
            value = work / ms / (1e6 if metric == "GB/s" else 1e9)
        host_bound = {"do_bench": results.is_host_bound(ms, graph_ms), "cudagraph": False}.get(timing)
        sp = results.spread([s[0] for s in passes])
        rows.append({
            **base, "timing": timing, "metric": "us" if timing == "host_call" else metric,
            "value": round(value, 3),
            "ms_p50": f"{ms:.6g}", "ms_p20": f"{results.median([s[1] for s in passes]):.6g}",
            "ms_p80": f"{results.median([s[2] for s in passes]):.6g}", "work": work,
            "host_bound": _flag(host_bound), "spread": "" if sp is None else f"{sp:.4f}",
        })
    return rows


def merge_passes(passes: list[list[dict]]) -> list[dict]:
    """Rows that an example's ``measure_rows`` returned in several passes, one row per point:
    median value and times, spread of the times (of the values where no time was recorded)."""
    groups: dict[tuple, list[dict]] = {}
    for rows in passes:
        for row in rows:
            key = (row["bench"], str(row["x"]), row["provider"], row["timing"])
            groups.setdefault(key, []).append(row)
    merged = []
    for group in groups.values():
        times = [float(r["ms_p50"]) for r in group]
        values = [float(r["value"]) for r in group]
        sp = results.spread(times if min(times) > 0 else values)
        merged.append({
            **group[0],
            "value": round(results.median(values), 3),
            **{k: f"{results.median([float(r[k]) for r in group]):.6g}" for k in ("ms_p50", "ms_p20", "ms_p80")},
            "host_bound": group[0].get("host_bound", ""),
            "spread": "" if sp is None else f"{sp:.4f}",
        })
    return merged


# --- running one example ------------------------------------------------------------------------

def _describe(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def build_fn(case: dict):
    """(callable, how it was built) for one case. A case with "compile" is a torch.compile peer:
    compiled here, static (dynamic=False), for this shape only; the caller resets dynamo first."""
    if "compile" not in case:
        return case["fn"], f"as bench_case returns it, warmed by the output check and {WARM_CALLS} calls"
    import torch

    options = dict(case.get("compile_options") or {})
    compiled = torch.compile(case["compile"], dynamic=False, **options)
    inputs = tuple(case["inputs"])
    opts = "".join(f", {k}={v!r}" for k, v in sorted(options.items()))
    how = (f"torch.compile({_describe(case['compile'])}, dynamic=False{opts}), built afresh for each x after "
           f"torch.compiler.reset(), warmed by the output check (which compiles it) and {WARM_CALLS} calls")
    return (lambda: compiled(*inputs)), how


def load_case(name: str):
    """Import ``benchmarks/cases/<name>.py``, the benchmark of the story ``name`` (importing the
    ``benchmarks.cases`` package puts examples/ on sys.path, so the case imports its example as
    the module ``name``, the same module the tests import)."""
    return importlib.import_module(f"benchmarks.cases.{name}")


def no_graph_timing(spec: dict, no_graph: tuple[str, ...] = ()) -> bool:
    """Whether a bench is timed with do_bench only, its CUDA-graph capture never tried: its spec says
    ``"cudagraph_timing": False`` (a backward through torch.autograd runs on the autograd engine's own
    stream, outside the capture, and a failed capture broke the CUDA RNG for every later point of the
    run), or its name full-matches a ``--no-graph`` pattern."""
    return spec.get("cudagraph_timing") is False or any(re.fullmatch(p, spec["name"]) for p in no_graph)


def run_example(name: str, device, tiny: bool, only_bench: str | None = None, passes: int = PASSES,
                peers: dict | None = None, no_graph_patterns: tuple[str, ...] = ()) -> tuple[list[dict], list[str]]:
    """Run one example's benchmarks. Returns (rows, failures); fills ``peers`` (bench -> provider ->
    how it was built) when given."""
    import torch

    try:
        mod = load_case(name)
    except ModuleNotFoundError as err:
        if err.name != f"benchmarks.cases.{name}":
            raise
        return [], [f"{name}: no benchmarks/cases/{name}.py (see CONTRIBUTING.md)"]
    specs = getattr(mod, "BENCHMARKS", None)
    if not specs or not hasattr(mod, "bench_case"):
        return [], [f"{name}: benchmarks/cases/{name}.py has no BENCHMARKS / bench_case (see CONTRIBUTING.md)"]
    rows, failures = [], []
    for spec in specs:
        if only_bench and spec["name"] != only_bench:
            continue
        xs = spec["tiny_x_vals"] if tiny else spec["x_vals"]
        calls = spec.get("calls_per_fn", {})
        metric = spec["metric"]
        for x in xs:
            ready, reset = {}, False  # provider -> (fn, case), in spec order
            for provider in spec["providers"]:
                label = f"{name}:{spec['name']} {spec['x_name']}={x} {provider}"
                try:
                    case = mod.bench_case(spec["name"], provider, x, device=device, **spec.get("args", {}))
                    if "compile" in case and tiny:
                        # On the CPU Inductor builds C++ (~10 s a shape): check the peer uncompiled.
                        check_output(case["compile"](*case["inputs"]), case["ref"](), case["rtol"], case["atol"])
                        print(f"ok   {label} (uncompiled; compiled on the GPU run)", flush=True)
                        continue
                    if "compile" in case and not reset:
                        torch.compiler.reset()  # a fresh dynamo cache: no recompile limit, no dynamic shapes
                        reset = True
                    fn, how = build_fn(case)
                    check_output(fn(), case["ref"](), case["rtol"], case["atol"])
                    if not tiny:
                        for _ in range(WARM_CALLS):
                            fn()
                        torch.cuda.synchronize()
                except Exception as err:  # noqa: BLE001 - report every failing point, record none of them
                    failures.append(f"{label}: {type(err).__name__}: {err}")
                    traceback.print_exc()
                    continue
                if tiny:
                    print(f"ok   {label}", flush=True)
                    continue
                if peers is not None:
                    peers.setdefault(spec["name"], {})[provider] = how
                ready[provider] = (fn, case)
            if tiny or not ready:
                continue
            samples = {p: {"do_bench": [], "cudagraph": [], "host_wall": [], "host_call": []} for p in ready}
            broken = set()  # providers whose timing failed: not recorded
            no_graph = set()  # providers that cannot be captured in a CUDA graph
            if no_graph_timing(spec, no_graph_patterns):
                no_graph = set(ready)  # not even tried (a failed capture can poison later ones)
            for _ in range(passes):
                for provider, (fn, _case) in ready.items():
                    if provider in broken:
                        continue
                    label = f"{name}:{spec['name']} {spec['x_name']}={x} {provider}"
                    try:
                        if metric == "us":
                            samples[provider]["host_wall"].append(time_host(fn, calls.get(provider, 1)))
                            continue
                        samples[provider]["do_bench"].append(time_do_bench(fn))
                        if len(samples[provider]["do_bench"]) == 1:  # first pass: the host's own time per call
                            gpu_ms = samples[provider]["do_bench"][0][0]
                            samples[provider]["host_call"].append(time_host_call(fn, gpu_ms))
                    except Exception as err:  # noqa: BLE001
                        failures.append(f"{label}: timing failed: {type(err).__name__}: {err}")
                        traceback.print_exc()
                        broken.add(provider)
                        continue
                    if provider in no_graph:
                        continue
                    try:
                        samples[provider]["cudagraph"].append(time_graph(fn))
                    except Exception as err:  # noqa: BLE001 - some calls cannot be captured: say so, go on
                        print(f"note {label}: no CUDA-graph time ({type(err).__name__}: {err})", flush=True)
                        torch.cuda.synchronize()
                        no_graph.add(provider)
                        samples[provider]["cudagraph"] = []
            for provider, (_fn, case) in ready.items():
                if provider in broken:
                    continue
                base = {"example": name, "bench": spec["name"], "x_name": spec["x_name"], "x": x,
                        "provider": provider}
                for row in point_rows(base, metric, case["work"], samples[provider]):
                    rows.append(row)
                    flags = " host-bound" if row["host_bound"] == "true" else ""
                    if row["spread"] and float(row["spread"]) > results.SPREAD_FLAG:
                        flags += f" spread {100 * float(row['spread']):.1f}%"
                    print(f"{row['value']:>12.2f} {metric:<8} {row['timing']:<9} "
                          f"{name}:{spec['name']} {spec['x_name']}={x} {provider}{flags}", flush=True)
            del ready, samples
            torch.cuda.empty_cache()
    if hasattr(mod, "measure_rows") and not only_bench:
        if tiny:
            print(f"skip {name}: measure_rows needs a GPU", flush=True)
        else:
            measured = [mod.measure_rows(device) for _ in range(passes)]
            rows += [{"example": name, **row} for row in merge_passes(measured)]
            if peers is not None:
                peers["measure_rows"] = {"*": f"the case's own measure_rows(), called in {passes} passes; "
                                              "each row's timing column names its clock"}
    return rows, failures


def write_results(out_dir: Path, name: str, rows: list[dict], meta: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"{name}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=results.COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in results.COLUMNS})
    (out_dir / f"{name}.meta.json").write_text(results.dump_meta(meta))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every story (examples/<story>.py)")
    parser.add_argument("--example", action="append", default=[],
                        help="a story: the file stem of its example and case (repeatable)")
    parser.add_argument("--bench", help="only this bench (a dry run: nothing is written)")
    parser.add_argument("--tiny", action="store_true", help="interpreter-sized check of the code path, no timing")
    parser.add_argument("--passes", type=int, default=PASSES, help=f"interleaved passes per point (default {PASSES})")
    parser.add_argument("--out", type=Path, default=results.RESULTS_DIR, help="results folder")
    parser.add_argument("--no-graph", action="append", default=[], metavar="REGEX",
                        help="benches (full-match of the name) timed with do_bench only, no CUDA-graph capture: a "
                             "backward through torch.autograd runs on the autograd engine's stream, outside the "
                             "capture, and a failed capture breaks the CUDA RNG for the rest of the run")
    args = parser.parse_args(argv)
    names = example_names() if args.all else args.example
    unknown = sorted(set(names) - set(example_names()))
    if not names or unknown:
        parser.error(f"name examples with --example or use --all (unknown: {unknown})")
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    for pattern in args.no_graph:
        try:
            re.compile(pattern)
        except re.error as err:
            parser.error(f"--no-graph {pattern!r} is not a regular expression: {err}")
    if args.no_graph:  # a typo would match nothing and the capture would be tried after all
        benches = [spec["name"] for name in names for spec in getattr(load_case(name), "BENCHMARKS", [])]
        for pattern in args.no_graph:
            if not any(re.fullmatch(pattern, b) for b in benches):
                parser.error(f"--no-graph {pattern!r} matches no bench of {names}")
    if args.passes < 3 and not args.tiny:
        print(f"warning: {args.passes} pass(es): the site's results need at least 3 for a spread", flush=True)

    import torch

    on_gpu = torch.cuda.is_available()
    if not on_gpu and not args.tiny:
        parser.error("no CUDA device: timing needs a GPU (use --tiny for the interpreter check)")
    if not on_gpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    device = torch.device("cuda" if on_gpu else "cpu")

    meta = None
    started = time.time()
    if on_gpu and not args.tiny:
        import triton

        props = torch.cuda.get_device_properties(device)
        commit, dirty = git_state()
        print("measuring ceilings ...", flush=True)
        meta = {
            "gpu": props.name, "sm_count": props.multi_processor_count, "driver": driver_version(),
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "method": method(args.passes),
            "passes": args.passes,
            "timing": {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "graph_rep_ms": GRAPH_REP_MS,
                       "warm_calls": WARM_CALLS, "host_calls": HOST_CALLS, "host_repeats": HOST_REPEATS,
                       "host_bound_ratio": results.HOST_BOUND_RATIO,
                       "host_bound_max_ms": results.HOST_BOUND_MAX_MS,
                       "host_bound_long_ratio": results.HOST_BOUND_LONG_RATIO},
            "git_commit": commit, "git_dirty": dirty,
            "runner_sha256": results.sha256_of(Path(__file__)),
            "ceilings": measure_ceilings(args.passes),
        }
        print(json.dumps(meta["ceilings"]), flush=True)

    all_failures = []
    for name in names:
        t0 = time.time()
        files = results.story_files(name)  # the example and its case file: what this run measures
        sources = [p.read_bytes() for p in files]
        shas = {p.relative_to(ROOT).as_posix(): hashlib.sha256(b).hexdigest()
                for p, b in zip(files, sources, strict=True)}
        code_sha256 = results.code_sha256(sources)
        date = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        peers: dict = {}
        rows, failures = run_example(name, device, args.tiny, args.bench, args.passes, peers, tuple(args.no_graph))
        all_failures += failures
        if meta is not None and not args.bench:
            if failures:
                print(f"NOT WRITING {name}: {len(failures)} failing point(s)", flush=True)
            elif any(results.sha256_of(ROOT / path) != sha for path, sha in shas.items()):
                all_failures.append(f"{name}: {', '.join(shas)} changed during its run")
                print(f"NOT WRITING {name}: its example or case changed during the run", flush=True)
            else:
                dirty = [git_state(ROOT / path)[1] for path in shas]  # False: git_commit holds these exact files
                source_dirty = None if None in dirty else any(dirty)
                skipped = [s["name"] for s in load_case(name).BENCHMARKS if no_graph_timing(s, tuple(args.no_graph))]
                how = (f"; no CUDA-graph timing for {skipped} (spec cudagraph_timing False or --no-graph: this "
                       "harness does not capture backward passes)" if skipped else "")
                write_results(args.out / gpu_slug(meta["gpu"]), name, rows,
                              {**meta, "method": meta["method"] + how, "date": date, "sources": shas,
                               "code_sha256": code_sha256, "peers": peers, "source_dirty": source_dirty})
        print(f"== {name}: {len(rows)} rows, {len(failures)} failures, {time.time() - t0:.0f} s", flush=True)
    print(f"== total: {len(names)} example(s), {time.time() - started:.0f} s", flush=True)
    for f in all_failures:
        print("FAIL", f)
    return 1 if all_failures else 0


if __name__ == "__main__":
    sys.exit(main())
