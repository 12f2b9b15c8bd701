# amaranth: UnusedElaboratable=no
"""CSR to COO, COO to Dense and the composites CSR to Dense and RLC to Dense: directed and
hypothesis matrices on Amaranth's simulator, real matrices natively on Verilator under
back-pressure on every port, the widths at their edges, and ``convert --engine rtl``."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.compose.csr_to_dense import CsrToDense
from sparseforge.hw.compose.rlc_to_dense import RlcToDense
from sparseforge.hw.convert_expand import CooToDense, CsrToCoo
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import Tensor, read_matrix
from sparseforge.tb import convert_expand as tb
from sparseforge.tb.convert import rtl_convert
from tests.test_conversion import FIG8

STREAMS = ("row_ptr", "entries", "records", "shape", "pairs", "dense")
FULL = dict.fromkeys(STREAMS, 1.0)
BLOCKS = ("csr_to_coo", "coo_to_dense", "csr_to_dense", "rlc_to_dense")


def small(kind, lanes=4, width=10, value_width=16, run_bits=3):
    """A small build of ``kind`` for Amaranth's simulator."""
    if kind is CsrToCoo:
        return CsrToCoo(width=width, value_width=value_width)
    if kind is RlcToDense:
        return RlcToDense(lanes=lanes, run_bits=run_bits, width=width, value_width=value_width)
    return kind(lanes=lanes, width=width, value_width=value_width)


def source_of(kind, dense, run_bits=3):
    """``dense`` in the format ``kind`` takes, as the host streams it."""
    if kind is CooToDense:
        return tb.sorted_coo(sp.coo_array(dense))
    if kind is RlcToDense:
        return cv.convert(dense, "rlc", run_bits=run_bits)
    return tb.canonical_csr(sp.csr_array(dense))


def check(kind, matrices, seed=1, rates=None, engine="pysim", **params):
    """Run ``matrices`` (dense arrays) back to back through a build of ``kind``; each result
    must equal the golden converter's. Returns the run's cycles."""
    component = small(kind, **params) if engine == "pysim" else kind(**params)
    sources = [source_of(kind, m, getattr(component, "run_bits", 3)) for m in matrices]
    got, cycles = tb.simulate(component, sources, seed_from_env(seed), rates, engine)
    for result, source in zip(got, sources, strict=True):
        want = cv.convert(source, "coo" if kind is CsrToCoo else "dense")
        assert cv.same(result, want)
        if kind is CsrToCoo:
            assert result.row.dtype == want.row.dtype and result.col.dtype == want.col.dtype
        else:
            assert result.dtype == want.dtype
    return cycles


def matrix(shape, positions, dtype=np.int16):
    """A matrix with nonzeros 1, 2, ... at row-major ``positions``."""
    out = np.zeros(shape, dtype=dtype)
    out.reshape(-1)[positions] = np.arange(1, len(positions) + 1)
    return out


# -- directed, on Amaranth's simulator ------------------------------------------------------

def test_fig8_csr_to_coo_gives_each_nonzero_its_row():
    csr = tb.canonical_csr(sp.csr_array(FIG8))
    (coo,), _ = tb.simulate(small(CsrToCoo, value_width=64), [csr], 1, engine="pysim")
    assert coo.row.tolist() == [0, 0, 1, 2, 2, 3, 3] and coo.col.tolist() == [2, 3, 2, 0, 1, 0, 3]
    assert coo.data.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]


@pytest.mark.parametrize("lanes", [2, 8])
@pytest.mark.parametrize("kind", [CooToDense, CsrToDense, RlcToDense])
def test_fig8_to_dense_with_vectors_inside_rows_and_across_them(kind, lanes):
    check(kind, [FIG8, FIG8.T.copy()], lanes=lanes, value_width=64)


