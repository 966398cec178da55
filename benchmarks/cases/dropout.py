"""Dropout benchmark: what is timed for examples/dropout.py.

Forward only, fp16, ``p = 0.1``. Bytes credited to every provider: read ``x``, write ``y``
(``2 * n * 2``). Eager ``torch.nn.functional.dropout(training=True)`` on CUDA runs
``native_dropout``, which also writes a one-byte bool mask for its backward (``5 * n`` bytes in
all); ``torch.compile`` of the same call needs no mask when nothing requires grad and writes only
``y``; ours never writes one.

The check before timing: torch's random numbers are not Triton's, so a peer's output cannot equal
ours. For ``triton`` the reference is exact (``dropout_mask`` with the same seed). For the peers the
reference is built from the peer's own output: wherever it is nonzero it must equal ``x / (1 - p)``
(at fp16 tolerance), and the fraction kept must lie within 6 binomial standard deviations of
``1 - p`` (else ``ref()`` raises). To get at the output, the eager peer remembers its last result
(one list store per call), and the compiled peer writes into a buffer it is given.
"""

import torch
from dropout import DEVICE, dropout, dropout_mask, dropout_reference

from benchmarks.cases.peers import compiled_peer

BENCH_P, BENCH_SEED = 0.1, 12345
BENCHMARKS = [
    {
        "name": "dropout_fp16",
        "x_name": "n",
        "x_vals": [2**20, 2**22, 2**24, 2**26, 2**28],
        "tiny_x_vals": [1, 1025, 4097],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {"dtype": "float16", "p": BENCH_P},
    },
]


def _torch_dropout_into(t: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """What the torch.compile peer compiles: torch's dropout, written into ``out`` (fused by Inductor)."""
    return out.copy_(torch.nn.functional.dropout(t, p=BENCH_P, training=True))


def _peer_reference(x: torch.Tensor, out: torch.Tensor, p: float) -> torch.Tensor:
    """The output a correct dropout gives with the mask ``out`` shows; raises if the keep rate is off."""
    keep = out != 0
    n = keep.numel()
    if n:
        rate = keep.double().mean().item()
        sigma = (p * (1 - p) / n) ** 0.5
        if abs(rate - (1 - p)) > 6 * sigma + 1 / n:
            raise AssertionError(f"keep rate {rate:.5f}, expected {1 - p} +- {6 * sigma:.5f} (n = {n})")
    return torch.where(keep, (x.float() / (1 - p)).to(x.dtype), torch.zeros((), dtype=x.dtype, device=x.device))


def bench_case(name, provider, x, device=None, dtype="float16", p=BENCH_P):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    t = torch.randn(x, device=device, dtype=getattr(torch, dtype))
    last = []  # the eager peer's latest output, for its check

    def torch_dropout():
        last[:] = [torch.nn.functional.dropout(t, p=p, training=True)]
        return last[0]

    out = torch.empty_like(t)  # the compiled peer's output buffer
    if provider == "triton":
        case = {"fn": lambda: dropout(t, p, BENCH_SEED),
                "ref": lambda: dropout_reference(t, dropout_mask(x, p, BENCH_SEED, device), p),
                "rtol": 0.0, "atol": 0.0}
    elif provider == "torch":
        case = {"fn": torch_dropout, "ref": lambda: _peer_reference(t, last[0], p), "rtol": 1e-2, "atol": 1e-2}
    else:
        case = {**compiled_peer(_torch_dropout_into, t, out), "ref": lambda: _peer_reference(t, out, p),
                "rtol": 1e-2, "atol": 1e-2}
    return {**case, "work": 2 * x * t.element_size()}  # bytes: read x, write y
