"""CISS (Tensaurus Section 4, Fig. 3d): the schedule, the entries, the round trip, the
word packing it goes through, and Fig. 3e's bandwidth model."""

import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import FormatError, ParameterError
from sparseforge.sw import ciss, wire
from sparseforge.sw.ciss_bandwidth import WORD_BITS, ciss_bandwidth, csr_bandwidth
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor

SMALL_TENSOR = "tensors/movielens-latest-small_user-movie-tag.tns"  # 58 x 1572 x 1475
TENSOR = "tensors/movielens-100k_user-item-day.tns"
MATRIX = "matrices/suitesparse/west0067.mtx"  # 67 x 67, real values


def fig3_tensor():
    """A 4 x 2 x 2 tensor whose slices hold 3, 1, 2 and 2 nonzeros."""
    coords = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 0], [2, 0, 0], [2, 1, 1],
                       [3, 0, 1], [3, 1, 0]])
    return Tensor(coords, np.arange(1, 9, dtype=np.int64), (4, 2, 2))


def lanes(stream):
    """``[entries, pes]`` arrays of each lane field."""
    return wire.unpack_lane_words(stream.wire.lane, stream.wire.pes, stream.words)


def assert_round_trip(tensor, stream):
    decoded = ciss.decode(stream)
    held = tensor.values != 0
    assert decoded.shape == tensor.shape
    assert np.array_equal(decoded.coords, tensor.coords[held])
    assert np.array_equal(decoded.values, tensor.values[held])


def reference_schedule(lengths, pes):
    """Fig. 3d's rule, step by step: each slice to the PE that is free first (lowest id)."""
    free = [0] * pes
    pe, start = [], []
    for length in lengths:
        p = min(range(pes), key=lambda q: (free[q], q))
        pe.append(p)
        start.append(free[p])
        free[p] += length
    return pe, start, max(free)


def test_fig3_schedule_and_entries():
    stream = ciss.encode(fig3_tensor(), 2, dw=8, iw=4)
    # slice 1 ends first, so slice 2 goes to PE1 and slice 3 to PE0, as in Fig. 3d
    assert stream.pe.tolist() == [0, 1, 1, 0]
    assert stream.start.tolist() == [0, 0, 2, 4]
    assert stream.count.tolist() == [3, 1, 2, 2]
    assert stream.entries == 7 and stream.wire.entry_width == (8 + 2 * 4) * 2
    assert stream.words.shape == (7, 1)
    f = lanes(stream)
    got = [[(int(f["nnz"][e, p]), int(f["ij"][e, p]), int(f["k"][e, p])) for p in range(2)]
           for e in range(7)]
    idle = (0, 15, 0)
    assert got == [[(0, 0, 0), (0, 1, 0)],      # headers of slices 0 and 1
                   [(1, 0, 0), (4, 1, 0)],
                   [(2, 0, 1), (0, 2, 0)],      # PE1 takes slice 2
                   [(3, 1, 1), (5, 0, 0)],
                   [(0, 3, 0), (6, 1, 1)],      # PE0 takes slice 3
                   [(7, 0, 1), idle],           # PE1 has run out
                   [(8, 1, 0), idle]]
    assert (stream.nnz, stream.idle, stream.slots) == (8, 2, 14)
    assert stream.utilization == 8 / 14
    assert stream.pe_loads().tolist() == [5, 3]
    assert_round_trip(fig3_tensor(), stream)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=0, max_size=60), st.integers(1, 9))
def test_schedule_hands_each_slice_to_the_pe_free_first(lengths, pes):
    pe, start, entries = ciss.schedule(np.array(lengths, dtype=np.int64), pes)
    assert (pe.tolist(), start.tolist(), entries) == reference_schedule(lengths, pes)


