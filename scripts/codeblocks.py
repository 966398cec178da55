"""The project's pytest plugin behind ``pytest --codeblocks docs/``: run what the site renders.

Pages do not paste code: a fence holds a pymdownx.snippets line such as
``--8<-- "examples/vector_add.py:kernel"`` and MkDocs expands it at build time. This plugin

1. expands every page with the snippets preprocessor and the settings ``mkdocs.yml`` gives
   MkDocs, then hands the text to pytest-codeblocks' public extractor
   (``pytest_codeblocks.extract_from_buffer``: its markers, ``cont``, ``skip``, expected
   output) and collects one test per block;
2. runs each python block as ``__main__`` from a registered source file (``linecache``),
   because ``@triton.jit`` reads its function's source with ``inspect`` and, on a GPU,
   refuses code that has no file; shell blocks run in a shell, as pytest-codeblocks does.

pytest-codeblocks' own collector is switched off in pyproject.toml (``-p no:codeblocks``) and
this module is loaded instead (``-p scripts.codeblocks``); it uses nothing of pytest-codeblocks
but its documented extractor. Tested in tests/test_site_guards.py.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE = ("python", "sh", "bash")


class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml may hold `!!python/name:` tags; the snippet settings never do."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def snippet_settings(root: Path) -> dict:
    config = yaml.load((root / "mkdocs.yml").read_text(), Loader=_AnyTagLoader)
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            return dict(ext["pymdownx.snippets"] or {})
        if ext == "pymdownx.snippets":
            return {}
    raise RuntimeError("mkdocs.yml does not enable pymdownx.snippets")


def expand_snippets(text: str, root: Path = ROOT) -> str:
    """Expand `--8<--` lines as MkDocs does (paths relative to `root`, the repository)."""
    import markdown

    settings = snippet_settings(root)
    settings["base_path"] = [str(root / b) for b in settings.get("base_path", ["."])]
    md = markdown.Markdown(extensions=["pymdownx.snippets"], extension_configs={"pymdownx.snippets": settings})
    return "\n".join(md.preprocessors["snippet"].run(text.splitlines())) + "\n"


def run_python_block(code: str, filename: str) -> None:
    """Execute a block as a module named __main__ whose source inspect can find.

    The code is also written to ``filename`` so tracebacks show its lines.
    """
    path = Path(filename)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
    namespace = {"__name__": "__main__", "__file__": filename, "__builtins__": __builtins__}
    exec(compile(code, filename, "exec"), namespace)


def pytest_addoption(parser):
    parser.getgroup("general").addoption(
        "--codeblocks", action="store_true",
        help="run the code blocks of the Markdown pages as the site renders them (snippets expanded)")


def pytest_collect_file(file_path, parent):
    if parent.config.getoption("codeblocks") and file_path.suffix == ".md":
        return Page.from_parent(parent, path=file_path)
    return None


class Page(pytest.File):
    """One Markdown page: a test per runnable block, named after its line as pytest-codeblocks does."""

    def collect(self):
        from pytest_codeblocks import extract_from_buffer

        root = Path(self.config.rootpath)
        for block in extract_from_buffer(io.StringIO(expand_snippets(self.path.read_text(), root))):
            if block.syntax not in RUNNABLE:
                continue
            item = Block.from_parent(self, name=f"line {block.lineno}", block=block)
            for mark in block.marks:
                item.add_marker(eval(mark, {"sys": sys, "pytest": pytest}))  # the page's own markers
            yield item


class Block(pytest.Item):
    def __init__(self, *, block, **kwargs):
        super().__init__(**kwargs)
        self.block = block

    def runtest(self):
        block = self.block
        if block.importorskip is not None:
            pytest.importorskip(block.importorskip)
        if block.syntax == "python":
            rel = Path(self.path).resolve().relative_to(Path(self.config.rootpath).resolve())
            filename = str(Path(self.config.rootpath) / ".cache" / "codeblocks" / f"{rel}-line{block.lineno}.py")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                run_python_block(block.code, filename)
            output = out.getvalue()
        else:
            shell = {"sh": None, "bash": "/bin/bash"}[block.syntax]
            output = subprocess.run(block.code, shell=True, check=True, capture_output=True, text=True,
                                    executable=shell).stdout
        if block.expected_output is not None:
            want, got = block.expected_output, output
            if block.expected_output_ignore_whitespace:
                want, got = re.sub(r"\s+", "", want), re.sub(r"\s+", "", got)
            if want != got:
                raise AssertionError(f"{self.path.name}, {self.name}: expected output\n{block.expected_output}\n"
                                     f"but got\n{output}")
        sys.stdout.write(output)

    def repr_failure(self, excinfo):
        return excinfo.getrepr(style="short")

    def reportinfo(self):
        return self.path, self.block.lineno - 1, f"code block, {self.name}"  # pytest counts lines from 0
