"""(d) How the Benchmarks page judges its speed targets (declared in benchmarks/presentation.yml, judged by
scripts/targets.py), on made-up rows.

A target compares kernel time with kernel time: where a do_bench point involved is host-bound,
the CUDA-graph times decide, and the table says so; a margin smaller than the passes' spread is
flagged as such instead of reading as a clear win or loss.
"""

from __future__ import annotations

from scripts import results, targets

from .harness import SITE


def _row(bench, x, provider, timing, ms, *, host_bound=False, spread=0.01):
    work = 2.0 * 1e9
    return {"example": "ex", "bench": bench, "x_name": "S", "x": str(x), "provider": provider, "timing": timing,
            "metric": "TFLOP/s", "value": work / (ms * 1e-3) / 1e12, "ms_p50": ms, "ms_p20": ms, "ms_p80": ms,
            "work": work, "host_bound": host_bound if timing == "do_bench" else False, "spread": spread}


def _specs():
    """The targets of presentation.yml, with each bench's sizes and providers from the committed
    rows (the matmul ones are judged below, on made-up rows)."""
    return results.load().specs


def _data(rows):
    return results.Results(rows=rows, meta={"ex": {}}, specs=_specs())


def test_a_host_bound_point_is_judged_in_the_cuda_graph():
    # do_bench: launch cost makes ours look as fast as cuBLAS; in the graph ours is 0.5x.
    rows = [_row("matmul_fp16", 2048, "cublas", "do_bench", 0.030, host_bound=True),
            _row("matmul_fp16", 2048, "cublas", "cudagraph", 0.010),
            _row("matmul_fp16", 2048, "triton", "do_bench", 0.030, host_bound=True),
            _row("matmul_fp16", 2048, "triton", "cudagraph", 0.020)]
    data = _data(rows)
    assert targets.judged_timing(data, "matmul_fp16", 2048, ["triton", "cublas"]) == "cudagraph"
    check = next(c for c in targets.evaluate(data) if c.target == "matmul fp16 ≥ 1.0× cuBLAS" and c.point == "2048³")
    assert abs(check.measured - 0.5) < 1e-9 and check.status == "missed"
    assert "CUDA graph: do_bench is host-bound" in check.detail


def test_a_point_that_is_not_host_bound_is_judged_with_do_bench():
    rows = [_row("matmul_fp16", 4096, "cublas", "do_bench", 0.200),
            _row("matmul_fp16", 4096, "cublas", "cudagraph", 0.100),
            _row("matmul_fp16", 4096, "triton", "do_bench", 0.250),
            _row("matmul_fp16", 4096, "triton", "cudagraph", 0.100)]
    check = next(c for c in targets.evaluate(_data(rows)) if c.point == "4096³" and "fp16" in c.target)
    assert abs(check.measured - 0.8) < 1e-9 and "CUDA graph" not in check.detail


def test_a_margin_inside_the_spread_is_flagged_and_a_clear_one_is_not():
    tight = targets.Check("t", "p", 0.99, 1.0, "x", spread=0.02)
    clear = targets.Check("t", "p", 0.90, 1.0, "x", spread=0.02)
    unknown = targets.Check("t", "p", 0.99, 1.0, "x")
    assert tight.within_spread and tight.status == "missed"
    assert not clear.within_spread and not unknown.within_spread
    rows = [_row("matmul_fp16", 8192, "cublas", "do_bench", 1.00, spread=0.03),
            _row("matmul_fp16", 8192, "triton", "do_bench", 1.01, spread=0.03)]
    table = targets.markdown_table(_data(rows))
    line = next(line for line in table.splitlines() if "8192³" in line and "fp16" in line)
    assert "by less than the spread of its passes (6.0%)" in line


def test_the_benchmarks_page_shows_the_judged_table():
    html = (SITE / "benchmarks" / "index.html").read_text()
    data = results.load(specs=_specs())
    checks = targets.evaluate(data)
    for c in checks:
        if "CUDA graph: do_bench is host-bound" in c.detail:
            assert "CUDA graph: do_bench is host-bound" in html
            break
    flagged = sum(1 for c in checks if c.within_spread)
    assert html.count("by less than the spread of its passes") == flagged
