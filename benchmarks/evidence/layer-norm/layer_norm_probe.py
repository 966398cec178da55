# ruff: noqa: B023, E731
"""Probe: layer norm at the copy ceiling on the H200 (backward stage 1 and 2, and the forward).

Self-contained: the shipped kernels of examples/layer_norm.py are copied here verbatim (the
baseline), next to variants that keep more bytes in flight. On a CUDA machine:

1. the copy ceiling: torch `dst.copy_(src)` of 2 GiB, bytes read + written, do_bench median;
2. per N in 1024 ... 16384 (fp16, M x N = 2^26):
   a. every backward stage-1 variant is checked against torch (fp32 autograd) on a 999 x N' shape
      (N' a multiple of 16 that is not a power of two: the same compiled kernel as the timed one)
      and, if right, screened: stage 1 alone, do_bench_cudagraph (rep LN_SCREEN_REP ms);
   b. the best LN_TOP_GRIDS variants are timed again at 1, 2, 4, 8 programs per SM (up to the
      occupancy the compiled kernel allows);
   c. stage 2 (the dW/dB reduction) variants are checked and screened at each finalist's group count;
   d. finalists (the shipped launcher, the shipped stage 1 with the best stage 2, the best
      LN_TOP variants with their best grid and stage 2) are checked again on the odd shape of the
      brief (1000 x N'', N'' not a multiple of 16: a second compile) and, for bf16, on 999 x N';
      then timed, fp16 and bf16, whole backward (stage 1 + 2, with the allocations a launcher
      makes) and stage 1 alone, with do_bench (warmup 25, rep LN_BENCH_REP, median, L2 flushed) and
      do_bench_cudagraph (rep LN_GRAPH_REP, median of its 10 replays);
   e. peers: torch eager `aten.native_layer_norm_backward` and the same under
      `torch.compile(dynamic=False)`, compiled afresh per shape after `torch.compiler.reset()`;
   f. forward variants: checked, screened, the best timed against the shipped forward.
3. GB/s counts the bytes the op must move (backward: read x, dy, write dx; forward: read x,
   write y; the O(N) and O(M) vectors are ignored); "%" is of the copy ceiling.
4. The compact table is printed last; everything goes to $OUT/layer_norm_probe.json (OUT defaults
   to /tmp/out), rewritten after every N so a run cut short keeps what it measured.

Without CUDA it sets TRITON_INTERPRET=1 and only checks every variant's correctness on tiny shapes
(the interpreter's own sizes: 7 x N' and 5 x N'' per N bucket, and 7 x 37, 5 x 300 with scaled-down
variants), no timing.

Knobs (environment): LN_N (e.g. "1024,16384"), LN_BUDGET_S (200: when the time so far projects past
it, the later N run lean: no grid sweep, no bf16 torch.compile or bf16 stage-1-alone timing, fewer
forward variants; past 1.1x it, peers and the forward are skipped), LN_SCREEN_REP (10), LN_GRAPH_REP
(25: do_bench_cudagraph runs 10 replays of rep ms each, so rep=100 costs >= 1 s a point), LN_BENCH_REP
(100), LN_TOP (2), LN_TOP_GRIDS (3), LN_PEERS (1), LN_FWD (1). LN_DRYRUN=1 without CUDA runs the GPU
code path in the interpreter on tiny sizes with wall-clock stand-ins for the timers (a smoke test of the
harness only; about 5 minutes for all N on a slow machine).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import torch

CUDA = torch.cuda.is_available()
DRYRUN = not CUDA and os.environ.get("LN_DRYRUN") == "1"  # the GPU code path in the interpreter, tiny sizes
if not CUDA:  # Triton's CPU interpreter; must be set before triton is imported
    os.environ["TRITON_INTERPRET"] = "1"

import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = torch.device("cuda" if CUDA else "cpu")
T0 = time.perf_counter()
EPS = 1e-5


def env_int(name, default):
    return int(os.environ.get(name, default))


BUDGET_S = float(os.environ.get("LN_BUDGET_S", 200))
SCREEN_REP = env_int("LN_SCREEN_REP", 10)
GRAPH_REP = env_int("LN_GRAPH_REP", 25)
BENCH_REP = env_int("LN_BENCH_REP", 100)
TOP = env_int("LN_TOP", 2)
TOP_GRIDS = env_int("LN_TOP_GRIDS", 3)
PEERS = env_int("LN_PEERS", 1)
DO_FWD = env_int("LN_FWD", 1)
HIDDEN = [int(v) for v in os.environ.get("LN_N", "1024,2048,4096,8192,16384").split(",")]
ELEMENTS = 2**26 if not DRYRUN else 2**14
M16, MODD = (999, 1000) if not DRYRUN else (9, 10)  # rows of the check shapes
# the dry run takes fp32 for bf16: bf16 is wrong in the interpreter
DTYPES = [("fp16", torch.float16), ("bf16", torch.bfloat16) if not DRYRUN else ("fp32", torch.float32)]
# per N bucket (BLOCK_N): the check widths. n16: a multiple of 16, not a power of two (compiles
# to the same kernel as the timed N); odd: not a multiple of 16 (the brief's 1500 and 5000)
CHECK_N16 = {1024: 1008, 2048: 1504, 4096: 3008, 8192: 5008, 16384: 12016}
CHECK_ODD = {1024: 1000, 2048: 1500, 4096: 3000, 8192: 5000, 16384: 12000}


def log(msg):
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def over_budget(frac=1.0):
    return time.perf_counter() - T0 > BUDGET_S * frac


# ======================================================================================
# The shipped kernels, copied verbatim from examples/layer_norm.py (the baseline)
# ======================================================================================
@triton.jit
def layer_norm_fwd_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_cols, stride_xm, stride_ym, eps,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = tl.rsqrt(var + tl.cast(eps, tl.float32))
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_bwd_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    BLOCK_N: tl.constexpr,
):
    group = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for i in range(group, n_rows, tl.num_programs(0)):
        row = tl.cast(i, tl.int64)
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w
        c1 = tl.sum(g * x_hat, axis=0) / n_cols
        c2 = tl.sum(g, axis=0) / n_cols
        dx = (g - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw_acc += dy * x_hat
        db_acc += dy
    part = group.to(tl.int64) * n_cols + cols
    tl.store(dw_part_ptr + part, dw_acc, mask=mask)
    tl.store(db_part_ptr + part, db_acc, mask=mask)


@triton.jit
def layer_norm_dwdb_kernel(
    dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_groups, n_cols,
    BLOCK_G: tl.constexpr, BLOCK_COLS: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_mask = cols < n_cols
    dw = tl.zeros([BLOCK_G, BLOCK_COLS], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_COLS], dtype=tl.float32)
    for g0 in range(0, n_groups, BLOCK_G):
        groups = g0 + tl.arange(0, BLOCK_G)
        mask = (groups < n_groups)[:, None] & col_mask[None, :]
        offs = groups.to(tl.int64)[:, None] * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + offs, mask=mask, other=0.0)
        db += tl.load(db_part_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=col_mask)


def _num_warps(block_n):
    return 4 if block_n <= 2048 else 8 if block_n <= 8192 else 16 if block_n <= 16384 else 32


def _bwd_num_warps(block_n):
    return 8 if block_n == 16384 else _num_warps(block_n)


def _ship_per_sm(block_n):  # _num_groups' rule, programs per SM
    return 8 if block_n <= 1024 else 4 if block_n <= 4096 else 1


REDUCE_BLOCK_G, REDUCE_BLOCK_COLS = 64, 32


# ======================================================================================
# Variant kernels. n_rows / n_groups are not specialized (do_not_specialize): they are only loop
# bounds and row masks, and this way the check shapes (999 rows) run the timed kernel binary.
# ======================================================================================
@triton.jit(do_not_specialize=["n_rows"])
def bwd_rows_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr, ACC_2D: tl.constexpr,
):
    """(b) ROWS rows per iteration as one [ROWS, BLOCK_N] tile; row blocks strided over the grid;
    STAGES > 1 pipelines the row loop (tl.range num_stages: the loads of the next blocks are in flight
    while this one is reduced). ACC_2D: dW/dB accumulated as [ROWS, BLOCK_N] and summed at the end;
    else summed over the tile's rows every iteration (in-thread when a thread holds all ROWS rows)."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    if ACC_2D:
        dw_acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        db_acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
    else:
        dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
        db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    n_blocks = tl.cdiv(n_rows, ROWS)
    for blk in tl.range(pid, n_blocks, nprog, num_stages=STAGES):
        rows = blk * ROWS + tl.arange(0, ROWS)
        rmask = rows < n_rows
        r64 = rows.to(tl.int64)
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + r64[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + r64[:, None] * stride_dym + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + rows, mask=rmask, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
        x_hat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
        g = dy * w[None, :]
        c1 = tl.sum(g * x_hat, axis=1) / n_cols
        c2 = tl.sum(g, axis=1) / n_cols
        dx = (g - (x_hat * c1[:, None] + c2[:, None])) * rstd[:, None]
        tl.store(dx_ptr + r64[:, None] * stride_dxm + cols[None, :], dx.to(dx_ptr.dtype.element_ty), mask=mask)
        if ACC_2D:
            dw_acc += dy * x_hat
            db_acc += dy
        else:
            dw_acc += tl.sum(dy * x_hat, axis=0)
            db_acc += tl.sum(dy, axis=0)
    if ACC_2D:
        dw_row = tl.sum(dw_acc, axis=0)
        db_row = tl.sum(db_acc, axis=0)
    else:
        dw_row = dw_acc
        db_row = db_acc
    part = pid.to(tl.int64) * n_cols + cols
    tl.store(dw_part_ptr + part, dw_row, mask=cmask)
    tl.store(db_part_ptr + part, db_row, mask=cmask)


@triton.jit(do_not_specialize=["n_rows"])
def bwd_twopass_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    BLOCK_N: tl.constexpr, CHUNK: tl.constexpr, STAGES: tl.constexpr,
):
    """(c, registers) Long rows: pass 1 walks the row in CHUNK pieces (pipelined, STAGES) for
    c1 = sum(g * x_hat) and c2 = sum(g); pass 2 re-reads the row (L2-resident: it was read just
    before) as one tile and does only element-wise work (dx, dW/dB in registers), so x_hat and g
    never have to live across a reduction; w is re-read per row (L1) instead of held."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
    dw_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    db_acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for i in range(pid, n_rows, nprog):
        row = tl.cast(i, tl.int64)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        s1 = tl.zeros([CHUNK], dtype=tl.float32)
        s2 = tl.zeros([CHUNK], dtype=tl.float32)
        for c0 in tl.range(0, n_cols, CHUNK, num_stages=STAGES):
            cc = c0 + tl.arange(0, CHUNK)
            m = cc < n_cols
            xc = tl.load(x_ptr + row * stride_xm + cc, mask=m, other=0.0).to(tl.float32)
            dyc = tl.load(dy_ptr + row * stride_dym + cc, mask=m, other=0.0).to(tl.float32)
            wc = tl.load(w_ptr + cc, mask=m, other=0.0).to(tl.float32)
            xh = tl.where(m, (xc - mean) * rstd, 0.0)
            gc = dyc * wc
            s1 += gc * xh
            s2 += gc
        c1 = tl.sum(s1, axis=0) / n_cols
        c2 = tl.sum(s2, axis=0) / n_cols
        x = tl.load(x_ptr + row * stride_xm + cols, mask=cmask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + cols, mask=cmask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        x_hat = tl.where(cmask, (x - mean) * rstd, 0.0)
        g = dy * w
        dx = (g - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride_dxm + cols, dx.to(dx_ptr.dtype.element_ty), mask=cmask)
        dw_acc += dy * x_hat
        db_acc += dy
    part = pid.to(tl.int64) * n_cols + cols
    tl.store(dw_part_ptr + part, dw_acc, mask=cmask)
    tl.store(db_part_ptr + part, db_acc, mask=cmask)


@triton.jit(do_not_specialize=["n_rows"])
def bwd_split_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    BLOCK_N: tl.constexpr, SPLIT: tl.constexpr, CHUNK: tl.constexpr, STAGES: tl.constexpr,
):
    """(c, split) Long rows, no row held whole: SPLIT neighbouring programs share each row; program
    (group, part) keeps its own BLOCK_N / SPLIT columns in registers (dx and dW/dB for those only)
    and streams the other parts in CHUNK pieces (pipelined) just for c1 and c2, which every program
    of the row computes for itself: no exchange between programs, only SPLIT-fold reads of each
    row, all but the first from L2 (the partners run side by side). The partial buffer has
    num_programs / SPLIT rows."""
    PART: tl.constexpr = BLOCK_N // SPLIT
    pid = tl.program_id(0)
    part = pid % SPLIT
    group = pid // SPLIT
    n_groups = tl.num_programs(0) // SPLIT
    own = part * PART + tl.arange(0, PART)
    omask = own < n_cols
    w_own = tl.load(w_ptr + own, mask=omask, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([PART], dtype=tl.float32)
    db_acc = tl.zeros([PART], dtype=tl.float32)
    for i in range(group, n_rows, n_groups):
        row = tl.cast(i, tl.int64)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x = tl.load(x_ptr + row * stride_xm + own, mask=omask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * stride_dym + own, mask=omask, other=0.0).to(tl.float32)
        t1 = tl.zeros([CHUNK], dtype=tl.float32)
        t2 = tl.zeros([CHUNK], dtype=tl.float32)
        for c0 in tl.range(0, BLOCK_N - PART, CHUNK, num_stages=STAGES):
            start = tl.where(c0 >= part * PART, c0 + PART, c0)  # the row's chunks, own part skipped
            cc = start + tl.arange(0, CHUNK)
            m = cc < n_cols
            xo = tl.load(x_ptr + row * stride_xm + cc, mask=m, other=0.0).to(tl.float32)
            dyo = tl.load(dy_ptr + row * stride_dym + cc, mask=m, other=0.0).to(tl.float32)
            wo = tl.load(w_ptr + cc, mask=m, other=0.0).to(tl.float32)
            xho = tl.where(m, (xo - mean) * rstd, 0.0)
            go = dyo * wo
            t1 += go * xho
            t2 += go
        x_hat = tl.where(omask, (x - mean) * rstd, 0.0)
        g = dy * w_own
        c1 = (tl.sum(g * x_hat, axis=0) + tl.sum(t1, axis=0)) / n_cols
        c2 = (tl.sum(g, axis=0) + tl.sum(t2, axis=0)) / n_cols
        dx = (g - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride_dxm + own, dx.to(dx_ptr.dtype.element_ty), mask=omask)
        dw_acc += dy * x_hat
        db_acc += dy
    p = group.to(tl.int64) * n_cols + own
    tl.store(dw_part_ptr + p, dw_acc, mask=omask)
    tl.store(db_part_ptr + p, db_acc, mask=omask)


@triton.jit(do_not_specialize=["n_rows"])
def bwd_chunked_kernel(
    dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_part_ptr, db_part_ptr,
    n_rows, n_cols, stride_dym, stride_xm, stride_dxm,
    ROWS: tl.constexpr, CHUNK: tl.constexpr, STAGES: tl.constexpr,
):
    """(c, as the brief asks) Long rows in two passes over [ROWS, CHUNK] chunks: pass 1 sums
    c1 and c2, pass 2 re-reads the chunks (L2) and writes dx. Nothing is a whole row, so the
    program's dW/dB partial row cannot be a register tile either: it lives in the program's own
    row of the partial buffers (zeroed first, then read-add-written once per chunk per ROWS rows,
    L2-resident). The barrier after each block orders those global read-modify-writes between the
    threads of the program (a no-op in the interpreter)."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    prow = pid.to(tl.int64) * n_cols
    for c0 in range(0, n_cols, CHUNK):
        cc = c0 + tl.arange(0, CHUNK)
        tl.store(dw_part_ptr + prow + cc, tl.zeros([CHUNK], dtype=tl.float32), mask=cc < n_cols)
        tl.store(db_part_ptr + prow + cc, tl.zeros([CHUNK], dtype=tl.float32), mask=cc < n_cols)
    tl.debug_barrier()
    n_blocks = tl.cdiv(n_rows, ROWS)
    for blk in range(pid, n_blocks, nprog):
        rows = blk * ROWS + tl.arange(0, ROWS)
        rmask = rows < n_rows
        r64 = rows.to(tl.int64)
        mean = tl.load(mean_ptr + rows, mask=rmask, other=0.0)
        rstd = tl.load(rstd_ptr + rows, mask=rmask, other=0.0)
        s1 = tl.zeros([ROWS, CHUNK], dtype=tl.float32)
        s2 = tl.zeros([ROWS, CHUNK], dtype=tl.float32)
        for c0 in tl.range(0, n_cols, CHUNK, num_stages=STAGES):
            cc = c0 + tl.arange(0, CHUNK)
            m = rmask[:, None] & (cc < n_cols)[None, :]
            xc = tl.load(x_ptr + r64[:, None] * stride_xm + cc[None, :], mask=m, other=0.0).to(tl.float32)
            dyc = tl.load(dy_ptr + r64[:, None] * stride_dym + cc[None, :], mask=m, other=0.0).to(tl.float32)
            wc = tl.load(w_ptr + cc, mask=cc < n_cols, other=0.0).to(tl.float32)
            xh = tl.where(m, (xc - mean[:, None]) * rstd[:, None], 0.0)
            gc = dyc * wc[None, :]
            s1 += gc * xh
            s2 += gc
        c1 = tl.sum(s1, axis=1) / n_cols
        c2 = tl.sum(s2, axis=1) / n_cols
        for c0 in tl.range(0, n_cols, CHUNK, num_stages=STAGES):
            cc = c0 + tl.arange(0, CHUNK)
            cm = cc < n_cols
            m = rmask[:, None] & cm[None, :]
            xc = tl.load(x_ptr + r64[:, None] * stride_xm + cc[None, :], mask=m, other=0.0).to(tl.float32)
            dyc = tl.load(dy_ptr + r64[:, None] * stride_dym + cc[None, :], mask=m, other=0.0).to(tl.float32)
            wc = tl.load(w_ptr + cc, mask=cm, other=0.0).to(tl.float32)
            xh = tl.where(m, (xc - mean[:, None]) * rstd[:, None], 0.0)
            gc = dyc * wc[None, :]
            dxc = (gc - (xh * c1[:, None] + c2[:, None])) * rstd[:, None]
            tl.store(dx_ptr + r64[:, None] * stride_dxm + cc[None, :], dxc.to(dx_ptr.dtype.element_ty), mask=m)
            pdw = tl.load(dw_part_ptr + prow + cc, mask=cm, other=0.0)
            pdb = tl.load(db_part_ptr + prow + cc, mask=cm, other=0.0)
            tl.store(dw_part_ptr + prow + cc, pdw + tl.sum(dyc * xh, axis=0), mask=cm)
            tl.store(db_part_ptr + prow + cc, pdb + tl.sum(dyc, axis=0), mask=cm)
        tl.debug_barrier()


