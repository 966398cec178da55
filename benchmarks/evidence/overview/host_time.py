# ruff: noqa: B023, E501  (each lambda is timed inside the iteration that made it; long table lines)
"""Probe: where the host time of one launcher call goes, at small shapes (short kernels).

The committed H200 benchmarks give our Triton launchers 3-5x torch's host time per call
(`host_call` rows: perf_counter around one call, calls issued back to back after a
synchronize, scripts/bench.py's `time_host_call`). This probe takes each launcher apart
at a shape whose kernel is short, timing every piece the same way (`time_host_call`
itself, repeated REPEATS times, median of the medians), plus a back-to-back loop mean:

  (a) the full public launcher;
  (b) its Python argument checks alone (the check helpers called directly);
  (c) a bare `kernel[grid](...)` with the same arguments (Triton's JIT dispatch), and the
      compiled kernel launched directly (`CompiledKernel[grid](...)`, no argument binding);
  (d) autotuned kernels: the autotuner's dispatch on a cached key against the same kernel
      launched bare with the config the autotuner picked;
  (e) the torch allocations the launcher makes;
  (f) `torch.autograd.Function.apply` where the launcher has one;
  and the torch peer op. Then a cProfile of 2000 calls of each full launcher (top 15 by
  cumulative time), and the pure-Python micro-benchmark of this branch's host fixes: each
  changed helper beside a copy of the code it replaced.

Stories (fp16): layer_norm forward and backward (4096 x 1024), matmul_persistent
(1024^3, each variant), linear_gelu (1024^3), softmax (4096 x 1024), vector_add (2^20),
attention_hopper (4 x 16 x 1024 x 128, sm_90 only).

Usage (repository root, CUDA):  python3 benchmarks/evidence/overview/host_time.py --out DIR --budget 100
Writes DIR/host_time.json (GPU, versions, date, method, every number) and prints a summary.
--budget counts from the start (imports included): no section starts after it, and no
matmul variant (its first call autotunes) after budget - 10 s; nothing is measured after
budget + 5 s. Expect about 60-110 s on the H200 with --budget 100 (compiles and autotuning
first, if Triton's cache is cold).
Without a GPU, `--cpu` runs only the pure-Python micro-benchmark (CPU tensors, the
interpreter's examples) and prints it; `--cpu-smoke` runs every section at tiny shapes in the
interpreter with few calls, to catch the probe's own errors before a GPU run.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import inspect
import json
import math
import os
import platform
import pstats
import statistics
import sys
import time
import traceback
from pathlib import Path

T0 = time.perf_counter()  # the budget counts torch's and triton's imports too

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))
if not torch.cuda.is_available():  # the examples' kernels run in the interpreter (set before triton)
    os.environ.setdefault("TRITON_INTERPRET", "1")
import triton  # noqa: E402

from scripts import bench  # noqa: E402  (time_host_call: the benchmarks' own host timer)

CUDA = torch.cuda.is_available()
DEV = "cuda" if CUDA else "cpu"
# the small shapes (short kernels); --cpu-smoke shrinks them for the interpreter
SHAPES = {"layer_norm": (4096, 1024), "matmul": 1024, "softmax": (4096, 1024), "vector_add": 2**20}
WARM_CALLS = 20
REPEATS = 5  # time_host_call runs per piece; the median of their medians is kept
LOOP_CALLS = 1000  # back-to-back calls of the loop mean
PROFILE_CALLS = 2000


def elapsed() -> float:
    return time.perf_counter() - T0


def sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def host_call_us(fn, gpu_ms: float) -> dict:
    """scripts/bench.py's time_host_call, REPEATS times: the median of its medians, their min and max, us."""
    meds = []
    for _ in range(REPEATS):
        sync()
        p50, _p20, _p80 = bench.time_host_call(fn, gpu_ms) if CUDA else _cpu_host_call(fn)
        meds.append(p50 * 1e3)
    meds.sort()
    return {"host_call_us": round(statistics.median(meds), 2), "min_us": round(meds[0], 2),
            "max_us": round(meds[-1], 2)}


def _cpu_host_call(fn):
    samples = []
    for _ in range(bench.HOST_CALL_MAX):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), 0.0, 0.0


def loop_us(fn, calls: int | None = None) -> float:
    """Mean host time per call over `calls` (LOOP_CALLS) back-to-back calls and one synchronize,
    best of 3."""
    calls = calls or LOOP_CALLS
    best = math.inf
    for _ in range(3):
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return round(best, 3)


def measure(fn, gpu_ms: float, loop: bool = True) -> dict:
    for _ in range(WARM_CALLS):  # warm: compiles, autotunes, fills caches
        fn()
    sync()
    row = host_call_us(fn, gpu_ms)
    if loop:
        row["loop_us"] = loop_us(fn)
    return row


