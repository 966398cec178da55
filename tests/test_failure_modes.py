import json
import os
import subprocess
import sys
from pathlib import Path

import failure_modes as ex
import pytest
import torch
from support import DEVICE, FLOAT_DTYPES, ODD_SIZES, requires_gpu, tolerances
from triton.runtime.errors import OutOfResources

from benchmarks.cases import failure_modes as cases

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def x_(*shape, **kw):
    return torch.randn(*shape, device=DEVICE, **kw)


# ----------------------------------------------------------------------------- 1. int32 offsets
def test_int32_offsets_wrap_at_2_31():
    first = 2**31 // 4 - 1  # tiles of 4: this program's last offset is 2^31 - 1
    wrapped = ex.tile_offsets(first, int64_offsets=False)
    exact = ex.tile_offsets(first, int64_offsets=True)
    assert exact == list(range(2**31 - 4, 2**31 + 4))
    assert wrapped[:4] == exact[:4]
    assert wrapped[4:] == [-(2**31), -(2**31) + 1, -(2**31) + 2, -(2**31) + 3]


def test_tile_offsets_rejects_bad_tiles():
    with pytest.raises(ValueError, match="first_tile must be in"):
        ex.tile_offsets(-1)
    with pytest.raises(ValueError, match="first_tile must be in"):
        ex.tile_offsets(2**31)
    for block_size in (0, 3, -4, 2.0, 2**21):
        with pytest.raises(ValueError, match="block_size must be a power of two from 1 to 2\\*\\*20"):
            ex.tile_offsets(5, block_size=block_size)
    for n_tiles in (0, -1, 1.5):
        with pytest.raises(ValueError, match="n_tiles must be an int from 1 to 2\\*\\*20"):
            ex.tile_offsets(5, n_tiles=n_tiles)


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.float32])
@pytest.mark.parametrize("int64_offsets", [True, False])
def test_fill_below_2_31_is_right_either_way(n, dtype, int64_offsets):
    y = torch.full((n,), -5, device=DEVICE, dtype=dtype)
    ex.fill(y, 7, int64_offsets=int64_offsets)
    assert bool((y == 7).all())


def test_fill_values_of_every_kind():
    y = torch.zeros(37, device=DEVICE)
    assert bool((ex.fill(y, 2.5) == 2.5).all())  # a float stays a float
    assert bool(ex.fill(y, float("nan")).isnan().all())
    assert bool((ex.fill(y, -float("inf")) == -float("inf")).all())
    assert bool((ex.fill(y, 2**40) == 2.0**40).all())  # an int64 argument, converted once
    i8 = torch.zeros(37, device=DEVICE, dtype=torch.int8)
    assert bool((ex.fill(i8, -128) == -128).all())
    with pytest.raises(ValueError, match="value must be an integer that torch.int8 holds, got 128"):
        ex.fill(i8, 128)
    with pytest.raises(ValueError, match="value must be an integer that torch.int8 holds, got 1.5"):
        ex.fill(i8, 1.5)
    with pytest.raises(TypeError, match="value must be an int or a float, got bool"):
        ex.fill(y, True)


# Meta tensors: a shape and no memory. The limits are checked before anything launches.
BIG = torch.empty(2**31 + 5, dtype=torch.int8, device="meta")


def test_launchers_refuse_int32_offsets_that_wrap():
    with pytest.raises(ValueError, match="y has 2147483653 elements: the last tile reaches offset 2147484671, "
                                         "and int32 offsets stop at 2\\*\\*31 - 1"):
        ex.fill(BIG, 1, int64_offsets=False)
    big = torch.empty(2**31 + 5, device="meta")
    with pytest.raises(ValueError, match="x has 2147483653 elements: .* int32 offsets stop"):
        ex.scale(big, 2.0)
    with pytest.raises(ValueError, match="x has 2147483653 elements: .* int32 offsets stop"):
        ex.add(big, big)
    ex._grid_1d("y", 2**31, 1024)  # exactly 2**31 elements: offsets up to 2**31 - 1, allowed
    assert ex._grid_1d("y", 2**31 + 5, 1024, int64_offsets=True) == 2**21 + 1


