"""What the build adds to the nav and to the pages, as plain functions of their inputs (the MkDocs
hooks in ``scripts/hooks.py`` only call these): the reading order of the examples, the table of
numbers under each plot, the notices on top of a page, and the map of the stories; and ``Build``,
what one build has read, which the hooks hand to each other."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from scripts import plots, results


@dataclass
class Build:
    """What one build has read, handed from hook to hook (``scripts/hooks.py`` keeps the current
    one: MkDocs calls the hooks with its own arguments; ``on_config`` starts a new one)."""

    story_pages: list[tuple[str, Path]] = field(default_factory=list)  # (path under docs/, file) in nav order
    reading_order: list[str] | None = None  # the examples, in the order a reader meets them
    data: results.Results | None = None  # the results, read once by on_pre_build (None: not yet)
    stale: dict = field(default_factory=dict)  # example -> results.Stale
    reproduction: tuple | None = None  # compare_runs' verdict on the second run, or None without one
    inputs_key: str | None = None  # the shared inputs the pages of this build are rendered from
    styles: dict[str, str] = field(default_factory=dict)  # the notebook pages' stylesheets: name -> CSS


def nav_pages(nav) -> list[str]:
    """The Markdown files of a nav (MkDocs' list-of-dicts form), in reading order."""
    out = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            out += nav_pages(value)
        elif isinstance(value, str) and value.endswith(".md"):
            out.append(value)
    return out


EXAMPLE_REF = re.compile(r"examples/([A-Za-z0-9_]+)\.py")


def reading_order(pages: list[Path], stems: list[str]) -> list[str]:
    """Examples in the order a reader first meets them in ``pages``; the rest after, by name."""
    known, order = set(stems), []
    for page in pages:
        text = page.read_text() if page.is_file() else ""
        for stem in EXAMPLE_REF.findall(text):
            if stem in known and stem not in order:
                order.append(stem)
    return order + sorted(known - set(order))


RESULT_FILES_URL = f"assets/data/results/{results.GPU_DIR}"
PLOT_LINE = re.compile(r"^(?P<indent>\s*)!\[.*\]\([^)]*assets/plots/(?P<bench>[\w.-]+)\.svg\)\s*$")  # alt may hold []


def plot_numbers(data: results.Results, bench: str, up: str) -> str:
    """A table of the points one plot draws (the series it shows, by x) and a link to its CSV."""
    rows = [r for r in data.rows if r["bench"] == bench]
    spec = data.specs.get(bench, {})
    columns = plots.legend_series(plots.plot_series(rows, spec))  # the plot's series, named as in its legend
    xs = list(dict.fromkeys(r["x"] for r in rows))
    cell = {(r["x"], r["provider"], r["timing"]): r for r in rows}
    lines = [f"| {spec.get('x_name') or rows[0]['x_name']} | " + " | ".join(name for _, _, name in columns) + " |",
             "| --- " * (len(columns) + 1) + "|"]
    for x in xs:
        values = []
        for p, t, _ in columns:
            r = cell.get((x, p, t))
            values.append("–" if r is None else results.fmt_value(r["value"], r["metric"])
                          + (" *" if r.get("host_bound") else ""))
        lines.append(f"| {x} | " + " | ".join(values) + " |")
    example = rows[0]["example"]
    note = " \\* host-bound: the do_bench time is mostly launch cost." if any(r.get("host_bound") for r in rows) else ""
    return "\n".join(lines) + (f"\n\nFrom [`{data.csv_path(example)}`]({up}{RESULT_FILES_URL}/{example}.csv).{note}")


def prose_lines(lines: list[str]):
    """(index, line) of the lines outside code fences (the fence lines themselves left out)."""
    fence = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            fence = None if fence and stripped.startswith(fence) else (fence or stripped[:3])
        elif fence is None:
            yield i, line


def add_plot_numbers(markdown: str, data: results.Results, up: str) -> str:
    """Under each plot on a page, its numbers in a collapsed block (``tit-data``: out of search)."""
    lines = markdown.split("\n")
    after: dict[int, list[str]] = {}  # line index -> the block that follows it
    for i, line in prose_lines(lines):
        m = PLOT_LINE.match(line)
        if m is None or not any(r["bench"] == m.group("bench") for r in data.rows):
            continue
        pad = m.group("indent")
        table = plot_numbers(data, m.group("bench"), up)
        after[i] = (["", f'{pad}??? note {DATA_CLASS} "The numbers behind this plot"', ""]
                    + [f"{pad}    {t}" if t else "" for t in table.split("\n")] + [""])
    return "\n".join(out for i, line in enumerate(lines) for out in [line, *after.get(i, [])])


def stale_notice(stale: list[results.Stale]) -> str:
    """The warning a page gets when some of its numbers come from results older than their code."""
    items = "\n".join(f"    * `{s.csv}` (measured {s.date}): {s.reason}." for s in stale)
    rerun = " ".join(f"--example {s.example}" for s in stale)
    return (
        '!!! warning "Results older than the code they measure"\n\n'
        "    Some numbers or plots on this page come from result files that do not match the\n"
        "    current example's measured code:\n\n"
        f"{items}\n\n"
        f"    They are re-measured on the GPU with `python -m scripts.bench {rerun}`.\n"
    )


def insert_after_title(markdown: str, block: str) -> str:
    """Put a block right under the page's first '# ' heading (outside code fences), else on top."""
    lines = markdown.split("\n")
    for i, line in prose_lines(lines):
        if line.startswith("# "):
            return "\n".join(lines[: i + 1] + ["", block] + lines[i + 1:])
    return block + "\n" + markdown


def story_map(page_path: str, story_pages: list[tuple[str, Path]], sources: dict[str, Path],
              data: results.Results | None, title_of, root: Path) -> str:
    """The map of the stories, in reading order: each example's notebook, the pages that teach
    with it, its tests, its result file, its plots and the command that runs it (``title_of``:
    an example's title; ``root``: the repository)."""
    up = "../" * page_path.count("/")
    rows = ["| story | taught on | tests | results | plots | run it |", "| --- | --- | --- | --- | --- | --- |"]
    text = {rel: path.read_text() for rel, path in story_pages if path.is_file()}
    for stem in reading_order([path for _, path in story_pages], list(sources)):
        src = sources[stem]
        taught = [f"[{rel.removesuffix('.md')}]({up}{rel})" for rel in text
                  if stem in EXAMPLE_REF.findall(text[rel])]
        test = root / "tests" / f"test_{stem}.py"
        csv_file = results.RESULTS_DIR / results.GPU_DIR / f"{stem}.csv"
        benches = sorted({r["bench"] for r in data.rows if r["example"] == stem}) if data else []
        rows.append(
            f"| [{title_of(src)}]({up}examples/{stem}.ipynb) | {'<br>'.join(taught) or '–'} "
            f"| {f'`tests/{test.name}`' if test.exists() else '–'} "
            f"| {f'[`{stem}.csv`]({up}{RESULT_FILES_URL}/{stem}.csv)' if csv_file.exists() else '–'} "
            f"| {'<br>'.join(f'[{b}]({up}assets/plots/{b}.svg)' for b in benches) or '–'} "
            f"| `python examples/{src.name}` |")
    return "\n".join(rows)


NOTEBOOK_STYLES = "assets/notebook"  # where a notebook page's stylesheets are served, one file per content
STYLE_BLOCK = re.compile(r'<style type="text/css">(.*?)</style>', re.S)


def external_styles(html: str, href) -> tuple[str, dict[str, str]]:
    """A notebook page's inline stylesheets (mkdocs-jupyter puts the same 590 KB of nbconvert's CSS
    into every one) as links to files named by their content: ``(html, {file name: css})``.
    ``href(path)`` gives the URL of a site path from the page. The CSS has no relative URLs (only
    ``data:`` ones), so it means the same from any folder."""
    files: dict[str, str] = {}

    def link(match: re.Match) -> str:
        css = match.group(1)
        name = f"{hashlib.sha256(css.encode()).hexdigest()[:16]}.css"
        files[name] = css
        return f'<link rel="stylesheet" href="{href(f"{NOTEBOOK_STYLES}/{name}")}">'

    return STYLE_BLOCK.sub(link, html), files


# ----------------------------------------------------------------------------- built pages' HTML
DATA_CLASS = "tit-data"  # generated data tables: the plots' numbers, targets, winners (see `data_block`)
# What the search index leaves out. Generated data: a reader searching for a term wants the prose
# that explains it, not a table of numbers that names it. Code blocks: Material's search matches
# a query as a prefix (`num_warps*`), so every `num_warps=4` and `num_warps=w` in code counted as a
# rare term of its own and code-heavy sections outranked the chapter that explains the option; the
# prose around each block, and its inline code, stay indexed. On a notebook page also its prompts
# and copy buttons. Material's search parser compares elements by tag name only, so an excluded
# element must not contain one of its own tag (the first inner `</div>` would end the exclusion):
# hence the `<pre>`s, not the notebook's nested cell `<div>`s.
SEARCH_EXCLUDED = re.compile(
    r'<(?P<tag>[a-z][a-z0-9]*)(?P<before>\s[^>]*?)?\sclass="(?P<cls>[^"]*(?<![\w-])(?:tit-data)'
    r'(?![\w-])[^"]*)"(?P<after>[^>]*)>')
CODE_EXCLUDED = re.compile(r"<pre\b")
NOTEBOOK_EXCLUDED = re.compile(
    r'<clipboard-copy\b|<div class="(?:clipboard-copy-txt|jp-InputPrompt|jp-OutputPrompt)(?=[\s"])')


def exclude_from_search(html: str, notebook: bool = False) -> str:
    """Mark what the search index leaves out with Material's ``data-search-exclude`` (its search
    plugin skips those elements and then drops the attribute from the page). md_in_html leaves a
    bare ``markdown`` attribute on a block nested in an admonition: dropped here too."""

    def mark(m: re.Match) -> str:
        attrs = f"{m.group('before') or ''} class=\"{m.group('cls')}\"{m.group('after')}"
        attrs = re.sub(r"\smarkdown(?:=\"[^\"]*\")?(?=[\s>]|$)", "", attrs)
        if "data-search-exclude" not in attrs:
            attrs += " data-search-exclude"
        return f"<{m.group('tag')}{attrs}>"

    html = CODE_EXCLUDED.sub(_exclude_tag, html)
    if notebook:
        html = NOTEBOOK_EXCLUDED.sub(_exclude_tag, html)
    return SEARCH_EXCLUDED.sub(mark, html)


def _exclude_tag(m: re.Match) -> str:
    """`<pre` -> `<pre data-search-exclude`; `<div class="x` -> `<div data-search-exclude class="x`."""
    text = m.group(0)
    if text.startswith("<div "):
        return '<div data-search-exclude ' + text[len("<div "):]
    return text + " data-search-exclude"


PRE = re.compile(r"<pre\b.*?</pre>", re.S)
PLAIN_TOKEN = re.compile(r'<span class="[nw]">([^<]*)</span>')
TOKEN_CLASS = re.compile(r'<span class="([A-Za-z0-9]+)">')
TAG_OR_TEXT = re.compile(r"(<[^>]*>)")
QUOTES = (("&quot;", '"'), ("&#39;", "'"), ("&#x27;", "'"))


def _lighter_pre(pre: str) -> str:
    pre = TOKEN_CLASS.sub(r"<span class=\1>", PLAIN_TOKEN.sub(r"\1", pre))
    parts = TAG_OR_TEXT.split(pre)
    for i in range(0, len(parts), 2):  # the text between tags, where a quote needs no escape
        for entity, char in QUOTES:
            parts[i] = parts[i].replace(entity, char)
    return "".join(parts)


def lighter_code(html: str) -> str:
    """Highlighted code with less markup and the same look and text: Pygments wraps every name
    (``n``) and run of whitespace (``w``) in a span, and both Material and nbconvert colour them
    as the code around them (a third of the HTML of a page heavy with code); a one-word class
    needs no quotes (``<span class=p>``, HTML5), and a quote in text needs no entity. The
    longest example's page is 5% lighter for the last two."""
    return PRE.sub(lambda m: _lighter_pre(m.group(0)), html)


def data_block(markdown_table: str, pad: str = "") -> str:
    """A generated table wrapped so that the built page marks it ``tit-data`` (left out of search)."""
    lines = [f'<div class="{DATA_CLASS}" markdown>', "", *markdown_table.split("\n"), "", "</div>"]
    return "\n".join(f"{pad}{line}" if line else "" for line in lines)


HEADING = re.compile(r'<h(?P<level>[1-6])[^>]*\sid="(?P<id>[^"]+)"[^>]*>(?P<inner>.*?)</h(?P=level)>', re.S)
ANCHOR_LINK = re.compile(r'<a class="anchor-link"[^>]*>.*?</a>', re.S)


def notebook_toc(html: str, depth: int = 6) -> tuple[list[dict], str | None]:
    """The table of contents of a notebook page from its own headings, and its title (the first
    h1's text, inline code included). mkdocs-jupyter strips inline code before it reads the
    headings, so its contents named anchors such as ``#for-a`` for a heading ``For a `tl.dot```
    whose id is ``for-a-tldot``, and titled the page "Compute inside a tile: , dtypes"."""
    import html as htmllib

    tokens: list[dict] = []
    stack: list[dict] = []
    title = None
    for m in HEADING.finditer(html):
        level = int(m.group("level"))
        text = re.sub(r"<[^>]+>", "", ANCHOR_LINK.sub("", m.group("inner"))).strip()
        if level == 1 and title is None:
            title = htmllib.unescape(text)
        if level > depth:
            continue
        token = {"level": level, "id": m.group("id"), "name": text, "children": []}
        while stack and stack[-1]["level"] >= level:
            stack.pop()
        (stack[-1]["children"] if stack else tokens).append(token)
        stack.append(token)
    return tokens, title


def colab_url(repo_url: str, path: str, branch: str = "main") -> str:
    """Colab's GitHub opener for a notebook the repository holds at ``path``."""
    owner_repo = repo_url.rstrip("/").removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{path}"


def notebook_actions(html: str, stem: str, repo_url: str, committed: str | None) -> str:
    """A notebook page's download link (the notebook sits beside the page: mkdocs-jupyter's
    ``include_source``) under its title; "Open in Colab" beside it only for a notebook the
    repository holds (``committed``: its path), as Colab opens only those."""
    links = [f'<a class="md-button" href="{stem}.ipynb" download>Download the notebook</a>']
    if committed and repo_url:
        links.append(f'<a class="md-button" href="{colab_url(repo_url, committed)}">Open in Colab</a>')
    block = f'<p class="tit-notebook-actions" data-search-exclude>{" ".join(links)}</p>'
    at = html.find("</h1>")
    if at < 0:
        return block + html
    at += len("</h1>")
    return html[:at] + block + html[at:]


CLIPBOARD_COPY = re.compile(
    r'<pre(?P<attrs>[^>]*)>(?P<code>(?:(?!</pre>).)*)</pre></div>\s*'
    r'<div class="clipboard-copy-txt"[^>]*\sid="(?P<id>[^"]+)"[^>]*>[^<]*</div>', re.S)
MERMAID_LOADER = re.compile(r'<script type="module">(?:(?!</script>).)*jp-Mermaid(?:(?!</script>).)*</script>', re.S)


def lighter_notebook(html: str) -> str:
    """A notebook page without what it carried twice or never used: each code cell's hidden plain
    copy of its code (the copy button, GitHub's clipboard-copy element, copies the text of the
    element its ``for`` names: now the highlighted ``<pre>`` itself, whose text is the same code),
    and nbconvert's Mermaid loader on a page with no diagram (it would fetch Mermaid from a CDN)."""
    html = CLIPBOARD_COPY.sub(lambda m: f'<pre{m.group("attrs")} id="{m.group("id")}">{m.group("code")}</pre></div>',
                              html)
    if 'class="jp-Mermaid' not in html:
        html = MERMAID_LOADER.sub("", html)
    return html


VERBATIM = re.compile(r"<(pre|textarea|script|style|code)\b.*?</\1>", re.S | re.I)
BLANK_RUN = re.compile(r"[ \t]*\n\s*")


def collapse_whitespace(html: str) -> str:
    """The built page with each run of whitespace that holds a line break cut to one line break,
    outside the elements whose whitespace shows (``pre``, ``code``, ``textarea``) or is code.
    Between tags and words a line break renders as any other whitespace: the page looks the same,
    and Material's indented templates (the navigation on every page) weigh a tenth less."""
    out, at = [], 0
    for m in VERBATIM.finditer(html):
        out.append(BLANK_RUN.sub("\n", html[at:m.start()]))
        out.append(m.group(0))
        at = m.end()
    out.append(BLANK_RUN.sub("\n", html[at:]))
    return "".join(out)
