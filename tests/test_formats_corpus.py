"""The malformed-input corpus (tests/corpus/formats/): every file is refused in one line.

One small file per way a file can be broken: truncated gzip, binary garbage,
wrong banners and headers, absurd declared sizes (refused before anything of
that size is allocated), bad row pointers, mixed field counts, trailing
tokens, indices out of range, NaN/Inf, a skew-symmetric diagonal, empty
files. Each must raise a FormatError whose message starts with the file's
path (and its line, where the problem is on one line) and says what is wrong.
"""

from pathlib import Path

import pytest

from sparseforge.core.errors import FormatError
from sparseforge.sw.formats import read_matrix, read_tensor

CORPUS = Path(__file__).parent / "corpus" / "formats"

# file: (line, words the message must contain); line None for a file-level problem.
EXPECTED = {
    # Matrix Market: banner and size line
    "mtx_empty.mtx": (1, "missing Matrix Market banner"),
    "mtx_binary.mtx": (1, "missing Matrix Market banner"),
    "mtx_no_banner.mtx": (1, "missing Matrix Market banner"),
    "mtx_banner_vector.mtx": (1, "bad banner"),
    "mtx_banner_short.mtx": (1, "bad banner"),
    "mtx_banner_format.mtx": (1, "unsupported format 'sparse'"),
    "mtx_banner_field.mtx": (1, "unsupported field 'quaternion'"),
    "mtx_banner_symmetry.mtx": (1, "unsupported symmetry 'upper'"),
    "mtx_pattern_skew.mtx": (1, "a pattern matrix cannot be coordinate skew-symmetric"),
    "mtx_no_size_line.mtx": (3, "missing size line"),
    "mtx_size_line_words.mtx": (2, "expected a size line 'rows cols entries'"),
    "mtx_size_line_negative.mtx": (2, "expected a size line 'rows cols entries'"),
    "mtx_size_line_huge.mtx": (2, "size too large"),
    "mtx_symmetric_not_square.mtx": (2, "a symmetric matrix must be square, got 4x3"),
    # Matrix Market: counts, absurd sizes
    "mtx_fewer_entries.mtx": (2, "declares 3 entries but the file has 2"),
    "mtx_more_entries.mtx": (5, "more entries than the 2 declared on line 2"),
    "mtx_absurd_entries.mtx": (2, "declares 1000000000000000 entries but the file has 1"),
    "mtx_absurd_entries.mtx.gz": (2, "declares 1000000000000000 entries but the file has 1"),
    "mtx_absurd_array.mtx": (2, "declares 1000000000000000000 entries but the file has 1"),
    "mtx_array_fewer.mtx": (2, "declares 4 entries but the file has 3"),
    # Matrix Market: data lines
    "mtx_binary_body.mtx": (5, "NUL byte"),
    "mtx_nul_byte.mtx": (4, "NUL byte"),
    "mtx_mixed_fields.mtx": (4, "expected 3 columns, found 2"),
    "mtx_trailing_token.mtx": (4, "expected 3 columns, found 4"),
    "mtx_trailing_number.mtx": (4, "expected 3 columns, found 4"),
    "mtx_complex_short.mtx": (3, "expected 4 columns, found 3"),
    "mtx_pattern_mixed.mtx": (4, "expected 2 columns, found 3"),
    "mtx_array_two_tokens.mtx": (3, "expected 1 columns, found 2"),
    "mtx_crlf_stray_cr.mtx": (4, "expected 3 columns, found 2"),
    "mtx_glued_junk.mtx": (4, "value '1x' is not a number"),
    "mtx_hex_value.mtx": (4, "value '0x10' is not a number"),
    "mtx_integer_decimal.mtx": (3, "value '2.5' is not an integer"),
    "mtx_integer_overflow.mtx": (3, "value '99999999999999999999' is not an integer"),
    "mtx_index_float.mtx": (4, "coordinate '1.5' is not an integer"),
    "mtx_index_overflow.mtx": (3, "coordinate '99999999999999999999' is not an integer"),
    "mtx_row_zero.mtx": (4, "coordinate (0, 2) is outside the 4x4 shape"),
    "mtx_col_beyond.mtx": (4, "coordinate (2, 5) is outside the 4x4 shape"),
    "mtx_negative_index.mtx": (4, "coordinate (-1, 2) is outside the 4x4 shape"),
    "mtx_nan.mtx": (4, "value nan is not finite"),
    "mtx_inf.mtx": (3, "value -inf is not finite"),
    "mtx_overflow_inf.mtx": (4, "value inf is not finite"),
    "mtx_complex_nan.mtx": (3, "value 1.0 nan is not finite"),
    "mtx_array_nan.mtx": (4, "value nan is not finite"),
    "mtx_skew_diagonal.mtx": (5, "entry (3, 3) is on the diagonal"),
    "mtx_skew_zero_diagonal.mtx": (3, "entry (2, 2) is on the diagonal"),
    # Matrix Market: gzip
    "mtx_truncated.mtx.gz": (None, "cannot read the file: Compressed file ended"),
    "mtx_not_gzip.mtx.gz": (None, "cannot read the file: Not a gzipped file"),
    "mtx_gz_bad_body.mtx.gz": (4, "coordinate (2, 9) is outside the 4x4 shape"),
    # DLMC
    "smtx_empty.smtx": (1, "expected a size line 'rows, cols, nnz'"),
    "smtx_binary.smtx": (2, "NUL byte"),
    "smtx_header_two_sizes.smtx": (1, "expected a size line 'rows, cols, nnz'"),
    "smtx_header_words.smtx": (1, "expected a size line 'rows, cols, nnz'"),
    "smtx_no_row_ptr.smtx": (2, "missing row_ptr line"),
    "smtx_row_ptr_short.smtx": (2, "row_ptr has 3 entries, expected rows + 1 = 4"),
    "smtx_row_ptr_decreasing.smtx": (2, "row_ptr must rise from 0 to nnz = 1 without decreasing"),
    "smtx_row_ptr_end.smtx": (2, "row_ptr must rise from 0 to nnz = 1 without decreasing"),
    "smtx_row_ptr_start.smtx": (2, "row_ptr must rise from 0 to nnz = 1 without decreasing"),
    "smtx_row_ptr_word.smtx": (2, "row_ptr entry 'x' is not an integer"),
    "smtx_row_ptr_lone_minus.smtx": (2, "row_ptr entry '-' is not an integer"),
    "smtx_col_count.smtx": (3, "col_idx has 2 entries but the header declares 1"),
    "smtx_col_beyond.smtx": (3, "column index 3 (entry 0) is outside 0..2"),
    "smtx_col_negative.smtx": (3, "column index -1 (entry 0) is outside 0..2"),
    "smtx_col_float.smtx": (3, "col_idx entry '1.0' is not an integer"),
    "smtx_col_overflow.smtx": (3, "col_idx entry '99999999999999999999' is not an integer"),
    "smtx_extra_line.smtx": (5, "unexpected content after the col_idx line"),
    "smtx_absurd_rows.smtx": (2, "row_ptr has 2 entries, expected rows + 1 = 1000000000000001"),
    "smtx_absurd_nnz.smtx": (2, "row_ptr must rise from 0 to nnz = 1000000000000000"),
    "smtx_truncated.smtx.gz": (None, "cannot read the file: Compressed file ended"),
    # dense .npy
    "npy_empty.npy": (None, "not a readable .npy array"),
    "npy_garbage.npy": (None, "not a readable .npy array"),
    "npy_truncated.npy": (None, "not a readable .npy array"),
    "npy_object.npy": (None, "not a readable .npy array"),
    "npy_3d.npy": (None, "expected a 2-D numeric array, got 3-D float64"),
    "npy_strings.npy": (None, "expected a 2-D numeric array, got 2-D <U1"),
    "npy_nan.npy": (None, "value at (0, 1) (0-based) is not finite"),
    # scipy.sparse .npz
    "npz_empty.npz": (None, "not a readable .npz archive"),
    "npz_garbage.npz": (None, "not a readable .npz archive"),
    "npz_truncated.npz": (None, "not a readable .npz archive"),
    "npz_plain_arrays.npz": (None, "not a scipy.sparse .npz file: no 'format' array"),
    "npz_missing_indices.npz": (None, "not a scipy.sparse .npz file: no 'indices' array"),
    "npz_format_lil.npz": (None, "unsupported sparse format 'lil'"),
    "npz_shape_3d.npz": (None, "'shape' must hold two non-negative integers"),
    "npz_data_strings.npz": (None, "expected numeric data, got <U1"),
    "npz_absurd_header.npz": (None, "declares 8000000000000 bytes of data but holds 0"),
    "npz_indptr_decreasing.npz": (None, "inconsistent csr arrays"),
    "npz_indptr_length.npz": (None, "inconsistent csr arrays: index pointer size 6 should be 7"),
    "npz_index_beyond.npz": (None, "inconsistent csr arrays: indices must be < 5"),
    "npz_coo_lengths.npz": (None, "inconsistent coo arrays"),
    "npz_coo_negative.npz": (None, "inconsistent coo arrays"),
    "npz_coo_nd.npz": (None, "expected a 2-D sparse matrix"),
    "npz_nan.npz": (None, "stored value 1 (nan) is not finite"),
    # FROSTT
    "tns_empty.tns": (None, "the shape is unknown"),
    "tns_only_comments.tns": (None, "the shape is unknown"),
    "tns_binary.tns": (2, "NUL byte"),
    "tns_mixed_fields.tns": (4, "expected 3 columns, found 4"),
    "tns_one_column.tns": (1, "expected coordinates followed by a value, found 1 column"),
    "tns_zero_coordinate.tns": (3, "coordinate (0, 1) is outside"),
    "tns_beyond_dims.tns": (3, "coordinate (2, 4) is outside the 3x3 shape"),
    "tns_float_coordinate.tns": (2, "coordinate '2.0' is not an integer"),
    "tns_nan.tns": (3, "value nan is not finite"),
    "tns_inf.tns": (1, "value inf is not finite"),
    "tns_word.tns": (2, "value 'x1' is not a number"),
    "tns_dims_words.tns": (2, "expected a size line 'n1 n2'"),
    "tns_dims_count.tns": (1, "dims comment gives 3 sizes but the entries have 2 coordinates"),
    "tns_dims_empty.tns": (1, "empty '# dims:' comment"),
    "tns_truncated.tns.gz": (None, "cannot read the file: Compressed file ended"),
    "tns_not_gzip.tns.gz": (None, "cannot read the file: Not a gzipped file"),
}


def test_every_corpus_file_has_an_expectation():
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_is_refused_in_one_line(name):
    path = CORPUS / name
    line, words = EXPECTED[name]
    reader = read_tensor if ".tns" in name else read_matrix
    with pytest.raises(FormatError) as info:
        reader(path)
    message = str(info.value)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert message.startswith(f"{path}: " if line is None else f"{path}:{line}: ")
    assert words in message
    assert "\n" not in message
