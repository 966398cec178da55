"""Probe for guide chapters 1-2 (launching, tiles and programs): run once on the H200.

Answers, with the repository's own example code:

1. Do the examples' self-checks pass on CUDA (launch_grids, program_ids, launch_overhead)?
2. Ticket kernel: are the tickets a permutation (one atomic per program), and how far from
   pid order are they, for a few grid sizes?
3. Launch overhead per provider and size: host wall-clock us per launch vs do_bench GPU us.
   Decides which providers the page can contrast and whether the warm launcher
   (CompiledKernel handle from JITFunction.warmup) works on triton 3.6.0.
   3b. Where the checking launcher's host time goes: checks, allocation, Triton's launch.
4. What a launch with 65,536 programs on grid axis 1 does (the limit launch_grids checks).

Usage: python benchmarks/probes/launch.py   (needs CUDA; about 30-60 s)
"""

import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import launch_grids  # noqa: E402
import launch_overhead as lo  # noqa: E402
import program_ids  # noqa: E402
import triton  # noqa: E402

assert torch.cuda.is_available(), "this probe needs a GPU"
T0 = time.time()
print(f"# {torch.cuda.get_device_name()} cc={torch.cuda.get_device_capability()} "
      f"torch {torch.__version__} triton {triton.__version__}")

print("\n## 1. self-checks on CUDA")
for mod in (launch_grids, program_ids, lo):
    try:
        mod.self_check()
    except Exception as err:  # keep going: the other answers are still useful
        print(f"FAIL {mod.__name__}: {type(err).__name__}: {str(err)[:300]}")
        traceback.print_exc(limit=3)

print("\n## 2. tickets (5 runs each): permutation? positions != pid, max |ticket - pid|")
print(f"{'P':>8} {'perm':>5} {'out_of_place':>30} {'max_disp':>22}")
for P in (132, 1024, 65536, 1 << 20):
    perms, moved, disp = [], [], []
    for _ in range(5):
        t = program_ids.take_tickets(P)
        pid = torch.arange(P, device=t.device, dtype=t.dtype)
        perms.append(program_ids.is_permutation(t))
        moved.append(int((t != pid).sum()))
        disp.append(int((t - pid).abs().max()))
    print(f"{P:>8} {str(all(perms)):>5} {str(moved):>30} {str(disp):>22}")

print("\n## 3. launch overhead, us per launch: host wall clock (2000 calls) / do_bench GPU median")
print(f"{'provider':<22}" + "".join(f"{'n=' + str(n):>18}" for n in lo.BENCHMARKS[0]["x_vals"]))
for provider in lo.PROVIDERS:
    cells = []
    for n in lo.BENCHMARKS[0]["x_vals"]:
        try:
            case = lo.bench_case("launch_overhead", provider, n)
            torch.testing.assert_close(case["fn"](), case["ref"](), rtol=0, atol=0)
            per = lo.CALLS_PER_FN.get(provider, 1)
            host = lo.host_us_per_call(case["fn"], calls=max(20, 2000 // per), warmup=20) / per
            gpu = lo.gpu_us_per_call(case["fn"]) / per
            cells.append(f"{host:.1f}/{gpu:.1f}")
        except Exception as err:
            cells.append(f"ERR {type(err).__name__}")
            print(f"  {provider} n={n}: {type(err).__name__}: {str(err)[:200]}")
    print(f"{provider:<22}" + "".join(f"{c:>18}" for c in cells))
key_cfg = {str(k): str(v) for k, v in lo.add_scalar_autotuned_kernel.cache.items()}
print(f"autotune picks: {key_cfg}")

print("\n## 3b. where the host time of the checking launcher goes (n = 1024, host us per call)")
x = torch.randn(1024, device="cuda")
out = torch.empty_like(x)
parts = {
    "check_input(x)": lambda: lo.check_input(x),
    "torch.empty_like(x)": lambda: torch.empty_like(x),
    "kernel[grid](...) only": lambda: lo.add_scalar_kernel[(1,)](x, out, 1024, 1.0, BLOCK_SIZE=1024),
    "add_scalar(x, 1.0)": lambda: lo.add_scalar(x, 1.0),
}
for label, fn in parts.items():
    print(f"{label:<26}{lo.host_us_per_call(fn, calls=5000, warmup=50):>8.2f}")

print("\n## 4. grid axis 1 = 65,536 programs")
try:
    x = torch.randn(1, 65536, 4, device="cuda")
    b = torch.randn(1, 4, device="cuda")
    out = torch.empty_like(x)
    launch_grids.add_batch_bias_kernel[(1, 65536, 1)](x, b, out, 4, *x.stride(), *b.stride(), *out.stride(),
                                                       BLOCK_N=4)
    torch.cuda.synchronize()
    print("launched without error; correct:", bool(torch.equal(out, x + b[:, None, :])))
except Exception as err:
    print(f"{type(err).__name__}: {str(err)[:300]}")

print(f"\n# done in {time.time() - T0:.0f} s")
