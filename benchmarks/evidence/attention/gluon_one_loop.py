"""Probe: is the causal Gluon forward slowed by the size of its code?

At head dim 64, causal, seq 1024 the Gluon forward ran at about three quarters of cuDNN's
speed, and Nsight Compute (run 46) found its warps waiting for instructions
(``no_instruction``) there. Compiled for sm_90, the kernel as of commit d21bd36 was about 80 KB
of SASS under the mask against 47 KB without it: each consumer warpgroup is a copy of its own
(``WG`` is a constexpr), and under the mask each held the softmax three times (the first block
by hand, an unmasked step loop, a masked step loop, the mask a constexpr). The candidate
walks a tile's key blocks in one loop whose step masks a block only when a runtime flag says
it crosses the diagonal (``j >= n_full``), the first block on the same flag: one step and two
softmax copies per consumer. Without the mask it compiles to the same code as before.
That change was kept as a patch (the example, its notebook and chapter) until run 89
verified and timed it; it is in the example since (commit 383e473), and at an earlier commit
both candidates below would be the same kernel.

This probe times the example ("one loop") beside the d21bd36 code ("two loops": a
second copy of the example module, loaded from its file under another name, whose
``_attend_tile`` is replaced by the one below before anything compiles, so the two kernels
have separate compile caches), at head dim 64 also the example with a three-slot
K/V ring (a third copy; run 88 had found the deeper ring best under the mask), and SDPA's
cuDNN backend at every causal point of the Hopper attention benchmark
(``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads), and writes both kernels' SASS
size, registers and spills into the header.

Method: ``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (``PASSES`` passes, the
reference cuDNN) and ``METHOD`` below, both written into the JSON header.

Usage (repository root, on an sm_90 GPU): ``python benchmarks/evidence/attention/gluon_one_loop.py
--out DIR [--budget S]``; ``--compile DIR`` (any machine) writes the code sizes only, to
``DIR/one_loop_code_sizes.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402
from attention_hopper import LN2, _max_combine, _sum_combine  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from scripts.probe_common import (  # noqa: E402
    attention_inputs,
    code_size,
    environment,
    load_module,
    probe_args,
    probe_header,
    ptxas_version,
    run_points,
    timing_method,
    write_points,
)

PASSES = 3
DEEP = "one loop, 3 K/V slots"
CODE_METHOD = ("SASS size: the instructions nvdisasm lists in the cubin that compile_for_sm90 "
               "builds for sm_90 (fp16); registers and spills from ptxas -v on its PTX; "
               "shared memory from the compiled kernel's metadata.")
METHOD = ("Inputs: seeded torch.randn, batch 32 x 16 heads; tolerance 2e-2 (fp16), 4e-2 (bf16); "
          "TFLOP/s counts 4 * B * H * S^2 * D, halved under the causal mask. " + CODE_METHOD)


# The example's _softmax_block, _step and _attend_tile as of commit d21bd36 (two loops,
# the mask a constexpr), verbatim.


@gluon.jit
def _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK: gl.constexpr,
                   BLOCK_N: gl.constexpr, s_layout: gl.constexpr):
    """Online softmax of one fp32 S tile: (p, alpha, m_new, l_new)."""
    if MASK:  # causal, on the diagonal: key column > query row is -inf
        ROWS: gl.constexpr = s.type.shape[0]
        rows = q_row0 + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout))
        cols = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        s = gl.where(gl.expand_dims(cols, 0) <= gl.expand_dims(rows, 1), s,
                     -float("inf"))
    # m in unscaled units; the difference is scaled (no FMA can form), so the row's
    # largest exponent is exactly 0
    m_new = gl.maximum(m_i, gl.reduce(s, 1, _max_combine))
    alpha = gl.exp2((m_i - m_new) * qk_scale)
    p = gl.exp2((s - gl.expand_dims(m_new, 1)) * qk_scale)
    l_new = l_i * alpha + gl.reduce(p, 1, _sum_combine)
    return p, alpha, m_new, l_new


@gluon.jit
def _step(j, c, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p, m_i,
          l_i, q_row0, qk_scale, MASK: gl.constexpr, BLOCK_N: gl.constexpr,
          STAGES: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr,
          p_layout: gl.constexpr):
    """Key block j of the tile, block c of the ring (c - 1: the previous one)."""
    ROWS: gl.constexpr = q.type.shape[0]
    slot = c % STAGES
    mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False,
                      is_async=True)  # S_j = Q K_j^T
    prev = (c - 1) % STAGES
    mbarrier.wait(v_ready.index(prev), ((c - 1) // STAGES) & 1)
    o = warpgroup_mma(p, v_bufs.index(prev), o, is_async=True)  # O += P V, j - 1
    s = warpgroup_mma_wait(1, deps=(s,))  # S_j is done; P V may still run
    mbarrier.arrive(k_empty.index(slot))
    p_new, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, MASK,
                                            BLOCK_N, s_layout)
    p_new = gl.convert_layout(p_new.to(q.dtype), p_layout)
    o, p = warpgroup_mma_wait(0, deps=(o, p))
    mbarrier.arrive(v_empty.index(prev))
    o = o * gl.expand_dims(gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), 1)
    return o, p_new, m_i, l_i


@gluon.jit
def _attend_tile(o_desc, lse_ptr, q, o_buf, q_bar, q_free, k_bufs, v_bufs, k_ready,
                 k_empty, v_ready, v_empty, row_q, q_row0, n_full, n_blocks, c, i,
                 qk_scale, BLOCK_N: gl.constexpr, HEAD_D: gl.constexpr,
                 STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    """This warpgroup's 64 rows of one tile (rows row_q... of the (B*H*S, D) view,
    q_row0... of the head): the program's tile i, key blocks c... of the ring.
    Returns c after the tile."""
    ROWS: gl.constexpr = q.type.shape[0]
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout,
                                                 k_width=2)
    mbarrier.wait(q_bar, i & 1)
    m_i = gl.full([ROWS], -float("inf"), gl.float32, gl.SliceLayout(1, s_layout))
    l_i = gl.full([ROWS], 0.0, gl.float32, gl.SliceLayout(1, s_layout))
    o = gl.zeros([ROWS, HEAD_D], gl.float32, o_layout)

    # Block 0 by hand: its S and softmax (masked when causal: needed when the
    # tile starts at query 0, harmless otherwise).
    slot = c % STAGES
    mbarrier.wait(k_ready.index(slot), (c // STAGES) & 1)
    s = gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout)
    s = warpgroup_mma(q, k_bufs.index(slot).permute((1, 0)), s, use_acc=False,
                      is_async=True)
    s = warpgroup_mma_wait(0, deps=(s,))
    mbarrier.arrive(k_empty.index(slot))
    p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, 0, q_row0, qk_scale, CAUSAL,
                                        BLOCK_N, s_layout)
    p = gl.convert_layout(p.to(q.dtype), p_layout)
    for j in range(1, n_full):  # key blocks left of the diagonal: no mask
        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,
                               v_ready, v_empty, o, p, m_i, l_i, q_row0, qk_scale,
                               False, BLOCK_N, STAGES, s_layout, o_layout, p_layout)
    for j in range(gl.maximum(n_full, 1), n_blocks):  # on the diagonal: masked
        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,
                               v_ready, v_empty, o, p, m_i, l_i, q_row0, qk_scale,
                               CAUSAL, BLOCK_N, STAGES, s_layout, o_layout, p_layout)
    c += n_blocks
    last = (c - 1) % STAGES  # the pipeline's tail: the last P V
    mbarrier.wait(v_ready.index(last), ((c - 1) // STAGES) & 1)
    o = warpgroup_mma(p, v_bufs.index(last), o, is_async=True)
    o = warpgroup_mma_wait(0, deps=(o, p))[0]
    mbarrier.arrive(v_empty.index(last))
    mbarrier.arrive(q_free)  # Q is read no more: the next tile's Q may come

    # O / l goes out through shared memory and a TMA store, which runs on while
    # the next tile starts; the log-sum-exp in natural log, one fp32 per row.
    o = o / gl.expand_dims(gl.convert_layout(l_i, gl.SliceLayout(1, o_layout)), 1)
    tma.store_wait(0)  # the previous tile's store has left o_buf
    o_buf.store(o.to(o_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(o_desc, [row_q, 0], o_buf)
    lse = (m_i * qk_scale + gl.log2(l_i)) * LN2
    gl.store(lse_ptr + row_q + gl.arange(0, ROWS, layout=gl.SliceLayout(1, s_layout)),
             lse)
    return c


def module_copy(name: str):
    """Another copy of examples/attention_hopper.py, loaded under `name`: its kernels
    have their own compile cache."""
    return load_module(name, ROOT / "examples/attention_hopper.py")


def candidate_module():
    """A copy of examples/attention_hopper.py with the d21bd36 _attend_tile."""
    mod = module_copy("attention_hopper_two_loops")
    mod._attend_tile = _attend_tile  # before anything compiles
    return mod


def deep_ring_module():
    """A copy of the example whose head-dim-64 ring has three K/V slots (the
    lead of run 88: a deeper ring helped most under the mask)."""
    mod = module_copy("attention_hopper_deep_ring")
    mod.CONFIGS = {**mod.CONFIGS, 64: {**mod.CONFIGS[64], "STAGES": 3}}
    return mod


def code_sizes(mods: dict) -> dict:
    return {f"{name}, head_dim={d}, causal={causal}":
            code_size(mod.compile_for_sm90(torch.float16, d, causal))
            for name, mod in mods.items() for d in (64, 128) for causal in (False, True)}


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["direction"] == "fwd" and spec["args"]["causal"]:
            for seq in spec["x_vals"]:
                yield {**spec["args"], "seq": seq}


def main() -> None:
    import inspect

    import attention_hopper as ex

    if "masked" not in inspect.signature(ex._softmax_block.fn).parameters:
        sys.exit("examples/attention_hopper.py has two loops: the one-loop forward "
                 "is in the example from commit 383e473 on")
    mods = {"two loops": candidate_module(), "one loop": ex}
    if "--compile" in sys.argv:  # any machine: the code sizes, into DIR/one_loop_code_sizes.json
        at = sys.argv.index("--compile") + 1
        if at >= len(sys.argv):
            sys.exit("usage: gluon_one_loop.py --compile DIR")
        out = Path(sys.argv[at])
        sizes = code_sizes(mods)
        for name, res in sizes.items():
            print(name, res)
        header = {"probe": "benchmarks/evidence/attention/gluon_one_loop.py --compile",
                  **environment(), "ptxas": ptxas_version(), "method": CODE_METHOD,
                  "kernels": "one loop: examples/attention_hopper.py (one loop since "
                             "commit 383e473); two loops: a copy of it "
                             "with the d21bd36 _attend_tile"}
        write_points(out / "one_loop_code_sizes.json", header,
                     [{"kernel": name, **res} for name, res in sizes.items()])
        return
    args = probe_args()
    if args.smoke:
        sys.exit("gluon_one_loop.py has no --smoke: Gluon has no interpreter")
    from benchmarks.cases.attention_hopper import BATCH, HEADS
    device, timing = timing_method(args.smoke)
    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa

    deep = deep_ring_module()

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
        torch.cuda.empty_cache()
        d, seq = pt["head_dim"], pt["seq"]
        fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, True, SDPA_BACKENDS["sdpa-cudnn"])}
        for name, mod in mods.items():
            fns[name] = lambda mod=mod: mod.attention_hopper(q, k, v, True)
        if d == 64:
            fns[DEEP] = lambda: deep.attention_hopper(q, k, v, True)
        flops = 2.0 * BATCH * HEADS * seq * seq * d
        return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops

    sizes = code_sizes(mods)
    rows, skipped = run_points(points(), setup, PASSES, timing, args.budget, "sdpa-cudnn")
    header = probe_header("benchmarks/evidence/attention/gluon_one_loop.py", METHOD,
                          kernels="one loop: examples/attention_hopper.py (one loop since "
                                  "commit 383e473); two loops: a copy "
                                  "of it with the d21bd36 _attend_tile; " + DEEP
                                  + ": one loop with 3 K/V ring slots (head dim 64 only)",
                          batch=BATCH, heads=HEADS,
                          passes=PASSES, budget_s=args.budget, skipped=skipped,
                          code=sizes)
    write_points(args.out / "gluon_one_loop.json", header, rows)


if __name__ == "__main__":
    main()
