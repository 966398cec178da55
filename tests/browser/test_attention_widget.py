"""(b) The attention-blocks widget (docs/widgets/attention-blocks.html) on the fused attention page:
the K/V blocks one program of attn_fwd_kernel visits, in the kernel's order, the causal skip of the
blocks above the diagonal, the masked lanes, and the online softmax (m, l, alpha) on the widget's toy
numbers checked against a direct softmax of the same rows. Driven with the keyboard only.
Console errors and foreign requests fail every test (page fixture)."""

from __future__ import annotations

import json
import math

import pytest

from .harness import DESKTOP, NARROW, contrast, open_widget, page_overflow, press, screenshot, set_dark

pytestmark = pytest.mark.browser

NAME = "attention-blocks"


def control(root, name):
    return root.locator(f'[data-control="{name}"]')


def set_range(root, name, value):
    """Move a range slider to `value` with the keyboard only (Home or End, then arrow keys)."""
    el = control(root, name)
    lo, hi = int(el.get_attribute("min")), int(el.get_attribute("max"))
    assert lo <= value <= hi, f"{name}: {value} outside [{lo}, {hi}]"
    if value - lo <= hi - value:
        press(el, "Home")
        press(el, "ArrowRight", value - lo)
    else:
        press(el, "End")
        press(el, "ArrowLeft", hi - value)
    assert int(el.input_value()) == value


def set_select(root, name, value):
    """Pick an option of a <select> with the keyboard (Home, then ArrowDown to it)."""
    el = control(root, name)
    values = el.locator("option").evaluate_all("els => els.map(e => e.value)")
    press(el, "Home")
    press(el, "ArrowDown", values.index(str(value)))
    assert el.input_value() == str(value), f"{name}: wanted {value}, got {el.input_value()}"


def set_causal(root, on):
    box = control(root, "causal")
    if box.is_checked() != on:
        press(box, "Space")
    assert box.is_checked() == on


def configure(root, seq, bm, bn, causal, pid):
    set_range(root, "seq", seq)
    set_select(root, "block_m", bm)
    set_select(root, "block_n", bn)
    set_causal(root, causal)
    set_range(root, "pid", pid)
    assert (int(root.get_attribute("data-seq")), int(root.get_attribute("data-block-m")),
            int(root.get_attribute("data-block-n")), root.get_attribute("data-causal"),
            int(root.get_attribute("data-pid"))) == (seq, bm, bn, "true" if causal else "false", pid)
    assert root.get_attribute("data-step") == "0"


def geometry(seq, bm, bn, causal, pid):
    """From the block shapes alone (not the kernel's n_free/n_end): which key blocks program `pid`
    must load, which of them need a mask, and which it can skip."""
    nblocks = math.ceil(seq / bn)
    queries = range(pid * bm, min(seq, pid * bm + bm))
    loaded, masked, skipped = [], [], []
    for j in range(nblocks):
        keys = range(j * bn, j * bn + bn)  # padded: keys >= seq are in the block too
        if causal and j * bn > queries[-1]:  # every key of the block is after every query: never loaded
            skipped.append(j)
            continue
        loaded.append(j)
        if any(k >= seq or (causal and k > q) for q in queries for k in keys):
            masked.append(j)
    return loaded, masked, skipped


def masked_lanes(seq, bm, bn, causal, pid, blocks):
    return sorted((q, k) for j in blocks for q in range(pid * bm, min(seq, pid * bm + bm))
                  for k in range(j * bn, j * bn + bn) if k >= seq or (causal and k > q))


def tiles(root, **where):
    sel = '[data-role="tile"]' + "".join(f'[data-{k}="{v}"]' for k, v in where.items())
    return root.locator(sel).evaluate_all("els => els.map(e => +e.dataset.kblock)")


def rows(root):
    return root.locator('[data-role="query-row"]').evaluate_all(
        "els => els.map(e => Object.assign({}, e.dataset))")


def direct(scores, values, keys):
    m = max(scores[k] for k in keys)
    p = {k: 2.0 ** (scores[k] - m) for k in keys}
    l = math.fsum(p.values())
    o = math.fsum(p[k] * values[k] for k in keys) / l
    lse = math.log(math.fsum(math.exp(scores[k] * math.log(2)) for k in keys))  # scores are in log2 units
    return m, l, o, lse


SETTINGS = [  # seq, BLOCK_M, BLOCK_N, causal, pid
    (20, 8, 4, True, 1),
    (20, 8, 4, False, 1),
    (22, 8, 4, False, 2),   # ragged: the last key block masked, the last query block half past the end
    (64, 8, 8, True, 7),
    (64, 16, 4, True, 0),
    (37, 8, 2, True, 4),    # ragged and causal: the diagonal is the last, short block
    (13, 4, 4, True, 2),
]


