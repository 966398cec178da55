"""(e) The site build's caches: the same inputs give the same bytes (so a rebuild does no heavy
work), and a changed input changes the key (so nothing is served stale). Site tier: needs MkDocs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")

from scripts import hooks, plots, results


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


# ----------------------------------------------------------------------------- executed notebooks

from scripts import notebooks  # noqa: E402


def _notebook(tmp_path, name: str, body: str) -> bytes:
    src = tmp_path / f"{name}.py"
    src.write_text("# %% [markdown]\n# # A story\n\n" + body)
    return hooks.example_to_notebook(src)


STORY = ("# %%\nimport inspect\n\ndef f():\n    return 41\n\nprint('source has', len(inspect.getsource(f)), 'chars')"
         "\n\n# %%\nif __name__ == '__main__':\n    print('main', f() + 1)\nf() * 2\n")


def test_a_notebook_runs_as_main_with_its_outputs(tmp_path):
    nb = json.loads(_notebook(tmp_path, "story", STORY))
    out = notebooks.execute_notebook(nb, "story", tmp_path)
    code = [c for c in out["cells"] if c["cell_type"] == "code"]
    # inspect finds the cell's source (@triton.jit needs it): "def f():\n    return 41\n" is 23 characters
    assert code[0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "source has 23 chars\n"}]
    assert code[1]["outputs"][0]["text"] == "main 42\n"  # __name__ == "__main__", as in a kernel
    assert code[1]["outputs"][1]["data"] == {"text/plain": "82"}  # the last bare expression, as Jupyter shows it
    assert [c["execution_count"] for c in code] == [1, 2]


def test_a_failing_cell_names_the_example_and_the_cell(tmp_path):
    nb = json.loads(_notebook(tmp_path, "broken", "# %%\nx = 1\n\n# %%\nprint('before')\nraise ValueError('no')\n"))
    with pytest.raises(notebooks.NotebookError, match=r"examples/broken\.py, code cell 2 .*raised:\nbefore\n"):
        notebooks.execute_notebook(nb, "broken", tmp_path)


def test_notebooks_run_once_per_input_and_again_when_it_changes(tmp_path):
    cache = tmp_path / "cache"
    first = {"a": _notebook(tmp_path, "a", "# %%\nprint('a', 1)\n"), "b": _notebook(tmp_path, "b", STORY)}
    run = notebooks.Run(first, cache, jobs=2).start()
    assert sorted(stem for stem, _ in run.missing) == ["a", "b"] and len(run.procs) == 2
    executed = run.wait()
    assert "a 1" in executed["a"].decode() and "main 42" in executed["b"].decode()
    again = notebooks.Run(first, cache).start()
    assert again.missing == [] and again.procs == [] and again.wait() == executed  # nothing runs twice
    changed = {**first, "a": _notebook(tmp_path, "a", "# %%\nprint('a', 2)\n")}
    rerun = notebooks.Run(changed, cache).start()
    assert [stem for stem, _ in rerun.missing] == ["a"]
    assert "a 2" in rerun.wait()["a"].decode()
    assert len(list(cache.glob("a-*.ipynb"))) == 1  # the old execution is dropped


def test_a_failing_worker_fails_the_run(tmp_path):
    bad = {"bad": _notebook(tmp_path, "bad", "# %%\n1 / 0\n")}
    with pytest.raises(notebooks.NotebookError, match="examples/bad.py, code cell 1"):
        notebooks.Run(bad, tmp_path / "cache").start().wait()
    assert not list((tmp_path / "cache").glob("bad-*.ipynb"))


# ----------------------------------------------------------------------------- outputs a GPU check recorded

from scripts import gpu_check  # noqa: E402
from scripts.verified import recorded_output, sha256  # noqa: E402


def _record(tmp_path, src: Path, output: str) -> Path:
    """A verified/ folder whose record and outputs file cover `src` as it is now."""
    verified = tmp_path / "verified"
    record = {"gpu": "NVIDIA H200", "gpu_slug": "h200", "date": "2026-12-02T00:37:57+00:00", "seeds": [7],
              "files": {f"examples/{src.name}": sha256(src)}}
    gpu_check.write_outputs(record, {src.stem: output}, verified)
    return verified


def test_a_recorded_output_is_shown_only_beside_the_file_that_printed_it(tmp_path):
    src = tmp_path / "story.py"
    src.write_text("# %% [markdown]\n# # A story\n\n# %%\nx = 1\n\n# %%\nif __name__ == '__main__':\n    print(x)\n")
    verified = _record(tmp_path, src, "1 on cuda\n")
    got = recorded_output(src, verified)
    assert got == {"output": "1 on cuda\n", "gpu": "NVIDIA H200", "date": "2026-12-02T00:37:57+00:00",
                   "file": "examples/story.py"}
    src.write_text(src.read_text().replace("x = 1", "x = 2"))  # edited since the GPU run: not its output
    assert recorded_output(src, verified) is None
    assert recorded_output(src, tmp_path / "nothing-here") is None


def test_a_recorded_notebook_carries_the_output_and_says_where_it_comes_from(tmp_path):
    source = "# %% [markdown]\n# # A story\n\n# %%\nx = 1\n\n# %%\nif __name__ == '__main__':\n    print(x)\n"
    recorded = {"output": "1 on cuda\n", "gpu": "NVIDIA H200", "date": "2026-12-02T00:37:57+00:00",
                "file": "examples/story.py"}
    nb = json.loads(notebooks.example_to_notebook(source, recorded))
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "code", "markdown", "code"]  # the note sits just above the cell that prints
    assert "NVIDIA H200" in "".join(nb["cells"][2]["source"]) and "2026-12-02" in "".join(nb["cells"][2]["source"])
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == [1, 2]
    assert code[0]["outputs"] == []
    (out,) = code[1]["outputs"]
    assert (out["output_type"], out["name"], "".join(out["text"])) == ("stream", "stdout", "1 on cuda\n")
    assert nb["metadata"]["recorded_on"] == {"gpu": "NVIDIA H200", "date": "2026-12-02T00:37:57+00:00"}
    assert [c["id"] for c in nb["cells"]] == [f"cell-{i}" for i in range(4)]
    assert json.loads(notebooks.example_to_notebook(source)) != nb  # without a record: the plain notebook


def test_a_recorded_notebook_is_not_run_again(tmp_path):
    # the code would fail in the interpreter; the recorded output is shown, nothing is executed
    source = "# %% [markdown]\n# # A story\n\n# %%\nif __name__ == '__main__':\n    1 / 0\n"
    recorded = {"output": "ran on the GPU\n", "gpu": "NVIDIA H200", "date": "2026-12-02T00:37:57+00:00"}
    nb = notebooks.example_to_notebook(source, recorded)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "timings.json").write_text(json.dumps({"story": 12.5}))  # its last time in the interpreter
    executed = notebooks.Run({"story": nb}, cache).start().wait()
    assert "ran on the GPU" in executed["story"].decode()
    assert json.loads((cache / "timings.json").read_text()) == {"story": 12.5}  # kept for the queue's order


def test_outputs_come_only_from_the_logs_of_the_recorded_run(tmp_path):
    src = tmp_path / "story.py"
    src.write_text("print('hi')\n")
    record = {"gpu": "NVIDIA H200", "gpu_slug": "h200", "driver": "1", "python": "3.12", "torch": "2", "triton": "3",
              "date": "2026-12-02T00:37:57+00:00", "seeds": [7], "files": {"examples/story.py": sha256(src)}}
    (tmp_path / "verified").mkdir()
    record_path = tmp_path / "verified" / "h200.json"
    record_path.write_text(json.dumps(record))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "example_story.txt").write_text("$ python examples/story.py\nhi\n")
    info = {k: record[k] for k in ("gpu", "driver", "python", "torch", "triton")}
    (logs / "summary.json").write_text(json.dumps({"info": info, "seeds": [8]}))
    with pytest.raises(ValueError, match="seeds differ"):
        gpu_check.outputs_from_logs(logs, record_path)
    (logs / "summary.json").write_text(json.dumps({"info": info, "seeds": [7]}))
    path = gpu_check.outputs_from_logs(logs, record_path)
    assert path == tmp_path / "verified" / "outputs" / "h200.json"
    assert json.loads(path.read_text())["examples"] == {"story": {"sha256": sha256(src), "output": "hi\n"}}


def test_the_queue_is_longest_first():
    items = [(s, b"") for s in "abcde"]
    assert notebooks._order(items, {"a": 1, "b": 6, "c": 10, "e": 2}) == ["c", "b", "d", "e", "a"]  # d: 5 s


def test_workers_share_one_queue_and_run_each_notebook_once(tmp_path):
    nbs = {s: _notebook(tmp_path, s, f"# %%\nimport time\ntime.sleep(0.3)\nprint('{s} ran')\n") for s in "abcdef"}
    run = notebooks.Run(nbs, tmp_path / "cache", jobs=2).start()
    assert len(run.procs) == 2
    ran = []
    for proc, _ in run.procs:  # what each worker ran, from its timing lines
        stdout, _ = proc.communicate()
        ran.append([line.split()[1] for line in stdout.splitlines() if line.startswith(notebooks.TIMING_TAG)])
        proc.stdout = proc.stderr = None  # read here already; the run's own collection gets nothing more
    assert sorted(ran[0] + ran[1]) == list("abcdef")  # each one once
    assert ran[0] and ran[1]  # and both workers had work


def test_two_builds_at_once_each_cache_executed_notebooks(tmp_path):
    cache = tmp_path / "cache"
    nbs = {"a": _notebook(tmp_path, "a", "# %%\nprint('a ran')\n"), "b": _notebook(tmp_path, "b", STORY)}
    first, second = notebooks.Run(nbs, cache, jobs=2).start(), notebooks.Run(nbs, cache, jobs=1).start()
    assert first.folder != second.folder  # each run has its own inputs and outputs
    one, two = first.wait(), second.wait()
    assert one == two and "a ran" in one["a"].decode()
    for stem in nbs:
        cached = list(cache.glob(f"{stem}-*.ipynb"))
        assert len(cached) == 1
        cells = [c for c in json.loads(cached[0].read_text())["cells"] if c["cell_type"] == "code"]
        assert all(c["execution_count"] is not None for c in cells)
    assert not list(cache.glob("run-*"))  # the run folders are gone


def test_each_notebook_starts_like_a_new_kernel(tmp_path):
    draw = "# %%\nimport torch\nprint(torch.rand(1).item())\n"
    nbs = {"p": _notebook(tmp_path, "p", draw), "q": _notebook(tmp_path, "q", draw)}
    out = notebooks.Run(nbs, tmp_path / "cache", jobs=1).start().wait()  # one worker runs both
    texts = [next(c["outputs"][0]["text"] for c in json.loads(out[s])["cells"] if c["cell_type"] == "code")
             for s in ("p", "q")]
    assert texts[0] == texts[1]  # the first notebook's draw does not move the second one's


def test_a_trailing_semicolon_hides_the_value(tmp_path):
    nb = json.loads(_notebook(tmp_path, "semi", "# %%\n1 + 1;\n"))
    cell = next(c for c in notebooks.execute_notebook(nb, "semi", tmp_path)["cells"] if c["cell_type"] == "code")
    assert cell["outputs"] == []


def test_close_stops_the_workers(tmp_path):
    run = notebooks.Run({"slow": _notebook(tmp_path, "slow", "# %%\nimport time\ntime.sleep(60)\n")},
                        tmp_path / "cache").start()
    procs = [p for p, _ in run.procs]
    run.close()
    assert all(p.poll() is not None for p in procs) and not list((tmp_path / "cache").glob("run-*"))


# ----------------------------------------------------------------------------- notebook pages

from scripts import jupyter_pages, pages  # noqa: E402


def _plugin():
    from mkdocs.config import load_config

    return load_config(str(hooks.ROOT / "mkdocs.yml"))["plugins"]["mkdocs-jupyter"]


def test_workers_render_the_page_the_plugin_would_and_it_finds_it(tmp_path, monkeypatch):
    from mkdocs.structure.files import File
    from mkdocs.structure.pages import Page
    from mkdocs_jupyter import convert

    plugin = _plugin()
    settings = jupyter_pages.settings(plugin.config, cwd=tmp_path)
    assert settings is not None and settings["cache_dir"] == str(tmp_path / plugin.config["cache_dir"])
    executed = notebooks.Run({"story": _notebook(tmp_path, "story", STORY)}, tmp_path / "executed",
                             pages=settings).start().wait()
    docs = tmp_path / "docs" / "examples"
    docs.mkdir(parents=True)
    (docs / "story.ipynb").write_bytes(executed["story"])  # the page's notebook, as the hook writes it
    entry = jupyter_pages.cache_entry(docs / "story.ipynb", settings)
    assert entry.exists()
    # the plugin itself renders the page from that entry: it must not convert anything
    monkeypatch.chdir(tmp_path)  # its cache_dir is relative to the working directory
    plugin.config["execute"] = False
    monkeypatch.setattr(convert, "nb2html", lambda *a, **k: pytest.fail("the plugin converted the notebook"))
    config = load_site_config()
    page = Page(None, File("examples/story.ipynb", str(tmp_path / "docs"), str(tmp_path / "site"), True), config)
    plugin.on_pre_build(config)
    plugin.on_pre_page(page, config, None)
    page.render(config, None)
    assert "main 42" in page.content and page.title == "A story"


def load_site_config():
    from mkdocs.config import load_config

    return load_config(str(hooks.ROOT / "mkdocs.yml"))


def test_a_notebook_page_links_its_stylesheets(tmp_path):
    css = "body { color: red; }"
    html = f'<p>x</p><style type="text/css">{css}</style><style>.own {{}}</style><style type="text/css">{css}</style>'
    out, files = pages.external_styles(html, lambda path: "../../" + path)
    (name,) = files
    assert files[name] == css and name.endswith(".css")
    assert out.count(f'<link rel="stylesheet" href="../../{pages.NOTEBOOK_STYLES}/{name}">') == 2
    assert "<style>.own {}</style>" in out  # a page's own small style stays


def test_settings_need_the_plugins_cache_and_no_execution():
    config = {key: None for key in jupyter_pages.KEY_OPTIONS} | {"cache": True, "execute": False,
                                                                   "cache_dir": ".c", "toc_depth": 3}
    assert jupyter_pages.settings(config, cwd=Path("/x"))["options"]["toc_depth"] == 3
    assert jupyter_pages.settings({**config, "cache": False}) is None
    assert jupyter_pages.settings({**config, "execute": True}) is None
