"""Probe: record which SM ran each program (and each tile), and when, on the GPU.

Usage: ``python benchmarks/cases/schedules.py [OUT_DIR]`` (needs CUDA; on a machine
without one it says so and exits 0 without writing). Writes ``OUT_DIR/schedules.json``
(default OUT_DIR: ``$OUT/schedules`` when ``$OUT`` is set, else ``schedules-out``); the
site shows it from ``benchmarks/schedules/h200.json`` (copy it there), in the "programs
in flight" widget.

Each traced kernel is an instrumented copy of a kernel of the site, body unchanged, with
three reads of PTX special registers added: ``%smid`` (the SM the program runs on) and
``%globaltimer`` (a nanosecond clock shared by all SMs) at the start and the end of each
program, or of each tile for a persistent kernel; the end is read after a
``tl.debug_barrier()``, so every warp of the program has issued its stores.

Traces:

* ``rows``: RMS-norm, one program per row (``rms_norm_rows_kernel`` of
  examples/persistent_rows.py), N = 16384 fp32, with as many rows as 2.5 waves: the
  programs one SM holds at once are measured first (a calibration launch), so the grid
  is 2.5 x SMs x that;
* ``rows-persistent``: the same rows, persistent (``rms_norm_persistent_kernel``):
  grid = SMs x the same number of programs per SM, each looping over rows;
* ``softmax-online``: the long-row softmax (``softmax_online_kernel`` of
  examples/softmax.py), N = 262144 fp32, 256 rows, its launcher's grid (2 programs per SM,
  at most one per row).

Each is launched REPS times; the run whose span (last end - first start) is the median
is kept, its times shifted to its first start and given in microseconds. Pure helpers
(``normalize``, ``median_run``, ``trace_record``, ``document``, ``max_resident``) need
neither CUDA nor torch: tests/browser/test_schedules.py checks them on any machine.
"""

import datetime
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

try:  # cheap, and needs no GPU; torch is imported only in main()
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover: the site build machine has Triton
    triton = tl = None

REPS = 5
ROWS_N = 16384  # RMS-norm row length: fp32, BLOCK_N 16384, 16 warps per program
WAVES = 2.5  # rows = WAVES x SMs x programs resident per SM
SOFTMAX_N = 262144  # the long-row softmax: 256 rows of 1 MB (fp32)
SOFTMAX_ROWS = 256
SOFTMAX_BLOCK = 16384  # examples/softmax.py: ONLINE_BLOCK
SOFTMAX_PROGRAMS_PER_SM = 2  # examples/softmax.py: ONLINE_PROGRAMS_PER_SM
BUDGET_S = 50  # stop starting new traces after this


# ---------------------------------------------------------------- pure helpers (no CUDA)

def normalize(pid, tile, sm, start_ns, end_ns, t0_ns=None) -> list[dict]:
    """Runs (one per program or tile) with times in µs since the first start (or since t0_ns),
    sorted by start then SM. Sequences of ints, all the same length."""
    n = len(pid)
    if not all(len(seq) == n for seq in (tile, sm, start_ns, end_ns)):
        raise ValueError("pid, tile, sm, start_ns and end_ns must have the same length")
    if n == 0:
        return []
    t0 = min(int(s) for s in start_ns) if t0_ns is None else int(t0_ns)
    runs = []
    for p, t, s, a, b in zip(pid, tile, sm, start_ns, end_ns, strict=True):
        a, b = int(a), int(b)
        if b < a:
            raise ValueError(f"program {p}, tile {t}: ends ({b}) before it starts ({a})")
        runs.append({"pid": int(p), "tile": int(t), "sm": int(s),
                     "start_us": round((a - t0) / 1000, 3), "end_us": round((b - t0) / 1000, 3)})
    runs.sort(key=lambda r: (r["start_us"], r["sm"], r["pid"], r["tile"]))
    return runs


