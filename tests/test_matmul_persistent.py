import matmul_persistent as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, requires_gpu, tolerances

from benchmarks.cases import matmul_persistent as cases

POINTER_VARIANTS = ["tiles", "persistent"]


def rand(*shape, dtype=torch.float16):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("variant", POINTER_VARIANTS + ["auto"])
@pytest.mark.parametrize("shape", [(127, 255, 33), (1, 1, 1), (65, 17, 70)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matches_torch(variant, shape, dtype):
    M, N, K = shape
    a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype)
    out = ex.matmul_persistent(a, b, variant=variant)
    assert out.dtype == dtype and out.shape == (M, N)
    torch.testing.assert_close(out, ex.matmul_torch(a, b), **tolerances(dtype, matmul=True))


# TMA needs 16-byte-aligned rows: K and N multiples of 8 (fp16) or 4 (fp32); M is free.
@pytest.mark.parametrize("shape", [(127, 248, 40), (33, 16, 104), (1, 8, 8)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_tma_matches_torch(shape, dtype):
    M, N, K = shape
    a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype)
    out = ex.matmul_persistent(a, b, variant="tma")
    torch.testing.assert_close(out, ex.matmul_torch(a, b), **tolerances(dtype, matmul=True))


@pytest.mark.parametrize("variant, int64", [("tiles", False), ("tiles", True), ("persistent", False),
                                            ("persistent", True)])
def test_every_element_written(variant, int64):
    # Poison C and launch the raw kernel: a tile the grid never visits keeps its NaN.
    # INT64=True runs the 64-bit offset code on small inputs: same answer expected.
    # The TMA kernel's case is test_every_tma_config_and_epilogue.
    M, N, K = 97, 120, 48  # 4 x 4 = 16 tiles of 32 x 32 on the CPU, 4 per persistent program
    a, b = rand(M, K), rand(K, N)
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=a.dtype)
    cfg = ex.matmul_configs(variant)[0]
    meta = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    tiles = ex.triton.cdiv(M, meta["BLOCK_M"]) * ex.triton.cdiv(N, meta["BLOCK_N"])
    grid = (tiles,) if variant == "tiles" else (min(tiles, ex.num_persistent_programs(DEVICE)),)
    kernel = ex.matmul_tiles_kernel if variant == "tiles" else ex.matmul_persistent_kernel
    kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 c.stride(0), c.stride(1), INT64=int64, **meta)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c, ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))


TMA_CONFIGS = ex.matmul_configs("tma")  # this device's list: six on a GPU, one in the interpreter
# (config, halves): every config as the autotuner runs it, and each whole-C config also with halves; a
# config that stores halves may not fit with a whole C (256 x 128 x 64 with 4 stages needs 256 KB of shared memory)
TMA_CASES = [(i, subtile) for i, cfg in enumerate(TMA_CONFIGS)
             for subtile in ([True] if cfg.kwargs["EPILOGUE_SUBTILE"] else [False, True])]


@pytest.mark.parametrize("index, subtile", TMA_CASES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_every_tma_config_and_epilogue(index, subtile, dtype):
    # Each config the autotuner may pick, launched directly on a poisoned C with ragged edges (the
    # right half of the last column of tiles hangs past N), with C stored whole and in two halves.
    if dtype == torch.bfloat16 and DEVICE.type != "cuda":
        pytest.skip("bf16 is computed wrongly by the interpreter")
    cfg = TMA_CONFIGS[index]
    meta = {**cfg.kwargs, "EPILOGUE_SUBTILE": subtile, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    bm, bn = meta["BLOCK_M"], meta["BLOCK_N"]
    M, N, K = 3 * bm + 5, 2 * bn + bn // 2 + 8, 3 * meta["BLOCK_K"] + 8  # N and K: 16-byte rows
    a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype) / K**0.5
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=dtype)
    tiles = ex.triton.cdiv(M, bm) * ex.triton.cdiv(N, bn)
    descs = ex.tma_descriptors(a, b, c)
    ex.set_block_shapes({"a_desc": descs[0], "b_desc": descs[1], "c_desc": descs[2], **meta})
    grid = (min(tiles, ex.num_persistent_programs(DEVICE)),)
    ex.matmul_tma_kernel[grid](*descs, M, N, K, **meta)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c, ex.matmul_torch(a, b), **tolerances(dtype, matmul=True))


HOPPER_COMPILE = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "0"  # compile for real, with no GPU present
sys.path.insert(0, "examples")
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import matmul_persistent as ex

