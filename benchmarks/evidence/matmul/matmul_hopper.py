# ruff: noqa: B023, E402  (lambdas are used inside the iteration that made them; imports follow the path set-up)
"""Probe: launch settings for the matmul and linear + bias + GELU kernels on the H200, against cuBLAS and
a static torch.compile in the same run.

Every candidate is one kernel of the examples (or the host-descriptor kernel written here) launched
directly with one fixed config, bypassing the autotuners:
* mp.tiles / mp.tma: examples/matmul_persistent.py's `matmul_tiles_kernel` (one program per tile, pointer
  loads) and `matmul_tma_kernel` (in-kernel tensor descriptors, min(SMs, tiles) programs; options
  WARP_SPECIALIZE (tile loop), FLATTEN, EPILOGUE_SUBTILE, WARP_SPECIALIZE_K (K loop));
* mm.pointer / mm.tma: examples/matmul.py's `matmul_kernel` and `matmul_tma_kernel` (one program per tile);
* host: `host_tma_kernel` below, descriptors built on the host (triton.tools.tensor_descriptor), so no
  program writes and fences a descriptor; PERSISTENT picks the grid (min(SMs, tiles) or one per tile);
* splitk: examples/split_k.py's `matmul_split_k` with 2 K slices, then a cast to the input dtype (1024 only);
* lg: examples/linear_gelu.py's `linear_gelu_kernel` (W row-major), options persistent / ws / subtile / fast
  (FAST_GELU: tanh.approx.f32 instead of tl.sigmoid).
Peers: cuBLAS (torch.matmul), and for linear + GELU eager PyTorch and torch.compile(dynamic=False) of the same
function, compiled afresh per shape and dtype after torch.compiler.reset().

Phase 1 runs every fp16 candidate on its shapes; phase 2 runs, in bf16, the 3 fastest fp16 candidates of each
matmul shape and the 2 fastest of each linear + GELU shape, plus every shipped-default candidate. Kernels are
compiled first in a pool of spawned processes (Triton's disk cache; inductor's cache for the compile peers).
Each point: the output is prefilled with NaN, the call is checked against an fp32 product rounded to the dtype
(torch.testing.assert_close, rtol = atol = 1e-2 fp16, 2e-2 bf16) and only then timed: do_bench (median, warmup
25 ms, rep 100 ms) and do_bench_cudagraph (median, rep 20 ms, after torch.cuda.synchronize()). A failed check
or an exception is recorded (last traceback lines) and the candidate is not timed. --budget stops starting new
points once spent and prints what it skipped.
Usage (repository root): python3 benchmarks/evidence/matmul/matmul_hopper.py --out DIR [--budget 150]
                         python3 benchmarks/evidence/matmul/matmul_hopper.py --out DIR --cpu-smoke
(--cpu-smoke: the interpreter, one tiny point per candidate, no timing, no pool).
"""

import argparse
import datetime
import json
import multiprocessing as mp
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, wait
from pathlib import Path

SMOKE = "--cpu-smoke" in sys.argv
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import linear_gelu as lg
import matmul as mm
import matmul_persistent as mpe
import split_k as sk
import torch
import triton
import triton.language as tl
from matmul_persistent import _tile_coords
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = torch.device("cpu" if SMOKE else "cuda")
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {"fp16": 1e-2, "bf16": 2e-2}
S1024 = (1024, 1024, 1024)
LARGE = [(2048,) * 3, (4096,) * 3, (8192,) * 3]
RAGGED = (4000, 3000, 2000)
GELU_SHAPES = [(4096, 4096, 4096), (8192, 8192, 2048)]  # benchmarks/cases/linear_gelu.py
SMOKE_SHAPE = {"small": (64, 96, 80), "large": (64, 96, 80), "ragged": (40, 24, 112), "gelu": (64, 96, 80)}
SHAPES = {"small": [S1024], "large": LARGE, "ragged": [RAGGED], "gelu": GELU_SHAPES}


