"""Guards of the snippet pipeline: the pages, the tests and the build see one source.

* a page that includes a missing file or section fails the build;
* an example section marker without its partner fails the build;
* an ``examples/*.py`` that no page includes fails;
* a python fence in docs/ that is neither included from examples/ nor marked
  as not run fails;
* ``pytest --codeblocks`` runs the expanded snippets, so changing a kernel body
  in an example changes the outcome (checked end to end in a scratch copy).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="site tests need the site tools (pip install -e .[site])")
from scripts import codeblocks, results  # noqa: E402  (needs markdown and yaml, from the site tools)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent


def load_hooks():
    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "scripts" / "hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


INCLUDE = re.compile(r'^\s*-{1,}8<-{1,}\s+"(examples/[^":]+\.py)(?::([\w-]+))?"\s*$')
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(.*)$")
SKIP_MARK = re.compile(r"<!--\s*(pytest\.mark\.skip|pytest-codeblocks:skip)")


def fences(path: Path):
    """Yield (line number, info string, body lines, marker line before the fence)."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, ticks, info = m.groups()
        start = i
        prev = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        yield start + 1, info.strip(), body, prev
        i += 1


# --- the build refuses broken includes -------------------------------------------------------

def make_scratch_site(tmp_path: Path, page: str, example_text: str | None = None) -> Path:
    """A minimal MkDocs project with the repository's own markdown settings."""
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=codeblocks._AnyTagLoader)
    scratch = {"site_name": "scratch", "strict": True, "markdown_extensions": config["markdown_extensions"]}
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text(page)
    shutil.copytree(ROOT / "docs" / "includes", tmp_path / "docs" / "includes")  # snippets' auto_append
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(scratch))
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    if example_text is not None:
        (tmp_path / "examples" / "vector_add.py").write_text(example_text)
    return tmp_path


def mkdocs_build(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "-q"], cwd=path, capture_output=True, text=True, timeout=300,
    )


def test_scratch_build_passes_with_a_good_include(tmp_path):
    site = make_scratch_site(tmp_path, '```python\n--8<-- "examples/vector_add.py:kernel"\n```\n')
    result = mkdocs_build(site)
    assert result.returncode == 0, result.stderr
    assert "add_kernel" in (site / "site" / "index.html").read_text()


@pytest.mark.parametrize(
    "include", ['"examples/vector_add.py:no_such_section"', '"examples/no_such_file.py:kernel"'],
)
def test_missing_file_or_section_fails_the_build(tmp_path, include):
    site = make_scratch_site(tmp_path, f"```python\n--8<-- {include}\n```\n")
    result = mkdocs_build(site)
    assert result.returncode != 0
    assert "SnippetMissingError" in result.stderr or "not found" in result.stderr.lower()


def test_removing_a_start_marker_fails_the_build(tmp_path):
    text = (EXAMPLES / "vector_add.py").read_text()
    broken = text.replace("# --8<-- [start:kernel]\n", "", 1)
    assert broken != text
    page = '```python\n--8<-- "examples/vector_add.py:kernel"\n```\n'
    result = mkdocs_build(make_scratch_site(tmp_path, page, example_text=broken))
    assert result.returncode != 0
    assert "SnippetMissingError" in result.stderr


def test_removing_an_end_marker_fails_the_build(tmp_path, monkeypatch):
    # Without its end marker pymdownx.snippets would silently include the rest of the
    # file, so the site's pre-build hook checks every marker pair and stops the build.
    from mkdocs.exceptions import PluginError

    text = (EXAMPLES / "vector_add.py").read_text()
    broken = text.replace("# --8<-- [end:kernel]\n", "", 1)
    assert broken != text
    (tmp_path / "vector_add.py").write_text(broken)
    hooks = load_hooks()
    assert hooks.check_sections(tmp_path / "vector_add.py") == [
        f"vector_add.py:{text[:text.index('# --8<-- [start:kernel]')].count(chr(10)) + 1}: "
        "section 'kernel' never ends"
    ]
    monkeypatch.setattr(hooks, "EXAMPLES", tmp_path)
    with pytest.raises(PluginError, match="section 'kernel' never ends"):
        hooks.on_pre_build(config={})


def test_every_example_has_balanced_sections():
    hooks = load_hooks()
    problems = [p for src in hooks.example_files() for p in hooks.check_sections(src)]
    assert problems == []


# --- every example is on a page, every python fence comes from an example --------------------

def test_every_example_is_included_by_a_page():
    included = set()
    for page in pages():
        for line in page.read_text().splitlines():
            m = INCLUDE.match(line)
            if m:
                included.add(Path(m.group(1)).stem)
    orphans = [p.stem for p in results.example_files(EXAMPLES)]
    orphans = [name for name in orphans if name not in included]
    assert orphans == [], f"examples no page includes: {orphans}"


CALL_LINE = re.compile(r"^[A-Za-z_][\w.]*\(.*\)\s*(#.*)?$")


