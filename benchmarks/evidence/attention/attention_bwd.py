# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: which backward kernel makes attention's non-causal head-dim-64 backward slow, and a setting that is not.

The benchmarks (run25) measured the backward at head dim 64 at about 90 TFLOP/s non-causal and
about 200-290 causal, on the same launch settings: a non-causal program does more work of the
same kind, so per FLOP it should be faster, as it is at head dim 128. Here, fp16, batch 32 x
16 heads x seq 4096, head dims 64 and 128, causal and not, each of the backward's two large
kernels is launched alone (the launcher's grid and arguments) and timed in a CUDA graph
(`do_bench_cudagraph` median, 3 interleaved passes, median over passes), with its registers and
spills per thread; for head dim 64 also with other block shapes, warps and stages. Every setting's
output is checked against the launcher's before it is timed. TFLOP/s counts the kernel's own
matmuls: four of `seq x seq x head_dim` for dK/dV (S^T, dV, dP^T, dK), three for dQ (S, dP, dQ),
half of them when causal.
Usage: python benchmarks/probes/attention_bwd.py   (on a CPU-only machine with TRITON_INTERPRET=1:
a dry run of every code path on tiny shapes; the "timings" are wall clock and mean nothing)
"""

import os
import statistics

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import triton  # noqa: E402
from _examples import interleaved_times, load_example, wall_clock_bench  # noqa: E402  (this folder is on sys.path, see _examples.py)

DRY = not torch.cuda.is_available()
DEV = torch.device("cpu" if DRY else "cuda")
B, H, S = (1, 2, 64) if DRY else (32, 16, 4096)
# (BLOCK_M, BLOCK_N, num_warps, num_stages) to try for head dim 64, per kernel
VARIANTS = {
    "dkdv": [(64, 128, 4, 3), (64, 128, 8, 2), (64, 128, 8, 3), (32, 128, 4, 2), (64, 64, 4, 2), (128, 128, 8, 2)],
    "dq": [(128, 32, 8, 2), (128, 64, 8, 3), (128, 64, 4, 3), (128, 32, 4, 3), (64, 64, 4, 2), (64, 32, 4, 3)],
}
if DRY:
    VARIANTS = {"dkdv": [(16, 32, 4, 2)], "dq": [(32, 16, 4, 2)]}


def main() -> None:
    ex = load_example("attention")
    if DRY:
        bench = wall_clock_bench
    else:
        from triton.testing import do_bench_cudagraph

        def bench(fn):
            return do_bench_cudagraph(fn, rep=20)
    print(f"# {'dry run (interpreter)' if DRY else torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {triton.__version__}; fp16, batch {B} x {H} heads x seq {S}; do_bench_cudagraph median, "
          "median of 3 interleaved passes")
    gen = torch.Generator(device=DEV).manual_seed(0)
    for d in (64, 128):
        for causal in (False, True):
            q, k, v, do = (torch.randn(B, H, S, d, device=DEV, dtype=torch.float16, generator=gen) for _ in range(4))
            sm_scale = d**-0.5
            o, lse = ex.attention_forward(q, k, v, causal)
            want_dq, want_dk, want_dv = ex.attention_backward(do, q, k, v, o, lse, causal)
            delta = (o.float() * do.float()).sum(-1)
            strides = (*q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3])
            dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))

            def launch(pass_, bm, bn, warps, stages):
                cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": warps, "num_stages": stages,
                       "PRECISION": "tf32"}
                if pass_ == "dkdv":
                    return ex.attn_bwd_dkdv_kernel[(triton.cdiv(S, bn), H, B)](
                        q, k, v, do, dk, dv, lse, delta, *strides, H, S, S, sm_scale, sm_scale * ex.LOG2E,
                        HEAD_DIM=d, CAUSAL=causal, **cfg)
                return ex.attn_bwd_dq_kernel[(triton.cdiv(S, bm), H, B)](
                    q, k, v, do, dq, lse, delta, *strides, H, S, S, sm_scale, sm_scale * ex.LOG2E,
                    HEAD_DIM=d, CAUSAL=causal, **cfg)

            cases, handles = {}, {}
            for pass_ in ("dkdv", "dq"):
                base = ex._resolve_config(q, pass_, None, causal)
                settings = [(base["BLOCK_M"], base["BLOCK_N"], base["num_warps"], base["num_stages"])]
                if d == 64:
                    settings += [s for s in VARIANTS[pass_] if s != settings[0]]
                for s in settings:
                    name = f"{pass_} {s[0]}x{s[1]} w{s[2]} s{s[3]}" + (" (launcher)" if s == settings[0] else "")
                    try:
                        handles[name] = launch(pass_, *s)
                        got, want = ((dk, dv), (want_dk, want_dv)) if pass_ == "dkdv" else ((dq,), (want_dq,))
                        for g, w in zip(got, want, strict=True):
                            torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)
                    except Exception as err:  # noqa: BLE001 - a setting that fails is a result too
                        print(f"{name}: FAILED {type(err).__name__}: {str(err)[:200]}")
                        continue
                    cases[name] = (lambda pass_=pass_, s=s: launch(pass_, *s), 4 if pass_ == "dkdv" else 3)
            times = interleaved_times({name: fn for name, (fn, _) in cases.items()}, timer=bench)
            print(f"\n## head_dim {d}, {'causal' if causal else 'not causal'}")
            print(f"{'kernel and setting':34s} {'ms':>8s} {'TFLOP/s':>8s} {'regs':>5s} {'spills':>7s} {'spread':>7s}")
            for name, ts in times.items():
                ms = statistics.median(ts)
                flops = cases[name][1] * 2.0 * B * H * S * S * d * (0.5 if causal else 1.0)
                h = handles[name]
                print(f"{name:34s} {ms:8.3f} {flops / ms / 1e9:8.1f} {getattr(h, 'n_regs', '?')!s:>5s} "
                      f"{getattr(h, 'n_spills', '?')!s:>7s} {max(ts) / min(ts) - 1:7.1%}")


if __name__ == "__main__":
    main()
