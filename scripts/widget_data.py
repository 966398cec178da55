"""Data for the interactive widgets, recorded from the real example kernels.

``scripts/hooks.py`` calls ``generate()`` on every build and publishes each entry
at ``assets/data/<name>``. Everything here is deterministic (same bytes every
build) and quick: one subprocess runs ``examples/vector_add.py``'s ``add_kernel``
under Triton's interpreter (``TRITON_INTERPRET=1``) with the interpreter's
masked load/store wrapped, so the widgets show the offsets and masks the kernel
really produced, not a drawing of what it should produce.

Run ``python -m scripts.widget_data`` to print a summary of what is recorded.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from scripts import sections

ROOT = Path(__file__).resolve().parent.parent
VECTOR_ADD = ROOT / "examples" / "vector_add.py"

# The configurations the tile-partition widget offers (its sliders cover exactly these).
TRACE_N = list(range(1, 33))
TRACE_BLOCKS = [4, 8, 16, 32]
# The run the kernel-stepper walks through: values included.
STEPPER_N, STEPPER_BLOCK = 10, 4


# Which source line each stepper step highlights: (step id, regex on the stripped line).
STEP_PATTERNS = [
    ("pid", r"^pid\s*=.*tl\.program_id"),
    ("offsets", r"^offsets\s*=.*tl\.arange"),
    ("mask", r"^mask\s*=.*<"),
    ("load_x", r"^x\s*=\s*tl\.load\(\s*x_ptr"),
    ("load_y", r"^y\s*=\s*tl\.load\(\s*y_ptr"),
    ("store", r"^tl\.store\(\s*z_ptr"),
]

# Runs in a child process: TRITON_INTERPRET=1 must be set before triton is imported,
# and the build process must not be affected by the wrapping.
_TRACER = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
import importlib.util
import torch
import triton
import triton.runtime.interpreter as interp
_spec = importlib.util.spec_from_file_location("vector_add", os.path.join(sys.argv[1], "vector_add.py"))
ex = importlib.util.module_from_spec(_spec)
sys.modules["vector_add"] = ex
_spec.loader.exec_module(ex)

spec = json.loads(sys.argv[2])
builder = interp.interpreter_builder
events = []
orig_load, orig_store = builder.create_masked_load, builder.create_masked_store

def rec_load(ptrs, mask, *a, **k):
    ret = orig_load(ptrs, mask, *a, **k)
    events.append(("load", builder.grid_idx[0], ptrs.data.tolist(), mask.data.tolist(), ret.data.tolist()))
    return ret

def rec_store(ptrs, value, mask, *a, **k):
    events.append(("store", builder.grid_idx[0], ptrs.data.tolist(), mask.data.tolist(), value.data.tolist()))
    return orig_store(ptrs, value, mask, *a, **k)

builder.create_masked_load, builder.create_masked_store = rec_load, rec_store

def run(n, block):
    x = torch.arange(n, dtype=torch.float32)          # x[i] = i
    y = 100 * torch.arange(n, dtype=torch.float32)    # y[i] = 100 i: sums read back at a glance
    z = torch.full((n,), float("nan"))
    bases = {name: (t.data_ptr(), t.element_size()) for name, t in (("x", x), ("y", y), ("z", z))}
    events.clear()
    ex.add_kernel[(triton.cdiv(n, block),)](x, y, z, n, BLOCK_SIZE=block)
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)
    out = []
    for op, pid, ptrs, mask, values in events:
        # Masked lanes may hold any address: name the tensor from the first live lane.
        live = [p for p, m in zip(ptrs, mask) if m] or ptrs
        name = min(bases, key=lambda k: abs(live[0] - bases[k][0]) if live[0] >= bases[k][0] else 1 << 62)
        base, size = bases[name]
        offsets = [(p - base) // size for p in ptrs]
        out.append({"op": op, "pid": pid, "tensor": name, "offsets": offsets,
                    "mask": "".join("1" if m else "0" for m in mask), "values": values})
    return out

result = {"configs": {}, "stepper": None}
for n in spec["ns"]:
    for block in spec["blocks"]:
        result["configs"][f"{n}/{block}"] = [
            {k: e[k] for k in ("op", "pid", "tensor", "offsets", "mask")} for e in run(n, block)]
if spec["stepper"]:
    result["stepper"] = run(spec["stepper"][0], spec["stepper"][1])
print(json.dumps(result))
"""


