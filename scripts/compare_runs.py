"""Compare two benchmark runs point by point: does a second run reproduce the first?

    python -m scripts.compare_runs RUN_A RUN_B [--out report.md]

RUN_A and RUN_B are results folders: either a GPU folder holding ``<example>.csv`` files
(``benchmarks/results/h200``) or a results root holding one such folder. A point is one
(example, bench, x, provider, timing) row present in both runs. Compared are the points
that time a kernel (``do_bench`` and ``cudagraph`` rows), are not host-bound in either run
and take at least ``--min-us`` (20 µs) in either run; for each, the report gives the ratio
of times B / A (above 1: B slower) and lists those differing by more than ``--tolerance`` (5%).
Host-bound, short and host wall-clock points are counted and listed apart, with their
ratios, but not judged. Stories whose two runs measured different code (their ``code_sha256``,
over the example and its case file, differs or is missing) are left out and named. The exit code is 1
when a judged point differs or no point could be judged, 0 otherwise; a folder without result
files is an error. The summary line is printed last, before the names of the examples left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from scripts import results

KERNEL_TIMINGS = ("do_bench", "cudagraph")


@dataclass
class Point:
    key: tuple[str, str, str, str, str]  # example, bench, x, provider, timing
    a: dict
    b: dict

    @property
    def ratio(self) -> float:
        return self.b["ms_p50"] / self.a["ms_p50"]

    @property
    def name(self) -> str:
        example, bench, x, provider, timing = self.key
        return f"{bench} x={x} {provider} [{timing}]"


def result_folder(path: Path) -> Path:
    """The folder holding the CSV files: ``path`` itself, or its only subfolder that has some."""
    path = Path(path)
    if any(path.glob("*.csv")):
        return path
    subs = [p for p in sorted(path.iterdir()) if p.is_dir() and any(p.glob("*.csv"))] if path.is_dir() else []
    if len(subs) == 1:
        return subs[0]
    raise SystemExit(f"compare_runs: {path}: no result files here (or several GPU folders: name one)")


def read_run(path: Path) -> tuple[dict[tuple, dict], dict[str, dict]]:
    """(rows keyed by point, metadata by example) of one run."""
    folder = result_folder(path)
    rows = {}
    for csv_path in sorted(folder.glob("*.csv")):
        with csv_path.open(newline="") as fh:
            for row in results.parse_rows(fh):
                rows[(row["example"], row["bench"], str(row["x"]), row["provider"], row["timing"])] = row
    meta = {p.name.removesuffix(".meta.json"): json.loads(p.read_text())
            for p in sorted(folder.glob("*.meta.json"))} if folder.is_dir() else {}
    return rows, meta


@dataclass
class Comparison:
    judged: list[Point]  # kernel-time points, not host-bound, long enough
    differ: list[Point]  # judged points outside the tolerance
    host_bound: list[Point]
    short: list[Point]
    host_wall: list[Point]  # host wall-clock and other non-kernel rows
    only_a: list[tuple]
    only_b: list[tuple]
    tolerance: float
    min_us: float


def compare(rows_a: dict, rows_b: dict, tolerance: float = 0.05, min_us: float = 20.0) -> Comparison:
    judged, host_bound, short, host_wall = [], [], [], []
    for key in sorted(set(rows_a) & set(rows_b), key=lambda k: tuple(map(str, k))):
        point = Point(key, rows_a[key], rows_b[key])
        if key[4] not in KERNEL_TIMINGS or point.a["metric"] == "us":
            host_wall.append(point)
        elif point.a.get("host_bound") or point.b.get("host_bound"):
            host_bound.append(point)
        elif max(point.a["ms_p50"], point.b["ms_p50"]) * 1e3 < min_us:
            short.append(point)
        else:
            judged.append(point)
    differ = [p for p in judged if abs(p.ratio - 1.0) > tolerance]
    return Comparison(judged, differ, host_bound, short, host_wall,
                      sorted(set(rows_a) - set(rows_b)), sorted(set(rows_b) - set(rows_a)), tolerance, min_us)


def _runs_line(meta: dict[str, dict]) -> str:
    dates = sorted({str(m.get("date", "?"))[:10] for m in meta.values()})
    gpus = sorted({str(m.get("gpu", "?")) for m in meta.values()})
    commits = sorted({str(m.get("git_commit", "unknown"))[:10] for m in meta.values()})
    return f"{', '.join(gpus) or '?'}; measured {', '.join(dates) or '?'}; commit {', '.join(commits) or '?'}"


def _table(points: list[Point], header: str = "| point | A (ms) | B (ms) | B / A | spread A | spread B |",
           name=lambda p: p.name) -> list[str]:
    """A Markdown table of points: name, both times, their ratio and both runs' spreads."""
    def spread(row: dict) -> str:
        return "–" if row.get("spread") is None else f"{100 * row['spread']:.1f}%"

    out = [header, "| --- | --- | --- | --- | --- | --- |"]
    for p in points:
        out.append(f"| {name(p)} | {p.a['ms_p50']:.4g} | {p.b['ms_p50']:.4g} | {p.ratio:.3f} "
                   f"| {spread(p.a)} | {spread(p.b)} |")
    return out


