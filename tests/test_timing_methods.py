import sys

import pytest
import timing_methods as ex
import torch

from conftest import DEVICE, ODD_SIZES, ROOT, requires_gpu

sys.path.insert(0, str(ROOT / "scripts"))
from results import COLUMNS  # noqa: E402


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

    monkeypatch.setattr(ex, "TIMERS", {"fake cpu clock": (fake_timer, False), "fake gpu clock": (fake_timer, True)})
    monkeypatch.setattr(ex, "SIZES", {"cpu": [17, 33], "cuda": [17, 33]})
    rows = ex.measure_rows(DEVICE)
    expected = ["fake cpu clock"] + (["fake gpu clock"] if DEVICE.type == "cuda" else [])
    assert [r["provider"] for r in rows] == expected * 2
    assert calls == [n for n in (17, 33) for _ in expected]
    for row in rows:
        assert set(row) == set(COLUMNS) - {"example"}
        assert row["bench"] == ex.EXTRA_BENCHMARKS[0]["name"]
        assert (row["x_name"], row["metric"], row["timing"], row["work"]) == ("n", "us", "do_bench", 0)
        assert row["ms_p50"] == 3.0 and row["value"] == 3000.0
        assert row["ms_p20"] <= row["ms_p50"] <= row["ms_p80"]


def test_extra_benchmarks_spec():
    (spec,) = ex.EXTRA_BENCHMARKS
    assert set(spec) == {"name", "title", "x_name", "metric", "ceiling"}
    assert spec["metric"] == "us" and spec["ceiling"] is None
    assert {b["name"] for b in ex.BENCHMARKS}.isdisjoint({spec["name"]})


def test_cpu_timers_return_positive_times():
    x = torch.randn(33, device=DEVICE)
    fn = lambda: ex.saxpy(2.0, x, x)
    for timer in (ex.time_perf_counter_no_sync, ex.time_perf_counter_sync):
        times = timer(fn, reps=3)
        assert len(times) == 3 and all(t > 0 for t in times)


def test_bench_case_tiny():
    for provider in ex.BENCHMARKS[0]["providers"]:
        case = ex.bench_case("saxpy_fp32", provider, 1025)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        assert case["work"] == 12 * 1025


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 33))
    assert "formulas checked" in capsys.readouterr().out


@requires_gpu
def test_gpu_measure_rows_tells_the_story():
    rows = ex.measure_rows(DEVICE)
    us = {(r["provider"], r["x"]): r["value"] for r in rows}
    assert {p for p, _ in us} == set(ex.TIMERS)
    small, mid, big = sorted(ex.SIZES["cuda"])
    # Each relation held on the H200 (timing_methods.csv); where the gap was small, the
    # comment gives the measured values.
    # perf_counter without a sync stops at the enqueue: far below a big kernel's time
    assert us["perf_counter-no-sync", big] < 0.5 * us["profiler-warm-l2", big]
    # with a sync, a small kernel reads as its launch, many times the kernel
    assert us["perf_counter-sync", small] > 5 * us["profiler-warm-l2", small]
    assert us["perf_counter-sync", small] > us["perf_counter-no-sync", small]  # 55 vs 37 µs
    # the sync adds the kernel (and latency) to what the clock without a sync saw
    assert us["perf_counter-sync", big] > us["perf_counter-no-sync", big]
    assert us["perf_counter-sync", big] > us["profiler-flushed-l2", big]  # 252 vs 187 µs
    # CUDA events around a small launch on an idle GPU include the launch
    assert us["cuda-events", small] > 3 * us["profiler-warm-l2", small]  # measured 4.6x and 5.3x in two H200 runs
    # do_bench (L2 flushed) agrees with the profiler on a big kernel, not on a small one
    assert us["do_bench", big] == pytest.approx(us["profiler-flushed-l2", big], rel=0.25)
    assert us["do_bench", small] > 2 * us["profiler-flushed-l2", small]
    # a CUDA graph removes the host launch: far below do_bench on a small kernel
    assert us["do_bench_cudagraph", small] < 0.5 * us["do_bench", small]
    # no flush: with the data in L2, faster than a kernel on flushed data
    assert us["profiler-warm-l2", mid] < us["profiler-flushed-l2", mid]
    assert us["do_bench_cudagraph", mid] < us["profiler-flushed-l2", mid]  # 2.8 vs 4.9 µs
    # on a big kernel it is never much below the kernel; it was 0-30% above it on the H200,
    # so no closer match is asserted
    assert us["do_bench_cudagraph", big] > 0.9 * us["profiler-warm-l2", big]