@pytest.mark.parametrize("block_size, words", [
    (1000, "block_size must be a power of two from 1 to 2\\*\\*20, got 1000"),
    (2**21, "block_size must be a power of two from 1 to 2\\*\\*20"),
    (0, "block_size must be a power of two"),
    (256.0, "block_size must be a power of two"),
])
def test_bad_block_sizes(block_size, words):
    with pytest.raises(ValueError, match=words):
        ex.fill(torch.zeros(8, device=DEVICE, dtype=torch.int8), 1, block_size=block_size)
    with pytest.raises(ValueError, match=words):
        ex.scale(x_(8), 2.0, block_size=block_size)
    with pytest.raises(ValueError, match=words):
        ex.add(x_(8), x_(8), block_size=block_size)


def test_more_tiles_than_a_grid_holds():
    with pytest.raises(ValueError, match="y has 2147483653 elements: 2147483653 tiles are more than a grid holds"):
        ex.fill(BIG, 1, block_size=1)


def test_matmul_refuses_int32_offsets_that_wrap():
    a = torch.empty(2**16, 2**15 + 1, device="meta", dtype=torch.float16)
    b = torch.empty(2**15 + 1, 8, device="meta", dtype=torch.float16)
    with pytest.raises(ValueError, match="reaches element offset 2147549183: this matmul's int32 offsets"):
        ex.matmul(a, b)
    a = torch.empty(1, 8, device="meta", dtype=torch.float16).expand(2**20, 8)  # stride 0: C is the large one
    b = torch.empty(8, 2**12, device="meta", dtype=torch.float16)
    with pytest.raises(ValueError, match="reaches element offset 4294967295"):
        ex.matmul(a, b)
    with pytest.raises(ValueError, match="b has N = 4194305 columns: more tiles than grid axis 1 holds"):
        ex.matmul(a[:1], torch.empty(8, 64 * 65535 + 65, device="meta", dtype=torch.float16))


def test_fill_bad_inputs():
    with pytest.raises(TypeError, match="y must be a torch.Tensor"):
        ex.fill([1, 2], 3)
    with pytest.raises(TypeError, match="y must have dtype in"):
        ex.fill(x_(4, dtype=torch.float16), 3)
    with pytest.raises(ValueError, match="y must be contiguous"):
        ex.fill(torch.zeros(8, device=DEVICE, dtype=torch.int8)[::2], 3)


_INT32_SCRIPT = """
import json, torch, triton, failure_modes as fm
head, n = 2**31, 2**31 + 2**22
buf = torch.zeros(head + n, device="cuda", dtype=torch.int8)  # 4 GiB: a guard region, then the tensor
y = buf[head:]
result = {}
for int64 in (True, False):
    buf.zero_()
    # the kernel itself: fill() refuses int64_offsets=False at this size
    fm.fill_kernel[(triton.cdiv(n, 1024),)](y, n, 1, BLOCK_SIZE=1024, INT64_OFFSETS=int64)
    torch.cuda.synchronize()
    result["int64" if int64 else "int32"] = [int(y[:2**31].sum()), int(y[2**31:].sum()), int(buf[:head].sum())]
print(json.dumps(result))
"""