@triton.jit
def host_tma_kernel(a_desc, b_desc, c_desc, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr,
                    EPILOGUE_SUBTILE: tl.constexpr, WARP_SPECIALIZE_K: tl.constexpr):
    """matmul_persistent.py's TMA kernel with descriptors made on the host (kernel parameters)."""
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0),
                            flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE_K):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        if EPILOGUE_SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([off_m, off_n], left.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


# A candidate: (kernel, (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages), {options}, families).
# Options: mp.tma / host: ws (tile loop), flat, sub, wsk (K loop); host: pers; lg: persistent, ws, subtile,
# fast; splitk: split. "default": True marks a config the examples ship today (run in bf16 too).
def C(kernel, cfg, opts=None, fams=("large",), default=False):
    return {"kernel": kernel, "cfg": cfg, "opts": dict(opts or {}), "fams": tuple(fams), "default": default}


T = {"flat": True}
CANDIDATES = [
    # 1024^3: 64 tiles of 128 x 128 for 132 SMs; smaller tiles, deeper K steps, host descriptors, split-K
    C("mp.tiles", (64, 128, 64, 8, 4, 4), fams=("small", "large"), default=True),
    C("mp.tiles", (64, 128, 64, 8, 4, 5), fams=("small",)),
    C("mp.tiles", (64, 128, 128, 8, 4, 3), fams=("small",)),
    C("mp.tiles", (128, 64, 64, 8, 4, 4), fams=("small",)),
    C("mp.tiles", (64, 64, 64, 8, 4, 4), fams=("small",)),
    C("mp.tiles", (128, 128, 64, 8, 8, 4), fams=("small", "large"), default=True),
    C("mm.pointer", (64, 128, 64, 8, 4, 4), fams=("small",), default=True),
    C("mm.tma", (64, 128, 64, 8, 4, 4), fams=("small",)),
    C("mp.tma", (64, 128, 64, 8, 4, 4), T, fams=("small",), default=True),
    C("host", (64, 128, 64, 8, 4, 4), {"pers": False}, fams=("small",)),
    C("host", (64, 128, 128, 8, 4, 3), {"pers": False}, fams=("small",)),
    C("host", (128, 64, 64, 8, 4, 4), {"pers": False}, fams=("small",)),
    C("splitk", (64, 128, 64, 1, 4, 4), {"split": 2}, fams=("small",)),
    # 2048-8192: 128 x 256 tiles, persistent TMA, halved epilogue, warp specialization
    C("mp.tiles", (128, 256, 64, 8, 8, 3), fams=("large",), default=True),
    C("mm.tma", (128, 256, 64, 8, 8, 3), fams=("large",), default=True),
    C("mm.tma", (128, 256, 64, 8, 8, 3), {"wsk": True}, fams=("large",)),
    C("mp.tma", (128, 256, 64, 8, 8, 3), T, fams=("large", "ragged"), default=True),
    C("mp.tma", (128, 256, 64, 8, 8, 3), {"ws": True}, fams=("large", "ragged"), default=True),
    C("mp.tma", (128, 256, 64, 8, 8, 3), {"wsk": True}, fams=("large", "ragged")),
    C("mp.tma", (128, 256, 64, 8, 8, 3), {"flat": True, "sub": True}, fams=("large",), default=True),
    C("mp.tma", (128, 256, 64, 8, 8, 4), {"flat": True, "sub": True}, fams=("large", "ragged")),
    C("mp.tma", (256, 128, 64, 8, 8, 4), {"flat": True, "sub": True}, fams=("large", "ragged"), default=True),
    C("mp.tma", (128, 128, 64, 8, 8, 4), T, fams=("large", "ragged")),
    C("mp.tma", (128, 256, 64, 16, 8, 3), {"ws": True}, fams=("large",)),
    C("host", (128, 256, 64, 8, 8, 3), {"pers": True, "flat": True}, fams=("large", "ragged")),
    C("host", (128, 256, 64, 8, 8, 4), {"pers": True, "flat": True, "sub": True}, fams=("large", "ragged")),
    C("host", (256, 128, 64, 8, 8, 4), {"pers": True, "flat": True, "sub": True}, fams=("large", "ragged")),
    C("host", (128, 256, 64, 8, 8, 3), {"pers": True, "ws": True}, fams=("large", "ragged")),
    C("host", (128, 256, 64, 8, 8, 3), {"pers": False}, fams=("large",)),
    C("host", (128, 256, 64, 8, 8, 3), {"pers": False, "wsk": True}, fams=("large",)),
    C("mp.tiles", (128, 128, 32, 8, 4, 4), fams=("ragged",), default=True),
    # linear + bias + GELU: the shipped list, then the hardware tanh on each grid kind
    C("lg", (128, 256, 64, 8, 8, 3), {"persistent": True}, fams=("gelu",), default=True),
    C("lg", (128, 256, 64, 8, 8, 3), {"persistent": True, "ws": True}, fams=("gelu",), default=True),
    C("lg", (128, 256, 64, 8, 8, 4), {"persistent": True, "subtile": True}, fams=("gelu",), default=True),
    C("lg", (128, 256, 64, 8, 8, 3), {"persistent": True, "fast": True}, fams=("gelu",)),
    C("lg", (128, 256, 64, 8, 8, 3), {"persistent": True, "ws": True, "fast": True}, fams=("gelu",)),
    C("lg", (128, 256, 64, 8, 8, 4), {"persistent": True, "subtile": True, "fast": True}, fams=("gelu",)),
    C("lg", (256, 128, 64, 8, 8, 4), {"persistent": True, "subtile": True, "fast": True}, fams=("gelu",)),
    C("lg", (128, 256, 64, 8, 8, 3), {"persistent": False, "fast": True}, fams=("gelu",)),
    C("lg", (128, 256, 64, 8, 8, 3), {"persistent": False}, fams=("gelu",), default=True),
]


def name(c) -> str:
    bm, bn, bk, g, w, s = c["cfg"]
    flags = " ".join(k if v is True else f"{k}={v}" for k, v in c["opts"].items() if v is not False)
    return f"{c['kernel']} {bm}x{bn}x{bk} g{g} w{w} s{s}" + (f" {flags}" if flags else "")


assert len({name(c) for c in CANDIDATES}) == len(CANDIDATES), "candidate names must be unique"
if SMOKE:  # the interpreter: small tiles, one stage (it ignores warps and stages anyway)
    for c in CANDIDATES:
        bm, bn, bk, g, w, s = c["cfg"]
        c["cfg"] = (min(bm, 32), min(bn, 32), min(bk, 32), g, w, 1)
        c["opts"].pop("fast", None)  # inline PTX does not run in the interpreter


def literal(c) -> str:
    """The candidate as a row of the example's config table (see GPU_CONFIGS in each example)."""
    bm, bn, bk, g, w, s = c["cfg"]
    o = c["opts"]
    if c["kernel"] in ("mp.tiles", "mp.tma"):
        keys = {"ws": "WARP_SPECIALIZE", "flat": "FLATTEN", "sub": "EPILOGUE_SUBTILE", "wsk": "WARP_SPECIALIZE_K"}
        opts = {keys[k]: v for k, v in o.items()}
        if c["kernel"] == "mp.tma" and not o.get("flat"):
            opts["FLATTEN"] = False
        where = f"matmul_persistent.GPU_CONFIGS['{c['kernel'][3:]}']"
        return f"{where}: ({bm}, {bn}, {bk}, {g}, {w}, {s}, {opts!r}),"
    if c["kernel"] in ("mm.pointer", "mm.tma"):
        table = "POINTER_CONFIGS" if c["kernel"] == "mm.pointer" else "TMA_CONFIGS"
        extra = "  # with WARP_SPECIALIZE=True (not a table column)" if o.get("wsk") else ""
        return f"matmul.{table}: ({bm}, {bn}, {bk}, {w}, {s}),{extra}"
    if c["kernel"] == "lg":
        return f"linear_gelu.GPU_CONFIGS: ({bm}, {bn}, {bk}, {w}, {s}, {o!r}),"
    if c["kernel"] == "splitk":
        return f"split_k.matmul_split_k(a, b, split_k={o['split']}, block_m={bm}, block_n={bn}, block_k={bk}, " \
               f"num_warps={w}, num_stages={s})"
    return f"probe-only host-descriptor kernel: ({bm}, {bn}, {bk}, {g}, {w}, {s}, {o!r})"


def num_sms() -> int:
    return 3 if SMOKE else torch.cuda.get_device_properties(0).multi_processor_count


def _alloc(size, align, stream):  # scratch for descriptors made in a kernel (tl.make_tensor_descriptor)
    return torch.empty(size, device="cuda", dtype=torch.int8)


def make_call(c, a, b, out, bias=None):
    """A no-argument callable for candidate c writing a @ b (or gelu(a @ b + bias)) into out."""
    (M, K), N = a.shape, b.shape[1]
    bm, bn, bk, g, w, s = c["cfg"]
    o = c["opts"]
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    launch = {"num_warps": w, "num_stages": s}
    kind = c["kernel"]
    if kind == "mp.tiles":
        return lambda: mpe.matmul_tiles_kernel[(tiles,)](
            a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, INT64=False, **launch)
    if kind == "mp.tma":
        return lambda: mpe.matmul_tma_kernel[(min(num_sms(), tiles),)](
            a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
            GROUP_M=g, WARP_SPECIALIZE=o.get("ws", False), FLATTEN=o.get("flat", False),
            EPILOGUE_SUBTILE=o.get("sub", False), WARP_SPECIALIZE_K=o.get("wsk", False), **launch)
    if kind == "mm.pointer":
        return lambda: mm.matmul_kernel[(tiles,)](
            a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, **launch)
    if kind == "mm.tma":
        return lambda: mm.matmul_tma_kernel[(tiles,)](
            a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
            GROUP_M=g, WARP_SPECIALIZE=o.get("wsk", False), **launch)
    if kind == "host":
        grid = (min(num_sms(), tiles),) if o.get("pers") else (tiles,)
        cbn = bn // 2 if o.get("sub") else bn

        def call():
            a_d = TensorDescriptor(a, list(a.shape), list(a.stride()), [bm, bk])
            b_d = TensorDescriptor(b, list(b.shape), list(b.stride()), [bk, bn])
            c_d = TensorDescriptor(out, list(out.shape), list(out.stride()), [bm, cbn])
            host_tma_kernel[grid](a_d, b_d, c_d, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g,
                                  WARP_SPECIALIZE=o.get("ws", False), FLATTEN=o.get("flat", False),
                                  EPILOGUE_SUBTILE=o.get("sub", False), WARP_SPECIALIZE_K=o.get("wsk", False),
                                  **launch)
        return call
    if kind == "splitk":
        return lambda: out.copy_(sk.matmul_split_k(a, b, split_k=o["split"], block_m=bm, block_n=bn, block_k=bk,
                                                   num_warps=w, num_stages=s))
    if kind == "lg":
        pers = o.get("persistent", False)
        return lambda: lg.linear_gelu_kernel[(min(num_sms(), tiles) if pers else tiles,)](
            a, b, bias, out, M, N, K, a.stride(0), b.stride(0), b.stride(1), bias.stride(0), out.stride(0),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=g, W_KMAJOR=False, WARP_SPECIALIZE=o.get("ws", False),
            FLATTEN=pers, EPILOGUE_SUBTILE=o.get("subtile", False), PERSISTENT=pers,
            FAST_GELU=o.get("fast", False), **launch)
    raise ValueError(kind)


def operands(shape, dtype, seed=0):
    M, N, K = shape
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    t = DTYPES[dtype]
    a = torch.randn(M, K, device=DEVICE, dtype=t, generator=g)
    b = torch.randn(K, N, device=DEVICE, dtype=t, generator=g) / K**0.5
    bias = torch.randn(N, device=DEVICE, dtype=t, generator=g)
    return a, b, bias


def _compile_job(job):
    """Pool worker: one launch with the timed run's dtypes and specialization (Triton's disk cache), or one
    torch.compile of the linear + GELU function (inductor's cache)."""
    try:
        triton.set_allocator(_alloc)
        c, dtype, shape = job
        a, b, bias = operands(shape, dtype)
        if c == "compile":
            torch.compile(lg.linear_gelu_torch, dynamic=False)(a, b, bias)
        else:
            out = torch.empty(shape[0], shape[1], device=DEVICE, dtype=a.dtype)
            make_call(c, a, b, out, bias)()
        torch.cuda.synchronize()
        return None
    except Exception as err:
        return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0][:200]}"


