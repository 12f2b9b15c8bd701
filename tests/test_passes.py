"""The host's plan of a matrix's passes through a converter's fixed buffers
(:mod:`sparseforge.sw.passes`): against passes worked out by hand, at the buffers' edges,
and joined back into the matrix's CSC."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.sw import conversion as cv
from sparseforge.sw.passes import (
    bank_passes,
    column_passes,
    column_slices,
    join_block_rows,
    join_columns,
)

# 4 rows x 7 columns; column counts 2, 1, 3, 1, 1, 1, 2 (11 nonzeros), CSR positions 0..10
ROWS = [[0, 2, 5], [1, 2], [2, 6], [0, 3, 4, 6]]
INDPTR = np.array([0, 3, 5, 7, 11])
INDICES = np.array([c for row in ROWS for c in row])


def test_passes_worked_by_hand_on_a_4_by_7_matrix():
    # 3 columns and 4 nonzeros a pass: columns 0-1 (3 nonzeros; column 2 would make 6),
    # 2-3 (4; column 4 would make 5), 4-6 (4 nonzeros in 3 columns)
    bounds = column_passes(INDICES, 7, max_cols=3, max_nnz=4)
    assert bounds.tolist() == [0, 2, 4, 7]
    slices = column_slices(INDPTR, INDICES, bounds)
    assert [(p.tolist(), i.tolist(), o.tolist()) for p, i, o in slices] == [
        ([0, 1, 2, 2, 3], [0, 1, 0], [0, 3, 7]),
        ([0, 1, 2, 3, 4], [0, 0, 0, 1], [1, 4, 5, 8]),
        ([0, 1, 1, 2, 4], [1, 2, 0, 2], [2, 6, 9, 10]),
    ]
    # each pass's CSC pointers over its columns, joined: the matrix's column pointers
    joined = join_columns([[0, 2, 3], [0, 3, 4], [0, 1, 2, 4]])
    assert joined.tolist() == [0, 2, 3, 6, 7, 8, 9, 11]
    # columns alone bound them: two a pass
    assert column_passes(INDICES, 7, max_cols=2, max_nnz=100).tolist() == [0, 2, 4, 6, 7]


@pytest.mark.parametrize("max_cols", [32, 64])
def test_exactly_the_buffers_is_one_pass_and_one_more_makes_two(max_cols):
    rng = np.random.default_rng(max_cols)
    full = rng.integers(0, max_cols, 64)                      # 64 nonzeros in max_cols columns
    assert column_passes(full, max_cols, max_cols, 64).tolist() == [0, max_cols]
    assert len(column_passes(np.append(full, 0), max_cols, max_cols, 64)) == 3   # 65 nonzeros
    assert len(column_passes(full, max_cols + 1, max_cols, 64)) == 3             # one more column


def test_a_column_of_the_scratchpad_fits_and_one_more_nonzero_is_refused():
    assert column_passes(np.full(8, 3), 5, 4, 8).tolist() == [0, 4, 5]
    with pytest.raises(ParameterError, match="column 3 holds 9 nonzeros, more than the 8 a "
                                             "pass of the converter holds"):
        column_passes(np.full(9, 3), 5, 4, 8)


def test_no_columns_is_one_empty_pass_and_empty_columns_pass_by_max_cols():
    assert column_passes(np.zeros(0, int), 0, 4, 8).tolist() == [0, 0]
    assert column_passes(np.zeros(0, int), 10, 4, 8).tolist() == [0, 4, 8, 10]
    assert join_columns([[0] * 5, [0] * 5, [0] * 3]).tolist() == [0] * 11


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(1, 40), st.floats(0, 0.5), st.integers(1, 6),
       st.integers(6, 40), st.integers(0, 2**32 - 1))
def test_passes_joined_are_the_csc(rows, cols, density, max_cols, max_nnz, seed):
    """Every pass within both bounds and as long as they allow; the passes' CSCs, one after
    the other with the joined pointers, are the matrix's CSC."""
    matrix = sp.random_array((rows, cols), density=density, format="csr",
                             rng=np.random.default_rng(seed))
    matrix.sum_duplicates()
    counts = np.bincount(matrix.indices, minlength=cols)
    if counts.max(initial=0) > max_nnz:
        return
    bounds = column_passes(matrix.indices, cols, max_cols, max_nnz)
    assert bounds[0] == 0 and bounds[-1] == cols and (np.diff(bounds) > 0).all()
    for lo, hi in itertools.pairwise(bounds):
        assert hi - lo <= max_cols and counts[lo:hi].sum() <= max_nnz
        assert hi == cols or hi - lo == max_cols or counts[lo:hi + 1].sum() > max_nnz
    parts = [sp.csr_array((matrix.data[o], i, p), shape=(rows, hi - lo)).tocsc()
             for (p, i, o), lo, hi in zip(column_slices(matrix.indptr, matrix.indices, bounds),
                                          bounds[:-1], bounds[1:], strict=True)]
    want = cv.convert(matrix, "csc")
    assert np.array_equal(join_columns([m.indptr for m in parts]), want.indptr)
    assert np.array_equal(np.concatenate([m.indices for m in parts]), want.indices)
    assert np.array_equal(np.concatenate([m.data for m in parts]), want.data)


def test_bank_passes_worked_by_hand_on_the_4_by_7_matrix():
    # 2 x 2 blocks (the 7 columns pad to 8), banks of 2: rows 0 and 2 wait in a bank.
    # Row 0 has columns 0, 2, 5; row 2 has 2, 6. From column 0, row 0's third nonzero
    # (column 5) ends the pass at block column 2 (column 4); from 4 nothing overflows.
    assert bank_passes(INDPTR, INDICES, 8, (2, 2), 2).tolist() == [0, 4, 8]
    assert bank_passes(INDPTR, INDICES, 8, (2, 2), 3).tolist() == [0, 8]     # exactly fits
    assert bank_passes(INDPTR, INDICES, 8, (1, 2), 1).tolist() == [0, 8]     # no bank waits
    # 4-row blocks, banks of 1: rows 0-2 wait. Row 0's second nonzero from column 0 is at
    # 2 (row 1's too): [0, 2); from 2, row 0's second is at 5: [2, 4); then none: [4, 8)
    assert bank_passes(INDPTR, INDICES, 8, (4, 2), 1).tolist() == [0, 2, 4, 8]
    with pytest.raises(ParameterError, match="more than 1 nonzeros in the block column of "
                                             "columns 0 to 3"):
        bank_passes(INDPTR, INDICES, 8, (4, 4), 1)


def test_block_rows_join_pass_after_pass():
    # two block rows; pass 0 gives 2 and 1 blocks, pass 1 gives 1 and 2
    ptr, places = join_block_rows([[0, 2, 3], [0, 1, 3]])
    assert ptr.tolist() == [0, 3, 6]
    # pass 0's blocks a, b (row 0), c (row 1); pass 1's d (row 0), e, f (row 1):
    # joined a b d | c e f
    assert places.tolist() == [0, 1, 3, 2, 4, 5]
