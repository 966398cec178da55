"""MkDocs hooks: the build-time glue between examples/, results and the pages. Each hook
dispatches to a script that does the work and knows nothing of MkDocs:

* ``on_config``: one page per ``examples/*.py`` under "Examples" in the nav, in reading order
  (``scripts/pages.py``).
* ``on_pre_build``: turn each example into a notebook and execute it (``scripts/notebooks.py``:
  worker processes, cached on the notebook's hash; each worker also renders the page of the
  notebook it ran into mkdocs-jupyter's cache, ``scripts/jupyter_pages.py``). An example whose
  file is byte for byte the one a GPU check ran shows that run's output instead of running in the
  interpreter (``verified.recorded_output``, ``benchmarks/verified/outputs/``). Meanwhile read
  the results and redraw every plot (``scripts/results.py``, ``scripts/plots.py``) and the widgets' data
  (``scripts/schedules.py``, ``scripts/widget_data.py``, cached on their inputs).
* ``on_files``: add those notebooks, plots and data files to the site.
* ``on_nav``: under ``mkdocs serve --dirty``, re-render every page when a shared input changed.
* ``on_page_markdown``: render the page's expressions (one registry, ``scripts/expressions.py``;
  an unknown or missing result fails the build, naming the page and line), add the numbers under
  each plot and the notices on top (``scripts/pages.py``).
* ``on_page_markdown`` also checks a teaching page against ``scripts/teaching.py`` (history
  references in the rendered page, prose words in its source) and fails the build on a problem.
* ``on_page_content``: a notebook page links its stylesheets instead of inlining them, takes its
  title and table of contents from its own headings (code text kept), and gets its download
  link; generated data tables and code blocks leave the search index, and highlighted code
  loses the spans that change nothing (``scripts/pages.py``).
* ``on_post_page``: the built page without its templates' runs of blank indentation.

Anything unexpected raises ``PluginError``: a broken build beats a wrong page.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File
from mkdocs.structure.toc import get_toc
from mkdocs.utils import get_relative_url

import scripts
from scripts import (
    compare_runs,
    expressions,
    jupyter_pages,
    notebooks,
    pages,
    plots,
    results,
    schedules,
    sections,
    teaching,
    verified,
)

ROOT = Path(__file__).resolve().parent.parent

if Path(scripts.__file__).resolve().parent != ROOT / "scripts":  # an editable install of another checkout
    raise PluginError(f"`import scripts` finds {Path(scripts.__file__).parent}, not {ROOT / 'scripts'}: run "
                      "`make install` (pip install -e .) in this checkout")

EXAMPLES = ROOT / "examples"
CASES = ROOT / "benchmarks" / "cases"  # each story's benchmark case (results are stale when it changes)
CACHE = ROOT / ".cache" / "site"
NOTEBOOKS = CACHE / "notebooks"
PLOTS = CACHE / "plots"
DATA = CACHE / "data"  # JSON for the widgets: results, and traces of real kernels
# A second full benchmark run of the same GPU, kept to check that the results shown reproduce.
REPRODUCTION = ROOT / "benchmarks" / "reproduction" / results.GPU_DIR


def example_files() -> list[Path]:
    return results.example_files(EXAMPLES)


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write only when the bytes differ, so `mkdocs serve` does not rebuild in a loop."""
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def check_sections(src: Path) -> list[str]:
    """Problems with the section markers of one example (scripts/sections.py)."""
    return sections.problems(src)


# Kept between `mkdocs serve` rebuilds: this module stays, the scripts/ it calls are imported afresh.
_NOTEBOOKS: dict[tuple[bytes, ...], bytes] = {}
_CODE_HASHES: dict[tuple[bytes, bytes], str] = {}


def _remembered(memo: dict, key: tuple, make):
    """memo[key], made by ``make()`` the first time (a memo past 500 entries starts over)."""
    if key not in memo:
        if len(memo) > 500:
            memo.clear()
        memo[key] = make()
    return memo[key]


