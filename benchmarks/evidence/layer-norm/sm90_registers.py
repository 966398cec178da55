"""Registers and spills of layer norm's backward stage 1 at N = 16384, compiled for sm_90.

No GPU needed: the two stage-1 kernels of examples/layer_norm.py (the one-row
`layer_norm_bwd_kernel` with BLOCK_N = 16384 and the four-piece
`layer_norm_bwd_long_kernel` with CHUNK = 4096), and the candidate of long_rows.py whose
pass 1 reduces each piece as it arrives (`long-sums-each-piece`), are compiled for sm_90 by Triton's own
compiler, fp16 and bf16, with every pointer and integer argument marked divisible by 16
(as at M x N = 2^26), for 8, 16 and 32 warps and 1 or 2 pipeline stages; the PTX is
assembled by the ptxas that ships with Triton, with `-v`, which prints the registers per
thread and the bytes spilled to local memory.

Usage (repository root): python benchmarks/evidence/layer-norm/sm90_registers.py --out DIR
Writes DIR/sm90_registers.json (one point per line).
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"  # compile for real, without a GPU
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import layer_norm as ex  # noqa: E402
import long_rows  # noqa: E402  the candidate kernel (pass 1 reduces each piece as it arrives)
import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
PTXAS = Path(triton.__file__).parent / "backends/nvidia/bin/ptxas"
FP32_POINTERS = ("mean_ptr", "rstd_ptr", "dw_part_ptr", "db_part_ptr")
KERNELS = {"row": (ex.layer_norm_bwd_kernel, {"BLOCK_N": 16384}),
           "long": (ex.layer_norm_bwd_long_kernel, {"CHUNK": 4096}),
           "long-sums-each-piece": (long_rows.sums_each_piece_kernel, {"CHUNK": 4096})}


def compile_and_assemble(kernel, consts, dtype, warps, stages):
    sig, attrs, divisible = {}, {}, CUDABackend(TARGET).parse_attr("D")
    for i, p in enumerate(kernel.params):
        if p.name in consts:
            sig[p.name] = "constexpr"
            continue
        if p.name.endswith("_ptr"):
            sig[p.name] = "*fp32" if p.name in FP32_POINTERS else f"*{dtype}"
        else:
            sig[p.name] = "i32"
        attrs[(i,)] = divisible
    compiled = triton.compile(ASTSource(kernel, sig, consts, attrs), target=TARGET,
                              options={"num_warps": warps, "num_stages": stages})
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        ptx.write_text(compiled.asm["ptx"])
        out = subprocess.run([str(PTXAS), "-v", "--gpu-name=sm_90a", str(ptx), "-o", str(Path(tmp) / "k.o")],
                             capture_output=True, text=True, check=True).stderr
    regs = int(re.search(r"Used (\d+) registers", out).group(1))
    stores, loads = (int(x) for x in re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out).groups())
    return {"registers": regs, "spill_store_bytes": stores, "spill_load_bytes": loads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ptxas_version = subprocess.run([str(PTXAS), "--version"], capture_output=True, text=True).stdout.strip()
    header = {"probe": "benchmarks/evidence/layer-norm/sm90_registers.py", "kernels": "examples/layer_norm.py",
              "target": "sm_90a (compiled without a GPU)", "triton": triton.__version__, "torch": torch.__version__,
              "ptxas": ptxas_version.splitlines()[-1], "python": platform.python_version(),
              "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "method": "triton.compile(ASTSource) for GPUTarget('cuda', 90, 32), every pointer and integer "
                        "argument marked divisible by 16 (as at M x N = 2^26), then ptxas -v on the PTX"}
    points = []
    for kind, (kernel, consts) in KERNELS.items():
        for dtype in ("fp16", "bf16"):
            for warps in (8, 16, 32):
                for stages in (1, 2):
                    point = {"kernel": kind, "dtype": dtype, "N": 16384, "num_warps": warps, "num_stages": stages}
                    point.update(compile_and_assemble(kernel, {**consts, "NUM_STAGES": stages}, dtype, warps, stages))
                    points.append(point)
                    print(json.dumps(point), flush=True)
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in header.items()]
    lines += ['  "points": ['] + [f"    {json.dumps(p)}" + ("," if i < len(points) - 1 else "")
                                  for i, p in enumerate(points)] + ["  ]", "}"]
    (args.out / "sm90_registers.json").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
