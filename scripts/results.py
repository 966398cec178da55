"""Read the committed benchmark results and answer queries about them.

Layout (written by ``scripts/bench.py`` on a CUDA machine)::

    benchmarks/results/<gpu>/<example>.csv        one row per (bench, x, provider, timing)
    benchmarks/results/<gpu>/<example>.meta.json  GPU, versions, date, method, ceilings of that run

Pages quote results with ``{{ bench ... }}`` expressions (see ``render_expression``);
the MkDocs hook renders them at build time, and a missing result fails the build.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
GPU_DIR = "h200"  # the GPU whose results the site quotes

COLUMNS = [
    "example", "bench", "x_name", "x", "provider", "timing", "metric",
    "value", "ms_p50", "ms_p20", "ms_p80", "work",
]
CEILING_KEYS = {"copy": "copy_gbps", "fp16": "cublas_fp16_tflops", "bf16": "cublas_bf16_tflops"}


class ResultError(LookupError):
    """A quoted result that the data does not hold."""


@dataclass
class Results:
    rows: list[dict] = field(default_factory=list)
    meta: dict[str, dict] = field(default_factory=dict)  # example -> metadata of its run
    specs: dict[str, dict] = field(default_factory=dict)  # bench -> its spec (title, ceiling, ...)

    def find(self, bench: str, x, provider: str, timing: str = "do_bench") -> dict:
        for row in self.rows:
            if (row["bench"] == bench and str(row["x"]) == str(x) and row["provider"] == provider
                    and row["timing"] == timing):
                return row
        raise ResultError(f"no result for bench={bench} x={x} provider={provider} timing={timing}")

    def example_of(self, bench: str) -> str:
        for row in self.rows:
            if row["bench"] == bench:
                return row["example"]
        raise ResultError(f"no results for bench {bench!r}")

    def ceiling(self, bench: str) -> tuple[str, float]:
        """(name, value) of the ceiling the bench is measured against, from the same run."""
        spec = self.specs.get(bench)
        if spec is None or not spec.get("ceiling"):
            raise ResultError(f"bench {bench!r} names no ceiling")
        meta = self.meta[self.example_of(bench)]
        key = CEILING_KEYS[spec["ceiling"]]
        return spec["ceiling"], float(meta["ceilings"][key])


def load(results_dir: Path = RESULTS_DIR, gpu: str = GPU_DIR) -> Results:
    out = Results()
    folder = Path(results_dir) / gpu
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                for key in ("value", "ms_p50", "ms_p20", "ms_p80", "work"):
                    row[key] = float(row[key])
                out.rows.append(row)
    for path in sorted(folder.glob("*.meta.json")):
        meta = json.loads(path.read_text())
        out.meta[path.name.removesuffix(".meta.json")] = meta
        for spec in meta.get("benchmarks", []):
            out.specs[spec["name"]] = spec
    return out


def fmt_value(value: float, metric: str) -> str:
    if metric == "GB/s":
        return f"{value:,.0f} GB/s"
    if metric == "TFLOP/s":
        return f"{value:,.0f} TFLOP/s"
    if metric == "us":
        return f"{value:,.1f} µs"
    return f"{value:,.3g} {metric}"


def _parse_point(arg: str) -> tuple[str, str, str]:
    """'bench@x:provider' -> (bench, x, provider)."""
    try:
        bench, rest = arg.split("@", 1)
        x, provider = rest.split(":", 1)
    except ValueError:
        raise ResultError(f"expected bench@x:provider, got {arg!r}") from None
    return bench, x, provider


def render_expression(data: Results, expr: str) -> str:
    """Render one ``{{ bench ... }}`` expression.

    * ``meta <example> <field>``: a field of that example's run (gpu, torch, triton, date, ...)
    * ``value <bench>@<x>:<provider> [cudagraph]``: the measured metric, e.g. ``3,998 GB/s``
    * ``ms <bench>@<x>:<provider> [cudagraph]``: the median time in ms
    * ``ratio <bench>@<x>:<a>/<b> [cudagraph]``: metric of a over metric of b, e.g. ``1.07×``
    * ``pct <bench>@<x>:<provider> [cudagraph]``: percent of the bench's measured ceiling
    * ``ceiling <bench>``: the ceiling the bench is measured against, e.g. ``4,270 GB/s``
    * ``ridge <flops bench> <bytes bench>``: roofline ridge point, ceiling FLOP/s over ceiling bytes/s
    """
    parts = expr.split()
    if not parts:
        raise ResultError("empty expression")
    kind, args = parts[0], parts[1:]
    timing = "do_bench"
    if args and args[-1] in ("cudagraph", "do_bench"):
        timing = args.pop()
    if kind == "meta":
        if len(args) != 2:
            raise ResultError("expected: meta <example> <field>")
        example, key = args
        if example not in data.meta:
            raise ResultError(f"no metadata for example {example!r}")
        value = data.meta[example]
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                raise ResultError(f"metadata of {example!r} has no {key!r}")
            value = value[part]
        return str(value)
    if kind == "ridge":
        if len(args) != 2:
            raise ResultError("expected: ridge <flops bench> <bytes bench>")
        (_, flops), (_, gbps) = data.ceiling(args[0]), data.ceiling(args[1])
        return f"{flops * 1e12 / (gbps * 1e9):,.0f} FLOP/byte"
    if kind == "ceiling":
        if len(args) != 1:
            raise ResultError("expected: ceiling <bench>")
        name, value = data.ceiling(args[0])
        return fmt_value(value, "GB/s" if name == "copy" else "TFLOP/s")
    if len(args) != 1:
        raise ResultError(f"expected: {kind} bench@x:provider")
    bench, x, provider = _parse_point(args[0])
    if kind == "ratio":
        if "/" not in provider:
            raise ResultError("expected: ratio bench@x:a/b")
        a, b = provider.split("/", 1)
        ra, rb = data.find(bench, x, a, timing), data.find(bench, x, b, timing)
        return f"{ra['value'] / rb['value']:.2f}×"
    row = data.find(bench, x, provider, timing)
    if kind == "value":
        return fmt_value(row["value"], row["metric"])
    if kind == "ms":
        return f"{row['ms_p50']:.4g} ms"
    if kind == "pct":
        _, ceiling = data.ceiling(bench)
        return f"{100 * row['value'] / ceiling:.0f}%"
    raise ResultError(f"unknown kind {kind!r} (meta, value, ms, ratio, pct, ceiling)")


def to_json(data: Results) -> bytes:
    """Every row and every run's metadata, for the widgets (stable bytes for stable data)."""
    payload = {"rows": data.rows, "meta": data.meta}
    return (json.dumps(payload, sort_keys=True, indent=1) + "\n").encode()
