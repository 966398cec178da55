"""Probe: the forward's row max and row sum as trees, not chains.

Why: run 90's per-instruction profile (``run90/sass_stalls.json``) found the forward's consumer
warps issuing in about a fifth of their samples and waiting on the previous instruction's result
in a quarter. Compiled for sm_90, the row max of each 64 x 128 S tile is one chain: ``gl.reduce``
combines a thread's 32 values of a row one after another (32 dependent ``FMNMX``, nvdisasm), and
no ``exp2`` of the row can start before the chain ends; the row sum of P is a chain of 32
``FADD`` the same way. The candidate folds each row three times first (the left half of the
columns against the right half, ``gl.split`` on a view that moves no data), so each fold is
independent work, then reduces the 16 columns left: the same instructions, 8 deep instead of 32.
The maximum is exact either way; the sum adds in another order. Run 92 (an H100) timed it with
the trees in the example (``run92/tree_reductions.patch`` applied; its GPU check passed): slower
at head dim 64, no faster at 128. Not kept: the example holds the chains, and the probe builds
the trees with ``EDITS``.

Candidates at the forward points of ``POINTS`` (``benchmarks/cases/attention_hopper.py``'s
inputs: batch 32 x 16 heads): ``sdpa-cudnn`` (the reference), ``chain`` (the code run 89
verified), ``tree max`` (the max as a tree, the sum as a chain) and ``tree`` (both as trees).
With the trees in the example, ``tree`` is the example and the others are copies of it with
``UNDO`` and ``UNDO_SUM``; without them, ``chain`` is the example and the others are copies with
``EDITS_MAX`` and ``EDITS``. Method:
``RUN_POINTS_METHOD`` of ``scripts/probe_common.py`` and ``METHOD`` below, both in the JSON
header, which also holds each kernel's SASS size, registers and spills compiled for sm_90.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/attention/gluon_tree.py
--out DIR [--budget S]``; anywhere ``... --compile DIR`` writes the code sizes only, to
``DIR/tree_code_sizes.json``.
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
METHOD = (PRESCALE_METHOD[:-1] + "; longest FMNMX and FADD chains: longest_chains() below, on "
          "the same SASS.")
_HELPERS = '''

@gluon.jit
def _fold_halves(x, MAX: gl.constexpr):
    """The larger (MAX) or the sum of x's left and right column halves, element by
    element: one independent operation per pair, on values a thread already holds."""
    R: gl.constexpr = x.type.shape[0]
    N: gl.constexpr = x.type.shape[1]
    left, right = gl.split(gl.permute(gl.reshape(x, [R, 2, N // 2]), (0, 2, 1)))
    if MAX:
        return gl.maximum(left, right)
    else:
        return left + right


@gluon.jit
def _row_reduce(x, MAX: gl.constexpr, layout: gl.constexpr):
    """Each row's max (MAX) or sum, in `layout`, as a tree: three folds, then
    `gl.reduce` on the 16 columns left."""
    x = _fold_halves(_fold_halves(_fold_halves(x, MAX), MAX), MAX)
    if MAX:
        x = gl.reduce(x, 1, _max_combine)
    else:
        x = gl.reduce(x, 1, _sum_combine)
    return gl.convert_layout(x, layout)
'''
# (the chain's text, the tree's): the row sum, then the row max, then the helpers
SUM_EDIT = ("    l_new = l_i * alpha + gl.reduce(p, 1, _sum_combine)\n",
            "    l_new = l_i * alpha + _row_reduce(p, False, row)\n")
MAX_EDIT = ("    m_new = gl.maximum(m_i, gl.reduce(s, 1, _max_combine))\n",
            "    row: gl.constexpr = gl.SliceLayout(1, s_layout)\n"
            "    m_new = gl.maximum(m_i, _row_reduce(s, True, row))\n")
HELPERS_EDIT = ("    return p, alpha, m_new, l_new\n",
                "    return p, alpha, m_new, l_new\n" + _HELPERS)
# with the tree in the example: the chain is the example with UNDO (the code run 89 verified),
# the max alone as a tree the example with UNDO_SUM
UNDO_SUM = [SUM_EDIT[::-1]]
UNDO = UNDO_SUM + [MAX_EDIT[::-1]]
# with the chain in the example: the tree max is the example with EDITS_MAX, the tree EDITS
EDITS_MAX = [MAX_EDIT, HELPERS_EDIT]
EDITS = [MAX_EDIT, SUM_EDIT, HELPERS_EDIT]
# (dtype, head_dim, causal, seq): every forward target point at 4096, then run 90's profiled one
POINTS = [(dt, d, c, 4096) for d in (64, 128) for c in (False, True)
          for dt in ("fp16", "bf16")] + [("fp16", 64, False, 1024)]


def tree_in_example() -> bool:
    """Whether the example's softmax reduces its rows as trees."""
    return "_row_reduce" in EXAMPLE.read_text()


