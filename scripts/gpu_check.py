"""Run every check on a CUDA machine and record which code passed them.

On a machine with a CUDA GPU (torch and Triton installed for it)::

    python -m scripts.gpu_check --changed         # only what changed since the record (make gpu-check)
    python -m scripts.gpu_check                   # everything, one random order (make gpu-check FULL=1)
    python -m scripts.gpu_check --runs 2          # two random orders, two seeds
    make gpu-check GPU_CHECK_ARGS="--runs 2"      # the same
    # the same in two sessions (each command on the lent H200 may run 10 minutes):
    python -m scripts.gpu_check --runs 1                  # every step; copy the record to
                                                          # benchmarks/verified/<gpu>.json, then
    python -m scripts.gpu_check --merge benchmarks/verified/h200.json --tests-only

runs, in this order:

1. the whole test suite (``tests``, without ``tests/browser``) in a random order
   (pytest-randomly's ``--randomly-seed``), once per run, each run with its own seed;
2. ``pytest --codeblocks docs/``: the pages' code, as it renders;
3. every example's self-check, ``python examples/<story>.py``, each under a timeout;
4. the property tests with their GPU profile (``HYPOTHESIS_PROFILE=gpu``), in the first
   run's random order, when ``tests/test_properties_*.py`` exist. Step 1 leaves those files
   out: on a GPU its default profile is the GPU one too (``tests/strategies.py``), and
   with ``derandomize`` a second pass would draw the same inputs again.

With ``--changed`` it compares the covered files with this GPU's record and runs the four steps
only over what the changed files touch (``scripts/gpu_scope.py``: an example's tests, pages and
self-check; a test helper's importers); when all of that passed it adds a ``partial`` entry to the
record, naming the files it re-verified and their sha256. A full run replaces the record, partial
entries included. No record, another machine's versions or a changed conftest: a full run.

Logs go to ``--logs``. Only when nothing failed anywhere does it write
``benchmarks/verified/<gpu>.json`` (or ``--record-to DIR``): the GPU, driver, versions,
date, seeds, the counts of every step and the sha256 of every file the record covers
(``verified_files``). ``tests/test_verified.py`` fails in ``make test`` when one of those
files differs from the record, and the home page and README say on which GPU and date
the current code last passed. It exits non-zero on any failure and prints a summary table last.

Without a GPU::

    python -m scripts.gpu_check --update-readme   # README's block from benchmarks/verified/

Reading a record (which files it covers, what it says, an example's recorded output) is
``scripts/verified.py``, which the site imports; this module writes records and imports nothing
heavy (the CPU tests use its helpers).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime as dt
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from scripts import gpu_scope
from scripts.results import example_files
from scripts.verified import (
    OUTPUTS,
    VERIFIED_DIR,
    _plural,
    describe,
    describe_diff,
    diff_files,
    effective_files,
    file_hashes,
    load_records,
)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PROPERTIES = "tests/test_properties_*.py"  # the property tests, split by subject
README_START, README_END = "<!-- verified:start -->", "<!-- verified:end -->"
RUNNING_ENV = "GPU_CHECK_RUNNING"  # set for the steps: tests/test_verified.py skips its record checks
RERUN_HINT = ("run `make gpu-check` on a CUDA machine (it re-verifies only what changed; FULL=1 runs everything) "
              "and commit benchmarks/verified/")


def property_files(root: Path | None = None) -> list[str]:
    root = ROOT if root is None else Path(root)
    return sorted(p.relative_to(root).as_posix() for p in root.glob(PROPERTIES))


# ----------------------------------------------------------------------------- README's block
def readme_block(records: dict[str, dict]) -> str:
    """The lines between README's markers, from the records alone (README cannot be rendered)."""
    if not records:
        body = ("**Last passed on a GPU:** not recorded yet: no version of this code has a complete GPU "
                "verification record. Run `python -m scripts.gpu_check` on a CUDA machine and commit "
                "`benchmarks/verified/<gpu>.json`.")
    else:
        newest_first = sorted(records.items(), key=lambda item: _last_run(item[1]), reverse=True)
        body = "\n\n".join(
            f"**{'Last passed' if i == 0 else 'Before that, passed'} on a GPU:** {describe(record)}. "
            f"Record: [`{path}`]({path}), written by `scripts/gpu_check.py`"
            for i, (path, record) in enumerate(newest_first))
        body += (".\n\n`make test` fails when the example and test files are not the ones that last passed "
                 + ("on that GPU." if len(records) == 1 else "on one of these GPUs (the home page says which)."))
    return f"{README_START}\n{body}\n{README_END}"


