import program_ids as ex
import pytest
import torch
from support import DEVICE, ODD_SIZES, ON_GPU, requires_gpu

from benchmarks.cases import program_ids as cases


@pytest.mark.parametrize("n", ODD_SIZES)
@pytest.mark.parametrize("block_size", [16, 256])
def test_whoami_matches_torch(n, block_size):
    owner, count = ex.whoami(n, block_size)
    ref_owner, ref_count = ex.whoami_torch(n, block_size)
    torch.testing.assert_close(owner, ref_owner, rtol=0, atol=0)
    assert count == ref_count == -(-n // block_size)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_whoami_num_warps_does_not_change_the_map(num_warps):
    # num_warps changes how many threads run one program, not which elements it owns
    owner, count = ex.whoami(1025, 128, num_warps=num_warps)
    torch.testing.assert_close(owner, ex.whoami_torch(1025, 128)[0], rtol=0, atol=0)
    assert count == 9


def test_whoami_writes_every_element_once():
    n, block = 1023, 64
    owner = torch.full((n,), -1, device=DEVICE, dtype=torch.int32)  # poison: no program id is negative
    count = torch.full((1,), -1, device=DEVICE, dtype=torch.int32)
    ex.whoami_kernel[(ex.triton.cdiv(n, block),)](owner, count, n, BLOCK_SIZE=block)
    assert (owner >= 0).all()
    # each program owns exactly block elements, except the last, ragged one
    sizes = torch.bincount(owner.long())
    assert sizes[:-1].eq(block).all() and sizes[-1] == n - block * (len(sizes) - 1)
    assert count.item() == len(sizes)


def test_num_programs_counts_the_grid_not_the_data():
    # Launch more programs than tiles: tl.num_programs reports the grid as launched.
    owner = torch.full((10,), -1, device=DEVICE, dtype=torch.int32)
    count = torch.full((1,), -1, device=DEVICE, dtype=torch.int32)
    ex.whoami_kernel[(7,)](owner, count, 10, BLOCK_SIZE=4)
    assert count.item() == 7
    torch.testing.assert_close(owner, ex.whoami_torch(10, 4)[0], rtol=0, atol=0)


@pytest.mark.parametrize("M, N", [(1, 1), (17, 127), (37, 65), (64, 32)])
def test_whoami_2d_matches_torch(M, N):
    torch.testing.assert_close(ex.whoami_2d(M, N), ex.whoami_2d_torch(M, N), rtol=0, atol=0)


def test_whoami_2d_flat_ids_are_row_major():
    out = ex.whoami_2d(40, 70, 16, 32)  # grid (3, 3)
    flat = out[2]
    # the owner of each tile's first element, read in row-major tile order: 0, 1, ..., 8
    corners = flat[::16, ::32].flatten()
    assert corners.tolist() == list(range(9))
    assert out[0].max().item() == 2 and out[1].max().item() == 2


def test_whoami_2d_writes_every_element():
    M, N = 33, 47
    out = torch.full((3, M, N), -1, device=DEVICE, dtype=torch.int32)
    ex.whoami_2d_kernel[(ex.triton.cdiv(M, 16), ex.triton.cdiv(N, 16))](
        out, M, N, *out.stride(), BLOCK_M=16, BLOCK_N=16)
    assert (out >= 0).all()


@pytest.mark.parametrize("P", [1, 17, 100])
def test_tickets_are_a_permutation(P):
    tickets = ex.take_tickets(P)
    assert ex.is_permutation(tickets)


def test_is_permutation_rejects_repeats():
    assert not ex.is_permutation(torch.tensor([0, 1, 1], dtype=torch.int32))
    assert not ex.is_permutation(torch.tensor([1, 2, 3], dtype=torch.int32))
    assert ex.is_permutation(torch.tensor([2, 0, 1], dtype=torch.int32))


@pytest.mark.skipif(ON_GPU, reason="documents the interpreter: it runs programs one after another, in pid order")
def test_interpreter_runs_programs_in_order():
    tickets = ex.take_tickets(50)
    assert tickets.tolist() == list(range(50))


@requires_gpu
def test_gpu_runs_programs_in_no_particular_order():
    # Thousands of programs are in flight at once on an H200: their atomics interleave.
    # The tickets must always be a permutation; pid order on every one of 5 tries would
    # mean the programs ran one after another.
    P = 1 << 16
    pid = torch.arange(P, device=DEVICE, dtype=torch.int32)
    shuffled = False
    for _ in range(5):
        tickets = ex.take_tickets(P)
        assert ex.is_permutation(tickets)
        shuffled = shuffled or not torch.equal(tickets, pid)
    assert shuffled, "tickets came out in pid order on every try"


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: ex.whoami(0), "n must be a positive int"),
        (lambda: ex.whoami(10.0), "n must be a positive int"),
        (lambda: ex.whoami(10, 48), "block_size must be a positive power of two"),
        (lambda: ex.whoami(10, 16, num_warps=3), "num_warps must be one of 1, 2, 4, 8, 16, 32"),
        (lambda: ex.whoami_2d(0, 4), "M must be a positive int"),
        (lambda: ex.whoami_2d(4, 4, 16, 24), "block_n must be a positive power of two"),
        (lambda: ex.take_tickets(-1), "num_programs must be a positive int"),
        # the int32 offset and grid limits, refused before anything is allocated
        (lambda: ex.whoami(2**31), r"n must be at most 2\*\*31 - 1, got 2147483648: .* int32 offsets"),
        (lambda: ex.whoami_2d(2**31, 1), r"M must be at most 2\*\*31 - 1"),
        (lambda: ex.whoami_2d(2**15, 2**15), r"3 \* M \* N must be at most 2\*\*31 - 1 .* M=32768, N=32768"),
        (lambda: ex.whoami_2d(1, 65_535 * 32 + 1), "needs 65536 column tiles, but grid axis 1 holds at most 65535"),
        (lambda: ex.take_tickets(2**31), r"num_programs must be at most 2\*\*31 - 1"),
    ],
)
def test_bad_inputs(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_limits_accept_their_boundary():
    # The largest sizes the checks let through (checked without allocating them).
    ex.check_launch(2**31 - 1, 1024, 4, DEVICE)
    ex.check_launch(2**31 - 1, 1, 1, DEVICE, names=("num_programs", "block_size"))
    assert ex.triton.cdiv(2**31 - 1, 2**20) * 2**20 - 1 == 2**31 - 1  # the last tile ends at the int32 limit


@requires_gpu
def test_gpu_whoami_2d_widest_grid_axis_1():
    # 65,535 column tiles: the most grid axis 1 holds, and still right (too many programs
    # for the interpreter).
    N = 65_535 * 2
    torch.testing.assert_close(ex.whoami_2d(1, N, 1, 2), ex.whoami_2d_torch(1, N, 1, 2), rtol=0, atol=0)


def test_self_check_runs(capsys):
    ex.self_check()
    out = capsys.readouterr().out
    assert "every element owned by the right program" in out
    assert "64 tickets are a permutation" in out
    if not ON_GPU:
        assert "in pid order" in out and "not in pid order" not in out


@pytest.mark.parametrize("provider", cases.BENCHMARKS[0]["providers"])
def test_bench_case(provider):
    spec = cases.BENCHMARKS[0]
    for x in spec["tiny_x_vals"]:
        case = cases.bench_case(spec["name"], provider, x)
        torch.testing.assert_close(case["fn"](), case["ref"](), rtol=0, atol=0)
