# amaranth: UnusedElaboratable=no
"""MINT's Dense converters: Dense to COO, CSR and ZVC, and ZVC to Dense.

Directed examples in the style of MINT's Figure 8 on Amaranth's simulator (exact
records, word framing and cycles), then real matrices natively on Verilator under
random back-pressure on every stream, each result rebuilt from the hardware's streams
and compared with the golden converter (:mod:`sparseforge.sw.conversion`), exactly.
"""

import json

import numpy as np
import pytest

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_dense import (
    Compactor,
    DenseToCoo,
    DenseToCooSignature,
    DenseToCsr,
    DenseToCsrSignature,
    DenseToZvc,
    DenseToZvcSignature,
    ZvcToDense,
    ZvcToDenseSignature,
)
from sparseforge.hw.interfaces import dense_layout, record_word_layout
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw import wire
from sparseforge.sw.formats import read_matrix
from sparseforge.tb.convert import conversions
from sparseforge.tb.convert_dense import ConverterBench, bench, params_for, rebuild, simulate
from sparseforge.tb.streams import Columns

BLOCKS = {"coo": DenseToCoo, "csr": DenseToCsr, "zvc": DenseToZvc}
SMALL = {"lanes": 4, "width": 8}
ALL_READY = dict.fromkeys(("dense", "coo", "entries", "row_ptr", "mask", "values"), 1.0)

# The example: 4 x 6, lanes of 4 (rows padded to 8); an empty row, a full row.
EXAMPLE = np.array([[0, 1, 0, 0, 2, 0],
                    [0, 0, 0, 0, 0, 0],
                    [3, 4, 5, 6, 7, 8],
                    [0, 0, 0, 9, 0, 10]], dtype=np.uint8)


def small(to, **params):
    """A converter to ``to`` (or from ZVC, ``to="dense"``) for 8-bit values, 4 lanes."""
    index = {"index_width": 4} if to in ("coo", "csr") else {}
    return (ZvcToDense if to == "dense" else BLOCKS[to])(**SMALL, **index, **params)


def outputs(component, source, seed=0, rates=None):
    """What the converter emitted for ``source`` on Amaranth's simulator, and its cycles."""
    result = pysim(bench(component, source, seed_from_env(seed), rates))
    return result.outputs, result.cycles


def records(words):
    return [[tuple(r.values()) if isinstance(r, dict) else r for r in w["lanes"][:w["count"]]]
            for w in words]


# -- the wire formats ------------------------------------------------------------------

def test_host_packing_is_the_layouts():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 256, (3, 4)).astype(np.uint64)
    flags = {"row_end": np.array([0, 1, 1]), "last": np.array([0, 0, 1])}
    words = wire.pack_lanes((wire.Field("value", 8),), 4, wire.dense_flags(), {"value": values,
                                                                               **flags})
    layout = dense_layout(4, 8)
    for n in range(3):
        item = {"lanes": values[n].tolist(), "row_end": int(flags["row_end"][n]),
                "last": int(flags["last"][n])}
        assert words[n] == layout.const(item).as_bits()
    entry = wire.coo_entry(5, 8)
    assert [f.name for f in entry] == ["row", "col", "value"]
    word = {"lanes": [{"row": 1, "col": 2, "value": 3}] * 2, "count": 2, "last": 1}
    packed = wire.pack_lanes(entry, 2, wire.word_end(2), {
        "row": np.array([[1, 1]]), "col": np.array([[2, 2]]), "value": np.array([[3, 3]]),
        "count": np.array([2]), "last": np.array([1])})
    assert packed[0] == record_word_layout(entry, 2).const(word).as_bits()


def test_record_words_end_with_a_word_that_is_never_full():
    assert [c.tolist() for c in wire.record_words(0, 4)] == [[0], [1]]
    assert [c.tolist() for c in wire.record_words(8, 4)] == [[4, 4, 0], [0, 0, 1]]
    assert [c.tolist() for c in wire.record_words(9, 4)] == [[4, 4, 1], [0, 0, 1]]


