import pytest
import softmax as ex
import torch
import triton
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, ON_GPU, requires_gpu, tolerances

from benchmarks.cases import softmax as cases

# the online step is run with small chunks so that every shape spans several of them
ONLINE_SMALL = {"block_n": 64}


def rows(m, n, dtype=torch.float32, scale=5.0):
    return (scale * torch.randn(m, n, device=DEVICE)).to(dtype)


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_launcher_matches_torch(n, dtype):
    x = rows(5, n, dtype)
    torch.testing.assert_close(ex.softmax(x), ex.softmax_torch(x), **tolerances(dtype))


@pytest.mark.parametrize("variant", ex.VARIANTS)
@pytest.mark.parametrize("m, n", [(1, 1), (3, 17), (9, 127), (2, 781), (3, 1025)])
def test_every_step_matches_torch(variant, m, n):
    x = rows(m, n)
    cfg = ONLINE_SMALL if variant == "online" else {}
    torch.testing.assert_close(ex.softmax(x, variant, **cfg), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ex.VARIANTS)
def test_fp16_every_step(variant):
    x = rows(7, 300, torch.float16)
    cfg = ONLINE_SMALL if variant == "online" else {}
    out = ex.softmax(x, variant, **cfg)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, ex.softmax_torch(x), **tolerances(torch.float16))


