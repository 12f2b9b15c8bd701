"""Per-tile occupancy (sw/occupancy.py) against brute-force counts."""

import time

import numpy as np
import pytest
import scipy.sparse

from sparseforge.core.errors import ParameterError
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.occupancy import Pattern, TileGrid, sampled_occupancy, tile_occupancy

REAL = ("matrices/suitesparse/bcspwr06.mtx", "matrices/suitesparse/G51.mtx",
        "matrices/graphs/power.mtx")


def brute_force(dense, tile_shape):
    """Nonzeros of every tile, one tile at a time."""
    tr, tc = tile_shape
    rows, cols = dense.shape
    return np.array([[np.count_nonzero(dense[r:r + tr, c:c + tc])
                      for c in range(0, cols, tc)] for r in range(0, rows, tr)])


def random_pattern(rng, shape, density):
    return Pattern.from_matrix(scipy.sparse.random_array(shape, density=density, rng=rng))


def per_tile(occupancy):
    """Occupancy of every tile as a ``grid_shape`` array (small grids only)."""
    out = np.zeros(occupancy.n_tiles, dtype=np.int64)
    out[occupancy.ids] = occupancy.counts
    return out.reshape(occupancy.grid.grid_shape)


def dense_of(pattern):
    dense = np.zeros(pattern.shape, dtype=bool)
    dense[pattern.rows, pattern.cols] = True
    return dense


@pytest.mark.parametrize("tile_shape", [(1, 1), (3, 5), (7, 7), (37, 1), (37, 29), (4, 29)])
def test_matches_brute_force_on_random(tile_shape):
    rng = np.random.default_rng(1)
    pattern = random_pattern(rng, (37, 29), 0.08)
    occupancy = tile_occupancy(pattern, tile_shape)
    expected = brute_force(dense_of(pattern), tile_shape)
    assert per_tile(occupancy).tolist() == expected.tolist()
    assert occupancy.n_tiles == expected.size
    assert occupancy.n_empty == np.count_nonzero(expected == 0)


def test_sorting_path_for_sparse_grids():
    # one 1x1 tile per element: far more tiles than nonzeros, so counted by sorting
    pattern = random_pattern(np.random.default_rng(2), (300, 400), 0.001)
    occupancy = tile_occupancy(pattern, (1, 1))
    assert occupancy.grid.n_tiles > 8 * pattern.nnz
    assert per_tile(occupancy).tolist() == dense_of(pattern).astype(int).tolist()


@pytest.mark.parametrize("path", REAL)
def test_matches_brute_force_on_real(shared_data, path):
    pattern = Pattern.from_matrix(read_matrix(shared_data / path))
    dense = dense_of(pattern)
    for tile_shape in [(pattern.shape[0], 17), (100, 1), (64, 48)]:
        expected = brute_force(dense, tile_shape)
        assert per_tile(tile_occupancy(pattern, tile_shape)).tolist() == expected.tolist()


@pytest.mark.parametrize("tile_shape", [(37, 3), (37, 29), (5, 1), (6, 4), (1, 29)])
def test_sampled_tiles_match_exact(tile_shape):
    rng = np.random.default_rng(3)
    pattern = random_pattern(rng, (37, 29), 0.1)
    grid = TileGrid(pattern.shape, tile_shape)
    ids = rng.choice(grid.n_tiles, size=min(12, grid.n_tiles), replace=False)
    exact = per_tile(tile_occupancy(pattern, tile_shape)).ravel()
    assert sampled_occupancy(pattern, grid, ids).tolist() == exact[ids].tolist()


@pytest.mark.parametrize("tile_shape, expected", [((4, 2), [2]), ((4, 1), [1, 1])])
def test_sampled_full_height_tiles_count_the_last_row(tile_shape, expected):
    # 4x2 matrix with nonzeros in the first and the last row, (0, 0) and (3, 1);
    # full-height tiles take the one-run branch, which must include row 3
    matrix = scipy.sparse.coo_array(([1, 1], ([0, 3], [0, 1])), shape=(4, 2))
    pattern = Pattern.from_matrix(matrix)
    grid = TileGrid(pattern.shape, tile_shape)
    exact = per_tile(tile_occupancy(pattern, tile_shape)).ravel().tolist()
    assert exact == expected
    assert sampled_occupancy(pattern, grid, np.arange(grid.n_tiles)).tolist() == expected


