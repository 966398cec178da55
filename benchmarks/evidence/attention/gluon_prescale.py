"""Probe: the Gluon forward with the softmax scale folded into Q, one instruction less per score.

Why: at head dim 64 each S element costs the tensor cores 256 FLOPs (Q K^T and P V) and the
consumer one ``ex2``. An H100 SM does 4096 dense fp16 FLOPs a clock and 16 ``ex2`` (the MUFU
pipe, CUDA programming guide's throughput table), so at the tensor cores' peak the exponentials
alone fill the MUFU pipe, and the issue slots are nearly full too: compiled for sm_90, the
example's step loop is about 450 SASS instructions a warp per key block, two consumer warps
share each scheduler, and a 64 x 128 x 64 block pair keeps the tensor cores busy for about
1024 clocks a CTA. Each score costs a subtraction and a multiplication before its ``ex2``
(``(s - m) * qk_scale``, kept unfused on purpose: an FMA against a separately rounded maximum
overflowed ``exp2`` on scores of 1e30, run 33). The candidate multiplies each consumer's
Q tile by ``qk_scale`` once, in shared memory, when it lands (its rounding to fp16/bf16 is
the only new error); the scores then come out of the tensor cores already scaled, and a score
costs one subtraction: ``exp2(s - m)``, the row's largest exponent still exactly 0. It is the
example's source with the text replacements in ``EDITS`` below, loaded under another module
name (its kernels have their own compile cache).

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
    environment,
    load_module,
    probe_args,
    probe_header,
    ptxas_version,
    run_points,
    timing_method,
)
from scripts.probe_common import write_points  # noqa: E402

PASSES = 3
CANDIDATE = "prescaled Q"
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
# (dtype, head_dim, causal, seq): the misses at head dim 64 and a control at 128
POINTS = [("fp16", 64, False, 1024), ("bf16", 64, False, 1024), ("fp16", 64, False, 4096),
          ("bf16", 64, False, 4096), ("fp16", 64, True, 1024), ("fp16", 64, True, 4096),
          ("fp16", 128, False, 1024), ("fp16", 128, False, 4096)]


def candidate_module(tmp: Path):
    """A copy of examples/attention_hopper.py with EDITS applied, as its own module."""
    src = (ROOT / "examples/attention_hopper.py").read_text()
    for old, new in EDITS:
        if src.count(old) != 1:
            sys.exit(f"examples/attention_hopper.py has not exactly one {old.strip()[:60]!r}: "
                     "EDITS no longer match the example")
        src = src.replace(old, new)
    path = tmp / "attention_hopper_prescaled.py"
    path.write_text(src)
    return load_module("attention_hopper_prescaled", path)


def code_sizes(mods: dict) -> dict:
    return {f"{name}, head_dim={d}, causal={causal}":
            code_size(mod.compile_for_sm90(torch.float16, d, causal))
            for name, mod in mods.items() for d in (64, 128) for causal in (False, True)}


def main() -> None:
    import attention_hopper as ex

    with tempfile.TemporaryDirectory() as tmp:
        mods = {"example": ex, CANDIDATE: candidate_module(Path(tmp))}
        if "--compile" in sys.argv:  # any machine: the code sizes
            at = sys.argv.index("--compile") + 1
            if at >= len(sys.argv):
                sys.exit("usage: gluon_prescale.py --compile DIR")
            sizes = code_sizes(mods)
            for name, res in sizes.items():
                print(name, res)
            header = {"probe": "benchmarks/evidence/attention/gluon_prescale.py --compile",
                      **environment(), "ptxas": ptxas_version(), "method": METHOD}
            write_points(Path(sys.argv[at]) / "prescale_code_sizes.json", header,
                         [{"kernel": name, **res} for name, res in sizes.items()])
            return
        args = probe_args()
        if args.smoke:
            sys.exit("gluon_prescale.py needs an sm_90 GPU: Gluon has no interpreter")
        from benchmarks.cases.attention import SDPA_BACKENDS, _sdpa
        from benchmarks.cases.attention_hopper import BATCH, HEADS
        device, timing = timing_method(args.smoke)

        def setup(pt):
            q, k, v = attention_inputs(pt, BATCH, HEADS, device, args.smoke)
            torch.cuda.empty_cache()
            causal, d, seq = pt["causal"], pt["head_dim"], pt["seq"]
            fns = {"sdpa-cudnn": lambda: _sdpa(q, k, v, causal, SDPA_BACKENDS["sdpa-cudnn"])}
            for name, mod in mods.items():
                fns[name] = lambda mod=mod: mod.attention_hopper(q, k, v, causal)
            flops = 4.0 * BATCH * HEADS * seq * seq * d * (0.5 if causal else 1.0)
            return fns, (2e-2 if pt["dtype"] == "fp16" else 4e-2), flops

        points = ({"dtype": dt, "head_dim": d, "causal": c, "seq": s} for dt, d, c, s in POINTS)
        sizes = code_sizes(mods)
        rows, skipped = run_points(points, setup, PASSES, timing, args.budget, "sdpa-cudnn")
        header = probe_header("benchmarks/evidence/attention/gluon_prescale.py", METHOD,
                              kernels="example: examples/attention_hopper.py; " + CANDIDATE
                                      + ": a copy of it with the probe's EDITS applied",
                              batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                              skipped=skipped, code=sizes)
        write_points(args.out / "gluon_prescale.json", header, rows)


if __name__ == "__main__":
    main()
