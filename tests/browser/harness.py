"""Browser tests: headless Chromium (Debian's /usr/bin/chromium) against the built site.

Run ``mkdocs build --strict`` first; these fixtures serve ``site/`` over http on
127.0.0.1 (ephemeral port, background thread) and drive it with Playwright.

* No chromium: the tests skip, unless ``CI`` is set, then they fail.
* Every test's page records console errors, page errors and every request; the
  ``page`` fixture fails the test if any console/page error happened or any
  request went to a host other than 127.0.0.1.
* ``TIT_WIDGET_HARNESS=1`` points the widget tests at a bare harness page per
  widget (``/__harness__/<name>.html``: the built CSS, the site's ``extra_javascript``
  (``javascripts/widgets/core.js``, one file per widget, ``start.js``) and the widget's
  markup) instead of the real pages; for developing a widget before a page includes it.
  The default, and CI, test the real pages.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from scripts import hooks
from scripts.codeblocks import _AnyTagLoader

ROOT = Path(__file__).resolve().parents[2]

SITE = Path(os.environ.get("TIT_SITE_DIR") or ROOT / "site")  # TIT_SITE_DIR: test a site built elsewhere
WIDGET_DIR = ROOT / "docs" / "widgets"
ARTIFACTS = ROOT / "test-artifacts" / "widgets"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-sync", "--disable-quic",
]
HARNESS = os.environ.get("TIT_WIDGET_HARNESS") == "1"
_SITE_URL = re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(), re.M)
SITE_URL = _SITE_URL.group(1).rstrip("/") + "/" if _SITE_URL else ""



MKDOCS = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_AnyTagLoader)  # the loader the codeblocks plugin uses
WIDGET_INCLUDE = re.compile(r'^\s*--8<--\s+"docs/widgets/([\w-]+)\.html"', re.M)


def _site_path(md: str) -> str:
    path = md.removesuffix(".md")
    return "" if path == "index" else path.removesuffix("index") if path.endswith("/index") else path + "/"


def widget_pages() -> dict[str, list[str]]:
    """Which pages (site paths, in nav order) carry which widget, read from the pages' include
    lines. The first page is where the widget is tested."""
    pages: dict[str, list[str]] = {}
    for md in hooks.nav_pages(MKDOCS["nav"]):
        for name in WIDGET_INCLUDE.findall((ROOT / "docs" / md).read_text()):
            pages.setdefault(name, [])
            if _site_path(md) not in pages[name]:
                pages[name].append(_site_path(md))
    return pages


WIDGET_PAGES = widget_pages()
SCRIPTS = [s for s in MKDOCS.get("extra_javascript", []) if isinstance(s, str)]
DESKTOP = {"width": 1280, "height": 900}
NARROW = {"width": 360, "height": 740}


def _harness_html(name: str) -> bytes:
    css = sorted((SITE / "assets" / "stylesheets").glob("*.min.css"))
    links = "\n".join(f'<link rel="stylesheet" href="/assets/stylesheets/{p.name}">' for p in css)
    markup = (WIDGET_DIR / f"{name}.html").read_text()
    scripts = "".join(f'<script src="/{src}"></script>' for src in SCRIPTS)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>harness: {name}</title><link rel="icon" href="data:,">
{links}<link rel="stylesheet" href="/stylesheets/extra.css"></head>
<body dir="ltr" data-md-color-scheme="default" data-md-color-primary="deep-purple" data-md-color-accent="amber">
<div class="md-container"><main class="md-main"><div class="md-main__inner md-grid"><div class="md-content">
<article class="md-content__inner md-typeset"><h1>{name}</h1>
{markup}
</article></div></div></main></div>
{scripts}</body></html>""".encode()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path == "/sitemap.xml" and SITE_URL and (Path(self.directory) / "sitemap.xml").is_file():
            # Material's instant navigation only intercepts links listed in sitemap.xml, whose
            # URLs it rebases by protocol and host but not port: serve the sitemap as a host at
            # the site's own address would (what `mkdocs serve` does by rewriting site_url).
            here = f"http://127.0.0.1:{self.server.server_address[1]}/"
            text = (Path(self.directory) / "sitemap.xml").read_text().replace(SITE_URL, here)
            return self._send(text.encode(), "application/xml")
        if path.startswith("/__harness__/") and path.endswith(".html"):
            name = path.removeprefix("/__harness__/").removesuffix(".html")
            if (WIDGET_DIR / f"{name}.html").is_file():
                return self._send(_harness_html(name), "text/html; charset=utf-8")
        super().do_GET()


