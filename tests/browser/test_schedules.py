"""Measured schedules: the probe's pure helpers (benchmarks/cases/schedules.py, imported from its
path: no CUDA needed), what the build ships (scripts/schedules.py), and the "programs in flight"
widget drawing a schedule. The widget tests feed it a synthetic document through a routed
assets/data/schedules.json, so they pass with or without the committed H200 record."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math

import pytest

from scripts import schedules as site_schedules

from .harness import DESKTOP, NARROW, ROOT, SITE, open_widget, page_overflow, screenshot, set_dark

PROBE_PATH = ROOT / "benchmarks/cases/schedules.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("schedules_probe", PROBE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- a synthetic schedule

SMS = 132
ENV = {"gpu": "Test GPU", "sm_count": SMS, "torch": "0", "triton": "0", "date": "2026-12-01T00:00:00+00:00"}


def _duration(i: int) -> int:
    """Uneven, deterministic: 8 to 14 µs, in ns."""
    return 8000 + (i * 7919) % 6001


def synthetic_raw(persistent: bool, resident: int = 2, waves: float = 2.5, t0: int = 10**12):
    """(pid, tile, sm, start_ns, end_ns) of a greedy schedule on SMS SMs x `resident` slots."""
    tiles = int(waves * SMS * resident)
    slots = [(t0 + 37 * (k % 5), k % SMS) for k in range(SMS * resident)]  # (free at, sm)
    pid, tile, sm, start, end = [], [], [], [], []
    if persistent:
        P = SMS * resident
        for p in range(P):
            t, s = slots[p]
            for row in range(p, tiles, P):
                d = _duration(row)
                pid.append(p), tile.append(row), sm.append(s), start.append(t), end.append(t + d)
                t += d
    else:
        for p in range(tiles):
            k = min(range(len(slots)), key=lambda j: (slots[j][0], j))
            t, s = slots[k]
            d = _duration(p)
            pid.append(p), tile.append(p), sm.append(s), start.append(t), end.append(t + d)
            slots[k] = (t + d, s)
    return pid, tile, sm, start, end


def synthetic_document(probe) -> dict:
    traces = []
    for name, label, persistent in (("rows", "RMS-norm, one program per row", False),
                                    ("rows-persistent", "RMS-norm, persistent", True)):
        raw = synthetic_raw(persistent)
        runs = probe.normalize(*raw)
        grid = len(set(raw[0]))
        traces.append(probe.trace_record(name, label, f"{name} kernel", grid, runs, ENV))
    return probe.document(traces, ENV)


# ---------------------------------------------------------------- the probe's pure helpers

def test_probe_imports_without_cuda_and_has_no_heavy_imports(probe):
    assert callable(probe.main) and probe.REPS >= 3
    assert "torch" not in vars(probe), "the probe imports torch at import time"


def test_normalize(probe):
    runs = probe.normalize([2, 0, 1], [2, 0, 1], [5, 3, 3], [3500, 1000, 1000], [9000, 2000, 4250])
    assert runs == [
        {"pid": 0, "tile": 0, "sm": 3, "start_us": 0.0, "end_us": 1.0},
        {"pid": 1, "tile": 1, "sm": 3, "start_us": 0.0, "end_us": 3.25},
        {"pid": 2, "tile": 2, "sm": 5, "start_us": 2.5, "end_us": 8.0},
    ]
    assert probe.normalize([], [], [], [], []) == []
    with pytest.raises(ValueError):
        probe.normalize([0], [0], [0], [10], [5])  # ends before it starts
    with pytest.raises(ValueError):
        probe.normalize([0, 1], [0], [0], [10], [5])


def test_median_run_and_span(probe):
    def rep(span):
        return [{"pid": 0, "tile": 0, "sm": 0, "start_us": 0.0, "end_us": span}]

    reps = [rep(5.0), rep(1.0), rep(9.0), rep(3.0), rep(7.0)]
    assert probe.median_run(reps) == 0  # spans 1 3 5 7 9: 5 is the median
    assert probe.median_run([rep(2.0), rep(4.0)]) == 0  # even count: the lower middle
    assert probe.median_run([rep(1.0)]) == 0
    assert probe.span_us(rep(4.5) + [{"pid": 1, "tile": 1, "sm": 1, "start_us": 1.0, "end_us": 6.0}]) == 6.0
    with pytest.raises(ValueError):
        probe.median_run([])


def test_max_resident_and_timer_step(probe):
    runs = probe.normalize(*synthetic_raw(False, resident=3))
    assert probe.max_resident(runs) == 3
    back_to_back = [{"pid": 0, "tile": 0, "sm": 0, "start_us": 0.0, "end_us": 1.0},
                    {"pid": 1, "tile": 1, "sm": 0, "start_us": 1.0, "end_us": 2.0}]
    assert probe.max_resident(back_to_back) == 1
    assert probe.timer_step_ns([0, 64, 96], [160]) == 32
    assert probe.timer_step_ns([5], [5]) is None


def test_document_shape(probe):
    doc = synthetic_document(probe)
    assert probe.check_document(doc) == []
    assert doc["source_sha256"] == hashlib.sha256(PROBE_PATH.read_bytes()).hexdigest()
    assert {"gpu", "sm_count", "torch", "triton", "date", "traces"} <= set(doc)
    rows, persistent = doc["traces"]
    assert rows["grid"] == rows["programs"] == rows["tiles"] == len(rows["runs"]) == int(2.5 * SMS * 2)
    assert persistent["grid"] == persistent["programs"] == 2 * SMS and persistent["tiles"] == len(persistent["runs"])
    assert min(r["start_us"] for r in rows["runs"]) == 0.0
    for tr in doc["traces"]:
        for key in ("name", "label", "kernel", "gpu", "sm_count", "torch", "triton", "date", "span_us", "runs"):
            assert key in tr
        assert all(set(r) == {"pid", "tile", "sm", "start_us", "end_us"} for r in tr["runs"])
    json.dumps(doc)  # plain JSON
    bad = json.loads(json.dumps(doc))
    bad["traces"][0]["runs"][0]["end_us"] = -1
    assert probe.check_document(bad)


def test_probe_without_cuda_writes_nothing(probe, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the probe would really run")
    assert probe.main(["schedules.py", str(tmp_path / "out")]) == 0
    assert "needs CUDA" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- what the build ships

def test_site_blob(tmp_path, probe):
    empty = json.loads(site_schedules.site_blob("h200", tmp_path))
    assert empty["traces"] == []
    doc = synthetic_document(probe)
    (tmp_path / "h200.json").write_text(json.dumps(doc, indent=1))
    assert json.loads(site_schedules.site_blob("h200", tmp_path)) == doc
    (tmp_path / "h200.json").write_text("[]")
    with pytest.raises(ValueError):
        site_schedules.site_blob("h200", tmp_path)


def test_site_ships_schedules(site_dir):
    shipped = site_dir / "assets" / "data" / "schedules.json"
    assert shipped.is_file(), "the build must always ship assets/data/schedules.json (the widget fetches it)"
    doc = json.loads(shipped.read_text())
    assert isinstance(doc["traces"], list)
    committed = ROOT / "benchmarks" / "schedules" / "h200.json"
    if committed.is_file():
        assert doc == json.loads(committed.read_text())
        assert doc["traces"], "the committed record holds no traces"
    else:
        assert doc["traces"] == []


def test_committed_record_is_well_formed(probe):
    committed = ROOT / "benchmarks" / "schedules" / "h200.json"
    if not committed.is_file():
        pytest.skip("no measured schedules committed yet")
    doc = json.loads(committed.read_text())
    assert probe.check_document(doc) == []
    assert {tr["name"] for tr in doc["traces"]} >= {"rows", "rows-persistent"}


# ---------------------------------------------------------------- the widget, measured mode


def control(root, name):
    return root.locator(f'[data-control="{name}"]')


def _route(page, payload):
    page.route("**/assets/data/schedules.json",
               lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(payload)))


def _busy_at(runs, t):
    return len({r["sm"] for r in runs if r["start_us"] <= t < r["end_us"]})


@pytest.mark.browser
def test_measured_schedule(base_url, page, probe):
    doc = synthetic_document(probe)
    _route(page, doc)
    root = open_widget(page, base_url, "programs-in-flight")
    assert root.get_attribute("data-source") == "measured", "measured traces present: the default is measured"
    assert control(root, "tiles").is_hidden() and control(root, "trace").is_visible()
    labels = control(root, "trace").locator("option").evaluate_all("els => els.map(e => e.textContent)")
    assert labels == [tr["label"] for tr in doc["traces"]]
    rows = doc["traces"][0]
    # It opens finished: every run drawn, one lane per SM.
    assert root.get_attribute("data-lanes") == str(SMS)
    assert root.locator('[data-role="lane"]').count() == SMS
    assert root.locator('[data-role="run"]').count() == len(rows["runs"])
    assert root.locator('[data-role="run"][data-state="done"]').count() == len(rows["runs"])
    assert root.get_attribute("data-runs") == str(len(rows["runs"]))
    assert root.get_attribute("data-mode") == "tile"
    drawn = sorted(root.locator('[data-role="run"]').evaluate_all(
        "els => els.map(e => [+e.dataset.pid, +e.dataset.sm])"))
    assert drawn == sorted([r["pid"], r["sm"]] for r in rows["runs"])
    # The time slider walks the real timeline: at 0 nothing has run, halfway the SMs busy are those measured.
    time_in = control(root, "time")
    time_in.focus()
    time_in.press("Home")
    assert root.locator('[data-role="run"][data-state="waiting"]').count() == len(rows["runs"])
    ticks = int(time_in.get_attribute("max"))
    time_in.press("End")
    for _ in range(ticks // 2):
        time_in.press("ArrowLeft")
    span = max(r["end_us"] for r in rows["runs"])
    t = (ticks - ticks // 2) / ticks * span
    assert int(root.get_attribute("data-busy")) == _busy_at(rows["runs"], t)
    status = root.locator('[data-role="status"]').inner_text()
    assert f"{_busy_at(rows['runs'], t)} SMs busy" in status
    running = root.locator('[data-role="run"][data-state="running"]').count()
    assert running == sum(1 for r in rows["runs"] if r["start_us"] <= t < r["end_us"])
    assert "µs" in root.locator('[data-output="time"]').inner_text()
    # The persistent trace: one program per slot, each bar a tile of it.
    control(root, "trace").select_option("1")
    pers = doc["traces"][1]
    assert root.get_attribute("data-mode") == "persistent"
    assert root.get_attribute("data-programs") == str(pers["grid"])
    assert root.locator('[data-role="run"]').count() == len(pers["runs"])
    # Zoom on 16 SMs.
    control(root, "zoom").select_option("16")
    assert root.get_attribute("data-lanes") == "16"
    assert root.locator('[data-role="run"]').count() == sum(1 for r in pers["runs"] if r["sm"] < 16)
    # Play moves time forward from 0.
    time_in.focus()
    time_in.press("Home")
    control(root, "play").click()
    page.wait_for_function("(el) => +el.querySelector('[data-control=time]').value > 0", arg=root.element_handle())
    control(root, "play").click()
    # Back to the toy, and to measured again.
    control(root, "source").select_option("toy")
    assert root.get_attribute("data-source") == "toy" and control(root, "tiles").is_visible()
    assert control(root, "trace").is_hidden()
    control(root, "source").select_option("measured")
    assert root.get_attribute("data-source") == "measured"
    assert "Test GPU" in root.locator('[data-role="provenance"]').inner_text()


@pytest.mark.browser
def test_measured_schedule_dark_and_narrow(base_url, page, probe):
    _route(page, synthetic_document(probe))
    root = open_widget(page, base_url, "programs-in-flight")
    assert root.get_attribute("data-source") == "measured"
    screenshot(root, "programs-in-flight-measured-light")
    lane_light = root.evaluate("el => getComputedStyle(el.querySelector('[data-role=lane]')).fill")
    set_dark(page)
    lane_dark = root.evaluate("el => getComputedStyle(el.querySelector('[data-role=lane]')).fill")
    assert lane_light != lane_dark, "the SM lanes do not follow the dark scheme"
    screenshot(root, "programs-in-flight-measured-dark")
    page.set_viewport_size(NARROW)
    page.wait_for_timeout(100)
    assert page_overflow(page) <= NARROW["width"] + 1
    box = root.bounding_box()
    assert box["width"] <= NARROW["width"]
    svg = root.locator('[data-role="measured-schedule"]').bounding_box()
    assert svg["width"] <= NARROW["width"] and svg["height"] > 150  # 132 lanes stay visible
    screenshot(root, "programs-in-flight-measured-360")
    page.set_viewport_size(DESKTOP)


@pytest.mark.browser
def test_no_measured_traces_means_toy_only(base_url, page):
    _route(page, {"traces": []})
    root = open_widget(page, base_url, "programs-in-flight")
    assert root.get_attribute("data-source") == "toy"
    assert control(root, "source").count() == 0 and control(root, "trace").count() == 0
    assert control(root, "tiles").is_visible()
    assert math.isclose(float(root.get_attribute("data-measured-traces")), 0)


@pytest.mark.browser
def test_site_data_drives_the_default(base_url, page):
    """With the site's own schedules.json: measured when it holds traces, the toy otherwise."""
    doc = json.loads((SITE / "assets" / "data" / "schedules.json").read_text())
    root = open_widget(page, base_url, "programs-in-flight")
    assert root.get_attribute("data-source") == ("measured" if doc["traces"] else "toy")


