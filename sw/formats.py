"""Readers for the sparse file formats of the shared data sets.

``read_matrix`` loads Matrix Market (``.mtx``, ``.mtx.gz``), DLMC (``.smtx``,
``.smtx.gz``), dense ``.npy`` and ``scipy.sparse.save_npz`` (``.npz``) files
into a ``scipy.sparse.coo_array``; ``read_tensor`` loads FROSTT ``.tns``
(``.tns.gz``) files into a `Tensor`. Gzip is handled transparently.

Every problem a malformed file can cause raises
`sparseforge.core.errors.FormatError` naming the file and, where the problem is on
one line, its 1-based line number, so the command line reports one line
instead of a numpy traceback.

Duplicate policy: with ``duplicates="sum"`` (the default, and the scipy
convention) entries given more than once at the same coordinate are added
together; for a pattern matrix the sum counts the repetitions. With
``duplicates="error"`` the first repeated coordinate raises a `FormatError`
naming it and the two lines that give it. In a symmetric, skew-symmetric or
hermitian file, ``(i, j)`` and ``(j, i)`` are the same entry. Either way the
result is canonical: sorted, one entry per coordinate. Explicit zeros in a
coordinate file are kept, as scipy keeps them. Indices are int32 where the
shape allows, else int64.

Speed and memory. Text is read in chunks of whole lines, so memory follows
the entries, never the whole text. Matrix Market data is parsed by
fast_matrix_market (the C++ reader scipy.io.mmread is built on), fed by
`_Feed`, which checks on the way what that parser does not (it reads the
fields it expects from each line and ignores the rest of the line). Files it
refuses, and those with blank or comment lines among the entries, go to the
exact reader: numpy's C ``loadtxt`` per chunk, and where that refuses, a
tokenizer that names the first bad line and token. DLMC lines are parsed by
``np.fromstring``, FROSTT files by the exact reader, binary files through
numpy's headers, checked before anything is read. Problems found on arrays
(NaN, an index out of range, a repeated entry) are located afterwards.
Declared sizes the file cannot hold are refused before anything of that size
is allocated. The canonical sort (scipy's COO to CSR conversion, a counting
sort by row) costs about as much again as parsing: mmread does not sort.

Limit: on the fast path, a value glued to more number characters
(``1.2.3``, ``5e``, ``3-4``) is read as its leading number, as scipy does;
the exact reader refuses it.
"""

import gzip
import io
import math
import os
import re
import warnings
import zlib
from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import fast_matrix_market as fmm
import numpy as np
from scipy.sparse import bsr_array, coo_array, csc_array, csr_array, dia_array

from sparseforge.core.errors import FormatError, ParameterError

__all__ = ["Tensor", "read_matrix", "read_mtx_in_order", "read_tensor"]

_MATRIX_SUFFIXES = (".smtx", ".smtx.gz", ".mtx", ".mtx.gz", ".npy", ".npz")  # .smtx before .mtx
_TENSOR_SUFFIXES = (".tns", ".tns.gz")
_INT64_MAX = np.iinfo(np.int64).max
_INT32_MAX = np.iinfo(np.int32).max

_CHUNK = 1 << 20  # bytes per read of a data section
_FEED_CHUNK = 1 << 17  # bytes per read for fast_matrix_market: checked while in the CPU cache
_HEADER_LINE = 1 << 16  # bytes of a header line kept (the rest of a longer one is skipped)
_LONGEST_LINE = 1 << 26  # a data line longer than this is not text
_GZIP_RATIO = 1100  # deflate expands at most 1032-fold

# The bytes that bytes.split() treats as whitespace.
_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True

_MM_FIELDS = ("real", "double", "integer", "complex", "pattern")
_MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
_MM_DTYPES = {"real": np.float64, "double": np.float64, "integer": np.int64,
              "complex": np.float64, "pattern": np.float64}


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
        hermitian, expanded to the full matrix; a skew-symmetric file must not
        list diagonal entries, and a real hermitian one reads as symmetric),
        ``.smtx``/``.smtx.gz`` (DLMC
        pattern: header ``rows, cols, nnz``, then row_ptr, then col_idx),
        ``.npy`` (a 2-D dense array) or ``.npz`` (``scipy.sparse.save_npz``:
        coo, csr, csc, bsr or dia).
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
    if suffix == ".npy":
        return _read_npy(path)
    if suffix == ".npz":
        return _read_npz(path, duplicates)
    if suffix.startswith(".smtx"):
        return _read_smtx(path, duplicates)
    return _read_mtx(path, duplicates)


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
    shape = dims_line = ncols = None
    coords, values, lines = _Pile(), _Pile(), _Lines()
    count = 0
    groups = ((slice(0, -1), np.int64, "coordinate"), (slice(-1, None), np.float64, "value"))
    with _reading(path) as file:
        for body, first in _chunks(path, file, 1):
            if shape is None and b"#" in body:
                shape, dims_line = _tns_dims(path, body, first)
            ncols, rows, (coord, value) = _rows(path, body, first, ncols, None, b"#", groups)
            if not len(value):
                continue
            if ncols < 2:
                raise FormatError(path, "expected coordinates followed by a value, found 1 column",
                                  line=_line(rows, 0))
            _check_finite(path, value[:, 0], lambda k, rows=rows: _line(rows, k))
            coords.add(coord)
            values.add(value[:, 0])
            lines.add(count, rows)
            count += len(value)
    coords, values = coords.blocks(), values.blocks()
    if not count and shape is None:
        raise FormatError(path, "no entries and no '# dims:' comment: the shape is unknown")
    ndim = ncols - 1 if count else len(shape)
    if shape is not None and len(shape) != ndim:
        raise FormatError(path, f"dims comment gives {len(shape)} sizes but the entries have "
                          f"{ndim} coordinates", line=dims_line)
    if shape is None:
        shape = tuple(int(n) for n in np.max([c.max(axis=0) for c in coords], axis=0))
    start = 0
    for coord in coords:
        _check_range(path, coord, shape, lambda k, start=start: lines(start + k))
        coord -= 1
        start += len(coord)
    return _tensor(path, coords, values, shape, lines, duplicates)


