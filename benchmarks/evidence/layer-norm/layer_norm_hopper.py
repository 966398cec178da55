# ruff: noqa: E731
"""Probe: layer norm on the H200, the variants of examples/layer_norm.py that its tables can pick.

Run from the repository root: ``python3 benchmarks/evidence/layer-norm/layer_norm_hopper.py --out DIR``
(``--budget 150`` seconds by default; ``--cpu-smoke`` runs one tiny point per candidate in Triton's
interpreter, no timing). M x N = 2^26 elements, N in 1024 ... 16384, fp16 and bf16.

Every candidate goes through the example's own launchers (``layer_norm_fwd`` / ``layer_norm_bwd``)
with ``FWD_TABLE`` / ``BWD_TABLE`` set to it, so what is timed is what the launcher would run:

* forward: one row per program with other warps ("row"), ROWS rows per program ("rows"), the
  three-walk chunked row ("chunked");
* backward stage 1: the shipped kernel ("row", warps / programs per SM / stages) and the long-row
  kernel ("long": four pieces per row, two passes, w reloaded per row).

Per point: the output is checked against the fp32 torch reference on the timed shape first (a failing or
crashing candidate is recorded with its traceback's last lines and not timed), then
``triton.testing.do_bench`` (warmup 25, rep 100, median, L2 flushed) and ``do_bench_cudagraph`` (median),
GB/s with the benchmark case's byte counts (benchmarks/cases/layer_norm.py). Beside them: a torch
``copy_`` of the same bytes (the ceiling), torch, ``torch.compile(dynamic=False)`` per shape after
``torch.compiler.reset()``, Liger-Kernel 0.8.5; then the host time per call (median wall time of one call,
the GPU idle before it) of the launchers with the compiled-kernel cache, the same launchers with plain
``kernel[grid](...)`` launches, and torch. fp16 screens every candidate; bf16 times the shipped setting
and the two best fp16 candidates. Registers and spills of each compiled stage-1 / forward kernel are
recorded. The best setting per N is printed as ``FWD_TABLE`` / ``BWD_TABLE`` literals for the example.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
import layer_norm as ex  # noqa: E402  (sets TRITON_INTERPRET without a GPU)
import triton  # noqa: E402

CUDA = torch.cuda.is_available()
HIDDEN = [16384, 1024, 8192, 2048, 4096]  # most wanted first: the budget may end the run
ELEMENTS = 2**26
EPS = 1e-5
T0 = time.perf_counter()

# (label, table entry); the launcher's default (None) is always first
FWD = {
    1024: [("rows", 2, 4), ("rows", 4, 4), ("rows", 4, 8), ("rows", 8, 8), ("row", 1024, 8)],
    2048: [("rows", 2, 4), ("rows", 2, 8), ("rows", 4, 8), ("row", 2048, 8)],
    4096: [("row", 4096, 4), ("rows", 2, 8), ("row", 4096, 16)],
    8192: [("row", 8192, 16), ("chunked", 2048, 4), ("chunked", 4096, 8)],
    16384: [("row", 16384, 8), ("row", 16384, 32), ("chunked", 4096, 4), ("chunked", 4096, 8),
            ("chunked", 2048, 8), ("chunked", 8192, 16)],
}
BWD = {
    1024: [("row", 4, 4, 3), ("row", 8, 4, 3)],
    2048: [("row", 8, 2, 3)],
    4096: [("row", 8, 1, 3)],
    8192: [("long", 8, 1, 1), ("long", 16, 1, 1), ("row", 16, 1, 3)],
    16384: [("long", 16, 1, 1), ("long", 32, 1, 1), ("long", 16, 2, 1), ("long", 8, 1, 1), ("long", 16, 1, 2),
            ("row", 16, 1, 1), ("row", 16, 1, 2)],
}


def log(msg):
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def label(entry):
    if entry is None:
        return "shipped"
    if entry[0] == "rows":
        return f"rows{entry[1]} w{entry[2]}"
    if entry[0] == "chunked":
        return f"chunk{entry[1]} w{entry[2]}"
    if len(entry) == 3:
        return f"row w{entry[2]}"
    return f"{entry[0]} w{entry[1]} @{entry[2]}/SM s{entry[3]}"


def tail(err):
    return "".join(traceback.format_exception(err)).strip().splitlines()[-4:]


def use(table, block_n, entry):
    table.clear()
    if entry is not None:
        table[block_n] = entry


def kernel_stats(before):
    """n_regs / n_spills of the kernels compiled since `before` (keys of ex._COMPILED)."""
    out = {}
    for key, k in ex._COMPILED.items():
        if key not in before:
            name = getattr(key[0], "__name__", str(key[0]))
            out[name] = {"regs": getattr(k, "n_regs", None), "spills": getattr(k, "n_spills", None)}
    return out


def gbs(nbytes, ms):
    return nbytes / ms / 1e6 if ms else None


def tol(dtype):
    return 1e-2 if dtype == torch.float16 else 2e-2


def check(got, want, dtype, reduced=False):
    for g, w in zip(got, want, strict=True):
        t = tol(dtype)
        atol = t * max(1.0, w.float().abs().max().item()) if reduced else t  # dW, dB: sums over M rows
        torch.testing.assert_close(g.float(), w.float(), rtol=t, atol=atol)


class Probe:
    def __init__(self, budget, smoke):
        self.budget, self.smoke = budget, smoke
        self.points, self.errors, self.skipped = [], [], []
        self.compiles = 0

    def left(self):
        return self.budget - (time.perf_counter() - T0)

    def time(self, fn):
        if self.smoke:  # a wall-clock stand-in, only so the summary's code runs in the smoke test
            t = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t) * 1e3
            return ms, ms
        bench = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
        try:
            graph = triton.testing.do_bench_cudagraph(fn, return_mode="median")
        except Exception as err:  # noqa: BLE001 - some calls cannot be captured
            graph = None
            self.errors.append({"what": "graph capture", "error": tail(err)})
        return bench, graph

    def point(self, what, n, dtype, name, nbytes, run, checker, **extra):
        """Check, then time, one candidate; record it whatever happens."""
        rec = {"what": what, "N": n, "dtype": str(dtype).removeprefix("torch."), "name": name, **extra,
               "bytes": nbytes, "check": None}
        if self.left() <= 0:
            self.skipped.append(f"{what} N={n} {rec['dtype']} {name}")
            return None
        before = set(ex._COMPILED)
        try:
            checker(run())
            rec["check"] = True
        except Exception as err:  # noqa: BLE001 - a compile error must not end the run
            rec["check"], rec["error"] = False, tail(err)
            self.points.append(rec)
            log(f"FAIL {what} N={n} {rec['dtype']} {name}: {rec['error'][-1]}")
            return rec
        stats = kernel_stats(before)
        self.compiles += len(stats)
        rec["kernels"] = stats
        try:
            bench, graph = self.time(run)
        except Exception as err:  # noqa: BLE001
            rec["error"] = tail(err)
            bench = graph = None
        rec.update(bench_ms=bench, graph_ms=graph, bench_gbs=gbs(nbytes, bench), graph_gbs=gbs(nbytes, graph))
        self.points.append(rec)
        if not self.smoke:
            log(f"{what} N={n:5d} {rec['dtype']:8s} {name:26s} bench {rec['bench_gbs'] or 0:6.0f} "
                f"graph {rec['graph_gbs'] or 0:6.0f} GB/s {stats}")
        return rec


def host_us(fn, calls):
    """Median wall time of one call, the queue empty before each (synchronize between calls)."""
    fn()
    times = []
    for _ in range(calls):
        if CUDA:
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    if CUDA:
        torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def plain_launch(kernel, grid, args, constexprs, num_warps, wrap=False):
    """The launchers' launch as it was: kernel[grid](...) through Triton's JIT path every call."""
    ex._launcher(kernel, wrap)[grid](*args, **constexprs, num_warps=num_warps)


def liger():
    from liger_kernel.ops import layer_norm as mod

    return mod


def run_n(p, n, dtype, sms, fwd_best, bucket):
    """All points of one N and dtype; fwd_best: fp16's best labels, for bf16; bucket: the N whose
    candidates run (n itself, or in the smoke test the N that the tiny n stands for)."""
    dev = ex.DEVICE
    m = max(1, ELEMENTS // n) if not p.smoke else 6
    block_n = triton.next_power_of_2(n)
    es = torch.finfo(dtype).bits // 8
    torch.manual_seed(0)
    x = torch.randn(m, n, device=dev, dtype=dtype)
    w = (1 + 0.1 * torch.randn(n, device=dev)).to(dtype)
    b = (0.1 * torch.randn(n, device=dev)).to(dtype)
    dy = torch.randn_like(x)
    fwd_bytes = 2 * x.numel() * es + 2 * n * es
    bwd_bytes = 3 * x.numel() * es + 8 * m + 3 * n * es
    y_ref = ex.layer_norm_torch(x, w, b)
    g_ref = ex.layer_norm_grads_torch(dy, x, w, b)
    _, mean, rstd = ex.layer_norm_fwd(x, w, b)  # the shipped forward's statistics, for every stage 1
    bf16 = dtype == torch.bfloat16
    res = {}

    fwd_cands = [None, *(SMOKE_FWD if p.smoke else FWD)[bucket]]
    bwd_cands = [None, *BWD[bucket]]
    if bf16 and not p.smoke:
        fwd_cands = [c for c in fwd_cands if c is None or label(c) in fwd_best.get(("fwd", n), [])]
        bwd_cands = [c for c in bwd_cands if c is None or label(c) in fwd_best.get(("bwd", n), [])]
    for entry in fwd_cands:
        use(ex.FWD_TABLE, block_n, entry)
        res.setdefault("fwd", []).append(p.point(
            "fwd", n, dtype, label(entry), fwd_bytes, lambda: ex.layer_norm_fwd(x, w, b)[0],
            lambda out: check([out], [y_ref], dtype), entry=entry))
    ex.FWD_TABLE.clear()
    for entry in bwd_cands:
        use(ex.BWD_TABLE, block_n, entry)
        groups = int(ex._num_groups(m, block_n, dev))
        res.setdefault("bwd", []).append(p.point(
            "bwd", n, dtype, label(entry), bwd_bytes, lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd),
            lambda out: (check(out[:1], g_ref[:1], dtype), check(out[1:], g_ref[1:], dtype, reduced=True)),
            entry=entry, groups=groups))
    ex.BWD_TABLE.clear()
    if p.smoke:
        return res

    # the ceiling: a torch copy of the same bytes (half read, half written)
    for what, nbytes in (("fwd", fwd_bytes), ("bwd", bwd_bytes)):
        src = torch.empty(nbytes // 2, device=dev, dtype=torch.uint8)
        dst = torch.empty_like(src)
        p.point(what, n, dtype, "copy (ceiling)", nbytes, lambda s=src, d=dst: d.copy_(s), lambda out: None)
    # peers
    p.point("fwd", n, dtype, "torch", fwd_bytes, lambda: torch.nn.functional.layer_norm(x, (n,), w, b),
            lambda out: check([out], [y_ref], dtype))
    tm, trs = torch.ops.aten.native_layer_norm(x, [n], w, b, EPS)[1:]
    torch_bwd = lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [n], tm, trs, w, b, [True] * 3)
    p.point("bwd", n, dtype, "torch", bwd_bytes, torch_bwd,
            lambda out: (check(out[:1], g_ref[:1], dtype), check(out[1:], g_ref[1:], dtype, reduced=True)))
    try:
        lk = liger()
        _, _, lm, lr, *_ = lk.layer_norm_forward(x, w, b, EPS)
        p.point("fwd", n, dtype, "liger", fwd_bytes, lambda: lk.layer_norm_forward(x, w, b, EPS)[0],
                lambda out: check([out], [y_ref], dtype))
        p.point("bwd", n, dtype, "liger", bwd_bytes, lambda: lk.layer_norm_backward(dy, x, w, b, lm, lr),
                lambda out: (check(out[:1], g_ref[:1], dtype), check(out[1:], g_ref[1:], dtype, reduced=True)))
    except Exception as err:  # noqa: BLE001
        p.errors.append({"what": f"liger N={n} {dtype}", "error": tail(err)})
    if p.left() > 20:  # torch.compile: a few seconds a shape
        torch.compiler.reset()
        cf = torch.compile(lambda t, ww, bb: torch.nn.functional.layer_norm(t, t.shape[-1:], ww, bb), dynamic=False)
        p.point("fwd", n, dtype, "torch.compile", fwd_bytes, lambda: cf(x, w, b),
                lambda out: check([out], [y_ref], dtype))
        torch.compiler.reset()
        cb = torch.compile(lambda *a: torch.ops.aten.native_layer_norm_backward(
            a[0], a[1], a[1].shape[-1:], a[4], a[5], a[2], a[3], [True] * 3), dynamic=False)
        p.point("bwd", n, dtype, "torch.compile", bwd_bytes, lambda: cb(dy, x, w, b, tm, trs),
                lambda out: (check(out[:1], g_ref[:1], dtype), check(out[1:], g_ref[1:], dtype, reduced=True)))
    else:
        p.skipped.append(f"torch.compile N={n} {dtype}")
    return res


def host_times(p, n):
    """Host us per call: the launchers with the compiled-kernel cache vs plain launches vs torch."""
    dev = ex.DEVICE
    m = 4096 if not p.smoke else 4
    x = torch.randn(m, n, device=dev, dtype=torch.float16)
    w, b = torch.ones(n, device=dev, dtype=x.dtype), torch.zeros(n, device=dev, dtype=x.dtype)
    dy = torch.randn_like(x)
    _, mean, rstd = ex.layer_norm_fwd(x, w, b)
    tm, trs = torch.ops.aten.native_layer_norm(x, [n], w, b, EPS)[1:]
    calls = 200 if not p.smoke else 2
    fns = {
        "fwd cached": lambda: ex.layer_norm_fwd(x, w, b),
        "bwd cached": lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd),
        "F.layer_norm": lambda: torch.nn.functional.layer_norm(x, (n,), w, b),
        "torch bwd": lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [n], tm, trs, w, b, [True] * 3),
    }
    out = {name: host_us(fn, calls) for name, fn in fns.items()}
    cached = ex._launch
    ex._launch = plain_launch
    try:
        out["fwd plain"] = host_us(fns["fwd cached"], calls)
        out["bwd plain"] = host_us(fns["bwd cached"], calls)
    finally:
        ex._launch = cached
    log(f"host us/call N={n}: " + ", ".join(f"{k} {v:.1f}" for k, v in out.items()))
    return out


SMOKE_N = {1024: 64, 2048: 128, 4096: 256, 8192: 512, 16384: 1024}
SMOKE_FWD = {n: [(k, a // (n // s) if k == "chunked" else a if k == "rows" else s, wp) for k, a, wp in FWD[n]]
             for n, s in SMOKE_N.items()}


def best(p, what, n, dtype, k=2):
    rows = [r for r in p.points if r["what"] == what and r["N"] == n and r["dtype"] == dtype and r.get("check")
            and "entry" in r and r.get("graph_gbs")]
    rows.sort(key=lambda r: -r["graph_gbs"])
    return rows[:k]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/out"))
    ap.add_argument("--budget", type=float, default=150.0)
    ap.add_argument("--cpu-smoke", action="store_true")
    args = ap.parse_args()
    smoke = args.cpu_smoke or not CUDA
    if not CUDA and not args.cpu_smoke:
        print("no GPU: running the CPU smoke test (--cpu-smoke)")
    p = Probe(args.budget if not smoke else 1e9, smoke)
    args.out.mkdir(parents=True, exist_ok=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if CUDA else 4
    fwd_best, host = {}, {}
    for n in HIDDEN:
        nn = SMOKE_N[n] if smoke else n
        for dtype in (torch.float16, torch.bfloat16) if not smoke else (torch.float16, torch.float32):
            try:  # smoke: the N bucket's candidates at a tiny width nn, checks only
                run_n(p, nn, dtype, sms, fwd_best, n)
            except Exception as err:  # noqa: BLE001
                p.errors.append({"what": f"N={nn} {dtype}", "error": tail(err)})
                log(f"ERROR N={nn} {dtype}: {tail(err)[-1]}")
            if dtype == torch.float16:
                for what in ("fwd", "bwd"):
                    fwd_best[(what, nn)] = [r["name"] for r in best(p, what, nn, "float16")]
            torch.cuda.empty_cache() if CUDA else None
        write(p, args.out, host)
    for n in (1024, 16384):
        if p.left() > 0 or smoke:
            try:
                host[n] = host_times(p, SMOKE_N[n] if smoke else n)
            except Exception as err:  # noqa: BLE001
                p.errors.append({"what": f"host N={n}", "error": tail(err)})
        else:
            p.skipped.append(f"host times N={n}")
    write(p, args.out, host)
    summary(p, host)


def write(p, out, host):
    data = {
        "probe": "layer_norm_hopper", "gpu": torch.cuda.get_device_name() if CUDA else "cpu (interpreter smoke)",
        "torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "method": "do_bench(warmup=25, rep=100, median, L2 flushed) and do_bench_cudagraph(median); GB/s = the "
                  "case's bytes / time; ceiling = torch copy_ of the same bytes; host = median wall time of one "
                  "call after a synchronize",
        "elements": ELEMENTS, "budget_s": p.budget, "elapsed_s": round(time.perf_counter() - T0, 1),
        "kernels_compiled": p.compiles, "points": p.points, "host_us": {str(k): v for k, v in host.items()},
        "errors": p.errors, "skipped": p.skipped,
    }
    (out / "layer_norm_hopper.json").write_text(json.dumps(data, indent=1, default=str))


def summary(p, host):
    print(f"\n# layer norm on {torch.cuda.get_device_name() if CUDA else 'cpu'}: {len(p.points)} points, "
          f"{p.compiles} kernels compiled, {time.perf_counter() - T0:.0f} s")
    print(f"{'pass':4s} {'N':>5s} {'dtype':8s} {'candidate':26s} {'ok':>3s} {'bench':>7s} {'graph':>7s} "
          f"{'%copy':>6s} {'regs/spills':>12s}")
    ceil = {(r["what"], r["N"], r["dtype"]): r for r in p.points if r["name"] == "copy (ceiling)"}
    for r in p.points:
        c = ceil.get((r["what"], r["N"], r["dtype"]))
        pct = (f"{100 * r['graph_gbs'] / c['graph_gbs']:5.1f}%" if c and c.get("graph_gbs") and r.get("graph_gbs")
               else "")
        ks = r.get("kernels") or {}
        rs = " ".join(f"{v['regs']}/{v['spills']}" for k, v in ks.items() if "dwdb" not in k)
        print(f"{r['what']:4s} {r['N']:5d} {r['dtype']:8s} {r['name']:26s} {'y' if r['check'] else 'N':>3s} "
              f"{r.get('bench_gbs') or 0:7.0f} {r.get('graph_gbs') or 0:7.0f} {pct:>6s} {rs:>12s}")
    for n, h in host.items():
        print(f"host us/call N={n}: " + ", ".join(f"{k} {v:.1f}" for k, v in h.items()))
    # the tables: the fastest candidate per N (min over dtypes of CUDA-graph GB/s), where it beats the default
    tables = {"FWD_TABLE": {}, "BWD_TABLE": {}}
    for what, table in (("fwd", "FWD_TABLE"), ("bwd", "BWD_TABLE")):
        for n in sorted({r["N"] for r in p.points}):
            score = {}
            for r in p.points:
                if r["what"] == what and r["N"] == n and r.get("check") and "entry" in r and r.get("graph_gbs"):
                    score.setdefault(r["name"], []).append((r["graph_gbs"], r["entry"]))
            full = {k: v for k, v in score.items() if len(v) == 2} or score
            if not full:
                continue
            name = max(full, key=lambda k: min(g for g, _ in full[k]))
            entry = full[name][0][1]
            if entry is not None:
                tables[table][triton.next_power_of_2(n)] = tuple(entry)
            print(f"{what} N={n}: best {name} "
                  f"({', '.join(f'{g:.0f}' for g, _ in full[name])} GB/s graph; shipped "
                  f"{', '.join(f'{g:.0f}' for g, _ in full.get('shipped', []))})")
    for table, entries in tables.items():
        print(f"{table}: dict[int, tuple] = {entries!r}")
    if p.skipped:
        print(f"skipped (budget): {len(p.skipped)}: {p.skipped}")
    if p.errors:
        print(f"errors: {len(p.errors)}")
        for e in p.errors:
            print(f"  {e['what']}: {e['error'][-1] if e['error'] else ''}")
    fails = [r for r in p.points if r["check"] is False]
    print(f"check failures: {len(fails)} " + "; ".join(f"{r['what']} N={r['N']} {r['dtype']} {r['name']}: "
                                                     f"{(r.get('error') or [''])[-1]}" for r in fails))


if __name__ == "__main__":
    main()