@triton.jit(do_not_specialize=["n_groups"])
def dwdb_var_kernel(
    dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_groups, n_cols,
    BLOCK_G: tl.constexpr, BLOCK_COLS: tl.constexpr, STAGES: tl.constexpr,
):
    """Stage 2 as shipped, with the tile and the group loop's pipelining as parameters."""
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    col_mask = cols < n_cols
    dw = tl.zeros([BLOCK_G, BLOCK_COLS], dtype=tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_COLS], dtype=tl.float32)
    for g0 in tl.range(0, n_groups, BLOCK_G, num_stages=STAGES):
        groups = g0 + tl.arange(0, BLOCK_G)
        mask = (groups < n_groups)[:, None] & col_mask[None, :]
        offs = groups.to(tl.int64)[:, None] * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + offs, mask=mask, other=0.0)
        db += tl.load(db_part_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=col_mask)


@triton.jit(do_not_specialize=["n_rows"])
def fwd_rows_kernel(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_rows, n_cols, stride_xm, stride_ym, eps,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr,
):
    """Forward with ROWS rows per [ROWS, BLOCK_N] tile, row blocks strided over the grid: one block
    per program (grid = cdiv(M, ROWS)) or persistent (a few programs per SM, STAGES-pipelined)."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    for blk in tl.range(pid, tl.cdiv(n_rows, ROWS), nprog, num_stages=STAGES):
        rows = blk * ROWS + tl.arange(0, ROWS)
        rmask = rows < n_rows
        r64 = rows.to(tl.int64)
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + r64[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / n_cols
        xc = tl.where(mask, x - mean[:, None], 0.0)
        var = tl.sum(xc * xc, axis=1) / n_cols
        rstd = tl.rsqrt(var + tl.cast(eps, tl.float32))
        y = xc * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_ptr + r64[:, None] * stride_ym + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(mean_ptr + rows, mean, mask=rmask)
        tl.store(rstd_ptr + rows, rstd, mask=rmask)


# ======================================================================================
# Configurations and launchers
# ======================================================================================
@dataclass(frozen=True)
class S1:
    """A backward stage-1 variant. kind: ship | rows | two | split | chunk."""
    kind: str
    warps: int
    rows: int = 1
    stages: int = 1
    chunk: int = 0
    split: int = 1
    acc2d: bool = False

    def label(self):
        if self.kind == "ship":
            return f"ship w{self.warps}"
        s = f" s{self.stages}" if self.stages > 1 else ""
        if self.kind == "rows":
            return f"rows{self.rows}{'a2' if self.acc2d else ''} w{self.warps}{s}"
        if self.kind == "two":
            return f"two c{self.chunk} w{self.warps}{s}"
        if self.kind == "split":
            return f"split{self.split} c{self.chunk} w{self.warps}{s}"
        return f"chunk{self.rows} c{self.chunk} w{self.warps}{s}"


@dataclass(frozen=True)
class S2:
    """A stage-2 variant; kind ship = the shipped kernel (64 x 32, 4 warps)."""
    kind: str
    block_g: int = REDUCE_BLOCK_G
    block_cols: int = REDUCE_BLOCK_COLS
    warps: int = 4
    stages: int = 1

    def label(self):
        if self.kind == "ship":
            return "s2 ship"
        return f"s2 {self.block_g}x{self.block_cols} w{self.warps}" + (f" s{self.stages}" if self.stages > 1 else "")


@dataclass(frozen=True)
class FW:
    """A forward variant. kind ship (one row per program) | rows (fwd_rows_kernel); persistent: the
    grid is programs per SM x SMs instead of one row block per program."""
    kind: str
    warps: int
    rows: int = 1
    stages: int = 1
    persistent: bool = False

    def label(self):
        if self.kind == "ship":
            return f"fwd ship w{self.warps}"
        return (f"fwd rows{self.rows} w{self.warps}" + (f" s{self.stages}" if self.stages > 1 else "")
                + (" persist" if self.persistent else ""))


S2_SHIP = S2("ship")
# stage 2: the shipped 64 x 32 tile; deeper tiles over fewer columns (more programs, more bytes per step);
# more columns per program (32 x 128, as the brief asks); the shipped tile with its group loop pipelined
S2_CANDIDATES = [S2_SHIP, S2("var", 256, 16, 8, 1), S2("var", 256, 8, 8, 1), S2("var", 32, 128, 4, 1),
                 S2("var", 64, 32, 4, 3)]


def sm_count():
    return torch.cuda.get_device_properties(0).multi_processor_count if CUDA else 4


def layout(cfg: S1, n_rows, programs):
    """(groups, programs) that a launch of cfg uses: groups = rows of the partial buffers."""
    if cfg.kind in ("rows", "chunk"):
        p = max(1, min(programs, triton.cdiv(n_rows, cfg.rows)))
        return p, p
    if cfg.kind == "split":
        g = max(1, min(programs // cfg.split, n_rows))
        return g, g * cfg.split
    p = max(1, min(programs, n_rows))
    return p, p


def launch_s1(cfg: S1, programs, dy, x, w, mean, rstd, dx, dwp, dbp):
    n_rows, n_cols = x.shape
    block_n = triton.next_power_of_2(n_cols)
    common = (dy, x, w, mean, rstd, dx, dwp, dbp, n_rows, n_cols, dy.stride(0), x.stride(0), dx.stride(0))
    grid = (programs,)
    if cfg.kind == "ship":
        return layer_norm_bwd_kernel[grid](*common, BLOCK_N=block_n, num_warps=cfg.warps)
    if cfg.kind == "rows":
        return bwd_rows_kernel[grid](*common, ROWS=cfg.rows, BLOCK_N=block_n, STAGES=cfg.stages, ACC_2D=cfg.acc2d,
                                     num_warps=cfg.warps)
    if cfg.kind == "two":
        return bwd_twopass_kernel[grid](*common, BLOCK_N=block_n, CHUNK=cfg.chunk, STAGES=cfg.stages,
                                        num_warps=cfg.warps)
    if cfg.kind == "split":
        return bwd_split_kernel[grid](*common, BLOCK_N=block_n, SPLIT=cfg.split, CHUNK=cfg.chunk, STAGES=cfg.stages,
                                      num_warps=cfg.warps)
    if cfg.kind == "chunk":
        return bwd_chunked_kernel[grid](*common, ROWS=cfg.rows, CHUNK=cfg.chunk, STAGES=cfg.stages,
                                        num_warps=cfg.warps)
    raise ValueError(cfg.kind)


def launch_s2(cfg: S2, dwp, dbp, dw, db, groups, n_cols):
    grid = (triton.cdiv(n_cols, cfg.block_cols),)
    if cfg.kind == "ship":
        return layer_norm_dwdb_kernel[grid](dwp, dbp, dw, db, groups, n_cols, BLOCK_G=cfg.block_g,
                                            BLOCK_COLS=cfg.block_cols)
    return dwdb_var_kernel[grid](dwp, dbp, dw, db, groups, n_cols, BLOCK_G=cfg.block_g, BLOCK_COLS=cfg.block_cols,
                                 STAGES=cfg.stages, num_warps=cfg.warps)


def bwd_fn(cfg: S1, programs, s2: S2, dy, x, w, mean, rstd):
    """The whole backward as a launcher would run it: allocations, stage 1, stage 2."""
    n_rows, n_cols = x.shape
    groups, progs = layout(cfg, n_rows, programs)

    def fn():
        dx = torch.empty_like(x)
        dwp = torch.empty((groups, n_cols), device=x.device, dtype=torch.float32)
        dbp = torch.empty((groups, n_cols), device=x.device, dtype=torch.float32)
        launch_s1(cfg, progs, dy, x, w, mean, rstd, dx, dwp, dbp)
        dw = torch.empty(n_cols, device=x.device, dtype=w.dtype)
        db = torch.empty(n_cols, device=x.device, dtype=w.dtype)
        launch_s2(s2, dwp, dbp, dw, db, groups, n_cols)
        return dx, dw, db

    return fn


def fwd_launch(cfg: FW, x, w, b, y, mean, rstd, programs=None):
    n_rows, n_cols = x.shape
    block_n = triton.next_power_of_2(n_cols)
    if cfg.kind == "ship":
        return layer_norm_fwd_kernel[(n_rows,)](x, y, w, b, mean, rstd, n_cols, x.stride(0), y.stride(0), EPS,
                                                BLOCK_N=block_n, num_warps=cfg.warps)
    blocks = triton.cdiv(n_rows, cfg.rows)
    grid = (min(blocks, programs) if (cfg.persistent and programs) else blocks,)
    return fwd_rows_kernel[grid](x, y, w, b, mean, rstd, n_rows, n_cols, x.stride(0), y.stride(0), EPS,
                                 ROWS=cfg.rows, BLOCK_N=block_n, STAGES=cfg.stages, num_warps=cfg.warps)


def fwd_fn(cfg: FW, x, w, b, programs=None):
    n_rows = x.shape[0]

    def fn():
        y = torch.empty_like(x)
        mean = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        fwd_launch(cfg, x, w, b, y, mean, rstd, programs)
        return y, mean, rstd

    return fn


def kernel_stats(k, warps):
    """Registers, spills, shared memory and the resident programs per SM they allow (H100/H200 limits:
    64K registers, 64 warps, 228 KB shared memory, 32 blocks per SM)."""
    regs = getattr(k, "n_regs", None)
    spills = getattr(k, "n_spills", None)
    md = getattr(k, "metadata", None)
    shared = getattr(md, "shared", None) if md is not None else None
    if not isinstance(regs, int) or regs <= 0:
        return {"regs": regs, "spills": spills, "shared": shared, "occ": None}
    props = torch.cuda.get_device_properties(0) if CUDA else None
    reg_file = getattr(props, "regs_per_multiprocessor", 65536) or 65536
    max_threads = getattr(props, "max_threads_per_multi_processor", 2048) or 2048
    smem = getattr(props, "shared_memory_per_multiprocessor", 233472) or 233472
    by_warps = max_threads // (32 * warps)
    by_regs = reg_file // (math.ceil(regs * 32 / 256) * 256 * warps)
    by_smem = smem // (shared + 1024) if shared else 32
    return {"regs": regs, "spills": spills, "shared": shared, "occ": max(1, min(by_warps, by_regs, by_smem, 32))}


# ======================================================================================
# Candidates per N bucket (BLOCK_N)
# ======================================================================================
def s1_candidates(block_n):
    ship = S1("ship", _bwd_num_warps(block_n))
    c = {
        1024: [S1("rows", 4, 2), S1("rows", 4, 4), S1("rows", 8, 4), S1("rows", 8, 8), S1("rows", 4, 1, 3),
               S1("rows", 4, 1, 4), S1("rows", 4, 2, 3), S1("rows", 4, 4, 3), S1("rows", 4, 4, acc2d=True)],
        2048: [S1("rows", 4, 2), S1("rows", 8, 2), S1("rows", 8, 4), S1("rows", 16, 8), S1("rows", 4, 1, 3),
               S1("rows", 8, 1, 3), S1("rows", 4, 2, 3), S1("rows", 8, 4, acc2d=True)],
        4096: [S1("rows", 8, 2), S1("rows", 16, 2), S1("rows", 16, 4), S1("rows", 8, 1, 3), S1("rows", 16, 1, 3),
               S1("rows", 8, 2, 2), S1("rows", 16, 2, acc2d=True), S1("split", 8, chunk=1024, split=2, stages=3)],
        8192: [S1("ship", 16), S1("rows", 16, 1, 2), S1("rows", 16, 1, 3), S1("rows", 8, 1, 3),
               S1("two", 8, chunk=2048, stages=3),
               S1("two", 16, chunk=2048, stages=3), S1("split", 8, chunk=2048, split=2, stages=3),
               S1("split", 16, chunk=2048, split=2, stages=3), S1("split", 8, chunk=2048, split=4, stages=3),
               S1("chunk", 8, rows=2, chunk=2048, stages=3), S1("chunk", 8, rows=1, chunk=4096, stages=3)],
        16384: [S1("ship", 16), S1("rows", 16, 1, 2), S1("rows", 16, 1, 3), S1("two", 16, chunk=4096, stages=3),
                S1("split", 16, chunk=2048, split=2, stages=3), S1("split", 8, chunk=2048, split=4, stages=3),
                S1("split", 16, chunk=2048, split=4, stages=3), S1("split", 16, chunk=4096, split=4, stages=2),
                S1("chunk", 8, rows=2, chunk=2048, stages=3), S1("chunk", 8, rows=2, chunk=4096, stages=2)],
    }
    return [ship] + c.get(block_n, [])


def fwd_candidates(block_n):
    ship = FW("ship", _num_warps(block_n))
    c = {
        1024: [FW("ship", 8), FW("rows", 4, 2), FW("rows", 4, 4), FW("rows", 4, 2, 3, True)],
        2048: [FW("ship", 8), FW("rows", 4, 2), FW("rows", 8, 2), FW("rows", 4, 1, 3, True)],
        4096: [FW("ship", 4), FW("ship", 16), FW("rows", 8, 1, 3, True)],
        8192: [FW("ship", 16), FW("rows", 8, 1, 2, True)],
        16384: [FW("ship", 8), FW("ship", 32), FW("rows", 16, 1, 2, True)],
    }
    return [ship] + c.get(block_n, [])


def tiny_s1_candidates(block_n):
    """Every family with parameters scaled to a tiny BLOCK_N (interpreter smoke test)."""
    c = [S1("ship", 4)]
    for r in (1, 2, 4, 8):
        c += [S1("rows", 4, r, 1 if r != 2 else 2), S1("rows", 4, r, acc2d=True)]
    for ch in (block_n // 4, block_n):
        c += [S1("two", 4, chunk=ch, stages=2), S1("chunk", 4, rows=1, chunk=ch, stages=2),
              S1("chunk", 4, rows=2, chunk=ch, stages=3)]
    for sp in (2, 4):
        c += [S1("split", 4, chunk=block_n // sp, split=sp, stages=2), S1("split", 4, chunk=block_n // 8, split=sp)]
    return c


def tiny_fwd_candidates(block_n):
    return [FW("ship", 4), FW("rows", 4, 2), FW("rows", 4, 4, 3, True), FW("rows", 4, 8, 1, True)]


# ======================================================================================
# References and checks
# ======================================================================================
def tol_for(dtype):
    return 1e-2 if dtype == torch.float16 else 2e-2 if dtype == torch.bfloat16 else 1e-4


def make_inputs(m, n, dtype, seed=0):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    x = (2 * torch.randn(m, n, device=DEVICE, generator=gen) + 0.5).to(dtype)
    dy = torch.randn(m, n, device=DEVICE, generator=gen).to(dtype)
    w = (1 + 0.1 * torch.randn(n, device=DEVICE, generator=gen)).to(dtype)
    b = (0.1 * torch.randn(n, device=DEVICE, generator=gen)).to(dtype)
    return x, dy, w, b


def ship_forward(x, w, b):
    return fwd_fn(FW("ship", _num_warps(triton.next_power_of_2(x.shape[1]))), x, w, b)()


_REF_CACHE = {}


def reference(m, n, dtype, seed=0):
    """Inputs, our forward's mean/rstd, and torch's fp32 y and gradients, cached per shape."""
    key = (m, n, dtype, seed)
    if key not in _REF_CACHE:
        x, dy, w, b = make_inputs(m, n, dtype, seed)
        xs, ws, bs = (t.detach().float().requires_grad_(True) for t in (x, w, b))
        y = F.layer_norm(xs, (n,), ws, bs, EPS)
        dx, dw, db = torch.autograd.grad(y, (xs, ws, bs), dy.float())
        _, mean, rstd = ship_forward(x, w, b)
        ref_mean = xs.detach().mean(dim=1)
        ref_rstd = torch.rsqrt(xs.detach().var(dim=1, unbiased=False) + EPS)
        _REF_CACHE.clear()  # one shape at a time: the GPU's check shapes are small, but keep it bounded
        _REF_CACHE[key] = dict(x=x, dy=dy, w=w, b=b, mean=mean, rstd=rstd, y=y.detach(), dx=dx, dw=dw, db=db,
                               ref_mean=ref_mean, ref_rstd=ref_rstd)
    return _REF_CACHE[key]


def compare(name, got, want, tol, rel_to_max=False):
    got = got.float()
    atol = tol * max(1.0, want.abs().max().item()) if rel_to_max else tol
    torch.testing.assert_close(got, want.float(), rtol=tol, atol=atol, msg=lambda m: f"{name}: {m}")


def check_bwd(s1: S1, s2: S2, m, n, dtype, programs):
    """Run the whole backward (s1 at `programs` programs, then s2) on m x n and compare dx, dW, dB with
    torch's fp32 autograd. Returns (ok, error text, stage-1 kernel stats, seconds)."""
    r = reference(m, n, dtype)
    t = time.perf_counter()
    try:
        groups, progs = layout(s1, m, programs)
        dx = torch.empty_like(r["x"])
        dwp = torch.empty((groups, n), device=DEVICE, dtype=torch.float32)
        dbp = torch.empty((groups, n), device=DEVICE, dtype=torch.float32)
        k = launch_s1(s1, progs, r["dy"], r["x"], r["w"], r["mean"], r["rstd"], dx, dwp, dbp)
        dw = torch.empty(n, device=DEVICE, dtype=dtype)
        db = torch.empty(n, device=DEVICE, dtype=dtype)
        launch_s2(s2, dwp, dbp, dw, db, groups, n)
        sync()
        tol = tol_for(dtype)
        compare("dx", dx, r["dx"], tol)
        compare("dweight", dw, r["dw"], tol, rel_to_max=True)
        compare("dbias", db, r["db"], tol, rel_to_max=True)
        return True, "", kernel_stats(k, s1.warps), time.perf_counter() - t
    except Exception as e:  # a wrong or failing variant is reported, not timed
        return False, f"{type(e).__name__}: {str(e).strip()[:400]}", {}, time.perf_counter() - t


