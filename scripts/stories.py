"""The path of every story, from its example to its plot, in one table.

A story is one ``examples/<story>.py``. Its path through the repository:

    example -> teaching page -> test -> exercise -> benchmark case -> result -> plot

``python -m scripts.stories`` prints the table (what each story has, and the stated reason where
it has no exercise); ``tests/browser/test_stories.py`` fails when a story lacks a step and gives
no reason. The teaching pages, tests, results and plots are found on disk; only which exercise
practises which story, and why a story has none, is written here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from scripts import results

ROOT = Path(__file__).resolve().parent.parent

# story -> the exercise (folder under exercises/) that practises it
EXERCISE = {
    "vector_add": "01_tiles", "program_ids": "01_tiles", "launch_grids": "02_launching",
    "masks": "03_masks", "strides": "04_strides", "int64_offsets": "04_strides",
    "tensor_descriptors": "04_strides", "tile_compute": "05_compute",
    "constexpr_specialization": "06_constexpr", "autotune": "06_constexpr",
    "persistent_rows": "07_persistent", "softmax": "08_softmax", "matmul": "09_matmul",
    "linear_gelu": "10_linear_gelu", "matmul_persistent": "11_matmul_persistent",
    "split_k": "12_reductions", "scan": "13_scan", "layer_norm": "14_layer_norm",
    "dropout": "15_dropout", "attention": "16_attention",
}
# story -> why it has no exercise of its own
NO_EXERCISE = {
    "debugging": "a practice page: its subject is a workflow (the interpreter, prints, pdb), not a kernel body",
    "failure_modes": "a practice page: it breaks kernels on purpose; the guide's exercises practise the fixes",
    "launch_overhead": "a practice page: it measures launches, and the kernel is a one-line add",
    "testing_kernels": "a practice page: its subject is the tests themselves",
    "timing_methods": "a practice page: its subject is how to time, on a saxpy kernel",
    "torch_op": "a practice page: its subject is registering an operator, on a SiLU kernel",
    "attention_hopper": "Gluon has no CPU interpreter, and the exercises run on a CPU; exercise 16 "
                        "practises the algorithm",
}
STEPS = ("page", "test", "exercise", "case", "result", "plot")
PLOT = re.compile(r"assets/plots/([\w.-]+)\.svg")


def stories() -> list[str]:
    return [p.stem for p in results.example_files()]


def teaching_pages(story: str, docs: Path = ROOT / "docs") -> list[str]:
    """The pages that teach with the story's code: they include a section of its example (the
    Benchmarks pages and the generated Examples pages do not count)."""
    needle = f'--8<-- "examples/{story}.py'
    return sorted(rel for p in docs.rglob("*.md") if needle in p.read_text()
                  and not (rel := p.relative_to(docs).as_posix()).startswith(("benchmarks", "examples/")))


def plotted_benches(docs: Path = ROOT / "docs") -> set[str]:
    return {m for p in docs.rglob("*.md") for m in PLOT.findall(p.read_text())}


def path_of(story: str, data: results.Results | None = None, plotted: set[str] | None = None) -> dict[str, str]:
    """step -> where the story has it ("" where it has none)."""
    data = results.load() if data is None else data
    plotted = plotted_benches() if plotted is None else plotted
    benches = sorted({r["bench"] for r in data.rows if r["example"] == story})
    exercise = EXERCISE.get(story, "")
    result = f"benchmarks/results/{results.GPU_DIR}/{story}.csv"
    return {
        "page": ", ".join(teaching_pages(story)),
        "test": f"tests/test_{story}.py" if (ROOT / "tests" / f"test_{story}.py").is_file() else "",
        "exercise": f"exercises/{exercise}" if exercise and (ROOT / "exercises" / exercise).is_dir() else "",
        "case": f"benchmarks/cases/{story}.py" if (ROOT / "benchmarks" / "cases" / f"{story}.py").is_file() else "",
        "result": result if (ROOT / result).is_file() else "",
        "plot": ", ".join(b for b in benches if b in plotted),
    }


def missing(story: str, path: dict[str, str]) -> list[str]:
    """The steps a story lacks with no reason given."""
    return [step for step in STEPS if not path[step] and not (step == "exercise" and story in NO_EXERCISE)]


def main() -> int:
    data, plotted = results.load(), plotted_benches()
    bad = 0
    for story in stories():
        path = path_of(story, data, plotted)
        print(f"{story}:")
        for step in STEPS:
            value = path[step] or (f"none: {NO_EXERCISE[story]}" if step == "exercise" and story in NO_EXERCISE
                                   else "MISSING")
            print(f"    {step:9} {value}")
        bad += bool(missing(story, path))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