@requires_gpu
@pytest.mark.big_gpu
def test_gpu_int32_offsets_write_before_the_tensor():
    # In a child process: had the wrapped address been outside the allocation, the illegal
    # access would have killed this process's CUDA context and every test after it.
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES))
    done = subprocess.run([sys.executable, "-c", _INT32_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # [written in the first 2^31 elements, written in the tail, written in the guard region before y]
    assert result["int64"] == [2**31, 2**22, 0]
    assert result["int32"] == [2**31, 0, 2**22]  # the tail was never written; the guard region was


# ----------------------------------------------------------------------------- 2. masks
def _guarded(n, pad=300):
    """x and out as views into larger buffers, so out-of-bounds lanes hit memory we own and can inspect."""
    xbuf = x_(n + 2 * pad)
    obuf = torch.full((n + 2 * pad,), -1.0, device=DEVICE)
    return xbuf, obuf, xbuf[pad:pad + n], obuf[pad:pad + n]


@pytest.mark.parametrize("n", [17, 781, 1000])
def test_masked_store_stays_in_bounds(n):
    xbuf, obuf, x, out = _guarded(n)
    ex.scale(x, 2.0, out=out, masked=True)
    torch.testing.assert_close(out, 2 * x)
    assert bool((obuf[:300] == -1).all()) and bool((obuf[300 + n:] == -1).all())


@pytest.mark.parametrize("n", [17, 781, 1000])
def test_missing_mask_overwrites_the_neighbours(n):
    # Neither the GPU nor the interpreter reports it: the result looks right, the neighbours are not.
    xbuf, obuf, x, out = _guarded(n)
    ex.scale(x, 2.0, out=out, masked=False)
    torch.testing.assert_close(out, 2 * x)
    spill = -n % 256  # lanes of the last 256-wide tile past the end
    torch.testing.assert_close(obuf[300 + n:300 + n + spill], 2 * xbuf[300 + n:300 + n + spill])
    assert bool((obuf[300 + n + spill:] == -1).all())


def test_nan_and_inf_match_torch():
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, 1.0], device=DEVICE)
    y = torch.tensor([1.0, -float("inf"), -float("inf"), 3e38, float("nan")], device=DEVICE)
    torch.testing.assert_close(ex.scale(x, -3.0), x * -3.0, rtol=0, atol=0, equal_nan=True)  # 3e38 * -3: -inf
    torch.testing.assert_close(ex.add(x, y), x + y, rtol=0, atol=0, equal_nan=True)  # inf - inf: NaN
    a = torch.randint(-3, 4, (5, 6), device=DEVICE).float()
    b = torch.randint(-3, 4, (6, 4), device=DEVICE).float()
    a[1, 2], a[3, 0], b[4, 3] = float("nan"), float("inf"), float("inf")
    got = ex.matmul(a, b, precision="ieee", configs=ex.MATMUL_CONFIGS[2:])
    torch.testing.assert_close(got, ex.matmul_torch(a, b), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("layout", ["transposed", "padded rows", "storage offset", "expanded"])
def test_matmul_layouts(layout):
    a, b = x_(37, 20), x_(20, 29)
    a = {"transposed": a.t().contiguous().t(), "padded rows": torch.cat([a, x_(37, 3)], 1)[:, :20],
         "storage offset": torch.cat([x_(3, 20), a])[3:], "expanded": a[:1].expand(37, 20)}[layout]
    got = ex.matmul(a, b, precision="ieee", configs=ex.MATMUL_CONFIGS[2:])
    torch.testing.assert_close(got, ex.matmul_torch(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_scale_matches_torch(n, dtype):
    x = x_(n, dtype=dtype)
    torch.testing.assert_close(ex.scale(x, -3.0), (x.float() * -3.0).to(dtype), **tolerances(dtype))


def test_scale_bad_inputs():
    with pytest.raises(ValueError, match="x must be 1-D"):
        ex.scale(x_(2, 3), 2.0)
    with pytest.raises(ValueError, match="out must match x"):
        ex.scale(x_(4), 2.0, out=x_(5))
    with pytest.raises(TypeError, match="x must have dtype in"):
        ex.scale(x_(4).to(torch.int64), 2.0)
    with pytest.raises(ValueError, match="x must be contiguous"):
        ex.scale(x_(1).expand(8), 2.0)  # stride 0
    with pytest.raises(ValueError, match="out must be contiguous"):
        ex.scale(x_(4), 2.0, out=x_(8)[::2])


# ----------------------------------------------------------------------------- 3. shared memory
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(127, 33, 255), (1, 17, 1), (64, 64, 64)])
def test_matmul_matches_reference(dtype, shape):
    m, k, n = shape
    a, b = x_(m, k, dtype=dtype), x_(k, n, dtype=dtype)
    if dtype == torch.float32:  # "ieee": fp32-accurate on both devices; the largest fp32 tiles compile slowly
        got = ex.matmul(a, b, precision="ieee", configs=ex.MATMUL_CONFIGS[2:])
        torch.testing.assert_close(got, ex.matmul_torch(a, b), rtol=1e-4, atol=1e-4)
    else:
        torch.testing.assert_close(ex.matmul(a, b), ex.matmul_torch(a, b), **tolerances(dtype, matmul=True))


def test_matmul_falls_back_when_out_of_shared_memory(monkeypatch):
    # The interpreter has no shared memory, so the error is simulated here; the GPU test below is real.
    attempts = []
    real_launch = ex._launch_matmul

    def launch(a, b, c, config, precision):
        attempts.append(config)
        if config == ex.MATMUL_CONFIGS[0]:
            raise OutOfResources(262144, 232448, "shared memory")
        return real_launch(a, b, c, config, precision)

    monkeypatch.setattr(ex, "_launch_matmul", launch)
    monkeypatch.setattr(ex, "_WORKING_CONFIG", {})
    a, b = x_(127, 33), x_(33, 255)
    torch.testing.assert_close(ex.matmul(a, b, precision="ieee"), ex.matmul_torch(a, b), rtol=1e-4, atol=1e-4)
    assert attempts == ex.MATMUL_CONFIGS[:2]
    ex.matmul(a, b, precision="ieee")  # remembered: no second failed attempt
    assert attempts == ex.MATMUL_CONFIGS[:2] + [ex.MATMUL_CONFIGS[1]]


def test_matmul_falls_back_when_the_remembered_config_fails(monkeypatch):
    # On the H200 the largest fp16 config fits for odd strides (no pipelining, 96 KiB) and is
    # remembered, then raises for aligned strides (4 stages, 384 KiB): the rest of the list must follow.
    attempts = []
    real_launch = ex._launch_matmul

    def launch(a, b, c, config, precision):
        attempts.append(config)
        aligned = all(s % 16 == 0 for s in (*a.stride()[:1], *b.stride()[:1]))
        if config == ex.MATMUL_CONFIGS[0]:
            if aligned:
                raise OutOfResources(393216, 232448, "shared memory")
            # "fits": the logic under test only sees that the launch returned. Run a config that
            # really fits on every device (fp32 tiles are twice fp16's, so on a GPU the real
            # config 0 may not fit even for odd strides).
            config = ex.MATMUL_CONFIGS[1]
        return real_launch(a, b, c, config, precision)

    monkeypatch.setattr(ex, "_launch_matmul", launch)
    monkeypatch.setattr(ex, "_WORKING_CONFIG", {})
    a, b = x_(127, 33), x_(33, 255)  # odd strides: the largest config "fits" and is remembered
    ex.matmul(a, b, precision="ieee", configs=ex.MATMUL_CONFIGS[:2])
    assert attempts == ex.MATMUL_CONFIGS[:1]
    a, b = x_(64, 64), x_(64, 64)  # aligned strides: it raises, and the next config runs
    got = ex.matmul(a, b, precision="ieee", configs=ex.MATMUL_CONFIGS[:2])
    torch.testing.assert_close(got, ex.matmul_torch(a, b), rtol=1e-4, atol=1e-4)
    assert attempts == ex.MATMUL_CONFIGS[:1] + ex.MATMUL_CONFIGS[:2]


def test_matmul_raises_when_nothing_fits(monkeypatch):
    def launch(a, b, c, config, precision):
        raise OutOfResources(10**6, 232448, "shared memory")

    monkeypatch.setattr(ex, "_launch_matmul", launch)
    monkeypatch.setattr(ex, "_WORKING_CONFIG", {})
    with pytest.raises(RuntimeError, match="no matmul config fits this device"):
        ex.matmul(x_(8, 8), x_(8, 8))


@requires_gpu
def test_gpu_large_tiles_raise_out_of_resources():
    a = x_(512, 512, dtype=torch.float16)
    b = x_(512, 512, dtype=torch.float16)
    c = torch.empty(512, 512, device=DEVICE, dtype=torch.float16)
    with pytest.raises(OutOfResources, match="out of resource: shared memory"):
        ex._launch_matmul(a, b, c, ex.MATMUL_CONFIGS[0], "tf32")
    ex._WORKING_CONFIG.clear()
    torch.testing.assert_close(ex.matmul(a, b), ex.matmul_torch(a, b), **tolerances(torch.float16, matmul=True))
    assert list(ex._WORKING_CONFIG.values()) == [ex.MATMUL_CONFIGS[1]]


@pytest.mark.parametrize(
    "a, b, kwargs, err, words",
    [
        (x_(4, 4).to(torch.int32), x_(4, 4), {}, TypeError, "a must have dtype in"),
        (x_(4), x_(4, 4), {}, ValueError, "a must be 2-D"),
        (x_(4, 5), x_(4, 4), {}, ValueError, "a and b do not chain"),
        (x_(4, 4), x_(4, 4, dtype=torch.float16), {}, ValueError, "share dtype and device"),
        (x_(4, 4), x_(4, 4), {"precision": "fp64"}, ValueError, "precision must be"),
    ],
)
def test_matmul_bad_inputs(a, b, kwargs, err, words):
    with pytest.raises(err, match=words):
        ex.matmul(a, b, **kwargs)


# ----------------------------------------------------------------------------- 4. interpreter vs GPU
@pytest.mark.skipif(DEVICE.type == "cuda", reason="documents the interpreter's bf16 bug")
def test_interpreter_bf16_arithmetic_is_wrong():
    err = ex.bf16_error(upcast=False)
    assert not err < 1.0  # garbage (often NaN): triton issues 4972, 11584
    assert ex.bf16_error(upcast=True) <= 2**-5  # exact loads; at most one bf16 rounding step apart


@requires_gpu
def test_gpu_bf16_arithmetic_is_right():
    assert ex.bf16_error(upcast=False) <= 2**-5
    assert ex.bf16_error(upcast=True) <= 2**-5


@pytest.mark.skipif(DEVICE.type == "cuda", reason="documents the interpreter's fp32 tl.dot")
def test_interpreter_fp32_dot_is_true_fp32():
    assert ex.dot_error(precision="tf32") < 1e-5  # asked for tf32, computed in fp32
    assert ex.dot_error(precision="ieee") < 1e-5


@requires_gpu
def test_gpu_fp32_dot_is_tf32_unless_ieee():
    tf32, ieee = ex.dot_error(precision="tf32"), ex.dot_error(precision="ieee")
    assert ieee < 1e-5
    assert tf32 > 1e-5 and tf32 > 10 * ieee


def test_add_bad_inputs():
    with pytest.raises(ValueError, match="x and y must match"):
        ex.add(x_(4), x_(5))


# ----------------------------------------------------------------------------- bench spec and self-check
@pytest.mark.parametrize("provider", cases.BENCHMARKS[0]["providers"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=0, atol=0)
        assert case["work"] == x


def test_self_check_runs(capsys):
    ex.self_check()
    assert "int32 offsets wrap at 2^31" in capsys.readouterr().out


def test_scale_refuses_an_out_that_partly_overlaps_x():
    # Programs would read elements other programs already scaled: the result would depend on their order.
    buf = torch.randn(4097, device=DEVICE)
    with pytest.raises(ValueError, match="out must not partly overlap x"):
        ex.scale(buf[:-1], 2.0, out=buf[1:])
    x = torch.randn(300, device=DEVICE)
    expected = 2.0 * x
    ex.scale(x, 2.0, out=x)  # exactly in place: each element is read before it is written, by one program
    torch.testing.assert_close(x, expected)
