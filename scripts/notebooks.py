"""Execute the examples' notebooks for the site: in parallel, several per Python process, cached.

The site shows every example as a notebook with its output (the self-check it prints). A
Jupyter kernel per notebook costs a kernel start and the torch and triton imports each time,
about 3 s of CPU before the first line of an example runs, one notebook after another. Here
``jobs`` worker processes (one per core) each import torch and triton once and run their share
of the notebooks, every notebook in a fresh namespace named ``__main__`` (as a Jupyter kernel
or ``python examples/<file>.py`` would), each code cell with its stdout and stderr captured
into the cell's outputs, and the value of a cell's last bare expression shown as Jupyter
shows it.

An executed notebook is cached under ``cache_dir`` on the sha256 of the notebook it was made
from, and that notebook carries the example's source and the Python, torch and triton versions
(``hooks.example_to_notebook``): an unchanged example is never run twice, a changed one always
runs. A cell that raises stops the build with the example, the cell and the traceback.

    python -m scripts.notebooks NOTEBOOK.ipynb ...   # run them here and print their outputs
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import linecache
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class NotebookError(RuntimeError):
    """A cell of an example raised; the message names the example, the cell and the traceback."""


def key_of(notebook: bytes) -> str:
    return hashlib.sha256(notebook).hexdigest()


# ----------------------------------------------------------------------------- in a worker


def _run_cell(code: str, filename: str, namespace: dict):
    """Run one cell as IPython does: the statements, then the last bare expression's value."""
    tree = ast.parse(code, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:
        return eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
    return None


def execute_notebook(nb: dict, name: str, source_dir: Path) -> dict:
    """Run every code cell of `nb` in a fresh `__main__` namespace; return `nb` with outputs."""
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
    """Run the notebooks one after another in this process; write each executed notebook to
    out_dir/<stem>.ipynb. Exit status 1 and the error on stderr at the first failing cell."""
    source_dir = ROOT / ".cache" / "site" / "cells"
    source_dir.mkdir(parents=True, exist_ok=True)
    for path in paths:
        nb = json.loads(path.read_text())
        t0 = time.perf_counter()
        try:
            nb = execute_notebook(nb, path.stem, source_dir)
        except NotebookError as err:
            print(err, file=sys.stderr)
            return 1
        (out_dir / f"{path.stem}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        print(f"{path.stem} {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


# ----------------------------------------------------------------------------- in the build


def _shares(items: list[tuple[str, bytes]], jobs: int, weights: dict[str, float]) -> list[list[str]]:
    """Split the notebooks over `jobs` workers, longest first onto the least loaded worker."""
    loads = [[0.0, []] for _ in range(jobs)]
    for stem, _ in sorted(items, key=lambda item: -weights.get(item[0], 5.0)):
        share = min(loads, key=lambda load: load[0])
        share[0] += weights.get(stem, 5.0)
        share[1].append(stem)
    return [names for _, names in loads if names]


class Run:
    """Notebooks being executed in the background: `start` returns at once, `wait` collects."""

    def __init__(self, notebooks: dict[str, bytes], cache_dir: Path, jobs: int | None = None):
        self.cache_dir = Path(cache_dir)
        self.notebooks = notebooks
        self.cached = {stem: self.cache_dir / f"{stem}-{key_of(nb)}.ipynb" for stem, nb in notebooks.items()}
        self.missing = [(stem, nb) for stem, nb in notebooks.items() if not self.cached[stem].exists()]
        self.jobs = max(1, min(jobs or os.cpu_count() or 1, len(self.missing) or 1))
        self.procs: list[tuple[subprocess.Popen, list[str]]] = []

    def start(self) -> Run:
        if not self.missing:
            return self
        todo = self.cache_dir / "todo"
        todo.mkdir(parents=True, exist_ok=True)
        timings = self.cache_dir / "timings.json"  # seconds per example, last measured: for the split only
        weights = json.loads(timings.read_text()) if timings.exists() else {}
        for stem, nb in self.missing:
            (todo / f"{stem}.ipynb").write_bytes(nb)
        for names in _shares(self.missing, self.jobs, weights):
            cmd = [sys.executable, "-m", "scripts.notebooks", "--worker", str(todo),
                   *[str(todo / f"{stem}.ipynb") for stem in names]]
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)})
            self.procs.append((proc, names))
        return self

    def wait(self) -> dict[str, bytes]:
        """stem -> the executed notebook; raises NotebookError if an example failed."""
        failures, timings = [], {}
        for proc, names in self.procs:
            stdout, stderr = proc.communicate()
            for line in stdout.splitlines():
                stem, _, rest = line.partition(" ")
                if rest.endswith(" s"):
                    timings[stem] = float(rest[:-2])
            if proc.returncode != 0:
                failures.append(stderr.strip() or f"worker for {names} exited with {proc.returncode}")
        if failures:
            raise NotebookError("\n\n".join(failures))
        todo = self.cache_dir / "todo"
        for stem, _ in self.missing:
            for old in self.cache_dir.glob(f"{stem}-*.ipynb"):
                old.unlink()
            (todo / f"{stem}.ipynb").replace(self.cached[stem])
        if timings:
            path = self.cache_dir / "timings.json"
            known = json.loads(path.read_text()) if path.exists() else {}
            path.write_text(json.dumps({**known, **timings}, indent=1, sort_keys=True) + "\n")
        return {stem: self.cached[stem].read_bytes() for stem in self.notebooks}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--worker"]:
        return _worker(Path(argv[1]), [Path(p) for p in argv[2:]])
    for path in map(Path, argv):
        nb = execute_notebook(json.loads(path.read_text()), path.stem, Path("/tmp"))
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                print(out.get("text") or out["data"]["text/plain"], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
