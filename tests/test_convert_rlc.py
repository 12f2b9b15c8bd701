# amaranth: UnusedElaboratable=no
"""RLC to COO (MINT Fig. 8d) and Dense to RLC: the stream units, directed runs on Amaranth's
simulator, real matrices natively on Verilator against the golden converter, and
``convert --engine rtl``."""

import random
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_rlc import (
    DenseToRlc,
    DenseToRlcSignature,
    EndMarker,
    RlcToCoo,
    RlcToCooSignature,
    Serializer,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import read_matrix
from sparseforge.tb import native
from sparseforge.tb.convert_rlc import (
    LANES,
    PAIRS,
    RECORDS,
    WIDTH,
    DenseRlcBench,
    RlcBench,
    UnitBench,
    dense_component,
    record_columns,
    records_to_coo,
    run,
    run_dense,
    vectors_to_rlc,
)

FULL = {"pairs": 1.0, "records": 1.0}


def rlc_at(shape, positions, run_bits, dtype=np.int16):
    """The RLC of a matrix with nonzeros 1, 2, ... at row-major ``positions``."""
    dense = np.zeros(shape, dtype=dtype)
    dense.reshape(-1)[positions] = np.arange(1, len(positions) + 1)
    return cv.convert(dense, "rlc", run_bits=run_bits)


def assert_same(coo, golden):
    """The same nonzeros in the same order, of the same types."""
    for name in ("row", "col", "data"):
        got, want = getattr(coo, name), getattr(golden, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert coo.shape == golden.shape


def convert_all(component, matrices, seed, rates=None):
    """Each matrix's COO from one run of ``matrices`` back to back on Amaranth's simulator,
    and the run's result."""
    result = pysim(RlcBench(component, matrices, seed_from_env(seed), rates))
    out, start = [], 0
    for m in matrices:
        n = int(np.count_nonzero(m.values))
        part = {k: v[start:start + n] for k, v in result.records.items()}
        out.append(records_to_coo(part, m.shape, m.dtype))
        start += n
    return out, result


# -- the stream units ----------------------------------------------------------------

def test_serializer_sends_the_marked_items_and_drops_the_rest():
    rng = random.Random(1)
    vectors, want = [], []
    for n in range(200):
        mask = rng.choice([0, 0, 1, 0b1000, 0b1111, rng.randrange(16)])
        items = [rng.randrange(256) for _ in range(4)]
        last = n % 7 == 6 and mask != 0
        vectors.append({"items": items, "mask": mask, "last": int(last)})
        marked = [i for i in range(4) if mask >> i & 1]
        want += [{"item": items[i], "last": int(last and i == marked[-1])} for i in marked]
    unit = Serializer(8, 4)
    for rate in (0.7, 1.0):
        out = pysim(UnitBench(unit, {"vectors": vectors}, {"items": len(want)}, 3, rate))
        assert out.outputs["items"] == want


def test_serializer_takes_an_unmarked_vector_while_the_one_before_drains():
    unit = Serializer(8, 2)
    vectors = [{"items": [1, 2], "mask": 3, "last": 0}, *[{"items": [0, 0], "mask": 0,
                                                           "last": 0}] * 3,
               {"items": [5, 6], "mask": 1, "last": 1}]
    out = pysim(UnitBench(unit, {"vectors": vectors}, {"items": 3}, 0, rate=1.0))
    assert [i["item"] for i in out.outputs["items"]] == [1, 2, 5]
    assert out.cycles <= 3 + 2 + 2          # three items, the latency, the end


# -- the converter on Amaranth's simulator -------------------------------------------

@pytest.mark.parametrize("lanes", [2, 4, 8])
@pytest.mark.parametrize("rates", [None, FULL])
def test_runs_at_exactly_the_maximum_fillers_and_runs_across_rows(lanes, rates):
    # 3-bit runs (max 7) on 5 x 6: position 0 (run 0), then a gap of exactly 7 (run 7, no
    # filler), of 8 (a filler and run 0), of 11 across two rows (a filler and run 3), and
    # the matrix's last element; in a second matrix a gap of 24 (three fillers, a vector of
    # fillers only at two lanes).
    a = rlc_at((5, 6), [0, 8, 17, 29], 3)
    b = rlc_at((5, 6), [3, 4, 29], 3)
    assert a.runs.tolist() == [0, 7, 7, 0, 7, 3] and a.values.tolist() == [1, 2, 0, 3, 0, 4]
    assert (b.values == 0).sum() == 3 and b.runs[-1] == 0
    unit = RlcToCoo(lanes=lanes, run_bits=3, width=5, value_width=16)
    got, _ = convert_all(unit, [a, b, a], lanes, rates)
    for coo, m in zip(got, [a, b, a], strict=True):
        assert_same(coo, cv.convert(m, "coo"))


def test_a_run_of_fillers_longer_than_a_vector_and_a_negative_zero_filler():
    rlc = rlc_at((40, 50), [0, 1, 700, 1999], 4, np.float64)
    assert (rlc.values == 0).sum() >= 8                     # fillers fill whole vectors
    values = rlc.values.copy()
    values[values == 0] = -0.0                              # still fillers: dropped
    odd = cv.RLC(rlc.runs, values, rlc.shape, rlc.run_bits)
    got, _ = convert_all(RlcToCoo(lanes=4, run_bits=4, width=11, value_width=64), [odd], 3)
    assert_same(got[0], cv.convert(rlc, "coo"))


def test_an_empty_matrix_emits_nothing_and_ends_no_other():
    empty = cv.convert(np.zeros((5, 6), dtype=np.int16), "rlc", run_bits=3)
    a = rlc_at((5, 6), [2, 3, 4, 5, 6, 11, 20], 3)
    assert len(empty.runs) == 0
    got, result = convert_all(RlcToCoo(lanes=4, run_bits=3, width=5, value_width=16),
                              [empty, a, empty, empty, a], 4)
    assert [g.nnz for g in got] == [0, 7, 0, 0, 7]
    assert np.flatnonzero(result.records["last"]).tolist() == [6, 13]
    assert_same(got[1], cv.convert(a, "coo"))


def test_bool_values_one_bit_wide():
    dense = np.random.default_rng(3).random((9, 13)) < 0.3
    rlc = cv.convert(dense, "rlc", run_bits=2)
    got, _ = convert_all(RlcToCoo(lanes=4, run_bits=2, width=7, value_width=1), [rlc], 5)
    assert_same(got[0], cv.convert(rlc, "coo"))


def test_one_record_a_cycle_after_the_documented_latency():
    dense = np.arange(1, 201, dtype=np.int16).reshape(10, 20)   # no fillers: 200 records
    rlc = cv.convert(dense, "rlc", run_bits=5)
    unit = RlcToCoo(lanes=8, run_bits=5, width=8, value_width=16)
    bench = RlcBench(unit, [rlc], 0, FULL)
    pysim(bench)
    taken = [c for c, _ in bench.sink.received]
    assert taken[0] - bench.source.accepted[0][0] == unit.latency
    assert np.diff(taken).tolist() == [1] * 199


def test_the_bench_refuses_what_the_block_cannot_hold():
    a = rlc_at((5, 6), [1], 3)
    with pytest.raises(ParameterError, match="3-bit runs"):
        RlcBench(RlcToCoo(lanes=2, run_bits=4, width=8, value_width=16), [a], 0)
    with pytest.raises(ParameterError, match="4-bit positions"):
        RlcBench(RlcToCoo(lanes=2, run_bits=3, width=4, value_width=16), [a], 0)
    with pytest.raises(ParameterError, match="8-bit values"):
        RlcBench(RlcToCoo(lanes=2, run_bits=3, width=8, value_width=8), [a], 0)



def test_the_rtl_block_holds_2_to_the_32_elements_and_refuses_one_row_more():
    unit = RlcToCoo(lanes=LANES, run_bits=5, width=WIDTH, value_width=64)
    for shape, fits in (((65536, 65536), True), ((65537, 65536), False)):
        matrix = SimpleNamespace(shape=shape, run_bits=5, values=np.ones(1))
        if fits:
            assert RlcBench._check(unit, [matrix]) == shape
        else:
            with pytest.raises(ParameterError, match="a 65537 x 65536 matrix does not fit the "
                                                     "block's 32-bit positions"):
                RlcBench._check(unit, [matrix])


# -- parameters, interface, Verilog, synthesis report ---------------------------------

@pytest.mark.parametrize(("params", "message"), [
    ({"lanes": 3}, r"lanes=3: expected a power of two in \[2, 64\]"),
    ({"lanes": 1}, "lanes=1"), ({"run_bits": 0}, "run_bits=0"), ({"width": 65}, "width=65"),
    ({"value_width": 0}, "value_width=0"),
])
def test_bad_parameters_are_named_with_their_range(params, message):
    with pytest.raises(ParameterError, match=message):
        RlcToCoo(**params)


def test_the_block_declares_its_signature_and_its_report_builds():
    unit = RlcToCoo(lanes=4, run_bits=6, width=20, value_width=12)
    assert dict(unit.signature.members) == dict(RlcToCooSignature(4, 6, 20, 12).members)
    block = get("rlc_to_coo")
    for config in block.cls.REPORT:
        block.cls(**block.resolve(config))


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "run_bits": 1, "width": 2,
                                         "value_width": 1}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("rlc_to_coo", params) == ""


# -- real matrices, natively on Verilator ------------------------------------------------

REAL = [("pypi/pyamg_bar.mtx", 5), ("suitesparse/494_bus.mtx", 5),
        ("graphs/email-Eu-core.mtx", 5), ("suitesparse/west0479.mtx", 8)]


@pytest.mark.verilator
def test_native_and_amaranth_runs_agree_cycle_for_cycle():
    matrices = [rlc_at((5, 6), [0, 8, 17, 29], 3), rlc_at((5, 6), [3, 4, 29], 3)]

    def make():
        return RlcBench(RlcToCoo(lanes=4, run_bits=3, width=5, value_width=16), matrices * 2, 7)

    python, rtl = pysim(make()), native.run(make())
    assert rtl.cycles == python.cycles
    records = record_columns(rtl.outputs[RECORDS])
    assert all(np.array_equal(records[k], python.records[k]) for k in records)


@pytest.mark.verilator
@pytest.mark.parametrize(("name", "run_bits"), [    # one per run width, the rest soak
    case if case[0].startswith("suitesparse/") else pytest.param(*case, marks=pytest.mark.soak)
    for case in REAL])
def test_real_matrices_under_back_pressure_match_the_golden_converter(shared_data, name,
                                                                     run_bits):
    rlc = cv.convert(read_matrix(shared_data / "matrices" / name), "rlc", run_bits=run_bits)
    coo, cycles = run(rlc, seed=seed_from_env(len(name)))
    assert_same(coo, cv.convert(rlc, "coo"))
    assert cycles >= coo.nnz


@pytest.mark.verilator
def test_one_nonzero_a_cycle_on_a_real_matrix(shared_data):
    """pyamg_bar (6.5% dense): 32k pairs, 23k nonzeros; the vectors come faster than the
    records leave, so the output is the bound."""
    rlc = cv.convert(read_matrix(shared_data / "matrices/pypi/pyamg_bar.mtx"), "rlc")
    unit = RlcToCoo(lanes=8, run_bits=5, width=WIDTH, value_width=64)
    out = native.run(RlcBench(unit, [rlc], 1, FULL))
    nnz = int(np.count_nonzero(rlc.values))
    assert out.cycles <= 1.01 * nnz + unit.latency
    assert_same(records_to_coo(record_columns(out.outputs[RECORDS]), rlc.shape, rlc.dtype),
                cv.convert(rlc, "coo"))


def test_complex_values_are_refused_by_the_rtl_engine():
    rlc = cv.convert(np.array([[1j, 0], [0, 2]]), "rlc")
    with pytest.raises(ParameterError, match="complex"):
        run(rlc)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("name", "run_bits"), [
    ("graphs/cora_features.mtx", 5), ("graphs/nr-web-spam.mtx", 8),
    ("suitesparse/Franz6_id1959_aug.mtx", 10), ("graphs/3elt.mtx", 10),
    ("graphs/ego-Facebook.mtx", 7)])