@pytest.mark.parametrize("kind", [CsrToCoo, CooToDense, CsrToDense, RlcToDense])
@pytest.mark.parametrize("rates", [None, FULL])
def test_zero_rows_a_zero_matrix_and_gaps_across_every_jump_back_to_back(kind, rates):
    """Empty rows first, between and last; an all-zero matrix between others; gaps of rows
    taking every mix of jumps of L = 4 rows and of 2 and 1; a single column, and rows
    wider than L with records in one row."""
    tall = matrix((40, 1), [0, 1, 4, 5, 7, 13, 20, 29, 39])    # gaps 1, 3, 1, 2, 6, 7, 9, 10
    wide = matrix((3, 11), [13, 14, 20])                       # rows 0 and 2 empty
    zero = np.zeros((5, 3), dtype=np.int16)
    shapes = [tall, zero, wide, zero, zero, tall] if kind is not RlcToDense else [tall, tall]
    if kind is RlcToDense:
        shapes.insert(1, np.zeros((40, 1), dtype=np.int16))
    check(kind, shapes, rates=rates)


def test_one_vector_a_cycle_through_zeros_and_a_record_a_cycle_within_a_vector():
    """Without stalls, 64 x 64 in vectors of 8: once the first vector is out (after the walk
    to the matrix's end, 8 rows a cycle, where no record comes first), the zeros leave a
    vector a cycle whatever lies between; a dense 8 x 64 a record a cycle."""
    unit = small(CooToDense, lanes=8, width=16)
    for dense, gap in ((np.zeros((64, 64), np.int16), 1), (matrix((64, 64), [0, 4095]), 1),
                       (np.ones((8, 64), np.int16), 8)):
        bench = tb.bench(unit, [tb.sorted_coo(sp.coo_array(dense))], 0, FULL)
        got = pysim(bench)
        assert np.array_equal(tb.rebuild(unit, [dense], got.outputs)[0], dense)
        taken = [cycle for cycle, _ in bench.sinks[0].received]
        assert len(taken) == dense.size // 8 and set(np.diff(taken)) == {gap}
        assert taken[0] <= 64 // 8 + 9, taken[0]      # the walk to row 64, the latency


def test_csr_to_coo_gives_a_record_a_cycle():
    dense = np.arange(1, 401, dtype=np.int16).reshape(20, 20)
    cycles = check(CsrToCoo, [dense], rates=FULL)
    assert cycles <= 400 + 20 + 6


# -- hypothesis matrices through every block ---------------------------------------------------

@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([CsrToCoo, CooToDense, CsrToDense, RlcToDense]),
       st.sampled_from([2, 4, 8]),
       st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9), st.floats(0, 1)),
                min_size=1, max_size=3),
       st.integers(0, 2**16))
def test_hypothesis_matrices_back_to_back_under_back_pressure(kind, lanes, shapes, seed):
    rng = np.random.default_rng(seed)
    if kind is RlcToDense:
        shapes = [(shapes[0][0], shapes[0][1], d) for _, _, d in shapes]
    matrices = [(rng.integers(-99, 100, (r, c)) * (rng.random((r, c)) < d)).astype(np.int16)
                for r, c, d in shapes]
    rates = {s: 0.3 + 0.7 * rng.random() for s in STREAMS}
    check(kind, matrices, seed, rates, lanes=lanes)


# -- refusals, at the edges ------------------------------------------------------------------

def test_the_widest_shapes_are_accepted_and_the_first_past_them_refused():
    for shape in ((65536, 65536), (2**32 - 1, 1), (1, 2**32 - 1)):
        tb.check_shape(shape, 32)
    for shape in ((65537, 65536), (2**32, 1), (1, 2**32)):
        with pytest.raises(ParameterError, match=f"a {shape[0]} x {shape[1]} matrix does not "
                                                 "fit the block's 32-bit rows"):
            tb.check_shape(shape, 32)
    with pytest.raises(ParameterError, match="a 0 x 3 matrix has no elements"):
        tb.check_shape((0, 3), 32)


