"""Every expression a page may hold: one grammar, one registry.

    {{ bench KIND ARGS... }}   a number, a table or a section from the result files
    {{ examples }}             the map of the stories (example -> page -> test -> results -> plots)
    {{ verified }}             on which GPU and date the code last passed every check
    {{ repo }}                 the repository's URL (mkdocs.yml's ``repo_url``), for clone commands

``bench`` kinds are the entries of ``BENCH`` (tables over the whole site, a probe's table, the
winners of one bench) and, for any other kind, the quotes of one point or field that
``results.render_expression`` documents (``value``, ``ms``, ``ratio``, ``pct``, ``spread``,
``meta``, ``ceiling``, ``ridge``). ``render`` substitutes them; any error becomes an
``ExpressionError`` that names the page, the line and the expression. ``scripts/hooks.py``
only decides when each is rendered and turns the error into a failed build.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scripts import compare_runs, gpu_check, pages, results, schedules, targets

ROOT = Path(__file__).resolve().parent.parent
# What benchmarks/probes/matmul_variation.py measured (why the large matmuls move between runs).
MATMUL_VARIATION = ROOT / "benchmarks" / "logs" / "run10" / "matmul_variation.json"

EXPR = re.compile(r"\{\{\s*(bench|examples|verified|schedule|repo)(?![\w.-])\s*([^}]*?)\s*\}\}")
PLOT_REF = re.compile(r"assets/plots/([\w.-]+)\.svg")


class ExpressionError(ValueError):
    """An expression that cannot be rendered, with the page and line it sits on."""


@dataclass
class Page:
    """What an expression may read: the page and this build's data."""

    path: str  # the page's source path under docs/, for errors and relative links
    data: results.Results
    stale: dict = field(default_factory=dict)  # example -> results.Stale
    reproduction: tuple | None = None  # compare_runs.compare_folders(...), or None without a second run
    examples_table: Callable[[], str] = lambda: ""  # the hook builds the story map (it knows the nav)
    example_order: list[str] | None = None  # the examples in reading order (the hook knows the nav)
    repo_url: str = ""  # mkdocs.yml's repo_url: `{{ repo }}`

    @property
    def up(self) -> str:
        return "../" * self.path.count("/")


@dataclass(frozen=True)
class Kind:
    render: Callable[[Page, list[str]], str]
    whole_site: bool = False  # quotes every result file: the page needs no per-bench notice


def _no_args(fn: Callable[[Page], str]) -> Callable[[Page, list[str]], str]:
    def render(page: Page, args: list[str]) -> str:
        if args:
            raise results.ResultError(f"takes no arguments, got {' '.join(args)!r}")
        return fn(page)
    return render


def all_plots(page: Page) -> str:
    """Every plot, each under its title, for the Benchmarks page."""
    out = []
    for bench in sorted({r["bench"] for r in page.data.rows}):
        title = page.data.specs.get(bench, {}).get("title", bench)
        # a gallery of data: its headings stay out of the search index (scripts/pages.py)
        out.append(f"### {title} {{ .{pages.DATA_CLASS} }}\n\n![{title}]({page.up}assets/plots/{bench}.svg)\n")
    return "\n".join(out) if out else "*No results have been recorded yet.*"