# ---------------------------------------------------------------- numbers for the pages ({{ schedule ... }})

TINY = {"name": "tiny", "runs": [
    {"pid": 0, "tile": 0, "sm": 0, "start_us": 0.0, "end_us": 4.0},
    {"pid": 1, "tile": 1, "sm": 1, "start_us": 0.0, "end_us": 2.0},  # finished before pid 0
    {"pid": 2, "tile": 2, "sm": 1, "start_us": 2.0, "end_us": 7.0},
]}


def test_schedule_statistics():
    stat = site_schedules.stat
    assert stat(TINY, "span") == 7.0 and stat(TINY, "median_run") == 4.0
    assert stat(TINY, "sm_first_idle") == 4.0 and stat(TINY, "sm_last_idle") == 7.0
    assert stat(TINY, "out_of_order") == 1 and stat(TINY, "programs") == 3 and stat(TINY, "sms_used") == 2
    with pytest.raises(ValueError, match="unknown statistic 'fastest'"):
        stat(TINY, "fastest")


def test_schedule_expression_renders_from_the_record(tmp_path):
    (tmp_path / "h200.json").write_text(json.dumps({"traces": [TINY]}))
    assert site_schedules.render(["tiny", "span"], folder=tmp_path) == "7.0 µs"
    assert site_schedules.render(["tiny", "out_of_order"], folder=tmp_path) == "1"
    with pytest.raises(ValueError, match=r"no trace 'rows'.*traces: \['tiny'\]"):
        site_schedules.render(["rows", "span"], folder=tmp_path)
    with pytest.raises(ValueError, match="needs a trace name and a statistic"):
        site_schedules.render(["tiny"], folder=tmp_path)


def test_schedule_expressions_on_the_pages_name_page_and_line():
    from scripts import expressions, results

    page = expressions.Page("guide/x.md", results.Results(rows=[], meta={}, specs={}))
    with pytest.raises(expressions.ExpressionError, match=r"guide/x.md:2: \{\{ schedule nope span \}\}"):
        expressions.render("text\n{{ schedule nope span }}\n", page)
