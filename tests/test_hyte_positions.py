"""The fiber-segment positions HYTE keeps across tiles (Section 6.2, Fig. 5a): by hand,
refused fetches, and every order's tuned walk of a real matrix against its columns."""

import numpy as np
import pytest

from sparseforge.sim.models.hyte_controller import Config, J, K, matrix_trace
from sparseforge.sim.models.hyte_positions import PositionError, SegmentPositions
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.wire import HYTE_ORDERS

# Fig. 5(a)'s B in CSR: row 0 holds columns 0, 2, 5; row 1 none; row 2 columns 1, 6.
PTR, COLS = np.array([0, 3, 3, 5]), np.array([0, 2, 5, 1, 6])


def test_by_hand_a_sweep_along_j_begins_where_the_last_tile_ended():
    p = SegmentPositions(PTR, COLS)
    # j tiles of 4: [0, 4) from the row pointers, [4, 8) from where those ended.
    assert [p.segment(k, 0, 4) for k in range(3)] == [(0, 2), (3, 3), (3, 4)]
    assert [p.segment(k, 4, 8) for k in range(3)] == [(2, 3), (3, 3), (4, 5)]
    # The same tile again (B kept across i) begins where it began; a new sweep at 0.
    assert p.segment(0, 4, 8) == (2, 3) and p.segment(0, 0, 2) == (0, 1)
    # A smaller tile next (tuned): [2, 4) after [0, 2).
    assert p.segment(0, 2, 4) == (1, 2)
    # Row pointers: 2 on each of the 4 resets, 1 on the 5 other fetches; entries read
    # on those 5, written on all 9; elements: each segment's, and one past it where a
    # column (not the row's end) ended it.
    assert p.traffic == {"row_pointers": 2 * 4 + 5, "entry_reads": 5, "entry_writes": 9,
                         "elements": (2 + 1) + 0 + (1 + 1) + 1 + 0 + 1 + 1 + (1 + 1)
                         + (1 + 1)}


def test_a_fetch_no_sweep_makes_is_refused():
    p = SegmentPositions(PTR, COLS)
    with pytest.raises(PositionError, match="row 0"):
        p.segment(0, 4, 8)              # never fetched: nothing kept
    p.segment(0, 0, 4)
    with pytest.raises(PositionError, match=r"row 0: a segment at \[6, 8\)"):
        p.segment(0, 6, 8)              # not adjacent to [0, 4)


@pytest.mark.parametrize("order", range(len(HYTE_ORDERS)))
def test_every_orders_tuned_walk_fetches_each_tiles_own_columns(shared_data, order):
    # bcspwr03 as B, tiles from 16 x 16 tuned in a buffer of 12 words, two tiles
    # along i: every segment the walk gave the accessor is the row's columns inside
    # the tile, found by the positions alone.
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr03.mtx")
    config = Config(16, matrix.shape[1], matrix.shape[0], 3, 4, 4, order, 12)
    trace = matrix_trace(matrix, config)
    csr = matrix.tocsr()
    csr.sort_indices()
    want = []
    for c in trace.commands:
        (bk, tk), (bj, tj) = ((c[d]["begin"], c[d]["t"]) for d in (K, J))
        for k in range(bk, min(bk + tk, matrix.shape[0])):
            row = csr.indices[csr.indptr[k]:csr.indptr[k + 1]]
            want.append(row[(row >= bj) & (row < bj + tj)].tolist())
    got = []
    for port, item in trace.fetches:
        if port == "segment":
            got.append([])
        elif port == "fill":
            got[-1].append(item)
    assert got == want
    assert len(set(trace.shapes)) > 1 and sum(map(len, got)) == 2 * matrix.nnz