@pytest.mark.parametrize("seq, bm, bn, causal, pid", SETTINGS)
def test_blocks_follow_the_kernel(seq, bm, bn, causal, pid, base_url, page):
    root = open_widget(page, base_url, NAME)
    configure(root, seq, bm, bn, causal, pid)
    loaded, masked, skipped = geometry(seq, bm, bn, causal, pid)
    nblocks = math.ceil(seq / bn)
    programs = math.ceil(seq / bm)
    assert int(root.get_attribute("data-blocks")) == nblocks
    assert int(root.get_attribute("data-visits")) == len(loaded)
    assert int(root.get_attribute("data-skipped")) == len(skipped)
    assert int(root.get_attribute("data-masked")) == len(masked)
    assert root.locator('[data-role="tile"]').count() == programs * nblocks
    assert tiles(root, mine="true", state="skipped") == skipped
    assert tiles(root, mine="true", state="pending") == loaded
    assert tiles(root, mine="true", masked="true") == masked
    # Causal: every program skips exactly the blocks above the diagonal; summed over the programs.
    per_program = [geometry(seq, bm, bn, causal, q) for q in range(programs)]
    assert int(root.get_attribute("data-total-loaded")) == sum(len(g[0]) for g in per_program)
    assert int(root.get_attribute("data-total-skipped")) == sum(len(g[2]) for g in per_program)
    assert len(tiles(root, state="other-skipped")) + len(skipped) == sum(len(g[2]) for g in per_program)
    if not causal:
        assert int(root.get_attribute("data-total-skipped")) == 0
    # The masked lanes drawn are the (query, key) pairs the kernel sets to -inf.
    lanes = root.locator('[data-role="lane"]').evaluate_all("els => els.map(e => [+e.dataset.query, +e.dataset.key])")
    assert sorted(map(tuple, lanes)) == masked_lanes(seq, bm, bn, causal, pid, masked)

    # Step through: the blocks come in the kernel's order (unmasked [0, n_free), then masked).
    step = control(root, "step")
    order = []
    for k in range(1, len(loaded) + 1):
        before = rows(root)
        press(step, "Enter")
        assert int(root.get_attribute("data-step")) == k
        cur = int(root.get_attribute("data-current"))
        order.append(cur)
        assert tiles(root, mine="true", state="current") == [cur]
        assert tiles(root, mine="true", state="visited") == order[:-1]
        assert tiles(root, mine="true", state="skipped") == skipped
        status = root.locator('[data-role="status"]').inner_text()
        keys_hi = min(cur * bn + bn, seq) - 1
        assert f"block {cur} of {nblocks}: keys {cur * bn}..{keys_hi}" in status
        assert ("masked (" in status) == (cur in masked)
        assert f"Loaded {k} of {len(loaded)}, skipped {len(skipped)}" in status
        after = rows(root)
        assert after != before
        # Running max and sum after k blocks == max and sum over the keys of those blocks.
        values = json.loads(root.get_attribute("data-values"))
        for r in after:
            i, scores = int(r["query"]), json.loads(r["scores"])
            seen = [key for j in order for key in range(j * bn, min(j * bn + bn, seq)) if not causal or key <= i]
            m = max(scores[key] for key in seen)
            l = math.fsum(2.0 ** (scores[key] - m) for key in seen)
            assert float(r["m"]) == m
            assert abs(float(r["l"]) - l) <= 1e-9
            alpha = float(r["alpha"])
            assert 0 <= alpha <= 1
            assert (k == 1 and alpha == 0) or k > 1
            acc = math.fsum(2.0 ** (scores[key] - m) * values[key] for key in seen)
            assert abs(float(r["acc"]) - acc) <= 1e-9
    assert order == loaded == sorted(order)
    unmasked = [j for j in loaded if j not in masked]
    assert order == unmasked + [j for j in loaded if j in masked]  # unmasked first, then masked
    press(step, "Enter")  # the epilogue: o = acc / l, lse
    assert step.is_disabled()
    assert tiles(root, mine="true", state="visited") == loaded
    assert float(root.get_attribute("data-check-error")) <= 1e-12


@pytest.mark.parametrize("causal", [False, True])
def test_online_softmax_equals_direct(causal, base_url, page):
    """After the last block, the JS online m, l, o and lse equal a direct softmax of the same toy rows."""
    root = open_widget(page, base_url, NAME)
    seq, bm, bn = 45, 16, 4
    set_range(root, "seq", seq)
    set_select(root, "block_m", bm)
    set_select(root, "block_n", bn)
    set_causal(root, causal)
    values = json.loads(root.get_attribute("data-values"))
    assert len(values) == seq
    checked = 0
    for pid in range(math.ceil(seq / bm)):
        set_range(root, "pid", pid)
        press(control(root, "step"), "Enter", int(root.get_attribute("data-steps")))
        assert control(root, "step").is_disabled()
        table = rows(root)
        assert len(table) == min(seq, pid * bm + bm) - pid * bm
        assert root.locator('[data-role="pad-query"]').count() == bm - len(table)
        for r in table:
            i, scores = int(r["query"]), json.loads(r["scores"])
            assert len(scores) == seq
            keys = range(i + 1) if causal else range(seq)
            m, l, o, lse = direct(scores, values, keys)
            assert abs(float(r["m"]) - m) <= 1e-9
            assert abs(float(r["l"]) - l) <= 1e-9
            assert abs(float(r["o"]) - o) <= 1e-9
            assert abs(float(r["lse"]) - lse) <= 1e-9
            checked += 1
        assert float(root.get_attribute("data-check-error")) <= 1e-12
    assert checked == seq


