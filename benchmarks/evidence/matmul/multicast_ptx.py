"""Probe: can a Triton 3.6 matmul ask for TMA multicast on Hopper?

cuBLAS's kernels on the matmul Benchmarks page run in clusters of two CTAs, and run 73
left open whether TMA multicast (one load of a tile written to the shared memory of both
CTAs of a cluster) is what keeps their L2 traffic lighter than ours. Before timing that,
this probe asks whether Triton can emit it at all. It compiles, for sm_90 and without a
GPU (PTX only, no launch), the two descriptor kernels the page profiled, each in its
H100 run-73 config, with ``num_ctas`` 1 and 2 (``num_ctas`` is the one public knob
that launches CTAs in clusters), and counts in the PTX the TMA loads, those with
``.multicast::cluster``, and cluster barriers. It also lists the parameters of Gluon's
Hopper TMA load, the other public way to write the copy.

Run from the repository root (any machine; no GPU needed)::

    TRITON_INTERPRET=0 python benchmarks/evidence/matmul/multicast_ptx.py OUT.json
"""

from __future__ import annotations

import datetime
import inspect
import json
import os
import platform
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
os.environ["TRITON_INTERPRET"] = "0"  # compile, even where the examples would interpret

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TMA_LOAD = re.compile(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global[^\s]*")
TARGET = GPUTarget("cuda", 90, 32)
PTR = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
INTS = {name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}


def kernels() -> dict:
    """name -> (jit function, signature, constexprs, options): the run-73 picks on an H100."""
    import matmul
    import matmul_persistent

    desc = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8,
            "WARP_SPECIALIZE": False}
    pers = {**desc, "FLATTEN": True, "EPILOGUE_SUBTILE": True, "WARP_SPECIALIZE_K": False}
    pers_sig = {"a_desc": "tensordesc<fp16[256,64]>", "b_desc": "tensordesc<fp16[64,128]>",
                "c_desc": "tensordesc<fp16[256,64]>", "M": "i32", "N": "i32", "K": "i32"}
    return {
        "matmul.matmul_tma_kernel": (matmul.matmul_tma_kernel, {**PTR, **INTS}, desc,
                                     {"num_warps": 8, "num_stages": 3}),
        "matmul_persistent.matmul_tma_kernel": (matmul_persistent.matmul_tma_kernel,
                                                pers_sig, pers,
                                                {"num_warps": 8, "num_stages": 4}),
    }


def compile_one(fn, signature: dict, constexprs: dict, options: dict) -> dict:
    sig = {**signature, **{name: "constexpr" for name in constexprs}}
    consts = {(fn.arg_names.index(name),): value for name, value in constexprs.items()}
    compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts),
                              target=TARGET, options=options)
    ptx = compiled.asm["ptx"]
    loads = TMA_LOAD.findall(ptx)
    return {
        "options": options,
        "constexprs": constexprs,
        "metadata_num_ctas": compiled.metadata.num_ctas,
        "tma_load_instructions": len(loads),
        "tma_load_forms": sorted(set(loads)),
        "multicast_instructions": ptx.count(".multicast::cluster"),
        "cluster_barriers": len(re.findall(r"barrier\.cluster", ptx)),
    }


def main(out: str) -> int:
    points = []
    for name, (fn, signature, constexprs, options) in kernels().items():
        for num_ctas in (1, 2):
            point = {"kernel": name, "num_ctas": num_ctas}
            try:
                point.update(compile_one(fn, signature, constexprs,
                                         {**options, "num_ctas": num_ctas}))
            except Exception as exc:  # a config the compiler refuses is a finding too
                point["error"] = f"{type(exc).__name__}: {exc}"[:400]
            points.append(point)
            print(json.dumps({k: v for k, v in point.items() if k != "constexprs"}))
    from triton.experimental.gluon.language.nvidia.hopper import tma

    gluon_params = [p for p in inspect.signature(tma.async_copy_global_to_shared).parameters
                    if p != "_semantic"]
    result = {
        "what": "PTX of the matmul descriptor kernels for sm_90 with num_ctas 1 and 2: "
                "TMA loads, multicast TMA loads, cluster barriers",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {"triton": triton.__version__, "python": platform.python_version()},
        "target": {"backend": TARGET.backend, "arch": TARGET.arch},
        "method": "triton.compile(ASTSource) for the target without a GPU; the PTX is read, "
                  "nothing is launched or timed",
        "command": "TRITON_INTERPRET=0 python benchmarks/evidence/matmul/multicast_ptx.py " + out,
        "gluon_hopper_async_copy_global_to_shared_params": gluon_params,
        "points": points,
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else "multicast_ptx.json"))
