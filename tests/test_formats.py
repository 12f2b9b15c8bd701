"""Tests of the sparse file readers (sparseforge.sw.formats).

Real files are cross-checked against scipy and the data manifests, and read
the same through the fast reader (fast_matrix_market) and the exact one;
small hand-written files cover the formats the shared data lacks (array,
skew, hermitian, .npz) and every kind of malformed input, whose error must
name the file and the line. tests/test_formats_corpus.py holds the corpus of
malformed files, tests/test_formats_property.py the property tests.
"""

import contextlib
import csv
import functools
import gzip
import subprocess
import sys
import tracemalloc
from unittest import mock

import numpy as np
import pytest
import scipy.io
import scipy.sparse
from scipy.sparse import coo_array

from sparseforge.core.errors import FormatError, ParameterError
from sparseforge.sw import formats
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor

# One of each kind in the shared data: (field, symmetry) and shape quirks.
REPRESENTATIVE_MTX = [
    "matrices/pypi/nx_karate_club.mtx",  # integer symmetric
    "matrices/suitesparse/Franz6_id1959_aug.mtx",  # integer general, non-square
    "matrices/pypi/pyamg_helmholtz_2D.mtx",  # complex general
    "matrices/suitesparse/young1c.mtx",  # complex general
    "matrices/suitesparse/494_bus.mtx",  # real symmetric
    "matrices/suitesparse/cage5.mtx",  # real general
    "matrices/suitesparse/karate.mtx",  # pattern symmetric
    "matrices/suitesparse/ash219.mtx",  # pattern general, non-square
    "matrices/suitesparse/Ragusa16.mtx",  # pattern with a (ignored) value column
    "dnn_weights/squeezenet_deep_compression/conv1.mtx",  # real, pruned DNN layer
]

DLMC = [
    "dnn_weights/dlmc/rn50/magnitude_pruning/0.7/final_dense.smtx.gz",
    "dnn_weights/dlmc/rn50/random_pruning/0.9/bottleneck_1_block_group1_1_1.smtx.gz",
    "dnn_weights/dlmc/rn50/variational_dropout/0.9/bottleneck_3_block_group4_2_1.smtx.gz",
]


@functools.cache
def _read(path):
    """read_matrix, once per file for the whole module."""
    return read_matrix(path)


def _assert_same_as_scipy(path):
    """Our matrix equals scipy.io.mmread's, duplicates summed, entry for entry."""
    ours = _read(path)
    theirs = coo_array(scipy.io.mmread(path))
    theirs.sum_duplicates()
    assert ours.shape == theirs.shape, path
    assert ours.dtype == theirs.dtype, path
    np.testing.assert_array_equal(ours.row, theirs.row, err_msg=str(path))
    np.testing.assert_array_equal(ours.col, theirs.col, err_msg=str(path))
    np.testing.assert_array_equal(ours.data, theirs.data, err_msg=str(path))


# --- real data ---------------------------------------------------------------

@pytest.mark.parametrize("name", REPRESENTATIVE_MTX)
def test_representative_mtx_matches_scipy(shared_data, name):
    _assert_same_as_scipy(shared_data / name)


def test_every_mtx_matches_scipy(shared_data):
    paths = sorted((shared_data / "matrices").rglob("*.mtx"))
    assert paths
    for path in paths:
        _assert_same_as_scipy(path)


def test_every_mtx_takes_the_fast_path_and_the_exact_one_agrees(shared_data):
    paths = sorted((shared_data / "matrices").rglob("*.mtx"))

    def refuse(path, file, head):
        raise AssertionError(f"{path} fell back to the exact reader")

    with mock.patch.object(formats, "_mtx_exact", refuse):
        fast = [read_matrix(path) for path in paths]
    with mock.patch.object(formats, "_mtx_fast", lambda file, head: None):
        for path, ours in zip(paths, fast, strict=True):
            exact = read_matrix(path)
            assert ours.dtype == exact.dtype and ours.row.dtype == exact.row.dtype, path
            for name in ("row", "col", "data"):
                np.testing.assert_array_equal(getattr(ours, name), getattr(exact, name),
                                              err_msg=str(path))


