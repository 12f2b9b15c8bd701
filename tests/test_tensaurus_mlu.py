# amaranth: UnusedElaboratable=no
"""The Tensaurus MLU: every chunk of one or two matrices reaches the scratchpad of its PE
column, in order, under random memory latency and random stalls."""

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.interfaces import chunk_layout
from sparseforge.hw.tensaurus_mlu import TensaurusMlu
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw.wire import chunk_words
from sparseforge.tb.tensaurus_mlu import simulate

STALLS = {"start": 1.0, "request": 0.6, "response": 0.5, "fills": 0.4}


def matrices(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(-100, 100, shape) for shape in shapes]


@pytest.mark.parametrize("vlen, dw", [(1, 2), (3, 8), (4, 32)])
def test_host_chunk_words_are_the_mlu_port_layout(vlen, dw):
    """The host's chunk words, wider than 64 bits and at both ends of the range, hold
    each chunk's values as the MLU's memory port lays them out."""
    low, high = -(1 << (dw - 1)), (1 << (dw - 1)) - 1
    matrix = np.random.default_rng(dw).integers(low, high, (3, 2 * vlen), endpoint=True)
    matrix[0, 0], matrix[-1, -1] = low, high
    chunks = matrix.reshape(-1, vlen)
    assert list(chunk_words(matrix, vlen, dw)) == [
        chunk_layout(vlen, dw).const(chunk.tolist()).as_bits() for chunk in chunks]


@pytest.mark.parametrize("cols, tlen, vlen", [(1, 1, 1), (2, 2, 2), (3, 2, 1)])
@pytest.mark.parametrize("rows", [(5,), (4, 3), (0, 3), (1, 1)])
def test_directed_loads(cols, tlen, vlen, rows):
    rank = cols * tlen * vlen
    component = TensaurusMlu(cols=cols, tlen=tlen, vlen=vlen, dw=8)
    mats = matrices([(r, rank) for r in rows], cols + tlen)
    for half, seed, rates in ((0, seed_from_env(1), None), (1, seed_from_env(2), STALLS)):
        run, bench = simulate(component, mats, seed, rates, engine="pysim", half=half)
        assert run.reads == bench.reads
        assert run.fills == bench.want
        assert all(fill["half"] == half for fills in run.fills for fill in fills)


@pytest.mark.parametrize("cols, tlen, vlen, b_chunks", [(1, 1, 1, 3), (2, 2, 2, 1),
                                                        (3, 1, 2, 2)])
@pytest.mark.parametrize("rows", [(4, 3), (0, 3), (2, 0)])
def test_directed_broadcast_loads(cols, tlen, vlen, b_chunks, rows):
    """TTMc: operand 0 split by column, operand 1's rows whole into every column."""
    component = TensaurusMlu(cols=cols, tlen=tlen, vlen=vlen, dw=8, b_chunks=b_chunks)
    mats = matrices([(rows[0], cols * tlen * vlen), (rows[1], b_chunks * vlen)], cols)
    for seed, rates in ((seed_from_env(1), None), (seed_from_env(2), STALLS)):
        run, bench = simulate(component, mats, seed, rates, engine="pysim", broadcast=True)
        assert run.reads == bench.reads
        assert run.fills == bench.want


def test_one_chunk_a_cycle():
    component = TensaurusMlu(cols=2, tlen=2, vlen=2, dw=8)
    mats = matrices([(20, 8), (10, 8)], 0)
    run, bench = simulate(component, mats, 0, dict.fromkeys(STALLS, 1.0), engine="pysim")
    assert run.fills == bench.want
    assert run.cycles <= len(bench.reads) + 6


@pytest.mark.verilator
def test_larger_load_on_verilator(tmp_path):
    component = TensaurusMlu(cols=2, tlen=3, vlen=4, dw=16)
    mats = matrices([(700, 24), (500, 24)], 5)
    run, bench = simulate(component, mats, seed_from_env(3), STALLS, work_dir=tmp_path)
    assert run.reads == bench.reads and run.fills == bench.want


@pytest.mark.parametrize("params, message", [({"cols": 0}, "cols=0"), ({"vlen": 17}, "vlen=17")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        TensaurusMlu(**params)


@pytest.mark.parametrize("params", [{}, {"cols": 1, "tlen": 1, "vlen": 1}, {"cols": 3},
                                    {"cols": 3, "tlen": 2, "b_chunks": 5}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus_mlu", params) == ""
