#!/usr/bin/env python3
"""Probe: Nsight Compute counters of three pairs the earlier profiles left out.

* The Gluon attention forward in fp16 at head dim 128, seq 4096, beside cuDNN: run 75
  profiled the bf16 pair at this point only, so it could not say why cuDNN gains more from
  bf16 than the example does (``docs/benchmarks/attention.md``).
* The matmul in bf16, beside cuBLAS: this page's descriptor kernel at 2048^3 and the
  persistent chapter's descriptor kernel on the ragged 4000 x 3000 x 2000; run 73 profiled
  both in fp16 only (``docs/benchmarks/matmul.md``).

``benchmarks/evidence/overview/profile_missed.py`` does the work; this file stands in for the
Python interpreter of ``profile_missed.sh`` and adds the cases; each autotuned kernel's pick
goes in its ``.meta.json``. From the repository root, on an sm_90 GPU with ncu (``NCU`` as in
run 46, if ncu's ``application-only`` target profiles nothing)::

    OUT=DIR NCU=/tmp/ncu_all PYTHON=benchmarks/evidence/overview/profile_more.py \\
        bash benchmarks/evidence/overview/profile_missed.sh gluon_fp16_d128_4096 \\
        gluon_fp16_d128_4096_cudnn mm_desc_2048_bf16 mm_desc_2048_bf16_cublas \\
        mm_ragged_tma_bf16 mm_ragged_bf16_cublas
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from scripts.probe_common import profile_missed_with  # noqa: E402


# The autotuned wrappers whose pick each case's .meta.json records (profile_missed.py calls
# `fn(torch.float16)`; each of these names its own kernel and dtype).
def descriptor_bf16(_dtype):
    import matmul

    return matmul.matmul_tma_kernel_tuned  # one tuner for fp16 and bf16: its key has the dtype


def persistent_tma_bf16(_dtype):
    import matmul_persistent
    import torch

    return matmul_persistent.tuned_kernel("tma", torch.bfloat16)


def cases(Case) -> dict:
    attn = "Gluon attention forward fp16, d128, seq 4096, batch 32 x 16"
    pair_d = "matmul bf16, 2048^3 (the matmul page's descriptor kernel)"
    pair_r = "matmul bf16, ragged 4000 x 3000 x 2000 (persistent TMA kernel)"
    ragged = "4000x3000x2000"
    return {
        "gluon_fp16_d128_4096": Case("attention_hopper", "attention_hopper_fwd_fp16_d128",
                                     "triton-gluon", 4096, attn, "ours", 60),
        "gluon_fp16_d128_4096_cudnn": Case("attention_hopper", "attention_hopper_fwd_fp16_d128",
                                           "sdpa-cudnn", 4096, attn, "peer", 60),
        "mm_desc_2048_bf16": Case("matmul", "matmul_bf16", "triton-tma", 2048, pair_d, "ours", 60,
                                  ("__main__", "descriptor_bf16")),
        "mm_desc_2048_bf16_cublas": Case("matmul", "matmul_bf16", "cublas", 2048, pair_d, "peer",
                                         35),
        "mm_ragged_tma_bf16": Case("matmul_persistent", "matmul_persistent_ragged_bf16",
                                   "triton-persistent-tma", ragged, pair_r, "ours", 60,
                                   ("__main__", "persistent_tma_bf16")),
        "mm_ragged_bf16_cublas": Case("matmul_persistent", "matmul_persistent_ragged_bf16",
                                      "cublas", ragged, pair_r, "peer", 35),
    }


if __name__ == "__main__":
    raise SystemExit(profile_missed_with(cases))