def test_soak_larger_real_matrices(shared_data, name, run_bits, seed):
    rlc = cv.convert(read_matrix(shared_data / "matrices" / name), "rlc", run_bits=run_bits)
    coo, _ = run(rlc, seed=seed_from_env(100 + seed))
    assert_same(coo, cv.convert(rlc, "coo"))


# -- Dense to RLC -----------------------------------------------------------------------

DENSE_FULL = {"dense": 1.0, "pairs": 1.0}


def encode_all(component, matrices, seed, rates=None):
    """Each matrix's RLC from one run of ``matrices`` back to back on Amaranth's simulator
    (every vector checked against the host encoder's), and the run's cycles."""
    bench = DenseRlcBench(component, matrices, seed_from_env(seed), rates)
    words = pysim(bench).outputs[PAIRS]
    assert words == bench.outputs[PAIRS]
    out, start = [], 0
    for m, n in zip(matrices, bench.counts, strict=True):
        out.append(vectors_to_rlc(words[start:start + n], component, m.shape, m.dtype))
        start += n
    return out, bench.cycle


def assert_same_rlc(got, want):
    assert got.shape == want.shape and got.run_bits == want.run_bits
    for name in ("runs", "values"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_end_marker_puts_last_on_each_sequences_final_kept_item():
    items = [(1, 1, 0), (2, 0, 0), (3, 1, 0), (0, 0, 1),        # ends after a dropped one
             (0, 0, 1),                                          # a sequence of none
             (4, 1, 0), (5, 1, 1),                               # kept and ending, one held
             (6, 1, 1),                                          # kept and ending, alone
             (7, 0, 0), (8, 1, 0), (9, 0, 1)]
    given = [{"item": i, "keep": k, "end": e} for i, k, e in items]
    want = [(1, 0), (3, 1), (4, 0), (5, 1), (6, 1), (8, 1)]
    for rate in (0.6, 1.0):
        out = pysim(UnitBench(EndMarker(8), {"given": given}, {"taken": len(want)}, 2, rate))
        assert [(t["item"], t["last"]) for t in out.outputs["taken"]] == want


def test_a_fig_8d_sized_matrix_with_fillers_across_rows_and_a_trailing_run():
    # 2-bit runs (max 3) on 4 x 6: a gap of exactly 3 (no filler), of 4 (a filler, run
    # 0), none, of 9 across an all-zero row (two fillers, run 1); the row before ends in
    # a nonzero, the last one in a run of zeros, which RLC leaves implicit.
    dense = np.zeros((4, 6), dtype=np.int16)
    dense.reshape(-1)[[1, 5, 10, 11, 21]] = [3, 7, 2, 9, 4]
    want = cv.convert(dense, "rlc", run_bits=2)
    assert want.runs.tolist() == [1, 3, 3, 0, 0, 3, 3, 1]
    assert want.values.tolist() == [3, 7, 0, 2, 9, 0, 0, 4]
    for lanes, rates in ((2, None), (4, DENSE_FULL), (8, None)):
        unit = DenseToRlc(lanes=lanes, run_bits=2, width=5, value_width=16)
        got, _ = encode_all(unit, [dense, dense], lanes, rates)
        for g in got:
            assert_same_rlc(g, want)


@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_gaps_of_exactly_the_longest_run_one_more_and_many_fillers(lanes):
    # 3-bit runs: gaps of 7 (run 7), 8 (a filler and run 0), 100 (12 fillers, more than a
    # vector, and run 4), between fillers ending inside one vector; then trailing zeros.
    dense = np.zeros((9, 17), dtype=np.int8)
    positions = np.cumsum([0, 8, 9, 101, 1, 2])
    dense.reshape(-1)[positions] = np.arange(1, len(positions) + 1)
    want = cv.convert(dense, "rlc", run_bits=3)
    assert (want.values == 0).sum() == 1 + 12
    unit = DenseToRlc(lanes=lanes, run_bits=3, width=8, value_width=8)
    got, _ = encode_all(unit, [dense], lanes)
    assert_same_rlc(got[0], want)


def test_one_bit_runs_fill_inside_a_vector():
    # With 1-bit runs a filler covers two elements, so a vector of 8 holds up to three
    # before a nonzero; values that differ in every lane, bool values one bit wide.
    rng = np.random.default_rng(5)
    dense = rng.random((6, 11)) < 0.15
    unit = DenseToRlc(lanes=8, run_bits=1, width=7, value_width=1)
    got, _ = encode_all(unit, [dense], 3)
    assert_same_rlc(got[0], cv.convert(dense, "rlc", run_bits=1))


def test_an_all_zero_matrix_sends_nothing_and_ends_no_other():
    zero = np.zeros((5, 7), dtype=np.int16)
    some = np.zeros((5, 7), dtype=np.int16)
    some[1, 2], some[4, 6] = -3, 8
    unit = DenseToRlc(lanes=4, run_bits=3, width=6, value_width=16)
    got, _ = encode_all(unit, [zero, some, zero, zero, some], 4)
    assert [len(g.runs) for g in got] == [0, 6, 0, 0, 6]     # 2 nonzeros, 4 fillers
    assert_same_rlc(got[1], cv.convert(some, "rlc", run_bits=3))


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 9), st.integers(1, 12), st.sampled_from([0.0, 0.05, 0.3, 0.9]),
       st.integers(1, 4), st.sampled_from([2, 4]), st.integers(0, 2**16))
