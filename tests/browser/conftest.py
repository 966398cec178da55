"""pytest's fixtures for the browser tests, defined in harness.py with what the tests import
(`from .harness import SITE, open_widget`); nothing imports this file."""

from .harness import base_url, browser, context, page, site_dir  # noqa: F401  (fixtures, found by name)
