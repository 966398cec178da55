"""Run the examples' benchmark specs and write tidy result files.

On a CUDA machine::

    python scripts/bench.py --all                    # every example
    python scripts/bench.py --example softmax        # one (or several) examples

measures the ceilings of this GPU (device-to-device copy, cuBLAS fp16/bf16 at
8192^3) and then, for each example, every (bench, x, provider) point of its
``BENCHMARKS``. Each provider's output is checked against the reference before
it is timed; a provider that fails the check is not recorded and the run exits
non-zero. Results go to ``benchmarks/results/<gpu>/<example>.csv`` with a
``<example>.meta.json`` holding the GPU, versions, date, timing method and the
ceilings measured in the same run. An example's files are replaced whole.

Without a GPU (CI), ``--tiny`` runs the same code path under Triton's
interpreter at the examples' ``tiny_x_vals``: every check, no timing, no files.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import importlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(EXAMPLES))

import results  # noqa: E402

WARMUP_MS, REP_MS = 25, 200  # do_bench's warm-up and repetition budgets
HOST_CALLS, HOST_REPEATS = 1000, 7  # host-side launch cost: calls per sample, samples
METHOD = (
    f"triton.testing.do_bench median (warmup={WARMUP_MS} ms, rep={REP_MS} ms, L2 flushed between reps); "
    f"CUDA-graph rows: do_bench_cudagraph median (rep={REP_MS} ms, no L2 flush); "
    f"'us' rows: host wall clock per call, median of {HOST_REPEATS} x {HOST_CALLS} back-to-back calls"
)


def example_names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


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


def check_output(out, ref, rtol: float, atol: float) -> None:
    import torch

    if isinstance(out, (tuple, list)):
        for o, r in zip(out, ref, strict=True):
            check_output(o, r, rtol, atol)
        return
    if out.dtype != ref.dtype:
        out, ref = out.double(), ref.double()
    torch.testing.assert_close(out, ref, rtol=rtol, atol=atol)


def time_device(fn, cudagraph: bool) -> tuple[float, float, float]:
    """(p50, p20, p80) in ms."""
    from triton.testing import do_bench, do_bench_cudagraph

    if cudagraph:
        p50 = do_bench_cudagraph(fn, rep=REP_MS, return_mode="median")
        return p50, p50, p50  # do_bench_cudagraph reports one statistic
    p50, p20, p80 = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, quantiles=[0.5, 0.2, 0.8])
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
    q = statistics.quantiles(samples, n=10)
    return statistics.median(samples), q[1], q[7]


def measure_ceilings() -> dict:
    import torch
    from triton.testing import do_bench

    ceilings = {}
    n = (2 << 30) // 4  # 2 GiB of fp32
    buffers = {"src": torch.randn(n, device="cuda")}
    buffers["dst"] = torch.empty_like(buffers["src"])
    ms = do_bench(lambda: buffers["dst"].copy_(buffers["src"]), warmup=WARMUP_MS, rep=REP_MS, return_mode="median")
    ceilings["copy_gbps"] = round(2 * n * 4 / ms / 1e6, 1)
    buffers.clear()
    s = 8192
    for dtype, key in ((torch.float16, "cublas_fp16_tflops"), (torch.bfloat16, "cublas_bf16_tflops")):
        a = torch.randn(s, s, device="cuda", dtype=dtype)
        b = torch.randn(s, s, device="cuda", dtype=dtype)
        ms = do_bench(lambda a=a, b=b: torch.matmul(a, b), warmup=WARMUP_MS, rep=REP_MS, return_mode="median")
        ceilings[key] = round(2 * s**3 / ms / 1e9, 1)
    torch.cuda.empty_cache()
    return ceilings


def run_example(name: str, device, tiny: bool, only_bench: str | None = None) -> tuple[list[dict], list[str]]:
    """Run one example's benchmarks. Returns (rows, failures)."""
    import torch

    mod = importlib.import_module(name)
    specs = getattr(mod, "BENCHMARKS", None)
    if not specs or not hasattr(mod, "bench_case"):
        return [], [f"{name}: no BENCHMARKS / bench_case (see CONTRIBUTING.md)"]
    rows, failures = [], []
    for spec in specs:
        if only_bench and spec["name"] != only_bench:
            continue
        xs = spec["tiny_x_vals"] if tiny else spec["x_vals"]
        calls = spec.get("calls_per_fn", {})
        for x in xs:
            for provider in spec["providers"]:
                label = f"{name}:{spec['name']} {spec['x_name']}={x} {provider}"
                if tiny and provider == "torch.compile":
                    # On the CPU Inductor builds C++ (~10 s a shape): that checks torch, not our code path.
                    print(f"skip {label}: torch.compile is checked on the GPU run", flush=True)
                    continue
                try:
                    case = mod.bench_case(spec["name"], provider, x, device=device, **spec.get("args", {}))
                    out = case["fn"]()
                    check_output(out, case["ref"](), case["rtol"], case["atol"])
                except Exception as err:  # noqa: BLE001 - report every failing point, record none of them
                    failures.append(f"{label}: {type(err).__name__}: {err}")
                    traceback.print_exc()
                    continue
                if tiny:
                    print(f"ok   {label}", flush=True)
                    continue
                timings = [False] + ([True] if spec.get("cudagraph") and spec["metric"] != "us" else [])
                for cudagraph in timings:
                    if spec["metric"] == "us":
                        p50, p20, p80 = time_host(case["fn"], calls.get(provider, 1))
                        value = p50 * 1e3
                    else:
                        p50, p20, p80 = time_device(case["fn"], cudagraph)
                        scale = 1e6 if spec["metric"] == "GB/s" else 1e9
                        value = case["work"] / p50 / scale
                    row = {
                        "example": name, "bench": spec["name"], "x_name": spec["x_name"], "x": x,
                        "provider": provider, "timing": "cudagraph" if cudagraph else "do_bench",
                        "metric": spec["metric"], "value": round(value, 3),
                        "ms_p50": f"{p50:.6g}", "ms_p20": f"{p20:.6g}", "ms_p80": f"{p80:.6g}",
                        "work": case["work"],
                    }
                    rows.append(row)
                    print(f"{row['value']:>12.2f} {spec['metric']:<8} {row['timing']:<9} {label}", flush=True)
                del case, out
                torch.cuda.empty_cache()
    if hasattr(mod, "measure_rows") and not only_bench:
        if tiny:
            print(f"skip {name}: measure_rows needs a GPU", flush=True)
        else:
            for row in mod.measure_rows(device):
                rows.append({"example": name, **row})
    return rows, failures