def example_to_notebook(src: Path) -> bytes:
    """The notebook of one example (scripts/notebooks.py), with the output a GPU check recorded for
    this very file when there is one; made again only when the example, that output, the marker
    parser or the converter changed."""
    recorded = verified.recorded_output(src)
    key = (src.read_bytes(), json.dumps(recorded, sort_keys=True).encode(),
           *((ROOT / "scripts" / f).read_bytes() for f in ("sections.py", "notebooks.py")))
    return _remembered(_NOTEBOOKS, key, lambda: notebooks.example_to_notebook(key[0].decode(), recorded))


def notebook_title(src: Path) -> str:
    try:
        return notebooks.notebook_title(src)
    except ValueError as err:
        raise PluginError(str(err)) from None


# scripts/*.py this hook uses, in import order (results first: the others import it; expressions last)
HELPERS = ("results", "plots", "targets", "compare_runs", "verified", "sections", "jupyter_pages", "notebooks",
           "schedules", "pages", "expressions")


def reload_helpers() -> None:
    """`mkdocs serve` keeps this module between rebuilds: import the helper scripts afresh, so that
    an edit to scripts/*.py shows without a restart (results first: the others import it)."""
    import importlib

    for name in HELPERS:
        sys.modules.pop(f"scripts.{name}", None)
    for name in HELPERS:
        globals()[name] = importlib.import_module(f"scripts.{name}")


def page_inputs(build: pages.Build) -> tuple[results.Results, dict, tuple | None]:
    """(results, stale, reproduction) for a page: this build's, or read now when no on_pre_build
    ran (a page rendered on its own, as the tests do)."""
    if build.data is not None:
        return build.data, build.stale, build.reproduction
    data = results.load()
    return data, results.stale_results(data, EXAMPLES, CASES), load_reproduction()


# The current build's state, handed to the functions that use it (on_config starts a new one). The
# memos that outlive a build (_NOTEBOOKS, _CODE_HASHES) stay beside it: `mkdocs serve` keeps this
# module between rebuilds.
_build = pages.Build()


def on_config(config, **kwargs):
    global _build
    reload_helpers()
    _build = build = pages.Build()
    nav = config["nav"]
    section = next((item for item in nav if isinstance(item, dict) and "Examples" in item), None)
    if section is None:
        raise PluginError("mkdocs.yml: the nav needs an 'Examples' section")
    entries = section["Examples"]
    listed = {e if isinstance(e, str) else next(iter(e.values())) for e in entries}
    sources = {src.stem: src for src in example_files()}
    docs_dir = Path(config["docs_dir"])
    page_files = [docs_dir / page for page in nav_pages([item for item in nav if item is not section])]
    build.story_pages = [(page.relative_to(docs_dir).as_posix(), page) for page in page_files]
    build.reading_order = reading_order(page_files, list(sources))  # also the order of the speed targets
    for stem in build.reading_order:
        target = f"examples/{stem}.ipynb"
        if target not in listed:
            entries.append({notebook_title(sources[stem]): target})
    return config


def nav_pages(nav) -> list[str]:
    return pages.nav_pages(nav)


def reading_order(page_paths: list[Path], stems: list[str]) -> list[str]:
    return pages.reading_order(page_paths, stems)


def _code_hash(sources: list[bytes]) -> str:
    """results.code_sha256 of a story's files, computed again only when they or results.py changed."""
    key = (*sources, (ROOT / "scripts" / "results.py").read_bytes())
    return _remembered(_CODE_HASHES, key, lambda: results.code_sha256(sources))


