# amaranth: UnusedElaboratable=no
"""The Tensaurus MLU: every chunk of one or two matrices, read ``cols`` chunks a word from
a memory that answers out of order, reaches the scratchpad of its PE column, in order,
under random memory latency and random stalls."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.interfaces import chunk_layout
from sparseforge.hw.tensaurus_mlu import TensaurusMlu, mlu_word_layout
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw.wire import chunk_words, mlu_words
from sparseforge.tb.tensaurus_mlu import simulate

STALLS = {"start": 1.0, "request": 0.6, "response": 0.5, "fills": 0.4}
FREE = dict.fromkeys(STALLS, 1.0)


def matrices(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(-100, 100, shape) for shape in shapes]


@pytest.mark.parametrize("vlen, dw", [(1, 2), (3, 8), (4, 32)])
def test_host_chunk_words_are_the_mlu_chunk_layout(vlen, dw):
    """The host's chunk words, wider than 64 bits and at both ends of the range, hold
    each chunk's values as the MLU's chunks lay them out."""
    low, high = -(1 << (dw - 1)), (1 << (dw - 1)) - 1
    matrix = np.random.default_rng(dw).integers(low, high, (3, 2 * vlen), endpoint=True)
    matrix[0, 0], matrix[-1, -1] = low, high
    chunks = matrix.reshape(-1, vlen)
    assert list(chunk_words(matrix, vlen, dw)) == [
        chunk_layout(vlen, dw).const(chunk.tolist()).as_bits() for chunk in chunks]


@pytest.mark.parametrize("cols, vlen, dw, chunks", [(1, 1, 2, 3), (2, 3, 8, 4), (3, 4, 32, 4),
                                                    (4, 2, 16, 1)])
def test_mlu_words_are_the_mlu_port_layout(cols, vlen, dw, chunks):
    """A row of ``chunks`` chunks is ``ceil(chunks / cols)`` words of the MLU's port, word
    ``t`` its chunks ``t * cols ..``, the last padded with zero chunks; a whole number of
    words a row is :func:`chunk_words` of ``cols * vlen`` values."""
    low, high = -(1 << (dw - 1)), (1 << (dw - 1)) - 1
    matrix = np.random.default_rng(dw).integers(low, high, (3, chunks * vlen), endpoint=True)
    matrix[0, 0], matrix[-1, -1] = low, high
    per_row = -(-chunks // cols)
    padded = np.zeros((3, per_row * cols * vlen), dtype=np.int64)
    padded[:, :chunks * vlen] = matrix
    words = [mlu_word_layout(cols, vlen, dw).const(word.reshape(cols, vlen).tolist()).as_bits()
             for word in padded.reshape(-1, cols * vlen)]
    assert list(mlu_words(matrix, cols, vlen, dw)) == words
    assert list(chunk_words(padded, cols * vlen, dw)) == words


def check(run, bench):
    assert run.reads == bench.reads
    assert run.fills == bench.want


@pytest.mark.parametrize("cols, tlen, vlen, tags", [(1, 1, 1, 2), (2, 2, 2, 4), (3, 2, 1, 2),
                                                    (4, 1, 2, 8)])
@pytest.mark.parametrize("rows", [(5,), (4, 3), (0, 3), (1, 1)])
def test_directed_loads(cols, tlen, vlen, tags, rows):
    """Each row's words split over the columns, the memory answering in order and out of
    order, with and without stalls on every stream, into either half."""
    rank = cols * tlen * vlen
    component = TensaurusMlu(cols=cols, tlen=tlen, vlen=vlen, dw=8, tags=tags)
    mats = matrices([(r, rank) for r in rows], cols + tlen)
    for half, seed, rates, window in ((0, seed_from_env(1), None, 1),
                                      (1, seed_from_env(2), STALLS, None)):
        run, bench = simulate(component, mats, seed, rates, engine="pysim", half=half,
                              window=window)
        check(run, bench)
        assert all(fill["half"] == half for fills in run.fills for fill in fills)


@pytest.mark.parametrize("cols, tlen, vlen, b_chunks, tags", [
    (1, 1, 1, 3, 2), (2, 2, 2, 1, 4), (3, 1, 2, 2, 2), (2, 1, 2, 4, 8), (3, 2, 1, 7, 4)])
@pytest.mark.parametrize("rows", [(4, 3), (0, 3), (2, 0)])
def test_directed_broadcast_loads(cols, tlen, vlen, b_chunks, tags, rows):
    """TTMc: operand 0 split by column, operand 1's rows whole into every column, fewer,
    as many and more chunks a row than a word holds."""
    component = TensaurusMlu(cols=cols, tlen=tlen, vlen=vlen, dw=8, b_chunks=b_chunks,
                             tags=tags)
    mats = matrices([(rows[0], cols * tlen * vlen), (rows[1], b_chunks * vlen)], cols)
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        run, bench = simulate(component, mats, seed, rates, engine="pysim", broadcast=True)
        check(run, bench)


@pytest.mark.parametrize("broadcast", [False, True])
def test_back_to_back_loads(broadcast):
    """Two starts: the second load goes into the other half, and is taken only once every
    fill of the first has left."""
    component = TensaurusMlu(cols=2, tlen=2, vlen=2, dw=8, b_chunks=3, tags=4)
    second = 3 * 2 if broadcast else 8
    loads = [matrices([(3, 8), (2, second)], 1), matrices([(2, 8), (4, second)], 2)]
    run, bench = simulate(component, loads, seed_from_env(4), STALLS, engine="pysim",
                          broadcast=broadcast, half=1)
    check(run, bench)
    last_fill = max(cycle for q in range(2) for cycle, fill in
                    bench.streams[f"fills__{q}"].received if fill["half"] == 1)
    (_, first), (taken, second) = bench.streams["start"].accepted
    assert (first["half"], second["half"]) == (1, 0) and taken > last_fill


def fill_cycles(bench, q):
    return [cycle for cycle, _ in bench.streams[f"fills__{q}"].received]


def test_one_word_and_cols_fills_a_cycle():
    """With nothing stalling and the memory answering in order, a load of N words takes
    about N cycles: one read and one word a cycle, each column taking a fill every cycle
    on the same cycles (one read loads ``cols`` chunks)."""
    component = TensaurusMlu(cols=4, tlen=2, vlen=2, dw=8)
    mats = matrices([(20, 16), (10, 16)], 0)
    run, bench = simulate(component, mats, 0, FREE, engine="pysim", window=1)
    check(run, bench)
    words = len(bench.reads)
    assert words == 60 and run.cycles <= words + 6
    cycles = fill_cycles(bench, 0)
    assert all(fill_cycles(bench, q) == cycles for q in range(4))
    assert cycles == list(range(cycles[0], cycles[0] + words))


def test_broadcast_chunk_a_cycle_to_every_column():
    """A broadcast row's chunks go to every column one a cycle, its words read
    ``cols`` chunks at a time: 10 rows of 5 chunks, 3 words each, in about 50 cycles."""
    component = TensaurusMlu(cols=2, tlen=1, vlen=2, dw=8, b_chunks=5)
    mats = matrices([(0, 4), (10, 10)], 0)
    run, bench = simulate(component, mats, 0, FREE, engine="pysim", broadcast=True,
                          window=1)
    check(run, bench)
    assert len(bench.reads) == 30 and run.cycles <= 50 + 6
    cycles = fill_cycles(bench, 0)
    assert fill_cycles(bench, 1) == cycles == list(range(cycles[0], cycles[0] + 50))


@pytest.mark.verilator
def test_larger_load_on_verilator(tmp_path):
    """The paper's 8 columns of VLEN 4, 16 reads in flight: two loads back to back, B
    broadcast, under stalls and out-of-order answers, natively."""
    component = TensaurusMlu(cols=8, tlen=2, vlen=4, dw=16, b_chunks=5, tags=16)
    loads = [matrices([(700, 64), (300, 20)], 5), matrices([(500, 64), (400, 20)], 6)]
    run, bench = simulate(component, loads, seed_from_env(3), STALLS, work_dir=tmp_path,
                          broadcast=True)
    check(run, bench)


@pytest.mark.parametrize("params", [{"tags": 2}, {"tags": 256}, {"cols": 16},
                                    {"vlen": 16}])
def test_parameters_at_the_edge_are_accepted(params):
    assert TensaurusMlu(**params)


@pytest.mark.parametrize("params, message", [
    ({"cols": 0}, "cols=0"), ({"vlen": 17}, "vlen=17"), ({"tags": 512}, "tags=512"),
    ({"tags": 3}, "tags=3"), ({"tags": 1}, "tags=1")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message) as refused:
        TensaurusMlu(**params)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("params", [*TensaurusMlu.REPORT, {"cols": 1, "tlen": 1, "vlen": 1,
                                                           "tags": 2},
                                    {"cols": 3, "tlen": 2, "b_chunks": 5, "tags": 4}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus_mlu", params) == ""
