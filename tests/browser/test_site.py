"""(a) The whole built site in a real browser: clean loads, no foreign requests,
no horizontal overflow at 360 px, and Material's instant navigation starting the widgets."""

from __future__ import annotations

import pytest

from .harness import NARROW, SITE, WIDGET_PAGES, page_overflow

pytestmark = pytest.mark.browser


def _pages() -> list[str]:
    """Every HTML page of the built site. The widget fragments that MkDocs copies from
    docs/widgets/ (no <html> element: they are snippets, not pages) are left out."""
    if not SITE.is_dir():
        return ["<site/ missing: run mkdocs build --strict>"]
    pages = []
    for p in sorted(SITE.rglob("*.html")):
        head = p.read_text(errors="replace")[:500].lower()
        if "<html" in head or "<!doctype html" in head:
            pages.append(p.relative_to(SITE).as_posix())
    return pages


def test_site_has_the_pages(site_dir):
    pages = _pages()
    assert "index.html" in pages
    assert any(p.startswith("examples/") and p != "examples/index.html" for p in pages), \
        "no example notebook pages under site/examples/"
    for paths in WIDGET_PAGES.values():
        for path in paths:
            assert f"{path}index.html" in pages, f"site/{path}index.html is missing"


@pytest.mark.parametrize("rel", _pages())
def test_page_loads_clean_and_fits_360(rel, base_url, page, site_dir):
    """No console error, no page error, no request off 127.0.0.1 (checked by the page fixture);
    every widget on it starts; nothing overflows a 360 px wide screen."""
    page.set_viewport_size(NARROW)
    page.goto(base_url + rel, wait_until="load")
    widgets = "[...document.querySelectorAll('.tit-widget')]"
    page.wait_for_function(
        f"{widgets}.every(w => w.dataset.ready === 'true' || w.dataset.ready === 'error')", timeout=10_000)
    broken = page.evaluate(f"{widgets}.filter(w => w.dataset.ready !== 'true').map(w => w.dataset.widget)")
    assert not broken, f"{rel}: widgets failed to start: {broken}"
    present = set(page.evaluate(f"{widgets}.map(w => w.dataset.widget)"))
    expected = {name for name, paths in WIDGET_PAGES.items() for p in paths if f"{p}index.html" == rel}
    assert expected <= present, f"{rel}: missing widgets {sorted(expected - present)}"
    page.wait_for_timeout(150)  # late console errors (fetches of widget data)
    width = page_overflow(page)
    assert width <= NARROW["width"] + 1, f"{rel}: page is {width} px wide at a 360 px viewport"
    requests = page.recorder.requests
    assert requests and all(r.startswith(base_url) or r.startswith("data:") for r in requests), requests


def test_instant_navigation_starts_widgets(base_url, page):
    """Click from the home page through the nav to a widget page: no full reload, widgets start."""
    page.goto(base_url, wait_until="networkidle")  # Material's instant navigation reads sitemap.xml first
    page.evaluate("window.__no_reload = true")
    target = WIDGET_PAGES["threads-vs-tiles"][0]
    link = page.locator(f'nav.md-nav--primary a.md-nav__link[href$="{target}"]').first
    link.click()
    page.wait_for_url(f"**/{target}")
    assert page.evaluate("window.__no_reload === true"), "the click reloaded the page: instant navigation is off"
    # Material swaps the page body after the URL changes (a race the fresh-clone CI lost once):
    # wait for the new page's widget before counting.
    widgets = page.locator(".tit-widget")
    try:
        widgets.first.wait_for(state="attached", timeout=10_000)
    except Exception:  # playwright's TimeoutError: report it as the assertion below
        pass
    assert widgets.count() > 0, f"no widget on {target} after instant navigation"
    page.wait_for_function(
        "[...document.querySelectorAll('.tit-widget')].every(w => w.dataset.ready === 'true')", timeout=10_000)
    assert page.locator('.tit-widget[data-widget="threads-vs-tiles"] [data-role="program"]').count() > 0
    # And back home and forth again: the new page's widgets start again, once each.
    page.go_back()
    page.wait_for_url(base_url)
    page.go_forward()
    page.wait_for_url(f"**/{target}")
    # Material swaps the page body after the URL changes: wait for the new widget's controls
    # before counting, or the check can run against the page that is being replaced.
    controls = page.locator('.tit-widget[data-widget="threads-vs-tiles"] .tit-controls')
    controls.first.wait_for(timeout=10_000)
    page.wait_for_function(
        "[...document.querySelectorAll('.tit-widget')].every(w => w.dataset.ready === 'true')", timeout=10_000)
    assert controls.count() == 1