def _last_run(record: dict) -> str:
    """The date (ISO, UTC) of a record's last run, full or partial."""
    return max(dt.datetime.fromisoformat(run["date"]).astimezone(dt.UTC).isoformat()
               for run in [record, *record.get("partial", [])])


def _block_span(text: str) -> tuple[int, int]:
    """Where README's block starts and ends (its end marker included)."""
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md needs a {README_START} ... {README_END} block")
    return start, end + len(README_END)


def readme_with_block(text: str, block: str) -> str:
    start, end = _block_span(text)
    return text[:start] + block + text[end:]


def readme_block_in(text: str) -> str:
    start, end = _block_span(text)
    return text[start:end]


def update_readme(readme: Path | None = None, directory: Path | None = None) -> bool:
    """Rewrite README's block from the records; True when it changed."""
    readme = README if readme is None else Path(readme)
    text = readme.read_text()
    new = readme_with_block(text, readme_block(load_records(directory)))
    if new != text:
        readme.write_text(new)
    return new != text


# ----------------------------------------------------------------------------- steps and their counts
@dataclasses.dataclass
class Step:
    name: str
    kind: str  # tests | codeblocks | examples | properties
    status: str = "failed"  # ok | failed | absent (nothing to run)
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    seed: int | None = None
    note: str = ""
    log: str = ""

    def counts(self) -> dict:
        return {"passed": self.passed, "failed": self.failed, "skipped": self.skipped}


def junit_counts(path: Path) -> tuple[int, int, int]:
    """(passed, failed, skipped) of a pytest junit-xml file; an error counts as failed."""
    passed = failed = skipped = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            failed += 1
        elif "skipped" in tags:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def judge(step: Step, rc: int | None, junit: Path | None = None) -> Step:
    """Fill in counts and status: ok only with exit status 0, no failure and something passed."""
    notes = [step.note] if step.note else []
    if junit is not None:
        if junit.exists():
            step.passed, step.failed, step.skipped = junit_counts(junit)
        else:
            notes.append("no junit-xml written")
    if rc is None:
        notes.append("timed out (or the --budget was spent)")
    elif rc != 0:
        notes.append(f"exit status {rc}")
    step.note = "; ".join(notes)
    ok = rc == 0 and step.failed == 0 and step.passed > 0 and (junit is None or junit.exists())
    step.status = "ok" if ok else "failed"
    return step


def run_logged(cmd: list[str], log: Path, env: dict, timeout: float) -> int | None:
    """Run cmd in ROOT with stdout+stderr to log; None when it ran past timeout (its process
    group is killed: pytest-xdist's workers go with it)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        out.write("$ " + shlex.join(cmd) + "\n")
        out.flush()
        if timeout <= 0:
            out.write("not started: the time budget is spent\n")
            return None
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=grace)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
            out.write(f"\nkilled: ran past {timeout:.0f} s\n")
            return None


class Budget:
    def __init__(self, seconds: float | None):
        self.end = None if seconds is None else time.monotonic() + seconds

    def cap(self, timeout: float) -> float:
        return timeout if self.end is None else min(timeout, self.end - time.monotonic())


def xdist_dist(args: list[str]) -> list[str]:
    """With workers, hand out tests one by one as workers free up (``worksteal``, pytest-xdist 3.2+):
    a few long GPU tests then do not all end up at the tail of one worker's queue."""
    if "-n" not in args or args[args.index("-n") + 1] in ("0", "1"):
        return []
    try:
        from importlib.metadata import version

        major, minor = (int(v) for v in version("pytest-xdist").split(".")[:2])
    except Exception:  # not installed, or an odd version string: keep xdist's default
        return []
    return ["--dist=worksteal"] if (major, minor) >= (3, 2) else []


