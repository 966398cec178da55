# ruff: noqa: B023  (each lambda is timed inside the iteration that made it)
"""Probe for the attention page: which launch settings `_config` should pick on the H200.

Sweeps the forward and both backward kernels of examples/attention.py over tile shapes,
warps and stages, fp16, 16 heads x batch 4 x seq 4096 (the middle of the page's sweep),
head_dim 64 and 128, causal and not; CUDA-graph replay time (do_bench_cudagraph, median)
and do_bench beside it, every config checked against the default's output first. Then
the default backend SDPA picks for these inputs, and each forced backend's time.

Usage: python benchmarks/probes/attention.py   (needs CUDA; about 90 s)
"""

import itertools
import time
import traceback

import torch
from _examples import load_example  # this folder is on sys.path (see _examples.py)

T0 = time.time()
BUDGET_S = 170


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("attention")
    from triton.testing import do_bench, do_bench_cudagraph

    print(torch.cuda.get_device_name(), torch.__version__, __import__("triton").__version__)
    batch, heads, seq = 4, 16, 4096
    for d, causal in ((128, False), (128, True), (64, True)):
        q, k, v, do = (torch.randn(batch, heads, seq, d, device="cuda", dtype=torch.float16) for _ in range(4))
        flops = 4.0 * batch * heads * seq * seq * d * (0.5 if causal else 1.0)
        o_ref, lse_ref = ex.attention_forward(q, k, v, causal)
        g_ref = ex.attention_backward(do, q, k, v, o_ref, lse_ref, causal)
        for pass_, grid in (
            ("fwd", dict(BLOCK_M=[128], BLOCK_N=[64, 128], num_warps=[4, 8], num_stages=[2, 3])),
            ("dkdv", dict(BLOCK_M=[32, 64], BLOCK_N=[128], num_warps=[4, 8], num_stages=[2, 3])),
            ("dq", dict(BLOCK_M=[128], BLOCK_N=[32, 64], num_warps=[4, 8], num_stages=[2, 3])),
        ):
            rows = []
            for values in itertools.product(*grid.values()):
                if time.time() - T0 > BUDGET_S:
                    print(f"  budget spent: {pass_} d={d} causal={causal} stopped")
                    break
                cfg = dict(zip(grid, values, strict=True))
                config = {pass_: cfg}
                try:
                    if pass_ == "fwd":
                        fn = lambda config=config: ex.attention_forward(q, k, v, causal, config=config)  # noqa: E731
                        o, lse = fn()
                        torch.testing.assert_close(o, o_ref, rtol=2e-2, atol=2e-2)
                        work = flops
                    else:
                        fn = lambda config=config: ex.attention_backward(do, q, k, v, o_ref, lse_ref, causal,  # noqa: E731
                                                                         config=config)
                        for a, b in zip(fn(), g_ref, strict=True):
                            torch.testing.assert_close(a, b, rtol=3e-2, atol=3e-2)
                        work = 2.5 * flops
                    g = do_bench_cudagraph(fn, rep=20, return_mode="median")
                    b = do_bench(fn, warmup=5, rep=20, return_mode="median")
                    rows.append((work / g / 1e9, work / b / 1e9, cfg))
                except Exception as err:  # noqa: BLE001  (a config that does not compile or fit)
                    rows.append((0.0, 0.0, {**cfg, "error": f"{type(err).__name__}: {str(err)[:80]}"}))
            rows.sort(key=lambda r: -r[0])
            default = ex._config(d, torch.float16, q.device, pass_)
            print(f"== {pass_} d={d} causal={causal} (default {default}); TFLOP/s graph / do_bench"
                  + (" (backward: both backward kernels and the preprocess)" if pass_ != "fwd" else ""))
            for g, b, cfg in rows[:6] + [r for r in rows if "error" in r[2]][:3]:
                print(f"  {g:7.1f} {b:7.1f}  {cfg}")
        for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
            try:
                f = lambda name=name: ex._sdpa(q, k, v, causal, name)  # noqa: E731
                f()
                print(f"  sdpa {name}: {flops / do_bench_cudagraph(f, rep=20) / 1e9:.1f} TFLOP/s (graph)")
            except Exception as err:  # noqa: BLE001
                print(f"  sdpa {name}: {type(err).__name__}: {str(err)[:100]}")
        print(f"  sdpa default backend: {ex.sdpa_backend(q, k, v, causal)}  ({time.time() - T0:.0f} s)")


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
