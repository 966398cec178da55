"""The benchmark pipeline without a GPU: the runner's code path under the interpreter
(every check, no timing), the runner's GPU path with fake clocks (passes, peers, rows),
the arithmetic of spread and host-bound, and the result files -> plots -> quoted numbers
-> stale notices -> run comparison chain."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest
import torch
from support import DEVICE

from scripts import bench, compare_runs, plots, results

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", bench.example_names())
def test_runner_tiny_path(name):
    """Each story's case (BENCHMARKS / bench_case) runs and passes its own checks at tiny sizes
    (in the interpreter on the CPU; on a GPU, the real kernels at the same sizes)."""
    rows, failures = bench.run_example(name, DEVICE, tiny=True)
    assert failures == []
    assert rows == []  # tiny runs time nothing and record nothing


def test_runner_refuses_a_wrong_kernel(monkeypatch):
    from benchmarks.cases import vector_add

    original = vector_add.bench_case

    def wrong_case(*args, **kwargs):
        case = original(*args, **kwargs)
        fn = case["fn"]
        case["fn"] = lambda: fn() + 1e-3  # a kernel that is slightly wrong
        return case

    monkeypatch.setattr(vector_add, "bench_case", wrong_case)
    rows, failures = bench.run_example("vector_add", DEVICE, tiny=True)
    assert rows == [] and failures and all("AssertionError" in f for f in failures)


CASE_KEYS = {"name", "x_name", "x_vals", "tiny_x_vals", "providers", "metric", "args", "cudagraph_timing",
             "calls_per_fn"}


def test_bench_specs_are_complete_and_every_bench_is_presented():
    """A case's specs say what to time, nothing else (titles, ceilings and targets are in
    presentation.yml); every bench a case times, or its measure_rows writes, has its entry
    there under its story, and every entry there is a bench some case times."""
    presented = results.presentation()
    timed = {}
    for name in bench.example_names():
        mod = bench.load_case(name)
        for spec in mod.BENCHMARKS:
            missing = {"name", "x_name", "x_vals", "tiny_x_vals", "providers", "metric"} - set(spec)
            assert not missing, f"{name}:{spec.get('name')}: missing {missing}"
            assert set(spec) <= CASE_KEYS, f"{name}:{spec['name']}: not a case key: {set(spec) - CASE_KEYS}"
            assert spec["metric"] in ("GB/s", "TFLOP/s", "us"), spec["metric"]
            assert spec.get("cudagraph_timing", True) in (True, False), f"{name}:{spec['name']}: cudagraph_timing"
            assert spec["name"] not in timed, f"bench {spec['name']} is timed by {timed.get(spec['name'])} and {name}"
            timed[spec["name"]] = name
    written = {r["bench"]: r["example"] for r in results.load().rows}  # measure_rows benches, by their rows
    for bench_name, story in {**written, **timed}.items():
        assert bench_name in presented, f"{bench_name} ({story}) has no entry in benchmarks/presentation.yml"
        assert presented[bench_name]["example"] == story, f"{bench_name}: listed under another story"
    assert set(presented) <= set(timed) | set(written), set(presented) - set(timed) - set(written)


def test_presentation_names_each_bench_once_with_known_keys(tmp_path):
    good = "ex:\n  b_one:\n    title: One\n    ceiling: copy\n  b_two:\n    title: Two\n    cudagraph: true\n"
    (tmp_path / "p.yml").write_text(good)
    specs = results.presentation(tmp_path / "p.yml")
    assert specs["b_two"] == {"title": "Two", "cudagraph": True, "example": "ex", "position": 1}
    for bad, message in (
        (good + "other:\n  b_one:\n    title: Again\n", "b_one: bench named twice"),
        ("ex:\n  b_one:\n    ceiling: copy\n", "ex.b_one: needs a title"),
        ("ex:\n  b_one:\n    title: One\n    x_vals: [1]\n", r"unknown key\(s\) \['x_vals'\]"),
        ("ex:\n  b_one:\n    title: One\n    ceiling: fp8\n", "ceiling 'fp8' is not one of"),
    ):
        (tmp_path / "p.yml").write_text(bad)
        with pytest.raises(results.ResultError, match=message):
            results.presentation(tmp_path / "p.yml")


def _compile_points():
    for name in bench.example_names():
        for spec in bench.load_case(name).BENCHMARKS:
            for provider in spec["providers"]:
                if "compile" in provider and spec["tiny_x_vals"]:
                    yield pytest.param(name, spec, provider, id=f"{spec['name']}:{provider}")


@pytest.mark.parametrize(("name", "spec", "provider"), list(_compile_points()))
def test_compiled_peers_are_left_to_the_runner(name, spec, provider, monkeypatch):
    """A torch.compile peer hands the runner the uncompiled function and its inputs (the runner
    compiles it per shape, static); its own `fn` compiles afresh too, never a shared object."""
    built = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: built.append((fn, kw)) or fn)
    mod = bench.load_case(name)
    x = spec["tiny_x_vals"][-1]
    cases = [mod.bench_case(spec["name"], provider, x, device=DEVICE, **spec.get("args", {})) for _ in range(2)]
    for case in cases:
        assert callable(case["compile"]) and isinstance(case["inputs"], tuple)
        bench.check_output(case["compile"](*case["inputs"]), case["ref"](), case["rtol"], case["atol"])
        case["fn"]()
    assert len(built) == 2 and all(kw.get("dynamic") is False for _, kw in built)
    assert built[0][1] == {"dynamic": False, **cases[0]["compile_options"]}


# --- the runner's GPU path, with fake clocks ------------------------------------------------------

def _fake_example(calls: list[str]) -> types.ModuleType:
    """A case whose providers log their calls: 'a' (eager) and a torch.compile peer, plus a
    host-side ('us') bench and measure_rows."""
    mod = types.ModuleType("benchmarks.cases.fake_bench_example")

    def peer(t):
        calls.append("torch.compile")
        return t * 2

    def bench_case(name, provider, x, device=None):
        t = torch.arange(float(x))
        if provider == "torch.compile":
            return {"fn": None, "compile": peer, "inputs": (t,), "compile_options": {},
                    "ref": lambda: t * 2, "work": 8.0 * x, "rtol": 0, "atol": 0}

        def fn():
            calls.append(provider)
            return t * 2

        return {"fn": fn, "ref": lambda: t * 2, "work": 8.0 * x, "rtol": 0, "atol": 0}

    mod.BENCHMARKS = [
        {"name": "fake_gbps", "x_name": "n", "x_vals": [4, 8], "tiny_x_vals": [4],
         "providers": ["a", "torch.compile"], "metric": "GB/s", "args": {}},
        {"name": "fake_us", "x_name": "n", "x_vals": [4], "tiny_x_vals": [4],
         "providers": ["a"], "metric": "us", "args": {}},
    ]
    mod.bench_case = bench_case
    mod.measured = iter([1.0, 3.0, 2.0])
    mod.measure_rows = lambda device=None: [{
        "bench": "fake_extra", "x_name": "n", "x": 1, "provider": "clock", "timing": "cuda_events",
        "metric": "us", "value": 1e3 * (v := next(mod.measured)), "ms_p50": v, "ms_p20": v, "ms_p80": v,
        "work": 0, "host_bound": None, "spread": None}]
    return mod


def test_runner_gpu_path_with_fake_clocks(monkeypatch):
    calls: list[str] = []
    mod = _fake_example(calls)
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.compiler, "reset", lambda: events.append("reset"))

    def fake_compile(fn, **kw):
        events.append(("compile", kw))
        return fn

    monkeypatch.setattr(torch, "compile", fake_compile)
    timed = []
    # do_bench per pass: 'a' 10, 12, 11 us (graph 5 us: host-bound); peer 300, 306, 303 us (graph 290)
    device_ms = {"a": [0.010, 0.012, 0.011], "torch.compile": [0.300, 0.306, 0.303]}
    graph_ms = {"a": 0.005, "torch.compile": 0.290}

    def fake_do_bench(fn):
        fn()
        provider = calls[-1]
        timed.append(provider)
        ms = device_ms[provider][(timed.count(provider) - 1) % 3]  # the same three passes at each x
        return ms, 0.9 * ms, 1.1 * ms

    def fake_graph(fn):
        fn()
        return (graph_ms[calls[-1]],) * 3

    monkeypatch.setattr(bench, "time_do_bench", fake_do_bench)
    monkeypatch.setattr(bench, "time_graph", fake_graph)
    monkeypatch.setattr(bench, "time_host", lambda fn, per=1: (fn(), (0.02, 0.019, 0.021))[1])
    peers: dict = {}
    rows, failures = bench.run_example("fake_bench_example", torch.device("cpu"), tiny=False, passes=3, peers=peers)
    assert failures == []
    # interleaved: for each x, pass 1 over both providers, then pass 2, then pass 3
    assert timed == ["a", "torch.compile"] * 6
    # one dynamo reset and one static compile per x
    assert events == ["reset", ("compile", {"dynamic": False})] * 2
    assert "dynamic=False" in peers["fake_gbps"]["torch.compile"] and "reset" in peers["fake_gbps"]["torch.compile"]
    by = {(r["bench"], r["x"], r["provider"], r["timing"]): r for r in rows}
    a = by[("fake_gbps", 8, "a", "do_bench")]
    assert a["ms_p50"] == "0.011" and a["value"] == pytest.approx(64 / 0.011 / 1e6, abs=1e-3)
    assert a["spread"] == "0.2000" and a["host_bound"] == "true"
    peer = by[("fake_gbps", 8, "torch.compile", "do_bench")]
    assert peer["ms_p50"] == "0.303" and peer["spread"] == "0.0200" and peer["host_bound"] == "false"
    assert by[("fake_gbps", 8, "a", "cudagraph")]["host_bound"] == "false"
    host = by[("fake_us", 4, "a", "host_wall")]
    assert host["value"] == 20.0 and host["host_bound"] == "" and host["spread"] == "0.0000"
    assert not any(r["timing"] == "do_bench" and r["metric"] == "us" for r in rows)
    extra = by[("fake_extra", 1, "clock", "cuda_events")]  # measure_rows, once per pass, merged
    assert extra["value"] == 2000.0 and extra["spread"] == "2.0000"


def test_runner_records_no_graph_time_for_an_uncapturable_call(monkeypatch):
    calls: list[str] = []
    mod = _fake_example(calls)
    mod.BENCHMARKS = mod.BENCHMARKS[:1]
    del mod.measure_rows
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.compiler, "reset", lambda: None)
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)
    monkeypatch.setattr(bench, "time_do_bench", lambda fn: (0.01, 0.01, 0.01))

    def no_capture(fn):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(bench, "time_graph", no_capture)
    rows, failures = bench.run_example("fake_bench_example", torch.device("cpu"), tiny=False, passes=3)
    assert failures == [] and {r["timing"] for r in rows} == {"do_bench", "host_call"}
    assert all(r["host_bound"] == "" for r in rows)  # unknown without a graph time


def test_runner_never_captures_a_bench_whose_spec_says_cudagraph_timing_false(monkeypatch):
    calls: list[str] = []
    mod = _fake_example(calls)
    mod.BENCHMARKS = [{**mod.BENCHMARKS[0], "cudagraph_timing": False}, {**mod.BENCHMARKS[0], "name": "fake_2"}]
    del mod.measure_rows
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.compiler, "reset", lambda: None)
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)
    monkeypatch.setattr(bench, "time_do_bench", lambda fn: (fn(), (0.01, 0.01, 0.01))[1])
    captured = []
    monkeypatch.setattr(bench, "time_graph", lambda fn: (captured.append(calls[-1] if fn() is not None else ""),
                                                         (0.005,) * 3)[1])
    rows, failures = bench.run_example("fake_bench_example", torch.device("cpu"), tiny=False, passes=3)
    assert failures == [] and len(captured) == 2 * 2 * 3  # fake_2 only: 2 x, 2 providers, 3 passes
    assert {r["timing"] for r in rows if r["bench"] == "fake_gbps"} == {"do_bench", "host_call"}
    assert {r["timing"] for r in rows if r["bench"] == "fake_2"} == {"do_bench", "cudagraph", "host_call"}
    assert bench.no_graph_timing({"name": "x"}) is False and bench.no_graph_timing({"name": "x"}, ("x",)) is True


# --- arithmetic ------------------------------------------------------------------------------------

def test_spread_and_host_bound_arithmetic():
    assert results.spread([1.0, 1.2, 1.1]) == pytest.approx(0.2)
    assert results.spread([2.0]) is None
    assert results.median([3.0, 1.0, 2.0]) == 2.0
    assert results.is_host_bound(0.011, 0.005) is True  # launch-dominated
    assert results.is_host_bound(0.0105, 0.010) is False  # within the margin
    assert results.is_host_bound(0.5, 0.4) is False  # too long for launch cost to show
    assert results.is_host_bound(0.011, None) is None


# Rows of benchmarks/results/h200/layer_norm.csv (run of 2026-12-01) as the runner wrote them: its
# host_bound column says false at every point of 200 µs and more, where torch.compile's backward
# took 1.59-1.92x its CUDA-graph time.
LAYER_NORM_BWD = """\
example,bench,x_name,x,provider,timing,metric,value,ms_p50,ms_p20,ms_p80,work,host_bound,spread
layer_norm,layer_norm_bwd_fp16,N,4096,triton,do_bench,GB/s,2607.244,0.154496,0.152672,0.24567,402808832,false,0.0131
layer_norm,layer_norm_bwd_fp16,N,4096,triton,cudagraph,GB/s,2728.207,0.147646,0.147421,0.148096,402808832,false,0.0096
layer_norm,layer_norm_bwd_fp16,N,4096,torch,do_bench,GB/s,1714.139,0.234992,0.232499,0.237606,402808832,false,0.0017
layer_norm,layer_norm_bwd_fp16,N,4096,torch,cudagraph,GB/s,1794.584,0.224458,0.224058,0.226002,402808832,false,0.0083
layer_norm,layer_norm_bwd_fp16,N,4096,torch.compile,do_bench,GB/s,1485.459,0.271168,0.210381,0.356154,402808832,false,0.1271
layer_norm,layer_norm_bwd_fp16,N,4096,torch.compile,cudagraph,GB/s,2512.405,0.160328,0.160133,0.161361,402808832,false,0.0070
layer_norm,layer_norm_bwd_bf16,N,1024,torch.compile,do_bench,GB/s,1481.857,0.27208,0.198285,0.341018,403183616,false,0.3677
layer_norm,layer_norm_bwd_bf16,N,1024,torch.compile,cudagraph,GB/s,2844.182,0.141757,0.141609,0.142502,403183616,false,0.0055
layer_norm,layer_norm_bwd_bf16,N,2048,triton,do_bench,GB/s,2807.467,0.14352,0.136358,0.239168,402927616,false,0.4053
layer_norm,layer_norm_bwd_bf16,N,2048,triton,cudagraph,GB/s,3061.219,0.131623,0.131398,0.131807,402927616,false,0.0019
layer_norm,layer_norm_bwd_bf16,N,2048,torch,do_bench,GB/s,1456.842,0.276576,0.275712,0.2776,402927616,false,0.0009
layer_norm,layer_norm_bwd_bf16,N,2048,torch,cudagraph,GB/s,1486.46,0.271065,0.270779,0.272465,402927616,false,0.0015
layer_norm,layer_norm_bwd_bf16,N,2048,torch.compile,do_bench,GB/s,1612.226,0.24992,0.20064,0.350502,402927616,false,0.0773
layer_norm,layer_norm_bwd_bf16,N,2048,torch.compile,cudagraph,GB/s,2563.37,0.157187,0.156585,0.158132,402927616,false,0.0121
"""


def test_long_points_far_above_their_graph_time_are_host_bound_and_judged_in_the_graph(tmp_path):
    from scripts import targets

    folder = tmp_path / "res" / "h200"
    folder.mkdir(parents=True)
    (folder / "layer_norm.csv").write_text(LAYER_NORM_BWD)
    (folder / "layer_norm.meta.json").write_text(json.dumps({"ceilings": {"copy_gbps": 4000.0}}))
    peers = {"kind": "peers", "label": "backward ≥ faster of torch, torch.compile", "min": 1.0,
             "peers": ["torch", "torch.compile"]}
    specs = {name: {"name": name, "title": name, "x_name": "N", "x_vals": [x], "metric": "GB/s", "ceiling": "copy",
                    "providers": ["triton", "torch", "torch.compile"], "example": "layer_norm", "position": i,
                    "targets": [peers]}
             for i, (name, x) in enumerate((("layer_norm_bwd_fp16", 4096), ("layer_norm_bwd_bf16", 2048)))}
    data = results.load(tmp_path / "res", specs=specs)
    # derived when read, not taken from the file: 1.69x, 1.92x and 1.59x the graph time at 250-270 µs
    for bench_name, x in (("layer_norm_bwd_fp16", 4096), ("layer_norm_bwd_bf16", 1024), ("layer_norm_bwd_bf16", 2048)):
        assert data.find(bench_name, x, "torch.compile")["host_bound"] is True, (bench_name, x)
    assert data.find("layer_norm_bwd_fp16", 4096, "torch")["host_bound"] is False  # 1.05x: the power cap's range
    assert data.find("layer_norm_bwd_bf16", 2048, "triton")["host_bound"] is False  # 1.09x at 144 µs
    # the target compares kernel times (2728 / 2512 and 3061 / 2563 GB/s), not 1.52x and 1.74x
    checks = targets.evaluate(data)
    assert [round(c.measured, 3) for c in checks] == [1.086, 1.194]
    assert all(c.detail == targets.GRAPH_NOTE for c in checks)


def test_point_rows_median_spread_and_flags():
    base = {"example": "e", "bench": "b", "x_name": "n", "x": 1, "provider": "p"}
    rows = bench.point_rows(base, "TFLOP/s", 2e9, {
        "do_bench": [(1.0, 0.9, 1.1), (1.02, 0.95, 1.2), (0.99, 0.9, 1.0)],
        "cudagraph": [(0.98, 0.98, 0.98), (0.97, 0.97, 0.97), (0.99, 0.99, 0.99)],
    })
    db, cg = rows
    assert (db["timing"], cg["timing"]) == ("do_bench", "cudagraph")
    assert db["ms_p50"] == "1" and db["value"] == 2.0 and db["ms_p20"] == "0.9" and db["ms_p80"] == "1.1"
    assert db["spread"] == f"{1.02 / 0.99 - 1:.4f}" and db["host_bound"] == "false"
    assert cg["ms_p50"] == "0.98" and cg["host_bound"] == "false"
    (only,) = bench.point_rows(base, "GB/s", 1e6, {"do_bench": [(0.001, 0.001, 0.001)]})
    assert only["host_bound"] == "" and only["spread"] == ""  # one pass, no graph: unknown


def test_host_call_rows_are_us_kept_apart_and_tabled(tmp_path):
    base = {"example": "nx", "bench": "n_b", "x_name": "n", "x": 1, "provider": "triton"}
    rows = bench.point_rows(base, "GB/s", 1e6, {"do_bench": [(0.5, 0.5, 0.5)], "host_call": [(0.012, 0.011, 0.013)]})
    host = [r for r in rows if r["timing"] == "host_call"]
    assert [(r["metric"], r["value"], r["host_bound"]) for r in host] == [("us", 12.0, "")]
    assert [r["metric"] for r in rows if r["timing"] == "do_bench"] == ["GB/s"]
    write_new_format(tmp_path / "res" / "h200", [
        _row("n_b", 1, "triton", "do_bench", 0.5), _row("n_b", 8, "triton", "do_bench", 0.9),
        {**_row("n_b", 8, "triton", "do_bench", 0.02), "timing": "host_call", "metric": "us", "value": 20.0},
        {**_row("n_b", 1, "triton", "do_bench", 0.013), "timing": "host_call", "metric": "us", "value": 13.0},
        {**_row("n_b", 1, "torch", "do_bench", 0.009), "timing": "host_call", "metric": "us", "value": 9.0}])
    data = results.load(tmp_path / "res", specs={"n_b": {"title": "N B"}})
    assert {r["timing"] for r in data.rows} == {"do_bench"} and len(data.host_rows) == 3
    assert data.specs["n_b"]["metric"] == "GB/s"  # the host rows do not decide the bench's metric
    table = results.host_table(data, "nx").splitlines()
    assert table[0] == "| benchmark | at | `triton` | `torch` |"
    assert table[2] == "| N B | n = 1 | 13.0 µs | 9.0 µs |"  # the smallest x only
    with pytest.raises(results.ResultError, match="no host_call rows for 'other'"):
        results.host_table(data, "other")


# --- result files -> plots -> numbers ----------------------------------------------------------

META = {
    "gpu": "Test GPU", "sm_count": 2, "driver": "0", "torch": "t", "triton": "tr", "python": "3",
    "date": "2026-01-01T00:00:00+00:00", "method": "synthetic data for a unit test",
    "ceilings": {"copy_gbps": 1000.0, "cublas_fp16_tflops": 500.0, "cublas_bf16_tflops": 520.0},
}
# the specs of write_synthetic's benches, as results.presentation gives them (the rows complete them)
SPECS = {
    "b_num": {"name": "b_num", "title": "numeric x", "x_name": "n", "metric": "GB/s", "ceiling": "copy"},
    "b_lab": {"name": "b_lab", "title": "labelled x", "x_name": "shape", "metric": "TFLOP/s", "ceiling": "fp16"},
}


def write_synthetic(folder: Path) -> None:
    """A single-pass result file (no host_bound, spread values); its specs are ``SPECS``."""
    folder.mkdir(parents=True)
    rows = []
    for x in (1024, 4096):
        for provider, value in (("triton", 900.0), ("torch", 600.0)):
            rows.append(["ex", "b_num", "n", x, provider, "do_bench", "GB/s", value, 1, 1, 1, 1, "", ""])
    rows.append(["ex", "b_lab", "shape", "40x30x20", "triton", "do_bench", "TFLOP/s", 450.0, 0.05, 1, 1, 1, "", ""])
    rows.append(["ex", "b_lab", "shape", "40x30x20", "triton", "cudagraph", "TFLOP/s", 480.0, 0.02, 1, 1, 1, "", ""])
    with (folder / "ex.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(results.COLUMNS)
        w.writerows(rows)
    (folder / "ex.meta.json").write_text(json.dumps(META))


def write_new_format(folder: Path, rows: list[dict], code_sha256: str | None = "0" * 64, passes: int = 3,
                     **extra) -> None:
    """A result file as scripts/bench.py writes it now."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "nx.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=results.COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({"example": "nx", "x_name": "n", "metric": "GB/s", "ms_p20": r["ms_p50"],
                        "ms_p80": r["ms_p50"], "work": 1e6, **r})
    meta = {k: v for k, v in META.items() if k != "method"}
    meta.update({"method": "new", "passes": passes, "code_sha256": code_sha256, "git_commit": "abc123",
                 "sources": {"examples/nx.py": "1" * 64, "benchmarks/cases/nx.py": "2" * 64},
                 "git_dirty": False, "peers": {}, **extra})
    (folder / "nx.meta.json").write_text(json.dumps(meta))