def test_hypothesis_matrices_back_to_back(rows, cols, density, run_bits, lanes, seed):
    rng = np.random.default_rng(seed)
    matrices = [((rng.random((rows, cols)) < density) * rng.integers(-99, 99, (rows, cols)))
                .astype(np.int8) for _ in range(2)]
    unit = DenseToRlc(lanes=lanes, run_bits=run_bits, width=8, value_width=8)
    got, _ = encode_all(unit, matrices, seed)
    for g, m in zip(got, matrices, strict=True):
        assert_same_rlc(g, cv.convert(m, "rlc", run_bits=run_bits))


def test_one_dense_vector_a_cycle():
    """5% dense, 5-bit runs: no vector yields more than L pairs; the fillers waiting after
    runs of zero vectors cost the queue's cycles, not the input's."""
    rng = np.random.default_rng(2)
    dense = ((rng.random((64, 64)) < 0.05) * rng.integers(1, 99, (64, 64))).astype(np.int16)
    unit = DenseToRlc(lanes=8, run_bits=5, width=16, value_width=16)
    got, cycles = encode_all(unit, [dense], 0, DENSE_FULL)
    vectors = dense.size // 8
    assert vectors < cycles <= vectors + 24
    assert_same_rlc(got[0], cv.convert(dense, "rlc"))