def precompile(jobs, seconds):
    """Compile + launch every job in spawned processes; {job index: first error line}."""
    pool = ProcessPoolExecutor(max_workers=max(1, min(14, (os.cpu_count() or 2) - 2)),
                               mp_context=mp.get_context("spawn"))
    futures = {pool.submit(_compile_job, job): i for i, job in enumerate(jobs)}
    done, pending = wait(futures, timeout=seconds)
    errors = {}
    for f in done:
        try:
            if f.result():
                errors[futures[f]] = f.result()
        except Exception as err:  # a dead worker breaks the pool: the rest compile on first use
            errors[futures[f]] = f"worker died: {type(err).__name__}"
    stuck = [f for f in pending if not f.cancel()]
    for f in stuck:
        errors[futures[f]] = f"still compiling after {seconds:.0f} s"
    if stuck:
        for proc in list(pool._processes.values()):  # our own workers only
            proc.kill()
    pool.shutdown(wait=not stuck, cancel_futures=True)
    return errors


class Run:
    def __init__(self, budget):
        self.t0 = time.time()
        self.budget = budget
        self.points = []
        self.skipped = []
        self.refs = {}
        self.ops = {}
        self.compiled = set()

    def left(self):
        return self.budget - (time.time() - self.t0)

    def get(self, shape, dtype, gelu=False):
        key = (shape, dtype)
        if key not in self.ops:
            if len(self.ops) > 2:  # keep at most three shapes' operands on the device
                old = next(iter(self.ops))
                self.ops.pop(old)
                self.refs = {k: v for k, v in self.refs.items() if k[:2] != old}
            self.ops[key] = operands(shape, dtype)
        a, b, bias = self.ops[key]
        rkey = (shape, dtype, gelu)
        if rkey not in self.refs:
            if gelu:
                self.refs[rkey] = lg.linear_gelu_reference(a, b, bias)
            else:
                self.refs[rkey] = (a.float() @ b.float()).to(a.dtype)
        return a, b, bias, self.refs[rkey]

    def point(self, label, dtype, shape, fn_factory, gelu=False, meta=None, graph=True):
        """Check then time one callable; returns the record (also kept in self.points)."""
        rec = {"candidate": label, "dtype": dtype, "shape": list(shape), "gelu": gelu, **(meta or {})}
        if self.left() <= 0:
            self.skipped.append(f"{label} {dtype} {'x'.join(map(str, shape))}")
            return None
        M, N, K = shape
        try:
            a, b, bias, ref = self.get(shape, dtype, gelu)
            out = torch.full((M, N), float("nan"), device=DEVICE, dtype=a.dtype)
            fn = fn_factory(a, b, out, bias)
            got = fn()
            got = out if got is None or not isinstance(got, torch.Tensor) or got.shape != out.shape else got
            if not SMOKE:
                torch.cuda.synchronize()
            tol = TOL[dtype]
            torch.testing.assert_close(got, ref, rtol=tol, atol=tol)
            rec["correct"] = True
        except Exception as err:
            rec["correct"] = False
            rec["error"] = "".join(traceback.format_exception(err)).strip().splitlines()[-6:]
            self.points.append(rec)
            print(f"  {label:58s} {dtype} {'x'.join(map(str, shape)):>15s}  FAILED: {rec['error'][-1][:120]}")
            return rec
        if not SMOKE:
            try:
                from triton.testing import do_bench, do_bench_cudagraph
                rec["do_bench_ms"] = do_bench(fn, warmup=25, rep=100, return_mode="median")
                if graph:
                    torch.cuda.synchronize()  # do_bench_cudagraph's side stream does not wait for ours
                    rec["cudagraph_ms"] = do_bench_cudagraph(fn, rep=20, return_mode="median")
            except Exception as err:
                rec["error"] = "".join(traceback.format_exception(err)).strip().splitlines()[-6:]
        rec["tflops_cudagraph"] = 2 * M * N * K / rec["cudagraph_ms"] / 1e9 if rec.get("cudagraph_ms") else None
        self.points.append(rec)
        db, cg = rec.get("do_bench_ms"), rec.get("cudagraph_ms")
        timing = f"do_bench {db * 1e3:9.2f} us  graph {cg * 1e3:9.2f} us" if db and cg else "(not timed)"
        print(f"  {label:58s} {dtype} {'x'.join(map(str, shape)):>15s}  ok  {timing}")
        return rec