def check_fwd(cfg: FW, m, n, dtype, programs=None):
    r = reference(m, n, dtype)
    t = time.perf_counter()
    try:
        y = torch.empty_like(r["x"])
        mean = torch.empty(m, device=DEVICE, dtype=torch.float32)
        rstd = torch.empty(m, device=DEVICE, dtype=torch.float32)
        k = fwd_launch(cfg, r["x"], r["w"], r["b"], y, mean, rstd, programs)
        sync()
        tol = tol_for(dtype)
        compare("y", y, r["y"], tol)
        compare("mean", mean, r["ref_mean"], 1e-3)
        compare("rstd", rstd, r["ref_rstd"], 1e-3)
        return True, "", kernel_stats(k, cfg.warps), time.perf_counter() - t
    except Exception as e:
        return False, f"{type(e).__name__}: {str(e).strip()[:400]}", {}, time.perf_counter() - t


# ======================================================================================
# Timing
# ======================================================================================
def sync():
    if CUDA:
        torch.cuda.synchronize()


def wall_ms(fn):  # the dry run's stand-in for a GPU timer: one call's wall clock, a smoke test only
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def t_graph(fn, rep):
    if not CUDA:
        return wall_ms(fn)
    return triton.testing.do_bench_cudagraph(fn, rep=rep, return_mode="median")


