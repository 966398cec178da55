import launch_overhead as ex
import pytest
import torch
from support import DEVICE, ON_GPU, requires_gpu

from benchmarks.cases import launch_overhead as cases
from scripts.results import presentation

# On the CPU a "graph" replay is a loop of interpreted launches: keep it short there.
LAUNCHES = None if ON_GPU else 2


@pytest.mark.parametrize("n", [1, 17, 1023, 1025, 4097])
@pytest.mark.parametrize("provider", ex.PROVIDERS)
def test_every_provider_matches_torch(provider, n):
    x = torch.randn(n, device=DEVICE)
    fn = ex.make_fn(provider, x, 0.75, launches=LAUNCHES)
    torch.testing.assert_close(fn(), ex.add_scalar_torch(x, 0.75), rtol=0, atol=0)


@pytest.mark.parametrize("provider", ["triton", "triton-autotuned", "triton-warm-launcher"])
def test_fp16(provider):
    x = torch.randn(781, device=DEVICE, dtype=torch.float16)
    out = ex.make_fn(provider, x, 2.0)()
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, ex.add_scalar_torch(x, 2.0), rtol=1e-3, atol=1e-3)


def test_writes_every_element():
    n = 1025
    x = torch.randn(n, device=DEVICE)
    out = torch.full((n,), float("nan"), device=DEVICE)
    ex.add_scalar_kernel[(ex.triton.cdiv(n, 256),)](x, out, n, 1.0, BLOCK_SIZE=256)
    assert not torch.isnan(out).any()


def test_warm_launcher_reuses_its_output():
    x = torch.randn(300, device=DEVICE)
    fn = ex.WarmLauncher(x, 1.0)
    first = fn()
    x.add_(1.0)  # the launcher holds x: new values, same tensor
    second = fn()
    assert second.data_ptr() == first.data_ptr()
    torch.testing.assert_close(second, x + 1.0, rtol=0, atol=0)


def test_graph_launcher_launches_the_promised_number_of_times(monkeypatch):
    if ON_GPU:
        pytest.skip("on a GPU the launches are recorded in a graph, not made from Python")
    launched = []
    real = ex.add_scalar_kernel

    class Counting:
        def __getitem__(self, grid):
            launched.append(grid)
            return real[grid]

    monkeypatch.setattr(ex, "add_scalar_kernel", Counting())
    fn = ex.GraphLauncher(torch.randn(17, device=DEVICE), 1.0, launches=3)
    fn()
    assert len(launched) == 3 and fn.launches == 3


def test_host_timer_counts_calls():
    calls = []
    us = ex.host_us_per_call(lambda: calls.append(1), DEVICE, calls=50, warmup=5)
    assert len(calls) == 55
    assert us > 0


def test_overhead_table_runs():
    rows = ex.overhead_table(17)
    assert [r[0] for r in rows] == ex.PROVIDERS
    assert all(host > 0 for _, host, _ in rows)
    assert all((gpu is not None) == ON_GPU for _, _, gpu in rows)


@pytest.mark.parametrize(
    "x, err, words",
    [
        ([1.0], TypeError, "x must be a torch.Tensor"),
        (torch.arange(4, device=DEVICE), TypeError, "x must be float16 or float32"),
        (torch.randn(8, device=DEVICE)[::2], ValueError, "x must be contiguous"),
        (torch.randn(0, device=DEVICE), ValueError, "at least one element"),
        (torch.randn(1, device=DEVICE).expand(8), ValueError, r"x must be contiguous, got stride \(0,\)"),
        (torch.randn(3, 5, device=DEVICE).t(), ValueError, "x must be contiguous"),
        # a meta tensor: a shape without storage, refused before anything is allocated
        (torch.empty(2**31, device="meta"), ValueError, r"x has 2147483648 elements, more than 2\*\*31 - 1: .*int32"),
    ],
)
@pytest.mark.parametrize("launcher", [ex.add_scalar, ex.add_scalar_autotuned, ex.WarmLauncher, ex.GraphLauncher])
def test_bad_inputs(launcher, x, err, words):
    with pytest.raises(err, match=words):
        launcher(x, 1.0)


@pytest.mark.parametrize("provider", ["triton", "triton-autotuned", "triton-warm-launcher"])
def test_nan_inf_like_torch(provider):
    x = torch.randn(2, 64, device=DEVICE)
    big = torch.finfo(torch.float32).max
    x[0, ::4], x[0, 1::4], x[0, 2::4], x[0, 3::4] = float("nan"), float("inf"), float("-inf"), big
    out = ex.make_fn(provider, x, 0.5)()
    torch.testing.assert_close(out, ex.add_scalar_torch(x, 0.5), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("block_size", [0, -4, 100, 1024.0])
def test_warm_launcher_bad_block_size(block_size):
    with pytest.raises(ValueError, match="block_size must be a positive power of two"):
        ex.WarmLauncher(torch.randn(4, device=DEVICE), 1.0, block_size=block_size)


def test_unknown_provider():
    with pytest.raises(ValueError, match="provider must be one of"):
        ex.make_fn("cuda-c", torch.randn(4, device=DEVICE), 1.0)


def test_bench_spec():
    (spec,) = cases.BENCHMARKS
    assert spec["metric"] == "us"
    assert spec["calls_per_fn"] == {"triton-cudagraph": 100}
    assert set(spec["providers"]) == set(ex.PROVIDERS)
    assert max(spec["x_vals"]) <= 2**20  # launch-bound sizes only
    assert "launch_overhead_gpu" in presentation()  # the rows measure_rows adds


@pytest.mark.parametrize("provider", ex.PROVIDERS)
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    x = spec["tiny_x_vals"][0]
    case = cases.bench_case(spec["name"], provider, x)
    torch.testing.assert_close(case["fn"](), case["ref"](), rtol=case["rtol"], atol=case["atol"])
    assert case["work"] > 0


def test_self_check_runs(capsys):
    ex.self_check(sizes=(1, 33))
    assert "5 ways of launching give x + alpha" in capsys.readouterr().out


def test_measure_rows_on_cpu_is_empty():
    if ON_GPU:
        pytest.skip("on a GPU measure_rows times every point (see test_measure_rows_on_gpu)")
    assert cases.measure_rows("cpu") == []


# Which launcher is faster, and whether a small launch is host-bound, are benchmark results
# (benchmarks/results/h200/launch_overhead.csv), not test assertions: timings vary by run.
@requires_gpu
def test_measure_rows_on_gpu():
    rows = cases.measure_rows(DEVICE)
    assert len(rows) == len(cases.BENCHMARKS[0]["x_vals"]) * len(ex.PROVIDERS)
    assert {r["bench"] for r in rows} == {"launch_overhead_gpu"}
    assert all(r["value"] > 0 and r["metric"] == "us" for r in rows)
