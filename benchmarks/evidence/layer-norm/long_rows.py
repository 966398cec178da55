"""Layer norm's backward at N = 16384: the example's four-piece stage 1 against a candidate
whose pass 1 reduces each piece as it arrives, on the launcher's setting and on others.

`example` is examples/layer_norm.py's `layer_norm_bwd_long_kernel` (pass 1 holds all four
pieces of x_hat and g = dy * w until one sum over them: it spills, sm90_registers.py);
`sums each piece` is the same kernel with each piece reduced to its share of c1 and c2 at
once (`sums_each_piece_kernel` below: one piece live beside the accumulators, no spills in
fp16 with 16 warps). Both run through the example's own launcher (`layer_norm_bwd`, stage 2
included), the kernel swapped in the module and the setting put in `BWD_TABLE`; every
variant's dx, dW and dB are checked against the launcher's own first. Shape M x N =
4096 x 16384 (2^26 elements), fp16 and bf16. Timings: CUDA-graph median
(`do_bench_cudagraph`, rep 100 ms) and `do_bench` median (rep 100 ms); GB/s by the bytes
the backward must move (read x, dy; write dx: 3 x 2 bytes an element) against a
device-to-device copy of 2^27 fp32 values timed in the same run (the benchmarks' copy
ceiling, 2 x 4 bytes an element).

Run 39 (`run39/long_rows.json`, the H200) ran this comparison at commit 1b73383, while the
example held the candidate as its own kernel: in that file `example` is
`sums_each_piece_kernel` below (on every setting listed there) and `before` is the example's
kernel as it is again now. The candidate measured slower, so the example kept its kernel.

Usage (repository root, a CUDA GPU): python benchmarks/evidence/layer-norm/long_rows.py --out DIR [--budget S]
Writes DIR/long_rows.json (one point per line).
"""

import argparse
import datetime
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))

import layer_norm as ex  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

M, N = 4096, 16384


@triton.jit
def _bwd_sums(x_row, dy_row, w_ptr, cols, n_cols, mean, rstd):
    """Pass 1 on one piece: its shares of sum(g * x_hat) and sum(g)."""
    x_hat, g, _ = ex._bwd_piece(x_row, dy_row, w_ptr, cols, n_cols, mean, rstd)
    return tl.sum(g * x_hat, axis=0), tl.sum(g, axis=0)


@triton.jit
def sums_each_piece_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    CHUNK: tl.constexpr, NUM_STAGES: tl.constexpr,
):
    """The candidate: the example's four-piece kernel with pass 1 reducing each piece as it arrives."""
    group = tl.program_id(0)
    c = tl.arange(0, CHUNK)
    dw0 = tl.zeros([CHUNK], dtype=tl.float32)
    dw1, dw2, dw3 = dw0, dw0, dw0
    db0, db1, db2, db3 = dw0, dw0, dw0, dw0
    for i in tl.range(group, n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        row = tl.cast(i, tl.int64)
        x_row = x_ptr + row * stride_xm
        dy_row = dy_ptr + row * stride_dym
        dx_row = dx_ptr + row * stride_dxm
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        s1, s2 = _bwd_sums(x_row, dy_row, w_ptr, c, n_cols, mean, rstd)
        t1, t2 = _bwd_sums(x_row, dy_row, w_ptr, c + CHUNK, n_cols, mean, rstd)
        s1, s2 = s1 + t1, s2 + t2
        t1, t2 = _bwd_sums(x_row, dy_row, w_ptr, c + 2 * CHUNK, n_cols, mean, rstd)
        s1, s2 = s1 + t1, s2 + t2
        t1, t2 = _bwd_sums(x_row, dy_row, w_ptr, c + 3 * CHUNK, n_cols, mean, rstd)
        c1, c2 = (s1 + t1) / n_cols, (s2 + t2) / n_cols
        dw0, db0 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c, n_cols, mean, rstd, c1, c2, dw0, db0)
        dw1, db1 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c + CHUNK, n_cols, mean, rstd, c1, c2, dw1, db1)
        dw2, db2 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c + 2 * CHUNK, n_cols, mean, rstd, c1, c2,
                                    dw2, db2)
        dw3, db3 = ex._bwd_piece_dx(x_row, dy_row, w_ptr, dx_row, c + 3 * CHUNK, n_cols, mean, rstd, c1, c2,
                                    dw3, db3)
    part = group.to(tl.int64) * n_cols + c
    tl.store(dw_part_ptr + part, dw0, mask=c < n_cols)
    tl.store(db_part_ptr + part, db0, mask=c < n_cols)
    tl.store(dw_part_ptr + part + CHUNK, dw1, mask=c + CHUNK < n_cols)
    tl.store(db_part_ptr + part + CHUNK, db1, mask=c + CHUNK < n_cols)
    tl.store(dw_part_ptr + part + 2 * CHUNK, dw2, mask=c + 2 * CHUNK < n_cols)
    tl.store(db_part_ptr + part + 2 * CHUNK, db2, mask=c + 2 * CHUNK < n_cols)
    tl.store(dw_part_ptr + part + 3 * CHUNK, dw3, mask=c + 3 * CHUNK < n_cols)
    tl.store(db_part_ptr + part + 3 * CHUNK, db3, mask=c + 3 * CHUNK < n_cols)