def t_bench(fn):
    if not CUDA:
        return wall_ms(fn)
    return triton.testing.do_bench(fn, warmup=25, rep=BENCH_REP, return_mode="median")


def copy_ceiling():
    if not CUDA:
        return {"gbs": 1.0, "ms": [], "note": "dry run: no GPU"}
    src = torch.empty(2**29, device="cuda")  # 2 GiB of fp32
    dst = torch.empty_like(src)
    ms = [t_bench(lambda: dst.copy_(src)) for _ in range(3)]
    return {"gbs": 2 * 2**29 * 4 / statistics.median(ms) / 1e6, "ms": ms}


def gbs(nbytes, ms):
    return nbytes / ms / 1e6 if ms and ms > 0 else None


# ======================================================================================
# The CPU smoke test (interpreter)
# ======================================================================================
def cpu_smoke():
    log(f"no CUDA: TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')}, correctness only, torch {torch.__version__}, "
        f"triton {triton.__version__}")
    bad, n_ok = [], 0
    dtype = torch.float16  # bf16 is wrong in the interpreter (the repo runs bf16 on the GPU only)

    def record(label, ok, err):
        nonlocal n_ok
        if ok:
            n_ok += 1
        else:
            bad.append(f"{label}: {err}")
            log(f"WRONG {label}: {err}")

    sms = sm_count()
    # the interpreter runs programs one by one: stage 1 is checked with a stage 2 of few, wide programs
    s2_cpu = S2("var", 8, 2048, 4, 1)
    # 1. the GPU's own variants, on tiny row counts and the buckets' check widths
    for block_n in (1024, 2048, 4096, 8192, 16384):
        n16, nodd = CHECK_N16[block_n], CHECK_ODD[block_n]
        for cfg in s1_candidates(block_n):
            for m, n, per_sm in ((7, n16, 8), (5, nodd, 1)):
                ok, err, _, _ = check_bwd(cfg, s2_cpu, m, n, dtype, per_sm * sms)
                record(f"bwd {cfg.label()} {m}x{n}", ok, err)
        if block_n == 1024:  # the stage-2 variants (the shipped one included), once
            for s2 in S2_CANDIDATES:
                for m, n in ((7, n16), (5, nodd)):
                    ok, err, _, _ = check_bwd(S1("rows", 4, 2), s2, m, n, dtype, 3)
                    record(f"bwd {s2.label()} {m}x{n}", ok, err)
        for cfg in fwd_candidates(block_n):
            ok, err, _, _ = check_fwd(cfg, 7, n16, dtype, 2 * sms)
            record(f"{cfg.label()} 7x{n16}", ok, err)
        log(f"N bucket {block_n}: checked, {len(bad)} wrong so far")
    # 2. tiny shapes with every family scaled down (heavy masking)
    for m, n in ((7, 37), (5, 300)):
        block_n = triton.next_power_of_2(n)
        for dt in (torch.float16, torch.float32):
            for cfg in tiny_s1_candidates(block_n):
                for programs in (1, 3, 64):
                    ok, err, _, _ = check_bwd(cfg, S2_SHIP if programs == 3 else s2_cpu, m, n, dt, programs)
                    record(f"bwd {cfg.label()} {m}x{n} {dt} p{programs}", ok, err)
            for s2 in (S2("var", 4, 16, 4, 2), S2("var", 2, 64, 4, 1), S2("var", 8, 8, 4, 3)):
                ok, err, _, _ = check_bwd(S1("rows", 4, 1), s2, m, n, dt, 5)
                record(f"bwd {s2.label()} {m}x{n} {dt}", ok, err)
            for cfg in tiny_fwd_candidates(block_n):
                for programs in (1, 2):
                    ok, err, _, _ = check_fwd(cfg, m, n, dt, programs)
                    record(f"{cfg.label()} {m}x{n} {dt} p{programs}", ok, err)
        log(f"tiny shape {m}x{n}: checked, {len(bad)} wrong so far")
    print(f"\nCPU smoke test (interpreter): {n_ok} checks passed, {len(bad)} wrong")
    for b in bad:
        print("  WRONG", b)
    return 1 if bad else 0


