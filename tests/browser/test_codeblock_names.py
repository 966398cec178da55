"""Every name a page's runnable code uses is defined on that page, whichever branch runs.

`pytest --codeblocks docs/` runs each block chain once, down the branches this machine takes:
in the interpreter the attention launcher takes its descriptor path, on the H200 for some
shapes the pointer path, so a page that includes the launcher without the kernels of the
other path passes on one machine and fails with a NameError on the other. Undefined names
are found here without running anything: each runnable python block (with its `cont`
blocks, as the plugin runs it) goes through ruff's undefined-name rules (F821-F823), all
blocks of all pages in one ruff run.
Blocks marked `skip` are fragments shown for reading and are left out.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.codeblocks import expand_snippets

ROOT = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).with_name("ruff")
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def _ruff_undefined(paths: list[Path]) -> list[dict]:
    """ruff's undefined-name findings (F821-F823) for these files, in one run."""
    out = subprocess.run([str(RUFF), "check", "--isolated", "--select", "F821,F822,F823", "--output-format",
                          "json", *map(str, paths)], capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed: {out.stderr}")
    return json.loads(out.stdout or "[]")


def runnable_blocks(page: Path):
    from pytest_codeblocks import extract_from_buffer

    for block in extract_from_buffer(io.StringIO(expand_snippets(page.read_text(), ROOT))):
        if block.syntax == "python" and not any("skip" in mark for mark in block.marks):
            yield block


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[Path, list[str]]:
    """Each page's undefined names, 'block at line N: message': every block chain of every page
    written to a file of its own, then one ruff run over all of them."""
    folder = tmp_path_factory.mktemp("blocks")
    where = {}
    for page in PAGES:
        for block in runnable_blocks(page):
            path = folder / f"block{len(where)}.py"
            path.write_text(block.code)
            where[path.name] = (page, block.lineno)
    found: dict[Path, list[str]] = {page: [] for page in PAGES}
    for e in _ruff_undefined(sorted(folder.iterdir())) if where else []:
        page, line = where[Path(e["filename"]).name]
        found[page].append(f"block at line {line}: line {e['location']['row']}: {e['message']}")
    return found


def test_the_check_finds_an_undefined_name(tmp_path):
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text("def f():\n    return g()\n")
    good.write_text("import math\nprint(math.pi)\n")
    assert [(Path(e["filename"]).name, e["location"]["row"], e["message"])
            for e in _ruff_undefined([bad, good])] == [("bad.py", 2, "Undefined name `g`")]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT / "docs").as_posix() for p in PAGES])
def test_page_code_defines_every_name_it_uses(page, problems):
    assert not problems[page], f"{page.relative_to(ROOT)}:\n" + "\n".join(problems[page])
