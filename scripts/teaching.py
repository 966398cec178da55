"""What a teaching page may not say, and how long it may be.

A teaching page (home, quickstart, the guide, the worked kernels, practice except the
benchmarking page, the exercises, the glossary, the cheat sheet) speaks of Triton and the
reader's problem. The project's own history (run and issue numbers, probe scripts, log and
evidence paths, reproduction notices) belongs on the Benchmarks pages, one link away.

    python -m scripts.teaching            # every teaching page: history references and prose words

``HISTORY`` is the one list of patterns; ``scripts/hooks.py`` fails the build when a rendered
teaching page matches one, and ``tests/browser/test_teaching_pages.py`` checks the built HTML.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# The project's history, as it shows up in prose. Each entry: (name, pattern).
HISTORY: list[tuple[str, re.Pattern]] = [
    ("a run number", re.compile(
        r"\bruns?\s?#?\d{1,3}(?:'s)?\b(?!\s*(?:times|x\b|%|ms|us|µs|steps|calls|iterations|programs|elements|"
        r"rows|passes|warps|stages|orders?)\b)", re.I)),
    ("an issue number", re.compile(r"\b(?:issue|PR|pull request)\s?#?\d{1,4}\b(?!\s*(?:times|%))", re.I)),
    ("a log, probe or evidence path", re.compile(r"benchmarks/(?:logs|probes|evidence|reproduction)\b")),
    ("a probe script or log file", re.compile(r"\bprobes?/\w|\bprobe_\w+\.(?:txt|py|json)\b")),
    ("a reproduction box", re.compile(r"\{\{\s*bench\s+reproduction|points? not reproduced within|"
                                      r"A second full benchmark run", re.I)),
    ("a commit hash", re.compile(r"\bcommit\s+[0-9a-f]{7,40}\b", re.I)),
]

# Prose words (fenced code and expressions excluded) a page may hold, by path prefix.
WORD_LIMITS = {"kernels/": 2000, "guide/": 2500}
INDEX_PAGES = {"kernels/index.md", "guide/index.md"}
# Widest line of code a teaching page shows (examples/ and exercises/ are formatted to it: their
# ruff.toml), so that a listing reads without scrolling sideways.
CODE_COLUMNS = 88

_NOT_TEACHING = ("benchmarks.md", "benchmarks/", "practice/benchmarking.md", "examples/", "includes/", "widgets/")


def is_teaching(rel: str) -> bool:
    """``rel``: a page's path under docs/ (``kernels/softmax.md``)."""
    return rel.endswith(".md") and not rel.startswith(_NOT_TEACHING)


def history_references(text: str) -> list[tuple[str, str, int]]:
    """(what, the matched text, line number) for each history reference in ``text``."""
    out = []
    for what, pattern in HISTORY:
        for m in pattern.finditer(text):
            out.append((what, m.group(0), text.count("\n", 0, m.start()) + 1))
    return sorted(out, key=lambda hit: hit[2])


_FENCE = re.compile(r"```.*?```", re.S)
_EXPR = re.compile(r"\{\{.*?\}\}", re.S)


def prose_words(markdown: str) -> int:
    """Words of prose: fenced code blocks dropped, each ``{{ ... }}`` expression one word (the
    same count as the project's before-stop hook, which also counts HTML comments and include
    lines outside fences)."""
    return len(_EXPR.sub("N", _FENCE.sub("", markdown)).split())


def word_limit(rel: str) -> int | None:
    if rel in INDEX_PAGES:
        return None
    return next((n for prefix, n in WORD_LIMITS.items() if rel.startswith(prefix)), None)


def problems(rel: str, markdown: str, source: str | None = None) -> list[str]:
    """What is wrong with a teaching page (empty for a page that is not one): history in ``markdown``,
    and prose words in ``source`` (the page as written; default ``markdown``)."""
    if not is_teaching(rel):
        return []
    out = [f"{rel}:{line}: {what} ({hit!r}): move it to the Benchmarks pages"
           for what, hit, line in history_references(markdown)]
    limit = word_limit(rel)
    if limit is not None and (n := prose_words(markdown if source is None else source)) > limit:
        out.append(f"{rel}: {n} words of prose, over the {limit} a page of this section may hold")
    return out


def main(argv: list[str] | None = None) -> int:
    total = 0
    for page in sorted(DOCS.rglob("*.md")):
        rel = page.relative_to(DOCS).as_posix()
        if not is_teaching(rel):
            continue
        text = page.read_text()
        found = problems(rel, text)
        limit = word_limit(rel)
        words = prose_words(text)
        print(f"{rel}: {words} words" + (f" (limit {limit})" if limit else "")
              + (f", {len(found)} problem(s)" if found else ""))
        for line in found:
            print("   ", line)
        total += len(found)
    print(f"{total} problem(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
