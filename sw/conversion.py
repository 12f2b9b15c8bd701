"""Golden converters between the compression formats of MINT (MINT/SAGE §II, §V, Fig. 8).

``convert(obj, to)`` turns any of the eight formats below into any other;
MINT's hardware converters are checked against it. The formats, fixed here
once:

=====  ======================================================================
dense  a numpy array in C (row-major) order, matrix or tensor.
coo    a ``scipy.sparse.coo_array`` for a matrix, a `~.formats.Tensor` for a
       tensor of any other order: coordinates in row-major (lexicographic)
       order, one entry per coordinate.
csr    a ``scipy.sparse.csr_array``, columns sorted within each row.
csc    a ``scipy.sparse.csc_array``, rows sorted within each column.
bsr    a ``scipy.sparse.bsr_array`` of R x C blocks (``block``, which must
       divide the shape): the blocks holding a nonzero, by block column within
       each block row, their other elements stored as zeros, as scipy stores
       them (scipy's ``tobsr`` lists a block row's blocks in the order it
       meets them; ``sort_indices()`` gives ours).
rlc    `RLC`: Eyeriss's run-length coding, a row-major stream of
       (run, value) pairs with fillers; see the class.
zvc    `ZVC`: zero-value compression, a bit mask over the elements in
       row-major order and the nonzeros; see the class.
csf    `CSF`: compressed sparse fibers (SPLATT, TACO), a tree per level of
       fids and fptr; see the class.
=====  ======================================================================

CSR, CSC, BSR, RLC and ZVC hold matrices; dense, COO and CSF hold a tensor
of any order (a matrix included). Asking for a matrix format of a tensor, a
conversion of a format not listed, or a block size that is zero or does not
divide the shape raises `~sparseforge.core.errors.ParameterError`.

Nonzeros. A conversion carries the nonzeros, as MINT's converters do (the
paper: "CSR does not contain any zero values"). An input's repeated
coordinates are added (scipy's rule) and its stored zeros dropped: RLC and
ZVC could not hold one (a zero is what they leave out), so no format does,
and any chain of conversions gives what one conversion gives. BSR's fill is
not nonzeros either: it is dropped on the way out of BSR.

Memory follows the nonzeros. What cannot -- a dense array, a ZVC mask, the
pointers of CSR, CSC and BSR, BSR's zero fill, RLC's fillers -- is refused
with a ParameterError naming its size before more than `MAX_AREA` elements
are allocated. Every step is vectorized; the Python loops run over levels,
modes, radix digits and chunks of text, never over nonzeros. CSR to CSC (and
back) is Fig. 8c's counting sort: a bincount and prefix sum for the pointers,
and numpy's stable radix sort of the column indices for the placement (numpy
has no scatter that hands out slots); it takes about four times as long as
scipy's C ``tocsc``.

Files. `save` and `load` keep RLC, ZVC and CSF in ``.npz`` archives
(``np.savez_compressed``) holding ``format`` (a 0-d bytes array: ``b"rlc"``,
``b"zvc"`` or ``b"csf"``), ``shape`` (int64 [ndim]), ``values`` (bool,
integer, float or complex) and:

- rlc: ``run_bits`` (0-d int64) and ``runs`` ([pairs], the smallest unsigned
  type that holds 2**run_bits - 1); ``values`` [pairs], fillers' zeros included.
- zvc: ``mask`` (uint8 [ceil(rows * cols / 8)]); ``values`` [nnz].
- csf: ``fids0`` .. ``fids{ndim-1}`` and ``fptr0`` .. ``fptr{ndim-2}``
  (int64); ``values`` [leaves].

No other array may be present. `load` checks every array against its
format's definition (and stored values are finite, as the text readers
demand) and raises `~sparseforge.core.errors.FormatError` naming the file and
what is wrong. COO, CSR, CSC and BSR matrices are ``scipy.sparse.save_npz``
files read through `~.formats.read_matrix`; dense arrays are ``.npy``;
tensors in COO are FROSTT ``.tns``.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..core.errors import FormatError, ParameterError
from .formats import (
    Tensor,
    index_dtype,
    npz_header,
    open_npz,
    read_matrix,
    read_npy,
    read_tensor,
    row_major,
)
from .occupancy import INT64_MAX, first_of_runs

__all__ = ["CSF", "FORMATS", "MATRIX_FORMATS", "MAX_AREA", "MAX_RUN_BITS", "RLC", "RUN_BITS",
           "ZVC", "check_request", "convert", "format_of", "load", "nonzeros", "same", "save",
           "suffix"]

FORMATS = ("dense", "coo", "csr", "csc", "bsr", "rlc", "zvc", "csf")
"""Every format ``convert`` reads and writes."""

MATRIX_FORMATS = ("csr", "csc", "bsr", "rlc", "zvc")
"""The formats that hold matrices only."""

RUN_BITS = 5
"""Default width of RLC's run field: Eyeriss's 5-bit runs."""

MAX_RUN_BITS = 32
"""Widest run field."""

MAX_AREA = 1 << 28
"""Most elements a conversion allocates that do not follow the nonzeros: a dense
array's elements, a ZVC mask's bits, pointers, BSR's zero fill, RLC's fillers."""

_VALUE_KINDS = "biufc"
_POPCOUNT = np.array([bin(byte).count("1") for byte in range(256)], dtype=np.uint8)
_TNS_CHUNK = 1 << 16  # entries formatted at a time when writing .tns


class _Entries(NamedTuple):
    """The nonzeros in row-major order, one per coordinate: what every conversion passes."""

    coords: tuple  # one integer array per mode
    values: np.ndarray
    shape: tuple


# --- formats --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RLC:
    """A run-length coded matrix (Eyeriss; MINT §II, Fig. 8d).

    A row-major stream of (run, value) pairs: ``runs[k]`` zeros come before
    ``values[k]``, counted from the element after the previous pair, so runs
    continue across row boundaries. The element of pair k sits at position
    ``sum(runs[:k+1] + 1) - 1``: the prefix sum MINT's RLC-to-COO converter
    takes, whose divide and mod by the columns give row and column.

    A run field has ``run_bits`` bits. A gap of ``2**run_bits`` zeros or more
    first emits fillers ``(max_run, 0)``, each covering ``max_run + 1``
    positions (its zeros and its own), so a gap of g zeros takes
    ``g // 2**run_bits`` fillers and a run of ``g % 2**run_bits``; a gap of
    exactly ``max_run`` takes none. Zeros after the last nonzero are implicit:
    no pair follows it, and an all-zero matrix is an empty stream. A zero value
    is always a filler. Construction checks all of this (ParameterError).

    Attributes
    ----------
    runs : [pairs] unsigned, each at most ``max_run``.
    values : [pairs], the nonzeros (the paper's levels) and the fillers' zeros.
    shape : (rows, columns).
    run_bits : width of the run field, 1 to `MAX_RUN_BITS`.
    """

    runs: np.ndarray
    values: np.ndarray
    shape: tuple[int, int]
    run_bits: int

    def __post_init__(self):
        shape = _check_shape(self.shape, "RLC", stream=True)
        run_bits = _check_run_bits(self.run_bits)
        runs = _vector(self.runs, "RLC runs", "iu")
        values = _vector(self.values, "RLC values", _VALUE_KINDS)
        if len(runs) != len(values):
            raise ParameterError(f"RLC has {len(runs)} runs but {len(values)} values")
        top = (1 << run_bits) - 1
        if len(runs):
            _check_range(runs, 0, top, f"RLC run (a {run_bits}-bit field)")
            filler = values == 0
            bad = np.flatnonzero(filler & (runs != top))
            if len(bad):
                raise ParameterError(f"RLC pair {bad[0]} is ({runs[bad[0]]}, 0): a zero value "
                                     f"is only a filler ({top}, 0)")
            if filler[-1]:
                raise ParameterError(f"RLC stream ends in a filler (pair {len(runs) - 1}): the "
                                     "zeros after the last nonzero are implicit")
            covered = int(runs.sum(dtype=np.int64)) + len(runs)
            if covered > shape[0] * shape[1]:
                raise ParameterError(f"RLC runs cover {covered} positions, more than the "
                                     f"{_size_text(shape)} = {shape[0] * shape[1]} elements")
        _set(self, shape=shape, run_bits=run_bits, values=values,
             runs=runs.astype(_run_dtype(run_bits), copy=False))

    @property
    def max_run(self):
        """Largest run the field holds, ``2**run_bits - 1``."""
        return (1 << self.run_bits) - 1

    @property
    def dtype(self):
        """Type of the values."""
        return self.values.dtype


@dataclass(frozen=True, eq=False)
class ZVC:
    """A zero-value compressed matrix (Rhu et al. [9]; MINT §II).

    One mask bit per element in row-major order, 1 for a nonzero, packed
    eight to a byte LSB first (``np.packbits(..., bitorder="little")``:
    element k is bit ``k % 8`` of byte ``k // 8``; the bits past the last
    element are 0), and the nonzeros in the same order. Construction checks
    it (ParameterError).

    Attributes
    ----------
    mask : uint8 [ceil(rows * columns / 8)].
    values : [nnz], one per set bit, none zero.
    shape : (rows, columns).
    """

    mask: np.ndarray
    values: np.ndarray
    shape: tuple[int, int]

    def __post_init__(self):
        shape = _check_shape(self.shape, "ZVC", stream=True)
        mask = _vector(self.mask, "ZVC mask", "u")
        values = _vector(self.values, "ZVC values", _VALUE_KINDS)
        size = shape[0] * shape[1]
        if mask.dtype != np.uint8:
            raise ParameterError(f"ZVC mask must be uint8 bytes, got {mask.dtype}")
        if len(mask) != -(-size // 8):
            raise ParameterError(f"ZVC mask has {len(mask)} bytes; a {_size_text(shape)} matrix "
                                 f"needs {-(-size // 8)}")
        if size % 8 and mask[-1] >> (size % 8):
            raise ParameterError(f"ZVC mask sets bits past the last of the {size} elements")
        marked = int(_POPCOUNT[mask].sum(dtype=np.int64))
        if marked != len(values):
            raise ParameterError(f"ZVC mask marks {marked} nonzeros but {len(values)} values "
                                 "are stored")
        _check_no_zero(values, "ZVC")
        _set(self, shape=shape, mask=mask, values=values)

    @property
    def dtype(self):
        """Type of the values."""
        return self.values.dtype


@dataclass(frozen=True, eq=False)
class CSF:
    """A tensor in compressed sparse fibers (Smith and Karypis [11]; MINT §II, Fig. 8f).

    A tree with one level per mode, in mode order. Level l has ``fids[l]``,
    the coordinate of each of its nodes in mode l, and, above the leaves,
    ``fptr[l]``: the children of node k of level l are nodes
    ``fptr[l][k]:fptr[l][k+1]`` of level l + 1 (SPLATT's fids/fptr; TACO's
    crd/pos of compressed levels). Siblings are in increasing coordinate, so
    the leaves list the nonzeros in row-major order; ``values`` holds one per
    leaf. Every node has a child, so each ``fptr[l]`` rises strictly from 0 to
    the node count of level l + 1. Construction checks it (ParameterError).

    Attributes
    ----------
    fids : ndim int64 arrays, [nodes of level l].
    fptr : ndim - 1 int64 arrays, [nodes of level l + 1].
    values : [leaves], none zero.
    shape : size of each mode.
    """

    fids: tuple
    fptr: tuple
    values: np.ndarray
    shape: tuple[int, ...]

    def __post_init__(self):
        shape = _check_shape(self.shape, "CSF")
        ndim = len(shape)
        if len(self.fids) != ndim or len(self.fptr) != ndim - 1:
            raise ParameterError(f"CSF of a {ndim}-D tensor has {ndim} fids and {ndim - 1} fptr "
                                 f"levels, got {len(self.fids)} and {len(self.fptr)}")
        fids = tuple(_vector(f, f"CSF fids{level}", "iu").astype(np.int64, copy=False)
                     for level, f in enumerate(self.fids))
        fptr = tuple(_vector(p, f"CSF fptr{level}", "iu").astype(np.int64, copy=False)
                     for level, p in enumerate(self.fptr))
        values = _vector(self.values, "CSF values", _VALUE_KINDS)
        for level, ptr in enumerate(fptr):
            nodes, children = len(fids[level]), len(fids[level + 1])
            if len(ptr) != nodes + 1 or ptr[0] != 0 or ptr[-1] != children:
                raise ParameterError(f"CSF fptr{level} must hold {nodes + 1} pointers from 0 to "
                                     f"{children} (the nodes of fids{level + 1})")
            bad = np.flatnonzero(ptr[1:] <= ptr[:-1])
            if len(bad):
                raise ParameterError(f"CSF fptr{level} does not rise after entry {bad[0]}: "
                                     "every node has a child")
        for level, ids in enumerate(fids):
            _check_range(ids, 0, shape[level] - 1, f"CSF fids{level} coordinate")
            rising = ids[1:] > ids[:-1]
            if level:
                rising[fptr[level - 1][1:-1] - 1] = True  # a new fiber may start anywhere
            bad = np.flatnonzero(~rising)
            if len(bad):
                raise ParameterError(f"CSF fids{level} does not rise within a fiber at entry "
                                     f"{bad[0] + 1}")
        if len(values) != len(fids[-1]):
            raise ParameterError(f"CSF has {len(values)} values for {len(fids[-1])} leaves")
        _check_no_zero(values, "CSF")
        _set(self, shape=shape, fids=fids, fptr=fptr, values=values)

    @property
    def dtype(self):
        """Type of the values."""
        return self.values.dtype


def _set(obj, **fields):
    """Store checked, normalized fields on a frozen dataclass."""
    for name, value in fields.items():
        object.__setattr__(obj, name, value)


def _check_shape(shape, what, stream=False):
    """``shape`` as a tuple of non-negative ints; a ``stream`` (RLC, ZVC) is a matrix whose
    row-major positions fit in 64 bits."""
    try:
        shape = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} shape {shape!r}: expected a tuple of sizes") from None
    if (stream and len(shape) != 2) or not shape or min(shape) < 0:
        want = "two non-negative sizes" if stream else "one or more non-negative sizes"
        raise ParameterError(f"{what} shape {shape}: expected {want}")
    if stream and math.prod(shape) > INT64_MAX:
        raise ParameterError(f"{what} of a {_size_text(shape)} matrix: its positions do not fit "
                             "in 64 bits")
    return shape


def _check_run_bits(run_bits):
    """``run_bits`` as an int in 1..MAX_RUN_BITS."""
    if isinstance(run_bits, bool) or not isinstance(run_bits, int | np.integer) \
            or not 1 <= run_bits <= MAX_RUN_BITS:
        raise ParameterError(f"run_bits={run_bits!r}: expected an integer from 1 to "
                             f"{MAX_RUN_BITS}")
    return int(run_bits)


def _vector(array, what, kinds):
    """``array`` as a 1-D numpy array whose dtype kind is one of ``kinds``."""
    array = np.asarray(array)
    if array.ndim != 1 or array.dtype.kind not in kinds:
        want = "integer" if kinds == "iu" else "unsigned" if kinds == "u" else "numeric"
        raise ParameterError(f"{what} must be a 1-D {want} array, got {array.ndim}-D "
                             f"{array.dtype}")
    return array


def _check_range(array, low, high, what):
    """Refuse the first element of ``array`` outside ``low..high``."""
    bad = np.flatnonzero((array < low) | (array > high))
    if len(bad):
        raise ParameterError(f"{what} {array[bad[0]]} at entry {bad[0]} is outside "
                             f"{low}..{high}")


def _check_no_zero(values, what):
    """Refuse a stored zero in a format that holds nonzeros only."""
    zero = np.flatnonzero(values == 0)
    if len(zero):
        raise ParameterError(f"{what} value {zero[0]} is zero: {what} stores nonzeros only")


def _run_dtype(run_bits):
    """Smallest unsigned type holding a ``run_bits``-bit run."""
    return np.uint8 if run_bits <= 8 else np.uint16 if run_bits <= 16 else np.uint32


def _size_text(shape):
    return " x ".join(str(n) for n in shape)


# --- dispatch -------------------------------------------------------------------------

def format_of(obj):
    """Name in `FORMATS` of the format ``obj`` is in, or a ParameterError."""
    if isinstance(obj, RLC | ZVC | CSF):
        return type(obj).__name__.lower()
    if isinstance(obj, Tensor):
        return "coo"
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _VALUE_KINDS or obj.ndim < 1:
            raise ParameterError(f"a dense array must be numeric with one or more modes, got "
                                 f"{obj.ndim}-D {obj.dtype}")
        return "dense"
    if sp.issparse(obj) and obj.format in FORMATS:
        if obj.ndim != 2:
            raise ParameterError(f"expected a 2-D scipy.sparse matrix, got {obj.ndim}-D")
        return obj.format
    raise ParameterError(f"cannot convert a {type(obj).__name__}: expected a numpy array, a "
                         "scipy.sparse coo, csr, csc or bsr array, a Tensor, RLC, ZVC or CSF")


def convert(obj, to, block=None, run_bits=None):
    """``obj`` (any format of `FORMATS`) in format ``to``, holding the same nonzeros.

    ``block`` = (R, C) is BSR's block size (default: that of a BSR input);
    ``run_bits`` RLC's run field (default `RUN_BITS`); see `check_request`.
    The input is never modified, and the result shares no memory with it.
    """
    block, run_bits = check_request(obj, to, block, run_bits)
    entries = _decode(obj, format_of(obj), tuple(int(n) for n in obj.shape))
    if to == "rlc":
        return _to_rlc(entries, run_bits)
    if to == "bsr":
        return _to_bsr(entries, block)
    return _ENCODERS[to](entries)


def check_request(obj, to, block=None, run_bits=None):
    """``(block, run_bits)`` of a conversion of ``obj`` to ``to``, checked and completed.

    ``block`` applies to BSR only and ``run_bits`` to RLC only; each is None
    for other formats. Raises ParameterError for an unknown format, a tensor
    where a matrix is needed, a block that is missing, not at least 1 or does
    not divide the shape, and run_bits outside 1..MAX_RUN_BITS.
    """
    source = format_of(obj)
    if to not in FORMATS:
        raise ParameterError(f"no conversion to {to!r}: formats are {', '.join(FORMATS)}")
    shape = tuple(int(n) for n in obj.shape)
    if to in MATRIX_FORMATS and len(shape) != 2:
        raise ParameterError(f"{to.upper()} holds matrices; the {source.upper()} input is a "
                             f"{len(shape)}-D tensor of shape {_size_text(shape)}")
    if block is not None and to != "bsr":
        raise ParameterError(f"a block size applies to BSR only, not {to.upper()}")
    if run_bits is not None and to != "rlc":
        raise ParameterError(f"run_bits applies to RLC only, not {to.upper()}")
    if to == "bsr":
        block = _check_block(obj.blocksize if block is None and source == "bsr" else block, shape)
    if to == "rlc":
        run_bits = _check_run_bits(RUN_BITS if run_bits is None else run_bits)
    return block, run_bits


def nonzeros(obj):
    """Number of nonzeros ``obj`` holds (stored zeros, such as BSR's fill, not counted)."""
    if format_of(obj) == "dense":
        return int(np.count_nonzero(obj))
    return int(np.count_nonzero(obj.data if sp.issparse(obj) else obj.values))


def _check_block(block, shape):
    """``block`` as (R, C), both at least 1 and dividing the matrix's shape."""
    if block is None:
        raise ParameterError("BSR needs a block size (R, C)")
    try:
        rows, cols = (int(n) for n in block)
    except (TypeError, ValueError):
        raise ParameterError(f"block {block!r}: expected two sizes (R, C)") from None
    if rows < 1 or cols < 1:
        raise ParameterError(f"block {rows},{cols}: block sizes must be at least 1")
    if shape[0] % rows or shape[1] % cols:
        raise ParameterError(f"block {rows},{cols} does not divide the {_size_text(shape)} "
                             "matrix")
    return rows, cols


def _check_area(count, what):
    """Refuse to allocate ``count`` elements that do not follow the nonzeros beyond MAX_AREA."""
    if count > MAX_AREA:
        raise ParameterError(f"{what} would take {count:,} elements; conversions refuse more "
                             f"than MAX_AREA = {MAX_AREA:,} that do not follow the nonzeros")


# --- decoding: any format to entries --------------------------------------------------

def _decode(obj, source, shape):
    """The nonzeros of ``obj`` (in format ``source``) as row-major `_Entries`."""
    if source == "dense":
        coords = np.nonzero(np.asarray(obj))  # row-major
        return _Entries(coords, np.asarray(obj)[coords], shape)
    if source == "csr":
        indptr, indices, data = _compressed(obj)
        return _Entries((_expand(indptr), indices), data, shape)
    if source == "csc":
        indptr, indices, data = _compressed(obj)
        if shape[0] > 2 * len(data) + 1024:  # row pointers would outgrow the nonzeros: sort
            return _canonical((indices, _expand(indptr)), data, shape)
        ptr, cols, values = _regroup(_expand(indptr), indices, data, shape[0])
        return _Entries((_expand(ptr), cols), values, shape)
    if source == "bsr":
        return _bsr_entries(obj, shape)
    if source == "coo":
        if isinstance(obj, Tensor):
            coords = np.asarray(obj.coords)
            if coords.ndim != 2 or coords.shape[1] != len(shape) or coords.dtype.kind not in "iu":
                raise ParameterError(f"Tensor coords must be [nnz, {len(shape)}] integers, got "
                                     f"{coords.shape} {coords.dtype}")
            return _canonical(tuple(coords.T), np.asarray(obj.values), shape)
        return _canonical((obj.row, obj.col), obj.data, shape)
    if source == "rlc":
        position = np.cumsum(obj.runs, dtype=np.int64) + np.arange(len(obj.runs))
        held = obj.values != 0  # every zero is a filler
        return _Entries(np.unravel_index(position[held], shape), obj.values[held], shape)
    if source == "zvc":
        held = np.flatnonzero(obj.mask)  # bytes with a nonzero
        byte, bit = np.nonzero(np.unpackbits(obj.mask[held, None], axis=1, bitorder="little"))
        return _Entries(np.unravel_index(held[byte] * 8 + bit, shape), obj.values, shape)
    node, coords = np.arange(len(obj.values)), [obj.fids[-1]]  # csf: leaves up to the root
    for level in range(len(shape) - 2, -1, -1):
        node = _expand(obj.fptr[level])[node]
        coords.insert(0, obj.fids[level][node])
    return _Entries(tuple(coords), obj.values, shape)


def _compressed(matrix):
    """(indptr, indices, data) of a CSR or CSC array, repeats added and zeros dropped.

    The input is copied before scipy sums its repeats or drops its zeros.
    """
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    nnz = int(matrix.indptr[-1])
    if np.count_nonzero(matrix.data[:nnz]) < nnz:
        matrix = matrix.copy()
        matrix.eliminate_zeros()
        nnz = int(matrix.indptr[-1])
    return matrix.indptr, matrix.indices[:nnz], matrix.data[:nnz]


def _bsr_entries(matrix, shape):
    """The nonzeros of a BSR array; its fill zeros are dropped."""
    rows, cols = matrix.blocksize
    nblocks = int(matrix.indptr[-1])
    data = matrix.data[:nblocks]
    block, row, col = np.nonzero(data)
    block_row = _expand(matrix.indptr)[block]
    coords = (block_row * rows + row, matrix.indices[block].astype(np.int64) * cols + col)
    return _canonical(coords, data[block, row, col], shape)


def _canonical(coords, values, shape):
    """`_Entries` of coordinates in any order: sorted row-major, repeats added, zeros dropped."""
    for mode, (coord, size) in enumerate(zip(coords, shape, strict=True)):
        bad = np.flatnonzero((coord < 0) | (coord >= size))
        if len(bad):
            where = ", ".join(str(c[bad[0]]) for c in coords)
            raise ParameterError(f"coordinate ({where}) of entry {bad[0]} is outside the "
                                 f"{_size_text(shape)} shape (mode {mode})")
    if not row_major(*coords):
        fits = math.prod(shape) <= INT64_MAX
        order = (np.argsort(np.ravel_multi_index(coords, shape)) if fits
                 else np.lexsort(coords[::-1]))
        coords = tuple(c[order] for c in coords)
        values = values[order]
        new = np.logical_or.reduce([first_of_runs(c) for c in coords])
        if not new.all():
            starts = np.flatnonzero(new)
            coords = tuple(c[starts] for c in coords)
            values = np.add.reduceat(values, starts)
    held = values != 0
    if not held.all():
        coords, values = tuple(c[held] for c in coords), values[held]
    return _Entries(coords, values, shape)


def _expand(indptr):
    """The group of each entry of a pointer array: CSR's row of each nonzero."""
    return np.repeat(np.arange(len(indptr) - 1, dtype=indptr.dtype), np.diff(indptr))


def _regroup(major, minor, values, nminor):
    """Entries in (major, minor) order regrouped in (minor, major) order: CSR to CSC.

    MINT Fig. 8c as a counting sort: count each minor index, prefix-sum the
    counts into pointers, and place each entry at the next free slot of its
    group, in major order. Returns the pointers, and the major index and
    value of the entries in their new order.
    """
    ptr = np.zeros(nminor + 1, dtype=index_dtype(len(minor)))
    np.cumsum(np.bincount(minor, minlength=nminor), out=ptr[1:])
    order = _stable_order(minor, nminor)
    return ptr, major[order], values[order]


def _stable_order(keys, bound):
    """Stable sort order of integer keys in 0..bound-1: an LSD radix sort.

    Each pass is numpy's stable sort of a 16-bit digit (itself a radix
    sort); keys below 2**16 take one pass, below 2**32 two.
    """
    if bound <= 1 << 16:
        return np.argsort(keys.astype(np.uint8 if bound <= 1 << 8 else np.uint16), kind="stable")
    order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    for shift in range(16, (bound - 1).bit_length(), 16):
        digit = ((keys[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


# --- encoding: entries to each format -------------------------------------------------

def _to_dense(entries):
    _check_area(math.prod(entries.shape), f"a dense {_size_text(entries.shape)} array")
    dense = np.zeros(entries.shape, dtype=entries.values.dtype)
    dense[entries.coords] = entries.values
    return dense


def _to_coo(entries):
    shape, values = entries.shape, entries.values.copy()
    if len(shape) != 2:
        return Tensor(np.stack(entries.coords, axis=1).astype(np.int64), values, shape)
    index = index_dtype(*shape)
    matrix = sp.coo_array((values, tuple(c.astype(index) for c in entries.coords)), shape=shape)
    matrix.has_canonical_format = True
    return matrix


def _to_csr(entries):
    rows, cols = entries.coords
    _check_area(entries.shape[0] + 1, "CSR's row pointers")
    indptr = np.zeros(entries.shape[0] + 1, dtype=index_dtype(len(cols)))
    np.cumsum(np.bincount(rows, minlength=entries.shape[0]), out=indptr[1:])
    return _compressed_array(sp.csr_array, entries.values.copy(), cols.copy(), indptr,
                             entries.shape)


def _to_csc(entries):
    rows, cols = entries.coords
    _check_area(entries.shape[1] + 1, "CSC's column pointers")
    ptr, rows, values = _regroup(rows, cols, entries.values, entries.shape[1])
    return _compressed_array(sp.csc_array, values, rows, ptr, entries.shape)


def _compressed_array(kind, data, indices, indptr, shape):
    """A canonical CSR or CSC array of (fresh) arrays, its index arrays of one type."""
    index = index_dtype(*shape, len(data))
    matrix = kind((data, indices.astype(index, copy=False), indptr.astype(index, copy=False)),
                  shape=shape)
    matrix.has_canonical_format = True
    return matrix


def _to_bsr(entries, block):
    """MINT Fig. 8e: group the nonzeros by block, zero-fill each block, pointers per block row."""
    (rows, cols), values, shape = entries
    grid = shape[0] // block[0], shape[1] // block[1]
    _check_area(grid[0] + 1, "BSR's block-row pointers")
    block_row, block_col = rows // block[0], cols // block[1]
    if math.prod(grid) <= INT64_MAX:
        order = np.argsort(np.ravel_multi_index((block_row, block_col), grid))
    else:
        order = np.lexsort((block_col, block_row))
    block_row, block_col = block_row[order], block_col[order]
    new = first_of_runs(block_row) | first_of_runs(block_col)
    nblocks = int(np.count_nonzero(new))
    _check_area(nblocks * block[0] * block[1] - len(values),
                f"zero-filling {nblocks:,} blocks of {block[0]} x {block[1]}")
    data = np.zeros((nblocks, *block), dtype=values.dtype)
    data[np.cumsum(new) - 1, rows[order] % block[0], cols[order] % block[1]] = values[order]
    index = index_dtype(*grid, nblocks)
    indptr = np.zeros(grid[0] + 1, dtype=index)
    np.cumsum(np.bincount(block_row[new], minlength=grid[0]), out=indptr[1:])
    matrix = sp.bsr_array((data, block_col[new].astype(index), indptr), shape=shape,
                          blocksize=block)
    matrix.has_sorted_indices = True
    return matrix


def _linear(entries, what):
    """Row-major position of each nonzero of a matrix."""
    if math.prod(entries.shape) > INT64_MAX:
        raise ParameterError(f"{what} of a {_size_text(entries.shape)} matrix: its positions "
                             "do not fit in 64 bits")
    return np.ravel_multi_index(entries.coords, entries.shape)


def _to_rlc(entries, run_bits):
    """Runs of zeros before each nonzero, with a filler per 2**run_bits zeros of a gap."""
    position = _linear(entries, "RLC")
    gap = np.diff(position, prepend=-1) - 1  # zeros before each nonzero
    fillers = gap >> run_bits
    total = int(fillers.sum())
    _check_area(total, f"RLC with {run_bits}-bit runs: {total:,} fillers")
    place = np.arange(len(gap)) + np.cumsum(fillers)  # pair of each nonzero
    runs = np.full(len(gap) + total, (1 << run_bits) - 1, dtype=_run_dtype(run_bits))
    runs[place] = gap & ((1 << run_bits) - 1)
    values = np.zeros(len(runs), dtype=entries.values.dtype)
    values[place] = entries.values
    return RLC(runs, values, entries.shape, run_bits)


def _to_zvc(entries):
    size = math.prod(entries.shape)
    _check_area(size, f"a ZVC mask of a {_size_text(entries.shape)} matrix")
    position = _linear(entries, "ZVC")
    mask = np.zeros(-(-size // 8), dtype=np.uint8)
    if len(position):
        byte = position >> 3
        starts = np.flatnonzero(first_of_runs(byte))
        bits = np.left_shift(1, position & 7).astype(np.uint8)
        mask[byte[starts]] = np.bitwise_or.reduceat(bits, starts)
    return ZVC(mask, entries.values.copy(), entries.shape)


def _to_csf(entries):
    """MINT Fig. 8f after its COO step: a node wherever a coordinate or one above it changes."""
    new = np.zeros(len(entries.values), dtype=bool)
    firsts = []
    for coord in entries.coords:
        new |= first_of_runs(coord)
        firsts.append(new.copy())
    starts = [np.flatnonzero(first) for first in firsts]
    fids = tuple(coord[start] for coord, start in zip(entries.coords, starts, strict=True))
    fptr = tuple(np.append(np.cumsum(firsts[level + 1])[starts[level]] - 1,
                           len(starts[level + 1])) for level in range(len(starts) - 1))
    return CSF(fids, fptr, entries.values.copy(), entries.shape)


_ENCODERS = {"dense": _to_dense, "coo": _to_coo, "csr": _to_csr, "csc": _to_csc,
             "zvc": _to_zvc, "csf": _to_csf}


# --- files ----------------------------------------------------------------------------

_OWN = ("rlc", "zvc", "csf")  # formats with an .npz layout of this module


def same(a, b):
    """Whether ``a`` and ``b`` are the same object of one format: shape, dtypes, every array."""
    left, right = _defining(a), _defining(b)
    return type(a) is type(b) and len(left) == len(right) and all(
        x.dtype == y.dtype and np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(left, right, strict=True))


def _defining(obj):
    """Everything that defines ``obj``, for exact comparison."""
    if isinstance(obj, np.ndarray):
        return [obj.dtype.str, obj]
    if isinstance(obj, Tensor):
        return [obj.shape, obj.coords, obj.values]
    if isinstance(obj, RLC):
        return [obj.shape, obj.run_bits, obj.runs, obj.values]
    if isinstance(obj, ZVC):
        return [obj.shape, obj.mask, obj.values]
    if isinstance(obj, CSF):
        return [obj.shape, *obj.fids, *obj.fptr, obj.values]
    if obj.format == "coo":
        return [obj.shape, obj.row, obj.col, obj.data]
    extra = [obj.blocksize] if obj.format == "bsr" else []
    return [obj.shape, *extra, obj.indptr, obj.indices, obj.data]


def suffix(fmt, ndim):
    """File suffix a result in format ``fmt`` with ``ndim`` modes is saved with."""
    return ".npy" if fmt == "dense" else ".tns" if fmt == "coo" and ndim != 2 else ".npz"


def save(path, obj):
    """Write ``obj`` to ``path``, whose suffix must be ``suffix(format_of(obj), obj.ndim)``."""
    fmt = format_of(obj)
    if isinstance(obj, Tensor) and obj.ndim == 2:
        obj = convert(obj, "coo")  # a matrix: a scipy COO file
    want = suffix(fmt, len(obj.shape))
    if not str(path).endswith(want):
        raise ParameterError(f"{path}: {fmt.upper()} is saved as a {want} file")
    if fmt in _OWN:
        np.savez_compressed(path, format=np.array(fmt.encode()),
                            shape=np.array(obj.shape, dtype=np.int64), **_arrays(obj))
    elif fmt == "dense":
        np.save(path, obj, allow_pickle=False)
    elif isinstance(obj, Tensor):
        _write_tns(path, obj)
    else:
        sp.save_npz(path, obj)


def _arrays(obj):
    """The arrays of an RLC, ZVC or CSF file besides ``format`` and ``shape``."""
    if isinstance(obj, RLC):
        return {"run_bits": np.array(obj.run_bits, dtype=np.int64), "runs": obj.runs,
                "values": obj.values}
    if isinstance(obj, ZVC):
        return {"mask": obj.mask, "values": obj.values}
    return {"values": obj.values, **{f"fids{level}": f for level, f in enumerate(obj.fids)},
            **{f"fptr{level}": p for level, p in enumerate(obj.fptr)}}


def _write_tns(path, tensor):
    """FROSTT text: a ``# dims:`` line, then 1-based coordinates and the value per line."""
    values = np.asarray(tensor.values)
    if values.dtype.kind == "c":
        raise ParameterError(f"{path}: a .tns file holds real values, not complex")
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    with open(path, "w") as file:
        file.write(f"# dims: {' '.join(str(n) for n in tensor.shape)}\n")
        for start in range(0, len(values), _TNS_CHUNK):
            part = slice(start, start + _TNS_CHUNK)
            line = (tensor.coords[part, 0] + 1).astype(str)
            columns = [tensor.coords[part, mode] + 1 for mode in range(1, tensor.ndim)]
            for column in [*columns, values[part]]:
                line = np.char.add(np.char.add(line, " "), column.astype(str))
            file.write("\n".join(line.tolist()) + "\n")


def load(path):
    """The matrix or tensor in ``path``, in the format it is stored in.

    ``.npz``: our RLC, ZVC and CSF layouts (checked in full), or
    ``scipy.sparse.save_npz`` COO, CSR, CSC or BSR (its block size kept; DIA
    reads as COO); ``.npy``: a dense matrix or tensor; ``.tns``: a COO Tensor;
    ``.mtx``, ``.smtx``: a COO matrix. Raises FormatError naming the file and
    the problem.
    """
    name = Path(path).name.lower()
    if name.endswith((".tns", ".tns.gz")):
        return read_tensor(path)
    if name.endswith(".npy"):
        return read_npy(path)
    if not name.endswith(".npz"):
        return read_matrix(path)
    with open_npz(path) as npz:
        fmt = _format_name(path, npz)
        if fmt in _OWN:
            return _load_own(path, npz, fmt)
        block = npz_header(path, npz, "data")[0][1:] if fmt == "bsr" else None
    matrix = read_matrix(path)  # scipy's layouts, checked there
    return convert(matrix, fmt, block=block) if fmt in ("csr", "csc", "bsr") else matrix


def _format_name(path, npz):
    """The ``format`` entry of an .npz archive as a str (None where there is none)."""
    if "format" not in npz.files:
        return None
    fmt = _member(path, npz, "format")
    if fmt.ndim != 0 or fmt.dtype.kind not in "SU":
        raise FormatError(path, f"'format' must be a string, got {fmt.ndim}-D {fmt.dtype}")
    return fmt.item().decode("ascii", "replace") if fmt.dtype.kind == "S" else fmt.item()


def _load_own(path, npz, fmt):
    """Read and check an RLC, ZVC or CSF archive."""
    shape = _member(path, npz, "shape")
    if shape.ndim != 1 or shape.dtype.kind not in "iu":
        raise FormatError(path, f"'shape' must be a 1-D integer array, got {shape.ndim}-D "
                          f"{shape.dtype}")
    names = {"rlc": ["run_bits", "runs", "values"], "zvc": ["mask", "values"],
             "csf": ["values", *(f"fids{level}" for level in range(len(shape))),
                     *(f"fptr{level}" for level in range(len(shape) - 1))]}[fmt]
    extra = sorted(set(npz.files) - {"format", "shape", *names})
    if extra:
        raise FormatError(path, f"unexpected array '{extra[0]}' in a {fmt.upper()} file")
    arrays = {name: _member(path, npz, name) for name in names}
    values = arrays["values"]
    if values.dtype.kind in "fc" and values.ndim == 1 and not np.isfinite(values).all():
        k = np.argmin(np.isfinite(values))
        raise FormatError(path, f"value {k} ({values[k]}) is not finite")
    try:
        if fmt == "rlc":
            run_bits = arrays["run_bits"]
            if run_bits.ndim != 0 or run_bits.dtype.kind not in "iu":
                raise ParameterError(f"'run_bits' must be one integer, got {run_bits!r}")
            return RLC(arrays["runs"], values, shape, run_bits.item())
        if fmt == "zvc":
            return ZVC(arrays["mask"], values, shape)
        return CSF(tuple(arrays[f"fids{level}"] for level in range(len(shape))),
                   tuple(arrays[f"fptr{level}"] for level in range(len(shape) - 1)),
                   values, shape)
    except ParameterError as exc:
        raise FormatError(path, str(exc)) from None


def _member(path, npz, name):
    """Array ``name`` of an .npz archive, checked by `_header` first."""
    npz_header(path, npz, name)
    try:
        return npz[name]
    except Exception as exc:  # a damaged member
        raise FormatError(path, f"array '{name}' cannot be read: {exc}") from exc
