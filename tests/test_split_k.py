import pytest
import split_k as ex
import torch
from support import DEVICE, ON_GPU, requires_gpu, tolerances

from benchmarks.cases import split_k as cases


def operands(m, n, k, dtype=torch.float32):
    return torch.randn(m, k, device=DEVICE, dtype=dtype), torch.randn(k, n, device=DEVICE, dtype=dtype)


def tol(k, dtype=torch.float32):
    # partial sums are added in a different order than torch's: the error grows like sqrt(K)
    t = tolerances(dtype, matmul=True)
    return {"rtol": t["rtol"], "atol": t["atol"] * max(1.0, k**0.5)}


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (17, 33, 300), (127, 255, 33), (64, 130, 1025)])
@pytest.mark.parametrize("split_k", [1, 2, 3, 8, None])
def test_matches_torch(m, n, k, split_k):
    a, b = operands(m, n, k)
    got = ex.matmul_split_k(a, b, split_k=split_k)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ex.matmul_split_k_torch(a, b), **tol(k))


def test_more_slices_than_k_blocks():
    # 200 slices of a K = 100: the launcher keeps only non-empty slices
    a, b = operands(9, 9, 100)
    torch.testing.assert_close(ex.matmul_split_k(a, b, split_k=200, block_k=16), a @ b, **tol(100))


def test_fp16_inputs():
    a, b = operands(33, 47, 513, torch.float16)
    torch.testing.assert_close(ex.matmul_split_k(a, b, split_k=4), ex.matmul_split_k_torch(a, b),
                               rtol=1e-2, atol=1e-2 * 513**0.5)


def test_strided_operands():
    a = torch.randn(300, 40, device=DEVICE).t()  # [40, 300], column-major
    b = torch.randn(300, 70, device=DEVICE)[:, ::2]  # [300, 35], column stride 2
    torch.testing.assert_close(ex.matmul_split_k(a, b, split_k=3), a @ b, **tol(300))


def test_output_is_zeroed_before_accumulating():
    # the atomic path adds into C: an output that was not zeroed would show here
    a, b = operands(20, 20, 256)
    first = ex.matmul_split_k(a, b, split_k=4)
    second = ex.matmul_split_k(a, b, split_k=4)
    torch.testing.assert_close(second, first, **tol(256))
    torch.testing.assert_close(second, a @ b, **tol(256))


def test_kernel_adds_into_what_is_there():
    # the kernel itself accumulates: launching it on a non-zero C adds to it
    a, b = operands(16, 16, 128)
    c = torch.ones(16, 16, device=DEVICE)
    ex.matmul_split_k_kernel[(1, 1, 2)](
        a, b, c, 16, 16, 128, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        64, BLOCK_M=16, BLOCK_N=16, BLOCK_K=64, ATOMIC=True, INT64=False)
    torch.testing.assert_close(c, 1 + a @ b, **tol(128))


@pytest.mark.parametrize("int64", [False, True])
def test_store_path_writes_every_element(int64):
    # INT64 only widens the index arithmetic: the same kernel, the same result
    a, b = operands(70, 90, 64)
    c = torch.full((70, 90), float("nan"), device=DEVICE)
    ex.matmul_split_k_kernel[(2, 2, 1)](
        a, b, c, 70, 90, 64, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        64, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, ATOMIC=False, INT64=int64)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c, a @ b, **tol(64))


def test_int64_kernel_with_atomics_and_strides():
    a = torch.randn(300, 40, device=DEVICE).t()  # stride_ak = 40: cast to int64 inside the kernel
    b = torch.randn(300, 70, device=DEVICE)[:, ::2]
    c = torch.zeros(40, 35, device=DEVICE)
    ex.matmul_split_k_kernel[(2, 3, 3)](
        a, b, c, 40, 35, 300, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        128, BLOCK_M=32, BLOCK_N=16, BLOCK_K=32, ATOMIC=True, INT64=True)
    torch.testing.assert_close(c, a @ b, **tol(300))


LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t().contiguous().t(),
    "padded rows big[:, :K]": lambda t: torch.cat([t, torch.randn_like(t)[:, :5]], dim=1)[:, :t.shape[1]],
    "storage offset big[3:]": lambda t: torch.cat([torch.randn_like(t)[:3], t])[3:],
    "expanded (stride 0)": lambda t: t[:1].expand_as(t),
}


