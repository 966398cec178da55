# %% [markdown]
# # Fused softmax: one row, many rows, rows too long for the chip
#
# `softmax(x)` over the last dimension of a 2-D tensor, in four steps, each one
# a kernel you can launch on its own:
#
# 1. **one program per row**: the whole row is one tile, read once, written once;
# 2. **several rows per program**: short rows give a program too little work, so
#    one program takes a `[ROWS, BLOCK_N]` tile of rows;
# 3. **online (streaming)**: a row too long for one tile is walked in chunks,
#    keeping a running maximum and a rescaled running sum, then walked again to
#    write the result, backwards, so that the second walk finds the most
#    recently read chunks in L2;
# 4. **split (GPU only)**: a long row is split into chunks that programs hold on
#    chip at the same time; they exchange each chunk's max and sum through global
#    memory and write the result without reading the row again.
#
# fp32, fp16 and bf16 in, the same dtype out, fp32 arithmetic inside. The
# launcher `softmax(x)` picks the step from the row length.
#
# Run it with `python examples/softmax.py`.

# %%
# --8<-- [start:setup]
import functools
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## The reference
#
# What we must match: `torch.softmax` computed in fp32 and cast back. Written as
# separate eager ops, the same maths is five kernels that read the matrix five
# times and write it three times; `softmax_unfused` spells them out.


# %%
# --8<-- [start:reference]
def softmax_torch(x: torch.Tensor) -> torch.Tensor:
    """The plain torch reference: fp32 maths, result in x's dtype."""
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def softmax_unfused(x: torch.Tensor) -> torch.Tensor:
    """Softmax in eager torch ops: each line is one kernel, one trip through memory."""
    row_max = x.amax(dim=1, keepdim=True)  # kernel 1: read M*N, write M
    shifted = x - row_max  # kernel 2: read M*N (+M), write M*N
    e = torch.exp(shifted)  # kernel 3: read M*N, write M*N
    row_sum = e.sum(dim=1, keepdim=True)  # kernel 4: read M*N, write M
    return e / row_sum  # kernel 5: read M*N (+M), write M*N
# --8<-- [end:reference]


# %% [markdown]
# ## Step 1: one program per row
#
# The row is one tile of `BLOCK_N` lanes (the next power of two above `N`).
# Lanes past the end load `-inf`, so they add nothing to the max and `exp`
# turns them into zeros in the sum. Only the row stride is a runtime argument:
# any view whose rows are contiguous works.


# %%
# --8<-- [start:row-kernel]
@triton.jit
def softmax_row_kernel(
    x_ptr,  # pointer to the input, [M, N] with unit column stride
    y_ptr,  # pointer to the output, same shape
    n_cols,  # N, the length of a row
    stride_xm,  # elements between x[i, 0] and x[i + 1, 0]
    stride_ym,  # elements between y[i, 0] and y[i + 1, 0]
    BLOCK_N: tl.constexpr,  # a power of two >= N: the whole row is one tile
):
    row = tl.program_id(0).to(tl.int64)  # (1)!
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=float("-inf"))
    x = x.to(tl.float32)  # (2)!
    x_max = tl.max(x, axis=0)
    e = tl.exp(x - x_max)  # masked lanes: exp(-inf) = 0
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:row-kernel]


# %% [markdown]
# ## Step 2: several rows per program
#
# A 512-wide fp32 row is 2 KB: a program that reads 2 KB, reduces and writes
# 2 KB spends most of its life waiting. This kernel takes `ROWS` rows at once
# (a 2-D tile, reductions along `axis=1`) and loops over row blocks with a
# stride of the grid size, so the same kernel runs with one program per block
# or with a persistent grid.