# ======================================================================================
# The GPU run
# ======================================================================================
def torch_bwd(dy, x, w, b, mean, rstd):
    return torch.ops.aten.native_layer_norm_backward(dy, x, x.shape[-1:], mean, rstd, w, b, [True, True, True])


class Results:
    def __init__(self):
        out = os.environ.get("OUT", "/tmp/out")
        os.makedirs(out, exist_ok=True)
        self.path = os.path.join(out, "layer_norm_probe.json")
        self.data = {
            "probe": "layer_norm_probe.py (Triton in Tiles, layer norm at the copy ceiling)",
            "gpu": torch.cuda.get_device_name(0) if CUDA else "none (dry run in the interpreter)", "sms": sm_count(),
            "torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0],
            "cuda": torch.version.cuda,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "method": {
                "elements": ELEMENTS, "dtypes": ["float16", "bfloat16"],
                "bytes_bwd": "3 * M * N * element_size (read x, dy; write dx)",
                "bytes_fwd": "2 * M * N * element_size (read x; write y)",
                "ceiling": "torch dst.copy_(src) of 2 GiB fp32, 2 * 2 GiB moved, do_bench median (L2 flushed), "
                           "median of 3; timed again at the end",
                "do_bench": f"triton.testing.do_bench(fn, warmup=25, rep={BENCH_REP}, return_mode='median')",
                "graph": f"triton.testing.do_bench_cudagraph(fn, rep={GRAPH_REP}, return_mode='median') "
                         "(median of its 10 replays)",
                "screen": f"do_bench_cudagraph(fn, rep={SCREEN_REP}), stage 1 alone, fp16",
                "whole_bwd_fn": "allocations (dx, partial buffers, dW, dB) + stage 1 + stage 2, as a launcher",
                "checks": "before timing, vs torch fp32 autograd: dx rtol=atol=tol, dW/dB rtol=tol, "
                          "atol=tol*max|ref|; tol 1e-2 fp16, 2e-2 bf16",
                "budget_s": BUDGET_S,
            },
            "copy_ceiling": None, "n": {}, "errors": [],
        }

    def save(self):
        self.data["elapsed_s"] = round(time.perf_counter() - T0, 1)
        with open(self.path, "w") as f:
            json.dump(self.data, f, indent=1, default=str)


