# ruff: noqa: B023, E402  (lambdas are timed inside the iteration that made them; imports after argv)
"""Probe: do tensor-descriptor (TMA) loads and an atomic-dQ backward make our attention faster on the H200?

The kernels are attention_tma.py's (beside this file: examples/attention.py of branch `split-attn`,
probe-only). Inputs: batch 32 x 16 heads x seq 4096 (the benchmark's shape), head dims 128 and 64,
causal and not. Candidates, in the order they run (the budget may stop the last ones):

1. backward, fp16, head dim 128, non-causal then causal: SDPA's cuDNN and FLASH_ATTENTION backends
   (`sdpa_kernel`, `torch.autograd.grad` on a saved forward), then ours: `ptr` (the pointer kernels
   with today's examples/attention.py settings), `tma` (the same two kernels, dK/dV and dQ, with
   tensor descriptors, same tiles) and `atomic` (one descriptor dK/dV kernel that adds dQ into an
   fp32 buffer with `tl.atomic_add`, then one scale-and-cast; its tiles are ones that spill least when
   compiled for sm_90, as today's dK/dV tiles spill with the atomic dQ at head dim 128);
2. the same at head dim 64;
3. bf16: the SDPA peers and our fastest checked fp16 backward of each (head dim, causal);
4. fp16 backward, other tiles for `tma` and `atomic` (`atomic` on today's tiles among them);
5. forwards (fp16): SDPA's two backends, our pointer forward (today's settings) and descriptor
   forwards (heaviest-first causal order).

Each candidate's output is checked first against the fp32 torch reference (`attention_torch`) on
the first and the last batch (tolerance 2e-2 fp16 / 4e-2 bf16 for o, twice that for dq, dk, dv, as
in benchmarks/cases/attention.py); a failure or an exception is recorded and the probe goes on.
Our backward is timed as the launcher alone (the delta kernel, dK/dV, dQ, allocations), on o and lse
from our pointer forward. Timing: `triton.testing.do_bench` median (warmup 25, rep 100) for all;
forwards also `do_bench_cudagraph(rep=20)` median. Graphs, outputs and the caching allocator are
freed between candidates, and the inputs between cases. TFLOP/s: forward 4*B*H*S^2*D (half when
causal), backward 2.5x that (five matmuls; the two-kernel backward does seven).

The budget (`--budget`, default 200 s, from the start of the script: imports, compilation,
references and timing) is checked before each candidate; once it is spent no new one starts and the
rest are listed as skipped. DIR/attention_tma_probe.json is rewritten after every point.

Usage (repository root): python3 benchmarks/evidence/attention/attention_tma_probe.py --out DIR [--budget 200]
                         python3 benchmarks/evidence/attention/attention_tma_probe.py --out DIR --cpu-smoke
(--cpu-smoke: Triton's interpreter, batch 1 x 2 heads x seq 40, small tiles, every candidate checked
once, one wall-clock call instead of timing, bf16 replaced by fp16, no budget.)
"""

import time

T0 = time.monotonic()

import argparse
import datetime
import gc
import json
import os
import platform
import sys
import traceback
from pathlib import Path

PARSER = argparse.ArgumentParser(description=__doc__.split("\n")[0])
PARSER.add_argument("--out", required=True, type=Path)
PARSER.add_argument("--budget", type=float, default=200.0, help="seconds from the start, compilation included")
PARSER.add_argument("--cpu-smoke", action="store_true", help="interpreter, tiny shapes, no timing")
ARGS = PARSER.parse_args()
SMOKE = ARGS.cpu_smoke
if SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before any @triton.jit
sys.path.insert(0, str(Path(__file__).resolve().parent))

import attention_tma as ex
import torch
import triton

