"""The measured schedules of the "programs in flight" widget: which SM ran each program or
tile of a real kernel, and when (recorded on the GPU by benchmarks/cases/schedules.py).

The committed record is ``benchmarks/schedules/<gpu>.json`` (its own folder: benchmarks/results/
holds only CSV + meta result files). The build ships it as ``assets/data/schedules.json``; without
a record it ships ``{"traces": []}``, so the widget's request never fails (a 404 would be a
console error) and it shows its toy schedule only.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEDULES_DIR = ROOT / "benchmarks" / "schedules"
SITE_NAME = "schedules.json"
EMPTY = {"traces": [], "note": "no measured schedules: run benchmarks/cases/schedules.py on the GPU"}


def site_blob(gpu: str = "h200", folder: Path = SCHEDULES_DIR) -> bytes:
    """The bytes of assets/data/schedules.json: the record, compact, or the empty document.
    A record that is not a JSON object with a list of traces raises ValueError."""
    path = Path(folder) / f"{gpu}.json"
    if not path.is_file():
        return (json.dumps(EMPTY) + "\n").encode()
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: not JSON: {err}") from err
    if not isinstance(doc, dict) or not isinstance(doc.get("traces"), list):
        raise ValueError(f"{path}: needs an object with a 'traces' list")
    return (json.dumps(doc, separators=(",", ":")) + "\n").encode()


def ship(data_dir: Path, write, gpu: str = "h200") -> None:
    """Write assets/data/schedules.json into the build's data folder with ``write(path, bytes)``."""
    write(Path(data_dir) / SITE_NAME, site_blob(gpu))


# ----------------------------------------------------------------------------- numbers for the pages

STATS = {  # name: (unit, what it is); "us" is shown as microseconds, "count" as a whole number
    "span": ("us", "time from the first start to the last end"),
    "median_run": ("us", "median duration of one program (or tile)"),
    "sm_first_idle": ("us", "when the first SM ran out of work"),
    "sm_last_idle": ("us", "when the last SM ran out of work (the span)"),
    "out_of_order": ("count", "programs that finished before some program of a lower pid"),
    "programs": ("count", "programs (or tiles, for a persistent trace) recorded"),
    "sms_used": ("count", "SMs that ran at least one of them"),
}


def stat(trace: dict, name: str) -> float:
    """One number computed from a trace's runs (see STATS)."""
    runs = trace["runs"]
    if not runs:
        raise ValueError(f"trace {trace.get('name')!r} has no runs")
    ends = {}
    for r in runs:
        ends[r["sm"]] = max(ends.get(r["sm"], 0.0), r["end_us"])
    durations = sorted(r["end_us"] - r["start_us"] for r in runs)
    if name == "span":
        return max(r["end_us"] for r in runs) - min(r["start_us"] for r in runs)
    if name == "median_run":
        mid = len(durations) // 2
        return durations[mid] if len(durations) % 2 else (durations[mid - 1] + durations[mid]) / 2
    if name == "sm_first_idle":
        return min(ends.values())
    if name == "sm_last_idle":
        return max(ends.values())
    if name == "out_of_order":
        latest, count = float("-inf"), 0
        for r in sorted(runs, key=lambda r: (r["pid"], r.get("tile", 0))):
            if r["end_us"] < latest:
                count += 1
            latest = max(latest, r["end_us"])
        return count
    if name == "programs":
        return len(runs)
    if name == "sms_used":
        return len(ends)
    raise ValueError(f"unknown statistic {name!r}; known: {', '.join(STATS)}")


def render(args: list[str], gpu: str = "h200", folder: Path = SCHEDULES_DIR) -> str:
    """``{{ schedule <trace> <statistic> }}``: a number from the committed record, never typed."""
    if len(args) != 2:
        raise ValueError("needs a trace name and a statistic: {{ schedule rows span }}")
    doc = json.loads(site_blob(gpu, folder))
    traces = {t.get("name"): t for t in doc["traces"]}
    if args[0] not in traces:
        raise ValueError(f"no trace {args[0]!r} in benchmarks/schedules/{gpu}.json; traces: {sorted(traces)}")
    value = stat(traces[args[0]], args[1])
    return f"{value:.1f} µs" if STATS[args[1]][0] == "us" else f"{value:.0f}"
