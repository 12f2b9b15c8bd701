"""The golden format converters (``sw/conversion.py``).

Every format pair round-trips through random matrices and tensors
(hypothesis); CSR, CSC, COO and BSR agree with scipy.sparse; RLC matches a
streaming element-by-element encoder and its filler rules; the MINT Fig. 8
conversions are reproduced; CSF matches the tensor's coordinates; malformed
files are refused; real matrices and tensors convert exactly.
"""

import math
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sparseforge.core.errors import FormatError, ParameterError
from sparseforge.sw import conversion as cv
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor
from sparseforge.sw.sage import matrix_compactness

SETTINGS = settings(max_examples=80, deadline=None)
PAIR_SETTINGS = settings(max_examples=25, deadline=None)
VALUES = [0.0, 0.0, 0.0, 0.0, 1.0, -2.0, 3.5]


# --- strategies and helpers -----------------------------------------------------------

@st.composite
def matrices(draw):
    """(dense matrix, block): a random matrix, mostly zeros, and a block size dividing it."""
    block = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    shape = block[0] * draw(st.integers(0, 4)), block[1] * draw(st.integers(0, 4))
    dtype = draw(st.sampled_from([np.float64, np.int64, np.complex128]))
    dense = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(VALUES)))
    return dense.astype(dtype), block


@st.composite
def tensors(draw):
    """A random dense tensor of 1 to 4 modes, mostly zeros."""
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)))
    return draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(VALUES)))


def options(fmt, block, run_bits=3):
    """The keyword arguments a conversion to ``fmt`` takes."""
    return {"bsr": {"block": block}, "rlc": {"run_bits": run_bits}}.get(fmt, {})


def assert_same(a, b):
    assert cv.same(a, b), (a, b)


def rlc_stream(dense, run_bits):
    """The RLC of ``dense`` as an element-by-element encoder emits it (the definition).

    Counts zeros; a zero arriving on a count of max_run emits the filler
    (max_run, 0) and restarts the count; a nonzero emits (count, value).
    Fillers after the last nonzero are dropped: trailing zeros are implicit.
    """
    top, zeros, pairs = 2**run_bits - 1, 0, []
    for value in dense.ravel().tolist():
        if value != 0:
            pairs.append((zeros, value))
            zeros = 0
        elif zeros == top:
            pairs.append((top, 0))
            zeros = 0
        else:
            zeros += 1
    while pairs and pairs[-1][1] == 0:
        pairs.pop()
    return [run for run, _ in pairs], [value for _, value in pairs]


def csf_tree(coords):
    """fids and fptr of the CSF of sorted unique ``coords`` [nnz, ndim], level by level."""
    ndim = coords.shape[1]
    prefixes = [sorted({tuple(c[:level + 1]) for c in coords.tolist()}) for level in range(ndim)]
    fids = [[node[-1] for node in nodes] for nodes in prefixes]
    fptr = []
    for level in range(ndim - 1):
        children = prefixes[level + 1]
        ptr = [next(k for k, child in enumerate(children) if child[:level + 1] == node)
               for node in prefixes[level]]
        fptr.append([*ptr, len(children)])
    return fids, fptr


# --- round trips ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", cv.FORMATS)
@SETTINGS
@given(case=matrices())
def test_every_format_holds_the_matrix(fmt, case):
    dense, block = case
    held = cv.convert(dense, fmt, **options(fmt, block))
    assert cv.format_of(held) == fmt
    assert tuple(held.shape) == dense.shape
    assert cv.nonzeros(held) == np.count_nonzero(dense)
    assert_same(cv.convert(held, "dense"), dense)


@pytest.mark.parametrize("source", cv.FORMATS)
@pytest.mark.parametrize("target", cv.FORMATS)
@PAIR_SETTINGS
@given(case=matrices())
def test_every_pair_converts_as_from_dense(source, target, case):
    dense, block = case
    held = cv.convert(dense, source, **options(source, block, run_bits=2))
    result = cv.convert(held, target, **options(target, block))
    assert_same(result, cv.convert(dense, target, **options(target, block)))
    assert_same(cv.convert(result, "coo"), cv.convert(dense, "coo"))


