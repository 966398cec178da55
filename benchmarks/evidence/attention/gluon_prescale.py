"""Probe: the Gluon forward with the softmax scale folded into Q, one instruction less per score.

Why: at head dim 64 each S element costs the tensor cores 256 FLOPs (Q K^T and P V) and the
consumer one ``ex2``. An H100 SM does 4096 dense fp16 FLOPs a clock and 16 ``ex2`` (the MUFU
pipe, CUDA programming guide's throughput table), so at the tensor cores' peak the exponentials
alone fill the MUFU pipe, and by count the issue slots could be short too: compiled for sm_90,
the example's step loop is 480 SASS instructions a warp per key block (nvdisasm, counted by
hand), two consumer warps
share each scheduler, and a 64 x 128 x 64 block pair keeps the tensor cores busy for about
1024 clocks a CTA. (Run 90's profile then found the consumers issuing in about a fifth of
their samples: at seq 1024 they wait more than they issue.) Each score costs a subtraction
and a multiplication before its ``ex2`` (``(s - m) * qk_scale``, kept unfused on purpose: an
FMA against a separately rounded maximum overflowed ``exp2`` on scores of 1e30, run 33). The candidate multiplies each consumer's
Q tile by ``qk_scale`` once, in shared memory, when it lands (its rounding to fp16/bf16 is
the only new error); the scores then come out of the tensor cores already scaled, and a score
costs one subtraction: ``exp2(s - m)``, the row's largest exponent still exactly 0. It is the
example's source with the text replacements in ``EDITS`` below, loaded under another module
name (its kernels have their own compile cache). Run 90 timed it so (three passes, ``POINTS``)
and found it faster at most points. It then went into the example, and run 91 timed the
example against a copy with the text replacements in ``UNDO`` (the code run 89 verified,
the scale in each exponent; five passes, ``MORE_POINTS``). Run 91's GPU check of that example
failed: two bf16 property tests (large queries; a gradient) came out of tolerance, the cost of
rounding the scaled Q to bf16. The example was put back, so the probe runs as in run 90 again;
with the example prescaled it runs as in run 91.

Candidates at the forward points of the Hopper attention benchmark listed in ``POINTS``
(``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads): ``sdpa-cudnn`` (the
reference), ``example`` (``attention_hopper``) and ``prescaled Q``. Method:
``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` (check against cuDNN, then interleaved
passes, do_bench and CUDA graph) and ``METHOD`` below, both in the JSON header, which also
holds each kernel's SASS size, registers and spills compiled for sm_90.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/attention/gluon_prescale.py
--out DIR [--budget S]``; anywhere ``... --compile DIR`` writes the code sizes only, to
``DIR/prescale_code_sizes.json``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT)]

import torch  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    attention_inputs,
    code_size,
    compile_only,
    edited_copy,
    probe_args,
    probe_header,
    run_points,
    timing_method,
    write_points,
)

CANDIDATE = "prescaled Q"
EXAMPLE = ROOT / "examples/attention_hopper.py"
METHOD = ("Inputs: seeded torch.randn, batch 32 x 16 heads; tolerance 2e-2 (fp16), 4e-2 (bf16) "
          "against SDPA's cuDNN backend. SASS size: the instructions nvdisasm lists in the cubin "
          "that compile_for_sm90 builds for sm_90 (fp16); registers and spills from ptxas -v.")
# (the example's text, the candidate's)
EDITS = [
    ("""    alpha = gl.exp2((m_i - m_new) * qk_scale)
    p = gl.exp2((s - gl.expand_dims(m_new, 1)) * qk_scale)""",
     """    alpha = gl.exp2(m_i - m_new)  # s arrives scaled: Q was multiplied by qk_scale
    p = gl.exp2(s - gl.expand_dims(m_new, 1))"""),
    ("""    mbarrier.wait(q_bar, i & 1)
""",
     """    mbarrier.wait(q_bar, i & 1)
    q_regs: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    q.store((q.load(q_regs).to(gl.float32) * qk_scale).to(q.dtype))
    fence_async_shared()  # the scaled Q is what the next wgmma reads
