"""Does Triton 3.6 emit TMA multicast for the matmul's descriptor kernels on Hopper?

cuBLAS's kernels on the matmul Benchmarks page run in clusters of two CTAs, and run 73 left
open whether TMA multicast (one load of a tile written to the shared memory of both CTAs of
a cluster) is what keeps their L2 traffic lighter than ours. Before timing anything, this
probe asks whether Triton emits it for our kernels. It compiles, for sm_90 and without a
GPU, the two descriptor kernels run 73 profiled, each in the config the H100's autotuner
picked there (and the persistent one with its C tile stored whole as well), with
``num_ctas`` 1 and 2 (``num_ctas=2`` spreads one program over a cluster of two CTAs), and
counts in the PTX the TMA load instructions, those of them with ``.multicast::cluster``,
and cluster barriers; where the compiler refuses, it records the diagnostic. Integer and
pointer arguments carry the divisibility the profiled launches had. It also lists the
parameters of Gluon's Hopper TMA load, the other public way to write the copy.

Usage (repository root): python benchmarks/evidence/matmul/multicast_ptx.py --out DIR
Writes DIR/multicast_ptx.json (one point per line).
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile for real, without a GPU
ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import matmul  # noqa: E402
import matmul_persistent  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402

from scripts import probe_common as pc  # noqa: E402

TMA_LOAD = re.compile(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global\S*")
DIVISIBLE = CUDABackend(GPUTarget("cuda", 90, 32)).parse_attr("D")
TILES = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "WARP_SPECIALIZE": False}

DESC_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
            "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
PERSISTENT = {**TILES, "FLATTEN": True, "EPILOGUE_SUBTILE": True, "WARP_SPECIALIZE_K": False}


def persistent_sig(c_block_n: int) -> dict:
    """The persistent kernel's host descriptors carry their block shapes in the signature."""
    return {"a_desc": "tensordesc<fp16[256,64]>", "b_desc": "tensordesc<fp16[64,128]>",
            "c_desc": f"tensordesc<fp16[256,{c_block_n}]>", "M": "i32", "N": "i32", "K": "i32"}


# (kernel name, config, kernel, signature, constexprs, options, the arguments divisible by 16
# in the profiled launch): this page's kernel at 2048^3; the persistent chapter's on
# 4000 x 3000 x 2000 (N = 3000 is not a multiple of 16) as run 73 picked it, and with C stored
# whole (the tuner's other epilogue), to see whether the split epilogue decides the compile.
KERNELS = [
    ("matmul.matmul_tma_kernel", "run73", matmul.matmul_tma_kernel, DESC_SIG, TILES,
     {"num_warps": 8, "num_stages": 3}, tuple(DESC_SIG)),
    ("matmul_persistent.matmul_tma_kernel", "run73", matmul_persistent.matmul_tma_kernel,
     persistent_sig(64), PERSISTENT, {"num_warps": 8, "num_stages": 4}, ("M", "K")),
    ("matmul_persistent.matmul_tma_kernel", "run73-whole-epilogue",
     matmul_persistent.matmul_tma_kernel, persistent_sig(128),
     {**PERSISTENT, "EPILOGUE_SUBTILE": False}, {"num_warps": 8, "num_stages": 4}, ("M", "K")),
]


def ptx_counts(ptx: str) -> dict:
    """TMA load instructions in ``ptx``, how many of them multicast, and cluster barriers."""
    loads = TMA_LOAD.findall(ptx)
    return {"tma_load_instructions": len(loads),
            "tma_multicast_load_instructions": sum(".multicast::cluster" in s for s in loads),
            "tma_load_forms": sorted(set(loads)),
            "cluster_barriers": len(re.findall(r"barrier\.cluster", ptx))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    points = []
    for name, config, kernel, signature, consts, options, divisible in KERNELS:
        attrs = {(kernel.arg_names.index(arg),): DIVISIBLE for arg in divisible}
        for ctas in (1, 2):
            point = {"kernel": name, "config": config, "num_ctas": ctas, "dtype": "fp16",
                     **options, "constexprs": consts, "divisible_by_16": list(divisible)}
            compiled, failure = pc.compile_sm90(kernel, signature, consts, attrs,
                                                {**options, "num_ctas": ctas})
            if compiled is None:
                point.update(compiled=False, **failure)
            else:
                point.update(compiled=True, **ptx_counts(compiled.asm["ptx"]))
            points.append(point)
            print({k: v for k, v in point.items() if k not in ("constexprs", "tma_load_forms")},
                  flush=True)
    from triton.experimental.gluon.language.nvidia.hopper import tma

    params = [p for p in inspect.signature(tma.async_copy_global_to_shared).parameters
              if p != "_semantic"]
    header = {"probe": "benchmarks/evidence/matmul/multicast_ptx.py", **pc.environment(),
              "target": "sm_90a (compiled without a GPU)", "ptxas": pc.ptxas_version(),
              "method": "triton.compile(ASTSource) for GPUTarget('cuda', 90, 32) with num_ctas 1 and 2; "
                        "the PTX is read, nothing is launched",
              "gluon_hopper_async_copy_global_to_shared_params": params}
    pc.write_points(args.out / "multicast_ptx.json", header, points)


if __name__ == "__main__":
    main()
