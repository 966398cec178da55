"""The speed targets of the site, judged from the committed result files.

Each target compares numbers measured in the same run (a kernel against the
ceiling or the peer measured beside it). ``evaluate`` returns one row per
checked point; a point with no data is reported as "not measured", never as met.
"""

from __future__ import annotations

from dataclasses import dataclass

import results


@dataclass
class Check:
    target: str  # the target, in words
    point: str  # which measurement
    measured: float | None  # the ratio or fraction measured (None: no data)
    threshold: float
    unit: str  # "% of ceiling" or "x"
    detail: str = ""

    @property
    def status(self) -> str:
        if self.measured is None:
            return "not measured"
        return "met" if self.measured >= self.threshold else "missed"

    def shown(self, value: float | None) -> str:
        if value is None:
            return "–"
        return f"{100 * value:.1f}%" if self.unit == "% of ceiling" else f"{value:.3f}×"


def _row(data: results.Results, bench: str, x, provider: str, timing: str = "do_bench") -> dict | None:
    try:
        return data.find(bench, x, provider, timing)
    except results.ResultError:
        return None


def _value(data: results.Results, bench: str, x, provider: str, timing: str = "do_bench") -> float | None:
    row = _row(data, bench, x, provider, timing)
    return None if row is None else row["value"]


HOST_BOUND_NOTE = "*host-bound: launch cost, not kernel time*"


def _fraction_of_ceiling(data, bench, x, provider, timing="do_bench") -> float | None:
    value = _value(data, bench, x, provider, timing)
    if value is None:
        return None
    try:
        return value / data.ceiling(bench)[1]
    except (results.ResultError, KeyError):
        return None


def _providers(data: results.Results, bench: str) -> list[str]:
    return sorted({r["provider"] for r in data.rows if r["bench"] == bench})


def _best_ratio(data, benches, x, peer, timing) -> tuple[float | None, str]:
    """Best (ours / peer) over our providers in the given benches, each against the peer of its own run."""
    best, who = None, ""
    for bench in benches:
        base = _value(data, bench, x, peer, timing)
        if base is None:
            continue
        for provider in _providers(data, bench):
            if not provider.startswith("triton"):
                continue
            ours = _value(data, bench, x, provider, timing)
            if ours is not None and (best is None or ours / base > best):
                best, who = ours / base, f"{provider} ({bench})"
    return best, who


SOFTMAX_N = [512, 781, 1024, 2048, 3000, 4096, 8192, 16384, 32768]
SOFTMAX_LONG_N = [65536, 262144]
MATMUL_S = [1024, 2048, 4096, 8192]
RAGGED = "4000x3000x2000"
LINEAR_GELU = ["4096x4096x4096", "8192x8192x2048"]


def evaluate(data: results.Results) -> list[Check]:
    checks: list[Check] = []
    # Vector add: a pure stream, n >= 2^24.
    for n in (2**24, 2**26, 2**28):
        checks.append(Check("vector add fp32 ≥ 95% of copy", f"n = 2^{n.bit_length() - 1}",
                            _fraction_of_ceiling(data, "vector_add_fp32", n, "triton"), 0.95, "% of ceiling"))
    # Softmax over 2^26 elements.
    for n in SOFTMAX_N:
        checks.append(Check("softmax fp32 ≥ 95% of copy", f"N = {n}",
                            _fraction_of_ceiling(data, "softmax_fp32", n, "triton"), 0.95, "% of ceiling"))
        ours = _value(data, "softmax_fp32", n, "triton")
        peers = [v for v in (_value(data, "softmax_fp32", n, p) for p in ("torch", "torch.compile")) if v]
        ratio = ours / max(peers) if ours is not None and peers else None
        checks.append(Check("softmax fp32 ≥ faster of torch, torch.compile", f"N = {n}", ratio, 1.0, "x"))
    for n in SOFTMAX_LONG_N:
        checks.append(Check("softmax fp32, long rows ≥ 80% of copy", f"N = {n}",
                            _fraction_of_ceiling(data, "softmax_fp32", n, "triton"), 0.80, "% of ceiling"))
    # Matmul: best of our variants against cuBLAS measured in the same run.
    for dtype in ("fp16", "bf16"):
        square = [f"matmul_{dtype}", f"matmul_persistent_{dtype}"]
        for s in MATMUL_S:
            if s == 1024:
                ratio, who = _best_ratio(data, square, s, "cublas", "cudagraph")
                checks.append(Check(f"matmul {dtype} ≥ 0.8× cuBLAS (CUDA graph)", f"{s}³", ratio, 0.8, "x", who))
            else:
                ratio, who = _best_ratio(data, square, s, "cublas", "do_bench")
                checks.append(Check(f"matmul {dtype} ≥ 1.0× cuBLAS", f"{s}³", ratio, 1.0, "x", who))
        ragged = [f"matmul_ragged_{dtype}", f"matmul_persistent_ragged_{dtype}"]
        ratio, who = _best_ratio(data, ragged, RAGGED, "cublas", "do_bench")
        checks.append(Check(f"matmul {dtype} ≥ 1.0× cuBLAS", RAGGED, ratio, 1.0, "x", who))
    # Fused linear + bias + GELU.
    for shape in LINEAR_GELU:
        ours = _value(data, "linear_gelu_fp16", shape, "triton")
        for peer, need in (("torch.compile", 1.1), ("torch", 1.3)):
            base = _value(data, "linear_gelu_fp16", shape, peer)
            ratio = ours / base if ours is not None and base else None
            name = "eager" if peer == "torch" else peer
            checks.append(Check(f"linear + bias + GELU fp16 ≥ {need}× {name}", shape, ratio, need, "x"))
    return checks