def _row(bench_name, x, provider, timing, ms, host_bound="", spread="0.0100"):
    return {"bench": bench_name, "x": x, "provider": provider, "timing": timing, "ms_p50": ms,
            "metric": "us" if timing == "host_wall" else "GB/s",
            "value": 1e3 * ms if timing == "host_wall" else round(1e6 / ms / 1e6, 3),
            "host_bound": host_bound, "spread": spread}


NEW_ROWS = [
    _row("n_b", 1, "triton", "do_bench", 0.011, "true", "0.0300"),
    _row("n_b", 1, "triton", "cudagraph", 0.004, "false", "0.0100"),
    _row("n_b", 2, "triton", "do_bench", 0.500, "false", "0.0800"),
    _row("n_b", 2, "triton", "cudagraph", 0.490, "false", "0.0100"),
]


def test_single_pass_files_load_and_render(tmp_path):
    write_synthetic(tmp_path / "res" / "h200")
    data = results.load(tmp_path / "res", specs=SPECS)
    lab = data.find("b_lab", "40x30x20", "triton")
    assert lab["timing"] == "do_bench" and lab["host_bound"] is True  # 0.05 ms vs 0.02 ms in the graph
    assert data.find("b_lab", "40x30x20", "triton", "cudagraph")["host_bound"] is False
    assert data.find("b_num", 1024, "torch")["host_bound"] is None  # no graph time: unknown
    assert all(r["spread"] is None for r in data.rows)
    table = results.repeatability_table(data)
    assert "| numeric x | 1 | 4 | – | – | – | – |" in table
    with pytest.raises(results.ResultError, match="no spread"):
        results.render_expression(data, "spread b_num@1024:triton")


