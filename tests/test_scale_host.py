"""Host software on matrices whose area dwarfs their nonzeros: memory follows the nonzeros.

Matrices of 10^12 x 10^12, 5*10^8 x 5*10^8 and 3 x 3*10^9 with three entries
go through Swiftiles and tile occupancy, the SpMSpM traffic model, compaction,
optimal SUDS, the Eureka cycle report and systolic scheduling in milliseconds
and a few MB, where a dense grid of tiles or blocks would take terabytes.
What would need memory in proportion to a dimension (tile ids beyond 64 bits,
a listed schedule on 10^9 systolic rows, every block of a huge grid) or a
number beyond 64 bits (the buffer) is refused with a ParameterError.
"""

import contextlib
import time
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.sw import systolic
from sparseforge.sw.compaction import block_grid, compact, decompact
from sparseforge.sw.eureka_cycles import suds_report
from sparseforge.sw.eureka_plan import plan
from sparseforge.sw.occupancy import Pattern, TileGrid, sampled_occupancy, tile_occupancy
from sparseforge.sw.suds import optimal
from sparseforge.sw.swiftiles import a_tile_shape, swiftiles, uniform_tiling
from sparseforge.sw.traffic import spmspm_traffic

HUGE = 10**12
SHAPES = [(HUGE, HUGE), (5 * 10**8, 5 * 10**8), (3, 3 * 10**9)]


