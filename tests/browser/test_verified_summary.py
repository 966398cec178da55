"""``{{ verified_summary }}``, the home page's one-sentence form of the GPU verification record
(``scripts/verified.py``); ``{{ verified }}`` keeps the counts of every run. No GPU needed: the
records are written here."""

import json

from scripts import expressions, verified


def _tree(root, text="x = 1\n"):
    (root / "examples").mkdir(parents=True, exist_ok=True)
    (root / "examples" / "a.py").write_text(text)
    return verified.file_hashes(root)


def _record(folder, files, *partial_dates, date="2026-12-03T14:38:16+00:00", gpu="NVIDIA H200", slug="h200"):
    folder.mkdir(exist_ok=True)
    record = {"gpu": gpu, "date": date, "files": files,
              "partial": [{"date": d, "files": {}, "removed": []} for d in partial_dates]}
    (folder / f"{slug}.json").write_text(json.dumps(record))
    return folder


def test_current_code_one_run(tmp_path):
    files = _tree(tmp_path / "repo")
    text = verified.summary_text(_record(tmp_path / "v", files), tmp_path / "repo")
    assert text == "every test, page code block and example passed on an NVIDIA H200 (2026-12-03)."


def test_current_code_with_later_partial_runs_names_the_last(tmp_path):
    files = _tree(tmp_path / "repo")
    folder = _record(tmp_path / "v", files, "2026-12-04T10:00:00+00:00", "2026-12-05T17:25:00+00:00")
    assert verified.summary_text(folder, tmp_path / "repo").endswith(
        "(2026-12-03, what changed since re-checked on 2026-12-05).")


def test_changed_code_says_it_has_not_been_checked(tmp_path):
    files = _tree(tmp_path / "repo")
    _tree(tmp_path / "repo", "x = 2\n")
    text = verified.summary_text(_record(tmp_path / "v", files), tmp_path / "repo")
    assert text.startswith("an earlier version passed on an NVIDIA H200 (2026-12-03); 1 file changed since")


def test_two_gpus_the_summary_names_the_one_the_current_code_passed_on(tmp_path):
    old = _tree(tmp_path / "repo")
    folder = _record(tmp_path / "v", _tree(tmp_path / "repo", "x = 2\n"), date="2026-12-06T06:08:30+00:00",
                     gpu="NVIDIA H100 80GB HBM3", slug="h100")
    _record(folder, old)
    assert verified.summary_text(folder, tmp_path / "repo") == (
        "every test, page code block and example passed on an NVIDIA H100 80GB HBM3 (2026-12-06).")
    _tree(tmp_path / "repo")  # back to the code the H200 passed
    assert verified.summary_text(folder, tmp_path / "repo") == (
        "every test, page code block and example passed on an NVIDIA H200 (2026-12-03).")
    _tree(tmp_path / "repo", "x = 3\n")  # neither: one record, as an earlier version
    assert verified.summary_text(folder, tmp_path / "repo").startswith(
        "an earlier version passed on an NVIDIA H")


def test_readme_block_puts_the_newest_record_first(tmp_path):
    from scripts import gpu_check

    base = {"driver": "1", "python": "3", "torch": "2", "triton": "3", "seeds": [1], "files": {},
            "steps": [{"kind": "tests", "seed": 1, "passed": 1, "failed": 0, "skipped": 0, "status": "ok"}]}
    h200 = {**base, "gpu": "NVIDIA H200", "date": "2026-12-03T14:38:16+00:00",
            "partial": [{"date": "2026-12-05T17:25:15+00:00", "changed": ["a"], "steps": []}]}
    h100 = {**base, "gpu": "NVIDIA H100", "date": "2026-12-05T10:00:00+00:00"}
    block = gpu_check.readme_block({"v/h100.json": h100, "v/h200.json": h200})
    assert block.index("**Last passed on a GPU:** an NVIDIA H200") < block.index(
        "**Before that, passed on a GPU:** an NVIDIA H100")
    assert "on one of these GPUs" in block
    assert "on that GPU." in gpu_check.readme_block({"v/h100.json": h100})


def test_no_record(tmp_path):
    (tmp_path / "v").mkdir()
    assert verified.summary_text(tmp_path / "v", tmp_path) == "none recorded yet."


def test_the_expression_is_declared_without_arguments():
    kind = expressions.OTHERS["verified_summary"]
    assert kind.args == () and "one sentence" in kind.help
