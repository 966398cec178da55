"""Probe: the causal Gluon backward with one loop per consumer instead of two.

The forward gained most at short causal sequences once its step stopped being compiled twice
(run 89, ``gluon_one_loop.py``). The backward's two kernels have the same shape: each consumer
walks the blocks that cross the diagonal in one loop, whose step takes the mask as a constexpr,
and the rest in a second loop, so under the mask each step is compiled twice per consumer
warpgroup. Compiled for sm_90 (fp16), the dQ kernel at head dim 64 is 3256 SASS instructions
under the mask against 1736 without it, dK/dV 2608 against 1296. The candidate, a change of
``examples/attention_hopper.py``, walks the blocks in one loop whose step masks a block only
when a runtime flag says it crosses the diagonal; without the mask the flag is the constant
``False`` and the code is the same as before. It is the patch
``benchmarks/evidence/attention/run90/bwd_one_loop.patch`` (the example and its notebook):
apply it first (``git apply`` it); the probe refuses to run without it. Run 90 timed it and
did not keep it: it was no faster.

Candidates, at every causal backward point of the Hopper attention benchmark
(``benchmarks/cases/attention_hopper.py``: batch 32 x 16 heads): ``sdpa-cudnn`` (the reference,
through autograd), ``one loop`` (the example's ``attention_hopper_backward``) and ``two loops``
(the same call on a copy of the example whose source has the one-loop edits undone by the
text replacements in ``UNDO`` below, loaded from a temporary file under another module name:
its kernels have their own compile cache). Each candidate's ``(dq, dk, dv)`` is checked
against cuDNN's before it is timed (the inputs and tolerances of ``hopper_bwd.py``);
``do_bench`` only, as the benchmark times backward points. The header holds each kernel's SASS
size, registers and spills, compiled for sm_90.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/attention/gluon_bwd_one_loop.py
--out DIR [--budget S]``; anywhere ``... --compile DIR`` writes the code sizes only, to
``DIR/bwd_one_loop_code_sizes.json``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402

from scripts.probe_common import (  # noqa: E402
    code_size,
    compile_only,
    edited_copy,
    probe_args,
    probe_header,
    run_points,
    timing_method,
    write_points,
)

PASSES = 3
CODE_METHOD = ("SASS size: the instructions nvdisasm lists in the cubin that the example's "
               "compile_for_sm90 builds for sm_90 (fp16); registers, spills and serialized-"
               "wgmma warnings from ptxas -v on its PTX; shared memory from the compiled "
               "kernel's metadata.")
# (one-loop text in examples/attention_hopper.py, the two-loop text it replaced)
UNDO = [
    ("dv, keys, cols, row_q0, m_lo, qk_scale, masked,",
     "dv, keys, cols, row_q0, m_lo, qk_scale, MASK: gl.constexpr,"),
    ("    if masked:  # a query before the key: P = 0", "    if MASK:  # a query before the key: P = 0"),
    ("""    masked = False  # without the mask: a constant, the mask compiled out
    for i in range(0, n_m):
        if CAUSAL:  # the first n_diag query blocks cross the diagonal
            masked = i < n_diag
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale,
                            masked, STAGES, st_layout, op_layout)""",
     """    for i in range(0, n_diag):  # query blocks that cross the diagonal: masked
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale,
                            True, STAGES, st_layout, op_layout)
    for i in range(n_diag, n_m):
        dk, dv = _dkdv_step(i, k_wg, v_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                            delta_ptr, dk, dv, keys, cols, row_q0, m_lo, qk_scale,
                            False, STAGES, st_layout, op_layout)"""),
    ("             qk_scale, masked, STAGES: gl.constexpr,",
     "             qk_scale, MASK: gl.constexpr, STAGES: gl.constexpr,"),
    ("    if masked:  # a key after the query: P = 0", "    if MASK:  # a key after the query: P = 0"),
    ("""    masked = False  # without the mask: a constant, the mask compiled out
    for j in range(0, n_blocks):
        if CAUSAL:  # key blocks from n_full on cross the diagonal
            masked = j >= n_full
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta,
                      rows, qk_scale, masked, STAGES, s_layout, op_layout)""",
     """    for j in range(0, n_full):
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta,
                      rows, qk_scale, False, STAGES, s_layout, op_layout)
    for j in range(n_full, n_blocks):  # key blocks that cross the diagonal: masked
        dq = _dq_step(j, q_wg, do_wg, k_bufs, v_bufs, ready, empty, dq, lse2, delta,
                      rows, qk_scale, True, STAGES, s_layout, op_layout)"""),
]


def two_loop_module(tmp: Path):
    """A copy of examples/attention_hopper.py with UNDO applied, as its own module."""
    return edited_copy(ROOT / "examples/attention_hopper.py", tmp, "attention_hopper_two_loops",
                       UNDO, " (the candidate is benchmarks/evidence/attention/run90/"
                       "bwd_one_loop.patch: git apply it first)")


def code_sizes(mods: dict) -> dict:
    return {f"{name}, {kernel}, head_dim={d}, causal={causal}":
            code_size(mod.compile_for_sm90(torch.float16, d, causal, kernel))
            for name, mod in mods.items() for kernel in ("dq", "dkdv") for d in (64, 128)
            for causal in (False, True)}


def backward_setup(ex, mods: dict, device, smoke: bool):
    """``run_points``' setup for backward points: cuDNN's backward through autograd (the
    reference) and ``attention_hopper_backward`` of each module in ``mods``, all on one
    forward of the example; ``hopper_bwd.py``'s inputs, tolerances and FLOPs."""
    from hopper_bwd import backward_flops, backward_inputs

    from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v, do, leaves = backward_inputs(pt, device, smoke)
        causal = pt["causal"]
        out = _sdpa(*leaves, causal, SDPA_BACKENDS["sdpa-cudnn"])
        o, lse = ex.attention_hopper_forward(q, k, v, causal)
        fns = {"sdpa-cudnn": lambda: torch.autograd.grad(out, leaves, do, retain_graph=True)}
        for name, mod in mods.items():
            fns[name] = lambda mod=mod: mod.attention_hopper_backward(do, q, k, v, o, lse,
                                                                      causal)
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), backward_flops(q, pt)

    return setup