def matmul_variation_table(path: Path = MATMUL_VARIATION) -> str:
    """The probe's sustained-load phases and re-tunings, as Markdown (from its JSON file)."""
    probe = json.loads(path.read_text())
    rows = ["| provider (round) | ms per call: fastest chunk | first second | last second "
            "| SM clock, median (min–max) | power, median (limit) | clock-event reasons |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for ph in probe["sustained"]:
        s = ph["summary"]
        rows.append(f"| {ph['provider']} ({ph['round'] + 1}) | {s['ms_min']:.3f} | {s['ms_first_second']:.3f} "
                    f"| {s['ms_last_second']:.3f} "
                    f"| {s['sm_mhz_median']:.0f} MHz ({s['sm_mhz_min']:.0f}–{s['sm_mhz_max']:.0f}) "
                    f"| {s['power_w_median']:.0f} W ({s['limit_w']:.0f} W) | {', '.join(s['reasons'])} |")
    picks = "; ".join(f"{key}: {len({p['best'] for p in runs})} distinct of {len(runs)}"
                      for key, runs in probe["retune"].items())
    return (f"Measured on {probe['gpu']} on {probe['date'][:10]} (torch {probe['torch']}, Triton {probe['triton']}); "
            f"reason 0x4 is the software power cap, 0x0 none.\n\n" + "\n".join(rows)
            + f"\n\nConfigs chosen by five re-tunings: {picks}.\n")


def _reproduction(page: Page) -> str:
    if page.reproduction is None:
        return f"*No second run is recorded (`benchmarks/reproduction/{results.GPU_DIR}/` holds no results).*"
    return compare_runs.site_section(*page.reproduction)


def _winners(page: Page, args: list[str]) -> str:
    """winners <bench> <provider> <provider> ... [cudagraph]"""
    args = list(args)
    timing = args.pop() if args and args[-1] == "cudagraph" else "do_bench"
    if len(args) < 2:
        raise results.ResultError("needs a bench name and at least one provider")
    return targets.winners_table(page.data, args[0], args[1:], timing)


BENCH: dict[str, Kind] = {
    "targets": Kind(lambda p, args: targets.markdown_table(p.data, " ".join(args), p.example_order), whole_site=True),
    "summary": Kind(_no_args(lambda p: targets.summary_table(p.data)), whole_site=True),
    "plots": Kind(_no_args(all_plots), whole_site=True),
    "repeatability": Kind(_no_args(lambda p: results.repeatability_table(p.data)), whole_site=True),
    "provenance": Kind(_no_args(lambda p: results.provenance_table(p.data, p.stale)), whole_site=True),
    "host_bound_evidence": Kind(_no_args(lambda p: results.host_bound_evidence(p.data)), whole_site=True),
    "reproduction": Kind(_no_args(_reproduction), whole_site=True),
    "matmul_variation": Kind(_no_args(lambda p: matmul_variation_table())),
    "winners": Kind(_winners),
}
POINT_KINDS = ("value", "ms", "ratio", "pct", "spread", "meta", "ceiling", "ridge")  # results.render_expression


def _repo_url(page: Page) -> str:
    if not page.repo_url:
        raise results.ResultError("mkdocs.yml sets no repo_url")
    return page.repo_url.rstrip("/")


def render_bench(page: Page, args: list[str]) -> str:
    if not args:
        raise results.ResultError("empty expression")
    kind = BENCH.get(args[0])
    if kind is not None:
        return kind.render(page, args[1:])
    if args[0] not in POINT_KINDS:
        known = ", ".join(sorted([*BENCH, *POINT_KINDS]))
        raise results.ResultError(f"unknown kind {args[0]!r}; known: {known}")
    return results.render_expression(page.data, " ".join(args))


TOP: dict[str, Callable[[Page, list[str]], str]] = {
    "bench": render_bench,
    "examples": _no_args(lambda p: p.examples_table()),
    "verified": _no_args(lambda p: gpu_check.page_text()),
    "schedule": lambda p, args: schedules.render(args),  # {{ schedule rows span }}: benchmarks/schedules/
    "repo": _no_args(lambda p: _repo_url(p)),
}


# The kinds that render a table of numbers: on the page, left out of the search index (a search for
# a term should find the prose that explains it first).
DATA_TABLES = ("targets", "summary", "repeatability", "provenance", "matmul_variation", "winners")


def _alone_on_its_line(markdown: str, m: re.Match) -> bool:
    """Only an expression on a line of its own, at its start, can be wrapped in a block."""
    start = markdown.rfind("\n", 0, m.start()) + 1
    end = markdown.find("\n", m.end())
    return markdown[start:m.start()] == "" and markdown[m.end():None if end < 0 else end].strip() == ""


def render(markdown: str, page: Page, names=tuple(TOP)) -> str:
    """Substitute the expressions named in ``names``; leave the others for a later pass."""

    def one(m: re.Match) -> str:
        name, args = m.group(1), m.group(2).split()
        if name not in names:
            return m.group(0)
        try:
            out = TOP[name](page, args)
            if name == "bench" and args[0] in DATA_TABLES and _alone_on_its_line(markdown, m):
                out = pages.data_block(out)  # a table of numbers: kept out of the search index
            return out
        except (results.ResultError, KeyError, ValueError, IndexError, OSError, TypeError, ZeroDivisionError) as err:
            line = markdown[:m.start()].count("\n") + 1
            text = f"{{{{ {name} {m.group(2)} }}}}" if m.group(2) else f"{{{{ {name} }}}}"
            raise ExpressionError(f"{page.path}:{line}: {text}: {type(err).__name__}: {err}") from err

    return EXPR.sub(one, markdown)


def bench_expressions(markdown: str) -> list[list[str]]:
    """The argument lists of every ``{{ bench ... }}`` on a page."""
    return [m.group(2).split() for m in EXPR.finditer(markdown) if m.group(1) == "bench"]


def quoted_benches(markdown: str, specs: dict[str, dict] | None = None) -> set[str] | None:
    """The benches a page quotes, through ``{{ bench ... }}`` or a plot; None: every result file
    (a whole-site kind). Names that are no bench (providers of ``winners``) may be in it. With the
    examples' ``specs``, ``targets <prefix>`` (one kernel's targets) quotes the benches those
    targets judge; without them, or with no prefix, it quotes every result file."""
    benches = set()
    for parts in bench_expressions(markdown):
        if not parts:
            continue
        if parts[0] == "targets" and len(parts) > 1 and specs is not None:
            benches.update(b for t, _ in targets.matching(specs, " ".join(parts[1:])) for b in t.benches)
            continue
        if parts[0] in BENCH and BENCH[parts[0]].whole_site:
            return None
        if parts[0] in ("winners", "ceiling", "ridge"):
            benches.update(parts[1:])
        elif parts[0] != "meta":
            benches.update(p.split("@", 1)[0] for p in parts[1:] if "@" in p)
    return benches | set(PLOT_REF.findall(markdown))


def quoted_examples(markdown: str, data: results.Results, benches: set[str] | None) -> set[str]:
    """The examples whose result files a page quotes: through ``{{ bench ... }}`` or a plot
    (``benches``: ``quoted_benches(markdown)``)."""
    if benches is None:
        return set(data.meta) | {r["example"] for r in data.rows}
    examples = {parts[1] for parts in bench_expressions(markdown) if parts[:1] == ["meta"] and len(parts) > 1}
    for bench in benches:
        try:
            examples.add(data.example_of(bench))
        except results.ResultError:
            pass  # an unknown bench fails the page where it is rendered
    return examples
