"""What new probes of benchmarks/evidence/<page>/ share: their output's layout, its header, ptxas.

A probe already cited is kept as it was (CONTRIBUTING: the code that measured its run), so the
probes written before this module keep their own copies of these few lines.

* ``write_points``: the JSON layout of every ``benchmarks/evidence/<page>/runNN/*.json`` that
  ``{{ evidence ... }}`` quotes (``scripts/evidence.py``): the header's keys one per line, then one
  point per line, so that a diff of two runs reads point by point.
* ``environment``: the header's common part: the GPU, the versions and the date.
* ``ptxas_usage``: registers per thread and bytes spilled of a kernel compiled for sm_90, read from
  ``ptxas -v`` (the ptxas that ships with Triton) on its PTX; no GPU needed. ``code_size``: those,
  the kernel's SASS instruction count (``sass_instructions``, from the wheel's ``nvdisasm``), its
  shared memory and ptxas's serialized-``wgmma`` warnings, in one dict.
* ``load_module``: a Python file loaded as a module under a name of its own (a second copy of an
  example gets kernels with their own compile cache); ``edited_copy``: such a copy with text
  replacements applied (a candidate, or the code before a change); ``compile_only``: a probe's
  ``--compile DIR``, its kernels' code sizes without a GPU.
* ``check_against``, ``time_interleaved``, ``summarize``: check every candidate against one
  reference output, time them in interleaved passes (do_bench and CUDA graph), and reduce the
  passes to a point's columns.
* ``compile_sm90``: a kernel compiled for sm_90 without a GPU, or the compiler's refusal with
  what it wrote to file descriptor 2: the MLIR diagnostic, the LLVM error and the failed pass.
* ``load_profile_missed``, ``profile_missed_with``: ``benchmarks/evidence/overview/profile_missed.py``
  loaded as a module, and the body of a wrapper that adds cases to it and stands in for the
  Python interpreter of ``profile_missed.sh``.
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import json
import os
import platform
import re
import subprocess
import tempfile
from pathlib import Path


def environment() -> dict:
    import torch
    import triton

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none (CPU)"
    return {"gpu": gpu, "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


def write_points(path: Path, header: dict, points: list[dict]) -> None:
    """``header`` (keys one per line) and ``points`` (one per line) as one JSON object."""
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v, default=str)}," for k, v in header.items()]
    lines.append('  "points": [')
    lines += [f"    {json.dumps(p, default=str)}" + ("," if i < len(points) - 1 else "")
              for i, p in enumerate(points)]
    lines += ["  ]", "}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def ptxas() -> Path:
    import triton

    return Path(triton.__file__).parent / "backends/nvidia/bin/ptxas"


def ptxas_version() -> str:
    """The last line of ``ptxas --version`` (its release and build)."""
    out = subprocess.run([str(ptxas()), "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def ptxas_log(ptx: str) -> str:
    """What ``ptxas -v`` prints (stderr) assembling PTX for sm_90a: usage lines and warnings."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        return subprocess.run([str(ptxas()), "-v", "--gpu-name=sm_90a", str(src), "-o", str(Path(tmp) / "k.o")],
                              capture_output=True, text=True, check=True).stderr


def ptxas_usage(ptx: str, log: str | None = None) -> dict:
    """{"registers", "spill_store_bytes", "spill_load_bytes"} of PTX assembled for sm_90a
    (read from ``log``, ``ptxas_log(ptx)``'s output, when the caller already has it)."""
    out = ptxas_log(ptx) if log is None else log
    regs = re.search(r"Used (\d+) registers", out)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out)
    if regs is None or spills is None:
        raise ValueError(f"ptxas -v printed no register or spill counts: {out[-300:]!r}")
    return {"registers": int(regs.group(1)), "spill_store_bytes": int(spills.group(1)),
            "spill_load_bytes": int(spills.group(2))}


@functools.lru_cache(maxsize=16)
def disassemble(cubin: bytes) -> str:
    """The SASS of a cubin, as ``nvdisasm -c`` (beside the wheel's ptxas) prints it; kept for
    the last few cubins, which ``code_size`` and a probe's own SASS reading both ask for."""
    nvdisasm = ptxas().parent / "nvdisasm"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([str(nvdisasm), "-c", f.name], capture_output=True, text=True,
                              check=True).stdout