def test_new_format_columns_round_trip(tmp_path):
    write_new_format(tmp_path / "res" / "h200", NEW_ROWS)
    data = results.load(tmp_path / "res", specs={"n_b": {"title": "from the example", "x_name": "n",
                                                          "metric": "GB/s", "ceiling": "copy", "cudagraph": True}})
    short = data.find("n_b", 1, "triton")
    assert short["host_bound"] is True and short["spread"] == pytest.approx(0.03)
    assert results.render_expression(data, "spread n_b@2:triton") == "8.0%"
    assert results.render_expression(data, "ms n_b@1:triton cudagraph") == "0.004 ms"
    table = results.repeatability_table(data)
    assert "| from the example | 3 | 2 | 5.5% | 8.0% (n = 2, triton) | 1 | 1 |" in table


def test_plots_mark_host_bound_and_spread_and_take_titles_from_the_spec(tmp_path):
    write_new_format(tmp_path / "res" / "h200", NEW_ROWS)
    spec = {"title": "Title from the example", "x_name": "n", "metric": "GB/s", "ceiling": "copy"}
    data = results.load(tmp_path / "res", specs={"n_b": {**spec, "cudagraph": False}})
    svg = plots.draw(data, "n_b").decode()
    assert "Title from the example" in svg and "hollow: host-bound" in svg and "spread over passes" in svg
    assert "CUDA graph" not in svg  # the graph partner is drawn only where the spec asks for it
    data = results.load(tmp_path / "res", specs={"n_b": {**spec, "cudagraph": True}})
    svg = plots.draw(data, "n_b").decode()
    assert "triton (CUDA graph)" in svg and "median of 3 interleaved passes" in svg
    # host_bound is derived from the two clocks when read: in a calm file they agree
    calm = [{**r, "host_bound": "false", "spread": "0.0100", "ms_p50": 0.5} for r in NEW_ROWS]
    write_new_format(tmp_path / "calm" / "h200", calm)
    svg = plots.draw(results.load(tmp_path / "calm"), "n_b").decode()
    assert "hollow: host-bound" not in svg and "spread over passes" not in svg


