"""Reads the per-instruction warp samples that ``profile_gluon_sass.sh`` exported.

Nsight Compute samples each warp's program counter at a fixed interval while the kernel runs;
each sample names the SASS instruction the warp was at and whether it issued. The source page
(``ncu -i REPORT --page source --csv --print-source sass``) has one row per instruction, its
address, its text and its sample counts. This script adds them up, no GPU needed:

* by instruction class (tensor-core ``WGMMA`` and its fences, barrier waits, ``MUFU`` exp2,
  other float math, shared and TMA memory, conversions, the rest), so that a kernel's time reads
  as "where its warps were";
* by opcode;
* the instructions with the most samples, each with the two instructions before it (a warp
  stalled at an instruction usually waits on what an earlier one started).

Usage (repository root)::

    python benchmarks/evidence/attention/sass_stalls.py DIR/sass/*.sass.csv --out FILE.json

The columns are found by name: the SASS text (``Source``), the address (``Address``) and every
numeric column (the sample counts, e.g. ``Warp Stall Sampling (All Samples)`` and
``(Not-issued Samples)``, and any other metric the page holds); the first column whose name
holds ``Samples`` and ``All`` is the one ranked.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

# (class, opcode prefixes), first match wins
CLASSES = (
    ("wgmma", ("WGMMA", "WARPGROUP")),
    ("barrier wait", ("SYNCS", "BAR", "WARPSYNC", "NANOSLEEP", "YIELD", "DEPBAR", "MEMBAR")),
    ("exp2", ("MUFU",)),
    ("float math", ("FFMA", "FMUL", "FADD", "FMNMX", "FSEL", "FSETP", "FCHK", "HMUL", "HFMA",
                    "HADD", "HMNMX")),
    ("shared / TMA memory", ("LDS", "STS", "LDSM", "STSM", "UTMA", "UBLKCP", "LDGSTS", "ULDC")),
    ("global memory", ("LDG", "STG", "RED", "ATOM", "LD.", "ST.")),
    ("conversion", ("F2F", "F2FP", "I2F", "F2I")),
    ("shuffle", ("SHFL",)),
    ("branch", ("BRA", "BSYNC", "BSSY", "EXIT", "RET", "CALL", "BMOV", "WARPSYNC")),
)


def opcode(sass: str) -> str:
    """``@!P0 SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x8], R3 ;`` -> ``SYNCS.PHASECHK``."""
    words = sass.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    if not words:
        return ""
    parts = words[0].rstrip(";").split(".")
    return ".".join(parts[:2]) if parts[0] in ("SYNCS", "WGMMA", "WARPGROUP", "UTMALDG") else parts[0]


def instruction_class(op: str) -> str:
    for name, prefixes in CLASSES:
        if any(op.startswith(p) for p in prefixes):
            return name
    return "other"


def _number(text: str) -> float:
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def _numeric(rows: list[dict], column: str) -> bool:
    values = [(r.get(column) or "").replace(",", "").strip() for r in rows]
    values = [v for v in values if v]
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return bool(values)


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    """The source page's header and rows (ncu may print lines before the CSV header)."""
    lines = path.read_text(errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if "Source" in line and "," in line), None)
    if start is None:
        raise ValueError(f"{path}: no CSV header with a Source column")
    reader = csv.DictReader(lines[start:])
    rows = [r for r in reader if any((v or "").strip() for v in r.values())]
    return list(reader.fieldnames or []), rows


def summarize(path: Path, top: int = 25) -> dict:
    header, rows = read_rows(path)
    source = next(c for c in header if c.strip().strip("#").strip() == "Source" or c == "Source")
    address = next((c for c in header if "Address" in c), None)
    # every numeric column: the sample counts, and whatever else the page holds (executed
    # instructions, a column per stall reason where this ncu version exports one)
    sample_cols = [c for c in header if c not in (source, address) and _numeric(rows, c)]
    counts = [c for c in sample_cols if "Samples" in c]
    if not counts:
        raise ValueError(f"{path}: no sample columns in {header}")
    ranked = next((c for c in counts if "All" in c), counts[0])
    instrs = []
    for i, row in enumerate(rows):
        sass = (row.get(source) or "").strip()
        op = opcode(sass)
        instrs.append({"index": i, "address": (row.get(address) or "").strip() if address else None,
                       "sass": sass, "opcode": op, "class": instruction_class(op),
                       **{c: _number(row.get(c)) for c in sample_cols}})
    totals = {c: sum(x[c] for x in instrs) for c in sample_cols}
    total = totals[ranked] or 1.0

    def grouped(key):
        out: dict[str, dict] = {}
        for x in instrs:
            g = out.setdefault(x[key], {"instructions": 0, **{c: 0.0 for c in sample_cols}})
            g["instructions"] += 1
            for c in sample_cols:
                g[c] += x[c]
        for g in out.values():
            g["share"] = round(g[ranked] / total, 4)
        return dict(sorted(out.items(), key=lambda kv: -kv[1][ranked]))

    hot = sorted(instrs, key=lambda x: -x[ranked])[:top]
    return {
        "file": path.name,
        "instructions": len(instrs),
        "ranked_column": ranked,
        "totals": totals,
        "by_class": grouped("class"),
        "by_opcode": dict(list(grouped("opcode").items())[:30]),
        "hottest": [{**x, "share": round(x[ranked] / total, 4),
                     "before": [instrs[j]["sass"] for j in range(max(0, x["index"] - 2), x["index"])]}
                    for x in hot],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    result = {}
    for path in args.csv:
        try:
            result[path.name.removesuffix(".sass.csv")] = summarize(path, args.top)
        except (ValueError, StopIteration, OSError) as e:
            print(f"{path}: {e}", file=sys.stderr)
    for name, s in result.items():
        print(f"== {name}: {s['instructions']} instructions, {s['totals']}")
        for cls, g in s["by_class"].items():
            print(f"  {cls:22s} {g['share']:6.1%}  ({g['instructions']} instructions)")
        for x in s["hottest"][:10]:
            print(f"  {x['share']:6.1%}  {x['address']}  {x['sass'][:70]}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result else 1


if __name__ == "__main__":
    raise SystemExit(main())
