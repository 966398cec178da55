"""Execute the examples' notebooks for the site: in parallel, several per Python process, cached.

The site shows every example as a notebook with its output (the self-check it prints). A
Jupyter kernel per notebook costs a kernel start and the torch and triton imports each time,
about 3 s of CPU before the first line of an example runs, one notebook after another. Here
``jobs`` worker processes (one per core) each import torch and triton once and take the
notebooks from one queue, longest first, every notebook in a fresh namespace named ``__main__``
(as a Jupyter kernel or ``python examples/<file>.py`` would), each code cell with its stdout and
stderr captured into the cell's outputs, and the value of a cell's last bare expression shown as
Jupyter shows it. A worker then renders the page of the notebook it ran into mkdocs-jupyter's
cache (``scripts/jupyter_pages.py``), so the build's process does not convert them one by one.

An executed notebook is cached under ``cache_dir`` on the sha256 of the notebook it was made
from, and that notebook carries the example's source and the Python, torch and triton versions
(``example_to_notebook``): an unchanged example is never run twice, a changed one always
runs. A cell that raises stops the build with the example, the cell and the traceback.

    python -m scripts.notebooks NOTEBOOK.ipynb ...   # run them here and print their outputs
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import json
import linecache
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from scripts import sections

ROOT = Path(__file__).resolve().parent.parent


class NotebookError(RuntimeError):
    """A cell of an example raised; the message names the example, the cell and the traceback."""


def key_of(notebook: bytes) -> str:
    """The cache key of an execution: the notebook (the example's code and the Python, torch and
    Triton versions), this runner's own code, numpy's version, and what the kernels run on."""
    import importlib.metadata

    try:
        numpy = importlib.metadata.version("numpy")
    except importlib.metadata.PackageNotFoundError:
        numpy = "none"
    digest = hashlib.sha256(notebook)
    for part in (Path(__file__).read_bytes(), numpy.encode(), os.environ.get("TRITON_INTERPRET", "").encode(),
                 os.environ.get("CUDA_VISIBLE_DEVICES", "").encode(), str(Path("/dev/nvidiactl").exists()).encode()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


# ----------------------------------------------------------------------------- in a worker


def _run_cell(code: str, filename: str, namespace: dict):
    """Run one cell as IPython does: the statements, then the last bare expression's value
    (none when the cell ends with `;`)."""
    tree = ast.parse(code, filename)
    shown = tree.body and isinstance(tree.body[-1], ast.Expr) and not code.rstrip().endswith(";")
    last = tree.body.pop() if shown else None
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:
        return eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
    return None


def _fresh_process_state() -> None:
    """Isolate a notebook from the ones a worker ran before it: torch's generator starts from
    NOTEBOOK_SEED (so an unseeded example prints the same numbers whichever worker runs it and
    after what; a new Jupyter kernel would start from a random seed) and no warning counts as
    already shown."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(NOTEBOOK_SEED)
    for module in list(sys.modules.values()):
        registry = getattr(module, "__warningregistry__", None)
        if isinstance(registry, dict):
            registry.clear()


NOTEBOOK_SEED = 0


def execute_notebook(nb: dict, name: str, source_dir: Path) -> dict:
    """Run every code cell of `nb` in a fresh `__main__` namespace; return `nb` with outputs."""
    _fresh_process_state()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    count = 0
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        count += 1
        code = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        # @triton.jit reads its function's source through inspect: give every cell a real file
        filename = str(source_dir / f"{name}-cell{index}.py")
        Path(filename).write_text(code)
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        namespace["__file__"] = filename
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                value = _run_cell(code, filename, namespace)
        except BaseException as exc:  # noqa: BLE001  (SystemExit too: an example must not exit)
            shown = "".join(traceback.format_exception(exc))
            raise NotebookError(f"examples/{name}.py, code cell {count} (notebook cell {index}) raised:\n"
                                f"{out.getvalue()}{err.getvalue()}{shown}") from None
        outputs = [{"output_type": "stream", "name": stream, "text": text.getvalue()}
                   for stream, text in (("stdout", out), ("stderr", err)) if text.getvalue()]
        if value is not None:
            outputs.append({"output_type": "execute_result", "execution_count": count, "metadata": {},
                            "data": {"text/plain": repr(value)}})
        cell["outputs"], cell["execution_count"] = outputs, count
    return nb


