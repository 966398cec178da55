import persistent_rows as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, requires_gpu, tolerances

from benchmarks.cases import persistent_rows as cases

LAUNCHERS = {"rows": ex.rms_norm_rows, "persistent": ex.rms_norm_persistent}


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("shape", [(1, 1), (17, 33), (127, 255), (3, 1025), (23, 781)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_matches_torch(launcher, shape, dtype):
    x, w = rand(*shape, dtype=dtype), rand(shape[1], dtype=dtype)
    out = LAUNCHERS[launcher](x, w)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out, ex.rms_norm_torch(x, w), **tolerances(dtype))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_row_strided_input(launcher):
    base = rand(19, 48)
    x = base[:, 5:38]  # (19, 33), row stride 48
    w = rand(33)
    torch.testing.assert_close(LAUNCHERS[launcher](x, w), ex.rms_norm_torch(x, w), **tolerances(x.dtype))


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_nan_inf_and_large_values_match_torch(launcher, dtype):
    x, w = rand(6, 40, dtype=dtype), rand(40, dtype=dtype)
    x[0, 7] = NAN  # the mean square is NaN: the whole row is NaN
    x[1, 3] = INF  # rms = inf: inf / inf = NaN there, finite / inf = 0 elsewhere
    x[2, 9] = -INF
    x[3, :] = torch.finfo(dtype).max  # fp16: the squares overflow fp16 but not the fp32 maths
    x[4, :] = 0.0  # rms = sqrt(eps)
    w[11] = NAN  # column 11 is NaN in every row
    got = LAUNCHERS[launcher](x, w)
    want = ex.rms_norm_torch(x, w)
    assert torch.isnan(want[0]).all() and torch.isnan(want[1, 3]) and want[1, 4] == 0
    assert torch.isnan(want[:, 11]).all()
    torch.testing.assert_close(got, want, equal_nan=True, **tolerances(dtype))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_expanded_offset_and_column_views(launcher):
    big = rand(12, 33)
    cases = [
        (rand(1, 33).expand(7, 33), rand(33)),  # stride 0: every row is the same row
        (big[5:], rand(33)),  # a storage offset
        (big[:, 4:20], rand(16)),  # padded rows
        (rand(1, 9).t(), rand(4)[:1]),  # (9, 1) with strides (1, 9); a 1-element weight view
        (rand(5, 1), rand(1).expand(1)),
    ]
    for x, w in cases:
        torch.testing.assert_close(LAUNCHERS[launcher](x, w), ex.rms_norm_torch(x, w), **tolerances(x.dtype))


def test_rows_launcher_refuses_more_rows_than_a_grid_holds():
    x = torch.empty(1, 8, device=DEVICE).expand(2**31, 8)  # a stride-0 view: nothing of that size is allocated
    with pytest.raises(ValueError, match="x has 2147483648 rows: one program per row, at most 2\\*\\*31 - 1"):
        ex.rms_norm_rows(x, torch.empty(8, device=DEVICE))


@pytest.mark.parametrize("programs_per_sm", [None, 1, 2, 7])
def test_programs_per_sm(programs_per_sm):
    x, w = rand(29, 40), rand(40)
    out = ex.rms_norm_persistent(x, w, programs_per_sm=programs_per_sm)
    torch.testing.assert_close(out, ex.rms_norm_torch(x, w), **tolerances(x.dtype))


@pytest.mark.parametrize("programs", [1, 2, 5, 7])
def test_every_row_written(programs):
    # Poison y; launch the persistent kernel with fewer programs than rows (and with
    # one program per row): a row the loop skips keeps its NaN.
    M, N = 7, 20
    x, w = rand(M, N), rand(N)
    y = torch.full_like(x, float("nan"))
    ex.rms_norm_persistent_kernel[(programs,)](x, w, y, M, N, x.stride(0), y.stride(0), 1e-6, BLOCK_N=32)
    assert not torch.isnan(y).any()
    torch.testing.assert_close(y, ex.rms_norm_torch(x, w), **tolerances(x.dtype))


def test_grid_size():
    if DEVICE.type == "cpu":
        assert ex.persistent_grid(DEVICE, 8) == 3
    else:
        sms = torch.cuda.get_device_properties(DEVICE).multi_processor_count
        assert ex.persistent_grid(DEVICE, 4) == 4 * sms


@pytest.mark.parametrize(
    "x, w, kwargs, err, words",
    [
        ([1.0], rand(1), {}, TypeError, "x must be a torch.Tensor"),
        (rand(2, 3), rand(3).to(torch.int32), {}, TypeError, "weight must be float16"),
        (rand(6), rand(6), {}, ValueError, "x must be 2-D"),
        (rand(2, 0), rand(0), {}, ValueError, "x must have 1 to"),
        (rand(1, ex.MAX_N + 1), rand(ex.MAX_N + 1), {}, ValueError, "x must have 1 to"),
        (rand(3, 4).t(), rand(3), {}, ValueError, "contiguous last dim"),
        (rand(2, 3), rand(4), {}, ValueError, "weight must be contiguous with shape"),
        (rand(2, 3), rand(6)[::2], {}, ValueError, "weight must be contiguous .* stride \\(2,\\)"),
        (rand(2, 3), rand(3, dtype=torch.float16), {}, TypeError, "same dtype"),
        (rand(2, 3), rand(3), {"eps": 0.0}, ValueError, "eps must be positive"),
    ],
)
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_bad_inputs(launcher, x, w, kwargs, err, words):
    with pytest.raises(err, match=words):
        LAUNCHERS[launcher](x, w, **kwargs)


@pytest.mark.parametrize("programs_per_sm", [0, -1, 2.0])
def test_bad_programs_per_sm(programs_per_sm):
    with pytest.raises(ValueError, match="programs_per_sm must be a positive int or None"):
        ex.rms_norm_persistent(rand(2, 3), rand(3), programs_per_sm=programs_per_sm)


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.rms_norm_rows(rand(2, 3), torch.randn(3))


@pytest.mark.parametrize("provider", ["triton", "triton-persistent", "torch"])
def test_bench_cases_tiny(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x, device=DEVICE)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check(shapes=((5, 9),))
    assert "one-program-per-row and persistent" in capsys.readouterr().out


@requires_gpu
def test_warp_occupancy():
    # Hopper has 64 warp slots but at most 32 resident blocks per SM: 32 one-warp programs (not 64),
    # 16 four-warp programs, 4 sixteen-warp programs.
    props = torch.cuda.get_device_properties(DEVICE)
    slots = props.max_threads_per_multi_processor // 32
    blocks = ex.MAX_BLOCKS_PER_SM.get((props.major, props.minor), 16)
    assert ex.warp_occupancy(DEVICE, 1) == min(slots, blocks) and ex.warp_occupancy(DEVICE, 16) == slots // 16


def test_warp_occupancy_counts_warps_and_blocks(monkeypatch):
    # An sm_90 SM: 2048 threads (64 warps), 32 resident blocks. An unknown GPU gets the smallest block limit.
    import types

    def props(major, minor):
        return lambda index: types.SimpleNamespace(max_threads_per_multi_processor=2048, major=major, minor=minor)

    gpu = torch.device("cuda", 0)
    monkeypatch.setattr(ex, "gpu_props", props(9, 0))  # the launchers' cached device-property query
    assert [ex.warp_occupancy(gpu, w) for w in (1, 2, 4, 16, 32)] == [32, 32, 16, 4, 2]
    monkeypatch.setattr(ex, "gpu_props", props(99, 0))
    assert ex.warp_occupancy(gpu, 1) == 16


@requires_gpu
@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("shape", [(100_003, 64), (263, 32768), (1, 4096)])
def test_gpu_large(launcher, shape):
    # Many more rows than the persistent grid; the longest rows use 16 warps.
    x, w = rand(*shape), rand(shape[1])
    torch.testing.assert_close(LAUNCHERS[launcher](x, w), ex.rms_norm_torch(x, w), rtol=1e-5, atol=1e-5)


@requires_gpu
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_gpu_output_past_2_31_elements(launcher):
    # One row read 2^31 / 4096 + 3 times (stride 0), written to a 4.3 GB fp16 output:
    # row * stride_ym passes 2^31 in the last rows.
    n = 4096
    m = 2**31 // n + 3
    row, w = rand(1, n, dtype=torch.float16), rand(n, dtype=torch.float16)
    want = ex.rms_norm_torch(row, w)[0]
    try:
        y = LAUNCHERS[launcher](row.expand(m, n), w)
        torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        y = None
        torch.cuda.empty_cache()
        pytest.skip("needs 4.3 GB of free GPU memory")
    try:
        for i in (0, m - 4, m - 3, m - 1):  # row m - 3 starts past 2^31
            torch.testing.assert_close(y[i], want, **tolerances(torch.float16))
    finally:
        y = None
        torch.cuda.empty_cache()
