"""The GPU verification record matches the code, and the logic that writes it.

``scripts/gpu_check.py`` runs every check on a CUDA machine and, only when nothing failed,
writes ``benchmarks/verified/<gpu>.json`` with the sha256 of every example and test file.
The first tests fail when one of those files differs from the record: the code has
changed since it last passed on a GPU. The rest check the record logic on the CPU, with
fake results (no GPU needed).
"""

import json
import os
import subprocess
import sys
import types

import pytest
from support import ROOT

from scripts import gpu_check, results, verified
from scripts import verified as records

RECORDS = gpu_check.load_records()
# While gpu_check.py runs the suite it is writing a new record: the old one cannot match.
during_check = pytest.mark.skipif(os.environ.get(gpu_check.RUNNING_ENV) == "1",
                                  reason="scripts/gpu_check.py is running: it writes the record checked here")


# ----------------------------------------------------------------------------- the committed record
@during_check
def test_a_gpu_record_exists():
    # Until the first complete pass on a GPU there is no record, and the README and home page say
    # so; this test reports it as an expected failure instead of blocking every change. Once a
    # record exists, the test below fails whenever a covered file differs from it.
    if not RECORDS:
        pytest.xfail(f"no GPU verification record in benchmarks/verified/ yet: {gpu_check.RERUN_HINT}")
    assert all(record["files"] for record in RECORDS.values())


@during_check
def test_files_are_the_ones_that_passed_on_the_gpu():
    # One record per GPU model. The current code must be the code that last passed on at least one
    # of them; the site says of every record whether the code is still the code that passed there.
    current = gpu_check.file_hashes()
    stale = []
    for path, record in RECORDS.items():
        diff = gpu_check.diff_files(gpu_check.effective_files(record), current)
        if any(diff.values()):
            stale.append(f"{path} ({record['gpu']}, {record['date']}): {gpu_check.describe_diff(diff)}")
    assert not RECORDS or len(stale) < len(RECORDS), (
        "files differ from every GPU verification record, so this code has not passed on a "
        f"GPU: {'; '.join(stale)}. To fix: {gpu_check.RERUN_HINT}")


def test_records_are_passes():
    for path, record in RECORDS.items():
        assert path.endswith(f"/{record['gpu_slug']}.json"), path
        assert record["failed"] == 0 and record["counts"]["total"]["failed"] == 0, path
        assert all(s["status"] in ("ok", "absent") for s in record["steps"]), path
        assert record["counts"]["tests"]["passed"] > 0 and record["seeds"] and record["files"], path
        for part in record.get("partial", []):  # each later run of only what changed passed too
            assert part["failed"] == 0 and part["changed"] and part["files"], path
            assert all(s["status"] in ("ok", "absent") for s in part["steps"]), path


def test_readme_says_what_the_records_say():
    block = gpu_check.readme_block_in((ROOT / "README.md").read_text())
    assert block == gpu_check.readme_block(RECORDS), (
        "README.md's <!-- verified --> block differs from benchmarks/verified/: run "
        "`python -m scripts.gpu_check --update-readme` and commit README.md")


def test_home_page_renders_the_record():
    assert "{{ verified }}" in (ROOT / "docs" / "index.md").read_text()


# ----------------------------------------------------------------------------- which files a record covers
def _touch(root, *paths):
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")


def test_verified_files_lists_examples_tests_and_the_root_conftest(tmp_path):
    _touch(tmp_path, "examples/a.py", "examples/b.py", "examples/notes.md", "examples/sub/c.py",
           "tests/conftest.py", "tests/test_a.py", "tests/helpers/util.py", "tests/data.json",
           "tests/browser/conftest.py", "tests/browser/test_site.py", "tests/browser/deep/x.py",
           "conftest.py", "scripts/hooks.py", "scripts/codeblocks.py", "docs/conftest.py", "setup.py")
    assert records.verified_files(tmp_path) == [
        "conftest.py", "examples/a.py", "examples/b.py", "scripts/codeblocks.py",
        "tests/conftest.py", "tests/helpers/util.py", "tests/test_a.py",
    ]


def test_verified_files_of_this_repository():
    files = records.verified_files()
    assert {"scripts/codeblocks.py", "tests/conftest.py", "tests/support.py", "tests/test_verified.py",
            "examples/vector_add.py"} <= set(files)
    assert not [f for f in files if f.startswith("tests/browser/")]
    assert {f"examples/{p.name}" for p in (ROOT / "examples").glob("*.py")} <= set(files)


