# amaranth: UnusedElaboratable=no
"""RLC to COO (MINT Fig. 8d): the stream units, directed runs on Amaranth's simulator, real
matrices natively on Verilator against the golden converter, and ``convert --engine rtl``."""

import json
import random
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_rlc import RlcToCoo, RlcToCooSignature, Serializer
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import read_matrix
from sparseforge.tb import native
from sparseforge.tb.convert_rlc import (
    LANES,
    RECORDS,
    WIDTH,
    RlcBench,
    UnitBench,
    record_columns,
    records_to_coo,
    run,
)

FULL = {"pairs": 1.0, "records": 1.0}


def sparseforge(*args):
    """The standard output of a successful ``sparseforge`` command."""
    done = subprocess.run([sys.executable, "-m", "sparseforge", *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


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


@pytest.mark.verilator
def test_convert_engine_rtl_writes_what_engine_sw_writes(shared_data, tmp_path):
    source = shared_data / "matrices/suitesparse/494_bus.mtx"
    sparseforge("convert", source, "--to", "rlc", "-o", tmp_path / "a.npz")
    for engine in ("sw", "rtl"):
        result = json.loads(sparseforge("convert", tmp_path / "a.npz", "--to", "coo", "--engine",
                                        engine, "-o", tmp_path / f"{engine}.npz", "--json"))
        assert result["engine"] == engine and (engine == "sw" or result["cycles"] > 0)
    sw, rtl = np.load(tmp_path / "sw.npz"), np.load(tmp_path / "rtl.npz")
    assert sorted(sw.files) == sorted(rtl.files)
    for name in sw.files:
        assert sw[name].dtype == rtl[name].dtype and np.array_equal(sw[name], rtl[name]), name


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
