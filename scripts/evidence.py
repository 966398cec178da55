"""Numbers quoted from a probe's committed output: ``{{ evidence ... }}`` and ``{{ evidence_ratio ... }}``.

A probe of a Benchmarks page writes one JSON file under ``benchmarks/evidence/<page>/runNN/``: a
header (gpu, torch, triton, date, method, ...) and a ``points`` list, one object per measured
candidate. A page quotes one field of one point (or of the header) through the grammar of
``scripts/expressions.py``; this module finds the point and formats the number:

* ``<file>``: the JSON file, relative to ``benchmarks/evidence/`` (``layer-norm/run32/x.json``);
  or a benchmark's result CSV kept there (``attention/run80/attention_hopper.csv``), whose rows are
  the points, each cell its text (a format reads a finite number from it).
* ``<selector>``: ``key=value,key=value``, matched against each point's fields as text (a number
  as Python prints it, ``N=16384``; ``true``/``false`` for a boolean; a list's items joined with
  ``x``, ``shape=1024x1024x1024``); ``+`` stands for a space (``name=row+w8``), ``%2B`` for a plus
  sign. It must match exactly one point. ``header`` selects the file's top level instead (a file
  without a ``points`` list is quoted only that way).
* ``<field>``: a field of that point, dotted for a nested one (``kernels.layer_norm_bwd_kernel.spills``);
  a key that holds a dot itself is found whole (``host_us.1024.F.layer_norm``), ``+`` for a space,
  ``%2B`` for a plus sign.
* ``<format>``: see ``FORMATS``.

Anything that does not resolve (an unknown file, no point or two, a missing field, a format for a
value that is not a number) raises ``results.ResultError``, which the page's build turns into an
error naming the page and the line.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from scripts.results import ResultError

ROOT = Path(__file__).resolve().parent.parent
EVIDENCE = ROOT / "benchmarks" / "evidence"
HEADER = "header"
SPACE = "+"
PLUS = "%2B"  # a literal "+" in a selector value (`+` itself stands for a space)
COMMA = "%2C"  # a literal "," in a selector value (`,` itself separates the pairs)
# The formats, as the documentation writes them (scripts/expressions.py's help text).
FORMATS = ("`int` (`3,749`: rounded, thousands separated), `<n>f` (n decimals: `0f` `3749`, `1f` `226.2`), "
           "`<n>x` (a ratio: `3x` `0.925x`), `<n>%` (in percent: `1%` `92.5%`); `<k>*` before one "
           "multiplies first (`1000*1f`: a time in ms as µs, `226.2`)")
_FORMAT = re.compile(r"(?:(?P<scale>\d+(?:\.\d+)?)\*)?(?:(?P<int>int)|(?P<digits>\d)(?P<kind>[fx%]))")
_LOOKS_LIKE_FORMAT = re.compile(r"(?:[\d.]+\*)?(?:int|\d+[A-Za-z%]+)")


@dataclass(frozen=True)
class Selector:
    """Which point: ``pairs`` (key, text) all equal, or the header (``pairs`` None)."""

    word: str  # as the page writes it, for errors
    pairs: tuple[tuple[str, str], ...] | None

    def over(self, base: Selector) -> Selector:
        """This selector with the keys it leaves out taken from ``base`` (a ratio's second point)."""
        if self.pairs is None or base.pairs is None:
            return self
        mine = dict(self.pairs)
        pairs = tuple((k, mine.pop(k, v)) for k, v in base.pairs) + tuple(mine.items())
        words = (f"{k}={v.replace('+', PLUS).replace(',', COMMA).replace(' ', SPACE)}" for k, v in pairs)
        return Selector(",".join(words), pairs)


@dataclass(frozen=True)
class Format:
    word: str
    scale: float
    kind: str  # "int", "f", "x" or "%"
    digits: int

    def __call__(self, value: float) -> str:
        value *= self.scale
        if self.kind == "int":
            return f"{round(value):,}"
        if self.kind == "%":
            return f"{value * 100:.{self.digits}f}%"
        return f"{value:.{self.digits}f}" + ("x" if self.kind == "x" else "")


# --- the arguments, parsed from a page's words ----------------------------------------------------

def parse_file(word: str) -> str:
    """A file under benchmarks/evidence/: relative, a .json (or a result .csv), not climbing out."""
    parts = word.split("/")
    if not word.endswith((".json", ".csv")) or word.startswith("/") or ".." in parts or "" in parts:
        raise ResultError("expected a .json (or a result .csv) file under benchmarks/evidence/ "
                          f"(<page>/runNN/<probe>.json), got {word!r}")
    return word


def parse_selector(word: str) -> Selector:
    """``key=value,key=value`` (``+`` for a space, ``%2B`` for a plus, ``%2C`` for a comma), or
    ``header``."""
    if word == HEADER:
        return Selector(word, None)
    pairs = []
    for item in word.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ResultError(f"expected a selector key=value,key=value (or {HEADER}), got {word!r}")
        pairs.append((key.replace(SPACE, " "), value.replace(SPACE, " ").replace(PLUS, "+").replace(COMMA, ",")))
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ResultError(f"selector {word!r} names a key twice")
    return Selector(word, tuple(pairs))


def is_format(word: str) -> bool:
    """Whether a last word is meant as a format (a malformed one then fails in ``parse_format``)."""
    return _LOOKS_LIKE_FORMAT.fullmatch(word) is not None


def parse_format(word: str) -> Format:
    m = _FORMAT.fullmatch(word)
    if m is None:
        raise ResultError(f"unknown format {word!r}; formats: int, <n>f, <n>x, <n>%, each may start with <k>*")
    kind = "int" if m["int"] else m["kind"]
    return Format(word, float(m["scale"] or 1), kind, int(m["digits"] or 0))


# --- the data --------------------------------------------------------------------------------------

def _csv_rows(path: str) -> list[dict]:
    """A result CSV's rows, each cell kept as its text: a selector matches the text as written
    (``x=1024``), and a format reads a number from it (``_number``)."""
    import csv

    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    for line, row in enumerate(rows, start=2):
        if None in row or None in row.values():
            raise ResultError(f"{Path(path).name}: line {line} has {'more' if None in row else 'fewer'} cells "
                              f"than the header's {len(reader.fieldnames or [])}")
    return rows


@functools.lru_cache(maxsize=32)
def _load(path: str, stamp: tuple[int, int]) -> dict:
    if path.endswith(".csv"):  # a benchmark's result rows (scripts/bench.py): each row a point
        return {"points": _csv_rows(path)}
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("points", []), list):
        raise ResultError(f"{path}: needs a JSON object (its 'points', where it has them, a list)")
    return doc


