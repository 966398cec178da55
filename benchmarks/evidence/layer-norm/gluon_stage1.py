"""Probe: the layer-norm backward's stage 1 at N = 16384 in Gluon, each row staged in shared memory.

At N = 16384 the example's stage 1 (``layer_norm_bwd_long_kernel``: one program per SM, 16 warps,
the row in four pieces read twice from global memory) stays under the 80%-of-copy target. This
probe keeps the two passes over a row but reads the row from **shared memory**:

* one program per SM walks rows ``pid, pid + G, ...``; a row of ``x`` and of ``dy`` (16384
  values each) is one TMA copy each, of a ``[64, 256]`` box of the ``(M * 64, 256)`` view, into one
  of two shared-memory slots (2 x 2 x 32 KB in fp16/bf16);
* the copy of the next row is issued when a row starts (after a CTA barrier: every warp is done
  with the slot it overwrites, whose dx store has read it), so it runs under both passes of the
  current row; with three slots that store may still run;
* pass 1 reads the row from shared memory in four ``[16, 256]`` pieces for ``c1 = mean(g * x_hat)``
  and ``c2 = mean(g)``; pass 2 reads them again, writes ``dx`` and adds to the piece's ``dW`` and
  ``dB`` accumulators, which are the only row-sized data in registers;
* stage 2 is the example's ``layer_norm_dwdb_kernel`` over the ``G`` partial rows.

Candidates at N = 16384, M = 4096 rows (the benchmark's point), fp16 and bf16: ``example``
(``examples/layer_norm.layer_norm_bwd``); ``gluon w<warps> slots<n>``, this stage 1 with 8 or 16
warps and two or three shared-memory slots, then the example's stage 2; ``copy``
(``dst.copy_(src)`` of the same bytes: the ceiling) and ``add`` (``torch.add(x, dy, out=)``: the
same bytes in the same mix, two reads to a write). Every Gluon candidate's ``(dx, dw, db)`` is
first checked against the example's on 1, 7, 133 and 4096 rows.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/layer-norm/gluon_stage1.py
--out DIR [--budget S]``; anywhere ``python benchmarks/evidence/layer-norm/gluon_stage1.py
--compile`` (compiled for sm_90: registers, spills, shared memory).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # noqa: E402

N = 16384
LINE = 256  # a row is LINES lines of LINE: one TMA box of [LINES, LINE]
LINES = N // LINE  # a pass reads them in four pieces of LINES // 4 lines
PASSES = 3
SETTINGS = [(8, 2), (16, 2), (8, 3), (16, 3)]  # (warps, shared-memory slots)
METHOD = ("Inputs: seeded torch.randn x and dy (M = 4096 rows of 16384), weight randn, mean and "
          "rstd from the example's forward. Checked against the example's (dx, dw, db) with "
          "|got - want| <= atol + rtol |want| with rtol 1e-2 (fp16) or 2e-2 (bf16), atol 1e-2 for "
          "dx and 2e-2 x max(1, largest |value|) for dw and db, on 1, 7, 133 and 4096 rows "
          "first, every setting. Bytes: read x and dy, write dx "
          "(3 x M x N x 2); the copy moves the same bytes (read and write of 1.5 x M x N "
          "values), and 'add' (torch.add(x, dy, out=)) moves them in the same mix (read two "
          "rows, write one). Both candidates also write and stage 2 reads the partial rows "
          "(2 x SMs x N x 4 bytes), not counted. 'tflops' columns hold TB/s. --budget is "
          "not used.")


@gluon.jit
def _add(a, b):
    return a + b


@gluon.jit
def _piece(x_s, dy_s, w_s, p: gl.constexpr, mean, rstd, layout: gl.constexpr):
    """x_hat, g = dy * w and dy of piece p of the row in shared memory, fp32."""
    PL: gl.constexpr = x_s.type.shape[0] // 4
    x = x_s.slice(p * PL, PL).load(layout).to(gl.float32)
    dy = dy_s.slice(p * PL, PL).load(layout).to(gl.float32)
    w = w_s.slice(p * PL, PL).load(layout).to(gl.float32)
    x_hat = (x - mean) * rstd
    return x_hat, dy * w, dy


@gluon.jit
def _sums(x_s, dy_s, w_s, p: gl.constexpr, mean, rstd, r1, r2, layout: gl.constexpr):
    """Per line of the piece (within a warp: no CTA barrier), added to r1 and r2."""
    x_hat, g, dy = _piece(x_s, dy_s, w_s, p, mean, rstd, layout)
    return r1 + gl.reduce(g * x_hat, 1, _add), r2 + gl.reduce(g, 1, _add)


@gluon.jit
def _dx(x_s, dy_s, w_s, p: gl.constexpr, mean, rstd, c1, c2, dw, db,
        layout: gl.constexpr):
    """Pass 2 on piece p: dx over x's piece in shared memory; the accumulators updated."""
    PL: gl.constexpr = x_s.type.shape[0] // 4
    x_hat, g, dy = _piece(x_s, dy_s, w_s, p, mean, rstd, layout)
    dx = (g - (x_hat * c1 + c2)) * rstd
    x_s.slice(p * PL, PL).store(dx.to(x_s.dtype))  # each thread overwrites what it read
    return dw + dy * x_hat, db + dy


