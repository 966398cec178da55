import matmul_persistent as ex
import pytest
import torch

from conftest import DEVICE, FLOAT_DTYPES, requires_gpu, tolerances

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


@pytest.mark.parametrize("variant", ["tiles", "persistent", "tma"])
def test_every_element_written(variant):
    # Poison C and launch the raw kernel: a tile the grid never visits keeps its NaN.
    M, N, K = 97, 120, 48  # 4 x 4 = 16 tiles of 32 x 32 on the CPU, 4 per persistent program
    a, b = rand(M, K), rand(K, N)
    c = torch.full((M, N), float("nan"), device=DEVICE, dtype=a.dtype)
    cfg = ex.matmul_configs(variant)[0]
    meta = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    tiles = ex.triton.cdiv(M, meta["BLOCK_M"]) * ex.triton.cdiv(N, meta["BLOCK_N"])
    grid = (tiles,) if variant == "tiles" else (min(tiles, ex.num_persistent_programs(DEVICE)),)
    if variant == "tma":
        if DEVICE.type == "cuda":
            ex.triton.set_allocator(ex._cuda_scratch)
        ex.matmul_tma_kernel[grid](a, b, c, M, N, K, **meta)
    else:
        kernel = ex.matmul_tiles_kernel if variant == "tiles" else ex.matmul_persistent_kernel
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), **meta)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c, ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))


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


def test_tma_compatible():
    assert ex.tma_compatible(rand(3, 8))
    assert not ex.tma_compatible(rand(3, 7))  # 14-byte rows
    assert not ex.tma_compatible(rand(8, 3).t())  # last dim not contiguous
    assert not ex.tma_compatible(rand(3, 16)[:, 1:])  # base 2 bytes past an aligned address


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
    ],
)
def test_bad_inputs(a, b, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.matmul_persistent(a, b, **kwargs)


@pytest.mark.skipif(DEVICE.type != "cuda", reason="needs a GPU and a CPU tensor side by side")
def test_mixed_devices():
    with pytest.raises(ValueError, match="same device"):
        ex.matmul_persistent(m_(4, 4), torch.randn(4, 4))


@pytest.mark.parametrize("spec", [s for s in ex.BENCHMARKS if s["tiny_x_vals"]], ids=lambda s: s["name"])
def test_bench_cases_tiny(spec):
    for x in spec["tiny_x_vals"]:
        for provider in spec["providers"]:
            case = ex.bench_case(spec["name"], provider, x, device=DEVICE, **spec["args"])
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
def test_gpu_misaligned_base_falls_back():
    # A view starting 2 bytes into an allocation cannot feed a tensor descriptor.
    buf = rand(65 * 64 + 1)
    a = buf[1:].view(65, 64)
    b = rand(64, 64)
    assert not ex.tma_compatible(a)
    with pytest.raises(ValueError, match="variant='tma' needs"):
        ex.matmul_persistent(a, b, variant="tma")
    torch.testing.assert_close(ex.matmul_persistent(a, b), ex.matmul_torch(a, b), **tolerances(a.dtype, matmul=True))
