"""(h) Widget files: one JavaScript module per widget beside a shared core, all of them loaded by
mkdocs.yml (core first, start last), and each widget on at least one page (site tier: pure)."""

from __future__ import annotations

import re

from .harness import ROOT, SCRIPTS, WIDGET_DIR, WIDGET_PAGES

JS = ROOT / "docs" / "javascripts" / "widgets"


def test_every_widget_has_its_module_and_mkdocs_loads_it():
    names = sorted(p.stem for p in WIDGET_DIR.glob("*.html"))
    assert names and sorted(p.stem for p in JS.glob("*.js") if p.stem not in ("core", "start")) == names
    assert SCRIPTS[0] == "javascripts/widgets/core.js" and SCRIPTS[-1] == "javascripts/widgets/start.js"
    assert sorted(SCRIPTS[1:-1]) == sorted(f"javascripts/widgets/{n}.js" for n in names)


def test_each_module_registers_the_widget_it_is_named_after():
    for path in JS.glob("*.js"):
        if path.stem in ("core", "start"):
            continue
        assert re.findall(r'T\.register\("([\w-]+)"', path.read_text()) == [path.stem], path.name


def test_every_widget_is_on_a_page():
    assert sorted(WIDGET_PAGES) == sorted(p.stem for p in WIDGET_DIR.glob("*.html"))


def test_the_built_site_serves_every_script(site_dir):
    # `exclude_docs: widgets/` once matched docs/javascripts/widgets/ too, and `mkdocs build --strict`
    # did not complain: the pages then loaded no widget code at all.
    missing = [src for src in SCRIPTS if not (site_dir / src).is_file()]
    assert not missing, f"mkdocs.yml's extra_javascript names files the build did not copy: {missing}"
