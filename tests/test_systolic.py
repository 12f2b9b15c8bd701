"""Systolic scheduling of blocks onto lockstep systolic rows (Eureka Section 3.3)."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.sw import systolic
from sparseforge.sw.systolic import PER_SLOT, in_order, schedule


def _check(plan, grid, rows):
    """Every structural promise of a schedule, for ``grid`` on ``rows`` systolic rows."""
    nbr, nbc = grid.shape
    cycles = grid.ravel()
    used = plan.blocks[plan.blocks >= 0]
    assert sorted(used.tolist()) == np.flatnonzero(cycles).tolist()  # each nonempty block once
    assert plan.blocks.shape == (len(plan.slot_cycles), rows, PER_SLOT)
    work = np.where(plan.blocks >= 0, cycles[plan.blocks], 0).sum(axis=2)  # [slot, row]
    assert np.array_equal(work.max(axis=1), plan.slot_cycles)  # a slot lasts its longest row
    # systolic row r only runs blocks of block row band * rows + r, bands in order
    block_row = np.where(plan.blocks >= 0, plan.blocks // max(nbc, 1), -1)
    band = block_row.max(axis=(1, 2)) // rows
    assert (np.diff(band) >= 0).all()
    expected = band[:, None, None] * rows + np.arange(rows)[None, :, None]
    assert ((block_row == -1) | (block_row == expected)).all()
    assert plan.work == cycles.sum()
    assert plan.rows * plan.cycles == plan.work + plan.bubbles
    # no schedule beats the busiest systolic row of each band
    padded = np.zeros((-(-nbr // rows) * rows, nbc), dtype=int)
    padded[:nbr] = grid
    assert plan.cycles >= padded.reshape(-1, rows, nbc).sum(axis=2).max(axis=1).sum()


def test_figure_10():
    """Top row A1, A3 take 2 cycles, bottom row A2, A4 take 1 (blocks 0, 1 and 2, 3).

    Unscheduled, A2 and A4 each wait a cycle (2 bubbles); scheduled, A4 runs
    right after A2 in the slot of A1, matching its 2 cycles.
    """
    grid = np.array([[2, 2], [1, 1]])
    plain, packed = in_order(grid), schedule(grid)
    assert plain.slot_cycles.tolist() == [2, 2] and plain.bubbles == 2
    assert plain.blocks[:, 1, 0].tolist() == [2, 3]
    assert packed.slot_cycles[0] == 2
    assert packed.blocks[0, 0].tolist() == [0, -1] and packed.blocks[0, 1].tolist() == [2, 3]
    for plan in (plain, packed):
        _check(plan, grid, 2)


def test_complementary_blocks_pair_up():
    grid = np.array([[3, 1], [1, 3]])
    assert in_order(grid).cycles == 6
    packed = schedule(grid)
    assert packed.cycles == 4 and packed.bubbles == 0
    assert packed.blocks[0, 1].tolist() == [3, -1]


def test_equal_cycles_leave_no_bubbles():
    grid = np.full((6, 10), 4)  # like 2:4 or dense
    for plan in (in_order(grid, 3), schedule(grid, 3)):
        assert plan.bubbles == 0 and plan.cycles == 2 * 10 * 4
        _check(plan, grid, 3)


@pytest.mark.parametrize("rows", [1, 2, 3, 4])
def test_random_grids(rows):
    rng = np.random.default_rng(rows)
    for shape in [(7, 13), (8, 40), (1, 5), (5, 1)]:
        grid = rng.integers(0, 17, shape) * (rng.random(shape) < 0.8)
        plain, packed = in_order(grid, rows), schedule(grid, rows)
        _check(plain, grid, rows)
        _check(packed, grid, rows)
        assert (plain.blocks[:, :, 1] == -1).all()  # one block per slot unscheduled
        # not a theorem for best fit, but it holds here and on every real layer tried
        assert packed.cycles <= plain.cycles


def test_empty_grids():
    for grid in (np.zeros((4, 3), dtype=int), np.zeros((0, 0), dtype=int)):
        for plan in (in_order(grid), schedule(grid)):
            assert plan.cycles == 0 and plan.bubbles == 0 and len(plan.slot_cycles) == 0


def test_rejects_bad_input():
    with pytest.raises(ParameterError, match="systolic rows"):
        schedule(np.ones((2, 2)), 0)
    with pytest.raises(ParameterError, match="2-D grid"):
        in_order(np.ones(4))
    with pytest.raises(ParameterError, match="non-negative"):
        schedule(-np.ones((2, 2)))


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_totals_add_up_the_listed_schedules(monkeypatch, chunk):
    """From the non-empty blocks alone, band by band in chunks, the same figures."""
    monkeypatch.setattr(systolic, "CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for _ in range(40):
        grid = rng.integers(0, 17, (rng.integers(1, 20), rng.integers(1, 30)))
        grid *= rng.random(grid.shape) < rng.random()
        rows = int(rng.integers(1, 6))
        ids = np.flatnonzero(grid)
        for scheduled, arrange in ((True, schedule), (False, in_order)):
            listed = arrange(grid, rows)
            run = systolic.totals(ids // grid.shape[1], grid.ravel()[ids], rows, scheduled)
            assert (run.cycles, run.work, run.bubbles, run.slots) == (
                listed.cycles, listed.work, listed.bubbles, len(listed.slot_cycles))


def test_uniform_totals_count_every_block():
    for shape, rows in [((5, 7), 2), ((4, 3), 4), ((1, 9), 3), ((0, 4), 2)]:
        dense = np.full(shape, 8)
        run = systolic.uniform_totals(shape, 8, rows)
        for listed in (in_order(dense, rows), schedule(dense, rows)):
            assert (run.cycles, run.work, run.bubbles) == (listed.cycles, listed.work,
                                                           listed.bubbles)
    assert systolic.uniform_totals((10**12, 10**11), 16, 10**9).cycles == 1000 * 10**11 * 16


def test_long_blocks_cost_no_memory():
    """Cycle counts are binned by the values that occur, not up to the longest."""
    grid = np.array([[10**12, 3, 0], [10**12 - 3, 5, 2]])
    for plan in (in_order(grid), schedule(grid)):
        _check(plan, grid, 2)
    assert schedule(grid).slot_cycles.tolist() == [10**12, 5]


def test_listed_schedules_are_bounded():
    with pytest.raises(ParameterError, match="entries"):
        schedule(np.ones((3, 3), dtype=int), systolic.MAX_SCHEDULE)
    with pytest.raises(ParameterError, match="block order"):
        systolic.totals([3, 1], [1, 1])
    with pytest.raises(ParameterError, match="non-negative"):
        systolic.totals([0, 1], [1, -1])
    assert in_order(np.zeros((3, 0), dtype=int)).cycles == 0
