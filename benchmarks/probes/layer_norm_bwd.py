# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: where layer norm's backward loses to the copy ceiling, N = 1024 to 16384 (M x N = 2^26, fp16).

For each N it times, in a CUDA graph (`triton.testing.do_bench_cudagraph` median, 3 interleaved
passes, median over passes; the kernels' own time, as the layer-norm page quotes the backward):

* `launcher`: `layer_norm_bwd` as shipped (stage 1 + stage 2);
* `stage 1` and `stage 2` alone, with the launcher's grid and warps;
* `same-traffic copy`: a Triton kernel with stage 1's grid-stride loop over rows that reads x and dy
  and writes dx (x + dy), no reductions and no partial sums: the floor of stage 1's tiling;
* stage 1 with other `num_warps` and other group counts (programs per SM), the two settings the
  launcher picks by rule and never tuned on a GPU.

GB/s counts the bytes each must move (`counted` in the table); "% of ceiling" is against a 2 GiB
device copy timed with `do_bench` (L2 flushed), as the benchmarks time their ceiling. (run25's log,
benchmarks/logs/run25/probe_layer_norm_bwd.txt, timed that copy with `do_bench_cudagraph` and got
2776 GB/s, below this probe's own same-traffic copy: that column of the log is not a ceiling.)
Registers and spills per thread come from the compiled kernel (`n_regs`, `n_spills`), to see whether
stage 1 spills at 16384 as the launcher's notes expect.
Usage: python benchmarks/probes/layer_norm_bwd.py   (needs CUDA; about a minute)
"""

from __future__ import annotations

import statistics

import torch
import triton
import triton.language as tl
from _examples import copy_ceiling, interleaved_times, load_example, sm_count  # this folder is on sys.path
from triton.testing import do_bench_cudagraph


@triton.jit
def same_traffic_kernel(dy_ptr, x_ptr, dx_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    for i in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        row = tl.cast(i, tl.int64) * n_cols
        x = tl.load(x_ptr + row + cols, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row + cols, mask=mask, other=0.0)
        tl.store(dx_ptr + row + cols, x + dy, mask=mask)


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("layer_norm")
    dev = torch.device("cuda")
    sms = sm_count()
    ceiling = copy_ceiling()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          "do_bench_cudagraph median (rep 20 ms), median of 3 interleaved passes; fp16, M x N = 2^26")
    print(f"# copy ceiling (2 GiB device copy, do_bench median of 3): {ceiling:.0f} GB/s")
    for n in (1024, 2048, 4096, 8192, 16384):
        m = 2**26 // n
        x = torch.randn(m, n, device=dev, dtype=torch.float16)
        dy = torch.randn_like(x)
        w = torch.randn(n, device=dev, dtype=torch.float16)
        b = torch.randn(n, device=dev, dtype=torch.float16)
        _, mean, rstd = ex.layer_norm_fwd(x, w, b)
        block = triton.next_power_of_2(n)
        warps = ex._bwd_num_warps(block)  # stage 1's own rule
        groups = int(ex._num_groups(m, block, dev))
        dx = torch.empty_like(x)
        e = x.element_size()
        io = 3 * m * n * e + 8 * m  # x, dy read; dx written; mean and rstd read

        most = min(m, 8 * sms)  # the largest grid tried below
        dw_all = torch.empty((most, n), device=dev, dtype=torch.float32)
        db_all = torch.empty((most, n), device=dev, dtype=torch.float32)
        dw_part, db_part = dw_all[:groups], db_all[:groups]

        def stage1(g=groups, nw=warps):
            return ex.layer_norm_bwd_kernel[(g,)](dy, x, w, mean, rstd, dx, dw_all[:g], db_all[:g], m, n, n, n, n,
                                                  BLOCK_N=block, num_warps=nw)

        k1 = stage1()
        dw, db = torch.empty_like(w), torch.empty_like(w)

        def stage2():
            return ex.layer_norm_dwdb_kernel[(triton.cdiv(n, ex.REDUCE_BLOCK_COLS),)](
                dw_part, db_part, dw, db, groups, n, BLOCK_G=ex.REDUCE_BLOCK_G, BLOCK_COLS=ex.REDUCE_BLOCK_COLS)

        k2 = stage2()
        # the launcher's result, checked against torch before anything is timed
        got = ex.layer_norm_bwd(dy, x, w, mean, rstd)
        want = ex.layer_norm_grads_torch(dy, x, w, b)
        for g_, r_ in zip(got, want, strict=True):
            torch.testing.assert_close(g_.float(), r_.float(), rtol=2e-2, atol=2e-1)
        stage1()
        torch.testing.assert_close(dx, got[0], rtol=0, atol=0)  # stage 1 as called here writes the same dx
        parts = 2 * groups * n * 4
        cases = {
            "launcher (stage 1 + 2)": (lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd), io + 2 * parts + 4 * n * e),
            f"stage 1 ({groups} programs, {warps} warps)": (lambda: stage1(), io + parts),
            "stage 2": (stage2, parts + 2 * n * e),
            f"same-traffic copy ({groups} programs, {warps} warps)": (
                lambda: same_traffic_kernel[(groups,)](dy, x, dx, m, n, BLOCK_N=block, num_warps=warps),
                3 * m * n * e),
        }
        spills = {f"stage 1, {warps} warps": k1}
        for nw in sorted({4, 8, 16, 32} - {warps}):
            if nw * 32 > block:  # fewer lanes than threads: not a setting the rule would reach
                continue
            cases[f"stage 1, {nw} warps"] = (lambda nw=nw: stage1(nw=nw), io + parts)
            spills[f"stage 1, {nw} warps"] = stage1(nw=nw)
        for per_sm in (1, 2, 4, 8):
            g = min(m, sms * per_sm)
            if g != groups:
                cases[f"stage 1, {g} programs ({per_sm}/SM)"] = (lambda g=g: stage1(g=g), io + 2 * g * n * 4)
        times = interleaved_times({name: fn for name, (fn, _) in cases.items()}, timer=do_bench_cudagraph, rep=20)
        print(f"\n## N = {n}, M = {m}: stage 1 grid {groups} programs ({groups / sms:.0f}/SM), {warps} warps; "
              f"partial rows {parts / io:.1%} of stage 1's other bytes")
        print(f"{'case':46s} {'ms':>8s} {'counted GB':>11s} {'GB/s':>8s} {'% of ceiling':>13s} {'spread':>7s}")
        for name, ts in times.items():
            ms = statistics.median(ts)
            moved = cases[name][1]
            gbps = moved / ms / 1e6
            print(f"{name:46s} {ms:8.4f} {moved / 1e9:11.3f} {gbps:8.0f} {100 * gbps / ceiling:12.1f}% "
                  f"{max(ts) / min(ts) - 1:7.1%}")
        for name, k in {**spills, "stage 2": k2}.items():
            print(f"registers {name}: {getattr(k, 'n_regs', '?')} per thread, spills {getattr(k, 'n_spills', '?')}")


if __name__ == "__main__":
    main()