def run_pytest(step: Step, args: list[str], logs: Path, env: dict, timeout: float, python: str) -> Step:
    slug = re.sub(r"[^\w]+", "-", step.name).strip("-")
    log, junit = logs / f"{slug}.txt", logs / f"{slug}.xml"
    junit.unlink(missing_ok=True)
    cmd = [python, "-m", "pytest", "-p", "no:cacheprovider", f"--junit-xml={junit}", *xdist_dist(args), *args]
    t0 = time.monotonic()
    rc = run_logged(cmd, log, env, timeout)
    step.seconds, step.log = time.monotonic() - t0, str(log)
    return judge(step, rc, junit)


def run_examples(names: list[str], logs: Path, env: dict, timeout: float, jobs: int, python: str,
                 budget: Budget) -> Step:
    step = Step("examples", "examples")
    t0 = time.monotonic()

    def one(name: str) -> tuple[str, int | None]:
        log = logs / f"example_{name}.txt"
        return name, run_logged([python, f"examples/{name}.py"], log, env, budget.cap(timeout))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, names))
    bad = [f"{name} ({'timed out' if rc is None else f'exit status {rc}'})" for name, rc in results if rc != 0]
    step.passed, step.failed = len(results) - len(bad), len(bad)
    step.note = "failed: " + ", ".join(bad) if bad else ""
    step.status = "ok" if not bad and results else "failed"
    step.seconds, step.log = time.monotonic() - t0, str(logs / "example_*.txt")
    return step


# ----------------------------------------------------------------------------- the machine
INFO_SCRIPT = """
import json, os, platform, torch, triton
cuda = torch.cuda.is_available()
print(json.dumps({
    "cuda": cuda,
    "gpu": torch.cuda.get_device_name(0) if cuda else None,
    "gpu_count": torch.cuda.device_count() if cuda else 0,
    "python": platform.python_version(),
    "torch": torch.__version__,
    "triton": triton.__version__,
}))
"""


def interpreter_forced(env: dict) -> bool:
    return env.get("TRITON_INTERPRET", "0").lower() in ("1", "on", "true", "yes")


def gpu_info(python: str) -> dict:
    """What the steps will run on, asked of the same Python in a child process (so this
    process never holds a CUDA context)."""
    try:
        out = subprocess.run([python, "-c", INFO_SCRIPT], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, check=True)
        info = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        return {"cuda": False, "error": f"could not import torch and triton: {detail.strip()[-400:]}"}
    if info["cuda"]:
        from scripts.bench import driver_version, gpu_slug  # the same names as the results

        info["gpu_slug"] = gpu_slug(info["gpu"])
        info["driver"] = driver_version()
    info["triton_interpret"] = interpreter_forced(os.environ)
    return info


# ----------------------------------------------------------------------------- the record
def refusal_reasons(info: dict, steps: list[Step], *, runs: int, limits: list[str],
                    files_before: dict[str, str], files_after: dict[str, str]) -> list[str]:
    """Why no record may be written (empty: write it)."""
    reasons = []
    if not info.get("cuda"):
        reasons.append("no CUDA device: " + info.get("error", "torch.cuda.is_available() is False"))
    if info.get("triton_interpret"):
        reasons.append("TRITON_INTERPRET is set: the kernels ran in Triton's interpreter, not on the GPU")
    reasons += [f"the run covered only part of the code: {limit}" for limit in limits]
    for kind in ("tests", "codeblocks", "examples", "properties"):
        if not any(s.kind == kind for s in steps):
            reasons.append(f"step {kind} did not run")
    seeds = [s.seed for s in steps if s.kind == "tests"]
    if len(seeds) < runs or len(set(seeds)) != len(seeds):
        reasons.append(f"{runs} runs with distinct seeds were asked for, got seeds {seeds}")
    for s in steps:
        if s.status == "failed":
            reasons.append(f"{s.name} failed ({s.passed} passed, {s.failed} failed" + (f"; {s.note})" if s.note
                                                                                         else ")"))
    if files_before != files_after:
        reasons.append("files changed while the checks ran: " + describe_diff(diff_files(files_before, files_after)))
    return reasons