def span_us(runs: list[dict]) -> float:
    """Last end minus first start."""
    if not runs:
        return 0.0
    return max(r["end_us"] for r in runs) - min(r["start_us"] for r in runs)


def median_run(repetitions: list[list[dict]]) -> int:
    """Index of the repetition whose span is the median (the lower middle one of an even count)."""
    if not repetitions:
        raise ValueError("no repetitions")
    order = sorted(range(len(repetitions)), key=lambda i: (span_us(repetitions[i]), i))
    return order[(len(order) - 1) // 2]


def max_resident(runs: list[dict]) -> int:
    """The most runs in flight at once on any one SM (an end at the same instant as a start
    does not overlap it)."""
    best = 0
    by_sm: dict[int, list[tuple[float, int]]] = {}
    for r in runs:
        by_sm.setdefault(r["sm"], []).extend([(r["start_us"], 1), (r["end_us"], -1)])
    for events in by_sm.values():
        now = 0
        for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # ends (-1) before starts at a tie
            now += step
            best = max(best, now)
    return best


def timer_step_ns(start_ns, end_ns) -> int | None:
    """The smallest positive gap between distinct timer readings: an upper bound on its resolution."""
    values = sorted({int(v) for v in list(start_ns) + list(end_ns)})
    gaps = [b - a for a, b in zip(values, values[1:], strict=False) if b > a]
    return min(gaps) if gaps else None


def trace_record(name: str, label: str, kernel: str, grid: int, runs: list[dict], env: dict,
                 **extra) -> dict:
    """One trace as the widget reads it."""
    return {"name": name, "label": label, "kernel": kernel, "grid": int(grid),
            "gpu": env.get("gpu"), "sm_count": env.get("sm_count"), "torch": env.get("torch"),
            "triton": env.get("triton"), "date": env.get("date"),
            "programs": len({r["pid"] for r in runs}), "tiles": len({r["tile"] for r in runs}),
            "sms_used": len({r["sm"] for r in runs}), "span_us": round(span_us(runs), 3),
            **extra, "runs": runs}


def document(traces: list[dict], env: dict, source: Path | None = None) -> dict:
    """The whole file: the environment, this probe's sha256 and the traces."""
    source = Path(__file__) if source is None else Path(source)
    return {"gpu": env.get("gpu"), "sm_count": env.get("sm_count"), "torch": env.get("torch"),
            "triton": env.get("triton"), "date": env.get("date"),
            "probe": "benchmarks/cases/schedules.py",
            "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(), "traces": traces}


def check_document(doc: dict) -> list[str]:
    """What is wrong with a schedules document (empty: nothing)."""
    problems = []
    for key in ("gpu", "sm_count", "source_sha256", "traces"):
        if key not in doc:
            problems.append(f"missing {key!r}")
    for i, tr in enumerate(doc.get("traces", [])):
        for key in ("name", "label", "kernel", "grid", "runs"):
            if key not in tr:
                problems.append(f"trace {i}: missing {key!r}")
        for r in tr.get("runs", []):
            if set(r) != {"pid", "tile", "sm", "start_us", "end_us"} or r["end_us"] < r["start_us"]:
                problems.append(f"trace {i}: bad run {r}")
                break
    return problems


# ---------------------------------------------------------------- instrumented kernels

if triton is not None:

    @triton.jit
    def _smid():
        return tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)

    @triton.jit
    def _now():
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                         pack=1)

    # examples/persistent_rows.py: _rms_norm_row, _load_weight (unchanged)
    @triton.jit
    def _rms_norm_row(x_ptr, y_ptr, w, row, N, stride_xm, stride_ym, eps, BLOCK_N: tl.constexpr):
        row = tl.cast(row, tl.int64)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_xm + cols, mask=mask, other=0.0).to(tl.float32)
        rms = tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        y = x / rms * w
        tl.store(y_ptr + row * stride_ym + cols, y.to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _load_weight(w_ptr, N, BLOCK_N: tl.constexpr):
        cols = tl.arange(0, BLOCK_N)
        return tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)

    # rms_norm_rows_kernel, timed: one record per program (= row)
    @triton.jit
    def rms_norm_rows_timed(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps,
                            t_start, t_end, sm_ptr, BLOCK_N: tl.constexpr):
        t0 = _now()
        sm = _smid()
        w = _load_weight(w_ptr, N, BLOCK_N)
        _rms_norm_row(x_ptr, y_ptr, w, tl.program_id(0), N, stride_xm, stride_ym, eps, BLOCK_N)
        tl.debug_barrier()
        t1 = _now()
        pid = tl.program_id(0)
        tl.store(t_start + pid, t0)
        tl.store(t_end + pid, t1)
        tl.store(sm_ptr + pid, sm)

    # rms_norm_persistent_kernel, timed: one record per row (tile); the first row's start
    # is the program's start (it includes the weight load)
    @triton.jit
    def rms_norm_persistent_timed(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, eps,
                                  t_start, t_end, sm_ptr, pid_ptr, BLOCK_N: tl.constexpr):
        t = _now()
        sm = _smid()
        w = _load_weight(w_ptr, N, BLOCK_N)
        for row in tl.range(tl.program_id(0), M, tl.num_programs(0)):
            _rms_norm_row(x_ptr, y_ptr, w, row, N, stride_xm, stride_ym, eps, BLOCK_N)
            tl.debug_barrier()
            t1 = _now()
            tl.store(t_start + row, t)
            tl.store(t_end + row, t1)
            tl.store(sm_ptr + row, sm)
            tl.store(pid_ptr + row, tl.program_id(0))
            t = t1

    # examples/softmax.py: softmax_online_kernel, timed: one record per row (tile)
    @triton.jit
    def softmax_online_timed(x_ptr, y_ptr, n_rows, n_cols, stride_xm, stride_ym,
                             t_start, t_end, sm_ptr, pid_ptr, BLOCK_N: tl.constexpr, REVERSE: tl.constexpr):
        t = _now()
        sm = _smid()
        cols = tl.arange(0, BLOCK_N)
        n_chunks = tl.cdiv(n_cols, BLOCK_N)
        for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
            x_row = x_ptr + tl.cast(row, tl.int64) * stride_xm
            y_row = y_ptr + tl.cast(row, tl.int64) * stride_ym
            m = tl.full([BLOCK_N], float("-inf"), tl.float32)
            s = tl.zeros([BLOCK_N], tl.float32)
            for c in range(0, n_chunks):
                offs = c * BLOCK_N + cols
                x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
                m_new = tl.maximum(m, x)
                m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
                s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
                m = m_new
            row_max = tl.max(m, axis=0)
            row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
            inv_sum = 1.0 / row_sum
            for i in range(0, n_chunks):
                c = n_chunks - 1 - i if REVERSE else i
                offs = c * BLOCK_N + cols
                mask = offs < n_cols
                x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
                y = tl.exp(x - row_max) * inv_sum
                tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
            tl.debug_barrier()
            t1 = _now()
            tl.store(t_start + row, t)
            tl.store(t_end + row, t1)
            tl.store(sm_ptr + row, sm)
            tl.store(pid_ptr + row, tl.program_id(0))
            t = t1


