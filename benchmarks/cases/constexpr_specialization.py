"""Constexpr-specialization benchmark: what is timed for examples/constexpr_specialization.py.

A copy moves 2 x 4 bytes per fp32 element (read once, written once). Five providers: the
specialized kernel on aligned data; the ``do_not_specialize`` kernel on the same data; the
specialized kernel on views that start one element in (4-byte aligned only); the hinted kernel
(``tl.max_constancy`` on the mask) on aligned data; and torch's own copy.
"""

import torch
from constexpr_specialization import DEVICE, copy

BENCHMARKS = [
    {
        "name": "specialization_copy_fp32",
        "x_name": "n",
        "x_vals": [2**k for k in range(16, 29, 2)],
        "tiny_x_vals": [16, 4096],
        "providers": ["triton", "triton-no-specialize", "triton-misaligned", "triton-hinted", "torch"],
        "metric": "GB/s",
        "args": {},
    },
]


def bench_case(name, provider, x, device=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    src = torch.randn(x + 1, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)
    a, out = src[:x], dst[:x]  # 16-byte aligned views
    a_off, out_off = src[1:], dst[1:]  # one element in: 4-byte aligned
    fns = {
        "triton": lambda: copy(a, out),
        "triton-no-specialize": lambda: copy(a, out, policy="no-specialize"),
        "triton-misaligned": lambda: copy(a_off, out_off),
        "triton-hinted": lambda: copy(a, out, policy="hinted"),
        "torch": lambda: out.copy_(a),
    }
    ref_in = a_off if provider == "triton-misaligned" else a
    return {
        "fn": fns[provider],
        "ref": lambda: ref_in.clone(),
        "work": 2 * x * a.element_size(),  # bytes: read x, write out
        "rtol": 0.0,
        "atol": 0.0,
    }
