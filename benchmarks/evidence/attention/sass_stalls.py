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


def roles(instrs: list[dict]) -> list[str]:
    """Which warps run each instruction. A warp-specialized kernel's partitions start and
    end with ``USETMAXREG`` (each sets its warps' register budget); a stretch between two of
    them is a consumer if it issues tensor-core instructions (``HGMMA``), the producer if it
    starts TMA copies (``UTMALDG``), idle if it holds nothing but ``NOP``, ``BAR`` and
    ``USETMAXREG`` (the warps that pad the producer's warp to a warpgroup: they wait there all kernel
    long, so their samples are no cost), and set-up otherwise. Consumers are numbered in
    address order."""
    cuts = [i for i, x in enumerate(instrs) if x["opcode"].startswith("USETMAXREG")]
    bounds = [0, *cuts, len(instrs)]
    out = ["set-up"] * len(instrs)
    consumers = 0
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        ops = {instrs[i]["opcode"].split(".")[0] for i in range(lo, hi)}
        if any(o in ("HGMMA", "WGMMA") for o in ops):
            name, consumers = f"consumer {consumers}", consumers + 1
        elif "UTMALDG" in ops:
            name = "producer"
        elif ops <= {"NOP", "USETMAXREG", "BAR"}:
            name = "idle"
        else:
            name = "set-up"
        out[lo:hi] = [name] * (hi - lo)
    return out


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


def summarize(path: Path, top: int = 25, busy: bool = True) -> dict:
    """The samples of one source page, added up; ``hottest``: the ``top`` instructions with
    the most samples, those of idle warps left out when ``busy``."""
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
    for x, role in zip(instrs, roles(instrs), strict=True):
        x["role"] = role
    totals = {c: sum(x[c] for x in instrs) for c in sample_cols}
    reasons = [c for c in sample_cols if c.startswith("stall_") and "(" not in c]
    total = totals[ranked] or 1.0

    def grouped(key):  # the sample counts only
        out: dict[str, dict] = {}
        for x in instrs:
            g = out.setdefault(x[key], {"instructions": 0, **{c: 0.0 for c in counts}})
            g["instructions"] += 1
            for c in counts:
                g[c] += x[c]
        for g in out.values():
            g["share"] = round(g[ranked] / total, 4)
        return dict(sorted(out.items(), key=lambda kv: -kv[1][ranked]))

    def by_role():
        out = {}
        for role in dict.fromkeys(x["role"] for x in instrs):
            mine = [x for x in instrs if x["role"] == role]
            n = sum(x[ranked] for x in mine)
            stalls = {r.removeprefix("stall_"): sum(x[r] for x in mine) for r in reasons}
            out[role] = {"instructions": len(mine), "samples": n, "share": round(n / total, 4),
                         "reasons": {k: round(v / n, 4) for k, v in
                                     sorted(stalls.items(), key=lambda kv: -kv[1]) if v and n}}
        return out

    def top_reasons(x):
        n = x[ranked] or 1.0
        ranked_reasons = sorted(((x[r], r.removeprefix("stall_")) for r in reasons), reverse=True)
        return {name: round(v / n, 3) for v, name in ranked_reasons[:3] if v}

    hot = sorted(instrs, key=lambda x: -x[ranked])[:top]
    hot_busy = sorted((x for x in instrs if x["role"] != "idle"), key=lambda x: -x[ranked])[:top]
    return {
        "file": path.name,
        "instructions": len(instrs),
        "ranked_column": ranked,
        "totals": totals,
        "by_role": by_role(),
        "by_class": grouped("class"),
        "by_opcode": dict(list(grouped("opcode").items())[:30]),
        "hottest": [{"index": x["index"], "address": x["address"], "role": x["role"],
                     "sass": x["sass"], "samples": x[ranked],
                     "share": round(x[ranked] / total, 4), "reasons": top_reasons(x),
                     "before": [instrs[j]["sass"] for j in range(max(0, x["index"] - 2), x["index"])]}
                    for x in (hot_busy if busy else hot)],
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
        for role, g in s["by_role"].items():
            top3 = ", ".join(f"{k} {v:.0%}" for k, v in list(g["reasons"].items())[:4])
            print(f"  {role:12s} {g['share']:6.1%}  {top3}")
        for cls, g in s["by_class"].items():
            print(f"  {cls:22s} {g['share']:6.1%}  ({g['instructions']} instructions)")
        for x in s["hottest"][:12]:
            print(f"  {x['share']:6.1%}  {x['role']:10s} {x['sass'][:60]:60s} {x['reasons']}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result else 1


if __name__ == "__main__":
    raise SystemExit(main())