def test_python_fences_come_from_examples_or_are_marked():
    bad = []
    for page in pages():
        for lineno, info, body, prev in fences(page):
            lang = info.split()[0] if info else ""
            if not lang.startswith("py") and lang not in ("ipython", "pycon"):
                continue
            where = f"{page.relative_to(ROOT)}:{lineno}"
            if SKIP_MARK.match(prev):
                continue
            if info != "python":
                bad.append(f"{where}: info string {info!r} is never run by pytest-codeblocks; use exactly 'python'")
                continue
            code = [ln for ln in body if ln.strip()]
            includes = [ln for ln in code if INCLUDE.match(ln)]
            rest = [ln for ln in code if not INCLUDE.match(ln)]
            if not includes:
                bad.append(f"{where}: python fence with no --8<-- include from examples/ and no skip mark")
            elif any(not CALL_LINE.match(ln.strip()) for ln in rest):
                bad.append(f"{where}: a fence may add only single calls after its includes: {rest}")
    assert bad == [], "\n".join(bad)


def test_fence_checker_flags_pasted_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("```python\nx = 1\n```\n\n```py\n--8<-- \"examples/vector_add.py:kernel\"\n```\n")
    found = list(fences(page))
    assert [f[1] for f in found] == ["python", "py"]
    assert not INCLUDE.match(found[0][2][0]) and INCLUDE.match(found[1][2][0])


# --- pytest --codeblocks runs exactly what the page renders ----------------------------------

def test_codeblocks_plugin_expands_snippets_and_uses_the_public_extractor():
    import pytest_codeblocks

    text = codeblocks.expand_snippets('```python\n--8<-- "examples/vector_add.py:kernel"\n```\n')
    assert "def add_kernel(" in text and "--8<--" not in text
    blocks = pytest_codeblocks.extract_from_buffer(__import__("io").StringIO(codeblocks.expand_snippets(CHAIN)))
    assert len(blocks) == 1 and "def add_kernel(" in blocks[0].code and "self_check()" in blocks[0].code


def test_codeblocks_is_the_projects_plugin(tmp_path):
    """`pytest --codeblocks` collects scripts/codeblocks.py's items, not pytest-codeblocks' own
    (pyproject.toml: -p no:codeblocks -p scripts.codeblocks)."""
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--codeblocks",
                             "--collect-only", "docs/quickstart.md"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "docs/quickstart.md::line" in result.stdout
    config = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "--codeblocks", "-p", "no:cacheprovider",
                             "--trace-config", "docs/quickstart.md"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300).stdout
    assert "scripts.codeblocks" in config and "pytest_codeblocks.plugin" not in config


CHAIN = textwrap.dedent(
    """\
    ```python
    --8<-- "examples/vector_add.py:setup"
    ```

    <!--pytest-codeblocks:cont-->
    ```python
    --8<-- "examples/vector_add.py:kernel"
    ```

    <!--pytest-codeblocks:cont-->
    ```python
    --8<-- "examples/vector_add.py:launcher"
    ```

    <!--pytest-codeblocks:cont-->
    ```python
    --8<-- "examples/vector_add.py:checks"
    ```

    <!--pytest-codeblocks:cont-->
    ```python
    --8<-- "examples/vector_add.py:check"

    self_check()
    ```
    """
)


def run_codeblocks(tmp_path: Path, example_text: str) -> subprocess.CompletedProcess:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "examples").mkdir(exist_ok=True)
    (tmp_path / "docs" / "page.md").write_text(CHAIN)
    shutil.copytree(ROOT / "docs" / "includes", tmp_path / "docs" / "includes", dirs_exist_ok=True)
    (tmp_path / "examples" / "vector_add.py").write_text(example_text)
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the scratch folder is the rootdir
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:codeblocks",
         "-p", "scripts.codeblocks", "--codeblocks", "docs/"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # the plugin, scripts/codeblocks.py, from this repository
    )


def test_codeblocks_run_the_example_as_it_is(tmp_path):
    result = run_codeblocks(tmp_path, (EXAMPLES / "vector_add.py").read_text())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_codeblock_items_report_the_line_of_their_fence(tmp_path):
    """item.location is 0-based (pytest adds 1 when it prints it): the first fence of the chain is line 3."""
    run_codeblocks(tmp_path, (EXAMPLES / "vector_add.py").read_text())  # writes the scratch project
    (tmp_path / "docs" / "page.md").write_text("# A page\n\n" + CHAIN)
    script = ("import json, sys, pytest\n"
              "class Record:\n"
              "    def pytest_collection_modifyitems(self, items):\n"
              "        print('LOCATIONS', json.dumps([list(i.location) for i in items]))\n"
              "sys.exit(pytest.main(['--co', '-q', '-p', 'no:cacheprovider', '-p', 'no:codeblocks', '-p', "
              "'scripts.codeblocks', '--codeblocks', 'docs/'], plugins=[Record()]))\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("LOCATIONS"))
    assert __import__("json").loads(line.split(" ", 1)[1]) == [["docs/page.md", 2, "code block, line 3"]]


def test_changing_the_kernel_body_changes_the_outcome(tmp_path):
    text = (EXAMPLES / "vector_add.py").read_text()
    body = "    tl.store(z_ptr + offsets, x + y, mask=mask)"
    assert body in text
    result = run_codeblocks(tmp_path, text.replace(body, body.replace("x + y", "x - y")))
    assert result.returncode != 0
    assert "Mismatched elements" in result.stdout + result.stderr
