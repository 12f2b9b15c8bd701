"""Readers for the sparse file formats of the shared data sets.

``read_matrix`` loads Matrix Market (``.mtx``, ``.mtx.gz``), DLMC (``.smtx``,
``.smtx.gz``) and dense ``.npy`` files into a ``scipy.sparse.coo_array``;
``read_tensor`` loads FROSTT ``.tns`` (``.tns.gz``) files into a `Tensor`.
Gzip is handled transparently.

Every problem a malformed file can cause raises
`sparseforge.errors.FormatError` naming the file and, where the problem is on
one line, its 1-based line number, so the command line reports one line
instead of a numpy traceback.

Duplicate policy: with ``duplicates="sum"`` (the default, and the scipy
convention) entries given more than once at the same coordinate are added
together; for a pattern matrix the sum counts the repetitions. With
``duplicates="error"`` the first repeated coordinate raises a `FormatError`
naming it and the two lines that give it. In a symmetric, skew-symmetric or
hermitian file, ``(i, j)`` and ``(j, i)`` are the same entry. Either way the
result is canonical: sorted, one entry per coordinate. Explicit zeros in a
coordinate file are kept, as scipy keeps them.

Parsing is vectorized: the small header is read line by line, the data
section is split into tokens and converted by numpy in one pass. The slower
search for the offending line runs only once something is known to be wrong.
"""

import gzip
import io
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import coo_array

from sparseforge.errors import FormatError, ParameterError

__all__ = ["Tensor", "read_matrix", "read_tensor"]

_MATRIX_SUFFIXES = (".smtx", ".smtx.gz", ".mtx", ".mtx.gz", ".npy")  # .smtx before .mtx
_TENSOR_SUFFIXES = (".tns", ".tns.gz")
_INT64_MAX = np.iinfo(np.int64).max

# The bytes that bytes.split() treats as whitespace.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True

_MM_FIELDS = ("real", "double", "integer", "complex", "pattern")
_MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


@dataclass(frozen=True, eq=False)
class Tensor:
    """A sparse tensor in coordinate form.

    Attributes
    ----------
    coords : int64 array [nnz, ndim], 0-based coordinates, one row per entry.
    values : float64 array [nnz], the value at each coordinate.
    shape : size of each mode.
    """

    coords: np.ndarray
    values: np.ndarray
    shape: tuple[int, ...]

    @property
    def ndim(self):
        """Number of modes."""
        return len(self.shape)

    @property
    def nnz(self):
        """Number of stored entries."""
        return len(self.values)


def read_matrix(path, *, duplicates="sum"):
    """Read a sparse matrix file.

    Parameters
    ----------
    path : ``.mtx``/``.mtx.gz`` (Matrix Market coordinate or array; real,
        integer, pattern or complex; general, symmetric, skew-symmetric or
        hermitian, expanded to the full matrix), ``.smtx``/``.smtx.gz`` (DLMC
        pattern: header ``rows, cols, nnz``, then row_ptr, then col_idx) or
        ``.npy`` (a 2-D dense array).
    duplicates : ``"sum"`` or ``"error"``; see the module docstring.

    Returns
    -------
    coo_array in canonical form. Pattern files give 1.0 values; integer
    files int64, real float64, complex complex128. Zeros of dense inputs
    (Matrix Market array, ``.npy``) are not stored.

    Raises
    ------
    FormatError : the file is missing, has an unknown extension or is malformed.
    """
    _check_policy(duplicates)
    suffix = _suffix(path, _MATRIX_SUFFIXES)
    data = _read_bytes(path)
    if suffix == ".npy":
        return _read_npy(path, data)
    if suffix.startswith(".smtx"):
        return _read_smtx(path, data, duplicates)
    return _read_mtx(path, data, duplicates)