# ---------------------------------------------------------------- GPU side

def _buffers(torch, n, device):
    return (torch.zeros(n, dtype=torch.int64, device=device), torch.zeros(n, dtype=torch.int64, device=device),
            torch.full((n,), -1, dtype=torch.int32, device=device))


def _runs(torch, launch, n, device, pids=None):
    """Launch once; the runs of that launch (raw ns) as lists."""
    t_start, t_end, sm = _buffers(torch, n, device)
    pid = torch.full((n,), -1, dtype=torch.int32, device=device) if pids else None
    launch(t_start, t_end, sm, pid)
    torch.cuda.synchronize()
    starts, ends, sms = t_start.tolist(), t_end.tolist(), sm.tolist()
    if min(sms) < 0 or min(starts) <= 0:
        raise RuntimeError("some program or tile recorded nothing")
    pid_list = pid.tolist() if pid is not None else list(range(n))
    return pid_list, list(range(n)), sms, starts, ends


def _record(torch, launch, n, device, reps, pids=False):
    """REPS launches (after one warm-up, which compiles); the median one, normalized, and its stats."""
    launch_once = lambda: _runs(torch, launch, n, device, pids)  # noqa: E731
    launch_once()
    raw, reps_runs = [], []
    for _ in range(reps):
        r = launch_once()
        raw.append(r)
        reps_runs.append(normalize(*r))
    k = median_run(reps_runs)
    spans = [round(span_us(r), 3) for r in reps_runs]
    return reps_runs[k], {"spans_us": spans, "kept": k, "timer_step_ns": timer_step_ns(raw[k][3], raw[k][4])}


