"""Read the committed benchmark results and answer queries about them.

Layout (written by ``scripts/bench.py`` on a CUDA machine)::

    benchmarks/results/<gpu>/<example>.csv        one row per (bench, x, provider, timing)
    benchmarks/results/<gpu>/<example>.meta.json  GPU, versions, date, method, ceilings, peers,
                                                  the sha256 of the two files that run measured
                                                  (``sources``: the example and its case file) and
                                                  of their measured code (``code_sha256``)

Titles, ceilings, speed targets and whether a plot shows the CUDA-graph series come from
``benchmarks/presentation.yml`` (``presentation``), not from the result files, so fixing a title
or a target needs no GPU run; axis names, metrics, sizes and providers come from the rows
themselves. A result is stale when the measured code of its example or of its case file
(``benchmarks/cases/<story>.py``) changed (``stale_results``).

Pages quote results with ``{{ bench ... }}`` expressions (their grammar: ``scripts/expressions.py``;
the quotes of the data: ``quote_*`` below); the MkDocs hook renders them at build time, and a
missing result fails the build.

``python -m scripts.results --stale`` lists the result files whose example changed since
they were measured (or that predate provenance records); ``--strict`` makes that fail.
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import statistics
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
EXAMPLES_DIR = ROOT / "examples"
CASES_DIR = ROOT / "benchmarks" / "cases"  # what each story's benchmark times
PRESENTATION = ROOT / "benchmarks" / "presentation.yml"  # how the site shows each bench
GPU_DIR = "h200"  # the GPU whose results the site quotes

COLUMNS = [
    "example", "bench", "x_name", "x", "provider", "timing", "metric",
    "value", "ms_p50", "ms_p20", "ms_p80", "work", "host_bound", "spread",
]
CEILING_KEYS = {"copy": "copy_gbps", "fp16": "cublas_fp16_tflops", "bf16": "cublas_bf16_tflops"}
# How a row's time was taken. do_bench: triton.testing.do_bench (CUDA events around each call, L2
# flushed before it); cudagraph: do_bench_cudagraph (calls replayed from a CUDA graph, L2 warm);
# host_wall: wall clock on the host; cuda_events: CUDA events around each call, L2 warm;
# profiler: the kernel's duration as torch.profiler (CUPTI) records it; host_call: the host time of
# one call alone (scripts/bench.py's time_host_call), kept apart from the kernel-time rows
# (``Results.host_rows``): it is shown in its own table, never plotted or judged as a speed.
TIMINGS = ("do_bench", "cudagraph", "host_wall", "cuda_events", "profiler")
HOST_CALL = "host_call"
# The entries of a bench in presentation.yml (title is required).
PRESENTATION_KEYS = ("title", "ceiling", "cudagraph", "targets")

# A do_bench point is host-bound when its time exceeds the CUDA-graph time of the same point by
# more than HOST_BOUND_RATIO and it is shorter than HOST_BOUND_MAX_MS, or by more than
# HOST_BOUND_LONG_RATIO at any length. Chosen from the H200 files of 2026-11-30 (121 points timed
# both ways: at do_bench >= 0.2 ms the two agreed within 0.93-1.06; below, 55 of 74 points exceeded
# 1.10, by 1.2x to 10x) and checked against the re-measured files of 2026-12-01, which the
# Benchmarks page summarises on every build (host_bound_evidence): there, long points reach 1.10
# only at the largest matmuls, whose speed moves under the GPU's power cap (at most 1.12), and
# three torch.compile layer-norm backward points of 0.25-0.27 ms run 1.59-1.92x their graph time:
# a launcher whose host work (autograd, the compiled wrapper) outlasts the kernel itself. The
# flag is derived when the files are read (``parse_rows``), so a change of these constants
# applies to every result file without a GPU run.
HOST_BOUND_RATIO = 1.10
HOST_BOUND_MAX_MS = 0.2
HOST_BOUND_LONG_RATIO = 1.30
SPREAD_FLAG = 0.05  # a point whose passes differ by more than 5% is flagged on its plot


def example_files(examples_dir: Path = EXAMPLES_DIR) -> list[Path]:
    """Every example, sorted by name: ``examples/*.py`` less the helpers whose name starts with "_".
    The one list of examples: the site's pages and notebooks, the runner, the GPU check and the tests
    all take it from here."""
    return sorted(p for p in Path(examples_dir).glob("*.py") if not p.name.startswith("_"))


class ResultError(LookupError):
    """A quoted result that the data does not hold."""


# --- pure arithmetic, shared by the runner, the plots and compare_runs ----------------------------

def median(values) -> float:
    return float(statistics.median(values))


def spread(values) -> float | None:
    """max / min - 1 over the passes of one point (None with fewer than two passes)."""
    values = [float(v) for v in values]
    if len(values) < 2 or min(values) <= 0:
        return None
    return max(values) / min(values) - 1.0


def is_host_bound(do_bench_ms: float, graph_ms: float | None) -> bool | None:
    """Whether a do_bench time is dominated by launch cost rather than by the kernel
    (None: no CUDA-graph time to compare with)."""
    if graph_ms is None or graph_ms <= 0:
        return None
    ratio = do_bench_ms / graph_ms
    return ratio > HOST_BOUND_LONG_RATIO or (ratio > HOST_BOUND_RATIO and do_bench_ms < HOST_BOUND_MAX_MS)


def graph_times(rows) -> dict[tuple, float]:
    """(bench, x, provider) -> the CUDA-graph median time in ms, for the points timed that way."""
    return {(r["bench"], r["x"], r["provider"]): r["ms_p50"] for r in rows if r["timing"] == "cudagraph"}


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --- the measured code ---------------------------------------------------------------------------

def story_files(story: str, examples_dir: Path = EXAMPLES_DIR, cases_dir: Path = CASES_DIR) -> list[Path]:
    """The files a story's benchmark run measures: its example and the case file that imports it."""
    return [Path(examples_dir) / f"{story}.py", Path(cases_dir) / f"{story}.py"]


def _comment_spans(data: bytes, line_starts: list[int]) -> list[tuple[int, int]]:
    """Byte ranges of the comments (``tokenize``'s columns count characters: converted to bytes)."""
    lines = data.splitlines(keepends=True)
    spans = []
    for tok in tokenize.tokenize(io.BytesIO(data).readline):
        if tok.type == tokenize.COMMENT:
            (row, col), (end_row, end_col) = tok.start, tok.end
            text = lines[row - 1].decode()
            start = line_starts[row - 1] + len(text[:col].encode())
            spans.append((start, line_starts[end_row - 1] + len(lines[end_row - 1].decode()[:end_col].encode())))
    return spans


def _docstring_spans(tree: ast.AST, line_starts: list[int]) -> list[tuple[int, int]]:
    """Byte ranges of the module's, classes' and functions' docstrings (ast's col offsets are bytes)."""
    spans = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not body:
            continue
        first = body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            spans.append((line_starts[first.lineno - 1] + first.col_offset,
                          line_starts[first.end_lineno - 1] + first.end_col_offset))
    return spans


def measured_code(source: bytes | str) -> bytes:
    """A source with what does not run cut out, as bytes: its comments (markdown cells and section
    markers included) and its docstrings; then each line's trailing blanks and every blank line
    dropped. A comment or a docstring edited leaves a result fresh; any change to code that runs
    does not.

    Cut by text: ``ast`` only locates each docstring, and those byte ranges are removed from the
    source itself. Never hash ``ast.dump``/``ast.unparse``: the runner (Python 3.12 on the GPU) and
    the site (3.11) must compute the same bytes."""
    data = source.encode() if isinstance(source, str) else bytes(source)
    tree = ast.parse(data)
    line_starts = [0]
    for line in data.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    spans = _comment_spans(data, line_starts) + _docstring_spans(tree, line_starts)
    out, pos = [], 0
    for start, end in sorted(spans):
        if end <= pos:
            continue  # inside a span already cut
        out.append(data[pos:max(pos, start)])
        pos = end
    out.append(data[pos:])
    return b"\n".join(line.rstrip() for line in b"".join(out).splitlines() if line.strip()) + b"\n"


def code_sha256(sources: list[bytes | str] | bytes | str) -> str:
    """sha256 of the ``measured_code`` of one source or of several in order (a story's example,
    then its case file: ``story_files``): what a result's ``code_sha256`` records."""
    sources = [sources] if isinstance(sources, bytes | str) else sources
    digest = hashlib.sha256()
    for source in sources:
        digest.update(measured_code(source) + b"\0")
    return digest.hexdigest()


def dump_meta(meta: dict) -> str:
    """A result's .meta.json text, exactly as the runner writes it."""
    return json.dumps(meta, indent=1) + "\n"


# --- loading -------------------------------------------------------------------------------------

@dataclass
class Results:
    rows: list[dict] = field(default_factory=list)
    meta: dict[str, dict] = field(default_factory=dict)  # example -> metadata of its run
    specs: dict[str, dict] = field(default_factory=dict)  # bench -> its spec (title, ceiling, ...)
    folder: Path | None = None  # where the files were read from
    host_rows: list[dict] = field(default_factory=list)  # timing host_call: host time per call (us)

    def find(self, bench: str, x, provider: str, timing: str | None = None) -> dict:
        """The row of one point. Without a timing: its do_bench row, else its only row."""
        hits = [r for r in self.rows
                if r["bench"] == bench and str(r["x"]) == str(x) and r["provider"] == provider]
        if timing is not None:
            hits = [r for r in hits if r["timing"] == timing]
        elif len(hits) > 1:
            hits = [r for r in hits if r["timing"] == "do_bench"]
        if len(hits) == 1:
            return hits[0]
        what = f"bench={bench} x={x} provider={provider} timing={timing or 'do_bench'}"
        raise ResultError(f"no result for {what}" if not hits else f"several results for {what}")

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

    def csv_path(self, example: str) -> str:
        folder = self.folder if self.folder is not None else RESULTS_DIR / GPU_DIR
        path = Path(folder) / f"{example}.csv"
        try:
            return path.relative_to(ROOT).as_posix()
        except ValueError:
            return path.as_posix()


def _flag(text) -> bool | None:
    text = "" if text is None else str(text).strip().lower()
    return {"true": True, "false": False}.get(text)


def parse_rows(fh) -> list[dict]:
    """Rows of one CSV. ``host_bound`` of a do_bench row is derived here from its time and the
    CUDA-graph time of the same point (``is_host_bound``, the rule as it stands now: the flag the
    runner wrote applied the rule of its day); a graph row is never host-bound; a row with no such
    pair, or timed on the host (metric "us"), keeps what the file says. A single-pass point has
    spread None."""
    reader = csv.DictReader(fh)
    if reader.fieldnames != COLUMNS:
        raise ResultError(f"{getattr(fh, 'name', 'a result file')}: columns {reader.fieldnames}, expected {COLUMNS}")
    rows = []
    for row in reader:
        for key in ("value", "ms_p50", "ms_p20", "ms_p80", "work"):
            row[key] = float(row[key])
        row["host_bound"] = _flag(row["host_bound"])
        row["spread"] = float(row["spread"]) if row["spread"] else None
        rows.append(row)
    graph = graph_times(rows)
    for r in rows:
        if r["metric"] == "us":
            continue
        key = (r["bench"], r["x"], r["provider"])
        if r["timing"] == "do_bench" and key in graph:
            r["host_bound"] = is_host_bound(r["ms_p50"], graph[key])
        elif r["timing"] == "cudagraph":
            r["host_bound"] = False
    return rows


def load(results_dir: Path = RESULTS_DIR, gpu: str = GPU_DIR, specs: dict[str, dict] | None = None) -> Results:
    """Read every result file of one GPU, with ``specs`` (bench -> how the site shows it, from
    ``presentation``; default: read it). Each bench's spec also gets, from its rows, its ``x_name``,
    ``metric``, ``x_vals`` and ``providers`` in the order they were measured, and its ``example``."""
    folder = Path(results_dir) / gpu
    out = Results(folder=folder)
    if folder.is_dir():
        for path in sorted(folder.glob("*.csv")):
            with path.open(newline="") as fh:
                for row in parse_rows(fh):
                    (out.host_rows if row["timing"] == HOST_CALL else out.rows).append(row)
        for path in sorted(folder.glob("*.meta.json")):
            out.meta[path.name.removesuffix(".meta.json")] = json.loads(path.read_text())
    specs = presentation() if specs is None else specs
    out.specs = {name: dict(spec) for name, spec in specs.items()}
    measured: dict[str, dict] = {}
    for row in out.rows:
        seen = measured.setdefault(row["bench"], {"example": row["example"], "x_name": row["x_name"],
                                                  "metric": row["metric"], "x_vals": {}, "providers": {}})
        seen["x_vals"][int(row["x"]) if str(row["x"]).isdigit() else row["x"]] = None  # as the targets name them
        seen["providers"][row["provider"]] = None
    for bench, seen in measured.items():
        spec = out.specs.setdefault(bench, {})
        for key, value in seen.items():
            spec.setdefault(key, list(value) if isinstance(value, dict) else value)
    return out


def presentation(path: Path = PRESENTATION) -> dict[str, dict]:
    """bench -> how the site shows it (``PRESENTATION_KEYS``), with its story (``example``) and its
    place among that story's benches (``position``), read from ``benchmarks/presentation.yml``.
    A bench named twice, an unknown key or a missing title is an error naming the bench."""
    import yaml

    raw = yaml.safe_load(Path(path).read_text()) or {}
    out: dict[str, dict] = {}
    for story, benches in raw.items():
        for position, (bench, entry) in enumerate((benches or {}).items()):
            where = f"{Path(path).name}: {story}.{bench}"
            if bench in out:
                raise ResultError(f"{where}: bench named twice (also under {out[bench]['example']})")
            if not isinstance(entry, dict) or not isinstance(entry.get("title"), str):
                raise ResultError(f"{where}: needs a title")
            unknown = sorted(set(entry) - set(PRESENTATION_KEYS))
            if unknown:
                raise ResultError(f"{where}: unknown key(s) {unknown} (known: {', '.join(PRESENTATION_KEYS)})")
            if entry.get("ceiling") not in (None, *CEILING_KEYS):
                raise ResultError(f"{where}: ceiling {entry['ceiling']!r} is not one of {', '.join(CEILING_KEYS)}")
            out[bench] = {**entry, "example": story, "position": position}
    return out


# --- provenance ------------------------------------------------------------------------------------

@dataclass
class Stale:
    example: str
    csv: str  # the result file, relative to the repository
    date: str  # when it was measured
    reason: str


def stale_results(data: Results, examples_dir: Path = EXAMPLES_DIR, cases_dir: Path = CASES_DIR,
                  code_hash=None) -> dict[str, Stale]:
    """example -> why its results do not match its files as they are now: the measured code of its
    example and of its case file (``code_sha256`` over ``story_files``). ``code_hash``: a function of
    the list of sources, ``code_sha256`` or a memo of it (the site build keeps one between serve
    rebuilds)."""
    code_hash = code_sha256 if code_hash is None else code_hash
    out = {}
    for example in sorted({r["example"] for r in data.rows} | set(data.meta)):
        meta = data.meta.get(example, {})
        files = story_files(example, examples_dir, cases_dir)
        recorded = meta.get("code_sha256")
        reason = None
        missing = [label for label, p in zip((f"examples/{example}.py", f"benchmarks/cases/{example}.py"), files,
                                             strict=True) if not p.exists()]
        if missing:
            reason = f"{missing[0]} does not exist"
        elif not recorded or "sources" not in meta:
            reason = "measured before its benchmark moved to benchmarks/cases/ (no case file recorded)"
        else:
            try:
                current = code_hash([p.read_bytes() for p in files])
            except SyntaxError as err:
                current = f"unparsable ({err.msg}, line {err.lineno})"
            if recorded != current:
                reason = (f"the measured code of examples/{example}.py or benchmarks/cases/{example}.py "
                          f"changed since it was measured (code_sha256 {recorded[:12]}…)")
        if reason is None:
            continue
        date = str(meta["date"])[:10] if meta.get("date") else "unknown date"
        out[example] = Stale(example, data.csv_path(example), date, reason)
    return out


# --- page expressions ------------------------------------------------------------------------------

def fmt_value(value: float, metric: str) -> str:
    if metric == "GB/s":
        return f"{value:,.0f} GB/s"
    if metric == "TFLOP/s":
        return f"{value:,.0f} TFLOP/s"
    if metric == "us":
        return f"{value:,.1f} µs"
    return f"{value:,.3g} {metric}"


def quote_meta(data: Results, example: str, key: str) -> str:
    """A field of one example's run (gpu, torch, triton, date, ...; dotted for a nested one)."""
    if example not in data.meta:
        raise ResultError(f"no metadata for example {example!r}")
    value = data.meta[example]
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise ResultError(f"metadata of {example!r} has no {key!r}")
        value = value[part]
    return str(value)


def quote_point(data: Results, kind: str, bench: str, x: str, provider: str, timing: str | None = None) -> str:
    """One point's ``value`` (its metric), ``ms`` or ``us`` (median time), ``pct`` (of the bench's
    ceiling) or ``spread`` (over the passes); without a timing its do_bench row (or its only row)."""
    row = data.find(bench, x, provider, timing)
    if kind == "value":
        return fmt_value(row["value"], row["metric"])
    if kind == "ms":
        return f"{row['ms_p50']:.4g} ms"
    if kind == "us":
        return f"{1000 * row['ms_p50']:.3g} µs"
    if kind == "pct":
        _, ceiling = data.ceiling(bench)
        return f"{100 * row['value'] / ceiling:.0f}%"
    if kind == "spread":
        if row.get("spread") is None:
            raise ResultError(f"{bench}@{x}:{provider} has no spread (a single-pass result)")
        return f"{100 * row['spread']:.1f}%"
    raise ResultError(f"no quote {kind!r} of a point")


def quote_ratio(data: Results, bench: str, x: str, a: str, b: str, timing: str | None = None) -> str:
    """The metric of provider a over that of b at one point, e.g. ``1.07×``."""
    ra, rb = data.find(bench, x, a, timing), data.find(bench, x, b, timing)
    return f"{ra['value'] / rb['value']:.2f}×"


def quote_ceiling(data: Results, bench: str) -> str:
    """The ceiling the bench is measured against, measured in the same run."""
    name, value = data.ceiling(bench)
    return fmt_value(value, "GB/s" if name == "copy" else "TFLOP/s")


def quote_ridge(data: Results, flops_bench: str, bytes_bench: str) -> str:
    """The roofline's ridge point: one bench's FLOP/s ceiling over another's bytes/s ceiling."""
    (_, flops), (_, gbps) = data.ceiling(flops_bench), data.ceiling(bytes_bench)
    return f"{flops * 1e12 / (gbps * 1e9):,.0f} FLOP/byte"


def render_expression(data: Results, expr: str) -> str:
    """One ``{{ bench ... }}`` expression rendered from ``data`` alone, e.g. ``value
    softmax_fp32@4096:triton``: parsed by the grammar, which declares every kind once
    (``scripts/expressions.py``, ``GRAMMAR``)."""
    from scripts import expressions  # it imports this module

    return expressions.render_bench_words(expressions.Page("", data), expr.split())


def repeatability_table(data: Results) -> str:
    """Per bench: how many passes, how far the passes of its points spread, how many are host-bound."""
    rows = ["| benchmark | passes | points | median spread | largest spread | spread > 5% | host-bound |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for bench in sorted({r["bench"] for r in data.rows}, key=lambda b: (data.specs.get(b, {}).get("title") or b)):
        pts = [r for r in data.rows if r["bench"] == bench and r["timing"] != "cudagraph"]
        meta = data.meta.get(pts[0]["example"], {}) if pts else {}
        title = data.specs.get(bench, {}).get("title") or bench
        spreads = [(r["spread"], r) for r in pts if r.get("spread") is not None]
        known = [r for r in pts if r.get("host_bound") is not None]
        host_bound = sum(1 for r in known if r["host_bound"]) if known else "–"
        if not spreads:
            rows.append(f"| {title} | {meta.get('passes', 1)} | {len(pts)} | – | – | – | {host_bound} |")
            continue
        worst, at = max(spreads, key=lambda s: s[0])
        flagged = sum(1 for s, _ in spreads if s > SPREAD_FLAG)
        rows.append(
            f"| {title} | {meta.get('passes', '?')} | {len(pts)} | {100 * median([s for s, _ in spreads]):.1f}% "
            f"| {100 * worst:.1f}% ({at['x_name']} = {at['x']}, {at['provider']}) | {flagged} | {host_bound} |")
    return "\n".join(rows)


def host_bound_evidence(data: Results) -> str:
    """One paragraph: how do_bench and CUDA-graph times of the same points compare in these files,
    above and below HOST_BOUND_MAX_MS (the evidence for the host-bound margins)."""
    graph = graph_times(data.rows)
    pairs = [(r["ms_p50"], r["ms_p50"] / graph[k]) for r in data.rows
             if r["timing"] == "do_bench" and r["metric"] != "us"
             and (k := (r["bench"], r["x"], r["provider"])) in graph and graph[k] > 0]
    if not pairs:
        raise ResultError("no point is timed both with do_bench and with a CUDA graph")
    cut = f"{1e3 * HOST_BOUND_MAX_MS:.0f} µs"
    long = sorted(ratio for ms, ratio in pairs if ms >= HOST_BOUND_MAX_MS)
    within = [ratio for ratio in long if ratio <= HOST_BOUND_LONG_RATIO]
    beyond = [ratio for ratio in long if ratio > HOST_BOUND_LONG_RATIO]
    short = [ratio for ms, ratio in pairs if ms < HOST_BOUND_MAX_MS]
    over = sorted(ratio for ratio in short if ratio > HOST_BOUND_RATIO)
    text = f"Of the {len(pairs)} points in these files timed both ways, "
    if within:
        text += (f"{'all' if not beyond else len(within)} of the {len(long)} whose do_bench time is at least "
                 f"{cut} have do_bench / graph between {within[0]:.2f} and {within[-1]:.2f}")
        if beyond:
            text += (f", and {len(beyond)} exceed{'s' if len(beyond) == 1 else ''} {HOST_BOUND_LONG_RATIO:.2f} "
                     f"({', '.join(f'{r:.2f}' for r in beyond)})")
    elif beyond:
        text += (f"the {len(long)} whose do_bench time is at least {cut} all exceed {HOST_BOUND_LONG_RATIO:.2f} "
                 f"({', '.join(f'{r:.2f}' for r in beyond)})")
    else:
        text += f"none takes {cut} or more"
    text += f"; of the {len(short)} shorter ones, {len(over)} exceed {HOST_BOUND_RATIO:.2f}"
    if over:
        text += f" (up to {over[-1]:.1f}×)"
    return text + "."


def host_table(data: Results, example: str) -> str:
    """One story's host time per call (``host_call`` rows), one line per bench at its smallest x
    (where the host matters most; it hardly moves with size), one column per provider."""
    rows = [r for r in data.host_rows if r["example"] == example]
    if not rows:
        raise ResultError(f"no host_call rows for {example!r}: its result file predates host timing "
                          "(re-run scripts.bench for it)")
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    lines = ["| benchmark | at | " + " | ".join(f"`{p}`" for p in providers) + " |",
             "| --- | --- |" + " ---: |" * len(providers)]
    for bench in dict.fromkeys(r["bench"] for r in rows):
        mine = [r for r in rows if r["bench"] == bench]
        xs = sorted({r["x"] for r in mine}, key=lambda x: float(x) if str(x).replace(".", "").isdigit() else 0)
        at = [r for r in mine if r["x"] == xs[0]]
        us = {r["provider"]: r["value"] for r in at}
        title = data.specs.get(bench, {}).get("title") or bench
        cells = [f"{us[p]:,.1f} µs" if p in us else "–" for p in providers]
        lines.append(f"| {title} | {at[0]['x_name']} = {xs[0]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def provenance_table(data: Results, stale: dict[str, Stale]) -> str:
    """Per result file: when it was measured, from which commit, and whether it matches its files."""
    rows = ["| result file | measured | commit | matches its example |", "| --- | --- | --- | --- |"]
    for example in sorted(set(data.meta) | {r["example"] for r in data.rows}):
        meta = data.meta.get(example, {})
        dirty = meta.get("source_dirty", meta.get("git_dirty"))  # the example file itself, where recorded
        commit = str(meta.get("git_commit", "–"))[:10] + (" (uncommitted changes)" if dirty else "")
        match = f"**no**: {stale[example].reason}" if example in stale else "yes"
        rows.append(f"| `{data.csv_path(example)}` | {str(meta.get('date', '–'))[:10]} | {commit} | {match} |")
    return "\n".join(rows)


def to_json(data: Results) -> bytes:
    """Every row and every run's metadata, for the widgets (stable bytes for stable data)."""
    payload = {"rows": data.rows, "meta": data.meta}
    return (json.dumps(payload, sort_keys=True, indent=1) + "\n").encode()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Query the committed benchmark results.")
    parser.add_argument("--stale", action="store_true",
                        help="list the result files whose example changed since they were measured")
    parser.add_argument("--strict", action="store_true", help="with --stale: exit 1 when any is stale")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="results folder (holds <gpu>/)")
    parser.add_argument("--gpu", default=GPU_DIR)
    args = parser.parse_args(argv)
    if not args.stale:
        parser.error("nothing to do (use --stale)")
    data = load(args.results, args.gpu)
    stale = stale_results(data)
    for s in stale.values():
        print(f"STALE {s.csv} (measured {s.date}): {s.reason}")
    print(f"{len(stale)} of {len(set(data.meta) | {r['example'] for r in data.rows})} result files "
          f"in {data.csv_path('x').rsplit('/', 1)[0]} are stale")
    return 1 if stale and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