def build_record(info: dict, steps: list[Step], files: dict[str, str], *, date: str, command: str,
                 workers: int) -> dict:
    counts = {}
    for kind in ("tests", "codeblocks", "examples", "properties"):
        mine = [s for s in steps if s.kind == kind]
        counts[kind] = {k: sum(getattr(s, k) for s in mine) for k in ("passed", "failed", "skipped")}
    counts["total"] = {k: sum(c[k] for c in counts.values()) for k in ("passed", "failed", "skipped")}
    return {
        "gpu": info["gpu"], "gpu_slug": info["gpu_slug"], "gpu_count": info["gpu_count"],
        "driver": info["driver"], "python": info["python"], "torch": info["torch"], "triton": info["triton"],
        "date": date, "command": command, "workers": workers,
        "seeds": [s.seed for s in steps if s.kind == "tests"],
        "steps": [{"name": s.name, "kind": s.kind, "status": s.status, "seed": s.seed, **s.counts(),
                   "seconds": round(s.seconds, 1), "note": s.note} for s in steps],
        "counts": counts,
        **counts["total"],
        "files": dict(sorted(files.items())),
    }


def write_record(record: dict, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{record['gpu_slug']}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def example_outputs(logs: Path, names: list[str]) -> dict[str, str]:
    """name -> what `python examples/<name>.py` printed (stdout and stderr), from the examples step's
    logs (their first line, the command, dropped)."""
    out = {}
    for name in names:
        log = Path(logs) / f"example_{name}.txt"
        if log.exists():
            lines = log.read_text().splitlines(keepends=True)
            out[name] = "".join(lines[1:] if lines and lines[0].startswith("$ ") else lines)
    return out


def write_outputs(record: dict, outputs: dict[str, str], directory: Path, previous: Path | None = None,
                  date: str | None = None) -> Path:
    """<directory>/outputs/<gpu>.json: each example's output in the run the record describes, with the
    sha256 of the file that printed it (the site shows an output only beside that very file).
    ``previous``: an outputs file whose other examples are kept (a partial run prints only some)."""
    folder = Path(directory) / OUTPUTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record['gpu_slug']}.json"
    files = effective_files(record)
    examples = {}
    if previous is not None and Path(previous).is_file():
        old = json.loads(Path(previous).read_text())
        examples = {name: {"date": old["record_date"], **entry} for name, entry in old.get("examples", {}).items()}
    examples.update({name: {"sha256": files[f"examples/{name}.py"], "output": text,
                            **({"date": date} if previous is not None and date else {})}
                     for name, text in sorted(outputs.items()) if f"examples/{name}.py" in files})
    examples = dict(sorted(examples.items()))
    path.write_text(json.dumps({"gpu": record["gpu"], "record_date": record["date"], "seeds": record["seeds"],
                                "examples": examples}, indent=1) + "\n")
    return path


def outputs_from_logs(logs: Path, record_path: Path) -> Path:
    """Write the outputs file of an existing record from the logs of the run that wrote it (refused when
    the logs' summary names another GPU, other versions or other seeds). For a record whose last run is
    partial (``--changed``), the examples that run printed replace theirs in the outputs file beside it."""
    record = json.loads(Path(record_path).read_text())
    run = record["partial"][-1] if record.get("partial") else record
    summary = json.loads((Path(logs) / "summary.json").read_text())
    info = summary.get("info", {})
    wrong = [key for key in ("gpu", "driver", "python", "torch", "triton") if info.get(key) != record.get(key)]
    if summary.get("seeds") != run.get("seeds"):
        wrong.append("seeds")
    if wrong:
        raise ValueError(f"{logs} is not the run of {record_path}: {', '.join(wrong)} differ")
    folder = Path(record_path).parent
    names = [k.removeprefix("examples/").removesuffix(".py") for k in run["files"] if k.startswith("examples/")]
    if run is record:
        return write_outputs(record, example_outputs(Path(logs), names), folder)
    return write_outputs(record, example_outputs(Path(logs), names), folder,
                         previous=folder / OUTPUTS / Path(record_path).name, date=run["date"])


