"""The benchmark pipeline without a GPU: the runner's code path under the interpreter
(every check, no timing), and the result files -> plots -> quoted numbers chain."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench  # noqa: E402  (scripts/bench.py)
import plots  # noqa: E402
import results  # noqa: E402

from conftest import DEVICE  # noqa: E402


@pytest.mark.parametrize("name", bench.example_names())
def test_runner_tiny_path(name):
    """Each example's BENCHMARKS / bench_case run and pass their own checks at tiny sizes
    (in the interpreter on the CPU; on a GPU, the real kernels at the same sizes)."""
    rows, failures = bench.run_example(name, DEVICE, tiny=True)
    assert failures == []
    assert rows == []  # tiny runs time nothing and record nothing


def test_runner_refuses_a_wrong_kernel(monkeypatch):
    import vector_add

    original = vector_add.bench_case

    def wrong_case(*args, **kwargs):
        case = original(*args, **kwargs)
        fn = case["fn"]
        case["fn"] = lambda: fn() + 1e-3  # a kernel that is slightly wrong
        return case

    monkeypatch.setattr(vector_add, "bench_case", wrong_case)
    rows, failures = bench.run_example("vector_add", DEVICE, tiny=True)
    assert rows == [] and failures and all("AssertionError" in f for f in failures)


def test_bench_specs_are_complete():
    for name in bench.example_names():
        mod = __import__(name)
        for spec in mod.BENCHMARKS:
            missing = {"name", "title", "x_name", "x_vals", "tiny_x_vals", "providers", "metric"} - set(spec)
            assert not missing, f"{name}:{spec.get('name')}: missing {missing}"
            assert spec["metric"] in ("GB/s", "TFLOP/s", "us"), spec["metric"]
            assert spec.get("ceiling") in (None, "copy", "fp16", "bf16"), spec.get("ceiling")
    names = [s["name"] for n in bench.example_names() for s in __import__(n).BENCHMARKS]
    assert len(names) == len(set(names)), "bench names must be unique across the site"


# --- result files -> plots -> numbers ----------------------------------------------------------

META = {
    "gpu": "Test GPU", "sm_count": 2, "driver": "0", "torch": "t", "triton": "tr", "python": "3",
    "date": "2026-01-01T00:00:00+00:00", "method": "synthetic data for a unit test",
    "ceilings": {"copy_gbps": 1000.0, "cublas_fp16_tflops": 500.0, "cublas_bf16_tflops": 520.0},
    "benchmarks": [
        {"name": "b_num", "title": "numeric x", "x_name": "n", "metric": "GB/s", "ceiling": "copy"},
        {"name": "b_lab", "title": "labelled x", "x_name": "shape", "metric": "TFLOP/s", "ceiling": "fp16"},
    ],
}


def write_synthetic(folder: Path) -> None:
    folder.mkdir(parents=True)
    rows = []
    for x in (1024, 4096):
        for provider, value in (("triton", 900.0), ("torch", 600.0)):
            rows.append(["ex", "b_num", "n", x, provider, "do_bench", "GB/s", value, 1, 1, 1, 1])
    rows.append(["ex", "b_lab", "shape", "40x30x20", "triton", "do_bench", "TFLOP/s", 450.0, 1, 1, 1, 1])
    rows.append(["ex", "b_lab", "shape", "40x30x20", "triton", "cudagraph", "TFLOP/s", 480.0, 1, 1, 1, 1])
    with (folder / "ex.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(results.COLUMNS)
        w.writerows(rows)
    (folder / "ex.meta.json").write_text(json.dumps(META))


def test_plots_are_byte_identical_and_captioned(tmp_path):
    write_synthetic(tmp_path / "res" / "h200")
    first = {p.name: p.read_bytes() for p in plots.draw_all(tmp_path / "res", tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in plots.draw_all(tmp_path / "res", tmp_path / "b")}
    assert first == second and set(first) == {"b_num.svg", "b_lab.svg"}
    svg = first["b_num.svg"].decode()
    assert "Test GPU" in svg and "synthetic data" in svg and "measured ceiling" in svg


def test_quoted_numbers_render_from_data(tmp_path):
    write_synthetic(tmp_path / "res" / "h200")
    data = results.load(tmp_path / "res")
    r = results.render_expression
    assert r(data, "value b_num@4096:triton") == "900 GB/s"
    assert r(data, "ratio b_num@4096:triton/torch") == "1.50×"
    assert r(data, "pct b_num@1024:torch") == "60%"
    assert r(data, "ceiling b_lab") == "500 TFLOP/s"
    assert r(data, "value b_lab@40x30x20:triton cudagraph") == "480 TFLOP/s"
    assert r(data, "meta ex gpu") == "Test GPU"
    assert r(data, "ridge b_lab b_num") == "500 FLOP/byte"
    for bad in ("value b_num@8:triton", "value nope@1:triton", "meta ex nope", "frobnicate b_num@1:x", ""):
        with pytest.raises(results.ResultError):
            r(data, bad)


def test_hook_fails_the_page_on_a_missing_result(tmp_path, monkeypatch):
    pytest.importorskip("mkdocs", reason="needs the site tools")
    from mkdocs.exceptions import PluginError

    spec = importlib.util.spec_from_file_location("site_hooks_r", ROOT / "scripts" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    write_synthetic(tmp_path / "res" / "h200")
    data = results.load(tmp_path / "res")
    monkeypatch.setattr(hooks.results, "load", lambda *args: data)

    class Page:
        class file:
            src_path = "x.md"

    out = hooks.on_page_markdown("fused: {{ bench value b_num@4096:triton }}.", Page, {}, None)
    assert out == "fused: 900 GB/s."
    with pytest.raises(PluginError, match="no result"):
        hooks.on_page_markdown("{{ bench value b_num@9:triton }}", Page, {}, None)
