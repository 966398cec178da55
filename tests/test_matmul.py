import matmul as ex
import pytest
import torch
import triton
import triton.language as tl
from support import (
    DEVICE,
    FLOAT_DTYPES,
    ON_GPU,
    first_calls_on_a_busy_stream,
    requires_gpu,
    timer_call_order,
    tolerances,
)

from benchmarks.cases import matmul as cases

# Odd shapes: nothing is a multiple of the interpreter's 64 x 64 x 32 tile.
SHAPES = [(127, 255, 33), (1, 1, 1), (65, 17, 70)]


def rand(*shape, dtype=torch.float16):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def operands(M, N, K, dtype):
    return rand(M, K, dtype=dtype), rand(K, N, dtype=dtype) / K**0.5


@pytest.mark.parametrize("group_m", [1, 8])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_pointer_kernel_matches_torch(shape, dtype, group_m):
    a, b = operands(*shape, dtype)
    out = ex.matmul(a, b, group_m=group_m, kernel="pointer")
    assert out.dtype == dtype and out.shape == (shape[0], shape[1])
    torch.testing.assert_close(out, ex.matmul_torch(a, b), **tolerances(dtype, matmul=True))


# Descriptors need 16-byte aligned rows: K and N multiples of 8 (fp16) or 4 (fp32); M is free.
@pytest.mark.parametrize("shape", [(127, 136, 40), (1, 8, 8), (70, 200, 104)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_tma_kernel_matches_torch(shape, dtype):
    a, b = operands(*shape, dtype)
    out = ex.matmul(a, b, kernel="tma")
    torch.testing.assert_close(out, ex.matmul_torch(a, b), **tolerances(dtype, matmul=True))


@pytest.mark.parametrize(
    "make",
    [
        lambda a, b: (a.t().contiguous().t(), b),  # column-major A
        lambda a, b: (a, b.t().contiguous().t()),  # column-major B
        lambda a, b: (a.t().contiguous().t(), b.t().contiguous().t()),
        lambda a, b: (torch.cat([a[:, :1], a], 1)[:, 1:], b),  # sliced view, misaligned start
        lambda a, b: (a, torch.repeat_interleave(b, 2, dim=0)[::2]),  # every other row: row stride 2N
    ],
    ids=["at", "bt", "at-bt", "slice", "step"],
)
def test_any_strides(make):
    a0, b0 = operands(127, 255, 33, torch.float16)
    a, b = make(a0, b0)
    assert not (a.is_contiguous() and b.is_contiguous())
    torch.testing.assert_close(ex.matmul(a, b), ex.matmul_torch(a0, b0), **tolerances(torch.float16, matmul=True))


def test_tma_compatible():
    a = rand(16, 40)
    assert ex.tma_compatible(a)
    assert not ex.tma_compatible(a.t())  # column stride is not 1
    assert not ex.tma_compatible(rand(16, 33))  # 66-byte rows
    assert not ex.tma_compatible(a[:, 1:])  # start not 16-byte aligned


def test_same_values_in_both_orders():
    # Program order changes which tile runs when, never the answer: with one tile shape
    # (the autotuner may pick different ones per GROUP_M) the results are bit-identical.
    M, N, K = 300, 200, 64
    a, b = operands(M, N, K, torch.float32)
    cfg = ex.matmul_configs()[-1]
    meta = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    outs = []
    for group_m in (1, 8):
        c = torch.empty(M, N, device=DEVICE)
        ex.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), GROUP_M=group_m, **meta)
        outs.append(c)
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)


