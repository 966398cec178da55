"""The speed targets of the site, judged from the committed result files.

Each target compares numbers measured in the same run (a kernel against the
ceiling or the peer measured beside it). ``evaluate`` returns one row per
checked point; a point with no data is reported as "not measured", never as met.
"""

from __future__ import annotations

from dataclasses import dataclass

from scripts import results


@dataclass
class Check:
    target: str  # the target, in words
    point: str  # which measurement
    measured: float | None  # the ratio or fraction measured (None: no data)
    threshold: float
    unit: str  # "% of ceiling" or "x"
    detail: str = ""
    spread: float | None = None  # how far the passes of the points behind `measured` varied (sum of spreads)

    @property
    def status(self) -> str:
        if self.measured is None:
            return "not measured"
        return "met" if self.measured >= self.threshold else "missed"

    @property
    def within_spread(self) -> bool:
        """The margin to the threshold is smaller than the passes' spread: met or missed by noise."""
        return (self.measured is not None and self.spread is not None
                and abs(self.measured / self.threshold - 1.0) <= self.spread)

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


def judged_timing(data: results.Results, bench: str, x, providers) -> str:
    """do_bench, unless one of the providers' do_bench points at x is host-bound: then the
    CUDA-graph time, the kernel's own (no page or target concludes from launch cost)."""
    for provider in providers:
        row = _row(data, bench, x, provider, "do_bench")
        if row is not None and row.get("host_bound") and _row(data, bench, x, provider, "cudagraph"):
            return "cudagraph"
    return "do_bench"


def _spread(data, points) -> float | None:
    """Sum of the spreads of (bench, x, provider, timing) points: a bound on how far their ratio moved."""
    total = 0.0
    for bench, x, provider, timing in points:
        row = _row(data, bench, x, provider, timing)
        if row is None or row.get("spread") is None:
            return None
        total += row["spread"]
    return total


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


GRAPH_NOTE = "CUDA graph: do_bench is host-bound"


def _versus(data, bench, x, ours: str, peers: list[str], timing=None) -> tuple[float | None, str, float | None]:
    """(ours / the fastest of ``peers``, the timing compared, the sum of the two points' spreads).
    timing None: do_bench, or the CUDA graph where one of these do_bench points is host-bound."""
    t = timing or judged_timing(data, bench, x, [ours, *peers])
    mine = _value(data, bench, x, ours, t)
    found = sorted((v, p) for p in peers if (v := _value(data, bench, x, p, t)))
    if mine is None or not found:
        return None, t, None
    return mine / found[-1][0], t, _spread(data, [(bench, x, ours, t), (bench, x, found[-1][1], t)])


def _best_ratio(data, benches, x, peer, timing=None) -> tuple[float | None, str, float | None]:
    """Best (ours / peer) over our providers in the given benches, each against the peer of its own
    run; (ratio, who, spread). timing None: do_bench, or the CUDA graph where a point is host-bound."""
    best, who, spread = None, "", None
    for bench in benches:
        for provider in _providers(data, bench):
            if not provider.startswith("triton"):
                continue
            ratio, t, ratio_spread = _versus(data, bench, x, provider, [peer], timing)
            if ratio is not None and (best is None or ratio > best):
                best, spread = ratio, ratio_spread
                who = f"{provider} ({bench})" + (f", {GRAPH_NOTE}" if t != timing and t == "cudagraph" else "")
    return best, who, spread


SOFTMAX_N = [512, 781, 1024, 2048, 3000, 4096, 8192, 16384, 32768]
SOFTMAX_LONG_N = [65536, 262144]
MATMUL_S = [1024, 2048, 4096, 8192]
RAGGED = "4000x3000x2000"
LINEAR_GELU = ["4096x4096x4096", "8192x8192x2048"]
LAYER_NORM_N = [1024, 2048, 4096, 8192, 16384]
ATTENTION_SEQ = [1024, 4096, 16384]
SDPA = ["sdpa", "sdpa-flash", "sdpa-cudnn"]  # torch's default choice and each backend forced