@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed", "expanded (stride 0)"])
def test_layouts(layout_a, layout_b):
    a0, b0 = operands(37, 29, 300)
    a, b = LAYOUTS[layout_a](a0), LAYOUTS[layout_b](b0)
    assert a.shape == (37, 300) and b.shape == (300, 29)
    torch.testing.assert_close(ex.matmul_split_k(a, b, split_k=3), ex.matmul_split_k_torch(a, b), **tol(300))


@pytest.mark.parametrize("split_k", [1, 4])
def test_nan_and_inf_propagate_like_torch(split_k):
    # NaN anywhere in a row of A makes that row of C NaN; +inf and -inf in one dot product give NaN,
    # in any order of the slices; large finite values stay finite in fp32.
    # small integers: exact in tf32 (the GPU's fp32 dot) and in every partial sum, so slices cannot differ
    a = torch.randint(-3, 4, (9, 512), device=DEVICE).float()
    b = torch.randint(-3, 4, (512, 7), device=DEVICE).float()
    a[1, 17] = float("nan")
    b[300, 2] = float("inf")  # column 2 of C: +-inf, or NaN where a row's two infinities meet
    a[4, 10], a[4, 400] = float("inf"), float("-inf")
    b[10, 5], b[400, 5] = 1.0, 1.0  # C[4, 5]: inf + -inf = NaN
    a[6] = 2.0**100  # products of 2**100 and small integers: exact and finite in fp32
    got = ex.matmul_split_k(a, b, split_k=split_k)
    want = ex.matmul_split_k_torch(a, b)
    assert torch.isnan(want[1]).all() and torch.isnan(want[4, 5]) and want[6, 3:].isfinite().all()
    assert want[:, 2].isinf().any()
    torch.testing.assert_close(got, want, equal_nan=True, **tol(512))


# ---- limits, decided before the launch (meta tensors: a shape, no memory) ------------

def meta(*shape):
    return torch.empty(*shape, device="meta", dtype=torch.float16)


def plan(a, b, block_m=64, block_n=128, block_k=64, split=1):
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    k_per_split = ex.triton.cdiv(ex.triton.cdiv(k, split), block_k) * block_k
    grid = (ex.triton.cdiv(m, block_m), ex.triton.cdiv(n, block_n), ex.triton.cdiv(k, k_per_split))
    return ex.needs_int64(a, b, grid, block_m, block_n, block_k, k_per_split)


def test_small_operands_keep_int32():
    a, b = operands(127, 255, 33)
    assert plan(a, b) is False
    assert plan(meta(2**15, 2**16), meta(2**16, 16)) is False  # A reaches exactly 2**31 - 1


@pytest.mark.parametrize("a, b", [
    (meta(2**15 + 1, 2**16), meta(2**16, 16)),  # A past 2**31
    (meta(2**16, 2**15 + 1).t(), meta(2**16, 16)),  # a transposed A past 2**31: stride_ak = 2**15 + 1
    (meta(2, 2**25).t(), meta(2, 16)),  # A reaches 2**26 - 1, but one K step is 64 * 2**25 = 2**31
    (meta(64, 2**16), meta(2**16, 2**15 + 1)),  # B past 2**31
    (meta(2**16, 64), meta(64, 2**15 + 1)),  # C: 2**16 x (2**15 + 1) elements
    (meta(1, 1).expand(2**31 + 1, 64), meta(64, 16)),  # stride-0 A: the row index itself passes 2**31
])
def test_large_offsets_pick_int64(a, b):
    assert plan(a, b) is True


def test_grid_limits_are_refused_before_the_launch():
    with pytest.raises(ValueError, match="the grid \\(1, 65536, 1\\) .* is too large"):
        ex.matmul_split_k(meta(1, 16), meta(16, 65536 * 16), block_n=16, split_k=1)
    with pytest.raises(ValueError, match="the grid \\(1, 1, 65536\\) .* is too large"):
        ex.matmul_split_k(meta(1, 65536 * 16), meta(65536 * 16, 16), block_k=16, split_k=65536)


def test_empty_dims():
    a, b = operands(3, 4, 0)
    assert torch.equal(ex.matmul_split_k(a, b), torch.zeros(3, 4, device=DEVICE))
    a, b = operands(0, 4, 8)
    assert ex.matmul_split_k(a, b).shape == (0, 4)