@triton.jit
def coords_kernel(out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = ex.tile_coords(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    tl.store(out_ptr + 2 * pid, pid_m)
    tl.store(out_ptr + 2 * pid + 1, pid_n)


@pytest.mark.parametrize("group_m", [1, 3, 8])
def test_tile_order_is_a_permutation(group_m):
    # Every output tile is owned by exactly one program, whatever GROUP_M.
    M, N = 7 * 64 + 5, 5 * 64 + 1  # 8 x 6 tiles with the interpreter's 64 x 64 blocks

    tiles = 8 * 6
    out = torch.full((tiles, 2), -1, device=DEVICE, dtype=torch.int32)
    coords_kernel[(tiles,)](out, M, N, BLOCK_M=64, BLOCK_N=64, GROUP_M=group_m)
    pairs = {tuple(p) for p in out.tolist()}
    assert pairs == {(m, n) for m in range(8) for n in range(6)}
    if group_m == 1:  # row-major: program p owns tile (p // 6, p % 6)
        assert out.tolist() == [[p // 6, p % 6] for p in range(tiles)]
    else:  # grouped: the first programs walk down a column of group_m tile rows
        assert out[:group_m].tolist() == [[m, 0] for m in range(group_m)]


@pytest.mark.parametrize("kernel", ["pointer", "tma"])
def test_every_element_written(kernel):
    # Poison C and launch the raw kernel: an element no program stores to keeps its NaN.
    M, N, K = 97, 136, 48
    a, b = operands(M, N, K, torch.float16)
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=a.dtype)
    cfg = (ex.matmul_configs() if kernel == "pointer" else ex.matmul_tma_configs())[-1]
    meta = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    if kernel == "pointer":
        ex.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), GROUP_M=4, **meta)
    else:
        if ON_GPU:
            triton.set_allocator(ex._tma_scratch)
        ex.matmul_tma_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), GROUP_M=4, **meta)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c, ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))


def test_empty_dimensions():
    assert ex.matmul(rand(0, 5), rand(5, 3)).shape == (0, 3)
    assert ex.matmul(rand(4, 5), rand(5, 0)).shape == (4, 0)
    out = ex.matmul(rand(4, 0), rand(0, 3))
    assert out.shape == (4, 3) and (out == 0).all()