DEV = torch.device("cpu" if SMOKE else "cuda")
B, H, S = (1, 2, 40) if SMOKE else (32, 16, 4096)
DTYPES = {"fp16": torch.float16, "bf16": torch.float16 if SMOKE else torch.bfloat16}  # bf16 is wrong interpreted
TOL = {"fp16": 2e-2, "bf16": 4e-2}  # o; dq, dk, dv take twice
OUT_JSON = ARGS.out / "attention_tma_probe.json"
METHOD = ("inputs torch.randn (seeded) of (batch, heads, seq, head_dim); check before timing: o or dq/dk/dv of "
          "the first and last batch vs attention_torch in fp32 (autograd for the grads), atol=rtol 2e-2 fp16 / "
          "4e-2 bf16 for o, twice for grads; ours: the launchers of attention_tma.py (backward: delta + "
          "dK/dV + dQ kernels, or dK/dV with atomic dQ + scale/cast, on o/lse of our pointer forward); SDPA: "
          "sdpa_kernel(CUDNN_ATTENTION | FLASH_ATTENTION), backward = torch.autograd.grad(out, (q, k, v), do, "
          "retain_graph=True); timing: triton.testing.do_bench(warmup=25, rep=100) median, forwards also "
          "do_bench_cudagraph(rep=20) median; TFLOP/s = 4*B*H*S^2*D (x0.5 causal), backward x2.5; "
          "ratio_to_cudnn = cuDNN ms / this ms (do_bench, same pass and case)")
if SMOKE:
    METHOD = "cpu smoke (Triton interpreter): check only; ms = one wall-clock call, not a timing"


def cfg_of(t, tma, atomic=False):
    bm, bn, w, s = t
    return {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": s, "TMA": tma,
            **({"ATOMIC_DQ": atomic} if atomic is not None else {})}


def bwd_cfg(dkdv, dq, tma, atomic):
    return {"dkdv": cfg_of(dkdv, tma, atomic), "dq": cfg_of(dq, tma, None)}


def fmt(t):
    return f"{t[0]}x{t[1]} w{t[2]} s{t[3]}"


def bwd_core(d, causal):
    """ptr: today's settings (examples/attention.py _config); tma: the same tiles with descriptors; atomic:
    tiles whose dK/dV kernel with atomic dQ compiles for sm_90 without spills (non-causal) or with the
    fewest (causal), where today's dK/dV tiles spill with atomic dQ at head dim 128."""
    if d == 128:
        a, qa, c = (64, 128, 8, 3), (128, 64, 8, 3), (32, 128, 8, 3)
    else:
        a, qa, c = ((64, 128, 4, 2) if causal else (64, 64, 4, 2)), (128, 32, 8, 3), (32, 128, 8, 2)
    return [(f"ptr dkdv {fmt(a)} + dq {fmt(qa)}", bwd_cfg(a, qa, False, False)),
            (f"tma dkdv {fmt(a)} + dq {fmt(qa)}", bwd_cfg(a, qa, True, False)),
            (f"atomic dkdv {fmt(c)}", bwd_cfg(c, qa, True, True))]


def bwd_extra(d, causal):
    """other tiles: descriptors with dK/dV tiles that do not spill, atomic dQ on today's and on 64 x 64 tiles."""
    if d == 128:
        a, b, qa, e = (64, 128, 8, 3), (32, 128, 8, 3), (128, 64, 8, 3), (64, 64, 8, 3)
    else:
        a, b, qa, e = ((64, 128, 4, 2) if causal else (64, 64, 4, 2)), (32, 128, 8, 2), (128, 32, 8, 3), (64, 64, 8, 2)
    return [(f"tma dkdv {fmt(b)} + dq {fmt(qa)}", bwd_cfg(b, qa, True, False)),
            (f"atomic dkdv {fmt(a)}", bwd_cfg(a, qa, True, True)),
            (f"atomic dkdv {fmt(e)}", bwd_cfg(e, qa, True, True))]


def fwd_cands(d):
    base = (128, 128, 8, 3) if d == 128 else (128, 64, 4, 3)
    other = (128, 64, 4, 3) if d == 128 else (128, 128, 8, 3)
    return [(f"ptr {fmt(base)}", {"fwd": cfg_of(base, False, None)}),
            (f"tma {fmt(base)}", {"fwd": cfg_of(base, True, None)}),
            (f"tma {fmt(other)}", {"fwd": cfg_of(other, True, None)})]


def smoke_tiles(cfg):
    """The interpreter: tiles small enough that seq 40 spans several blocks (ragged last one)."""
    small = {"fwd": (32, 16), "dkdv": (16, 32), "dq": (32, 16)}
    return {p: {**c, "BLOCK_M": small[p][0], "BLOCK_N": small[p][1]} for p, c in cfg.items()}