@pytest.mark.parametrize("fmt", ["dense", "coo", "csf"])
@SETTINGS
@given(dense=tensors())
def test_tensor_formats_round_trip(fmt, dense):
    held = cv.convert(dense, fmt)
    assert_same(cv.convert(held, "dense"), dense)
    coo = cv.convert(held, "coo")
    coords = np.argwhere(dense)
    if dense.ndim == 2:
        assert np.array_equal(coo.row, coords[:, 0]) and np.array_equal(coo.col, coords[:, 1])
    else:
        assert np.array_equal(coo.coords, coords) and np.array_equal(coo.values, dense[dense != 0])


@SETTINGS
@given(dense=tensors())
def test_csf_is_the_tree_of_the_coordinates(dense):
    csf = cv.convert(Tensor(np.argwhere(dense), dense[dense != 0], dense.shape), "csf")
    fids, fptr = csf_tree(np.argwhere(dense))
    assert [f.tolist() for f in csf.fids] == fids
    assert [p.tolist() for p in csf.fptr] == fptr
    assert np.array_equal(csf.values, dense[dense != 0])


def test_the_input_is_not_modified_nor_shared():
    csr = sp.csr_array((np.array([1.0, 0.0, 2.0, 3.0]), np.array([2, 0, 2, 1]),
                        np.array([0, 3, 4])), shape=(2, 3))  # unsorted, repeated, a zero
    before = [csr.data.copy(), csr.indices.copy(), csr.indptr.copy()]
    for fmt in cv.FORMATS:
        result = cv.convert(csr, fmt, **options(fmt, (1, 1)))
        assert_same(cv.convert(result, "dense"), np.array([[0.0, 0, 3], [0, 3, 0]]))
        for array in cv._defining(result):
            if isinstance(array, np.ndarray):
                assert not any(np.shares_memory(array, b) for b in before + cv._defining(csr)[1:])
    for array, old in zip(cv._defining(csr)[1:], before[::-1], strict=True):
        assert np.array_equal(array, old)


# --- scipy ----------------------------------------------------------------------------

@SETTINGS
@given(case=matrices())
def test_scipy_formats_agree_with_scipy(case):
    dense, block = case
    assert_same(cv.convert(dense, "csr"), sp.csr_array(dense))
    assert_same(cv.convert(dense, "csc"), sp.csc_array(dense))
    assert_same(cv.convert(dense, "coo"), sp.coo_array(dense))
    assert_same(cv.convert(sp.csr_array(dense), "csc"), sp.csr_array(dense).tocsc())
    assert_same(cv.convert(sp.csc_array(dense), "csr"), sp.csc_array(dense).tocsr())
    scipy_bsr = sp.csr_array(dense).tobsr(blocksize=block)
    scipy_bsr.sort_indices()
    assert_same(cv.convert(sp.csr_array(dense), "bsr", block=block), scipy_bsr)


@SETTINGS
@given(case=matrices(), data=st.data())
def test_repeats_are_added_and_zeros_dropped_as_scipy_does(case, data):
    dense, _ = case
    rows, cols = dense.shape
    if not rows * cols:
        return
    count = data.draw(st.integers(0, 30))
    row = np.array(data.draw(st.lists(st.integers(0, rows - 1), min_size=count, max_size=count)),
                   dtype=np.int64)
    col = np.array(data.draw(st.lists(st.integers(0, cols - 1), min_size=count, max_size=count)),
                   dtype=np.int64)
    value = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5]), min_size=count,
                                        max_size=count)))
    coo = sp.coo_array((value, (row.astype(np.int32), col.astype(np.int32))), shape=dense.shape)
    expected = coo.tocsr()
    expected.eliminate_zeros()
    for fmt in ("coo", "csr", "csc"):
        result = cv.convert(coo, fmt)
        assert_same(result, getattr(expected, f"to{fmt}")())
        assert cv.nonzeros(result) == len(result.data)
    tensor = Tensor(np.stack([row, col], axis=1), value, dense.shape)
    assert_same(cv.convert(tensor, "csr"), expected)
    assert (cv.convert(coo, "rlc").values != 0).sum() == expected.nnz


