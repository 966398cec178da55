"""Check every exercise: its solution passes its test, its starter fails it.

For each ``exercises/NN_name/`` folder, run ``pytest exercises/NN_name`` twice:

* with ``EXERCISE_IMPL=solution``: every test must pass (pytest exit code 0), with warnings
  turned into errors (``-W error``);
* with ``EXERCISE_IMPL=starter``: the tests must fail as tests (exit code 1, at least
  one failure, no errors), not through a collection or import error (exit code 2+).

Prints one line per exercise and exits non-zero if any check does not hold.
Usage: ``python -m scripts.check_exercises [--jobs N] [NN_name ...]``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
TIMEOUT_S = 300


def exercise_dirs(names: list[str]) -> list[Path]:
    dirs = sorted(p for p in EXERCISES.iterdir() if p.is_dir() and re.match(r"\d\d_\w+$", p.name))
    if names:
        unknown = sorted(set(names) - {d.name for d in dirs})
        if unknown:
            sys.exit(f"unknown exercises: {unknown}")
        dirs = [d for d in dirs if d.name in names]
    return dirs


def run_pytest(folder: Path, impl: str) -> tuple[int, str]:
    """(exit code, pytest's summary line) for one exercise and one implementation."""
    env = {**os.environ, "EXERCISE_IMPL": impl}
    # -W error: a warning fails the run (exercises/conftest.py silences the one Triton's interpreter gives)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error",
           "--tb=no", str(folder.relative_to(ROOT))]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {TIMEOUT_S} s"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    summary = lines[-1].strip("= ") if lines else proc.stderr.strip().splitlines()[-1:] or ""
    return proc.returncode, str(summary)


def count(summary: str, word: str) -> int:
    m = re.search(rf"(\d+) {word}", summary)
    return int(m.group(1)) if m else 0


def check(folder: Path) -> tuple[bool, str]:
    start = time.perf_counter()
    sol_rc, sol_summary = run_pytest(folder, "solution")
    st_rc, st_summary = run_pytest(folder, "starter")
    problems = []
    if sol_rc != 0 or count(sol_summary, "passed") == 0:
        problems.append(f"solution should pass (exit {sol_rc}: {sol_summary})")
    if st_rc != 1 or count(st_summary, "failed") == 0 or count(st_summary, "error") > 0:
        problems.append(f"starter should fail its tests (exit {st_rc}: {st_summary})")
    took = time.perf_counter() - start
    if problems:
        return False, f"FAIL {folder.name:<24} " + "; ".join(problems)
    return True, (f"ok   {folder.name:<24} solution: {count(sol_summary, 'passed')} passed; "
                  f"starter: {count(st_summary, 'failed')} failed ({took:.1f} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="exercise folders to check (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="exercises checked at once (default: 2)")
    args = parser.parse_args()
    dirs = exercise_dirs(args.names)
    if not dirs:
        print("no exercises found")
        return 1
    ok = True
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for passed, line in pool.map(check, dirs):  # results in folder order
            print(line, flush=True)
            ok &= passed
    print(f"{len(dirs)} exercises: " + ("every solution passes and every starter fails" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