def bench_specs(name: str) -> list[dict]:
    mod = importlib.import_module(name)
    keep = ("name", "title", "x_name", "metric", "ceiling", "providers", "cudagraph")
    specs = [{k: s.get(k) for k in keep} for s in getattr(mod, "BENCHMARKS", [])]
    specs += [{k: s.get(k) for k in keep} for s in getattr(mod, "EXTRA_BENCHMARKS", [])]
    return specs


def write_results(out_dir: Path, name: str, rows: list[dict], meta: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"{name}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=results.COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in results.COLUMNS})
    (out_dir / f"{name}.meta.json").write_text(json.dumps({**meta, "benchmarks": bench_specs(name)}, indent=1) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every example in examples/")
    parser.add_argument("--example", action="append", default=[], help="an example's file stem (repeatable)")
    parser.add_argument("--bench", help="only this bench (a dry run: nothing is written)")
    parser.add_argument("--tiny", action="store_true", help="interpreter-sized check of the code path, no timing")
    parser.add_argument("--out", type=Path, default=results.RESULTS_DIR, help="results folder")
    args = parser.parse_args(argv)
    names = example_names() if args.all else args.example
    unknown = sorted(set(names) - set(example_names()))
    if not names or unknown:
        parser.error(f"name examples with --example or use --all (unknown: {unknown})")

    import torch

    on_gpu = torch.cuda.is_available()
    if not on_gpu and not args.tiny:
        parser.error("no CUDA device: timing needs a GPU (use --tiny for the interpreter check)")
    if not on_gpu:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    device = torch.device("cuda" if on_gpu else "cpu")

    meta = None
    if on_gpu and not args.tiny:
        import triton

        props = torch.cuda.get_device_properties(device)
        print("measuring ceilings ...", flush=True)
        meta = {
            "gpu": props.name, "sm_count": props.multi_processor_count, "driver": driver_version(),
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "method": METHOD, "ceilings": measure_ceilings(),
        }
        print(json.dumps(meta["ceilings"]), flush=True)

    all_failures = []
    for name in names:
        t0 = time.time()
        rows, failures = run_example(name, device, args.tiny, args.bench)
        all_failures += failures
        if meta is not None and not args.bench:
            if failures:
                print(f"NOT WRITING {name}: {len(failures)} failing point(s)", flush=True)
            else:
                write_results(args.out / gpu_slug(meta["gpu"]), name, rows, meta)
        print(f"== {name}: {len(rows)} rows, {len(failures)} failures, {time.time() - t0:.0f} s", flush=True)
    for f in all_failures:
        print("FAIL", f)
    return 1 if all_failures else 0


if __name__ == "__main__":
    sys.exit(main())
