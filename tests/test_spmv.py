# amaranth: UnusedElaboratable=no
"""The SpMV engine: A's stream, the chained model, the RTL on both simulators, lint."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.core.data import bundled
from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.spmv_tailor import SpmvTailor
from sparseforge.hw.spmv import SpmvMac
from sparseforge.sim.models.spmv import spmv_tailor
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.traces import rcm_order, spmv_stream, spmv_tiles
from sparseforge.sw.wire import spmv_entry, unpack
from sparseforge.tb.spmv import SpmvBench

WIDTHS = {"x_width": 16, "value_width": 16, "acc_width": 48}
ALL_IN = dict.fromkeys(("fill", "owfill", "a", "y"), 1.0)


def integer_case(matrix, seed, rows_per_tile):
    """The trace, A's stream and scipy's y of ``matrix`` with random integer values."""
    rng = np.random.default_rng(seed)
    a = sp.csr_array(matrix, dtype=np.int64)
    a.data = rng.integers(-(1 << 15), 1 << 15, a.nnz)
    x = rng.integers(0, 1 << 16, a.shape[1])
    trace = spmv_tiles(a, x, rows_per_tile)
    stream = spmv_stream(trace, WIDTHS["value_width"])
    return trace, stream, (trace.matrix @ x)[stream.rows]


def bcspwr01(seed=0):
    return integer_case(rcm_order(read_matrix(bundled("bcspwr01.mtx"))), seed, 6)


def run(params, case, seed, rates=None):
    trace, stream, golden = case
    bench = SpmvBench(SpmvTailor(**params), trace.tiles, stream, golden, seed, rates)
    pysim(bench)
    return bench


# -- A's stream and the chained model -------------------------------------------

def test_stream_has_one_entry_per_read_and_marks_rows_and_tiles():
    trace, stream, _ = bcspwr01()
    a = trace.matrix
    assert stream.index.size == len(trace.nonzero) > a.nnz
    assert stream.row_end.sum() == len(trace.rows) == sum(t["passes"] for t in trace.tiles)
    assert stream.tile_end.sum() == len(trace.tiles) and stream.tile_end[-1] == 1
    nonzero = np.asarray(trace.nonzero)
    assert np.array_equal(stream.value[nonzero >= 0], a.data[nonzero[nonzero >= 0]])
    assert not stream.value[nonzero < 0].any()
    fields = unpack(spmv_entry(5, 16), stream.words(5, 16))
    assert np.array_equal(fields["index"], stream.index)
    assert np.array_equal(fields["value"] - (fields["value"] >> 15 << 16), stream.value)


def test_stream_refuses_values_that_are_not_integers_of_the_width():
    trace, _, _ = bcspwr01()
    a = trace.matrix.astype(float)
    a.data[0] = 0.5
    with pytest.raises(ParameterError, match="value_width"):
        spmv_stream(spmv_tiles(a, trace.x, 6), 16)
    with pytest.raises(ParameterError, match="value_width"):
        spmv_stream(trace, 8)


@pytest.mark.parametrize("depth, fifo", [(4, 1), (8, 2), (64, 16)])
def test_chained_model_computes_the_product(depth, fifo):
    trace, stream, golden = bcspwr01()
    ys = spmv_tailor(depth, fifo, [t["values"] for t in trace.tiles], stream.entries())
    assert ys == golden.tolist()


# -- the RTL on Amaranth's simulator --------------------------------------------

@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("depth, fifo, rows", [(4, 1, 3), (8, 2, 6), (16, 4, 12)])
def test_y_from_the_rtl_equals_scipy_under_random_stalls(depth, fifo, rows, seed):
    seed = seed_from_env(seed)
    matrix = sp.random_array((60, 60), density=0.08, rng=seed, format="csr")
    case = integer_case(matrix, seed, rows)
    longest = max(t["length"] for t in case[0].tiles)
    assert longest > depth                               # some tiles overbook
    tile = 1 << max(longest - 1, depth).bit_length()
    bench = run({"depth": depth, "fifo": fifo, "tile": tile, **WIDTHS}, case, seed,
                {"fill": 0.6, "owfill": 0.5, "a": 0.7, "y": 0.4})
    assert bench.y == case[2].tolist() and bench.tiles_done == len(case[0].tiles)
    assert bench.result().owfills > 0


def test_one_entry_per_cycle_while_x_is_present():
    matrix = sp.csr_array(np.ones((4, 6), dtype=np.int64))
    case = integer_case(matrix, 0, 4)                    # one tile of 6 fits depth 8
    bench = run({"depth": 8, "fifo": 2, "tile": 16, **WIDTHS}, case, 0, ALL_IN)
    cycles = [c for c, _ in bench.sources["a"].accepted]
    assert cycles[6:] == list(range(cycles[6], cycles[6] + 18))   # rows 1..3 back to back
    assert bench.sink.received[-1][0] == cycles[-1] + 3


def test_a_wider_y_keeps_full_sums():
    case = bcspwr01(1)
    bench = run({"depth": 8, "fifo": 2, "tile": 32, "x_width": 16, "value_width": 16,
                 "acc_width": 64}, case, 1)
    assert bench.y == case[2].tolist()


@pytest.mark.parametrize("kwargs, name", [({"acc_width": 31}, "acc_width"),
                                          ({"fifo": 64}, "fifo"), ({"tile": 32}, "tile"),
                                          ({"x_width": 0}, "x_width")])
def test_bad_parameters_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        SpmvTailor(**kwargs)


def test_the_mac_rejects_a_narrow_y():
    with pytest.raises(ParameterError, match="acc_width"):
        SpmvMac(x_width=32, value_width=32, acc_width=48)


# -- Verilog ----------------------------------------------------------------------

@pytest.mark.parametrize("name, params", [
    ("spmv_tailor", {"depth": 8, "fifo": 2, "tile": 32}),
    ("spmv_tailor", SpmvTailor.REPORT[0]),
    ("spmv_mac", SpmvMac.REPORT[0]),
])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


@pytest.mark.verilator
def test_y_from_verilator_equals_scipy(tmp_path):
    seed = seed_from_env(7)
    trace, stream, golden = case = bcspwr01(seed)
    params = {"depth": 8, "fifo": 2, "tile": 32, **WIDTHS}
    rtl = verilator("spmv_tailor", "sparseforge.tb.spmv", params=params, seed=seed,
                    args={"tiles": trace.tiles, "stream": stream, "golden": golden},
                    work_dir=tmp_path).result
    assert rtl.y == golden.tolist() and rtl.owfills > 0
    assert rtl == run(params, case, seed).result()
