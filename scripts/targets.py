"""The speed targets of the site, judged from the committed result files.

A target lives beside the title of the bench it judges: an entry of ``benchmarks/presentation.yml``
may hold ``targets``, a list of mappings (``TARGET_KEYS`` below). ``evaluate`` checks each at each of its
points against numbers measured in the same run (a kernel against the ceiling or the peers
measured beside it) and returns one row per checked point; a point with no data is reported as
"not measured", never as met. Titles and targets are not measured code: editing a target needs
no GPU run.

One target, in the entry of ``softmax_fp32``::

    targets:
    - kind: peers
      label: softmax fp32 ≥ faster of torch, torch.compile
      min: 1.0
      peers: [torch, torch.compile]
      at: [512, 781, 1024]

Rows come in the order of the examples (the site's reading order where the caller gives it, else
by name), of the specs in each example and, within a spec, of the benches its targets judge (in
the order the targets first name them); for one bench (or pool), x by x in its ``x_vals`` order,
and at one x the targets in the order they are listed. So a spec listing a copy target and a peer
target over the same sizes gets the two rows of each size together.
"""

from __future__ import annotations

from dataclasses import dataclass

from scripts import results

KINDS = ("ceiling", "peers", "best_of")
# key -> (the kinds that take it, what it means). Keys every kind needs: kind, label, min.
TARGET_KEYS = {
    "kind": (KINDS, '"ceiling": the provider\'s metric / the bench\'s ceiling measured in the same run '
                    '(unit "% of ceiling"); "peers": the provider\'s metric / the fastest of `peers` at the same '
                    'point ("x"); "best_of": the best of our providers (names starting with "triton") in each '
                    'of `benches`, over `peer` in its own bench ("x"; the row names the winner)'),
    "label": (KINDS, "the target in words, as the table shows it"),
    "min": (KINDS, "the threshold: a fraction of the ceiling (0.95) or a ratio (1.0)"),
    "at": (KINDS, "the x values judged (default: every x of the bench judged); each must be one of the x_vals "
                  "of every bench judged"),
    "point": (KINDS, 'how a point reads: str.format with {x}, {x_name}, {x_log2} (default "{x_name} = {x}")'),
    "timing": (KINDS, '"do_bench" or "cudagraph"; default: do_bench for "ceiling"; for "peers" and "best_of" '
                      "do_bench, or the CUDA graph where one of the do_bench points compared is host-bound "
                      "(judged_timing; the row says so)"),
    "bench": (("ceiling", "peers"), "the bench judged (default: the spec's own)"),
    "benches": (("best_of",), "the benches pooled (default: the spec's own); they may live in other examples"),
    "provider": (("ceiling", "peers"), 'our provider (default "triton")'),
    "peers": (("peers",), "the providers to beat: the fastest of them at each point counts"),
    "peer": (("best_of",), "the provider each bench's triton providers are divided by"),
    "pending": (("ceiling", "peers"), "why `bench` names a bench no case measures yet: its rows stay in the "
                                      "table as not measured (an error once the bench exists)"),
    "kernel_alone": (("ceiling", "peers"), "true: the row also gives the same figure with CUDA-graph timing "
                                           "(the kernel alone), unless it has a note already"),
    "detail": (KINDS, "a fixed note under the measured value, where no other note applies"),
}
TIMINGS = ("do_bench", "cudagraph")
DEFAULT_POINT = "{x_name} = {x}"


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


# --- the targets the specs declare ------------------------------------------------------------------

class TargetError(results.ResultError):
    """A target that cannot be judged as written (the message names the example and the bench)."""


@dataclass(frozen=True)
class Target:
    example: str
    spec: str  # the spec that declares it
    kind: str
    label: str
    min: float
    xs: tuple  # the points judged, in the order of the judged bench's x_vals
    point: str  # str.format template of a point
    x_name: str
    benches: tuple[str, ...]  # the bench judged ("ceiling", "peers") or pooled ("best_of")
    timing: str | None = None
    provider: str = "triton"
    peers: tuple[str, ...] = ()
    kernel_alone: bool = False
    detail: str = ""

    @property
    def unit(self) -> str:
        return "% of ceiling" if self.kind == "ceiling" else "x"

    def point_of(self, x) -> str:
        log2 = x.bit_length() - 1 if isinstance(x, int) and x > 0 and x & (x - 1) == 0 else None
        if log2 is None and "x_log2" in self.point:
            raise ValueError(f"x_log2 of {x!r}, which is not a power of two")
        return self.point.format(x=x, x_name=self.x_name, x_log2=log2)


