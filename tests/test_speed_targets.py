"""The speed targets of benchmarks/presentation.yml (scripts/targets.py): the schema's errors
name the story and the bench, and the evaluator's verdicts, notes and row order, on made-up rows
(no timing is asserted: every number here is invented)."""

from __future__ import annotations

import pytest

from scripts import results, targets


def _row(bench_name, x, provider, value, timing="do_bench", *, host_bound=False, spread=0.01, metric="GB/s"):
    return {"example": "ex", "bench": bench_name, "x_name": "n", "x": str(x), "provider": provider,
            "timing": timing, "metric": metric, "value": value, "ms_p50": 1.0, "ms_p20": 1.0, "ms_p80": 1.0,
            "work": 1.0, "host_bound": host_bound if timing == "do_bench" else False, "spread": spread}


def _spec(name, targets_, x_vals=(1024, 4096), providers=("triton", "torch", "torch.compile"), example="ex",
          position=0, **extra):
    return {name: {"name": name, "title": name, "x_name": "n", "x_vals": list(x_vals), "providers": list(providers),
                   "metric": "GB/s", "ceiling": "copy", "example": example, "position": position,
                   "targets": targets_, **extra}}


def _data(rows, specs):
    return results.Results(rows=rows, meta={"ex": {"ceilings": {"copy_gbps": 1000.0}}}, specs=specs)


CEILING = {"kind": "ceiling", "label": "copy ≥ 90%", "min": 0.9}
PEERS = {"kind": "peers", "label": "≥ torch", "min": 1.0, "peers": ["torch", "torch.compile"]}


# --- the schema ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target, words", [
    ({**CEILING, "at": [2048]}, "x 2048 is not among the x_vals of b [1024, 4096]"),
    ({**CEILING, "kind": "fraction"}, "unknown kind 'fraction'"),
    ({**CEILING, "bench": "no_such_bench"}, "unknown bench 'no_such_bench'"),
    ({"kind": "best_of", "label": "best", "min": 1.0, "peer": "torch", "benches": ["b", "gone"]},
     "unknown bench 'gone'"),
    ({**PEERS, "peers": ["cublas"]}, "bench b has no provider 'cublas'"),
    ({**CEILING, "peers": ["torch"]}, "a 'ceiling' target takes no 'peers'"),
    ({**CEILING, "min": 0}, "'min' must be a positive number"),
    ({**CEILING, "timing": "host_wall"}, "unknown timing 'host_wall'"),
    ({**CEILING, "point": "n = 2^{x_log2}", "at": [1024, 4096]}, None),  # powers of two: fine
    ({**CEILING, "point": "{size}"}, "'point' '{size}'"),
    ({**PEERS, "bench": "b", "pending": "not written yet"}, "bench b exists now: drop 'pending'"),
    ({k: v for k, v in CEILING.items() if k != "label"}, "needs a 'label'"),
])
def test_a_target_that_cannot_be_judged_names_its_example_and_bench(target, words):
    specs = _spec("b", [target])
    if words is None:
        targets.declared(specs)
        return
    with pytest.raises(targets.TargetError) as err:
        targets.declared(specs)
    msg = str(err.value)
    assert msg.startswith("presentation.yml, ex.b: target 1") and words in msg, msg


def test_an_x_of_a_pooled_bench_is_checked_against_every_bench_of_the_pool():
    specs = {**_spec("b", [{"kind": "best_of", "label": "best", "min": 1.0, "peer": "torch", "benches": ["b", "c"],
                            "at": [4096]}]),
             **_spec("c", [], x_vals=[1024], example="other")}
    with pytest.raises(targets.TargetError, match=r"presentation\.yml, ex\.b: .*x 4096 is not among the x_vals of c"):
        targets.declared(specs)


def test_the_real_targets_are_valid_and_judge_only_declared_benches():
    specs = results.load().specs  # presentation.yml, completed from the committed rows
    points = targets.declared(specs)
    assert len(points) > 50
    declared = {name for name, spec in specs.items() if spec.get("x_vals") is not None}
    pending = {b for t, _ in points for b in t.benches if b not in declared}
    marked = {t["bench"] for spec in results.presentation().values() for t in spec.get("targets", [])
              if "pending" in t}
    assert pending == marked  # a target judges an unmeasured bench only where it says why ('pending')
    assert marked <= set(results.presentation())  # and names a bench that presentation.yml declares
    assert set(targets.TARGET_KEYS) >= {k for spec in results.presentation().values()
                                        for t in spec.get("targets", []) for k in t}


# --- the verdicts ----------------------------------------------------------------------------------

