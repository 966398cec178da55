"""H200 probe for the softmax and split-K examples: which step and settings to pick.

Run on a GPU from the repository root: ``python benchmarks/probes/softmax.py``.
Prints compact tables (GB/s counts one read and one write of the tensor; % is of
the device-to-device copy measured in the same run). Stops starting new
measurements after BUDGET_S seconds so the whole run stays under 90 s.

Sections, most important first:
  base     copy ceiling, torch.softmax, and softmax() with its current defaults
  online   long rows: chunk, warps, stages, pass-2 direction, programs in flight
  multi    short rows: rows per program (tile size), warps, persistent grid
  row      one program per row: warps
  rows4k   the 4096-row sweep of the Triton tutorial, current defaults
  half     fp16 / bf16 with current defaults
  splitk   split-K matmul vs cuBLAS on small M, N and large K
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import softmax as sm  # noqa: E402

BUDGET_S = 80.0
T0 = time.perf_counter()
ELEMS = 2**26
SHORT_NS = [512, 781, 1024, 2048, 3000, 4096, 8192, 16384, 32768]
LONG_NS = [65536, 262144]
SKIPPED = []
DEV = torch.device("cuda")


def left() -> float:
    return BUDGET_S - (time.perf_counter() - T0)


def ms_of(fn) -> float:
    return triton.testing.do_bench(fn, warmup=5, rep=20, return_mode="median")


def emit(section, n, label, gbps, copy, ok=True):
    pct = 100 * gbps / copy if copy else float("nan")
    print(f"{section:7s} {n:>7} {label:34s} {gbps:7.0f} GB/s {pct:5.1f}%{'' if ok else '  WRONG'}", flush=True)


def measure(section, n, label, fn, ref, nbytes, copy):
    """Check fn against ref once, then time it; skip when the budget is spent."""
    if left() < 0:
        SKIPPED.append(f"{section}/{n}/{label}")
        return None
    try:
        out = fn()
        ok = torch.allclose(out.float(), ref.float(), rtol=1e-2, atol=1e-4)
        ms = ms_of(fn)
    except Exception as err:  # a config that does not compile or launch: say so and go on
        print(f"{section:7s} {n:>7} {label:34s} FAILED {type(err).__name__}: {str(err)[:60]}", flush=True)
        return None
    gbps = nbytes / ms * 1e-6
    emit(section, n, label, gbps, copy, ok)
    return gbps


def main() -> None:
    dev = DEV
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    print(f"# {props.name}, {sms} SMs, L2 {props.L2_cache_size >> 20} MB, torch {torch.__version__}, "
          f"triton {triton.__version__}; do_bench median, warmup 5 ms, rep 20 ms")

    a = torch.empty(ELEMS, device=dev)
    b = torch.empty_like(a)
    copy = 2 * a.numel() * 4 / ms_of(lambda: b.copy_(a)) * 1e-6
    emit("base", "-", "copy (ceiling)", copy, copy)
    del a, b

    inputs = {}

    def get(n, dtype=torch.float32, rows=None):
        key = (n, dtype, rows)
        if key not in inputs:
            inputs.clear()
            torch.cuda.empty_cache()
            x = torch.randn(rows or ELEMS // n, n, device=dev, dtype=dtype)
            inputs[key] = (x, torch.softmax(x.float(), dim=-1).to(dtype), 2 * x.numel() * x.element_size())
        return inputs[key]

    # base: peers and the launcher's current choice
    for n in SHORT_NS + LONG_NS:
        x, ref, nbytes = get(n)
        measure("base", n, "torch.softmax", lambda: torch.softmax(x, dim=-1), ref, nbytes, copy)
        measure("base", n, f"softmax() -> {sm.pick_variant(n)}", lambda: sm.softmax(x), ref, nbytes, copy)

    # online: long rows, and 32768 to see where it overtakes one-row-per-program
    for n in LONG_NS + [32768]:
        x, ref, nbytes = get(n)
        for block_n, warps in ((4096, 8), (4096, 16), (8192, 16), (8192, 32), (16384, 32)):
            for stages in (1, 3):
                for reverse in (True, False):
                    for progs in (32, 64, sms, 2 * sms):
                        if not reverse and progs not in (64, sms):
                            continue
                        cfg = dict(block_n=block_n, num_warps=warps, num_stages=stages, reverse=reverse,
                                   num_programs=progs)
                        label = f"on b{block_n} w{warps} s{stages} {'rev' if reverse else 'fwd'} p{progs}"
                        measure("online", n, label, lambda: sm.softmax(x, "online", **cfg), ref, nbytes, copy)

    # multi: short rows; tile = rows * block_n elements
    for n in [n for n in SHORT_NS if n <= 8192]:
        x, ref, nbytes = get(n)
        block_n = triton.next_power_of_2(n)
        for tile in (4096, 8192, 16384, 32768):
            rows = tile // block_n
            if rows < 2:
                continue
            for warps in (4, 8, 16):
                if tile // (32 * warps) < 4 or tile // (32 * warps) > 64:
                    continue
                cfg = dict(rows=rows, num_warps=warps)
                measure("multi", n, f"mr rows{rows} w{warps}", lambda: sm.softmax(x, "multirow", **cfg),
                        ref, nbytes, copy)
                if tile == 8192 and warps == 8:  # persistent grids for one config
                    for per_sm in (4, 8, 16):
                        cfgp = dict(cfg, num_programs=per_sm * sms, num_stages=1)
                        measure("multi", n, f"mr rows{rows} w{warps} p{per_sm}xSM s1",
                                lambda: sm.softmax(x, "multirow", **cfgp), ref, nbytes, copy)

    # row: one program per row
    for n in SHORT_NS:
        x, ref, nbytes = get(n)
        block_n = triton.next_power_of_2(n)
        for warps in (2, 4, 8, 16, 32):
            per_thread = block_n // (32 * warps)
            if per_thread < 4 or per_thread > 64:
                continue
            measure("row", n, f"row w{warps}", lambda: sm.softmax(x, "row", num_warps=warps), ref, nbytes, copy)

    # rows4k: the tutorial's sweep (4096 rows), current defaults
    for n in (1024, 3000, 4096, 16384):
        x, ref, nbytes = get(n, rows=4096)
        measure("rows4k", n, "torch.softmax", lambda: torch.softmax(x, dim=-1), ref, nbytes, copy)
        measure("rows4k", n, f"softmax() -> {sm.pick_variant(n)}", lambda: sm.softmax(x), ref, nbytes, copy)

    # half: 16-bit inputs, current defaults
    for dtype in (torch.float16, torch.bfloat16):
        for n in (1024, 4096, 65536):
            x, ref, nbytes = get(n, dtype)
            tag = str(dtype).split(".")[1]
            measure("half", n, f"{tag} torch.softmax", lambda: torch.softmax(x, dim=-1), ref, nbytes, copy)
            measure("half", n, f"{tag} softmax()", lambda: sm.softmax(x), ref, nbytes, copy)
    inputs.clear()

    split_k_section()
    print(f"# done in {time.perf_counter() - T0:.1f} s; skipped {len(SKIPPED)} measurements"
          + (f", first: {SKIPPED[0]}" if SKIPPED else ""))


def split_k_section() -> None:
    """Split-K matmul (fp16 in, fp32 out) against cuBLAS; TFLOP/s."""
    try:
        import split_k as sk
    except ImportError as err:
        print(f"# splitk: skipped ({err})")
        return
    dev = DEV
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    for m, n, k in ((128, 128, 16384), (256, 256, 8192), (256, 256, 32768), (512, 512, 16384), (1024, 1024, 8192)):
        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        b = torch.randn(k, n, device=dev, dtype=torch.float16)
        ref = a.float() @ b.float()
        flops = 2 * m * n * k
        shape = f"{m}x{n}x{k}"

        def run(label, fn):
            if left() < 0:
                SKIPPED.append(f"splitk/{shape}/{label}")
                return
            try:
                out = fn()
                ok = torch.allclose(out.float(), ref, rtol=2e-2, atol=2e-1)
                ms = ms_of(fn)
            except Exception as err:
                print(f"splitk  {shape:>16} {label:28s} FAILED {type(err).__name__}: {str(err)[:60]}", flush=True)
                return
            print(f"splitk  {shape:>16} {label:28s} {flops / ms * 1e-9:7.1f} TFLOP/s {ms * 1e3:8.1f} us"
                  f"{'' if ok else '  WRONG'}", flush=True)

        run("cublas fp16", lambda: a @ b)
        run(f"matmul_split_k() auto sk{sk.pick_split_k(m, n, k, sms)}", lambda: sk.matmul_split_k(a, b))
        for bm, bn, bk, warps, stages in ((64, 64, 64, 4, 4), (128, 128, 64, 8, 3), (64, 128, 64, 4, 4)):
            for split in (1, 2, 4, 8, 16, 32):
                if k // split < 2 * bk:
                    continue
                cfg = dict(split_k=split, block_m=bm, block_n=bn, block_k=bk, num_warps=warps, num_stages=stages)
                run(f"b{bm}x{bn}x{bk} w{warps} s{stages} sk{split}", lambda: sk.matmul_split_k(a, b, **cfg))


if __name__ == "__main__":
    main()