def kernel_source(path: Path = VECTOR_ADD, section: str = "kernel") -> list[str]:
    """The lines of a `--8<-- [start:section]` ... `[end:section]` section, annotations removed."""
    return sections.section(path, section)


def step_lines(source: list[str]) -> dict[str, int]:
    """0-based index into `source` of the line each stepper step highlights."""
    found = {}
    for step, pattern in STEP_PATTERNS:
        hits = [i for i, line in enumerate(source) if re.search(pattern, line.strip())]
        if len(hits) != 1:
            raise RuntimeError(f"vector_add.py kernel: expected one line matching {pattern!r}, found {len(hits)}")
        found[step] = hits[0]
    return found


def _compact(offsets: list[int]) -> dict:
    """A run of consecutive offsets as start/count; anything else verbatim."""
    if offsets and offsets == list(range(offsets[0], offsets[0] + len(offsets))):
        return {"start": offsets[0], "count": len(offsets)}
    return {"list": offsets}


def record() -> dict:
    """Run the tracer in two child processes at once (importing torch dominates: about 2 s each)."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONHASHSEED="0")
    halves = [TRACE_BLOCKS[:1], TRACE_BLOCKS[1:]]  # about the same number of programs each
    procs = []
    for i, blocks in enumerate(halves):
        spec = {"ns": TRACE_N, "blocks": blocks, "stepper": [STEPPER_N, STEPPER_BLOCK] if i == 0 else None}
        procs.append(subprocess.Popen(
            [sys.executable, "-c", _TRACER, str(ROOT / "examples"), json.dumps(spec)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        ))
    merged = {"configs": {}, "stepper": None}
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"recording vector_add traces failed:\n{err[-3000:]}")
        part = json.loads(out.strip().splitlines()[-1])
        merged["configs"].update(part["configs"])
        merged["stepper"] = merged["stepper"] or part["stepper"]
    return merged


def _dumps(payload: dict) -> bytes:
    return (json.dumps(payload, sort_keys=True, separators=(",", ":")) + "\n").encode()


def generate() -> dict[str, bytes]:
    raw = record()
    configs = {}
    for key, events in raw["configs"].items():
        n, block = (int(v) for v in key.split("/"))
        programs: dict[int, dict] = {}
        for e in events:
            prog = programs.setdefault(e["pid"], {"pid": e["pid"], "ops": []})
            prog["ops"].append({"op": e["op"], "tensor": e["tensor"], "mask": e["mask"], **_compact(e["offsets"])})
        configs[key] = {"n": n, "block": block, "programs": [programs[p] for p in sorted(programs)]}
    source = kernel_source()
    stepper = {
        "n": STEPPER_N, "block": STEPPER_BLOCK,
        "x": [float(i) for i in range(STEPPER_N)], "y": [100.0 * i for i in range(STEPPER_N)],
        "source": source, "lines": step_lines(source), "events": raw["stepper"],
    }
    meta = {"kernel": "examples/vector_add.py:add_kernel", "recorded_with": "TRITON_INTERPRET=1",
            "x": "x[i] = i, y[i] = 100 i"}
    trace = {"meta": meta, "ns": TRACE_N, "blocks": TRACE_BLOCKS, "configs": configs, "stepper": stepper}
    return {"vector_add_trace.json": _dumps(trace)}


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    blobs = generate()
    for name, blob in blobs.items():
        print(f"{name}: {len(blob):,} bytes")
    print(f"generate() took {time.perf_counter() - t0:.2f} s")
