"""Screenshot a page of the built site with Debian's chromium (used for the README image).

    make screenshot                                   # build the site, then docs/assets/screenshot.png
    python -m scripts.screenshot [PAGE] [OUT.png] [--dark] [--width 1280] [--height 800] [--full]

The same page at the same size gives the same picture: light scheme unless --dark, no motion,
taken once every request has finished.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync", "--disable-quic"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("page", nargs="?", default="")
    parser.add_argument("out", nargs="?", default=str(ROOT / "docs" / "assets" / "screenshot.png"))
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    handler = functools.partial(_QuietHandler, directory=str(ROOT / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": args.width, "height": args.height},
                                color_scheme="dark" if args.dark else "light", reduced_motion="reduce")
        page.goto(f"http://127.0.0.1:{server.server_port}/{args.page}", wait_until="networkidle")
        page.wait_for_timeout(500)
        page.screenshot(path=args.out, full_page=args.full)
        browser.close()
    server.shutdown()
    print(args.out)


if __name__ == "__main__":
    main()