def gpu_time_ms(fn) -> float:
    """The GPU time bench.py would size time_host_call by (do_bench median)."""
    if not CUDA:
        return 0.0
    from triton.testing import do_bench

    fn()
    return do_bench(fn, warmup=5, rep=20, return_mode="median")


def profile_top(fn, top: int = 15) -> list[dict]:
    """cProfile of PROFILE_CALLS calls, top functions by cumulative time, per launcher call (us)."""
    calls = PROFILE_CALLS
    if elapsed() > BUDGET + GRACE:
        return [{"function": "skipped: budget"}]
    if not calls:  # --cpu-smoke: the interpreter's kernels do not run under cProfile
        return []
    fn()
    sync()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    sync()
    prof.disable()
    stats = pstats.Stats(prof)
    rows = []
    for (file, line, name), (_cc, nc, tt, ct, _callers) in stats.stats.items():
        short = file if file.startswith("<") or file == "~" else "/".join(Path(file).parts[-2:])
        rows.append({"function": f"{short}:{line}({name})", "ncalls_per_call": round(nc / calls, 3),
                     "tottime_us_per_call": round(tt / calls * 1e6, 3),
                     "cumtime_us_per_call": round(ct / calls * 1e6, 3)})
    rows.sort(key=lambda r: -r["cumtime_us_per_call"])
    return rows[:top]


def measure_rows(rows: dict, gpu_ms: float, loop: bool = True) -> dict:
    """measure() of each callable; a row that fails is kept as its error, the others still run."""
    out = {}
    for label, fn in rows.items():
        if elapsed() > BUDGET + GRACE:  # the budget is spent: the rest of the section is dropped
            out[label] = "skipped: budget"
            continue
        if isinstance(fn, str):  # a piece that could not be set up
            out[label] = fn
            continue
        try:
            out[label] = measure(fn, gpu_ms, loop)
        except Exception as e:  # noqa: BLE001
            out[label] = f"failed: {type(e).__name__}: {e}"
    return out


def compiled_launch(jit_fn, grid: tuple, args: tuple, kwargs: dict):
    """The compiled kernel of jit_fn for these arguments, launched without Triton's argument
    binding: CompiledKernel[grid](*every argument in signature order). A string when that fails."""
    try:
        return _compiled_launch(jit_fn, grid, args, kwargs)
    except Exception as e:  # noqa: BLE001  (a Triton internal: may move between versions)
        return f"not measured: {type(e).__name__}: {e}"


def _compiled_launch(jit_fn, grid: tuple, args: tuple, kwargs: dict):
    compiled = jit_fn[grid](*args, **kwargs)  # a launch; returns the CompiledKernel
    sync()
    params = inspect.signature(jit_fn.fn).parameters
    bound = inspect.signature(jit_fn.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in params})
    bound.apply_defaults()
    values = tuple(bound.arguments.values())
    grid3 = tuple(grid) + (1,) * (3 - len(grid))
    runner = compiled[grid3]
    return lambda: runner(*values)


def run_section(results: dict, name: str, budget: float, fn) -> None:
    if elapsed() > budget:
        results["skipped"].append(name)
        print(f"-- {name}: skipped (budget spent at {elapsed():.0f} s)")
        return
    t0 = time.perf_counter()
    try:
        results["sections"][name] = fn()
        results["sections"][name]["section_s"] = round(time.perf_counter() - t0, 1)
    except Exception:  # noqa: BLE001  (a failing section must not lose the others)
        results["errors"][name] = traceback.format_exc()
        print(f"-- {name}: FAILED\n{traceback.format_exc()}")


# --- the stories -----------------------------------------------------------------------------

