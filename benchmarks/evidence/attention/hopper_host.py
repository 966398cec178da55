"""Probe: where the host time of examples/attention_hopper.py's calls goes.

The Hopper attention bench (run 80, H100) put the host time of one forward call at 68-83 us
(cuDNN through SDPA: 32-44 us) and of one backward through autograd at about 269 us (cuDNN:
107 us). This probe times the host side of each call and of its parts, the way
``scripts/bench.py``'s ``host_call`` rows do (``time_host_call``: the queue drained, calls
issued back to back, perf_counter around each call, median), at one point of the bench (fp16,
head dim 64, 1024 tokens, batch 32 x 16 heads, not causal):

* whole calls: ``attention_hopper_forward``, ``attention_hopper_backward``, the backward
  through autograd (``torch.autograd.grad`` on a recorded forward), and the same for
  SDPA-cuDNN;
* parts: the input checks, building the TMA descriptors, one kernel launch with descriptors
  built beforehand, the three backward launches, ``torch.empty`` of the outputs;
* the floor: the launch of a kernel that does nothing, with one pointer argument, in Triton
  and in Gluon, and autograd around a Python ``torch.autograd.Function`` that does nothing
  (its forward a copy, its backward the gradient it is given).

The parts timed alone add up to less than the whole call, so the parts are also timed inside
the calls (``in_context``): the example's checks, descriptor builders, ``_tma_operand``,
``torch.empty`` and kernel launches are wrapped with a clock for 200 calls, and each row gives
the mean microseconds per call spent in each, and in the rest of the call.

Then ``cProfile`` over 200 forward calls and 200 backward calls: the functions that take the
host time, by their own time (``tottime``), in ``hopper_host_profile.txt``.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/hopper_host.py
--out DIR [--budget S]``.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402
import triton  # noqa: E402
from triton.experimental import gluon  # noqa: E402

PASSES = 3
PROFILE_CALLS = 200
METHOD = ("Host time per call: scripts/bench.py's time_host_call (queue drained, calls issued "
          "back to back, perf_counter around each call alone, median with the 20th and 80th "
          "percentiles, as many calls as about 40 ms of GPU work, 5 to 200); three passes, "
          "interleaved, and the median of the passes' medians. Point: fp16, head dim 64, 1024 "
          "tokens, batch 32 x 16 heads, not causal; seeded torch.randn inputs. cProfile: "
          f"{PROFILE_CALLS} calls each, functions by their own time.")


@triton.jit
def _noop_triton(p):
    pass


class _Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


@gluon.jit
def _noop_gluon(p):
    pass


def candidates(device):
    import attention_hopper as ex

    from benchmarks.cases.attention import BATCH, HEADS, SDPA_BACKENDS, _sdpa

    q, k, v = (torch.randn(BATCH, HEADS, 1024, 64, device=device, dtype=torch.float16,
                           generator=torch.Generator(device=device).manual_seed(i))
               for i in range(3))
    do = torch.randn_like(q)
    leaves = tuple(t.clone().requires_grad_(True) for t in (q, k, v))
    o, lse = ex.attention_hopper_forward(q, k, v)
    out_gluon = ex.attention_hopper(*leaves)
    out_cudnn = _sdpa(*leaves, False, SDPA_BACKENDS["sdpa-cudnn"])
    B, H, S, D = q.shape
    cfg = ex.CONFIGS[D]
    descs = ex._descriptors(q, k, v, o, cfg["BLOCK_N"])
    n_units = ex._units(B * H, S, False)
    grid = (min(n_units, ex._sm_count(q.device)),)
    scale = D ** -0.5
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    delta = torch.empty_like(lse)
    dkdv_descs, dq_descs = ex._bwd_descriptors(q, k, v, do, dq, dk, dv)
    bcfg = ex.BWD_CONFIGS[D]

    def launch_forward():
        ex.attention_hopper_kernel[grid](
            *descs, lse, S, n_units, scale * ex.LOG2E, HEAD_D=D, CAUSAL=False, **cfg,
            num_warps=4, maxnreg=ex.MAXNREG)

    def launch_backward():
        ex.attention_hopper_delta_kernel[(B * H * S // ex.DELTA_ROWS,)](
            o, do, delta, HEAD_D=D, ROWS=ex.DELTA_ROWS, num_warps=4)
        scales = (S, scale * ex.LOG2E, scale)
        ex.attention_hopper_dkdv_kernel[(B * H * (S // ex.BLOCK_M),)](
            *dkdv_descs, lse, delta, *scales, HEAD_D=D, STAGES=bcfg["dkdv"][1],
            CAUSAL=False, num_warps=4, maxnreg=ex.MAXNREG)
        ex.attention_hopper_dq_kernel[(B * H * (S // ex.BLOCK_M),)](
            *dq_descs, lse, delta, *scales, HEAD_D=D, STAGES=bcfg["dq"][1],
            CAUSAL=False, num_warps=4, maxnreg=ex.MAXNREG)

    leaf = q.clone().requires_grad_(True)
    out_identity = _Identity.apply(leaf)
    fns = {
        "autograd around a Python Function that does nothing": lambda: torch.autograd.grad(
            out_identity, leaf, do, retain_graph=True),
        "sdpa-cudnn forward": lambda: _sdpa(q, k, v, False, SDPA_BACKENDS["sdpa-cudnn"]),
        "gluon forward": lambda: ex.attention_hopper_forward(q, k, v),
        "gluon forward: checks": lambda: ex._check_inputs(q, k, v, False, None),
        "gluon forward: 4 descriptors": lambda: ex._descriptors(q, k, v, o, cfg["BLOCK_N"]),
        "gluon forward: launch (descriptors built)": launch_forward,
        "gluon forward: torch.empty x 2": lambda: (torch.empty_like(q),
                                                   torch.empty_like(lse)),
        "sdpa-cudnn backward (autograd)": lambda: torch.autograd.grad(
            out_cudnn, leaves, do, retain_graph=True),
        "gluon backward (autograd)": lambda: torch.autograd.grad(
            out_gluon, leaves, do, retain_graph=True),
        "gluon backward": lambda: ex.attention_hopper_backward(do, q, k, v, o, lse),
        "gluon backward: checks": lambda: ex._check_inputs(q, k, v, False, None,
                                                           saved=(do, o, lse)),
        "gluon backward: 11 descriptors": lambda: ex._bwd_descriptors(q, k, v, do, dq, dk, dv),
        "gluon backward: 3 launches (descriptors built)": launch_backward,
        "noop launch, triton": lambda: _noop_triton[(1,)](q),
        "noop launch, gluon": lambda: _noop_gluon[(1,)](q, num_warps=4),
    }
    profiled = {"gluon forward": fns["gluon forward"], "gluon backward": fns["gluon backward"]}
    staged = {name: fns[name] for name in ("gluon forward", "gluon backward",
                                           "gluon backward (autograd)")}
    return fns, profiled, staged


class _Clock:
    """Wraps the example's helpers and kernels: microseconds spent in each, summed."""

    HELPERS = ("_check_inputs", "_descriptors", "_bwd_descriptors", "_tma_operand")
    KERNELS = ("attention_hopper_kernel", "attention_hopper_delta_kernel",
               "attention_hopper_dkdv_kernel", "attention_hopper_dq_kernel")

    def __init__(self, ex):
        import time

        self.ex, self.spent, self.saved, self.now = ex, {}, {}, time.perf_counter

    def _timed(self, name, fn):
        def run(*args, **kwargs):
            t0 = self.now()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + self.now() - t0
        return run

    def __enter__(self):
        clock, ex = self, self.ex
        for name in self.HELPERS + self.KERNELS:
            self.saved[name] = getattr(ex, name)
        for name in self.HELPERS:
            setattr(ex, name, self._timed(name, self.saved[name]))

        class Launch:
            def __init__(self, name):
                self.name = name

            def __getitem__(self, grid):
                return clock._timed(f"{self.name} launch", clock.saved[self.name][grid])

        for name in self.KERNELS:
            setattr(ex, name, Launch(name))
        self.saved["empty"] = torch.empty
        torch.empty = self._timed("torch.empty", torch.empty)
        return self

    def __exit__(self, *exc):
        torch.empty = self.saved.pop("empty")
        for name, fn in self.saved.items():
            setattr(self.ex, name, fn)