"""),
    ("    lse = (m_i * qk_scale + gl.log2(l_i)) * LN2",
     "    lse = (m_i + gl.log2(l_i)) * LN2"),
]
# (run 91's example, prescaled; the text it replaced, which the example holds again: Q not
# prescaled, as at commit f8b6157 / run 89)
UNDO = [
    (('#\n'
      '# `_softmax_block` is the online softmax of `examples/attention.py` in base 2.\n'
      '# The scale `qk_scale = sm_scale * log2(e)` is already in the scores: each\n'
      '# consumer multiplies its Q tile by it once, in shared memory, when the tile\n'
      '# lands, so a score costs one subtraction before its `exp2`, not a subtraction\n'
      '# and a multiplication. The running max `m` and sum `l` are fp32, one value per\n'
      "# row (a `SliceLayout` of S's layout).\n"),
     ('#\n'
      '# `_softmax_block` is the online softmax of `examples/attention.py` in base 2:\n'
      '# `qk_scale = sm_scale * log2(e)` scales each exponent, the running max `m` (of\n'
      '# the unscaled scores) and sum `l` are fp32, one value per row (a `SliceLayout`\n'
      "# of S's layout).\n")),
    (('@gluon.jit\n'
      'def _softmax_block(s, m_i, l_i, j, q_row0, masked, BLOCK_N: gl.constexpr,\n'),
     ('@gluon.jit\n'
      'def _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, masked, BLOCK_N: gl.constexpr,\n')),
    (('                   s_layout: gl.constexpr):\n'
      '    """Online softmax of one fp32 S tile, scores already scaled by qk_scale:\n'
      '    (p, alpha, m_new, l_new)."""\n'),
     ('                   s_layout: gl.constexpr):\n'
      '    """Online softmax of one fp32 S tile: (p, alpha, m_new, l_new)."""\n')),
    (('                     -float("inf"))\n'
      "    # one subtraction per score: the row's largest exponent is exactly 0\n"),
     ('                     -float("inf"))\n'
      "    # m in unscaled units; the difference is scaled (no FMA can form), so the row's\n"
      '    # largest exponent is exactly 0\n')),
    (('    m_new = gl.maximum(m_i, gl.reduce(s, 1, _max_combine))\n'
      '    alpha = gl.exp2(m_i - m_new)\n'
      '    p = gl.exp2(s - gl.expand_dims(m_new, 1))\n'),
     ('    m_new = gl.maximum(m_i, gl.reduce(s, 1, _max_combine))\n'
      '    alpha = gl.exp2((m_i - m_new) * qk_scale)\n'
      '    p = gl.exp2((s - gl.expand_dims(m_new, 1)) * qk_scale)\n')),
    (('def _step(j, c, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p, m_i,\n'
      '          l_i, q_row0, masked, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,\n'),
     ('def _step(j, c, q, k_bufs, v_bufs, k_ready, k_empty, v_ready, v_empty, o, p, m_i,\n'
      '          l_i, q_row0, qk_scale, masked, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,\n')),
    (('    mbarrier.arrive(k_empty.index(slot))\n'
      '    p_new, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, masked, BLOCK_N,\n'
      '                                            s_layout)\n'),
     ('    mbarrier.arrive(k_empty.index(slot))\n'
      '    p_new, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, j, q_row0, qk_scale, masked,\n'
      '                                            BLOCK_N, s_layout)\n')),
    (('    mbarrier.wait(q_bar, i & 1)\n'
      '    # Q times qk_scale, once per tile: every score comes out of the wgmma scaled\n'
      '    q_regs: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])\n'
      '    q.store((q.load(q_regs).to(gl.float32) * qk_scale).to(q.dtype))\n'
      '    fence_async_shared()  # the wgmma reads the stored Q\n'),
     ('    mbarrier.wait(q_bar, i & 1)\n')),
    (('        masked = False\n'
      '    p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, 0, q_row0, masked, BLOCK_N,\n'
      '                                        s_layout)\n'),
     ('        masked = False\n'
      '    p, alpha, m_i, l_i = _softmax_block(s, m_i, l_i, 0, q_row0, qk_scale, masked,\n'
      '                                        BLOCK_N, s_layout)\n')),
    (('        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,\n'
      '                               v_ready, v_empty, o, p, m_i, l_i, q_row0, masked,\n'
      '                               BLOCK_N, STAGES, s_layout, o_layout, p_layout)\n'),
     ('        o, p, m_i, l_i = _step(j, c + j, q, k_bufs, v_bufs, k_ready, k_empty,\n'
      '                               v_ready, v_empty, o, p, m_i, l_i, q_row0, qk_scale,\n'
      '                               masked, BLOCK_N, STAGES, s_layout, o_layout, p_layout)\n')),
    (('    tma.async_copy_shared_to_global(o_desc, [row_q, 0], o_buf)\n'
      '    lse = (m_i + gl.log2(l_i)) * LN2\n'),
     ('    tma.async_copy_shared_to_global(o_desc, [row_q, 0], o_buf)\n'
      '    lse = (m_i * qk_scale + gl.log2(l_i)) * LN2\n')),
]
# (dtype, head_dim, causal, seq): run 90's points, the misses at head dim 64 and a control at 128
POINTS = [("fp16", 64, False, 1024), ("bf16", 64, False, 1024), ("fp16", 64, False, 4096),
          ("bf16", 64, False, 4096), ("fp16", 64, True, 1024), ("fp16", 64, True, 4096),
          ("fp16", 128, False, 1024), ("fp16", 128, False, 4096)]