def test_mtx_agrees_with_manifest(shared_data):
    with open(shared_data / "MANIFEST_matrices.csv", newline="") as file:
        rows = [row for row in csv.DictReader(file) if row["file"].endswith(".mtx")]
    assert rows
    for row in rows:
        matrix = _read(shared_data / row["file"])
        assert matrix.shape == (int(row["rows"]), int(row["cols"])), row["file"]
        assert matrix.nnz == int(row["nnz_full"]), row["file"]


@pytest.mark.parametrize("name", DLMC)
def test_dlmc_nnz_matches_header(shared_data, name):
    path = shared_data / name
    with gzip.open(path, "rt") as file:
        rows, cols, nnz = (int(word) for word in file.readline().split(","))
    matrix = read_matrix(path)
    assert matrix.shape == (rows, cols)
    assert matrix.nnz == nnz
    assert matrix.dtype == np.float64 and np.all(matrix.data == 1.0)


def test_every_tns_agrees_with_manifest(shared_data):
    with open(shared_data / "MANIFEST_tensors.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert rows
    for row in rows:
        tensor = read_tensor(shared_data / "tensors" / row["file"])
        shape = tuple(int(n) for n in row["dims"].split("x"))
        assert tensor.shape == shape, row["file"]
        assert tensor.ndim == int(row["order"]) == tensor.coords.shape[1], row["file"]
        assert tensor.nnz == int(row["nnz"]) == len(tensor.coords), row["file"]
        assert tensor.coords.dtype == np.int64 and tensor.values.dtype == np.float64
        assert tensor.coords.min() >= 0
        assert np.all(tensor.coords.max(axis=0) < shape), row["file"]


def test_gzip_is_transparent(shared_data, tmp_path):
    plain = shared_data / "matrices/suitesparse/494_bus.mtx"
    packed = tmp_path / "494_bus.mtx.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert (read_matrix(packed) != _read(plain)).nnz == 0


# --- small hand-written files -------------------------------------------------

def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text", [
    # skew-symmetric: strictly lower triangle, mirrored with the sign flipped
    "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 2 -4\n",
    # hermitian: mirrored conjugate
    "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 2 0\n2 1 1 -3\n",
    # integer symmetric
    "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 7\n3 1 -2\n3 3 5\n",
    # dense, column-major
    "%%MatrixMarket matrix array real general\n2 3\n1\n0\n2.5\n3\n0\n-1\n",
    "%%MatrixMarket matrix array integer symmetric\n3 3\n1\n2\n3\n4\n0\n6\n",
    "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n",
    "%%MatrixMarket matrix array complex hermitian\n2 2\n1 0\n2 -1\n3 0\n",
    # comments, blank lines and CRLF endings are tolerated
    "%%MatrixMarket matrix coordinate real general\r\n% note\r\n\r\n2 2 2\r\n1 1 1\r\n\r\n"
    "2 2 3\r\n",
])
def test_small_mtx_matches_scipy(tmp_path, text):
    path = _write(tmp_path, "small.mtx", text)
    ours = read_matrix(path)
    theirs = scipy.io.mmread(path)
    theirs = theirs.toarray() if hasattr(theirs, "toarray") else theirs
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours.toarray(), theirs)


def test_real_hermitian_reads_as_symmetric(tmp_path):
    body = "3 3 3\n1 1 2\n2 1 -1.5\n3 2 4\n"
    hermitian = read_matrix(_write(tmp_path, "h.mtx", COORD.replace("general", "hermitian")
                                   + body))
    symmetric = read_matrix(_write(tmp_path, "s.mtx", COORD.replace("general", "symmetric")
                                   + body))
    assert hermitian.dtype == np.float64
    np.testing.assert_array_equal(hermitian.toarray(), symmetric.toarray())
    np.testing.assert_array_equal(hermitian.toarray(), [[2, -1.5, 0], [-1.5, 0, 4], [0, 4, 0]])


