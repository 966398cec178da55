"""Probe: the Gluon attention backward in one pass, dQ added atomically in fp32.

Nsight Compute (run 81, ``profile_gluon_bwd.py``) put the Gluon backward's gap to cuDNN at head
dim 64 on its second pass: the dQ kernel of ``examples/attention_hopper.py`` computes ``S`` and
``dP`` again, and takes about a third of the backward's time, where cuDNN computes dK, dV and dQ
in one kernel, adding each tile's share of dQ to an fp32 buffer that a short kernel then rounds.
This probe does the same in Gluon:

* the example's dK/dV kernel (one CTA per 128 keys, a one-warp TMA producer streaming Q and dO,
  two consumer warpgroups of 64 keys each), with one more product per step: the consumer stores
  ``dS^T`` (its 64 keys x 64 queries, 16-bit) in its own shared-memory tile, and a third wgmma
  reads it transposed, ``dQ_part = dS K`` (64 queries x head_dim, fp32, ``K`` the tile the
  consumer already holds); the part, times ``sm_scale``, goes into an fp32 ``dq_acc`` with
  relaxed ``atomic_add`` (two fp32 per instruction, ``atom.global.gpu.relaxed.add.v2.f32``, once
  the pointer's 16-byte alignment is known, as at a launch), int64 offsets;
* ``delta`` from the example's kernel, ``dq_acc`` zeroed before and rounded to the input dtype
  after (``dq_acc.to(dtype)``: one elementwise kernel, like cuDNN's conversion).

Candidates at the head-dim-64 points of the backward benchmark and at fp16 head dim 128 (batch
32 x 16): ``sdpa-cudnn`` (the reference), ``triton-gluon`` (the example's two-pass backward) and
``gluon fused`` (this file); each one's ``(dq, dk, dv)`` is checked against cuDNN's before it is
timed (the tolerances, inputs and timing of ``hopper_bwd.py``). The fused kernel is first checked
on small shapes (1 x 2 heads, 128 and 384 tokens, causal and not) against the fp32 reference.

The ablation (``ablation``, after the points): where the one pass's time goes. At three
non-causal fp16 points, do_bench times the fused backward as it is, the same kernel with dQ's
parts written with plain stores instead of atomic adds (``ATOMIC=False``: the same bytes, a
wrong dQ, so it is timed, not checked) and the example's dK/dV kernel alone (``delta`` first,
as in the backward); the rows also carry the bytes the atomics add per call.

Usage (repository root): on an sm_90 GPU ``python benchmarks/evidence/attention/gluon_bwd_fused.py
--out DIR [--budget S]``; anywhere ``python benchmarks/evidence/attention/gluon_bwd_fused.py
--compile`` (compiled for sm_90: registers, spills, shared memory, atomics in the PTX).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT), str(Path(__file__).resolve().parent)]

import torch  # noqa: E402
from attention_hopper import (  # noqa: E402
    BWD_CONFIGS,
    CONSUMER_REGS,
    DELTA_ROWS,
    LOG2E,
    LOG2E_GL,
    MAXNREG,
    PRODUCER_REGS,
    WG_M,
    _bwd_descriptors,
    _dkdv_producer,
    attention_hopper_delta_kernel,
)
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402
from triton.experimental.gluon.language.nvidia.hopper import (  # noqa: E402
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

PASSES = 3
HEAD_DIMS = (64, 128)


@gluon.jit
def _fused_step(i, k_wg, v_wg, ds_wg, q_bufs, do_bufs, ready, empty, lse_ptr, delta_ptr,
                dq_ptr, dk, dv, keys, cols, qrows, dcols, row_q0, m_lo, qk_scale, sm_scale,
                MASK: gl.constexpr, STAGES: gl.constexpr, st_layout: gl.constexpr,
                op_layout: gl.constexpr, acc_layout: gl.constexpr, ATOMIC: gl.constexpr):
    """Query block m_lo + i against this warpgroup's 64 keys: dK, dV updated, dQ added."""
    STEP_M: gl.constexpr = q_bufs.type.shape[1]
    ROWS: gl.constexpr = k_wg.type.shape[0]
    HEAD_D: gl.constexpr = k_wg.type.shape[1]
    slot = i % STAGES
    m0 = (m_lo + i) * STEP_M  # the block's first query, within the head
    lse2 = gl.load(lse_ptr + row_q0 + m0 + cols) * LOG2E_GL  # natural log -> base 2
    delta = gl.load(delta_ptr + row_q0 + m0 + cols)
    mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
    qb = q_bufs.index(slot)
    dob = do_bufs.index(slot)
    zero = gl.zeros([ROWS, STEP_M], gl.float32, st_layout)
    st = warpgroup_mma(k_wg, qb.permute((1, 0)), zero, use_acc=False, is_async=True)
    dpt = warpgroup_mma(v_wg, dob.permute((1, 0)), zero, use_acc=False, is_async=True)
    st = warpgroup_mma_wait(1, deps=(st,))  # S^T is done, dP^T may still run
    pt = gl.exp2(st * qk_scale - gl.expand_dims(lse2, 0))
    if MASK:  # a query before the key: P = 0
        pt = gl.where(gl.expand_dims(m0 + cols, 0) >= gl.expand_dims(keys, 1), pt, 0.0)
    p_op = gl.convert_layout(pt.to(qb.dtype), op_layout)
    dv = warpgroup_mma(p_op, dob, dv, is_async=True)  # dV += P^T dO
    dpt = warpgroup_mma_wait(1, deps=(dpt,))  # dP^T is done, dV may still run
    dst = (pt * (dpt - gl.expand_dims(delta, 0))).to(qb.dtype)
    ds_op = gl.convert_layout(dst, op_layout)
    dk = warpgroup_mma(ds_op, qb, dk, is_async=True)  # dK += dS^T Q
    ds_wg.store(dst)  # dS^T for dQ, read transposed: dS (queries x keys)
    fence_async_shared()
    dq = warpgroup_mma(ds_wg.permute((1, 0)), k_wg,
                       gl.zeros([STEP_M, HEAD_D], gl.float32, acc_layout), use_acc=False,
                       is_async=True)  # dQ_part = dS K
    dv, dk, dq, p_op, ds_op = warpgroup_mma_wait(0, deps=(dv, dk, dq, p_op, ds_op))
    mbarrier.arrive(empty.index(slot))  # Q and dO of this slot are read no more
    rows = (row_q0 + m0 + qrows).to(gl.int64) * HEAD_D
    dq_ptrs = dq_ptr + gl.expand_dims(rows, 1) + gl.expand_dims(dcols, 0)
    if ATOMIC:
        gl.atomic_add(dq_ptrs, dq * sm_scale, sem="relaxed")
    else:  # the ablation: the same bytes stored, not added (a wrong dQ, timed only)
        gl.store(dq_ptrs, dq * sm_scale)
    return dk, dv


