"""The peers every story's benchmark shares: the static torch.compile build of a torch function."""

from __future__ import annotations


def compiled_peer(fn, *inputs, **options) -> dict:
    """The torch.compile peer of one point, as ``bench_case`` returns it.

    ``scripts/bench.py`` compiles ``fn`` itself, afresh for this shape (``dynamic=False``, after
    ``torch.compiler.reset()``), and calls it on ``inputs``: dynamo keeps compiled code on the
    function's code object, so one compiled function reused across sizes would turn dynamic.
    The returned ``"fn"`` compiles the same way on its first call, for a direct call of the case
    (the tests call it uncompiled on the CPU: ``fn(*inputs)``)."""
    import torch

    compiled = []

    def call():
        if not compiled:
            compiled.append(torch.compile(fn, dynamic=False, **options))
        return compiled[0](*inputs)

    return {"fn": call, "compile": fn, "inputs": inputs, "compile_options": options}
