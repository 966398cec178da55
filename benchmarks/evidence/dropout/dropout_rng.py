# ruff: noqa: B023  (each lambda is timed inside the iteration that made it)
"""Probe (issue 12): what limits dropout at about 30% of copy on the H200?

docs/kernels/dropout.md reads, without a measurement, that the Philox draw per element is the cost:
`tl.rand` runs the Philox rounds for every element and keeps one of the four 32-bit words. This probe
times, over n = 2^24 and 2^26 fp16 elements, with do_bench (L2 flushed, median of 3 interleaved passes):

* copy: the same bytes through a Triton kernel of the same tile (read x, write y);
* the example's `dropout_kernel` (one `tl.rand` per element), and the public `dropout`;
* `randint4x`: one Philox call per 4 elements, each element takes one of the four words (a different
  mask from the example's: this only measures the cost);
* `no rng`: the same kernel with the keep decided by a multiply-xor hash of the index (no Philox):
  what the kernel costs with the random numbers almost free.

Usage: python benchmarks/probes/dropout_rng.py   (needs CUDA; under a minute)
"""

from __future__ import annotations

import statistics

import torch
import triton
import triton.language as tl
from _examples import load_example  # this folder is on sys.path (see _examples.py)

BLOCK = 1024
P = 0.1


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def dropout_4x_kernel(x_ptr, y_ptr, n, p, scale, seed, BLOCK_SIZE: tl.constexpr):
    """One Philox call per 4 consecutive elements (randint4x), each element one of the four words."""
    quad = tl.program_id(0).to(tl.int64) * (BLOCK_SIZE // 4) + tl.arange(0, BLOCK_SIZE // 4)
    r0, r1, r2, r3 = tl.randint4x(seed, quad)
    r = tl.join(tl.join(r0, r1), tl.join(r2, r3))  # [B/4, 2, 2]: element 4q + 2i + j takes word (i, j)
    r = tl.reshape(r, [BLOCK_SIZE])
    u = tl.uint_to_uniform_float(r)
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, tl.where(u >= p, x * scale, 0.0).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def dropout_hash_kernel(x_ptr, y_ptr, n, p, scale, seed, BLOCK_SIZE: tl.constexpr):
    """The keep from a cheap integer hash of (seed, index): not a good generator, a cost floor."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n
    h = (offs ^ seed) * 0x2545F491
    h = h ^ (h >> 29)
    u = (h & 0xFFFFFF).to(tl.float32) * (1.0 / 16777216.0)
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, tl.where(u >= p, x * scale, 0.0).to(y_ptr.dtype.element_ty), mask=m)


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("dropout")
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; fp16, p = {P}; "
          "do_bench median (L2 flushed), median of 3 interleaved passes; GB/s counts read x + write y")
    scale = 1.0 / (1.0 - P)
    for n in (2**24, 2**26):
        x = torch.randn(n, device="cuda", dtype=torch.float16)
        y = torch.empty_like(x)
        grid = (triton.cdiv(n, BLOCK),)
        cases = {
            "copy (Triton, same tile)": lambda: copy_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK),
            "dropout_kernel (tl.rand per element)": lambda: ex.dropout_kernel[grid](
                x, y, n, P, scale, 1234, BLOCK_SIZE=BLOCK),
            "dropout() public": lambda: ex.dropout(x, P, 1234),
            "randint4x (one Philox per 4 elements)": lambda: dropout_4x_kernel[grid](
                x, y, n, P, scale, 1234, BLOCK_SIZE=BLOCK),
            "no rng (integer hash)": lambda: dropout_hash_kernel[grid](x, y, n, P, scale, 1234, BLOCK_SIZE=BLOCK),
            "torch dropout": lambda: torch.nn.functional.dropout(x, P, training=True),
        }
        times = {k: [] for k in cases}
        for label, fn in list(cases.items()):
            try:
                fn()
                torch.cuda.synchronize()
                kept = (y != 0).float().mean().item() if "kernel" in label or "rng" in label else None
                if kept is not None:
                    print(f"{n:>9} {label:40s} kept {kept:.4f}")
            except Exception as err:  # a variant that does not compile: say so, drop it
                print(f"{n:>9} {label:40s} FAILED {type(err).__name__}: {str(err)[:80]}")
                del cases[label], times[label]
        for _ in range(3):
            for label, fn in cases.items():
                times[label].append(triton.testing.do_bench(fn, warmup=5, rep=30, return_mode="median"))
        copy_ms = statistics.median(times["copy (Triton, same tile)"])
        for label, samples in times.items():
            t = statistics.median(samples)
            print(f"{n:>9} {label:40s} {t * 1e3:8.1f} us {2 * n * 2 / t * 1e-6:7.0f} GB/s "
                  f"{100 * copy_ms / t:5.1f}% of the copy kernel", flush=True)
        x = y = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
