"""(e) The site build's caches: the same inputs give the same bytes (so a rebuild does no heavy
work), and a changed input changes the key (so nothing is served stale). Site tier: needs MkDocs.
"""

from __future__ import annotations

import json
import sys

import pytest

from .conftest import ROOT

pytest.importorskip("mkdocs")
sys.path.insert(0, str(ROOT / "scripts"))

import hooks  # noqa: E402
import plots  # noqa: E402
import results  # noqa: E402


def test_a_notebook_has_the_same_bytes_every_time(tmp_path):
    src = tmp_path / "story.py"
    src.write_text("# %% [markdown]\n# # A story\n\n# %%\nx = 1\n# --8<-- [start:k]\ny = 2\n# --8<-- [end:k]\n")
    first, second = hooks.example_to_notebook(src), hooks.example_to_notebook(src)
    assert first == second
    nb = json.loads(first)
    assert [c["id"] for c in nb["cells"]] == [f"cell-{i}" for i in range(len(nb["cells"]))]
    assert set(nb["metadata"]["executed_with"]) == {"python", "torch", "triton"}
    assert "8<" not in first.decode()
    src.write_text(src.read_text().replace("x = 1", "x = 3"))
    assert hooks.example_to_notebook(src) != first


def _data(value: float) -> results.Results:
    row = {"example": "ex", "bench": "b", "x_name": "n", "x": "1", "provider": "triton", "timing": "do_bench",
           "metric": "GB/s", "value": value, "ms_p50": 1.0, "ms_p20": 1.0, "ms_p80": 1.0, "work": 1.0,
           "host_bound": False, "spread": 0.0}
    return results.Results(rows=[row], meta={"ex": {"gpu": "G"}}, specs={"b": {"title": "B"}})


def test_a_plot_key_follows_its_rows_spec_and_meta():
    base = plots.plot_key(_data(1.0), "b")
    assert plots.plot_key(_data(1.0), "b") == base
    assert plots.plot_key(_data(2.0), "b") != base
    other_spec = _data(1.0)
    other_spec.specs["b"]["title"] = "B, renamed"
    assert plots.plot_key(other_spec, "b") != base
    other_meta = _data(1.0)
    other_meta.meta["ex"]["gpu"] = "H"
    assert plots.plot_key(other_meta, "b") != base


def test_keyed_drawing_redraws_only_what_changed(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(plots, "draw", lambda data, bench: drawn.append(bench) or b"<svg/>")
    plots.draw_all(tmp_path, tmp_path / "out", data=_data(1.0), keyed=True)
    plots.draw_all(tmp_path, tmp_path / "out", data=_data(1.0), keyed=True)
    assert drawn == ["b"]
    plots.draw_all(tmp_path, tmp_path / "out", data=_data(2.0), keyed=True)
    assert drawn == ["b", "b"]
    (tmp_path / "out" / "b.svg").unlink()  # a missing plot is drawn again whatever its key says
    plots.draw_all(tmp_path, tmp_path / "out", data=_data(2.0), keyed=True)
    assert drawn == ["b", "b", "b"]


def test_the_shared_inputs_key_changes_with_any_shared_input(tmp_path, monkeypatch):
    for top in hooks.SHARED_INPUTS:
        path = tmp_path / top
        if "." in path.name:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "f.txt").write_text("x")
    monkeypatch.setattr(hooks, "ROOT", tmp_path)
    base = hooks.shared_inputs_key()
    assert hooks.shared_inputs_key() == base
    for top in hooks.SHARED_INPUTS:
        path = tmp_path / top
        target = path if path.is_file() else path / "f.txt"
        target.write_text("y")
        assert hooks.shared_inputs_key() != base, f"an edit under {top} does not change the key"
        target.write_text("x")
    assert hooks.shared_inputs_key() == base