@pytest.fixture(scope="session")
def site_dir() -> Path:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE} has no index.html: run `.venv/bin/mkdocs build --strict` before the browser tests")
    return SITE


@pytest.fixture(scope="session")
def base_url(site_dir):
    handler = functools.partial(_Handler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) to run the browser tests"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Recorder:
    """Console errors, page errors and requests of one page."""

    def __init__(self, page):
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.console_errors.append(f"{m.text} ({m.location.get('url')})")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

    def foreign_requests(self) -> list[str]:
        out = []
        for url in self.requests:
            parts = urlsplit(url)
            if parts.scheme in ("data", "blob", "about"):
                continue
            if parts.hostname != "127.0.0.1":
                out.append(url)
        return out

    def problems(self) -> list[str]:
        return ([f"console error: {e}" for e in self.console_errors] + [f"page error: {e}" for e in self.page_errors]
                + [f"request to another host: {u}" for u in self.foreign_requests()])


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport=DESKTOP, color_scheme="light", reduced_motion="reduce")
    yield ctx
    ctx.close()


@pytest.fixture
def page(context):
    """A page whose console/page errors and foreign requests fail the test."""
    pg = context.new_page()
    pg.recorder = Recorder(pg)
    yield pg
    problems = pg.recorder.problems()
    assert not problems, "\n".join(problems)


def widget_url(base_url: str, name: str) -> str:
    if HARNESS:
        return f"{base_url}__harness__/{name}.html"
    return base_url + WIDGET_PAGES[name][0]


def open_widget(page, base_url: str, name: str, url: str | None = None):
    """Go to the widget's page and return its root locator once it has initialised."""
    url = url or widget_url(base_url, name)
    page.goto(url)
    root = page.locator(f'.tit-widget[data-widget="{name}"]')
    if root.count() == 0:
        pytest.fail(f"widget {name!r} is not on {url}: its page needs the line "
                    f'--8<-- "docs/widgets/{name}.html"')
    root = root.first
    page.wait_for_function(
        "(el) => el.dataset.ready === 'true' || el.dataset.ready === 'error'",
        arg=root.element_handle(), timeout=10_000)
    assert root.get_attribute("data-ready") == "true", f"widget {name!r} failed to start on {url}"
    return root


def set_dark(page) -> None:
    """Switch Material's palette to the dark (slate) scheme with its header toggle."""
    toggle = page.locator('label.md-header__button[for^="__palette_"]:visible')
    if toggle.count():
        toggle.first.click()
    else:  # the harness has no header: set what Material sets
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'")


def page_overflow(page) -> int:
    return page.evaluate("document.scrollingElement.scrollWidth")


def screenshot(root, name: str) -> Path:
    """Save a PNG of the widget under test-artifacts/widgets/ (Material's sticky header hidden)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page = root.page
    page.evaluate("document.querySelectorAll('.md-header, .md-tabs').forEach(e => e.style.visibility = 'hidden')")
    root.scroll_into_view_if_needed()
    root.screenshot(path=str(path), animations="disabled")
    page.evaluate("document.querySelectorAll('.md-header, .md-tabs').forEach(e => e.style.visibility = '')")
    return path


def press(locator, key: str, times: int = 1) -> None:
    locator.focus()
    for _ in range(times):
        locator.press(key)


def rgba(colour: str) -> tuple[float, float, float, float]:
    """'#rrggbb' or a computed CSS 'rgb(...)' / 'rgba(...)' as (r, g, b in 0-255, alpha)."""
    if colour.startswith("#"):
        return (*(float(int(colour[i:i + 2], 16)) for i in (1, 3, 5)), 1.0)
    parts = [float(x) for x in re.findall(r"[\d.]+", colour)]
    return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)


def linear_rgb(rgb) -> list[float]:
    """sRGB channels (0-255) to linear light (0-1)."""
    return [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]


def contrast(fg: str, bg: str) -> float:
    """WCAG contrast of a colour (possibly translucent: mixed over ``bg``) against an opaque background."""
    *f, a = rgba(fg)
    b = rgba(bg)[:3]
    mixed = [a * x + (1 - a) * y for x, y in zip(f, b, strict=True)]

    def luminance(rgb) -> float:
        r, g, bl = linear_rgb(rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * bl

    hi, lo = sorted((luminance(mixed), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
