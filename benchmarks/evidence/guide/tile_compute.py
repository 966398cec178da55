"""H200 probe for the "Compute inside a tile" chapter (examples/tile_compute.py).

It sweeps the batched fp32 matmul's tile shape, `num_warps` and pipelining depth (the
constexpr NUM_STAGES of its `tl.range` K loop, which the launch's `num_stages` follows)
for each input precision, at S = 64 ... 512 (2**31 / S**3 matrices of S x S, as the
benchmark), and times each with CUDA-graph replay (kernel time, no host). It prints one
line per config and the best config per (precision, S), and writes the table to
$OUT/probe_tile_compute.json when OUT is set.

Run: python benchmarks/probes/tile_compute.py   (needs CUDA; about 90 s)

First run (2026-12-01, H200, 87 s; output in benchmarks/logs/run12/probe_tile_compute.json):
plain fp32 ("ieee") sits at 33-41 TFLOP/s whatever the config (64 x 64 tiles, 4 warps and 3
stages best at S = 64, 2-10% behind the best config at larger S); tf32 is best with 128 x 64
tiles (58.8 TFLOP/s at S = 128, 68.6 at 256, 78.8 at 512). With 128 x 64 tiles and 4 warps, one
stage beat two and three while the K loop had 4 steps or fewer (S <= 128: 58.8 against 53.4 and
46.6 at S = 128), and two stages were best from S = 256 (68.6 and 77.5 against 65.9 and 67.2
for one). `bmm_config` encodes that rule.
"""

import json
import os
import sys
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench_cudagraph

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import tile_compute as ex  # noqa: E402

TILES = [(64, 64, 32), (64, 128, 32), (128, 64, 32), (128, 128, 32), (128, 128, 16), (64, 64, 16)]
WARPS = [4, 8]
STAGES = [1, 2, 3]
SIZES = [64, 128, 256, 512]


def run(a, b, c, tile, warps, stages, precision):
    bm, bn, bk = tile
    batch, M, K = a.shape
    N = b.shape[2]
    grid = (batch, triton.cdiv(M, bm), triton.cdiv(N, bn))
    ex.bmm_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=bm, BLOCK_N=bn,
                        BLOCK_K=bk, PRECISION=precision, NUM_STAGES=stages, num_warps=warps, num_stages=stages)


def main() -> None:
    t0 = time.time()
    rows = []
    for s in SIZES:
        batch = 2**31 // s**3
        a = torch.randn(batch, s, s, device="cuda")
        b = torch.randn(batch, s, s, device="cuda") / s**0.5
        c = torch.empty(batch, s, s, device="cuda")
        for precision in ("tf32", "ieee"):
            for tile in TILES:
                if max(tile[:2]) > s:
                    continue
                for warps in WARPS:
                    for stages in STAGES:
                        try:
                            args = (a, b, c, tile, warps, stages, precision)
                            ms = do_bench_cudagraph(lambda args=args: run(*args), rep=20)
                        except Exception as err:  # out of shared memory, etc.
                            print(f"S={s} {precision} {tile} w{warps} s{stages}: {type(err).__name__}", flush=True)
                            continue
                        tflops = 2 * batch * s**3 / ms / 1e9
                        rows.append({"S": s, "precision": precision, "tile": list(tile), "warps": warps,
                                     "stages": stages, "ms": ms, "tflops": round(tflops, 2)})
                        print(f"S={s} {precision} {tile} w{warps} s{stages}: {tflops:.1f} TFLOP/s", flush=True)
    print("best per (precision, S):")
    for precision in ("tf32", "ieee"):
        for s in SIZES:
            mine = [r for r in rows if r["S"] == s and r["precision"] == precision]
            if mine:
                best = max(mine, key=lambda r: r["tflops"])
                print(f"  {precision} S={s}: {best['tflops']} TFLOP/s {best['tile']} "
                      f"w{best['warps']} s{best['stages']}")
    if os.environ.get("OUT"):
        out = Path(os.environ["OUT"]) / "probe_tile_compute.json"
        out.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                                   "triton": triton.__version__, "rows": rows}, indent=1))
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
