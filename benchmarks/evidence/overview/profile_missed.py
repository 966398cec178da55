"""Probe: why our kernels miss their speed targets on the H200, read from Nsight Compute's hardware counters.

Three uses:

* ``profile_missed.py --list [CASE ...]``: the case names and each one's time limit (seconds), one a line.
* ``profile_missed.py CASE [--meta FILE]``: builds one benchmark point exactly as ``scripts/bench.py``
  builds it (the case's ``bench_case`` from ``benchmarks/cases/<story>.py``, the bench's own
  arguments; a torch.compile peer compiled static, after ``torch.compiler.reset()``), calls it
  ``WARM_CALLS`` times (compilation, autotuning, the allocator: all outside the profiled window),
  then once more between ``cudaProfilerStart`` and ``cudaProfilerStop``. Started under
  ``ncu --profile-from-start off``, Nsight Compute profiles the kernels of that one call and nothing
  else. ``--meta`` writes the GPU, the versions and the point (and an autotuned kernel's chosen
  config) as JSON. The process's own stdout goes to stderr, so that ncu's CSV on stdout stays clean.
* ``profile_missed.py --summarize DIR --out FILE``: reads the raw CSV that
  ``ncu --csv --page raw`` wrote for each case (``DIR/<case>.csv``, with the ``.meta.json``, ``.cmd``,
  ``.rc`` and ``.log`` files ``profile_missed.sh`` writes beside it) and writes one JSON: per case and
  kernel the duration, compute (SM), memory and DRAM throughput in % of peak, registers per thread,
  shared memory, achieved and theoretical occupancy, local-memory (spill) traffic, and the top five
  warp stall reasons; per pair of cases our time against the peer's. Needs neither torch nor a GPU.

``benchmarks/evidence/overview/profile_missed.sh`` runs every case under ncu, one after another, then
the summary.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WARM_CALLS = 3  # before the profiled call: compile, autotune, warm the caching allocator


@dataclass(frozen=True)
class Case:
    """One benchmark point: ``bench_case(bench, provider, x, **args)`` of ``benchmarks/cases/<story>.py``."""

    story: str
    bench: str
    provider: str
    x: object
    pair: str  # the target this case explains: our kernel and its peer share it
    role: str  # "ours" or "peer"
    timeout_s: int  # the limit of its ncu run (profile_missed.sh)
    tuned: tuple = field(default=())  # (module, function, *args): the autotuned wrapper whose pick --meta records


CASES: dict[str, Case] = {
    "ln_bwd_16384": Case("layer_norm", "layer_norm_bwd_fp16", "triton", 16384,
                         "layer norm backward fp16, N = 16384 (against the copy ceiling)", "ours", 45),
    "ln_fwd_16384": Case("layer_norm", "layer_norm_fwd_fp16", "triton", 16384,
                         "layer norm forward fp16, N = 16384", "ours", 35),
    "ln_fwd_16384_compile": Case("layer_norm", "layer_norm_fwd_fp16", "torch.compile", 16384,
                                 "layer norm forward fp16, N = 16384", "peer", 75),
    "attn_fwd_d128": Case("attention", "attention_fwd_fp16_d128", "triton", 4096,
                          "attention forward fp16, d128, seq 4096, batch 32 x 16", "ours", 45),
    "attn_fwd_d128_cudnn": Case("attention", "attention_fwd_fp16_d128", "sdpa-cudnn", 4096,
                                "attention forward fp16, d128, seq 4096, batch 32 x 16", "peer", 40),
    "attn_bwd_d128": Case("attention", "attention_bwd_fp16_d128", "triton", 4096,
                          "attention backward fp16, d128, seq 4096, batch 32 x 16", "ours", 60),
    "attn_bwd_d128_cudnn": Case("attention", "attention_bwd_fp16_d128", "sdpa-cudnn", 4096,
                                "attention backward fp16, d128, seq 4096, batch 32 x 16", "peer", 50),
    "gluon_fwd_d64": Case("attention_hopper", "attention_hopper_fwd_fp16_d64", "triton-gluon", 4096,
                          "Gluon attention forward fp16, d64, seq 4096, batch 32 x 16", "ours", 45),
    "gluon_fwd_d64_cudnn": Case("attention_hopper", "attention_hopper_fwd_fp16_d64", "sdpa-cudnn", 4096,
                                "Gluon attention forward fp16, d64, seq 4096, batch 32 x 16", "peer", 40),
    "linear_gelu_4096": Case("linear_gelu", "linear_gelu_fp16", "triton", "4096x4096x4096",
                             "linear + bias + GELU fp16, 4096^3", "ours", 75,
                             ("linear_gelu", "tuned_kernel", "descriptor")),
    "linear_gelu_4096_compile": Case("linear_gelu", "linear_gelu_fp16", "torch.compile", "4096x4096x4096",
                                     "linear + bias + GELU fp16, 4096^3", "peer", 75),
    "matmul_tma_2048": Case("matmul_persistent", "matmul_persistent_fp16", "triton-persistent-tma", 2048,
                            "matmul fp16, 2048^3 (persistent TMA kernel)", "ours", 60,
                            ("matmul_persistent", "tuned_kernel", "tma")),
    "matmul_cublas_2048": Case("matmul_persistent", "matmul_persistent_fp16", "cublas", 2048,
                               "matmul fp16, 2048^3 (persistent TMA kernel)", "peer", 35),
}


# ---------------------------------------------------------------------------------------------
# Running one case (on the GPU, under ncu)
# ---------------------------------------------------------------------------------------------
def _paths() -> None:
    for p in (str(ROOT), str(ROOT / "examples")):
        if p not in sys.path:
            sys.path.insert(0, p)


def bench_spec(case: Case) -> dict:
    """The bench's entry in its case file's ``BENCHMARKS``, checked to hold the case's point."""
    import importlib

    _paths()
    module = importlib.import_module(f"benchmarks.cases.{case.story}")
    spec = next((b for b in module.BENCHMARKS if b["name"] == case.bench), None)
    if spec is None:
        raise ValueError(f"no bench {case.bench!r} in benchmarks/cases/{case.story}.py")
    if case.provider not in spec["providers"] or case.x not in spec["x_vals"]:
        raise ValueError(f"{case.bench} has no point {case.provider} @ {case.x}")
    return spec