@gluon.jit
def _fused_consumer(dk_desc, dv_desc, lse_ptr, delta_ptr, dq_ptr, q_bufs, do_bufs, k_smem,
                    v_smem, ds_smem, kv_bar, ready, empty, row_kv, row_q0, key0, m_lo, n_m,
                    n_diag, qk_scale, sm_scale, WG: gl.constexpr, HEAD_D: gl.constexpr,
                    STAGES: gl.constexpr, ATOMIC: gl.constexpr):
    STEP_M: gl.constexpr = q_bufs.type.shape[1]
    ROWS: gl.constexpr = k_smem.type.shape[1]  # keys per consumer
    st_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, STEP_M, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_D, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout,
                                                  k_width=2)
    k_wg = k_smem.index(WG)
    v_wg = v_smem.index(WG)
    ds_wg = ds_smem.index(WG)
    dk = gl.zeros([ROWS, HEAD_D], gl.float32, acc_layout)
    dv = gl.zeros([ROWS, HEAD_D], gl.float32, acc_layout)
    keys = key0 + WG * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, st_layout))
    cols = gl.arange(0, STEP_M, layout=gl.SliceLayout(0, st_layout))
    qrows = gl.arange(0, STEP_M, layout=gl.SliceLayout(1, acc_layout))
    dcols = gl.arange(0, HEAD_D, layout=gl.SliceLayout(0, acc_layout))
    mbarrier.wait(kv_bar, 0)
    for i in range(0, n_diag):  # query blocks that cross the diagonal: masked
        dk, dv = _fused_step(i, k_wg, v_wg, ds_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                             delta_ptr, dq_ptr, dk, dv, keys, cols, qrows, dcols, row_q0,
                             m_lo, qk_scale, sm_scale, True, STAGES, st_layout, op_layout,
                             acc_layout, ATOMIC)
    for i in range(n_diag, n_m):
        dk, dv = _fused_step(i, k_wg, v_wg, ds_wg, q_bufs, do_bufs, ready, empty, lse_ptr,
                             delta_ptr, dq_ptr, dk, dv, keys, cols, qrows, dcols, row_q0,
                             m_lo, qk_scale, sm_scale, False, STAGES, st_layout, op_layout,
                             acc_layout, ATOMIC)
    # K and V are read no more: their tiles carry dK and dV out
    k_wg.store((dk * sm_scale).to(k_wg.dtype))
    v_wg.store(dv.to(v_wg.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(dk_desc, [row_kv + WG * ROWS, 0], k_wg)
    tma.async_copy_shared_to_global(dv_desc, [row_kv + WG * ROWS, 0], v_wg)
    tma.store_wait(0)


@gluon.jit
def fused_bwd_kernel(q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc, lse_ptr, delta_ptr,
                     dq_ptr, seq_len, qk_scale, sm_scale, HEAD_D: gl.constexpr,
                     STAGES: gl.constexpr, CAUSAL: gl.constexpr, ATOMIC: gl.constexpr = True):
    STEP_M: gl.constexpr = q_desc.block_type.shape[0]
    ROWS: gl.constexpr = k_desc.block_type.shape[0]
    BLOCK_KV: gl.constexpr = 2 * ROWS  # two consumers' keys
    dtype: gl.constexpr = q_desc.dtype
    n_kv = seq_len // BLOCK_KV
    j = gl.program_id(0) % n_kv
    row_q0 = gl.program_id(0) // n_kv * seq_len  # the (batch, head)'s first row
    row_kv = row_q0 + j * BLOCK_KV
    if CAUSAL:  # queries before the key block are not visited
        m_lo = j * (BLOCK_KV // STEP_M)
        n_diag = BLOCK_KV // STEP_M
    else:
        m_lo = 0
        n_diag = 0
    n_m = seq_len // STEP_M - m_lo
    q_bufs = gl.allocate_shared_memory(dtype, [STAGES] + q_desc.block_type.shape,
                                       q_desc.layout)
    do_bufs = gl.allocate_shared_memory(dtype, [STAGES] + do_desc.block_type.shape,
                                        do_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [2] + k_desc.block_type.shape, k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [2] + v_desc.block_type.shape, v_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([ROWS, STEP_M], dtype)
    ds_smem = gl.allocate_shared_memory(dtype, [2, ROWS, STEP_M], ds_layout)
    bar: gl.constexpr = mbarrier.MBarrierLayout()
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], bar)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar)
    mbarrier.init(kv_bar, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=2)  # one arrive per consumer
    WG0: gl.constexpr = 0
    WG1: gl.constexpr = 1
    gl.warp_specialize([
        (_fused_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, dq_ptr, q_bufs, do_bufs,
                           k_smem, v_smem, ds_smem, kv_bar, ready, empty, row_kv, row_q0,
                           j * BLOCK_KV, m_lo, n_m, n_diag, qk_scale, sm_scale, WG0, HEAD_D,
                           STAGES, ATOMIC)),
        (_fused_consumer, (dk_desc, dv_desc, lse_ptr, delta_ptr, dq_ptr, q_bufs, do_bufs,
                           k_smem, v_smem, ds_smem, kv_bar, ready, empty, row_kv, row_q0,
                           j * BLOCK_KV, m_lo, n_m, n_diag, qk_scale, sm_scale, WG1, HEAD_D,
                           STAGES, ATOMIC)),
        (_dkdv_producer, (q_desc, do_desc, k_desc, v_desc, q_bufs, do_bufs, k_smem, v_smem,
                          kv_bar, ready, empty, row_kv, row_q0, m_lo, n_m, STAGES)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


def fused_backward(do, q, k, v, o, lse, causal: bool = False, atomic: bool = True):
    """(dq, dk, dv) for contiguous (B, H, S, D) fp16/bf16 inputs, S a multiple of 128.
    atomic=False: the ablation, dQ's parts stored instead of added (dq is wrong)."""
    B, H, S, D = q.shape
    sm_scale = D ** -0.5
    step, stages = BWD_CONFIGS[D]["dkdv"]
    assert step == WG_M, "dS K needs 64 queries a step (one wgmma M per warpgroup)"
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    dq_acc = torch.zeros(q.shape, device=q.device, dtype=torch.float32)
    delta = torch.empty_like(lse)
    attention_hopper_delta_kernel[(B * H * S // DELTA_ROWS,)](
        o, do, delta, HEAD_D=D, ROWS=DELTA_ROWS, num_warps=4)
    dkdv_descs, _ = _bwd_descriptors(q, k, v, do, dk, dk, dv)  # (dQ's descriptor unused: dk)
    fused_bwd_kernel[(B * H * (S // (2 * WG_M)),)](
        *dkdv_descs, lse, delta, dq_acc, S, sm_scale * LOG2E, sm_scale, HEAD_D=D,
        STAGES=stages, CAUSAL=causal, ATOMIC=atomic, num_warps=4, maxnreg=MAXNREG)
    return dq_acc.to(q.dtype), dk, dv


def compile_report() -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    from scripts.probe_common import ptxas_usage

    for dtype in (torch.float16, torch.bfloat16):
        for d in HEAD_DIMS:
            t = torch.empty(1, 1, 128, d, dtype=dtype)
            descs, _ = _bwd_descriptors(t, t, t, t, t, t, t)
            names = ("q_desc", "k_desc", "v_desc", "do_desc", "dk_desc", "dv_desc")
            sig = {n: mangle_type(x) for n, x in zip(names, descs, strict=True)}
            sig.update({"lse_ptr": "*fp32", "delta_ptr": "*fp32", "dq_ptr": "*fp32",
                        "seq_len": "i32", "qk_scale": "fp32", "sm_scale": "fp32"})
            # what a launch knows: the pointers 16-byte aligned, seq_len a multiple of 16
            backend = CUDABackend(GPUTarget("cuda", 90, 32))
            attrs = {(list(sig).index(n),): backend.parse_attr("D")
                     for n in ("lse_ptr", "delta_ptr", "dq_ptr", "seq_len")}
            for causal in (False, True):
                cx = {"HEAD_D": d, "STAGES": BWD_CONFIGS[d]["dkdv"][1], "CAUSAL": causal,
                      "ATOMIC": True}
                sig.update(dict.fromkeys(cx, "constexpr"))
                src = GluonASTSource(fused_bwd_kernel, sig, constexprs=cx, attrs=attrs)
                k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                   options={"num_warps": 4, "maxnreg": MAXNREG})
                ptx = k.asm["ptx"]
                print(dtype, f"d{d}", "causal" if causal else "full", ptxas_usage(ptx),
                      f"shared {k.metadata.shared}", "wgmma", ptx.count("wgmma.mma_async"),
                      "atom.v2.f32", ptx.count("atom.global.gpu.relaxed.add.v2.f32"),
                      "atom (all)", ptx.count("atom.global"), flush=True)


def small_check(device) -> None:
    """The fused kernel against the fp32 reference on small shapes (1 x 2 heads)."""
    import attention_hopper as ex

    failed = []
    for dtype in (torch.float16, torch.bfloat16):
        for d in HEAD_DIMS:
            for seq in (128, 384):
                for causal in (False, True):
                    g = torch.Generator(device=device).manual_seed(seq + d)
                    q, k, v, do = (torch.randn(1, 2, seq, d, device=device, dtype=dtype,
                                               generator=g) for _ in range(4))
                    o, lse = ex.attention_hopper_forward(q, k, v, causal)
                    got = fused_backward(do, q, k, v, o, lse, causal)
                    leaves = [t.float().requires_grad_(True) for t in (q, k, v)]
                    ref = torch.nn.functional.scaled_dot_product_attention(*leaves,
                                                                           is_causal=causal)
                    want = torch.autograd.grad(ref, leaves, do.float())
                    tol = 3e-2 if dtype == torch.float16 else 6e-2
                    for name, a, e in zip(("dq", "dk", "dv"), got, want, strict=True):
                        err = (a.float() - e).abs().max().item()
                        ok = torch.allclose(a.float(), e, rtol=tol, atol=tol)
                        print(f"{dtype} d{d} seq {seq} {'causal' if causal else 'full'} {name}: "
                              f"largest difference {err:.3g}{'' if ok else ' FAILED'}", flush=True)
                        if not ok:
                            failed.append(f"{dtype} d{d} seq {seq} causal={causal} {name}")
    if failed:
        raise SystemExit("small check FAILED: " + ", ".join(failed))
    print("small check passed", flush=True)


def main() -> None:
    from hopper_bwd import METHOD, backward_flops, backward_inputs, points

    from scripts.probe_common import (
        probe_args,
        probe_header,
        run_points,
        timing_method,
        write_points,
    )
    args = probe_args()
    if args.smoke:
        raise SystemExit("gluon_bwd_fused.py needs an sm_90 GPU: Gluon has no interpreter")
    device, timing = timing_method(args.smoke)
    small_check(device)
    import attention_hopper as ex

    from benchmarks.cases.attention import BATCH, HEADS, SDPA_BACKENDS, _sdpa

    def setup(pt):
        q, k, v, do, leaves = backward_inputs(pt, device, args.smoke)
        causal = pt["causal"]
        out = _sdpa(*leaves, causal, SDPA_BACKENDS["sdpa-cudnn"])
        o, lse = ex.attention_hopper_forward(q, k, v, causal)
        fns = {"sdpa-cudnn": lambda: torch.autograd.grad(out, leaves, do, retain_graph=True),
               "triton-gluon": lambda: ex.attention_hopper_backward(do, q, k, v, o, lse, causal),
               "gluon fused": lambda: fused_backward(do, q, k, v, o, lse, causal)}
        return fns, (4e-2 if pt["dtype"] == "fp16" else 8e-2), backward_flops(q, pt)

    pts = [pt for pt in points() if pt["pass"] == "bwd"
           and (pt["head_dim"] == 64 or pt["dtype"] == "fp16")]
    pts.sort(key=lambda pt: (pt["head_dim"] != 64, pt["dtype"] != "fp16"))  # d64 fp16 first
    rows, skipped = run_points(pts, setup, PASSES, timing, args.budget, "sdpa-cudnn", graphs=(False,))
    header = probe_header("benchmarks/evidence/attention/gluon_bwd_fused.py", METHOD,
                          kernels="fused_bwd_kernel (this file) with examples/attention_hopper.py's "
                                  "delta kernel and dK/dV producer; the example's two-pass backward",
                          bwd_configs={str(k): v for k, v in BWD_CONFIGS.items()},
                          batch=BATCH, heads=HEADS, passes=PASSES, budget_s=args.budget,
                          skipped=skipped)
    rows += ablation(device, timing)
    write_points(args.out / "gluon_bwd_fused.json", header, rows)


ABLATION_POINTS = [{"dtype": "fp16", "head_dim": d, "causal": False, "seq": s, "pass": "bwd"}
                   for d, s in ((64, 1024), (64, 4096), (128, 4096))]


def ablation(device, timing) -> list[dict]:
    """Rows of the ablation (module docstring): do_bench ms of each variant, interleaved."""
    rows = []
    for pt in ABLATION_POINTS:
        rows += _ablation_point(pt, device, timing)
        torch.cuda.empty_cache()
    return rows


def _ablation_point(pt, device, timing) -> list[dict]:
    import attention_hopper as ex
    from hopper_bwd import backward_inputs

    from scripts.probe_common import time_interleaved

    q, k, v, do, _ = backward_inputs(pt, device)
    o, lse = ex.attention_hopper_forward(q, k, v)
    B, H, S, D = q.shape
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    delta = torch.empty_like(lse)
    dkdv_descs, _ = ex._bwd_descriptors(q, k, v, do, dq, dk, dv)

    def dkdv_alone():
        ex.attention_hopper_delta_kernel[(B * H * S // DELTA_ROWS,)](
            o, do, delta, HEAD_D=D, ROWS=DELTA_ROWS, num_warps=4)
        ex.attention_hopper_dkdv_kernel[(B * H * (S // ex.BLOCK_M),)](
            *dkdv_descs, lse, delta, S, D ** -0.5 * LOG2E, D ** -0.5, HEAD_D=D,
            STAGES=BWD_CONFIGS[D]["dkdv"][1], CAUSAL=False, num_warps=4, maxnreg=MAXNREG)

    fns = {"gluon fused": lambda: fused_backward(do, q, k, v, o, lse),
           "gluon fused, dQ stored not added": lambda: fused_backward(do, q, k, v, o, lse,
                                                                     atomic=False),
           "dK/dV kernel alone (with delta)": dkdv_alone}
    ms = time_interleaved(fns, PASSES, timing, graphs=(False,))
    added = S // WG_M * q.numel() * 4  # every 64 keys add a full fp32 dQ of their head
    rows = []
    for name in fns:
        runs = sorted(ms[(name, False)])
        rows.append({"candidate": name, **pt, "ablation": True,
                     "ms_do_bench": round(runs[len(runs) // 2], 5),
                     "spread_do_bench": round(runs[-1] / runs[0] - 1, 4),
                     "dq_bytes_added": added if "fused" in name else 0})
        print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    if "--compile" in sys.argv:
        compile_report()
    else:
        main()
