"""Probe: does the Gluon attention forward at head dim 64 want 256-key blocks?

At head dim 64 ``examples/attention_hopper.py`` is furthest from cuDNN, and its warps wait at
barriers (runs 46 and 48): with half the matmul work of head dim 128 per key block, the
ring's handshakes are a larger share of each step. A 256-key block doubles the matmul work
per handshake (S is 64 x 256 fp32 per consumer warpgroup, 128 registers a thread). This probe
times the example's kernel with ``CONFIGS[64]`` set, for the call only, to 128 keys and 2
ring slots (the shipped setting), 256 keys and 2 slots, and 256 keys and 3 slots, beside
SDPA's cuDNN backend, at the head-dim-64 points of the Hopper attention benchmark
(``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads, seq 1024 and 4096).

The example's ``_tile`` counts a causal tile's key blocks as ``(start_m + CTA_M) // BLOCK_N``,
right only while a key block is no wider than the 128-row query tile; the probe swaps in
``_tile`` below (the same but rounding up), which gives the same counts at 128 keys, before
anything is compiled. Every candidate is checked against cuDNN's output before it is timed.
``--compile`` compiles each setting for sm_90 without a GPU and prints its registers, spills
and shared memory.

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (``PASSES`` passes, the
reference cuDNN) and ``METHOD`` below, both written into the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_wide_keys.py
--out DIR [--budget S]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    attention_inputs,
    probe_args,
    probe_header,
    ptxas_usage,
    run_points,
    timing_method,
    write_points,
)

PASSES = 3
METHOD = ("Inputs: seeded torch.randn, batch 32 x 16 heads, head dim 64; tolerance 2e-2 (fp16), "
          "4e-2 (bf16); TFLOP/s counts 4 * B * H * S^2 * D, halved under the causal mask.")
# name -> CONFIGS[64] for the call
SETTINGS = {"128 keys, 2 slots (shipped)": {"BLOCK_N": 128, "STAGES": 2},
            "256 keys, 2 slots": {"BLOCK_N": 256, "STAGES": 2},
            "256 keys, 3 slots": {"BLOCK_N": 256, "STAGES": 3}}


@gluon.jit
def _tile(unit, h, seq_len, CTA_M: gl.constexpr, BLOCK_N: gl.constexpr,
          CAUSAL: gl.constexpr):
    """The example's _tile with a causal tile's key blocks rounded up."""
    n_m = seq_len // CTA_M
    if CAUSAL:
        pairs = (n_m + 1) // 2
        head = unit // pairs
        pid_m = n_m - 1 - unit % pairs
        if h == 1:
            pid_m = unit % pairs
    else:
        head = unit // n_m
        pid_m = unit % n_m
    start_m = pid_m * CTA_M
    row_kv = head * seq_len
    if CAUSAL:
        n_full = start_m // BLOCK_N
        n_blocks = (start_m + CTA_M + BLOCK_N - 1) // BLOCK_N
    else:
        n_full = seq_len // BLOCK_N
        n_blocks = n_full
    return row_kv + start_m, row_kv, start_m, n_full, n_blocks


def with_config(ex, cfg, fn):
    """fn() with the example's CONFIGS[64] set to ``cfg`` for the call only."""
    def run():
        saved = ex.CONFIGS[64]
        ex.CONFIGS[64] = cfg
        try:
            return fn()
        finally:
            ex.CONFIGS[64] = saved
    return run


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["head_dim"] == 64:
            for seq in spec["x_vals"]:
                yield {**spec["args"], "seq": seq}


def compiled_resources(ex) -> dict:
    """name -> registers, spills and shared memory of each setting, compiled for sm_90."""
    out = {}
    for name, cfg in SETTINGS.items():
        for causal in (False, True):
            kernel = with_config(ex, cfg, lambda c=causal: ex.compile_for_sm90(torch.float16, 64, c))()
            out[f"{name}, causal={causal}"] = {**ptxas_usage(kernel.asm["ptx"]),
                                               "shared_bytes": kernel.metadata.shared}
    return out


def main() -> None:
    import attention_hopper as ex

    ex._tile = _tile  # before anything is compiled
    if "--compile" in sys.argv:
        for name, res in compiled_resources(ex).items():
            print(name, res)
        return
    args = probe_args()
    from benchmarks.cases.attention_hopper import BATCH, HEADS
    device, timing = timing_method(args.smoke)
    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        torch.cuda.empty_cache()
        causal, seq = pt["causal"], pt["seq"]
        fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
        for name, cfg in SETTINGS.items():
            fns[name] = with_config(ex, cfg, lambda: ex.attention_hopper(q, k, v, causal))
        flops = 4.0 * BATCH * HEADS * seq * seq * 64 * (0.5 if causal else 1.0)
        return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops

    rows, skipped = run_points(points(), setup, PASSES, timing, args.budget, "sdpa-cudnn")
    header = probe_header("benchmarks/evidence/attention/gluon_wide_keys.py", METHOD,
                          kernels="examples/attention_hopper.py with CONFIGS[64] per candidate",
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped, resources=compiled_resources(ex))
    write_points(args.out / "gluon_wide_keys.json", header, rows)


if __name__ == "__main__":
    main()
