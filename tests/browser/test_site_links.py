"""The built site's links and weight: every internal link and anchor resolves, no page is heavy,
the search index is small and finds prose before data. Run after `mkdocs build --strict`."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from .harness import SITE, SITE_URL

MAX_PAGE_BYTES = 300_000
MAX_SEARCH_INDEX_BYTES = 1_000_000
SITE_PATH = urlsplit(SITE_URL).path or "/"  # where the site is served: "/" absolute links start from it


class _Page(HTMLParser):
    """The ids (and `<a name>`s) a page defines and the links it holds."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        if tag in ("a", "link") and a.get("href") is not None:
            self.links.append(a["href"])
        if tag in ("img", "script", "source", "iframe") and a.get("src"):
            self.links.append(a["src"])


def _html_pages() -> list[Path]:
    """Every HTML document of the built site (the widget fragments copied from docs/widgets/
    are snippets, not pages: no <html>)."""
    if not SITE.is_dir():
        return []
    out = []
    for p in sorted(SITE.rglob("*.html")):
        head = p.read_text(errors="replace")[:500].lower()
        if "<html" in head or "<!doctype html" in head:
            out.append(p)
    return out


_PARSED: dict[Path, _Page] = {}


def _parsed(path: Path) -> _Page:
    if path not in _PARSED:
        page = _Page()
        page.feed(path.read_text(errors="replace"))
        _PARSED[path] = page
    return _PARSED[path]


def _target(page: Path, href: str) -> tuple[Path | None, str]:
    """The file a local link points at (None for a link off the site) and its fragment."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:", "data:")):
        return None, ""
    path = unquote(parts.path)
    if not path:
        target = page
    elif path.startswith("/"):
        target = SITE / path.removeprefix(SITE_PATH).lstrip("/")
    else:
        target = page.parent / path
    target = Path(*_normalised(target.parts))
    if target.is_dir() or path.endswith("/"):
        target = target / "index.html"
    return target, unquote(parts.fragment)


def _normalised(parts) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            out.pop()
        elif part != ".":
            out.append(part)
    return out


def broken_links(pages: list[Path]) -> list[str]:
    """'page: href (why)' for each local link whose file or anchor does not exist."""
    broken = []
    for page in pages:
        for href in _parsed(page).links:
            target, fragment = _target(page, href)
            if target is None:
                continue
            rel = page.relative_to(SITE).as_posix()
            if not target.is_file():
                where = target.relative_to(SITE) if target.is_relative_to(SITE) else target
                broken.append(f"{rel}: {href} (no file {where})")
            elif fragment and target.suffix == ".html" and fragment not in _parsed(target).ids:
                broken.append(f"{rel}: {href} (no id {fragment!r} on {target.relative_to(SITE).as_posix()})")
    return broken


def test_every_internal_link_and_anchor_resolves(site_dir):
    pages = _html_pages()
    assert pages, "no pages in site/"
    broken = broken_links(pages)
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken)


def test_the_checker_sees_a_broken_anchor(tmp_path, monkeypatch):
    """The link walker itself: a missing id and a missing page are reported, a good one is not."""
    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    (site / "index.html").write_text('<!doctype html><html><h2 id="x">x</h2><a href="a/#y">y</a>'
                                     '<a href="#x">x</a><a href="b/">b</a><a href="https://x.org/#z">z</a></html>')
    (site / "a" / "index.html").write_text('<!doctype html><html><p id="z">z</p><a href="../#x">x</a></html>')
    monkeypatch.setitem(globals(), "SITE", site)
    try:
        found = broken_links([site / "index.html", site / "a" / "index.html"])
    finally:
        _PARSED.clear()
    assert len(found) == 2 and "no id 'y'" in found[0] and "b/" in found[1], found


def test_no_page_is_heavy(site_dir):
    """A reader on a phone downloads the whole page: no HTML file over 300 KB."""
    heavy = [f"{p.relative_to(SITE).as_posix()}: {p.stat().st_size / 1000:.0f} KB" for p in _html_pages()
             if p.stat().st_size > MAX_PAGE_BYTES]
    assert not heavy, f"pages over {MAX_PAGE_BYTES // 1000} KB:\n" + "\n".join(heavy)


def test_lighter_code_keeps_the_text_and_the_colours():
    """The page-weight cuts inside code: names and whitespace unwrapped, one-word classes
    unquoted, quote entities in text written as quotes; outside <pre> nothing changes, and
    what the reader sees (the text, each coloured token's class) is the same."""
    from scripts import pages

    before = ('<p class="x">&quot;a&quot;</p><pre id="c"><span class="n">x</span>'
              '<span class="o">=</span><span class="s2">&quot;it&#39;s&quot;</span> '
              '<span class="c1"># a &lt;b&gt;</span></pre>')
    after = pages.lighter_code(before)
    assert after == ('<p class="x">&quot;a&quot;</p><pre id="c">x<span class=o>=</span>'
                     '<span class=s2>"it\'s"</span> <span class=c1># a &lt;b&gt;</span></pre>')
    text = re.compile(r"<[^>]+>")
    assert html.unescape(text.sub("", after)) == html.unescape(text.sub("", before))


def _search_index() -> dict:
    path = SITE / "search" / "search_index.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: build the site with the search plugin")
    return json.loads(path.read_text())


def test_search_index_is_small(site_dir):
    """Every reader's browser downloads the whole index on the first search."""
    size = (SITE / "search" / "search_index.json").stat().st_size
    assert size <= MAX_SEARCH_INDEX_BYTES, f"search_index.json is {size / 1e6:.2f} MB, over 1 MB"