@st.composite
def sparse_tensors(draw, order=None, floats=False):
    """``(tensor, pes, dw, iw, mode)``: distinct random coordinates, values that fit."""
    order = order or draw(st.sampled_from(wire.CISS_ORDERS))
    shape = tuple(draw(st.integers(1, 12)) for _ in range(order))
    size = math.prod(shape)
    keys = draw(st.lists(st.integers(0, size - 1), unique=True, max_size=min(size, 80)))
    coords = np.array(np.unravel_index(np.sort(np.array(keys, dtype=np.int64)), shape),
                      dtype=np.int64).T.reshape(-1, order)
    if floats:
        dw = draw(st.sampled_from((16, 32, 64)))
        values = np.array(draw(st.lists(st.floats(-1e4, 1e4, width=dw).filter(bool),
                                        min_size=len(keys), max_size=len(keys))))
    else:
        dw = draw(st.integers(2, 64))
        bound = 2 ** (min(dw, 63) - 1)
        values = np.array(draw(st.lists(st.integers(-bound, bound - 1).filter(bool),
                                        min_size=len(keys), max_size=len(keys))),
                          dtype=np.int64)
    iw = draw(st.integers(max(shape).bit_length(), 64))  # slice indices below all ones
    return (Tensor(coords, values.reshape(-1), shape), draw(st.integers(1, 12)), dw, iw,
            draw(st.integers(0, order - 1)))


@settings(max_examples=300, deadline=None)
@given(sparse_tensors())
def test_round_trip_integer_values(case):
    tensor, pes, dw, iw, mode = case
    stream = ciss.encode(tensor, pes, dw=dw, iw=iw, mode=mode)
    assert stream.kind == "int" or tensor.nnz == 0
    assert stream.wire.entry_width == (dw + (tensor.ndim - 1) * iw) * pes
    assert stream.words.shape == (stream.entries, math.ceil(stream.wire.entry_width / 64))
    assert stream.nnz + len(stream.slices) + stream.idle == stream.entries * pes
    assert_round_trip(tensor, stream)


@settings(max_examples=150, deadline=None)
@given(sparse_tensors(floats=True))
def test_round_trip_float_values(case):
    tensor, pes, dw, iw, mode = case
    stream = ciss.encode(tensor, pes, dw=dw, iw=iw, mode=mode)
    assert stream.rounded == 0
    assert_round_trip(tensor, stream)


@settings(max_examples=100, deadline=None)
@given(sparse_tensors(order=3))
def test_each_pe_lane_is_its_slices_in_order(case):
    """A lane holds, per slice, the header then the slice's nonzeros in (j, k) order."""
    tensor, pes, dw, iw, mode = case
    stream = ciss.encode(tensor, pes, dw=dw, iw=iw, mode=mode)
    f = lanes(stream)
    for s, (i, p, start, count) in enumerate(zip(stream.slices, stream.pe, stream.start,
                                                 stream.count, strict=True)):
        assert f["nnz"][start, p] == 0 and f["ij"][start, p] == i
        body = slice(start + 1, start + 1 + count)
        assert (f["nnz"][body, p] != 0).all()
        fibers = list(zip(f["ij"][body, p].tolist(), f["k"][body, p].tolist(), strict=True))
        assert fibers == sorted(set(fibers))
        end = start + 1 + count  # the next header, an idle lane or the stream's end
        assert end == stream.entries or f["nnz"][end, p] == 0
        later = stream.pe[s + 1:] == p
        if not later.any():
            assert (f["ij"][end:, p] == stream.wire.idle).all()


def test_real_tensor_every_mode_and_npz(shared_data, tmp_path):
    tensor = read_tensor(shared_data / SMALL_TENSOR)
    for mode in range(3):
        for pes in (1, 3, 8):
            stream = ciss.encode(tensor, pes, mode=mode)
            assert_round_trip(tensor, stream)
            assert len(stream.slices) == len(np.unique(tensor.coords[:, mode]))
    path = tmp_path / "stream.npz"
    ciss.save(path, stream)
    loaded = ciss.load(path)
    assert loaded.wire == stream.wire and loaded.kind == "int" and loaded.mode == 2
    assert np.array_equal(loaded.words, stream.words)
    assert_round_trip(tensor, loaded)


