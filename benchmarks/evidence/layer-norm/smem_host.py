# ruff: noqa: B023  (each lambda is timed inside the iteration that made it)
"""Probe: the host time of one ``layer_norm_bwd`` call at N = 16384, Triton and Gluon stage 1.

In ``smem_stage1.py``'s run on an H100 the Gluon stage 1's ``do_bench`` times sat well above
its CUDA-graph times in most passes, while the Triton stage 1's did not: the sign of a call
whose host work outlasts its kernel. This probe measures that host work directly. For each
candidate (``SMEM_TABLE`` emptied: the Triton stage 1; ``SMEM_TABLE[16384] = (8, 3)``: the
Gluon one), after 10 warm calls: ``CALLS`` calls back to back with no synchronize, the wall
time of the loop divided by ``CALLS`` (the GPU's queue absorbs them, so this is the host's
time to validate, allocate and launch), best of ``REPEATS``; then the same for the two pieces
the Gluon path adds on the host (``_smem_plan``, ``_row_descriptors``). Inputs:
``gluon_stage1.check_inputs`` at M = 4096 rows, fp16 and bf16.

Usage (repository root, the pending patch applied): ``python
benchmarks/evidence/layer-norm/smem_host.py --out DIR`` on an sm_90 GPU.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402

N, M, CALLS, REPEATS = 16384, 4096, 20, 7
SETTINGS = {"triton": None, "smem w8 slots3": (8, 3)}


def host_us(fn) -> float:
    """Best over REPEATS of the loop's wall time per call, the GPU left to drain after each."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        best = min(best, (time.perf_counter() - t0) / CALLS * 1e6)
        torch.cuda.synchronize()
    return round(best, 1)


def main() -> None:
    from gluon_stage1 import check_inputs

    from scripts.probe_common import environment, probe_args, write_points

    args = probe_args()
    import layer_norm as ex

    shipped = dict(ex.SMEM_TABLE)
    rows = []
    for dt_name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        dy, x, w, mean, rstd = check_inputs(torch.device("cuda"), M, dtype, seed=N)
        for name, setting in SETTINGS.items():
            ex.SMEM_TABLE.clear()
            if setting is not None:
                ex.SMEM_TABLE[N] = setting
            row = {"candidate": name, "dtype": dt_name, "N": N, "M": M,
                   "host_us_per_call": host_us(lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd))}
            if setting is not None:
                row["smem_plan_us"] = host_us(lambda: ex._smem_plan(x, dy, w, False))
                row["row_descriptors_us"] = host_us(lambda: ex._row_descriptors(x, dy, w, x))
            rows.append(row)
            print(row, flush=True)
    ex.SMEM_TABLE.clear()
    ex.SMEM_TABLE.update(shipped)
    header = {"probe": "benchmarks/evidence/layer-norm/smem_host.py", **environment(),
              "method": __doc__.split("\n\n")[1].replace("\n", " "),
              "code": "examples/layer_norm.py with benchmarks/evidence/layer-norm/pending/smem_stage1.patch"}
    write_points(args.out / "smem_host.json", header, rows)


if __name__ == "__main__":
    main()
