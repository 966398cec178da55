"""Draw one SVG per benchmark from the committed result files.

Called by the MkDocs hook on every build (``mkdocs build`` and ``mkdocs serve``);
also runnable by hand: ``python -m scripts.plots OUT_DIR``. The output is
byte-identical when the data did not change (fixed hash salt, no dates in the SVG).
"""

from __future__ import annotations

import io
import re
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

from scripts import results

# Mid-tone colours that read on Material's white and slate backgrounds alike.
INK = "#8a8a99"
PALETTE = {
    "triton": "#7c4dff",
    "torch": "#ef6c00",
    "torch.compile": "#00897b",
    "cublas": "#e53935",
}
TIMING_NAMES = {"cudagraph": "CUDA graph", "host_wall": "host wall clock", "cuda_events": "CUDA events"}
# Every other provider gets one of these (``site_providers``), the same on every plot and never
# the colour of another provider on a plot it shares (the site-tier tests check both). Each has a
# contrast of at least 3:1 against Material's white and slate backgrounds; in this order, each is
# the one farthest (CIE76) from the fixed colours and the ones before it, so the providers of a
# plot with few of them get the most distinct colours.
FALLBACK = ["#2196f3", "#827717", "#a1887f", "#43a047", "#ab47bc", "#d81b60", "#c68400", "#607d8b",
            "#5c6bc0", "#0097a7"]
BACKGROUNDS = {"default": "#ffffff", "slate": "#1e2129"}  # Material's page backgrounds (light, dark)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def site_providers(data: results.Results) -> dict[str, str]:
    """Every provider without a fixed colour, over every result file, mapped to its colour.

    A provider keeps one colour on every plot, and no two providers of one plot share one:
    providers are coloured one by one in a stable (sorted) order, each with the first
    ``FALLBACK`` colour that no provider already coloured shares a plot with. With more
    neighbours than colours a provider falls back to ``INK`` (the site-tier tests fail then).
    """
    benches: dict[str, set[str]] = {}
    for r in data.rows:
        benches.setdefault(r["bench"], set()).add(r["provider"])
    colours: dict[str, str] = {}
    for provider in sorted({r["provider"] for r in data.rows} - set(PALETTE)):
        taken = {colours.get(q) for members in benches.values() if provider in members for q in members}
        colours[provider] = next((c for c in FALLBACK if c not in taken), INK)
    return colours


def provider_color(provider: str, others: dict[str, str]) -> str:
    """A provider's colour on every plot: fixed for the main ones, else from ``site_providers``."""
    if provider in PALETTE:
        return PALETTE[provider]
    return others.get(provider, INK)


def caption(meta: dict, timings=()) -> str:
    """Two or three short lines under the plot: the run, and how its points (drawn with these
    timings) were timed."""
    run = (f"{meta['gpu']} ({meta['sm_count']} SMs), torch {meta['torch']}, triton {meta['triton']}, "
           f"{meta['date'][:10]}")
    timings = set(timings)
    graph_shown = "cudagraph" in timings
    if "passes" in meta and timings - {"do_bench", "cudagraph"}:
        names = ", ".join(TIMING_NAMES.get(t, t) for t in sorted(timings))
        how = f"median of {meta['passes']} passes; clocks: {names}"
    elif "passes" in meta and timings == {"cudagraph"}:
        how = (f"median of {meta['passes']} interleaved passes of do_bench_cudagraph (CUDA-graph replay, no "
               "host cost); the do_bench times are in the result file")
    elif "passes" in meta:
        how = (f"median of {meta['passes']} interleaved passes; solid: triton.testing.do_bench (L2 flushed)"
               + ("; dashed: do_bench_cudagraph (CUDA-graph replay, no host cost)" if graph_shown else ""))
    else:
        how = f"one pass (a result file older than the spread and host-bound columns): {meta['method']}"
    return "\n".join([run] + textwrap.wrap(how, 110))


def plot_series(rows: list[dict], spec: dict) -> dict[tuple[str, str], list[dict]]:
    """(provider, timing) -> its rows. A provider's CUDA-graph partner of its do_bench series is
    drawn only where the bench's spec asks for it (``"cudagraph": True``); with ``"cudagraph":
    "only"`` it replaces the do_bench series (a plot with many providers stays readable)."""
    series: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        series[(r["provider"], r["timing"])].append(r)
    mode = spec.get("cudagraph")
    if mode and mode != "only":  # both timings drawn
        return series
    dropped, partner = ("do_bench", "cudagraph") if mode == "only" else ("cudagraph", "do_bench")
    for provider, timing in list(series):
        if timing == dropped and (provider, partner) in series:
            del series[(provider, timing)]
    return series