def test_pick_split_k():
    assert ex.pick_split_k(4096, 4096, 4096, 132) == 1  # plenty of tiles already
    assert ex.pick_split_k(256, 256, 8192, 132) == 16  # 8 tiles: slices fill the GPU
    assert ex.pick_split_k(256, 256, 1024, 132) == 2  # short K: slices stay >= 8 blocks long
    assert ex.pick_split_k(128, 128, 16384, 132) == 32


def x_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "a, b, err, words",
    [
        ([[1.0]], x_(1, 1), TypeError, "a must be a torch.Tensor"),
        (x_(2, 3), x_(3, 2).to(torch.int32), TypeError, "b must be float16"),
        (x_(2, 3, 1), x_(3, 2), ValueError, "a must be 2-D"),
        (x_(2, 3), x_(4, 2), ValueError, "do not chain"),
        (x_(2, 3), x_(3, 2, dtype=torch.float16), TypeError, "same dtype"),
    ],
)
def test_bad_inputs(a, b, err, words):
    with pytest.raises(err, match=words):
        ex.matmul_split_k(a, b)


@pytest.mark.parametrize("kw, words", [({"split_k": 0}, "split_k must be a positive int"),
                                       ({"block_k": 8}, "block_k must be a power of two >= 16"),
                                       ({"block_m": 48}, "block_m must be a power of two >= 16")])
def test_bad_settings(kw, words):
    with pytest.raises(ValueError, match=words):
        ex.matmul_split_k(x_(4, 4), x_(4, 4), **kw)


def test_bench_case_runs():
    case = cases.bench_case("split_k_fp16", "triton", 300, m=33, n=17)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
    assert case["work"] == 2 * 33 * 17 * 300


def test_self_check_runs(capsys):
    ex.self_check(shapes=((5, 7, 130),))
    assert "matches a @ b" in capsys.readouterr().out


@requires_gpu
def test_atomic_order_is_not_reproducible_but_close():
    # On a GPU the slices finish in a different order each run: results may differ in the last bits,
    # never by more than the tolerance. (The interpreter runs programs in order: always identical.)
    a, b = operands(64, 64, 65536)
    runs = [ex.matmul_split_k(a, b, split_k=32) for _ in range(5)]
    for r in runs[1:]:
        torch.testing.assert_close(r, runs[0], rtol=1e-5, atol=1e-3)


@requires_gpu
def test_fp16_and_bf16_on_gpu():
    for dtype in (torch.float16, torch.bfloat16):
        a, b = operands(256, 256, 16384, dtype)
        torch.testing.assert_close(ex.matmul_split_k(a, b), ex.matmul_split_k_torch(a, b), rtol=1e-2, atol=0.5)


def test_interpreter_is_deterministic():
    if ON_GPU:
        pytest.skip("on a GPU the order of the atomic adds varies")
    a, b = operands(16, 16, 512)
    assert torch.equal(ex.matmul_split_k(a, b, split_k=8), ex.matmul_split_k(a, b, split_k=8))


@requires_gpu
def test_gpu_operand_past_2_31_elements():
    # A of 64 x (2**25 + 64) fp16 elements (4.3 GB): its last rows start past offset 2**31, so the
    # launcher picks int64 offsets. Small integers keep every product and partial sum exact in fp32.
    m, k, n = 64, 2**25 + 64, 16
    try:
        a = torch.randint(-2, 3, (m, k), device=DEVICE, dtype=torch.int8).half()
        b = torch.randint(-2, 3, (k, n), device=DEVICE, dtype=torch.int8).half()
        assert ex.needs_int64(a, b, (1, 1, 256), 64, 128, 64, ex.triton.cdiv(k, 256 * 64) * 64)
        got = ex.matmul_split_k(a, b)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        a = b = None
        torch.cuda.empty_cache()
        pytest.skip("needs about 6 GB of free GPU memory")
    try:
        want = torch.zeros(m, n, device=DEVICE, dtype=torch.float64)
        for s in range(0, k, 2**22):  # the reference in slices of K, in float64
            want += a[:, s:s + 2**22].double() @ b[s:s + 2**22].double()
        assert torch.equal(got.double(), want)
    finally:
        a = b = got = None
        torch.cuda.empty_cache()
