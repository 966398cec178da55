"""H200 probe for the Masks and Strides chapters (examples/masks.py, strides.py,
tensor_descriptors.py, int64_offsets.py).

It answers, on the real GPU:

1. does int32 offset arithmetic wrap at 2**31 as the interpreter shows, and what
   does the int32 kernel do to a >2**31-element tensor (the tests' layout trick:
   wrapped addresses land inside a padded buffer), and does int64 fix it;
2. which block shapes to ship for the pointer transpose, the descriptor transpose,
   bias + ReLU and the int8 add-one benchmark (do_bench medians, GB/s);
3. what a plain >2**31-element int32 launch does (in a subprocess: an illegal
   memory access would kill this process's CUDA context).

Run: python benchmarks/probes/strides.py   (needs CUDA; under 90 s)

First run (2026-11-29, H200, 15 s): int32 wraps on the GPU exactly as in the
interpreter; the layout trick shows the unwritten tail and the stray writes, and
int64 fixes both; the plain launch fails in its subprocess. Choices made from it:
64x64 pointer tiles and 128x64 descriptor blocks for the transpose, BLOCK_SIZE 4096
for int8 add-one (int32 and int64 offsets measured the same), bias + ReLU left at
16x256 (all five shapes within 3%). The row and column sums were far below torch
with too few programs, so the sums sweep now also tries narrower blocks.
"""

import subprocess
import sys
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

import int64_offsets  # noqa: E402
import masks  # noqa: E402
import strides  # noqa: E402
import tensor_descriptors  # noqa: E402

T0 = time.time()
N_BIG = 2**31 + 2**20 + 17


def gbps(nbytes, fn, *args, **kwargs):
    """GB/s of fn(*args, **kwargs) moving nbytes, from do_bench's median time."""
    ms = do_bench(lambda: fn(*args, **kwargs), warmup=10, rep=40, return_mode="median")
    return nbytes / ms / 1e6


def row(*cells):
    print(" | ".join(str(c) for c in cells), flush=True)


def section(title):
    print(f"\n## {title}  (t={time.time() - T0:.0f}s)", flush=True)


def wrap_check():
    section("int32 wrap: tile starts for BLOCK_SIZE=2**30, programs 0..3")
    row("int32", int64_offsets.tile_starts(4, 2**30, int64=False))
    row("int64", int64_offsets.tile_starts(4, 2**30, int64=True))


def big_tensor_check():
    section(f"add_one on n = 2**31 + 2**20 + 17 = {N_BIG} int8, x and y placed 2**32 bytes into padded buffers")
    pad = 2**32
    buf_x = torch.zeros(pad + N_BIG, dtype=torch.int8, device="cuda")
    buf_y = torch.full((pad + N_BIG,), 127, dtype=torch.int8, device="cuda")
    x, y = buf_x[pad:], buf_y[pad:]
    x.copy_(torch.randint(-100, 100, (N_BIG,), dtype=torch.int8, device="cuda"))
    ref_tail = x[2**31:].to(torch.int16) + 1
    for int64 in (False, True):
        buf_y.fill_(127)
        grid = (triton.cdiv(N_BIG, 1024),)
        int64_offsets.add_one_kernel[grid](x, y, N_BIG, BLOCK_SIZE=1024, INT64=int64)
        torch.cuda.synchronize()
        head_ok = bool((y[: 2**31 - 1024].to(torch.int16) == x[: 2**31 - 1024].to(torch.int16) + 1).all())
        tail_ok = bool((y[2**31:].to(torch.int16) == ref_tail).all())
        tail_unwritten = bool((y[2**31:] == 127).all())
        stray = buf_y[2**31:N_BIG]  # where wrapped int32 stores land: pad - 2**32 + i
        stray_ones = bool((stray == 1).all())
        stray_untouched = bool((stray == 127).all())
        row(f"INT64={int64}", f"head ok={head_ok}", f"tail ok={tail_ok}", f"tail unwritten={tail_unwritten}",
            f"stray region all 1={stray_ones}", f"stray region untouched={stray_untouched}")
    del buf_x, buf_y, x, y, stray, ref_tail
    torch.cuda.empty_cache()


