"""(f) Plots across the site: one colour per provider on every plot, never two providers of one
plot in the same colour, the legend below the axes (site tier: runs on the committed results)."""

from __future__ import annotations

import re

from scripts import plots, results

from .harness import ROOT


def test_no_two_providers_of_a_plot_share_a_colour():
    data = results.load()
    others = plots.site_providers(data)
    for bench in sorted({r["bench"] for r in data.rows}):
        providers = sorted({r["provider"] for r in data.rows if r["bench"] == bench})
        colours = [plots.provider_color(p, others) for p in providers]
        assert len(set(colours)) == len(colours), f"{bench}: {dict(zip(providers, colours, strict=True))}"


def test_a_provider_keeps_its_colour_whatever_the_plot():
    data = results.load()
    others = plots.site_providers(data)
    assert plots.provider_color("triton", others) == plots.PALETTE["triton"]
    shown = {}
    for bench in sorted({r["bench"] for r in data.rows}):
        svg = plots.draw(data, bench).decode() if bench in ("matmul_fp16", "matmul_bf16") else ""
        for provider in ("triton-tma", "triton-grouped"):
            if svg:
                colour = plots.provider_color(provider, others)
                assert colour in svg
                shown.setdefault(provider, set()).add(colour)
    assert all(len(c) == 1 for c in shown.values())


def test_the_legend_sits_below_the_axes():
    data = results.load(specs=results.example_specs(ROOT / "examples", cache_dir=ROOT / ".cache" / "site" / "specs"))
    svg = plots.draw(data, "softmax_fp32").decode()
    # matplotlib writes each text with its position (svg.fonttype none): y grows downwards
    def y_of(label: str) -> float:
        m = re.search(r'<text [^>]*y="([\d.]+)"[^>]*>' + re.escape(label) + "</text>", svg)
        assert m, label
        return float(m.group(1))

    assert y_of("torch.compile") > y_of("N")  # the legend entry lies below the x axis label


def test_every_plot_on_a_page_has_its_numbers_and_csv():
    from .harness import SITE

    data = results.load()
    for rel in ("kernels/softmax", "kernels/matmul", "guide/masks", "benchmarks"):
        html = (SITE / rel / "index.html").read_text()
        shown = re.findall(r'<img alt="[^"]*" src="[^"]*assets/plots/([\w.-]+)\.svg"', html)
        assert shown, rel
        blocks = html.count("The numbers behind this plot")
        assert blocks == len(shown), f"{rel}: {len(shown)} plots, {blocks} tables"
        for bench in set(shown):
            example = data.example_of(bench)
            assert f"assets/data/results/{results.GPU_DIR}/{example}.csv" in html, (rel, bench)
            assert (SITE / "assets" / "data" / "results" / results.GPU_DIR / f"{example}.csv").exists()
