import math

import pytest
import timing_methods as ex
import torch
from support import DEVICE, ODD_SIZES, requires_gpu

from benchmarks.cases import timing_methods as cases
from scripts.results import COLUMNS, presentation


@pytest.mark.parametrize("n", ODD_SIZES)
def test_saxpy_matches_torch(n):
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    torch.testing.assert_close(ex.saxpy(-1.5, x, y), ex.saxpy_torch(-1.5, x, y))


def _on_device(t):
    """t on DEVICE with its strides kept: on CUDA, .to() makes a strided view contiguous."""
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=DEVICE)
    return out.copy_(t)


@pytest.mark.parametrize(
    "args, err, words",
    [
        ((2.0, [1.0], torch.ones(1)), TypeError, "x must be a torch.Tensor"),
        ((2.0, torch.ones(4, dtype=torch.float64), torch.ones(4)), TypeError, "x must be float32"),
        ((2.0, torch.ones(8)[::2], torch.ones(4)), ValueError, "x must be 1-D and contiguous"),
        ((2.0, torch.ones(4), torch.ones(5)), ValueError, "must match in shape"),
        ((torch.tensor(2.0), torch.ones(4), torch.ones(4)), TypeError, "a must be a Python number"),
    ],
)
def test_bad_inputs(args, err, words):
    a, x, y = args
    x = _on_device(x) if isinstance(x, torch.Tensor) else x
    y = _on_device(y)
    if "contiguous" in words:
        assert not x.is_contiguous()  # the input under test really is strided on this device
    with pytest.raises(err, match=words):
        ex.saxpy(a, x, y)


@pytest.mark.parametrize("block_size", [0, 48, -4])
def test_bad_block_size(block_size):
    x = torch.ones(4, device=DEVICE)
    with pytest.raises(ValueError, match="block_size must be a positive power of two"):
        ex.saxpy(2.0, x, x, block_size=block_size)


def test_int32_offset_limit_is_refused():
    # Meta tensors: the checks run on the shape, nothing is allocated or launched.
    x = torch.empty(2**31, device="meta")
    with pytest.raises(ValueError, match=r"x has 2147483648 elements, more than 2\*\*31 - 1: .* int32 offsets"):
        ex.saxpy(2.0, x, x)


def test_saxpy_nan_inf_like_torch():
    n = 129
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    big = torch.finfo(torch.float32).max
    x[::5], x[1::5], x[2::5], x[3::5] = float("nan"), float("inf"), float("-inf"), big
    y[2::5], y[4::5] = float("inf"), -big  # -inf + inf = NaN; big + -big = finite
    got = ex.saxpy(0.5, x, y)
    torch.testing.assert_close(got, ex.saxpy_torch(0.5, x, y), equal_nan=True)
    assert got[::5].isnan().all() and got[2::5].isnan().all() and got[1::5].eq(float("inf")).all()


def test_units():
    assert ex.gbps(4e9, 1.0) == pytest.approx(4000.0)  # 4 GB in 1 ms
    assert ex.tflops(2 * 8192**3, 1.6) == pytest.approx(687.19, rel=1e-4)
    assert ex.saxpy_work(1000) == (2000.0, 12000.0)
    assert ex.arithmetic_intensity(*ex.saxpy_work(10**6)) == pytest.approx(1 / 6)


def test_roofline():
    peak_tflops, peak_gbps = 670.0, 4270.0
    ridge = ex.ridge_point(peak_tflops, peak_gbps)
    assert ridge == pytest.approx(156.9, rel=1e-3)  # flop/byte where the roofs meet
    assert ex.roofline_tflops(ridge / 2, peak_tflops, peak_gbps) == pytest.approx(peak_tflops / 2)
    assert ex.roofline_tflops(ridge * 10, peak_tflops, peak_gbps) == peak_tflops
    # saxpy sits far left of the ridge: bandwidth-bound at a fraction of a TFLOP/s
    assert ex.roofline_tflops(1 / 6, peak_tflops, peak_gbps) == pytest.approx(0.7117, rel=1e-3)


