"""(b) Each widget on its page: it renders, answers its controls (driven with the keyboard)
with the drawn state the maths says, works in dark mode and at 360 px, and is screenshotted
under test-artifacts/widgets/. Console errors and foreign requests fail every test (page fixture)."""

from __future__ import annotations

import json
import math

import pytest

from .harness import (
    DESKTOP,
    HARNESS,
    NARROW,
    ROOT,
    SITE,
    WIDGET_PAGES,
    open_widget,
    page_overflow,
    press,
    screenshot,
    set_dark,
)

pytestmark = pytest.mark.browser


def control(root, name):
    return root.locator(f'[data-control="{name}"]')


def set_range(root, name, value):
    """Move a range slider to `value` with the keyboard only (Home or End, then arrow keys)."""
    el = control(root, name)
    lo, hi = float(el.get_attribute("min")), float(el.get_attribute("max"))
    step = float(el.get_attribute("step") or 1)
    up, down = round((value - lo) / step), round((hi - value) / step)
    if up <= down:
        press(el, "Home")
        press(el, "ArrowRight", up)
    else:
        press(el, "End")
        press(el, "ArrowLeft", down)
    assert float(el.input_value()) == value, f"{name}: wanted {value}, slider says {el.input_value()}"


def count(root, selector):
    return root.locator(selector).count()


@pytest.mark.skipif(HARNESS, reason="harness mode: the real pages are not checked")
@pytest.mark.parametrize("name, path", [(n, p) for n, ps in WIDGET_PAGES.items() for p in ps])
def test_widget_is_on_its_page(name, path, site_dir):
    """The built page carries the widget (test_site.py checks that it starts there)."""
    html = (site_dir / path / "index.html").read_text()
    assert f'data-widget="{name}"' in html, (
        f'site/{path}index.html has no {name} widget: its page needs --8<-- "docs/widgets/{name}.html"')