def test_real_matrix_with_real_values(shared_data):
    matrix = read_matrix(shared_data / MATRIX)
    tensor = Tensor(np.stack([matrix.row, matrix.col], axis=1).astype(np.int64), matrix.data,
                    matrix.shape)
    exact = ciss.encode(matrix, 4, dw=64, iw=7)
    assert exact.kind == "float" and exact.rounded == 0 and exact.wire.lane_width == 71
    assert_round_trip(tensor, exact)
    narrow = ciss.encode(matrix, 4, dw=32, iw=7)
    assert narrow.rounded > 0
    held = tensor.values != 0
    assert np.array_equal(ciss.decode(narrow).values, tensor.values[held].astype(np.float32))


def test_stored_zeros_are_dropped():
    tensor = Tensor(np.array([[0, 0], [0, 1], [2, 1]]), np.array([0.0, 3.0, -0.0]), (3, 2))
    stream = ciss.encode(tensor, 2)
    assert stream.slices.tolist() == [0] and stream.nnz == 1
    assert_round_trip(tensor, stream)
    assert ciss.encode(sp.coo_array((2, 2)), 2).entries == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"iw": 1}, "slice index 2 (mode 0) needs 2 bits"),
    ({"iw": 2, "mode": 1}, "mode 2 index 5 needs 3 bits"),
    ({"dw": 3}, "value 5 is past 3-bit two's complement (dw=3; dw=4 holds it)"),
    ({"pes": 0}, "pes=0"),
    ({"pes": wire.CISS_MAX_PES + 1}, "pes=1025"),
    ({"mode": 3}, "mode=3"),
])
def test_bad_parameters(kwargs, message):
    tensor = Tensor(np.array([[0, 0, 0], [2, 1, 5]]), np.array([1, 5]), (3, 2, 6))
    with pytest.raises(ParameterError, match=re.escape(message)):
        ciss.encode(tensor, **{"pes": 2, **kwargs})


def test_the_largest_legal_indices_and_values_round_trip():
    """At the edges, iw=3 and dw=8: a slice index up to 6, one below the idle marker 7
    (all ones); j and k up to 7, all ones (only a slice index can be mistaken for an idle
    lane); values from -128 to 127. And the 64-bit extremes, which no mask narrows."""
    tensor = Tensor(np.array([[0, 7, 0], [6, 0, 7], [6, 7, 7]]), np.array([127, -128, -1]),
                    (7, 8, 8))
    stream = ciss.encode(tensor, 2, dw=8, iw=3)
    assert stream.slices.tolist() == [0, 6] and stream.wire.idle == 7
    assert_round_trip(tensor, stream)
    matrix = Tensor(np.array([[0, 7], [6, 0]]), np.array([127, -128]), (7, 8))
    assert_round_trip(matrix, ciss.encode(matrix, 1, dw=8, iw=3))
    wide = Tensor(np.array([[0, 1], [1, 0]]), np.array([2**63 - 1, -2**63]), (2, 2))
    assert_round_trip(wide, ciss.encode(wide, 2, dw=64, iw=2))


@pytest.mark.parametrize(("coords", "values", "message"), [
    ([[7, 0, 0]], [1], "slice index 7 (mode 0) needs 4 bits, as 7 marks idle lanes"),
    ([[0, 8, 0]], [1], "mode 1 index 8 needs 4 bits"),
    ([[0, 0, 8]], [1], "mode 2 index 8 needs 4 bits"),
    ([[0, 0, 0], [1, 1, 1]], [1, 128], "value 128 is past 8-bit two's complement (dw=8; dw=9"),
    ([[0, 0, 0], [1, 1, 1]], [-129, 1], "value -129 is past 8-bit two's complement (dw=8; dw=9"),
])
def test_the_first_illegal_index_or_value_is_refused(coords, values, message):
    """Just past the edges of the test above: a slice index equal to the idle marker, a j
    or k of iw + 1 bits, a value one past dw-bit two's complement at either end."""
    tensor = Tensor(np.array(coords), np.array(values), (9, 9, 9))
    with pytest.raises(ParameterError, match=re.escape(message)):
        ciss.encode(tensor, 2, dw=8, iw=3)