def _prepare_data(build: pages.Build) -> None:
    """Everything the pages read besides the notebooks: specs, results, plots, widget data."""
    stale = {p.stem for p in (NOTEBOOKS / "examples").glob("*.ipynb")} - {p.stem for p in example_files()}
    for stem in stale:
        (NOTEBOOKS / "examples" / f"{stem}.ipynb").unlink()
    data_dir = DATA / "assets" / "data"
    schedules.ship(data_dir, write_if_changed)  # assets/data/schedules.json (scripts/schedules.py)
    tracer = ROOT / "scripts" / "widget_data.py"  # traces recorded from the real kernels
    if tracer.exists():
        for name, blob in sorted(widget_traces(tracer).items()):
            write_if_changed(data_dir / name, blob)
    try:  # titles, ceilings, targets: benchmarks/presentation.yml as it is now (no GPU run needed)
        data = results.load()  # read once per build, used by every page
    except results.ResultError as err:
        raise PluginError(str(err)) from err
    build.data = data
    build.stale = results.stale_results(data, EXAMPLES, CASES, code_hash=_code_hash)
    build.reproduction = load_reproduction()
    plots.draw_all(results.RESULTS_DIR, PLOTS / "assets" / "plots", write=write_if_changed, data=data,
                   keyed=True)
    write_if_changed(data_dir / "results.json", results.to_json(data))


def on_pre_build(config, **kwargs):
    problems = [p for src in example_files() for p in check_sections(src)]
    if problems:
        raise PluginError("examples/: " + "; ".join(problems))
    # the examples run in worker processes (scripts/notebooks.py) while this one draws the plots
    plugin = config["plugins"].get("mkdocs-jupyter")
    run = notebooks.Run({src.stem: example_to_notebook(src) for src in example_files()}, CACHE / "executed",
                        pages=jupyter_pages.settings(plugin.config) if plugin is not None else None).start()
    try:
        _prepare_data(_build)
        executed = run.wait()
    except notebooks.NotebookError as err:
        raise PluginError(str(err)) from None
    finally:
        run.close()  # an error above must not leave workers writing behind the next build
    for stem, nb in executed.items():  # mkdocs-jupyter renders them as they are (execute: false)
        write_if_changed(NOTEBOOKS / "examples" / f"{stem}.ipynb", nb)


def widget_traces(tracer: Path) -> dict[str, bytes]:
    """The widgets' traces of real kernels, re-recorded only when their inputs change: the tracer,
    the section parser it uses, the example it traces and the Triton version (kept under
    .cache/site/traces/<key>.json)."""
    import hashlib
    import json

    key = hashlib.sha256()
    for part in (tracer.read_bytes(), (ROOT / "scripts" / "sections.py").read_bytes(),
                 (EXAMPLES / "vector_add.py").read_bytes(), notebooks.version_of("triton").encode()):
        key.update(hashlib.sha256(part).digest())
    cached = CACHE / "traces" / f"{key.hexdigest()}.json"
    if cached.exists():
        return {name: blob.encode() for name, blob in json.loads(cached.read_text()).items()}
    spec = importlib.util.spec_from_file_location("widget_data", tracer)
    widget_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(widget_data)
    blobs = widget_data.generate()
    for old in cached.parent.glob("*.json"):
        old.unlink()
    write_if_changed(cached, json.dumps({name: blob.decode() for name, blob in blobs.items()}).encode())
    return blobs


def load_reproduction():
    """compare_runs' verdict on the results shown against the second run, or None without one."""
    if not any(REPRODUCTION.glob("*.csv")):
        return None
    return compare_runs.compare_folders(results.RESULTS_DIR / results.GPU_DIR, REPRODUCTION)


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter wraps the notebooks
def on_files(files, config, **kwargs):
    use_urls = config["use_directory_urls"]
    for nb in sorted((NOTEBOOKS / "examples").glob("*.ipynb")):
        files.append(File(f"examples/{nb.name}", str(NOTEBOOKS), config["site_dir"], use_urls))
    for svg in sorted((PLOTS / "assets" / "plots").glob("*.svg")):
        files.append(File(f"assets/plots/{svg.name}", str(PLOTS), config["site_dir"], use_urls))
    for blob in sorted((DATA / "assets" / "data").glob("*.json")):
        files.append(File(f"assets/data/{blob.name}", str(DATA), config["site_dir"], use_urls))
    results_dir = results.RESULTS_DIR / results.GPU_DIR  # each plot's table links to its CSV
    for csv_file in sorted(results_dir.glob("*.csv")):
        files.append(File.generated(config, f"{pages.RESULT_FILES_URL}/{csv_file.name}", abs_src_path=str(csv_file)))
    return files