def _err(y, ref) -> float:
    """Largest |y - ref|: the instrumented copy still computes what the example does (printed, kept)."""
    return float((y.float() - ref.float()).abs().max())


def _env(torch):
    props = torch.cuda.get_device_properties(0)
    return {"gpu": torch.cuda.get_device_name(0), "sm_count": props.multi_processor_count,
            "torch": torch.__version__, "triton": triton.__version__,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


def _rows_warps(n: int) -> tuple[int, int]:
    """examples/persistent_rows.py: _settings (BLOCK_N, num_warps)."""
    block_n = triton.next_power_of_2(n)
    return block_n, min(16, max(1, block_n // 512))


def trace_rows(torch, env, device) -> list[dict]:
    sms = env["sm_count"]
    N = ROWS_N
    block_n, warps = _rows_warps(N)
    eps = 1e-6

    def rows_launch(x, w, y):
        M = x.shape[0]
        return lambda ts, te, sm, _pid: rms_norm_rows_timed[(M,)](
            x, w, y, M, N, x.stride(0), y.stride(0), eps, ts, te, sm, BLOCK_N=block_n, num_warps=warps)

    # Calibration: how many of these programs one SM holds at once.
    m_cal = sms * 16
    x = torch.randn(m_cal, N, device=device)
    w = torch.randn(N, device=device)
    y = torch.empty_like(x)
    cal, _ = _record(torch, rows_launch(x, w, y), m_cal, device, reps=1)
    resident = max(1, max_resident(cal))
    M = int(WAVES * sms * resident)
    print(f"rows: {resident} programs of {warps} warps in flight per SM (calibration, {m_cal} rows): M = {M}")
    del x, y
    x = torch.randn(M, N, device=device)
    y = torch.empty_like(x)
    ref = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w)
    out = []
    runs, stats = _record(torch, rows_launch(x, w, y), M, device, REPS)
    stats["max_abs_err"] = _err(y, ref)
    out.append(trace_record(
        "rows", "RMS-norm, one program per row", "rms_norm_rows_kernel (examples/persistent_rows.py)", M, runs, env,
        shape=[M, N], dtype="float32", num_warps=warps, resident_per_sm=resident, waves=WAVES, **stats))
    P = min(M, sms * resident)
    y.zero_()

    def persistent_launch(ts, te, sm, pid):
        rms_norm_persistent_timed[(P,)](x, w, y, M, N, x.stride(0), y.stride(0), eps, ts, te, sm, pid,
                                        BLOCK_N=block_n, num_warps=warps)

    runs, stats = _record(torch, persistent_launch, M, device, REPS, pids=True)
    stats["max_abs_err"] = _err(y, ref)
    out.append(trace_record(
        "rows-persistent", "RMS-norm, persistent", "rms_norm_persistent_kernel (examples/persistent_rows.py)", P,
        runs, env, shape=[M, N], dtype="float32", num_warps=warps, programs_per_sm=resident, **stats))
    return out


def trace_softmax(torch, env, device) -> list[dict]:
    M, N = SOFTMAX_ROWS, SOFTMAX_N
    warps = max(2, min(32, SOFTMAX_BLOCK // 512))  # examples/softmax.py: _num_warps
    P = min(M, SOFTMAX_PROGRAMS_PER_SM * env["sm_count"])
    x = torch.randn(M, N, device=device)
    y = torch.empty_like(x)

    def launch(ts, te, sm, pid):
        softmax_online_timed[(P,)](x, y, M, N, x.stride(0), y.stride(0), ts, te, sm, pid,
                                   BLOCK_N=SOFTMAX_BLOCK, REVERSE=True, num_warps=warps, num_stages=3)

    runs, stats = _record(torch, launch, M, device, REPS, pids=True)
    stats["max_abs_err"] = _err(y, torch.softmax(x, dim=-1))
    return [trace_record(
        "softmax-online", "Softmax, long rows (online)", "softmax_online_kernel (examples/softmax.py)", P, runs, env,
        shape=[M, N], dtype="float32", num_warps=warps, programs_per_sm=SOFTMAX_PROGRAMS_PER_SM, **stats)]


def summary(trace: dict) -> str:
    per_sm: dict[int, int] = {}
    for r in trace["runs"]:
        per_sm[r["sm"]] = per_sm.get(r["sm"], 0) + 1
    counts = sorted(per_sm.values())
    return (f"{trace['name']:16s} grid {trace['grid']:5d}  tiles {trace['tiles']:5d}  SMs used {trace['sms_used']:3d}"
            f"  span {trace['span_us']:9.1f} us  (spans {trace.get('spans_us')})  runs per SM {counts[0]}..{counts[-1]}"
            f"  median run {statistics.median(r['end_us'] - r['start_us'] for r in trace['runs']):.2f} us"
            f"  timer step {trace.get('timer_step_ns')} ns  max |err| {trace.get('max_abs_err')}")


def main(argv: list[str]) -> int:
    t_begin = time.time()
    try:
        import torch
    except ImportError:
        print("schedules: needs CUDA (torch is not installed); nothing written")
        return 0
    if triton is None or not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1":
        print("schedules: needs CUDA (no GPU here, or TRITON_INTERPRET=1); nothing written")
        return 0
    if len(argv) > 1:
        out_dir = Path(argv[1])
    elif os.environ.get("OUT"):
        out_dir = Path(os.environ["OUT"]) / "schedules"
    else:
        out_dir = Path("schedules-out")
    device = torch.device("cuda")
    env = _env(torch)
    print(f"schedules: {env['gpu']}, {env['sm_count']} SMs, torch {env['torch']}, triton {env['triton']}")
    traces, failed = [], []
    for name, fn in (("rows", trace_rows), ("softmax-online", trace_softmax)):
        if time.time() - t_begin > BUDGET_S:
            failed.append(f"{name}: skipped, budget spent")
            continue
        try:
            traces += fn(torch, env, device)
        except Exception as err:  # keep the traces that worked
            import traceback

            traceback.print_exc()
            failed.append(f"{name}: {type(err).__name__}: {err}")
        torch.cuda.empty_cache()
    for tr in traces:
        print(summary(tr))
    for f in failed:
        print("FAILED", f)
    if not traces:
        print("schedules: no trace recorded; nothing written")
        return 1
    doc = document(traces, env)
    problems = check_document(doc)
    if problems:
        print("schedules: bad document:", problems[:5])
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "schedules.json"
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"schedules: wrote {path} ({path.stat().st_size} bytes, {len(traces)} traces)"
          f" in {time.time() - t_begin:.1f} s; commit it as benchmarks/schedules/h200.json")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