def _pose(page, root, name):
    """Put a widget in a state worth a screenshot."""
    if name == "programs-in-flight":
        set_range(root, "time", float(control(root, "time").get_attribute("max")) // 2)
    elif name == "kernel-stepper":
        set_range(root, "pid", 2)
        press(control(root, "next"), "Enter", 4)
    elif name == "matmul-tile":
        set_range(root, "pid", 5)
        set_range(root, "k", 2)
    elif name == "attention-blocks":
        press(control(root, "step"), "Enter", 3)


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_widget_light_dark_narrow(name, base_url, page):
    root = open_widget(page, base_url, name)
    assert root.locator("svg, pre").count() > 0, f"{name} drew nothing"
    _pose(page, root, name)
    labels = root.locator("label")
    for i in range(labels.count()):  # every label names a real control
        target = labels.nth(i).get_attribute("for")
        assert target and page.locator(f"#{target}").count() == 1
    screenshot(root, f"{name}-light")
    light_bg = root.evaluate("el => getComputedStyle(el.querySelector('.tit-title')).color")
    set_dark(page)
    dark_bg = root.evaluate("el => getComputedStyle(el.querySelector('.tit-title')).color")
    assert light_bg != dark_bg, f"{name}: text colour does not follow the dark scheme"
    screenshot(root, f"{name}-dark")
    page.set_viewport_size(NARROW)
    page.wait_for_timeout(100)
    width = page_overflow(page)
    assert width <= NARROW["width"] + 1, f"{name}: page is {width} px wide at 360 px"
    box = root.bounding_box()
    assert box["width"] <= NARROW["width"], f"{name} is {box['width']} px wide at 360 px"
    screenshot(root, f"{name}-360")
    page.set_viewport_size(DESKTOP)


def test_threads_vs_tiles(base_url, page):
    root = open_widget(page, base_url, "threads-vs-tiles")
    for n, block in [(57, 16), (1, 4), (8, 8)]:
        control(root, "block").select_option(str(block))
        set_range(root, "n", n)
        tiles = math.ceil(n / block)
        assert count(root, '[data-role="program"]') == tiles
        assert count(root, '[data-role="thread"]') == tiles * block
        assert count(root, '[data-role="thread"][data-masked="true"]') == tiles * block - n
        indices = [int(v) for v in root.locator('[data-role="thread"]').evaluate_all(
            "els => els.map(e => e.dataset.index)")]
        assert indices == list(range(tiles * block))  # blockIdx * blockDim + threadIdx, in order
        assert f"cdiv({n}, {block}) = {tiles}" in root.locator('[data-role="status"]').inner_text()


def test_tile_partition(base_url, page):
    root = open_widget(page, base_url, "tile-partition")
    assert root.get_attribute("data-source") == "recorded", "tile-partition is not using the recorded kernel trace"
    for n, block in [(29, 8), (1, 32), (17, 16)]:
        set_range(root, "n", n)
        set_range(root, "block", int(math.log2(block)))
        tiles = math.ceil(n / block)
        assert count(root, '[data-role="tile"]') == tiles
        assert count(root, '[data-role="lane"]') == tiles * block
        assert count(root, '[data-role="lane"][data-masked="true"]') == tiles * block - n
        offsets = root.locator('[data-role="lane"]').evaluate_all("els => els.map(e => +e.dataset.offset)")
        assert offsets == list(range(tiles * block))
        masked = root.locator('[data-role="lane"][data-masked="true"]').evaluate_all(
            "els => els.map(e => +e.dataset.offset)")
        assert masked == list(range(n, tiles * block))
        assert f"cdiv({n}, {block}) = {tiles}" in root.locator('[data-role="status"]').inner_text()
        assert root.get_attribute("data-source") == "recorded"


def _tiles_by_program(root):
    data = root.locator('[data-role="tile"]').evaluate_all(
        "els => els.map(e => [+e.dataset.tile, +e.dataset.program, e.dataset.state])")
    return sorted(data)


def test_programs_in_flight(base_url, page):
    """The toy schedule (the measured one: tests/browser/test_schedules.py)."""
    root = open_widget(page, base_url, "programs-in-flight")
    if control(root, "source").count():  # measured traces present: the toy is the second source
        control(root, "source").select_option("toy")
    assert root.get_attribute("data-source") == "toy"
    set_range(root, "tiles", 20)
    set_range(root, "sms", 3)
    # One program per tile: 20 programs; run it to the end; all done, not in pid order.
    control(root, "end").click()
    tiles = _tiles_by_program(root)
    assert [t for t, _, _ in tiles] == list(range(20))
    assert all(p == t and s == "done" for t, p, s in tiles)
    order = [int(v) for v in root.get_attribute("data-finish-order").split(",")]
    assert sorted(order) == list(range(20)) and order != list(range(20)), "programs finished in pid order"
    assert root.get_attribute("data-programs") == "20"
    # Persistent: 3 programs, program p handles tiles p, p + 3, p + 6, ...
    control(root, "mode").select_option("persistent")
    assert _tiles_by_program(root)[0][2] == "waiting"
    control(root, "end").click()
    tiles = _tiles_by_program(root)
    assert root.get_attribute("data-programs") == "3"
    for p in range(3):
        assert [t for t, q, _ in tiles if q == p] == list(range(p, 20, 3))
    assert all(s == "done" for _, _, s in tiles)
    assert count(root, '[data-role="run"]') == 20
    # Play moves time forward; scrubbing the time slider back to 0 clears the schedule.
    press(control(root, "time"), "Home")
    assert count(root, '[data-role="run"]') == 0
    control(root, "play").click()
    page.wait_for_function("(el) => +el.querySelector('[data-control=time]').value > 0", arg=root.element_handle())
    control(root, "play").click()  # pause


def _kernel_source() -> list[str]:
    from scripts import sections  # the one section-marker parser

    return sections.section(ROOT / "examples" / "vector_add.py", "kernel")


def test_kernel_stepper(base_url, page):
    root = open_widget(page, base_url, "kernel-stepper")
    source = _kernel_source()
    shown = root.locator(".tit-line").evaluate_all("els => els.map(e => e.textContent)")
    assert [s.strip() for s in shown] == [s.strip() for s in source], "the stepper does not show add_kernel's source"
    expect = [("tl.program_id", None), ("offsets = ", None), ("mask = ", None),
              ("tl.load(x_ptr", "x"), ("tl.load(y_ptr", "y"), ("tl.store(z_ptr", "z")]
    nxt = control(root, "next")
    for pid in range(3):  # N = 10, BLOCK_SIZE = 4: three programs, the last one ragged
        press(control(root, "reset"), "Enter")
        set_range(root, "pid", pid)
        assert root.locator('.tit-line[data-active="true"]').count() == 0
        for step, (needle, tensor) in enumerate(expect):
            press(nxt, "Enter")
            active = root.locator('.tit-line[data-active="true"]')
            assert active.count() == 1
            line = int(active.get_attribute("data-line"))
            assert needle in source[line], f"step {step}: highlighted {source[line]!r}, expected {needle!r}"
            touched = root.locator('[data-role="mem"][data-touched="true"]').evaluate_all(
                "els => els.map(e => [e.dataset.tensor, +e.dataset.index])")
            if tensor is None:
                assert touched == []
            else:
                assert touched == [[tensor, i] for i in range(pid * 4, min(10, pid * 4 + 4))]
    # Last program after its store: z holds x + y = 101 i everywhere, lanes 10 and 11 masked.
    z = root.locator('[data-role="mem"][data-tensor="z"][data-inside="true"]').evaluate_all(
        "els => els.map(e => e.textContent)")
    assert z == [str(101 * i) for i in range(10)]
    masks = root.locator('[data-role="reg"][data-reg="mask"]').evaluate_all("els => els.map(e => e.textContent)")
    assert masks == ["T", "T", "F", "F"]


def _softmax_bytes(n):
    m = max(1, 2**26 // n)
    return (8 * m * n + 4 * m) * 4, 2 * m * n * 4


def _site_softmax_rows():
    path = SITE / "assets" / "data" / "results.json"
    rows = json.loads(path.read_text())["rows"] if path.exists() else []
    return [r for r in rows if r["bench"] == "softmax_fp32"]


def test_softmax_timeline_from_site_data(base_url, page):
    root = open_widget(page, base_url, "softmax-timeline")
    status = root.locator('[data-role="status"]')
    have = _site_softmax_rows()
    if have:
        assert root.get_attribute("data-measured") == "true"
        assert count(root, '[data-role="measured"]') > 0
    else:
        assert root.get_attribute("data-measured") == "false"
        assert "No measured times are available" in status.inner_text()
        assert count(root, '[data-role="measured"]') == 0
    for n in [int(v) for v in control(root, "n").locator("option").evaluate_all("els => els.map(e => e.value)")][:4]:
        control(root, "n").select_option(str(n))
        unfused, fused = _softmax_bytes(n)
        assert count(root, '[data-role="kernel"][data-variant="unfused"]') == 5
        assert count(root, '[data-role="kernel"][data-variant="fused"]') == 1
        drawn = root.locator('[data-role="kernel"][data-variant="unfused"]').evaluate_all(
            "els => els.reduce((a, e) => a + +e.dataset.bytes, 0)")
        assert drawn == unfused
        assert int(root.get_attribute("data-fused-bytes")) == fused


def test_softmax_timeline_with_measured_times(base_url, page):
    """Feed the widget a results.json with softmax rows: it must show the measured times."""
    rows = []
    for n, times in [(1024, (0.070, 0.080, 0.110)), (4096, (0.068, 0.095, 0.101))]:
        for provider, ms in zip(["triton", "torch", "torch.compile"], times, strict=True):
            work = 2 * 2**26 * 4
            rows.append({"example": "softmax", "bench": "softmax_fp32", "x_name": "N", "x": str(n),
                         "provider": provider, "timing": "do_bench", "metric": "GB/s", "value": work / ms / 1e6,
                         "ms_p50": ms, "ms_p20": ms, "ms_p80": ms, "work": work})
    payload = {"rows": rows, "meta": {"softmax": {"gpu": "NVIDIA H200", "ceilings": {"copy_gbps": 4274.0}}}}
    page.route("**/assets/data/results.json",
               lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(payload)))
    root = open_widget(page, base_url, "softmax-timeline")
    assert root.get_attribute("data-measured") == "true"
    options = control(root, "n").locator("option").evaluate_all("els => els.map(e => e.value)")
    assert options == ["1024", "4096"]
    control(root, "n").select_option("4096")
    measured = root.locator('[data-role="measured"]').evaluate_all(
        "els => els.map(e => [e.dataset.provider, +e.dataset.ms])")
    assert sorted(measured) == sorted([["triton", 0.068], ["torch", 0.095], ["torch.compile", 0.101]])
    status = root.locator('[data-role="status"]').inner_text()
    assert "0.0680 ms" in status and "NVIDIA H200" in status and "No measured" not in status


def _grouped(pid, gm, gn, group=2):
    in_group = group * gn
    first = (pid // in_group) * group
    size = min(gm - first, group)
    return first + (pid % in_group) % size, (pid % in_group) // size


def test_matmul_tile(base_url, page):
    root = open_widget(page, base_url, "matmul-tile")
    M, N, K, BM, BN, BK = 112, 160, 80, 16, 32, 32
    set_range(root, "M", M)
    set_range(root, "N", N)
    set_range(root, "K", K)
    set_range(root, "BM", 4)
    set_range(root, "BN", 5)
    set_range(root, "BK", 5)
    gm, gn, kt = math.ceil(M / BM), math.ceil(N / BN), math.ceil(K / BK)
    assert count(root, '[data-role="c-tile"]') == gm * gn
    assert count(root, '[data-role="a-tile"]') == gm * kt
    assert count(root, '[data-role="b-tile"]') == kt * gn
    pid = 13
    for order, coords in [("row", lambda q: divmod(q, gn)), ("grouped", lambda q: _grouped(q, gm, gn))]:
        control(root, "order").select_option(order)
        set_range(root, "pid", pid)
        pm, pn = coords(pid)
        for k in range(kt):  # the program streams K-tiles of A's row panel and B's column panel
            set_range(root, "k", k)
            a = root.locator('[data-role="a-tile"][data-active="true"]')
            b = root.locator('[data-role="b-tile"][data-active="true"]')
            assert (a.count(), b.count()) == (1, 1)
            assert (int(a.get_attribute("data-m")), int(a.get_attribute("data-k"))) == (pm, k)
            assert (int(b.get_attribute("data-n")), int(b.get_attribute("data-k"))) == (pn, k)
        c = root.locator('[data-role="c-tile"][data-active="true"]')
        assert (int(c.get_attribute("data-pid-m")), int(c.get_attribute("data-pid-n"))) == (pm, pn)
        assert int(c.get_attribute("data-pid")) == pid
        for inflight in (4, 6):
            set_range(root, "inflight", inflight)
            start = pid // inflight * inflight
            window = [coords(q) for q in range(start, min(start + inflight, gm * gn))]
            assert int(root.get_attribute("data-a-panels")) == len({m for m, _ in window}), (order, inflight)
            assert int(root.get_attribute("data-b-panels")) == len({n for _, n in window}), (order, inflight)
            assert count(root, '[data-role="c-tile"][data-inflight="true"]') == len(window)
    # Grouped order shares panels: 4 programs in flight need fewer panels than in row-major order.
    set_range(root, "inflight", 4)
    set_range(root, "pid", 0)
    control(root, "order").select_option("row")
    row_panels = int(root.get_attribute("data-a-panels")) + int(root.get_attribute("data-b-panels"))
    control(root, "order").select_option("grouped")
    grouped_panels = int(root.get_attribute("data-a-panels")) + int(root.get_attribute("data-b-panels"))
    assert (row_panels, grouped_panels) == (5, 4)


def test_strides(base_url, page):
    import torch

    root = open_widget(page, base_url, "strides")
    layouts = {
        "contiguous": torch.empty(4, 6),
        "transposed": torch.empty(6, 4).t(),
        "sliced": torch.empty(4, 12)[:, ::2],
    }
    for layout, t in layouts.items():
        for bm, bn in [(4, 6), (2, 3)]:
            control(root, "layout").select_option(layout)
            set_range(root, "block_m", bm)
            set_range(root, "block_n", bn)
            stride_m, stride_n = t.stride()
            offs_m, offs_n = torch.arange(bm), torch.arange(bn)
            expected = (offs_m[:, None] * stride_m + offs_n[None, :] * stride_n).tolist()
            shown = json.loads(root.locator('[data-role="address-list"]').get_attribute("data-addresses"))
            assert shown == expected, (layout, bm, bn)
            text = root.locator('[data-role="address-list"]').inner_text()
            assert all(f"[{', '.join(map(str, row))}]" in text for row in expected)
            touched = root.locator('[data-role="addr"][data-touched="true"]').evaluate_all(
                "els => els.map(e => +e.dataset.address)")
            assert touched == sorted({a for row in expected for a in row})
    # Custom strides from the keyboard: stride_m 5, stride_n 2; layout switches to "custom".
    set_range(root, "stride_m", 5)
    set_range(root, "stride_n", 2)
    assert control(root, "layout").input_value() == "custom"
    shown = json.loads(root.locator('[data-role="address-list"]').get_attribute("data-addresses"))
    assert shown == [[m * 5 + n * 2 for n in range(3)] for m in range(2)]



def test_strides_memory_strip_is_drawn_at_phone_width(base_url, page):
    # on a phone the flat-memory strip is drawn at the width it is shown at (8 cells a row), so
    # its numbers keep their size instead of shrinking with a 640-px drawing
    page.set_viewport_size(NARROW)
    root = open_widget(page, base_url, "strides")
    set_range(root, "block_m", 3)  # redraw at this width
    strip = root.locator('svg[aria-label^="Flat memory"]')
    drawn = float(strip.get_attribute("width"))
    shown = strip.bounding_box()["width"]
    assert drawn <= NARROW["width"] and shown >= 0.95 * drawn, (drawn, shown)
    ys = root.locator('[data-role="addr"] rect').evaluate_all("els => els.slice(0, 9).map(e => +e.getAttribute('y'))")
    assert len(set(ys[:8])) == 1 and ys[8] > ys[0]  # a new row after 8 cells
    page.set_viewport_size(DESKTOP)