@pytest.mark.parametrize("exact", [False, True])
def test_index_dtype_follows_the_shape(tmp_path, exact):
    small = _write(tmp_path, "small.mtx", COORD + "3 4 2\n3 1 1\n1 4 2\n")
    large = _write(tmp_path, "large.mtx", COORD + "3 5000000000 2\n3 1 1\n1 4999999999 2\n")
    path = mock.patch.object(formats, "_mtx_fast", lambda file, head: None) if exact else \
        contextlib.nullcontext()
    with path:
        ours, big = read_matrix(small), read_matrix(large)
    assert ours.row.dtype == ours.col.dtype == np.int32
    assert big.row.dtype == big.col.dtype == np.int64
    assert big.shape == (3, 5000000000)
    np.testing.assert_array_equal(big.row, [0, 2])
    np.testing.assert_array_equal(big.col, [4999999998, 0])


def test_unusual_layouts_read_the_same(tmp_path):
    plain = read_matrix(_write(tmp_path, "p.mtx", COORD + "3 3 3\n1 1 1.5\n3 2 -2\n2 3 4e2\n"))
    for name, body in [("crlf.mtx", "3 3 3\r\n1 1 1.5\r\n3 2 -2\r\n2 3 4e2\r\n"),
                       ("tabs.mtx", "3 3 3\n1\t1\t1.5\n3\t2\t-2\n2\t3\t4e2\n"),
                       ("spaces.mtx", "3 3 3\n  1   1 1.5  \n3 2  -2\n 2 3 4e2\n"),
                       ("comments.mtx", "3 3 3\n1 1 1.5\n% note\n\n3 2 -2\n2 3 4e2"),
                       ("noend.mtx", "3 3 3\n1 1 1.5\n3 2 -2\n2 3 4e2")]:
        ours = read_matrix(_write(tmp_path, name, COORD + body))
        np.testing.assert_array_equal(ours.toarray(), plain.toarray(), err_msg=name)


@pytest.mark.parametrize("value", ["5e", "5e+", "1.5e-", "7"])
def test_value_cut_at_the_end_of_the_file_does_not_crash(tmp_path, value):
    # fast_matrix_market reads past such a value when nothing follows it, and crashes
    # (scipy.io.mmread too): the reader ends the last line itself. In a subprocess, so a
    # regression fails this test instead of killing the test run.
    path = tmp_path / "cut.mtx"
    path.write_bytes(f"{COORD}2 2 1\n1 1 {value}".encode())
    code = ("import sys\nfrom sparseforge.core.errors import FormatError\n"
            "from sparseforge.sw.formats import read_matrix\n"
            "try:\n    read_matrix(sys.argv[1])\nexcept FormatError:\n    pass\n")
    run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-500:]


