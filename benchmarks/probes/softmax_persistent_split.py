# ruff: noqa: B023  (each lambda is used inside the iteration that made it)
"""Probe: can a persistent split softmax hide the exchange that costs step 4 its last 13-14 points?

Run 24's `softmax_gap.py` measured the split kernel (step 4 of `examples/softmax.py`) at 75.7-77.4% of
the copy ceiling for N = 65536 and 262144, against 90.1-90.6% for the same kernel without its exchange
(publish the chunk's max and sum, count in, wait for the row's other chunks). In step 4 a program
handles one chunk of one row and exits: while it waits for its row, its SM has nothing of its own to
load. This probe builds the persistent version: a program takes one ticket, which names a slot and a
chunk, and handles that chunk of the slot's rows (slot, slot + slots, ...). With `PREFETCH`, it issues
the loads of its next row's chunk before it waits for the current row, so the wait overlaps memory
traffic. The ticket argument of step 4 holds per slot: the lowest unfinished slot's chunks hold the
lowest outstanding tickets, so they are running or start next; a slot's chunks must fit on the GPU at
once (n_chunks <= SMs, as step 4 requires). A wait still gives up after `max_spins` polls and writes NaN.

Timed with the benchmarks' method (do_bench median, L2 flushed, median of 3 interleaved passes),
M x N = 2^26 fp32, beside a torch copy of the same bytes, the split launcher as shipped and the split
kernel without its exchange (`softmax_gap.py`'s wrong-result floor). Every variant is checked against
`softmax_torch` before it is timed; one that fails or raises is reported and skipped.
Usage: python benchmarks/probes/softmax_persistent_split.py   (needs CUDA; about a minute)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from _examples import copy_ceiling, interleaved_times, load_example, sm_count  # this folder is on sys.path
from softmax_gap import chunk_kernel, print_table


@triton.jit
def split_persistent_kernel(
    x_ptr, y_ptr, stats_ptr, sync_ptr, n_rows, n_cols, stride_xm, stride_ym, n_chunks, n_slots, max_spins,
    BLOCK_N: tl.constexpr, MAX_CHUNKS: tl.constexpr, PREFETCH: tl.constexpr,
):
    ticket = tl.atomic_add(sync_ptr + n_rows, 1)  # start order, as in step 4
    slot = ticket // n_chunks
    chunk = ticket % n_chunks
    offs = chunk * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs < n_cols
    ks = tl.arange(0, MAX_CHUNKS)
    x = tl.load(x_ptr + tl.cast(slot, tl.int64) * stride_xm + offs, mask=mask, other=float("-inf")).to(tl.float32)
    for row in range(slot, n_rows, n_slots):
        m = tl.max(x, axis=0)
        m_safe = tl.where(m == float("-inf"), 0.0, m)
        s = tl.sum(tl.exp(x - m_safe), axis=0)
        row_stats = stats_ptr + tl.cast(row, tl.int64) * n_chunks * 2
        tl.store(row_stats + chunk * 2, m)
        tl.store(row_stats + chunk * 2 + 1, s)
        tl.debug_barrier()
        tl.atomic_add(sync_ptr + row, 1, sem="release")
        nxt = row + n_slots
        if PREFETCH:  # the next row's chunk is in flight while this row's chunks are awaited
            x_next = tl.load(x_ptr + tl.cast(nxt, tl.int64) * stride_xm + offs, mask=mask & (nxt < n_rows),
                             other=float("-inf")).to(tl.float32)
        done = tl.atomic_add(sync_ptr + row, 0, sem="acquire")
        spins = 0
        while (done < n_chunks) & (spins < max_spins):
            done = tl.atomic_add(sync_ptr + row, 0, sem="acquire")
            spins += 1
        ms = tl.load(row_stats + ks * 2, mask=ks < n_chunks, other=float("-inf"), volatile=True)
        ss = tl.load(row_stats + ks * 2 + 1, mask=ks < n_chunks, other=0.0, volatile=True)
        row_max = tl.max(ms, axis=0)
        row_sum = tl.sum(tl.where(ks < n_chunks, ss * tl.exp(ms - row_max), 0.0), axis=0)
        inv_sum = tl.where(done >= n_chunks, 1.0 / row_sum, float("nan"))
        y = tl.exp(x - row_max) * inv_sum
        tl.store(y_ptr + tl.cast(row, tl.int64) * stride_ym + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        if PREFETCH:
            x = x_next
        else:
            x = tl.load(x_ptr + tl.cast(nxt, tl.int64) * stride_xm + offs, mask=mask & (nxt < n_rows),
                        other=float("-inf")).to(tl.float32)


def persistent_split(x: torch.Tensor, per_sm: int, prefetch: bool, block: int, warps: int,
                     max_spins: int = 2**24) -> torch.Tensor:
    """Softmax of a 2-D x with unit column stride by the persistent split kernel: per_sm programs per SM."""
    n_rows, n_cols = x.shape
    sms = sm_count(x.device)
    n_chunks = triton.cdiv(n_cols, block)
    if n_chunks > sms:
        raise ValueError(f"{n_chunks} chunks per row do not fit {sms} SMs at once")
    n_slots = max(1, min(n_rows, per_sm * sms // n_chunks))
    y = torch.empty_like(x)
    stats = torch.empty(n_rows * n_chunks * 2, device=x.device, dtype=torch.float32)
    sync = torch.zeros(n_rows + 1, device=x.device, dtype=torch.int32)
    split_persistent_kernel[(n_slots * n_chunks,)](
        x, y, stats, sync, n_rows, n_cols, x.stride(0), y.stride(0), n_chunks, n_slots, max_spins,
        BLOCK_N=block, MAX_CHUNKS=triton.next_power_of_2(n_chunks), PREFETCH=prefetch, num_warps=warps)
    return y


def main() -> None:
    if not torch.cuda.is_available():
        print("needs CUDA")
        return
    ex = load_example("softmax")
    ceiling_gbps = copy_ceiling()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}; "
          "do_bench median (L2 flushed), median of 3 interleaved passes; GB/s = 2 x bytes of x / time")
    print(f"# copy ceiling (2 GiB device copy): {ceiling_gbps:.0f} GB/s")
    # odd shapes first: correctness of every variant on rows that do not fill their chunks, NaN and inf rows
    odd = torch.randn(37, 70001, device="cuda")
    odd[3, 5] = float("nan")
    odd[4, :] = float("-inf")
    odd[5, 7] = float("inf")
    variants = [(p, pf, w) for p in (1, 2) for pf in (False, True) for w in (4, 8)]
    failed = set()
    for p, pf, w in variants:
        try:
            torch.testing.assert_close(persistent_split(odd, p, pf, ex.SPLIT_BLOCK, w), ex.softmax_torch(odd),
                                       rtol=1e-5, atol=1e-6, equal_nan=True)
        except Exception as e:  # noqa: BLE001  (a probe reports and goes on)
            failed.add((p, pf, w))
            print(f"# WRONG on 37 x 70001 with NaN/inf rows: per_sm={p} prefetch={pf} warps={w}: {str(e)[:300]}")
    print(f"# odd-shape check (37 x 70001, NaN, -inf and inf rows): {len(variants) - len(failed)} of "
          f"{len(variants)} variants correct")
    for n in (65536, 262144):
        x = torch.randn(2**26 // n, n, device="cuda")
        m = x.shape[0]
        y = torch.empty_like(x)
        block = ex.SPLIT_BLOCK
        chunks = triton.cdiv(n, block)
        warps = ex._split_warps(chunks)
        counter = torch.zeros(1, device="cuda", dtype=torch.int32)

        def no_exchange():
            counter.zero_()
            chunk_kernel[(m * chunks,)](x, y, counter, n, x.stride(0), y.stride(0), chunks,
                                        BLOCK_N=block, MATH=True, num_warps=warps)

        cases = {"torch copy": lambda: y.copy_(x), "split, no exchange (wrong result)": no_exchange,
                 f"launcher ({ex.pick_variant(n, sm_count())})":
                     lambda: ex.softmax(x)}
        ref = ex.softmax_torch(x)
        for p, pf, w in variants:
            if (p, pf, w) in failed:
                continue
            try:
                torch.testing.assert_close(persistent_split(x, p, pf, block, w), ref, rtol=1e-5, atol=1e-6)
            except Exception as e:  # noqa: BLE001
                print(f"# WRONG at N = {n}: per_sm={p} prefetch={pf} warps={w}: {str(e)[:300]}")
                continue
            cases[f"persistent {p}/SM {'prefetch' if pf else 'no prefetch'} w{w}"] = (
                lambda p=p, pf=pf, w=w: persistent_split(x, p, pf, block, w))
        times = interleaved_times(cases, warmup=5, rep=30)
        print_table(f"N = {n}, M = {m}, {chunks} chunks of {block} per row", times, x.numel() * 4, ceiling_gbps)


if __name__ == "__main__":
    main()