def summary(c: Comparison) -> str:
    line = (f"{len(c.judged)} kernel-time points compared (not host-bound, >= {c.min_us:g} us): "
            f"{len(c.differ)} differ by more than {100 * c.tolerance:g}%")
    if c.differ:
        worst = max(c.differ, key=lambda p: abs(p.ratio - 1.0))
        line += f" (worst: {worst.name}, B/A = {worst.ratio:.3f})"
    return line + (f"; skipped {len(c.host_bound)} host-bound, {len(c.short)} under {c.min_us:g} us, "
                   f"{len(c.host_wall)} host wall-clock")


def report(c: Comparison, path_a: Path, path_b: Path, meta_a: dict, meta_b: dict) -> str:
    lines = [
        "# Reproduction check", "",
        f"* run A: `{path_a}` ({_runs_line(meta_a)})",
        f"* run B: `{path_b}` ({_runs_line(meta_b)})", "",
        f"Judged: points timed on the GPU (do_bench or CUDA graph) that are host-bound in neither run and "
        f"take at least {c.min_us:g} µs in one of them. Ratio = time B / time A.", "",
        f"**{summary(c)}**", "",
    ]
    unknown = [p for p in c.judged if p.a.get("host_bound") is None or p.b.get("host_bound") is None]
    if unknown:
        lines += [f"{len(unknown)} judged points carry no host-bound flag in one run (an old-format file, or no "
                  "CUDA-graph time): they are judged as kernel time, which they may not be.", ""]
    if c.judged:
        ratios = sorted(p.ratio for p in c.judged)
        lines += [f"Ratios B / A over the judged points: min {ratios[0]:.3f}, "
                  f"median {results.median(ratios):.3f}, max {ratios[-1]:.3f}.", ""]
    lines += [f"## Points differing by more than {100 * c.tolerance:g}%", ""]
    lines += _table(sorted(c.differ, key=lambda p: -abs(p.ratio - 1.0))) if c.differ else ["None."]
    lines += ["", "## Every judged point", ""] + (_table(c.judged) if c.judged else ["None."])
    for title, points in (("Host-bound points (not judged)", c.host_bound),
                          (f"Points under {c.min_us:g} µs (not judged)", c.short),
                          ("Host wall-clock and other non-kernel rows (not judged)", c.host_wall)):
        lines += ["", f"## {title}", ""] + (_table(points) if points else ["None."])
    for title, keys in (("Only in run A", c.only_a), ("Only in run B", c.only_b)):
        if keys:
            lines += ["", f"## {title}", ""] + [f"* {k[1]} x={k[2]} {k[3]} [{k[4]}]" for k in keys]
    return "\n".join(lines) + "\n"


def compare_folders(run_a: Path, run_b: Path, tolerance: float = 0.05,
                    min_us: float = 20.0) -> tuple[Comparison, list[str], dict, dict]:
    """(comparison, examples left out because the runs measured different code, meta A, meta B)."""
    rows_a, meta_a = read_run(run_a)
    rows_b, meta_b = read_run(run_b)
    def same_code(a: dict, b: dict) -> bool:  # comments and docstrings are not code (results.measured_code)
        return a.get("code_sha256") is not None and a.get("code_sha256") == b.get("code_sha256")

    other_code = sorted(ex for ex in set(meta_a) & set(meta_b) if not same_code(meta_a[ex], meta_b[ex]))
    if other_code:  # two versions of an example are not a reproduction: leave them out, say so
        rows_a = {k: v for k, v in rows_a.items() if k[0] not in other_code}
        rows_b = {k: v for k, v in rows_b.items() if k[0] not in other_code}
    return compare(rows_a, rows_b, tolerance, min_us), other_code, meta_a, meta_b


