"""Probe: why torch.compile (Inductor) of a module calling the attention triton_op fails on the H200.

Runs tests/test_attention.py's TinyAttention under torch.compile(fullgraph=True) in fp32 and fp16
and prints every exception in the chain in full (pytest shows only the outermost one).
Usage: python benchmarks/probes/attention_compile.py   (needs CUDA)
"""

import traceback

import torch
from _examples import load_example  # this folder is on sys.path (see _examples.py)


def chain(err):
    while err is not None:
        print("----", type(err).__name__)
        print(str(err)[-3000:])
        err = err.__cause__ or err.__context__


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("attention")

    class Tiny(torch.nn.Module):
        def __init__(self, dim=64, heads=2):
            super().__init__()
            self.heads, self.qkv, self.out = heads, torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)

        def forward(self, x):
            b, s, dim = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
            return self.out(ex.attention(q, k, v, causal=True).transpose(1, 2).reshape(b, s, dim))

    for dtype in (torch.float32, torch.float16):
        for _ in (0,):
            torch._dynamo.reset()
            model = Tiny().to("cuda", dtype)
            x = torch.randn(2, 50, 64, device="cuda", dtype=dtype)
            try:
                y = torch.compile(model, fullgraph=True)(x)
                torch.testing.assert_close(y, model(x), rtol=2e-2, atol=2e-2)
                print(dtype, "compiled OK")
            except Exception as err:  # noqa: BLE001
                print(dtype, "FAILED")
                chain(err)
                traceback.print_exc(limit=3)


if __name__ == "__main__":
    main()