def _worker(out_dir: Path, paths: list[Path]) -> int:
    """Run the notebooks one after another in this process, each one that no other worker of the
    run has claimed yet (so the workers share the list as a queue, longest first, and none waits
    while another has a backlog); write each executed notebook to out_dir/<stem>.ipynb and, when
    the run asks for it, its page into mkdocs-jupyter's cache (scripts/jupyter_pages.py). Exit
    status 1 and the error on stderr at the first failing cell."""
    source_dir = out_dir / "cells"
    source_dir.mkdir(parents=True, exist_ok=True)
    claims = out_dir.parent / "claims"
    claims.mkdir(exist_ok=True)
    pages_file = out_dir.parent / PAGES_FILE
    pages = json.loads(pages_file.read_text()) if pages_file.exists() else None
    for path in paths:
        try:
            os.close(os.open(claims / path.stem, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue  # another worker has it
        nb = json.loads(path.read_text())
        run = "recorded_on" not in nb.get("metadata", {})  # a recorded GPU output is shown, not re-made
        t0 = time.perf_counter()
        try:
            if run:
                nb = execute_notebook(nb, path.stem, source_dir)
        except NotebookError as err:
            print(err, file=sys.stderr)
            return 1
        executed = out_dir / f"{path.stem}.ipynb"
        executed.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        if run:  # the queue's order needs interpreter times: a recorded notebook's ~0 s would hide them
            print(f"{TIMING_TAG} {path.stem} {time.perf_counter() - t0:.3f}", flush=True)
        if pages is not None:
            from scripts import jupyter_pages

            jupyter_pages.prime(executed, pages)
    return 0


PAGES_FILE = "pages.json"  # in a run's folder: where and how the workers render pages (None: they do not)
TIMING_TAG = "notebooks-timing"  # the worker's stdout lines the build reads: "<tag> <stem> <seconds>"


# ----------------------------------------------------------------------------- in the build


def _order(items: list[tuple[str, bytes]], weights: dict[str, float]) -> list[str]:
    """The notebooks longest first (by their last measured time; unmeasured ones count 5 s), the
    order in which the workers take them from their shared queue."""
    return [stem for stem, _ in sorted(items, key=lambda item: -weights.get(item[0], 5.0))]


class Run:
    """Notebooks being executed in the background: `start` returns at once, `wait` collects.

    Each run works in a folder of its own (two builds at once never share a file), workers read
    `<run>/in/<stem>.ipynb` and write `<run>/out/<stem>.ipynb`, and an executed notebook enters
    the cache only when every code cell ran. `close` stops the workers of a build that failed
    before collecting them."""

    def __init__(self, notebooks: dict[str, bytes], cache_dir: Path, jobs: int | None = None,
                 pages: dict | None = None):
        self.cache_dir = Path(cache_dir)
        self.pages = pages  # jupyter_pages.settings(...): the workers also render each page they run
        self.notebooks = notebooks
        self.cached = {stem: self.cache_dir / f"{stem}-{key_of(nb)}.ipynb" for stem, nb in notebooks.items()}
        self.missing = [(stem, nb) for stem, nb in notebooks.items() if not self.cached[stem].exists()]
        self.jobs = max(1, min(jobs or available_cores(), len(self.missing) or 1))
        self.procs: list[tuple[subprocess.Popen, list[str]]] = []
        self.folder: Path | None = None

    def start(self) -> Run:
        if not self.missing:
            return self
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix="run-", dir=self.cache_dir))
        (self.folder / "in").mkdir()
        (self.folder / "out").mkdir()
        for stem, nb in self.missing:
            (self.folder / "in" / f"{stem}.ipynb").write_bytes(nb)
        if self.pages is not None:
            (self.folder / PAGES_FILE).write_text(json.dumps(self.pages))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        names = _order(self.missing, self._timings())
        cmd = [sys.executable, "-m", "scripts.notebooks", "--worker", str(self.folder / "out"),
               *[str(self.folder / "in" / f"{stem}.ipynb") for stem in names]]
        for _ in range(self.jobs):  # every worker gets the whole queue and claims one notebook at a time
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            self.procs.append((proc, names))
        return self

    def _timings(self) -> dict[str, float]:
        path = self.cache_dir / "timings.json"  # seconds per example, last measured: for the split only
        try:
            return json.loads(path.read_text()) if path.exists() else {}
        except (OSError, ValueError):
            return {}

    def close(self) -> None:
        """Stop the workers (if any still run) and remove this run's folder."""
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        self.procs = []
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def wait(self) -> dict[str, bytes]:
        """stem -> the executed notebook; raises NotebookError if an example failed."""
        try:
            return self._collect()
        finally:
            self.close()

    def _collect(self) -> dict[str, bytes]:
        failures, timings = [], {}
        for proc, names in self.procs:
            stdout, stderr = proc.communicate()
            for line in stdout.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[0] == TIMING_TAG:
                    timings[parts[1]] = float(parts[2])
            if proc.returncode != 0:
                failures.append(_failure_of(stderr) or f"a worker of {names} exited with {proc.returncode}")
        if failures:
            raise NotebookError("\n\n".join(failures))
        for stem, _ in self.missing:
            executed = self.folder / "out" / f"{stem}.ipynb"
            nb = json.loads(executed.read_text())
            if any(c["cell_type"] == "code" and c.get("execution_count") is None for c in nb["cells"]):
                raise NotebookError(f"examples/{stem}.py: the worker returned a notebook with unexecuted cells")
            os.replace(executed, self.cached[stem])
            for old in self.cache_dir.glob(f"{stem}-*.ipynb"):  # earlier executions of this example
                if old != self.cached[stem]:
                    old.unlink(missing_ok=True)
        if timings:
            known = self._timings()
            tmp = self.folder / "timings.json"
            tmp.write_text(json.dumps({**known, **timings}, indent=1, sort_keys=True) + "\n")
            os.replace(tmp, self.cache_dir / "timings.json")
        return {stem: self.cached[stem].read_bytes() for stem in self.notebooks}