def screen_s1(res_n, block_n, m, n, x, dy, w, mean, rstd, sms, dtype):
    """Check every stage-1 candidate, screen the right ones; returns the screened list."""
    n16 = CHECK_N16[block_n]
    dx = torch.empty_like(x)
    dwp_all = torch.empty((min(m, 8 * sms), n), device=DEVICE, dtype=torch.float32)  # any grid tried (<= 8/SM)
    dbp_all = torch.empty_like(dwp_all)
    screened = []
    for cfg in s1_candidates(block_n):
        if cfg.kind == "ship":
            per_sm = _ship_per_sm(block_n) if cfg.warps == _bwd_num_warps(block_n) else 1
        else:
            per_sm = 8
        ok, err, stats, sec = check_bwd(cfg, S2_SHIP, M16, n16, dtype, per_sm * sms)
        ok2, err2 = True, ""
        if ok:  # also a small grid: the row-to-program walk with several blocks per program
            ok2, err2, _, _ = check_bwd(cfg, S2_SHIP, M16, n16, dtype, 7)
        entry = {"cfg": asdict(cfg), "label": cfg.label(), "check": ok and ok2, "error": err or err2,
                 "check_s": round(sec, 2), **{k: v for k, v in stats.items()}}
        if not (ok and ok2):
            log(f"  WRONG {cfg.label()}: {err or err2}")
            res_n["errors"].append(entry)
            continue
        if cfg.kind != "ship" or cfg.warps != _bwd_num_warps(block_n):
            occ = stats.get("occ") or 1
            per_sm = min(8, occ)
        groups, progs = layout(cfg, m, per_sm * sms)
        fn = lambda: launch_s1(cfg, progs, dy, x, w, mean, rstd, dx, dwp_all, dbp_all)
        try:
            ms = t_graph(fn, SCREEN_REP)
        except Exception as e:
            entry["error"] = f"timing failed: {type(e).__name__}: {e}"[:400]
            res_n["errors"].append(entry)
            log(f"  FAILED timing {cfg.label()}: {entry['error']}")
            continue
        entry.update(per_sm=per_sm, programs=progs, groups=groups, ms=ms, gbs=gbs(3 * x.numel() * 2, ms))
        screened.append(entry)
        log(f"  {cfg.label():26s} regs {stats.get('regs')} spills {stats.get('spills')} smem {stats.get('shared')} "
            f"occ {stats.get('occ')} @ {per_sm}/SM: {ms:.4f} ms {entry['gbs']:.0f} GB/s (check {sec:.1f}s)")
    res_n["screen"] = screened
    return screened


def grid_sweep(res_n, screened, m, x, dy, w, mean, rstd, sms, ship_cfg):
    """The best TOP_GRIDS new variants at 1, 2, 4, 8 programs per SM (those the occupancy allows)."""
    dx = torch.empty_like(x)
    n = x.shape[1]
    dwp_all = torch.empty((min(m, 8 * sms), n), device=DEVICE, dtype=torch.float32)
    dbp_all = torch.empty_like(dwp_all)
    ranked = sorted((e for e in screened if e["label"] != ship_cfg.label()), key=lambda e: e["ms"])
    picks = ranked[:TOP_GRIDS] if not over_budget(0.8) else ranked[:1]
    sweep = []
    for e in picks:
        cfg = S1(**e["cfg"])
        occ = e.get("occ") or 8
        for per_sm in sorted({1, 2, 4, 8, min(occ, 8)}):
            if per_sm > occ or per_sm == e["per_sm"]:
                continue
            groups, progs = layout(cfg, m, per_sm * sms)
            ms = t_graph(lambda: launch_s1(cfg, progs, dy, x, w, mean, rstd, dx, dwp_all, dbp_all), SCREEN_REP)
            sweep.append({"label": cfg.label(), "cfg": e["cfg"], "per_sm": per_sm, "programs": progs, "groups": groups,
                          "ms": ms, "gbs": gbs(3 * x.numel() * 2, ms)})
        log(f"  grid sweep {cfg.label()}: " + ", ".join(f"{s['per_sm']}/SM {s['ms']:.4f}" for s in sweep
                                                       if s["label"] == cfg.label()))
    res_n["grid_sweep"] = sweep
    return sweep


def best_s2(res_n, cache, groups, n, dwp, dbp, dtype):
    """Check (once per N) and screen the stage-2 variants at this group count; returns the fastest."""
    if groups in cache:
        return cache[groups]
    dw = torch.empty(n, device=DEVICE, dtype=dtype)
    db = torch.empty(n, device=DEVICE, dtype=dtype)
    rows = []
    for s2 in S2_CANDIDATES:
        key = ("s2check", s2)
        if key not in cache:
            ok, err, _, _ = check_bwd(S1("ship", _bwd_num_warps(triton.next_power_of_2(n))), s2, M16,
                                      CHECK_N16[triton.next_power_of_2(n)], dtype, 64)
            cache[key] = (ok, err)
            if not ok:
                log(f"  WRONG {s2.label()}: {err}")
                res_n["errors"].append({"label": s2.label(), "error": err})
        if not cache[key][0]:
            continue
        ms = t_graph(lambda: launch_s2(s2, dwp, dbp, dw, db, groups, n), SCREEN_REP)
        rows.append({"label": s2.label(), "cfg": asdict(s2), "groups": groups, "ms": ms,
                     "gbs_partials": gbs(2 * groups * n * 4, ms)})
    res_n.setdefault("stage2", []).extend(rows)
    best = min(rows, key=lambda r: r["ms"])
    log(f"  stage 2 at {groups} groups: " + ", ".join(f"{r['label'][3:]} {r['ms'] * 1e3:.1f}us" for r in rows))
    cache[groups] = S2(**best["cfg"])
    return cache[groups]


def time_pair(fn, nbytes, ceiling, graph=True):
    out = {}
    ms = t_bench(fn)
    out.update(bench_ms=ms, bench_gbs=gbs(nbytes, ms), bench_pct=100 * gbs(nbytes, ms) / ceiling)
    if graph:
        ms = t_graph(fn, GRAPH_REP)
        out.update(graph_ms=ms, graph_gbs=gbs(nbytes, ms), graph_pct=100 * gbs(nbytes, ms) / ceiling)
    return out