def test_plots_are_byte_identical_and_captioned(tmp_path):
    write_synthetic(tmp_path / "res" / "h200")
    first, second = ({p.name: p.read_bytes() for p in plots.draw_all(
        tmp_path / "res", tmp_path / out, data=results.load(tmp_path / "res", specs=SPECS))} for out in "ab")
    assert first == second and set(first) == {"b_num.svg", "b_lab.svg"}
    svg = first["b_num.svg"].decode()
    assert "Test GPU" in svg and "synthetic data" in svg and "measured ceiling" in svg


def test_quoted_numbers_render_from_data(tmp_path):
    write_synthetic(tmp_path / "res" / "h200")
    data = results.load(tmp_path / "res", specs=SPECS)
    r = results.render_expression
    assert r(data, "value b_num@4096:triton") == "900 GB/s"
    assert r(data, "ratio b_num@4096:triton/torch") == "1.50×"
    assert r(data, "pct b_num@1024:torch") == "60%"
    assert r(data, "ceiling b_lab") == "500 TFLOP/s"
    assert r(data, "value b_lab@40x30x20:triton cudagraph") == "480 TFLOP/s"
    assert r(data, "value b_lab@40x30x20:triton") == "450 TFLOP/s"  # do_bench when both exist
    assert r(data, "meta ex gpu") == "Test GPU"
    assert r(data, "ridge b_lab b_num") == "500 FLOP/byte"
    for bad in ("value b_num@8:triton", "value nope@1:triton", "meta ex nope", "frobnicate b_num@1:x", "",
                "value b_num@1024:triton host_wall"):
        with pytest.raises(results.ResultError):
            r(data, bad)


