# amaranth: UnusedElaboratable=no
"""The fiber-segment positions HYTE keeps across tiles (Section 6.2, Fig. 5a): the model
by hand, refused fetches, and every order's tuned walk of a real matrix against its
columns; the RTL against the model under random stalls, by hand and on a real matrix's
walk; parameters and lint."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.hyte_positions import HytePositions
from sparseforge.sim.models.hyte_controller import Config, J, K, matrix_trace
from sparseforge.sim.models.hyte_positions import PositionError, SegmentPositions
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.hyte_schedule import hyte_fetches
from sparseforge.sw.wire import HYTE_ORDERS
from sparseforge.tb.hyte_positions import simulate

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
    # the tile of a command that fetches it, found by the positions alone; B is
    # fetched once for each i tile, or once in all where i is innermost (its tiles
    # kept across the i tiles).
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr03.mtx")
    config = Config(16, matrix.shape[1], matrix.shape[0], 3, 4, 4, order, 12)
    trace = matrix_trace(matrix, config)
    csr = matrix.tocsr()
    csr.sort_indices()
    want = []
    for row, bj, ej in fetches_of(trace, matrix.shape[0]):
        cols = csr.indices[csr.indptr[row]:csr.indptr[row + 1]]
        want.append(cols[(cols >= bj) & (cols < ej)].tolist())
    got = []
    for port, item in trace.fetches:
        if port == "segment":
            got.append([])
        elif port == "fill":
            got[-1].append(item)
    assert got == want
    walks = 1 if HYTE_ORDERS[order][-1] == "i" else 2
    assert len(set(trace.shapes)) > 1 and sum(map(len, got)) == walks * matrix.nnz


def fetches_of(trace, rows):
    """The ``(row, bj, ej)`` fetched for each of ``trace``'s commands that fetches B's
    tile, in order."""
    out = []
    for c, fetch in zip(trace.commands, hyte_fetches(trace.commands), strict=True):
        if not fetch:
            continue
        (bk, tk), (bj, tj) = ((c[d]["begin"], c[d]["t"]) for d in (K, J))
        out += [(k, bj, bj + tj) for k in range(bk, min(bk + tk, rows))]
    return out


def reads(traffic):
    return traffic["row_pointers"] + traffic["entry_reads"] + traffic["elements"]


def test_by_hand_in_the_rtl_under_stalls():
    fetches = [(k, 0, 4) for k in range(3)] + [(k, 4, 8) for k in range(3)] + [
        (0, 4, 8), (0, 0, 2), (0, 2, 4)]
    run, bench = simulate(HytePositions(dim_width=4, pos_width=4, addr_width=14),
                          PTR, COLS, fetches, seed_from_env(1))
    assert run.segments == [{"begin": b, "end": e} for b, e in
                            [(0, 2), (3, 3), (3, 4), (2, 3), (3, 3), (4, 5), (2, 3), (0, 1),
                             (1, 2)]]
    assert run.reads == reads(bench.model_traffic) == 13 + 5 + 12


def bcspwr03_walk(shared_data, count):
    """bcspwr03 as B (a sorted CSR) and the first ``count`` fetches of its walk j > i > k
    (k innermost: each tile of B's column fetched again, with the same bounds, for the
    second i tile), tuned."""
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr03.mtx")
    trace = matrix_trace(matrix, Config(16, matrix.shape[1], matrix.shape[0], 3, 4, 4,
                                        HYTE_ORDERS.index("jik"), 12))
    csr = matrix.tocsr()
    csr.sort_indices()
    return csr, fetches_of(trace, matrix.shape[0])[:count]


def test_a_real_matrixs_walk_in_the_rtl_under_stalls(shared_data):
    # bcspwr03 as B walked j > i > k (k innermost: each tile of B's column fetched
    # again, with the same bounds, for the second i tile), tuned: sweeps starting over
    # at the row pointers, the same tile again, and the next tile along j all come up.
    csr, fetches = bcspwr03_walk(shared_data, 400)
    run, bench = simulate(HytePositions(), csr.indptr, csr.indices, fetches,
                          seed_from_env(2))
    assert len(run.segments) == len(fetches)
    assert run.reads == reads(bench.model_traffic)
    kinds = {"reset": 0, "same": 0, "next": 0}
    last = {}
    for row, bj, ej in fetches:
        kinds["reset" if bj == 0 else "same" if last[row] == (bj, ej) else "next"] += 1
        last[row] = (bj, ej)
    assert min(kinds.values()) > 20, kinds


def test_the_next_rows_reads_overlap_the_last_rows_scan(shared_data):
    # With no stalls (a read answered the cycle after it is taken, two answers at most
    # waiting) the unit keeps the memory port busy across rows: a fetch's row end and
    # begin go out while the last row's column ids are read, so a fetch costs about its
    # reads. One at a time, each fetch would add at least its three round trips, a
    # write and a send: more than a cycle a fetch on top of the reads.
    csr, fetches = bcspwr03_walk(shared_data, 60)
    run, bench = simulate(HytePositions(), csr.indptr, csr.indices, fetches,
                          seed_from_env(4), dict.fromkeys(("fetch", "segment", "memory",
                                                           "writes"), 1.0))
    assert run.reads == reads(bench.model_traffic)
    assert run.cycles < run.reads + len(fetches), (run.cycles, run.reads)


def test_reads_ahead_find_the_same_segments():
    # The hand walk with four column ids read ahead: the same segments and kept
    # entries (the bench checks each against the model), and only reads of the rows'
    # elements past each segment's end added, at most three a scan.
    fetches = [(k, 0, 4) for k in range(3)] + [(k, 4, 8) for k in range(3)] + [
        (0, 4, 8), (0, 0, 2), (0, 2, 4)]
    run, bench = simulate(HytePositions(dim_width=4, pos_width=4, addr_width=14,
                                        inflight=4), PTR, COLS, fetches, seed_from_env(3))
    assert len(run.segments) == len(fetches)
    assert reads(bench.model_traffic) < run.reads <= reads(bench.model_traffic) + 3 * 9


@pytest.mark.parametrize("params, message", [({"dim_width": 1}, "dim_width=1"),
                                             ({"pos_width": 33}, "pos_width=33"),
                                             ({"addr_width": 3}, "addr_width=3"),
                                             ({"inflight": 0}, "inflight=0"),
                                             ({"inflight": 65}, "inflight=65")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HytePositions(**params)


@pytest.mark.parametrize("params", [{}, {"dim_width": 2, "pos_width": 2, "addr_width": 4},
                                    {"dim_width": 32, "pos_width": 32, "addr_width": 48,
                                     "inflight": 64}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_positions", params) == ""
