"""Can a CTA cluster hold one long row? Layer norm's one-row backward compiled with num_ctas > 1.

On Hopper, `num_ctas=2` asks Triton to spread one program over a cluster of two CTAs (two SMs),
which would halve the registers a 16,384-wide row needs per SM and leave the row sums to the
compiler. This compiles examples/layer_norm.py's `layer_norm_bwd_kernel` at BLOCK_N = 16384 for
sm_90 without a GPU, with num_ctas 1, 2 and 4 and 8 or 16 warps, as written (1-D row vectors) and
as a 2-D [2, 8192] tile of the same row (`row_2d_kernel` below), and records for each the
registers and spills from `ptxas -v`, or the compiler's error.

Usage (repository root): python benchmarks/evidence/layer-norm/clusters.py --out DIR
Writes DIR/clusters.json (one point per line).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile for real, without a GPU
ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import layer_norm as ex  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from scripts import probe_common as pc  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
FP32_POINTERS = ("mean_ptr", "rstd_ptr", "dw_part_ptr", "db_part_ptr")


@triton.jit
def row_2d_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
                  n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
                  R: tl.constexpr, C: tl.constexpr, NUM_STAGES: tl.constexpr):
    """layer_norm_bwd_kernel with the row held as an [R, C] tile (R * C columns)."""
    group = tl.program_id(0)
    cols = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([R, C], dtype=tl.float32)
    db_acc = tl.zeros([R, C], dtype=tl.float32)
    for i in tl.range(group, n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        row = tl.cast(i, tl.int64)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w
        c1 = tl.sum(tl.sum(g * x_hat, axis=1), axis=0) / n_cols
        c2 = tl.sum(tl.sum(g, axis=1), axis=0) / n_cols
        dx = (g - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * x_hat
        db_acc += dy
    part = group.to(tl.int64) * n_cols + cols
    tl.store(dw_part_ptr + part, dw_acc, mask=mask)
    tl.store(db_part_ptr + part, db_acc, mask=mask)


KERNELS = {"one-row (1-D)": (ex.layer_norm_bwd_kernel, {"BLOCK_N": 16384, "NUM_STAGES": 1}),
           "one-row as [2, 8192]": (row_2d_kernel, {"R": 2, "C": 8192, "NUM_STAGES": 1})}


def compile_point(kernel, consts, warps, ctas) -> dict:
    sig, attrs, divisible = {}, {}, CUDABackend(TARGET).parse_attr("D")
    for i, p in enumerate(kernel.params):
        if p.name in consts:
            sig[p.name] = "constexpr"
            continue
        sig[p.name] = ("*fp32" if p.name in FP32_POINTERS else "*fp16") if p.name.endswith("_ptr") else "i32"
        attrs[(i,)] = divisible
    with tempfile.TemporaryFile(mode="w+") as log:  # MLIR writes its diagnostics to fd 2
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            compiled = triton.compile(ASTSource(kernel, sig, consts, attrs), target=TARGET,
                                      options={"num_warps": warps, "num_stages": 1, "num_ctas": ctas})
        except Exception as err:  # noqa: BLE001 - the compiler's refusal is the finding
            os.dup2(saved, 2)
            log.seek(0)
            lines = log.read().splitlines()
            said = [ln.split("error:", 1)[1].strip() for ln in lines if "error:" in ln]
            passes = [ln.split("executing", 1)[1].split("on '")[0].strip(" [`'")
                      for ln in lines if "Pipeline failed while executing" in ln]
            return {"compiled": False, "error": f"{type(err).__name__}: {str(err).splitlines()[-1][:120]}",
                    "diagnostic": said[0] if said else "", "failed_pass": passes[0] if passes else ""}
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    return {"compiled": True, **pc.ptxas_usage(compiled.asm["ptx"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    points = []
    for name, (kernel, consts) in KERNELS.items():
        for ctas in (1, 2, 4):
            for warps in (8, 16):
                point = {"kernel": name, "num_ctas": ctas, "num_warps": warps, "dtype": "fp16", "N": 16384}
                point.update(compile_point(kernel, consts, warps, ctas))
                points.append(point)
                print(point, flush=True)
    header = {"probe": "benchmarks/evidence/layer-norm/clusters.py", **pc.environment(),
              "target": "sm_90a (compiled without a GPU)", "ptxas": pc.ptxas_version(),
              "method": "triton.compile(ASTSource) for GPUTarget('cuda', 90, 32) with num_ctas and num_warps, "
                        "every pointer and integer argument marked divisible by 16; ptxas -v on the PTX"}
    pc.write_points(args.out / "clusters.json", header, points)


if __name__ == "__main__":
    main()