def read_tensor(path, *, duplicates="sum"):
    """Read a FROSTT ``.tns`` (or ``.tns.gz``) sparse tensor.

    Each data line holds ``ndim`` 1-based coordinates and then the value; lines
    starting with ``#`` are comments. A ``# dims: n1 n2 ...`` comment gives the
    shape; without one the shape is the largest coordinate of each mode.

    Parameters
    ----------
    path : the file.
    duplicates : ``"sum"`` or ``"error"``; see the module docstring.

    Returns
    -------
    Tensor with 0-based coordinates sorted lexicographically, one entry per
    coordinate.

    Raises
    ------
    FormatError : the file is missing, has an unknown extension or is malformed.
    """
    _check_policy(duplicates)
    _suffix(path, _TENSOR_SUFFIXES)
    data = _read_bytes(path)
    shape, dims_line = _tns_dims(path, data)
    tokens, lines = _table(path, data, 1, None, b"#")
    if not len(tokens) and shape is None:
        raise FormatError(path, "no entries and no '# dims:' comment: the shape is unknown")
    ndim = tokens.shape[1] - 1 if len(tokens) else len(shape)
    if ndim < 1:
        raise FormatError(path, "expected coordinates followed by a value, found 1 column",
                          line=int(lines[0]))
    tokens = tokens.reshape(-1, ndim + 1)  # an empty file still gets ndim coordinate columns
    if shape is not None and len(shape) != ndim:
        raise FormatError(path, f"dims comment gives {len(shape)} sizes but the entries have "
                          f"{ndim} coordinates", line=dims_line)
    coords = _numbers(path, tokens[:, :ndim], lines, np.int64, "coordinate")
    values = _numbers(path, tokens[:, ndim], lines, np.float64, "value")
    _check_finite(path, values, lines)
    if shape is None:
        shape = tuple(int(n) for n in coords.max(axis=0, initial=0))
    _check_range(path, coords, shape, lines)
    coords -= 1
    if duplicates == "error":
        _check_unique(path, coords, lines, coords + 1)
    coords, values = _sum_duplicates(coords, values)
    return Tensor(coords, values, shape)


def _check_policy(duplicates):
    """Reject a duplicate policy other than "sum" and "error"."""
    if duplicates not in ("sum", "error"):
        raise ParameterError(f"duplicates={duplicates!r}: expected 'sum' or 'error'")


def _suffix(path, allowed):
    """The suffix of ``path`` among ``allowed`` (matched in order), else a FormatError."""
    name = Path(path).name.lower()
    for suffix in allowed:
        if name.endswith(suffix):
            return suffix
    raise FormatError(path, f"unknown extension; expected one of {', '.join(allowed)}")


def _read_bytes(path):
    """The whole file as bytes, decompressed if its name ends in ``.gz``."""
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, f"cannot read the file: {exc}") from exc


def _header_lines(data):
    """Yield (1-based line number, stripped text, offset of the next line) from the top."""
    pos, number = 0, 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        number += 1
        yield number, data[pos:end].decode("latin-1").strip(), end + 1
        pos = end + 1


def _sizes(path, text, number, names):
    """Parse a line of non-negative integer sizes called ``names``."""
    words = text.replace(",", " ").split()
    if len(words) != len(names) or not all(w.isascii() and w.isdigit() for w in words):
        raise FormatError(path, f"expected a size line '{' '.join(names)}' of non-negative "
                          f"integers, got {text!r}", line=number)
    sizes = tuple(int(w) for w in words)
    if max(sizes, default=0) > _INT64_MAX:
        raise FormatError(path, f"size too large in {text!r}", line=number)
    return sizes


def _table(path, body, first_line, widths_allowed, comment):
    """Split a data section into a [rows, ncols] array of byte-string tokens.

    Blank lines and lines starting with ``comment`` are skipped. Every line
    must have as many tokens as the first, one of ``widths_allowed`` (any
    width if None). Returns the tokens and the 1-based line number of each
    row, ``first_line`` being the line ``body`` starts on.
    """
    if comment in body:  # blank comments out in place, so line numbers hold
        body = re.sub(rb"(?m)^[ \t]*" + re.escape(comment) + rb".*$", b"", body)
    buf = np.frombuffer(body, dtype=np.uint8)
    space = _SPACE[buf]
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    counts = np.bincount(np.searchsorted(np.flatnonzero(buf == ord("\n")), starts))
    used = np.flatnonzero(counts)
    lines = used + first_line
    widths = counts[used]
    ncols = int(widths[0]) if len(widths) else 1
    if widths_allowed is not None and ncols not in widths_allowed:
        ncols = widths_allowed[0]
    wrong = np.flatnonzero(widths != ncols)
    if len(wrong):
        k = wrong[0]
        raise FormatError(path, f"expected {ncols} columns, found {widths[k]}", line=int(lines[k]))
    tokens = np.array(body.split(), dtype=np.bytes_).reshape(-1, ncols)
    return tokens, lines


