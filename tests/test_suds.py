"""SUDS work assignment: Algorithm 1 + binary search is optimal (Eureka Sections 3.1-3.2).

Why checking row counts is a complete proof: under SUDS a row with ``c``
values that displaces ``d`` of them to the next row and receives ``d_above``
multiplies ``c - d + d_above`` values, and a block takes as many cycles as
its longest such load (within a 4x4P block any load can run in any cycle
order: every MAC row selects its own input row through its 4P:1 mux, and a
displaced product only needs the row above's adder in the same cycle). Which
values move never enters, so the minimum cycles of a block are a function of
its 4 row counts alone. ``optimal`` and ``brute_force_cycles`` therefore
agree on every block of every compaction factor iff they agree on every
count vector in [0, 4P]^4, which is checked exhaustively for P = 1, 2, 4. The
pattern-level tests (all 2^16 4x4 patterns, random 4x8 and 4x16 blocks)
additionally check the entry-level placement: each value stays in its row or
moves one row down, and the busiest MAC row takes exactly the optimal cycles.
"""

import itertools

import numpy as np
import pytest

from sparseforge.sw.compaction import ROWS, compact, decompact
from sparseforge.sw.suds import (
    brute_force_cycles,
    decide,
    displace,
    greedy,
    ideal_cycles,
    in_place,
    optimal,
)


def _all_counts(compaction):
    return np.array(list(itertools.product(range(ROWS * compaction + 1), repeat=ROWS)))


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_optimal_equals_brute_force_on_every_count_vector(compaction):
    counts = _all_counts(compaction)
    best = optimal(counts)
    assert np.array_equal(best.cycles, brute_force_cycles(counts))
    assert (best.cycles >= ideal_cycles(counts)).all()
    assert (best.cycles <= counts.max(axis=1)).all()
    # minimal: one cycle fewer is infeasible
    shorter = best.cycles > 0
    assert not decide(counts[shorter], best.cycles[shorter] - 1)[0].any()


def test_brute_force_is_the_literal_enumeration():
    """The reference splits the min over (d0, d1, d2, d3); compare with the plain product."""
    counts = _all_counts(1)
    literal = [min(max(c[i] - d[i] + d[i - 1] for i in range(ROWS))
                   for d in itertools.product(*(range(n + 1) for n in c)))
               for c in counts]
    assert brute_force_cycles(counts).tolist() == literal


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_assignments_are_valid_suds(compaction):
    counts = _all_counts(compaction)
    for assignment in (optimal(counts), greedy(counts)):
        d = assignment.displaced
        assert ((d >= 0) & (d <= counts)).all()  # a value moves at most once
        rows = np.arange(len(counts))
        assert (d[rows, assignment.base_row] == 0).all()  # the base row displaces nothing
        assert np.array_equal(assignment.loads.sum(axis=1), counts.sum(axis=1))


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_greedy_is_never_better_than_optimal(compaction):
    counts = _all_counts(compaction)
    greedy_cycles, best = greedy(counts).cycles, optimal(counts).cycles
    assert (greedy_cycles >= best).all()
    assert (greedy_cycles > best).any()
    assert (greedy_cycles <= counts.max(axis=1)).all()


def _check_placement(matrix, compaction):
    """Compact (empty blocks too), assign optimally, place; check every entry and return the
    cycles."""
    compacted = compact(matrix, compaction, empty=True)
    best = optimal(compacted.counts)
    placed = displace(compacted, best)
    # every value is executed once, in its own row or (displaced) the row below,
    # and accumulates back where it came from
    assert (placed.matrix() != decompact(compacted)).nnz == 0
    busy = (placed.values != 0).sum(axis=2)  # [n, MAC rows]
    assert np.array_equal(busy.max(axis=1), best.cycles)
    beyond = np.arange(placed.values.shape[2]) >= best.cycles[:, None]  # [n, cycle]
    assert not (placed.values != 0).any(axis=1)[beyond].any()
    # rotation: the base row sits on the last MAC row, which never displaces,
    # so nothing wraps to MAC row 0
    assert not placed.displaced[:, 0].any()
    assert ((best.base_row - best.rotation) % ROWS == ROWS - 1).all()
    return compacted.counts, best.cycles