def _declared_benches(specs: dict[str, dict]) -> dict[str, dict]:
    """bench -> spec, for the benches measured (their x_vals come from the result rows)."""
    return {name: spec for name, spec in specs.items() if spec.get("x_vals") is not None}


def _target(spec_name: str, spec: dict, index: int, raw, benches: dict[str, dict]) -> Target:
    """One validated target of one spec; a TargetError naming the example and the bench otherwise."""
    where = f"presentation.yml, {spec.get('example', '?')}.{spec_name}: target {index + 1}"
    if not isinstance(raw, dict):
        raise TargetError(f"{where}: expected a dict, got {type(raw).__name__}")
    label = raw.get("label")
    where += f" ({label!r})" if label else ""
    kind = raw.get("kind")
    if kind not in KINDS:
        raise TargetError(f"{where}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    unknown = [k for k in raw if k not in TARGET_KEYS or kind not in TARGET_KEYS[k][0]]
    if unknown:
        raise TargetError(f"{where}: a {kind!r} target takes no {', '.join(map(repr, unknown))}")
    if not isinstance(label, str) or not label:
        raise TargetError(f"{where}: needs a 'label'")
    threshold = raw.get("min")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or threshold <= 0:
        raise TargetError(f"{where}: 'min' must be a positive number, got {threshold!r}")
    timing = raw.get("timing")
    if timing is not None and timing not in TIMINGS:
        raise TargetError(f"{where}: unknown timing {timing!r} (one of {', '.join(TIMINGS)})")
    judged = raw.get("benches") if kind == "best_of" else [raw["bench"]] if "bench" in raw else None
    judged = list(judged) if judged is not None else [spec_name]
    if not judged or not all(isinstance(b, str) for b in judged):
        raise TargetError(f"{where}: 'benches' must name at least one bench")
    provider = raw.get("provider", "triton")
    peers = raw.get("peers", [raw["peer"]] if "peer" in raw else [])
    if kind != "ceiling" and (not peers or not all(isinstance(p, str) for p in peers)):
        raise TargetError(f"{where}: needs {'peers' if kind == 'peers' else 'a peer'} to compare with")
    pending = raw.get("pending")
    if pending is not None:
        if not isinstance(pending, str) or not pending or "bench" not in raw:
            raise TargetError(f"{where}: 'pending' is the reason (a string) why 'bench' is not measured yet")
        if judged[0] in benches:
            raise TargetError(f"{where}: bench {judged[0]} exists now: drop 'pending' (or move the target to it)")
    else:
        for bench in judged:
            if bench not in benches:
                raise TargetError(f"{where}: unknown bench {bench!r} (nothing measures it; a bench still to "
                                  "be written is named with 'pending')")
            offered = benches[bench].get("providers") or []
            for name in ([provider] if kind != "best_of" else []) + list(peers):
                if name not in offered:
                    raise TargetError(f"{where}: bench {bench} has no provider {name!r} ({', '.join(offered)})")
    # the points: the judged bench's x_vals (a pending bench: the declaring spec's), in that order
    measured = [benches[b]["x_vals"] for b in judged] if pending is None else [spec.get("x_vals") or []]
    at = raw.get("at", measured[0])
    if not isinstance(at, list | tuple) or not at:
        raise TargetError(f"{where}: 'at' must list the x values judged")
    for x in at:
        for bench, xs in zip(judged, measured, strict=False):
            if str(x) not in {str(v) for v in xs}:
                raise TargetError(f"{where}: x {x!r} is not among the x_vals of {bench} {list(xs)}")
    wanted = {str(x) for x in at}
    xs = tuple(x for x in measured[0] if str(x) in wanted)
    x_name = (benches.get(judged[0]) or spec).get("x_name") or "x"
    template = raw.get("point", DEFAULT_POINT)
    out = Target(spec.get("example", "?"), spec_name, kind, label, float(threshold), xs, template, x_name,
                 tuple(judged), timing, provider, tuple(peers), bool(raw.get("kernel_alone")), raw.get("detail", ""))
    for x in xs:
        try:
            out.point_of(x)
        except (KeyError, IndexError, ValueError) as err:
            raise TargetError(f"{where}: 'point' {template!r}: {err} (fields: x, x_name, x_log2)") from None
    return out


def declared(specs: dict[str, dict], order: list[str] | None = None) -> list[tuple[Target, object]]:
    """Every (target, x) the specs declare, validated, in table order (see the module's docstring):
    ``order`` lists examples first to last (the others follow, by name)."""
    benches = _declared_benches(specs)
    rank = {name: i for i, name in enumerate(order or [])}
    owners = sorted((name for name, spec in specs.items() if spec.get("targets")),
                    key=lambda n: (rank.get(specs[n].get("example"), len(rank)), specs[n].get("example") or "",
                                   specs[n].get("position", 0), n))
    out = []
    for name in owners:
        spec = specs[name]
        if not isinstance(spec["targets"], list):
            raise TargetError(f"presentation.yml, {spec.get('example', '?')}.{name}: 'targets' must be a list")
        groups: dict[tuple, list[Target]] = {}
        for i, raw in enumerate(spec["targets"]):
            target = _target(name, spec, i, raw, benches)
            groups.setdefault(target.benches, []).append(target)
        for group in groups.values():
            xs = list(dict.fromkeys(x for t in group for x in t.xs))
            order_of = {str(x): i for i, x in enumerate(benches.get(group[0].benches[0], spec).get("x_vals") or [])}
            for x in sorted(xs, key=lambda x: order_of.get(str(x), len(order_of))):
                out += [(t, x) for t in group if x in t.xs]
    return out


def matching(specs: dict[str, dict], prefix: str = "", order: list[str] | None = None) -> list[tuple[Target, object]]:
    """The declared (target, x) whose name starts with ``prefix`` (one kernel's targets)."""
    return [(t, x) for t, x in declared(specs, order) if t.label.startswith(prefix)]


def _check(data: results.Results, t: Target, x) -> Check:
    bench = t.benches[0]
    if t.kind == "ceiling":
        timing = t.timing or "do_bench"
        row = _row(data, bench, x, t.provider, timing)
        detail = HOST_BOUND_NOTE if row is not None and row.get("host_bound") else ""
        if not detail and t.kernel_alone:  # the kernel alone, beside the judged figure
            kernel = _fraction_of_ceiling(data, bench, x, t.provider, "cudagraph")
            detail = f"kernel alone (CUDA graph): {100 * kernel:.1f}%" if kernel is not None else ""
        return Check(t.label, t.point_of(x), _fraction_of_ceiling(data, bench, x, t.provider, timing), t.min,
                     t.unit, detail or t.detail, _spread(data, [(bench, x, t.provider, timing)]))
    if t.kind == "peers":
        ratio, used, spread = _versus(data, bench, x, t.provider, list(t.peers), t.timing)
        detail = GRAPH_NOTE if t.timing is None and used == "cudagraph" else ""
        if not detail and t.kernel_alone:
            graph, _, _ = _versus(data, bench, x, t.provider, list(t.peers), "cudagraph")
            detail = f"kernel alone (CUDA graph): {graph:.3f}×" if graph is not None else ""
        return Check(t.label, t.point_of(x), ratio, t.min, t.unit, detail or t.detail, spread)
    ratio, who, spread = _best_ratio(data, t.benches, x, t.peers[0], t.timing)
    return Check(t.label, t.point_of(x), ratio, t.min, t.unit, who or t.detail, spread)


def evaluate(data: results.Results, order: list[str] | None = None) -> list[Check]:
    """One row per point of every target the specs in ``data`` declare (``declared``)."""
    return [_check(data, t, x) for t, x in declared(data.specs, order)]


def markdown_table(data: results.Results, prefix: str = "", order: list[str] | None = None) -> str:
    """The target table; `prefix` keeps the targets whose name starts with it (a kernel's page);
    ``order``: the examples in the order their targets are listed (the site's reading order)."""
    rows = ["| target | point | measured | status |", "| --- | --- | --- | --- |"]
    checks = [_check(data, t, x) for t, x in matching(data.specs, prefix, order)]
    if not checks:
        raise results.ResultError(f"no target starts with {prefix!r}" + (
            "" if declared(data.specs) else " (no bench declares a target: was benchmarks/presentation.yml read?)"))
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
    known = {r["provider"] for r in data.rows if r["bench"] == bench}
    unknown = [p for p in providers if p not in known]
    if xs and unknown:  # a typo would otherwise drop a provider from the table without a word
        raise results.ResultError(f"bench {bench} has no provider {', '.join(unknown)} "
                                  f"(it has {', '.join(sorted(known))})")
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