@pytest.mark.parametrize(
    "a, b, kwargs, err, words",
    [
        ([[1.0]], rand(1, 1), {}, TypeError, "a must be a torch.Tensor"),
        (rand(2, 2), rand(2, 2).to(torch.int32), {}, TypeError, "b must be float16, bfloat16 or float32"),
        (rand(2, 2, 2), rand(2, 2), {}, ValueError, "a must be 2-D"),
        (rand(2, 3), rand(4, 2), {}, ValueError, r"a.shape\[1\] must equal b.shape\[0\]"),
        (rand(2, 3), rand(3, 2, dtype=torch.float32), {}, TypeError, "same dtype"),
        (rand(2, 3), rand(3, 2), {"group_m": 0}, ValueError, "group_m must be a positive int"),
        (rand(2, 3), rand(3, 2), {"kernel": "cuda"}, ValueError, "kernel must be one of"),
        (rand(8, 33), rand(33, 8), {"kernel": "tma"}, ValueError, "kernel='tma' needs"),
    ],
)
def test_bad_inputs(a, b, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.matmul(a, b, **kwargs)


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.matmul(rand(4, 4), torch.randn(4, 4, dtype=torch.float16))


def test_self_check_runs(capsys):
    ex.self_check(shapes=((17, 9, 33),))
    assert "matmul(a, b) == a @ b" in capsys.readouterr().out


def test_configs_by_device():
    # Multi-config autotune cannot run in the interpreter: one config there, a list on a GPU.
    for configs in (ex.matmul_configs(), ex.matmul_tma_configs()):
        assert (len(configs) > 1) == ON_GPU


def test_bench_cases_are_consistent():
    names = [spec["name"] for spec in cases.BENCHMARKS]
    assert len(names) == len(set(names))
    for spec in cases.BENCHMARKS:
        assert {"triton-rowmajor", "triton-grouped", "cublas"} <= set(spec["providers"])
        for x in spec["tiny_x_vals"]:
            for provider in spec["providers"]:
                case = cases.bench_case(spec["name"], provider, x, **spec["args"])
                torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
                M, N, K = cases._parse_shape(x)
                assert case["work"] == 2.0 * M * N * K


@requires_gpu
@pytest.mark.parametrize("shape", [(4000, 3000, 2000), (777, 1000, 520)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_autotuned_matches_torch(shape, dtype):
    # bf16 and the real tensor-core paths: only a GPU shows them. Every provider of the benchmark.
    a, b = operands(*shape, dtype)
    ref = ex.matmul_torch(a, b)
    for kernel, group_m in (("auto", 8), ("pointer", 1), ("pointer", 8), ("tma", 8)):
        out = ex.matmul(a, b, group_m=group_m, kernel=kernel)
        torch.testing.assert_close(out, ref, **tolerances(dtype), msg=lambda m, k=kernel, g=group_m: f"{k} {g}: {m}")


def test_autotune_timer_waits_for_the_callers_stream(monkeypatch):
    # note 3 of the autotuning step on the matmul page
    assert timer_call_order(ex, monkeypatch) == ["synchronize", "do_bench_cudagraph"]


@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_first_calls_while_the_stream_is_busy(dtype):
    def call(m):  # odd row counts take descriptors
        a, b = operands(m, 1000, 520, dtype)
        ref = ex.matmul_torch(a, b)
        return ex.matmul(a, b), ref
    first_calls_on_a_busy_stream(dtype, call)


@requires_gpu
def test_gpu_fp32_within_tf32_tolerance():
    # fp32 tl.dot runs on tensor cores as tf32 on a GPU: compare with tf32 tolerances.
    a, b = operands(256, 256, 256, torch.float32)
    out = ex.matmul(a, b)
    torch.testing.assert_close(out, ex.matmul_torch(a, b), **tolerances(torch.float32, matmul=True))


def test_auto_kernel_choice(monkeypatch):
    # kernel="auto" follows the H200 measurements: pointers for small problems whose strides are
    # multiples of 16, descriptors for large ones and for strides the pointer kernel handles badly.
    monkeypatch.setattr(ex, "_has_tma", lambda device: True)

    def choice(M, N, K, dtype=torch.float16, bt=False):
        a = torch.empty(M, K, device=DEVICE, dtype=dtype)
        b = torch.empty(N, K, device=DEVICE, dtype=dtype).t() if bt else torch.empty(K, N, device=DEVICE, dtype=dtype)
        return ex._use_tma(a, b, torch.empty(M, N, device=DEVICE, dtype=dtype))

    assert not choice(1024, 1024, 1024)
    assert not choice(2048, 2048, 2048)
    assert choice(4096, 4096, 4096)
    assert choice(400, 3000, 200)  # N = 3000: row stride not a multiple of 16 elements
    assert not choice(400, 3000, 200, bt=True)  # column-major B: no descriptor possible
    assert not choice(4096, 4096, 4096, dtype=torch.float32)  # descriptors only for fp16 / bf16


@requires_gpu
def test_gpu_repeated_calls_and_new_threads():
    # Repeated calls give the same bits; new data with the same shape gives new, right answers; a
    # thread that never set an allocator (triton.set_allocator is a context variable) still gets
    # working descriptor launches.
    import threading

    for shape, kernel in (((2048, 2048, 2048), "pointer"), ((777, 1000, 520), "auto"), ((4000, 3000, 2000), "tma")):
        a, b = operands(*shape, torch.float16)
        first = ex.matmul(a, b, kernel=kernel)
        for _ in range(3):
            torch.testing.assert_close(ex.matmul(a, b, kernel=kernel), first, rtol=0, atol=0)
        a2, b2 = operands(*shape, torch.float16)
        torch.testing.assert_close(ex.matmul(a2, b2, kernel=kernel), ex.matmul_torch(a2, b2), **tolerances(a.dtype))
        box = {}

        def in_thread(a2=a2, b2=b2, kernel=kernel, box=box):
            try:
                box["out"] = ex.matmul(a2, b2, kernel=kernel)
            except Exception as err:  # reported below, in the test's thread
                box["err"] = err

        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
        assert "err" not in box, f"{kernel} {shape} in a new thread: {box.get('err')!r}"
        torch.testing.assert_close(box["out"], ex.matmul_torch(a2, b2), **tolerances(a.dtype))


HOPPER_COMPILE = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "0"  # compile for real, with no GPU present
sys.path.insert(0, "examples")
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import matmul as mm

mm.ON_GPU = True  # the GPU config lists, not the interpreter's single config
for dtype, ty in ((torch.float32, "*fp32"), (torch.float16, "*fp16")):
    sig = {n: ty for n in ("a_ptr", "b_ptr", "c_ptr")}
    sig |= {n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    for cfg in mm.matmul_tma_configs(dtype):
        meta = {**cfg.kwargs, "GROUP_M": 8}
        k = triton.compile(ASTSource(mm.matmul_tma_kernel, sig | {n: "constexpr" for n in meta}, meta),
                           target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
        print(ty, k.metadata.shared)
"""


@pytest.mark.skipif(ON_GPU, reason="the GPU tests compile and run every config")
def test_tma_configs_fit_hopper_shared_memory():
    # The interpreter has no shared memory: compile every GPU config of the TMA kernel
    # for sm_90 (ptxas ships with triton) and read its shared-memory size. fp32 tiles
    # are twice the bytes of fp16 ones; the H200 refused 360496 bytes before.
    import subprocess
    import sys

    root = ex.__file__.rsplit("/examples/", 1)[0]
    out = subprocess.run([sys.executable, "-c", HOPPER_COMPILE], cwd=root,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("*fp")]
    n = len(rows) // 2
    assert n > 1 and [ty for ty, _ in rows] == ["*fp32"] * n + ["*fp16"] * n, rows
    shared = [int(s) for _, s in rows]
    assert all(0 < s <= 232448 for s in shared), shared  # 227 KB per block on H100/H200


@requires_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("kernel", ["pointer", "tma"])
def test_gpu_every_config_on_ragged_shapes(kernel, dtype):
    # The autotuner picks whichever config is fastest, and under load the winner changes from run
    # to run: every config must be right on its own, on shapes ragged in M, N and K, and on repeated
    # launches. (A run of the whole suite once got garbage from kernel="auto" on (777, 1000, 520).)
    configs = ex.matmul_configs() if kernel == "pointer" else ex.matmul_tma_configs(dtype)
    for M, N, K in ((777, 1000, 520), (97, 136, 48), (4000, 3000, 2000)):
        a, b = operands(M, N, K, dtype)
        ref = ex.matmul_torch(a, b)
        ran = 0
        for cfg in configs:
            meta = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
            grid = (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
            tiles = (meta["BLOCK_M"] + meta["BLOCK_N"]) * meta["BLOCK_K"] * a.element_size() * meta["num_stages"]
            if kernel == "pointer" and tiles > 232448:  # an H100/H200 block's shared memory (227 KB)
                # fp32 tiles of the fp16 sizes need more shared memory than a Hopper SM has: the
                # autotuner skips such a config (it fails to compile with OutOfResources), so do we.
                with pytest.raises(triton.runtime.errors.OutOfResources):
                    ex.matmul_kernel[grid](a, b, torch.empty(M, N, device=DEVICE, dtype=dtype), M, N, K,
                                           a.stride(0), a.stride(1), b.stride(0), b.stride(1), N, 1, GROUP_M=8, **meta)
                continue
            ran += 1
            for _ in range(3):
                c = torch.full((M, N), float("nan"), device=DEVICE, dtype=dtype)
                if kernel == "pointer":
                    ex.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                           c.stride(0), c.stride(1), GROUP_M=8, **meta)
                else:
                    triton.set_allocator(ex._tma_scratch)
                    ex.matmul_tma_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                                               GROUP_M=8, **meta)
                torch.testing.assert_close(c, ref, **tolerances(dtype, matmul=True),
                                           msg=lambda m, cfg=cfg, s=(M, N, K): f"{cfg} on {s}: {m}")
        assert ran >= 1, f"no {kernel} config fits {dtype}"


def test_k_stride_past_int32_is_refused_before_launch():
    # The pointer kernel's offsets along K are int32: k * stride for k < BLOCK_K. A transposed A with
    # 2**26 rows has a K stride of 2**26, and 32 or 64 of those pass 2**31. Meta tensors: no memory.
    a = torch.empty(64, 2**26, device="meta", dtype=torch.float16).t()
    b = torch.empty(64, 16, device="meta", dtype=torch.float16)
    with pytest.raises(ValueError, match=r"a.stride\(1\) = 67108864.*past 2\*\*31 - 1"):
        ex.matmul(a, b, kernel="pointer")


def test_expanded_rows_never_take_descriptors():
    # A row stride of 0 is a multiple of 16 bytes, but rows that overlap are not what a descriptor
    # describes: expanded operands take the pointer kernel, and give the right product.
    a = rand(1, 64).expand(33, 64)
    b = rand(64, 48) / 8
    assert not ex.tma_compatible(a) and ex.tma_compatible(rand(33, 64))
    torch.testing.assert_close(ex.matmul(a, b), ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))