def test_the_dense_bench_refuses_what_the_block_cannot_hold():
    unit = DenseToRlc(lanes=2, run_bits=3, width=4, value_width=8)
    assert DenseRlcBench._check(unit, np.ones((4, 4), np.int8)).shape == (4, 4)
    with pytest.raises(ParameterError, match="a 1 x 17 matrix does not fit the block's "
                                             "4-bit filler count"):
        DenseRlcBench._check(unit, np.ones((1, 17), np.int8))
    with pytest.raises(ParameterError, match="int16 values do not fit the block's 8-bit"):
        DenseRlcBench._check(unit, np.ones((2, 2), np.int16))
    with pytest.raises(ParameterError, match="not a 3-D"):
        run_dense(np.zeros((2, 2, 2)))
    with pytest.raises(ParameterError, match="complex"):
        run_dense(np.array([[1j, 0], [0, 2]]))


@pytest.mark.parametrize(("params", "message"), [
    ({"lanes": 3}, r"lanes=3: expected a power of two in \[2, 32\]"),
    ({"lanes": 64}, "lanes=64"), ({"run_bits": 0}, "run_bits=0"),
    ({"run_bits": 33}, "run_bits=33"), ({"width": 1}, "width=1"),
    ({"value_width": 65}, "value_width=65"),
])
def test_dense_to_rlc_bad_parameters_are_named_with_their_range(params, message):
    with pytest.raises(ParameterError, match=message):
        DenseToRlc(**params)