SHIPPED = ex.BWD_TABLE[16384]
# (name, kernel, (kind, warps, programs per SM, stages)); kernel None: the example's own
VARIANTS = [("example", None, SHIPPED), ("sums each piece", sums_each_piece_kernel, SHIPPED),
            ("sums each piece", sums_each_piece_kernel, ("long", 16, 1, 2)),
            ("sums each piece", sums_each_piece_kernel, ("long", 32, 1, 1)),
            ("sums each piece", sums_each_piece_kernel, ("long", 8, 1, 2)),
            ("example", None, ("row", 8, 1, 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--budget", type=float, default=120.0, help="seconds; later variants are skipped")
    args = parser.parse_args()
    t0 = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    src = torch.empty(2**27, device=dev, dtype=torch.float32).normal_()
    dst = torch.empty_like(src)
    copy_ms = triton.testing.do_bench(lambda: dst.copy_(src), rep=100, return_mode="median")
    copy_gbps = 2 * src.numel() * 4 / copy_ms / 1e6
    del src, dst
    header = {"probe": "benchmarks/evidence/layer-norm/long_rows.py", "kernels": "examples/layer_norm.py",
              "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "python": platform.python_version(), "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "shape": [M, N], "copy_gbps": round(copy_gbps, 1),
              "method": "the example's layer_norm_bwd (stage 1 + stage 2) with the kernel and BWD_TABLE[16384] swapped; "
                        "do_bench_cudagraph and do_bench medians, rep 100 ms; GB/s = 6 bytes an element / time"}
    points = []
    for dtype in (torch.float16, torch.bfloat16):
        g = torch.Generator(device=dev).manual_seed(0)
        x = torch.randn(M, N, device=dev, dtype=dtype, generator=g)
        dy = torch.randn(M, N, device=dev, dtype=dtype, generator=g)
        w = torch.randn(N, device=dev, dtype=dtype, generator=g)
        b = torch.randn(N, device=dev, dtype=dtype, generator=g)
        _, mean, rstd = ex.layer_norm_fwd(x, w, b, 1e-5)
        ref = ex.layer_norm_bwd(dy, x, w, mean, rstd)
        for name, kernel, plan in VARIANTS:
            point = {"variant": name, "dtype": str(dtype).removeprefix("torch."), "N": N,
                     "kernel": plan[0], "num_warps": plan[1], "per_sm": plan[2], "num_stages": plan[3],
                     "shipped": name == "example" and plan == SHIPPED}
            if time.monotonic() - t0 > args.budget:
                point["check"] = "skipped (budget)"
                points.append(point)
                continue
            saved = ex.layer_norm_bwd_long_kernel, ex.BWD_TABLE[16384]
            try:
                if kernel is not None:
                    ex.layer_norm_bwd_long_kernel = kernel
                ex.BWD_TABLE[16384] = plan
                out = ex.layer_norm_bwd(dy, x, w, mean, rstd)
                for a, r in zip(out, ref):
                    torch.testing.assert_close(a, r, atol=2e-2, rtol=2e-2)
                fn = lambda: ex.layer_norm_bwd(dy, x, w, mean, rstd)  # noqa: E731
                ms_graph = triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")
                ms = triton.testing.do_bench(fn, rep=100, return_mode="median")
                gbps = 6 * M * N / ms_graph / 1e6
                point.update({"check": "pass", "ms_cudagraph": ms_graph, "ms_do_bench": ms, "gbps_cudagraph": gbps,
                              "fraction_of_copy": gbps / copy_gbps})
            except Exception as err:  # noqa: BLE001 - recorded, the next variant still runs
                point.update({"check": "error", "error": f"{type(err).__name__}: {str(err)[-300:]}"})
            finally:
                ex.layer_norm_bwd_long_kernel, ex.BWD_TABLE[16384] = saved
            points.append(point)
            print(json.dumps(point), flush=True)
        del x, dy, w, b, mean, rstd, ref
        torch.cuda.empty_cache()
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in header.items()]
    lines += ['  "points": ['] + [f"    {json.dumps(p)}" + ("," if i < len(points) - 1 else "")
                                  for i, p in enumerate(points)] + ["  ]", "}"]
    (args.out / "long_rows.json").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