def test_a_row_of_another_clock_is_found_without_naming_it(tmp_path):
    write_new_format(tmp_path / "res" / "h200", [_row("clocks", 1, "perf_counter", "host_wall", 0.05)])
    data = results.load(tmp_path / "res")
    assert data.find("clocks", 1, "perf_counter")["timing"] == "host_wall"
    assert results.render_expression(data, "ms clocks@1:perf_counter host_wall") == "0.05 ms"


def test_presentation_titles_the_plots(tmp_path):
    (tmp_path / "p.yml").write_text("ex:\n  b_num:\n    title: renamed in the yml\n    ceiling: copy\n")
    write_synthetic(tmp_path / "res" / "h200")
    data = results.load(tmp_path / "res", specs=results.presentation(tmp_path / "p.yml"))
    assert data.specs["b_num"]["title"] == "renamed in the yml"
    assert data.specs["b_num"]["x_vals"] == [1024, 4096] and data.specs["b_num"]["providers"] == ["triton", "torch"]
    assert data.specs["b_num"]["x_name"] == "n" and data.specs["b_num"]["metric"] == "GB/s"  # from the rows
    assert "renamed in the yml" in plots.draw(data, "b_num").decode()


# --- provenance ----------------------------------------------------------------------------------

def _story_with(tmp_path: Path, text: str, case: str = "y = 1\n") -> tuple[Path, Path, str]:
    """(examples folder, cases folder, the code_sha256 a run of them records) of a story "nx"."""
    ex_dir, case_dir = tmp_path / "examples", tmp_path / "cases"
    ex_dir.mkdir(exist_ok=True)
    case_dir.mkdir(exist_ok=True)
    (ex_dir / "nx.py").write_text(text)
    (case_dir / "nx.py").write_text(case)
    return ex_dir, case_dir, results.code_sha256([text, case])