def test_hashes_and_diff_name_every_changed_added_and_removed_file(tmp_path):
    _touch(tmp_path, "examples/a.py", "examples/b.py", "tests/test_a.py", "conftest.py")
    recorded = gpu_check.file_hashes(tmp_path)
    assert recorded["examples/a.py"] == records.sha256(tmp_path / "examples/a.py")
    assert len(set(recorded.values())) == 4 and all(len(h) == 64 for h in recorded.values())
    (tmp_path / "examples/a.py").write_text("changed\n")
    (tmp_path / "tests/test_a.py").unlink()
    _touch(tmp_path, "tests/test_new.py")
    diff = gpu_check.diff_files(recorded, gpu_check.file_hashes(tmp_path))
    assert diff == {"changed": ["examples/a.py"], "added": ["tests/test_new.py"], "removed": ["tests/test_a.py"]}
    text = gpu_check.describe_diff(diff)
    assert "examples/a.py" in text and "tests/test_new.py" in text and "tests/test_a.py" in text
    assert gpu_check.diff_files(recorded, recorded) == {"changed": [], "added": [], "removed": []}


# ----------------------------------------------------------------------------- counting and judging steps
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="6">
<testcase classname="t" name="a"/><testcase classname="t" name="b"/>
<testcase classname="t" name="c"><failure message="boom"/></testcase>
<testcase classname="t" name="d"><error message="setup"/></testcase>
<testcase classname="t" name="e"><skipped message="needs a GPU"/></testcase>
<testcase classname="t" name="f"><skipped type="pytest.xfail" message="x"/></testcase>
</testsuite></testsuites>"""


def test_junit_counts(tmp_path):
    (tmp_path / "r.xml").write_text(JUNIT)
    assert gpu_check.junit_counts(tmp_path / "r.xml") == (2, 2, 2)


@pytest.mark.parametrize(
    "rc, xml, status, note",
    [
        (0, '<testsuite><testcase name="a"/></testsuite>', "ok", ""),
        (1, JUNIT, "failed", "exit status 1"),
        (None, '<testsuite><testcase name="a"/></testsuite>', "failed", "timed out"),
        (0, None, "failed", "no junit-xml"),
        (5, "<testsuite/>", "failed", "exit status 5"),  # nothing collected is no pass
        (0, '<testsuite><testcase name="a"><skipped/></testcase></testsuite>', "failed", ""),  # all skipped
    ],
)
def test_judge(tmp_path, rc, xml, status, note):
    junit = tmp_path / "r.xml"
    if xml is not None:
        junit.write_text(xml)
    step = gpu_check.judge(gpu_check.Step("tests (seed 1)", "tests", seed=1), rc, junit)
    assert step.status == status and note in step.note


# ----------------------------------------------------------------------------- refusing to record
GPU = {"cuda": True, "gpu": "NVIDIA H200", "gpu_slug": "h200", "gpu_count": 1, "driver": "580.1",
       "python": "3.12.3", "torch": "2.11.0+cu130", "triton": "3.6.0", "triton_interpret": False}
FILES = {"examples/a.py": "0" * 64, "tests/test_a.py": "1" * 64}


def good_steps(seeds=(11, 22), properties="ok"):
    steps = [gpu_check.Step(f"tests (seed {s})", "tests", "ok", 1344, 0, 14, 150.0, seed=s) for s in seeds]
    steps += [gpu_check.Step("codeblocks", "codeblocks", "ok", 26, 0, 37, 30.0),
              gpu_check.Step("examples", "examples", "ok", 22, 0, 0, 60.0)]
    if properties == "absent":
        steps.append(gpu_check.Step("properties (gpu profile)", "properties", "absent"))
    else:
        steps.append(gpu_check.Step("properties (gpu profile)", "properties", "ok", 40, 0, 0, 90.0))
    return steps


def reasons(info=GPU, steps=None, runs=2, limits=(), before=FILES, after=FILES):
    return gpu_check.refusal_reasons(info, good_steps() if steps is None else steps, runs=runs,
                                     limits=list(limits), files_before=before, files_after=after)


def test_a_clean_gpu_run_may_be_recorded():
    assert reasons() == []
    assert reasons(steps=good_steps(properties="absent")) == []  # no tests/test_properties.py yet


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(info={"cuda": False}), "no CUDA device"),
        (dict(info={"cuda": False, "error": "could not import torch"}), "could not import torch"),
        (dict(info={**GPU, "triton_interpret": True}), "TRITON_INTERPRET"),
        (dict(limits=["tests limited to tests/test_a.py"]), "covered only part"),
        (dict(runs=3), "3 runs with distinct seeds"),
        (dict(steps=good_steps(seeds=(7, 7))), "distinct seeds"),
        (dict(steps=good_steps()[1:]), "2 runs"),
        (dict(steps=good_steps()[:-1]), "step properties did not run"),
        (dict(steps=[s for s in good_steps() if s.kind != "examples"]), "step examples did not run"),
        (dict(after={**FILES, "examples/a.py": "2" * 64}), "changed while the checks ran: changed: examples/a.py"),
    ],
)
def test_refusals(kwargs, words):
    got = reasons(**kwargs)
    assert any(words in r for r in got), got


def test_any_failed_step_refuses_and_is_named():
    steps = good_steps()
    steps[3] = gpu_check.Step("examples", "examples", "failed", 21, 1, 0, note="failed: matmul (exit status 1)")
    (reason,) = reasons(steps=steps)
    assert reason.startswith("examples failed (21 passed, 1 failed; failed: matmul")


def test_record_fields_counts_and_text(tmp_path):
    record = gpu_check.build_record(GPU, good_steps(), FILES, date="2026-12-01T10:20:30+00:00",
                                    command="python -m scripts.gpu_check --runs 2", workers=8)
    for key in ("gpu", "driver", "python", "torch", "triton", "date", "seeds", "files"):
        assert record[key] == {**GPU, "date": "2026-12-01T10:20:30+00:00", "seeds": [11, 22], "files": FILES}[key]
    assert record["counts"]["tests"] == {"passed": 2688, "failed": 0, "skipped": 28}
    assert record["counts"]["codeblocks"] == {"passed": 26, "failed": 0, "skipped": 37}
    assert record["counts"]["total"] == {"passed": 2688 + 26 + 22 + 40, "failed": 0, "skipped": 65}
    assert (record["passed"], record["failed"], record["skipped"]) == (2776, 0, 65)
    path = gpu_check.write_record(record, tmp_path / "verified")
    assert path == tmp_path / "verified" / "h200.json" and json.loads(path.read_text()) == record
    text = gpu_check.describe(record)
    for words in ("NVIDIA H200", "driver 580.1", "torch 2.11.0+cu130", "Triton 3.6.0", "2026-12-01 10:20 UTC",
                  "2 random orders (seeds 11 and 22), 1344 passed, 14 skipped, 0 failed in each",
                  "26 page code blocks passed, 0 failed, 37 skipped", "22 example self-checks passed, 0 failed;",
                  "40 property tests (GPU profile) passed, 0 failed"):
        assert words in text, (words, text)


def test_page_and_readme_text_follow_the_files(tmp_path, monkeypatch):
    _touch(tmp_path, "examples/a.py", "tests/test_a.py", "conftest.py")
    record = gpu_check.build_record(GPU, good_steps(properties="absent"), gpu_check.file_hashes(tmp_path),
                                    date="2026-12-01T10:20:30+00:00", command="c", workers=8)
    verified = tmp_path / "benchmarks" / "verified"
    assert records.page_text(verified, tmp_path).startswith("none recorded yet:")
    gpu_check.write_record(record, verified)
    page = records.page_text(verified, tmp_path)
    assert page.startswith("the current code passed on an NVIDIA H200") and "property" not in page
    (tmp_path / "tests/test_a.py").write_text("changed\n")
    page = records.page_text(verified, tmp_path)
    assert page.startswith("an earlier version of the code passed") and "1 file changed since" in page
    assert "tests/test_a.py" in page

    readme = tmp_path / "README.md"
    readme.write_text("intro\n\n<!-- verified:start -->\nold\n<!-- verified:end -->\n\nrest\n")
    assert gpu_check.update_readme(readme, verified)
    text = readme.read_text()
    assert text.startswith("intro\n\n<!-- verified:start -->\n**Last passed on a GPU:** an NVIDIA H200")
    assert text.endswith("<!-- verified:end -->\n\nrest\n") and "old" not in text
    assert not gpu_check.update_readme(readme, verified)  # already up to date
    readme.write_text("no markers\n")
    with pytest.raises(ValueError, match="verified:start"):
        gpu_check.update_readme(readme, verified)


def test_hook_renders_verified(monkeypatch):
    pytest.importorskip("mkdocs")
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_hooks_verified", ROOT / "scripts" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    monkeypatch.setattr(records, "page_text", lambda: "the current code passed on a test GPU.")
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_path="index.md"))
    out = hooks.on_page_markdown("Checked: {{ verified }} Done.", page, {}, None)
    assert out == "Checked: the current code passed on a test GPU. Done."


# ----------------------------------------------------------------------------- the script, with fake steps
@pytest.fixture
def fake_machine(monkeypatch, tmp_path):
    """gpu_check.main with the machine and the steps faked: returns (run, calls)."""
    calls = []

    def fake_pytest(step, args, logs, env, timeout, python):
        calls.append((step.name, args, env.get("HYPOTHESIS_PROFILE"), env.get(gpu_check.RUNNING_ENV)))
        failing = os.environ.get("FAKE_FAIL_STEP")
        good = {"tests": (1344, 0, 14), "codeblocks": (26, 0, 37), "properties": (40, 0, 0)}[step.kind]
        step.passed, step.failed, step.skipped = (good[0] - 1, 1, good[2]) if failing == step.kind else good
        step.status = "failed" if failing == step.kind else "ok"
        return step

    def fake_examples(names, logs, env, timeout, jobs, python, budget):
        calls.append(("examples", names, None, env.get(gpu_check.RUNNING_ENV)))
        return gpu_check.Step("examples", "examples", "ok", len(names), 0, 0)

    monkeypatch.setattr(gpu_check, "run_pytest", fake_pytest)
    monkeypatch.setattr(gpu_check, "run_examples", fake_examples)

    def run(*argv, info=GPU):
        monkeypatch.setattr(gpu_check, "gpu_info", lambda python: dict(info))
        calls.clear()
        return gpu_check.main(["--logs", str(tmp_path / "logs"), "--record-to", str(tmp_path / "out"), *argv])

    return run, calls


def test_main_refuses_without_cuda(fake_machine, tmp_path, capsys):
    run, calls = fake_machine
    assert run(info={"cuda": False}) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert calls == [] and not (tmp_path / "out").exists()


def test_main_refuses_under_the_interpreter(fake_machine, tmp_path):
    run, calls = fake_machine
    assert run(info={**GPU, "triton_interpret": True}) == 2
    assert calls == [] and not (tmp_path / "out").exists()


def test_main_records_two_seeds_when_everything_passed(fake_machine, tmp_path, capsys):
    run, calls = fake_machine
    assert run("--runs", "2", "--seed", "5", "-n", "3") == 0
    record = json.loads((tmp_path / "out" / "h200.json").read_text())
    (seed5, seed6), codeblocks, examples = calls[:2], calls[2], calls[3]
    assert seed5[1][:2] == ["-n", "3"] and "--randomly-seed=5" in seed5[1] and "--ignore=tests/browser" in seed5[1]
    other = int(seed6[1][-1].split("=")[1])
    assert record["seeds"] == [5, other] and other != 5
    assert "--codeblocks" in codeblocks[1] and examples[1] == [p.stem for p in results.example_files()]
    assert all(c[3] == "1" for c in calls)  # the steps know a check is running
    if gpu_check.property_files():  # once, on their own, with the GPU profile
        assert calls[4][1] == ["-n", "3", *gpu_check.property_files(), "--randomly-seed=5"] and calls[4][2] == "gpu"
        assert f"--ignore-glob={gpu_check.PROPERTIES}" in seed5[1] and calls[0][2] is None
    else:
        assert len(calls) == 4 and record["counts"]["properties"]["passed"] == 0
    assert record["files"] == gpu_check.file_hashes() and record["failed"] == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("record: written to") and out[-2].startswith("total")
    assert json.loads((tmp_path / "logs" / "summary.json").read_text())["seeds"] == [5, other]


@pytest.mark.parametrize("kind", ["tests", "codeblocks"])
def test_main_records_nothing_when_a_step_failed(fake_machine, tmp_path, monkeypatch, capsys, kind):
    run, _ = fake_machine
    monkeypatch.setenv("FAKE_FAIL_STEP", kind)
    assert run("--runs", "2") == 1
    assert not (tmp_path / "out").exists()
    assert "record: NOT written" in capsys.readouterr().out.strip().splitlines()[-1]


def test_main_rehearsal_records_nothing(fake_machine, tmp_path, capsys):
    run, calls = fake_machine
    assert run("--example", "vector_add", "--suite", "tests/test_vector_add.py") == 1  # a partial run is refused
    assert not (tmp_path / "out").exists() and calls[2][1] == ["vector_add"]
    assert "covered only part" in capsys.readouterr().out
    assert run("--no-record", info={"cuda": False}) == 0  # rehearse anywhere: all steps ran and passed
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- re-verifying only what changed
def _repo(root):
    """A small repository: two examples, their tests, a shared helper, pages, the plugin."""
    files = {
        "examples/alpha.py": "x = 1\n", "examples/beta.py": "y = 2\n",
        "tests/support.py": "import torch\n", "tests/helper2.py": "from support import ROOT\n",
        "tests/test_alpha.py": "import alpha\nfrom support import DEVICE\n",
        "tests/test_beta.py": "from beta import y\nimport helper2\n",
        "tests/test_all.py": "EXAMPLES = ROOT / 'examples'\n",
        "tests/test_properties_one.py": "import alpha\n",
        "tests/test_site.py": "from scripts import codeblocks\n",
        "tests/conftest.py": "", "scripts/codeblocks.py": "",
        "docs/a.md": '--8<-- "examples/alpha.py:setup"\n', "docs/b.md": "see examples/beta.py\n", "docs/c.md": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_scope_of_a_changed_example_test_helper_plugin_and_conftest(tmp_path):
    from scripts import gpu_scope

    root = _repo(tmp_path)
    s = gpu_scope.scope(["examples/alpha.py"], root=root)
    assert not s.full and s.examples == ["alpha"] and s.pages == ["docs/a.md"]
    assert s.tests == ["tests/test_all.py", "tests/test_alpha.py"] and s.properties == ["tests/test_properties_one.py"]
    assert "examples/alpha.py" in s.covered and "tests/test_beta.py" not in s.covered
    s = gpu_scope.scope(["tests/support.py"], root=root)  # through helper2 too
    assert s.tests == ["tests/test_alpha.py", "tests/test_beta.py"] and not s.examples and not s.pages
    s = gpu_scope.scope(["tests/test_beta.py"], root=root)
    assert s.tests == ["tests/test_beta.py"] and s.covered == ["tests/test_beta.py"]
    s = gpu_scope.scope(["scripts/codeblocks.py"], root=root)
    assert s.pages == ["docs/"] and s.tests == ["tests/test_site.py"]
    assert gpu_scope.scope(["tests/conftest.py", "examples/beta.py"], root=root).full
    assert gpu_scope.scope([], root=root).empty and gpu_scope.scope(["docs/a.md"], root=root).empty


def test_scope_of_a_changed_benchmark_case(tmp_path):
    from scripts import gpu_scope

    root = _repo(tmp_path)
    cases = {"benchmarks/cases/__init__.py": "import sys\n", "benchmarks/cases/peers.py": "",
             "benchmarks/cases/alpha.py": "from alpha import x\nfrom benchmarks.cases.peers import compiled_peer\n",
             "tests/test_alpha_case.py": "from benchmarks.cases import alpha as cases\n"}
    for rel, text in cases.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    covered = sorted(set(verified.verified_files(root)))
    assert {"benchmarks/cases/alpha.py", "benchmarks/cases/peers.py", "benchmarks/cases/__init__.py"} <= set(covered)
    s = gpu_scope.scope(["benchmarks/cases/alpha.py"], root=root, covered=covered)
    assert s.tests == ["tests/test_alpha_case.py"] and not s.examples and not s.pages
    s = gpu_scope.scope(["benchmarks/cases/peers.py"], root=root, covered=covered)  # through the case
    assert s.tests == ["tests/test_alpha_case.py"] and "benchmarks/cases/alpha.py" in s.covered
    s = gpu_scope.scope(["examples/alpha.py"], root=root, covered=covered)  # the example reaches its case's tests
    assert "tests/test_alpha_case.py" in s.tests and "benchmarks/cases/alpha.py" in s.covered
    s = gpu_scope.scope(["examples/beta.py"], root=root, covered=covered)
    assert "tests/test_alpha_case.py" not in s.tests and "benchmarks/cases/__init__.py" not in s.covered


def test_scope_of_this_repository_reaches_an_examples_tests_pages_and_properties():
    from scripts import gpu_scope

    s = gpu_scope.scope(["examples/softmax.py"])
    assert "tests/test_softmax.py" in s.tests and "docs/kernels/softmax.md" in s.pages and s.examples == ["softmax"]
    assert s.properties and all(p.startswith("tests/test_properties_") for p in s.properties)
    assert "tests/test_matmul.py" not in s.tests


def _record(files, **extra):
    return {**GPU, "date": "2026-12-01T10:00:00+00:00", "seeds": [1], "command": "c", "workers": 1,
            "steps": [{"name": "tests (seed 1)", "kind": "tests", "status": "ok", "seed": 1, "passed": 3,
                       "failed": 0, "skipped": 0, "seconds": 1.0, "note": ""}],
            "counts": {"tests": {"passed": 3, "failed": 0, "skipped": 0}}, "passed": 3, "failed": 0, "skipped": 0,
            "files": dict(files), **extra}


def test_effective_files_follow_partial_runs():
    record = _record({"a": "1", "b": "2", "c": "3"}, partial=[
        {"files": {"a": "9"}, "removed": ["c"]}, {"files": {"a": "8", "d": "4"}, "removed": []}])
    assert gpu_check.effective_files(record) == {"a": "8", "b": "2", "d": "4"}


def test_plan_changed_partial_or_full(tmp_path):
    root = _repo(tmp_path / "repo")
    current = gpu_check.file_hashes(root)
    info = {k: v for k, v in GPU.items() if k not in ("cuda", "triton_interpret")}
    assert gpu_check.plan_changed(tmp_path / "none.json", info, current, root).scope is None
    base = tmp_path / "h200.json"
    base.write_text(json.dumps(_record(current)))
    assert gpu_check.plan_changed(base, info, current, root).scope.empty  # nothing changed
    assert gpu_check.plan_changed(base, {**info, "torch": "2.12"}, current, root).scope is None  # other versions
    changed = dict(current, **{"examples/beta.py": "f" * 64})
    plan = gpu_check.plan_changed(base, info, changed, root)
    assert plan.changed == ["examples/beta.py"] and plan.scope.examples == ["beta"]
    assert plan.scope.tests == ["tests/test_all.py", "tests/test_beta.py"] and plan.scope.pages == ["docs/b.md"]
    assert gpu_check.plan_changed(base, info, dict(current, **{"tests/conftest.py": "e" * 64}), root).scope is None
    fewer = {k: v for k, v in current.items() if k != "tests/test_beta.py"}  # a file removed, nothing changed
    plan = gpu_check.plan_changed(base, info, fewer, root)
    assert plan.scope is None and "only removals" in plan.summary and "tests/test_beta.py" in plan.summary


def test_scope_of_a_test_that_imports_examples_by_name(tmp_path):
    from scripts import gpu_scope

    root = _repo(tmp_path)
    (root / "tests/test_dyn.py").write_text("mods = [__import__(n) for n in ('alpha',)]\n")
    assert "tests/test_dyn.py" in gpu_scope.scope(["examples/beta.py"], root=root).tests  # any example


def test_main_changed_adds_a_partial_run_to_the_record(fake_machine, tmp_path, monkeypatch, capsys):
    run, calls = fake_machine
    current = gpu_check.file_hashes()
    example = "examples/vector_add.py"
    base = tmp_path / "base" / "h200.json"
    base.parent.mkdir()
    base.write_text(json.dumps(_record(dict(current, **{example: "0" * 64}))))
    (base.parent / gpu_check.OUTPUTS).mkdir()
    (base.parent / gpu_check.OUTPUTS / "h200.json").write_text(json.dumps({
        "gpu": "NVIDIA H200", "record_date": "2026-12-01T10:00:00+00:00", "seeds": [1],
        "examples": {"softmax": {"sha256": current["examples/softmax.py"], "output": "old softmax\n"}}}))
    monkeypatch.setattr(gpu_check, "example_outputs", lambda logs, names: {n: f"{n} printed\n" for n in names})
    assert run("--changed", "--base", str(base), "--seed", "7", "-n", "2") == 0
    assert [c[0] for c in calls] == ["tests (seed 7)", "codeblocks", "examples", "properties (gpu profile)"]
    assert "tests/test_vector_add.py" in calls[0][1] and "--randomly-seed=7" in calls[0][1]
    assert "docs/quickstart.md" in calls[1][1] and calls[2][1] == ["vector_add"] and calls[3][2] == "gpu"
    record = json.loads((tmp_path / "out" / "h200.json").read_text())
    part = record["partial"][-1]
    assert part["changed"] == [example] and part["files"][example] == current[example]
    assert gpu_check.effective_files(record) == current and record["files"][example] == "0" * 64
    outputs = json.loads((tmp_path / "out" / gpu_check.OUTPUTS / "h200.json").read_text())["examples"]
    assert outputs["vector_add"]["output"] == "vector_add printed\n" and outputs["softmax"]["output"] == "old softmax\n"
    assert outputs["vector_add"]["date"] == part["date"] and outputs["softmax"]["date"] == "2026-12-01T10:00:00+00:00"
    assert "then on " in gpu_check.describe(record) and example in gpu_check.describe(record)
    # again: nothing changed since the new record, nothing runs
    assert run("--changed", "--base", str(tmp_path / "out" / "h200.json")) == 0 and calls == []
    assert "nothing changed" in capsys.readouterr().out


def test_outputs_from_the_logs_of_a_partial_run_keep_the_other_examples(tmp_path):
    """--outputs-from on a record whose last run is partial: the examples it ran replace theirs in the
    outputs file beside the record, dated by that run; the others stay as the full run printed them."""
    files = {"examples/a.py": "1" * 64, "examples/b.py": "2" * 64, "tests/test_a.py": "3" * 64}
    part = {"date": "2026-12-03T10:39:48+00:00", "seeds": [7], "changed": ["examples/b.py"],
            "files": {"examples/b.py": "9" * 64}, "removed": [], "steps": [], "failed": 0}
    record = _record(files, partial=[part])
    record_path = tmp_path / "h200.json"
    record_path.write_text(json.dumps(record))
    (tmp_path / gpu_check.OUTPUTS).mkdir()
    (tmp_path / gpu_check.OUTPUTS / "h200.json").write_text(json.dumps({
        "gpu": "NVIDIA H200", "record_date": record["date"], "seeds": [1],
        "examples": {"a": {"sha256": "1" * 64, "output": "a printed\n"},
                     "b": {"sha256": "2" * 64, "output": "old b\n"}}}))
    logs = tmp_path / "logs"
    logs.mkdir()
    info = {k: GPU[k] for k in ("gpu", "driver", "python", "torch", "triton")}
    (logs / "summary.json").write_text(json.dumps({"info": info, "seeds": [7]}))
    (logs / "example_b.txt").write_text("$ python examples/b.py\nnew b\n")
    gpu_check.outputs_from_logs(logs, record_path)
    out = json.loads((tmp_path / gpu_check.OUTPUTS / "h200.json").read_text())["examples"]
    assert out["b"] == {"sha256": "9" * 64, "output": "new b\n", "date": part["date"]}
    assert out["a"]["output"] == "a printed\n" and out["a"]["date"] == record["date"]
    (logs / "summary.json").write_text(json.dumps({"info": info, "seeds": [8]}))  # another run's logs
    with pytest.raises(ValueError, match="seeds"):
        gpu_check.outputs_from_logs(logs, record_path)


def test_main_changed_runs_everything_without_a_record(fake_machine, tmp_path):
    run, calls = fake_machine
    assert run("--changed", "--base", str(tmp_path / "missing.json")) == 0
    assert [c[0] for c in calls][1:] == ["codeblocks", "examples", "properties (gpu profile)"]
    assert "partial" not in json.loads((tmp_path / "out" / "h200.json").read_text())


# ----------------------------------------------------------------------------- random order (pytest-randomly)
def test_random_order_is_a_function_of_the_seed_and_printed():
    # Three collections of this file in one child process (torch is imported once): in file order,
    # then twice with one seed. pytest-randomly reorders by the seed alone and prints it.
    code = (
        "import pytest\n"
        "for extra in (['-p', 'no:randomly'], ['--randomly-seed=12345'], ['--randomly-seed=12345']):\n"
        "    print('== collection', flush=True)\n"
        "    rc = pytest.main(['--collect-only', '-q', '-p', 'no:xdist', '-p', 'no:cacheprovider',\n"
        "                      'tests/test_verified.py', *extra])\n"
        "    assert rc == 0, rc\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    _, in_file_order, first, second = [[line for line in part.splitlines() if "::" in line]
                                       for part in out.stdout.split("== collection")]
    assert len(in_file_order) > 30 and first == second != in_file_order and sorted(first) == sorted(in_file_order)
    assert "--randomly-seed=12345" in out.stdout