def _tensor(path, coords, values, shape, lines, duplicates):
    """The Tensor of 0-based ``coords`` and ``values`` (lists of blocks, consumed).

    Entries are sorted and repeats added through one int64 linear index per
    entry: a sort of 8 bytes an entry, and the coordinates rebuilt from it.
    """
    ndim = len(shape)
    if not coords:
        return Tensor(np.zeros((0, ndim), dtype=np.int64), np.zeros(0), shape)
    if math.prod(shape) > _INT64_MAX:  # no linear index: sort the coordinates themselves
        table, values = np.concatenate(coords), np.concatenate(values)
        if duplicates == "error":
            _check_unique(path, tuple(table.T), shape, lines, lambda k: table[k])
        return Tensor(*_sum_duplicates(table, values), shape)
    keys = []
    while coords:  # each block's coordinates go as its keys come
        keys.append(np.ravel_multi_index(tuple(coords.pop(0).T), shape))
    key = np.concatenate(keys)
    keys.clear()
    joined = np.concatenate(values)
    values.clear()
    values = joined
    if duplicates == "error":
        _check_unique(path, (key,), (math.prod(shape),), lines,
                      lambda k: np.unravel_index(key[k], shape))
    key, values = _sum_repeats(key, values)
    return Tensor(_unravel(key, shape), values, shape)


# --- files ----------------------------------------------------------------------

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


@contextmanager
def _reading(path):
    """The file opened for binary reading (through gzip if its name ends in ``.gz``).

    A missing file, and any failure to read or decompress it while the block
    runs (a truncated or corrupt gzip stream), become a FormatError.
    """
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as file:
            yield file
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise FormatError(path, f"cannot read the file: {exc}") from exc


def _read_bytes(path):
    """The whole file as bytes, decompressed if its name ends in ``.gz``."""
    with _reading(path) as file:
        return file.read()


def _room(file):
    """Bytes from the position of ``file`` to its end; for gzip, a bound on them."""
    size = os.fstat(file.fileno()).st_size
    if isinstance(file, gzip.GzipFile):
        size = size * _GZIP_RATIO
    return max(size - file.tell(), 0)


def _header_line(file):
    """The next line of ``file`` as bytes (b"" at the end); an over-long line is cut."""
    raw = file.readline(_HEADER_LINE)
    if len(raw) == _HEADER_LINE and not raw.endswith(b"\n"):
        while (more := file.readline(_HEADER_LINE)) and not more.endswith(b"\n"):
            pass
    return raw


def _chunks(path, file, first_line):
    """Yield (whole lines of ``file`` from its position, number of the first line)."""
    carry = b""
    while True:
        chunk = file.read(_CHUNK)
        data = carry + chunk if carry else chunk
        if not chunk:
            if data:
                yield data, first_line
            return
        _check_text(path, data, first_line)
        cut = data.rfind(b"\n") + 1
        if cut:
            yield data[:cut], first_line
            first_line += data.count(b"\n", 0, cut)
        carry = data[cut:]
        if len(carry) > _LONGEST_LINE:
            raise FormatError(path, f"no line end in {_LONGEST_LINE} bytes: not a text file",
                              line=first_line)


def _check_text(path, data, first_line):
    """Refuse a NUL byte, which no text format has (numpy would drop it from a token)."""
    nul = data.find(b"\0")
    if nul >= 0:
        raise FormatError(path, "NUL byte: not a text file",
                          line=first_line + data.count(b"\n", 0, nul))


# --- lines and tokens ------------------------------------------------------------

class _Pile:
    """Arrays added chunk by chunk, joined into blocks of 64 MiB or more as they come.

    Long-lived data then sits in large allocations, which go back to the
    system when freed; the C heap would keep the space of many small ones.
    """

    def __init__(self):
        self._blocks, self._pending, self._bytes = [], [], 0

    def add(self, array):
        """Append ``array`` (rows of the same width as the others)."""
        self._pending.append(array)
        self._bytes += array.nbytes
        if self._bytes >= 1 << 26:
            self._join()

    def blocks(self):
        """The arrays added, in order, as a list of blocks."""
        self._join()
        return self._blocks

    def _join(self):
        if self._pending:
            self._blocks.append(np.concatenate(self._pending))
            self._pending, self._bytes = [], 0


class _Lines:
    """The 1-based line of each entry (in file order), kept per chunk of entries.

    A chunk whose entries sit on consecutive lines keeps only its first line;
    one with blank or comment lines among them keeps an array.
    """

    def __init__(self, first=None):
        self._starts, self._lines = [], []
        if first is not None:
            self.add(0, first)

    def add(self, start, lines):
        """Entries from index ``start`` on are on ``lines`` (a first line or an array)."""
        self._starts.append(start)
        self._lines.append(lines)

    def __call__(self, k):
        """The line of entry ``k``."""
        i = bisect_right(self._starts, k) - 1
        return _line(self._lines[i], k - self._starts[i])