# %%
# --8<-- [start:multirow-kernel]
@triton.jit
def softmax_multirow_kernel(
    x_ptr,  # pointer to the input, [M, N] with unit column stride
    y_ptr,  # pointer to the output, same shape
    n_rows,  # M
    n_cols,  # N
    stride_xm,  # row stride of x, in elements
    stride_ym,  # row stride of y, in elements
    ROWS: tl.constexpr,  # rows per tile, a power of two
    BLOCK_N: tl.constexpr,  # a power of two >= N
):
    n_blocks = tl.cdiv(n_rows, ROWS)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    for block in range(tl.program_id(0), n_blocks, tl.num_programs(0)):  # (1)!
        rows = tl.cast(block, tl.int64) * ROWS + tl.arange(0, ROWS)  # int64 first
        rows_in = tl.minimum(rows, n_rows - 1)  # (2)!
        x_ptrs = x_ptr + rows_in[:, None] * stride_xm + cols[None, :]
        x = tl.load(x_ptrs, mask=col_mask[None, :], other=float("-inf")).to(tl.float32)
        x_max = tl.max(x, axis=1)  # (3)!
        e = tl.exp(x - x_max[:, None])
        y = e * (1.0 / tl.sum(e, axis=1))[:, None]
        y_ptrs = y_ptr + rows[:, None] * stride_ym + cols[None, :]
        mask = (rows < n_rows)[:, None] & col_mask[None, :]
        tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:multirow-kernel]


# %% [markdown]
# ## Step 3: online softmax for long rows
#
# A 262144-wide fp32 row is 1 MB: it does not fit in a program's registers.
# The first loop walks the row in `BLOCK_N` chunks and keeps, per lane, the
# largest value seen `m` and the sum `s` of `exp(x - m)`; when `m` grows, the old
# sum is rescaled by `exp(m_old - m_new)`. One cross-lane combine gives the row's
# max and sum. The second loop walks the row again, backwards, and writes
# `exp(x - max) / sum`: the chunks read last are the ones most likely still in L2.
# A persistent grid of two programs per SM walks the rows.


# %%
# --8<-- [start:online-kernel]
@triton.jit
def softmax_online_kernel(
    x_ptr,  # pointer to the input, [M, N] with unit column stride
    y_ptr,  # pointer to the output, same shape
    n_rows,  # M
    n_cols,  # N
    stride_xm,  # row stride of x, in elements
    stride_ym,  # row stride of y, in elements
    BLOCK_N: tl.constexpr,  # chunk length, a power of two
    REVERSE: tl.constexpr,  # second pass from the end of the row back to the start
):
    cols = tl.arange(0, BLOCK_N)
    n_chunks = tl.cdiv(n_cols, BLOCK_N)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):  # (1)!
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_xm
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
        m = tl.full([BLOCK_N], float("-inf"), tl.float32)  # running max, per lane
        s = tl.zeros([BLOCK_N], tl.float32)  # running sum of exp(x - m), per lane
        for c in range(0, n_chunks):
            offs = c * BLOCK_N + cols
            x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf"))
            x = x.to(tl.float32)
            m_new = tl.maximum(m, x)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # (2)!
            s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)  # (3)!
            m = m_new
        row_max = tl.max(m, axis=0)
        row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)  # (4)!
        inv_sum = 1.0 / row_sum
        for i in range(0, n_chunks):
            c = n_chunks - 1 - i if REVERSE else i
            offs = c * BLOCK_N + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
            y = tl.exp(x - row_max) * inv_sum
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:online-kernel]


# %% [markdown]
# ## Step 4: split a long row across programs
#
# The online kernel reads a long row twice. To read it once, the row is cut into
# `BLOCK_N` chunks, one per program, and the programs of a row hold their chunks
# in registers at the same time. Each computes its chunk's max and sum of
# `exp(x - max)`, publishes both to a small buffer in global memory, and counts
# itself in with an atomic add on its row's counter. Once the counter reaches the
# number of chunks, every program reads the row's published pairs, combines them
# into the row's max and sum (the same rescaling as the online step), and writes
# its chunk from registers: x is read once and y written once.
#
# Waiting for other programs is only safe if they are running too, and CUDA does
# not promise to start programs in any order. So a program does not take its
# (row, chunk) from `tl.program_id`: it takes a ticket, an atomic counter it
# increments first thing. Tickets go out in the order programs actually start,
# so every row before the lowest unfinished one is done, and that row's chunks
# hold the next tickets: they are running or get the next free slot. The one
# condition is that the chunks of one row fit on the GPU at once; the launcher
# refuses more chunks per row than SMs. A wait that still sees the counter short
# after `max_spins` polls gives up and writes NaN: a broken assumption shows as a
# wrong answer, never as a hung GPU.
#
# The interpreter runs programs one after another, so there a program waits for
# chunks that start only after it has finished: the launcher runs this step on a
# GPU only.