def transpose_sweep():
    for S in (8192,):
        section(f"transpose fp32 {S}x{S}: GB/s (read + write)")
        a = torch.randn(S, S, device="cuda")
        nbytes = 2 * a.numel() * 4
        row("torch .t().contiguous()", f"{gbps(nbytes, strides.copy_2d_torch, a.t()):.0f}")
        row("torch .clone() (copy)", f"{gbps(nbytes, torch.clone, a):.0f}")
        for bm, bn in ((32, 32), (64, 64), (64, 32), (128, 32), (32, 128)):
            t = gbps(nbytes, strides.transpose, a, block_m=bm, block_n=bn)
            c = gbps(nbytes, strides.copy_2d, a, block_m=bm, block_n=bn)
            row(f"pointers {bm}x{bn}", f"transpose {t:.0f}", f"contiguous copy {c:.0f}")
        for bm, bn in ((32, 32), (64, 64), (128, 64), (128, 128)):
            d = gbps(nbytes, tensor_descriptors.transpose, a, block_m=bm, block_n=bn)
            row(f"descriptors {bm}x{bn}", f"transpose {d:.0f}")


def sums_sweep():
    section("row_sum / col_sum fp32 8192x8192: GB/s (read only); programs = 8192 / kept block")
    a = torch.randn(8192, 8192, device="cuda")
    nbytes = a.numel() * 4
    row("torch sum(1) / sum(0)", f"{gbps(nbytes, torch.sum, a, 1):.0f}", f"{gbps(nbytes, torch.sum, a, 0):.0f}")
    for bm, bn in ((16, 128), (32, 64), (64, 64)):
        r = gbps(nbytes, strides.row_sum, a, block_m=bm, block_n=bn)
        c = gbps(nbytes, strides.col_sum, a, block_m=bm, block_n=bn)
        row(f"{bm}x{bn}", f"row_sum {r:.0f}", f"col_sum {c:.0f}")
    for bm, bn in ((4, 256), (8, 256), (2, 512), (4, 1024)):  # more, narrower row blocks
        row(f"{bm}x{bn}", f"row_sum {gbps(nbytes, strides.row_sum, a, block_m=bm, block_n=bn):.0f}")
    for bm, bn in ((128, 16), (256, 16), (128, 32), (256, 8)):  # more, narrower column blocks
        row(f"{bm}x{bn}", f"col_sum {gbps(nbytes, strides.col_sum, a, block_m=bm, block_n=bn):.0f}")


def bias_relu_sweep():
    for N in (6000,):
        section(f"bias + relu fp32 4096x{N}: GB/s")
        a = torch.randn(4096, N, device="cuda")
        b = torch.randn(N, device="cuda")
        nbytes = (2 * a.numel() + N) * 4
        row("torch", f"{gbps(nbytes, masks.bias_relu_torch, a, b):.0f}")
        for bm, bn in ((16, 256), (8, 512), (32, 128), (4, 1024), (64, 64)):
            row(f"{bm}x{bn}", f"{gbps(nbytes, masks.bias_relu, a, b, block_m=bm, block_n=bn):.0f}")


def add_one_sweep():
    section("add_one int8 n=2**28: GB/s, int32 vs int64 offsets")
    a = torch.randint(-100, 100, (2**28,), dtype=torch.int8, device="cuda")
    nbytes = 2 * a.numel()
    row("torch", f"{gbps(nbytes, torch.add, a, 1):.0f}")
    for bs in (1024, 4096, 16384):
        i32 = gbps(nbytes, int64_offsets.add_one, a, offsets="int32", block_size=bs)
        i64 = gbps(nbytes, int64_offsets.add_one, a, offsets="int64", block_size=bs)
        row(f"block {bs}", f"int32 {i32:.0f}", f"int64 {i64:.0f}")


CRASH = f"""
import sys; sys.path.insert(0, {str(ROOT / "examples")!r})
import torch, triton, int64_offsets as ex
n = {N_BIG}
x = torch.zeros(n, dtype=torch.int8, device="cuda"); y = torch.zeros_like(x)
ex.add_one_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024, INT64=False)
torch.cuda.synchronize()
print("finished; tail correct:", bool((y[2**31:] == 1).all()))
"""


def crash_check():
    section("plain allocation, int32 offsets, n > 2**31, in a subprocess")
    try:
        p = subprocess.run([sys.executable, "-c", CRASH], capture_output=True, text=True, timeout=25)
        lines = (p.stdout + p.stderr).strip().splitlines()
        said = [ln for ln in lines if "CUDA error" in ln or "finished" in ln] or lines[-1:] or [""]
        row(f"exit code {p.returncode}", said[0][:200])
    except subprocess.TimeoutExpired:
        row("subprocess timed out after 25 s")


if __name__ == "__main__":
    name = torch.cuda.get_device_name()
    print(f"# strides probe: {name}, torch {torch.__version__}, triton {triton.__version__}")
    wrap_check()
    big_tensor_check()
    transpose_sweep()
    bias_relu_sweep()
    add_one_sweep()
    sums_sweep()
    if time.time() - T0 < 55:
        crash_check()
    else:
        section("crash check skipped: over 55 s already")
    print(f"\n# done in {time.time() - T0:.0f}s")
