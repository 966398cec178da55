"""scripts/probe_common.py, the probes' shared helpers: the JSON layout `{{ evidence }}` reads and the
ptxas reader. No GPU needed (ptxas's output is faked; its real use is in the sm90_registers probes)."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import evidence, probe_common


def test_write_points_is_one_json_object_with_one_point_per_line(tmp_path):
    header = {"probe": "x.py", "gpu": "NVIDIA H200", "method": "a, b"}
    points = [{"candidate": "a b", "ms": 1.5}, {"candidate": "c", "ms": 2.0, "shape": [1, 2]}]
    path = tmp_path / "run1" / "x.json"
    probe_common.write_points(path, header, points)
    text = path.read_text()
    assert json.loads(text) == {**header, "points": points}
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and lines.count('  "points": [') == 1
    assert [json.loads(line.strip().rstrip(",")) for line in lines if line.startswith("    {")] == points


def test_an_empty_point_list_is_still_valid_json(tmp_path):
    probe_common.write_points(tmp_path / "x.json", {"probe": "x.py"}, [])
    assert json.loads((tmp_path / "x.json").read_text()) == {"probe": "x.py", "points": []}


def test_the_written_file_is_quotable(tmp_path):
    probe_common.write_points(tmp_path / "page" / "run1" / "x.json", {"probe": "x.py"},
                              [{"candidate": "a b", "tflops": 512.34}, {"candidate": "c", "tflops": 1.0}])
    quoted = evidence.quote(tmp_path, "page/run1/x.json", evidence.parse_selector("candidate=a+b"), "tflops",
                            evidence.parse_format("1f"))
    assert quoted == "512.3"


def test_environment_names_the_gpu_and_versions():
    env = probe_common.environment()
    assert set(env) == {"gpu", "torch", "triton", "python", "date"} and env["date"].endswith("+00:00")


def _fake_ptxas(stderr):
    def run(cmd, **kwargs):
        assert "-v" in cmd and "--gpu-name=sm_90a" in cmd
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr=stderr)
    return run


def test_ptxas_usage_reads_registers_and_spills(monkeypatch):
    out = ("ptxas info    : Function properties for k\n"
           "    8 bytes stack frame, 84 bytes spill stores, 92 bytes spill loads\n"
           "ptxas info    : Used 255 registers, used 1 barriers\n")
    monkeypatch.setattr(probe_common.subprocess, "run", _fake_ptxas(out))
    assert probe_common.ptxas_usage(".version 8.0") == {
        "registers": 255, "spill_store_bytes": 84, "spill_load_bytes": 92}


def test_ptxas_usage_fails_loudly_on_output_it_cannot_read(monkeypatch):
    monkeypatch.setattr(probe_common.subprocess, "run", _fake_ptxas("ptxas fatal: something else\n"))
    with pytest.raises(ValueError, match="ptxas -v printed no register or spill counts"):
        probe_common.ptxas_usage(".version 8.0")


def test_check_against_names_each_failure_and_keeps_going():
    import torch

    ref = torch.ones(4)
    checks = probe_common.check_against(
        {"same": lambda: torch.ones(4), "off": lambda: torch.ones(4) * 2, "close": lambda: ref + 1e-6},
        ref, rtol=1e-4, atol=1e-4)
    assert checks["same"] == "pass" and checks["close"] == "pass"
    assert checks["off"].startswith("FAIL: Tensor-likes are not close!")


def test_time_interleaved_times_every_call_both_ways_in_each_pass():
    order = []

    def timing(fn, graph):
        order.append((fn(), graph))
        return 2.0 if graph else 1.0
    ms = probe_common.time_interleaved({"a": lambda: "a", "b": lambda: "b"}, 3, timing)
    assert order == [("a", False), ("a", True), ("b", False), ("b", True)] * 3
    assert ms == {("a", False): [1.0] * 3, ("a", True): [2.0] * 3, ("b", False): [1.0] * 3, ("b", True): [2.0] * 3}


def test_time_interleaved_can_leave_out_the_graph():
    calls = []
    ms = probe_common.time_interleaved({"a": lambda: "a"}, 2, lambda fn, graph: calls.append(graph) or 1.0,
                                       graphs=(False,))
    assert calls == [False, False] and ms == {("a", False): [1.0, 1.0]}


def test_summarize_takes_medians_and_the_ratio_pass_by_pass():
    row = probe_common.summarize([2.0, 4.0, 3.0], [1.0, 4.0, 6.0], 3e9, "cudagraph")
    # median ms 3.0; 3e9 FLOPs in 3 ms: 1 TFLOP/s; spread 4 / 2 - 1; ratios 0.5, 1.0, 2.0
    assert row == {"ms_cudagraph": 3.0, "tflops_cudagraph": 1.0, "spread_cudagraph": 1.0,
                   "ratio_to_cudnn_cudagraph": 1.0}
    assert "ratio_to_cublas_do_bench" in probe_common.summarize([1.0], [1.0], 1.0, "do_bench", ref="cublas")


def test_run_points_checks_times_and_skips_past_the_budget():
    import torch

    ticks = iter([0.0, 0.0, 5.0, 20.0])  # start; point 1 at 0 s, point 2 at 5 s, point 3 at 20 s
    setups = []

    def setup(pt):
        setups.append(pt["n"])
        good = torch.ones(pt["n"])
        return ({"ref": lambda: good, "ok": lambda: good.clone(), "bad": lambda: good * 3},
                1e-3, 2e9)

    def timing(fn, graph):
        return 2.0 if graph else 1.0
    rows, skipped = run_points_with(setup, timing, lambda: next(ticks))
    assert setups == [1, 2] and skipped == [{"n": 3}]
    assert [(r["n"], r["candidate"], r["check"][:4]) for r in rows] == [
        (1, "ref", "refe"), (1, "ok", "pass"), (1, "bad", "FAIL"),
        (2, "ref", "refe"), (2, "ok", "pass"), (2, "bad", "FAIL")]
    ok = rows[1]
    assert ok["ms_do_bench"] == 1.0 and ok["tflops_cudagraph"] == 1.0
    assert ok["ratio_to_cudnn_do_bench"] == 1.0 and "ms_do_bench" not in rows[2]


def test_run_points_without_graphs_has_no_graph_columns():
    import torch

    def setup(pt):
        return {"ref": lambda: torch.ones(2), "ok": lambda: torch.ones(2)}, 1e-3, 1e9
    rows, _ = probe_common.run_points([{"n": 1}], setup, 1, lambda fn, graph: 1.0, 10.0, "ref",
                                      graphs=(False,))
    assert rows[1]["ms_do_bench"] == 1.0 and not any("cudagraph" in key for key in rows[1])


def run_points_with(setup, timing, clock):
    return probe_common.run_points([{"n": 1}, {"n": 2}, {"n": 3}], setup, 3, timing,
                                   budget_s=10.0, ref="ref", clock=clock)


def test_probe_args_and_the_smoke_timing(tmp_path):
    args = probe_common.probe_args(["--out", str(tmp_path), "--smoke"])
    assert args.out == tmp_path and args.smoke and args.budget == 300.0
    device, timing = probe_common.timing_method(smoke=True)
    assert device.type == "cpu" and (timing(None, False), timing(None, True)) == (1.0, 1.1)
    with pytest.raises(SystemExit):  # --out is required
        probe_common.probe_args(["--smoke"])


def test_probe_header_puts_the_shared_method_first():
    header = probe_common.probe_header("p.py", "Inputs: seeded.", passes=3)
    assert header["probe"] == "p.py" and header["passes"] == 3 and "gpu" in header
    assert header["method"] == probe_common.RUN_POINTS_METHOD + " Inputs: seeded."


def test_attention_inputs_are_seeded_by_the_point():
    import torch

    pt = {"dtype": "bf16", "head_dim": 64, "seq": 256}
    q, k, v = probe_common.attention_inputs(pt, 2, 3, torch.device("cpu"))
    assert q.shape == (2, 3, 256, 64) and q.dtype == torch.bfloat16
    assert not torch.equal(q, k)
    assert torch.equal(probe_common.attention_inputs(pt, 2, 3, torch.device("cpu"))[2], v)
    (small, *_) = probe_common.attention_inputs({**pt, "dtype": "fp16"}, 2, 3, "cpu", smoke=True)
    assert small.shape == (1, 1, 128, 64) and small.dtype == torch.float16


# --- profile_missed_with: a wrapper's cases added to the Nsight Compute probe --------------------
ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "benchmarks" / "evidence" / "overview" / "profile_missed.py"


def test_profile_missed_with_adds_cases_and_runs_the_probes_main(capsys, monkeypatch):
    import types

    # restored (removed) after the test: the helper registers the probe under this name
    monkeypatch.setitem(sys.modules, "profile_missed", types.ModuleType("placeholder"))

    def cases(Case):
        return {"extra": Case("layer_norm", "layer_norm_fwd_fp16", "triton", 16384, "a pair", "ours", 7)}

    assert probe_common.profile_missed_with(cases, [str(PROBE), "--list", "extra", "ln_bwd_16384"]) == 0
    assert capsys.readouterr().out.split("\n")[:2] == ["extra 7", "ln_bwd_16384 45"]

    def clash(Case):
        return {"ln_bwd_16384": Case("layer_norm", "layer_norm_bwd_fp16", "triton", 1, "x", "ours", 1)}

    with pytest.raises(ValueError, match="ln_bwd_16384"):
        probe_common.profile_missed_with(clash, [str(PROBE), "--list"])
    with pytest.raises(SystemExit, match="usage"):
        probe_common.profile_missed_with(cases, [])


def test_the_matmul_wrapper_names_real_points_and_records_each_tuners_pick(monkeypatch):
    wrapper = ROOT / "benchmarks" / "evidence" / "matmul" / "profile_matmul.py"
    out = subprocess.run([sys.executable, str(wrapper), str(PROBE), "--list"], check=True,
                         capture_output=True, text=True).stdout.split()
    assert {"mm_ragged_tma", "mm_desc_2048", "lg_4096_bf16", "lg_8192x2048"} <= set(out[::2])
    spec = importlib.util.spec_from_file_location("profile_matmul", wrapper)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its __main__ block does not run
    monkeypatch.setitem(sys.modules, "profile_missed", None)  # restored after the test
    probe = probe_common.load_profile_missed(PROBE)
    # profile_missed.py finds each tuner in the wrapper, which runs as __main__
    monkeypatch.setitem(sys.modules, "__main__", module)
    for name, case in module.cases(probe.Case).items():
        probe.bench_spec(case)  # raises unless the point is one of the bench's
        if case.role == "ours":  # every Triton kernel here is autotuned: its pick is recorded
            assert case.tuned and case.tuned[0] == "__main__", name
            pick = probe._tuned_config(case)  # builds the tuner (None until it has run)
            assert pick is None or "BLOCK_M" in pick, name


COMPILE_SM90 = '''
import json, sys
import triton
import triton.language as tl
from scripts import probe_common as pc

@triton.jit
def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

@triton.jit
def bad(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)  # BLOCK = 3: not a power of two

@triton.jit
def halves(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):  # a split epilogue, as in matmul
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    left, right = tl.split(tl.permute(tl.reshape(x, (M, 2, N // 2)), (0, 2, 1)))
    half = tl.arange(0, M)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :]
    tl.store(y_ptr + half, left + right)

sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
ok, none = pc.compile_sm90(add, sig, {"BLOCK": 128}, {}, {"num_warps": 4})
no, failure = pc.compile_sm90(bad, {"x_ptr": "*fp32"}, {"BLOCK": 3}, {}, {"num_warps": 4})
# Triton 3.6 fails a pass on this one with two CTAs; a later Triton may compile it
two, in_pass = pc.compile_sm90(halves, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {"M": 64, "N": 64}, {},
                               {"num_warps": 4, "num_ctas": 2})
print("after the refusal, fd 2 is stderr again", file=sys.stderr)
print(json.dumps({"ptx": "ld.global" in ok.asm["ptx"], "none": none, "no": no, "failure": failure,
                  "two": two is not None, "in_pass": in_pass}))
'''


def test_compile_sm90_compiles_without_a_gpu_and_returns_a_refusal_with_its_diagnostics(tmp_path):
    script = tmp_path / "compile_sm90.py"  # @triton.jit reads its source from a file
    script.write_text(COMPILE_SM90)
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(ROOT)}  # compile, not interpret
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["ptx"] and result["none"] is None and result["no"] is None
    failure = result["failure"]
    assert set(failure) == {"error", "diagnostic", "llvm_error", "failed_pass"}
    assert "power of 2" in failure["error"] or "power of two" in failure["error"], failure
    assert "fd 2 is stderr again" in out.stderr
    # a refusal inside a compiler pass is recorded with MLIR's own words and the pass's name
    assert result["two"] or (result["in_pass"]["diagnostic"] and result["in_pass"]["failed_pass"]), result


def test_edited_copy_applies_each_replacement_and_loads_a_module_of_its_own(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("A = 1\nB = 2\n")
    mod = probe_common.edited_copy(source, tmp_path, "example_edited", [("A = 1", "A = 10"),
                                                                        ("B = 2", "B = A + 1")])
    assert (mod.A, mod.B) == (10, 11) and mod.__name__ == "example_edited"
    assert source.read_text() == "A = 1\nB = 2\n"  # the example is left as it was


def test_edited_copy_refuses_a_replacement_that_does_not_match_once(tmp_path):
    source = tmp_path / "example.py"
    source.write_text("x = 1\nx = 1\n")
    with pytest.raises(SystemExit, match="not exactly one 'x = 1'"):
        probe_common.edited_copy(source, tmp_path, "twice", [("x = 1", "x = 2")])
    with pytest.raises(SystemExit, match="not exactly one 'y'"):
        probe_common.edited_copy(source, tmp_path, "never", [("y", "z")])
    with pytest.raises(SystemExit, match="match it; apply the patch first$"):
        probe_common.edited_copy(source, tmp_path, "hinted", [("y", "z")],
                                 "; apply the patch first")


def test_compile_only_writes_the_sizes_with_a_header_and_is_off_without_the_flag(tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setattr(probe_common, "ptxas_version", lambda: "Cuda compilation tools 12.8")
    sizes = {"k, head_dim=64": {"sass_instructions": 10, "registers": 168}}
    assert not probe_common.compile_only(["p.py"], "p.py", "s.json", lambda: sizes, "m")
    assert probe_common.compile_only(["p.py", "--compile", str(tmp_path)], "bench/p.py",
                                     "s.json", lambda: sizes, "how")
    written = json.loads((tmp_path / "s.json").read_text())
    assert written["probe"] == "bench/p.py --compile" and written["method"] == "how"
    assert written["ptxas"] == "Cuda compilation tools 12.8"
    assert written["points"] == [{"kernel": "k, head_dim=64", "sass_instructions": 10,
                                  "registers": 168}]
    with pytest.raises(SystemExit, match="usage: p.py --compile DIR"):
        probe_common.compile_only(["p.py", "--compile"], "bench/p.py", "s.json", dict, "m")