def sass_instructions(cubin: bytes) -> int:
    """How many instructions ``nvdisasm`` (beside the wheel's ptxas) lists in a cubin."""
    return sum(1 for line in disassemble(cubin).splitlines()
               if re.match(r"\s+/\*[0-9a-f]{4,}\*/", line))


def code_size(kernel) -> dict:
    """A compiled sm_90 kernel's SASS instructions, registers, spills (one ptxas run),
    shared memory, and ptxas's "wgmma.mma_async instructions are serialized" warnings."""
    log = ptxas_log(kernel.asm["ptx"])
    return {"sass_instructions": sass_instructions(kernel.asm["cubin"]),
            **ptxas_usage(kernel.asm["ptx"], log), "shared_bytes": kernel.metadata.shared,
            "wgmma_serialized_warnings": sum("serialized" in line for line in log.splitlines())}


def load_module(name: str, path):
    """The Python file at ``path`` executed as module ``name``, registered in ``sys.modules``
    (dataclasses and Triton look a function's module up by name)."""
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def edited_copy(source: Path, folder: Path, name: str, pairs, hint: str = "") -> object:
    """The file ``source`` with the ``(old, new)`` text replacements ``pairs`` applied in
    order, written to ``folder/name.py`` and loaded as module ``name`` (a candidate built from
    an example: its kernels get a compile cache of their own). Each ``old`` must occur exactly
    once when its turn comes; otherwise SystemExit names it (and adds ``hint``)."""
    src = Path(source).read_text()
    for old, new in pairs:
        if src.count(old) != 1:
            raise SystemExit(f"{source} has not exactly one {old.strip()[:60]!r}: the "
                             "probe's text replacements no longer match it" + hint)
        src = src.replace(old, new)
    path = Path(folder) / f"{name}.py"
    path.write_text(src)
    return load_module(name, path)


def compile_only(argv: list[str], probe: str, filename: str, sizes, method: str) -> bool:
    """A probe's ``--compile DIR`` (any machine, no GPU): ``sizes()`` -> {kernel: code sizes}
    printed and written to ``DIR/filename`` with a header. False when ``--compile`` is not in
    ``argv`` (the probe goes on to time)."""
    if "--compile" not in argv:
        return False
    at = argv.index("--compile") + 1
    if at >= len(argv):
        raise SystemExit(f"usage: {Path(probe).name} --compile DIR")
    found = sizes()
    for name, res in found.items():
        print(name, res)
    header = {"probe": f"{probe} --compile", **environment(), "ptxas": ptxas_version(),
              "method": method}
    write_points(Path(argv[at]) / filename, header,
                 [{"kernel": name, **res} for name, res in found.items()])
    return True


def check_against(fns: dict, ref, rtol: float, atol: float) -> dict:
    """name -> "pass" or "FAIL: <first line>" for each call in ``fns``, against ``ref``."""
    import torch

    checks = {}
    for name, fn in fns.items():
        try:
            torch.testing.assert_close(fn(), ref, rtol=rtol, atol=atol)
            checks[name] = "pass"
        except AssertionError as err:
            checks[name] = "FAIL: " + str(err).splitlines()[0]
    return checks


def time_interleaved(fns: dict, passes: int, timing, graphs=(False, True)) -> dict:
    """(name, graph) -> the ms of each pass: ``passes`` rounds, each timing every call once with
    ``timing(fn, graph=False)`` (do_bench) and ``timing(fn, graph=True)`` (CUDA graph), so that a
    drift of the GPU's clock reaches every candidate alike. ``graphs=(False,)``: do_bench only
    (for calls a CUDA graph cannot capture)."""
    ms = {(n, g): [] for n in fns for g in graphs}
    for _ in range(passes):
        for name, fn in fns.items():
            for graph in graphs:
                ms[(name, graph)].append(timing(fn, graph))
    return ms