def build(case: Case):
    """The callable of one benchmark point, built as ``scripts/bench.py`` builds it."""
    import importlib

    import torch

    spec = bench_spec(case)
    module = importlib.import_module(f"benchmarks.cases.{case.story}")
    point = module.bench_case(case.bench, case.provider, case.x, **spec["args"])
    if "compile" in point:  # a torch.compile peer: static, for this shape, on a fresh dynamo cache
        torch.compiler.reset()
        compiled = torch.compile(point["compile"], dynamic=False, **(point.get("compile_options") or {}))
        inputs = point["inputs"]
        return lambda: compiled(*inputs)
    return point["fn"]


def _tuned_config(case: Case):
    if not case.tuned:
        return None
    import importlib

    import torch

    module, fn, *args = case.tuned
    tuner = getattr(importlib.import_module(module), fn)(*args, torch.float16)
    best = getattr(tuner, "best_config", None)
    return None if best is None else str(best)


def _meta(name: str, case: Case) -> dict:
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {
        "case": name, "story": case.story, "bench": case.bench, "provider": case.provider, "x": case.x,
        "pair": case.pair, "role": case.role, "warm_calls": WARM_CALLS,
        "gpu": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
        "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": [sys.executable, *sys.argv],
        "tuned_config": _tuned_config(case),
    }


def run_case(name: str, meta_path: str | None = None) -> None:
    import torch

    case = CASES[name]
    fn = build(case)
    for _ in range(WARM_CALLS):  # outside the profiled window
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"profiled {name}", file=sys.stderr, flush=True)
    if meta_path:
        Path(meta_path).write_text(json.dumps(_meta(name, case), indent=1) + "\n")


# ---------------------------------------------------------------------------------------------
# Reading ncu's CSV (no torch, no GPU)
# ---------------------------------------------------------------------------------------------
INFO_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Function Name", "Demangled Name",
                "Context", "Stream", "Block Size", "Grid Size", "Device", "CC")
TIME_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6,
           "s": 1e6}
BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12, "KB": 1e3, "MB": 1e6, "GB": 1e9}
# stall-reason metric families, the preferred first: (prefix, what a value is)
STALL_FAMILIES = (
    ("smsp__average_warp_latency_issue_stalled_", "cycles a warp spends stalled on the reason, per issued instruction"),
    ("smsp__average_warps_issue_stalled_", "warps stalled on the reason per issue-active cycle"),
    ("smsp__warp_issue_stalled_", "% of active warp cycles stalled on the reason"),
    ("smsp__pcsamp_warps_issue_stalled_", "PC samples of warps stalled on the reason"),
)
STALL_TAILS = ("_per_issue_active", "_per_warp_active", "_not_issued")
NOT_A_STALL = {"selected"}  # the warp issued: reported, not ranked


def number(text: str):
    """ncu's value as a number (thousands separators dropped), or the text; None for n/a or empty."""
    s = (text or "").strip()
    if s in ("", "n/a", "N/A", "nan"):
        return None
    try:
        return int(s.replace(",", ""))
    except ValueError:
        pass
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return s


def read_ncu_csv(text: str) -> list[dict]:
    """One dict per profiled kernel launch: {"info": {column: text}, "metrics": {name: value}, "units": {...}}.

    Takes ``--page raw`` (a header row, a units row, one row per kernel) and also ``--page details``
    (one row per metric, pivoted here); skips ncu's ``==PROF==`` / ``==WARNING==`` lines and anything
    before the header, and a header repeated later."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("==")]
    rows = list(csv.reader(lines))
    start = next((i for i, r in enumerate(rows) if r and r[0].strip() == "ID"), None)
    if start is None:
        return []
    header = [h.strip() for h in rows[start]]
    if "Metric Name" in header and "Metric Value" in header:
        return _read_details(header, rows[start + 1:])
    kernels, units = [], {}
    for row in rows[start + 1:]:
        if not row or row[0].strip() == "ID":
            continue
        cells = dict(zip(header, row, strict=False))
        if not cells.get("ID", "").strip():  # the units row
            units.update({k: v for k, v in cells.items() if v and k not in INFO_COLUMNS})
            continue
        info = {k: v for k, v in cells.items() if k in INFO_COLUMNS}
        metrics = {k: number(v) for k, v in cells.items() if k not in INFO_COLUMNS}
        kernels.append({"info": info, "metrics": metrics, "units": units})
    return kernels


def _read_details(header, rows) -> list[dict]:
    by_id: dict[str, dict] = {}
    for row in rows:
        cells = dict(zip(header, row, strict=False))
        kid = cells.get("ID", "").strip()
        if not kid or kid == "ID":
            continue
        k = by_id.setdefault(kid, {"info": {c: cells.get(c, "") for c in INFO_COLUMNS if c in cells},
                                   "metrics": {}, "units": {}})
        name = cells.get("Metric Name", "")
        if name:
            k["metrics"][name] = number(cells.get("Metric Value", ""))
            k["units"][name] = cells.get("Metric Unit", "")
    return list(by_id.values())


def _first(metrics: dict, names) -> tuple[str | None, object]:
    for n in names:
        if isinstance(metrics.get(n), (int, float)):
            return n, metrics[n]
    return None, None


def _scaled(kernel: dict, names, table: dict):
    """The first of `names` present, converted by its unit through `table` (unknown unit: as printed)."""
    name, value = _first(kernel["metrics"], names)
    if name is None:
        return None
    return value * table.get(kernel["units"].get(name, ""), 1.0)


def stall_reasons(metrics: dict) -> dict:
    """Every stall family present: {family: {reason: value}}, family = prefix + '*' + tail + suffix."""
    families: dict[str, dict] = {}
    for name, value in metrics.items():
        if not isinstance(value, (int, float)):
            continue
        for prefix, _ in STALL_FAMILIES:
            if not name.startswith(prefix):
                continue
            reason, dot, suffix = name[len(prefix):].partition(".")
            tail = next((t for t in STALL_TAILS if reason.endswith(t)), "")
            reason = reason[: len(reason) - len(tail)]
            families.setdefault(prefix + "*" + tail + dot + suffix, {})[reason] = value
            break
    return families


def _family_order(family: str) -> tuple:
    prefix = family.split("*")[0]
    rank = next(i for i, (p, _) in enumerate(STALL_FAMILIES) if p == prefix)
    return (rank, "_not_issued" in family, family)


def top_stalls(metrics: dict, n: int = 5) -> dict:
    """The top `n` stall reasons of the preferred family present (and of every other family)."""
    families = stall_reasons(metrics)
    out = {}
    for family in sorted(families, key=_family_order):
        values = families[family]
        ranked = sorted(((r, v) for r, v in values.items() if r not in NOT_A_STALL), key=lambda rv: -rv[1])
        meaning = next(m for p, m in STALL_FAMILIES if family.startswith(p))
        out[family] = {"meaning": meaning, "top": [[r, v] for r, v in ranked[:n]],
                       "selected": values.get("selected"), "reasons": len(values)}
    primary = next(iter(out), None)
    return {"family": primary, "top": out[primary]["top"] if primary else [], "families": out}


def limiter(sm_pct, mem_pct) -> str | None:
    """Nsight Compute's speed-of-light reading: a unit above 60% of its peak is the limit; both under 60%
    means neither throughput limits the kernel (latency: too few warps ready to issue)."""
    if sm_pct is None or mem_pct is None:
        return None
    if max(sm_pct, mem_pct) < 60:
        return "latency (compute and memory both under 60% of peak)"
    return "compute" if sm_pct >= mem_pct else "memory"


def summarize_kernel(kernel: dict) -> dict:
    m, info = kernel["metrics"], kernel["info"]
    name = info.get("Kernel Name") or info.get("Demangled Name") or info.get("Function Name")
    sm = _first(m, ["sm__throughput.avg.pct_of_peak_sustained_elapsed"])[1]
    mem = _first(m, ["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"])[1]
    local = {k: v for k, v in m.items() if ("mem_local" in k or "op_local" in k) and isinstance(v, (int, float))}
    local_bytes = [v for k, v in local.items() if k.startswith("l1tex__t_bytes")]
    shared = {k: v for k, v in m.items() if k.startswith("launch__shared_mem") and isinstance(v, (int, float))}
    limits = {k[len("launch__occupancy_limit_"):]: v for k, v in m.items()
              if k.startswith("launch__occupancy_limit_") and isinstance(v, (int, float))}
    tensor = {k: v for k, v in m.items()
              if ("pipe_tensor" in k or "pipe_gmma" in k) and isinstance(v, (int, float))}
    return {
        "id": number(info.get("ID", "")),
        "kernel": name,
        "block": info.get("Block Size"),
        "grid": info.get("Grid Size"),
        "duration_us": _scaled(kernel, ["gpu__time_duration.sum"], TIME_US),
        "sm_throughput_pct": sm,
        "memory_throughput_pct": mem,
        "dram_throughput_pct": _first(m, ["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                          "dram__throughput.avg.pct_of_peak_sustained_elapsed"])[1],
        "l2_throughput_pct": _first(m, ["lts__throughput.avg.pct_of_peak_sustained_elapsed"])[1],
        "l1_throughput_pct": _first(m, ["l1tex__throughput.avg.pct_of_peak_sustained_active",
                                        "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"])[1],
        "dram_bytes_read": _scaled(kernel, ["dram__bytes_read.sum"], BYTES),
        "dram_bytes_write": _scaled(kernel, ["dram__bytes_write.sum"], BYTES),
        "sm_frequency_hz": _first(m, ["sm__cycles_elapsed.avg.per_second"])[1],
        "registers_per_thread": _first(m, ["launch__registers_per_thread"])[1],
        "shared_memory": shared,
        "achieved_occupancy_pct": _first(m, ["sm__warps_active.avg.pct_of_peak_sustained_active"])[1],
        "theoretical_occupancy_pct": _first(m, ["sm__maximum_warps_per_active_cycle_pct"])[1],
        "occupancy_limits_blocks": limits,
        "waves_per_sm": _first(m, ["launch__waves_per_multiprocessor"])[1],
        "warp_cycles_per_issued_instruction": _first(m, ["smsp__average_warp_latency_per_inst_issued.ratio",
                                                         "smsp__average_warps_latency_per_inst_issued.ratio"])[1],
        "local_memory": local,
        "spills": (sum(local_bytes) > 0) if local_bytes else None,
        "tensor_pipe": tensor,
        "stalls": top_stalls(m),
        "limiter": limiter(sm, mem),
    }


def _read(path: Path) -> str | None:
    return path.read_text(errors="replace") if path.is_file() else None


def summarize_case(folder: Path, name: str) -> dict:
    csv_text = _read(folder / f"{name}.csv")
    rc_text = (_read(folder / f"{name}.rc") or "").strip()
    meta_text = _read(folder / f"{name}.meta.json")
    kernels = [summarize_kernel(k) for k in read_ncu_csv(csv_text or "")]
    rc = number(rc_text) if rc_text else None
    if rc_text == "skipped":
        status = "skipped: the script's time budget was spent"
    elif rc in (124, 137):
        status = "timed out"
    elif not kernels:
        status = "no kernels profiled" + (f" (exit status {rc})" if rc not in (None, 0) else "")
    else:
        status = "ok" if rc in (None, 0) else f"profiled, but exit status {rc}"
    durations = [k["duration_us"] for k in kernels if k["duration_us"] is not None]
    case = CASES.get(name)
    out = {
        "status": status,
        "exit_status": rc,
        "point": None if case is None else {"bench": case.bench, "provider": case.provider, "x": case.x,
                                            "pair": case.pair, "role": case.role},
        "meta": json.loads(meta_text) if meta_text else None,
        "command": (_read(folder / f"{name}.cmd") or "").strip() or None,
        "kernels": kernels,
        "total_duration_us": sum(durations) if durations else None,
    }
    if status != "ok":
        log = (_read(folder / f"{name}.log") or "").splitlines()
        out["log_tail"] = log[-25:]
    return out


def summarize(folder: Path) -> dict:
    folder = Path(folder)
    names = sorted({p.name.split(".")[0] for p in folder.iterdir()
                    if p.suffix in (".csv", ".rc", ".cmd") or p.name.endswith(".meta.json")}
                   - {"gpu", "run", "ncu_version"})
    order = {n: i for i, n in enumerate(CASES)}
    names.sort(key=lambda n: (order.get(n, len(order)), n))
    cases = {n: summarize_case(folder, n) for n in names}
    metas = [c["meta"] for c in cases.values() if c["meta"]]
    first = metas[0] if metas else {}
    run = _read(folder / "run.txt") or ""
    run_fields = dict(line.split(": ", 1) for line in run.splitlines() if ": " in line)
    pairs = {}
    for n, c in cases.items():
        if c["point"]:
            pairs.setdefault(c["point"]["pair"], {})[c["point"]["role"]] = n
    comparisons = []
    for pair, roles in pairs.items():
        ours, peer = (cases[roles[r]]["total_duration_us"] if r in roles else None for r in ("ours", "peer"))
        comparisons.append({"pair": pair, "ours": roles.get("ours"), "peer": roles.get("peer"),
                            "ours_us": ours, "peer_us": peer,
                            "peer_time_over_ours": (peer / ours) if ours and peer else None})
    return {
        "what": "Nsight Compute counters of one call of each case (benchmarks/evidence/overview/profile_missed.py)",
        "gpu": first.get("gpu"),
        "gpu_query": (_read(folder / "gpu.csv") or "").strip() or None,
        "versions": {k: first.get(k) for k in ("torch", "triton", "cuda", "cudnn", "python")},
        "ncu_version": (_read(folder / "ncu_version.txt") or "").strip() or None,
        "date": run_fields.get("date") or first.get("date"),
        "command": run_fields.get("command"),
        "method": ("each case in its own process: the benchmark point built as scripts/bench.py builds it, "
                   f"{WARM_CALLS} warm-up calls, then one call between cudaProfilerStart and cudaProfilerStop, "
                   "profiled by ncu --profile-from-start off --clock-control none --replay-mode kernel "
                   "(each kernel replayed once per counter pass; durations are ncu's gpu__time_duration, "
                   "with ncu's cache flush before each pass); every kernel of the call is listed"),
        "rules": {"limiter": "compute or memory: whichever of sm_throughput_pct and memory_throughput_pct is "
                             "larger, when it is at least 60; latency when both are under 60 (Nsight Compute's "
                             "speed-of-light reading)",
                  "spills": "true when the local-memory load or store bytes (l1tex__t_bytes_..._mem_local_...) "
                            "are above 0",
                  "stalls": "top five reasons of the first stall family present, in this order: "
                            + ", ".join(p + "*" for p, _ in STALL_FAMILIES) + "; 'selected' (issued) not ranked"},
        "comparisons": comparisons,
        "points": flat_points(cases),
        "cases": cases,
    }


POINT_FIELDS = ("duration_us", "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
                "l2_throughput_pct", "dram_bytes_read", "dram_bytes_write", "registers_per_thread",
                "achieved_occupancy_pct", "theoretical_occupancy_pct", "warp_cycles_per_issued_instruction",
                "spills", "limiter")


def flat_points(cases: dict) -> list[dict]:
    """One flat record per (case, kernel) for the pages' `{{ evidence }}` quotes: the scalar fields, the
    local-memory (spill) bytes loaded and stored, and the top stall reasons as `stall_<reason>`."""
    points = []
    for name, case in cases.items():
        for k in case.get("kernels") or []:
            local = k.get("local_memory") or {}
            point = {"case": name, "kernel": k["kernel"], **{f: k.get(f) for f in POINT_FIELDS},
                     "local_bytes_ld": local.get("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"),
                     "local_bytes_st": local.get("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")}
            point.update({f"stall_{r}": v for r, v in (k.get("stalls") or {}).get("top", [])})
            points.append(point)
    return points


def dumps(summary: dict) -> str:
    """The summary as JSON, short to read in a diff: the header indented, each case on one line, each
    flat point on one line (the evidence files' layout)."""
    head = {k: v for k, v in summary.items() if k not in ("cases", "points")}
    cases = ",\n".join(f"  {json.dumps(n)}: {json.dumps(c)}" for n, c in summary.get("cases", {}).items())
    points = ",\n".join("  " + json.dumps(pt) for pt in summary.get("points", []))
    return (json.dumps(head, indent=1)[:-2] + ',\n "cases": {\n' + cases + '\n },\n "points": [\n'
            + points + "\n ]\n}\n")


def print_table(summary: dict) -> None:
    print(f"{'case':26} {'kernel':40} {'us':>9} {'SM%':>5} {'mem%':>5} {'dram%':>5} {'regs':>4} "
          f"{'occ%':>5} {'theo%':>5} {'spill':>5}  top stalls")

    def f(v, w, p=1):
        return f"{v:>{w}.{p}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"

    for name, case in summary["cases"].items():
        if not case["kernels"]:
            print(f"{name:26} {case['status']}")
        for k in case["kernels"]:
            stalls = ", ".join(f"{r} {v:.3g}" for r, v in k["stalls"]["top"][:3])
            print(f"{name:26} {str(k['kernel'])[:40]:40} {f(k['duration_us'], 9)} {f(k['sm_throughput_pct'], 5)} "
                  f"{f(k['memory_throughput_pct'], 5)} {f(k['dram_throughput_pct'], 5)} "
                  f"{f(k['registers_per_thread'], 4, 0)} {f(k['achieved_occupancy_pct'], 5)} "
                  f"{f(k['theoretical_occupancy_pct'], 5)} {str(k['spills']):>5}  {stalls}")
    for c in summary["comparisons"]:
        ratio = c["peer_time_over_ours"]
        print(f"{c['pair']}: ours {c['ours_us']} us, peer {c['peer_us']} us"
              + (f", peer time / ours {ratio:.3f}" if ratio else ""))


# ---------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="cases: " + ", ".join(CASES))
    parser.add_argument("case", nargs="*", help="case(s) to run (one call each, profiled)")
    parser.add_argument("--meta", help="write the case's GPU, versions and point here (JSON)")
    parser.add_argument("--list", action="store_true", help="print each case (all, or those named) and its limit")
    parser.add_argument("--summarize", metavar="DIR", help="summarize DIR/<case>.csv (ncu --csv --page raw)")
    parser.add_argument("--out", help="with --summarize: the JSON to write")
    args = parser.parse_args(argv)
    unknown = [c for c in args.case if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; one of {list(CASES)}")
    if args.list:
        for name in args.case or CASES:
            print(name, CASES[name].timeout_s)
        return 0
    if args.summarize:
        summary = summarize(Path(args.summarize))
        if args.out:
            Path(args.out).write_text(dumps(summary))
        print_table(summary)
        return 0
    if not args.case:
        parser.error("name a case, or use --list / --summarize")
    if args.meta and len(args.case) > 1:
        parser.error("--meta takes one case")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # anything printed goes to stderr: stdout is ncu's CSV
    for name in args.case:
        run_case(name, args.meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