def summary_table(steps: list[Step], record_line: str) -> str:
    rows = [("step", "passed", "failed", "skipped", "time", "result")]
    for s in steps:
        rows.append((s.name, str(s.passed), str(s.failed), str(s.skipped), f"{s.seconds:.0f} s",
                     s.status + (f" ({s.note})" if s.note else "")))
    total = [sum(getattr(s, k) for s in steps) for k in ("passed", "failed", "skipped")]
    rows.append(("total", *map(str, total), f"{sum(s.seconds for s in steps):.0f} s",
                 "ok" if steps and all(s.status != "failed" for s in steps) else "FAILED"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join([r[0].ljust(widths[0]), *(r[i].rjust(widths[i]) for i in range(1, 5)), r[5]])
             for r in rows]
    return "\n".join([*lines, record_line])


# ----------------------------------------------------------------------------- main
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=1, help="how many random orders of the test suite (default 1)")
    p.add_argument("--seed", type=int, action="append", default=[],
                   help="a random-order seed (repeat for several runs; default: random, recorded)")
    p.add_argument("-n", "--workers", type=int, default=8, help="pytest-xdist workers (default 8)")
    p.add_argument("--logs", type=Path, default=ROOT / ".cache" / "gpu-check", help="folder for the logs")
    p.add_argument("--record-to", type=Path, default=VERIFIED_DIR,
                   help="folder for <gpu>.json (default benchmarks/verified)")
    p.add_argument("--no-record", action="store_true", help="run the checks, write no record (any machine)")
    p.add_argument("--python", default=sys.executable, help="the Python that runs the steps")
    p.add_argument("--example-timeout", type=float, default=300, help="seconds per example (default 300)")
    p.add_argument("--example-jobs", type=int, default=4, help="examples run at once (default 4)")
    p.add_argument("--suite-timeout", type=float, default=1800, help="seconds per pytest step (default 1800)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds for everything: steps still to come when it is spent fail (default: none)")
    p.add_argument("--suite", nargs="+", default=None, metavar="PATH",
                   help="only these test paths (a rehearsal: no record)")
    p.add_argument("--docs", nargs="+", default=None, metavar="PATH",
                   help="only these pages for --codeblocks (a rehearsal: no record)")
    p.add_argument("--example", action="append", default=None, metavar="NAME",
                   help="only this example (repeatable; a rehearsal: no record)")
    p.add_argument("--merge", type=Path, default=None, metavar="RECORD",
                   help="an earlier record of this same code on this GPU: its steps count too, and the new "
                        "record holds both (two random orders made in two sessions of at most 10 minutes)")
    p.add_argument("--tests-only", action="store_true",
                   help="with --merge: run only the test suite (the earlier record ran the other steps)")
    p.add_argument("--outputs-from", type=Path, default=None, metavar="LOGS",
                   help="write benchmarks/verified/outputs/<gpu>.json from the logs of the run that wrote the "
                        "record (its --logs folder) and exit (no GPU needed)")
    p.add_argument("--changed", action="store_true",
                   help="re-verify only what the files changed since this GPU's record touch (scripts/gpu_scope.py) "
                        "and add a partial run to the record; a full run where there is no record, its versions "
                        "differ or a conftest changed")
    p.add_argument("--base", type=Path, default=None, metavar="RECORD",
                   help="with --changed: the record to start from (default benchmarks/verified/<gpu>.json)")
    p.add_argument("--update-readme", action="store_true",
                   help="rewrite README.md's block from benchmarks/verified/ and exit (no GPU needed)")
    args = p.parse_args(argv)
    if args.runs < 1 or args.workers < 0:
        p.error("--runs must be >= 1 and -n >= 0")
    if len(args.seed) > max(args.runs, 1):
        args.runs = len(args.seed)
    if args.tests_only and not args.merge:
        p.error("--tests-only needs --merge (a record that ran the other steps)")
    if args.changed and (args.merge or args.suite or args.docs or args.example):
        p.error("--changed picks what to run itself: no --merge, --suite, --docs or --example with it")
    return args