# %%
# --8<-- [start:split-kernel]
@triton.jit
def softmax_split_kernel(
    x_ptr,  # pointer to the input, [M, N] with unit column stride
    y_ptr,  # pointer to the output, same shape
    stats_ptr,  # fp32 [M * n_chunks * 2]: each chunk's max and sum of exp, published
    sync_ptr,  # int32 [M + 1], zeroed: chunks done per row, then the ticket counter
    n_rows,  # M
    n_cols,  # N
    stride_xm,  # row stride of x, in elements
    stride_ym,  # row stride of y, in elements
    n_chunks,  # chunks per row, cdiv(N, BLOCK_N)
    max_spins,  # polls of the row counter before giving up (the result is then NaN)
    BLOCK_N: tl.constexpr,  # chunk length, a power of two
    MAX_CHUNKS: tl.constexpr,  # a power of two >= n_chunks
):
    ticket = tl.atomic_add(sync_ptr + n_rows, 1)  # (1)!
    row = ticket // n_chunks
    chunk = ticket % n_chunks
    offs = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs < n_cols
    x = tl.load(x_ptr + tl.cast(row, tl.int64) * stride_xm + offs, mask=mask,
                other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    m_safe = tl.where(m == float("-inf"), 0.0, m)  # a chunk of -inf has sum 0, not NaN
    s = tl.sum(tl.exp(x - m_safe), axis=0)
    row_stats = stats_ptr + tl.cast(row, tl.int64) * n_chunks * 2
    tl.store(row_stats + chunk * 2, m)
    tl.store(row_stats + chunk * 2 + 1, s)
    tl.debug_barrier()  # (2)!
    tl.atomic_add(sync_ptr + row, 1, sem="release")
    done = tl.atomic_add(sync_ptr + row, 0, sem="acquire")  # (3)!
    spins = 0
    while (done < n_chunks) & (spins < max_spins):
        done = tl.atomic_add(sync_ptr + row, 0, sem="acquire")
        spins += 1
    ks = tl.arange(0, MAX_CHUNKS)
    valid = ks < n_chunks
    ms = tl.load(row_stats + ks * 2, mask=valid, other=float("-inf"), volatile=True)
    ss = tl.load(row_stats + ks * 2 + 1, mask=valid, other=0.0, volatile=True)
    row_max = tl.max(ms, axis=0)
    row_sum = tl.sum(tl.where(valid, ss * tl.exp(ms - row_max), 0.0), axis=0)  # (4)!
    inv_sum = tl.where(done >= n_chunks, 1.0 / row_sum, float("nan"))  # (5)!
    y = tl.exp(x - row_max) * inv_sum
    tl.store(y_ptr + tl.cast(row, tl.int64) * stride_ym + offs,
             y.to(y_ptr.dtype.element_ty), mask=mask)
# --8<-- [end:split-kernel]


# %% [markdown]
# ## The launcher
#
# It validates the input, picks the step from the row length, and sizes the
# launch. The thresholds and warp counts come from a sweep on the H200.


# %%
# --8<-- [start:launcher-checks]
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
VARIANTS = ("row", "multirow", "online")  # each runs on a GPU and in the interpreter
GPU_VARIANTS = ("split",)  # programs wait for each other: a GPU only
MAX_ROW_BLOCK = 32768  # longest row (a power of two) held in one tile
MULTIROW_TILE = 4096  # elements per multirow tile: ROWS * BLOCK_N
ONLINE_BLOCK = 16384  # chunk of the online kernel: 64 KB of fp32 per load
ONLINE_PROGRAMS_PER_SM = 2  # persistent grid of the online kernel
SPLIT_BLOCK = 8192  # chunk of the split kernel: 32 KB of fp32 per program
SPLIT_WARPS = (4, 8)  # warps per split program: up to SPLIT_FEW_CHUNKS chunks, and more
#   (8192-element chunks were fastest with 4 warps at N = 65536, with 8 at 262144)
SPLIT_FEW_CHUNKS = 8  # rows of at most this many chunks take SPLIT_WARPS[0]
SPLIT_MAX_SPINS = 2**24  # polls before a wait gives up: seconds, far past any real wait
MAX_TILE = 2**20  # Triton's limit on the elements of one tile
INT32_MAX = 2**31 - 1  # the most programs along grid axis 0


def _check_input(x) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"x must be float16, bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D (rows, cols), got shape {tuple(x.shape)}")
    if x.shape[1] == 0:
        raise ValueError("x must have at least one column: softmax of an empty row is "
                         "undefined")
    if x.shape[1] > 1 and x.stride(1) != 1:
        raise ValueError("x must have unit stride along its last dim, "
                         f"got strides {x.stride()}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("x is on the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _num_warps(block_elems: int) -> int:
    """16 fp32 elements per thread from 1024 up to 16384 (2 to 32 warps); never fewer
    than 2 warps, so a 512-wide row gets 8 per thread, and never more than 32 warps."""
    return max(2, min(32, block_elems // 512))


@functools.lru_cache  # asked once per device (a tensor's device names its index)
def _sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device; a small stand-in for the interpreter."""
    if device.type != "cuda":
        return 4
    return torch.cuda.get_device_properties(device).multi_processor_count


def _check_launch(variant: str, n_rows: int, block_n: int, rows: int, chunks: int = 1,
                  n_cols: int = 0) -> None:
    """Each step's limits, checked before any launch (chunks: programs per row)."""
    if variant in ("row", "multirow") and block_n < n_cols:
        raise ValueError(f"variant {variant!r} needs block_n >= N = {n_cols}, "
                         f"got {block_n}")
    if rows * block_n > MAX_TILE:
        raise ValueError(f"variant {variant!r} would hold {rows} x {block_n} elements "
                         f"in one tile, more than Triton's {MAX_TILE} (rows longer "
                         "than that need 'online')")
    if variant in ("row", "split") and n_rows * chunks > INT32_MAX:
        raise ValueError(f"variant {variant!r} launches one program per row and chunk: "
                         f"at most 2**31 - 1, got {n_rows} rows x {chunks} chunks")


def _split_chunks(n_cols: int, block_n: int, sm_count: int) -> int:
    """Chunks per row of the split step; refused when they cannot all run at once."""
    n_chunks = triton.cdiv(n_cols, block_n)
    if n_chunks > sm_count:
        raise ValueError(f"variant 'split' needs all {n_chunks} chunks of a row "
                         f"(N = {n_cols}, block_n = {block_n}) on the GPU at once, "
                         f"more than its {sm_count} SMs: use a larger block_n or "
                         "'online'")
    return n_chunks


def _split_warps(n_chunks: int) -> int:
    """Warps per split program: fewer for rows of few chunks (measured on the H200)."""
    return SPLIT_WARPS[0] if n_chunks <= SPLIT_FEW_CHUNKS else SPLIT_WARPS[1]
# --8<-- [end:launcher-checks]


# --8<-- [start:launcher-pick]
def pick_variant(n_cols: int, sm_count: int | None = None) -> str:
    """The step for rows of n_cols; on a GPU (sm_count given) long rows may be split."""
    block_n = triton.next_power_of_2(n_cols)
    if block_n <= 256:
        return "multirow"
    if block_n <= MAX_ROW_BLOCK:
        return "row"
    if sm_count is not None and triton.cdiv(n_cols, SPLIT_BLOCK) <= sm_count:
        return "split"
    return "online"
# --8<-- [end:launcher-pick]


# --8<-- [start:launcher-config]
def _check_config(variant, on_gpu: bool, config: dict) -> None:
    if variant not in VARIANTS + GPU_VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS + GPU_VARIANTS} or None, "
                         f"got {variant!r}")
    if variant in GPU_VARIANTS and not on_gpu:
        raise ValueError(f"variant {variant!r} needs a GPU: its programs wait for each "
                         "other, and the interpreter runs them one after another")
    for name in ("block_n", "rows"):
        v = config.get(name)
        if v is not None and (v < 1 or v & (v - 1)):
            raise ValueError(f"{name} must be a positive power of two (a tile "
                             f"dimension), got {v}")
# --8<-- [end:launcher-config]


# --8<-- [start:launcher]
def softmax(x: torch.Tensor, variant: str | None = None, **config) -> torch.Tensor:
    """Softmax over the last dim of a 2-D tensor, computed in fp32.

    variant: None picks from the row length (and, on a GPU, the SM count);
    "row", "multirow", "online" or "split" (GPU only) forces a step. config
    overrides the launch settings (block_n, rows, num_warps, num_stages,
    num_programs, reverse, max_spins), for experiments and tests.
    """
    _check_input(x)
    on_gpu = x.device.type == "cuda"
    if variant is None:
        variant = pick_variant(x.shape[1], _sm_count(x.device) if on_gpu else None)
    _check_config(variant, on_gpu, config)
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    if n_rows == 0:
        return y
    block_n = config.pop("block_n", None)
    if variant == "row":
        block_n = block_n or triton.next_power_of_2(n_cols)
        _check_launch(variant, n_rows, block_n, 1, n_cols=n_cols)
        num_warps = config.pop("num_warps", _num_warps(block_n))
        softmax_row_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0),
                                      BLOCK_N=block_n, num_warps=num_warps)
    elif variant == "multirow":
        block_n = block_n or triton.next_power_of_2(n_cols)
        rows = config.pop("rows", max(1, MULTIROW_TILE // block_n))
        _check_launch(variant, n_rows, block_n, rows, n_cols=n_cols)
        num_warps = config.pop("num_warps", _num_warps(rows * block_n))
        n_blocks = triton.cdiv(n_rows, rows)
        programs = config.pop("num_programs", n_blocks)  # it loops over the rest
        softmax_multirow_kernel[(min(n_blocks, programs, INT32_MAX),)](
            x, y, n_rows, n_cols, x.stride(0), y.stride(0), ROWS=rows, BLOCK_N=block_n,
            num_warps=num_warps, num_stages=config.pop("num_stages", 3))
    elif variant == "split":
        block_n = block_n or min(SPLIT_BLOCK, triton.next_power_of_2(n_cols))
        n_chunks = _split_chunks(n_cols, block_n, _sm_count(x.device))
        _check_launch(variant, n_rows, block_n, 1, n_chunks)
        stats = torch.empty(n_rows * n_chunks * 2, device=x.device, dtype=torch.float32)
        sync = torch.zeros(n_rows + 1, device=x.device, dtype=torch.int32)
        num_warps = config.pop("num_warps", _split_warps(n_chunks))
        softmax_split_kernel[(n_rows * n_chunks,)](
            x, y, stats, sync, n_rows, n_cols, x.stride(0), y.stride(0), n_chunks,
            config.pop("max_spins", SPLIT_MAX_SPINS), BLOCK_N=block_n,
            MAX_CHUNKS=triton.next_power_of_2(n_chunks), num_warps=num_warps)
    else:
        block_n = block_n or min(ONLINE_BLOCK, triton.next_power_of_2(n_cols))
        _check_launch(variant, n_rows, block_n, 1)
        num_warps = config.pop("num_warps", _num_warps(block_n))
        programs = ONLINE_PROGRAMS_PER_SM * _sm_count(x.device)  # (1)!
        grid = (min(n_rows, config.pop("num_programs", programs)),)
        softmax_online_kernel[grid](
            x, y, n_rows, n_cols, x.stride(0), y.stride(0), BLOCK_N=block_n,
            REVERSE=config.pop("reverse", True), num_warps=num_warps,
            num_stages=config.pop("num_stages", 3))
    if config:
        raise TypeError(f"unknown config for variant {variant!r}: {sorted(config)}")
    return y
# --8<-- [end:launcher]


# %% [markdown]
# ## Check it
#
# Odd shapes, every step on every shape it supports, a row-strided view, and
# rows with a huge spread of values (the max subtraction is what keeps `exp`
# from overflowing).


# %%
# --8<-- [start:check]
def self_check(shapes=((1, 1), (7, 17), (33, 781), (5, 1025), (3, 3000))) -> None:
    for m, n in shapes:
        x = 30 * torch.randn(m, n, device=DEVICE)
        want = softmax_torch(x)
        on_gpu = GPU_VARIANTS if DEVICE.type == "cuda" else ()  # split needs a GPU
        for variant in (None, *VARIANTS, *on_gpu):
            cfg = {"block_n": 256} if variant in ("online", "split") else {}
            got = softmax(x, variant, **cfg)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    wide = torch.randn(9, 2 * 1025, device=DEVICE)[:, 3:1028]  # rows 2050 apart
    torch.testing.assert_close(softmax(wide), softmax_torch(wide), rtol=1e-5, atol=1e-6)
    steps = ("row, multirow, online and split" if DEVICE.type == "cuda"
             else "row, multirow and online")
    print(f"softmax: {steps} kernels match torch.softmax on {DEVICE.type} "
          f"for shapes {[tuple(s) for s in shapes]} and a row-strided view")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