def on_nav(nav, config, files, **kwargs):
    """`mkdocs serve --dirty` (make serve) re-renders only the pages whose Markdown changed. Every
    page may quote the examples, the results or what the scripts make of them: when any of those
    changed since the last build, every page counts as changed, the example notebooks too. A page
    edit re-renders that page only: its notebooks' pages stay as they were served (mkdocs-jupyter
    then drops their cached renders, so the next full rebuild converts them again; their execution
    stays cached in .cache/site/executed). (Here, after every plugin's on_files: mkdocs-jupyter's
    makes the notebooks pages.)"""
    _build.inputs_key = key = shared_inputs_key()
    if not INPUTS_KEY.exists() or INPUTS_KEY.read_text() != key:
        for page_file in files.documentation_pages():
            page_file.is_modified = lambda: True
    return nav


# What every page may render from, besides its own Markdown.
SHARED_INPUTS = ("examples", "benchmarks/results", "benchmarks/reproduction", "benchmarks/verified",
                 "benchmarks/schedules", "benchmarks/evidence", "scripts", "docs/includes",
                 "docs/widgets", "mkdocs.yml")
INPUTS_KEY = CACHE / "shared-inputs.key"


def shared_inputs_key() -> str:
    import hashlib

    digest = hashlib.sha256()
    for top in SHARED_INPUTS:
        path = ROOT / top
        for f in sorted([path] if path.is_file() else (p for p in path.rglob("*") if p.is_file())):
            if "__pycache__" not in f.parts:
                digest.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def on_page_content(html, page, config, files, **kwargs):
    """Generated data tables (``tit-data``) leave the search index. A notebook page links its
    stylesheets instead of carrying them (scripts/pages.py: each of the 26 pages was 590 KB of the
    same CSS heavier), takes its title and table of contents from its own headings (mkdocs-jupyter
    drops inline code from both, so its contents linked to anchors that do not exist), keeps its
    code cells' hidden copies and its outputs out of the search index, edits from its example and
    opens with its download link (scripts/pages.py)."""
    notebook = page.file.src_path.endswith(".ipynb")
    if notebook:
        html = pages.lighter_notebook(html)
    html = pages.lighter_code(pages.exclude_from_search(html, notebook=notebook))
    if not notebook:
        return html
    html, styles = pages.external_styles(html, lambda path: get_relative_url(path, page.url))
    _build.styles.update(styles)
    tokens, title = pages.notebook_toc(html, toc_depth(config))
    page.toc = get_toc(tokens)
    if title:
        page.title = title
    stem = Path(page.file.src_path).stem
    repo = (config.get("repo_url") or "").rstrip("/")
    if repo:
        page.edit_url = f"{repo}/edit/main/examples/{stem}.py"  # the notebook is made from it
    return pages.notebook_actions(html, stem, repo, committed_notebook(stem))


def toc_depth(config) -> int:
    plugin = config["plugins"].get("mkdocs-jupyter")
    return plugin.config["toc_depth"] if plugin is not None else 6


def committed_notebook(stem: str) -> str | None:
    """The repository path of a committed notebook of this example, for Colab's GitHub opener
    (it opens only a .ipynb that the repository holds): ``notebooks/<stem>.ipynb``, written by
    ``make notebooks`` (``scripts/notebooks.py``, ``colab_notebook``); None without one."""
    for rel in (f"examples/{stem}.ipynb", f"notebooks/{stem}.ipynb"):
        if (ROOT / rel).is_file() and _tracked(rel):
            return rel
    return None