def merged_steps(path: Path, info: dict, files: dict[str, str]) -> tuple[list[Step], list[str]]:
    """The steps of an earlier record, and why it cannot be merged (empty: it can)."""
    prev = json.loads(Path(path).read_text())
    problems = [f"{path}: {key} {prev.get(key)!r} differs from this run's {info.get(key)!r}"
                for key in ("gpu", "driver", "python", "torch", "triton") if prev.get(key) != info.get(key)]
    if prev.get("files") != files:
        problems.append(f"{path} covers other code: " + describe_diff(diff_files(prev.get("files", {}), files)))
    fields = {f.name for f in dataclasses.fields(Step)}
    steps = [Step(**{k: v for k, v in step.items() if k in fields}) for step in prev.get("steps", [])]
    return steps, problems


@dataclasses.dataclass
class Plan:
    """What ``--changed`` will do: a partial run from ``base`` (``scope`` set), or a full run."""

    summary: str
    base: dict | None = None
    base_path: Path | None = None
    scope: object = None  # gpu_scope.Scope for a partial run; None: run everything
    changed: list[str] = dataclasses.field(default_factory=list)
    removed: list[str] = dataclasses.field(default_factory=list)


def plan_changed(base_path: Path, info: dict, current: dict[str, str], root: Path | None = None) -> Plan:
    """Compare the covered files with a record: what a partial run must re-verify, or why a full one is due."""
    base_path = Path(base_path)
    if not base_path.is_file():
        return Plan(f"no record at {base_path}: a full run")
    base = json.loads(base_path.read_text())
    wrong = [f"{key} {base.get(key)!r} -> {info.get(key)!r}" for key in ("gpu", "driver", "python", "torch", "triton")
             if base.get(key) != info.get(key)]
    if wrong:
        return Plan(f"the machine differs from {base_path.name}'s ({'; '.join(wrong)}): a full run")
    diff = diff_files(effective_files(base), current)
    changed = diff["changed"] + diff["added"]
    scope = gpu_scope.scope(changed, root=root, covered=sorted(current))
    if scope.full:
        return Plan(f"{scope.reason}: a full run")
    if scope.empty and not diff["removed"]:
        return Plan(f"nothing changed since {base_path.name}: nothing to run", base, base_path, scope)
    if scope.empty:  # a partial run must re-verify something; removals alone ask for a new record
        return Plan(f"only removals since {base_path.name} ({', '.join(diff['removed'])}): a full run")
    return Plan(f"{_plural(len(changed), 'file')} changed since {base_path.name} ({', '.join(changed) or 'none'}"
                + (f"; removed: {', '.join(diff['removed'])}" if diff["removed"] else "")
                + f"): re-verifying {_plural(len(scope.tests), 'test file')}, "
                f"{_plural(len(scope.properties), 'property file')}, {_plural(len(scope.pages), 'page')}, "
                f"{_plural(len(scope.examples), 'example')}", base, base_path, scope, changed, diff["removed"])


def pick_seeds(given: list[int], runs: int) -> list[int]:
    seeds = list(given)
    rng = random.SystemRandom()
    while len(seeds) < runs:
        seed = rng.randrange(1, 2**31)
        if seed not in seeds:
            seeds.append(seed)
    return seeds


