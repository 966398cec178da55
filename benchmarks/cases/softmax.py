"""Softmax benchmark: what is timed for examples/softmax.py.

Bytes moved: the input read once and the output written once, ``2 * M * N * element size``,
whichever provider runs. Rows of ``M = 2**26 / N`` keep the tensor at 256 MB (fp32), far
larger than the 60 MB L2.
"""

import torch
from softmax import DEVICE, MAX_ROW_BLOCK, softmax, softmax_torch, softmax_unfused

from benchmarks.cases.peers import compiled_peer

ROW_NS = [512, 781, 1024, 2048, 3000, 4096, 8192, 16384, 32768, 65536, 262144]
BENCHMARKS = [
    {
        "name": "softmax_fp32",
        "x_name": "N",
        "x_vals": ROW_NS,
        "tiny_x_vals": [17, 781, 3000],
        "providers": ["triton", "triton-online", "torch", "torch.compile", "torch-unfused"],
        "metric": "GB/s",
        "args": {"dtype": "float32", "elements": 2**26},
    },
    {
        # steps 1 and 2 hold a whole row in one tile: rows up to MAX_ROW_BLOCK only
        "name": "softmax_fp32_steps",
        "x_name": "N",
        "x_vals": [n for n in ROW_NS if n <= MAX_ROW_BLOCK],
        "tiny_x_vals": [17, 781],
        "providers": ["triton", "triton-row", "triton-multirow", "triton-online"],
        "metric": "GB/s",
        "args": {"dtype": "float32", "elements": 2**26},
    },
    {
        "name": "softmax_fp32_4096rows",
        "x_name": "N",
        "x_vals": [256] + [512 * k for k in range(1, 33)],
        "tiny_x_vals": [256, 781],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {"dtype": "float32", "rows": 4096},
    },
    {
        "name": "softmax_fp16",
        "x_name": "N",
        "x_vals": ROW_NS,
        "tiny_x_vals": [17, 781],
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {"dtype": "float16", "elements": 2**26},
    },
    {
        "name": "softmax_bf16",
        "x_name": "N",
        "x_vals": ROW_NS,
        "tiny_x_vals": [],  # bf16 is wrong in the interpreter: GPU only
        "providers": ["triton", "torch", "torch.compile"],
        "metric": "GB/s",
        "args": {"dtype": "bfloat16", "elements": 2**26},
    },
]


def bench_case(name, provider, x, device=None, dtype="float32", elements=None, rows=None):
    """Inputs and the callable for one benchmark point (see ``BENCHMARKS``)."""
    device = DEVICE if device is None else device
    n_rows = rows if rows is not None else max(1, elements // x)
    if device.type != "cuda":
        n_rows = min(n_rows, 8)  # the interpreter's tiny run checks the code path, not the size
    inp = torch.randn(n_rows, x, device=device, dtype=getattr(torch, dtype))
    fns = {
        "triton": lambda: softmax(inp),
        "triton-row": lambda: softmax(inp, "row"),
        "triton-multirow": lambda: softmax(inp, "multirow"),
        "triton-online": lambda: softmax(inp, "online"),
        "torch": lambda: torch.softmax(inp, dim=-1),
        "torch-unfused": lambda: softmax_unfused(inp),
    }
    tol = 1e-5 if dtype == "float32" else 1e-2
    peer = compiled_peer(_torch_softmax, inp) if provider == "torch.compile" else {"fn": fns[provider]}
    return {
        **peer,
        "ref": lambda: softmax_torch(inp),
        "work": 2 * inp.numel() * inp.element_size(),  # bytes: read x once, write y once
        "rtol": tol,
        "atol": tol,
    }


def _torch_softmax(t: torch.Tensor) -> torch.Tensor:
    """What the torch.compile peer compiles: the same call as the "torch" provider."""
    return torch.softmax(t, dim=-1)