@pytest.mark.parametrize("reverse", [True, False])
@pytest.mark.parametrize("num_programs", [1, 3, 100])
def test_online_grid_and_direction(reverse, num_programs):
    # fewer programs than rows: each program loops over several rows
    x = rows(7, 200)
    out = ex.softmax(x, "online", block_n=32, num_programs=num_programs, reverse=reverse)
    torch.testing.assert_close(out, ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_online_increasing_and_decreasing_rows():
    # the running max changes in every chunk (increasing) or never (decreasing)
    ramp = torch.linspace(-20, 20, 333, device=DEVICE)
    x = torch.stack([ramp, ramp.flip(0), 50 * torch.randn(333, device=DEVICE)])
    out = ex.softmax(x, "online", block_n=16)
    torch.testing.assert_close(out, ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows_per_program, num_programs", [(1, None), (4, None), (4, 2), (16, 1)])
def test_multirow_tiles_and_persistent_grid(rows_per_program, num_programs):
    x = rows(37, 100)  # 37 rows: the last tile is ragged
    cfg = {"rows": rows_per_program}
    if num_programs:
        cfg["num_programs"] = num_programs
    torch.testing.assert_close(ex.softmax(x, "multirow", **cfg), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", [None, *ex.VARIANTS])
def test_row_strided_view(variant):
    base = torch.randn(11, 2 * 333, device=DEVICE)
    x = base[::2, 5:338]  # rows 1332 elements apart, unit column stride
    assert not x.is_contiguous() and x.stride() == (1332, 1)
    cfg = ONLINE_SMALL if variant == "online" else {}
    torch.testing.assert_close(ex.softmax(x, variant, **cfg), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_huge_values_do_not_overflow():
    # exp(1000) overflows fp32: only the max subtraction keeps this finite
    x = torch.tensor([[1000.0, 999.0, -1000.0], [-5e4, -5e4, -5e4]], device=DEVICE)
    for variant in ex.VARIANTS:
        out = ex.softmax(x, variant, block_n=4) if variant == "online" else ex.softmax(x, variant)
        torch.testing.assert_close(out, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)


def test_minus_inf_entries_are_zero():
    # masked attention scores: -inf entries get probability 0
    x = torch.randn(4, 50, device=DEVICE)
    x[:, ::3] = float("-inf")
    for variant in ex.VARIANTS:
        cfg = {"block_n": 16} if variant == "online" else {}
        torch.testing.assert_close(ex.softmax(x, variant, **cfg), torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("variant", ex.VARIANTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_nan_and_inf_rows_match_torch(variant, dtype):
    # torch.softmax: a NaN or a +inf anywhere in a row makes the whole row NaN (+inf - +inf),
    # a row of only -inf is NaN too (-inf - -inf), and -inf entries next to finite ones are 0.
    x = rows(8, 45, dtype)
    x[0, 7] = NAN
    x[1, 44] = INF
    x[2, :] = -INF
    x[3, ::2] = -INF
    x[4, 3], x[4, 30] = INF, -INF
    x[5, 0], x[5, 1] = INF, INF
    x[6, 10], x[6, 11] = NAN, INF
    big = torch.finfo(dtype).max
    x[7, :3] = torch.tensor([big, -big, big / 2], dtype=dtype)  # finite, but x - max overflows to -inf
    cfg = {"block_n": 16} if variant == "online" else {}  # several chunks: the specials land in different ones
    got = ex.softmax(x, variant, **cfg)
    want = torch.softmax(x.float(), dim=-1).to(dtype)
    assert torch.isnan(want[[0, 1, 2, 4, 5, 6]]).all() and not torch.isnan(want[[3, 7]]).any()
    torch.testing.assert_close(got, want, equal_nan=True, **tolerances(dtype))


@pytest.mark.parametrize("variant", ex.VARIANTS)
def test_expanded_and_offset_views(variant):
    # stride 0 (every row is the same row), a storage offset, and a (M, 1) column with stride (1, M)
    cfg = {"block_n": 16} if variant == "online" else {}
    base = rows(1, 53)
    big = rows(12, 53)
    for x in (base.expand(6, 53), big[3:], big[3:, 5:40], rows(1, 9).t()):
        torch.testing.assert_close(ex.softmax(x, variant, **cfg), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ex.VARIANTS)
def test_rows_sum_to_one(variant):
    x = rows(13, 301)
    cfg = ONLINE_SMALL if variant == "online" else {}
    torch.testing.assert_close(ex.softmax(x, variant, **cfg).sum(dim=1), torch.ones(13, device=DEVICE),
                               rtol=1e-5, atol=1e-5)


def test_row_kernel_writes_every_element_of_a_poisoned_output():
    # call the kernel directly on a NaN-filled output
    x = rows(6, 781)
    y = torch.full_like(x, float("nan"))
    ex.softmax_row_kernel[(6,)](x, y, 781, x.stride(0), y.stride(0), BLOCK_N=1024)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_multirow_kernel_writes_every_element_of_a_poisoned_output():
    x = rows(10, 100)  # 3 tiles of 4 rows, the last one ragged
    y = torch.full_like(x, float("nan"))
    ex.softmax_multirow_kernel[(3,)](x, y, 10, 100, x.stride(0), y.stride(0), ROWS=4, BLOCK_N=128)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_online_kernel_writes_every_element_of_a_poisoned_output():
    x = rows(5, 300)
    y = torch.full_like(x, float("nan"))
    ex.softmax_online_kernel[(2,)](x, y, 5, 300, x.stride(0), y.stride(0), BLOCK_N=64, REVERSE=True)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_pick_variant():
    assert ex.pick_variant(100) == "multirow"
    assert ex.pick_variant(1024) == "row"
    assert ex.pick_variant(ex.MAX_ROW_BLOCK) == "row"
    assert ex.pick_variant(ex.MAX_ROW_BLOCK + 1) == "online"
    # on a GPU (an SM count given), long rows are split when all their chunks fit at once
    assert ex.pick_variant(1024, sm_count=132) == "row"
    assert ex.pick_variant(65536, sm_count=132) == "split"
    assert ex.pick_variant(132 * ex.SPLIT_BLOCK, sm_count=132) == "split"
    assert ex.pick_variant(132 * ex.SPLIT_BLOCK + 1, sm_count=132) == "online"


def test_zero_rows():
    x = torch.randn(0, 10, device=DEVICE)
    assert ex.softmax(x).shape == (0, 10)


def x_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([[1.0]], TypeError, "x must be a torch.Tensor"),
        (x_(2, 3).to(torch.int32), TypeError, "x must be float16, bfloat16 or float32"),
        (x_(2, 3, dtype=torch.float64), TypeError, "x must be float16, bfloat16 or float32"),
        (x_(6), ValueError, "x must be 2-D"),
        (x_(2, 3, 4), ValueError, "x must be 2-D"),
        (x_(3, 0), ValueError, "at least one column"),
        (x_(4, 6)[:, ::2], ValueError, "unit stride along its last dim"),
        (x_(6, 4).t(), ValueError, "unit stride along its last dim"),
    ],
)
def test_bad_inputs(x, err, words):
    with pytest.raises(err, match=words):
        ex.softmax(x)


# Meta tensors have a shape and no memory: the launcher's limits are checked before anything launches.
def meta(m, n):
    return torch.empty(1, n, device="meta", dtype=torch.float16).expand(m, n)


def test_row_step_refuses_more_rows_than_a_grid_holds():
    with pytest.raises(ValueError, match="variant 'row' launches one program per row and chunk: at most "
                                         "2\\*\\*31 - 1, got 2147483648 rows"):
        ex.softmax(meta(2**31, 300), "row")


def test_launch_limits_accept_what_they_can_run():
    ex._check_launch("row", 2**31 - 1, 512, 1)
    ex._check_launch("online", 2**40, 16384, 1)  # online loops over rows on a persistent grid
    ex._check_launch("multirow", 2**40, 16, 64)  # multirow loops over row blocks: any number of rows
    ex._check_launch("multirow", 8, 256, 4096)  # exactly 2**20 elements in one tile


@pytest.mark.parametrize("variant, cfg, words", [
    ("row", {"block_n": 2**21}, "'row' would hold 1 x 2097152 elements in one tile"),
    ("multirow", {"rows": 512}, "'multirow' would hold 512 x 4096 elements in one tile"),
    ("online", {"block_n": 2**21}, "'online' would hold 1 x 2097152 elements in one tile"),
])
def test_tiles_past_tritons_limit_are_refused(variant, cfg, words):
    with pytest.raises(ValueError, match=words):
        ex.softmax(x_(2, 3000), variant, **cfg)


def test_bad_variant_and_config():
    with pytest.raises(ValueError, match="variant must be one of"):
        ex.softmax(x_(2, 3), "fast")
    with pytest.raises(ValueError, match="needs block_n >= N"):
        ex.softmax(x_(2, 300), "row", block_n=256)
    with pytest.raises(ValueError, match="block_n must be a positive power of two"):
        ex.softmax(x_(2, 300), "online", block_n=100)
    with pytest.raises(ValueError, match="rows must be a positive power of two"):
        ex.softmax(x_(2, 30), "multirow", rows=3)
    with pytest.raises(TypeError, match="unknown config"):
        ex.softmax(x_(2, 3), "row", rows=4)


@pytest.mark.parametrize("provider", ["triton", "triton-row", "triton-multirow", "triton-online", "torch-unfused"])
def test_bench_case_runs(provider):
    case = cases.bench_case("softmax_fp32", provider, 781, elements=781 * 3)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
    assert case["work"] == 2 * 3 * 781 * 4


def test_benchmarks_cover_the_story():
    specs = {b["name"]: b for b in cases.BENCHMARKS}
    assert {"softmax_fp32", "softmax_fp32_steps", "softmax_fp32_4096rows"} <= set(specs)
    assert {65536, 262144} <= set(specs["softmax_fp32"]["x_vals"])
    assert max(specs["softmax_fp32_steps"]["x_vals"]) <= ex.MAX_ROW_BLOCK  # steps 1-2 need the row in one tile


def test_unfused_reference_agrees():
    x = rows(4, 300)
    torch.testing.assert_close(ex.softmax_unfused(x), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


def test_self_check_runs(capsys):
    ex.self_check(shapes=((2, 33),))
    assert "match torch.softmax" in capsys.readouterr().out


@requires_gpu
def test_bf16_on_gpu():
    x = rows(64, 3000, torch.bfloat16)
    for variant in ex.VARIANTS:
        torch.testing.assert_close(ex.softmax(x, variant), ex.softmax_torch(x), **tolerances(torch.bfloat16))


@requires_gpu
@pytest.mark.parametrize("n", [32768, 65536, 262144])
def test_long_rows_on_gpu(n):
    x = rows(300, n)
    torch.testing.assert_close(ex.softmax(x), ex.softmax_torch(x), rtol=1e-5, atol=1e-7)


@requires_gpu
@pytest.mark.parametrize("n, variant, expanded", [
    (4096, "row", False), (4096, "row", True), (256, "multirow", False), (4096, "online", False),
    (65536, None, False),
])
def test_more_than_2_to_31_elements_on_gpu(n, variant, expanded):
    # row * stride passes 2^31 in the last rows: the kernels compute row offsets in int64.
    # expanded: a single row read 2^31 / n + 3 times (stride 0), written to a 4 GB output.
    m = 2**31 // n + 3
    try:
        if expanded:
            x = torch.randn(1, n, device=DEVICE, dtype=torch.float16).expand(m, n)
        else:
            x = torch.empty(m, n, device=DEVICE, dtype=torch.float16).normal_()
        y = ex.softmax(x, variant)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        x = y = None  # free what was allocated before skipping
        torch.cuda.empty_cache()
        pytest.skip("not enough GPU memory for 2^31 fp16 elements, twice")
    try:
        for i in (0, m // 2, m - 4, m - 3, m - 2, m - 1):  # row m - 3 starts past 2^31
            torch.testing.assert_close(y[i], ex.softmax_torch(x[i:i + 1])[0], **tolerances(torch.float16))
    finally:
        del x, y
        torch.cuda.empty_cache()


@requires_gpu
def test_one_row_past_2_to_31_elements_on_gpu():
    # a single row of 2^31 + 77 elements: n_cols is an int64 argument and the online kernel's
    # chunk loop counts in int64. All -inf but two values, so the answer is known exactly.
    n = 2**31 + 77
    try:
        x = torch.full((1, n), float("-inf"), device=DEVICE, dtype=torch.float16)
        x[0, 5], x[0, n - 3] = 0.0, 1.0
        y = ex.softmax(x)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        x = y = None
        torch.cuda.empty_cache()
        pytest.skip("not enough GPU memory for two rows of 2^31 fp16 elements")
    try:
        e = torch.e
        torch.testing.assert_close(y[0, [5, n - 3]].float(), torch.tensor([1 / (1 + e), e / (1 + e)], device=DEVICE),
                                   **tolerances(torch.float16))
        assert y[0, :5].eq(0).all() and y[0, 6:n - 3].count_nonzero() == 0 and y[0, n - 2:].eq(0).all()
    finally:
        del x, y
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------- step 4: split rows (GPU only)
requires_interpreter = pytest.mark.skipif(ON_GPU, reason="shows the interpreter's one-program-at-a-time order")


@requires_interpreter
def test_split_is_refused_in_the_interpreter():
    with pytest.raises(ValueError, match="variant 'split' needs a GPU"):
        ex.softmax(x_(2, 300), "split")


@requires_interpreter
@pytest.mark.parametrize("n, block_n", [(300, 512), (300, 64), (1000, 128), (129, 128)])
def test_split_kernel_in_the_interpreter(n, block_n):
    # Programs run one after another here, in ticket order: the last chunk of each row finds every
    # chunk published and is right; the others cannot wait (max_spins=0), give up and write NaN.
    m = 3
    x, n_chunks = rows(m, n), triton.cdiv(n, block_n)
    y = torch.zeros_like(x)
    stats = torch.empty(m * n_chunks * 2)
    sync = torch.zeros(m + 1, dtype=torch.int32)
    ex.softmax_split_kernel[(m * n_chunks,)](x, y, stats, sync, m, n, x.stride(0), y.stride(0), n_chunks, 0,
                                             BLOCK_N=block_n, MAX_CHUNKS=triton.next_power_of_2(n_chunks))
    last = (n_chunks - 1) * block_n
    torch.testing.assert_close(y[:, last:], ex.softmax_torch(x)[:, last:], rtol=1e-5, atol=1e-6)
    assert torch.isnan(y[:, :last]).all()
    assert sync.tolist() == [n_chunks] * m + [m * n_chunks]  # every chunk counted in, every ticket taken


def test_split_refuses_more_chunks_than_sms():
    assert ex._split_chunks(65536, 8192, sm_count=132) == 8
    assert ex._split_chunks(132 * 16, 16, sm_count=132) == 132
    with pytest.raises(ValueError, match="needs all 133 chunks of a row .* than its 132 SMs: use a larger block_n"):
        ex._split_chunks(132 * 16 + 1, 16, sm_count=132)


def test_split_refuses_more_programs_than_a_grid_holds():
    with pytest.raises(ValueError, match="variant 'split' launches one program per row and chunk: at most "
                                         "2\\*\\*31 - 1, got 268435456 rows x 8 chunks"):
        ex._check_launch("split", 2**28, 8192, 1, 8)
    ex._check_launch("split", 2**28 - 1, 8192, 1, 8)  # 2**31 - 8 programs


@requires_gpu
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("m, n, block_n", [
    (1, 1, None), (5, 781, None), (3, 8193, None), (7, 65536, None), (4, 65537, None), (2, 100_003, None),
    (3, 262_144, None), (64, 5000, 128), (2, 40_000, 512),
])
def test_gpu_split_matches_torch(dtype, m, n, block_n):
    x = rows(m, n, dtype)
    cfg = {"block_n": block_n} if block_n else {}
    torch.testing.assert_close(ex.softmax(x, "split", **cfg), ex.softmax_torch(x), **tolerances(dtype))


def test_split_warps_depend_on_the_chunk_count():
    # 4 warps up to 8 chunks a row (N = 65536 with 8192-element chunks), 8 beyond: the run23 probe's fastest
    assert [ex._split_warps(c) for c in (1, 8, 9, 32, 132)] == [4, 4, 8, 8, 8]
    assert triton.cdiv(65536, ex.SPLIT_BLOCK) == ex.SPLIT_FEW_CHUNKS


@requires_gpu
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8, 16, 32])
def test_gpu_split_every_warp_count(num_warps):
    # the defaults (SPLIT_WARPS) and every other count, on a row with a ragged last chunk
    x = rows(3, 3 * ex.SPLIT_BLOCK + 5)
    torch.testing.assert_close(ex.softmax(x, "split", num_warps=num_warps), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@requires_gpu
def test_gpu_launcher_splits_long_rows():
    x = rows(16, 65536)
    assert ex.pick_variant(65536, torch.cuda.get_device_properties(DEVICE).multi_processor_count) == "split"
    torch.testing.assert_close(ex.softmax(x), ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@requires_gpu
def test_gpu_split_views_and_specials():
    base = rows(9, 70_000)
    strided = base[:, 5:65_541]  # rows 70000 apart, offset start
    torch.testing.assert_close(ex.softmax(strided, "split"), ex.softmax_torch(strided), rtol=1e-5, atol=1e-6)
    expanded = rows(1, 40_000).expand(6, 40_000)  # every row the same memory (row stride 0)
    torch.testing.assert_close(ex.softmax(expanded, "split"), ex.softmax_torch(expanded), rtol=1e-5, atol=1e-6)
    x = rows(5, 50_000)
    x[0, 17] = float("nan")  # a NaN row is NaN everywhere, as in torch
    x[1, 40_000] = float("inf")
    x[2, :] = float("-inf")  # all -inf: NaN, as in torch
    x[3, 8192:] = float("-inf")  # whole chunks of -inf: those chunks are zeros
    torch.testing.assert_close(ex.softmax(x, "split", block_n=1024), ex.softmax_torch(x), rtol=1e-5, atol=1e-6,
                               equal_nan=True)


@requires_gpu
def test_gpu_split_with_far_more_programs_than_fit_at_once():
    # 8192 rows x 32 chunks = 262144 programs: tickets, not program ids, keep every wait finite
    x = rows(8192, 4096)
    out = ex.softmax(x, "split", block_n=128)
    torch.testing.assert_close(out, ex.softmax_torch(x), rtol=1e-5, atol=1e-6)


@requires_gpu
def test_gpu_split_refuses_more_chunks_than_sms():
    sms = torch.cuda.get_device_properties(DEVICE).multi_processor_count
    with pytest.raises(ValueError, match="use a larger block_n or 'online'"):
        ex.softmax(rows(2, 16 * sms + 1), "split", block_n=16)
