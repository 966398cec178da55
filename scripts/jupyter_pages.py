"""The example notebooks' pages, rendered by the workers that run them, into mkdocs-jupyter's cache.

mkdocs-jupyter turns each executed notebook into its page's HTML when MkDocs renders the page:
nbconvert, a BeautifulSoup pass and Pygments, about half a second per notebook, one after
another in the build's process once every notebook has run (14 s of a cold 60 s build on
2 cores, measured). The plugin keeps each conversion in its cache (options ``cache`` and
``cache_dir``, on by default) under a hash of the notebook's bytes and of the options that shape
the HTML. The workers of ``scripts/notebooks.py`` fill that cache for each notebook they have just
run, in parallel with the rest of the build, with the plugin's own functions; the plugin then
finds the page there.

mkdocs-jupyter is pinned (pyproject.toml) because the cache's key and entry are the plugin's own
helpers, not a documented interface: if a new version changed them, every page would simply be a
cache miss again (converted by the plugin, as before, and correct), and
``tests/browser/test_build_cache.py`` would fail on the missing hit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# The plugin's options that nb2html takes (the rest of the key is the notebook and `execute`).
HTML_OPTIONS = ("kernel_name", "theme", "allow_errors", "show_input", "no_input", "no_prompt",
                "remove_tag_config", "highlight_extra_classes", "include_requirejs", "custom_mathjax_url")
KEY_OPTIONS = (*HTML_OPTIONS, "toc_depth")


def settings(plugin_config, cwd: Path | None = None) -> dict | None:
    """What a worker needs to render pages as the plugin would, from the plugin's config (a
    mapping); None when the plugin does not cache or executes notebooks itself (then its pages
    depend on more than the notebook, and it renders them itself). The cache folder is resolved
    against the build's working directory, as the plugin resolves it."""
    if not plugin_config.get("cache") or plugin_config.get("execute"):
        return None
    return {"cache_dir": str((cwd or Path.cwd()) / plugin_config["cache_dir"]),
            "options": {key: plugin_config[key] for key in KEY_OPTIONS}}


def cache_entry(notebook: Path, pages: dict) -> Path:
    """Where the plugin looks for the page of this notebook's bytes."""
    from mkdocs_jupyter import plugin

    key = plugin._compute_cache_key(str(notebook), pages["options"], False)  # execute: off (settings)
    return plugin._get_cache_path(pages["cache_dir"], key)


def prime(notebook: Path, pages: dict) -> Path:
    """Render an executed notebook's page into the plugin's cache (unless it is there already);
    return the entry's path."""
    from mkdocs_jupyter import convert, plugin

    entry = cache_entry(notebook, pages)
    if entry.exists():
        return entry
    options = pages["options"]
    body = convert.nb2html(str(notebook), execute=False, **{key: options[key] for key in HTML_OPTIONS})
    toc_tokens, title = plugin._get_nb_toc_tokens(str(notebook), options["toc_depth"])
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")  # two builds at once never see half an entry
    tmp.write_text(json.dumps({"content": body, "toc_tokens": toc_tokens, "title": title}), encoding="utf-8")
    os.replace(tmp, entry)
    return entry
