"""Reads the per-instruction warp samples that ``profile_gluon_sass.sh`` exported.

Nsight Compute samples each warp's program counter at a fixed interval while the kernel runs;
each sample names the SASS instruction the warp was at and whether it issued. The source page
(``ncu -i REPORT --page source --csv --print-source sass``) has one row per instruction, its
address, its text and its sample counts. This script adds them up, no GPU needed:

* by partition (``roles``: the consumer warpgroups, the producer, idle warps), with each
  one's warp states;
* by instruction class (tensor-core ``HGMMA`` and its fences, barrier waits, ``MUFU`` exp2,
  other float math, shared and TMA memory, conversions, the rest), so that a kernel's time reads
  as "where its warps were";
* by opcode;
* the instructions with the most samples, each with the two instructions before it (a warp
  stalled at an instruction usually waits on what an earlier one started).

Usage (repository root)::

    python benchmarks/evidence/attention/sass_stalls.py DIR/sass/*.sass.csv [--out FILE.json]
        [--points FILE.json]

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

# (class, SASS opcodes: an instruction's first word up to its first dot)
CLASSES = (
    ("wgmma", ("HGMMA", "BGMMA", "IGMMA", "QGMMA", "WARPGROUP")),  # wgmma in SASS
    ("barrier wait", ("SYNCS", "BAR", "WARPSYNC", "NANOSLEEP", "YIELD", "DEPBAR", "MEMBAR")),
    ("exp2", ("MUFU",)),
    ("float math", ("FFMA", "FMUL", "FADD", "FMNMX", "FSEL", "FSETP", "FCHK", "HMUL2", "HFMA2",
                    "HADD2", "HMNMX2")),
    ("shared / TMA memory", ("LDS", "STS", "LDSM", "STSM", "UTMALDG", "UTMASTG", "UTMAPF",
                             "UTMACCTL", "UBLKCP", "LDGSTS")),
    ("global memory", ("LDG", "STG", "RED", "ATOM", "ATOMG", "LD", "ST")),
    ("conversion", ("F2F", "F2FP", "I2F", "I2FP", "F2I")),
    ("shuffle", ("SHFL",)),
    ("branch", ("BRA", "BRX", "BSYNC", "BSSY", "EXIT", "RET", "CALL", "BMOV")),
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
    first = op.split(".")[0]
    return next((name for name, ops in CLASSES if first in ops), "other")


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

    def by_class_of_consumers():
        """For each state of the consumer warps: how its samples split over the instruction
        classes (``points`` keeps ``wait`` and ``selected``)."""
        mine = [x for x in instrs if x["role"].startswith("consumer")]
        out = {}
        for r in reasons:
            n = sum(x[r] for x in mine)
            if n:
                split: dict[str, float] = {}
                for x in mine:
                    split[x["class"]] = split.get(x["class"], 0.0) + x[r] / n
                out[r.removeprefix("stall_")] = {k: round(v, 4) for k, v in
                                                 sorted(split.items(), key=lambda kv: -kv[1])}
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
        "consumer_reasons_by_class": by_class_of_consumers(),
        "by_class": grouped("class"),
        "by_opcode": dict(list(grouped("opcode").items())[:30]),
        "hottest": [{"index": x["index"], "address": x["address"], "role": x["role"],
                     "sass": x["sass"], "samples": x[ranked],
                     "share": round(x[ranked] / total, 4), "reasons": top_reasons(x),
                     "before": [instrs[j]["sass"] for j in range(max(0, x["index"] - 2), x["index"])]}
                    for x in (hot_busy if busy else hot)],
    }


def points(result: dict) -> list[dict]:
    """The summaries flattened for ``{{ evidence }}``: per case, one row for the consumer
    warps together, one for the producer, then its hottest busy instructions; shares are of
    the consumer warps' samples (``share_of_consumers``) or of the kernel's busy samples
    (idle warps left out)."""
    rows = []
    for case, s in result.items():
        roles = s["by_role"]
        busy = sum(g["samples"] for r, g in roles.items() if r != "idle") or 1.0
        consumers = [g for r, g in roles.items() if r.startswith("consumer")]
        n_cons = sum(g["samples"] for g in consumers) or 1.0
        merged: dict[str, float] = {}
        for g in consumers:
            for reason, share in g["reasons"].items():
                merged[reason] = merged.get(reason, 0.0) + share * g["samples"] / n_cons
        rows.append({"case": case, "warps": "consumers", "share_of_busy": round(n_cons / busy, 4),
                     **{f"reason_{k}": round(v, 4) for k, v in
                        sorted(merged.items(), key=lambda kv: -kv[1])}})
        for reason in ("wait", "selected"):
            split = s["consumer_reasons_by_class"].get(reason)
            if split:
                rows.append({"case": case, "warps": "consumers by class", "state": reason,
                             **{f"class_{k.replace(' ', '_').replace('/', 'or')}": v
                                for k, v in split.items()}})
        if "producer" in roles:
            g = roles["producer"]
            rows.append({"case": case, "warps": "producer",
                         "share_of_busy": round(g["samples"] / busy, 4),
                         **{f"reason_{k}": v for k, v in g["reasons"].items()}})
        total = s["totals"][s["ranked_column"]]
        for rank, x in enumerate(s["hottest"], 1):
            rows.append({"case": case, "rank": rank, "role": x["role"], "sass": x["sass"],
                         "share_of_busy": round(x["samples"] / busy, 4),
                         "share_of_consumers": round(x["samples"] / n_cons, 4)
                         if x["role"].startswith("consumer") else None,
                         "share_of_all": round(x["samples"] / total, 4),
                         **{f"reason_{k}": v for k, v in x["reasons"].items()}})
    return rows


def header(csvs: list[Path], code: str | None = None) -> dict:
    """What the profiles were: each case's meta.json (GPU, versions, date, the point) and
    the ncu version, read beside the CSVs."""
    folder = csvs[0].parent
    version = folder / "ncu_version.txt"
    metas = {}
    for c in csvs:
        meta = c.with_name(c.name.removesuffix(".sass.csv") + ".meta.json")
        if meta.exists():
            metas[c.name.removesuffix(".sass.csv")] = json.loads(meta.read_text())
    first = next(iter(metas.values()), {})
    return {"probe": "benchmarks/evidence/attention/profile_gluon_sass.sh, read by "
                     "benchmarks/evidence/attention/sass_stalls.py",
            **{k: first.get(k) for k in ("gpu", "torch", "triton", "cuda", "python", "date")},
            "code": code,
            "ncu": version.read_text().strip().splitlines()[-1] if version.exists() else None,
            "method": "Nsight Compute SourceCounters: warp program-counter samples over one call "
                      "of the kernel (after 3 warm-up calls), each with the warp's state; added "
                      "up per partition (USETMAXREG bounds, see roles()) and per instruction. "
                      "A reason's share is of the samples of those warps.",
            "cases": {k: {"bench": m.get("bench"), "provider": m.get("provider"), "x": m.get("x"),
                          "pair": m.get("pair")} for k, m in metas.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--points", type=Path, help="also write the flattened rows and a header "
                    "(for the Benchmarks page) to this file")
    ap.add_argument("--code", help="the code profiled, for the header (e.g. a commit)")
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
    if args.points:
        sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
        from scripts.probe_common import write_points

        write_points(args.points, header(args.csv, args.code), points(result))
    return 0 if result else 1


if __name__ == "__main__":
    raise SystemExit(main())