def in_context(staged: dict) -> list[dict]:
    """Per staged call: the mean us per call in each wrapped part and in the rest."""
    import time

    import attention_hopper as ex

    rows = []
    for name, fn in staged.items():
        with _Clock(ex) as clock:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(PROFILE_CALLS):
                fn()
            whole = time.perf_counter() - t0
            torch.cuda.synchronize()
        per_call = {part: round(t / PROFILE_CALLS * 1e6, 2) for part, t in clock.spent.items()}
        rest = round((whole - sum(clock.spent.values())) / PROFILE_CALLS * 1e6, 2)
        rows.append({"call": name, "in_context": True, "whole_us": round(
            whole / PROFILE_CALLS * 1e6, 2), "parts_us": per_call, "rest_us": rest})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    from triton.testing import do_bench

    from scripts.bench import time_host_call
    from scripts.probe_common import probe_args, probe_header, write_points

    args = probe_args()
    if args.smoke:
        raise SystemExit("hopper_host.py needs an sm_90 GPU: Gluon has no interpreter")
    fns, profiled, staged = candidates(torch.device("cuda"))
    gpu_ms = {}
    for name, fn in fns.items():
        fn()  # compiled and warm before anything is timed
        gpu_ms[name] = do_bench(fn, warmup=5, rep=20, return_mode="median")
    samples = {name: [] for name in fns}
    for _ in range(PASSES):
        for name, fn in fns.items():
            samples[name].append(time_host_call(fn, gpu_ms[name]))
    rows = []
    for name, runs in samples.items():
        p50, p20, p80 = (sorted(r[i] for r in runs)[len(runs) // 2] * 1e3 for i in range(3))
        rows.append({"call": name, "host_us": round(p50, 2), "host_us_p20": round(p20, 2),
                     "host_us_p80": round(p80, 2), "gpu_ms": round(gpu_ms[name], 4)})
        print(rows[-1], flush=True)
    rows += in_context(staged)
    report = io.StringIO()
    for name, fn in profiled.items():
        prof = cProfile.Profile()
        torch.cuda.synchronize()
        prof.enable()
        for _ in range(PROFILE_CALLS):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        report.write(f"== {name}: {PROFILE_CALLS} calls, by own time (tottime)\n")
        pstats.Stats(prof, stream=report).sort_stats("tottime").print_stats(30)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hopper_host_profile.txt").write_text(report.getvalue())
    print(report.getvalue()[:6000], flush=True)
    header = probe_header("benchmarks/evidence/attention/hopper_host.py", METHOD, passes=PASSES)
    write_points(args.out / "hopper_host.json", header, rows)


if __name__ == "__main__":
    main()