def _failure_of(stderr: str) -> str:
    """The worker's error: from the line naming the example on (earlier lines are warnings)."""
    at = stderr.find("examples/")
    return (stderr[stderr.rfind("\n", 0, at) + 1:] if at >= 0 else stderr).strip()


def available_cores() -> int:
    """The cores this process may use (affinity and cgroup limits, not the host's count), at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        return _worker(Path(argv[1]), [Path(p) for p in argv[2:]])
    if argv[:1] == ["--write-committed"]:
        return write_committed()
    for path in map(Path, argv):
        nb = execute_notebook(json.loads(path.read_text()), path.stem, Path("/tmp"))
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                print(out.get("text") or out["data"]["text/plain"], end="")
    return 0



# ----------------------------------------------------------------------------- example -> notebook
def example_to_notebook(source: str, recorded: dict | None = None) -> bytes:
    """The notebook of one example's source: its cells (section markers removed), fixed cell ids
    and the versions that execute it (``scripts/hooks.py`` keeps the made ones between serve
    rebuilds).

    ``recorded`` ({"output", "gpu", "date", "file"}, from ``verified.recorded_output``): what this very
    file printed in a GPU check. The notebook then carries that output in its last code cell (the
    examples print only there, from ``if __name__ == "__main__":``), a note cell saying where it
    comes from, and ``metadata["recorded_on"]``: the build shows it instead of running the example
    in the interpreter."""
    import jupytext

    return (jupytext.writes(_notebook(source, recorded), fmt="ipynb") + "\n").encode()


def _notebook(source: str, recorded: dict | None = None):
    """``example_to_notebook``'s notebook, as an nbformat object (``colab_notebook`` edits it)."""
    import jupytext
    import nbformat

    text = sections.without_markers(source)
    nb = jupytext.reads(text, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.pop("jupytext", None)
    if recorded is not None:
        code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
        if not code:
            raise ValueError("an example with a recorded output needs a code cell to show it")
        day = recorded["date"][:10]
        note = (f"The output below is what this file printed on the **{recorded['gpu']}** in the GPU check of "
                f"{day} (`benchmarks/verified/outputs/`): the site shows it because the file has not changed "
                f"since (same sha256). Run it yourself with `python {recorded.get('file', 'examples/<file>.py')}`: "
                "on a machine without a GPU the kernels run in Triton's interpreter.")
        nb.cells.insert(code[-1], nbformat.v4.new_markdown_cell(note))
        for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1):
            cell["execution_count"] = count
            cell["outputs"] = []
        nb.cells[code[-1] + 1]["outputs"] = [nbformat.v4.new_output("stream", name="stdout", text=recorded["output"])]
        nb.metadata["recorded_on"] = {"gpu": recorded["gpu"], "date": recorded["date"]}
    # Same example, same bytes: mkdocs-jupyter caches the executed page on a hash of the notebook,
    # so the cell ids must not be random (nbformat's default) and the notebook names the versions
    # that execute it (an upgrade re-executes; the examples import nothing else of the repository).
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    nb.metadata["executed_with"] = {name: version_of(name) for name in ("python", "torch", "triton")}
    return nb


