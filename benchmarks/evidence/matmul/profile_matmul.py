#!/usr/bin/env python3
"""Probe: Nsight Compute counters of the matmul and linear + GELU points no profile explains yet.

Run 35 (``benchmarks/evidence/overview/run35/profile_missed.json``) profiled the persistent
chapter's TMA kernel at 2048^3 in fp16 and the fp16 linear + GELU at 4096^3, where its replay
met the target. Four pairs more, ours beside its peer, each one point of
``benchmarks/cases/``:

* the ragged product 4000 x 3000 x 2000 in fp16, the persistent TMA kernel (the best Triton
  there) beside cuBLAS;
* this page's descriptor kernel (``examples/matmul.py``, ``kernel="tma"``) at 2048^3 fp16
  beside cuBLAS;
* linear + bias + GELU in bf16 at 4096^3, and in fp16 at 8192 x 8192 x 2048, each beside
  static ``torch.compile``.

``benchmarks/evidence/overview/profile_missed.py`` does the work (kept as it measured run 35);
this file stands in for the Python interpreter of ``profile_missed.sh`` and adds the cases. Each
autotuned kernel's pick goes in its ``.meta.json``. From the repository root, on a GPU with ncu::

    OUT=DIR PYTHON=benchmarks/evidence/matmul/profile_matmul.py \\
        bash benchmarks/evidence/overview/profile_missed.sh mm_ragged_tma mm_ragged_cublas \\
        mm_desc_2048 mm_desc_2048_cublas lg_4096_bf16 lg_4096_bf16_compile \\
        lg_8192x2048 lg_8192x2048_compile
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from scripts.probe_common import profile_missed_with  # noqa: E402


# The autotuned wrappers whose pick each case's .meta.json records (profile_missed.py calls
# `fn(torch.float16)`; each of these names its own kernel and dtype).
def persistent_tma_fp16(_dtype):
    import matmul_persistent
    import torch

    return matmul_persistent.tuned_kernel("tma", torch.float16)


def descriptor_fp16(_dtype):
    import matmul

    return matmul.matmul_tma_kernel_tuned


def linear_gelu_bf16(_dtype):
    import linear_gelu
    import torch

    return linear_gelu.tuned_kernel("descriptor", torch.bfloat16)


def linear_gelu_fp16(_dtype):
    import linear_gelu
    import torch

    return linear_gelu.tuned_kernel("descriptor", torch.float16)


def cases(Case) -> dict:
    ragged, lg8 = "4000x3000x2000", "8192x8192x2048"
    pair_r = "matmul fp16, ragged 4000 x 3000 x 2000 (persistent TMA kernel)"
    pair_d = "matmul fp16, 2048^3 (the matmul page's descriptor kernel)"
    pair_b = "linear + bias + GELU bf16, 4096^3"
    pair_8 = "linear + bias + GELU fp16, 8192 x 8192 x 2048"
    return {
        "mm_ragged_tma": Case("matmul_persistent", "matmul_persistent_ragged_fp16",
                              "triton-persistent-tma", ragged, pair_r, "ours", 60,
                              ("__main__", "persistent_tma_fp16")),
        "mm_ragged_cublas": Case("matmul_persistent", "matmul_persistent_ragged_fp16", "cublas",
                                 ragged, pair_r, "peer", 35),
        "mm_desc_2048": Case("matmul", "matmul_fp16", "triton-tma", 2048, pair_d, "ours", 60,
                             ("__main__", "descriptor_fp16")),
        "mm_desc_2048_cublas": Case("matmul", "matmul_fp16", "cublas", 2048, pair_d, "peer", 35),
        "lg_4096_bf16": Case("linear_gelu", "linear_gelu_bf16", "triton", "4096x4096x4096",
                             pair_b, "ours", 75, ("__main__", "linear_gelu_bf16")),
        "lg_4096_bf16_compile": Case("linear_gelu", "linear_gelu_bf16", "torch.compile",
                                     "4096x4096x4096", pair_b, "peer", 75),
        "lg_8192x2048": Case("linear_gelu", "linear_gelu_fp16", "triton", lg8, pair_8, "ours", 75,
                             ("__main__", "linear_gelu_fp16")),
        "lg_8192x2048_compile": Case("linear_gelu", "linear_gelu_fp16", "torch.compile", lg8,
                                     pair_8, "peer", 75),
    }


if __name__ == "__main__":
    raise SystemExit(profile_missed_with(cases))
