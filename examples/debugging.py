# %% [markdown]
# # Debugging a kernel: prints, assertions and the compiler's output
#
# Two small kernels: a row sum that can print what each program sees, and a one-tile
# matmul whose compiled code we read to check that `tl.dot` reached the tensor cores.
#
# You will see:
#
# * `print` inside a kernel under `TRITON_INTERPRET=1` (plain Python, so `breakpoint()`
#   works too), and the same line compiled to `tl.device_print` on a GPU;
# * `tl.static_print` and `tl.static_assert`, which run while the kernel compiles;
# * the compiler's stages (`ttir`, `ttgir`, `llir`, `ptx`, `cubin`), read from the
#   object a launch returns on a GPU, or compiled ahead of time for an H100/H200
#   (`sm_90`) on a machine with no GPU at all.
#
# Run it with `python examples/debugging.py`.

# %%
# --8<-- [start:setup]
import os
import re

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
# --8<-- [end:setup]


# %% [markdown]
# ## A kernel that talks
#
# `DEBUG` is a `tl.constexpr`: with it off, the prints are not even compiled.


# %%
# --8<-- [start:kernel]
@triton.jit
def row_sum_kernel(
    x_ptr,  # pointer to x (n_rows, n_cols)
    out_ptr,  # pointer to the output (n_rows,)
    n_cols,  # row length
    stride_row,  # elements between the starts of two rows
    BLOCK_COLS: tl.constexpr,  # a power of two >= n_cols
    DEBUG: tl.constexpr,  # compile the prints in
):
    tl.static_assert(BLOCK_COLS >= 16, "BLOCK_COLS must be at least 16")  # (1)!
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    total = tl.sum(x, axis=0)
    if DEBUG:
        tl.static_print("compiling row_sum_kernel with BLOCK_COLS =",  # (2)!
                        BLOCK_COLS)
        print("row_sum", row, total)  # (3)!
    tl.store(out_ptr + row, total)


MAX_COLS = 16_384  # the whole row sits in registers, as one tile


def check_rows(x: torch.Tensor) -> None:
    """Refuse, before any launch, what the row-sum kernels cannot sum right."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype != torch.float32:
        raise TypeError(f"x must be float32, got {x.dtype}")
    if x.dim() != 2 or (x.stride(1) != 1 and x.shape[1] > 1):
        raise ValueError("x must be 2-D with contiguous rows, got shape "
                         f"{tuple(x.shape)}, stride {x.stride()}")
    if x.device.type == "cpu" and not INTERPRETED:
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")
    n_rows, n_cols = x.shape
    if n_cols > MAX_COLS:
        raise ValueError(f"x must have at most {MAX_COLS} columns (a row is one tile), "
                         f"got {n_cols}")
    last = (n_rows - 1) * x.stride(0) + n_cols - 1 if x.numel() else 0  # in int32
    if last > 2**31 - 1:
        raise ValueError(f"x of shape {tuple(x.shape)} and stride {x.stride()} reaches "
                         f"element offset {last}, past 2**31 - 1: the kernel computes "
                         "int32 offsets")
    if n_rows > 2**31 - 1:
        raise ValueError(f"x has {n_rows} rows, more than grid axis 0 holds "
                         "(2**31 - 1 programs)")


def row_sum(x: torch.Tensor, debug: bool = False) -> torch.Tensor:
    """Sum of each row of a 2-D float32 tensor whose rows are contiguous."""
    check_rows(x)
    n_rows, n_cols = x.shape
    out = torch.empty(n_rows, device=x.device, dtype=x.dtype)
    block = max(16, triton.next_power_of_2(n_cols))
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16  # row in registers
    row_sum_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_COLS=block,
                              DEBUG=debug, num_warps=num_warps)
    return out


def row_sum_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference."""
    return x.sum(dim=1)
# --8<-- [end:kernel]


# %% [markdown]
# ## Stopping inside a kernel
#
# Under the interpreter a kernel is ordinary Python running on NumPy arrays, so Python's
# debugger can stop in it. This launcher refuses to run on a GPU, where it cannot work.


# %%
# --8<-- [start:pdb]
@triton.jit
def row_sum_pdb_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK_COLS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_COLS)
    x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    breakpoint()  # (1)!
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def row_sum_in_pdb(x: torch.Tensor) -> torch.Tensor:
    if not INTERPRETED:
        raise RuntimeError("breakpoint() in a kernel needs TRITON_INTERPRET=1")
    check_rows(x)
    out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
    block = max(16, triton.next_power_of_2(x.shape[1]))
    row_sum_pdb_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK_COLS=block)
    return out
# --8<-- [end:pdb]


# %% [markdown]
# ## Reading what the compiler made
#
# One program multiplies one `BLOCK x BLOCK` tile. On a GPU, `kernel[grid](...)`
# returns the `CompiledKernel` it launched, whose `asm` dict holds every stage;
# `tile_matmul_asm` compiles for any NVIDIA architecture without launching, which
# works with no GPU at all.


