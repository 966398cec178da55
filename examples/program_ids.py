# %% [markdown]
# # Program ids: who owns which element
#
# Kernels whose only job is to make Triton's execution model visible. Each program
# writes its own id into the elements it owns, so the output is a map of the grid;
# a third kernel shows that programs run in no particular order.
#
# You will see:
#
# * `tl.program_id`, `tl.num_programs` and `tl.arange` on a 1-D and a 2-D grid;
# * how a 2-D grid's ids flatten to one number, row-major;
# * programs taking tickets from an atomic counter: on a GPU the tickets come out
#   shuffled, in the interpreter they come out in order;
# * `num_warps`: how many warps (of 32 threads) run one program on a GPU.
#
# Run it with `python examples/program_ids.py`.

# %%
# --8<-- [start:setup]
import os

import torch

if not torch.cuda.is_available():  # no GPU: run kernels in Triton's CPU interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before @triton.jit

import triton
import triton.language as tl

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# --8<-- [end:setup]


# %% [markdown]
# ## The launchers' checks
#
# What the launchers below refuse before anything launches: sizes that need
# int32 offsets past 2**31 - 1, and grids larger than CUDA allows.


# %%
# --8<-- [start:checks]
INT32_MAX = 2**31 - 1  # the largest int32; also CUDA's limit on grid axis 0
MAX_GRID_YZ = 65_535  # CUDA's limit on grid axes 1 and 2


def check_launch(n: int, block_size: int, num_warps: int, device,
                 names=("n", "block_size")) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{names[0]} must be a positive int, got {n!r}")
    if (not isinstance(block_size, int) or block_size <= 0
            or block_size & (block_size - 1)):
        raise ValueError(f"{names[1]} must be a positive power of two, "
                         f"got {block_size}")
    if n > INT32_MAX:  # pid * BLOCK_SIZE + tl.arange(...) is int32 arithmetic
        raise ValueError(f"{names[0]} must be at most 2**31 - 1, got {n}: the kernels "
                         "compute int32 offsets "
                         "(examples/int64_offsets.py shows the int64 version)")
    if not isinstance(num_warps, int) or num_warps not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"num_warps must be one of 1, 2, 4, 8, 16, 32, "
                         f"got {num_warps}")
    if torch.device(device).type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("device is the CPU: CPU tensors need TRITON_INTERPRET=1 "
                         "(Triton's interpreter)")


def _check_launch_2d(M: int, N: int, block_m: int, block_n: int, device) -> None:
    check_launch(M, block_m, 4, device, names=("M", "block_m"))
    check_launch(N, block_n, 4, device, names=("N", "block_n"))
    if 3 * M * N > INT32_MAX:
        raise ValueError("3 * M * N must be at most 2**31 - 1 (the int32 offsets of "
                         f"out), got M={M}, N={N}")
    if triton.cdiv(N, block_n) > MAX_GRID_YZ:
        raise ValueError(f"N={N} needs {triton.cdiv(N, block_n)} column tiles, but "
                         f"grid axis 1 holds at most {MAX_GRID_YZ} programs: "
                         "raise block_n")
# --8<-- [end:checks]


# %% [markdown]
# ## Who owns element i?
#
# Every program runs the same code (SPMD: single program, multiple data). The only
# thing that differs between them is the id they read with `tl.program_id`.


# %%
# --8<-- [start:whoami-1d]
@triton.jit
def whoami_kernel(
    owner_ptr,  # int32 output: owner[i] = id of the program that wrote element i
    count_ptr,  # int32 output, one element: how many programs the grid launched
    n,  # number of elements
    BLOCK_SIZE: tl.constexpr,  # elements per program
):
    pid = tl.program_id(axis=0)  # this program's index along grid axis 0
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (1)!
    ids = tl.full((BLOCK_SIZE,), pid, dtype=tl.int32)  # a tile filled with the pid
    tl.store(owner_ptr + offs, ids, mask=offs < n)
    if pid == 0:  # a branch on a scalar: only program 0 takes it
        tl.store(count_ptr, tl.num_programs(axis=0))  # (2)!


def whoami(n: int, block_size: int = 256, *, num_warps: int = 4, device=DEVICE):
    """(owner, num_programs): owner[i] is the id of the program that owns element i."""
    check_launch(n, block_size, num_warps, device)
    owner = torch.empty(n, device=device, dtype=torch.int32)
    count = torch.empty(1, device=device, dtype=torch.int32)
    grid = (triton.cdiv(n, block_size),)
    whoami_kernel[grid](owner, count, n, BLOCK_SIZE=block_size,
                        num_warps=num_warps)  # (3)!
    return owner, int(count.item())


