"""Registers and spills of the attention kernels compiled for sm_90, pointer and descriptor.

No GPU needed: each kernel of examples/attention.py is compiled for sm_90 (Triton's own
compiler, fp16, as a launch at batch 32 x 16 heads x seq 4096 would specialize it: every
pointer 16-byte aligned, every integer argument a multiple of 16), and the PTX is assembled
by the ptxas that ships with Triton, with `-v`, which prints the registers per thread, the
bytes of local memory spilled and the shared memory. A spill is a store to and a load
from local memory (L1, then L2 and DRAM) in the middle of the loop.

Cases: the tiles `_config` uses on a GPU and the ones the probes timed, per pass (fwd,
dkdv, dq), head dim (64, 128), mask, and kind (`ptr`: the kernels of Steps 2-4, `tma`: the
descriptor kernels of Step 5).

Usage (repository root): python benchmarks/evidence/attention/sm90_registers.py --out DIR
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

import attention as ex  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.backends.nvidia.compiler import CUDABackend  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.runtime.jit import mangle_type  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
PTXAS = Path(triton.__file__).parent / "backends/nvidia/bin/ptxas"
KERNELS = {("ptr", "fwd"): ex.attn_fwd_kernel, ("ptr", "dkdv"): ex.attn_bwd_dkdv_kernel,
           ("ptr", "dq"): ex.attn_bwd_dq_kernel, ("tma", "fwd"): ex.attn_fwd_tma_kernel,
           ("tma", "dkdv"): ex.attn_bwd_dkdv_tma_kernel, ("tma", "dq"): ex.attn_bwd_dq_tma_kernel}
# (pass, head_dim, causal): the tiles (BLOCK_M, BLOCK_N, num_warps, num_stages) to compile
CASES = {
    ("fwd", 128, False): [(128, 128, 8, 3), (128, 64, 4, 3)],
    ("fwd", 64, False): [(128, 64, 4, 3), (128, 128, 8, 3)],
    ("dkdv", 128, False): [(64, 128, 8, 3), (32, 128, 8, 3), (64, 64, 8, 3)],
    ("dkdv", 128, True): [(64, 128, 8, 3)],
    ("dkdv", 64, False): [(64, 64, 4, 2), (64, 128, 8, 2)],
    ("dkdv", 64, True): [(64, 128, 4, 2), (64, 64, 4, 2), (32, 128, 8, 2), (64, 128, 8, 2)],
    ("dq", 128, False): [(128, 64, 8, 3), (128, 32, 8, 3)],
    ("dq", 64, True): [(128, 32, 8, 3)],
}


def signature(kernel, cfg, d):
    """The signature, constexprs and 16-divisibility attributes of a launch at the benchmark's shape."""
    t = torch.empty(1, 1, 256, d, dtype=torch.float16)
    consts = {"HEAD_DIM": d, "PRECISION": "tf32", "BLOCK_M": cfg[0], "BLOCK_N": cfg[1]}
    sig, attrs, divisible = {}, {}, CUDABackend(TARGET).parse_attr("D")
    for i, p in enumerate(kernel.params):
        n = p.name
        if n.endswith("_desc"):  # keys and values (and dK, dV) move BLOCK_N rows
            rows = cfg[1] if n[0] in "kv" or n[1:2] in "kv" else cfg[0]
            sig[n] = mangle_type(TensorDescriptor.from_tensor(t, [1, 1, rows, d]))
        elif n in consts or n == "CAUSAL":
            sig[n] = "constexpr"
        elif n in ("sm_scale", "qk_scale"):
            sig[n] = "fp32"
        else:  # pointers and integers: aligned / multiples of 16 at the benchmark's shape
            sig[n] = "*fp32" if n in ("LSE", "DELTA") else "*fp16" if n.isupper() else "i32"
            attrs[(i,)] = divisible
    return sig, consts, attrs


def compile_and_assemble(kind, pass_, d, causal, cfg):
    kernel = KERNELS[(kind, pass_)]
    sig, consts, attrs = signature(kernel, cfg, d)
    consts["CAUSAL"] = causal
    compiled = triton.compile(ASTSource(kernel, sig, consts, attrs), target=TARGET,
                              options={"num_warps": cfg[2], "num_stages": cfg[3]})
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "k.ptx"
        ptx.write_text(compiled.asm["ptx"])
        out = subprocess.run([str(PTXAS), "-v", "--gpu-name=sm_90a", str(ptx), "-o", str(Path(tmp) / "k.o")],
                             capture_output=True, text=True, check=True).stderr
    regs = int(re.search(r"Used (\d+) registers", out).group(1))
    stores, loads = (int(x) for x in re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out).groups())
    return {"registers": regs, "spill_store_bytes": stores, "spill_load_bytes": loads,
            "shared_bytes": compiled.metadata.shared}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ptxas_version = subprocess.run([str(PTXAS), "--version"], capture_output=True, text=True).stdout.strip()
    header = {"probe": "benchmarks/evidence/attention/sm90_registers.py", "kernels": "examples/attention.py",
              "target": "sm_90a (compiled without a GPU)", "triton": triton.__version__, "torch": torch.__version__,
              "ptxas": ptxas_version.splitlines()[-1], "python": platform.python_version(),
              "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "method": "triton.compile(ASTSource) for GPUTarget('cuda', 90, 32), fp16, every pointer and integer "
                        "argument marked divisible by 16 (as at batch 32 x 16 x 4096), then ptxas -v on the PTX"}
    points = []
    for (pass_, d, causal), tiles in CASES.items():
        for kind in ("ptr", "tma"):
            for cfg in tiles:
                point = {"pass": pass_, "head_dim": d, "causal": causal, "kind": kind,
                         "tile": f"{cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}"}
                point.update(compile_and_assemble(kind, pass_, d, causal, cfg))
                points.append(point)
                print(json.dumps(point), flush=True)
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in header.items()]
    lines += ['  "points": ['] + [f"    {json.dumps(p)}" + ("," if i < len(points) - 1 else "")
                                  for i, p in enumerate(points)] + ["  ]", "}"]
    (args.out / "sm90_registers.json").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