def test_measure_rows_format(monkeypatch):
    calls = []

    def fake_timer(fn):
        out = fn()  # the timer gets a callable that runs the kernel
        calls.append(out.numel())
        return [3.0, 1.0, 2.0, 5.0, 4.0]

    monkeypatch.setattr(ex, "TIMERS", {"perf_counter-sync": (fake_timer, False), "cuda-events": (fake_timer, True)})
    monkeypatch.setattr(ex, "SIZES", {"cpu": [17, 33], "cuda": [17, 33]})
    rows = cases.measure_rows(DEVICE)
    expected = ["perf_counter-sync"] + (["cuda-events"] if DEVICE.type == "cuda" else [])
    assert [r["provider"] for r in rows] == expected * 2
    assert calls == [n for n in (17, 33) for _ in expected]
    for row in rows:
        assert set(row) == set(COLUMNS) - {"example"}
        assert row["bench"] == "timing_methods"
        assert (row["x_name"], row["metric"], row["work"]) == ("n", "us", 0)
        assert row["timing"] == {"perf_counter-sync": "host_wall", "cuda-events": "cuda_events"}[row["provider"]]
        assert row["ms_p50"] == 3.0 and row["value"] == 3000.0
        assert row["ms_p20"] <= row["ms_p50"] <= row["ms_p80"]


def test_measure_rows_bench_is_presented():
    shown = presentation()
    assert "timing_methods" in shown and shown["timing_methods"].get("ceiling") is None
    assert {b["name"] for b in cases.BENCHMARKS}.isdisjoint({"timing_methods"})


def test_cpu_timers_return_positive_times():
    x = torch.randn(33, device=DEVICE)
    fn = lambda: ex.saxpy(2.0, x, x)
    for timer in (ex.time_perf_counter_no_sync, ex.time_perf_counter_sync):
        times = timer(fn, reps=3)
        assert len(times) == 3 and all(t > 0 for t in times)


def test_bench_case_tiny():
    for provider in cases.BENCHMARKS[0]["providers"]:
        case = cases.bench_case("saxpy_fp32", provider, 1025)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] == 12 * 1025


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 33))
    assert "formulas checked" in capsys.readouterr().out


@requires_gpu
def test_gpu_measure_rows_format():
    # Every clock at every size, in the result files' columns and units. No relation
    # between the clocks is asserted: timings vary from run to run, and what they say is a
    # benchmark result (benchmarks/results/h200/timing_methods.csv), quoted on the page.
    rows = cases.measure_rows(DEVICE)
    assert [(r["x"], r["provider"]) for r in rows] == [(n, p) for n in ex.SIZES["cuda"] for p in ex.TIMERS]
    for row in rows:
        assert set(row) == set(COLUMNS) - {"example"}
        assert row["bench"] == "timing_methods"
        assert (row["x_name"], row["metric"], row["work"]) == ("n", "us", 0)
        assert isinstance(row["timing"], str) and row["timing"]  # which clock: a label, never a number
        assert all(isinstance(row[k], float) and math.isfinite(row[k]) and row[k] > 0
                   for k in ("value", "ms_p20", "ms_p50", "ms_p80")), row
        assert row["value"] == pytest.approx(1e3 * row["ms_p50"])  # microseconds from the median in ms
        assert row["ms_p20"] <= row["ms_p50"] <= row["ms_p80"]  # quantiles of one sample


def test_every_timer_names_its_clock():
    # A row's `timing` column says which clock took it: host wall clock rows are not do_bench rows.
    assert set(cases.CLOCKS) == set(ex.TIMERS)
    assert {cases.CLOCKS[p] for p in ("perf_counter-no-sync", "perf_counter-sync")} == {"host_wall"}
