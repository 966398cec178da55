"""Make `pytest --codeblocks docs/` run exactly the code the site renders.

Pages do not paste code: a fence holds a pymdownx.snippets line such as
``--8<-- "examples/vector_add.py:kernel"`` and MkDocs expands it at build time.
pytest-codeblocks would run that line as Python, so here we

1. expand every page with the same snippets preprocessor and the same settings
   that ``mkdocs.yml`` gives MkDocs, before pytest-codeblocks extracts blocks;
2. run each python block as ``__main__`` from a registered source file
   (``linecache``), because ``@triton.jit`` reads its function's source with
   ``inspect`` and, on a GPU, refuses code that has no file.

This reaches into pytest-codeblocks 0.18.0 (pinned in pyproject.toml);
``tests/test_site_guards.py`` checks that the reach still works.
"""

from __future__ import annotations

import io
import linecache
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent


class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml may hold `!!python/name:` tags; the snippet settings never do."""


_AnyTagLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def snippet_settings() -> dict:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_AnyTagLoader)
    for ext in config["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            return dict(ext["pymdownx.snippets"] or {})
        if ext == "pymdownx.snippets":
            return {}
    raise RuntimeError("mkdocs.yml does not enable pymdownx.snippets")


def expand_snippets(text: str) -> str:
    """Expand `--8<--` lines as MkDocs does (paths relative to the repository root)."""
    import markdown

    settings = snippet_settings()
    settings["base_path"] = [str(ROOT / b) for b in settings.get("base_path", ["."])]
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


def _install() -> None:
    try:
        import pytest_codeblocks.main as cb_main
        import pytest_codeblocks.plugin as cb_plugin
    except ImportError:  # pytest-codeblocks not installed: nothing to extend
        return

    def extract_from_file(path, encoding="utf-8", *args, **kwargs):
        text = Path(path).read_text(encoding=encoding)
        return cb_main.extract_from_buffer(io.StringIO(expand_snippets(text)), *args, **kwargs)

    cb_plugin.extract_from_file = extract_from_file

    original_runtest = cb_plugin.TestBlock.runtest

    def runtest(self):
        if self.obj.syntax != "python":
            return original_runtest(self)
        rel = Path(self.path).resolve().relative_to(ROOT)
        filename = str(ROOT / ".cache" / "codeblocks" / f"{rel}-line{self.obj.lineno}.py")
        with cb_main.stdout_io() as out:
            run_python_block(self.obj.code, filename)
        if self.obj.expected_output is not None and out.getvalue() != self.obj.expected_output:
            raise AssertionError(
                f"{filename}: expected output\n{self.obj.expected_output}\nbut got\n{out.getvalue()}"
            )
        sys.stdout.write(out.getvalue())

    cb_plugin.TestBlock.runtest = runtest
    cb_plugin.TestBlock.repr_failure = lambda self, excinfo: excinfo.getrepr(style="short")


_install()