def summarize(runs: list[float], ref_runs: list[float], work: float, key: str,
              ref: str = "cudnn") -> dict:
    """One candidate's columns for one timing ``key``: the median ms over passes, work / ms in
    T per s (``work`` in FLOPs gives TFLOP/s), the spread (max / min - 1) and the median ratio
    of the reference ``ref``'s ms to the candidate's, pass by pass."""
    mid = sorted(runs)[len(runs) // 2]
    ratios = sorted(r / m for r, m in zip(ref_runs, runs, strict=True))
    return {f"ms_{key}": round(mid, 5), f"tflops_{key}": round(work / mid / 1e9, 1),
            f"spread_{key}": round(max(runs) / min(runs) - 1, 4),
            f"ratio_to_{ref}_{key}": round(ratios[len(ratios) // 2], 4)}


def run_points(points, setup, passes: int, timing, budget_s: float, ref: str,
               ref_key: str = "cudnn", clock=None, graphs=(False, True)) -> tuple[list[dict], list[dict]]:
    """The loop of a check-then-time probe: (rows, skipped points).

    For each point ``pt``, ``setup(pt)`` returns ``(fns, tol, work)``: name -> call (``ref``
    among them), the rtol/atol of the check and the point's work (FLOPs or bytes). Every other
    call is checked against ``ref``'s output, the passing ones and ``ref`` are timed in
    ``passes`` interleaved passes, and each call gets one row: the point, ``check``, and
    ``summarize``'s columns for do_bench and CUDA graph (``graphs``: as in
    ``time_interleaved``). A point not started within
    ``budget_s`` seconds of the first is skipped (listed, not measured)."""
    import time

    clock = clock or time.monotonic
    t0 = clock()
    rows, skipped = [], []
    for pt in points:
        if clock() - t0 > budget_s:
            skipped.append(pt)
            continue
        fns, tol, work = setup(pt)
        checks = check_against({n: f for n, f in fns.items() if n != ref}, fns[ref](), tol, tol)
        timed = {n: f for n, f in fns.items() if checks.get(n, "pass") == "pass"}
        ms = time_interleaved(timed, passes, timing, graphs)
        for name in fns:
            row = {"candidate": name, **pt, "check": checks.get(name, "reference")}
            if name in timed:
                for graph, key in ((g, "cudagraph" if g else "do_bench") for g in graphs):
                    row.update(summarize(ms[(name, graph)], ms[(ref, graph)], work, key, ref_key))
            rows.append(row)
            print(row, flush=True)
    return rows, skipped


def probe_args(argv=None):
    """The arguments of a check-then-time probe: ``--out DIR`` (where its JSON goes),
    ``--smoke`` (the bookkeeping on the CPU with fake timings) and ``--budget S``."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds: no new point starts after them (the rest are listed as skipped)")
    return ap.parse_args(argv)


def timing_method(smoke: bool):
    """(device, timing) for ``run_points``: on the GPU ``timing(fn, graph)`` is
    ``do_bench`` (warmup 25, rep 100, median) or ``do_bench_cudagraph`` (rep 20); with
    ``smoke``, the CPU and fixed fake times (1.0 and 1.1 ms)."""
    import torch

    if smoke:
        return torch.device("cpu"), lambda fn, graph: 1.0 + 0.1 * graph
    from triton.testing import do_bench, do_bench_cudagraph

    def timing(fn, graph):
        return do_bench_cudagraph(fn, rep=20) if graph else do_bench(
            fn, warmup=25, rep=100, return_mode="median")
    return torch.device("cuda"), timing


RUN_POINTS_METHOD = (
    "run_points and timing_method of scripts/probe_common.py: per point, every candidate is "
    "checked against the reference's output (torch.testing.assert_close) before it is timed; "
    "then interleaved passes, each timing every candidate with triton.testing.do_bench (warmup "
    "25, rep 100, median) and, unless the probe says it times with do_bench only, "
    "do_bench_cudagraph (rep 20); a row keeps the median over passes, "
    "the spread (max / min - 1) and the median of the per-pass ratios reference time / "
    "candidate time.")


def probe_header(probe: str, method: str, **extra) -> dict:
    """A probe JSON's header: its path, the environment, ``RUN_POINTS_METHOD`` followed by
    the probe's own ``method`` (inputs, tolerances, work) and ``extra``."""
    return {"probe": probe, **environment(), "method": f"{RUN_POINTS_METHOD} {method}", **extra}


def attention_inputs(pt: dict, batch: int, heads: int, device, smoke: bool = False):
    """Seeded q, k, v for an attention point (its ``dtype`` "fp16"/"bf16", ``head_dim`` and
    ``seq``), (batch, heads, seq, head_dim); for a smoke run (1, 1, 128, head_dim)."""
    import torch

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[pt["dtype"]]
    shape = (1, 1, 128, pt["head_dim"]) if smoke else (batch, heads, pt["seq"], pt["head_dim"])
    gen = torch.Generator(device=device).manual_seed(pt["seq"])
    return tuple(torch.randn(shape, device=device, dtype=dt, generator=gen) for _ in range(3))


def load_profile_missed(path):
    """``benchmarks/evidence/overview/profile_missed.py`` (at ``path``) as a module, registered
    as ``profile_missed`` in ``sys.modules``: its dataclasses look their module up by name."""
    return load_module("profile_missed", path)


def profile_missed_with(cases, argv=None) -> int:
    """Run ``profile_missed.py`` (the path in ``argv[0]``) with the cases ``cases(Case)`` added.

    ``profile_missed.sh`` calls ``$PYTHON <probe> ARGS``; a wrapper named as ``PYTHON`` gets the
    probe's path first, loads it, adds its own cases and hands the rest to the probe's ``main``.
    """
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if not argv or not argv[0].endswith(".py"):
        raise SystemExit("usage: PYTHON=<this wrapper> bash benchmarks/evidence/overview/profile_missed.sh"
                         " CASE ...  (the wrapper's first argument is profile_missed.py)")
    probe = load_profile_missed(argv[0])
    extra = cases(probe.Case)
    taken = sorted(set(extra) & set(probe.CASES))
    if taken:
        raise ValueError(f"cases {taken} are profile_missed.py's own: give the new ones other names")
    probe.CASES.update(extra)
    return probe.main(argv[1:])


def compile_sm90(kernel, signature: dict, constexprs: dict, attrs: dict, options: dict):
    """``(compiled, None)``, or ``(None, failure)`` where the compiler refused: ``failure`` holds
    the exception (``error``), the first MLIR ``error:`` line (``diagnostic``), the first
    ``LLVM ERROR:`` line (``llvm_error``) and the pass that failed (``failed_pass``), the last
    three read from what the compiler writes to file descriptor 2 ("" if none).

    ``signature`` types the arguments that are not in ``constexprs``; ``attrs`` maps an argument's
    ``(index,)`` to its specialization (e.g. ``CUDABackend(target).parse_attr("D")``: divisible
    by 16). Nothing is launched: PTX and cubin only."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {**signature, **{name: "constexpr" for name in constexprs}}
    consts = {(kernel.arg_names.index(name),): value for name, value in constexprs.items()}
    with tempfile.TemporaryFile(mode="w+") as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            return triton.compile(ASTSource(kernel, sig, consts, attrs),
                                  target=GPUTarget("cuda", 90, 32), options=options), None
        except Exception as err:  # noqa: BLE001 - the compiler's refusal is what the caller records
            log.seek(0)
            lines = log.read().splitlines()
            said = [ln.split("error:", 1)[1].strip() for ln in lines if "error:" in ln]
            passes = [ln.split("executing", 1)[1].split("on '")[0].strip(" [`'")
                      for ln in lines if "Pipeline failed while executing" in ln]
            fatal = [ln.split("LLVM ERROR:", 1)[1].strip() for ln in lines if "LLVM ERROR:" in ln]
            text = str(err).strip().splitlines()
            return None, {"error": f"{type(err).__name__}: {text[-1][:160] if text else ''}",
                          "diagnostic": said[0] if said else "",
                          "llvm_error": fatal[0][:300] if fatal else "",
                          "failed_pass": passes[0] if passes else ""}
        finally:
            os.dup2(saved, 2)
            os.close(saved)