def test_value_bits_round_trip_and_negative_zero_is_zero():
    for values in (np.array([-1.5, 0.0, -0.0, 3.25]), np.array([-3, 0, 127], np.int8),
                   np.array([1, 0], np.uint16), np.array([True, False]),
                   np.array([1.5, -0.0], np.float32)):
        bits, width = wire.value_bits(values)
        assert width == (1 if values.dtype == bool else 8 * values.itemsize)
        assert np.array_equal(wire.bits_values(bits, values.dtype), values)
        assert np.array_equal(bits == 0, values == 0)
    with pytest.raises(ParameterError, match="values of type complex128 do not stream"):
        wire.value_bits(np.array([1j]))


@pytest.mark.parametrize("lanes", [2, 8, 32])
@pytest.mark.parametrize("size", [1, 13, 64])
def test_zvc_mask_words_round_trip(lanes, size):
    mask = cv.convert(np.random.default_rng(size).random((1, size)) < 0.4, "zvc").mask
    words = wire.zvc_mask_words(mask, size, lanes)
    assert len(words) == -(-size // lanes)
    assert np.array_equal(wire.zvc_mask_bytes(words, size, lanes), mask)


# -- directed examples on Amaranth's simulator (MINT Fig. 8 style) ------------------------

def test_dense_to_coo_example_records_and_words():
    out, _ = outputs(small("coo"), EXAMPLE)
    assert records(out["coo"]) == [
        [(0, 1, 1), (0, 4, 2), (2, 0, 3), (2, 1, 4)],
        [(2, 2, 5), (2, 3, 6), (2, 4, 7), (2, 5, 8)],
        [(3, 3, 9), (3, 5, 10)]]
    assert [w["last"] for w in out["coo"]] == [0, 0, 1]


def test_dense_to_csr_example_pointers_and_entries():
    out, _ = outputs(small("csr"), EXAMPLE)
    assert [(p["ptr"], p["last"]) for p in out["row_ptr"]] == [(2, 0), (2, 0), (8, 0), (10, 1)]
    assert [e for w in records(out["entries"]) for e in w] == [
        (1, 1), (4, 2), (0, 3), (1, 4), (2, 5), (3, 6), (4, 7), (5, 8), (3, 9), (5, 10)]


def test_dense_to_zvc_example_is_what_zvc_to_dense_takes():
    out, _ = outputs(small("zvc"), EXAMPLE)
    assert [w["mask"] for w in out["mask"]] == [0b0010, 0b0001, 0, 0b1111, 0b0011, 0b1010]
    host = bench(small("dense"), cv.convert(EXAMPLE, "zvc"), 0).streams
    assert out["mask"] == [host["mask"].item(n) for n in range(len(host["mask"].items))]
    taken = [host["values"].codec.unpack(int(word)) for word in host["values"].items]
    count, _ = wire.record_words(10, 4)
    assert [w["last"] for w in out["values"]] == [w["last"] for w in taken] == [0, 0, 1]
    assert [w["lanes"][:c] for w, c in zip(out["values"], count, strict=True)] == \
        [w["lanes"][:c] for w, c in zip(taken, count, strict=True)] == \
        [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]


@pytest.mark.parametrize("name, matrix", [
    ("example", EXAMPLE),
    ("all zero", np.zeros((3, 5), np.uint8)),
    ("full rows", np.arange(1, 17, dtype=np.uint8).reshape(4, 4)),
    ("empty rows first and last", np.array([[0] * 6, [0, 7, 0, 0, 0, 8], [0] * 6], np.uint8)),
    ("one element", np.array([[9]], np.uint8)),
    ("last row partial", np.array([[1, 2, 3, 4, 5], [6, 7, 0, 0, 0], [0, 0, 0, 0, 11]],
                                  np.uint8)),
    ("a word ends before the last vector", np.array([[1, 2, 3, 4], [0, 0, 0, 0]], np.uint8)),
])
@pytest.mark.parametrize("to", ["coo", "csr", "zvc", "dense"])
def test_directed_cases_equal_the_golden_converters(name, matrix, to):
    source = cv.convert(matrix, "zvc") if to == "dense" else matrix
    for seed, rates in ((1, None), (2, {"dense": 1.0, "coo": 0.3, "entries": 0.3,
                                        "row_ptr": 0.5, "mask": 0.4, "values": 0.3})):
        got, _ = simulate(small(to), source, seed_from_env(seed), rates, engine="pysim")
        assert cv.same(got, matrix if to == "dense" else cv.convert(matrix, to)), (name, seed)


def test_every_mask_of_eight_lanes_at_every_offset():
    """Each of the 256 masks of a vector of 8, as rows of an 8-column matrix: the word
    offset the compaction rotates by moves through every value on the way."""
    masks = np.arange(256)
    bits = (masks[:, None] >> np.arange(8)) & 1
    matrix = (bits * (1 + (masks[:, None] + np.arange(8)) % 255)).astype(np.uint8)
    params = {"lanes": 8, "width": 8, "levels": 2}
    for to in ("coo", "zvc"):
        extra = {"index_width": 8} if to == "coo" else {}
        got, _ = simulate(BLOCKS[to](**params, **extra), matrix, seed_from_env(8),
                          engine="pysim")
        assert cv.same(got, cv.convert(matrix, to)), to
    got, _ = simulate(ZvcToDense(**params), cv.convert(matrix, "zvc"), seed_from_env(8),
                      engine="pysim")
    assert cv.same(got, matrix)


@pytest.mark.parametrize("lanes, levels", [(2, 1), (8, 2), (8, 3), (16, 1)])
def test_other_lanes_and_levels(lanes, levels):
    rng = np.random.default_rng(lanes + levels)
    matrix = rng.integers(1, 256, (6, 37)).astype(np.uint8)
    matrix[rng.random(matrix.shape) < 0.7] = 0
    matrix[3] = 0
    params = {"lanes": lanes, "width": 8, "levels": levels}
    for to, block in BLOCKS.items():
        extra = {"index_width": 6} if to != "zvc" else {}
        got, _ = simulate(block(**params, **extra), matrix, seed_from_env(lanes), engine="pysim")
        assert cv.same(got, cv.convert(matrix, to)), to
    got, _ = simulate(ZvcToDense(**params), cv.convert(matrix, "zvc"), seed_from_env(lanes),
                      engine="pysim")
    assert cv.same(got, matrix)


@pytest.mark.parametrize("matrix, flush", [
    (EXAMPLE, 0),                                          # the last word is partial
    (np.arange(1, 17, dtype=np.uint8).reshape(4, 4), 1),   # the last vector fills a word
])
def test_one_vector_a_cycle_plus_the_latency(matrix, flush):
    """With nothing stalled, a matrix of v vectors takes v + latency cycles, and one more
    when its last vector completes a word (the final, empty word follows)."""
    vectors = matrix.shape[0] * -(-matrix.shape[1] // 4)
    for to in ("coo", "csr"):
        component = small(to)
        _, cycles = outputs(component, matrix, rates=ALL_READY)
        assert component.latency == 7
        assert cycles == vectors + component.latency + flush
    component = small("dense", levels=2)
    _, cycles = outputs(component, cv.convert(matrix, "zvc"), rates=ALL_READY)
    assert component.latency == 3
    assert cycles == -(-matrix.size // 4) + component.latency


def split(items):
    """Payloads split after each ``last``."""
    ends = [n + 1 for n, item in enumerate(items) if item["last"]]
    return [items[a:b] for a, b in zip([0, *ends], ends, strict=False)]


def joined(items):
    """Several matrices' items of one stream, one after the other (packed, or columns)."""
    if isinstance(items[0], Columns):
        return Columns({k: np.concatenate([i.columns[k] for i in items])
                        for k in items[0].columns})
    return np.concatenate(items)


def back_to_back(component, sources, seed, rates=None):
    """What ``component`` emitted for ``sources`` streamed without a gap, split per
    matrix after each ``last``."""
    parts = [bench(component, source, 0) for source in sources]
    streams = {s.name: joined([p.streams[s.name].items for p in parts])
               for s in parts[0].sources}
    sinks = {s.name: sum(p.streams[s.name].expected for p in parts) for s in parts[0].sinks}
    out = pysim(ConverterBench(component, streams, sinks, seed, rates)).outputs
    return [dict(zip(out, chunks, strict=True))
            for chunks in zip(*(split(out[name]) for name in out), strict=True)]


def test_matrices_back_to_back_restart_every_count():
    """``last`` restarts the rows, columns, positions, pointers and words: two matrices
    streamed without a gap convert as two."""
    first, second = EXAMPLE, np.arange(1, 10, dtype=np.uint8).reshape(3, 3)
    for to in ("coo", "csr", "zvc"):
        component = small(to)
        pieces = back_to_back(component, (first, second), seed_from_env(5))
        for matrix, piece in zip((first, second), pieces, strict=True):
            assert cv.same(rebuild(component, matrix, piece), cv.convert(matrix, to)), to


def test_zvc_to_dense_back_to_back_waits_for_each_final_empty_word():
    """Matrices whose nonzeros fill their last value word, so that an empty word with
    ``last`` follows, streamed without a gap under back-pressure: each matrix's final
    vector waits for that word and takes it out of the window, whether the vector's
    values end at the word (16 and 4 nonzeros) or it has none (8, and none at all);
    else the empty word stays in and the next matrix's values come one word late."""
    matrices = [np.arange(1, 17, dtype=np.uint8).reshape(4, 4),
                np.array([[1, 2, 3, 4], [5, 6, 7, 8], [0, 0, 0, 0]], np.uint8),
                np.zeros((2, 3), np.uint8),
                np.array([[0, 9, 0], [8, 0, 7], [0, 0, 6]], np.uint8)]
    matrices += matrices[::-1]
    component = small("dense")
    for seed in range(1, 7):
        rates = {"mask": 0.8, "values": (0.3, 0.9)[seed % 2], "dense": (0.9, 0.4)[seed % 2]}
        pieces = back_to_back(component, [cv.convert(m, "zvc") for m in matrices],
                              seed_from_env(seed), rates)
        for n, (matrix, piece) in enumerate(zip(matrices, pieces, strict=True)):
            assert cv.same(rebuild(component, cv.convert(matrix, "zvc"), piece), matrix), \
                (seed, n)


def test_csr_marks_a_final_vector_that_does_not_end_a_row():
    """``last`` ends the matrix's last row by itself, as the row counter takes it: a
    final vector without ``row_end`` (here the last row's second, half-padded vector)
    still gives the last row pointer, ``last`` set."""
    component = small("csr")
    vectors, flags = wire.dense_vectors(EXAMPLE, 4)
    assert flags["last"][-1] and flags["row_end"][-1]
    flags["row_end"][-1] = 0
    dense = wire.pack_lanes((wire.Field("value", 8),), 4, wire.dense_flags(),
                            {"value": vectors, **flags})
    sinks = {s.name: s.expected for s in bench(component, EXAMPLE, 0).sinks}
    for seed, rates in ((1, None), (2, {"entries": 0.3, "row_ptr": 0.5})):
        out = pysim(ConverterBench(component, {"dense": dense}, sinks, seed_from_env(seed),
                                   rates)).outputs
        assert [p["last"] for p in out["row_ptr"]] == [0, 0, 0, 1]
        assert cv.same(rebuild(component, EXAMPLE, out), cv.convert(EXAMPLE, "csr")), seed


def test_compactor_words_and_marks():
    """The compactor alone: random records kept by random masks over several matrices; the
    kept records, L a word, and a mark (its tag, the records kept so far) per marked
    vector."""
    rng = np.random.default_rng(seed_from_env(4))
    L, n = 4, 60
    keep = rng.random((n, L)) < rng.choice([0.0, 0.3, 1.0], (n, 1))
    last = rng.random(n) < 0.15
    last[-1] = True
    mark, tags = rng.random(n) < 0.5, rng.integers(0, 8, n)
    records = rng.integers(0, 1 << 12, (n, L))
    starts = np.r_[0, np.flatnonzero(last[:-1]) + 1]
    before = np.cumsum(keep.sum(axis=1)) - keep.sum(axis=1)
    matrix_start = before[starts][np.searchsorted(starts, np.arange(n), side="right") - 1]
    positions = (before - matrix_start)[:, None] + np.cumsum(keep, axis=1) - keep
    items = [{"records": records[v].tolist(), "mask": int(keep[v] @ (1 << np.arange(L))),
              "sums": (positions[v] % (2 * L)).tolist(),
              "total": int(positions[v, -1] + keep[v, -1]) % (2 * L), "last": int(last[v]),
              "mark": int(mark[v]), "tag": int(tags[v])} for v in range(n)]
    kept = [records[a:b][keep[a:b]].tolist() for a, b in zip(starts, [*starts[1:], n],
                                                              strict=True)]
    component = Compactor(L, 12, levels=2, tag_width=3, position_width=9)
    sinks = {"words": sum(len(k) // L + 1 for k in kept), "marks": int(mark.sum())}
    out = pysim(ConverterBench(component, {"vectors": items}, sinks, seed_from_env(4))).outputs
    assert [records_of(part) for part in split(out["words"])] == kept
    through = (positions[:, -1] + keep[:, -1])[mark]
    assert [(m["tag"], m["position"], m["last"]) for m in out["marks"]] == \
        list(zip(tags[mark].tolist(), through.tolist(), last[mark].astype(int).tolist(),
                 strict=True))


def records_of(words):
    return [r for w in words for r in w["lanes"][:w["count"]]]


# -- real matrices, natively on Verilator ------------------------------------------------

REAL = ["pypi/nx_karate_club", "suitesparse/GD06_theory", "pypi/pyamg_knot",
        "suitesparse/494_bus"]


def real(shared_data, name):
    return cv.convert(read_matrix(shared_data / "matrices" / f"{name}.mtx"), "dense")


@pytest.mark.verilator
@pytest.mark.soak              # the default run has a real matrix at full rate, below
@pytest.mark.parametrize("name", REAL)
def test_real_matrices_on_verilator(shared_data, tmp_path, name):
    dense = real(shared_data, name)
    zvc = cv.convert(dense, "zvc")
    rates = [None, {"dense": 0.9, "coo": 0.3, "entries": 0.4, "row_ptr": 0.2, "mask": 0.5,
                    "values": 0.3}][REAL.index(name) % 2]
    for to, block in (*BLOCKS.items(), ("dense", ZvcToDense)):
        source = zvc if to == "dense" else dense
        component = block(**params_for(block, source))
        got, cycles = simulate(component, source, seed_from_env(REAL.index(name)), rates,
                               work_dir=tmp_path)
        assert cv.same(got, dense if to == "dense" else cv.convert(dense, to)), to
        assert cycles >= -(-dense.size // component.lanes)


@pytest.mark.verilator
@pytest.mark.soak
def test_one_element_per_lane_per_cycle_on_a_real_matrix(shared_data, tmp_path):
    dense = real(shared_data, "suitesparse/494_bus")
    vectors = {"rows": 494 * 62, "flat": -(-dense.size // 8)}       # 494 columns: 62 vectors
    for block, source, kind in ((DenseToCoo, dense, "rows"), (DenseToZvc, dense, "flat"),
                                (ZvcToDense, cv.convert(dense, "zvc"), "flat")):
        component = block(**params_for(block, source))
        _, cycles = simulate(component, source, 3, ALL_READY, work_dir=tmp_path)
        assert cycles == vectors[kind] + component.latency


@pytest.mark.verilator
@pytest.mark.parametrize("fmt, to", [("dense", "coo"), ("dense", "csr"), ("dense", "zvc"),
                                     ("zvc", "dense")])
def test_convert_engine_rtl_equals_sw(shared_data, tmp_path, capsys, fmt, to):
    assert (fmt, to) in conversions()
    dense = real(shared_data, "suitesparse/GD06_theory")
    source = tmp_path / ("in.npy" if fmt == "dense" else "in.npz")
    cv.save(source, cv.convert(dense, fmt))
    files = {}
    for engine in ("sw", "rtl"):
        files[engine] = tmp_path / f"{engine}{cv.suffix(to, 2)}"
        main(["convert", str(source), "--to", to, "-o", str(files[engine]), "--engine", engine,
              "--json"])
        out = capsys.readouterr().out
        result = json.loads(out)
        assert result["engine"] == engine and (result["cycles"] is None) == (engine == "sw")
    assert cv.same(cv.load(files["rtl"]), cv.load(files["sw"]))


def test_engine_rtl_refusals():
    run = conversions()[("dense", "coo")]
    with pytest.raises(ParameterError, match="values of type complex128 do not stream"):
        run(np.ones((2, 2), complex), None, None, 1)
    with pytest.raises(ParameterError, match="take matrices, not a 3-D tensor"):
        run(np.ones((2, 2, 2)), None, None, 1)
    with pytest.raises(ParameterError, match="has no elements to stream"):
        run(np.ones((0, 3)), None, None, 1)
    with pytest.raises(ParameterError, match=r"int16 values need 16 bits.*width=8"):
        bench(small("coo"), np.ones((2, 2), np.int16), 0)


def test_engine_rtl_builds_one_block_per_value_type_whatever_the_size():
    for block in (DenseToCoo, DenseToCsr, DenseToZvc):
        sizes = [params_for(block, np.ones(shape, np.float32)) for shape in
                 ((2, 3), (70000, 1), (1, 1 << 17))]
        assert sizes[0] == sizes[1] == sizes[2] != params_for(block, np.ones((2, 3)))
    assert params_for(DenseToCoo, np.ones((1, 1 << 17)))["index_width"] == 32


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("name", ["suitesparse/Erdos971", "pypi/pyamg_bar", "suitesparse/G51",
                                  "graphs/email-Eu-core", "pypi/pygsp_logogsp"])
def test_soak_larger_real_matrices(shared_data, tmp_path, name, seed):
    dense = real(shared_data, name)
    rng = np.random.default_rng(seed)
    rates = {k: float(rng.choice([0.2, 0.5, 0.9, 1.0])) for k in ALL_READY}
    zvc = cv.convert(dense, "zvc")
    for to, block in (*BLOCKS.items(), ("dense", ZvcToDense)):
        source = zvc if to == "dense" else dense
        got, _ = simulate(block(**params_for(block, source)), source, seed, rates,
                          work_dir=tmp_path)
        assert cv.same(got, dense if to == "dense" else cv.convert(dense, to)), to


# -- parameters, interfaces, Verilog, the synthesis report --------------------------------

@pytest.mark.parametrize("make, message", [
    (lambda: DenseToCoo(lanes=3), r"lanes=3: expected a power of two in \[2, 32\]"),
    (lambda: DenseToCoo(width=0), r"width=0: expected an integer in \[1, 64\]"),
    (lambda: DenseToCsr(ptr_width=49), r"ptr_width=49: expected an integer in \[1, 48\]"),
    (lambda: DenseToZvc(levels=0), r"levels=0"),
    (lambda: ZvcToDense(lanes=64), r"lanes=64"),
])
def test_bad_parameters_are_named_with_their_range(make, message):
    with pytest.raises(ParameterError, match=message):
        make()


def test_blocks_declare_the_named_signatures():
    pairs = [(DenseToCoo(lanes=4, width=8, index_width=5), DenseToCooSignature(4, 8, 5)),
             (DenseToCsr(lanes=4, width=8, index_width=5, ptr_width=9),
              DenseToCsrSignature(4, 8, 5, 9)),
             (DenseToZvc(lanes=4, width=8), DenseToZvcSignature(4, 8)),
             (ZvcToDense(lanes=4, width=8),
                                                             ZvcToDenseSignature(4, 8))]
    for unit, signature in pairs:
        assert dict(unit.signature.members) == dict(signature.members)


@pytest.mark.parametrize("name, params", [
    ("dense_to_coo", {}), ("dense_to_coo", {"lanes": 2, "width": 1, "index_width": 1}),
    ("dense_to_csr", {"lanes": 32, "width": 64, "index_width": 32, "ptr_width": 48,
                      "levels": 3}),
    ("dense_to_zvc", {"lanes": 2, "width": 1}), ("dense_to_zvc", {"levels": 2}),
    ("zvc_to_dense", {}), ("zvc_to_dense", {"lanes": 2, "width": 1, "levels": 2}),
])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


def test_in_the_synthesis_report():
    for name in ("dense_to_coo", "dense_to_csr", "dense_to_zvc", "zvc_to_dense"):
        blk = get(name)
        assert blk.cls.REPORT
        for config in blk.cls.REPORT:
            blk.cls(**blk.resolve(config))