def test_values_that_do_not_go():
    def encode(values, dw):
        return ciss.encode(Tensor(np.array([[0, 0], [1, 1]]), np.array(values), (2, 2)), 2,
                           dw=dw)
    with pytest.raises(ParameterError, match="dw must be 16, 32 or 64, not 24"):
        encode([0.5, 1.0], 24)
    with pytest.raises(ParameterError, match="not a finite nonzero 32-bit float"):
        encode([1e-50, 0.5], 32)
    with pytest.raises(ParameterError, match="not a finite nonzero 16-bit float"):
        encode([1e6, 0.5], 16)
    with pytest.raises(ParameterError, match="integer or real"):
        encode([1j, 1], 32)
    assert encode([-1, 1], 2).kind == "int"
    assert ciss.decode(encode([True, True], 2)).values.tolist() == [1, 1]
    assert ciss.decode(encode([-2, 1], 2)).values.tolist() == [-2, 1]


def test_refusals():
    four = Tensor(np.zeros((1, 4), dtype=np.int64), np.ones(1), (1, 1, 1, 1))
    with pytest.raises(ParameterError, match="not 4 modes"):
        ciss.encode(four, 2)
    twice = Tensor(np.array([[1, 0, 0], [0, 1, 1], [1, 0, 0]]), np.ones(3), (2, 2, 2))
    with pytest.raises(ParameterError, match=r"coordinate \(1, 0, 0\) appears more than once"):
        ciss.encode(twice, 2)
    # one slice of 20000 nonzeros on 1024 PEs: 20 million lanes, nearly all idle
    one = Tensor(np.stack([np.zeros(20000), np.arange(20000)], axis=1).astype(np.int64),
                 np.ones(20000), (1, 20000))
    with pytest.raises(ParameterError, match="too many PEs for 1 slices"):
        ciss.encode(one, 1024)


def test_decoder_refuses_a_nonzero_outside_a_slice():
    stream = ciss.encode(fig3_tensor(), 2, dw=8, iw=4)
    f = lanes(stream)
    f["nnz"][6, 1] = 9  # after PE1's idle lane
    broken = ciss.Ciss(stream.wire, stream.shape, 0, "int",
                       wire.pack_lane_words(stream.wire.lane, 2, f), *(
                           getattr(stream, n) for n in ("slices", "pe", "start", "count")))
    with pytest.raises(ParameterError, match="entry 6, PE 1: a nonzero outside any slice"):
        ciss.decode(broken)
    small = ciss.Ciss(stream.wire, (4, 2, 1), *(getattr(stream, n) for n in (
        "mode", "kind", "words", "slices", "pe", "start", "count")))
    with pytest.raises(ParameterError, match=r"mode 2 index 1 is outside the shape \(4, 2, 1\)"):
        ciss.decode(small)


def test_load_refuses_other_archives(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, format=np.bytes_(b"csf"))
    with pytest.raises(FormatError, match="no words"):
        ciss.load(path)
    with pytest.raises(FormatError, match="no such file"):
        ciss.load(tmp_path / "missing.npz")
    stream = ciss.encode(fig3_tensor(), 2, dw=8, iw=4)
    ciss.save(path, stream)
    with np.load(path) as npz:
        arrays = dict(npz)
    np.savez(path, **{**arrays, "dw": np.int64(70)})
    with pytest.raises(FormatError, match=r"dw=70"):
        ciss.load(path)
    np.savez(path, **{**arrays, "words": arrays["words"][:, :0]})
    with pytest.raises(FormatError, match="do not form a CISS stream"):
        ciss.load(path)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 63), min_size=1, max_size=5), st.integers(1, 6),
       st.integers(0, 20), st.randoms(use_true_random=False))