def points():
    from benchmarks.cases.attention_hopper import BENCHMARKS
    for spec in BENCHMARKS:
        if spec["args"]["direction"] == "bwd" and spec["args"]["causal"]:
            for seq in spec["x_vals"]:
                yield {**{k: v for k, v in spec["args"].items() if k != "direction"}, "seq": seq}


def main() -> None:
    import attention_hopper as ex

    with tempfile.TemporaryDirectory() as tmp:
        mods = {"two loops": two_loop_module(Path(tmp)), "one loop": ex}
        if compile_only(sys.argv, "benchmarks/evidence/attention/gluon_bwd_one_loop.py",
                        "bwd_one_loop_code_sizes.json", lambda: code_sizes(mods), CODE_METHOD):
            return
        args = probe_args()
        if args.smoke:
            sys.exit("gluon_bwd_one_loop.py needs an sm_90 GPU: Gluon has no interpreter")
        from hopper_bwd import METHOD

        device, timing = timing_method(args.smoke)
        setup = backward_setup(ex, mods, device, args.smoke)
        sizes = code_sizes(mods)
        rows, skipped = run_points(points(), setup, PASSES, timing, args.budget, "sdpa-cudnn",
                                   graphs=(False,))
        header = probe_header("benchmarks/evidence/attention/gluon_bwd_one_loop.py",
                              METHOD + " " + CODE_METHOD,
                              kernels="one loop: examples/attention_hopper.py's backward; two "
                                      "loops: a copy of it with the probe's UNDO applied",
                              passes=PASSES, budget_s=args.budget, skipped=skipped, code=sizes)
        write_points(args.out / "gluon_bwd_one_loop.json", header, rows)


if __name__ == "__main__":
    main()