POINTS, SKIPPED = [], []
HEADER = {}


def spent():
    return time.monotonic() - T0


def over_budget():
    return not SMOKE and spent() > ARGS.budget


def tail(err):
    """The error's last lines (a Triton compilation error ends with its source line), and where it was raised."""
    where = traceback.extract_tb(err.__traceback__)[-1:] if err.__traceback__ else []
    lines = "".join(traceback.format_exception_only(err)).strip().splitlines()[-4:]
    return [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in where] + lines


def free():
    gc.collect()
    if not SMOKE:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def write_json():
    """The header keys one per line, then one point per line (the style of run32/gluon_fwd.json)."""
    head = {**HEADER, "spent_s": round(spent(), 1), "skipped": SKIPPED}
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v, default=str)}," for k, v in head.items()]
    lines.append('  "points": [')
    lines += [f"    {json.dumps(p, default=str)}" + ("," if i < len(POINTS) - 1 else "") for i, p in enumerate(POINTS)]
    lines += ["  ]", "}"]
    OUT_JSON.write_text("\n".join(lines) + "\n")


def bench(fn, graph=False):
    if SMOKE:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    from triton.testing import do_bench, do_bench_cudagraph

    if graph:
        return do_bench_cudagraph(fn, rep=20, return_mode="median")
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


class Case:
    """Inputs and the fp32 reference of one (dtype, head_dim, causal) at (B, H, S)."""

    def __init__(self, dtype_name, d, causal, grads):
        self.dtype_name, self.d, self.causal = dtype_name, d, causal
        self.dt = DTYPES[dtype_name]
        self.key = {"dtype": dtype_name, "head_dim": d, "causal": causal, "batch": B, "heads": H, "seq": S}
        gen = torch.Generator(device=DEV).manual_seed(S + d + (1 if causal else 0))
        self.q, self.k, self.v, self.do = (torch.randn(B, H, S, d, device=DEV, dtype=self.dt, generator=gen)
                                           for _ in range(4))
        self.ref = self.reference(grads)
        self.flops = 4.0 * B * H * S * S * d * (0.5 if causal else 1.0)
        self.o_lse = None

    def reference(self, grads):
        outs = {n: [] for n in (("o", "dq", "dk", "dv") if grads else ("o",))}
        per = max(1, 2**28 // (S * S))
        for b in (0, B - 1):
            parts = {n: [] for n in outs}
            for h in range(0, H, per):
                qs, ks, vs = (t[b:b + 1, h:h + per].float().requires_grad_(grads) for t in (self.q, self.k, self.v))
                o = ex.attention_torch(qs, ks, vs, self.causal)
                got = (o.detach(),)
                if grads:
                    got += torch.autograd.grad(o, (qs, ks, vs), self.do[b:b + 1, h:h + per].float())
                for n, t in zip(outs, got, strict=True):
                    parts[n].append(t)
                del o, got, qs, ks, vs
            for n in outs:
                outs[n].append(torch.cat(parts[n], dim=1))
        return {n: torch.cat(ts).to(self.dt) for n, ts in outs.items()}

    def check(self, got, names, tol):
        for name, g in zip(names, got, strict=True):
            g = torch.cat((g[:1], g[-1:]))
            torch.testing.assert_close(g, self.ref[name], rtol=tol, atol=tol, msg=lambda m, n=name: f"{n}: {m}")

    def forward_for_backward(self):
        if self.o_lse is None:
            cfg = {"fwd": cfg_of((128, 128, 8, 3) if self.d == 128 else (128, 64, 4, 3), False, None)}
            self.o_lse = ex.attention_forward(self.q, self.k, self.v, self.causal, None,
                                              smoke_tiles(cfg) if SMOKE else cfg)
        return self.o_lse


def measure(case, pass_, name, cfg, make_run, graph):
    """make_run() -> (run, cleanup); run() -> outputs. Check, then time; record the point."""
    point = {"candidate": name, "pass": pass_, **case.key, "config": cfg}
    POINTS.append(point)
    if over_budget():
        point["skipped"] = "budget spent"
        SKIPPED.append(f"{pass_} {name} @ {case.dtype_name} d{case.d} {'causal' if case.causal else 'full'}")
        return point
    t0 = time.monotonic()
    cleanup = None
    try:
        run, cleanup = make_run()
        got = run()
        if not SMOKE:
            torch.cuda.synchronize()
        point["first_call_s"] = round(time.monotonic() - t0, 2)  # compilation, when new
        names = ["o"] if pass_ == "fwd" else ["dq", "dk", "dv"]
        tol = TOL[case.dtype_name] * (1 if pass_ == "fwd" else 2)
        try:
            case.check(got, names, tol)
            point["check"] = "pass"
        except AssertionError as err:
            point["check"] = "fail"
            point["error"] = str(err).strip().splitlines()[:4]
        del got
        if point["check"] == "pass":
            work = case.flops * (1.0 if pass_ == "fwd" else 2.5)
            point["ms_do_bench"] = bench(run)
            point["tflops_do_bench"] = work / point["ms_do_bench"] / 1e9
            if graph:
                free()
                point["ms_cudagraph"] = bench(run, graph=True)
                point["tflops_cudagraph"] = work / point["ms_cudagraph"] / 1e9
    except Exception as err:  # noqa: BLE001 - a failing candidate is a result too
        point["check"] = point.get("check", "error")
        point["error"] = tail(err)
    finally:
        if cleanup is not None:
            cleanup()
        free()
    point["seconds"] = round(time.monotonic() - t0, 2)
    write_json()
    return point


def sdpa_fn(backend, causal):
    def f(q, k, v):
        if SMOKE:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend)):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return f


