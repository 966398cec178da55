"""Teaching pages speak of Triton and the reader's problem (scripts/teaching.py): no reference to
this project's history in what a reader sees on the built page, prose within its word limit in
the source, and the build's own check (scripts/hooks.py ``check_teaching``) catching both."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

from scripts import hooks, teaching

from .harness import SITE

DOCS = teaching.DOCS


def source_of(built: Path, site: Path = SITE) -> str | None:
    """The page under docs/ that a built page comes from: ``site/kernels/softmax/index.html`` ->
    ``kernels/softmax.md``, ``site/guide/index.html`` -> ``guide/index.md``, ``site/index.html``
    -> ``index.md``; None for a page with no Markdown source (404, notebooks)."""
    folder = built.parent.relative_to(site).as_posix()
    candidates = ["index.md"] if folder == "." else [f"{folder}.md", f"{folder}/index.md"]
    return next((c for c in candidates if (DOCS / c).is_file()), None)


def teaching_pages_built() -> list[tuple[str, Path]]:
    if not SITE.is_dir():
        return []
    out = []
    for built in sorted(SITE.rglob("index.html")):
        rel = source_of(built)
        if rel is not None and teaching.is_teaching(rel):
            out.append((rel, built))
    return out


def teaching_sources() -> list[str]:
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                  if teaching.is_teaching(p.relative_to(DOCS).as_posix()))


ARTICLE = re.compile(r'<article class="md-content__inner[^"]*">(.*?)</article>', re.S)
SKIPPED = re.compile(r"<(pre|script|style)\b.*?</\1>", re.S)


def reader_text(page_html: str) -> str:
    """What a reader reads on a built page: the article's text, code blocks left out (they are
    the examples' code, covered by their own record), one line per block."""
    m = ARTICLE.search(page_html)
    body = SKIPPED.sub(" ", m.group(1) if m else page_html)
    body = re.sub(r"</(p|li|h[1-6]|td|th|tr|div|summary|dd|dt)>", "\n", body)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", body))


def test_source_of_maps_built_pages_back():
    site = Path("/x/site")
    assert source_of(site / "kernels" / "softmax" / "index.html", site) == "kernels/softmax.md"
    assert source_of(site / "guide" / "index.html", site) == "guide/index.md"
    assert source_of(site / "index.html", site) == "index.md"
    assert source_of(site / "examples" / "vector_add" / "index.html", site) is None


BUILT = teaching_pages_built()


@pytest.mark.parametrize("rel,built", BUILT, ids=[rel for rel, _ in BUILT])
def test_no_history_on_a_built_teaching_page(rel, built, site_dir):
    """Run or issue numbers, log, probe or evidence paths, reproduction boxes, commit hashes:
    they belong on the Benchmarks pages, one link away."""
    text = reader_text(built.read_text())
    found = [f"line {line}: {what}: {hit!r}" for what, hit, line in teaching.history_references(text)]
    assert not found, f"{rel} (built: {built.relative_to(SITE)}) names the project's history:\n" + "\n".join(found)


PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.S)


@pytest.mark.parametrize("rel,built", BUILT, ids=[rel for rel, _ in BUILT])
def test_code_on_a_built_teaching_page_fits_without_scrolling(rel, built, site_dir):
    """Every line of every listing a teaching page shows is at most CODE_COLUMNS wide."""
    m = ARTICLE.search(built.read_text())
    wide = []
    for block in PRE.findall(m.group(1) if m else ""):
        for line in htmllib.unescape(re.sub(r"<[^>]+>", "", block)).splitlines():
            if len(line.rstrip()) > teaching.CODE_COLUMNS:
                wide.append(f"{len(line.rstrip())}: {line.strip()[:60]}")
    assert not wide, f"{rel}: {len(wide)} code line(s) over {teaching.CODE_COLUMNS} columns: {wide[:5]}"


WIDE_LISTINGS = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  return [...document.querySelectorAll('article pre > code')]
    .filter(c => c.clientWidth > 0 && c.scrollWidth > c.clientWidth + 1)
    .map(c => `${c.scrollWidth - c.clientWidth} px: ${c.textContent.trim().slice(0, 50)}`);
}"""


@pytest.mark.parametrize("rel,built", BUILT, ids=[rel for rel, _ in BUILT])
def test_listings_of_a_teaching_page_need_no_scroll_bar_on_a_desktop(rel, built, base_url, page):
    """In a real browser at 1280 px (and at 960 px, the narrowest width with the navigation
    beside the content), no listing of a teaching page scrolls sideways: the stylesheet's code
    font fits CODE_COLUMNS (checked on the text above) in the content column."""
    for width in (1280, 960):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(base_url + built.relative_to(SITE).parent.as_posix() + "/", wait_until="load")
        wide = page.evaluate(WIDE_LISTINGS)
        assert not wide, f"{rel} at {width} px: {len(wide)} listing(s) scroll sideways: {wide[:3]}"


@pytest.mark.parametrize("rel", teaching_sources())
def test_teaching_page_source_is_clean(rel):
    """History references and the prose word limits, on the Markdown source (scripts/teaching.py)."""
    found = teaching.problems(rel, (DOCS / rel).read_text())
    assert not found, "\n".join(found)


def test_the_build_fails_on_a_teaching_page_with_history():
    """scripts/hooks.py: a teaching page that names a run fails the build, naming the page and the
    line; a Benchmarks page may."""
    page = "# Softmax\n\nIt was slower.\n\nOn the H200 (run24, 2026-12-01) it reached 90%.\n"
    with pytest.raises(PluginError) as err:
        hooks.check_teaching("kernels/softmax.md", page)
    assert "kernels/softmax.md:5" in str(err.value) and "run" in str(err.value)
    hooks.check_teaching("benchmarks/softmax.md", page)  # not a teaching page
    hooks.check_teaching("kernels/softmax.md", "# Softmax\n\nShort and clean.\n")


def test_the_build_fails_on_a_teaching_page_over_its_word_limit():
    page = "# A chapter\n\n" + "word " * (teaching.WORD_LIMITS["guide/"] + 1) + "\n"
    with pytest.raises(PluginError, match="guide/masks.md"):
        hooks.check_teaching("guide/masks.md", page)


def test_the_word_limit_counts_the_source_not_the_rendered_tables():
    """A `{{ bench targets }}` that renders a big table of numbers is one word of prose."""
    source = "# A chapter\n\n" + "word " * 100 + "\n\n{{ bench targets softmax }}\n"
    rendered = source.replace("{{ bench targets softmax }}", "| a | b |\n| --- | --- |\n" + "| 1.0 | 2.0 |\n" * 2000)
    hooks.check_teaching("guide/masks.md", rendered, source)
    with pytest.raises(PluginError, match="words of prose"):
        hooks.check_teaching("guide/masks.md", rendered)
