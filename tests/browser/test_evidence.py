"""The evidence the Benchmarks pages cite (benchmarks/evidence/<page>/, CONTRIBUTING "Where each thing
goes"): it holds only what some page cites, everything a page cites there exists, and the old homes of
the logs and probes (benchmarks/logs, benchmarks/probes) are gone. No site build needed.

A file counts as cited when its path, or the path of a folder holding it below its page's folder (a page
may cite a whole run, `benchmarks/evidence/matmul/run30/`), appears in a page under docs/ (Markdown,
JavaScript or HTML), in scripts/ (a data file a script reads) or in a test of tests/ (a test stating
a finding, such as tests/test_layer_norm.py on a layer-norm log). A page's `{{ evidence <file> ... }}` or
`{{ evidence_ratio <file> ... }}` (scripts/expressions.py) cites `benchmarks/evidence/<file>`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "benchmarks" / "evidence"
# the Benchmarks pages (CONTRIBUTING's table): docs/benchmarks/<page>.md, and `overview` for docs/benchmarks.md
PAGES = {"softmax", "matmul", "linear-gelu", "matmul-persistent", "reductions", "layer-norm", "dropout",
         "attention", "guide", "practice", "overview"}
PATH = re.compile(r"benchmarks/(?:evidence|cases)/[\w./-]*[\w-]")
OLD = re.compile(r"benchmarks/(?:logs|probes)\b")
QUOTE = re.compile(r"\{\{\s*evidence(?:_ratio)?\s+(\S+)")  # a page's quote of a probe's JSON


def _texts(folder: str, suffixes: tuple[str, ...]) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(errors="replace")
            for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and p.suffix in suffixes}


def citing_texts() -> dict[str, str]:
    """Every file that may cite evidence, by its path."""
    return {**_texts("docs", (".md", ".js", ".html")), **_texts("scripts", (".py",)), **_texts("tests", (".py",))}


def cited_paths(texts: dict[str, str]) -> dict[str, list[str]]:
    """benchmarks/evidence/... and benchmarks/cases/... paths cited -> the files citing them."""
    cited: dict[str, list[str]] = {}
    for name, text in texts.items():
        for m in PATH.finditer(text):
            cited.setdefault(m.group(0).rstrip("/"), []).append(name)
        if name.startswith("docs/"):  # a test's quotes are of made-up files
            for m in QUOTE.finditer(text):
                cited.setdefault(f"benchmarks/evidence/{m.group(1)}", []).append(name)
    return cited


def evidence_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in EVIDENCE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def test_the_old_homes_of_logs_and_probes_are_gone():
    for old in ("benchmarks/logs", "benchmarks/probes"):
        assert not (ROOT / old).exists(), f"{old} still exists: its cited files belong in benchmarks/evidence/<page>/"


def test_evidence_is_sorted_by_benchmarks_page():
    assert EVIDENCE.is_dir(), "benchmarks/evidence/ is missing"
    folders = {p.name for p in EVIDENCE.iterdir() if p.is_dir()}
    assert folders <= PAGES, f"not a Benchmarks page: {sorted(folders - PAGES)} (one of {sorted(PAGES)})"
    loose = [p.name for p in EVIDENCE.iterdir() if p.is_file()]
    assert not loose, f"evidence outside a page's folder: {loose}"


def test_every_evidence_file_is_cited():
    cited = cited_paths(citing_texts())
    uncited = []
    for path in evidence_files():
        parts = path.split("/")  # benchmarks, evidence, <page>, ...
        holders = {"/".join(parts[:i]) for i in range(4, len(parts) + 1)}  # the file, and its folders below <page>
        if not holders & cited.keys():
            uncited.append(path)
    assert not uncited, (f"{len(uncited)} evidence file(s) that no page under docs/ (nor scripts/, nor a test) "
                         "cites by path; cite each where its finding is stated, or delete it (git keeps it):\n  "
                         + "\n  ".join(uncited))


def made_up_in_a_test(path: str, names: list[str]) -> bool:
    """A benchmark case cited only by tests: a made-up story's case file, which a unit test writes
    into its own temporary repository (tests/test_results_pipeline.py, tests/test_verified.py)."""
    return path.startswith("benchmarks/cases/") and all(name.startswith("tests/") for name in names)


def test_every_cited_evidence_path_exists():
    cited = cited_paths(citing_texts())
    missing = [f"{path} (cited in {', '.join(sorted(set(names)))})" for path, names in sorted(cited.items())
               if not (ROOT / path).exists() and not made_up_in_a_test(path, names)]
    assert not missing, "cited but not there:\n  " + "\n  ".join(missing)


@pytest.mark.parametrize("folder", ["docs", "scripts"])
def test_no_page_or_script_cites_the_old_homes(folder):
    texts = _texts(folder, (".md", ".js", ".html", ".py"))
    left = [f"{name}:{n}" for name, text in texts.items() for n, line in enumerate(text.splitlines(), 1)
            if OLD.search(line)]
    assert not left, ("benchmarks/logs and benchmarks/probes are gone; rewrite these with "
                      "apply-evidence-map.py (evidence-map.tsv):\n  " + "\n  ".join(left))
