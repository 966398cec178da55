"""(f) Plots across the site: one colour per provider on every plot, never two providers of one
plot in the same colour or in two colours hard to tell apart, every colour readable on the light
and the dark page, the legend below the axes (site tier: runs on the committed results)."""

from __future__ import annotations

import re

import pytest

from scripts import plots, results

from .harness import DESKTOP, NARROW, contrast, linear_rgb, page_overflow, rgba


def test_no_two_providers_of_a_plot_share_a_colour():
    data = results.load()
    others = plots.site_providers(data)
    for bench in sorted({r["bench"] for r in data.rows}):
        providers = sorted({r["provider"] for r in data.rows if r["bench"] == bench})
        colours = [plots.provider_color(p, others) for p in providers]
        assert len(set(colours)) == len(colours), f"{bench}: {dict(zip(providers, colours, strict=True))}"


def _lab(hex_colour: str) -> tuple[float, float, float]:
    r, g, b = linear_rgb(rgba(hex_colour)[:3])
    x, y, z = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
               (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def _distance(a: str, b: str) -> float:
    return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b), strict=True)) ** 0.5


def test_every_colour_reads_on_the_light_and_the_dark_page():
    # WCAG's 3:1 for graphics (lines, markers) against both of Material's backgrounds
    for colour in [plots.INK, *plots.PALETTE.values(), *plots.FALLBACK]:
        for scheme, background in plots.BACKGROUNDS.items():
            assert contrast(colour, background) >= 3.0, (colour, scheme, round(contrast(colour, background), 2))


def test_providers_of_a_plot_have_colours_far_apart():
    # CIE76 distance >= 25 for every pair of one plot, and >= 35 on plots of up to six providers,
    # where the palette allows it (triton-tma's pink beside cuBLAS's red on the matmul plots,
    # 32 apart, was reported as hard to tell; the busiest plot, tile_compute's nine providers,
    # cannot keep every pair that far apart in the band of colours that read on both backgrounds)
    data = results.load()
    others = plots.site_providers(data)
    for bench in sorted({r["bench"] for r in data.rows}):
        providers = sorted({r["provider"] for r in data.rows if r["bench"] == bench})
        colours = {p: plots.provider_color(p, others) for p in providers}
        least = 35 if len(providers) <= 6 else 25
        for i, p in enumerate(providers):
            for q in providers[i + 1:]:
                d = _distance(colours[p], colours[q])
                assert d >= least, f"{bench}: {p} {colours[p]} and {q} {colours[q]} are {d:.1f} apart"


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
    data = results.load()
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


@pytest.mark.browser
def test_plots_keep_a_readable_size_on_a_phone(base_url, page, site_dir):
    """At 360 px a plot keeps 600 px (its legend and caption stay legible) inside a paragraph that
    scrolls sideways, and the page itself does not get wider than the screen."""
    page.set_viewport_size(NARROW)
    page.goto(base_url + "kernels/matmul/", wait_until="load")
    plots_shown = page.evaluate("""[...document.querySelectorAll('img[src*="assets/plots/"]')].map(img => ({
        width: img.getBoundingClientRect().width,
        scrolls: img.parentElement.scrollWidth > img.parentElement.clientWidth,
        overflow: getComputedStyle(img.parentElement).overflowX,
        hint: getComputedStyle(img.parentElement, '::after').content}))""")
    assert plots_shown, "no plot on the matmul page"
    for shown in plots_shown:
        assert shown["width"] >= 590 and shown["scrolls"] and shown["overflow"] == "auto", shown
        assert "swipe for the whole plot" in shown["hint"], shown  # the reader learns it scrolls
    assert page_overflow(page) <= NARROW["width"] + 1
    page.set_viewport_size(DESKTOP)
    page.reload(wait_until="load")
    widths = page.evaluate("""[...document.querySelectorAll('img[src*="assets/plots/"]')].map(
        img => img.getBoundingClientRect().width <= img.parentElement.clientWidth + 1)""")
    assert all(widths), "on a desktop a plot fits its column"
    hints = page.evaluate("""[...document.querySelectorAll('img[src*="assets/plots/"]')].map(
        img => getComputedStyle(img.parentElement, '::after').content)""")
    assert all(h in ("none", "normal", "") for h in hints), hints  # no hint where nothing scrolls


def test_a_graph_only_plot_keeps_one_series_per_provider_and_a_caption_without_styles():
    rows = [{"provider": p, "timing": t, "x": "1", "value": 1.0} for p in ("a", "b")
            for t in ("do_bench", "cudagraph")] + [{"provider": "c", "timing": "do_bench", "x": "1", "value": 1.0}]
    both = plots.plot_series(rows, {"cudagraph": True})
    only = plots.plot_series(rows, {"cudagraph": "only"})
    assert set(both) == {("a", "do_bench"), ("a", "cudagraph"), ("b", "do_bench"), ("b", "cudagraph"),
                         ("c", "do_bench")}
    assert set(only) == {("a", "cudagraph"), ("b", "cudagraph"), ("c", "do_bench")}  # c has no graph rows
    meta = {"gpu": "G", "sm_count": 1, "torch": "t", "triton": "x", "date": "2026-12-03", "passes": 3}
    text = plots.caption(meta, {"cudagraph"})
    assert "do_bench_cudagraph" in text and "solid" not in text and "dashed" not in text


def test_the_batched_matmul_plot_is_graph_only():
    data = results.load()
    spec = data.specs["tile_compute_bmm_fp32"]
    series = plots.plot_series([r for r in data.rows if r["bench"] == "tile_compute_bmm_fp32"], spec)
    assert {t for _, t in series} == {"cudagraph"}
    assert len(series) == len({r["provider"] for r in data.rows if r["bench"] == "tile_compute_bmm_fp32"})