def test_generated_data_stays_out_of_the_search_index(site_dir):
    """The tables under the plots, the speed-target tables and the notebooks' code and outputs
    are on the pages but not in the index (scripts/pages.py, `exclude_from_search`)."""
    text = "\n".join(d["title"] + " " + d["text"] for d in _search_index()["docs"])
    assert "The numbers behind this plot" not in text
    assert "| target | point |" not in text and "target point measured status" not in text
    assert "In [1]:" not in text and "Copied!" not in text, "notebook prompts or copy buttons indexed"
    assert "torch.testing.assert_close(add(x, y), add_torch(x, y)" not in \
        "\n".join(d["text"] for d in _search_index()["docs"] if d["location"].startswith("examples/")), \
        "notebook code indexed"
    # ... and still on the pages
    assert "The numbers behind this plot" in (SITE / "kernels" / "softmax" / "index.html").read_text()


def test_teaching_pages_rank_above_the_benchmarks_pages_in_search():
    """Every section of a teaching page carries the hooks' search boost, no Benchmarks page does
    (Material multiplies a match's score by it)."""
    from scripts.hooks import TEACHING_SEARCH_BOOST

    docs = _search_index()["docs"]
    boosts = {d["location"].split("#")[0]: d.get("boost") for d in docs}
    assert boosts["guide/tiles-and-programs/"] == TEACHING_SEARCH_BOOST > 1
    assert boosts["kernels/attention-hopper-backward/"] == TEACHING_SEARCH_BOOST
    assert not [loc for loc, b in boosts.items() if loc.startswith("benchmarks/") and b], "a Benchmarks page boosted"


@pytest.mark.browser
def test_search_finds_the_chapter_that_explains_num_warps_first(base_url, page):
    """Material's own search, in the browser: `num_warps` leads to the chapter that explains
    it (Tiles and programs), not to a table of numbers that names it."""
    page.goto(base_url, wait_until="networkidle")
    box = page.locator('input[data-md-component="search-query"]')
    box.click()  # at desktop width the search field sits in the header
    box.type("num_warps")
    first = page.locator(".md-search-result__item a").first
    first.wait_for(timeout=15_000)
    href = first.get_attribute("href")
    assert "guide/tiles-and-programs/" in href, f"first result for num_warps: {href}"


def test_notebook_pages_keep_the_code_in_their_titles(site_dir):
    """mkdocs-jupyter drops inline code from a notebook's title ("Compute inside a tile: , dtypes");
    the hook takes it from the page's own heading, so the nav and <title> keep `tl.dot`."""
    import re

    from scripts import notebooks

    for src in sorted((SITE.parent / "examples").glob("*.py")):
        built = SITE / "examples" / src.stem / "index.html"
        if src.name.startswith("_") or not built.is_file():
            continue
        title = re.search(r"<title>(.*?) - ", built.read_text()).group(1)
        assert title == notebooks.notebook_title(src).replace("&", "&amp;"), (src.name, title)
    nav = (SITE / "kernels" / "index.html").read_text()
    assert "Compute inside a tile: tl.dot, dtypes" in nav


def test_notebook_toc_and_colab_link():
    from scripts import pages

    html = ('<h1 id="a-tldot">A <code>tl.dot</code><a class="anchor-link" href="#a-tldot">¶</a></h1>'
            '<h2 id="b">B</h2><h3 id="c">C</h3><h2 id="d">D &amp; E</h2>')
    tokens, title = pages.notebook_toc(html)
    assert title == "A tl.dot"
    assert [t["id"] for t in tokens] == ["a-tldot"]
    assert [(t["id"], [c["id"] for c in t["children"]]) for t in tokens[0]["children"]] == [("b", ["c"]), ("d", [])]
    assert pages.colab_url("https://github.com/o/r", "notebooks/x.ipynb") == \
        "https://colab.research.google.com/github/o/r/blob/main/notebooks/x.ipynb"
    out = pages.notebook_actions("<h1>T</h1><p>x</p>", "x", "https://github.com/o/r", None)
    assert 'href="x.ipynb" download' in out and "colab" not in out  # no committed notebook: no Colab link
    out = pages.notebook_actions("<h1>T</h1>", "x", "https://github.com/o/r", "notebooks/x.ipynb")
    assert "colab.research.google.com/github/o/r/blob/main/notebooks/x.ipynb" in out


def test_every_example_has_its_committed_notebook_in_step():
    """notebooks/<stem>.ipynb, which "Open in Colab" opens, holds its example's cells as they are
    now (`make notebooks` writes them), and every notebook page of the site links to it."""
    from scripts import notebooks, results

    examples = results.example_files()
    committed = sorted(p.stem for p in notebooks.COMMITTED.glob("*.ipynb"))
    assert committed == [p.stem for p in examples], "run `make notebooks`"
    stale = [src.stem for src in examples
             if notebooks.committed_cells((notebooks.COMMITTED / f"{src.stem}.ipynb").read_bytes())
             != notebooks.committed_cells(notebooks.colab_notebook(src.read_text(), src.stem))]
    assert not stale, f"notebooks/ lags behind its examples: {stale}; run `make notebooks`"
    if SITE.is_dir():
        for src in examples:
            page = (SITE / "examples" / src.stem / "index.html").read_text()
            assert f"/blob/main/notebooks/{src.stem}.ipynb" in page, f"{src.stem}: no Open in Colab link"