def evaluate(data: results.Results) -> list[Check]:
    checks: list[Check] = []
    # Vector add: a pure stream, n >= 2^24.
    def of_ceiling(target: str, point: str, bench: str, x, threshold: float, timing: str = "do_bench") -> Check:
        # Against a copy ceiling timed with do_bench: a host-bound point is reported, not re-timed.
        row = _row(data, bench, x, "triton", timing)
        detail = HOST_BOUND_NOTE if row is not None and row.get("host_bound") else ""
        return Check(target, point, _fraction_of_ceiling(data, bench, x, "triton", timing), threshold,
                     "% of ceiling", detail, _spread(data, [(bench, x, "triton", timing)]))

    for n in (2**24, 2**26, 2**28):  # issue 11: "in kernel time"
        check = of_ceiling("vector add fp32 ≥ 95% of copy (kernel time, CUDA graph)",
                           f"n = 2^{n.bit_length() - 1}", "vector_add_fp32", n, 0.95, "cudagraph")
        check.detail = check.detail or "the copy ceiling is timed with do_bench: a graph replay can pass it"
        checks.append(check)
    # Softmax over 2^26 elements.
    for n in SOFTMAX_N:
        checks.append(of_ceiling("softmax fp32 ≥ 95% of copy", f"N = {n}", "softmax_fp32", n, 0.95))
        ratio, t, spread = _versus(data, "softmax_fp32", n, "triton", ["torch", "torch.compile"])
        checks.append(Check("softmax fp32 ≥ faster of torch, torch.compile", f"N = {n}", ratio, 1.0, "x",
                            GRAPH_NOTE if t == "cudagraph" else "", spread))
    for n in SOFTMAX_LONG_N:
        checks.append(of_ceiling("softmax fp32, long rows ≥ 80% of copy", f"N = {n}", "softmax_fp32", n, 0.80))
    # Matmul: best of our variants against cuBLAS measured in the same run.
    for dtype in ("fp16", "bf16"):
        square = [f"matmul_{dtype}", f"matmul_persistent_{dtype}"]
        for s in MATMUL_S:
            if s == 1024:
                ratio, who, spread = _best_ratio(data, square, s, "cublas", "cudagraph")
                checks.append(Check(f"matmul {dtype} ≥ 0.9× cuBLAS (CUDA graph)", f"{s}³", ratio, 0.9, "x", who,
                                    spread))
            else:
                ratio, who, spread = _best_ratio(data, square, s, "cublas")
                checks.append(Check(f"matmul {dtype} ≥ 1.0× cuBLAS", f"{s}³", ratio, 1.0, "x", who, spread))
        ragged = [f"matmul_ragged_{dtype}", f"matmul_persistent_ragged_{dtype}"]
        ratio, who, spread = _best_ratio(data, ragged, RAGGED, "cublas")
        checks.append(Check(f"matmul {dtype} ≥ 1.0× cuBLAS", RAGGED, ratio, 1.0, "x", who, spread))
    # Fused linear + bias + GELU.
    for dtype in ("fp16", "bf16"):  # no bf16 bench yet: those rows say "not measured"
        for shape in LINEAR_GELU:
            for peer, need in (("torch.compile", 1.1), ("torch", 1.3)):
                ratio, t, spread = _versus(data, f"linear_gelu_{dtype}", shape, "triton", [peer])
                name = "eager" if peer == "torch" else peer
                checks.append(Check(f"linear + bias + GELU {dtype} ≥ {need}× {name}", shape, ratio, need, "x",
                                    GRAPH_NOTE if t == "cudagraph" else "", spread))
    # Layer norm over 2^26 elements: forward and backward against the copy ceiling and both peers.
    for pass_, name in (("fwd", "forward"), ("bwd", "backward")):
        for dtype in ("fp16", "bf16"):
            bench = f"layer_norm_{pass_}_{dtype}"
            for n in LAYER_NORM_N:
                check = of_ceiling(f"layer norm {name} {dtype} ≥ 90% of copy", f"N = {n}", bench, n, 0.90)
                kernel = _fraction_of_ceiling(data, bench, n, "triton", "cudagraph")
                if kernel is not None and not check.detail:  # the kernel alone, beside the judged do_bench
                    check.detail = f"kernel alone (CUDA graph): {100 * kernel:.1f}%"
                checks.append(check)
                ratio, t, spread = _versus(data, bench, n, "triton", ["torch", "torch.compile"])
                graph, _, _ = _versus(data, bench, n, "triton", ["torch", "torch.compile"], "cudagraph")
                detail = GRAPH_NOTE if t == "cudagraph" else (
                    f"kernel alone (CUDA graph): {graph:.3f}×" if graph is not None else "")
                checks.append(Check(f"layer norm {name} {dtype} ≥ faster of torch, torch.compile", f"N = {n}",
                                    ratio, 1.0, "x", detail, spread))
    # Attention, 16 heads, batch x seq = 16384: against the fastest SDPA backend measured beside it.
    benches = [(f"attention_{p}_fp16_d128{c}", s) for p in ("fwd", "bwd") for c in ("", "_causal")
               for s in ATTENTION_SEQ]
    benches += [(f"attention_{p}_{d}{c}", 4096) for p in ("fwd", "bwd")
                for d, c in (("fp16_d64", "_causal"), ("bf16_d128", "_causal"))]
    for bench, seq in benches:
        backward = "_bwd_" in bench
        need = 0.8 if backward else 1.0
        ratio, t, spread = _versus(data, bench, seq, "triton", SDPA)
        label = bench.removeprefix("attention_").replace("_", " ")
        checks.append(Check(f"attention {'backward' if backward else 'forward'} ≥ {need}× fastest SDPA backend",
                            f"{label}, seq = {seq}", ratio, need, "x", GRAPH_NOTE if t == "cudagraph" else "",
                            spread))
    return checks


def markdown_table(data: results.Results, prefix: str = "") -> str:
    """The target table; `prefix` keeps the targets whose name starts with it (a kernel's page)."""
    rows = ["| target | point | measured | status |", "| --- | --- | --- | --- |"]
    checks = [c for c in evaluate(data) if c.target.startswith(prefix)]
    if not checks:
        raise results.ResultError(f"no target starts with {prefix!r}")
    for c in checks:
        note = f" <br><small>{c.detail}</small>" if c.detail else ""
        icon = {"met": "met", "missed": f"**missed** (needs {c.shown(c.threshold)})",
                "not measured": "**not measured**"}[c.status]
        if c.within_spread:
            icon += f" <br><small>*by less than the spread of its passes ({100 * c.spread:.1f}%)*</small>"
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