def markdown_table(data: results.Results) -> str:
    rows = ["| target | point | measured | status |", "| --- | --- | --- | --- |"]
    for c in evaluate(data):
        note = f" <br><small>{c.detail}</small>" if c.detail else ""
        icon = {"met": "met", "missed": f"**missed** (needs {c.shown(c.threshold)})",
                "not measured": "**not measured**"}[c.status]
        rows.append(f"| {c.target} | {c.point} | {c.shown(c.measured)}{note} | {icon} |")
    return "\n".join(rows)


def summary_table(data: results.Results) -> str:
    """Per bench: the best of our providers at its largest x, against the ceiling."""
    rows = ["| benchmark | point | best Triton | % of ceiling |", "| --- | --- | --- | --- |"]
    for bench in sorted({r["bench"] for r in data.rows}):
        spec = data.specs.get(bench, {})
        pts = [r for r in data.rows if r["bench"] == bench and r["timing"] == "do_bench"
               and r["provider"].startswith("triton")]
        if not pts or spec.get("metric") == "us":
            continue
        last_x = pts[-1]["x"]
        best = max((r for r in pts if r["x"] == last_x), key=lambda r: r["value"])
        frac = _fraction_of_ceiling(data, bench, last_x, best["provider"])
        pct = f"{100 * frac:.0f}%" if frac is not None else "–"
        value = results.fmt_value(best["value"], best["metric"])
        if best.get("host_bound"):
            value += f" <br><small>{HOST_BOUND_NOTE}</small>"
        point = f"{best['x_name']} = {last_x}"
        rows.append(f"| {spec.get('title', bench)} | {point} | {value} ({best['provider']}) | {pct} |")
    return "\n".join(rows)


def winners_table(data: results.Results, bench: str, providers: list[str], timing: str = "do_bench") -> str:
    """Which of several providers is fastest at each x of one bench, and by how much."""
    x_name = data.specs.get(bench, {}).get("x_name", "x")
    rows = [f"| {x_name} | fastest | margin over the next |", "| --- | --- | --- |"]
    xs = list(dict.fromkeys(r["x"] for r in data.rows if r["bench"] == bench))
    for x in xs:
        found = [r for p in providers if (r := _row(data, bench, x, p, timing)) is not None]
        vals = sorted(((r["value"], r["provider"]) for r in found), reverse=True)
        if len(vals) < 2:
            continue
        note = f" <br><small>{HOST_BOUND_NOTE}</small>" if any(r.get("host_bound") for r in found) else ""
        rows.append(f"| {x} | {vals[0][1]} | {vals[0][0] / vals[1][0]:.2f}× over {vals[1][1]}{note} |")
    if len(rows) == 2:
        raise results.ResultError(f"no points of {bench} with two of {providers}")
    return "\n".join(rows)
