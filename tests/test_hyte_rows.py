# amaranth: UnusedElaboratable=no
"""B's rows served from a HYTE accessor: alone, rows back to back (no idle cycle where
the accessor answers at once, its latency a row where it does not) and every kind of row
(held, empty, cut, bypassed whole, bypassed and empty) under random stalls on every
stream; to the Gustavson engine, C exact with B's tile held whole and overflowing;
parameters and lint."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.errors import ParameterError
from sparseforge.hw.hyte_rows import HyteRows
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.tb import native
from sparseforge.tb.hyte_rows import (
    AccessorGustavsonBench,
    GustavsonOnAccessor,
    RowsBench,
    buffered,
    bypassed,
)

LENGTHS = [3, 1, 2, 0, 4, 2, 5, 0, 3, 1, 2, 1]
"""B's rows for the server alone. In 21 words (a word per element and per row's entry)
rows 0-5 are held (row 3 empty), row 6 is cut after 2 words and rows 7-11 bypass (row 7
empty)."""
CUT = 21


def rows_b(seed):
    """B (12 x 16) with :data:`LENGTHS`' rows, values in 1..99."""
    rng = np.random.default_rng(seed)
    indptr = np.concatenate([[0], np.cumsum(LENGTHS)])
    indices = np.concatenate([np.sort(rng.choice(16, n, replace=False)) for n in LENGTHS])
    return sp.csr_array((rng.integers(1, 100, indptr[-1]), indices, indptr), shape=(12, 16))


def server(inflight=4):
    return HyteRows(index_width=8, value_width=8, count_width=16, pos_width=12,
                    addr_width=16, inflight=inflight)


@pytest.mark.parametrize("latency", [1, 4])
def test_rows_back_to_back(latency):
    # Held whole, nothing stalling, reads enough ahead to cover the latency: a row's
    # first read goes out as the last row's final answer arrives, so each row takes its
    # words (1 if empty) plus latency - 1 cycles, the reads sent past its end meanwhile;
    # answered at once, none past an end and no idle cycle at all.
    b = rows_b(seed_from_env(5))
    requests = [0, 3, 1, 7, 4, 2, 2, 6, 11, 9]
    bench = RowsBench(server(latency + 1), b, requests, 256, latency, seed_from_env(6))
    pysim(bench)
    words = [max(LENGTHS[r], 1) for r in requests]
    cycles = [c for c, _ in bench.sink.received]
    assert cycles[-1] - cycles[0] == sum(words) + (latency - 1) * (len(words) - 1) - 1
    assert bench.accessor.reads == sum(words) + (latency - 1) * len(words)
    if latency == 1:
        assert cycles == list(range(cycles[0], cycles[0] + sum(words)))
    assert bench.misses == bench.kept_reads == 0


def test_bypassed_rows_overlap_their_memory_reads():
    # Rows bypassed whole or cut, the accessor and memory answering on the next cycle:
    # each row's kept entry is read as its MISS arrives and the next row's reads go on,
    # so a row takes at most a cycle beyond its words where one after the other (kept
    # entry, then the rest) would take four more.
    b = rows_b(seed_from_env(10))
    requests = [8, 9, 10, 11, 7, 6, 8, 9, 0, 9]
    bench = RowsBench(server(8), b, requests, CUT, 1, seed_from_env(11))
    pysim(bench)
    words = [max(LENGTHS[r], 1) for r in requests]
    cycles = [c for c, _ in bench.sink.received]
    assert cycles[-1] - cycles[0] < sum(words) + len(words)
    assert bench.kept_reads == len(requests) - 1


@pytest.mark.parametrize("inflight", [1, 4])
def test_every_kind_of_row_under_random_stalls(inflight):
    b = rows_b(seed_from_env(7))
    model = buffered(b, CUT)
    kinds = [(s.stored, s.cut, s.length) for s in model.segments]
    assert kinds[3] == (True, False, 0) and kinds[6] == (True, True, 5)
    assert kinds[7] == (False, False, 0) and kinds[8] == (False, False, 3)
    rng = np.random.default_rng(seed_from_env(8))
    requests = [*range(12), *rng.integers(0, 12, 40)]
    rates = dict.fromkeys(("request", "read", "read_data", "kept", "elements", "response"),
                          0.6)
    bench = RowsBench(server(inflight), b, requests, CUT, 4, seed_from_env(9), rates)
    run = pysim(bench)      # every element checked as it leaves
    assert sum(e["last"] for e in run.elements) == len(requests)
    # The bypassed rest of a row read from memory after its kept entry, and no more.
    missed = bypassed(b, CUT)
    assert bench.misses == sum(missed[r] for r in requests)
    assert bench.kept_reads == sum(not kinds[r][0] or kinds[r][1] for r in requests)


def operands(seed):
    """A (10 x 12) and B (12 x 14, an empty row among them), values in -9..9 but 0."""
    rng = np.random.default_rng(seed)

    def values(size):
        return rng.integers(1, 10, size) * rng.choice([-1, 1], size)

    a = sp.random_array((10, 12), density=0.3, rng=rng, format="csr", data_sampler=values)
    b = sp.random_array((12, 14), density=0.35, rng=rng, format="lil", data_sampler=values)
    b[3, :] = 0
    return sp.csr_array(a), sp.csr_array(b)


@pytest.mark.parametrize("capacity, inflight", [
    pytest.param(256, 4, marks=pytest.mark.soak),
    (40, 1), (40, 4)])   # 40: HIT, MISS and END; one read at a time and four ahead
def test_c_exact_from_the_accessor_whole_and_overflowing(capacity, inflight):
    a, b = operands(3)
    b.eliminate_zeros()
    comp = GustavsonOnAccessor(256, inflight, cols=16, lanes=4, index_width=8,
                               value_width=8, acc_width=16, inflight=4)
    bench = AccessorGustavsonBench(comp, a, b, capacity, seed_from_env(4))
    result = native.simulate(bench, "pysim", None)
    want = (a.astype(np.int64) @ b.astype(np.int64)).tocsr()
    assert (result.c != want).nnz == 0 and result.c.nnz == want.nnz
    # 40 words hold part of B's entries and their rows' metadata: the rest bypassed
    # (a row cut among them) and read from memory each time a row is asked for, and
    # no more, however many reads go ahead; the rows held are read from the buffer.
    missed = np.array(bypassed(b, capacity))
    assert bench.misses == int(missed[a.indices].sum())
    assert (bench.misses > 0) == (capacity == 40) and b.nnz + b.shape[0] > 40
    assert bench.misses < int(np.diff(b.indptr)[a.indices].sum())


@pytest.mark.parametrize("params, message", [({"index_width": 3}, "index_width=3"),
                                             ({"count_width": 8}, "count_width=8"),
                                             ({"inflight": 0}, "inflight=0"),
                                             ({"inflight": 257}, "inflight=257")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HyteRows(**params)


@pytest.mark.parametrize("params", [{}, {"index_width": 32, "value_width": 32,
                                         "count_width": 32, "pos_width": 32,
                                         "addr_width": 48, "inflight": 256}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_rows", params) == ""