def test_word_packing_matches_the_record_packing(widths, lanes_count, n, rnd):
    """pack_lane_words gives the bits of wire.pack's Python-int records."""
    fields = tuple(wire.Field(f"f{i}", w) for i, w in enumerate(widths))
    columns = {f.name: np.array([[rnd.getrandbits(f.width) for _ in range(lanes_count)]
                                 for _ in range(n)], dtype=np.uint64).reshape(n, lanes_count)
               for f in fields}
    words = wire.pack_lane_words(fields, lanes_count, columns)
    flat = tuple(wire.Field(f"{f.name}_{lane}", f.width) for lane in range(lanes_count)
                 for f in fields)
    records = wire.pack(flat, {f"{f.name}_{lane}": columns[f.name][:, lane].astype(object)
                               for lane in range(lanes_count) for f in fields})
    for row, record in zip(words, np.atleast_1d(records), strict=True):
        assert sum(int(w) << (64 * i) for i, w in enumerate(row)) == record
    back = wire.unpack_lane_words(fields, lanes_count, words)
    assert all(np.array_equal(back[f.name], columns[f.name]) for f in fields)


def test_word_packing_refuses_a_value_too_wide():
    with pytest.raises(ParameterError, match="field a does not fit in 3 bits"):
        wire.pack_lane_words((wire.Field("a", 3),), 1, {"a": np.array([[8]])})


# -- Fig. 3e's bandwidth model ------------------------------------------------------------

def test_bandwidth_by_hand():
    # one slice of 5 nonzeros (96-bit records: bits 0-479 of word 0), one PE
    tensor = Tensor(np.stack([np.zeros(5), np.arange(5), np.zeros(5)], axis=1)
                    .astype(np.int64), np.ones(5), (1, 5, 1))
    one = ciss.encode(tensor, 1)
    assert ciss_bandwidth(one).words == math.ceil(6 * 96 / WORD_BITS) == 2
    csr = csr_bandwidth(one)  # the pointer pair (word 1), then the records (word 0)
    assert (csr.words, csr.useful_bits) == (2, 480)
    assert csr.fraction == 480 / 1024 and csr.achieved == csr.peak * 480 / 1024
    # two PEs, 192-bit records: slice 0 is records 0-1 (word 0), slice 1 records 2-4
    # (record 2 straddles words 0 and 1), the pointer pairs are in word 2
    two = Tensor(np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0], [1, 2, 0]]),
                 np.ones(5), (2, 3, 1))
    stream = ciss.encode(two, 2, dw=64, iw=64)
    # words by cycle: 2 2 | 0 0-1 | 0 1 | - 1: only word 2 and the last word 1 are reused
    assert csr_bandwidth(stream).words == 5
    assert ciss_bandwidth(stream).words == math.ceil(4 * 384 / WORD_BITS) == 3


def test_bandwidth_on_a_real_tensor(shared_data):
    tensor = read_tensor(shared_data / TENSOR)
    single = ciss.encode(tensor, 1)
    assert csr_bandwidth(single).fraction > 0.8  # one PE streams its slices in order
    stream = ciss.encode(tensor, 8)
    c, x = ciss_bandwidth(stream), csr_bandwidth(stream)
    assert c.useful_bits == x.useful_bits == tensor.nnz * 96
    assert c.fraction == pytest.approx(stream.utilization, abs=1e-3)
    assert c.fraction > 0.95 and x.fraction < 96 / WORD_BITS  # a word or more per record
    assert c.achieved / x.achieved > 5
