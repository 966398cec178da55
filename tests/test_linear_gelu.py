import linear_gelu as ex
import pytest
import torch
import triton
import triton.language as tl

from conftest import DEVICE, ON_GPU, requires_gpu, tolerances

# M is free; K must keep A's rows 16-byte aligned (a multiple of 8 in fp16). N is odd in
# most cases: W is then a view of a buffer with padded rows.
SHAPES = [(127, 255, 40), (1, 8, 8), (65, 17, 136), (300, 64, 16)]


def rand(*shape, dtype=torch.float16):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def padded(rows, cols, scale=1.0, dtype=torch.float16):
    """A (rows, cols) view whose rows start 16 bytes apart, as descriptors need."""
    width = (cols + 7) // 8 * 8
    return (rand(rows, width, dtype=dtype) * scale)[:, :cols]


def operands(M, N, K, dtype=torch.float16):
    return rand(M, K, dtype=dtype), padded(K, N, K**-0.5, dtype), rand(N, dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(shape):
    a, w, bias = operands(*shape)
    out = ex.linear_gelu(a, w, bias)
    assert out.shape == (shape[0], shape[1]) and out.dtype == torch.float16
    torch.testing.assert_close(out, ex.linear_gelu_reference(a, w, bias), **tolerances(torch.float16))


def test_matches_eager_pytorch():
    a, w, bias = operands(127, 255, 40)
    ref = torch.nn.functional.gelu(a.float() @ w.float() + bias.float(), approximate="tanh")
    torch.testing.assert_close(ex.linear_gelu(a, w, bias).float(), ref, **tolerances(torch.float16))


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, ex.gelu_tanh(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def test_gelu_epilogue_is_the_tanh_form():
    # x * sigmoid(2u) must equal torch's tanh GELU in fp32, including large |x|.
    x = torch.cat([torch.linspace(-12, 12, 1001, device=DEVICE), torch.randn(1000, device=DEVICE) * 3])
    y = torch.empty_like(x)
    gelu_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    torch.testing.assert_close(y, torch.nn.functional.gelu(x, approximate="tanh"), rtol=1e-5, atol=1e-6)


def test_strided_views():
    M, N, K = 70, 40, 48
    a0, w0, bias0 = rand(M, K), rand(K, N) / K**0.5, rand(N)
    a = torch.cat([a0, a0], 1)[:, :K]  # row stride 2K
    w = torch.cat([w0, w0], 1)[:, :N]  # row stride 2N
    bias = torch.cat([bias0, bias0])[:N]
    assert not a.is_contiguous() and not w.is_contiguous()
    torch.testing.assert_close(ex.linear_gelu(a, w, bias), ex.linear_gelu_reference(a0, w0, bias0),
                               **tolerances(torch.float16))


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("subtile", [False, True])
def test_every_element_written(persistent, subtile):
    # Poison C and launch the raw kernel: an element no program stores to keeps its NaN.
    # The persistent grid has fewer programs than tiles: each program loops over several.
    M, N, K = 200, 136, 40
    a, w, bias = operands(M, N, K)
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=torch.float16)
    cfg = ex.linear_gelu_configs()[0]
    meta = {**cfg.kwargs, "PERSISTENT": persistent, "EPILOGUE_SUBTILE": subtile,
            "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
    grid = ex._grid(M, N)(meta)
    assert grid[0] == (min(tiles, ex._num_sms()) if persistent else tiles)
    if not ON_GPU:
        assert (grid[0] < tiles) == persistent  # 4 x 3 = 12 tiles, 4 programs in the interpreter
    if ON_GPU:
        ex.linear_gelu(a[:1], w, bias)  # sets the descriptor allocator
    ex.linear_gelu_kernel[grid](a, w, bias, c, M, N, K, a.stride(0), w.stride(0), c.stride(0), **meta)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c, ex.linear_gelu_reference(a, w, bias), **tolerances(torch.float16))


def test_empty_and_k_zero():
    assert ex.linear_gelu(rand(0, 8), rand(8, 16), rand(16)).shape == (0, 16)
    bias = rand(16)
    out = ex.linear_gelu(rand(3, 0), rand(0, 16), bias)
    torch.testing.assert_close(out, torch.nn.functional.gelu(bias.float(), approximate="tanh").half().expand(3, 16))


@pytest.mark.parametrize(
    "a, w, bias, err, words",
    [
        ([[1.0]], rand(8, 8), rand(8), TypeError, "a must be a torch.Tensor"),
        (rand(8, 8).float(), rand(8, 8).float(), rand(8).float(), TypeError, "a must be float16 or bfloat16"),
        (rand(8, 8), rand(8, 8), rand(8).float(), TypeError, "bias must be float16 or bfloat16"),
        (rand(2, 8, 8), rand(8, 8), rand(8), ValueError, "a must be 2-D"),
        (rand(8, 8), rand(8, 8), rand(8, 1), ValueError, "bias must be 1-D"),
        (rand(8, 16), rand(8, 8), rand(8), ValueError, r"a.shape\[1\] must equal w.shape\[0\]"),
        (rand(8, 8), rand(8, 16), rand(8), ValueError, "bias must have w.shape\\[1\\] = 16 elements"),
        (rand(8, 8), rand(8, 8), rand(16)[::2], ValueError, "bias must be contiguous"),
        (rand(8, 9), rand(9, 8), rand(8), ValueError, "a must have unit column stride, 16-byte aligned rows"),
        (rand(8, 8), rand(8, 8).t(), rand(8), ValueError, "w must have unit column stride"),
        (rand(8, 4), rand(4, 8), rand(8), ValueError, "at least 16 bytes per row"),
    ],
)
def test_bad_inputs(a, w, bias, err, words):
    with pytest.raises(err, match=words):
        ex.linear_gelu(a, w, bias)


def test_self_check_runs(capsys):
    ex.self_check(shapes=((17, 9, 16),))
    assert "gelu_tanh(a @ w + bias)" in capsys.readouterr().out


def test_configs_by_device():
    configs = ex.linear_gelu_configs()
    assert (len(configs) > 1) == ON_GPU
    assert all({"PERSISTENT", "FLATTEN", "WARP_SPECIALIZE", "EPILOGUE_SUBTILE"} <= set(c.kwargs) for c in configs)


def test_bench_cases_are_consistent():
    for spec in ex.BENCHMARKS:
        assert spec["providers"] == ["torch", "torch.compile", "triton"]
        for x in spec["tiny_x_vals"]:
            for provider in ("torch", "triton"):  # torch.compile on the CPU builds C++: too slow here
                case = ex.bench_case(spec["name"], provider, x, **spec["args"])
                torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
                M, N, K = (int(v) for v in x.split("x"))
                assert case["work"] == 2.0 * M * N * K


@requires_gpu
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (777, 1000, 520), (8192, 8192, 2048)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_autotuned_matches_reference(shape, dtype):
    # The real TMA, persistent and warp-specialized configs only exist on a GPU; bf16 too.
    a, w, bias = operands(*shape, dtype)
    torch.testing.assert_close(ex.linear_gelu(a, w, bias), ex.linear_gelu_reference(a, w, bias), **tolerances(dtype))


@requires_gpu
def test_gpu_torch_compile_peer_agrees():
    a, w, bias = operands(512, 256, 128)
    torch.testing.assert_close(ex._compiled_linear_gelu()(a, w, bias), ex.linear_gelu_reference(a, w, bias),
                               **tolerances(torch.float16))


HOPPER_COMPILE = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "0"  # compile for real, with no GPU present
sys.path.insert(0, "examples")
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import linear_gelu as lg

sig = {n: "*fp16" for n in ("a_ptr", "w_ptr", "bias_ptr", "c_ptr")}
sig |= {n: "i32" for n in ("M", "N", "K", "stride_am", "stride_wk", "stride_cm")}
for meta, warps, stages in %s:
    k = triton.compile(ASTSource(lg.linear_gelu_kernel, sig | {n: "constexpr" for n in meta}, meta),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
    print(k.metadata.shared)
"""


@pytest.mark.skipif(ON_GPU, reason="the GPU tests compile and run every config")
def test_gpu_only_configs_compile_for_hopper():
    # The interpreter never compiles: warp specialization, the split store and the
    # shared-memory budget are only checked by compiling for sm_90 (ptxas ships with triton).
    import subprocess
    import sys

    base = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "FLATTEN": True, "PERSISTENT": True}
    configs = [({**base, "WARP_SPECIALIZE": False, "EPILOGUE_SUBTILE": True}, 8, 4),
               ({**base, "WARP_SPECIALIZE": True, "EPILOGUE_SUBTILE": False}, 8, 3)]
    root = ex.__file__.rsplit("/examples/", 1)[0]
    out = subprocess.run([sys.executable, "-c", HOPPER_COMPILE % repr(configs)], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    shared = [int(v) for v in out.stdout.split()]
    assert len(shared) == 2 and all(0 < s <= 232448 for s in shared), shared  # 227 KB per block on H100/H200