def test_csr_to_coo_takes_2_to_the_32_rows_and_fewer_nonzeros_and_no_more():
    for shape, nnz in (((2**32, 2**32), 2**32 - 1),):
        tb.check_csr(SimpleNamespace(shape=shape, nnz=nnz), 32)
    for shape, nnz in (((2**32 + 1, 1), 0), ((1, 2**32 + 1), 0), ((2**32, 2**32), 2**32)):
        with pytest.raises(ParameterError, match="does not fit the block's 32-bit rows"):
            tb.check_csr(SimpleNamespace(shape=shape, nnz=nnz), 32)


@pytest.mark.parametrize("kind", [CooToDense, CsrToDense, RlcToDense])
def test_the_widest_legal_shapes_run_through_a_narrow_build(kind):
    """6-bit positions: 8 x 8 fills all 64 (the final position wraps to 63), 63 columns
    is the most; 9 x 8 and 64 columns are refused."""
    rng = np.random.default_rng(5)
    for shape in ((8, 8), (1, 63)):
        dense = (rng.integers(1, 9, shape) * (rng.random(shape) < 0.5)).astype(np.int16)
        dense[-1, -1] = 3
        check(kind, [dense], width=6)
    for shape in ((9, 8), (1, 64)):
        with pytest.raises(ParameterError, match=f"a {shape[0]} x {shape[1]} matrix .*does "
                                                 "not fit the block's 6-bit"):
            check(kind, [np.ones(shape, dtype=np.int16)], width=6)


def test_csr_to_coo_a_narrow_build_at_its_widths():
    """4-bit rows, columns and pointers: 16 x 16 with 15 nonzeros, the last at (15, 15);
    16 nonzeros are refused."""
    dense = np.zeros((16, 16), dtype=np.int16)
    dense.reshape(-1)[np.linspace(0, 255, 15).astype(int)] = np.arange(1, 16)
    check(CsrToCoo, [dense], width=4)
    dense[0, 1] = 16
    with pytest.raises(ParameterError, match="16 nonzeros does not fit the block's 4-bit"):
        check(CsrToCoo, [dense], width=4)


def test_a_dense_result_past_the_hosts_limit_is_refused():
    with pytest.raises(ParameterError, match="MAX_AREA"):
        tb.check_area((1 << 15, (cv.MAX_AREA >> 15) + 1))
    tb.check_area((1 << 15, cv.MAX_AREA >> 15))


def test_a_vector_in_coo_and_values_past_the_width_are_refused_in_one_line():
    with pytest.raises(ParameterError, match="take matrices, not a 1-D tensor"):
        tb.CONVERSIONS["coo", "dense"](Tensor(np.array([[1]]), np.array([1.0]), (2,)),
                                       None, None, 1)
    coo = tb.sorted_coo(sp.coo_array(np.ones((2, 2), dtype=np.int32)))
    with pytest.raises(ParameterError, match="int32 values do not fit the block's 16-bit"):
        tb.bench(small(CooToDense), [coo], 0)
    rlc = cv.convert(np.ones((2, 2), dtype=np.int16), "rlc", run_bits=4)
    with pytest.raises(ParameterError, match="4-bit runs: this bench streams 2 x 2 matrices "
                                             "of the block's 3-bit runs"):
        tb.bench(small(RlcToDense), [rlc], 0)


# -- parameters, signatures, Verilog ---------------------------------------------------------

@pytest.mark.parametrize("name", BLOCKS)
def test_every_report_configuration_builds_and_a_bad_parameter_is_named(name):
    block = get(name)
    for config in block.cls.REPORT:
        block.cls(**block.resolve(config))
    with pytest.raises(ParameterError, match=r"width=3: expected an integer in \[4, 64\]"):
        block.cls(**block.resolve({"width": 3}))


def test_the_composites_ports_are_their_parts():
    csr, coo = CsrToDense(), CsrToCoo()
    dense = CooToDense()
    members = dict(csr.signature.members)
    assert members["row_ptr"] == coo.signature.members["row_ptr"]
    assert members["dense"] == dense.signature.members["dense"]
    assert set(RlcToDense().signature.members) == {"pairs", "columns", "shape", "dense"}