# ----------------------------------------------------------------------------- committed, for Colab
ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "notebooks"  # notebooks/<stem>.ipynb: what "Open in Colab" opens (Colab reads GitHub)
COLAB_NOTE = ("**On Colab**: choose a GPU runtime (*Runtime > Change runtime type*) to run the kernels "
              "on the GPU; on a CPU runtime they run in Triton's interpreter. This notebook is made "
              "from `examples/{stem}.py` (`make notebooks`); the file is the one to edit.")


def colab_notebook(source: str, stem: str) -> bytes:
    """The committed notebook of one example: its cells as the site's notebook has them, a first
    note for Colab, no outputs and no record of the machine that made it (so it changes only when
    the example does)."""
    import jupytext
    import nbformat

    nb = _notebook(source)
    nb.metadata.pop("executed_with", None)
    nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0,
                    nbformat.v4.new_markdown_cell(COLAB_NOTE.format(stem=stem)))
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return (jupytext.writes(nb, fmt="ipynb") + "\n").encode()


def committed_cells(data: bytes) -> list[tuple[str, str]]:
    """(cell type, source) of each cell: what must match between a committed notebook and its
    example (the JSON layout may differ between jupytext versions)."""
    nb = json.loads(data)
    return [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in nb["cells"]]


def write_committed(examples: Path = ROOT / "examples", out: Path = COMMITTED) -> int:
    """Write notebooks/<stem>.ipynb for every example (and remove those of examples gone)."""
    from scripts import results

    out.mkdir(exist_ok=True)
    stems = set()
    for src in results.example_files(examples):
        stems.add(src.stem)
        data = colab_notebook(src.read_text(), src.stem)
        path = out / f"{src.stem}.ipynb"
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
            print(f"wrote {path.relative_to(ROOT)}")
    for old in out.glob("*.ipynb"):
        if old.stem not in stems:
            old.unlink()
            print(f"removed {old.relative_to(ROOT)}")
    return 0


@functools.cache  # per build: the module is imported afresh each one
def version_of(name: str) -> str:
    import importlib.metadata
    import platform

    if name == "python":
        return platform.python_version()
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def notebook_title(src: Path) -> str:
    for line in src.read_text().splitlines():
        m = re.match(r"^# # (.+)$", line)
        if m:
            return m.group(1).replace("`", "").strip()  # nav titles are plain text
    raise ValueError(f"examples/{src.name}: the first markdown cell needs a '# # Title' line")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