def test_stale_detection(tmp_path, capsys):
    ex_dir, case_dir, code = _story_with(tmp_path, "x = 1\n")
    write_new_format(tmp_path / "res" / "h200", NEW_ROWS, code_sha256=code)
    data = results.load(tmp_path / "res")
    assert results.stale_results(data, ex_dir, case_dir) == {}
    (ex_dir / "nx.py").write_text("x = 2\n")
    (stale,) = results.stale_results(data, ex_dir, case_dir).values()
    assert stale.example == "nx" and stale.date == "2026-01-01" and "changed since" in stale.reason
    assert stale.csv.endswith("h200/nx.csv")
    (ex_dir / "nx.py").write_text("x = 1\n")
    (case_dir / "nx.py").write_text("y = 2\n")  # the case changed: stale too
    assert "benchmarks/cases/nx.py changed since" in results.stale_results(data, ex_dir, case_dir)["nx"].reason
    write_new_format(tmp_path / "res" / "h200", NEW_ROWS, code_sha256=None)
    reason = results.stale_results(results.load(tmp_path / "res"), ex_dir, case_dir)["nx"].reason
    assert "before its benchmark moved" in reason
    (ex_dir / "nx.py").unlink()
    assert "examples/nx.py does not exist" in results.stale_results(data, ex_dir, case_dir)["nx"].reason
    # the CLI prints them and fails only when asked to
    assert results.main(["--stale", "--results", str(tmp_path / "res")]) == 0
    out = capsys.readouterr().out
    assert "STALE" in out and "nx.csv (measured 2026-01-01)" in out and "1 of 1 result files" in out
    assert results.main(["--stale", "--strict", "--results", str(tmp_path / "res")]) == 1


# --- the measured code (code_sha256) -----------------------------------------------------------------

SAMPLE = """\
import torch  # µ: a multi-byte character before the code (ast's offsets are in bytes)


def kernel(x):
    '''A docstring: not measured.'''
    return x + 1  # a comment: not measured


BENCHMARKS = [{"name": "b", "x_name": "n", "x_vals": [1024, 4096], "metric": "GB/s"}]
OTHER = {"name": "kept", "note": "# not a comment"}
"""
# measured_code(SAMPLE), and its sha256, pinned: the runner (Python 3.12) and the site (3.11) must agree.
# Cut: every comment and docstring; then trailing blanks and blank lines.
SAMPLE_CUT = "\n".join(line.rstrip() for line in SAMPLE.replace(
    "  # µ: a multi-byte character before the code (ast's offsets are in bytes)", "").replace(
    "    '''A docstring: not measured.'''\n", "").replace("  # a comment: not measured", "").splitlines()
    if line.strip()) + "\n"
# the same under the site's Python 3.11 and the GPU runner's 3.12
SAMPLE_SHA = "f739eb9079733812661a87b44768f2125df098d6437519e3a9d5500b419426ad"


def test_measured_code_cuts_comments_and_docstrings_by_text():
    assert SAMPLE_CUT != SAMPLE and "# not a comment" in SAMPLE_CUT
    assert results.measured_code(SAMPLE) == SAMPLE_CUT.encode()
    assert results.measured_code(SAMPLE.encode()) == SAMPLE_CUT.encode()  # str or bytes, same cut
    digest = hashlib.sha256(SAMPLE_CUT.encode() + b"\0").hexdigest()
    assert results.code_sha256(SAMPLE) == results.code_sha256([SAMPLE]) == digest


def test_code_sha256_is_pinned_on_a_sample():
    # Deterministic across runs and Python versions: a different value here means results measured under
    # another Python would all read as stale.
    assert results.code_sha256([SAMPLE, SAMPLE]) == results.code_sha256([SAMPLE, SAMPLE]) == SAMPLE_SHA


@pytest.mark.parametrize("old, new", [
    ("  # a comment: not measured", "  # another comment"),  # comments and docstrings
    ("'''A docstring: not measured.'''", "'''Another docstring,\n    on two lines.'''"),
    ("def kernel(x):\n", "# a markdown cell\n#\n# more words\n\n\ndef kernel(x):\n"),
    ("    return x + 1", "    # --8<-- [start:kernel]\n    return x + 1"),
    ("OTHER", "\n\nOTHER"),  # blank lines
])
def test_code_sha256_ignores_comments_docstrings_and_blank_lines(old, new):
    assert old in SAMPLE
    assert results.code_sha256(SAMPLE.replace(old, new, 1)) == results.code_sha256(SAMPLE)


