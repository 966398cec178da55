"""Every name a page's runnable code uses is defined on that page, whichever branch runs.

`pytest --codeblocks docs/` runs each block chain once, down the branches this machine takes:
in the interpreter the attention launcher takes its descriptor path, on the H200 for some
shapes the pointer path, so a page that includes the launcher without the kernels of the
other path passes on one machine and fails with a NameError on the other. Undefined names
are found here without running anything: each runnable python block (with its `cont`
blocks, as the plugin runs it) goes through ruff's undefined-name rules (F821-F823).
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


def undefined_names(code: str) -> list[str]:
    """ruff's undefined-name findings for one block of code, as 'line N: message'."""
    out = subprocess.run([str(RUFF), "check", "--isolated", "--select", "F821,F822,F823", "--output-format",
                          "json", "--stdin-filename", "block.py", "-"],
                         input=code, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        raise RuntimeError(f"ruff failed: {out.stderr}")
    return [f"line {e['location']['row']}: {e['message']}" for e in json.loads(out.stdout or "[]")]


def runnable_blocks(page: Path):
    from pytest_codeblocks import extract_from_buffer

    for block in extract_from_buffer(io.StringIO(expand_snippets(page.read_text(), ROOT))):
        if block.syntax == "python" and not any("skip" in mark for mark in block.marks):
            yield block


def test_the_check_finds_an_undefined_name():
    assert undefined_names("def f():\n    return g()\n") == ["line 2: Undefined name `g`"]
    assert undefined_names("import math\nprint(math.pi)\n") == []


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT / "docs").as_posix() for p in PAGES])
def test_page_code_defines_every_name_it_uses(page):
    problems = [f"block at line {b.lineno}: {msg}" for b in runnable_blocks(page) for msg in undefined_names(b.code)]
    assert not problems, f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)