def test_fractions_count_empty_tiles_and_utilization_does_not():
    # 4x4 matrix, 2x2 tiles: occupancies 3, 0, 0, 1
    matrix = scipy.sparse.coo_array(([1, 1, 1, 1], ([0, 0, 1, 3], [0, 1, 0, 3])), shape=(4, 4))
    occupancy = tile_occupancy(Pattern.from_matrix(matrix), (2, 2))
    assert per_tile(occupancy).tolist() == [[3, 0], [0, 1]]
    assert occupancy.overbooked_fraction(2) == 1 / 4
    assert occupancy.utilization(2) == pytest.approx((2 / 2 + 1 / 2) / 2)
    assert occupancy.max == 3


def test_tile_exactly_at_the_buffer_is_not_overbooked():
    # same 4x4 matrix, occupancies 3, 0, 0, 1: only tiles strictly above the buffer count
    matrix = scipy.sparse.coo_array(([1, 1, 1, 1], ([0, 0, 1, 3], [0, 1, 0, 3])), shape=(4, 4))
    occupancy = tile_occupancy(Pattern.from_matrix(matrix), (2, 2))
    assert occupancy.overbooked_fraction(3) == 0.0
    assert occupancy.overbooked_fraction(1) == 1 / 4
    assert occupancy.overbooked_fraction(0) == 2 / 4


def test_duplicates_count_once():
    matrix = scipy.sparse.coo_array(([1, 2, 3], ([1, 1, 0], [2, 2, 0])), shape=(3, 3))
    pattern = Pattern.from_matrix(matrix)
    assert pattern.nnz == 2
    assert pattern.keys.tolist() == sorted(pattern.keys.tolist())


@pytest.mark.parametrize("tile_shape", [(0, 1), (1, 5), (4, 0)])
def test_rejects_tiles_outside_the_matrix(tile_shape):
    with pytest.raises(ParameterError, match="tile shape"):
        TileGrid((4, 4), tile_shape)


def test_rejects_non_sparse_input():
    with pytest.raises(ParameterError, match=r"scipy\.sparse"):
        Pattern.from_matrix(np.eye(3))


def test_millions_of_nonzeros_in_seconds():
    rng = np.random.default_rng(4)
    n, nnz = 200_000, 3_000_000
    matrix = scipy.sparse.coo_array((np.ones(nnz), (rng.integers(0, n, nnz),
                                                    rng.integers(0, n, nnz))), shape=(n, n))
    pattern = Pattern.from_matrix(matrix)
    start = time.perf_counter()
    occupancy = tile_occupancy(pattern, (n, 64))
    occupancy_small = tile_occupancy(pattern, (1000, 1000))
    assert time.perf_counter() - start < 5
    assert occupancy.counts.sum() == occupancy_small.counts.sum() == pattern.nnz


def test_pattern_beyond_64_bit_linear_indices():
    """col * rows + row would overflow: sorted by the pair, duplicates still counted once."""
    n = 10**12
    matrix = scipy.sparse.coo_array(([1, 2, 3, 4], ([5, 5, n - 1, 0], [7, 7, 0, n - 1])),
                                    shape=(n, n))
    pattern = Pattern.from_matrix(matrix)
    assert pattern.rows.tolist() == [n - 1, 5, 0] and pattern.cols.tolist() == [0, 7, n - 1]
    occupancy = tile_occupancy(pattern, (n, 10**6))
    assert occupancy.ids.tolist() == [0, n // 10**6 - 1] and occupancy.counts.tolist() == [2, 1]
    with pytest.raises(ParameterError, match="tile ids must fit in 64 bits"):
        TileGrid(pattern.shape, (1, 1))


def test_buffers_beyond_int64():
    occupancy = tile_occupancy(random_pattern(np.random.default_rng(5), (20, 20), 0.3), (5, 5))
    assert occupancy.overbooked_fraction(10**30) == 0
    assert occupancy.utilization(10**30) == pytest.approx(occupancy.counts.mean() / 10**30)