def candidates(ex, tmp: Path) -> dict:
    hint = " (the example's softmax changed: update the probe's edits)"
    if tree_in_example():
        return {"chain": edited_copy(EXAMPLE, tmp, "attention_hopper_chain", UNDO, hint),
                "tree max": edited_copy(EXAMPLE, tmp, "attention_hopper_tree_max", UNDO_SUM,
                                        hint),
                "tree": ex}
    return {"chain": ex,
            "tree max": edited_copy(EXAMPLE, tmp, "attention_hopper_tree_max", EDITS_MAX, hint),
            "tree": edited_copy(EXAMPLE, tmp, "attention_hopper_tree", EDITS, hint)}


def longest_chains(cubin: bytes, opcodes=("FMNMX", "FADD")) -> dict:
    """For each opcode, the longest run of its instructions in the SASS (nvdisasm, in program
    order) each of which reads the register the previous one wrote: a chain of dependent
    operations, which issue one after another whatever else the warp could do."""
    sass = disassemble(cubin)
    longest = dict.fromkeys(opcodes, 0)
    depth = {}  # register -> (opcode, chain length) of the instruction that last wrote it
    for line in sass.splitlines():
        m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)(?:\.[A-Z0-9_.]+)?\s+(R\d+)([^;]*);", line)
        if not m:
            continue
        op, dest, rest = m.groups()
        if op in longest:
            n = 1 + max((depth.get(r, ("", 0))[1] for r in re.findall(r"R\d+", rest)
                         if depth.get(r, ("", 0))[0] == op), default=0)
            longest[op] = max(longest[op], n)
            depth[dest] = (op, n)
        else:
            depth.pop(dest, None)
    return {f"longest_{op.lower()}_chain": n for op, n in longest.items()}


def code_sizes(mods: dict) -> dict:
    out = {}
    for name, mod in mods.items():
        for d in (64, 128):
            for causal in (False, True):
                kernel = mod.compile_for_sm90(torch.float16, d, causal)
                out[f"{name}, head_dim={d}, causal={causal}"] = {
                    **code_size(kernel), **longest_chains(kernel.asm["cubin"])}
    return out


def main() -> None:
    import attention_hopper as ex

    with tempfile.TemporaryDirectory() as tmp:
        mods = candidates(ex, Path(tmp))
        if compile_only(sys.argv, "benchmarks/evidence/attention/gluon_tree.py",
                        "tree_code_sizes.json", lambda: code_sizes(mods), METHOD):
            return
        args = probe_args()
        if args.smoke:
            sys.exit("gluon_tree.py needs an sm_90 GPU: Gluon has no interpreter")
        from benchmarks.cases.attention_hopper import BATCH, HEADS
        device, timing = timing_method(args.smoke)
        setup = forward_setup(mods, device, args.smoke)

        points = ({"dtype": dt, "head_dim": d, "causal": c, "seq": s}
                  for dt, d, c, s in POINTS)
        sizes = code_sizes(mods)
        passes = 3
        rows, skipped = run_points(points, setup, passes, timing, args.budget, "sdpa-cudnn")
        header = probe_header(
            "benchmarks/evidence/attention/gluon_tree.py", METHOD,
            kernels=("tree: examples/attention_hopper.py; chain and tree max: copies of it with "
                     "the probe's UNDO and UNDO_SUM applied") if tree_in_example() else (
                     "chain: examples/attention_hopper.py; tree max and tree: copies of it with "
                     "the probe's EDITS_MAX and EDITS applied"),
            batch=BATCH, heads=HEADS, passes=passes, budget_s=args.budget, skipped=skipped,
            code=sizes)
        write_points(args.out / "gluon_tree.json", header, rows)


if __name__ == "__main__":
    main()
