"""Probe: why do the large matmul points move by more than 5% between two benchmark runs?

The reproduction check (scripts/compare_runs.py, run 9) found 17 of 934 kernel-time points
outside 5%, all but one of them matmuls of 4096^3 to 8192^3 (1-2 ms, 600-750 TFLOP/s). Two
candidate causes, measured here with the repository's own matmul:

1. The autotuner picks a different config from run to run: each tuning times every config
   for about 20 ms (do_bench_cudagraph). The probe clears the tuner's cache and tunes again,
   five times per shape, recording the config chosen and every config's time.
2. The GPU's speed moves under sustained tensor-core load: nvidia-smi samples the SM clock,
   power draw, power limit, temperature and the active clock-event reasons every 50 ms
   while each provider runs back to back for several seconds; the kernel time of every
   chunk of calls is recorded beside them.

Usage: python benchmarks/cases/matmul_variation.py [OUT_DIR]   (needs CUDA; about 2 minutes)
Writes OUT_DIR/matmul_variation.json (default: the current folder; one line per top-level key) and
prints a summary. The site's copy, which scripts/expressions.py renders on the Benchmarks overview,
is benchmarks/evidence/overview/run10/matmul_variation.json (run 10).
"""

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import matmul as mm  # noqa: E402
import triton  # noqa: E402

FIELDS = ["clocks.sm", "power.draw", "power.limit", "temperature.gpu", "clocks_event_reasons.active"]


def start_sampler(path: Path) -> subprocess.Popen:
    fields = FIELDS
    probe = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True)
    if probe.returncode != 0:  # older name of the last field
        fields = FIELDS[:-1] + ["clocks_throttle_reasons.active"]
    return subprocess.Popen(["nvidia-smi", f"--query-gpu=timestamp,{','.join(fields)}",
                             "--format=csv,noheader,nounits", "-lms", "50"],
                            stdout=path.open("w"), stderr=subprocess.STDOUT)


def read_samples(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 6:
            continue
        try:
            out.append({"t": time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S"))
                        + float("0." + parts[0].split(".")[1]),
                        "sm_mhz": float(parts[1]), "power_w": float(parts[2]), "limit_w": float(parts[3]),
                        "temp_c": float(parts[4]), "reasons": parts[5]})
        except (ValueError, IndexError):
            continue
    return out


def retune(shape: int, dtype: torch.dtype, kernel: str, times: int = 5) -> list[dict]:
    a = torch.randn(shape, shape, device="cuda", dtype=dtype)
    b = torch.randn(shape, shape, device="cuda", dtype=dtype) / shape**0.5
    tuner = mm.matmul_tma_kernel_tuned if kernel == "tma" else mm.matmul_kernel_tuned
    picks = []
    for _ in range(times):
        tuner.cache.clear()
        mm.matmul(a, b, group_m=8, kernel=kernel)
        torch.cuda.synchronize()
        timings = {str(c): [round(float(v), 5) for v in (t if isinstance(t, (list, tuple)) else [t])]
                   for c, t in getattr(tuner, "configs_timings", {}).items()}
        best = next(iter(tuner.cache.values()))
        picks.append({"best": str(best), "timings_ms": timings})
    return picks


def sustained(fn, seconds: float, chunk: int = 10) -> list[dict]:
    """Back-to-back calls for `seconds`; the event time per call of every chunk, with host time."""
    out, end = [], time.time() + seconds
    while time.time() < end:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(chunk):
            fn()
        stop.record()
        stop.synchronize()
        out.append({"t": time.time(), "ms": start.elapsed_time(stop) / chunk})
    return out


def main() -> int:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    out_dir.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        print("needs CUDA")
        return 1
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "retune": {}, "sustained": {}}

    t0 = time.time()
    for shape in (8192, 4096):
        for kernel in ("pointer", "tma"):
            key = f"bf16 {shape} {kernel}"
            result["retune"][key] = picks = retune(shape, torch.bfloat16, kernel)
            print(f"retune {key}: {[p['best'] for p in picks]}  ({time.time() - t0:.0f} s)", flush=True)

    samples_path = out_dir / "nvidia_smi_samples.csv"
    sampler = start_sampler(samples_path)
    try:
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 8192**0.5
        providers = {"cublas": lambda: torch.matmul(a, b),
                     "triton-grouped": lambda: mm.matmul(a, b, group_m=8, kernel="pointer"),
                     "triton-tma": lambda: mm.matmul(a, b, group_m=8, kernel="tma")}
        for fn in providers.values():
            fn()
        torch.cuda.synchronize()
        phases = []
        for rnd in range(2):
            for name, fn in providers.items():
                time.sleep(2.0)  # idle: let the clock recover
                t_start = time.time()
                chunks = sustained(fn, 6.0)
                phases.append({"provider": name, "round": rnd, "start": t_start, "end": time.time(),
                               "chunks": chunks})
                print(f"sustained {name} round {rnd}: first {chunks[0]['ms']:.3f} ms, "
                      f"last {chunks[-1]['ms']:.3f} ms, min {min(c['ms'] for c in chunks):.3f}, "
                      f"max {max(c['ms'] for c in chunks):.3f}", flush=True)
        time.sleep(1.0)
    finally:
        sampler.terminate()
        sampler.wait()
    samples = read_samples(samples_path)
    for ph in phases:
        inside = [s for s in samples if ph["start"] <= s["t"] <= ph["end"]]
        ms = [c["ms"] for c in ph["chunks"]]
        ph["summary"] = {
            "chunks": len(ms), "ms_first_second": statistics.median([c["ms"] for c in ph["chunks"]
                                                                     if c["t"] - ph["start"] < 1.0] or ms[:1]),
            "ms_last_second": statistics.median([c["ms"] for c in ph["chunks"]
                                                 if ph["end"] - c["t"] < 1.0] or ms[-1:]),
            "ms_min": min(ms), "ms_max": max(ms), "samples": len(inside),
            "sm_mhz_min": min((s["sm_mhz"] for s in inside), default=None),
            "sm_mhz_max": max((s["sm_mhz"] for s in inside), default=None),
            "sm_mhz_median": statistics.median([s["sm_mhz"] for s in inside]) if inside else None,
            "power_w_max": max((s["power_w"] for s in inside), default=None),
            "power_w_median": statistics.median([s["power_w"] for s in inside]) if inside else None,
            "limit_w": inside[0]["limit_w"] if inside else None,
            "temp_c_max": max((s["temp_c"] for s in inside), default=None),
            "reasons": sorted({s["reasons"] for s in inside}),
        }
        print(f"{ph['provider']} round {ph['round']}: {json.dumps(ph['summary'])}", flush=True)
    result["sustained"] = phases
    result["samples"] = samples
    body = ",\n".join(f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}" for k, v in result.items())
    (out_dir / "matmul_variation.json").write_text("{\n" + body + "\n}\n")
    print(f"wrote {out_dir / 'matmul_variation.json'} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
