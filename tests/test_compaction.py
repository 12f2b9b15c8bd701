"""Compaction into left-aligned 4 x 4P blocks with column metadata (Eureka Section 3)."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.errors import ParameterError
from sparseforge.sw.compaction import ROWS, block_grid, compact, decompact


def _random(shape, density, seed):
    rng = np.random.default_rng(seed)
    return sp.random_array(shape, density=density, rng=rng, format="coo",
                           data_sampler=lambda size: rng.integers(1, 100, size))


@pytest.mark.parametrize("compaction", [1, 2, 4])
@pytest.mark.parametrize("shape", [(4, 16), (37, 45), (3, 5), (64, 200)])
def test_decompaction_equals_input(compaction, shape):
    for seed, density in enumerate((0.05, 0.3, 0.9)):
        matrix = _random(shape, density, seed)
        compacted = compact(matrix, compaction)
        assert compacted.grid == block_grid(shape, compaction)
        assert compacted.nblocks == compacted.grid[0] * compacted.grid[1]
        assert compacted.nnz == matrix.nnz
        assert (decompact(compacted) != matrix).nnz == 0


@pytest.mark.parametrize("compaction", [1, 2, 4])
def test_rows_are_left_aligned_in_column_order(compaction):
    dense = _random((40, 64), 0.4, 7).toarray()
    compacted = compact(dense, compaction)
    width = compacted.width
    assert compacted.metadata_bits == {1: 2, 2: 3, 4: 4}[compaction]
    for block in range(compacted.nblocks):
        block_row, block_col = divmod(block, compacted.grid[1])
        for lane in range(ROWS):
            original = dense[block_row * ROWS + lane, block_col * width:(block_col + 1) * width]
            cols = np.flatnonzero(original)
            n = compacted.counts[block, lane]
            assert n == len(cols)
            assert list(compacted.columns[block, lane, :n]) == list(cols)
            assert list(compacted.values[block, lane, :n]) == list(original[cols])
            assert not compacted.values[block, lane, n:].any()
            assert not compacted.columns[block, lane, n:].any()


def test_directed_block_row():
    matrix = np.zeros((4, 8), dtype=int)
    matrix[2, [1, 5, 6]] = [10, 20, 30]
    two = compact(matrix, 2)
    assert two.counts.tolist() == [[0, 0, 3, 0]]
    assert two.values[0, 2, :4].tolist() == [10, 20, 30, 0]
    assert two.columns[0, 2, :3].tolist() == [1, 5, 6]
    one = compact(matrix, 1)  # two 4x4 blocks side by side
    assert one.counts.tolist() == [[0, 0, 1, 0], [0, 0, 2, 0]]
    assert one.columns[1, 2, :2].tolist() == [1, 2]


def test_duplicates_summed_and_zeros_dropped():
    matrix = sp.coo_array(([1.0, 2.0, 0.0, 5.0], ([0, 0, 1, 3], [1, 1, 2, 3])), shape=(4, 4))
    compacted = compact(matrix, 1)
    assert compacted.counts.tolist() == [[1, 0, 0, 1]]
    assert compacted.values[0, 0, 0] == 3.0
    assert np.array_equal(decompact(compacted).toarray(), matrix.toarray())


def test_empty_matrices():
    assert compact(np.zeros((5, 9)), 2).counts.tolist() == [[0] * 4] * 4  # a 2x2 grid
    empty = compact(sp.coo_array((0, 7)), 4)
    assert empty.nblocks == 0 and decompact(empty).shape == (0, 7)


@pytest.mark.parametrize("bad", [0, 3, 8, True, "4"])
def test_rejects_compaction_factor(bad):
    with pytest.raises(ParameterError, match="compaction factor"):
        compact(np.eye(4), bad)


def test_rejects_non_matrix():
    with pytest.raises(ParameterError, match="2-D"):
        compact(np.ones(4), 1)