def test_dense_to_rlc_declares_its_signature_and_its_report_builds():
    unit = DenseToRlc(lanes=4, run_bits=6, width=20, value_width=12)
    assert dict(unit.signature.members) == dict(DenseToRlcSignature(4, 6, 12).members)
    block = get("dense_to_rlc")
    for config in block.cls.REPORT:
        block.cls(**block.resolve(config))


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "run_bits": 1, "width": 2,
                                         "value_width": 1}])
def test_dense_to_rlc_verilog_lints_clean_with_wall(lint, params):
    assert lint("dense_to_rlc", params) == ""


def test_dense_to_rlc_then_rlc_to_coo_compose():
    """What dense_to_rlc emits is what rlc_to_coo takes: its vectors, as they came out,
    through rlc_to_coo give the golden COO."""
    rng = np.random.default_rng(7)
    dense = ((rng.random((12, 13)) < 0.1) * rng.integers(1, 99, (12, 13))).astype(np.int16)
    encoder = DenseToRlc(lanes=4, run_bits=3, width=8, value_width=16)
    (rlc,), _ = encode_all(encoder, [dense], 1)
    decoder = RlcToCoo(lanes=4, run_bits=3, width=8, value_width=16)
    got, _ = convert_all(decoder, [rlc], 2)
    assert_same(got[0], cv.convert(dense, "coo"))