def three_entries(shape):
    """First row / last column, middle row / a third of the columns, last row / first column."""
    m, n = shape
    return sp.coo_array(([3, -2, 5], ([0, m // 2, m - 1], [n - 1, n // 3, 0])), shape=shape)


@contextlib.contextmanager
def small_and_fast(seconds=2.0, megabytes=16):
    """The block runs in under ``seconds`` and allocates under ``megabytes`` at its peak."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        yield
        elapsed, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    assert peak < megabytes * 2**20, f"allocated {peak / 2**20:.1f} MB"


@pytest.mark.parametrize("shape", SHAPES)
def test_swiftiles_and_occupancy(shape):
    with small_and_fast():
        pattern = Pattern.from_matrix(three_entries(shape))
        assert pattern.nnz == 3
        for buffer in (1, 2, 3, 64, 10**6, 2**63 - 1):
            estimate = swiftiles(pattern, buffer, seed=0)
            occupancy = tile_occupancy(pattern, estimate.tile_shape)
            assert occupancy.counts.sum() == 3 and occupancy.n_tiles < 10
            if buffer >= 3:  # the whole matrix fits
                assert estimate.tile_shape == shape and occupancy.overbooked_fraction(buffer) == 0
                assert occupancy.utilization(buffer) == 3 / buffer
            assert uniform_tiling(pattern, buffer).tile_size <= buffer
            if shape[0] == shape[1]:
                traffic = spmspm_traffic(pattern, pattern, a_tile_shape(estimate.tile_size, shape),
                                         estimate.tile_shape, buffer)
                assert traffic.b_fills == 3 and traffic.a_stream % 3 == 0


def test_sampled_tiles_of_a_huge_grid():
    """Tiles 10^9 columns wide but not full height: searched per non-empty column."""
    with small_and_fast():
        pattern = Pattern.from_matrix(three_entries((HUGE, HUGE)))
        grid = TileGrid(pattern.shape, (10**6, 10**9))
        exact = tile_occupancy(pattern, grid.tile_shape)
        assert grid.n_tiles == 10**9 and exact.counts.tolist() == [1, 1, 1]
        ids = np.concatenate((exact.ids, [1, 2, grid.n_tiles - 2, grid.n_tiles // 2 + 7]))
        expected = [int(i in exact.ids) for i in ids]
        assert sampled_occupancy(pattern, grid, ids).tolist() == expected


def test_what_cannot_follow_the_nonzeros_is_refused():
    pattern = Pattern.from_matrix(three_entries((HUGE, HUGE)))
    with small_and_fast():
        with pytest.raises(ParameterError, match="tile ids must fit in 64 bits"):
            tile_occupancy(pattern, (1, 1))  # 10^24 tiles
        with pytest.raises(ParameterError, match="beyond 64 bits"):
            _ = pattern.keys
        with pytest.raises(ParameterError, match="buffer"):
            swiftiles(pattern, 10**30)
        with pytest.raises(ParameterError, match="buffer"):
            spmspm_traffic(pattern, pattern, (HUGE, HUGE), (HUGE, HUGE), 10**30)
        with pytest.raises(ParameterError, match="blocks at P=4"):
            compact(three_entries((HUGE, HUGE)), 4, empty=True)
        with pytest.raises(ParameterError, match="blocks at P=4"):
            plan(three_entries((HUGE, HUGE)), np.zeros((0, 4), dtype=np.int64), 4)
        for arrange in (systolic.schedule, systolic.in_order):
            with pytest.raises(ParameterError, match="entries"):
                arrange(np.ones((2, 2), dtype=np.int64), 10**9)  # 10^9 rows listed per slot


def test_a_huge_buffer_counts_sensibly():
    """Occupancy figures take any buffer: nothing is overbooked, utilization is tiny."""
    pattern = Pattern.from_matrix(three_entries((HUGE, HUGE)))
    occupancy = tile_occupancy(pattern, pattern.shape)
    assert occupancy.overbooked_fraction(10**30) == 0.0
    assert occupancy.utilization(10**30) == 3 / 10**30


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_eureka(shape, compaction):
    matrix = three_entries(shape)
    with small_and_fast():
        compacted = compact(matrix, compaction)
        assert len(compacted.counts) == 3 and compacted.nblocks == np.prod(
            block_grid(shape, compaction), dtype=object)
        entries = decompact(compacted)
        assert sorted(zip(entries.row, entries.col, entries.data, strict=True)) == sorted(
            zip(matrix.row, matrix.col, matrix.data, strict=True))
        assert optimal(compacted.counts).cycles.tolist() == [1, 1, 1]
        for rows in (2, 10**9):
            report = suds_report(matrix, compaction, rows, 8)
            nblocks, width = compacted.nblocks, 4 * compaction
            assert report["blocks"] == nblocks
            assert report["cycles"] == {"dense": nblocks * width, "two_four": nblocks * width // 2,
                                        "compaction": 3, "greedy": 3, "optimal": 3, "ideal": 3}
            bands = -(-compacted.grid[0] // rows)
            assert report["systolic"]["dense"] == {
                "cycles": bands * compacted.grid[1] * width,
                "bubbles": (bands * rows - compacted.grid[0]) * compacted.grid[1] * width}
            eureka = report["systolic"]["eureka"]
            assert eureka["cycles"] * rows - 3 == eureka["bubbles"]
            # three blocks of one cycle, each in its own slot but where one band of 10^9
            # rows holds all three block rows (one row apiece): then they share one slot
            assert eureka["cycles"] == (1 if rows == 10**9 and shape == SHAPES[1] else 3)
            assert report["stream"]["words"] == nblocks + 3


def test_systolic_totals_on_a_billion_rows():
    with small_and_fast():
        block_rows = np.array([0, 0, 5, 10**11, 10**11 + 1])
        cycles = np.array([3, 1, 2, 4, 4])
        for scheduled in (False, True):
            run = systolic.totals(block_rows, cycles, 10**9, scheduled)
            # band 0: block row 0 runs 3 then 1, row 5 runs 2 beside the 3; band 100: 4 and 4
            assert run.work == 14 and run.slots == 3 and run.cycles == 3 + 1 + 4
            assert run.bubbles == 10**9 * run.cycles - 14
        with pytest.raises(ParameterError, match="block order"):
            systolic.totals(block_rows[::-1], cycles, 2)


def test_many_entries_in_a_huge_matrix():
    """10^5 random entries in a 10^9-square matrix: linear in the entries, not the area."""
    rng = np.random.default_rng(0)
    n, nnz = 10**9, 10**5
    matrix = sp.coo_array((rng.integers(1, 100, nnz), (rng.integers(0, n, nnz),
                                                        rng.integers(0, n, nnz))), shape=(n, n))
    with small_and_fast(seconds=5, megabytes=200):
        report = suds_report(matrix, 4, 2, 8)
        assert report["cycles"]["optimal"] >= report["cycles"]["ideal"] >= nnz // 4
        pattern = Pattern.from_matrix(matrix)
        estimate = swiftiles(pattern, 64, seed=1)
        assert tile_occupancy(pattern, estimate.tile_shape).counts.sum() == nnz