def run_n(res, n, sms, ceiling, n_index):
    block_n = triton.next_power_of_2(n)
    m = ELEMENTS // n
    res_n = res.data["n"].setdefault(str(n), {"M": m, "errors": []})
    log(f"== N = {n}, M = {m} ==")
    torch.manual_seed(0)
    x16, dy16, w16, b16 = make_inputs(m, n, torch.float16, seed=1)
    _, mean16, rstd16 = ship_forward(x16, w16, b16)
    ship_cfg = S1("ship", _bwd_num_warps(block_n))
    lean = n_index > 0 and (time.perf_counter() - T0) / n_index * len(HIDDEN) > BUDGET_S
    res_n["lean"] = lean
    if lean:
        log("  (lean mode: projected over budget; optional parts skipped)")

    # ---- a, b: stage 1 check + screen (fp16), grid sweep
    screened = screen_s1(res_n, block_n, m, n, x16, dy16, w16, mean16, rstd16, sms, torch.float16)
    sweep = [] if lean else grid_sweep(res_n, screened, m, x16, dy16, w16, mean16, rstd16, sms, ship_cfg)
    # best (config, grid) per distinct config
    best_by_cfg = {}
    for e in screened + sweep:
        if e["label"] == ship_cfg.label() and e["per_sm"] == _ship_per_sm(block_n):
            continue
        if e["label"] not in best_by_cfg or e["ms"] < best_by_cfg[e["label"]]["ms"]:
            best_by_cfg[e["label"]] = e
    finalists = sorted(best_by_cfg.values(), key=lambda e: e["ms"])[:TOP]
    res_n["finalists"] = [{k: f[k] for k in ("label", "per_sm", "programs", "groups", "ms")} for f in finalists]
    log("  finalists: " + ", ".join(f"{f['label']} @ {f['per_sm']}/SM" for f in finalists))
    del x16, dy16
    torch.cuda.empty_cache()

    # ---- c, d, e: final timing per dtype
    final = res_n.setdefault("final", {})
    s2_cache = {}
    for dname, dtype in DTYPES:
        x, dy, w, b = make_inputs(m, n, dtype, seed=1)
        _, mean, rstd = ship_forward(x, w, b)
        nbytes = 3 * x.numel() * x.element_size()
        rows = []
        entries = [("shipped", ship_cfg, _ship_per_sm(block_n) * sms, S2_SHIP)]
        for f in finalists:
            cfg = S1(**f["cfg"])
            groups, _ = layout(cfg, m, f["per_sm"] * sms)
            dwp = torch.empty((groups, n), device=DEVICE, dtype=torch.float32).normal_()
            dbp = torch.empty_like(dwp).normal_()
            s2 = best_s2(res_n, s2_cache, groups, n, dwp, dbp, torch.float16) if dname == "fp16" else \
                s2_cache.get(groups, S2_SHIP)
            entries.append((f"{f['label']} @{f['per_sm']}/SM", cfg, f["per_sm"] * sms, s2))
        ship_groups, _ = layout(ship_cfg, m, _ship_per_sm(block_n) * sms)
        if dname == "fp16":
            dwp = torch.empty((ship_groups, n), device=DEVICE, dtype=torch.float32).normal_()
            s2b = best_s2(res_n, s2_cache, ship_groups, n, dwp, torch.empty_like(dwp).normal_(), torch.float16)
        else:
            s2b = s2_cache.get(ship_groups, S2_SHIP)
        if s2b != S2_SHIP:
            entries.insert(1, ("shipped + " + s2b.label(), ship_cfg, _ship_per_sm(block_n) * sms, s2b))
        for name, cfg, programs, s2 in entries:
            # checks before timing: bf16 on the n16 shape (the timed binary), and the odd shape of the brief
            checks = []
            if dname != "fp16":
                checks.append((M16, CHECK_N16[block_n]))
            elif cfg.kind != "ship" or s2 != S2_SHIP:  # fp16: the brief's odd shape (a second compile)
                checks.append((MODD, CHECK_ODD[block_n]))
            bad = None
            for cm, cn in checks:
                ok, err, _, _ = check_bwd(cfg, s2, cm, cn, dtype, programs)
                if not ok:
                    bad = f"{cm}x{cn} {dname}: {err}"
                    break
            row = {"name": name, "label": cfg.label(), "s2": s2.label(), "programs": layout(cfg, m, programs)[1],
                   "groups": layout(cfg, m, programs)[0]}
            if bad:
                row["error"] = bad
                res_n["errors"].append(row)
                log(f"  WRONG {name}: {bad}")
                rows.append(row)
                continue
            groups, progs = layout(cfg, m, programs)
            try:
                row["whole"] = time_pair(bwd_fn(cfg, programs, s2, dy, x, w, mean, rstd), nbytes, ceiling)
                if not name.startswith("shipped + ") and not (dname != "fp16" and (lean or over_budget())):
                    dx = torch.empty_like(x)
                    dwp = torch.empty((groups, n), device=DEVICE, dtype=torch.float32)
                    dbp = torch.empty_like(dwp)
                    k = launch_s1(cfg, progs, dy, x, w, mean, rstd, dx, dwp, dbp)
                    row["stats"] = kernel_stats(k, cfg.warps)
                    row["stage1"] = time_pair(lambda: launch_s1(cfg, progs, dy, x, w, mean, rstd, dx, dwp, dbp),
                                              nbytes, ceiling)
            except Exception as e:
                row["error"] = f"timing failed: {type(e).__name__}: {e}"[:400]
                row.pop("whole", None)
                res_n["errors"].append(row)
                log(f"  FAILED {name}: {row['error']}")
                rows.append(row)
                continue
            rows.append(row)
            log(f"  {dname} {name:40s} whole {row['whole']['bench_pct']:5.1f}% / graph {row['whole']['graph_pct']:5.1f}%"
                + (f"; stage 1 {row['stage1']['bench_pct']:5.1f}% / {row['stage1']['graph_pct']:5.1f}%"
                   if "stage1" in row else ""))
        # peers
        if PEERS and not over_budget(1.1):
            _, tmean, trstd = torch.ops.aten.native_layer_norm(x, [n], w, b, EPS)
            args = (dy, x, w, b, tmean, trstd)
            row = {"name": "torch eager", "whole": time_pair(lambda: torch_bwd(*args), nbytes, ceiling)}
            rows.append(row)
            log(f"  {dname} torch eager {row['whole']['bench_pct']:5.1f}% / {row['whole']['graph_pct']:5.1f}%")
            if DRYRUN:
                rows.append({"name": "torch.compile", "error": "skipped (dry run)"})
            elif dname == "fp16" or not (lean or over_budget(0.85)):
                try:
                    torch.compiler.reset()
                    compiled = torch.compile(torch_bwd, dynamic=False)
                    t = time.perf_counter()
                    compiled(*args)
                    sync()
                    csec = time.perf_counter() - t
                    row = {"name": "torch.compile", "compile_s": round(csec, 1),
                           "whole": time_pair(lambda: compiled(*args), nbytes, ceiling)}
                    rows.append(row)
                    log(f"  {dname} torch.compile {row['whole']['bench_pct']:5.1f}% / {row['whole']['graph_pct']:5.1f}%"
                        f" (compiled in {csec:.1f}s)")
                except Exception as e:
                    rows.append({"name": "torch.compile", "error": f"{type(e).__name__}: {e}"[:400]})
                    log(f"  torch.compile failed: {e}")
            else:
                rows.append({"name": "torch.compile", "error": "skipped (budget)"})
        final[dname] = rows
        res.save()

    # ---- f: forward
    if DO_FWD and not over_budget(1.1):
        run_fwd(res_n, n, m, block_n, sms, ceiling, lean)
    elif DO_FWD:
        res_n["fwd_skipped"] = "budget"
        log("  forward skipped (budget)")
    res.save()


