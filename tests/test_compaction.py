"""Compaction into left-aligned 4 x 4P blocks with column metadata (Eureka Section 3)."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.sw.compaction import ROWS, block_grid, compact, decompact


def _padded(compacted):
    """``(values, columns)`` as [stored blocks, ROWS, 4P] arrays, zero past each row's count."""
    block, row, slot = compacted.positions()
    shape = (len(compacted.counts), ROWS, compacted.width)
    values, columns = np.zeros(shape, dtype=compacted.values.dtype), np.zeros(shape, dtype=int)
    values[block, row, slot] = compacted.values
    columns[block, row, slot] = compacted.columns
    return values, columns


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
    dense[8:12] = 0
    dense[:, 8 * compaction:12 * compaction] = 0   # empty blocks: a block row, a block column
    compacted = compact(dense, compaction)
    width = compacted.width
    assert compacted.metadata_bits == {1: 2, 2: 3, 4: 4}[compaction]
    values, columns = _padded(compacted)
    stored = list(zip(compacted.block_rows.tolist(), compacted.block_cols.tolist(), strict=True))
    nonempty = [(r, c) for r in range(compacted.grid[0]) for c in range(compacted.grid[1])
                if dense[r * ROWS:(r + 1) * ROWS, c * width:(c + 1) * width].any()]
    assert stored == nonempty and len(stored) < compacted.nblocks  # in block order, no empty
    for i, (block_row, block_col) in enumerate(stored):
        for lane in range(ROWS):
            original = dense[block_row * ROWS + lane, block_col * width:(block_col + 1) * width]
            cols = np.flatnonzero(original)
            n = compacted.counts[i, lane]
            assert n == len(cols)
            assert list(columns[i, lane, :n]) == list(cols)
            assert list(values[i, lane, :n]) == list(original[cols])


def test_directed_block_row():
    matrix = np.zeros((4, 8), dtype=int)
    matrix[2, [1, 5, 6]] = [10, 20, 30]
    two = compact(matrix, 2)
    assert two.counts.tolist() == [[0, 0, 3, 0]]
    assert two.values.tolist() == [10, 20, 30] and two.columns.tolist() == [1, 5, 6]
    one = compact(matrix, 1)  # two 4x4 blocks side by side
    assert one.counts.tolist() == [[0, 0, 1, 0], [0, 0, 2, 0]]
    assert one.block_cols.tolist() == [0, 1] and one.columns.tolist() == [1, 1, 2]
    parts = [(start, part.values.tolist()) for start, part in one.chunks(1)]
    assert parts == [(0, [10]), (1, [20, 30])]


def test_duplicates_summed_and_zeros_dropped():
    matrix = sp.coo_array(([1.0, 2.0, 0.0, 5.0, 4.0, -4.0],
                           ([0, 0, 1, 3, 2, 2], [1, 1, 2, 3, 0, 0])), shape=(4, 4))
    compacted = compact(matrix, 1)
    assert compacted.counts.tolist() == [[1, 0, 0, 1]]
    assert compacted.values.tolist() == [3.0, 5.0]
    assert np.array_equal(decompact(compacted).toarray(), matrix.toarray())


def test_empty_matrices():
    assert compact(np.zeros((5, 9)), 2).counts.shape == (0, ROWS)
    assert compact(np.zeros((5, 9)), 2, empty=True).counts.tolist() == [[0] * 4] * 4  # 2x2 grid
    empty = compact(sp.coo_array((0, 7)), 4)
    assert empty.nblocks == 0 and decompact(empty).shape == (0, 7)


def test_empty_blocks_on_request():
    matrix = np.zeros((8, 12), dtype=int)
    matrix[5, 9] = 3                                 # block (1, 2) of a 2x3 grid at P=1
    every = compact(matrix, 1, empty=True)
    assert every.block_rows.tolist() == [0, 0, 0, 1, 1, 1]
    assert every.block_cols.tolist() == [0, 1, 2, 0, 1, 2]
    assert every.counts.sum(axis=1).tolist() == [0, 0, 0, 0, 0, 1]
    assert np.array_equal(decompact(every).toarray(), matrix)
    with pytest.raises(ParameterError, match="blocks at P=4"):
        compact(sp.coo_array((10**6, 10**6)), 4, empty=True)


@pytest.mark.parametrize("compaction", [1, 4])
def test_huge_sparse_matrix(compaction):
    """Linear block keys would overflow 64 bits: sorted by the pairs instead."""
    n = 10**12
    matrix = sp.coo_array(([7, 8, 9, 1], ([n - 1, 5, 5, 0], [n - 1, n - 2, 3, 0])),
                          shape=(n, n))
    compacted = compact(matrix, compaction)
    width = compacted.width
    assert compacted.block_rows.tolist() == [0, 1, 1, (n - 1) // 4]
    assert compacted.block_cols.tolist() == [0, 3 // width, (n - 2) // width, (n - 1) // width]
    assert compacted.values.tolist() == [1, 9, 8, 7]
    entries = decompact(compacted)
    assert _triples(entries) == _triples(matrix)


def _triples(coo):
    return sorted(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist(), strict=True))


@pytest.mark.parametrize("bad", [0, 3, 8, True, "4"])
def test_rejects_compaction_factor(bad):
    with pytest.raises(ParameterError, match="compaction factor"):
        compact(np.eye(4), bad)


def test_rejects_non_matrix():
    with pytest.raises(ParameterError, match="2-D"):
        compact(np.ones(4), 1)