@pytest.mark.soak
@pytest.mark.verilator
def test_dense_to_rlc_on_a_real_matrix_under_back_pressure(shared_data):
    """Les Misérables' co-occurrences (77 x 77, 4% dense, float64) natively: every vector
    as the host encoder's (494_bus and larger in the soak)."""
    dense = read_matrix(shared_data / "matrices/pypi/nx_les_miserables.mtx").toarray()
    rlc, cycles = run_dense(dense, seed=seed_from_env(11))
    assert_same_rlc(rlc, cv.convert(dense, "rlc"))
    assert cycles >= dense.size // LANES


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize(("name", "run_bits"), [
    ("suitesparse/494_bus.mtx", 5), ("pypi/pyamg_bar.mtx", 5), ("suitesparse/west0479.mtx", 8),
    ("graphs/email-Eu-core.mtx", 3), ("pypi/nx_les_miserables.mtx", 1)])
def test_soak_dense_to_rlc_larger_real_matrices(shared_data, name, run_bits):
    dense = read_matrix(shared_data / "matrices" / name).toarray()
    rlc, _ = run_dense(dense, run_bits=run_bits, seed=seed_from_env(run_bits))
    assert_same_rlc(rlc, cv.convert(dense, "rlc", run_bits=run_bits))


@pytest.mark.soak
@pytest.mark.verilator
def test_soak_dense_to_rlc_back_to_back_natively(shared_data):
    matrices = [read_matrix(shared_data / "matrices" / name).toarray().astype(np.float64)
                for name in ("pypi/nx_karate_club.mtx", "pypi/nx_florentine_families.mtx")]
    matrices.insert(1, np.zeros((30, 40)))
    unit = dense_component(np.float64, 4)
    bench = DenseRlcBench(unit, matrices, seed_from_env(5))
    out = native.run(bench)
    start = 0
    for m, g, n in zip(matrices, bench.golden, bench.counts, strict=True):
        assert_same_rlc(vectors_to_rlc(out.outputs[PAIRS][start:start + n], unit, m.shape,
                                       m.dtype), g)
        start += n