def whoami_torch(n: int, block_size: int = 256, *, device=DEVICE):
    """The same map in plain torch: element i belongs to program i // block_size."""
    owner = torch.arange(n, device=device, dtype=torch.int32) // block_size
    return owner, -(-n // block_size)
# --8<-- [end:whoami-1d]


# %% [markdown]
# ## A 2-D grid
#
# With a 2-D grid each program has two ids, one per axis. The output has three
# planes: the row-tile id, the column-tile id, and the two flattened into one
# number, row-major, the way you would number the programs yourself.


# %%
# --8<-- [start:whoami-2d]
@triton.jit
def whoami_2d_kernel(
    out_ptr,  # int32 (3, M, N): pid_m, pid_n and the flat id of each element's owner
    M, N,
    stride_p, stride_m, stride_n,  # strides of out: plane, row, column
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    flat = pid_m * tl.num_programs(axis=1) + pid_n  # row-major over the grid
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ptrs = out_ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    ones = tl.full((BLOCK_M, BLOCK_N), 1, dtype=tl.int32)
    tl.store(ptrs, ones * pid_m, mask=mask)
    tl.store(ptrs + stride_p, ones * pid_n, mask=mask)
    tl.store(ptrs + 2 * stride_p, ones * flat, mask=mask)


def whoami_2d(M: int, N: int, block_m: int = 16, block_n: int = 32, *,
              device=DEVICE) -> torch.Tensor:
    """int32 (3, M, N): [0] row-tile id, [1] column-tile id, [2] flat program id."""
    _check_launch_2d(M, N, block_m, block_n, device)
    out = torch.empty((3, M, N), device=device, dtype=torch.int32)
    grid = (triton.cdiv(M, block_m), triton.cdiv(N, block_n))
    whoami_2d_kernel[grid](out, M, N, *out.stride(), BLOCK_M=block_m, BLOCK_N=block_n)
    return out


def whoami_2d_torch(M: int, N: int, block_m: int = 16, block_n: int = 32, *,
                    device=DEVICE) -> torch.Tensor:
    rows = torch.arange(M, device=device, dtype=torch.int32)[:, None] // block_m
    cols = torch.arange(N, device=device, dtype=torch.int32)[None, :] // block_n
    pid_m, pid_n = rows.expand(M, N), cols.expand(M, N)
    return torch.stack([pid_m, pid_n, pid_m * -(-N // block_n) + pid_n])
# --8<-- [end:whoami-2d]


# %% [markdown]
# ## No order between programs
#
# Each program takes a ticket: it adds one to a shared counter with `tl.atomic_add`,
# which returns the value the counter held before. The tickets are always a
# permutation of 0..P-1, because the atomic hands out each value once. Which program
# gets which ticket depends on when it ran: on a GPU that is not pid order.


# %%
# --8<-- [start:tickets]
@triton.jit
def ticket_kernel(counter_ptr, tickets_ptr):
    pid = tl.program_id(axis=0)
    ticket = tl.atomic_add(counter_ptr, 1)  # (1)!
    tl.store(tickets_ptr + pid, ticket)


def take_tickets(num_programs: int, *, device=DEVICE) -> torch.Tensor:
    """tickets[pid] = the order in which program pid reached the counter."""
    check_launch(num_programs, 1, 1, device, names=("num_programs", "block_size"))
    counter = torch.zeros(1, device=device, dtype=torch.int32)  # must start at zero
    tickets = torch.empty(num_programs, device=device, dtype=torch.int32)
    ticket_kernel[(num_programs,)](counter, tickets, num_warps=1)
    return tickets


def is_permutation(tickets: torch.Tensor) -> bool:
    expected = torch.arange(tickets.numel(), device=tickets.device, dtype=tickets.dtype)
    return bool(torch.equal(torch.sort(tickets).values, expected))
# --8<-- [end:tickets]


# %% [markdown]
# ## Check it


# %%
# --8<-- [start:check]
def self_check() -> None:
    for n, block in ((1, 16), (17, 16), (1025, 256)):
        owner, count = whoami(n, block)
        ref_owner, ref_count = whoami_torch(n, block)
        torch.testing.assert_close(owner, ref_owner, rtol=0, atol=0)
        assert count == ref_count, (count, ref_count)
    for M, N in ((1, 1), (37, 65)):
        want = whoami_2d_torch(M, N)
        torch.testing.assert_close(whoami_2d(M, N), want, rtol=0, atol=0)
    tickets = take_tickets(64)
    assert is_permutation(tickets), tickets
    pids = torch.arange(64, device=DEVICE, dtype=torch.int32)
    in_order = bool(torch.equal(tickets, pids))
    print(f"program_ids: every element owned by the right program on {DEVICE.type}; "
          f"64 tickets are a permutation, {'in' if in_order else 'not in'} pid order")
# --8<-- [end:check]


# %%
if __name__ == "__main__":
    self_check()