@pytest.mark.parametrize("shape", [(40, 300_000), (300_000, 40)])
def test_over_2_to_16_columns_or_rows_take_two_radix_passes(shape):
    rng = np.random.default_rng(7)
    dense_ids = rng.choice(shape[0] * shape[1], 5000, replace=False)
    row, col = np.divmod(dense_ids, shape[1])
    csr = sp.csr_array((rng.standard_normal(5000), (row.astype(np.int32), col.astype(np.int32))),
                       shape=shape)
    assert_same(cv.convert(csr, "csc"), csr.tocsc())
    assert_same(cv.convert(csr.tocsc(), "csr"), csr)


@pytest.mark.parametrize("side", [255, 256, 257, 300, 1 << 16, (1 << 16) + 1])
def test_radix_sort_at_its_key_bounds(side):
    """Up to 256 columns (or rows) the sort's keys are 8 bits, up to 2**16 16 bits, past
    that two passes: at each bound and just past it, with nonzeros in the first and last
    columns and all over (a key too wide for its digit would land among the first ones),
    CSR to CSC and CSC to CSR are scipy's."""
    rng = np.random.default_rng(side)
    rows = 20
    ids = rng.choice(rows * side, 2000, replace=False)
    row, col = np.divmod(ids, side)
    edges = np.array([0, 1, 255, 256, side - 2, side - 1])
    edges = edges[edges < side]
    row = np.r_[row, np.repeat(np.arange(rows), len(edges))]
    col = np.r_[col, np.tile(edges, rows)]
    row, col = np.divmod(np.unique(row * side + col), side)
    values = rng.standard_normal(len(row))
    csr = sp.csr_array((values, (row.astype(np.int32), col.astype(np.int32))),
                       shape=(rows, side))
    assert_same(cv.convert(csr, "csc"), csr.tocsc())
    tall = csr.T.tocsc()
    assert_same(cv.convert(tall, "csr"), tall.tocsr())


def test_bsr_fill_is_not_carried_out_of_bsr():
    bsr = sp.csr_array(np.array([[1.0, 0], [0, 0]])).tobsr(blocksize=(2, 2))
    assert bsr.nnz == 4
    assert cv.nonzeros(bsr) == 1
    assert_same(cv.convert(bsr, "csr"), sp.csr_array(np.array([[1.0, 0], [0, 0]])))
    assert_same(cv.convert(bsr, "bsr"), bsr)  # the block size of the input by default
    assert cv.convert(bsr, "bsr", block=(1, 2)).blocksize == (1, 2)


# --- RLC and ZVC ----------------------------------------------------------------------

@pytest.mark.parametrize("run_bits", range(1, 9))
@SETTINGS
@given(case=matrices())
def test_rlc_is_the_streaming_encoding(run_bits, case):
    dense, _ = case
    rlc = cv.convert(dense, "rlc", run_bits=run_bits)
    runs, values = rlc_stream(dense, run_bits)
    assert rlc.runs.tolist() == runs and rlc.values.tolist() == values
    assert rlc.runs.dtype == np.uint8 and rlc.max_run == 2**run_bits - 1
    assert_same(cv.convert(rlc, "dense"), dense)