def run_fwd(res_n, n, m, block_n, sms, ceiling, lean):
    x, _, w, b = make_inputs(m, n, torch.float16, seed=2)
    nbytes = 2 * x.numel() * 2
    screened = []
    ship = FW("ship", _num_warps(block_n))
    for cfg in fwd_candidates(block_n):
        if lean and cfg != ship and len(screened) >= 2:
            break
        ok, err, stats, sec = check_fwd(cfg, M16, CHECK_N16[block_n], torch.float16, 2 * sms)
        if not ok:
            log(f"  WRONG {cfg.label()}: {err}")
            res_n["errors"].append({"label": cfg.label(), "error": err})
            continue
        programs = (min(8, stats.get("occ") or 1) * sms) if cfg.persistent else None
        ms = t_graph(fwd_fn(cfg, x, w, b, programs), SCREEN_REP)
        screened.append({"label": cfg.label(), "cfg": asdict(cfg), "programs": programs, "ms": ms,
                         "gbs": gbs(nbytes, ms), **stats})
        log(f"  {cfg.label():26s} regs {stats.get('regs')} spills {stats.get('spills')} occ {stats.get('occ')}: "
            f"{ms:.4f} ms {gbs(nbytes, ms):.0f} GB/s")
    res_n["fwd_screen"] = screened
    others = sorted((e for e in screened if e["label"] != ship.label()), key=lambda e: e["ms"])
    picks = [(ship.label(), ship, None)] + [(e["label"], FW(**e["cfg"]), e["programs"]) for e in others[:1]]
    final = res_n.setdefault("fwd_final", {})
    for dname, dtype in DTYPES:
        if dname != "fp16":
            x, _, w, b = make_inputs(m, n, dtype, seed=2)
            nbytes = 2 * x.numel() * x.element_size()
        rows = []
        for name, cfg, programs in picks:
            checks = ([(M16, CHECK_N16[block_n])] if dname != "fp16" else []) + \
                     ([(MODD, CHECK_ODD[block_n])] if cfg.kind != "ship" else [])
            bad = None
            for cm, cn in checks:
                ok, err, _, _ = check_fwd(cfg, cm, cn, dtype, programs)
                if not ok:
                    bad = f"{cm}x{cn} {dname}: {err}"
                    break
            if bad:
                rows.append({"name": name, "error": bad})
                res_n["errors"].append({"label": name, "error": bad})
                log(f"  WRONG {name}: {bad}")
                continue
            row = {"name": name, "programs": programs, "whole": time_pair(fwd_fn(cfg, x, w, b, programs), nbytes, ceiling)}
            rows.append(row)
            log(f"  {dname} {name:30s} {row['whole']['bench_pct']:5.1f}% / graph {row['whole']['graph_pct']:5.1f}%")
        final[dname] = rows
    del x
    torch.cuda.empty_cache()


def fmt_pair(t):
    if not t:
        return f"{'-':>18s}"
    return f"{t['bench_gbs']:5.0f} {t['bench_pct']:4.1f}%/{t['graph_gbs']:5.0f} {t['graph_pct']:4.1f}%"


def summary(res):
    d = res.data
    ceiling = d["copy_ceiling"]["gbs"]
    print("\n" + "=" * 100)
    print(f"LAYER NORM PROBE  {d['gpu']}  torch {d['torch']}  triton {d['triton']}  {d['date']}  "
          f"elapsed {time.perf_counter() - T0:.0f}s")
    end = d.get("copy_ceiling_end")
    print(f"copy ceiling {ceiling:.0f} GB/s" + (f" (again at the end: {end['gbs']:.0f})" if end else "")
          + f"; cells: do_bench GB/s %ceiling / cudagraph GB/s %ceiling (rep {BENCH_REP} / {GRAPH_REP} ms)")
    print("\nSTAGE-1 SCREEN (fp16, stage 1 alone, graph; top 4 and the shipped kernel, GB/s):")
    for n, r in d["n"].items():
        sc = sorted(r.get("screen", []) + r.get("grid_sweep", []), key=lambda e: e["ms"])
        ship = [e for e in r.get("screen", []) if e["label"].startswith("ship")]
        items = [f"{e['label']}@{e['per_sm']} {e['gbs']:.0f}" for e in sc[:4]]
        items += [f"[{e['label']}@{e['per_sm']} {e['gbs']:.0f} r{e.get('regs')}/sp{e.get('spills')}]" for e in ship]
        print(f" N={n:>5s}: " + "; ".join(items))
        by_g = {}
        for e in r.get("stage2", []):
            by_g.setdefault(e["groups"], []).append(e)
        if by_g:
            print("          stage 2 (us): " + "; ".join(
                f"{g} groups: ship {next((e['ms'] * 1e3 for e in es if e['label'] == 's2 ship'), float('nan')):.1f}, "
                f"best {min(es, key=lambda e: e['ms'])['label'][3:]} {min(e['ms'] for e in es) * 1e3:.1f}"
                for g, es in by_g.items()))
        if r.get("errors"):
            print(f"          {len(r['errors'])} wrong/failed: " + "; ".join(str(e.get("label"))
                                                                         for e in r["errors"])[:200])
    print("\nBACKWARD (whole = allocs + stage 1 + stage 2; s1 = stage 1 alone)")
    print(f"{'N':>5s} {'dt':4s} {'variant (stage-1 label @grid, stage-2 tile)':40s} {'whole db / graph':>23s}  "
          f"{'s1 db / graph':>23s}")
    for n, r in d["n"].items():
        for dname, rows in r.get("final", {}).items():
            for row in rows:
                nm = row["name"] if row["name"].startswith(("shipped", "torch")) else \
                    f"{row['name']} {row.get('s2', '')[3:]}"
                if "error" in row:
                    print(f"{n:>5s} {dname:4s} {nm[:40]:40s} {row['error'][:50]}")
                    continue
                print(f"{n:>5s} {dname:4s} {nm[:40]:40s} {fmt_pair(row.get('whole')):>23s}  "
                      f"{fmt_pair(row.get('stage1')) if row.get('stage1') else '':>23s}")
    if any(r.get("fwd_final") for r in d["n"].values()):
        print("\nFORWARD (allocs + kernel)")
        for n, r in d["n"].items():
            for dname, rows in r.get("fwd_final", {}).items():
                for row in rows:
                    if "error" in row:
                        print(f"{n:>5s} {dname:4s} {row['name'][:44]:44s} {row['error'][:50]}")
                    else:
                        print(f"{n:>5s} {dname:4s} {row['name'][:44]:44s} {fmt_pair(row['whole']):>26s}")
    print("\nVERDICT (do_bench % of ceiling; targets: backward >= 80, forward >= 90; graph % in brackets)")
    for n, r in d["n"].items():
        for dname, rows in r.get("final", {}).items():
            ok = [x for x in rows if "whole" in x]
            ours = [x for x in ok if not x["name"].startswith("torch")]
            ship = next((x for x in ok if x["name"] == "shipped"), None)
            best = max(ours, key=lambda x: x["whole"]["bench_pct"], default=None)
            comp = next((x for x in ok if x["name"] == "torch.compile"), None)
            fw = [x for x in r.get("fwd_final", {}).get(dname, []) if "whole" in x]
            fship = next((x for x in fw if x["name"].startswith("fwd ship")), None)
            fbest = max(fw, key=lambda x: x["whole"]["bench_pct"], default=None)

            def pc(x):
                return f"{x['whole']['bench_pct']:5.1f} [{x['whole']['graph_pct']:5.1f}]" if x else "    -        "
            print(f" N={n:>5s} {dname}: bwd shipped {pc(ship)} best {pc(best)} "
                  f"({(best['name'] + ('' if best['name'].startswith('shipped') else ' ' + best.get('s2', '')[3:])) if best else '-'}) compile {pc(comp)} | "
                  f"fwd shipped {pc(fship)} best {pc(fbest)} ({fbest['name'] if fbest else '-'})")
    print(f"\nJSON: {res.path}")


def gpu_main():
    res = Results()
    sms = sm_count()
    log(f"{res.data['gpu']} ({sms} SMs), torch {torch.__version__}, triton {triton.__version__}; budget {BUDGET_S:.0f}s, "
        f"N {HIDDEN}")
    res.data["copy_ceiling"] = copy_ceiling()
    ceiling = res.data["copy_ceiling"]["gbs"]
    log(f"copy ceiling {ceiling:.0f} GB/s")
    res.save()
    for i, n in enumerate(HIDDEN):
        try:
            run_n(res, n, sms, ceiling, i)
        except Exception as e:
            res.data["errors"].append({"n": n, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()})
            log(f"N = {n} failed: {type(e).__name__}: {e}")
            traceback.print_exc()
        res.save()
    try:
        res.data["copy_ceiling_end"] = copy_ceiling()
    except Exception:
        pass
    res.save()
    summary(res)
    return 0


if __name__ == "__main__":
    sys.exit(gpu_main() if CUDA or DRYRUN else cpu_smoke())
