"""Read the GPU verification records (``benchmarks/verified/<gpu>.json``) and say what they cover.

A record is written by ``scripts/gpu_check.py`` on a CUDA machine, only when every check passed:
the GPU, driver, versions, date, seeds, the counts of every step and the sha256 of every file it
covers (``verified_files``). Beside it, ``benchmarks/verified/outputs/<gpu>.json`` keeps what each
example printed in that run. This module only reads them, for the site (``{{ verified }}``, an
example's recorded output), for ``tests/test_verified.py`` and for ``gpu_check`` itself; it imports
nothing heavy.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from scripts.results import sha256_of as sha256  # scripts/results.py: the digest the result files record too

ROOT = Path(__file__).resolve().parent.parent
VERIFIED_DIR = ROOT / "benchmarks" / "verified"
OUTPUTS = "outputs"  # VERIFIED_DIR/outputs/<gpu>.json: what each example printed in the recorded run


# --- the files a record covers ---------------------------------------------------------------------

def verified_files(root: Path | None = None) -> list[str]:
    """Paths (relative, '/'-separated, sorted) of the files a record covers: every
    ``examples/*.py``, the benchmark cases that tests call (``benchmarks/cases/<story>.py`` beside
    an example, with the package's ``__init__.py`` and ``peers.py``), every ``tests/**/*.py``
    outside ``tests/browser/``, ``conftest.py`` where there is one, and ``scripts/codeblocks.py``
    (the plugin that runs the pages' code blocks)."""
    root = ROOT if root is None else Path(root)
    paths = [p for p in (root / "examples").glob("*.py") if p.is_file()]
    cases = root / "benchmarks" / "cases"
    stems = {p.stem for p in paths} | {"__init__", "peers"}
    paths += [p for p in cases.glob("*.py") if p.is_file() and p.stem in stems]
    paths += [p for p in (root / "tests").rglob("*.py")
              if p.is_file() and "browser" not in p.relative_to(root / "tests").parts[:-1]]
    paths += [root / rel for rel in ("conftest.py", "scripts/codeblocks.py") if (root / rel).is_file()]
    return sorted(p.relative_to(root).as_posix() for p in paths)


def file_hashes(root: Path | None = None) -> dict[str, str]:
    root = ROOT if root is None else Path(root)
    return {rel: sha256(root / rel) for rel in verified_files(root)}


def diff_files(recorded: dict[str, str], current: dict[str, str]) -> dict[str, list[str]]:
    """Which files changed, were added or were removed since the record."""
    return {
        "changed": sorted(p for p in recorded.keys() & current.keys() if recorded[p] != current[p]),
        "added": sorted(current.keys() - recorded.keys()),
        "removed": sorted(recorded.keys() - current.keys()),
    }


def describe_diff(diff: dict[str, list[str]]) -> str:
    return "; ".join(f"{kind}: {', '.join(paths)}" for kind, paths in diff.items() if paths)


def effective_files(record: dict) -> dict[str, str]:
    """The sha256 that last passed on this GPU of each covered file: the full run's, updated by
    each later partial run (``gpu_check --changed``) in order."""
    files = dict(record["files"])
    for part in record.get("partial", []):
        for rel in part.get("removed", []):
            files.pop(rel, None)
        files.update(part["files"])
    return files


# --- reading and showing records -------------------------------------------------------------------

def load_records(directory: Path | None = None) -> dict[str, dict]:
    """``{path relative to the repository (or the file name): record}`` for every record."""
    out = {}
    for path in sorted(Path(VERIFIED_DIR if directory is None else directory).glob("*.json")):
        try:
            key = path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            key = path.name
        out[key] = json.loads(path.read_text())
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _utc(run: dict, fmt: str = "%Y-%m-%d %H:%M UTC") -> str:
    """A run's (a record's or a partial run's) date in UTC, as ``fmt``."""
    return dt.datetime.fromisoformat(run["date"]).astimezone(dt.UTC).strftime(fmt)


def describe(record: dict) -> str:
    """One sentence (without its subject): where, when and what passed."""
    when = _utc(record)
    where = (f"an {record['gpu']} (driver {record['driver']}; Python {record['python']}, "
             f"torch {record['torch']}, Triton {record['triton']}) on {when}")
    steps = record["steps"]
    runs = [s for s in steps if s["kind"] == "tests"]
    per_run = [f"{s['passed']} passed, {s['skipped']} skipped, {s['failed']} failed" for s in runs]
    seeds = _and([str(s["seed"]) for s in runs])
    if len(set(per_run)) == 1:
        tests = (f"the test suite in {_plural(len(runs), 'random order')} (seed{'s' if len(runs) > 1 else ''} "
                 f"{seeds}), {per_run[0]}" + (" in each" if len(runs) > 1 else ""))
    else:
        tests = "the test suite in random orders: " + "; ".join(
            f"seed {s['seed']}: {p}" for s, p in zip(runs, per_run, strict=True))
    others = []
    for kind, what in (("codeblocks", "page code blocks"), ("examples", "example self-checks"),
                       ("properties", "property tests (GPU profile)")):
        for s in steps:
            if s["kind"] == kind and s["status"] != "absent":
                others.append(f"{s['passed']} {what} passed, {s['failed']} failed"
                              + (f", {s['skipped']} skipped" if s["skipped"] else ""))
    text = f"{where}: " + "; ".join([tests, *others])
    for part in record.get("partial", []):
        text += f"; then {describe_partial(part)}"
    return text


def describe_partial(part: dict) -> str:
    """One clause: a partial run (``gpu_check --changed``), what it re-verified and what passed."""
    when = _utc(part)
    changed = part.get("changed", [])
    ran = [f"{s['passed']} {s['kind']} passed, {s['failed']} failed" for s in part["steps"] if s["status"] != "absent"]
    return (f"on {when}, only what {_plural(len(changed), 'changed file')} touch ({', '.join(changed)}), "
            f"re-verified: " + ("; ".join(ran) or "nothing to run"))


def _sentences(parts: list[str]) -> str:
    """Sentences that each start lower-case (the first follows a label): the later ones capitalized."""
    return " ".join([parts[0], *(p[:1].upper() + p[1:] for p in parts[1:])])


def _current_first(records: dict[str, dict], current: dict[str, str]) -> list[tuple[str, dict, dict]]:
    """(path, record, diff against the current files) for every record: those the current code
    still matches first, each group in file order."""
    rows = [(path, record, diff_files(effective_files(record), current)) for path, record in records.items()]
    return sorted(rows, key=lambda row: any(row[2].values()))


def page_text(directory: Path | None = None, root: Path | None = None) -> str:
    """What ``{{ verified }}`` renders: one paragraph per record, saying whether the
    files it covers are still the ones that passed."""
    records = load_records(directory)
    if not records:
        return ("none recorded yet: no version of this code has passed every check on a GPU with a record to "
                "show for it (`scripts/gpu_check.py` writes one).")
    current = file_hashes(root)
    out = []
    for path, record, diff in _current_first(records, current):
        n = sum(len(v) for v in diff.values())
        if n == 0:
            out.append(f"the current code passed on {describe(record)} (record: `{path}`).")
        else:
            out.append(f"an earlier version of the code passed on {describe(record)} (record: `{path}`); "
                       f"{_plural(n, 'file')} changed since ({describe_diff(diff)}), so the current "
                       "code has not been checked on that GPU yet.")
    return _sentences(out)


def summary_text(directory: Path | None = None, root: Path | None = None) -> str:
    """What ``{{ verified_summary }}`` renders: one short sentence per record the current
    code passed (the GPU, the date of its last run), or, when it passed none, one saying
    that an earlier version did; ``{{ verified }}`` has every record, its counts and the
    changed files."""
    records = load_records(directory)
    if not records:
        return "none recorded yet."

    current = file_hashes(root)
    rows = _current_first(records, current)
    # the records the current code passed; when it passed none, the first record
    rows = [row for row in rows if not any(row[2].values())] or rows[:1]
    out = []
    for _, record, diff in rows:
        last = ([record] + record.get("partial", []))[-1]
        day = _utc(record, "%Y-%m-%d")
        when = day if last is record else f"{day}, what changed since re-checked on {_utc(last, '%Y-%m-%d')}"
        n = sum(len(v) for v in diff.values())
        if n == 0:
            out.append(f"every test, page code block and example passed on an {record['gpu']} ({when}).")
        else:
            out.append(f"an earlier version passed on an {record['gpu']} ({when}); {_plural(n, 'file')} "
                       "changed since, not yet checked on that GPU.")
    return _sentences(out)


def recorded_output(src: Path, directory: Path | None = None) -> dict | None:
    """{"output", "gpu", "date", "file"} when a GPU run printed `src` as it is now (same sha256), else None."""
    folder = Path(VERIFIED_DIR if directory is None else directory) / OUTPUTS
    digest = sha256(Path(src))
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        entry = data.get("examples", {}).get(Path(src).stem)
        if entry and entry.get("sha256") == digest:
            return {"output": entry["output"], "gpu": data["gpu"], "date": entry.get("date", data["record_date"]),
                    "file": f"examples/{Path(src).name}"}
    return None