# %%
# --8<-- [start:asm]
@triton.jit
def tile_matmul_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr,
                       INPUT_PRECISION: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tile = r[:, None] * BLOCK + r[None, :]  # a contiguous BLOCK x BLOCK tile
    c = tl.dot(tl.load(a_ptr + tile), tl.load(b_ptr + tile),
               input_precision=INPUT_PRECISION)
    tl.store(c_ptr + tile, c.to(c_ptr.dtype.element_ty))


def _compile_tile_matmul(signature, constexprs, arch):
    """Compile tile_matmul_kernel for sm_<arch>; return the text of every stage."""
    from triton.backends.compiler import GPUTarget

    src = triton.compiler.ASTSource(fn=tile_matmul_kernel, signature=signature,
                                    constexprs=constexprs)
    compiled = triton.compile(src, target=GPUTarget("cuda", arch, 32))
    return {stage: asm for stage, asm in compiled.asm.items() if isinstance(asm, str)}


def tile_matmul_asm(dtype="fp16", block=64, arch=90,
                    input_precision="tf32") -> dict[str, str]:
    """The compiler's output (ttir, ttgir, llir, ptx) for sm_<arch>, not launched."""
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}",
                 "BLOCK": "constexpr", "INPUT_PRECISION": "constexpr"}
    constexprs = {"BLOCK": block, "INPUT_PRECISION": input_precision}
    if not INTERPRETED:
        return _compile_tile_matmul(signature, constexprs, arch)
    # The interpreter leaves triton.language patched after some kernels (triton 3.6),
    # which breaks a real compile in the same process: compile in a fresh one.  # (1)!
    import inspect
    import json
    import subprocess
    import sys
    import tempfile

    script = "\n".join([
        "import json, sys, triton, triton.language as tl",
        inspect.getsource(tile_matmul_kernel.fn),
        inspect.getsource(_compile_tile_matmul),
        f"json.dump(_compile_tile_matmul({signature!r}, {constexprs!r}, {arch}),"
        " sys.stdout)",
    ])
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(script)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    try:
        done = subprocess.run([sys.executable, fh.name], env=env, capture_output=True,
                              text=True, check=False)
    finally:
        os.unlink(fh.name)
    if done.returncode != 0:
        raise RuntimeError(f"compiling tile_matmul_kernel for sm_{arch} failed:\n"
                           f"{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _check_tiles(a, b, input_precision) -> None:
    if a.shape != b.shape or a.dim() != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"a and b must be the same square tile, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    if a.shape[0] not in (16, 32, 64, 128):
        raise ValueError("a and b must be 16, 32, 64 or 128 square (tl.dot tile "
                         f"sizes), got {tuple(a.shape)}")
    floats = (torch.float16, torch.bfloat16, torch.float32)
    if a.dtype not in floats or b.dtype != a.dtype:
        raise TypeError("a and b must share a dtype of float16, bfloat16 or float32, "
                        f"got {a.dtype} and {b.dtype}")
    if a.device != b.device or (a.device.type == "cpu" and not INTERPRETED):
        raise ValueError("a and b must be on one device that can run the kernel, "
                         f"got {a.device} and {b.device}")
    if input_precision not in ("tf32", "ieee"):
        raise ValueError("input_precision must be 'tf32' or 'ieee', "
                         f"got {input_precision!r}")
    if not (a.is_contiguous() and b.is_contiguous()):
        raise ValueError("a and b must be contiguous")


def launch_tile_matmul(a: torch.Tensor, b: torch.Tensor, input_precision="tf32"):
    """Run the kernel; return c and the launch's result (a CompiledKernel on a GPU)."""
    _check_tiles(a, b, input_precision)
    c = torch.empty_like(a)
    compiled = tile_matmul_kernel[(1,)](a, b, c, BLOCK=a.shape[0],
                                        INPUT_PRECISION=input_precision)
    return c, compiled


MMA = re.compile(r"^\s*(wgmma\.mma_async|mma\.sync|mma)\S*", re.MULTILINE)


def tensor_core_ops(ptx: str) -> dict[str, int]:
    """Count tensor-core instructions in PTX: wgmma (Hopper), mma.sync (Ampere on)."""
    counts: dict[str, int] = {}
    for m in MMA.finditer(ptx):
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts
# --8<-- [end:asm]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1), (5, 17), (33, 100))) -> None:
    for shape in shapes:
        x = torch.randn(*shape, device=DEVICE)
        torch.testing.assert_close(row_sum(x), row_sum_torch(x), rtol=1e-5, atol=1e-5)
    a = torch.randn(32, 32, device=DEVICE)
    b = torch.randn(32, 32, device=DEVICE)
    c, _ = launch_tile_matmul(a, b, input_precision="ieee")
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    ops = tensor_core_ops(tile_matmul_asm("fp16", 64, arch=90)["ptx"])
    assert ops.get("wgmma.mma_async", 0) > 0, ops
    print(f"debugging: row_sum and tile matmul match torch on {DEVICE.type}; "
          f"fp16 tl.dot for sm_90 compiles to {ops}")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