# --- for the site (scripts/hooks.py): the second run's verdict, on the pages it concerns ---------

def _site_table(points: list[Point]) -> list[str]:
    return _table(points, "| point | shown (ms) | second run (ms) | second / shown | spread shown | spread second |",
                  lambda p: f"`{p.key[1]}` {p.a.get('x_name', 'x')} = {p.key[2]}, {p.key[3]}, {p.key[4]}")


def _date(meta: dict[str, dict], examples) -> str:
    dates = sorted({str(meta[e].get("date", "?"))[:10] for e in examples if e in meta})
    return ", ".join(dates) or "an unknown date"


def page_notice(c: Comparison, benches: set[str], stale: set[str], meta_b: dict, link: str) -> str:
    """An admonition listing the points of these benches that the second run did not reproduce
    ("" when every judged point of theirs agreed, or none was judged). Examples in ``stale``
    (results older than their code) are left out: their page says so already."""
    def mine(p: Point) -> bool:
        return p.key[1] in benches and p.key[0] not in stale

    differ = sorted((p for p in c.differ if mine(p)), key=lambda p: -abs(p.ratio - 1.0))
    if not differ:
        return ""
    judged = sum(1 for p in c.judged if mine(p))
    body = [
        f'!!! info "{len(differ)} of {judged} points not reproduced within {100 * c.tolerance:g}%"', "",
        f"    A second full benchmark run on the same GPU ({_date(meta_b, {p.key[0] for p in differ})}) "
        "measured these points "
        f"of this page's results more than {100 * c.tolerance:g}% away from the numbers shown "
        f"(spread: how far the passes of each run varied). The other {judged - len(differ)} kernel-time "
        f"points of these results (not host-bound, at least {c.min_us:g} µs) agreed. The whole comparison, "
        f"and what was measured about why points move: [Benchmarks]({link}).", "",
    ]
    return "\n".join(body + ["    " + line for line in _site_table(differ)]) + "\n"


def site_section(c: Comparison, other_code: list[str], meta_a: dict, meta_b: dict) -> str:
    """The Benchmarks page's account of the second run: summary, what differs, what was not compared."""
    lines = [f"The second run: {_runs_line(meta_b)} (the results shown: {_runs_line(meta_a)}).", "",
             f"**{summary(c).replace(' us', ' µs')}.**", ""]
    if c.judged:
        ratios = sorted(p.ratio for p in c.judged)
        lines += [f"Second / shown over the judged points: min {ratios[0]:.3f}, median "
                  f"{results.median(ratios):.3f}, max {ratios[-1]:.3f}.", ""]
    if c.differ:
        lines += _site_table(sorted(c.differ, key=lambda p: -abs(p.ratio - 1.0))) + [""]
    missing = sorted(set(meta_a) - set(meta_b))
    if missing or other_code:
        lines.append("Not compared: " + "; ".join(
            ([f"no second run of {', '.join(missing)}"] if missing else [])
            + ([f"the second run measured other code for {', '.join(other_code)}"] if other_code else [])) + ".")
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--out", type=Path, help="write the Markdown report here (default: print it)")
    parser.add_argument("--tolerance", type=float, default=0.05, help="allowed |B/A - 1| (default 0.05)")
    parser.add_argument("--min-us", type=float, default=20.0, help="shortest point judged, in µs (default 20)")
    args = parser.parse_args(argv)
    c, other_code, meta_a, meta_b = compare_folders(args.run_a, args.run_b, args.tolerance, args.min_us)
    text = report(c, args.run_a, args.run_b, meta_a, meta_b)
    if other_code:
        text += ("\n\nNot compared, because the two runs measured different versions of the example "
                 f"or its case (their `code_sha256` differs): {', '.join(other_code)}.\n")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        print(text)
    print(summary(c))
    if other_code:
        print(f"not compared (different code): {', '.join(other_code)}")
    if not c.judged:
        print("FAIL: no point could be judged", file=sys.stderr)
        return 1
    return 1 if c.differ else 0


if __name__ == "__main__":
    sys.exit(main())