def run_candidates(run, cands, dtype, gelu_peers):
    for fam in ("small", "large", "ragged", "gelu"):
        shapes = [SMOKE_SHAPE[fam]] if SMOKE else SHAPES[fam]
        for shape in shapes:
            gelu = fam == "gelu"
            if gelu:
                run.point("torch (eager)", dtype, shape, lambda a, b, out, bias: (
                    lambda: lg.linear_gelu_torch(a, b, bias)), gelu=True, meta={"peer": "torch"})
                if gelu_peers:
                    def compiled(a, b, out, bias):
                        torch.compiler.reset()
                        f = torch.compile(lg.linear_gelu_torch, dynamic=False)
                        return lambda: f(a, b, bias)
                    run.point("torch.compile (static)", dtype, shape, compiled, gelu=True,
                              meta={"peer": "torch.compile"})
            else:
                run.point("cuBLAS torch.matmul", dtype, shape, lambda a, b, out, bias: (
                    lambda: torch.matmul(a, b)), meta={"peer": "cublas"})
            for c in cands:
                if fam in c["fams"] and (c["kernel"] == "lg") == gelu:
                    run.compiled.add((name(c), dtype, fam == "ragged"))
                    run.point(name(c), dtype, shape, lambda a, b, out, bias: make_call(c, a, b, out, bias),
                              gelu=gelu, meta={"kernel": c["kernel"], "literal": literal(c),
                                               "default": c["default"]})


