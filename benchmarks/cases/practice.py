"""GPU probe for the Practice pages (testing, benchmarking, debugging, shipping).

Run from the repository root on the GPU machine:  python benchmarks/cases/practice.py
Prints a compact report; needs no network; finishes in well under 90 s on an H200.
Each section is independent: a failure prints one line and the probe goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
T0 = time.perf_counter()

import torch  # noqa: E402
import triton  # noqa: E402


def section(title):
    def wrap(fn):
        print(f"\n== {title}  (t={time.perf_counter() - T0:.1f}s)")
        try:
            fn()
        except Exception as err:  # report and go on
            print(f"   FAILED: {type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}")
            print("   " + traceback.format_exc().strip().splitlines()[-3][:300])
        return fn
    return wrap


def self_check_line(ex):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ex.self_check()
    print(f"   self_check: {buf.getvalue().strip()[:200]}")


print(f"torch {torch.__version__}, triton {triton.__version__}, python {sys.version.split()[0]}, "
      f"cuda {torch.cuda.is_available()} {torch.cuda.get_device_name() if torch.cuda.is_available() else ''}")
if not torch.cuda.is_available():
    sys.exit("no CUDA device: this probe is for the GPU machine")


@section("debugging: what a launch returns, and its PTX")
def _():
    import debugging as ex

    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    c, compiled = ex.launch_tile_matmul(a, a)
    torch.testing.assert_close(c.float(), a.float() @ a.float(), rtol=1e-2, atol=1e-1)
    print(f"   launch returned {type(compiled).__module__}.{type(compiled).__name__}; "
          f"asm keys {sorted(compiled.asm)}")
    print(f"   fp16 launch ptx: {ex.tensor_core_ops(compiled.asm['ptx'])}; "
          f"ttir has tt.dot: {'tt.dot' in compiled.asm['ttir']}; ttgir has warp_group_dot: "
          f"{'warp_group_dot' in compiled.asm['ttgir']}")
    a32 = torch.randn(64, 64, device="cuda")
    for prec in ("tf32", "ieee"):
        _, k = ex.launch_tile_matmul(a32, a32, input_precision=prec)
        print(f"   fp32 {prec}: {ex.tensor_core_ops(k.asm['ptx'])}")
    aot = ex.tensor_core_ops(ex.tile_matmul_asm("fp16", 64, arch=90)["ptx"])
    print(f"   ahead-of-time sm_90 fp16: {aot}; sm_80: {ex.tensor_core_ops(ex.tile_matmul_asm('fp16', 64, 80)['ptx'])}")
    self_check_line(ex)


@section("debugging: device-side print from the GPU (lines per program)")
def _():
    import debugging as ex

    x = torch.randn(2, 5, device="cuda")
    with tempfile.TemporaryFile(mode="w+") as tmp:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            ex.row_sum(x, debug=True)
            torch.cuda.synchronize()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        lines = tmp.read().splitlines()
    printed = [line for line in lines if "row_sum" in line and "compiling" not in line]
    print(f"   {len(printed)} device lines for 2 programs (num_warps=4); static_print lines: "
          f"{sum('compiling' in line for line in lines)}")
    for line in printed[:2] + printed[-1:]:
        print(f"   | {line[:150]}")


@section("testing: fp32 tl.dot error against float64 (tf32 vs ieee)")
def _():
    import testing_kernels as ex

    dev = torch.device("cuda")
    for M, N, K in ((127, 255, 33), (512, 512, 512)):
        x = torch.randn(M, K, device="cuda")
        w = torch.randn(K, N, device="cuda")
        tf32 = ex.dot_error(x, w, input_precision="tf32")
        ieee = ex.dot_error(x, w, input_precision="ieee")
        tol_tf32 = ex.tolerance(torch.float32, dev, K)["atol"]
        tol_ieee = ex.tolerance(torch.float32, dev, K, "ieee")["atol"]
        print(f"   {M}x{N}x{K}: max err tf32 {tf32:.2e} (atol {tol_tf32:.1e}), ieee {ieee:.2e} (atol {tol_ieee:.1e})")
    x = torch.randn(127, 33, device="cuda", dtype=torch.float16)
    w = torch.randn(33, 255, device="cuda", dtype=torch.float16)
    print(f"   fp16 127x255x33: max err {ex.dot_error(x, w):.2e} "
          f"(atol {ex.tolerance(torch.float16, dev, 33)['atol']:.1e})")
    print(f"   broken kernel: {ex.compare_fills()}")
    self_check_line(ex)


@section("shipping: opcheck, torch.compile(fullgraph=True), autograd")
def _():
    import torch_op as ex

    self_check_line(ex)
    for name, op in (("triton_op", ex.silu), ("custom_op", ex.silu_opaque)):
        x = torch.randn(1025, device="cuda", requires_grad=True)
        try:
            torch.library.opcheck(op, (x,))
            print(f"   opcheck {name} (all tests): passed")
        except Exception as err:
            print(f"   opcheck {name}: FAILED {type(err).__name__}: {str(err).splitlines()[0][:200]}")
    t = time.perf_counter()
    f = torch.compile(lambda v: ex.silu(v) * 2.0, fullgraph=True)
    x = torch.randn(4097, device="cuda", requires_grad=True)
    y = f(x)
    y.sum().backward()
    ref = x.detach().clone().requires_grad_(True)
    (ex.silu_torch(ref) * 2.0).sum().backward()
    torch.testing.assert_close(y, ex.silu_torch(ref) * 2.0)
    torch.testing.assert_close(x.grad, ref.grad)
    print(f"   torch.compile(fullgraph=True) forward+backward through tit::silu: ok "
          f"({time.perf_counter() - t:.1f}s to compile)")
    print(f"   warm_up: {ex.warm_up(dtypes=(torch.float32, torch.float16, torch.bfloat16))} kernels")


@section("shipping: host microseconds per call (2000 calls, n=1024)")
def _():
    import torch_op as ex

    for provider in ex.BENCHMARKS[0]["providers"]:
        case = ex.bench_case("silu_op_overhead", provider, 1024, device=torch.device("cuda"))
        fn = case["fn"]
        torch.testing.assert_close(fn(), case["ref"](), rtol=case["rtol"], atol=case["atol"])
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(2000):
            fn()
        host = (time.perf_counter() - t) / 2000 * 1e6
        torch.cuda.synchronize()
        print(f"   {provider:11s} {host:6.1f} us/call")


@section("benchmarking: measure_rows (timing_methods)")
def _():
    import timing_methods as ex

    ex.self_check()
    rows = ex.measure_rows(torch.device("cuda"))
    sizes = sorted({r["x"] for r in rows})
    print("   " + "method".ljust(32) + "".join(f"n=2^{s.bit_length() - 1}".rjust(12) for s in sizes) + "  (us, p50)")
    for provider in ex.TIMERS:
        vals = {r["x"]: r["value"] for r in rows if r["provider"] == provider}
        print("   " + provider.ljust(32) + "".join(f"{vals.get(s, float('nan')):12.2f}" for s in sizes))
    keys = set(rows[0])
    print(f"   row keys: {sorted(keys)}")


@section("pytest: the GPU-only tests of the practice examples")
def _():
    left = 85 - (time.perf_counter() - T0)
    if left < 15:
        print(f"   skipped: only {left:.0f}s left")
        return
    files = [f"tests/test_{n}.py" for n in ("testing_kernels", "timing_methods", "debugging", "torch_op")]
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k", "gpu",
                               *files], cwd=ROOT, capture_output=True, text=True, timeout=left - 5)
        out = (done.stdout + done.stderr).strip().splitlines()
        for line in [ln for ln in out if "FAILED" in ln or "Error" in ln][:8] + out[-1:]:
            print(f"   | {line[:200]}")
    except subprocess.TimeoutExpired:
        print(f"   timed out after {left - 5:.0f}s")


print(f"\ndone in {time.perf_counter() - T0:.1f}s")
