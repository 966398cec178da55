"""Draw one SVG per benchmark from the committed result files.

Called by the MkDocs hook on every build (``mkdocs build`` and ``mkdocs serve``);
also runnable by hand: ``python scripts/plots.py OUT_DIR``. The output is
byte-identical when the data did not change (fixed hash salt, no dates in the SVG).
"""

from __future__ import annotations

import io
import sys
from collections import defaultdict
from pathlib import Path

import results

# Mid-tone colours that read on Material's white and slate backgrounds alike.
INK = "#8a8a99"
PALETTE = {
    "triton": "#7c4dff",
    "torch": "#ef6c00",
    "torch.compile": "#00897b",
    "cublas": "#e53935",
}
FALLBACK = ["#1e88e5", "#c0ca33", "#8d6e63", "#d81b60", "#43a047", "#fdd835"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def provider_color(provider: str, i: int) -> str:
    return PALETTE.get(provider, FALLBACK[i % len(FALLBACK)])


def caption(meta: dict) -> str:
    return (
        f"{meta['gpu']} ({meta['sm_count']} SMs), torch {meta['torch']}, triton {meta['triton']}, "
        f"{meta['date'][:10]}; {meta['method']}"
    )


def draw(data: results.Results, bench: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in data.rows if r["bench"] == bench]
    spec = data.specs.get(bench, {})
    meta = data.meta[rows[0]["example"]]
    metric = rows[0]["metric"]
    labels = list(dict.fromkeys(r["x"] for r in rows))  # in measurement order
    numeric = all(_is_number(x) for x in labels)
    position = {x: (float(x) if numeric else i) for i, x in enumerate(labels)}
    series: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        series[(r["provider"], r["timing"])].append((position[r["x"]], r["value"]))

    plt.rcParams.update({
        "svg.hashsalt": "triton-in-tiles",
        "svg.fonttype": "none",
        "font.family": "sans-serif",
        "font.size": 10,
        "text.color": INK, "axes.labelcolor": INK, "axes.edgecolor": INK,
        "xtick.color": INK, "ytick.color": INK,
    })
    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    fig.patch.set_alpha(0.0)
    ax.set_facecolor("none")
    providers = sorted({p for p, _ in series}, key=lambda p: (p != "triton" and not p.startswith("triton"), p))
    for i, provider in enumerate(providers):
        for timing, style in (("do_bench", "-"), ("cudagraph", "--")):
            pts = sorted(series.get((provider, timing), []))
            if not pts:
                continue
            label = provider if timing == "do_bench" else f"{provider} (CUDA graph)"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3.5,
                    color=provider_color(provider, i), label=label, linewidth=1.6)
    if spec.get("ceiling"):
        name, value = data.ceiling(bench)
        ax.axhline(value, color=INK, linestyle=":", linewidth=1.2,
                   label=f"measured ceiling ({'copy' if name == 'copy' else 'cuBLAS ' + name} 8192³)"
                   if name != "copy" else "measured ceiling (device copy)")
    xs = sorted(position.values())
    if not numeric:
        ax.set_xticks(xs, labels, fontsize=8)
        ax.set_xlim(xs[0] - 0.5, xs[-1] + 0.5)
    elif len(xs) > 2 and xs[-1] / max(xs[0], 1.0) > 16:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(rows[0]["x_name"])
    ax.set_ylabel(metric)
    ax.set_ylim(bottom=0)
    ax.grid(True, color=INK, alpha=0.25, linewidth=0.6)
    ax.set_title(spec.get("title", bench), color=INK)
    ax.legend(fontsize=8, frameon=False, loc="best")
    fig.text(0.01, 0.01, caption(meta), fontsize=6.5, color=INK)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return buf.getvalue()


def draw_all(results_dir: Path, out_dir: Path, write=None) -> list[Path]:
    """Draw every bench found under ``results_dir``; return the SVG paths."""
    data = results.load(results_dir)
    out_dir = Path(out_dir)
    paths = []
    for bench in sorted({r["bench"] for r in data.rows}):
        path = out_dir / f"{bench}.svg"
        svg = draw(data, bench)
        if write is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(svg)
        else:
            write(path, svg)
        paths.append(path)
    if out_dir.is_dir():  # drop plots whose data is gone
        for old in out_dir.glob("*.svg"):
            if old not in paths:
                old.unlink()
    return paths


if __name__ == "__main__":
    for p in draw_all(results.RESULTS_DIR, Path(sys.argv[1] if len(sys.argv) > 1 else "plots")):
        print(p)