def run_steps(scope, seeds: list[int], args, logs: Path, env: dict, budget: Budget, report,
              full: bool = False) -> None:
    """The four steps over ``scope`` (a ``gpu_scope.Scope``: all of it for a full run, what the changed
    files touch for a partial one): the tests once per seed, then, unless ``--tests-only``, the pages'
    code blocks, the examples and the property tests (the first seed's order). A step with nothing to
    run is reported absent, except the examples of a ``full`` run: none there is a failure."""
    def absent(name: str, kind: str, what: str, seed: int | None = None) -> None:
        report(Step(name, kind, status="absent", seed=seed,
                    note=f"no {what} exists" if full else f"no {what} touches the changed files"))

    for seed in seeds:
        if scope.tests:
            report(run_pytest(Step(f"tests (seed {seed})", "tests", seed=seed),
                              ["-n", str(args.workers), *scope.tests, f"--randomly-seed={seed}"],
                              logs, env, budget.cap(args.suite_timeout), args.python))
        else:
            absent(f"tests (seed {seed})", "tests", "test", seed)
    if args.tests_only:
        return
    seed = seeds[0]
    if scope.pages:
        report(run_pytest(Step("codeblocks", "codeblocks"), ["-n", str(args.workers), "--codeblocks", *scope.pages],
                          logs, env, budget.cap(args.suite_timeout), args.python))
    else:
        absent("codeblocks", "codeblocks", "page")
    if scope.examples or full:
        report(run_examples(scope.examples, logs, env, args.example_timeout, args.example_jobs, args.python, budget))
    else:
        absent("examples", "examples", "example")
    if scope.properties:
        report(run_pytest(Step("properties (gpu profile)", "properties", seed=seed),
                          ["-n", str(args.workers), *scope.properties, f"--randomly-seed={seed}"],
                          logs, dict(env, HYPOTHESIS_PROFILE="gpu"), budget.cap(args.suite_timeout), args.python))
    else:
        absent("properties (gpu profile)", "properties", "property test")


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    budget = Budget(args.budget)
    if args.outputs_from is not None:
        try:  # the record of the GPU the logs name
            slug = json.loads((args.outputs_from / "summary.json").read_text())["info"]["gpu_slug"]
            print(f"wrote {outputs_from_logs(args.outputs_from, VERIFIED_DIR / f'{slug}.json')}")
        except (OSError, ValueError, KeyError) as err:
            print(f"gpu_check: {err}", file=sys.stderr)
            return 2
        return 0
    if args.update_readme:
        changed = update_readme()
        print(f"README.md {'updated' if changed else 'already up to date'} from {VERIFIED_DIR.relative_to(ROOT)}/")
        return 0

    info = gpu_info(args.python)
    if not info.get("cuda") and not args.no_record:
        print("gpu_check: no CUDA device (" + info.get("error", "torch.cuda.is_available() is False")
              + "): nothing can be verified here and no record is written. "
              "Use --no-record to rehearse the steps on this machine.", file=sys.stderr)
        return 2
    if info.get("triton_interpret") and not args.no_record:
        print("gpu_check: TRITON_INTERPRET is set: the kernels would run in Triton's interpreter, not on the "
              "GPU. Unset it (or use --no-record to rehearse).", file=sys.stderr)
        return 2
    if info.get("cuda"):
        print(f"gpu_check: {info['gpu']} (driver {info['driver']}), Python {info['python']}, "
              f"torch {info['torch']}, Triton {info['triton']}")

    logs = args.logs.resolve()
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **{RUNNING_ENV: "1"})
    for name in ("HYPOTHESIS_PROFILE", "PYTEST_ADDOPTS"):
        env.pop(name, None)  # seeds on the command line; the profile for the properties step only
    seeds = pick_seeds(args.seed, args.runs)
    names = [p.stem for p in example_files(ROOT / "examples")]
    limits = []
    if args.suite:
        limits.append("tests limited to " + " ".join(args.suite))
    if args.docs:
        limits.append("code blocks limited to " + " ".join(args.docs))
    if args.example:
        unknown = sorted(set(args.example) - set(names))
        if unknown:
            print(f"gpu_check: no such example: {', '.join(unknown)}", file=sys.stderr)
            return 2
        limits.append("examples limited to " + " ".join(args.example))
        names = sorted(args.example)

    files_before = file_hashes()
    plan = None
    if args.changed:
        plan = plan_changed(args.base or VERIFIED_DIR / f"{info.get('gpu_slug')}.json", info, files_before)
        print(f"gpu_check: --changed: {plan.summary}", flush=True)
        if plan.scope is None:
            plan = None  # a full run, recorded as one
        elif plan.scope.empty:
            return 0
    date = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    steps: list[Step] = []
    if args.merge:
        steps, problems = merged_steps(args.merge, info, files_before)
        if problems:
            print("gpu_check: cannot merge: " + "; ".join(problems), file=sys.stderr)
            return 2
        for step in steps:
            step.name = f"{step.name} [merged]"
        taken = {s.seed for s in steps if s.kind == "tests"}
        seeds = pick_seeds([seed for seed in args.seed if seed not in taken], args.runs)
        while taken & set(seeds):
            seeds = pick_seeds([], args.runs)
        print(f"gpu_check: merging {len(steps)} steps of {args.merge} (seeds {sorted(taken)})")

    def report(step: Step) -> None:
        steps.append(step)
        print(f"{step.name}: {step.status}, {step.passed} passed, {step.failed} failed, {step.skipped} skipped "
              f"in {step.seconds:.0f} s" + (f" ({step.note}; log {step.log})" if step.status == "failed" else ""),
              flush=True)

    if plan is not None:
        run_steps(plan.scope, seeds[:1], args, logs, env, budget, report)
    else:  # everything: the suite (without the browser tests and the property files, run on their own)
        properties = property_files()
        ignore = ["--ignore=tests/browser"] + ([f"--ignore-glob={PROPERTIES}"] if properties else [])
        everything = gpu_scope.Scope(tests=[*(args.suite or ["tests"]), *ignore], properties=properties,
                                     pages=args.docs or ["docs/"], examples=names)
        run_steps(everything, seeds, args, logs, env, budget, report, full=True)

    files_after = file_hashes()
    reasons = refusal_reasons(info, steps, runs=len([st for st in steps if st.kind == "tests"]), limits=limits,
                              files_before=files_before, files_after=files_after)
    if args.no_record:
        record_line = "record: not written (--no-record)"
    elif reasons:
        record_line = "record: NOT written: " + "; ".join(reasons)
    else:
        command = shlex.join(["python", "scripts/gpu_check.py", *(sys.argv[1:] if argv is None else argv)])
        record = build_record(info, steps, files_after, date=date, command=command, workers=args.workers)
        previous_outputs = None
        if plan is not None:  # the base record, with this partial run added
            part = {**record, "files": {rel: files_after[rel] for rel in plan.scope.covered if rel in files_after},
                    "changed": plan.changed, "removed": plan.removed}
            record = {**plan.base, "partial": [*plan.base.get("partial", []), part]}
            names = plan.scope.examples
            previous_outputs = plan.base_path.parent / OUTPUTS / plan.base_path.name
        if args.merge:
            prev = json.loads(Path(args.merge).read_text())
            record["merged"] = [*prev.get("merged", []), {"date": prev["date"], "command": prev["command"]}]
        path = write_record(record, args.record_to.resolve())
        if not args.tests_only:  # the examples ran in this session: keep what they printed beside the record
            write_outputs(record, example_outputs(logs, names), args.record_to.resolve(), previous=previous_outputs,
                          date=date)
        record_line = f"record: written to {path}"
        if path.parent == VERIFIED_DIR.resolve():
            update_readme()
            record_line += " (README.md's block updated)"
        else:
            record_line += ("; copy it to benchmarks/verified/, then run "
                            "`python -m scripts.gpu_check --update-readme` and commit both")
    (logs / "summary.json").write_text(json.dumps({
        "info": info, "seeds": seeds, "reasons": reasons, "record": record_line,
        "steps": [dataclasses.asdict(s) for s in steps]}, indent=1) + "\n")
    table = summary_table(steps, record_line)
    (logs / "summary.txt").write_text(table + "\n")
    print(f"logs: {logs}")
    print(table)
    failed = any(s.status == "failed" for s in steps) or (bool(reasons) and not args.no_record)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