PEERS = (("sdpa-cudnn", "CUDNN_ATTENTION"), ("sdpa-flash", "FLASH_ATTENTION"))


def peers(case, pass_):
    for name, backend in PEERS:
        f = sdpa_fn(backend, case.causal)
        if pass_ == "fwd":
            measure(case, "fwd", name, None, lambda: ((lambda: (f(case.q, case.k, case.v),)), None), True)
            continue

        def make():
            leaves = [t.detach().clone().requires_grad_(True) for t in (case.q, case.k, case.v)]
            state = {"out": f(*leaves)}

            def run():
                return torch.autograd.grad(state["out"], leaves, case.do, retain_graph=True)

            return run, state.clear
        measure(case, "bwd", name, None, make, False)


def ours_bwd(case, cands):
    for name, cfg in cands:
        cfg = smoke_tiles(cfg) if SMOKE else cfg

        def make():
            o, lse = case.forward_for_backward()
            return (lambda: ex.attention_backward(case.do, case.q, case.k, case.v, o, lse, case.causal, None, cfg),
                    None)
        measure(case, "bwd", name, cfg, make, False)


def ours_fwd(case, cands):
    for name, cfg in cands:
        cfg = smoke_tiles(cfg) if SMOKE else cfg
        measure(case, "fwd", name, cfg,
                lambda: ((lambda: ex.attention_forward(case.q, case.k, case.v, case.causal, None, cfg)[:1]), None),
                True)


def visit(dtype_name, d, causal, work):
    """Build one case (unless the budget is spent), run work(case), free it."""
    if over_budget():
        SKIPPED.append(f"case {dtype_name} d{d} {'causal' if causal else 'full'}: {work.__name__}")
        return
    case = None
    try:
        case = Case(dtype_name, d, causal, grads=work.__name__ != "forwards")
        work(case)
    except Exception as err:  # noqa: BLE001 - e.g. out of memory building the reference
        POINTS.append({"candidate": "case set-up", "dtype": dtype_name, "head_dim": d, "causal": causal,
                       "error": tail(err)})
        write_json()
    finally:
        del case
        free()


def best_bwd(dtype_name, d, causal):
    ours = [p for p in POINTS if p.get("pass") == "bwd" and p["dtype"] == dtype_name and p["head_dim"] == d
            and p["causal"] == causal and p.get("check") == "pass" and "ms_do_bench" in p
            and not p["candidate"].startswith("sdpa")]
    return min(ours, key=lambda p: p["ms_do_bench"]) if ours else None


CASES = [(128, False), (128, True), (64, False), (64, True)]