@pytest.mark.parametrize(("name", "params"), [
    ("csr_to_coo", {}), ("csr_to_coo", {"width": 4, "value_width": 1}),
    ("coo_to_dense", {}), ("coo_to_dense", {"lanes": 2, "width": 4, "value_width": 1}),
    pytest.param("coo_to_dense", {"lanes": 32, "width": 64, "value_width": 64},
                 marks=pytest.mark.soak),
    ("csr_to_dense", {}), ("rlc_to_dense", {})])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


# -- real matrices, natively on Verilator ------------------------------------------------------

def real(shared_data, name):
    return read_matrix(shared_data / "matrices" / name)


def random_rates(seed, streams):
    rng = np.random.default_rng(seed)
    return {s: 0.4 + 0.5 * rng.random() for s in streams}


@pytest.mark.verilator
@pytest.mark.parametrize("name", [    # the small ones here, the larger ones in the soak
    "suitesparse/ash219.mtx", pytest.param("suitesparse/494_bus.mtx", marks=pytest.mark.soak)])
def test_csr_to_dense_real_matrices_back_to_back_under_back_pressure(shared_data, name):
    """A real matrix, an all-zero one and the real one again, as one composite run, every
    port stalling at random."""
    a = real(shared_data, name)
    seed = seed_from_env(11)
    check(CsrToDense, [a, np.zeros((37, 100)), a], seed, random_rates(seed, STREAMS), "native",
          lanes=tb.LANES, width=tb.WIDTH, value_width=64)


@pytest.mark.soak          # the default run's RLC to Dense: convert --engine rtl below
@pytest.mark.verilator
@pytest.mark.parametrize("name", ["suitesparse/ash219.mtx", "suitesparse/494_bus.mtx"])
def test_rlc_to_dense_real_matrices_back_to_back_under_back_pressure(shared_data, name):
    a = real(shared_data, name)
    seed = seed_from_env(12)
    check(RlcToDense, [a, np.zeros(a.shape), a], seed, random_rates(seed, STREAMS), "native",
          lanes=tb.LANES, run_bits=5, width=tb.WIDTH, value_width=64)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("name", ["suitesparse/bcspwr10.mtx", "graphs/email-Eu-core.mtx",
                                  "pypi/pyamg_bar.mtx", "suitesparse/west0479.mtx"])
def test_soak_csr_to_coo_larger_real_matrices_back_to_back(shared_data, name, seed):
    a = real(shared_data, name)
    s = seed_from_env(100 + seed)
    check(CsrToCoo, [a, a], s, random_rates(s, STREAMS), "native", width=tb.WIDTH,
          value_width=64)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("kind", [CooToDense, CsrToDense, RlcToDense])
@pytest.mark.parametrize("name", ["graphs/email-Eu-core.mtx", "pypi/pyamg_bar.mtx",
                                  "suitesparse/west0479.mtx"])
def test_soak_to_dense_larger_real_matrices(shared_data, name, kind):
    """Up to 1,005 square (126k dense vectors): the time goes into unpacking them."""
    params = {"run_bits": 5} if kind is RlcToDense else {}
    s = seed_from_env(200)
    check(kind, [real(shared_data, name)], s, random_rates(s, STREAMS), "native",
          lanes=tb.LANES, width=tb.WIDTH, value_width=64, **params)


def test_a_tensor_in_coo_goes_through_as_the_matrix_of_its_fibers():
    """(i, j, k) is row i * J + j of the (I * J) x K matrix a dense tensor is laid out as;
    coordinates and values all differ, so a swapped mode or a wrong stride shows."""
    tensor = Tensor(np.array([[0, 0, 3], [0, 2, 1], [1, 0, 0], [1, 2, 3]]),
                    np.array([1.0, 2.0, 3.0, 4.0]), (2, 3, 4))
    got, stages = rtl_convert(tensor, "dense")
    np.testing.assert_array_equal(got, cv.convert(tensor, "dense"))
    assert [s.block for s in stages] == ["coo_to_dense"]