def _line(lines, k):
    """Line of row ``k`` of a chunk: ``lines`` is the first line, or one per row."""
    return int(lines + k) if np.ndim(lines) == 0 else int(lines[k])


def _blank_comments(body, comment):
    """``body`` with the lines starting with ``comment`` blanked, so line numbers hold."""
    if comment not in body:
        return body
    return re.sub(rb"(?m)^[ \t]*" + re.escape(comment) + rb".*$", b"", body)


def _line_widths(body, first_line):
    """(line number, token count) of each line of ``body`` that holds tokens."""
    buf = np.frombuffer(body, dtype=np.uint8)
    space = _SPACE[buf]
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    counts = np.bincount(np.searchsorted(np.flatnonzero(buf == ord("\n")), starts))
    used = np.flatnonzero(counts)
    return used + first_line, counts[used]


def _table(path, body, first_line, ncols):
    """Split ``body`` into a [rows, ncols] array of byte-string tokens, and each row's line.

    Every line holding tokens must have ``ncols`` of them.
    """
    lines, widths = _line_widths(body, first_line)
    wrong = np.flatnonzero(widths != ncols)
    if len(wrong):
        k = wrong[0]
        raise FormatError(path, f"expected {ncols} columns, found {widths[k]}", line=int(lines[k]))
    return np.array(body.split(), dtype=np.bytes_).reshape(-1, ncols), lines


def _rows(path, body, first_line, ncols, widths, comment, groups):
    """Parse ``body``, whole lines of a whitespace-separated table from line ``first_line``.

    Blank lines and lines starting with ``comment`` are skipped. Every row has
    ``ncols`` columns; when that is None, as many as the first row (which must
    be one of ``widths`` unless that is None). ``groups`` lists (columns,
    dtype, what): the column slices to convert, in the order they are checked.

    Returns (ncols, lines, arrays): ``lines`` is the first row's line where the
    rows are consecutive lines, else an array with each row's line; one 2-D
    array per group. numpy's C ``loadtxt`` parses the usual chunk; where it
    refuses, the tokenizer finds the first bad line and token (or accepts
    what loadtxt was stricter about).
    """
    body = _blank_comments(body, comment)
    if ncols is None:
        found = re.search(rb"\S", body)
        if found is None:
            return None, first_line, [np.zeros((0, 0)) for _ in groups]
        start = body.rfind(b"\n", 0, found.start()) + 1
        end = body.find(b"\n", found.start())
        ncols = len(body[start:None if end < 0 else end].split())
        if widths is not None and ncols not in widths:
            ncols = widths[0]
    columns = range(ncols)
    dtype = [np.float64] * ncols
    for part, kind, _ in groups:
        for j in columns[part]:
            dtype[j] = kind
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # loadtxt warns about a chunk without rows
            table = np.loadtxt(io.BytesIO(body), comments=None, ndmin=1, encoding="latin-1",
                               dtype=[(f"f{j}", kind) for j, kind in enumerate(dtype)])
    except ValueError:
        tokens, lines = _table(path, body, first_line, ncols)
        arrays = [_numbers(path, tokens[:, part], lines, kind, what) for part, kind, what in groups]
        return ncols, lines, arrays
    arrays = [np.stack([table[f"f{j}"] for j in columns[part]], axis=1) if columns[part]
              else np.zeros((len(table), 0)) for part, _, _ in groups]
    lines = first_line
    if len(table) != body.count(b"\n") + (not body.endswith(b"\n")):
        lines = _line_widths(body, first_line)[0]
    return ncols, lines, arrays


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
                          line=_line(lines, row)) from None


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


# --- checks on arrays ---------------------------------------------------------------

def _check_finite(path, values, line_of):
    """Reject NaN and infinite values; ``line_of(k)`` is the line of entry k (or None)."""
    finite = np.isfinite(values)
    bad = np.flatnonzero(~(finite.all(axis=1) if finite.ndim > 1 else finite))
    if len(bad):
        shown = " ".join(str(v) for v in np.atleast_1d(values[bad[0]]))
        raise FormatError(path, f"value {shown} is not finite", line=line_of(bad[0]))


def _check_range(path, coords, shape, line_of):
    """Reject 1-based coordinates ([entries, ndim]) below 1 or beyond ``shape``."""
    bad = np.flatnonzero(((coords < 1) | (coords > np.array(shape, dtype=np.int64))).any(axis=1))
    if len(bad):
        coord = ", ".join(str(c) for c in coords[bad[0]])
        size = "x".join(str(n) for n in shape)
        raise FormatError(path, f"coordinate ({coord}) is outside the {size} shape "
                          "(coordinates are 1-based)", line=line_of(bad[0]))


def _linear(keys, shape):
    """One int64 per entry from 0-based ``keys`` (a tuple of columns), or None if too large."""
    try:
        return np.ravel_multi_index(keys, shape)
    except ValueError:
        return None


