"""Every expression a page may hold, declared once: ``GRAMMAR``.

    {{ bench KIND ARGS... }}       a number, a table or a section from the result files
    {{ examples }}                 the map of the stories (example -> page -> test -> results -> plots)
    {{ verified }}                 on which GPU and date the code last passed every check
    {{ schedule TRACE STATISTIC }} a number from a measured schedule (benchmarks/schedules/)
    {{ repo }}                     the repository's URL (mkdocs.yml's ``repo_url``), for clone commands
    {{ attention_bytes }}          the bytes the naive and the fused attention move (the example computes them)
    {{ evidence FILE SELECTOR FIELD [FORMAT] }}      a number from a probe's committed output
    {{ evidence_ratio FILE SEL_A SEL_B FIELD [FORMAT] }}  one such number over another

Each entry of ``GRAMMAR`` (a ``Kind``) gives an expression's name, its arguments (``Arg``: how each
is written, parsed and documented, and whether it names a bench or an example), how it renders and
its help text. ``render`` substitutes the expressions of a page; an unknown kind, a missing or an
unknown argument, or a result the data does not hold becomes an ``ExpressionError`` that names the
page, the line and the expression. ``quoted_benches`` and ``quoted_examples`` read the same
declaration to tell which result files a page quotes, and ``results.render_expression`` renders
through it. ``scripts/hooks.py`` only decides when each is rendered and turns the error into a
failed build. ``python -m scripts.expressions --write-docs`` writes the grammar's documentation
into CONTRIBUTING.md (between ``DOCS_START`` and ``DOCS_END``) from this declaration.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from scripts import compare_runs, evidence, pages, results, schedules, targets, verified

ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
DOCS_START, DOCS_END = "<!-- grammar:start -->", "<!-- grammar:end -->"
# What benchmarks/cases/matmul_variation.py measured (why the large matmuls move between runs).
MATMUL_VARIATION = ROOT / "benchmarks/evidence/overview/run10/matmul_variation.json"
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
    evidence_dir: Path = evidence.EVIDENCE  # where `{{ evidence <file> ... }}` finds <file>

    @property
    def up(self) -> str:
        return "../" * self.path.count("/")


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


ATTENTION_EXAMPLE = ROOT / "examples" / "attention.py"


def attention_bytes_table(batch: int = 32, heads: int = 16, head_dim: int = 128,
                          seqs: tuple[int, ...] = (1024, 4096, 16384)) -> str:
    """The least bytes the naive and the fused attention forward move, computed by the example's
    own ``naive_bytes`` and ``fused_bytes`` (fp16), as a sentence and a Markdown table."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("_attention_bytes", ATTENTION_EXAMPLE)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)

    def gb(n: int) -> str:
        return f"{n / 1e9:.2f} GB" if n < 100e9 else f"{n / 1e9:.0f} GB"

    rows = [f"With batch {batch}, {heads} heads, head dim {head_dim} and fp16:", "",
            "| seq | scores | softmax | `P @ V` | naive total | fused | ratio |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for seq in seqs:
        n = ex.naive_bytes(batch, heads, seq, seq, head_dim)
        f = ex.fused_bytes(batch, heads, seq, seq, head_dim)
        rows.append(f"| {seq} | {gb(n['scores'])} | {gb(n['softmax'])} | {gb(n['pv'])} "
                    f"| {gb(n['total'])} | {gb(f)} | {n['total'] / f:.0f}x |")
    return "\n".join(rows) + "\n"


def _reproduction(page: Page) -> str:
    if page.reproduction is None:
        return f"*No second run is recorded (`benchmarks/reproduction/{results.GPU_DIR}/` holds no results).*"
    return compare_runs.site_section(*page.reproduction)


# --- the grammar ---------------------------------------------------------------------------------

def _word(word: str) -> str:
    return word


def _point(word: str) -> tuple[str, str, str]:
    """'bench@x:provider' -> (bench, x, provider)."""
    try:
        bench, rest = word.split("@", 1)
        x, provider = rest.split(":", 1)
    except ValueError:
        raise results.ResultError(f"expected <bench>@<x>:<provider>, got {word!r}") from None
    return bench, x, provider


def _pair(word: str) -> tuple[str, str, str, str]:
    """'bench@x:a/b' -> (bench, x, a, b)."""
    bench, x, providers = _point(word)
    if "/" not in providers:
        raise results.ResultError(f"expected <bench>@<x>:<a>/<b>, got {word!r}")
    a, b = providers.split("/", 1)
    return bench, x, a, b


@dataclass(frozen=True)
class Arg:
    """One argument of an expression."""

    syntax: str  # as the documentation writes it
    help: str
    parse: Callable[[str], object] = _word  # a word -> its value (a ResultError when malformed)
    optional: bool = False  # may be left out (an optional last argument is known by ``accepts``)
    many: bool = False  # takes every remaining word (at least one unless optional)
    accepts: Callable[[str], bool] = lambda word: True  # for an optional last argument: is this word it?
    benches: Callable[[object], set[str]] | None = None  # the benches its value names (quoted_benches)
    example: bool = False  # its value names an example (quoted_examples)


@dataclass(frozen=True)
class Kind:
    """One expression: ``{{ <top> [<name>] <args>... }}``."""

    top: str  # the expression's first word: bench, examples, verified, schedule
    name: str | None  # a bench expression's kind (its second word); None for the others
    args: tuple[Arg, ...]
    render: Callable[..., str]  # (page, one value per argument) -> Markdown
    help: str
    whole_site: bool = False  # quotes every result file: the page needs no per-bench notice
    quotes: Callable[[tuple, dict | None], set[str] | None] | None = None  # which benches, where not the args'

    @property
    def syntax(self) -> str:
        return " ".join([self.top, *([self.name] if self.name else []), *(a.syntax for a in self.args)])


POINT = Arg("<bench>@<x>:<provider>", "one point of a bench: its name, the x value and the provider", _point,
            benches=lambda v: {v[0]})
PAIR = Arg("<bench>@<x>:<a>/<b>", "one point of a bench, two providers", _pair, benches=lambda v: {v[0]})
TIMING = Arg("[<timing>]", f"how the row was timed, one of {', '.join(results.TIMINGS)}; without it the point's "
             "do_bench row (or its only row)", optional=True, accepts=lambda w: w in results.TIMINGS)
BENCH_ARG = Arg("<bench>", "a bench's name (the `name` of a spec in a case's `BENCHMARKS`, "
                "`benchmarks/cases/<story>.py`)",
                benches=lambda v: {v})
NO_ARGS: tuple[Arg, ...] = ()
EVIDENCE_FILE = Arg("<file>", "a probe's JSON output, relative to `benchmarks/evidence/` "
                    "(`layer-norm/run32/layer_norm_hopper.json`): a header and a `points` list; or a "
                    "result CSV kept there, its rows the points", evidence.parse_file)
SELECTOR_HELP = ("`key=value,key=value` compared with each point's fields as text (`N=16384`; `true`, `false`; "
                 "a list's items joined with `x`: `shape=1024x1024x1024`), `+` for a space (`name=row+w8`), "
                 "`%2B` for a plus sign, `%2C` for a comma; it must match exactly one point. "
                 "`header`: the file's top level")
SELECTOR = Arg("<selector>", "one point of that file: " + SELECTOR_HELP, evidence.parse_selector)
SELECTOR_A = Arg("<selector a>", "the point on top of the ratio (as `<selector>`)", evidence.parse_selector)
SELECTOR_B = Arg("<selector b>", "the point below it; the keys it leaves out are those of `<selector a>` "
                 "(`candidate=cuBLAS+torch.matmul`: the same shape and dtype)", evidence.parse_selector)
EVIDENCE_FIELD = Arg("<point field>", "a field of that point, dotted for a nested one "
                     "(`kernels.layer_norm_bwd_kernel.spills`; a key holding a dot is found whole: "
                     "`host_us.1024.F.layer_norm`), `+` for a space, `%2B` for a plus sign")
EVIDENCE_FORMAT = Arg("[<format>]", f"how the number is written: {evidence.FORMATS}; without it the value as "
                      "the file holds it (a ratio: `3x`)", evidence.parse_format, optional=True,
                      accepts=evidence.is_format)


def _point_kind(name: str, help: str) -> Kind:
    return Kind("bench", name, (POINT, TIMING),
                lambda p, point, timing: results.quote_point(p.data, name, *point, timing), help)


def _targets_quote(values: tuple, specs: dict | None) -> set[str] | None:
    """One kernel's targets (a prefix, with the specs of presentation.yml) quote the benches they judge;
    the whole table, or a prefix without the specs, every result file."""
    (words,) = values
    if not words or specs is None:
        return None
    return {b for t, _ in targets.matching(specs, " ".join(words)) for b in t.benches}


GRAMMAR: tuple[Kind, ...] = (
    _point_kind("value", "the measured metric of one point, e.g. `3,998 GB/s`"),
    _point_kind("ms", "the median time of one point in ms"),
    _point_kind("us", "the median time of one point in µs, for times well under a millisecond"),
    Kind("bench", "ratio", (PAIR, TIMING),
         lambda p, pair, timing: results.quote_ratio(p.data, *pair, timing),
         "the metric of provider a over that of b at one point, e.g. `1.07×`"),
    _point_kind("pct", "one point's metric in percent of its bench's ceiling measured in the same run"),
    _point_kind("spread", "how far the passes of one point differ: max / min - 1, e.g. `1.2%`"),
    Kind("bench", "meta", (Arg("<example>", "an example's name (its result file's)", example=True),
                           Arg("<field>", "a field of that run's `.meta.json`: gpu, torch, triton, date, ...; "
                                          "dotted for a nested one (`ceilings.copy_gbps`)")),
         lambda p, example, key: results.quote_meta(p.data, example, key), "a field of one example's run"),
    Kind("bench", "ceiling", (BENCH_ARG,), lambda p, bench: results.quote_ceiling(p.data, bench),
         "the ceiling a bench is measured against, e.g. `4,270 GB/s`"),
    Kind("bench", "ridge", (Arg("<flops bench>", "a bench measured against a FLOP/s ceiling", benches=lambda v: {v}),
                            Arg("<bytes bench>", "a bench measured against the copy ceiling", benches=lambda v: {v})),
         lambda p, flops, gbps: results.quote_ridge(p.data, flops, gbps),
         "the roofline's ridge point: FLOP/s ceiling over bytes/s ceiling, in FLOP/byte"),
    Kind("bench", "winners", (BENCH_ARG, Arg("<provider>...", "the providers compared", many=True),
                              Arg("[cudagraph]", "compare CUDA-graph times instead of do_bench", optional=True,
                                  parse=lambda w: w, accepts=lambda w: w == "cudagraph")),
         lambda p, bench, providers, graph: targets.winners_table(p.data, bench, providers, graph or "do_bench"),
         "which provider is fastest at each x of one bench, and by how much"),
    Kind("bench", "targets", (Arg("[<prefix>...]", "the words the targets' labels start with (one kernel's); "
                                                   "without them every target", many=True, optional=True),),
         lambda p, words: targets.markdown_table(p.data, " ".join(words), p.example_order),
         "the speed targets `benchmarks/presentation.yml` declares, judged on the results", whole_site=True,
         quotes=_targets_quote),
    Kind("bench", "summary", NO_ARGS, lambda p: targets.summary_table(p.data),
         "per bench, the best Triton provider at its largest x against the ceiling", whole_site=True),
    Kind("bench", "plots", NO_ARGS, lambda p: all_plots(p), "every plot, each under its title", whole_site=True),
    Kind("bench", "host", (Arg("<example>", "an example's name (its result file's)", example=True),),
         lambda p, example: results.host_table(p.data, example),
         "one story's host time per call (the CPU time of one call, `host_call` rows), per bench and provider"),
    Kind("bench", "repeatability", NO_ARGS, lambda p: results.repeatability_table(p.data),
         "per bench: passes, how far they spread, how many points are host-bound", whole_site=True),
    Kind("bench", "provenance", NO_ARGS, lambda p: results.provenance_table(p.data, p.stale),
         "per result file: when and from which commit it was measured, whether it matches its example",
         whole_site=True),
    Kind("bench", "host_bound_evidence", NO_ARGS, lambda p: results.host_bound_evidence(p.data),
         "how do_bench and CUDA-graph times of the same points compare (the host-bound rule's evidence)",
         whole_site=True),
    Kind("bench", "reproduction", NO_ARGS, lambda p: _reproduction(p),
         "the verdict of the second run on the results shown", whole_site=True),
    Kind("bench", "matmul_variation", NO_ARGS, lambda p: matmul_variation_table(),
         "the matmul variation probe's sustained-load phases and re-tunings"),
    Kind("attention_bytes", None, NO_ARGS, lambda p: attention_bytes_table(),
         "the least bytes the naive and the fused attention forward move (the example's `naive_bytes` "
         "and `fused_bytes`), as a table"),
    Kind("examples", None, NO_ARGS, lambda p: p.examples_table(),
         "the map of the stories: each example's notebook, pages, tests, result file and plots"),
    Kind("verified", None, NO_ARGS, lambda p: verified.page_text(),
         "on which GPU and date the current code last passed every check, with the counts of each run"),
    Kind("verified_summary", None, NO_ARGS, lambda p: verified.summary_text(),
         "the same in one sentence: the GPU, the dates, whether the code is still the code that passed"),
    Kind("repo", None, NO_ARGS, lambda p: _repo_url(p),
         "the repository's URL (mkdocs.yml's `repo_url`), for clone commands"),
    Kind("schedule", None, (Arg("<trace>", "a trace of `benchmarks/schedules/<gpu>.json`"),
                            Arg("<statistic>", f"one of {', '.join(schedules.STATS)}")),
         lambda p, trace, stat: schedules.render([trace, stat]), "a number from a measured schedule"),
    Kind("evidence", None, (EVIDENCE_FILE, SELECTOR, EVIDENCE_FIELD, EVIDENCE_FORMAT),
         lambda p, file, sel, path, fmt: evidence.quote(p.evidence_dir, file, sel, path, fmt),
         "one field of one point of a probe's committed output (`benchmarks/evidence/`), e.g. `3749` "
         "(a probe's finding on a Benchmarks page, never typed)"),
    Kind("evidence_ratio", None, (EVIDENCE_FILE, SELECTOR_A, SELECTOR_B, EVIDENCE_FIELD, EVIDENCE_FORMAT),
         lambda p, file, a, b, path, fmt: evidence.quote_ratio(p.evidence_dir, file, a, b, path, fmt),
         "one field of one point over the same field of another point of the same file, e.g. `0.925x`"),
)
BENCH: dict[str, Kind] = {k.name: k for k in GRAMMAR if k.top == "bench"}
OTHERS: dict[str, Kind] = {k.top: k for k in GRAMMAR if k.top != "bench"}
TOP: tuple[str, ...] = tuple(dict.fromkeys(k.top for k in GRAMMAR))  # the expressions' first words
EXPR = re.compile(r"\{\{\s*(" + "|".join(TOP) + r")(?![\w.-])\s*([^}]*?)\s*\}\}")


def _repo_url(page: Page) -> str:
    if not page.repo_url:
        raise results.ResultError("mkdocs.yml sets no repo_url")
    return page.repo_url.rstrip("/")


# The kinds that render a table of numbers: on the page, left out of the search index (a search for
# a term should find the prose that explains it first).
DATA_TABLES = ("targets", "summary", "repeatability", "provenance", "matmul_variation", "winners")


def _alone_on_its_line(markdown: str, m: re.Match) -> bool:
    """Only an expression on a line of its own, at its start, can be wrapped in a block."""
    start = markdown.rfind("\n", 0, m.start()) + 1
    end = markdown.find("\n", m.end())
    return markdown[start:m.start()] == "" and markdown[m.end():None if end < 0 else end].strip() == ""


def kind_of(top: str, words: list[str]) -> tuple[Kind, list[str]]:
    """The kind of an expression and its argument words."""
    if top != "bench":
        return OTHERS[top], list(words)
    if not words:
        raise results.ResultError("empty expression")
    kind = BENCH.get(words[0])
    if kind is None:
        raise results.ResultError(f"unknown kind {words[0]!r}; known: {', '.join(sorted(BENCH))}")
    return kind, list(words[1:])


def parse_args(kind: Kind, words: list[str]) -> tuple:
    """One value per argument of ``kind`` (None for an optional one left out); a ResultError for a
    missing, malformed or unknown argument."""
    if not kind.args and words:
        raise results.ResultError(f"takes no arguments, got {' '.join(words)!r}")
    words, declared, tail = list(words), list(kind.args), []
    while declared and declared[-1].optional and not declared[-1].many:
        arg = declared.pop()
        tail.insert(0, arg.parse(words.pop()) if words and arg.accepts(words[-1]) else None)
    values = []
    for arg in declared:
        if arg.many:
            if not words and not arg.optional:
                raise results.ResultError(f"needs {arg.syntax}; expected: {kind.syntax}")
            values.append([arg.parse(w) for w in words])
            words = []
        elif not words:
            raise results.ResultError(f"needs {arg.syntax}; expected: {kind.syntax}")
        else:
            values.append(arg.parse(words.pop(0)))
    if words:
        raise results.ResultError(f"unknown argument{'s' if len(words) > 1 else ''} {' '.join(words)!r}; "
                                  f"expected: {kind.syntax}")
    return (*values, *tail)


def render_bench_words(page: Page, words: list[str]) -> str:
    """A ``{{ bench ... }}`` expression, from its words after ``bench``."""
    kind, args = kind_of("bench", words)
    return kind.render(page, *parse_args(kind, args))


def render(markdown: str, page: Page, names=TOP) -> str:
    """Substitute the expressions whose first word is in ``names``; leave the others for a later pass."""

    def one(m: re.Match) -> str:
        top, words = m.group(1), m.group(2).split()
        if top not in names:
            return m.group(0)
        try:
            kind, args = kind_of(top, words)
            out = kind.render(page, *parse_args(kind, args))
            if top == "bench" and words and words[0] in DATA_TABLES and _alone_on_its_line(markdown, m):
                out = pages.data_block(out)  # a table of numbers: kept out of the search index
            return out
        except (results.ResultError, KeyError, ValueError, IndexError, OSError, TypeError, ZeroDivisionError) as err:
            line = markdown[:m.start()].count("\n") + 1
            text = f"{{{{ {top} {m.group(2)} }}}}" if m.group(2) else f"{{{{ {top} }}}}"
            raise ExpressionError(f"{page.path}:{line}: {text}: {type(err).__name__}: {err}") from err

    return EXPR.sub(one, markdown)


def parsed_expressions(markdown: str, top: str = "bench") -> list[tuple[Kind, tuple]]:
    """(kind, values) of every expression named ``top`` on a page that parses (one that does not
    fails the page where it is rendered)."""
    out = []
    for m in EXPR.finditer(markdown):
        if m.group(1) != top:
            continue
        try:
            kind, args = kind_of(top, m.group(2).split())
            out.append((kind, parse_args(kind, args)))
        except results.ResultError:
            continue
    return out


def quoted_benches(markdown: str, specs: dict[str, dict] | None = None) -> set[str] | None:
    """The benches a page quotes, through ``{{ bench ... }}`` (the arguments the grammar says name
    a bench) or a plot; None: every result file (a whole-site kind). With the examples' ``specs``,
    ``targets <prefix>`` (one kernel's targets) quotes the benches those targets judge; without
    them, or with no prefix, it quotes every result file."""
    benches = set()
    for kind, values in parsed_expressions(markdown):
        if kind.quotes is not None:
            quoted = kind.quotes(values, specs)
            if quoted is None:
                return None
            benches |= quoted
            continue
        if kind.whole_site:
            return None
        for arg, value in zip(kind.args, values, strict=True):
            if arg.benches is not None and value is not None:
                benches |= arg.benches(value)
    return benches | set(PLOT_REF.findall(markdown))


def quoted_examples(markdown: str, data: results.Results, benches: set[str] | None) -> set[str]:
    """The examples whose result files a page quotes: through ``{{ bench ... }}`` (the benches it
    quotes, ``benches``: ``quoted_benches(markdown)``, and the arguments that name an example) or a
    plot."""
    if benches is None:
        return set(data.meta) | {r["example"] for r in data.rows}
    examples = {value for kind, values in parsed_expressions(markdown)
                for arg, value in zip(kind.args, values, strict=True) if arg.example}
    for bench in benches:
        try:
            examples.add(data.example_of(bench))
        except results.ResultError:
            pass  # an unknown bench fails the page where it is rendered
    return examples


# --- the grammar's documentation (CONTRIBUTING.md) --------------------------------------------------

def grammar_docs() -> str:
    """The section of CONTRIBUTING.md between the markers, written from ``GRAMMAR``."""
    lines = [DOCS_START,
             "<!-- written by `python -m scripts.expressions --write-docs` from `GRAMMAR` in "
             "scripts/expressions.py: edit that, not this -->", "",
             "| expression | renders |", "| --- | --- |"]
    lines += [f"| `{{{{ {k.syntax} }}}}` | {k.help}" + ("; quotes every result file" if k.whole_site else "") + " |"
              for k in GRAMMAR]
    seen, args = set(), []
    for k in GRAMMAR:
        for a in k.args:
            if a.syntax not in seen:
                seen.add(a.syntax)
                args.append(a)
    lines += ["", "| argument | what it is |", "| --- | --- |"]
    lines += [f"| `{a.syntax}` | {a.help} |" for a in args]
    lines += ["", "An unknown kind, a missing or unknown argument, or a result the data does not hold fails "
              "the build, naming the page, the line and the expression.", DOCS_END]
    return "\n".join(lines)


def docs_in(text: str) -> str:
    """The grammar section of a CONTRIBUTING.md text (markers included)."""
    start, end = text.find(DOCS_START), text.find(DOCS_END)
    if start < 0 or end < start:
        raise ValueError(f"CONTRIBUTING.md needs a {DOCS_START} ... {DOCS_END} section")
    return text[start:end + len(DOCS_END)]


def write_docs(path: Path = CONTRIBUTING) -> bool:
    """Rewrite the grammar section of CONTRIBUTING.md; True when it changed."""
    text = Path(path).read_text()
    new = text.replace(docs_in(text), grammar_docs())
    if new != text:
        Path(path).write_text(new)
    return new != text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The page expressions' grammar.")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the grammar's section of CONTRIBUTING.md from its declaration")
    args = parser.parse_args(argv)
    if not args.write_docs:
        print(grammar_docs())
        return 0
    print(f"CONTRIBUTING.md {'updated' if write_docs() else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
