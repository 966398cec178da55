"""Probe: the layer-norm forward at N = 16384 in Gluon, each row staged in shared memory.

At N = 16384 the example's forward (``layer_norm_fwd_kernel``: one program per row, 8 warps,
the whole row in registers) stays under the 90%-of-copy target; Nsight Compute put it at low
occupancy with its most frequent stall a wait on memory, and a forward that walks the row in
chunks from global memory three times was slower (the Benchmarks page). This probe keeps the
row in **shared memory** instead, as ``gluon_stage1.py`` does for the backward's stage 1:

* one program per SM walks rows ``pid, pid + G, ...``; a row of ``x`` (16384 values) is one TMA
  copy of a ``[64, 256]`` box of the ``(M * 64, 256)`` view into one of two or three
  shared-memory slots (32 KB each in fp16/bf16); ``w`` and ``b`` are copied once per program;
* the copy of the next row is issued when a row starts (after a CTA barrier, and once the
  store that read that slot has finished), so it runs under the current row's work;
* three passes over the row in shared memory, in four ``[16, 256]`` pieces each: the sum (for
  the mean), the sum of squared deviations (for the variance, as the example computes it),
  then ``y = (x - mean) * rstd * w + b``, written over ``x`` in its slot and sent to ``y`` by a
  TMA store.

Candidates at N = 16384, M = 4096 rows (the benchmark's point), fp16 and bf16: ``example``
(``examples/layer_norm.layer_norm_fwd``), ``torch.compile`` (``F.layer_norm`` under a static
``torch.compile``, the peer that is faster there), ``gluon w<warps> slots<n>`` and ``copy``
(``dst.copy_(src)`` of the bytes the forward must move: the ceiling). Each Gluon setting's
``(y, mean, rstd)`` is first checked against the example's on 1, 7, 133 and 4096 rows.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/layer-norm/gluon_fwd.py
--out DIR [--budget S]``; anywhere ``python benchmarks/evidence/layer-norm/gluon_fwd.py
--compile`` (compiled for sm_90: registers, spills, shared memory).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402
from gluon_stage1 import N, _add, _descs  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
)

PASSES = 3
EPS = 1e-5
SETTINGS = [(8, 2), (16, 2), (8, 3), (16, 3)]  # (warps, shared-memory slots)
METHOD = ("Inputs: seeded torch.randn x (M = 4096 rows of 16384), weight and bias randn, eps "
          "1e-5. Checked against the example's (y, mean, rstd) on 1, 7, 133 and 4096 rows "
          "first, every setting: |got - want| <= atol + rtol |want|, y with rtol 1e-2 (fp16) "
          "or 2e-2 (bf16) and atol 1e-2, mean and rstd with rtol 1e-4 and atol 1e-5. Bytes: "
          "read x, write y (2 x M x N x 2), as the benchmark counts them; the copy moves the "
          "same bytes (read and write of M x N values). torch.compile: "
          "torch.compile(F.layer_norm, dynamic=False), compiled and warmed per dtype before "
          "timing. 'tflops' columns hold TB/s. --budget is not used.")


@gluon.jit
def _issue_x(x_desc, xs, bars, row, slot):
    LINES_: gl.constexpr = x_desc.block_type.shape[0]
    mbarrier.expect(bars.index(slot), x_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [row * LINES_, 0], bars.index(slot),
                                    xs.index(slot))


@gluon.jit
def _row_sum(x_s, p: gl.constexpr, acc, layout: gl.constexpr):
    """acc + the per-line sums of x over piece p (within a warp: no CTA barrier)."""
    PL: gl.constexpr = x_s.type.shape[0] // 4
    x = x_s.slice(p * PL, PL).load(layout).to(gl.float32)
    return acc + gl.reduce(x, 1, _add)


@gluon.jit
def _row_sq(x_s, p: gl.constexpr, mean, acc, layout: gl.constexpr):
    """acc + the per-line sums of (x - mean)^2 over piece p."""
    PL: gl.constexpr = x_s.type.shape[0] // 4
    xc = x_s.slice(p * PL, PL).load(layout).to(gl.float32) - mean
    return acc + gl.reduce(xc * xc, 1, _add)


@gluon.jit
def _normalize(x_s, w_s, b_s, p: gl.constexpr, mean, rstd, layout: gl.constexpr):
    """y over piece p of x in shared memory (each thread overwrites what it read)."""
    PL: gl.constexpr = x_s.type.shape[0] // 4
    x = x_s.slice(p * PL, PL).load(layout).to(gl.float32)
    w = w_s.slice(p * PL, PL).load(layout).to(gl.float32)
    b = b_s.slice(p * PL, PL).load(layout).to(gl.float32)
    x_s.slice(p * PL, PL).store(((x - mean) * rstd * w + b).to(x_s.dtype))


@gluon.jit
def ln_fwd_smem_kernel(x_desc, w_desc, b_desc, y_desc, mean_ptr, rstd_ptr, n_rows, eps,
                       WARPS: gl.constexpr, SLOTS: gl.constexpr):
    LINES_: gl.constexpr = x_desc.block_type.shape[0]
    W: gl.constexpr = x_desc.block_type.shape[1]
    NCOL: gl.constexpr = LINES_ * W
    PL: gl.constexpr = LINES_ // 4
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [WARPS, 1], [1, 0])
    lines: gl.constexpr = gl.SliceLayout(1, layout)
    dtype: gl.constexpr = x_desc.dtype
    xs = gl.allocate_shared_memory(dtype, [SLOTS, LINES_, W], x_desc.layout)
    w_s = gl.allocate_shared_memory(dtype, [LINES_, W], w_desc.layout)
    b_s = gl.allocate_shared_memory(dtype, [LINES_, W], b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [SLOTS + 1, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(SLOTS + 1):  # one per slot, and w's and b's (the last)
        mbarrier.init(bars.index(s), count=1)
    fence_async_shared()
    pid = gl.program_id(0)
    G = gl.num_programs(0)
    n_mine = (n_rows - pid + G - 1) // G
    mbarrier.expect(bars.index(SLOTS), w_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(w_desc, [0, 0], bars.index(SLOTS), w_s)
    tma.async_copy_global_to_shared(b_desc, [0, 0], bars.index(SLOTS), b_s)
    if n_mine > 0:
        _issue_x(x_desc, xs, bars, pid, 0)
    mbarrier.wait(bars.index(SLOTS), 0)
    for it in range(n_mine):
        row = pid + it * G
        slot = it % SLOTS
        # The next slot held row it + 1 - SLOTS: its y store has read it (at most SLOTS - 2
        # newer stores pending) and every warp is done with it; the next row may land there.
        tma.store_wait(SLOTS - 2)
        gl.thread_barrier()
        if it + 1 < n_mine:
            _issue_x(x_desc, xs, bars, row + G, (it + 1) % SLOTS)
        mbarrier.wait(bars.index(slot), (it // SLOTS) & 1)
        x_s = xs.index(slot)
        r = gl.zeros([PL], gl.float32, lines)
        r = _row_sum(x_s, 0, r, layout)
        r = _row_sum(x_s, 1, r, layout)
        r = _row_sum(x_s, 2, r, layout)
        r = _row_sum(x_s, 3, r, layout)
        mean = gl.reduce(r, 0, _add) / NCOL
        r = gl.zeros([PL], gl.float32, lines)
        r = _row_sq(x_s, 0, mean, r, layout)
        r = _row_sq(x_s, 1, mean, r, layout)
        r = _row_sq(x_s, 2, mean, r, layout)
        r = _row_sq(x_s, 3, mean, r, layout)
        rstd = gl.rsqrt(gl.reduce(r, 0, _add) / NCOL + eps)
        gl.store(mean_ptr + row, mean)
        gl.store(rstd_ptr + row, rstd)
        _normalize(x_s, w_s, b_s, 0, mean, rstd, layout)
        _normalize(x_s, w_s, b_s, 1, mean, rstd, layout)
        _normalize(x_s, w_s, b_s, 2, mean, rstd, layout)
        _normalize(x_s, w_s, b_s, 3, mean, rstd, layout)
        fence_async_shared()  # y written by the threads, read by the TMA store
        gl.thread_barrier()
        tma.async_copy_shared_to_global(y_desc, [row * LINES_, 0], x_s)
    tma.store_wait(0)


def gluon_fwd(x, weight, bias, eps=EPS, warps=8, slots=2, groups=None):
    """(y, mean, rstd) for a contiguous (M, 16384) x."""
    import layer_norm as ex

    assert x.is_contiguous() and x.shape[-1] == N
    m = x.shape[0]
    groups = min(m, groups or ex._sm_count(x.device))  # asked once per device, not per call
    y = torch.empty_like(x)
    mean = torch.empty(m, device=x.device, dtype=torch.float32)
    rstd = torch.empty(m, device=x.device, dtype=torch.float32)
    ln_fwd_smem_kernel[(groups,)](*_descs(x, weight.contiguous(), bias.contiguous(), y), mean,
                                  rstd, m, eps, WARPS=warps, SLOTS=slots, num_warps=warps)
    return y, mean, rstd


def compile_report() -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    from scripts.probe_common import ptxas_usage

    for dtype in (torch.float16, torch.bfloat16):
        t = torch.empty(2, N, dtype=dtype)
        xd, wd, bd, yd = _descs(t, t[0], t[0], t)
        for warps, slots in SETTINGS:
            sig = {"x_desc": mangle_type(xd), "w_desc": mangle_type(wd),
                   "b_desc": mangle_type(bd), "y_desc": mangle_type(yd),
                   "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "n_rows": "i32", "eps": "fp32",
                   "WARPS": "constexpr", "SLOTS": "constexpr"}
            # as a launch specializes them: 16-byte aligned pointers, rows divisible by 16
            attrs = {(i,): [["tt.divisibility", 16]] for i in (4, 5, 6)}
            src = GluonASTSource(ln_fwd_smem_kernel, sig, attrs=attrs,
                                 constexprs={"WARPS": warps, "SLOTS": slots})
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                               options={"num_warps": warps})
            print(dtype, f"w{warps} slots{slots}", ptxas_usage(k.asm["ptx"]),
                  f"shared {k.metadata.shared}", "tma",
                  k.asm["ptx"].count("cp.async.bulk.tensor"), flush=True)


def check(device) -> None:
    import layer_norm as ex

    failed = []
    for dtype in (torch.float16, torch.bfloat16):
        tol = 1e-2 if dtype == torch.float16 else 2e-2
        for m in (1, 7, 133, 4096):
            g = torch.Generator(device=device).manual_seed(m)
            x = torch.randn(m, N, device=device, dtype=dtype, generator=g)
            w, b = (torch.randn(N, device=device, dtype=dtype, generator=g) for _ in "ab")
            want = ex.layer_norm_fwd(x, w, b, EPS)
            for warps, slots in SETTINGS:
                print(f"{dtype} m={m} w{warps} slots{slots} ...", flush=True)  # a hang: here
                got = gluon_fwd(x, w, b, EPS, warps, slots)
                torch.cuda.synchronize()
                for name, a, e in zip(("y", "mean", "rstd"), got, want, strict=True):
                    rtol, atol = (tol, 1e-2) if name == "y" else (1e-4, 1e-5)
                    d = (a.float() - e.float()).abs()
                    bad = ~(d <= atol + rtol * e.float().abs())  # NaN counts as bad
                    if bad.any():
                        failed.append(f"{dtype} m={m} w{warps} slots{slots} {name}: "
                                      f"{int(bad.sum())} bad, largest difference "
                                      f"{d.max().item():.3g}")
            print(f"{dtype} m={m}: checked", flush=True)
    print("check passed" if not failed else "check FAILED:\n" + "\n".join(failed), flush=True)
    if failed:
        raise SystemExit(1)


def main() -> None:
    if "--compile" in sys.argv:
        compile_report()
        return
    from scripts.probe_common import (
        probe_args,
        probe_header,
        summarize,
        time_interleaved,
        timing_method,
        write_points,
    )
    args = probe_args()
    if args.smoke:
        raise SystemExit("gluon_fwd.py needs an sm_90 GPU: Gluon has no interpreter")
    device, timing = timing_method(False)
    import layer_norm as ex

    check(device)
    rows = []
    compiled = torch.compile(torch.nn.functional.layer_norm, dynamic=False)

    def measure(dt_name, dtype):
        m = 2**26 // N
        g = torch.Generator(device=device).manual_seed(N)
        x = torch.randn(m, N, device=device, dtype=dtype, generator=g)
        w, b = (torch.randn(N, device=device, dtype=dtype, generator=g) for _ in "ab")
        src = torch.empty(m * N, device=device, dtype=dtype)
        dst = torch.empty_like(src)
        fns = {"copy": lambda: dst.copy_(src),
               "example": lambda: ex.layer_norm_fwd(x, w, b, EPS),
               "torch.compile": lambda: compiled(x, (N,), w, b, EPS),
               **{f"gluon w{k} slots{n}": (lambda k=k, n=n: gluon_fwd(x, w, b, EPS, k, n))
                  for k, n in SETTINGS}}
        for fn in fns.values():
            fn()  # compiled (Inductor, Triton) before anything is timed
        torch.cuda.synchronize()
        ms = time_interleaved(fns, PASSES, timing)
        work = 2 * m * N * x.element_size()
        for name in fns:
            row = {"candidate": name, "dtype": dt_name, "N": N, "M": m}
            for graph, key in ((False, "do_bench"), (True, "cudagraph")):
                row.update(summarize(ms[(name, graph)], ms[("copy", graph)], work, key, "copy"))
            rows.append(row)
            print(row, flush=True)

    for dt_name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        measure(dt_name, dtype)
    header = probe_header("benchmarks/evidence/layer-norm/gluon_fwd.py", METHOD,
                          kernels="ln_fwd_smem_kernel (this file), examples/layer_norm.py's "
                                  "layer_norm_fwd", passes=PASSES)
    write_points(args.out / "gluon_fwd.json", header, rows)


if __name__ == "__main__":
    main()