def _check_unique(path, keys, shape, line_of, shown, base=1):
    """Reject the first entry (in file order) whose key repeats an earlier one.

    ``keys`` is a tuple of 0-based index columns, what must be unique;
    ``shown(k)`` the 0-based coordinates of entry k, to name (printed
    ``base``-based); ``line_of(k)`` its line, None for a file without lines.
    """
    key = _linear(keys, shape)
    if key is not None:
        ordered = np.sort(key)  # quick: no repeat, no need for the order
        if not (ordered[1:] == ordered[:-1]).any():
            return
        order = np.argsort(key, kind="stable")
        same = key[order[1:]] == key[order[:-1]]
    else:
        order = np.lexsort(keys[::-1])  # stable: equal keys stay in file order
        same = np.logical_and.reduce([k[order[1:]] == k[order[:-1]] for k in keys])
    repeat = np.flatnonzero(same) + 1
    if not len(repeat):
        return
    k = repeat[np.argmin(order[repeat])]
    later, first = order[k], order[k - 1]
    coord = ", ".join(str(c + base) for c in shown(later))
    if line_of is None:
        raise FormatError(path, f"duplicate entry ({coord}) ({base}-based), stored at positions "
                          f"{first} and {later}; pass duplicates='sum' to add them")
    raise FormatError(path, f"duplicate entry ({coord}) ({base}-based), first given on line "
                      f"{line_of(first)}; pass duplicates='sum' to add them", line=line_of(later))


def _sum_repeats(key, values):
    """Sort entries by their int64 ``key`` and add the values of repeated keys."""
    if len(key) > 1 and not (np.diff(key) > 0).all():
        order = np.argsort(key)
        key, values = key[order], values[order]
        del order
        new = np.concatenate(([True], key[1:] != key[:-1]))
        if not new.all():
            starts = np.flatnonzero(new)
            key, values = key[starts], np.add.reduceat(values, starts)
    return key, values


def _unravel(key, shape):
    """The [entries, ndim] coordinates of linear indices ``key`` (consumed: divided in place)."""
    coords = np.empty((len(key), len(shape)), dtype=np.int64)
    for mode in range(len(shape) - 1, -1, -1):
        np.divmod(key, shape[mode], out=(key, coords[:, mode]))
    return coords


def _sum_duplicates(coords, values):
    """Sort coordinates ([entries, ndim]) lexicographically and add the values of repeats."""
    if len(values) < 2:
        return coords, values
    order = np.lexsort(coords.T[::-1])
    coords, values = coords[order], values[order]
    new = np.concatenate(([True], (coords[1:] != coords[:-1]).any(axis=1)))
    if not new.all():
        starts = np.flatnonzero(new)
        coords, values = coords[starts], np.add.reduceat(values, starts)
    return coords, values


def _canonical(row, col, values, shape):
    """A coo_array of the entries sorted by (row, col), repeats summed, explicit zeros kept.

    Already canonical entries are only checked. Otherwise scipy's COO to CSR
    conversion sorts them: a counting sort by row, O(entries + rows), used
    while the rows do not outnumber the entries (else a sort of the entries).
    The rows of the result are written over ``row``, which is consumed:
    fresh memory is slow to touch, and it is no longer needed.
    """
    index = index_dtype(*shape)
    matrix = coo_array((values, (row.astype(index, copy=False), col.astype(index, copy=False))),
                       shape=shape)
    del row, col, values
    if matrix.nnz < 2 or row_major(matrix.row, matrix.col):
        matrix.has_canonical_format = True
        return matrix
    if shape[0] > 2 * matrix.nnz + 1024:
        matrix.sum_duplicates()
        return matrix
    csr = matrix.tocsr()
    rows = matrix.row[:csr.nnz]
    del matrix
    _expand_rows(csr.indptr, rows)
    result = coo_array((csr.data, (rows, csr.indices)), shape=shape)
    result.has_canonical_format = True
    return result


def _expand_rows(indptr, rows):
    """Write the row of each entry of a CSR structure into ``rows``, without new memory.

    Each row's number is the count of row starts up to its entries: a prefix
    sum of steps placed at the starts (several where rows are empty).
    """
    rows[:] = 0
    starts = indptr[1:-1]
    starts = starts[starts < len(rows)]  # sorted; empty rows at the end start nowhere
    if len(starts):
        last = np.append(np.flatnonzero(starts[1:] != starts[:-1]), len(starts) - 1)
        rows[starts[last]] = np.diff(last, prepend=-1)
    np.add.accumulate(rows, out=rows)


def row_major(*coords):
    """Whether the coordinates ``coords`` (one array a mode) strictly increase in
    row-major order: sorted, no repeats. A block of entries at a time, so the check's
    memory stays small beside the arrays'."""
    step = 1 << 20
    for start in range(0, len(coords[0]), step):
        end = start + step + 1  # blocks overlap by one entry
        rising, tied = False, True
        for coord in coords:
            up = np.diff(coord[start:end])
            rising, tied = rising | (tied & (up > 0)), tied & (up == 0)
        if not np.all(rising):
            return False
    return True


def index_dtype(*sizes):
    """int32 where every index and count below ``sizes`` fits, else int64 (as scipy does)."""
    return np.int32 if max(sizes, default=0) <= _INT32_MAX else np.int64


# --- Matrix Market --------------------------------------------------------------------

@dataclass(frozen=True)
class _MMHeader:
    """What the banner and size line of a Matrix Market file say."""

    fmt: str
    field: str
    symmetry: str
    rows: int
    cols: int
    entries: int  # stored entries the data section must hold
    size_line: int
    room: int  # most entries the rest of the file can hold

    @property
    def nvalues(self):
        """Value tokens per entry."""
        return {"pattern": 0, "complex": 2}.get(self.field, 1)

    @property
    def widths(self):
        """Tokens a data line may have."""
        if self.fmt == "array":
            return (self.nvalues,)
        # Some SuiteSparse pattern files carry a value column; it is ignored, as scipy does.
        return (2, 3) if self.field == "pattern" else (2 + self.nvalues,)