def main() -> None:
    ARGS.out.mkdir(parents=True, exist_ok=True)
    gpu = "interpreter (cpu smoke)" if SMOKE else torch.cuda.get_device_name()
    HEADER.update({
        "probe": "benchmarks/evidence/attention/attention_tma_probe.py",
        "kernels": "benchmarks/evidence/attention/attention_tma.py (examples/attention.py of branch split-attn)",
        "gpu": gpu, "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "method": METHOD, "shape": {"batch": B, "heads": H, "seq": S}, "budget_s": ARGS.budget,
    })
    print(f"# {gpu}, torch {torch.__version__}, triton {triton.__version__}, budget {ARGS.budget:.0f} s, "
          f"imports {spent():.1f} s", flush=True)

    def backwards_core(case):
        peers(case, "bwd")
        ours_bwd(case, bwd_core(case.d, case.causal))

    def backwards_bf16(case):
        top = best_bwd("fp16", case.d, case.causal)
        peers(case, "bwd")
        ours_bwd(case, [(top["candidate"], top["config"])] if top else bwd_core(case.d, case.causal)[:1])

    def backwards_extra(case):
        ours_bwd(case, bwd_extra(case.d, case.causal))

    def forwards(case):
        peers(case, "fwd")
        ours_fwd(case, fwd_cands(case.d))

    for d, causal in CASES:  # 1, 2: the core backward sweep, fp16
        visit("fp16", d, causal, backwards_core)
        print(f"# {spent():.0f} s: fp16 d{d} {'causal' if causal else 'full'} backward done", flush=True)
    for d, causal in CASES:  # 3: bf16, the best fp16 backward
        visit("bf16", d, causal, backwards_bf16)
    for d, causal in CASES:  # 4: other tiles
        visit("fp16", d, causal, backwards_extra)
    for d, causal in CASES:  # 5: forwards
        visit("fp16", d, causal, forwards)

    cudnn = {(p["pass"], p["dtype"], p["head_dim"], p["causal"]): p["ms_do_bench"] for p in POINTS
             if p.get("candidate") == "sdpa-cudnn" and "ms_do_bench" in p}
    print(f"\n{'pass':4s} {'dtype':5s} {'D':>4s} {'causal':6s} {'candidate':42s} {'ms':>8s} {'ms graph':>8s} "
          f"{'TFLOP/s':>8s} {'x cudnn':>7s} {'1st s':>6s}  note")
    nan = float("nan")
    for p in POINTS:
        if "pass" not in p:
            print(f"     {p['dtype']:5s} {p['head_dim']:4d} {p['causal']!s:6s} {p['candidate']}: {p['error'][-1]}")
            continue
        ms = p.get("ms_do_bench")
        peer = cudnn.get((p["pass"], p["dtype"], p["head_dim"], p["causal"]))
        if ms and peer:
            p["ratio_to_cudnn"] = peer / ms
        note = p.get("skipped") or (" | ".join(p["error"][-2:]) if "error" in p else "")
        print(f"{p['pass']:4s} {p['dtype']:5s} {p['head_dim']:4d} {p['causal']!s:6s} {p['candidate'][:42]:42s} "
              f"{ms or nan:8.3f} {p.get('ms_cudagraph', nan):8.3f} {p.get('tflops_do_bench', nan):8.1f} "
              f"{p.get('ratio_to_cudnn', nan):7.2f} {p.get('first_call_s', nan):6.1f}  {note[:140]}")
    print("\n# fastest checked backward of ours per case, x cuDNN (do_bench; target 0.9):")
    for dtype_name in ("fp16", "bf16"):
        for d, causal in CASES:
            top = best_bwd(dtype_name, d, causal)
            if top:
                print(f"#   {dtype_name} d{d} {'causal' if causal else 'full':6s} {top['candidate']:42s} "
                      f"{top['ms_do_bench']:8.3f} ms  x cudnn {top.get('ratio_to_cudnn', nan):.2f}")
    print(f"\n# {spent():.0f} s spent of {ARGS.budget:.0f}; {len(SKIPPED)} skipped (budget)")
    for s in SKIPPED:
        print(f"#   skipped: {s}")
    write_json()
    print(f"# wrote {OUT_JSON}")


if __name__ == "__main__":
    main()