def _numbers(path, tokens, lines, dtype, what):
    """Convert byte-string tokens (one row per line) to ``dtype``.

    On failure a bisection, converting halves with numpy, finds the first bad
    token, which is reported with its line.
    """
    try:
        return tokens.astype(dtype)
    except (ValueError, OverflowError):
        flat = tokens.ravel()
        lo, hi = 0, flat.size  # the first bad token is in flat[lo:hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                flat[lo:mid].astype(dtype)
            except (ValueError, OverflowError):
                hi = mid
            else:
                lo = mid
        row = np.unravel_index(lo, tokens.shape)[0]
        kind = "an integer" if np.dtype(dtype).kind == "i" else "a number"
        raise FormatError(path, f"{what} {flat[lo].decode('latin-1')!r} is not {kind}",
                          line=int(lines[row])) from None


def _check_finite(path, values, lines):
    """Reject NaN and infinite values."""
    finite = np.isfinite(values)
    bad = np.flatnonzero(~(finite.all(axis=1) if finite.ndim > 1 else finite))
    if len(bad):
        shown = " ".join(str(v) for v in np.atleast_1d(values[bad[0]]))
        raise FormatError(path, f"value {shown} is not finite", line=int(lines[bad[0]]))


def _check_range(path, coords, shape, lines):
    """Reject 1-based coordinates below 1 or beyond ``shape``."""
    bad = np.flatnonzero(((coords < 1) | (coords > np.array(shape, dtype=np.int64))).any(axis=1))
    if len(bad):
        coord = ", ".join(str(c) for c in coords[bad[0]])
        size = "x".join(str(n) for n in shape)
        raise FormatError(path, f"coordinate ({coord}) is outside the {size} shape "
                          "(coordinates are 1-based)", line=int(lines[bad[0]]))


def _check_unique(path, keys, lines, shown, base=1):
    """Reject the first entry (by line) whose key row repeats an earlier one.

    ``shown`` holds the coordinates as written in the file, ``base``-based.
    """
    order = np.lexsort((lines, *keys.T[::-1]))
    ordered = keys[order]
    repeat = np.flatnonzero((ordered[1:] == ordered[:-1]).all(axis=1)) + 1
    if len(repeat):
        k = repeat[np.argmin(lines[order[repeat]])]
        later, first = order[k], order[k - 1]
        coord = ", ".join(str(c) for c in shown[later])
        raise FormatError(path, f"duplicate entry ({coord}) ({base}-based), first given on line "
                          f"{lines[first]}; pass duplicates='sum' to add them",
                          line=int(lines[later]))


def _sum_duplicates(coords, values):
    """Sort coordinates lexicographically and add the values of repeated ones."""
    order = np.lexsort(coords.T[::-1])
    coords, values = coords[order], values[order]
    if len(values):
        new = np.concatenate(([True], (coords[1:] != coords[:-1]).any(axis=1)))
        starts = np.flatnonzero(new)
        coords, values = coords[starts], np.add.reduceat(values, starts)
    return coords, values


