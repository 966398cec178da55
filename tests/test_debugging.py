import sys

import debugging as ex
import pytest
import torch
from support import DEVICE, ON_GPU, requires_gpu

from benchmarks.cases import debugging as cases


@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (9, 127), (4, 1025)])
def test_row_sum_matches_torch(shape):
    x = torch.randn(*shape, device=DEVICE)
    torch.testing.assert_close(ex.row_sum(x), ex.row_sum_torch(x), rtol=1e-5, atol=1e-4)


def test_row_sum_strided_rows():
    x = torch.randn(6, 40, device=DEVICE)[::2, :33]  # rows 80 elements apart, 33 long
    torch.testing.assert_close(ex.row_sum(x), ex.row_sum_torch(x), rtol=1e-5, atol=1e-4)


def test_row_sum_layouts():
    for x in (torch.randn(1, 33, device=DEVICE).expand(5, 33),  # every row the same memory: stride (0, 1)
              torch.randn(7, 40, device=DEVICE)[2:, 3:36],  # a storage offset and padded rows
              torch.randn(1, 6, device=DEVICE).t(),  # one column: its stride does not matter
              torch.randn(0, 5, device=DEVICE), torch.randn(4, 0, device=DEVICE)):  # nothing to add
        torch.testing.assert_close(ex.row_sum(x), ex.row_sum_torch(x), rtol=1e-5, atol=1e-4)


def test_row_sum_nan_inf_like_torch():
    x = torch.rand(6, 37, device=DEVICE)
    x[0, 3], x[1, 36], x[2, 0] = float("nan"), float("inf"), float("-inf")
    x[3, 0], x[3, 1] = float("inf"), float("-inf")  # inf - inf = NaN
    x[4] *= 1e36  # large, and still finite when summed
    x[5, :3] = torch.finfo(torch.float32).max  # overflows to inf, in torch's sum too
    got = ex.row_sum(x)
    torch.testing.assert_close(got, ex.row_sum_torch(x), rtol=1e-5, atol=1e-4, equal_nan=True)
    assert got[[0, 3]].isnan().all() and got[1] == float("inf") and got[5] == float("inf")


def meta(shape, stride):
    return torch.empty_strided(shape, stride, device="meta")  # a shape and strides, no memory


@pytest.mark.parametrize(
    "x, words",
    [
        (meta((2**16 + 1, 2**14), (2**15, 1)), r"reaches element offset 2147500031, past 2\*\*31 - 1"),  # padded rows
        (meta((3, 5), (2**30, 1)),
         r"x of shape \(3, 5\) and stride \(1073741824, 1\) reaches element offset 2147483652"),
        (meta((2**31, 4), (0, 1)), r"x has 2147483648 rows, more than grid axis 0 holds"),
        (meta((2, 16_385), (16_385, 1)), "x must have at most 16384 columns"),
    ],
)
def test_row_sum_limits(x, words):
    with pytest.raises(ValueError, match=words):
        ex.row_sum(x)


@pytest.mark.parametrize(
    "a, b, kw, err, words",
    [
        (torch.randn(24, 24), torch.randn(24, 24), {}, ValueError, "16, 32, 64 or 128 square"),
        (torch.randn(256, 256), torch.randn(256, 256), {}, ValueError, "16, 32, 64 or 128 square"),
        (torch.randn(16, 16), torch.randn(16, 16).half(), {}, TypeError, "a and b must share a dtype"),
        (torch.randn(16, 16).double(), torch.randn(16, 16).double(), {}, TypeError, "a and b must share a dtype"),
        (torch.randn(16, 16), torch.randn(16, 16), {"input_precision": "tf32x3"}, ValueError,
         "input_precision must be"),
        (torch.randn(16, 16).t(), torch.randn(16, 16), {}, ValueError, "a and b must be contiguous"),
    ],
)
def test_tile_matmul_bad_inputs(a, b, kw, err, words):
    with pytest.raises(err, match=words):
        ex.launch_tile_matmul(a.to(DEVICE), b.to(DEVICE), **kw)


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([[1.0]], TypeError, "x must be a torch.Tensor"),
        (torch.ones(2, 3, dtype=torch.float16), TypeError, "x must be float32"),
        (torch.ones(3), ValueError, "x must be 2-D with contiguous rows"),
        (torch.ones(3, 4).t(), ValueError, "x must be 2-D with contiguous rows"),
    ],
)
def test_bad_inputs(x, err, words):
    x = x.to(DEVICE) if isinstance(x, torch.Tensor) else x
    with pytest.raises(err, match=words):
        ex.row_sum(x)


@pytest.mark.skipif(ON_GPU, reason="interpreter prints go to Python's stdout; the GPU's are tested below")
def test_print_in_kernel_under_interpreter(capsys):
    x = torch.tensor([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])
    ex.row_sum(x, debug=True)
    # Exactly what docs/practice/debugging.md shows: the interpreter runs the programs one
    # by one, repeats the "compile" (static_print) for each, and prints NumPy arrays.
    assert capsys.readouterr().out.splitlines() == [
        "compiling row_sum_kernel with BLOCK_COLS = 16",
        "row_sum [0] [6.]",
        "compiling row_sum_kernel with BLOCK_COLS = 16",
        "row_sum [1] [60.]",
    ]