def legend_series(series: dict[tuple[str, str], list[dict]]) -> list[tuple[str, str, str]]:
    """(provider, timing, label) of each series, in legend order: Triton providers first, each
    provider's do_bench series before its others; a provider drawn once is named alone."""
    providers = sorted({p for p, _ in series}, key=lambda p: (not p.startswith("triton"), p))
    out = []
    for provider in providers:
        timings = sorted({t for p, t in series if p == provider}, key=lambda t: (t != "do_bench", t))
        for timing in timings:
            alone = len(timings) == 1 or timing == "do_bench"
            out.append((provider, timing, provider if alone else f"{provider} ({TIMING_NAMES.get(timing, timing)})"))
    return out


def draw(data: results.Results, bench: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = [r for r in data.rows if r["bench"] == bench]
    spec = data.specs.get(bench, {})
    meta = data.meta[rows[0]["example"]]
    metric = spec.get("metric") or rows[0]["metric"]
    labels = list(dict.fromkeys(r["x"] for r in rows))  # in measurement order
    numeric = all(_is_number(x) for x in labels)
    position = {x: (float(x) if numeric else i) for i, x in enumerate(labels)}
    series = plot_series(rows, spec)

    plt.rcParams.update({
        "svg.hashsalt": "triton-in-tiles",
        "svg.fonttype": "none",
        "font.family": "sans-serif",
        "font.size": 10,
        "text.color": INK, "axes.labelcolor": INK, "axes.edgecolor": INK,
        "xtick.color": INK, "ytick.color": INK,
    })
    others = site_providers(data)
    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    fig.patch.set_alpha(0.0)
    ax.set_facecolor("none")
    styles = {"do_bench": "-", "cudagraph": "--"}
    drawn = legend_series(series)
    any_host_bound = any_spread = False
    for provider, timing, label in drawn:
        color = provider_color(provider, others)
        pts = sorted(series[(provider, timing)], key=lambda r: position[r["x"]])
        xs = [position[r["x"]] for r in pts]
        ys = [r["value"] for r in pts]
        one = sum(1 for p, _, _ in drawn if p == provider) == 1  # one series: the name says it all
        style = "-" if one else styles.get(timing, "-.")
        ax.plot(xs, ys, style, color=color, label=label, linewidth=1.6)
        host_bound = [r.get("host_bound") is True for r in pts]
        any_host_bound |= any(host_bound)
        for hollow in (False, True):
            pick = [(x, y) for x, y, h in zip(xs, ys, host_bound, strict=True) if h == hollow]
            if pick:
                ax.plot([p[0] for p in pick], [p[1] for p in pick], marker="o", markersize=4.5 if hollow else 3.5,
                        color=color, markerfacecolor="none" if hollow else color, markeredgewidth=1.2,
                        linestyle="none")
        wide = [(x, y) for x, y, r in zip(xs, ys, pts, strict=True)
                if (r.get("spread") or 0.0) > results.SPREAD_FLAG]
        if wide:
            any_spread = True
            ax.plot([p[0] for p in wide], [p[1] for p in wide], marker="x", markersize=8, color=INK,
                    markeredgewidth=1.4, linestyle="none")
    handles, names = ax.get_legend_handles_labels()
    if spec.get("ceiling"):
        name, value = data.ceiling(bench)
        handles.append(ax.axhline(value, color=INK, linestyle=":", linewidth=1.2))
        names.append(f"measured ceiling (cuBLAS {name} 8192³)" if name != "copy" else "measured ceiling (device copy)")
    if any_host_bound:
        handles.append(Line2D([], [], marker="o", markerfacecolor="none", color=INK, linestyle="none"))
        names.append(f"hollow: host-bound (do_bench > {results.HOST_BOUND_RATIO:.2f}× graph time)")
    if any_spread:
        handles.append(Line2D([], [], marker="x", color=INK, linestyle="none", markeredgewidth=1.4))
        names.append(f"×: spread over passes > {100 * results.SPREAD_FLAG:.0f}%")
    xs = sorted(position.values())
    if not numeric:
        ax.set_xticks(xs, labels, fontsize=8)
        ax.set_xlim(xs[0] - 0.5, xs[-1] + 0.5)
    elif len(xs) > 2 and xs[-1] / max(xs[0], 1.0) > 16:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(spec.get("x_name") or rows[0]["x_name"])
    ax.set_ylabel(metric)
    ax.set_ylim(bottom=0)
    ax.grid(True, color=INK, alpha=0.25, linewidth=0.6)
    ax.set_title(spec.get("title", bench), color=INK)
    # Below the axes, never over the data: the legend in two columns, then the caption.
    text = caption(meta, {t for _, t in series})
    legend_rows = (len(names) + 1) // 2
    fig.set_size_inches(7.2, 4.0 + 0.2 * legend_rows + 0.12 * (text.count("\n") + 1))
    height = fig.get_size_inches()[1]
    caption_h = (0.12 * (text.count("\n") + 1) + 0.08) / height
    legend_h = (0.2 * legend_rows + 0.1) / height
    fig.text(0.01, 0.02 / height, text, fontsize=7.5, color=INK)
    fig.legend(handles, names, fontsize=8.5, frameon=False, loc="lower left", ncol=2,
               bbox_to_anchor=(0.01, caption_h), borderaxespad=0.0)
    _fit_axes(fig, ax, bottom=caption_h + legend_h, x_tick_size=10.0 if numeric else 8.0)
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return buf.getvalue()


def _fit_axes(fig, ax, bottom: float, x_tick_size: float) -> None:
    """Place the axes so that their tick labels, axis labels and title fit the figure above
    `bottom` (a fraction of its height), from the labels' lengths: what `fig.tight_layout` finds
    by laying out every text once more, which cost 45% of drawing a plot (measured: 12 plots in
    3.8 s of CPU with it, 2.1 s without). Widths are estimated at 0.62 em per character (DejaVu
    Sans digits are 0.64 em), with a margin for the rest."""
    w, h = fig.get_size_inches()
    pt = 1 / 72  # inches

    def labels(axis):
        lo, hi = sorted(axis.get_view_interval())
        locs = [v for v in axis.get_majorticklocs() if lo - 1e-9 * (hi - lo) <= v <= hi + 1e-9 * (hi - lo)]
        return axis.get_major_formatter().format_ticks(locs)

    def widest(texts, size):  # in inches; mathtext markup does not print
        return max((len(re.sub(r"\\mathdefault|[${}^]", "", t)) for t in texts), default=0) * 0.62 * size * pt

    tick_size, label_size, title_size = 10.0, 10.0, 12.0
    tick_space = (3.5 + 3.5) * pt  # tick length and pad
    raised = 1.5 if ax.get_xscale() == "log" else 1.2  # 2^k labels: the exponent makes them taller
    left = widest(labels(ax.yaxis), tick_size) + tick_space + (label_size * 1.2 + 4.0) * pt + 0.08
    below = x_tick_size * raised * pt + tick_space + (label_size * 1.2 + 4.0) * pt + 0.06
    above = (title_size * 1.2 + 6.0) * pt + 0.08
    right = max(0.15, widest(labels(ax.xaxis)[-1:], x_tick_size) / 2 + 0.05)
    fig.subplots_adjust(left=left / w, right=1 - right / w, top=1 - above / h, bottom=bottom + below / h)


def shared_plot_inputs(data: results.Results) -> dict:
    """What every plot is drawn from besides its own rows: the drawing code, the site's colours
    and matplotlib's version."""
    import importlib.metadata

    return {"code": [results.sha256_of(Path(__file__)), results.sha256_of(Path(results.__file__))],
            "colours": site_providers(data), "matplotlib": importlib.metadata.version("matplotlib")}


def plot_key(data: results.Results, bench: str, shared: dict | None = None, rows: list | None = None) -> str:
    """A hash of everything one plot is drawn from: its rows, its spec, its run's metadata, the
    drawing code, the colours and matplotlib's version (``shared``, ``rows``: already computed)."""
    import hashlib
    import json

    rows = [r for r in data.rows if r["bench"] == bench] if rows is None else rows
    inputs = {"rows": rows, "spec": data.specs.get(bench), "meta": data.meta.get(rows[0]["example"]) if rows else None,
              **(shared_plot_inputs(data) if shared is None else shared)}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def draw_all(results_dir: Path, out_dir: Path, write=None, data: results.Results | None = None,
             keyed: bool = False) -> list[Path]:
    """Draw every bench found under ``results_dir`` (or in ``data``, already loaded); return the SVG paths.
    keyed: redraw a plot only when its inputs changed (``plot_key``, kept beside it as <bench>.key)."""
    data = results.load(results_dir) if data is None else data
    out_dir = Path(out_dir)
    paths = []
    shared = shared_plot_inputs(data) if keyed else None
    by_bench: dict[str, list] = defaultdict(list)
    for r in data.rows:
        by_bench[r["bench"]].append(r)
    for bench in sorted(by_bench):
        path = out_dir / f"{bench}.svg"
        if keyed:
            key, key_path = plot_key(data, bench, shared, by_bench[bench]), path.with_suffix(".key")
            if path.exists() and key_path.exists() and key_path.read_text() == key:
                paths.append(path)
                continue
            key_path.unlink(missing_ok=True)  # written after the plot: a crash in between redraws it
        svg = draw(data, bench)
        if write is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(svg)
        else:
            write(path, svg)
        if keyed:
            key_path.write_text(key)
        paths.append(path)
    if out_dir.is_dir():  # drop plots whose data is gone
        for old in [*out_dir.glob("*.svg"), *out_dir.glob("*.key")]:
            if old.with_suffix(".svg") not in paths:
                old.unlink()
    return paths


if __name__ == "__main__":
    for p in draw_all(results.RESULTS_DIR, Path(sys.argv[1] if len(sys.argv) > 1 else "plots")):
        print(p)