def _mm_header(path, data):
    """Parse the Matrix Market banner, comments and size line.

    Returns (format, field, symmetry, sizes, size line number, data offset).
    """
    lines = _header_lines(data)
    number, text, offset = next(lines, (1, "", 0))
    words = text.lower().split()
    if not words or words[0] != "%%matrixmarket":
        raise FormatError(path, "missing Matrix Market banner "
                          "'%%MatrixMarket matrix <format> <field> <symmetry>'", line=1)
    if len(words) != 5 or words[1] != "matrix":
        raise FormatError(path, f"bad banner {text!r}: expected "
                          "'%%MatrixMarket matrix <format> <field> <symmetry>'", line=1)
    fmt, field, symmetry = words[2:]
    if fmt not in ("coordinate", "array"):
        raise FormatError(path, f"unsupported format {fmt!r}: expected coordinate or array", line=1)
    if field not in _MM_FIELDS:
        raise FormatError(path, f"unsupported field {field!r}: expected one of "
                          f"{', '.join(_MM_FIELDS)}", line=1)
    if symmetry not in _MM_SYMMETRIES:
        raise FormatError(path, f"unsupported symmetry {symmetry!r}: expected one of "
                          f"{', '.join(_MM_SYMMETRIES)}", line=1)
    if field == "pattern" and (fmt == "array" or symmetry == "skew-symmetric"):
        raise FormatError(path, f"a pattern matrix cannot be {fmt} {symmetry}", line=1)
    found = next((entry for entry in lines if entry[1] and not entry[1].startswith("%")), None)
    if found is None:
        last = data.count(b"\n") + (not data.endswith(b"\n"))
        raise FormatError(path, "missing size line after the banner and comments", line=last + 1)
    number, text, offset = found
    names = ("rows", "cols", "entries") if fmt == "coordinate" else ("rows", "cols")
    sizes = _sizes(path, text, number, names)
    if symmetry != "general" and sizes[0] != sizes[1]:
        raise FormatError(path, f"a {symmetry} matrix must be square, got {sizes[0]}x{sizes[1]}",
                          line=number)
    return fmt, field, symmetry, sizes, number, offset


def _read_mtx(path, data, duplicates):
    """Read a Matrix Market file (see read_matrix)."""
    fmt, field, symmetry, sizes, size_line, offset = _mm_header(path, data)
    rows, cols = sizes[:2]
    nvalues = {"pattern": 0, "complex": 2}.get(field, 1)
    diagonal = symmetry != "skew-symmetric"  # whether the diagonal is stored
    if fmt == "coordinate":
        expected = sizes[2]
        # Some SuiteSparse pattern files carry a value column; it is ignored, as scipy does.
        widths = (2, 3) if field == "pattern" else (2 + nvalues,)
    else:  # dense: every entry, or the lower triangle of a square matrix
        triangle = rows * (rows - 1) // 2 + diagonal * rows
        expected = rows * cols if symmetry == "general" else triangle
        widths = (nvalues,)
    tokens, lines = _table(path, data[offset:], size_line + 1, widths, b"%")
    if len(tokens) > expected:
        raise FormatError(path, f"more entries than the {expected} declared on line {size_line}",
                          line=int(lines[expected]))
    if len(tokens) < expected:
        raise FormatError(path, f"the size line declares {expected} entries but the file has "
                          f"{len(tokens)}", line=size_line)
    values = _mm_values(path, tokens[:, 2:] if fmt == "coordinate" else tokens, lines, field)
    if fmt == "coordinate":
        coords = _numbers(path, tokens[:, :2], lines, np.int64, "coordinate")
        _check_range(path, coords, (rows, cols), lines)
        if duplicates == "error":
            keys = coords if symmetry == "general" else np.sort(coords, axis=1)
            _check_unique(path, keys, lines, coords)
        row, col = (coords - 1).T
    else:
        if symmetry == "general":
            col, row = np.divmod(np.arange(expected), rows)  # column-major
        else:  # lower triangle, column by column
            col, row = np.triu_indices(rows, k=0 if diagonal else 1)
        stored = values != 0
        row, col, values = row[stored], col[stored], values[stored]
    if symmetry != "general":
        off = row != col
        mirrored = values[off]
        if symmetry == "skew-symmetric":
            mirrored = -mirrored
        elif symmetry == "hermitian":
            mirrored = np.conj(mirrored)
        row, col = np.concatenate((row, col[off])), np.concatenate((col, row[off]))
        values = np.concatenate((values, mirrored))
    matrix = coo_array((values, (row, col)), shape=(rows, cols))
    matrix.sum_duplicates()
    return matrix