def test_no_output_without_debug(capsys):
    ex.row_sum(torch.randn(2, 3, device=DEVICE))
    if ON_GPU:
        torch.cuda.synchronize()
    assert "row_sum" not in capsys.readouterr().out


def test_static_assert_fails_at_compile_time():
    x = torch.randn(2, 3, device=DEVICE)
    out = torch.empty(2, device=DEVICE)
    with pytest.raises(Exception, match="BLOCK_COLS must be at least 16"):
        ex.row_sum_kernel[(2,)](x, out, 3, 3, BLOCK_COLS=8, DEBUG=False)


@pytest.mark.skipif(ON_GPU, reason="breakpoint() in a kernel needs the interpreter")
def test_breakpoint_stops_in_every_program(monkeypatch):
    stops = []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: stops.append(1))
    x = torch.randn(3, 20)
    torch.testing.assert_close(ex.row_sum_in_pdb(x), x.sum(1))
    assert len(stops) == 3


@pytest.mark.skipif(ON_GPU, reason="breakpoint() in a kernel needs the interpreter")
@pytest.mark.parametrize("x, err, match", [
    (torch.randn(20, 3).t(), ValueError, "contiguous rows"),  # a transposed view: rows are strided
    (torch.randn(3, 20, dtype=torch.float16), TypeError, "float32"),
    (torch.randn(60), ValueError, "2-D"),
    ([[1.0, 2.0]], TypeError, "torch.Tensor"),
])
def test_pdb_launcher_checks_its_input(monkeypatch, x, err, match):
    # The pdb launcher refuses what its kernel cannot sum, like row_sum (it once summed a transposed
    # view's storage instead of its rows).
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: None)
    with pytest.raises(err, match=match):
        ex.row_sum_in_pdb(x)


@requires_gpu
def test_gpu_pdb_launcher_refuses():
    with pytest.raises(RuntimeError, match="needs TRITON_INTERPRET=1"):
        ex.row_sum_in_pdb(torch.randn(2, 3, device=DEVICE))


PTX = """
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1}, %rd1, %rd2, p, 1, 1, 0, 1;
    wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%f1}, %rd3, %rd4, p, 1, 1, 0, 1;
    wgmma.commit_group.sync.aligned;
    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f2};
    fma.rn.f32 %f3, %f4, %f5, %f6;
"""


def test_tensor_core_ops_counts():
    assert ex.tensor_core_ops(PTX) == {"wgmma.mma_async": 2, "mma.sync": 1}
    assert ex.tensor_core_ops("fma.rn.f32 %f1, %f2, %f3, %f4;") == {}


def test_tile_matmul_matches_torch():
    a = torch.randn(32, 32, device=DEVICE)
    b = torch.randn(32, 32, device=DEVICE)
    c, _ = ex.launch_tile_matmul(a, b, input_precision="ieee")
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="same square tile"):
        ex.launch_tile_matmul(a, b[:16])


def test_ahead_of_time_compile_for_hopper_and_ampere():
    # No GPU needed: compile for sm_90 (H100/H200) and sm_80 (A100) and read the PTX.
    hopper = ex.tile_matmul_asm("fp16", 64, arch=90)
    assert set(hopper) >= {"ttir", "ttgir", "llir", "ptx"}
    assert "tt.dot" in hopper["ttir"]
    assert ex.tensor_core_ops(hopper["ptx"]).get("wgmma.mma_async", 0) > 0
    ampere = ex.tensor_core_ops(ex.tile_matmul_asm("fp16", 64, arch=80)["ptx"])
    assert ampere.get("mma.sync", 0) > 0 and "wgmma.mma_async" not in ampere
    ieee = ex.tensor_core_ops(ex.tile_matmul_asm("fp32", 64, arch=90, input_precision="ieee")["ptx"])
    assert ieee == {}  # true fp32 has no tensor-core path: the dot becomes FMAs


@requires_gpu
def test_gpu_launch_returns_compiled_kernel_with_wgmma():
    a = torch.randn(64, 64, device=DEVICE, dtype=torch.float16)
    c, compiled = ex.launch_tile_matmul(a, a)
    torch.testing.assert_close(c.float(), a.float() @ a.float(), rtol=1e-2, atol=1e-1)
    assert {"ttir", "ttgir", "ptx", "cubin"} <= set(compiled.asm)
    if torch.cuda.get_device_capability() >= (9, 0):
        assert ex.tensor_core_ops(compiled.asm["ptx"]).get("wgmma.mma_async", 0) > 0
    else:
        assert ex.tensor_core_ops(compiled.asm["ptx"]).get("mma.sync", 0) > 0


@requires_gpu
def test_gpu_device_print(capfd):
    x = torch.tensor([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]], device=DEVICE)
    ex.row_sum(x, debug=True)
    torch.cuda.synchronize()
    out = capfd.readouterr().out
    assert "row_sum" in out and "60" in out


@requires_gpu
def test_gpu_bench_case():
    case = cases.bench_case("row_sum_fp32", "triton", 1000)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_bench_case_tiny():
    for provider in cases.BENCHMARKS[0]["providers"]:
        case = cases.bench_case("row_sum_fp32", provider, 17)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])


def test_self_check_runs(capsys):
    ex.self_check(shapes=((2, 5),))
    assert "wgmma" in capsys.readouterr().out