def load(base: Path, file: str) -> dict:
    """The probe's JSON document, or a result CSV's rows as its points, each cell its text
    (read once per version of the file)."""
    path = Path(base) / file
    if not path.is_file():
        raise ResultError(f"no evidence file {file} (under {_shown(base)}/)")
    st = path.stat()
    try:
        return _load(str(path), (st.st_mtime_ns, st.st_size))
    except json.JSONDecodeError as err:
        raise ResultError(f"{file}: not JSON: {err}") from err


def _shown(base: Path) -> str:
    base = Path(base)
    return base.relative_to(ROOT).as_posix() if base.is_relative_to(ROOT) else str(base)


def as_text(value) -> str:
    """How a selector writes a field's value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "x".join(as_text(v) for v in value)
    return str(value)


def _listing(values, limit: int = 12) -> str:
    values = sorted(set(values))
    more = f", ... ({len(values)} in all)" if len(values) > limit else ""
    return ", ".join(values[:limit]) + more


def select(doc: dict, file: str, selector: Selector) -> dict:
    """The one point a selector matches (the header for ``header``)."""
    if selector.pairs is None:
        return {k: v for k, v in doc.items() if k != "points"}
    if "points" not in doc:
        raise ResultError(f"{file}: has no 'points' list; quote its top level with 'header'")
    points = [p for p in doc["points"] if isinstance(p, dict)]
    found = [p for p in points if all(k in p and as_text(p[k]) == v for k, v in selector.pairs)]
    if len(found) == 1:
        return found[0]
    if not found:
        hints = []
        for key, value in selector.pairs:
            seen = [as_text(p[key]) for p in points if key in p]
            if not seen:
                hints.append(f"no point has a field {key!r}")
            elif value not in seen:
                hints.append(f"no point has {key}={value!r}; its values: {_listing(seen)}")
        why = "; ".join(hints) or "no point has all of these values"
        raise ResultError(f"{file}: 0 of {len(points)} points match {selector.word!r} ({why})")
    differ = sorted({k for p in found for k in p if len({as_text(q.get(k)) for q in found}) > 1})
    raise ResultError(f"{file}: {len(found)} points match {selector.word!r}, not one; they differ in: "
                      f"{', '.join(differ) or 'nothing (the same point twice)'}")


def field(obj, path: str, file: str, selector: Selector):
    """The value at a dotted path; a key holding a dot is matched whole (the longest key first)."""
    parts, value = path.replace(SPACE, " ").replace(PLUS, "+").split("."), obj
    while parts:
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if isinstance(value, dict) and key in value:
                value, parts = value[key], parts[n:]
                break
            if isinstance(value, list) and n == 1 and key.isdigit() and int(key) < len(value):
                value, parts = value[int(key)], parts[1:]
                break
        else:
            has = f" (its fields: {', '.join(map(str, value))})" if isinstance(value, dict) else ""
            raise ResultError(f"{file}: the point {selector.word!r} has no field {path!r}{has}")
    return value


def _number(value, path: str, file: str, fmt: Format) -> float:
    if isinstance(value, str) and file.endswith(".csv"):  # a CSV cell: its text, a finite number
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultError(f"{file}: field {path!r} is {value!r}, not a number: format {fmt.word!r} needs one")
    return value


# --- what a page shows -----------------------------------------------------------------------------

def quote(base: Path, file: str, selector: Selector, path: str, fmt: Format | None) -> str:
    """One field of one point: ``{{ evidence <file> <selector> <field> [<format>] }}``."""
    value = field(select(load(base, file), file, selector), path, file, selector)
    if fmt is None:
        if isinstance(value, (dict, list)):
            raise ResultError(f"{file}: field {path!r} of {selector.word!r} is not one value: name a field inside it")
        return as_text(value)
    return fmt(_number(value, path, file, fmt))


def quote_ratio(base: Path, file: str, a: Selector, b: Selector, path: str, fmt: Format | None) -> str:
    """One field of point a over the same field of point b (b's missing keys taken from a):
    ``{{ evidence_ratio <file> <selector a> <selector b> <field> [<format>] }}``, ``3x`` by default."""
    doc, b = load(base, file), b.over(a)
    fmt = fmt or parse_format("3x")
    top = _number(field(select(doc, file, a), path, file, a), path, file, fmt)
    bottom = _number(field(select(doc, file, b), path, file, b), path, file, fmt)
    if bottom == 0:
        raise ResultError(f"{file}: field {path!r} of {b.word!r} is 0: no ratio")
    return fmt(top / bottom)
