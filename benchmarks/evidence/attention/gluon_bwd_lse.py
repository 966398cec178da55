"""Probe: the dK/dV kernel reading the log-sum-exp in base 2, negated, from the dQ kernel.

Nsight Compute's per-instruction samples of the Gluon backward (run 90,
``profile_gluon_sass.sh``, fp16, head dim 64, seq 1024, no mask) put about a fifth of all the
dK/dV kernel's samples on one instruction per consumer: the ``FMUL`` that turns the query
block's log-sum-exp into base 2, right after its global load. ``ptxas`` places that multiply
(and, once the multiply is gone, the negation the FMA needs) before the step's ``wgmma``
instructions, so each consumer waits for the load (long scoreboard) before it can issue its
matmuls. The candidate: the dQ kernel, which runs first and already holds each row's
``lse * log2(e)``, stores its negation in a second buffer, and the dK/dV kernel loads that;
the value's first use is then the FMA ``s * qk_scale + (-lse2)`` after the matmuls: in the
SASS no instruction that reads the load sits between the ring's barrier wait and the first
``HGMMA``. Run 91 timed it in ``examples/attention_hopper.py`` against the previous code (commit
091e21f), rebuilt with the text replacements in ``UNDO`` below; it was not faster at every
point and the example went back to the previous code, so the probe now builds the candidate
by applying the replacements the other way. Either copy is loaded under another module name
(its kernels have their own compile cache); the probe times both beside cuDNN, ``do_bench`` only, as the
benchmark times backward points, at the points in ``POINTS`` (batch 32 x 16 heads). Each
candidate's ``(dq, dk, dv)`` is checked against cuDNN's first (``hopper_bwd.py``'s inputs and
tolerances). The header holds both versions' SASS sizes, registers and spills for sm_90.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/attention/gluon_bwd_lse.py
--out DIR [--budget S]``; anywhere ``... --compile DIR`` writes the code sizes only, to
``DIR/bwd_lse_code_sizes.json``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

from gluon_bwd_one_loop import CODE_METHOD, backward_setup, code_sizes  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    compile_only,
    edited_copy,
    probe_args,
    probe_header,
    run_points,
    timing_method,
    write_points,
)

PASSES = 3
CANDIDATE = "lse2 from dQ"
EXAMPLE = ROOT / "examples/attention_hopper.py"
# (dtype, head_dim, causal, seq): the misses at head dim 64 first
POINTS = [("fp16", 64, False, 1024), ("bf16", 64, False, 1024), ("fp16", 64, False, 4096),
          ("fp16", 128, False, 1024), ("fp16", 64, True, 1024), ("fp16", 128, False, 4096),
          ("bf16", 64, False, 4096), ("fp16", 128, True, 4096)]
# (run 91's example, the candidate; the text it replaced, which the example holds again: the
# dK/dV kernel reading lse itself, as at commit 091e21f)
UNDO = [
    (('@gluon.jit\n'
      'def _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse2_ptr, delta_ptr, dk,\n'),
     ('@gluon.jit\n'
      'def _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr, delta_ptr, dk,\n')),
    (("    m0 = (m_lo + i) * STEP_M  # the block's first query, within the head\n"
      '    # -lse in base 2, written by the dQ kernel: its first use is the FMA after the\n'
      '    # matmuls, so no instruction waits for the load before they are issued\n'
      '    neg_lse2 = gl.load(lse2_ptr + row_q0 + m0 + cols)\n'),
     ("    m0 = (m_lo + i) * STEP_M  # the block's first query, within the head\n"
      '    lse2 = gl.load(lse_ptr + row_q0 + m0 + cols) * LOG2E_GL  # natural log -> base 2\n')),
    (('    st = warpgroup_mma_wait(1, deps=(st,))  # S^T is done, dP^T may still run\n'
      '    pt = gl.exp2(st * qk_scale + gl.expand_dims(neg_lse2, 0))\n'),
     ('    st = warpgroup_mma_wait(1, deps=(st,))  # S^T is done, dP^T may still run\n'
      '    pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))\n')),
    (('@gluon.jit\n'
      'def _dkdv_consumer(dk_desc, dv_desc, lse2_ptr, delta_ptr, q_bufs, do_bufs, k_smem,\n'),
     ('@gluon.jit\n'
      'def _dkdv_consumer(dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,\n')),
    (('    for i in range(0, n_diag):  # query blocks that cross the diagonal: masked\n'
      '        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse2_ptr,\n'),
     ('    for i in range(0, n_diag):  # query blocks that cross the diagonal: masked\n'
      '        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,\n')),
    (('    for i in range(n_diag, n_m):\n'
      '        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse2_ptr,\n'),
     ('    for i in range(n_diag, n_m):\n'
      '        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,\n')),
    (('def attention_hopper_dkdv_kernel(q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc,\n'
      '                                 lse2_ptr, delta_ptr, seq_len, qk_scale, sm_scale,\n'),
     ('def attention_hopper_dkdv_kernel(q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc,\n'
      '                                 lse_ptr, delta_ptr, seq_len, qk_scale, sm_scale,\n')),
    (('    gl.warp_specialize([\n'
      '        (_dkdv_consumer, (dk_desc, dv_desc, lse2_ptr, delta_ptr, q_bufs, do_bufs,\n'
      '                          k_smem, v_smem, kv_bar, ready, empty, row_kv, row_q0,\n'
      '                          j * BLOCK_KV, m_lo, n_m, n_diag, qk_scale, sm_scale, WG0,\n'
      '                          HEAD_D, STAGES)),\n'
      '        (_dkdv_consumer, (dk_desc, dv_desc, lse2_ptr, delta_ptr, q_bufs, do_bufs,\n'
      '                          k_smem, v_smem, kv_bar, ready, empty, row_kv, row_q0,\n'
      '                          j * BLOCK_KV, m_lo, n_m, n_diag, qk_scale, sm_scale, WG1,\n'
      '                          HEAD_D, STAGES)),\n'),
     ('    gl.warp_specialize([\n'
      '        (_dkdv_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,\n'
      '                          v_smem, kv_bar, ready, empty, row_kv, row_q0, j * BLOCK_KV,\n'
      '                          m_lo, n_m, n_diag, qk_scale, sm_scale, WG0, HEAD_D, STAGES)),\n'
      '        (_dkdv_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, q_bufs, do_bufs, k_smem,\n'
      '                          v_smem, kv_bar, ready, empty, row_kv, row_q0, j * BLOCK_KV,\n'
      '                          m_lo, n_m, n_diag, qk_scale, sm_scale, WG1, HEAD_D, STAGES)),\n')),
    (('@gluon.jit\n'
      'def _dq_consumer(dq_desc, o_ptr, lse_ptr, delta_ptr, lse2_ptr, q_smem, do_smem, k_bufs,\n'
      '                 v_bufs, q_bar, ready, empty, row_q, q0, n_full, n_blocks, qk_scale,\n'
      '                 sm_scale, WG: gl.constexpr, HEAD_D: gl.constexpr,\n'
      '                 STAGES: gl.constexpr):\n'),
     ('@gluon.jit\n'
      'def _dq_consumer(dq_desc, o_ptr, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs, v_bufs,\n'
      '                 q_bar, ready, empty, row_q, q0, n_full, n_blocks, qk_scale, sm_scale,\n'
      '                 WG: gl.constexpr, HEAD_D: gl.constexpr, STAGES: gl.constexpr):\n')),
    (('    lse2 = gl.load(lse_ptr + row_q + WG * ROWS + offs) * LOG2E_GL\n'
      '    gl.store(lse2_ptr + row_q + WG * ROWS + offs, -lse2)  # for the dK/dV kernel\n'),
     ('    lse2 = gl.load(lse_ptr + row_q + WG * ROWS + offs) * LOG2E_GL\n')),
    (('def attention_hopper_dq_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, o_ptr, lse_ptr,\n'
      '                               delta_ptr, lse2_ptr, seq_len, qk_scale, sm_scale,\n'),
     ('def attention_hopper_dq_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, o_ptr, lse_ptr,\n'
      '                               delta_ptr, seq_len, qk_scale, sm_scale,\n')),
    (('    gl.warp_specialize([\n'
      '        (_dq_consumer, (dq_desc, o_ptr, lse_ptr, delta_ptr, lse2_ptr, q_smem, do_smem,\n'
      '                        k_bufs, v_bufs, q_bar, ready, empty, row_q, q0, n_full,\n'
      '                        n_blocks, qk_scale, sm_scale, WG0, HEAD_D, STAGES)),\n'
      '        (_dq_consumer, (dq_desc, o_ptr, lse_ptr, delta_ptr, lse2_ptr, q_smem, do_smem,\n'
      '                        k_bufs, v_bufs, q_bar, ready, empty, row_q, q0, n_full,\n'
      '                        n_blocks, qk_scale, sm_scale, WG1, HEAD_D, STAGES)),\n'),
     ('    gl.warp_specialize([\n'
      '        (_dq_consumer, (dq_desc, o_ptr, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs,\n'
      '                        v_bufs, q_bar, ready, empty, row_q, q0, n_full, n_blocks,\n'
      '                        qk_scale, sm_scale, WG0, HEAD_D, STAGES)),\n'
      '        (_dq_consumer, (dq_desc, o_ptr, lse_ptr, delta_ptr, q_smem, do_smem, k_bufs,\n'
      '                        v_bufs, q_bar, ready, empty, row_q, q0, n_full, n_blocks,\n'
      '                        qk_scale, sm_scale, WG1, HEAD_D, STAGES)),\n')),
    (('        return dq, dk, dv\n'
      '    # written by the dQ kernel, read by the dK/dV kernel: delta, and -lse in base 2\n'
      '    delta, lse2 = torch.empty_like(lse), torch.empty_like(lse)\n'),
     ('        return dq, dk, dv\n'
      '    delta = torch.empty_like(lse)  # written by the dQ kernel, read by the dK/dV kernel\n')),
    (('    attention_hopper_dq_kernel[(B * H * (S // BLOCK_M),)](  # 128 queries per CTA\n'
      '        *dq_descs, o, lse, delta, lse2, *scales, HEAD_D=D, STAGES=cfg["dq"][1],\n'),
     ('    attention_hopper_dq_kernel[(B * H * (S // BLOCK_M),)](  # 128 queries per CTA\n'
      '        *dq_descs, o, lse, delta, *scales, HEAD_D=D, STAGES=cfg["dq"][1],\n')),
    (('    attention_hopper_dkdv_kernel[(B * H * (S // BLOCK_M),)](  # 128 keys per CTA\n'
      '        *dkdv_descs, lse2, delta, *scales, HEAD_D=D, STAGES=cfg["dkdv"][1],\n'),
     ('    attention_hopper_dkdv_kernel[(B * H * (S // BLOCK_M),)](  # 128 keys per CTA\n'
      '        *dkdv_descs, lse, delta, *scales, HEAD_D=D, STAGES=cfg["dkdv"][1],\n')),
    (('                 *(("dk_desc", "dv_desc") if kernel == "dkdv" else ("dq_desc",)))\n'
      '        rest = {"seq_len": "i32", "qk_scale": "fp32", "sm_scale": "fp32"}\n'
      '        if kernel == "dq":  # O\'s rows, for delta; -lse in base 2, for dK/dV\n'
      '            scalars = {"o_ptr": mangle_type(t), "lse_ptr": "*fp32",\n'
      '                       "delta_ptr": "*fp32", "lse2_ptr": "*fp32", **rest}\n'
      '        else:\n'
      '            scalars = {"lse2_ptr": "*fp32", "delta_ptr": "*fp32", **rest}\n'),
     ('                 *(("dk_desc", "dv_desc") if kernel == "dkdv" else ("dq_desc",)))\n'
      '        scalars = {"lse_ptr": "*fp32", "delta_ptr": "*fp32", "seq_len": "i32",\n'
      '                   "qk_scale": "fp32", "sm_scale": "fp32"}\n'
      '        if kernel == "dq":  # O\'s rows, for delta\n'
      '            scalars = {"o_ptr": mangle_type(t), **scalars}\n')),
]


def candidates(ex, tmp: Path) -> dict:
    """The two versions: the example and a copy of it with UNDO applied one way or the
    other (run 91: the example held the candidate)."""
    if "lse2_ptr" in EXAMPLE.read_text():
        return {"lse in dK/dV": edited_copy(EXAMPLE, tmp, "attention_hopper_lse_in_dkdv", UNDO),
                CANDIDATE: ex}
    return {"lse in dK/dV": ex,
            CANDIDATE: edited_copy(EXAMPLE, tmp, "attention_hopper_lse2_from_dq",
                                   [(old, new) for new, old in UNDO])}


def main() -> None:
    import attention_hopper as ex

    with tempfile.TemporaryDirectory() as tmp:
        mods = candidates(ex, Path(tmp))
        if compile_only(sys.argv, "benchmarks/evidence/attention/gluon_bwd_lse.py",
                        "bwd_lse_code_sizes.json", lambda: code_sizes(mods), CODE_METHOD):
            return
        args = probe_args()
        if args.smoke:
            sys.exit("gluon_bwd_lse.py needs an sm_90 GPU: Gluon has no interpreter")
        from hopper_bwd import METHOD

        device, timing = timing_method(args.smoke)
        setup = backward_setup(ex, mods, device, args.smoke)

        points = ({"dtype": dt, "head_dim": d, "causal": c, "seq": s} for dt, d, c, s in POINTS)
        sizes = code_sizes(mods)
        rows, skipped = run_points(points, setup, PASSES, timing, args.budget, "sdpa-cudnn",
                                   graphs=(False,))
        kernels = (CANDIDATE + ": examples/attention_hopper.py's backward; lse in dK/dV: a "
                   "copy of it with the probe's UNDO applied"
                   if "lse2_ptr" in EXAMPLE.read_text() else
                   "lse in dK/dV: examples/attention_hopper.py's backward; " + CANDIDATE
                   + ": a copy of it with the probe's UNDO applied the other way")
        header = probe_header("benchmarks/evidence/attention/gluon_bwd_lse.py",
                              METHOD + " " + CODE_METHOD,
                              kernels=kernels,
                              passes=PASSES, budget_s=args.budget, skipped=skipped, code=sizes)
        write_points(args.out / "gluon_bwd_lse.json", header, rows)


if __name__ == "__main__":
    main()
