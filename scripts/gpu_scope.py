"""What a change needs to run again on a GPU before it may land.

The GPU record (``benchmarks/verified/<gpu>.json``) names the sha256 that last passed of every
covered file (``verified.verified_files``: the examples, the tests, the root conftest and the
code-block plugin). When some of them change, ``scope`` says what exercises them, and so what
``python -m scripts.gpu_check --changed`` runs:

* a changed example: every test that imports it (or names ``examples/<it>.py``, or walks every
  example), its benchmark case and the tests that import that, the pages whose code blocks
  include it, and its own self-check;
* a changed benchmark case (``benchmarks/cases/<story>.py``, ``peers.py``): the tests that import it;
* a changed test: that test; a changed test helper (``tests/support.py``, ``tests/strategies.py``,
  ...): every test that imports it, directly or through another helper;
* ``scripts/codeblocks.py``: every page's code blocks;
* a ``conftest.py``: everything (it shapes every test).

Imports are read with ``ast`` (top-level names only); a test that joins a path with the
``"examples"`` folder, walks it, names an ``EXAMPLES`` constant or imports by name (``__import__``)
counts as depending on every example. Pages are read for
``examples/<name>.py``. Nothing here needs a GPU: ``tests/test_verified.py`` checks it on the CPU.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ("conftest.py", "tests/conftest.py")  # shape every test: a change re-runs all of it
CODEBLOCKS = "scripts/codeblocks.py"
CASES = "benchmarks/cases/"  # a story's benchmark case imports its example; some tests import the case
PROPERTY_PREFIX = "tests/test_properties_"
# A test that walks the examples folder, or every example's source, depends on each example.
WALKS_EXAMPLES = re.compile(r"""/\s*["']examples["']|["']examples["']\s*\)?\s*[./]\s*(?:glob|iterdir|rglob)"""
                            r"""|examples/\*\.py|EXAMPLES(?:_DIR)?\b|__import__\(""")
PAGE_EXAMPLE = re.compile(r"examples/([A-Za-z0-9_]+)\.py")


@dataclass
class Scope:
    """What to run again. ``full``: everything (``reason`` says why); else the lists."""

    full: bool = False
    reason: str = ""
    tests: list[str] = field(default_factory=list)  # test files, properties excluded
    properties: list[str] = field(default_factory=list)  # tests/test_properties_*.py
    pages: list[str] = field(default_factory=list)  # docs pages whose code blocks run again
    examples: list[str] = field(default_factory=list)  # example names whose self-check runs again
    covered: list[str] = field(default_factory=list)  # covered files this run re-verifies

    @property
    def empty(self) -> bool:
        return not (self.full or self.tests or self.properties or self.pages or self.examples)


def imported_names(source: str) -> set[str]:
    """Module names a file imports, each with its parents (``import a.b`` -> ``a``, ``a.b``;
    ``from a import b`` -> ``a``, ``a.b``: b may be a module); relative imports ignored."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            full = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            full = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in full:
            parts = name.split(".")
            names |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return names


def _modules(root: Path, covered: list[str]) -> dict[str, str]:
    """module name -> covered file, for the names tests import (examples, test helpers and the
    benchmark cases, ``benchmarks.cases.<story>``)."""
    out = {}
    for rel in covered:
        if rel.startswith(("examples/", "tests/")) and rel.count("/") == 1:
            out[Path(rel).stem] = rel
        elif rel.startswith(CASES):
            stem = Path(rel).stem
            out["benchmarks.cases" if stem == "__init__" else f"benchmarks.cases.{stem}"] = rel
    return out


def _dependents(root: Path, covered: list[str]) -> dict[str, set[str]]:
    """covered file -> the covered files that depend on it (directly)."""
    modules = _modules(root, covered)
    examples = [rel for rel in covered if rel.startswith("examples/")]
    out: dict[str, set[str]] = {rel: set() for rel in covered}
    for rel in covered:
        if not rel.startswith(("tests/", CASES)):
            continue
        text = (root / rel).read_text()
        for name in imported_names(text):
            if name in modules and modules[name] != rel:
                out[modules[name]].add(rel)
        if rel.startswith(CASES):
            continue  # a case depends on what it imports; the rules below read tests
        for stem in PAGE_EXAMPLE.findall(text):
            if f"examples/{stem}.py" in out:
                out[f"examples/{stem}.py"].add(rel)
        if WALKS_EXAMPLES.search(text):
            for example in examples:
                out[example].add(rel)
        if CODEBLOCKS in out and "scripts" in imported_names(text) and re.search(r"\bcodeblocks\b", text):
            out[CODEBLOCKS].add(rel)
    return out


def pages_including(root: Path, examples: set[str]) -> list[str]:
    """docs pages (paths relative to the repository) whose text names one of these example stems."""
    docs = root / "docs"
    pages = []
    for page in sorted(docs.rglob("*.md")) if docs.is_dir() else []:
        if set(PAGE_EXAMPLE.findall(page.read_text())) & examples:
            pages.append(page.relative_to(root).as_posix())
    return pages


def scope(changed: list[str], root: Path | None = None, covered: list[str] | None = None) -> Scope:
    """What must run again when the covered files in ``changed`` (changed or added) differ from the record."""
    root = ROOT if root is None else Path(root)
    if covered is None:
        from scripts.verified import verified_files

        covered = verified_files(root)
    changed = sorted(set(changed) & set(covered))
    if not changed:
        return Scope()
    if every := [rel for rel in changed if rel in EVERYTHING]:
        return Scope(full=True, reason=f"{', '.join(every)} changed: it shapes every test")
    dependents = _dependents(root, covered)
    seen, todo = set(), list(changed)
    while todo:  # everything that depends on a changed file, through helpers too
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        todo += sorted(dependents.get(rel, ()))
    examples = sorted(Path(rel).stem for rel in seen if rel.startswith("examples/"))
    tests = sorted(rel for rel in seen if Path(rel).name.startswith("test_"))
    pages = pages_including(root, set(examples))
    if CODEBLOCKS in seen:
        pages = ["docs/"]
    return Scope(
        tests=[t for t in tests if not t.startswith(PROPERTY_PREFIX)],
        properties=[t for t in tests if t.startswith(PROPERTY_PREFIX)],
        pages=pages,
        examples=examples,
        covered=sorted(seen),
    )
