"""Probe: the example's backward at N = 16384 with and without its shared-memory stage 1.

``examples/layer_norm.py`` runs stage 1 at N = 16384 on an sm_90 GPU as
``layer_norm_bwd_smem_kernel`` (Gluon: each row of ``x`` and ``dy`` copied into shared memory by
TMA, ``SMEM_TABLE`` picks warps and buffers) and elsewhere as the Triton four-piece
``layer_norm_bwd_long_kernel``. This probe times both through the example's own launcher
``layer_norm_bwd`` (stage 1 then stage 2), in one run:

* ``triton``: ``SMEM_TABLE`` emptied, so the launcher takes the Triton stage 1;
* ``smem w<warps> slots<n>``: ``SMEM_TABLE[16384]`` set to that setting;
* ``copy``: ``dst.copy_(src)`` of the bytes the backward must move (the ceiling).

Per dtype (fp16, bf16), every ``smem`` setting's ``(dx, dw, db)`` is first checked against the
``triton`` candidate's on 1, 7, 133 and 4096 rows; then M = 4096 rows (the benchmark's point,
2^26 elements) are timed. The JSON names the setting the example ships (``shipped``).

The kernel reaches the example from ``benchmarks/evidence/layer-norm/pending/smem_stage1.patch``: while
the patch is pending, ``git apply`` it before running this probe.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/layer-norm/smem_stage1.py
--out DIR``; anywhere ``python benchmarks/evidence/layer-norm/smem_stage1.py --compile DIR``
(each setting compiled for sm_90: registers, spills, shared memory; no GPU needed).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402

N = 16384
PASSES = 3
CODE = ("examples/layer_norm.py: its SMEM_TABLE and layer_norm_bwd_smem_kernel, which reach it from "
        "benchmarks/evidence/layer-norm/pending/smem_stage1.patch (apply it first while it is pending)")
SETTINGS = [(8, 2), (8, 3), (16, 2), (16, 3)]  # (warps, shared-memory buffers)
METHOD = ("Inputs: seeded torch.randn x and dy (M = 4096 rows of 16384), weight randn, mean and "
          "rstd from the example's forward. Each smem setting checked against the triton "
          "candidate's (dx, dw, db) with |got - want| <= atol + rtol |want|, rtol 1e-2 (fp16) or "
          "2e-2 (bf16), atol 1e-2 for dx and 2e-2 x max(1, largest |value|) for dw and db, on "
          "1, 7, 133 and 4096 rows first. Every candidate is the example's layer_norm_bwd "
          "(stage 1 and stage 2) with SMEM_TABLE set. Bytes: read x and dy, write dx "
          "(3 x M x N x 2); the copy moves the same bytes. 'tflops' columns hold TB/s.")


def _table(ex, setting):
    ex.SMEM_TABLE.clear()
    if setting is not None:
        ex.SMEM_TABLE[N] = setting


def compile_report(out: Path) -> None:
    import layer_norm as ex
    from gluon_stage1 import compile_stage1

    from scripts.probe_common import environment, ptxas_usage, ptxas_version, write_points

    rows = []
    for dtype, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        t = torch.empty(2, N, dtype=dtype)
        descs = ex._row_descriptors(t, t, t[0], t)
        for warps, slots in SETTINGS:
            k = compile_stage1(ex.layer_norm_bwd_smem_kernel, descs, warps, slots)
            row = {"dtype": name, "warps": warps, "slots": slots, **ptxas_usage(k.asm["ptx"]),
                   "shared_bytes": k.metadata.shared,
                   "tma_copies": k.asm["ptx"].count("cp.async.bulk.tensor")}
            rows.append(row)
            print(row, flush=True)
    header = {"probe": "benchmarks/evidence/layer-norm/smem_stage1.py --compile", **environment(),
              "ptxas": ptxas_version(), "code": CODE,
              "method": "layer_norm_bwd_smem_kernel compiled for sm_90 (GPUTarget cuda 90) with "
                        "16-byte-aligned pointers; registers and spills from ptxas -v"}
    write_points(out / "smem_stage1_compile.json", header, rows)


def check(device, ex) -> list[str]:
    """Every setting against the Triton stage 1 (gluon_stage1.py's inputs and tolerances)."""
    from gluon_stage1 import check_inputs, mismatches

    failed = []
    for dtype in (torch.float16, torch.bfloat16):
        for m in (1, 7, 133, 4096):
            dy, x, w, mean, rstd = check_inputs(device, m, dtype)
            _table(ex, None)
            want = ex.layer_norm_bwd(dy, x, w, mean, rstd)
            for setting in SETTINGS:
                _table(ex, setting)
                got = ex.layer_norm_bwd(dy, x, w, mean, rstd)
                torch.cuda.synchronize()
                failed += mismatches(got, want, dtype, f"{dtype} m={m} {setting}")
            print(f"{dtype} m={m}: checked", flush=True)
    return failed


def measure(ex, device, timing, dt_name, dtype, timed_smem: bool) -> list[dict]:
    """The rows of one dtype: copy, the Triton stage 1 and (when checked) every smem setting."""
    from gluon_stage1 import check_inputs

    from scripts.probe_common import summarize, time_interleaved

    m = 2**26 // N
    dy, x, w, mean, rstd = check_inputs(device, m, dtype, seed=N)
    src = torch.empty(3 * m * N // 2, device=device, dtype=dtype)
    dst = torch.empty_like(src)

    def bwd(setting):
        _table(ex, setting)
        return ex.layer_norm_bwd(dy, x, w, mean, rstd)

    fns = {"copy": lambda: dst.copy_(src), "triton": lambda: bwd(None)}
    if timed_smem:
        fns.update({f"smem w{k} slots{n}": (lambda s=(k, n): bwd(s)) for k, n in SETTINGS})
    ms = time_interleaved(fns, PASSES, timing)
    work = 3 * m * N * x.element_size()
    rows = []
    for name in fns:
        row = {"candidate": name, "dtype": dt_name, "N": N, "M": m}
        for graph, key in ((False, "do_bench"), (True, "cudagraph")):
            row.update(summarize(ms[(name, graph)], ms[("copy", graph)], work, key, "copy"))
        rows.append(row)
        print(row, flush=True)
    return rows


def main() -> None:
    if "--compile" in sys.argv:
        compile_report(Path(sys.argv[sys.argv.index("--compile") + 1]))
        return
    from scripts.probe_common import probe_args, probe_header, timing_method, write_points

    args = probe_args()
    if args.smoke:
        raise SystemExit("smem_stage1.py needs an sm_90 GPU: Gluon has no interpreter")
    device, timing = timing_method(False)
    import layer_norm as ex

    shipped = ex.SMEM_TABLE.get(N)
    failed = check(device, ex)
    print("check passed" if not failed else "check FAILED:\n" + "\n".join(failed), flush=True)
    rows = []
    for dt_name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        rows += measure(ex, device, timing, dt_name, dtype, timed_smem=not failed)
    _table(ex, shipped)
    header = probe_header("benchmarks/evidence/layer-norm/smem_stage1.py", METHOD, code=CODE,
                          shipped=f"smem w{shipped[0]} slots{shipped[1]}" if shipped else None,
                          check="passed" if not failed else failed, passes=PASSES)
    write_points(args.out / "smem_stage1.json", header, rows)


if __name__ == "__main__":
    main()