def test_absurd_declared_size_is_refused_before_allocating(tmp_path):
    path = _write(tmp_path, "absurd.mtx", COORD + "4 4 1000000000000\n1 1 1\n")
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="declares 1000000000000 entries but the file has 1"):
            read_matrix(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20


@pytest.mark.parametrize("fmt", ["coo", "csr", "csc", "bsr", "dia"])
@pytest.mark.parametrize("kind", [scipy.sparse.coo_array, scipy.sparse.coo_matrix])
def test_npz(tmp_path, fmt, kind):
    dense = np.array([[0, 1.5, 0, 0], [2, 0, 0, -1], [0, 0, 0, 0], [0, 3, 0, 4]])
    path = tmp_path / "m.npz"
    scipy.sparse.save_npz(path, kind(dense).asformat(fmt))
    matrix = read_matrix(path)
    assert isinstance(matrix, coo_array) and matrix.has_canonical_format
    assert matrix.row.dtype == np.int32 and matrix.dtype == np.float64
    np.testing.assert_array_equal(matrix.toarray(), dense)


def test_npz_duplicates(tmp_path):
    path = tmp_path / "d.npz"
    scipy.sparse.save_npz(path, coo_array(([1.0, 2.0, 5.0], ([0, 0, 1], [1, 1, 0])),
                                          shape=(2, 2)))
    np.testing.assert_array_equal(read_matrix(path).toarray(), [[0, 3], [5, 0]])
    with pytest.raises(FormatError, match=r"duplicate entry \(0, 1\) \(0-based\), stored at "
                                          "positions 0 and 1") as info:
        read_matrix(path, duplicates="error")
    assert info.value.line is None


def test_npy(tmp_path):
    dense = np.array([[0, 3, 0], [-1, 0, 0]], dtype=np.int32)
    np.save(tmp_path / "m.npy", dense)
    matrix = read_matrix(tmp_path / "m.npy")
    assert matrix.dtype == np.int64 and matrix.nnz == 2
    np.testing.assert_array_equal(matrix.toarray(), dense)


def test_pattern_values_are_one(tmp_path):
    path = _write(tmp_path, "p.mtx",
                  "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n")
    matrix = read_matrix(path)
    assert matrix.dtype == np.float64
    np.testing.assert_array_equal(matrix.toarray(), [[0, 1, 0], [1, 0, 0], [0, 0, 1]])


def test_smtx(tmp_path):
    path = _write(tmp_path, "w.smtx", "3, 4, 3\n0 2 2 3\n1 3 0\n")
    np.testing.assert_array_equal(read_matrix(path).toarray(),
                                  [[0, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]])


def test_tns_without_dims_infers_shape(tmp_path):
    path = _write(tmp_path, "t.tns", "# no dims\n2 1 3 1.5\n# mid comment\n1 4 1 -2\n")
    tensor = read_tensor(path)
    assert isinstance(tensor, Tensor)
    assert tensor.shape == (2, 4, 3) and tensor.ndim == 3 and tensor.nnz == 2
    np.testing.assert_array_equal(tensor.coords, [[0, 3, 0], [1, 0, 2]])  # sorted
    np.testing.assert_array_equal(tensor.values, [-2.0, 1.5])


def test_tns_empty_with_dims(tmp_path):
    tensor = read_tensor(_write(tmp_path, "e.tns", "# dims: 4 5\n"))
    assert tensor.shape == (4, 5) and tensor.nnz == 0 and tensor.coords.shape == (0, 2)


# --- duplicates ----------------------------------------------------------------

DUPLICATED_MTX = "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 2 1.5\n2 1 1\n1 2 2\n"
DUPLICATED_TNS = "# dims: 2 2 2\n1 2 1 1.5\n2 2 2 1\n1 2 1 2\n"


def test_duplicates_are_summed(tmp_path):
    matrix = read_matrix(_write(tmp_path, "d.mtx", DUPLICATED_MTX))
    assert matrix.nnz == 2
    np.testing.assert_array_equal(matrix.toarray(), [[0, 3.5], [1, 0]])
    tensor = read_tensor(_write(tmp_path, "d.tns", DUPLICATED_TNS))
    np.testing.assert_array_equal(tensor.coords, [[0, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(tensor.values, [3.5, 1.0])


@pytest.mark.parametrize(("name", "text", "line", "coord"), [
    ("d.mtx", DUPLICATED_MTX, 5, "(1, 2)"),
    ("d.tns", DUPLICATED_TNS, 4, "(1, 2, 1)"),
    # (2, 1) and (1, 2) are the same entry of a symmetric matrix
    ("s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 1\n1 2 1\n", 4,
     "(1, 2)"),
    ("d.smtx", "2, 3, 3\n0 2 3\n1 1 0\n", 3, "(0, 1)"),
])
def test_duplicates_error(tmp_path, name, text, line, coord):
    path = _write(tmp_path, name, text)
    reader = read_tensor if name.endswith(".tns") else read_matrix
    with pytest.raises(FormatError) as info:
        reader(path, duplicates="error")
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: duplicate entry {coord}")


def test_unknown_duplicate_policy(tmp_path):
    with pytest.raises(ParameterError, match="duplicates='keep'"):
        read_matrix(_write(tmp_path, "d.mtx", DUPLICATED_MTX), duplicates="keep")


# --- malformed files ------------------------------------------------------------

COORD = "%%MatrixMarket matrix coordinate real general\n"

MALFORMED = [
    # name, text, line, words the message must contain
    ("empty.mtx", "", 1, "missing Matrix Market banner"),
    ("nobanner.mtx", "2 2 1\n1 1 1\n", 1, "missing Matrix Market banner"),
    ("short.mtx", "%%MatrixMarket matrix coordinate real\n2 2 0\n", 1, "bad banner"),
    ("vector.mtx", "%%MatrixMarket vector coordinate real general\n2 2 0\n", 1, "bad banner"),
    ("format.mtx", "%%MatrixMarket matrix sparse real general\n2 2 0\n", 1,
     "unsupported format 'sparse'"),
    ("field.mtx", "%%MatrixMarket matrix coordinate quaternion general\n2 2 0\n", 1,
     "unsupported field 'quaternion'"),
    ("symmetry.mtx", "%%MatrixMarket matrix coordinate real upper\n2 2 0\n", 1,
     "unsupported symmetry 'upper'"),
    ("pattern.mtx", "%%MatrixMarket matrix array pattern general\n2 2\n", 1,
     "pattern matrix cannot be array"),
    ("nosize.mtx", COORD + "% only comments\n", 3, "missing size line"),
    ("size.mtx", COORD + "% c\n2 2\n1 1 1\n", 3, "expected a size line"),
    ("sizeword.mtx", COORD + "2 two 1\n", 2, "expected a size line"),
    ("square.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", 2,
     "must be square"),
    ("few.mtx", COORD + "% c\n3 3 3\n1 1 1\n2 2 2\n", 3, "declares 3 entries but the file has 2"),
    ("many.mtx", COORD + "3 3 2\n1 1 1\n2 2 2\n3 3 3\n", 5, "more entries than the 2 declared"),
    ("fewarray.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 2,
     "declares 4 entries"),
    ("row0.mtx", COORD + "3 3 2\n1 1 1\n0 2 1\n", 4, "coordinate (0, 2) is outside the 3x3"),
    ("col4.mtx", COORD + "3 3 2\n1 1 1\n2 4 1\n", 4, "coordinate (2, 4) is outside the 3x3"),
    ("float.mtx", COORD + "3 3 2\n1 1 1\n1.5 2 1\n", 4, "coordinate '1.5' is not an integer"),
    ("cols.mtx", COORD + "3 3 2\n1 1 1\n2 2\n", 4, "expected 3 columns, found 2"),
    ("cplx.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1\n", 3,
     "expected 4 columns, found 3"),
    ("nan.mtx", COORD + "3 3 2\n1 1 1\n2 2 nan\n", 4, "value nan is not finite"),
    ("inf.mtx", COORD + "3 3 2\n1 1 -inf\n2 2 1\n", 3, "value -inf is not finite"),
    ("word.mtx", COORD + "3 3 2\n1 1 1\n2 2 one\n", 4, "value 'one' is not a number"),
    ("skew.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n3 3 0\n",
     4, "entry (3, 3) is on the diagonal, which a skew-symmetric file must not list"),
    ("junk.mtx", COORD + "3 3 2\n1 1 1\n2 2 2 junk\n", 4, "expected 3 columns, found 4"),
    ("glued.mtx", COORD + "3 3 2\n1 1 1\n2 2 2x\n", 4, "value '2x' is not a number"),
    ("int.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 2.5\n", 3,
     "value '2.5' is not an integer"),
    ("header.smtx", "3, 3\n0 1 1 1\n0\n", 1, "expected a size line"),
    ("noptr.smtx", "3, 3, 1\n", 2, "missing row_ptr line"),
    ("ptrlen.smtx", "3, 3, 1\n0 1 1\n0\n", 2, "row_ptr has 3 entries, expected rows + 1 = 4"),
    ("ptrdown.smtx", "3, 3, 1\n0 1 0 1\n0\n", 2, "row_ptr must rise from 0 to nnz = 1"),
    ("ptrword.smtx", "3, 3, 1\n0 1 x 1\n0\n", 2, "row_ptr entry 'x' is not an integer"),
    ("ptrend.smtx", "3, 3, 1\n0 1 1 2\n0\n", 2, "row_ptr must rise from 0 to nnz = 1"),
    ("idxcount.smtx", "3, 3, 1\n0 1 1 1\n0 2\n", 3, "col_idx has 2 entries"),
    ("colrange.smtx", "3, 3, 1\n0 1 1 1\n3\n", 3, "column index 3 (entry 0) is outside 0..2"),
    ("colword.smtx", "3, 3, 1\n0 1 1 1\n1.0\n", 3, "col_idx entry '1.0' is not an integer"),
    ("extra.smtx", "3, 3, 1\n0 1 1 1\n0\n\n5 6\n", 5, "unexpected content"),
    ("cols.tns", "# dims: 3 3\n1 1 1\n# comment\n2 2 2 2\n", 4, "expected 3 columns, found 4"),
    ("one.tns", "1\n2\n", 1, "expected coordinates followed by a value"),
    ("zero.tns", "# c\n1 1 1\n0 1 1\n", 3, "coordinate (0, 1) is outside"),
    ("range.tns", "# dims: 3 3\n1 1 1\n2 4 1\n", 3, "coordinate (2, 4) is outside the 3x3"),
    ("float.tns", "1 1 1\n2 2.0 1\n", 2, "coordinate '2.0' is not an integer"),
    ("nan.tns", "1 1 1\n\n2 2 NaN\n", 3, "value nan is not finite"),
    ("word.tns", "1 1 1\n2 2 x1\n", 2, "value 'x1' is not a number"),
    ("dims.tns", "# c\n# dims: 3 three\n1 1 1\n", 2, "expected a size line"),
    ("ndims.tns", "# dims: 3 3 3\n1 1 1\n", 1, "dims comment gives 3 sizes"),
]


@pytest.mark.parametrize(("name", "text", "line", "words"), MALFORMED,
                         ids=[case[0] for case in MALFORMED])
def test_malformed_file_names_file_and_line(tmp_path, name, text, line, words):
    path = _write(tmp_path, name, text)
    reader = read_tensor if name.endswith(".tns") else read_matrix
    with pytest.raises(FormatError) as info:
        reader(path)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert words in str(info.value)


@pytest.mark.parametrize(("reader", "name", "words"), [
    (read_matrix, "missing.mtx", "no such file"),
    (read_tensor, "missing.tns.gz", "no such file"),
    (read_matrix, "matrix.csv", "unknown extension"),
    (read_tensor, "tensor.mtx", "unknown extension"),
])
def test_file_level_errors_have_no_line(tmp_path, reader, name, words):
    path = tmp_path / name
    with pytest.raises(FormatError) as info:
        reader(path)
    assert info.value.line is None
    assert str(info.value).startswith(f"{path}: ")
    assert words in str(info.value)


@pytest.mark.parametrize(("name", "content", "words"), [
    ("bad.mtx.gz", b"not gzip", "cannot read the file"),
    ("cut.tns.gz", gzip.compress(b"1 1 1\n" * 100, mtime=0)[:-12], "cannot read the file"),
    ("bad.npy", b"not numpy", "not a readable .npy array"),
    ("empty.tns", b"# just a comment\n", "the shape is unknown"),
])
def test_unreadable_files(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content)
    reader = read_tensor if ".tns" in name else read_matrix
    with pytest.raises(FormatError, match=words) as info:
        reader(path)
    assert str(info.value).startswith(f"{path}: ")


@pytest.mark.parametrize(("array", "words"), [
    (np.zeros((2, 2, 2)), "expected a 2-D numeric array, got 3-D"),
    (np.array([["a", "b"]]), "expected a 2-D numeric array"),
    (np.array([[1.0, np.inf]]), r"value at \(0, 1\) \(0-based\) is not finite"),
])
def test_malformed_npy(tmp_path, array, words):
    path = tmp_path / "m.npy"
    np.save(path, array)
    with pytest.raises(FormatError, match=words):
        read_matrix(path)


@pytest.mark.parametrize(("coords", "expected"), [
    (([0, 0, 1], [1, 1, 0], [0, 2, 0]), True),     # the last mode breaks the tie
    (([0, 0, 1], [1, 1, 0], [2, 2, 0]), False),    # a coordinate repeated
    (([0, 0, 1], [1, 1, 0], [2, 1, 0]), False),    # the last mode falls within a tie
    (([0, 1], [5, 0]), True),                      # a later row with a smaller column
    (([1, 0], [0, 5]), False),                     # rows falling
])
def test_row_major_compares_modes_in_order(coords, expected):
    assert formats.row_major(*(np.array(c) for c in coords)) is expected


def test_row_major_sees_a_fall_across_its_blocks():
    """The check goes a block of 2**20 entries at a time: a fall between the last entry
    of one block and the first of the next is still seen."""
    n = (1 << 20) + 1
    row = np.arange(n)
    assert formats.row_major(row, np.zeros(n, dtype=np.int64))
    row[1 << 20] = row[(1 << 20) - 1]
    assert not formats.row_major(row, np.zeros(n, dtype=np.int64))