def test_toy_numbers_are_deterministic(base_url, page, context):
    root = open_widget(page, base_url, NAME)
    first = (root.get_attribute("data-values"), rows(root)[0]["scores"])
    other = context.new_page()
    try:
        again = open_widget(other, base_url, NAME)
        assert (again.get_attribute("data-values"), rows(again)[0]["scores"]) == first
    finally:
        other.close()
    scores = json.loads(first[1])
    assert all(-4 <= x <= 4 for x in scores) and len(set(scores)) > len(scores) // 2


def test_causal_halves_the_work(base_url, page):
    root = open_widget(page, base_url, NAME)
    configure(root, 64, 8, 8, False, 0)
    assert (int(root.get_attribute("data-total-loaded")), int(root.get_attribute("data-total-skipped"))) == (64, 0)
    set_causal(root, True)
    assert (int(root.get_attribute("data-total-loaded")), int(root.get_attribute("data-total-skipped"))) == (36, 28)
    assert "36 block loads, 28 skipped" in root.locator('[data-role="status"]').inner_text()


def test_keyboard_back_reset_play_and_constraints(base_url, page):
    root = open_widget(page, base_url, NAME)
    configure(root, 24, 8, 4, True, 2)  # 6 blocks: 4 unmasked, 2 masked (diagonal), none skipped
    assert root.get_attribute("data-visits") == "6" and root.get_attribute("data-skipped") == "0"
    back, matrix = control(root, "back"), root.locator('[data-role="matrix"]')
    assert back.is_disabled()
    press(matrix, "ArrowRight", 3)  # the matrix takes arrow keys too
    assert root.get_attribute("data-step") == "3"
    press(back, "Enter")
    assert root.get_attribute("data-step") == "2"
    press(matrix, "ArrowLeft")
    assert root.get_attribute("data-step") == "1"
    press(matrix, "Home")
    assert root.get_attribute("data-step") == "0"
    press(control(root, "step"), "Space", 2)
    press(control(root, "reset"), "Enter")
    assert root.get_attribute("data-step") == "0"
    # Play steps on its own; pressing it again pauses.
    play = control(root, "play")
    press(play, "Enter")
    assert play.inner_text() == "Pause"
    page.wait_for_function("(el) => +el.dataset.step >= 2", arg=root.element_handle(), timeout=5_000)
    press(play, "Enter")
    assert play.inner_text() == "Play"
    held = root.get_attribute("data-step")
    page.wait_for_timeout(1_200)
    assert root.get_attribute("data-step") == held
    # BLOCK_M must stay a multiple of BLOCK_N (the launcher's rule): BLOCK_N follows BLOCK_M down.
    set_select(root, "block_n", 8)
    set_select(root, "block_m", 4)
    assert control(root, "block_n").input_value() == "4"
    disabled = control(root, "block_n").locator("option").evaluate_all(
        "els => els.filter(e => e.disabled).map(e => e.value)")
    assert disabled == ["8"]
    # Fewer programs when seq shrinks: the pid slider follows.
    set_range(root, "seq", 8)
    assert control(root, "pid").get_attribute("max") == "1"


def test_dark_mode_and_narrow(base_url, page):
    root = open_widget(page, base_url, NAME)
    press(control(root, "step"), "Enter", 3)  # block 2 of program 1: loaded, masked (the diagonal)
    screenshot(root, "attention-blocks-stepped-light")
    colours = """el => {
      const bg = getComputedStyle(el).backgroundColor;
      const td = getComputedStyle(el.querySelector('[data-role="query-row"] td')).color;
      const mark = getComputedStyle(el.querySelector('.tit-att-mark')).fill;
      const status = getComputedStyle(el.querySelector('[data-role="status"]')).color;
      return {bg, td, mark, status};
    }"""
    light = root.evaluate(colours)
    set_dark(page)
    dark = root.evaluate(colours)
    assert dark["bg"] != light["bg"] and dark["td"] != light["td"]
    for c in (light, dark):
        assert contrast(c["td"], c["bg"]) >= 4.5, c
        assert contrast(c["status"], c["bg"]) >= 3, c
    screenshot(root, "attention-blocks-stepped-dark")
    page.set_viewport_size(NARROW)
    set_range(root, "seq", 64)
    set_select(root, "block_m", 16)
    set_select(root, "block_n", 2)
    page.wait_for_timeout(100)
    assert page_overflow(page) <= NARROW["width"] + 1
    assert root.bounding_box()["width"] <= NARROW["width"]
    screenshot(root, "attention-blocks-stepped-360")
    page.set_viewport_size(DESKTOP)