def _mm_values(path, tokens, lines, field):
    """The value columns of a Matrix Market data section as a 1-D array."""
    if field == "pattern":
        return np.ones(len(tokens))
    if field == "integer":
        return _numbers(path, tokens[:, 0], lines, np.int64, "value")
    parts = _numbers(path, tokens, lines, np.float64, "value")
    _check_finite(path, parts, lines)
    return parts[:, 0] if field != "complex" else parts[:, 0] + 1j * parts[:, 1]


def _read_smtx(path, data, duplicates):
    """Read a DLMC pattern matrix: ``rows, cols, nnz``, row_ptr, col_idx (0-based)."""
    text = data.split(b"\n")
    rows, cols, nnz = _sizes(path, text[0].decode("latin-1").strip(), 1, ("rows,", "cols,", "nnz"))
    if len(text) < 2 or not text[1].strip():
        raise FormatError(path, "missing row_ptr line", line=2)
    extra = next((k for k, line in enumerate(text[3:], 4) if line.strip()), None)
    if extra is not None:
        raise FormatError(path, "unexpected content after the col_idx line", line=extra)
    row_ptr = _smtx_line(path, text, 2, "row_ptr")
    col_idx = _smtx_line(path, text, 3, "col_idx")
    if len(row_ptr) != rows + 1:
        raise FormatError(path, f"row_ptr has {len(row_ptr)} entries, expected rows + 1 = "
                          f"{rows + 1}", line=2)
    steps = np.diff(row_ptr)
    if row_ptr[0] != 0 or row_ptr[-1] != nnz or (steps < 0).any():
        raise FormatError(path, f"row_ptr must rise from 0 to nnz = {nnz} without decreasing",
                          line=2)
    if len(col_idx) != nnz:
        raise FormatError(path, f"col_idx has {len(col_idx)} entries but the header declares "
                          f"{nnz}", line=3)
    bad = np.flatnonzero((col_idx < 0) | (col_idx >= cols))
    if len(bad):
        raise FormatError(path, f"column index {col_idx[bad[0]]} (entry {bad[0]}) is outside "
                          f"0..{cols - 1}", line=3)
    row = np.repeat(np.arange(rows), steps)
    if duplicates == "error":
        coords = np.column_stack((row, col_idx))
        _check_unique(path, coords, np.full(nnz, 3), coords, base=0)
    matrix = coo_array((np.ones(nnz), (row, col_idx)), shape=(rows, cols))
    matrix.sum_duplicates()
    return matrix


def _smtx_line(path, text, number, what):
    """The integers on 1-based line ``number`` of a DLMC file (none if it is absent)."""
    tokens = np.array(text[number - 1].split() if len(text) >= number else [], dtype=np.bytes_)
    return _numbers(path, tokens, np.full(len(tokens), number), np.int64, f"{what} entry")


def _read_npy(path, data):
    """Read a 2-D dense ``.npy`` array into a coo_array, dropping its zeros."""
    try:
        dense = np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise FormatError(path, f"not a readable .npy array: {exc}") from exc
    dtype = {"b": np.float64, "i": np.int64, "u": np.int64, "f": np.float64,
             "c": np.complex128}.get(dense.dtype.kind)
    if dtype is None or dense.ndim != 2:
        raise FormatError(path, f"expected a 2-D numeric array, got {dense.ndim}-D {dense.dtype}")
    dense = dense.astype(dtype)
    bad = np.argwhere(~np.isfinite(dense))
    if len(bad):
        raise FormatError(path, f"value at ({bad[0][0]}, {bad[0][1]}) (0-based) is not finite")
    return coo_array(dense)


def _tns_dims(path, data):
    """The shape from a ``# dims: n1 n2 ...`` comment and its line, or (None, None)."""
    match = re.search(rb"(?mi)^[ \t]*#[ \t]*dims[ \t]*:(.*)$", data)
    if match is None:
        return None, None
    number = data.count(b"\n", 0, match.start()) + 1
    text = match.group(1).decode("latin-1").strip()
    words = text.split()
    if not words:
        raise FormatError(path, "empty '# dims:' comment", line=number)
    return _sizes(path, text, number, [f"n{k + 1}" for k in range(len(words))]), number