ex.DEVICE = torch.device("cuda")  # the GPU config lists, not the interpreter's single config
for dtype, ty in ((torch.float32, "fp32"), (torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    for cfg in ex.matmul_configs("tma", dtype):
        meta = cfg.kwargs
        bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
        c_bn = bn // 2 if meta["EPILOGUE_SUBTILE"] else bn
        sig = {"a_desc": f"tensordesc<{ty}[{bm}, {bk}]>", "b_desc": f"tensordesc<{ty}[{bk}, {bn}]>",
               "c_desc": f"tensordesc<{ty}[{bm}, {c_bn}]>", "M": "i32", "N": "i32", "K": "i32"}
        k = triton.compile(ASTSource(ex.matmul_tma_kernel, sig | {n: "constexpr" for n in meta}, dict(meta)),
                           target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
        print("cfg", ty, k.metadata.shared, k.metadata.global_scratch_size)
"""


@pytest.mark.skipif(DEVICE.type == "cuda", reason="the GPU tests compile and run every config")
def test_tma_configs_compile_for_hopper():
    # The interpreter has no shared memory and builds no descriptor: compile every GPU config of
    # the TMA kernel for sm_90 (ptxas ships with triton), with the descriptor types the launcher
    # passes. Each must fit 227 KB of shared memory per block and need no global scratch (the
    # descriptors are built on the host, so no allocator is set).
    import subprocess
    import sys

    root = ex.__file__.rsplit("/examples/", 1)[0]
    out = subprocess.run([sys.executable, "-c", HOPPER_COMPILE], cwd=root, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line.split()[1:] for line in out.stdout.splitlines() if line.startswith("cfg ")]
    n16, n32 = len(ex.GPU_CONFIGS["tma"]), len(ex.GPU_CONFIGS_FP32)
    assert [ty for ty, _, _ in rows] == ["fp32"] * n32 + ["fp16"] * n16 + ["bf16"] * n16, rows
    assert all(0 < int(shared) <= 232448 and scratch == "0" for _, shared, scratch in rows), rows


def test_persistent_grid_smaller_than_tiles():
    # The interpreter's grid is 4 programs: 127 x 255 in 32 x 32 tiles is 32 tiles, 8 per program.
    if DEVICE.type == "cpu":
        assert ex.num_persistent_programs(DEVICE) == 4
    cfg = ex.matmul_configs("persistent")[0].kwargs
    tiles = ex.triton.cdiv(127, cfg["BLOCK_M"]) * ex.triton.cdiv(255, cfg["BLOCK_N"])
    assert DEVICE.type == "cuda" or tiles > 2 * ex.num_persistent_programs(DEVICE)


@pytest.mark.parametrize("variant", POINTER_VARIANTS + ["auto"])
def test_non_contiguous(variant):
    a = rand(40, 70).t()  # (70, 40), stride (1, 70)
    b = rand(40, 66)[:, ::2]  # (40, 33), stride (66, 2)
    out = ex.matmul_persistent(a, b, variant=variant)
    torch.testing.assert_close(out, ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))


def test_auto_picks_tma_only_when_aligned(monkeypatch):
    seen = []
    real = ex.tuned_kernel
    monkeypatch.setattr(ex, "tuned_kernel", lambda variant, dtype: seen.append(variant) or real(variant, dtype))
    ex.matmul_persistent(rand(9, 16), rand(16, 24))  # rows of 32 and 48 bytes: aligned
    ex.matmul_persistent(rand(9, 15), rand(15, 24))  # rows of a are 30 bytes: not aligned
    ex.matmul_persistent(rand(9, 16), rand(24, 16).t())  # b's last dim is not contiguous
    assert seen == ["tma", "persistent", "persistent"]


def test_tma_block_shapes_follow_the_config():
    # The descriptors are built once per call with placeholder blocks; each config's pre-hook
    # gives them its tiles (C's block is half as wide when the epilogue stores halves).
    for cfg in ex.matmul_configs("tma") + ex.matmul_configs("tma", torch.float32):
        assert cfg.pre_hook is ex.set_block_shapes
        descs = ex.tma_descriptors(rand(8, 16), rand(16, 24), rand(8, 24))
        nargs = dict(zip(("a_desc", "b_desc", "c_desc"), descs, strict=True)) | cfg.kwargs
        cfg.pre_hook(nargs)
        bm, bn, bk = cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"], cfg.kwargs["BLOCK_K"]
        c_bn = bn // 2 if cfg.kwargs["EPILOGUE_SUBTILE"] else bn
        assert [d.block_shape for d in descs] == [[bm, bk], [bk, bn], [bm, c_bn]]


def test_tma_refusal_and_fallback_build_no_descriptor(monkeypatch):
    # Misaligned row strides (padded rows of 19 fp16 elements: 38 bytes) make TensorDescriptor
    # assert; the launcher checks first: "tma" raises its ValueError and "auto" falls back to the
    # pointer kernel without building a descriptor. An aligned padded-row view keeps its own
    # row stride in the descriptor.
    built = []
    real = ex.tma_descriptors
    monkeypatch.setattr(ex, "tma_descriptors", lambda *t: built.append(t) or real(*t))
    a, b = rand(9, 19)[:, :16], rand(16, 24)
    assert not ex.tma_compatible(a)
    with pytest.raises(AssertionError, match="16-byte aligned"):
        real(a, b, rand(9, 24))
    with pytest.raises(ValueError, match="variant='tma' needs"):
        ex.matmul_persistent(a, b, variant="tma")
    torch.testing.assert_close(ex.matmul_persistent(a, b), ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))
    assert built == []
    a = rand(9, 24)[:, :16]  # 48-byte rows, 32 bytes used: aligned
    torch.testing.assert_close(ex.matmul_persistent(a, b), ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))
    assert len(built) == 1 and real(*built[0])[0].strides == [24, 1]


def test_tma_compatible():
    assert ex.tma_compatible(rand(3, 8))
    assert ex.tma_compatible(rand(3, 24)[:, :10])  # padded rows: 48-byte row stride, 20 bytes used
    assert not ex.tma_compatible(rand(3, 7))  # 14-byte rows
    assert not ex.tma_compatible(rand(8, 3).t())  # last dim not contiguous
    assert not ex.tma_compatible(rand(3, 16)[:, 1:])  # base 2 bytes past an aligned address
    assert not ex.tma_compatible(rand(1, 8).expand(3, 8))  # row stride 0: rows overlap
    assert not ex.tma_compatible(rand(3, 8)[:, :4])  # aligned rows of only 8 bytes


def layouts(M, K, N, dtype):
    """(name, a, b) in the layouts a user passes; each holds random values."""
    def padded(rows, cols, extra):  # rows `extra` elements longer than `cols`: a padded-row view
        return rand(rows, cols + extra, dtype=dtype)[:, :cols]

    def offset(rows, cols, skip):  # a view that starts `skip` elements into its storage
        return rand(rows * cols + skip, dtype=dtype)[skip:].view(rows, cols)

    pad = 16 // torch.empty((), dtype=dtype).element_size()  # elements in 16 bytes
    return [
        ("contiguous", rand(M, K, dtype=dtype), rand(K, N, dtype=dtype)),
        ("padded rows, aligned", padded(M, K, pad), padded(K, N, 2 * pad)),
        ("padded rows, unaligned", padded(M, K, 3), padded(K, N, 1)),
        ("transposed", rand(K, M, dtype=dtype).t(), rand(N, K, dtype=dtype).t()),
        ("offset, aligned", offset(M, K, pad), offset(K, N, 3 * pad)),
        ("offset, unaligned", offset(M, K, 1), offset(K, N, 3)),
        ("expanded", rand(1, K, dtype=dtype).expand(M, K), rand(K, 1, dtype=dtype).expand(K, N)),
        ("column-strided", rand(M, 2 * K, dtype=dtype)[:, ::2], rand(K, 3 * N, dtype=dtype)[:, ::3]),
    ]


@pytest.mark.parametrize("variant", POINTER_VARIANTS + ["auto", "tma"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_layouts(variant, dtype):
    # Every layout a user passes: the pointer variants take all of them, "auto" picks TMA only
    # where descriptors fit, "tma" refuses the rest. A padded-row view (row stride > K) is
    # TMA-compatible: the descriptor must be built from its real row stride, not from K.
    M, K, N = 37, 40, 24  # K and N: rows of 16-byte multiples, so the aligned views fit TMA
    tol = tolerances(dtype, matmul=True)
    for name, a, b in layouts(M, K, N, dtype):
        fits = ex.tma_compatible(a) and ex.tma_compatible(b)
        assert fits == (name in ("contiguous", "padded rows, aligned", "offset, aligned")), name
        if variant == "tma" and not fits:
            with pytest.raises(ValueError, match="variant='tma' needs"):
                ex.matmul_persistent(a, b, variant=variant)
            continue
        out = ex.matmul_persistent(a, b, variant=variant)
        torch.testing.assert_close(out, ex.matmul_torch(a, b), **tol, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy inf / NaN arithmetic, in the interpreter
@pytest.mark.parametrize("variant", POINTER_VARIANTS + ["tma"])
def test_nan_inf_and_large_values_like_torch(variant):
    # NaN and inf propagate as in torch's product; large values overflow fp16 to inf in both.
    M, K, N = 37, 40, 24
    a, b = rand(M, K), rand(K, N)
    a[0, 3], a[1, 5], a[2, 7], a[2, 8] = float("nan"), float("inf"), float("inf"), float("-inf")
    b[4, 2], b[6, 9] = float("-inf"), float("nan")
    a[5] = 300.0  # row 5 of the product: about 40 * 300 * |b| > 65504 in places
    out, ref = ex.matmul_persistent(a, b, variant=variant), ex.matmul_torch(a, b)
    assert torch.isnan(ref).any() and torch.isinf(ref).any()
    torch.testing.assert_close(out, ref, equal_nan=True, **tolerances(a.dtype, matmul=True))


def test_needs_int64_from_spans():
    # Offsets are int32 while every operand spans fewer than 2**31 elements. Meta tensors carry
    # shape and strides without memory, so the rule is tested at 2**31 without allocating it.
    meta = lambda *shape: torch.empty(*shape, device="meta")  # noqa: E731
    assert not ex.needs_int64(meta(2**16, 2**15))  # 2**31 elements: largest offset 2**31 - 1
    assert ex.needs_int64(meta(2**16, 2**15 + 1))
    assert ex.needs_int64(meta(2**15 + 1, 2**16).t())  # transposed: the largest offset is the same
    assert not ex.needs_int64(meta(1, 2**20).expand(2**20, 2**20))  # stride 0: 2**40 elements, tiny span
    assert ex.needs_int64(meta(4, 2**31)[:, :8])  # 32 elements 2**31 apart


def test_launcher_passes_int64_flag(monkeypatch):
    seen = []
    real = ex.tuned_kernel

    class Spy:
        def __init__(self, kernel):
            self.kernel = kernel

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                seen.append(kwargs.get("INT64"))
                return self.kernel[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(ex, "tuned_kernel", lambda variant, dtype: Spy(real(variant, dtype)))
    ex.matmul_persistent(rand(9, 16), rand(16, 8), variant="persistent")
    ex.matmul_persistent(rand(9, 16), rand(16, 8), variant="tma")
    assert seen == [False, None]


def test_dimension_limit_refused_before_launch():
    # An expanded view has 2**30 rows and one element of storage: refused, nothing allocated.
    a = torch.zeros(1, 1, device=DEVICE).expand(2**30, 1)
    with pytest.raises(ValueError, match=r"a.shape\[0\] \(M\) is 1073741824: M, N and K must each be below 2\*\*30"):
        ex.matmul_persistent(a, m_(1, 4))


def m_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "a, b, kwargs, err, words",
    [
        ([[1.0]], m_(1, 1), {}, TypeError, "a must be a torch.Tensor"),
        (m_(2, 2), m_(2, 2).to(torch.int32), {}, TypeError, "b must be float16"),
        (m_(4), m_(4, 2), {}, ValueError, "a must be 2-D"),
        (m_(2, 3, 4), m_(4, 2), {}, ValueError, "a must be 2-D"),
        (m_(2, 3), m_(4, 2), {}, ValueError, "inner dimensions must match"),
        (m_(0, 3), m_(3, 2), {}, ValueError, "a must not be empty"),
        (m_(2, 3), m_(3, 2, dtype=torch.float16), {}, TypeError, "same dtype"),
        (m_(2, 8), m_(8, 8), {"variant": "fast"}, ValueError, "variant must be one of"),
        (m_(2, 7), m_(7, 8), {"variant": "tma"}, ValueError, "variant='tma' needs"),
        (m_(2, 8), m_(8, 7), {"variant": "tma"}, ValueError, "variant='tma' needs"),
        (m_(2, 8), m_(8, 8).t(), {"variant": "tma"}, ValueError, "variant='tma' needs"),
        (m_(1, 8).expand(2, 8), m_(8, 8), {"variant": "tma"}, ValueError, "variant='tma' needs"),
        (m_(2, 1), m_(1, 1).expand(1, 2**30), {}, ValueError, r"b.shape\[1\] \(N\) is 1073741824"),
        (m_(2, 1).expand(2, 2**30), m_(1, 1).expand(2**30, 1), {}, ValueError, r"a.shape\[1\] \(K\)"),
    ],
)
def test_bad_inputs(a, b, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.matmul_persistent(a, b, **kwargs)


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.matmul_persistent(m_(4, 4), torch.randn(4, 4))


@pytest.mark.parametrize("spec", [s for s in cases.BENCHMARKS if s["tiny_x_vals"]], ids=lambda s: s["name"])
def test_bench_cases_tiny(spec):
    for x in spec["tiny_x_vals"]:
        for provider in spec["providers"]:
            case = cases.bench_case(spec["name"], provider, x, device=DEVICE, **spec["args"])
            torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check(shapes=((33, 40, 24),))
    assert "tiles, persistent and tma" in capsys.readouterr().out


@requires_gpu
def test_persistent_grid_is_sm_count():
    assert ex.num_persistent_programs(DEVICE) == torch.cuda.get_device_properties(DEVICE).multi_processor_count


@requires_gpu
@pytest.mark.parametrize("variant", ["tiles", "persistent", "tma"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1024, 1024, 1024), (4000, 3000, 2000), (1, 4096, 512)])
def test_gpu_autotuned_sizes(variant, dtype, shape):
    # Every autotune config compiles and is correct at benchmark-like sizes (bf16 only here).
    M, N, K = shape
    a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype)
    out = ex.matmul_persistent(a, b, variant=variant)
    tol = tolerances(dtype, matmul=True)
    torch.testing.assert_close(out, ex.matmul_torch(a, b), rtol=tol["rtol"], atol=tol["atol"] * (K / 64) ** 0.5)


@requires_gpu
def test_gpu_tma_in_a_thread_without_allocator():
    # Descriptors built on the host need no global scratch memory: a new thread, where
    # triton.set_allocator (a context variable) was never called, runs the TMA variant.
    import threading

    a, b = rand(777, 520), rand(520, 1000) / 520**0.5
    box = {}

    def in_thread():
        try:
            box["out"] = ex.matmul_persistent(a, b, variant="tma")
        except Exception as err:  # reported below, in the test's thread
            box["err"] = err

    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    assert "err" not in box, f"TMA variant in a new thread: {box.get('err')!r}"
    torch.testing.assert_close(box["out"], ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))


@requires_gpu
def test_gpu_misaligned_base_falls_back():
    # A view starting 2 bytes into an allocation cannot feed a tensor descriptor.
    buf = rand(65 * 64 + 1)
    a = buf[1:].view(65, 64)
    b = rand(64, 64)
    assert not ex.tma_compatible(a)
    with pytest.raises(ValueError, match="variant='tma' needs"):
        ex.matmul_persistent(a, b, variant="tma")
    torch.testing.assert_close(ex.matmul_persistent(a, b), ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))


@requires_gpu
@pytest.mark.parametrize("variant", ["auto", "tiles", "persistent", "tma"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_padded_row_views(variant, dtype):
    # big[:, :K] keeps 16-byte aligned rows that are longer than K, so "auto" and "tma" take the
    # TMA kernel. A descriptor built with row stride K (the old kernel) reads the wrong rows.
    M, K, N = 1000, 512, 776
    a = rand(M, K + 64, dtype=dtype)[:, :K]
    b = rand(K, N + 8, dtype=dtype)[:, :N]
    assert ex.tma_compatible(a) and ex.tma_compatible(b) and a.stride(0) != K and b.stride(0) != N
    out = ex.matmul_persistent(a, b, variant=variant)
    tol = tolerances(dtype, matmul=True)
    torch.testing.assert_close(out, ex.matmul_torch(a, b), rtol=tol["rtol"], atol=tol["atol"] * (K / 64) ** 0.5)


@requires_gpu
@pytest.mark.parametrize("variant", ["tiles", "persistent", "tma"])
@pytest.mark.parametrize("transposed", [False, True])
def test_gpu_past_2_31_elements(variant, transposed):
    # A of 2**31 + 3 * 1024 fp16 elements (4 GiB): the pointer kernels need int64 offsets
    # (INT64=True); a transposed A has row stride 1 and column stride M. TMA takes only the
    # row-major A and addresses it through its descriptor.
    if variant == "tma" and transposed:
        pytest.skip("a transposed A cannot feed a descriptor")
    M, K, N = 2**21 + 3, 1024, 16
    a = rand(K, M).t() if transposed else rand(M, K)
    b = rand(K, N) / K**0.5
    assert ex.needs_int64(a)
    out = ex.matmul_persistent(a, b, variant=variant)
    for rows in (slice(0, 256), slice(M // 2, M // 2 + 256), slice(M - 256, M)):
        torch.testing.assert_close(out[rows], ex.matmul_torch(a[rows], b), **tolerances(a.dtype, matmul=True))
    del a, out
    torch.cuda.empty_cache()