def test_met_missed_and_not_measured():
    rows = [_row("b", 1024, "triton", 950.0), _row("b", 1024, "torch", 1000.0), _row("b", 1024, "torch.compile", 900.0),
            _row("b", 4096, "triton", 850.0)]
    specs = _spec("b", [CEILING, PEERS, {**PEERS, "label": "bf16 ≥ torch", "bench": "b_bf16", "pending": "later"}])
    checks = {(c.target, c.point): c for c in targets.evaluate(_data(rows, specs))}
    assert checks[("copy ≥ 90%", "n = 1024")].status == "met"
    assert checks[("copy ≥ 90%", "n = 1024")].measured == pytest.approx(0.95)
    assert checks[("copy ≥ 90%", "n = 4096")].status == "missed"
    peer = checks[("≥ torch", "n = 1024")]
    assert peer.status == "missed" and peer.measured == pytest.approx(0.95)  # against the faster peer
    assert peer.spread == pytest.approx(0.02)
    assert checks[("≥ torch", "n = 4096")].status == "not measured"  # no peer measured there
    assert checks[("bf16 ≥ torch", "n = 1024")].status == "not measured"  # a pending bench stays in the table
    table = targets.markdown_table(_data(rows, specs))
    assert "| bf16 ≥ torch | n = 4096 | – | **not measured** |" in table
    assert "| copy ≥ 90% | n = 4096 | 85.0% | **missed** (needs 90.0%) |" in table


def test_rows_of_one_bench_go_size_by_size_and_benches_and_examples_in_order():
    specs = {**_spec("late", [CEILING], example="zeta"),
             **_spec("b", [CEILING, PEERS, {**PEERS, "label": "other", "bench": "b2", "pending": "later"}]),
             **_spec("b0", [{**CEILING, "label": "first spec"}], position=-1)}
    order = [(t.label, x) for t, x in targets.declared(specs, order=["zeta", "ex"])]
    assert order == [("copy ≥ 90%", 1024), ("copy ≥ 90%", 4096)] + [
        ("first spec", 1024), ("first spec", 4096),
        ("copy ≥ 90%", 1024), ("≥ torch", 1024), ("copy ≥ 90%", 4096), ("≥ torch", 4096),
        ("other", 1024), ("other", 4096)]
    assert [t.spec for t, _ in targets.declared(specs)][:2] == ["b0", "b0"]  # no order given: examples by name


def test_notes_kernel_alone_and_host_bound():
    rows = [_row("b", 1024, "triton", 800.0), _row("b", 1024, "triton", 950.0, "cudagraph"),
            _row("b", 1024, "torch", 1000.0), _row("b", 1024, "torch", 1000.0, "cudagraph"),
            _row("b", 4096, "triton", 500.0, host_bound=True), _row("b", 4096, "triton", 900.0, "cudagraph"),
            _row("b", 4096, "torch", 400.0), _row("b", 4096, "torch", 1000.0, "cudagraph")]
    specs = _spec("b", [{**CEILING, "kernel_alone": True, "detail": "fixed"},
                        {**PEERS, "peers": ["torch"], "kernel_alone": True}])
    checks = {(c.target, c.point): c for c in targets.evaluate(_data(rows, specs))}
    assert checks[("copy ≥ 90%", "n = 1024")].detail == "kernel alone (CUDA graph): 95.0%"
    assert checks[("copy ≥ 90%", "n = 4096")].detail == targets.HOST_BOUND_NOTE
    assert checks[("≥ torch", "n = 1024")].detail == "kernel alone (CUDA graph): 0.950×"
    host_bound = checks[("≥ torch", "n = 4096")]  # judged in the CUDA graph, and said so
    assert host_bound.measured == pytest.approx(0.9) and host_bound.detail == targets.GRAPH_NOTE
    plain = targets.evaluate(_data(rows[:4], _spec("b", [{**CEILING, "detail": "fixed"}])))
    assert [c.detail for c in plain] == ["fixed", "fixed"]


def test_best_of_pools_benches_of_two_examples_and_names_the_winner():
    rows = [_row("m", 1024, "cublas", 100.0, metric="TFLOP/s"), _row("m", 1024, "triton-a", 80.0, metric="TFLOP/s"),
            _row("p", 1024, "cublas", 90.0, metric="TFLOP/s"), _row("p", 1024, "triton", 85.0, metric="TFLOP/s"),
            _row("p", 1024, "torch", 200.0, metric="TFLOP/s")]  # not ours: never the best
    best = {"kind": "best_of", "label": "matmul ≥ 1.0× cuBLAS", "min": 1.0, "peer": "cublas", "benches": ["m", "p"],
            "point": "{x}³", "at": [1024]}
    specs = {**_spec("m", [best], providers=["cublas", "triton-a"]),
             **_spec("p", [], providers=["cublas", "triton", "torch"], example="persistent")}
    (check,) = targets.evaluate(_data(rows, specs))
    assert check.point == "1024³" and check.measured == pytest.approx(85 / 90) and check.status == "missed"
    assert check.detail == "triton (p)"