@pytest.mark.parametrize("run_bits", range(1, 9))
def test_rlc_fillers(run_bits):
    top = 2**run_bits - 1
    exact = np.zeros((1, top + 1))
    exact[0, top] = 5.0  # a gap of exactly max_run zeros: no filler
    assert cv.convert(exact, "rlc", run_bits=run_bits).runs.tolist() == [top]
    over = np.zeros((1, top + 2))
    over[0, top + 1] = 5.0  # one more zero: a filler covering max_run + 1 positions, then run 0
    rlc = cv.convert(over, "rlc", run_bits=run_bits)
    assert rlc.runs.tolist() == [top, 0] and rlc.values.tolist() == [0.0, 5.0]
    long = np.zeros((3, top + 1))  # runs continue across rows: a gap of 2 (max_run + 1) + 1
    long[0, 0], long[2, 1] = 1.0, 2.0
    rlc = cv.convert(long, "rlc", run_bits=run_bits)
    gap = 2 * (top + 1)
    assert rlc.runs.tolist() == [0, *[top] * (gap // (top + 1)), gap % (top + 1)]
    assert rlc.values.tolist() == [1.0, 0.0, 0.0, 2.0]
    for matrix in (exact, over, long):
        assert_same(cv.convert(cv.convert(matrix, "rlc", run_bits=run_bits), "dense"), matrix)


def test_rlc_runs_span_rows_and_trailing_zeros_are_implicit():
    dense = np.zeros((3, 4))
    dense[0, 3], dense[2, 1] = 7.0, 8.0  # 5 zeros between them, across row 1; 2 after
    rlc = cv.convert(dense, "rlc", run_bits=8)
    assert rlc.runs.tolist() == [3, 5] and rlc.values.tolist() == [7.0, 8.0]
    assert_same(cv.convert(rlc, "dense"), dense)
    empty = cv.convert(np.zeros((2, 3)), "rlc", run_bits=1)
    assert len(empty.runs) == 0 and cv.convert(empty, "dense").shape == (2, 3)


def test_rlc_to_coo_does_not_emit_the_fillers():
    rlc = cv.RLC(np.array([1, 1, 0, 0], dtype=np.uint8), np.array([0.0, 0.0, 4.0, 9.0]), (2, 3), 1)
    coo = cv.convert(rlc, "coo")  # fillers cover positions 0-1 and 2-3
    assert coo.row.tolist() == [1, 1] and coo.col.tolist() == [1, 2]
    assert coo.data.tolist() == [4.0, 9.0]


def test_rlc_filler_count_is_refused_before_allocation():
    coo = sp.coo_array(([1.0, 2.0], ([0, 10**6 - 1], [0, 10**6 - 1])), shape=(10**6, 10**6))
    with pytest.raises(ParameterError, match="fillers"):
        cv.convert(coo, "rlc", run_bits=1)
    assert len(cv.convert(coo, "rlc", run_bits=32).runs) == 2 + (10**12 - 2) // 2**32


@SETTINGS
@given(case=matrices())
def test_zvc_mask_is_little_endian_bits_in_row_major_order(case):
    dense, _ = case
    zvc = cv.convert(dense, "zvc")
    assert np.array_equal(zvc.mask, np.packbits(dense.ravel() != 0, bitorder="little"))
    assert np.array_equal(zvc.values, dense.ravel()[dense.ravel() != 0])
    assert_same(cv.convert(zvc, "dense"), dense)


# --- MINT Fig. 8 ----------------------------------------------------------------------
# The matrix of Fig. 8b and the tensor of Fig. 3b did not survive the paper's
# text extraction; these are built to what Section V-B says of them: in CSR to
# CSC, the first value a has column 2, col_ptr[2] = 3, and c, the next value
# of column 2, lands at location 4; a 4 x 4 matrix split into 2 x 2 blocks.

a, b, c, d, e, f, g = 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0
FIG8 = np.array([[0, 0, a, b],
                 [0, 0, c, 0],
                 [d, e, 0, 0],
                 [f, 0, 0, g]])


def test_fig8c_csr_to_csc():
    csc = cv.convert(sp.csr_array(FIG8), "csc")
    assert csc.indptr.tolist() == [0, 2, 3, 5, 7]  # the prefix sum of the column counts
    assert csc.data.tolist().index(a) == 3 and csc.data.tolist().index(c) == 4
    assert csc.data.tolist() == [d, f, e, a, c, b, g]
    assert csc.indices.tolist() == [2, 3, 2, 0, 1, 0, 3]


def test_fig8d_rlc_to_coo():
    rlc = cv.convert(FIG8, "rlc", run_bits=2)
    assert rlc.runs.tolist() == [2, 0, 2, 1, 0, 2, 2]
    position = np.cumsum(rlc.runs.astype(int) + 1) - 1  # add one to all but the first, prefix sum
    assert position.tolist() == [2, 3, 6, 8, 9, 12, 15]
    coo = cv.convert(rlc, "coo")
    assert coo.row.tolist() == (position // 4).tolist()  # divide and mod by K = 4
    assert coo.col.tolist() == (position % 4).tolist()
    assert coo.data.tolist() == [a, b, c, d, e, f, g]


def test_fig8e_csr_to_bsr():
    bsr = cv.convert(sp.csr_array(FIG8), "bsr", block=(2, 2))
    assert bsr.indptr.tolist() == [0, 1, 3] and bsr.indices.tolist() == [1, 0, 1]
    assert bsr.data.tolist() == [[[a, b], [c, 0]], [[d, e], [f, 0]], [[0, 0], [0, g]]]


def test_fig8f_dense_to_csf():
    tensor = np.zeros((4, 4, 4))
    coords = [(0, 1, 0), (0, 1, 3), (0, 3, 2), (2, 0, 1), (3, 2, 2), (3, 3, 0)]
    for value, coord in enumerate(coords, 1):
        tensor[coord] = value
    position = np.flatnonzero(tensor)  # the prefix sum over the dense stream
    x, rest = np.divmod(position, 4 * 4)
    y, z = np.divmod(rest, 4)
    assert list(zip(x.tolist(), y.tolist(), z.tolist(), strict=True)) == coords
    csf = cv.convert(tensor, "csf")
    assert [ids.tolist() for ids in csf.fids] == [[0, 2, 3], [1, 3, 0, 2, 3], [0, 3, 2, 1, 2, 0]]
    assert [ptr.tolist() for ptr in csf.fptr] == [[0, 2, 3, 5], [0, 2, 3, 4, 5, 6]]
    assert csf.values.tolist() == [1, 2, 3, 4, 5, 6]


# --- refusals -------------------------------------------------------------------------

TENSOR = Tensor(np.array([[0, 1, 2]]), np.array([1.0]), (2, 3, 4))


@pytest.mark.parametrize("fmt", cv.MATRIX_FORMATS)
def test_matrix_formats_refuse_a_tensor(fmt):
    with pytest.raises(ParameterError, match=f"{fmt.upper()} holds matrices.*3-D"):
        cv.convert(TENSOR, fmt, **options(fmt, (1, 1)))


@pytest.mark.parametrize("kwargs, words", [
    ({"to": "ell"}, "no conversion to 'ell'"),
    ({"to": "bsr"}, "needs a block size"),
    ({"to": "bsr", "block": (0, 2)}, "at least 1"),
    ({"to": "bsr", "block": (3, 3)}, "does not divide the 4 x 4"),
    ({"to": "bsr", "block": "2"}, "two sizes"),
    ({"to": "csr", "block": (2, 2)}, "BSR only"),
    ({"to": "csc", "run_bits": 4}, "RLC only"),
    ({"to": "rlc", "run_bits": 0}, "run_bits=0"),
    ({"to": "rlc", "run_bits": 33}, "run_bits=33"),
])
def test_bad_requests(kwargs, words):
    with pytest.raises(ParameterError, match=words):
        cv.convert(FIG8, **kwargs)


@pytest.mark.parametrize("obj", [[1, 2], sp.dia_array(np.eye(2)), np.array(3.0),
                                 np.array([["a"]])])
def test_unknown_inputs(obj):
    with pytest.raises(ParameterError):
        cv.convert(obj, "coo")


def test_dense_sizes_are_refused_before_allocation():
    huge = sp.coo_array(([1.0, 2.0, 3.0], ([0, 5, 999_999], [0, 7, 999_999])),
                        shape=(10**6, 10**6))
    for fmt in ("dense", "zvc"):
        with pytest.raises(ParameterError, match=r"1000000 x 1000000.*1,000,000,000,000"):
            cv.convert(huge, fmt)
    assert cv.nonzeros(cv.convert(huge, "csc")) == 3
    vast = sp.coo_array(([1.0], ([10**12 - 1], [3])), shape=(10**12, 10**12))
    assert cv.convert(cv.convert(vast, "csf"), "coo").row.tolist() == [10**12 - 1]
    with pytest.raises(ParameterError, match="row pointers"):
        cv.convert(vast, "csr")
    with pytest.raises(ParameterError, match="64 bits"):
        cv.convert(vast, "rlc")
    tall = cv.convert(sp.coo_array(([1.0, 2.0], ([10**11, 3], [0, 1])), shape=(10**12, 2)),
                      "csc")
    assert cv.convert(tall, "coo").row.tolist() == [3, 10**11]  # read without row pointers


def test_bsr_fill_is_bounded(monkeypatch):
    monkeypatch.setattr(cv, "MAX_AREA", 10)
    with pytest.raises(ParameterError, match="zero-filling 1 blocks of 4 x 4"):
        cv.convert(np.eye(4), "bsr", block=(4, 4))
    assert cv.convert(np.eye(4), "bsr", block=(1, 1)).nnz == 4


@pytest.mark.parametrize("make, words", [
    (lambda: cv.RLC([4], [1.0], (2, 2), 2), "outside 0..3"),
    (lambda: cv.RLC([1, 0], [0.0, 1.0], (2, 2), 2), r"\(1, 0\).*only a filler"),
    (lambda: cv.RLC([3], [0.0], (2, 2), 2), "ends in a filler"),
    (lambda: cv.RLC([3, 1], [0.0, 1.0], (2, 2), 2), "cover 6 positions"),
    (lambda: cv.RLC([0], [1.0, 2.0], (2, 2), 2), "1 runs but 2 values"),
    (lambda: cv.RLC([0], [1.0], (2, 2, 2), 2), "two non-negative sizes"),
    (lambda: cv.RLC([0], [1.0], (10**10, 10**10), 2), "64 bits"),
    (lambda: cv.ZVC(np.array([3], np.uint8), [1.0], (2, 2)), "marks 2 nonzeros but 1"),
    (lambda: cv.ZVC(np.array([16], np.uint8), [1.0], (2, 2)), "past the last"),
    (lambda: cv.ZVC(np.array([1, 0], np.uint8), [1.0], (2, 2)), "has 2 bytes"),
    (lambda: cv.ZVC(np.array([1], np.uint8), [0.0], (2, 2)), "value 0 is zero"),
    (lambda: cv.CSF(([0],), (), [1.0], (1, 1)), "2 fids and 1 fptr"),
    (lambda: cv.CSF(([0], [0, 1]), ([0, 1],), [1.0, 2.0], (1, 2)), "from 0 to 2"),
    (lambda: cv.CSF(([0, 1], [0, 1]), ([0, 2, 2],), [1.0, 2.0], (2, 2)), "does not rise"),
    (lambda: cv.CSF(([0], [1, 0]), ([0, 2],), [1.0, 2.0], (1, 2)), "within a fiber"),
    (lambda: cv.CSF(([0], [2]), ([0, 1],), [1.0], (1, 2)), "outside 0..1"),
])
def test_malformed_objects_are_refused(make, words):
    with pytest.raises(ParameterError, match=words):
        make()


# --- files ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", cv.FORMATS)
def test_files_round_trip(tmp_path, fmt):
    result = cv.convert(FIG8, fmt, **options(fmt, (2, 2)))
    path = tmp_path / f"m{cv.suffix(fmt, 2)}"
    cv.save(path, result)
    assert_same(cv.load(path), result)
    tensor = cv.convert(np.arange(24.0).reshape(2, 3, 4) % 5, "coo")
    for fmt in ("dense", "coo", "csf"):
        path = tmp_path / f"t{cv.suffix(fmt, 3)}"
        cv.save(path, cv.convert(tensor, fmt))
        assert_same(cv.convert(cv.load(path), "coo"), tensor)


def test_save_checks_the_suffix(tmp_path):
    with pytest.raises(ParameterError, match=r"saved as a \.npz"):
        cv.save(tmp_path / "m.mtx", cv.convert(FIG8, "csr"))
    with pytest.raises(ParameterError, match="complex"):
        cv.save(tmp_path / "t.tns", Tensor(np.zeros((1, 3), int), np.array([1j]), (1, 1, 1)))


def own_arrays(fmt):
    """The arrays of a valid RLC, ZVC or CSF file: FIG8, a full 2 x 2 x 2 tensor for CSF."""
    if fmt == "csf":
        obj = cv.convert(np.arange(1.0, 9.0).reshape(2, 2, 2), "csf")
    else:
        obj = cv.convert(FIG8, fmt, **options(fmt, None, run_bits=1))
    return {"format": np.array(fmt.encode()), "shape": np.array(obj.shape), **cv._arrays(obj)}


def change(fmt, **arrays):
    """The arrays of a valid file with some replaced (None: removed)."""
    result = own_arrays(fmt)
    result.update(arrays)
    return {name: value for name, value in result.items() if value is not None}


MALFORMED = [
    (change("rlc", runs=None), "no 'runs' array"),
    (change("rlc", extra=np.zeros(1)), "unexpected array 'extra'"),
    (change("rlc", run_bits=np.array([1, 2])), "'run_bits' must be one integer"),
    (change("rlc", run_bits=np.array(0)), "run_bits=0"),
    (change("rlc", runs=np.ones(11, np.uint8)), "cover 22 positions"),
    (change("rlc", runs=np.full(11, 2, np.uint8)), "outside 0..1"),
    (change("rlc", runs=np.ones(10, np.uint8)), "10 runs but 11 values"),
    (change("rlc", runs=np.ones(11)), "1-D integer array"),
    (change("rlc", values=np.array([0.0, np.nan, *range(9)])), "not finite"),
    (change("rlc", values=np.zeros((11, 1))), "1-D numeric array"),
    (change("rlc", shape=np.array([4, 4, 1])), "two non-negative sizes"),
    (change("rlc", shape=np.array([-4, 4])), "two non-negative sizes"),
    (change("rlc", shape=np.array([2.0, 2.0])), "'shape' must be a 1-D integer"),
    (change("zvc", mask=np.array([0b1100, 0, 0], np.uint8)), "has 3 bytes"),
    (change("zvc", mask=np.array([0b1100, 0], np.int8)), "1-D unsigned array"),
    (change("zvc", mask=np.array([0b1100, 0b1], np.uint8)), "marks 3 nonzeros but 7"),
    (change("zvc", values=np.arange(7.0)), "value 0 is zero"),
    (change("zvc", shape=np.array([2, 9])), "has 2 bytes; a 2 x 9 matrix needs 3"),
    (change("zvc", shape=np.array([3, 5])), "past the last of the 15 elements"),
    (change("csf", fptr1=np.array([0, 2, 2, 6, 8])), "fptr1 does not rise after entry 1"),
    (change("csf", fptr0=np.array([0, 1])), "fptr0 must hold 3 pointers from 0 to 4"),
    (change("csf", fids2=np.array([1, 0, 0, 1, 0, 1, 0, 1])), "fids2 does not rise within a"),
    (change("csf", fids1=np.array([0, 1, 0, 2])), "fids1 coordinate 2 at entry 3 is outside"),
    (change("csf", fptr1=None), "no 'fptr1' array"),
    (change("csf", fids3=np.zeros(1, int)), "unexpected array 'fids3'"),
    (change("csf", values=np.arange(1.0, 8.0)), "7 values for 8 leaves"),
    (change("csf", format=np.array(b"xyz")), "unsupported sparse format 'xyz'"),
    (change("csf", format=np.array([1, 2])), "'format' must be a string"),
    (change("zvc", format=None), "no 'format' array"),
]


@pytest.mark.parametrize("arrays, words", MALFORMED)
def test_malformed_files_are_refused(tmp_path, arrays, words):
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(FormatError, match=words) as info:
        cv.load(path)
    assert str(info.value).startswith(str(path))


def test_damaged_archives_are_refused(tmp_path):
    text = tmp_path / "text.npz"
    text.write_text("not a zip\n")
    single = tmp_path / "single.npz"
    with open(single, "wb") as file:
        np.save(file, np.zeros(3))
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, **change("rlc", values=np.array([None] * 11, dtype=object)))
    bomb = tmp_path / "bomb.npz"  # a header declaring far more data than is stored
    header = np.lib.format.header_data_from_array_1_0(np.zeros(3, np.uint8))
    header["shape"] = (10**12,)
    with zipfile.ZipFile(bomb, "w") as archive:
        for name, array in own_arrays("zvc").items():
            with archive.open(f"{name}.npy", "w") as member:
                if name == "mask":
                    np.lib.format.write_array_header_1_0(member, header)
                    member.write(b"\0\0")
                else:
                    np.lib.format.write_array(member, array)
    for path, words in [(text, "not a readable .npz"), (single, "single .npy"),
                        (pickled, "Python objects"), (bomb, "declares 1000000000000 bytes"),
                        (tmp_path / "missing.npz", "no such file")]:
        with pytest.raises(FormatError, match=words):
            cv.load(path)


# --- real data ------------------------------------------------------------------------

SMALL = ["matrices/suitesparse/cage3.mtx", "matrices/suitesparse/b1_ss.mtx",
         "matrices/suitesparse/lp_afiro.mtx", "matrices/suitesparse/LFAT5.mtx",
         "matrices/suitesparse/Ragusa16.mtx", "matrices/suitesparse/n3c4-b4.mtx",
         "matrices/suitesparse/west0067.mtx", "matrices/suitesparse/young1c.mtx",
         "matrices/pypi/nx_karate_club.mtx",
         "dnn_weights/squeezenet_deep_compression/fire2_conv1x1_2.mtx"]


def divisor_block(shape):
    """The largest block of up to 4 x 4 that divides ``shape``."""
    return tuple(max(k for k in range(1, 5) if n % k == 0) for n in shape)


@pytest.mark.parametrize("name", SMALL)
def test_real_matrices(shared_data, name):
    matrix = read_matrix(shared_data / name)
    csr, block = matrix.tocsr(), divisor_block(matrix.shape)
    csr.eliminate_zeros()
    assert_same(cv.convert(csr, "csc"), csr.tocsc())
    scipy_bsr = csr.tobsr(blocksize=block)
    scipy_bsr.sort_indices()
    assert_same(cv.convert(csr, "bsr", block=block), scipy_bsr)
    coo = cv.convert(matrix, "coo")
    for fmt in cv.FORMATS:
        held = cv.convert(matrix, fmt, **options(fmt, block, run_bits=4))
        assert cv.nonzeros(held) == csr.nnz
        assert_same(cv.convert(held, "coo"), coo)
    for run_bits in (2, 5):  # SAGE's compactness counts the same fillers
        pairs = len(cv.convert(matrix, "rlc", run_bits=run_bits).runs)
        assert pairs * (32 + run_bits) == \
            matrix_compactness(matrix, run_bits=run_bits).bits["RLC"]
    if math.prod(matrix.shape) <= 5000:
        runs, values = rlc_stream(csr.toarray(), 4)
        rlc = cv.convert(matrix, "rlc", run_bits=4)
        assert rlc.runs.tolist() == runs and rlc.values.tolist() == values


def test_real_matrix_csr_to_csc_agrees_with_scipy(shared_data):
    csr = read_matrix(shared_data / "matrices/suitesparse/Groebner_id2003_aug.mtx").tocsr()
    assert_same(cv.convert(csr, "csc"), csr.tocsc())
    assert_same(cv.convert(cv.convert(csr, "csc"), "csr"), csr)


@pytest.mark.parametrize("name", ["movielens-latest-small_user-movie-tag.tns",
                                  "movielens-100k_user-item-day.tns",
                                  "kg-wikipeople-arity3_rel-e1-e2-e3.tns"])
def test_real_tensors(shared_data, tmp_path, name):
    tensor = read_tensor(shared_data / "tensors" / name)
    csf = cv.convert(tensor, "csf")
    assert len(csf.fids) == tensor.ndim and len(csf.values) == tensor.nnz
    assert np.array_equal(csf.fids[0], np.unique(tensor.coords[:, 0]))
    assert np.array_equal(csf.fids[-1], tensor.coords[:, -1])
    assert np.array_equal(np.diff(csf.fptr[-1]),  # leaves under each fiber above them
                          np.unique(tensor.coords[:, :-1], axis=0, return_counts=True)[1])
    assert_same(cv.convert(csf, "coo"), tensor)
    cv.save(tmp_path / "t.npz", csf)
    cv.save(tmp_path / "t.tns", cv.convert(cv.load(tmp_path / "t.npz"), "coo"))
    assert_same(read_tensor(tmp_path / "t.tns"), tensor)