def test_every_4x4_pattern():
    patterns = (np.arange(1 << 16)[:, None] >> np.arange(16)) & 1  # [65536, 16]
    blocks = patterns.reshape(-1, ROWS, ROWS) * np.arange(1, 17).reshape(ROWS, ROWS)
    matrix = blocks.transpose(1, 0, 2).reshape(ROWS, -1)  # the patterns side by side
    counts, cycles = _check_placement(matrix, 1)
    assert np.array_equal(counts, patterns.reshape(-1, ROWS, ROWS).sum(axis=2))
    assert np.array_equal(cycles, brute_force_cycles(counts))


@pytest.mark.parametrize("compaction", [2, 4])
def test_random_blocks(compaction):
    rng = np.random.default_rng(compaction)
    width = ROWS * compaction
    nblocks = 20000
    density = rng.random((nblocks, 1, 1))  # sparse to dense blocks
    values = rng.integers(1, 100, (nblocks, ROWS, width))
    blocks = (rng.random((nblocks, ROWS, width)) < density) * values
    matrix = blocks.transpose(1, 0, 2).reshape(ROWS, -1)
    counts, cycles = _check_placement(matrix, compaction)
    assert np.array_equal(cycles, brute_force_cycles(counts))


def test_figure_7():
    """Figure 7: row 0 holds A00..A03, rows 1-3 hold A12, A22, A33.

    Compaction alone takes 4 cycles, greedy SUDS 3 (Figure 7(b)), optimal
    SUDS 2 (Figure 7(c)): A02 and A03 move to row 1 and A12 to row 2, giving
    the four vertically adjacent cases of Section 3.1: A00 over A02 (bottom
    displaced), A02 over A22 (top displaced), A03 over A12 (both), A22 over
    A33 (neither).
    """
    a = np.zeros((4, 4), dtype=int)
    a[0] = [100, 101, 102, 103]  # Aij is 100 + 10 i + j
    a[1, 2], a[2, 2], a[3, 3] = 112, 122, 133
    compacted = compact(a, 1)
    assert compacted.counts.max() == 4
    assert greedy(compacted.counts).cycles.tolist() == [3]
    best = optimal(compacted.counts)
    assert best.cycles.tolist() == [2]
    assert best.displaced.tolist() == [[2, 1, 0, 0]]
    placed = displace(compacted, best)
    # undo the rotation to compare with the figure's rows
    layout = np.roll(placed.values[0], best.rotation[0], axis=0)[:, :2]
    moved = np.roll(placed.displaced[0], best.rotation[0], axis=0)[:, :2]
    assert layout.tolist() == [[100, 101], [102, 103], [122, 112], [133, 0]]
    assert moved.tolist() == [[False, False], [True, True], [False, True], [False, False]]
    # base row 2 on the last MAC row: rows 3, 0, 1, 2 on MAC rows 0..3
    assert best.base_row.tolist() == [2] and best.rotation.tolist() == [3]
    assert placed.values[0, :, 0].tolist() == [133, 100, 102, 122]


def test_worst_case_single_row_halves():
    """Section 3.1: a single row of four values takes two cycles, not four."""
    counts = np.array([[0, 4, 0, 0], [16, 0, 0, 0]])
    assert optimal(counts).cycles.tolist() == [2, 8]


def test_empty_blocks_take_no_cycles():
    counts = np.zeros((3, ROWS), dtype=int)
    for assignment in (optimal(counts), greedy(counts)):
        assert assignment.cycles.tolist() == [0, 0, 0]


def test_displace_rejects_foreign_assignment():
    compacted = compact(np.eye(4), 1)
    with pytest.raises(ValueError, match="different row counts"):
        displace(compacted, optimal(np.array([[1, 1, 1, 2]])))


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_in_place_is_the_dense_schedule(compaction):
    rng = np.random.default_rng(compaction)
    matrix = rng.integers(-3, 4, size=(9, 21)) * (rng.random((9, 21)) < 0.4)
    placed = in_place(compact(matrix, compaction))
    width = ROWS * compaction
    assert (placed.cycles == width).all() and not placed.displaced.any()
    assert (placed.rotation == 0).all()
    assert (placed.columns == np.arange(width)).all()
    assert (placed.matrix().toarray() == matrix).all()