def _tracked(rel: str) -> bool:
    import subprocess

    try:
        out = subprocess.run(["git", "ls-files", "--error-unmatch", rel], cwd=ROOT, capture_output=True)
    except OSError:
        return False
    return out.returncode == 0


def on_post_page(output, page, config, **kwargs):
    """Every built page without its templates' runs of blank indentation (scripts/pages.py)."""
    return pages.collapse_whitespace(output)


def on_post_build(config, **kwargs):
    build = _build
    if build.inputs_key is not None:  # the pages now match these inputs
        write_if_changed(INPUTS_KEY, build.inputs_key.encode())
    # the stylesheets the notebook pages rendered in this build link (under `serve --dirty` a page
    # not rendered again keeps its link, and its file stays in the served folder)
    styles, build.styles = build.styles, {}
    for name, css in styles.items():
        write_if_changed(Path(config["site_dir"]) / pages.NOTEBOOK_STYLES / name, css.encode())


def examples_table(build: pages.Build, page_path: str, data: results.Results | None = None) -> str:
    """The map of the stories (scripts/pages.py), from the nav this build read."""
    return pages.story_map(page_path, build.story_pages, {src.stem: src for src in example_files()},
                           data, notebook_title, ROOT)


# Material's search multiplies a page's score by its `search: boost`: the teaching pages get this one
TEACHING_SEARCH_BOOST = 2


def on_page_markdown(markdown, page, config, files, **kwargs):
    """Render the page's expressions (scripts/expressions.py), add a table under each plot, and put
    the notices (results older than their example, points a second run did not reproduce) on top."""
    build = _build
    data, stale, reproduction = page_inputs(build)
    path, source = page.file.src_path, markdown
    ctx = expressions.Page(path, data, stale, reproduction, lambda: examples_table(build, path, data),
                           build.reading_order, config.get("repo_url") or "")
    benches = expressions.quoted_benches(markdown, data.specs)
    old = [stale[e] for e in sorted(expressions.quoted_examples(markdown, data, benches)) if e in stale]
    notice = ""
    # The account of a second run belongs with the evidence: Benchmarks pages only (scripts/teaching.py);
    # a whole-site page has the full account.
    if reproduction is not None and benches is not None and not teaching.is_teaching(path):
        notice = compare_runs.page_notice(reproduction[0], benches, set(stale), reproduction[3],
                                          ctx.up + "benchmarks.md#reproduction")
    try:
        # every kind of the registry but the story map, which comes last: a new kind cannot be skipped
        markdown = expressions.render(markdown, ctx, names=tuple(n for n in expressions.TOP if n != "examples"))
        markdown = pages.add_plot_numbers(markdown, data, ctx.up)
        # The map of the stories links every plot and result file: after the plot tables, which it must not get.
        markdown = expressions.render(markdown, ctx, names=("examples",))
    except expressions.ExpressionError as err:
        raise PluginError(str(err)) from err
    for block in (notice, pages.stale_notice(old) if old else ""):
        if block:
            markdown = pages.insert_after_title(markdown, block)
    check_teaching(path, markdown, source)
    meta = getattr(page, "meta", None)  # a page stand-in of a test may have none
    if teaching.is_teaching(path) and meta is not None:  # an explanation ranks above a table naming it
        meta.setdefault("search", {}).setdefault("boost", TEACHING_SEARCH_BOOST)
    return markdown


# A teaching page (scripts/teaching.py) that names the project's history or runs past its word
# limit fails the build, naming the page and the line.
def check_teaching(path: str, rendered: str, source: str | None = None) -> None:
    """Raise PluginError with every problem ``teaching.problems`` finds: history in the page's rendered
    Markdown (what a reader sees, expressions included), prose words in its source (``source``; a
    rendered table of numbers is not prose)."""
    found = teaching.problems(path, rendered, source)
    if found:
        raise PluginError("teaching page " + path + ":\n  " + "\n  ".join(found))
