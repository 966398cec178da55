"""The Nsight Compute probe benchmarks/evidence/overview/profile_missed.py, on the CPU: its cases name real
benchmark points, importing it needs no GPU, and its summarizer reads a fabricated CSV in the shape
``ncu --csv --page raw`` writes (a header row, a units row, one row per kernel)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "benchmarks" / "evidence" / "overview" / "profile_missed.py"


def _probe():
    spec = importlib.util.spec_from_file_location("profile_missed", PROBE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


INFO = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC"]
METRICS = [  # (name, unit, kernel 0, kernel 1)
    ("gpu__time_duration.sum", "nsecond", "198,100", "5,100.5"),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "31.2", "12.0"),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", "55.4", "70.1"),
    ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", "52.0", "70.1"),
    ("launch__registers_per_thread", "register/thread", "255", "40"),
    ("launch__shared_mem_per_block_dynamic", "byte", "0", "1,024"),
    ("launch__shared_mem_per_block_static", "byte", "512", "0"),
    ("launch__occupancy_limit_registers", "block", "1", "6"),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "%", "12.4", "60.0"),
    ("sm__maximum_warps_per_active_cycle_pct", "%", "12.5", "75"),
    ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "byte", "1,048,576", "0"),
    ("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", "byte", "524,288", "0"),
    ("smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio", "", "9.5", "3"),
    ("smsp__average_warp_latency_issue_stalled_barrier.ratio", "", "4.25", "0.5"),
    ("smsp__average_warp_latency_issue_stalled_selected.ratio", "", "50", "1"),
    ("smsp__average_warp_latency_issue_stalled_wait.ratio", "", "1.5", "0.25"),
    ("smsp__average_warp_latency_issue_stalled_lg_throttle.ratio", "", "2", "4"),
    ("smsp__average_warp_latency_issue_stalled_mio_throttle.ratio", "", "0.5", "0"),
    ("smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio", "", "0.75", "0"),
    ("smsp__pcsamp_warps_issue_stalled_long_scoreboard", "", "100", "7"),
    ("smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued", "", "90", "6"),
    ("smsp__pcsamp_warps_issue_stalled_wait", "", "300", "8"),
    ("launch__grid_size", "", "132", "n/a"),
]


def _q(cells):
    return ",".join(f'"{c}"' for c in cells)


def fabricated_csv() -> str:
    kernels = [["0", "4242", "python3", "127.0.0.1", "layer_norm_bwd_long_kernel", "1", "7", "(256, 1, 1)",
                "(132, 1, 1)", "0", "9.0"],
               ["1", "4242", "python3", "127.0.0.1", "layer_norm_dwdb_kernel", "1", "7", "(128, 1, 1)",
                "(256, 1, 1)", "0", "9.0"]]
    lines = ["==PROF== Connected to process 4242 (/usr/bin/python3.12)",
             _q(INFO + [m[0] for m in METRICS]),
             _q([""] * len(INFO) + [m[1] for m in METRICS])]
    lines += [_q(k + [m[2 + i] for m in METRICS]) for i, k in enumerate(kernels)]
    lines.append("==PROF== Disconnected from process 4242")
    return "\n".join(lines) + "\n"


def test_cases_name_real_benchmark_points_without_a_gpu():
    probe = _probe()
    assert "torch" not in probe.__dict__  # torch is imported only to run a case
    for name, case in probe.CASES.items():
        spec = probe.bench_spec(case)  # imports the case file: no GPU needed
        assert spec["name"] == case.bench, name
    pairs = {}
    for case in probe.CASES.values():
        pairs.setdefault(case.pair, set()).add(case.role)
    assert all("ours" in roles for roles in pairs.values())


def test_read_raw_csv_skips_prof_lines_and_units_row():
    probe = _probe()
    kernels = probe.read_ncu_csv(fabricated_csv())
    assert [k["info"]["Kernel Name"] for k in kernels] == ["layer_norm_bwd_long_kernel", "layer_norm_dwdb_kernel"]
    assert kernels[0]["metrics"]["gpu__time_duration.sum"] == 198100
    assert kernels[0]["units"]["gpu__time_duration.sum"] == "nsecond"
    assert kernels[1]["metrics"]["launch__grid_size"] is None  # n/a


def test_summarizer_on_fabricated_csv(tmp_path):
    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / "ln_bwd_16384.csv").write_text(fabricated_csv())
    (folder / "ln_bwd_16384.rc").write_text("0\n")
    (folder / "ln_bwd_16384.cmd").write_text("ncu --csv --page raw python3 profile_missed.py ln_bwd_16384\n")
    (folder / "ln_bwd_16384.meta.json").write_text(json.dumps({"gpu": "NVIDIA H200", "torch": "2.11"}))
    (folder / "attn_bwd_d128.csv").write_text("==ERROR== the application returned an error code (1)\n")
    (folder / "attn_bwd_d128.rc").write_text("1\n")
    (folder / "attn_bwd_d128.log").write_text("Traceback ...\nRuntimeError: boom\n")
    (folder / "matmul_cublas_2048.rc").write_text("skipped\n")
    (folder / "ncu_version.txt").write_text("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.1\n")
    (folder / "run.txt").write_text("command: OUT=/x bash benchmarks/evidence/overview/profile_missed.sh \n"
                                    "date: 2026-12-03T20:00:00Z\n")
    out = tmp_path / "profile_missed.json"
    subprocess.run([sys.executable, str(PROBE), "--summarize", str(folder), "--out", str(out)], check=True,
                   capture_output=True, text=True)
    summary = json.loads(out.read_text())
    assert summary["gpu"] == "NVIDIA H200" and "2025.1" in summary["ncu_version"]
    assert summary["date"] == "2026-12-03T20:00:00Z"
    assert list(summary["cases"]) == ["ln_bwd_16384", "attn_bwd_d128", "matmul_cublas_2048"]  # CASES order
    ln = summary["cases"]["ln_bwd_16384"]
    assert ln["status"] == "ok" and ln["command"].startswith("ncu")
    k0, k1 = ln["kernels"]
    assert k0["duration_us"] == pytest.approx(198.1) and ln["total_duration_us"] == pytest.approx(203.2005)
    assert (k0["sm_throughput_pct"], k0["memory_throughput_pct"], k0["dram_throughput_pct"]) == (31.2, 55.4, 52.0)
    assert k0["registers_per_thread"] == 255 and k0["shared_memory"]["launch__shared_mem_per_block_static"] == 512
    assert (k0["achieved_occupancy_pct"], k0["theoretical_occupancy_pct"]) == (12.4, 12.5)
    assert k0["occupancy_limits_blocks"] == {"registers": 1}
    assert k0["spills"] is True and k1["spills"] is False
    assert k0["local_memory"]["l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"] == 1048576
    stalls = k0["stalls"]
    assert stalls["family"] == "smsp__average_warp_latency_issue_stalled_*.ratio"
    assert [r for r, _ in stalls["top"]] == ["long_scoreboard", "barrier", "lg_throttle", "wait",
                                             "math_pipe_throttle"]  # "selected" is not a stall
    assert stalls["top"][0] == ["long_scoreboard", 9.5]
    assert stalls["families"]["smsp__average_warp_latency_issue_stalled_*.ratio"]["selected"] == 50
    pcsamp = stalls["families"]["smsp__pcsamp_warps_issue_stalled_*"]
    assert pcsamp["top"] == [["wait", 300], ["long_scoreboard", 100]]
    assert "smsp__pcsamp_warps_issue_stalled_*_not_issued" in stalls["families"]
    assert k0["limiter"].startswith("latency") and k1["limiter"] == "memory"
    assert summary["cases"]["attn_bwd_d128"]["status"].startswith("no kernels profiled")
    assert summary["cases"]["attn_bwd_d128"]["log_tail"][-1] == "RuntimeError: boom"
    assert summary["cases"]["matmul_cublas_2048"]["status"].startswith("skipped")
    ln_pair = next(c for c in summary["comparisons"] if c["ours"] == "ln_bwd_16384")
    assert ln_pair["ours_us"] == pytest.approx(203.2005) and ln_pair["peer"] is None


def test_details_page_is_read_too():
    probe = _probe()
    header = _q(INFO + ["Section Name", "Metric Name", "Metric Unit", "Metric Value"])
    base = ["0", "1", "python3", "h", "k(int)", "1", "7", "(128, 1, 1)", "(4, 1, 1)", "0", "9.0"]
    rows = [_q(base + ["GPU Speed Of Light Throughput", "gpu__time_duration.sum", "usecond", "1,234.5"]),
            _q(base + ["Launch Statistics", "launch__registers_per_thread", "register/thread", "96"])]
    kernels = probe.read_ncu_csv("\n".join([header, *rows]))
    summary = probe.summarize_kernel(kernels[0])
    assert summary["duration_us"] == pytest.approx(1234.5) and summary["registers_per_thread"] == 96


def test_command_line():
    run = [sys.executable, str(PROBE)]
    listed = subprocess.run([*run, "--list"], check=True, capture_output=True, text=True).stdout.split("\n")
    assert listed[0].split() == ["ln_bwd_16384", "45"]
    assert subprocess.run([*run, "--help"], capture_output=True, text=True).returncode == 0
    assert subprocess.run([*run, "--list", "no_such_case"], capture_output=True, text=True).returncode == 2