# once the example is prescaled: every forward point of the benchmark at 1024 and 4096, head
# dim 64 first
MORE_POINTS = [(dt, d, c, s) for d in (64, 128) for c in (False, True) for s in (1024, 4096)
               for dt in ("fp16", "bf16")]


def prescaled() -> bool:
    """Whether the example multiplies Q by qk_scale (it did in run 91 only)."""
    return "q_regs" in EXAMPLE.read_text()


def candidates(ex, tmp: Path) -> dict:
    """Q not prescaled in the example (run 90, and since run 91): the example and a copy
    with EDITS. Prescaled (run 91): a copy with UNDO, the code run 89 verified, and the
    example."""
    if prescaled():
        return {"unscaled": edited_copy(EXAMPLE, tmp, "attention_hopper_unscaled", UNDO),
                CANDIDATE: ex}
    return {"example": ex,
            CANDIDATE: edited_copy(EXAMPLE, tmp, "attention_hopper_prescaled", EDITS)}


def code_sizes(mods: dict) -> dict:
    return {f"{name}, head_dim={d}, causal={causal}":
            code_size(mod.compile_for_sm90(torch.float16, d, causal))
            for name, mod in mods.items() for d in (64, 128) for causal in (False, True)}


def forward_setup(mods: dict, device, smoke: bool):
    """``setup(pt)`` for ``run_points`` at a forward point: SDPA's cuDNN backend (the reference)
    and each module's ``attention_hopper`` on the same seeded inputs (the benchmark's batch and
    heads), the tolerance (2e-2 fp16, 4e-2 bf16) and the point's FLOPs."""
    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa
    from benchmarks.cases.attention_hopper import BATCH, HEADS

    def setup(pt):
        q, k, v = attention_inputs(pt, BATCH, HEADS, device, smoke)
        torch.cuda.empty_cache()
        causal, d, seq = pt["causal"], pt["head_dim"], pt["seq"]
        fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
        for name, mod in mods.items():
            fns[name] = lambda mod=mod: mod.attention_hopper(q, k, v, causal)
        flops = 4.0 * BATCH * HEADS * seq * seq * d * (0.5 if causal else 1.0)
        return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops
    return setup


def main() -> None:
    import attention_hopper as ex

    with tempfile.TemporaryDirectory() as tmp:
        mods = candidates(ex, Path(tmp))
        if compile_only(sys.argv, "benchmarks/evidence/attention/gluon_prescale.py",
                        "prescale_code_sizes.json", lambda: code_sizes(mods), METHOD):
            return
        args = probe_args()
        if args.smoke:
            sys.exit("gluon_prescale.py needs an sm_90 GPU: Gluon has no interpreter")
        from benchmarks.cases.attention_hopper import BATCH, HEADS
        device, timing = timing_method(args.smoke)
        setup = forward_setup(mods, device, args.smoke)

        points = ({"dtype": dt, "head_dim": d, "causal": c, "seq": s}
                  for dt, d, c, s in (POINTS if not prescaled() else MORE_POINTS))
        sizes = code_sizes(mods)
        passes = 5 if prescaled() else 3  # run 90: 3
        rows, skipped = run_points(points, setup, passes, timing, args.budget, "sdpa-cudnn")
        kernels = ("unscaled: a copy of examples/attention_hopper.py with the probe's UNDO "
                   "applied; " + CANDIDATE + ": the example") if prescaled() else (
                   "example: examples/attention_hopper.py; " + CANDIDATE
                   + ": a copy of it with the probe's EDITS applied")
        header = probe_header("benchmarks/evidence/attention/gluon_prescale.py", METHOD,
                              kernels=kernels,
                              batch=BATCH, heads=HEADS, passes=passes, budget_s=args.budget,
                              skipped=skipped, code=sizes)
        write_points(args.out / "gluon_prescale.json", header, rows)


if __name__ == "__main__":
    main()