@pytest.mark.parametrize("old, new", [
    ('"x_vals": [1024, 4096]', '"x_vals": [1024, 8192]'),
    ("return x + 1", "return x + 2"),  # the kernel
    ('"# not a comment"', '"# still not a comment"'),  # a '#' inside a string is code
    ("    return x + 1", "    y = 1\n    return x + y"),  # a line of code added
])
def test_code_sha256_changes_with_what_is_measured(old, new):
    assert old in SAMPLE
    assert results.code_sha256(SAMPLE.replace(old, new, 1)) != results.code_sha256(SAMPLE)
    # in either file of a story (the example, then its case), and the order counts
    assert results.code_sha256([SAMPLE, SAMPLE.replace(old, new, 1)]) != results.code_sha256([SAMPLE, SAMPLE])
    assert results.code_sha256(["x = 1\n", "y = 1\n"]) != results.code_sha256(["y = 1\n", "x = 1\n"])


def test_stale_detection_uses_the_measured_code(tmp_path):
    ex_dir, case_dir, code = _story_with(tmp_path, SAMPLE, SAMPLE)
    write_new_format(tmp_path / "res" / "h200", NEW_ROWS, code_sha256=code)
    data = results.load(tmp_path / "res")
    assert results.stale_results(data, ex_dir, case_dir) == {}
    (case_dir / "nx.py").write_text(SAMPLE.replace("a comment:", "a new comment:"))  # the file's sha256 differs
    assert results.stale_results(data, ex_dir, case_dir) == {}
    (case_dir / "nx.py").write_text(SAMPLE.replace("[1024, 4096]", "[1024, 8192]"))
    (stale,) = results.stale_results(data, ex_dir, case_dir).values()
    assert "measured code of examples/nx.py or benchmarks/cases/nx.py changed" in stale.reason