def _mm_header(path, file):
    """Parse the banner, comments and size line at the top of an open Matrix Market file.

    The file is left at the start of the data section.
    """
    text = _header_line(file).decode("latin-1").strip()
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
    number = 1
    while True:
        raw = _header_line(file)
        number += 1
        if not raw:
            raise FormatError(path, "missing size line after the banner and comments",
                              line=number)
        text = raw.decode("latin-1").strip()
        if text and not text.startswith("%"):
            break
    names = ("rows", "cols", "entries") if fmt == "coordinate" else ("rows", "cols")
    sizes = _sizes(path, text, number, names)
    rows, cols = sizes[:2]
    if symmetry != "general" and rows != cols:
        raise FormatError(path, f"a {symmetry} matrix must be square, got {rows}x{cols}",
                          line=number)
    if fmt == "coordinate":
        entries = sizes[2]
    elif symmetry == "general":
        entries = rows * cols
    else:  # the lower triangle, without the diagonal if skew-symmetric
        entries = rows * (rows - 1) // 2 + (symmetry != "skew-symmetric") * rows
    head = _MMHeader(fmt, field, symmetry, rows, cols, entries, number, room=0)
    # An entry takes at least one byte per token and one after each (but the last).
    return replace(head, room=(_room(file) + 1) // (2 * min(head.widths)))


def read_mtx_in_order(path):
    """A Matrix Market file (``.mtx``, ``.mtx.gz``) as a COO matrix in the order the file
    gives its entries, not canonical: for a converter that sees the entries as they are
    stored (MINT's counting sort takes them in any order).

    The file's entries come in its order; a symmetric, skew-symmetric or hermitian file's
    mirrored entries follow them, in the same order; an array file's nonzeros come column
    by column. Explicit zeros are kept. A coordinate given twice (in a symmetric file,
    ``(i, j)`` and ``(j, i)`` too) raises the FormatError of ``duplicates="error"``,
    naming the file, the coordinate and both lines: a converter's entries are each
    coordinate's one value. Pattern files give 1.0 values, integer files int64, real
    float64, complex complex128; indices are int32 where the shape allows.
    """
    _suffix(path, (".mtx", ".mtx.gz"))
    row, col, values, shape = _mtx_entries(path, "error")
    index = index_dtype(*shape)
    return coo_array((values, (row.astype(index, copy=False), col.astype(index, copy=False))),
                     shape=shape)


def _read_mtx(path, duplicates):
    """Read a Matrix Market file (see read_matrix)."""
    return _canonical(*_mtx_entries(path, duplicates))


def _mtx_entries(path, duplicates):
    """A Matrix Market file's entries in file order (mirrored ones after them), checked:
    ``(row, col, values, shape)``, 0-based."""
    with _reading(path) as file:
        head = _mm_header(path, file)
        start = file.tell()
        entries = _mtx_fast(file, head) if head.entries <= head.room else None
        if entries is None:
            file.seek(start)
            entries = _mtx_exact(path, file, head)
    row, col, values, line_of = entries
    del entries
    if head.fmt == "array":
        if head.symmetry == "general":
            col, row = np.divmod(np.arange(head.entries), max(head.rows, 1))  # column-major
        else:  # lower triangle, column by column
            col, row = np.triu_indices(head.rows, k=0 if head.symmetry != "skew-symmetric" else 1)
        stored = values != 0
        row, col, values = row[stored], col[stored], values[stored]
    elif duplicates == "error":
        keys = (row, col) if head.symmetry == "general" else (np.maximum(row, col),
                                                              np.minimum(row, col))
        _check_unique(path, keys, (head.rows, head.cols), line_of, lambda k: (row[k], col[k]))
    if head.symmetry != "general":
        off = row != col
        mirrored = values[off]
        if head.symmetry == "skew-symmetric":
            mirrored = -mirrored
        elif head.symmetry == "hermitian":
            mirrored = np.conj(mirrored)  # a real hermitian matrix is symmetric
        row, col = np.concatenate((row, col[off])), np.concatenate((col, row[off]))
        values = np.concatenate((values, mirrored))
        del off, mirrored
    return row, col, values, (head.rows, head.cols)


class _Irregular(Exception):
    """The data section needs the exact reader."""


class _Feed:
    """The stream fast_matrix_market reads: a plain header, then the data in large chunks.

    fmm parses the ``width`` fields it expects from each line, ignores the
    rest of the line and skips blank lines, so each chunk is checked on its
    way, at C speed: no byte but number characters (``.eE`` only where
    ``field`` has decimals) and whitespace (bytes.translate), a carriage
    return only before a line end, and in all (counted with numpy) as many
    lines as entries holding ``width`` fields each. As fmm finds at least
    ``width`` fields on every line it reads, those totals leave room for
    nothing else: no extra field, no blank line. Anything else raises
    _Irregular, and the exact reader takes over.
    """

    def __init__(self, file, header, field, width, entries):
        self._file, self._header = file, header
        decimals = b".eE" if field in ("real", "complex") else b""
        self._allowed = b"0123456789+-" + decimals + b" \t\r\n"
        self._entries, self._width = entries, width
        self._fields = self._lines = 0
        self._in_field = self._done = False  # whether the last byte read was part of a field
        self._last = b"\n"  # the last byte given to fmm

    def read(self, size=-1):
        """The next bytes for fmm (``size`` is ignored: chunks are larger than it asks)."""
        if self._header:
            header, self._header = self._header, b""
            return header
        if self._done:
            return b""
        chunk = self._file.read(_FEED_CHUNK)
        if chunk.endswith(b"\r"):  # keep a CRLF line end in one chunk
            chunk += self._file.read(1)
        self._check(chunk)
        if not chunk and self._last != b"\n":
            # End the last line: fmm reads past a value cut short at the end of its input
            # ("1 1 5e" crashes it, and scipy.io.mmread with it).
            chunk = self._last = b"\n"
        elif chunk:
            self._last = chunk[-1:]
        return chunk

    def finish(self):
        """Check the data section to its end, whether or not fmm read that far."""
        while not self._done:
            self.read()

    def _check(self, chunk):
        if not chunk:  # end of file; the last line may lack its line end
            self._done = True
            lines = self._lines + self._in_field
            if lines != self._entries or self._fields != self._width * lines:
                raise _Irregular
            return
        if chunk.translate(None, self._allowed) or (
                b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n")):
            raise _Irregular
        text = np.frombuffer(chunk, dtype=np.uint8)
        field = (text > ord(" ")).view(np.uint8)  # 1 on the bytes of fields
        starts = np.count_nonzero(field[1:] > field[:-1]) + (field[0] > self._in_field)
        self._fields += int(starts)
        self._lines += int(np.count_nonzero(text == ord("\n")))
        self._in_field = bool(field[-1])


def _mtx_fast(file, head):
    """The stored entries read by fast_matrix_market: (row, col, values, line_of) with
    0-based indices (None for an array file), or None where the exact reader is needed."""
    field = "real" if head.field == "double" else head.field
    width = max(head.widths)
    if head.field == "pattern":  # with or without a value column (ignored), as the first line
        start = file.tell()
        width = len(file.readline(_HEADER_LINE).split())
        file.seek(start)
        if width not in head.widths:
            return None
        field = "real" if width == 3 else field  # so that fmm demands the value on every line
    if head.fmt == "coordinate":
        top = f"coordinate {field} general\n{head.rows} {head.cols} {head.entries}\n"
    else:  # one column, in file order: the reader places the values itself
        top = f"array {field} general\n{head.entries} 1\n"
    feed = _Feed(file, b"%%MatrixMarket matrix " + top.encode(), field, width, head.entries)
    try:
        if head.fmt == "coordinate":
            (values, (row, col)), _ = fmm.read_coo(feed, generalize_symmetry=False)
        else:
            values, row, col = fmm.read_array(feed)[:, 0], None, None
        feed.finish()
    except (_Irregular, ValueError, OverflowError, IndexError, RuntimeError):
        return None
    if head.field == "pattern":
        values.fill(1.0)
    elif values.dtype.kind in "fc" and not np.isfinite(values).all():
        return None
    if head.symmetry == "skew-symmetric" and row is not None and (row == col).any():
        return None
    return row, col, values, _Lines(head.size_line + 1)


def _mtx_exact(path, file, head):
    """The stored entries of a Matrix Market data section, as _mtx_fast returns them.

    Raises the FormatError of the first bad line. Arrays are sized by the
    declared count only as far as the file can hold it.
    """
    size = min(head.entries, head.room)
    index = index_dtype(head.rows, head.cols)
    values = np.empty(size, dtype=np.complex128 if head.field == "complex" else
                      _MM_DTYPES[head.field])
    coordinate = head.fmt == "coordinate"
    row = np.empty(size if coordinate else 0, dtype=index)
    col = np.empty_like(row)
    value_part = slice(2, 2 + head.nvalues) if coordinate else slice(0, head.nvalues)
    groups = [(value_part, _MM_DTYPES[head.field], "value")]
    if coordinate:
        groups.append((slice(0, 2), np.int64, "coordinate"))
    count, ncols, line_of = 0, None, _Lines()
    for body, first in _chunks(path, file, head.size_line + 1):
        ncols, lines, arrays = _rows(path, body, first, ncols, head.widths, b"%", groups)
        count_here = len(arrays[0])
        if not count_here:
            continue
        if count + count_here > head.entries:
            raise FormatError(path, f"more entries than the {head.entries} declared on line "
                              f"{head.size_line}", line=_line(lines, head.entries - count))
        if count + count_here > size:
            raise FormatError(path, "holds more data than its compressed size allows")

        def at(k, lines=lines):
            return _line(lines, k)

        parts = arrays[0]
        if head.field == "pattern":
            parts = np.ones((count_here, 1))
        if parts.dtype.kind == "f":
            _check_finite(path, parts, at)
        here = slice(count, count + count_here)
        values[here] = parts[:, 0] if head.field != "complex" else parts[:, 0] + 1j * parts[:, 1]
        if coordinate:
            coords = arrays[1]
            _check_range(path, coords, (head.rows, head.cols), at)
            if head.symmetry == "skew-symmetric":
                diagonal = np.flatnonzero(coords[:, 0] == coords[:, 1])
                if len(diagonal):
                    i = coords[diagonal[0], 0]
                    raise FormatError(path, f"entry ({i}, {i}) is on the diagonal, which a "
                                      "skew-symmetric file must not list (it is zero)",
                                      line=at(diagonal[0]))
            row[here], col[here] = coords[:, 0] - 1, coords[:, 1] - 1
        line_of.add(count, lines)
        count += count_here
    if count < head.entries:
        raise FormatError(path, f"the size line declares {head.entries} entries but the file has "
                          f"{count}", line=head.size_line)
    return (row if coordinate else None), (col if coordinate else None), values, line_of


# --- DLMC, npy, npz -------------------------------------------------------------------

def _read_smtx(path, duplicates):
    """Read a DLMC pattern matrix: ``rows, cols, nnz``, row_ptr, col_idx (0-based)."""
    data = _read_bytes(path)
    _check_text(path, data, 1)
    ends = []
    for _ in range(3):
        end = data.find(b"\n", ends[-1] + 1 if ends else 0)
        ends.append(len(data) if end < 0 else end)
    header = data[:ends[0]]
    rows, cols, nnz = _sizes(path, header.decode("latin-1").strip(), 1, ("rows,", "cols,", "nnz"))
    ptr_text = data[ends[0] + 1:ends[1]]
    if not ptr_text.strip():
        raise FormatError(path, "missing row_ptr line", line=2)
    rest = data[ends[2] + 1:]
    extra = re.search(rb"\S", rest)
    if extra is not None:
        raise FormatError(path, "unexpected content after the col_idx line",
                          line=4 + rest.count(b"\n", 0, extra.start()))
    row_ptr = _int_line(path, ptr_text, 2, "row_ptr")
    col_idx = _int_line(path, data[ends[1] + 1:ends[2]], 3, "col_idx")
    del data, rest, ptr_text
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
    index = index_dtype(rows, cols, nnz)
    matrix = csr_array((np.ones(nnz), col_idx.astype(index), row_ptr.astype(index)),
                       shape=(rows, cols))
    matrix.sum_duplicates()  # sorts each row's columns (in place) and adds repeats
    if duplicates == "error" and matrix.nnz < nnz:
        row = np.repeat(np.arange(rows), steps)
        _check_unique(path, (row, col_idx), (rows, cols), lambda k: 3,
                      lambda k: (row[k], col_idx[k]), base=0)
    return matrix.tocoo(copy=False)


def _int_line(path, text, number, what):
    """The integers on line ``number`` of a DLMC file, one vectorized parse.

    ``np.fromstring`` reads a line of digits and whitespace exactly (it is lax
    elsewhere: a lone ``-`` reads as 0); anything else, or a number too large,
    goes to the tokenizer, which names the bad token.
    """
    if not text.translate(None, b"0123456789 \t\r\x0b\x0c"):
        if re.search(rb"\S", text) is None:
            return np.zeros(0, dtype=np.int64)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # what it could not read
            try:
                values = np.fromstring(text, dtype=np.int64, sep=" ")
            except (ValueError, DeprecationWarning):
                values = None
        if values is not None and values.max() < _INT64_MAX:  # the largest: maybe saturated
            return values
    tokens = np.array(text.split(), dtype=np.bytes_)
    return _numbers(path, tokens, np.full(len(tokens), number), np.int64, f"{what} entry")


def read_npy(path, ndim=None):
    """A dense ``.npy`` array of ``ndim`` modes (default: one or more), numeric and
    finite (FormatError naming the file otherwise), read into memory."""
    try:
        dense = np.load(path, mmap_mode="r", allow_pickle=False)  # a short file fails here
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except Exception as exc:  # numpy raises many kinds on a damaged file (even TokenError)
        raise FormatError(path, f"not a readable .npy array: {exc}") from exc
    if not isinstance(dense, np.ndarray):
        raise FormatError(path, "not a readable .npy array: it is an .npz archive")
    if dense.dtype.kind not in _DTYPES or dense.ndim < 1 or dense.ndim != (ndim or dense.ndim):
        modes = f"a {ndim}-D numeric array" if ndim else "a numeric array of one or more modes"
        raise FormatError(path, f"expected {modes}, got {dense.ndim}-D {dense.dtype}")
    dense = np.array(dense)
    if dense.dtype.kind in "fc" and not np.isfinite(dense).all():
        where = np.unravel_index(np.argmin(np.isfinite(dense)), dense.shape)
        raise FormatError(path, f"value at {tuple(int(i) for i in where)} (0-based) is not "
                          "finite")
    return dense


def _read_npy(path):
    """Read a 2-D dense ``.npy`` array into a coo_array, dropping its zeros."""
    dense = read_npy(path, ndim=2)
    row, col = np.nonzero(dense)  # row-major order: canonical
    return _canonical(row, col, dense[row, col].astype(_DTYPES[dense.dtype.kind]), dense.shape)


# Value types of binary inputs, by numpy kind: as the text formats give them.
_DTYPES = {"b": np.float64, "i": np.int64, "u": np.int64, "f": np.float64, "c": np.complex128}
_NPZ_FORMATS = {"coo": coo_array, "csr": csr_array, "csc": csc_array, "bsr": bsr_array,
                "dia": dia_array}
_NPZ_ARRAYS = {"coo": ("row", "col"), "csr": ("indices", "indptr"), "csc": ("indices", "indptr"),
               "bsr": ("indices", "indptr"), "dia": ("offsets",)}


def open_npz(path):
    """``np.load`` of an ``.npz`` archive, without pickles; FormatError if it is not one."""
    try:
        npz = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except Exception as exc:  # numpy and zipfile raise many kinds on a damaged file
        raise FormatError(path, f"not a readable .npz archive: {exc}") from exc
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise FormatError(path, "not a readable .npz archive: it is a single .npy array")
    return npz


def _read_npz(path, duplicates):
    """Read a ``scipy.sparse.save_npz`` file (coo, csr, csc, bsr or dia) into a coo_array."""
    with open_npz(path) as npz:
        try:
            fmt = _npz_member(path, npz, "format")
            fmt = fmt.item().decode("ascii") if fmt.dtype.kind == "S" else str(fmt.item())
            if fmt not in _NPZ_FORMATS:
                raise FormatError(path, f"unsupported sparse format {fmt!r}: expected one of "
                                  f"{', '.join(_NPZ_FORMATS)}")
            if fmt == "coo" and "coords.npy" in npz.zip.namelist():
                raise FormatError(path, "expected a 2-D sparse matrix, got an n-D coo array")
            shape = _npz_member(path, npz, "shape")
            arrays = {name: _npz_member(path, npz, name) for name in ("data", *_NPZ_ARRAYS[fmt])}
        except FormatError:
            raise
        except Exception as exc:
            raise FormatError(path, f"not a readable .npz archive: {exc}") from exc
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or (shape < 0).any():
        raise FormatError(path, f"'shape' must hold two non-negative integers, got {shape!r}")
    shape = tuple(int(n) for n in shape)
    data = arrays["data"]
    if data.dtype.kind not in _DTYPES:
        raise FormatError(path, f"expected numeric data, got {data.dtype}")
    for name in _NPZ_ARRAYS[fmt]:
        if arrays[name].dtype.kind not in "iu" or arrays[name].ndim != 1:
            raise FormatError(path, f"'{name}' must be a 1-D integer array, got "
                              f"{arrays[name].ndim}-D {arrays[name].dtype}")
    data = data.astype(_DTYPES[data.dtype.kind], copy=False)
    if data.dtype.kind in "fc" and not np.isfinite(data).all():
        k = np.argmin(np.isfinite(data).reshape(-1))
        raise FormatError(path, f"stored value {k} ({data.reshape(-1)[k]}) is not finite")
    try:
        if fmt == "coo":
            matrix = coo_array((data, (arrays["row"], arrays["col"])), shape=shape)
        elif fmt == "dia":
            matrix = dia_array((data, arrays["offsets"]), shape=shape)
        else:
            matrix = _NPZ_FORMATS[fmt]((data, arrays["indices"], arrays["indptr"]), shape=shape)
            matrix.check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as exc:
        raise FormatError(path, f"inconsistent {fmt} arrays: {exc}") from exc
    if fmt != "coo":
        matrix = matrix.tocoo(copy=False)
    row, col = matrix.row, matrix.col
    if duplicates == "error":
        _check_unique(path, (row, col), shape, None, lambda k: (row[k], col[k]), 0)
    return _canonical(row, col, matrix.data, shape)


def npz_header(path, npz, name, missing="no '{name}' array"):
    """(shape, dtype) of array ``name`` of an .npz archive, once its size is known to be held.

    An array whose header declares more data than the archive holds (or than
    its compressed size can expand to), a damaged header and an array of
    Python objects are refused before anything is allocated; ``missing`` is
    the message (``{name}`` filled in) for an archive without the array.
    """
    try:
        info = npz.zip.getinfo(f"{name}.npy")
    except KeyError:
        raise FormatError(path, missing.format(name=name)) from None
    if info.file_size > _GZIP_RATIO * info.compress_size + 1024:
        raise FormatError(path, f"array '{name}' claims {info.file_size} bytes, more than its "
                          f"{info.compress_size} compressed bytes can hold")
    try:
        with npz.zip.open(info) as member:
            version = np.lib.format.read_magic(member)
            reader = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                      np.lib.format.read_array_header_2_0)
            shape, _, dtype = reader(member)
            held = info.file_size - member.tell()
    except Exception as exc:  # a damaged header: numpy raises several kinds
        raise FormatError(path, f"array '{name}' is not a readable .npy array: {exc}") from exc
    if dtype.hasobject:
        raise FormatError(path, f"array '{name}' holds Python objects, not numbers")
    declared = math.prod(shape) * dtype.itemsize
    if declared != held:
        raise FormatError(path, f"array '{name}' declares {declared} bytes of data but holds "
                          f"{held}")
    return shape, dtype


def _npz_member(path, npz, name):
    """Array ``name`` of a scipy.sparse .npz archive, once :func:`npz_header` accepts it."""
    npz_header(path, npz, name, "not a scipy.sparse .npz file: no '{name}' array")
    return npz[name]


# --- FROSTT ---------------------------------------------------------------------------

def _tns_dims(path, body, first_line):
    """The shape from a ``# dims: n1 n2 ...`` comment in ``body`` and its line, or (None, None)."""
    match = re.search(rb"(?mi)^[ \t]*#[ \t]*dims[ \t]*:(.*)$", body)
    if match is None:
        return None, None
    number = first_line + body.count(b"\n", 0, match.start())
    text = match.group(1).decode("latin-1").strip()
    words = text.split()
    if not words:
        raise FormatError(path, "empty '# dims:' comment", line=number)
    return _sizes(path, text, number, [f"n{k + 1}" for k in range(len(words))]), number
