"""Probe: the forward at head dim 64 with three consumer warpgroups (192 query rows a CTA).

Why: at head dim 64 a consumer's key block is half the tensor-core work it is at 128 (a 64 x 128
S tile, then a 64 x 64 O update), while the softmax of the block costs the same: the forward at
64 stays further behind cuDNN than at 128. FlashAttention-3 runs head dim 64 with three
consumer warpgroups of 64 rows instead of two, so each K and V block brought into shared memory
feeds 192 query rows, and one warpgroup's softmax can hide behind two others' matmuls. The
registers allow it at 64: a consumer holds S (64 x 128 fp32), O (64 x 64 fp32) and P, and four
warpgroups (three consumers, the producer's warp padded) fit in the register file with 160
registers a thread for the two worker consumers and 168 for the default partition's.

The candidate is the example with ``EDITS`` applied: ``CONFIGS[64]`` gets ``NUM_WG = 3`` (head
dim 128 keeps two), the kernel allocates a Q and an O tile, a Q barrier pair and one
``warp_specialize`` consumer per warpgroup, the empty barriers count ``NUM_WG`` arrivals, and the
launch caps registers at 128 a thread (4 warpgroups x 128 threads x 128 = 64K) and
``setmaxnreg`` hands 160 to each worker consumer (``FWD_REGS``); compiled for sm_90 that leaves
168 to the default partition and nothing spills, while 152, 168 or 176 (``REGS_TRIED``)
spill and serialize wgmma.

A sequence length that is a multiple of 128 is not always one of 192: tiles are counted with a
ceiling, and the last tile of a head may have
consumers whose 64 rows lie past the head's end. Those compute on the rows their Q copy brought
(the next head's, or zeros past the tensor) and store nothing: their O and log-sum-exp stores
are skipped (``live``). Under the causal mask a tile's key blocks are counted with a ceiling too
(192 rows end inside a 128-key block) and capped at the sequence.

Candidates at the forward points of ``POINTS`` (``benchmarks/cases/attention_hopper.py``'s inputs:
batch 32 x 16 heads): ``sdpa-cudnn`` (the reference), ``example`` (two consumers) and
``three consumers``; every candidate is checked against the reference before it is timed, and
first the candidate's output and log-sum-exp against the example's on lengths whose last tile
is partial (``check_small``).
``--compile DIR`` writes each kernel's SASS size, registers, spills, shared memory and the
``setmaxnreg`` values (``USETMAXREG`` in the SASS) compiled for sm_90, no GPU needed.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/attention/gluon_three_wg.py
--out DIR [--budget S]``; anywhere ``... --compile DIR``.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402
from gluon_prescale import METHOD as PRESCALE_METHOD  # noqa: E402
from gluon_prescale import forward_setup  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    code_size,
    compile_only,
    disassemble,
    edited_copy,
    probe_args,
    probe_header,
    run_points,
    timing_method,
    write_points,
)

EXAMPLE = ROOT / "examples/attention_hopper.py"
METHOD = PRESCALE_METHOD[:-1] + "; setmaxnreg: the USETMAXREG instructions of the same SASS."
CANDIDATE = "three consumers"
# (the example's text, the candidate's), applied in order
EDITS = [
    # the per-head-dim table: three consumers at 64; the launch's register cap per count
    ('''    64: {"BLOCK_N": 128, "STAGES": 2},
    128: {"BLOCK_N": 128, "STAGES": 2},
}
''', '''    64: {"BLOCK_N": 128, "STAGES": 2, "NUM_WG": 3},
    128: {"BLOCK_N": 128, "STAGES": 2, "NUM_WG": 2},
}
# consumers -> (registers a thread at launch, setmaxnreg of a worker consumer, of the
# producer): four warpgroups x 128 threads x 128 = 64K; with 160 for the worker consumers
# the default partition's consumer gets 168 (compiled: no spills; 152, 168, 176 spill)
FWD_REGS = {2: (168, 240, 24), 3: (128, 160, 24)}
'''),
    # tiles: a ceiling, so that the last tile of a head may run past its end
    ('''        n_m = seq_len // CTA_M
        return gl.minimum(n_m - 2 * (unit % ((n_m + 1) // 2)), 2)''',
     '''        n_m = (seq_len + CTA_M - 1) // CTA_M
        return gl.minimum(n_m - 2 * (unit % ((n_m + 1) // 2)), 2)'''),
    ('''    n_m = seq_len // CTA_M
    if CAUSAL:  # unit j of a head''', '''    n_m = (seq_len + CTA_M - 1) // CTA_M
    if CAUSAL:  # unit j of a head'''),
    ('''        n_blocks = (start_m + CTA_M) // BLOCK_N''',
     '''        n_blocks = gl.minimum((start_m + CTA_M + BLOCK_N - 1) // BLOCK_N,
                              seq_len // BLOCK_N)'''),
    # the producer: one Q tile per consumer
    ('''               k_ready, k_empty, v_ready, v_empty, row_q, row_kv, n_blocks, c, i,
               BLOCK_N: gl.constexpr, STAGES: gl.constexpr):''',
     '''               k_ready, k_empty, v_ready, v_empty, row_q, row_kv, n_blocks, c, i,
               BLOCK_N: gl.constexpr, STAGES: gl.constexpr, NUM_WG: gl.constexpr):'''),
    ('''            for wg in gl.static_range(2):  # one 64-row Q tile per consumer''',
     '''            for wg in gl.static_range(NUM_WG):  # one 64-row Q tile per consumer'''),
    ('''              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    CTA_M: gl.constexpr = 2 * q_desc.block_type.shape[0]''',
     '''              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
              NUM_WG: gl.constexpr):
    CTA_M: gl.constexpr = NUM_WG * q_desc.block_type.shape[0]'''),
    ('''                           n_blocks, c, i, BLOCK_N, STAGES)''',
     '''                           n_blocks, c, i, BLOCK_N, STAGES, NUM_WG)'''),
    # the consumer: rows past the head's end store nothing
    ('''                 k_empty, v_ready, v_empty, row_q, q_row0, n_full, n_blocks, c, i,
                 qk_scale, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,''',
     '''                 k_empty, v_ready, v_empty, row_q, q_row0, n_full, n_blocks, c, i,
                 qk_scale, live, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,'''),
    ('''    o = o / gl.expand_dims(gl.convert_layout(l_i, gl.SliceLayout(1, o_layout)), 1)
    tma.store_wait(0)  # the previous tile's store has left o_buf
    o_buf.store(o.to(o_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row_q, 0], o_buf)
    lse = (m_i * qk_scale + gl.log2(l_i)) * LN2
    gl.store(lse_ptr + row_q + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout)),
             lse)''',
     '''    if live:  # rows of this head: a consumer past its end stores nothing
        o = o / gl.expand_dims(gl.convert_layout(l_i, gl.SliceLayout(1, o_layout)), 1)
        tma.store_wait(0)  # the previous tile's store has left o_buf
        o_buf.store(o.to(o_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(o_desc, [row_q, 0], o_buf)
        lse = (m_i * qk_scale + gl.log2(l_i)) * LN2
        gl.store(lse_ptr + row_q + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout)),
                 lse)'''),
    ('''              WG: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    ROWS: gl.constexpr = q_smem.type.shape[1]''',
     '''              WG: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr, NUM_WG: gl.constexpr):
    ROWS: gl.constexpr = q_smem.type.shape[1]'''),
    ('''        for h in range(_unit_tiles(unit, seq_len, 2 * ROWS, CAUSAL)):''',
     '''        for h in range(_unit_tiles(unit, seq_len, NUM_WG * ROWS, CAUSAL)):'''),
    ('''                                                             2 * ROWS, BLOCK_N, CAUSAL)''',
     '''                                                             NUM_WG * ROWS, BLOCK_N,
                                                             CAUSAL)'''),
    ('''                             start_m + WG * ROWS, n_full, n_blocks, c, i, qk_scale,
                             BLOCK_N, HEAD_D, STAGES, CAUSAL)''',
     '''                             start_m + WG * ROWS, n_full, n_blocks, c, i, qk_scale,
                             start_m + WG * ROWS < seq_len, BLOCK_N, HEAD_D, STAGES,
                             CAUSAL)'''),
    # the kernel: a Q and an O tile, a barrier pair and a partition per consumer
    ('''                            HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                            CAUSAL: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [2] + q_desc.block_type.shape,
                                       q_desc.layout)
    o_smem = gl.allocate_shared_memory(dtype, [2] + o_desc.block_type.shape,
                                       o_desc.layout)''',
     '''                            HEAD_D: gl.constexpr, STAGES: gl.constexpr,
                            CAUSAL: gl.constexpr, NUM_WG: gl.constexpr,
                            CONSUMER_R: gl.constexpr, PRODUCER_R: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [NUM_WG] + q_desc.block_type.shape,
                                       q_desc.layout)
    o_smem = gl.allocate_shared_memory(dtype, [NUM_WG] + o_desc.block_type.shape,
                                       o_desc.layout)'''),
    ('''    q_bars = gl.allocate_shared_memory(gl.int64, [2, 1], bar)
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], bar)
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    for i in gl.static_range(2):''',
     '''    q_bars = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], bar)
    q_empty = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], bar)
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    for i in gl.static_range(NUM_WG):'''),
    ('''        mbarrier.init(k_empty.index(i), count=2)  # one arrive per consumer
        mbarrier.init(v_empty.index(i), count=2)

    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                     k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                     WG0, BLOCK_N, HEAD_D, STAGES, CAUSAL)),
        (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                     k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                     WG1, BLOCK_N, HEAD_D, STAGES, CAUSAL)),
        (_producer, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, q_empty,
                     k_ready, k_empty, v_ready, v_empty, seq_len, n_units, BLOCK_N,
                     STAGES, CAUSAL)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])''',
     '''        mbarrier.init(k_empty.index(i), count=NUM_WG)  # one arrive per consumer
        mbarrier.init(v_empty.index(i), count=NUM_WG)

    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    WG2: gl.constexpr = 2
    if NUM_WG == 3:
        gl.warp_specialize([
            (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                         WG0, BLOCK_N, HEAD_D, STAGES, CAUSAL, NUM_WG)),
            (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                         WG1, BLOCK_N, HEAD_D, STAGES, CAUSAL, NUM_WG)),
            (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                         WG2, BLOCK_N, HEAD_D, STAGES, CAUSAL, NUM_WG)),
            (_producer, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, BLOCK_N,
                         STAGES, CAUSAL, NUM_WG)),
        ], [4, 4, 1], [CONSUMER_R, CONSUMER_R, PRODUCER_R])
    else:
        gl.warp_specialize([
            (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                         WG0, BLOCK_N, HEAD_D, STAGES, CAUSAL, NUM_WG)),
            (_consumer, (o_desc, lse_ptr, q_smem, o_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, qk_scale,
                         WG1, BLOCK_N, HEAD_D, STAGES, CAUSAL, NUM_WG)),
            (_producer, (q_desc, k_desc, v_desc, q_smem, k_bufs, v_bufs, q_bars, q_empty,
                         k_ready, k_empty, v_ready, v_empty, seq_len, n_units, BLOCK_N,
                         STAGES, CAUSAL, NUM_WG)),
        ], [4, 1], [CONSUMER_R, PRODUCER_R])'''),
    # the launcher: units of NUM_WG x 64 rows, registers per consumer count
    ('''def _units(batch_heads: int, seq_len: int, causal: bool) -> int:
    """Work units (`_tile`): causal pairs of query blocks, or single query blocks."""
    n_m = seq_len // BLOCK_M''',
     '''def _units(batch_heads: int, seq_len: int, causal: bool, cta_m: int = BLOCK_M) -> int:
    """Work units (`_tile`): causal pairs of query blocks, or single query blocks."""
    n_m = -(-seq_len // cta_m)'''),
    ('''    n_units = _units(B * H, S, causal)''',
     '''    n_units = _units(B * H, S, causal, WG_M * cfg["NUM_WG"])
    launch_r, consumer_r, producer_r = FWD_REGS[cfg["NUM_WG"]]'''),
    ('''        *descs, lse, S, n_units, sm_scale * LOG2E, HEAD_D=D, CAUSAL=causal, **cfg,
        num_warps=4, maxnreg=MAXNREG)''',
     '''        *descs, lse, S, n_units, sm_scale * LOG2E, HEAD_D=D, CAUSAL=causal, **cfg,
        CONSUMER_R=consumer_r, PRODUCER_R=producer_r, num_warps=4, maxnreg=launch_r)'''),
    # compile_for_sm90: the same constexprs and register cap as the launch
    ('''    if kernel == "forward":
        cfg = CONFIGS[head_dim]''',
     '''    if kernel == "forward":
        launch_r, consumer_r, producer_r = FWD_REGS[CONFIGS[head_dim]["NUM_WG"]]
        cfg = {**CONFIGS[head_dim], "CONSUMER_R": consumer_r, "PRODUCER_R": producer_r}
        options = {"num_warps": 4, "maxnreg": launch_r}'''),
]
REGS_TRIED = (152, 168, 176)  # other setmaxnreg values of the worker consumers, compiled only
# (dtype, head_dim, causal, seq): the head-dim-64 forward target points, 128 unchanged as a
# control, and 1024 (run 90's profiled point)
POINTS = ([(dt, 64, c, s) for s in (4096, 16384) for c in (False, True) for dt in ("fp16", "bf16")]
          + [("fp16", 128, False, 4096), ("fp16", 64, False, 1024), ("fp16", 64, True, 1024)])


def candidates(ex, tmp: Path) -> dict:
    hint = " (the example changed: update the probe's EDITS)"
    return {"example": ex,
            CANDIDATE: edited_copy(EXAMPLE, tmp, "attention_hopper_three_wg", EDITS, hint)}


def check_small(mods: dict, device) -> list[str]:
    """The candidate's (o, lse) against the example's at head dim 64 on lengths whose last
    192-row tile is partial (128: one live consumer of three; 384, 640: two; 1024: one), both
    dtypes, with and without the mask, 2 x 3 heads: one line per mismatch."""
    ex, cand = mods["example"], mods[CANDIDATE]
    failed = []
    for dtype in (torch.float16, torch.bfloat16):
        for seq in (128, 384, 640, 1024):
            for causal in (False, True):
                g = torch.Generator(device=device).manual_seed(seq)
                q, k, v = (torch.randn(2, 3, seq, 64, device=device, dtype=dtype, generator=g)
                           for _ in "qkv")
                want = ex.attention_hopper_forward(q, k, v, causal)
                got = cand.attention_hopper_forward(q, k, v, causal)
                tol = 2e-2 if dtype == torch.float16 else 4e-2
                for name, a, e in zip(("o", "lse"), got, want, strict=True):
                    try:
                        torch.testing.assert_close(a, e, rtol=tol, atol=tol)
                    except AssertionError as err:
                        failed.append(f"{dtype} seq={seq} causal={causal} {name}: "
                                      + str(err).strip().splitlines()[0])
    return failed


def setmaxnreg(cubin: bytes) -> list[str]:
    """The USETMAXREG instructions of the SASS (setmaxnreg: each partition's register count)."""
    return sorted(set(re.findall(r"USETMAXREG[^;]*", disassemble(cubin))))


def code_sizes(mods: dict, tried=REGS_TRIED) -> dict:
    """Each candidate's kernels; then the candidate at head dim 64 with other registers for
    its worker consumers (``tried``: REGS_TRIED for --compile, none in a GPU run), FWD_REGS
    restored after."""
    out = {}
    for name, mod in mods.items():
        for d in (64, 128):
            for causal in (False, True):
                kernel = mod.compile_for_sm90(torch.float16, d, causal)
                out[f"{name}, head_dim={d}, causal={causal}"] = {
                    **code_size(kernel), "setmaxnreg": setmaxnreg(kernel.asm["cubin"])}
    cand = mods[CANDIDATE]
    chosen = cand.FWD_REGS[3]
    try:
        for regs in tried:
            cand.FWD_REGS[3] = (chosen[0], regs, chosen[2])
            for causal in (False, True):
                kernel = cand.compile_for_sm90(torch.float16, 64, causal)
                out[f"{CANDIDATE}, worker consumers at {regs}, head_dim=64, causal={causal}"] = {
                    **code_size(kernel), "setmaxnreg": setmaxnreg(kernel.asm["cubin"])}
    finally:
        cand.FWD_REGS[3] = chosen
    return out


def main() -> None:
    import attention_hopper as ex

    with tempfile.TemporaryDirectory() as tmp:
        mods = candidates(ex, Path(tmp))
        if compile_only(sys.argv, "benchmarks/evidence/attention/gluon_three_wg.py",
                        "three_wg_code_sizes.json", lambda: code_sizes(mods), METHOD):
            return
        args = probe_args()
        if args.smoke:
            sys.exit("gluon_three_wg.py needs an sm_90 GPU: Gluon has no interpreter")
        from benchmarks.cases.attention_hopper import BATCH, HEADS
        device, timing = timing_method(args.smoke)
        small = check_small(mods, device)
        print("small shapes:", "passed" if not small else "FAILED\n" + "\n".join(small),
              flush=True)
        setup = forward_setup(mods, device, args.smoke)
        points = ({"dtype": dt, "head_dim": d, "causal": c, "seq": s} for dt, d, c, s in POINTS)
        sizes = code_sizes(mods, tried=())
        passes = 3
        rows, skipped = run_points(points, setup, passes, timing, args.budget, "sdpa-cudnn")
        header = probe_header(
            "benchmarks/evidence/attention/gluon_three_wg.py", METHOD,
            kernels=("example: examples/attention_hopper.py; " + CANDIDATE
                     + ": a copy of it with the probe's EDITS applied"),
            batch=BATCH, heads=HEADS, passes=passes, budget_s=args.budget, skipped=skipped,
            small_shapes=small or "passed", code=sizes)
        write_points(args.out / "gluon_three_wg.json", header, rows)


if __name__ == "__main__":
    main()