def _hooks():
    pytest.importorskip("mkdocs", reason="needs the site tools")
    spec = importlib.util.spec_from_file_location("site_hooks_r", ROOT / "scripts" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


class Page:
    class file:
        src_path = "x.md"


def test_hook_fails_the_page_on_a_missing_result(tmp_path, monkeypatch):
    PluginError = pytest.importorskip("mkdocs.exceptions", reason="needs the site tools").PluginError

    hooks = _hooks()
    ex_dir, case_dir, _ = _story_with(tmp_path, "x = 1\n")
    (ex_dir / "ex.py").write_text("y = 1\n")
    (case_dir / "ex.py").write_text("z = 1\n")
    write_synthetic(tmp_path / "res" / "h200")
    meta = {**META, "code_sha256": results.code_sha256(["y = 1\n", "z = 1\n"]), "sources": {}}
    (tmp_path / "res" / "h200" / "ex.meta.json").write_text(json.dumps(meta))
    data = results.load(tmp_path / "res", specs=SPECS)
    monkeypatch.setattr(hooks.results, "load", lambda *args, **kwargs: data)
    monkeypatch.setattr(hooks, "EXAMPLES", ex_dir)
    monkeypatch.setattr(hooks, "CASES", case_dir)
    out = hooks.on_page_markdown("fused: {{ bench value b_num@4096:triton }}.", Page, {}, None)
    assert out == "fused: 900 GB/s."  # the result matches its example: no notice
    with pytest.raises(PluginError, match="no result"):
        hooks.on_page_markdown("{{ bench value b_num@9:triton }}", Page, {}, None)
    for bad in ("{{ bench winners no_such_bench triton torch }}", "{{ bench winners b_num }}"):
        with pytest.raises(PluginError, match=r"^x\.md:3: \{\{ bench winners"):  # the page and line
            hooks.on_page_markdown("title\n\n" + bad, Page, {}, None)


def test_hook_warns_on_a_page_quoting_stale_results(tmp_path, monkeypatch):
    hooks = _hooks()
    ex_dir, case_dir, code = _story_with(tmp_path, "x = 1\n")
    write_new_format(tmp_path / "res" / "h200", NEW_ROWS, code_sha256=code)
    data = results.load(tmp_path / "res")
    monkeypatch.setattr(hooks.results, "load", lambda *args, **kwargs: data)
    monkeypatch.setattr(hooks, "EXAMPLES", ex_dir)
    monkeypatch.setattr(hooks, "CASES", case_dir)
    page = "# Title\n\n```python\n# not a title\n```\n\nIt takes {{ bench ms n_b@2:triton }}.\n"
    assert hooks.on_page_markdown(page, Page, {}, None) == page.replace("{{ bench ms n_b@2:triton }}", "0.5 ms")
    (ex_dir / "nx.py").write_text("x = 2\n")  # the example changes after its run
    for text in (page, "# Title\n\n![plot](../assets/plots/n_b.svg)\n"):
        out = hooks.on_page_markdown(text, Page, {}, None)
        head, notice = out.split("\n", 1)
        assert head == "# Title" and notice.lstrip().startswith('!!! warning "Results older than the code')
        assert f"`{data.csv_path('nx')}` (measured 2026-01-01)" in out and "--example nx" in out
    assert "!!! warning" not in hooks.on_page_markdown("# Other\n\nNo numbers here.\n", Page, {}, None)


# --- comparing two runs ----------------------------------------------------------------------------

def test_compare_runs_on_two_small_folders(tmp_path, capsys):
    a = [_row("c", 1, "triton", "do_bench", 0.100), _row("c", 2, "triton", "do_bench", 0.200),
         _row("c", 3, "triton", "do_bench", 0.030, "true"), _row("c", 4, "triton", "do_bench", 0.010),
         _row("c", 5, "triton", "host_wall", 0.040), _row("c", 6, "triton", "cudagraph", 0.050, "false")]
    b = [_row("c", 1, "triton", "do_bench", 0.102), _row("c", 2, "triton", "do_bench", 0.216),
         _row("c", 3, "triton", "do_bench", 0.060, "false"), _row("c", 4, "triton", "do_bench", 0.015),
         _row("c", 5, "triton", "host_wall", 0.080), _row("c", 6, "triton", "cudagraph", 0.047, "false"),
         _row("c", 7, "triton", "do_bench", 0.300)]
    for rows, name in ((a, "A"), (b, "B")):
        write_new_format(tmp_path / name / "h200", rows)
    rows_a, _ = compare_runs.read_run(tmp_path / "A")  # a results root: its one GPU folder is found
    rows_b, _ = compare_runs.read_run(tmp_path / "B" / "h200")
    c = compare_runs.compare(rows_a, rows_b)
    assert [p.key[2] for p in c.judged] == ["1", "2", "6"]
    assert [p.key[2] for p in c.differ] == ["2", "6"]  # +8% and -6%; +2% agrees
    assert c.differ[0].ratio == pytest.approx(1.08)
    assert [p.key[2] for p in c.host_bound] == ["3"]  # host-bound in run A: not judged
    assert [p.key[2] for p in c.short] == ["4"] and [p.key[2] for p in c.host_wall] == ["5"]
    assert [k[2] for k in c.only_b] == ["7"] and c.only_a == []
    out = tmp_path / "report.md"
    assert compare_runs.main([str(tmp_path / "A"), str(tmp_path / "B"), "--out", str(out)]) == 1  # 2 differ
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith("3 kernel-time points compared") and "2 differ by more than 5%" in summary
    assert "worst: c x=2 triton [do_bench], B/A = 1.080" in summary
    text = out.read_text()
    assert "# Reproduction check" in text and "| c x=2 triton [do_bench] | 0.2 | 0.216 | 1.080 |" in text
    assert "## Only in run B" in text
    assert compare_runs.main([str(tmp_path / "A"), str(tmp_path / "A")]) == 0
    assert "0 differ" in capsys.readouterr().out.strip().splitlines()[-1]
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no result files"):  # a wrong path is an error, not a pass
        compare_runs.main([str(tmp_path / "A"), str(tmp_path / "empty")])


def test_compare_runs_leaves_out_examples_measured_at_other_code(tmp_path, capsys):
    # Two versions of an example are not a reproduction: not judged, and said so; with nothing
    # left to judge the check fails instead of passing on zero points.
    rows = [_row("c", 1, "triton", "do_bench", 0.100)]
    write_new_format(tmp_path / "A" / "h200", rows, code_sha256="a" * 64)
    write_new_format(tmp_path / "B" / "h200", [_row("c", 1, "triton", "do_bench", 0.300)], code_sha256="b" * 64)
    out = tmp_path / "report.md"
    assert compare_runs.main([str(tmp_path / "A"), str(tmp_path / "B"), "--out", str(out)]) == 1
    assert "not compared (different code): nx" in capsys.readouterr().out
    assert "measured different versions of the example" in out.read_text()
    # the same measured code (only comments or other bytes of the files differ): compared
    write_new_format(tmp_path / "A" / "h200", rows, code_sha256="c" * 64)
    write_new_format(tmp_path / "B" / "h200", rows, code_sha256="c" * 64, sources={"examples/nx.py": "3" * 64})
    assert compare_runs.compare_folders(tmp_path / "A", tmp_path / "B")[1] == []
    write_new_format(tmp_path / "B" / "h200", rows, code_sha256="d" * 64)
    assert compare_runs.compare_folders(tmp_path / "A", tmp_path / "B")[1] == ["nx"]
    write_new_format(tmp_path / "B" / "h200", rows, code_sha256=None)  # unknown code is never the same
    assert compare_runs.compare_folders(tmp_path / "A", tmp_path / "B")[1] == ["nx"]


def test_benchmarks_page_states_the_runner_settings():
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    for needle in (f"{bench.WARMUP_MS} ms warm-up", f"{bench.REP_MS} ms", f"{bench.GRAPH_REP_MS} ms of calls",
                   f"{round(100 * (results.HOST_BOUND_RATIO - 1))}%", f"{round(1e3 * results.HOST_BOUND_MAX_MS)} µs",
                   f"{round(100 * (results.HOST_BOUND_LONG_RATIO - 1))}% at any length",
                   "{{ bench repeatability }}", "{{ bench provenance }}", "{{ bench host_bound_evidence }}"):
        assert needle in page, needle


def test_examples_are_listed_in_reading_order(tmp_path):
    # The Examples section lists stories in the order the pages first include them; any story no
    # page includes comes last, by name.
    hooks = _hooks()
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.md").write_text('--8<-- "examples/zeta.py:setup"\n')
    (tmp_path / "guide" / "a.md").write_text('see examples/alpha.py and examples/zeta.py, examples/nope.py\n')
    nav = [{"Home": "index.md"}, {"Guide": ["guide/a.md", {"B": "guide/missing.md"}]}, {"Site": "https://x"}]
    assert hooks.nav_pages(nav) == ["index.md", "guide/a.md", "guide/missing.md"]
    pages = [tmp_path / p for p in hooks.nav_pages(nav)]
    assert hooks.reading_order(pages, ["alpha", "beta", "zeta", "gamma"]) == ["zeta", "alpha", "beta", "gamma"]


def test_git_state_prefers_the_commit_the_gpu_run_was_started_from(monkeypatch):
    # The lent GPU machine may keep a .git from an older copy: BENCH_GIT_COMMIT, set by whoever
    # started the run, names the commit measured (run22's metas named the leftover instead).
    monkeypatch.setenv("BENCH_GIT_COMMIT", "3f4f346")
    assert bench.git_state() == ("3f4f346", None)
    assert bench.git_state(bench.ROOT / "examples" / "softmax.py") == ("3f4f346", None)
    monkeypatch.delenv("BENCH_GIT_COMMIT")
    commit, dirty = bench.git_state()
    assert commit != "3f4f346" and dirty in (True, False, None)