def best_by(points, dtype, shape, peer=False, gelu=False):
    rows = [p for p in points if p["dtype"] == dtype and p["shape"] == list(shape) and p.get("correct")
            and p.get("gelu", False) == gelu
            and p.get("cudagraph_ms") and ("peer" in p) == peer]
    return sorted(rows, key=lambda p: p["cudagraph_ms"])


def summary(run):
    print("\n## summary: kernel time (CUDA graph median), ratio = peer time / this time (above 1: faster than peer)")
    for dtype in DTYPES:
        for fam in ("small", "large", "ragged", "gelu"):
            for shape in SHAPES[fam]:
                peers = best_by(run.points, dtype, shape, peer=True, gelu=fam == "gelu")
                rows = best_by(run.points, dtype, shape, gelu=fam == "gelu")
                if not rows:
                    continue
                peer = next((p for p in peers if p["peer"] == ("torch.compile" if fam == "gelu" else "cublas")), None)
                label = "x".join(map(str, shape))
                print(f"\n### {dtype} {label}{' linear+GELU' if fam == 'gelu' else ''}  peer: " + (
                    f"{peer['candidate']} {peer['cudagraph_ms'] * 1e3:.2f} us (graph), "
                    f"{peer['do_bench_ms'] * 1e3:.2f} us (do_bench)" if peer else "not measured"))
                for p in rows[:8]:
                    r = peer["cudagraph_ms"] / p["cudagraph_ms"] if peer else float("nan")
                    rd = peer["do_bench_ms"] / p["do_bench_ms"] if peer else float("nan")
                    print(f"  {p['candidate']:58s} {p['cudagraph_ms'] * 1e3:9.2f} us  {r:6.3f}x graph  "
                          f"{rd:6.3f}x do_bench{'  (shipped)' if p.get('default') else ''}")
    print("\n## best config per (kernel, dtype, shape), as rows of the examples' tables")
    for dtype in DTYPES:
        for fam in ("small", "large", "ragged", "gelu"):
            for shape in SHAPES[fam]:
                rows = best_by(run.points, dtype, shape, gelu=fam == "gelu")
                seen = set()
                for p in rows:
                    if p["kernel"] in seen:
                        continue
                    seen.add(p["kernel"])
                    print(f"{dtype} {'x'.join(map(str, shape)):>15s} {p['kernel']:10s} "
                          f"{p['cudagraph_ms'] * 1e3:9.2f} us  {p['literal']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--budget", type=float, default=150.0, help="seconds, compiles included")
    ap.add_argument("--cpu-smoke", action="store_true", help="interpreter, one tiny point per candidate, no timing")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    args.out.mkdir(parents=True, exist_ok=True)
    run = Run(args.budget)
    if not SMOKE:
        triton.set_allocator(_alloc)
        props = torch.cuda.get_device_properties(0)
        print(f"# {props.name} SMs={props.multi_processor_count} torch {torch.__version__} "
              f"triton {triton.__version__}; budget {args.budget:.0f} s")
    # phase 1: every fp16 candidate; the pool compiles them (and the fp16 compile peers) first
    fp16_jobs = [(c, "fp16", SHAPES[f][0] if f != "large" else LARGE[0]) for c in CANDIDATES for f in c["fams"]
                 if not (f == "small" and "large" in c["fams"])]
    fp16_jobs += [("compile", "fp16", s) for s in GELU_SHAPES]
    if not SMOKE:
        t = time.time()
        errors = precompile(fp16_jobs, seconds=max(20.0, 0.35 * args.budget))
        print(f"# phase 1 precompile: {len(fp16_jobs)} jobs in {time.time() - t:.0f} s, {len(errors)} failed")
        for i, e in sorted(errors.items()):
            job = fp16_jobs[i]
            print(f"#   {job[0] if job[0] == 'compile' else name(job[0])} {job[1]} {job[2]}: {e}")
    print("\n## phase 1: fp16")
    run_candidates(run, CANDIDATES, "fp16", gelu_peers=True)
    # phase 2: bf16, the fastest fp16 candidates per shape plus the shipped defaults
    chosen = {id(c) for c in CANDIDATES if c["default"]}
    by_name = {name(c): c for c in CANDIDATES}
    for fam in SHAPES:
        for shape in SHAPES[fam]:
            rows = best_by(run.points, "fp16", shape, gelu=fam == "gelu")
            top = 2 if fam == "gelu" else 3
            for p in rows[:top]:
                chosen.add(id(by_name[p["candidate"]]))
    if SMOKE:
        chosen = {id(c) for c in CANDIDATES}
    bf16 = [c for c in CANDIDATES if id(c) in chosen]
    if not SMOKE and run.left() > 10:
        jobs = [(c, "bf16", SHAPES[f][0] if f != "large" else LARGE[0]) for c in bf16 for f in c["fams"]
                if not (f == "small" and "large" in c["fams"])]
        jobs += [("compile", "bf16", s) for s in GELU_SHAPES]
        t = time.time()
        errors = precompile(jobs, seconds=max(10.0, 0.4 * run.left()))
        print(f"# phase 2 precompile: {len(jobs)} jobs in {time.time() - t:.0f} s, {len(errors)} failed")
    print(f"\n## phase 2: bf16 ({len(bf16)} candidates)")
    if not SMOKE:  # bf16 is wrong in the interpreter: the smoke run checks the code path only
        run_candidates(run, bf16, "bf16", gelu_peers=True)
    else:
        run_candidates(run, bf16[:0], "bf16", gelu_peers=False)
    if not SMOKE:
        summary(run)
    if run.skipped:
        print(f"\n# budget ({args.budget:.0f} s) spent: skipped {len(run.skipped)} points: " + "; ".join(run.skipped))
    wrong = [p for p in run.points if not p.get("correct")]
    print(f"# {len(run.points)} points, {len(wrong)} failed the check or raised; "
          f"{len(run.compiled)} distinct (candidate, dtype, specialization) kernels; "
          f"{time.time() - run.t0:.0f} s")
    info = {
        "probe": "matmul_hopper",
        "gpu": None if SMOKE else torch.cuda.get_device_name(0),
        "torch": torch.__version__, "triton": triton.__version__,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "timing": "do_bench median (warmup 25 ms, rep 100 ms, L2 flushed); do_bench_cudagraph median (rep 20 ms)",
        "check": "torch.testing.assert_close vs fp32 product rounded to the dtype; rtol=atol=1e-2 fp16, 2e-2 bf16",
        "cpu_smoke": SMOKE, "budget_s": args.budget, "elapsed_s": time.time() - run.t0,
        "skipped": run.skipped, "points": run.points,
    }
    (args.out / "matmul_hopper.json").write_text(json.dumps(info, indent=1))
    print(f"# wrote {args.out / 'matmul_hopper.json'}")


if __name__ == "__main__":
    main()
