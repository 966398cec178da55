"""Probe: the layer-norm forward with a persistent, software-pipelined row loop.

The example's forward (``examples/layer_norm.py``) launches one program per row, or per two rows
at N = 1024: a program loads its row, reduces it twice, stores ``y`` and exits, so while it
reduces, its SM has only the other resident programs' loads in flight. The backward's stage 1
gained most from the opposite shape: a few programs per SM walking rows ``pid, pid + G, ...`` in a
``tl.range(..., num_stages=S)`` loop, which the compiler pipelines (the loads of the next rows are
issued, through shared memory, while this row is reduced). This probe writes the forward that way
(``ln_fwd_persistent_kernel``: ``ROWS`` rows a step, ``G`` = programs per SM x SMs, ``w`` and ``b``
held in registers or reloaded every step) and times it at the benchmark's points beside the
example's launcher and a copy of the same bytes, fp16 and bf16.

Per N, every candidate's ``(y, mean, rstd)`` is first checked against ``layer_norm_torch`` (fp32
maths) on 999 rows; the passing ones are timed at M = 2^26 / N in interleaved passes. fp16 times
every candidate; bf16 the example and fp16's two fastest.

Usage (repository root): on a GPU ``python benchmarks/evidence/layer-norm/fwd_persistent.py --out
DIR [--budget S]``; ``--smoke`` checks every candidate on a few rows of 64 in Triton's interpreter
(no timing); ``--compile DIR`` compiles every candidate for sm_90 without a GPU (registers, spills,
shared memory).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]
if "--smoke" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

PASSES = 3
EPS = 1e-5
HIDDEN = [16384, 8192, 4096, 2048, 1024]  # the most wanted first: the budget may stop the run
# N -> candidates (rows a step, warps, programs per SM, pipeline stages, w and b held)
CANDIDATES = {
    1024: [(2, 4, 8, 3, True), (2, 4, 4, 3, True), (4, 4, 4, 2, True), (1, 4, 8, 3, True),
           (2, 8, 4, 2, True)],
    2048: [(1, 4, 8, 3, True), (1, 4, 4, 3, True), (2, 8, 4, 2, True), (1, 8, 4, 2, True)],
    4096: [(1, 8, 4, 2, True), (1, 8, 2, 3, True), (1, 4, 4, 2, True), (1, 8, 2, 2, False)],
    8192: [(1, 8, 2, 2, True), (1, 8, 1, 3, True), (1, 16, 1, 2, True), (1, 8, 2, 2, False)],
    16384: [(1, 8, 1, 2, False), (1, 16, 1, 2, False), (1, 8, 2, 2, False), (1, 16, 1, 3, False),
            (1, 16, 1, 2, True), (1, 8, 1, 1, False)],
}
METHOD = ("Inputs: seeded torch.randn x (M = 2^26 / N rows), weight 1 + 0.1 randn, bias 0.1 randn. "
          "Each candidate's (y, mean, rstd) checked against layer_norm_torch's y and torch's mean "
          "and 1 / sqrt(var + eps) in fp32 with rtol = atol = 1e-2 (fp16) or 2e-2 (bf16) on 999 "
          "rows first. Bytes: read x and write y (2 x M x N x element size) plus w and b; the "
          "copy moves M x N elements (read and write). Interleaved passes with do_bench and "
          "do_bench_cudagraph; 'tflops' columns hold TB/s.")


@triton.jit
def ln_fwd_persistent_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_rows, n_cols,
                             stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr, ROWS: tl.constexpr,
                             NUM_STAGES: tl.constexpr, HOLD_WB: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
    if HOLD_WB:
        w_held = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        b_held = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    n_blocks = tl.cdiv(n_rows, ROWS)
    for blk in tl.range(tl.program_id(0), n_blocks, tl.num_programs(0), num_stages=NUM_STAGES):
        rows = tl.cast(blk, tl.int64) * ROWS + tl.arange(0, ROWS)
        rmask = rows < n_rows
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
        x = x.to(tl.float32)
        mean = tl.sum(x, axis=1) / n_cols
        xc = tl.where(mask, x - mean[:, None], 0.0)
        var = tl.sum(xc * xc, axis=1) / n_cols
        rstd = tl.rsqrt(var + tl.cast(eps, tl.float32))
        if HOLD_WB:
            w = w_held
            b = b_held
        else:
            w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        y = xc * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty),
                 mask=mask)
        tl.store(mean_ptr + rows, mean, mask=rmask)
        tl.store(rstd_ptr + rows, rstd, mask=rmask)


def label(c) -> str:
    rows, warps, per_sm, stages, hold = c
    return f"persistent r{rows} w{warps} @{per_sm}/SM s{stages} {'wb held' if hold else 'wb reloaded'}"


def persistent_fwd(x, w, b, cand, sms):
    """(y, mean, rstd) of contiguous (M, N) x by ln_fwd_persistent_kernel with setting cand."""
    rows, warps, per_sm, stages, hold = cand
    m, n = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(m, device=x.device, dtype=torch.float32)
    rstd = torch.empty_like(mean)
    grid = (min(triton.cdiv(m, rows), sms * per_sm),)
    ln_fwd_persistent_kernel[grid](x, y, w, b, mean, rstd, m, n, x.stride(0), y.stride(0), EPS,
                                   BLOCK_N=triton.next_power_of_2(n), ROWS=rows, NUM_STAGES=stages,
                                   HOLD_WB=hold, num_warps=warps)
    return y, mean, rstd


def check(ex, device, n, m, dtype, cands, sms) -> dict:
    """label -> "pass" or the first line of the failure, against the fp32 reference."""
    g = torch.Generator(device=device).manual_seed(n)
    x = torch.randn(m, n, device=device, dtype=dtype, generator=g)
    w = (1 + 0.1 * torch.randn(n, device=device, generator=g)).to(dtype)
    b = (0.1 * torch.randn(n, device=device, generator=g)).to(dtype)
    want_y = ex.layer_norm_torch(x, w, b, EPS)
    xf = x.float()
    want_mean = xf.mean(1)
    want_rstd = torch.rsqrt(xf.var(1, unbiased=False) + EPS)
    tol = 1e-2 if dtype == torch.float16 else 2e-2
    out = {}
    for c in cands:
        try:
            y, mean, rstd = persistent_fwd(x, w, b, c, sms)
            for got, want in ((y, want_y), (mean, want_mean), (rstd, want_rstd)):
                torch.testing.assert_close(got, want, rtol=tol, atol=tol)
            out[label(c)] = "pass"
        except AssertionError as err:
            out[label(c)] = "FAIL: " + str(err).strip().splitlines()[0]
    return out


def smoke() -> None:
    import layer_norm as ex

    cands = sorted({(r, w, p, s, h) for cs in CANDIDATES.values() for (r, w, p, s, h) in cs})
    for m in (1, 7, 13):
        res = check(ex, torch.device("cpu"), 64, m, torch.float16, cands, sms=2)
        bad = {k: v for k, v in res.items() if v != "pass"}
        print(f"smoke: {m} rows of 64, {len(res)} settings, {len(bad)} failed", bad or "", flush=True)
        if bad:
            raise SystemExit(1)


def compile_report(out: Path) -> None:
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend

    from scripts.probe_common import code_size, compile_sm90, environment, ptxas_version, write_points

    divisible = CUDABackend(GPUTarget("cuda", 90, 32)).parse_attr("D")
    rows = []
    for n, cands in CANDIDATES.items():
        for dt, name in (("*fp16", "fp16"), ("*bf16", "bf16")):
            for c in cands:
                r, warps, per_sm, stages, hold = c
                sig = {"x_ptr": dt, "y_ptr": dt, "w_ptr": dt, "b_ptr": dt, "mean_ptr": "*fp32",
                       "rstd_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32", "stride_xm": "i32",
                       "stride_ym": "i32", "eps": "fp32"}
                attrs = {(i,): divisible for i in range(10)}  # pointers, sizes and strides % 16
                k, failure = compile_sm90(ln_fwd_persistent_kernel, sig,
                                          {"BLOCK_N": n, "ROWS": r, "NUM_STAGES": stages, "HOLD_WB": hold},
                                          attrs, {"num_warps": warps})
                row = {"N": n, "dtype": name, "candidate": label(c),
                       **(code_size(k) if k is not None else failure)}
                rows.append(row)
                print(row, flush=True)
    header = {"probe": "benchmarks/evidence/layer-norm/fwd_persistent.py --compile", **environment(),
              "ptxas": ptxas_version(),
              "method": "ln_fwd_persistent_kernel compiled for sm_90 (GPUTarget cuda 90) with pointers, "
                        "sizes and strides divisible by 16, as the benchmark's launches specialize them"}
    write_points(out / "fwd_persistent_compile.json", header, rows)


def main() -> None:
    if "--smoke" in sys.argv:
        smoke()
        return
    if "--compile" in sys.argv:
        compile_report(Path(sys.argv[sys.argv.index("--compile") + 1]))
        return
    import time

    import layer_norm as ex

    from scripts.probe_common import probe_args, probe_header, summarize, time_interleaved, timing_method, write_points

    args = probe_args()
    device, timing = timing_method(False)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    t0 = time.monotonic()
    rows, skipped = [], []
    for n in HIDDEN:
        fastest = []
        for dt_name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            if time.monotonic() - t0 > args.budget:
                skipped.append({"N": n, "dtype": dt_name})
                continue
            cands = CANDIDATES[n] if dt_name == "fp16" else fastest
            checks = check(ex, device, n, 999, dtype, cands, sms)
            m = 2**26 // n
            g = torch.Generator(device=device).manual_seed(m)
            x = torch.randn(m, n, device=device, dtype=dtype, generator=g)
            w = (1 + 0.1 * torch.randn(n, device=device, generator=g)).to(dtype)
            b = (0.1 * torch.randn(n, device=device, generator=g)).to(dtype)
            src = torch.empty_like(x)
            dst = torch.empty_like(x)
            fns = {"copy": lambda dst=dst, src=src: dst.copy_(src),
                   "example": lambda x=x, w=w, b=b: ex.layer_norm_fwd(x, w, b, EPS)}
            for c in cands:
                if checks[label(c)] == "pass":
                    fns[label(c)] = lambda x=x, w=w, b=b, c=c: persistent_fwd(x, w, b, c, sms)
            ms = time_interleaved(fns, PASSES, timing)
            work = 2 * m * n * x.element_size() + 2 * n * x.element_size()
            for name in list(fns) + [label(c) for c in cands if label(c) not in fns]:
                row = {"candidate": name, "N": n, "M": m, "dtype": dt_name,
                       "check": checks.get(name, "reference" if name in ("copy", "example") else "")}
                if name in fns:
                    for graph, key in ((False, "do_bench"), (True, "cudagraph")):
                        row.update(summarize(ms[(name, graph)], ms[("copy", graph)], work, key, "copy"))
                rows.append(row)
                print(row, flush=True)
            if dt_name == "fp16":
                timed = [c for c in cands if label(c) in fns]
                fastest = sorted(timed, key=lambda c: sorted(ms[(label(c), True)])[PASSES // 2])[:2]
    header = probe_header("benchmarks/evidence/layer-norm/fwd_persistent.py", METHOD, passes=PASSES,
                          sms=sms, skipped=skipped,
                          kernels="ln_fwd_persistent_kernel (this file); examples/layer_norm.py's "
                                  "layer_norm_fwd as shipped")
    write_points(args.out / "fwd_persistent.json", header, rows)


if __name__ == "__main__":
    main()