@gluon.jit
def _issue(x_desc, dy_desc, xs, dys, bars, row, slot):
    LINES_: gl.constexpr = x_desc.block_type.shape[0]
    mbarrier.expect(bars.index(slot), x_desc.block_type.nbytes + dy_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(x_desc, [row * LINES_, 0], bars.index(slot),
                                    xs.index(slot))
    tma.async_copy_global_to_shared(dy_desc, [row * LINES_, 0], bars.index(slot),
                                    dys.index(slot))


@gluon.jit
def _store_part(ptr, acc, p: gl.constexpr, layout: gl.constexpr):
    PL: gl.constexpr = acc.type.shape[0]
    W: gl.constexpr = acc.type.shape[1]
    lines = gl.arange(0, PL, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, W, layout=gl.SliceLayout(0, layout))
    gl.store(ptr + (p * PL + gl.expand_dims(lines, 1)) * W + gl.expand_dims(cols, 0), acc)


@gluon.jit
def ln_bwd_smem_kernel(x_desc, dy_desc, w_desc, dx_desc, mean_ptr, rstd_ptr, dw_part_ptr,
                       db_part_ptr, n_rows, WARPS: gl.constexpr, SLOTS: gl.constexpr):
    LINES_: gl.constexpr = x_desc.block_type.shape[0]
    W: gl.constexpr = x_desc.block_type.shape[1]
    NCOL: gl.constexpr = LINES_ * W
    PL: gl.constexpr = LINES_ // 4
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [WARPS, 1], [1, 0])
    dtype: gl.constexpr = x_desc.dtype
    xs = gl.allocate_shared_memory(dtype, [SLOTS, LINES_, W], x_desc.layout)
    dys = gl.allocate_shared_memory(dtype, [SLOTS, LINES_, W], dy_desc.layout)
    w_s = gl.allocate_shared_memory(dtype, [LINES_, W], w_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [SLOTS + 1, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(SLOTS + 1):  # one per slot, and w's (the last)
        mbarrier.init(bars.index(s), count=1)
    fence_async_shared()
    pid = gl.program_id(0)
    G = gl.num_programs(0)
    n_mine = (n_rows - pid + G - 1) // G
    mbarrier.expect(bars.index(SLOTS), w_desc.block_type.nbytes)  # w once, for every row
    tma.async_copy_global_to_shared(w_desc, [0, 0], bars.index(SLOTS), w_s)
    if n_mine > 0:
        _issue(x_desc, dy_desc, xs, dys, bars, pid, 0)
    zero = gl.zeros([PL, W], gl.float32, layout)
    dw0, dw1, dw2, dw3 = zero, zero, zero, zero
    db0, db1, db2, db3 = zero, zero, zero, zero
    mbarrier.wait(bars.index(SLOTS), 0)
    for it in range(n_mine):
        row = pid + it * G
        slot = it % SLOTS
        # The next slot held row it + 1 - SLOTS: its dx store has read it (at most
        # SLOTS - 2 newer stores pending), and every warp is done with it; then the
        # next row's copy may land there.
        tma.store_wait(SLOTS - 2)
        gl.thread_barrier()
        if it + 1 < n_mine:
            _issue(x_desc, dy_desc, xs, dys, bars, row + G, (it + 1) % SLOTS)
        mean = gl.load(mean_ptr + row)
        rstd = gl.load(rstd_ptr + row)
        mbarrier.wait(bars.index(slot), (it // SLOTS) & 1)
        x_s = xs.index(slot)
        dy_s = dys.index(slot)
        r1 = gl.zeros([PL], gl.float32, gl.SliceLayout(1, layout))
        r2 = gl.zeros([PL], gl.float32, gl.SliceLayout(1, layout))
        r1, r2 = _sums(x_s, dy_s, w_s, 0, mean, rstd, r1, r2, layout)
        r1, r2 = _sums(x_s, dy_s, w_s, 1, mean, rstd, r1, r2, layout)
        r1, r2 = _sums(x_s, dy_s, w_s, 2, mean, rstd, r1, r2, layout)
        r1, r2 = _sums(x_s, dy_s, w_s, 3, mean, rstd, r1, r2, layout)
        c1 = gl.reduce(r1, 0, _add) / NCOL  # the row's two sums: one CTA reduction each
        c2 = gl.reduce(r2, 0, _add) / NCOL
        dw0, db0 = _dx(x_s, dy_s, w_s, 0, mean, rstd, c1, c2, dw0, db0, layout)
        dw1, db1 = _dx(x_s, dy_s, w_s, 1, mean, rstd, c1, c2, dw1, db1, layout)
        dw2, db2 = _dx(x_s, dy_s, w_s, 2, mean, rstd, c1, c2, dw2, db2, layout)
        dw3, db3 = _dx(x_s, dy_s, w_s, 3, mean, rstd, c1, c2, dw3, db3, layout)
        fence_async_shared()  # dx written by the threads, read by the TMA store
        gl.thread_barrier()
        tma.async_copy_shared_to_global(dx_desc, [row * LINES_, 0], x_s)
    tma.store_wait(0)
    part = pid.to(gl.int64) * NCOL
    _store_part(dw_part_ptr + part, dw0, 0, layout)
    _store_part(dw_part_ptr + part, dw1, 1, layout)
    _store_part(dw_part_ptr + part, dw2, 2, layout)
    _store_part(dw_part_ptr + part, dw3, 3, layout)
    _store_part(db_part_ptr + part, db0, 0, layout)
    _store_part(db_part_ptr + part, db1, 1, layout)
    _store_part(db_part_ptr + part, db2, 2, layout)
    _store_part(db_part_ptr + part, db3, 3, layout)


def _descs(*tensors):
    """Descriptors moving a whole row, LINES lines of LINE, of each (rows, N) tensor."""
    gdt = gl.float16 if tensors[0].dtype == torch.float16 else gl.bfloat16
    layout = gl.NVMMASharedLayout.get_default_for([LINES, LINE], gdt)
    return tuple(TensorDescriptor(t, [t.numel() // LINE, LINE], [LINE, 1], [LINES, LINE],
                                  layout) for t in tensors)


def gluon_bwd(dy, x, weight, mean, rstd, warps=8, slots=2, groups=None):
    """(dx, dw, db): this stage 1, then the example's stage 2. x, dy: contiguous (M, 16384)."""
    import layer_norm as ex
    import triton

    assert x.is_contiguous() and dy.is_contiguous() and x.shape[-1] == N and dy.shape == x.shape
    m = x.shape[0]
    groups = min(m, groups or ex._sm_count(x.device))  # asked once per device, not per call
    dx = torch.empty_like(x)
    dw_part = torch.empty(groups, N, device=x.device, dtype=torch.float32)
    db_part = torch.empty(groups, N, device=x.device, dtype=torch.float32)
    ln_bwd_smem_kernel[(groups,)](*_descs(x, dy, weight.contiguous(), dx), mean, rstd,
                                  dw_part, db_part, m, WARPS=warps, SLOTS=slots,
                                  num_warps=warps)
    dw = torch.empty(N, device=x.device, dtype=weight.dtype)
    db = torch.empty(N, device=x.device, dtype=weight.dtype)
    block_g, block_cols, w2, stages = ex._reduce_tile(N)
    ex.layer_norm_dwdb_kernel[(triton.cdiv(N, block_cols),)](
        dw_part, db_part, dw, db, groups, N, BLOCK_G=block_g, BLOCK_COLS=block_cols,
        NUM_STAGES=stages, num_warps=w2)
    return dx, dw, db


def compile_stage1(kernel, descs, warps: int, slots: int):
    """A stage-1 kernel with this probe's signature (``ln_bwd_smem_kernel``, or the example's
    ``layer_norm_bwd_smem_kernel``) compiled for sm_90 from its four descriptors, no GPU needed."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    xd, dyd, wd, dxd = descs
    sig = {"x_desc": mangle_type(xd), "dy_desc": mangle_type(dyd),
           "w_desc": mangle_type(wd), "dx_desc": mangle_type(dxd),
           "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "dw_part_ptr": "*fp32",
           "db_part_ptr": "*fp32", "n_rows": "i32", "WARPS": "constexpr",
           "SLOTS": "constexpr"}
    # as a launch specializes them: 16-byte aligned pointers, rows divisible by 16
    attrs = {(i,): [["tt.divisibility", 16]] for i in (4, 5, 6, 7, 8)}
    src = GluonASTSource(kernel, sig, attrs=attrs, constexprs={"WARPS": warps, "SLOTS": slots})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})


def compile_report() -> None:
    from scripts.probe_common import ptxas_usage

    for dtype in (torch.float16, torch.bfloat16):
        t = torch.empty(2, N, dtype=dtype)
        descs = _descs(t, t, t[0], t)
        for warps, slots in SETTINGS:
            k = compile_stage1(ln_bwd_smem_kernel, descs, warps, slots)
            print(dtype, f"w{warps} slots{slots}", ptxas_usage(k.asm["ptx"]), f"shared {k.metadata.shared}",
                  "tma", k.asm["ptx"].count("cp.async.bulk.tensor"), flush=True)


def check_inputs(device, m: int, dtype, seed: int | None = None):
    """Seeded inputs on m rows (the seed: m unless given): (dy, x, w, mean, rstd), mean and
    rstd from the example's forward."""
    import layer_norm as ex

    g = torch.Generator(device=device).manual_seed(m if seed is None else seed)
    x, dy = (torch.randn(m, N, device=device, dtype=dtype, generator=g) for _ in "ab")
    w, b = (torch.randn(N, device=device, dtype=dtype, generator=g) for _ in "ab")
    _, mean, rstd = ex.layer_norm_fwd(x, w, b, 1e-5)
    return dy, x, w, mean, rstd


def mismatches(got, want, dtype, what: str) -> list[str]:
    """One line per gradient of (dx, dw, db) ``got`` outside the tolerance around ``want``
    (rtol 1e-2 in fp16, 2e-2 in bf16; atol 1e-2 for dx, 2e-2 x max(1, largest |value|) for
    dw and db); NaN counts as outside."""
    tol = 1e-2 if dtype == torch.float16 else 2e-2
    failed = []
    for name, a, e in zip(("dx", "dw", "db"), got, want, strict=True):
        atol = 1e-2 if name == "dx" else 2e-2 * max(1.0, e.float().abs().max().item())
        d = (a.float() - e.float()).abs()
        bad = ~(d <= atol + tol * e.float().abs())
        if bad.any():
            i = int(bad.flatten().nonzero()[0])
            failed.append(f"{what} {name}: {int(bad.sum())} bad, first at (row, col) "
                          f"{divmod(i, N)}, largest difference {d.max().item():.3g}")
    return failed


def check(device) -> None:
    import layer_norm as ex

    failed = []
    for dtype in (torch.float16, torch.bfloat16):
        for m in (1, 7, 133, 4096):
            dy, x, w, mean, rstd = check_inputs(device, m, dtype)
            want = ex.layer_norm_bwd(dy, x, w, mean, rstd)
            for warps, slots in SETTINGS:
                print(f"{dtype} m={m} w{warps} slots{slots} ...", flush=True)  # a hang: here
                got = gluon_bwd(dy, x, w, mean, rstd, warps, slots)
                torch.cuda.synchronize()
                failed += mismatches(got, want, dtype, f"{dtype} m={m} w{warps} slots{slots}")
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
        raise SystemExit("gluon_stage1.py needs an sm_90 GPU: Gluon has no interpreter")
    device, timing = timing_method(False)
    import layer_norm as ex

    check(device)
    rows = []

    def measure(dt_name, dtype):
        m = 2**26 // N
        dy, x, w, mean, rstd = check_inputs(device, m, dtype, seed=N)
        src = torch.empty(3 * m * N // 2, device=device, dtype=dtype)
        dst = torch.empty_like(src)
        out = torch.empty_like(x)
        fns = {"copy": lambda: dst.copy_(src),
               "add": lambda: torch.add(x, dy, out=out),
               "example": lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd),
               **{f"gluon w{k} slots{n}": (lambda k=k, n=n: gluon_bwd(dy, x, w, mean, rstd, k, n))
                  for k, n in SETTINGS}}
        ms = time_interleaved(fns, PASSES, timing)
        work = 3 * m * N * x.element_size()
        for name in fns:
            row = {"candidate": name, "dtype": dt_name, "N": N, "M": m}
            for graph, key in ((False, "do_bench"), (True, "cudagraph")):
                row.update(summarize(ms[(name, graph)], ms[("copy", graph)], work, key, "copy"))
            rows.append(row)
            print(row, flush=True)

    for dt_name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        measure(dt_name, dtype)
    header = probe_header("benchmarks/evidence/layer-norm/gluon_stage1.py", METHOD,
                          kernels="ln_bwd_smem_kernel (this file), examples/layer_norm.py's "
                                  "layer_norm_bwd and layer_norm_dwdb_kernel", passes=PASSES)
    write_points(args.out / "gluon_stage1.json", header, rows)


if __name__ == "__main__":
    main()