def section_layer_norm() -> dict:
    import layer_norm as ex
    import torch.nn.functional as F

    m, n, eps = SHAPES["layer_norm"][0], SHAPES["layer_norm"][1], 1e-5
    x = torch.randn(m, n, device=DEV, dtype=torch.float16)
    w = torch.randn(n, device=DEV, dtype=torch.float16)
    b = torch.randn(n, device=DEV, dtype=torch.float16)
    dy = torch.randn_like(x)
    y = torch.empty_like(x)
    mean = torch.empty(m, device=DEV)
    rstd = torch.empty(m, device=DEV)
    bn = triton.next_power_of_2(n)
    kind, size, warps = ex.FWD_TABLE.get(bn, ("row", bn, ex._num_warps(bn)))
    if kind == "rows":
        fwd_kernel, fwd_grid = ex.layer_norm_fwd_rows_kernel, (triton.cdiv(m, size),)
        fwd_args = (x, y, w, b, mean, rstd, m, n, n, n, eps)
        fwd_kw = {"ROWS": size, "BLOCK_N": bn, "num_warps": warps}
    else:
        fwd_kernel, fwd_grid = ex.layer_norm_fwd_kernel, (m,)
        fwd_args = (x, y, w, b, mean, rstd, n, n, n, eps)
        fwd_kw = {"BLOCK_N": bn, "num_warps": warps}
    fwd_gpu = gpu_time_ms(lambda: ex.layer_norm(x, w, b))
    rows = {}
    fwd = {
        "(a) layer_norm (public; no grad: the launcher directly)": lambda: ex.layer_norm(x, w, b),
        "(a) layer_norm_fwd (launcher, returns y, mean, rstd)": lambda: ex.layer_norm_fwd(x, w, b, eps),
        "(b) _check_inputs": lambda: ex._check_inputs(x, w, b, eps),
        "(b) _rows (the [M, N] view)": lambda: ex._rows("x", x),
        f"(c) bare {fwd_kernel.__name__}[grid]": lambda: fwd_kernel[fwd_grid](*fwd_args, **fwd_kw),
        "(c) compiled kernel launched directly": compiled_launch(fwd_kernel, fwd_grid, fwd_args, fwd_kw),
        "(e) torch.empty x 3 (y, mean, rstd)": lambda: (torch.empty(x.shape, device=x.device, dtype=x.dtype),
                                                      torch.empty(m, device=x.device, dtype=torch.float32),
                                                      torch.empty(m, device=x.device, dtype=torch.float32)),
        "(f) LayerNormFunction.apply, no input requires grad": lambda: ex.LayerNormFunction.apply(x, w, b, eps),
        "peer F.layer_norm": lambda: F.layer_norm(x, (n,), w, b, eps),
    }
    rows.update(measure_rows(fwd, fwd_gpu))
    # backward
    _, mean2, rstd2 = ex.layer_norm_fwd(x, w, b, eps)
    groups = int(ex._num_groups(m, bn, x.device))
    long, bwarps, _, stages = ex._bwd_plan(bn)
    dx = torch.empty_like(x)
    dw_part = torch.empty(groups, n, device=DEV)
    db_part = torch.empty(groups, n, device=DEV)
    dw, db = torch.empty_like(w), torch.empty_like(b)
    s1_args = (dy, x, w, mean2, rstd2, dx, dw_part, db_part, m, n, n, n, n)
    if long:
        s1_kernel, s1_kw = ex.layer_norm_bwd_long_kernel, {"CHUNK": bn // 4, "NUM_STAGES": stages, "num_warps": bwarps}
    else:
        s1_kernel, s1_kw = ex.layer_norm_bwd_kernel, {"BLOCK_N": bn, "NUM_STAGES": stages, "num_warps": bwarps}
    block_g, block_cols, rwarps, rstages = ex._reduce_tile(bn)
    s2_grid = (triton.cdiv(n, block_cols),)
    s2_args = (dw_part, db_part, dw, db, groups, n)
    s2_kw = {"BLOCK_G": block_g, "BLOCK_COLS": block_cols, "NUM_STAGES": rstages, "num_warps": rwarps}

    def bare_bwd():
        s1_kernel[(groups,)](*s1_args, **s1_kw)
        ex.layer_norm_dwdb_kernel[s2_grid](*s2_args, **s2_kw)

    s1_compiled = compiled_launch(s1_kernel, (groups,), s1_args, s1_kw)
    s2_compiled = compiled_launch(ex.layer_norm_dwdb_kernel, s2_grid, s2_args, s2_kw)
    _, mean_t, rstd_t = torch.ops.aten.native_layer_norm(x, (n,), w, b, eps)  # torch's own statistics
    xg, wg, bg = (t.clone().requires_grad_(True) for t in (x, w, b))
    bwd_gpu = gpu_time_ms(lambda: ex.layer_norm_bwd(dy, x, w, mean2, rstd2))
    bwd = {
        "(a) layer_norm_bwd (launcher)": lambda: ex.layer_norm_bwd(dy, x, w, mean2, rstd2),
        "(b) _check_bwd_inputs": lambda: ex._check_bwd_inputs(dy, x, w, mean2, rstd2),
        "(b) _num_groups (stage 1's grid)": lambda: ex._num_groups(m, bn, x.device),
        "(c) bare stage 1 + stage 2 kernel[grid]": bare_bwd,
        "(c) compiled kernels launched directly": next((c for c in (s1_compiled, s2_compiled) if isinstance(c, str)),
                                                       lambda: (s1_compiled(), s2_compiled())),
        "(e) torch.empty x 5 (dx, 2 partial buffers, dw, db)": lambda: (
            torch.empty(x.shape, device=x.device, dtype=x.dtype),
            torch.empty(groups, n, device=x.device, dtype=torch.float32),
            torch.empty(groups, n, device=x.device, dtype=torch.float32),
            torch.empty(n, device=x.device, dtype=w.dtype), torch.empty(n, device=x.device, dtype=w.dtype)),
        "peer aten.native_layer_norm_backward": lambda: torch.ops.aten.native_layer_norm_backward(
            dy, x, (n,), mean_t, rstd_t, w, b, [True, True, True]),
    }
    rows.update(measure_rows(bwd, bwd_gpu))
    # (f) through autograd: forward and backward of one call
    both_gpu = fwd_gpu + bwd_gpu
    rows.update(measure_rows({
        "(f) layer_norm forward + backward through autograd":
            lambda: torch.autograd.grad(ex.layer_norm(xg, wg, bg, eps), (xg, wg, bg), dy),
        "peer F.layer_norm forward + backward through autograd":
            lambda: torch.autograd.grad(F.layer_norm(xg, (n,), wg, bg, eps), (xg, wg, bg), dy),
    }, both_gpu, loop=False))
    return {"shape": f"fp16 {m} x {n}", "gpu_ms": {"forward": fwd_gpu, "backward": bwd_gpu},
            "forward_tiling": [kind, size, warps], "backward_plan": [long, bwarps, groups, stages],
            "rows": rows,
            "profile": {"layer_norm": profile_top(lambda: ex.layer_norm(x, w, b)),
                        "layer_norm_bwd": profile_top(lambda: ex.layer_norm_bwd(dy, x, w, mean2, rstd2))}}


def _tuned_pieces(tuned, kernel_args: tuple, kernel_kw: dict, grid) -> dict:
    """(d): the autotuner on its cached key, and its pick launched bare and compiled."""
    tuned[grid](*kernel_args, **kernel_kw)
    sync()
    config = tuned.best_config
    kw = {**kernel_kw, **config.all_kwargs()}
    # the grid the pick gives (the launchers' grid functions read only the tile sizes)
    meta = {**dict(zip(tuned.arg_names, kernel_args, strict=False)), **kw}  # args: a prefix
    g = grid(meta) if callable(grid) else grid
    return {
        "(d) autotuner dispatch, cached key": lambda: tuned[grid](*kernel_args, **kernel_kw),
        "(d) the autotuner's pick, bare kernel[grid]": lambda: tuned.fn[grid](*kernel_args, **kw),
        "(d) the pick, bare, with a tuple grid": lambda: tuned.fn[g](*kernel_args, **kw),
        "(d) the pick, compiled kernel launched directly": compiled_launch(tuned.fn, g, kernel_args, kw),
        "_config": str(config),
    }


def section_matmul_persistent() -> dict:
    import matmul_persistent as ex

    s = SHAPES["matmul"]
    a = torch.randn(s, s, device=DEV, dtype=torch.float16)
    b = torch.randn(s, s, device=DEV, dtype=torch.float16)
    c = torch.empty(s, s, device=DEV, dtype=torch.float16)
    out = {"shape": f"fp16 {s}^3", "variants": {}}
    n_programs = ex.num_persistent_programs(a.device)
    for variant in ("tiles", "persistent", "tma", "auto"):
        if elapsed() > BUDGET - 10:  # a variant's first call autotunes: compiles, times every config
            out["variants"][variant] = "skipped: budget"
            continue
        try:
            out["variants"][variant] = _matmul_variant(ex, variant, a, b, c, n_programs)
        except Exception:  # noqa: BLE001  (one variant failing must not lose the others)
            out["variants"][variant] = "failed: " + traceback.format_exc()
    out["profile"] = {"matmul_persistent(variant='auto')": profile_top(lambda: ex.matmul_persistent(a, b))}
    return out


def _matmul_variant(ex, variant, a, b, c, n_programs) -> dict:
    s = a.shape[0]
    gpu = gpu_time_ms(lambda: ex.matmul_persistent(a, b, variant=variant))
    rows = {f"(a) matmul_persistent(variant={variant!r})": lambda: ex.matmul_persistent(a, b, variant=variant)}
    rows["(b) _check_inputs"] = lambda: ex._check_inputs(a, b, variant)
    rows["(b) _pick_variant (three tma_compatible)"] = lambda: ex._pick_variant(variant, a, b, c)
    rows["(b) needs_int64"] = lambda: ex.needs_int64(a, b, c)
    rows["(b) num_persistent_programs"] = lambda: ex.num_persistent_programs(a.device)
    rows["(e) torch.empty (c)"] = lambda: torch.empty((s, s), device=a.device, dtype=a.dtype)
    rows["triton.set_allocator (every tma call)"] = lambda: triton.set_allocator(ex._cuda_scratch)
    picked = ex._pick_variant(variant, a, b, c)
    tuned = ex.tuned_kernel(picked, a.dtype)

    def grid(meta, picked=picked):
        tiles = triton.cdiv(s, meta["BLOCK_M"]) * triton.cdiv(s, meta["BLOCK_N"])
        return (tiles,) if picked == "tiles" else (min(n_programs, tiles),)

    if picked == "tma":
        triton.set_allocator(ex._cuda_scratch)
        args, kw = (a, b, c, s, s, s, a.stride(0), b.stride(0), c.stride(0)), {}
    else:
        args = (a, b, c, s, s, s, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        kw = {"INT64": False}
    pieces = _tuned_pieces(tuned, args, kw, grid)
    config = pieces.pop("_config")
    rows.update(pieces)
    rows["peer torch.matmul (cuBLAS)"] = lambda: torch.matmul(a, b)
    return {"picked": picked, "config": config, "gpu_ms": gpu, "rows": measure_rows(rows, gpu)}


def section_linear_gelu() -> dict:
    import linear_gelu as ex
    import torch.nn.functional as F

    s = SHAPES["matmul"]
    a = torch.randn(s, s, device=DEV, dtype=torch.float16)
    w = torch.randn(s, s, device=DEV, dtype=torch.float16) / 32
    bias = torch.randn(s, device=DEV, dtype=torch.float16)
    c = torch.empty(s, s, device=DEV, dtype=torch.float16)
    gpu = gpu_time_ms(lambda: ex.linear_gelu(a, w, bias))
    layout = ex.w_layout(a, w, c)
    tuned = ex.tuned_kernel("descriptor" if layout else "pointer", a.dtype)
    grid = ex._grid(s, s, a.device.index)
    triton.set_allocator(ex._cuda_scratch)
    if layout:
        args = (a, w, bias, c, s, s, s, a.stride(0), w.stride(0), w.stride(1), bias.stride(0), c.stride(0))
        kw = {"W_KMAJOR": layout == "k-major"}
    else:
        args = (a, w, bias, c, s, s, s, a.stride(0), a.stride(1), w.stride(0), w.stride(1), bias.stride(0),
                c.stride(0), c.stride(1))
        kw = {"INT64": False}
    rows = {
        "(a) linear_gelu": lambda: ex.linear_gelu(a, w, bias),
        "(b) _check_inputs": lambda: ex._check_inputs(a, w, bias),
        "(b) w_layout (three descriptor_ok)": lambda: ex.w_layout(a, w, c),
        "(b) needs_int64 (pointer path only)": lambda: ex.needs_int64(a, w, bias, c),
        "(b) _grid (the grid closure)": lambda: ex._grid(s, s, a.device.index),
        "triton.set_allocator (every descriptor call)": lambda: triton.set_allocator(ex._cuda_scratch),
        "(e) torch.empty + [:, :N] (c)": lambda: torch.empty((s, s), device=a.device, dtype=a.dtype)[:, :s],
    }
    pieces = _tuned_pieces(tuned, args, kw, grid)
    config = pieces.pop("_config")
    rows.update(pieces)
    rows["peer F.linear + F.gelu(tanh), eager"] = lambda: F.gelu(F.linear(a, w.t(), bias), approximate="tanh")
    rows["peer torch.addmm alone"] = lambda: torch.addmm(bias, a, w)
    return {"shape": f"fp16 {s}^3", "layout": layout, "config": config, "gpu_ms": gpu,
            "rows": measure_rows(rows, gpu),
            "profile": {"linear_gelu": profile_top(lambda: ex.linear_gelu(a, w, bias))}}


def section_softmax() -> dict:
    import softmax as ex

    m, n = SHAPES["softmax"]
    x = torch.randn(m, n, device=DEV, dtype=torch.float16)
    y = torch.empty_like(x)
    gpu = gpu_time_ms(lambda: ex.softmax(x))
    variant = ex.pick_variant(n, ex._sm_count(x.device))
    bn = triton.next_power_of_2(n)
    if variant == "row":
        kernel, grid = ex.softmax_row_kernel, (m,)
        args, kw = (x, y, n, x.stride(0), y.stride(0)), {"BLOCK_N": bn, "num_warps": ex._num_warps(bn)}
    else:  # multirow (N <= 256)
        rows_per = max(1, ex.MULTIROW_TILE // bn)
        kernel, grid = ex.softmax_multirow_kernel, (triton.cdiv(m, rows_per),)
        args = (x, y, m, n, x.stride(0), y.stride(0))
        kw = {"ROWS": rows_per, "BLOCK_N": bn, "num_warps": ex._num_warps(rows_per * bn), "num_stages": 3}
    rows = {
        "(a) softmax": lambda: ex.softmax(x),
        "(b) _check_input": lambda: ex._check_input(x),
        "(b) pick_variant": lambda: ex.pick_variant(n, ex._sm_count(x.device)),
        "(b) _check_config": lambda: ex._check_config(variant, True, {}),
        f"(c) bare {kernel.__name__}[grid]": lambda: kernel[grid](*args, **kw),
        "(c) compiled kernel launched directly": compiled_launch(kernel, grid, args, kw),
        "(e) torch.empty_like": lambda: torch.empty_like(x),
        "peer torch.softmax": lambda: torch.softmax(x, dim=-1),
    }
    return {"shape": f"fp16 {m} x {n}", "variant": variant, "gpu_ms": gpu,
            "rows": measure_rows(rows, gpu),
            "profile": {"softmax": profile_top(lambda: ex.softmax(x))}}


def section_vector_add() -> dict:
    import vector_add as ex

    n, bs = SHAPES["vector_add"], 1024
    x = torch.randn(n, device=DEV)
    y = torch.randn(n, device=DEV)
    z = torch.empty_like(x)
    gpu = gpu_time_ms(lambda: ex.add(x, y))
    grid_fn = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    rows = {
        "(a) add": lambda: ex.add(x, y),
        "(b) _check_inputs": lambda: ex._check_inputs(x, y, bs),
        "(c) bare add_kernel[grid], grid a lambda": lambda: ex.add_kernel[grid_fn](x, y, z, n, BLOCK_SIZE=bs),
        "(c) bare add_kernel[grid], grid a tuple": lambda: ex.add_kernel[(n // bs,)](x, y, z, n, BLOCK_SIZE=bs),
        "(c) compiled kernel launched directly": compiled_launch(ex.add_kernel, (n // bs,), (x, y, z, n), {"BLOCK_SIZE": bs}),
        "(e) torch.empty_like": lambda: torch.empty_like(x),
        "peer x + y": lambda: x + y,
    }
    return {"shape": f"fp32 {n}", "gpu_ms": gpu, "rows": measure_rows(rows, gpu),
            "profile": {"add": profile_top(lambda: ex.add(x, y))}}


def section_attention_hopper() -> dict:
    if not CUDA or torch.cuda.get_device_capability() != (9, 0):
        return {"note": "not an sm_90 GPU: attention_hopper cannot run"}
    import attention_hopper as ex
    import torch.nn.functional as F

    B, H, S, D = 4, 16, 1024, 128
    q, k, v = (torch.randn(B, H, S, D, device=DEV, dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device=DEV)
    cfg = ex.CONFIGS[D]
    scale = 1.0 / math.sqrt(D)
    gpu = gpu_time_ms(lambda: ex.attention_hopper(q, k, v))
    descs = ex._descriptors(q, k, v, o, cfg["BLOCK_N"])
    grid = (S // ex.BLOCK_M, B * H)
    args = (*descs, lse, S, scale * ex.LOG2E)
    kw = {"HEAD_D": D, "CAUSAL": False, **cfg, "num_warps": 4, "maxnreg": ex.MAXNREG}
    rows = {
        "(a) attention_hopper": lambda: ex.attention_hopper(q, k, v),
        "(b) _check_inputs (with _check_device)": lambda: ex._check_inputs(q, k, v, False, None),
        "(b) _check_device": lambda: ex._check_device(q.device),
        "(b) torch.cuda.get_device_capability": lambda: torch.cuda.get_device_capability(q.device),
        "(b) _interpreter_on": ex._interpreter_on,
        "(b) _tma_operand x 3": lambda: (ex._tma_operand(q), ex._tma_operand(k), ex._tma_operand(v)),
        "(b) _descriptors (4 TensorDescriptor + layouts)": lambda: ex._descriptors(q, k, v, o, cfg["BLOCK_N"]),
        "(c) bare attention_hopper_kernel[grid], descriptors prebuilt": lambda: ex.attention_hopper_kernel[grid](*args, **kw),
        "(e) torch.empty x 2 (o, lse)": lambda: (torch.empty((B, H, S, D), device=q.device, dtype=q.dtype),
                                               torch.empty((B, H, S), device=q.device, dtype=torch.float32)),
        "peer F.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(q, k, v),
    }
    rows["(c) compiled kernel launched directly"] = compiled_launch(ex.attention_hopper_kernel, grid, args, kw)
    return {"shape": f"fp16 {B} x {H} x {S} x {D}, non-causal", "gpu_ms": gpu,
            "rows": measure_rows(rows, gpu),
            "profile": {"attention_hopper": profile_top(lambda: ex.attention_hopper(q, k, v))}}


def section_triton_host() -> dict:
    """Host costs every launcher shares: Triton's host helpers, device queries, an empty launch."""
    @triton.jit
    def empty_kernel(x_ptr):
        pass

    x = torch.empty(16, device=DEV)
    rows = {
        "triton.cdiv (a constexpr_function in Triton 3.6)": lambda: triton.cdiv(4096, 2),
        "plain (a + b - 1) // b": lambda: (4096 + 2 - 1) // 2,
        "triton.next_power_of_2": lambda: triton.next_power_of_2(1000),
        "torch.cuda.get_device_properties(i).multi_processor_count": lambda: torch.cuda.get_device_properties(0).multi_processor_count,
        "torch.cuda.current_device": torch.cuda.current_device,
        "os.environ.get('TRITON_INTERPRET')": lambda: os.environ.get("TRITON_INTERPRET"),
        "x.device": lambda: x.device,
        "torch.empty(16)": lambda: torch.empty(16, device=DEV),
        "empty_kernel[(1,)](x)": lambda: empty_kernel[(1,)](x),
        "empty_kernel, compiled, launched directly": compiled_launch(empty_kernel, (1,), (x,), {}),
    }
    return {"rows": measure_rows(rows, 0.001)}


# --- this branch's fixes: each changed helper beside a copy of the code it replaced -------------

def _descriptors_before(ex, q, k, v, o, block_n):
    """attention_hopper._descriptors before the fix: both shared layouts built on every call."""
    rows, d = q.numel() // q.shape[-1], q.shape[-1]
    gdt = ex.gl.float16 if q.dtype == torch.float16 else ex.gl.bfloat16
    qo_layout = ex.gl.NVMMASharedLayout.get_default_for([ex.WG_M, d], gdt)
    kv_layout = ex.gl.NVMMASharedLayout.get_default_for([block_n, d], gdt)
    td = ex.TensorDescriptor
    return (td(q, [rows, d], [d, 1], [ex.WG_M, d], qo_layout), td(k, [rows, d], [d, 1], [block_n, d], kv_layout),
            td(v, [rows, d], [d, 1], [block_n, d], kv_layout), td(o, [rows, d], [d, 1], [ex.WG_M, d], qo_layout))


def _pick_variant_before(ex, variant, a, b, c) -> str:
    """matmul_persistent._pick_variant before the fix: the three TMA checks for every variant."""
    fits_tma = all(ex.tma_compatible(t) for t in (a, b, c))
    if variant == "tma" and not fits_tma:
        raise ValueError("variant='tma' needs ...")
    if variant == "auto":
        return "tma" if fits_tma else "persistent"
    return variant


def section_fixes() -> dict:
    """Pure Python: runs on the CPU (CPU tensors) as well as on the GPU (CUDA tensors)."""
    dev = "cuda" if CUDA else "cpu"
    out = {"device": dev, "rows": {}}
    r = out["rows"]
    import vector_add as va

    v = torch.randn(2**20, device=dev)
    n, bs = v.numel(), 1024
    r["vector_add grid-size check, before: triton.cdiv(n, bs) > MAX_PROGRAMS"] = loop_us(
        lambda: triton.cdiv(n, bs) > va.MAX_PROGRAMS, 20000)
    r["vector_add grid-size check, after: n > MAX_PROGRAMS * bs"] = loop_us(
        lambda: n > va.MAX_PROGRAMS * bs, 20000)
    r["vector_add _check_inputs (after)"] = loop_us(lambda: va._check_inputs(v, v, bs), 20000)
    import matmul_persistent as mp

    a = torch.randn(64, 64, device=dev, dtype=torch.float16)
    for variant in ("persistent", "auto"):
        r[f"matmul_persistent _pick_variant({variant!r}), before: TMA checks always"] = loop_us(
            lambda: _pick_variant_before(mp, variant, a, a, a), 20000)
        r[f"matmul_persistent _pick_variant({variant!r}), after: only for tma and auto"] = loop_us(
            lambda: mp._pick_variant(variant, a, a, a), 20000)
    try:
        import attention_hopper as ah

        q = torch.randn(1, 2, 256, 128, device=dev, dtype=torch.float16)
        o = torch.empty_like(q)
        bn = ah.CONFIGS[128]["BLOCK_N"]
        r["attention_hopper _descriptors, before: layouts built per call"] = loop_us(
            lambda: _descriptors_before(ah, q, q, q, o, bn), 5000)
        r["attention_hopper _descriptors, after: layouts cached"] = loop_us(
            lambda: ah._descriptors(q, q, q, o, bn), 5000)
        same = [a.layout == b.layout for a, b in zip(_descriptors_before(ah, q, q, q, o, bn),
                                                        ah._descriptors(q, q, q, o, bn), strict=True)]
        out["attention_hopper_layouts_equal"] = all(same)
    except Exception as e:  # noqa: BLE001
        out["attention_hopper_error"] = f"{type(e).__name__}: {e}"
    return out


# --- main ------------------------------------------------------------------------------------

BUDGET = 100.0  # --budget: no new section or matmul variant starts after it
GRACE = 5.0  # past BUDGET + GRACE no further piece is measured


def summary(results: dict) -> None:
    print(f"\n== host time per call, us (time_host_call median of {REPEATS} medians; loop = back-to-back mean)")

    def table(rows: dict, indent="  "):
        for label, row in rows.items():
            if isinstance(row, str):
                print(f"{indent}{'-':>8}  {label}: {row}")
            elif isinstance(row, dict):
                loop = f"  loop {row['loop_us']:8.2f}" if "loop_us" in row else ""
                print(f"{indent}{row['host_call_us']:8.2f}{loop}  {label}")
            else:
                print(f"{indent}{row:8.3f}  {label}")

    for name, sec in results["sections"].items():
        print(f"-- {name} {sec.get('shape', '')} ({sec.get('section_s', '?')} s)")
        if "variants" in sec:
            for variant, vs in sec["variants"].items():
                if isinstance(vs, dict):
                    print(f"  variant {variant} -> {vs['picked']}, config {vs['config']}")
                    table(vs["rows"], "    ")
        elif "rows" in sec:
            table(sec["rows"])
        for key in ("note", "attention_hopper_layouts_equal", "attention_hopper_error"):
            if sec.get(key) not in (None, ""):
                print(f"  {key}: {sec[key]}")
        for pname, prof in sec.get("profile", {}).items():
            print(f"  cProfile of {PROFILE_CALLS} calls of {pname}: top by cumulative, us per call")
            for p in prof:
                print(f"    {p['cumtime_us_per_call']:9.2f} cum {p['tottime_us_per_call']:8.2f} own "
                      f"{p['ncalls_per_call']:6.2f}x  {p['function']}")
    if results["skipped"]:
        print("skipped:", results["skipped"])
    if results["errors"]:
        print("errors in:", list(results["errors"]))


def main() -> None:
    global BUDGET, REPEATS, LOOP_CALLS, PROFILE_CALLS, WARM_CALLS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="folder for host_time.json")
    ap.add_argument("--budget", type=float, default=100.0, help="seconds; no new section starts after it")
    ap.add_argument("--cpu", action="store_true", help="no GPU: the pure-Python micro-benchmark only")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="no GPU: every section at tiny shapes in the interpreter, few calls (no numbers worth keeping)")
    opts = ap.parse_args()
    BUDGET = opts.budget
    if opts.cpu_smoke:
        REPEATS, LOOP_CALLS, PROFILE_CALLS, WARM_CALLS = 1, 2, 0, 1
        bench.HOST_CALL_MAX = 2
        SHAPES.update({"layer_norm": (4, 1024), "matmul": 64, "softmax": (2, 1024), "vector_add": 1024})
    results = {
        "probe": "benchmarks/evidence/overview/host_time.py",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name() if CUDA else None,
        "versions": {"torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
                     "cpu": platform.processor() or platform.machine()},
        "method": (f"host_call_us: scripts/bench.py time_host_call (perf_counter around each call alone, calls "
                   f"issued back to back after a synchronize, {bench.HOST_CALL_MIN}-{bench.HOST_CALL_MAX} calls "
                   f"sized by the launcher's do_bench time), run {REPEATS} times: median of the medians, min and "
                   f"max; loop_us: mean over {LOOP_CALLS} back-to-back calls and one synchronize, best of 3; every "
                   f"callable warmed by 20 calls first; profile: cProfile of {PROFILE_CALLS} calls, per-call times "
                   "(cProfile's own overhead included)"),
        "budget_s": BUDGET, "sections": {}, "skipped": [], "errors": {},
    }
    if not CUDA and not (opts.cpu or opts.cpu_smoke):
        sys.exit("needs CUDA (or --cpu for the pure-Python micro-benchmark)")
    sections = [("fixes", section_fixes)]
    if CUDA or opts.cpu_smoke:
        sections = [("triton_host", section_triton_host), ("vector_add", section_vector_add),
                    ("softmax", section_softmax), ("layer_norm", section_layer_norm),
                    ("attention_hopper", section_attention_hopper), ("linear_gelu", section_linear_gelu),
                    ("matmul_persistent", section_matmul_persistent), *sections]
    for name, fn in sections:
        print(f"-- {name} (at {elapsed():.0f} s)", flush=True)
        run_section(results, name, BUDGET if name != "fixes" else math.inf, fn)
    results["elapsed_s"] = round(elapsed(), 1)
    summary(results)
    if opts.out:
        opts.out.mkdir(parents=True, exist_ok=True)
        path = opts.out / "host_time.json"
        path.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {path} ({results['elapsed_s']} s)")


if __name__ == "__main__":
    main()
