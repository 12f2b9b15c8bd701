"""CISS, Tensaurus's compressed interleaved sparse slice format (Section 4, Fig. 3d).

`encode` lays a sparse matrix or 3-D tensor out as the stream of entries P
PEs read together, `decode` reads it back; `save` and `load` keep it in an
``.npz``. The entry's fields are :class:`~sparseforge.sw.wire.CissWire`
(``(dw + 2 iw) P`` bits; a lane per PE: ``nnz``, ``ij``, ``k``), defined once
for this encoder, the RTL and its testbench.

The schedule (Section 4). Slices are the output mode's (``mode``, i) slices
that hold nonzeros, handed out in index order: each goes to the PE that
finishes its previous slice first, i.e. the least-loaded one (ties to the
lower PE), as in Fig. 3d where slice 2 goes to PE1 because slice 1 ended
first. A PE's lane then carries the slice's header (``nnz`` = 0, ``ij`` = i)
and, one an entry, its nonzeros (``nnz`` = value, ``ij`` = j, ``k`` = k) in
(j, k) order, so each fiber ``A(i, j, :)`` arrives contiguously, as the PE's
TSR accumulation needs. For a matrix a nonzero is (value, j). Lanes of a PE
with no slice left are idle (the wire's sentinel: ``nnz`` = 0, ``ij`` all
ones), so the RTL never needs the stream's length to know a PE is done.

Decisions where the paper is silent:

- ``nnz`` = 0 marks a header, so a stored zero cannot be a nonzero: zeros
  are dropped (they add nothing to any kernel), and a slice of zeros only is
  empty and never handed out.
- Values: all integral values go as ``dw``-bit two's complement (``kind``
  "int"; each must fit), otherwise as IEEE floats of ``dw`` = 16, 32 or 64
  bits (``kind`` "float"), rounded to nearest; a value that rounds to zero
  or overflows is refused, so a nonzero never looks like a header.
- ``iw`` must hold every j and k, and every slice index below the idle
  sentinel (at most ``2**iw - 2``).
- Repeated coordinates are refused (the decoder could not tell them apart
  from a slice handed out twice).

Speed: everything is vectorized over nonzeros; the only Python loop hands
out slices (a heap of the P PEs' finishing entries), a few tenths of a
microsecond per slice. Memory follows the nonzeros: a PE count that would
make the stream mostly idle lanes is refused before it is allocated.

The ``.npz`` (`save`, `load`): ``format`` (b"ciss"), ``words`` (uint64
[entries, ceil(entry bits / 64)]: entry e's bit b is bit b % 64 of
``words[e, b // 64]``; PE p's lane starts at bit p (dw + 2 iw)), ``pes``,
``dw``, ``iw``, ``mode`` (0-d int64), ``shape`` (int64 [order]), ``kind``
(b"int" or b"float"), and the schedule, one element per handed-out slice in
order: ``slices`` (its index i), ``pe``, ``start`` (the entry holding its
header), ``count`` (its nonzeros), all int64.
"""

import heapq
import math
from dataclasses import dataclass

import numpy as np

from ..core.errors import FormatError, ParameterError
from .formats import Tensor, open_npz
from .occupancy import first_of_runs
from .tensor_kernels import coordinates, lex_order
from .wire import CissWire, pack_lane_words, signed_words, unpack_lane_words

MAX_IDLE = 1 << 24
"""Idle lanes a stream may always hold; beyond this, no more than its other lanes."""

FLOATS = {16: np.float16, 32: np.float32, 64: np.float64}
"""The IEEE float of each ``dw`` that can carry non-integral values."""

_SCHEDULE = ("slices", "pe", "start", "count")


@dataclass(frozen=True, eq=False)
class Ciss:
    """A tensor encoded as CISS, and the schedule that placed it (see the module).

    ``wire`` the entry layout, ``shape`` the tensor's (in its own mode order),
    ``mode`` the slice mode i, ``kind`` "int" or "float", ``words`` the packed
    entries, ``slices``, ``pe``, ``start`` and ``count`` the schedule, ``rounded``
    how many values rounding to a ``dw``-bit float changed.
    """

    wire: CissWire
    shape: tuple
    mode: int
    kind: str
    words: np.ndarray
    slices: np.ndarray
    pe: np.ndarray
    start: np.ndarray
    count: np.ndarray
    rounded: int = 0

    @property
    def entries(self):
        """Entries in the stream."""
        return len(self.words)

    @property
    def nnz(self):
        """Nonzeros in the stream."""
        return int(self.count.sum())

    @property
    def slots(self):
        """Lanes in the stream: entries x PEs."""
        return self.entries * self.wire.pes

    @property
    def idle(self):
        """Idle lanes (Fig. 3d's "x")."""
        return self.slots - self.nnz - len(self.slices)

    @property
    def utilization(self):
        """Fraction of the lanes that carry a nonzero (headers and idle lanes do not)."""
        return self.nnz / self.slots if self.slots else 0.0

    def pe_loads(self):
        """Nonzeros each PE receives (int64 [pes])."""
        return np.bincount(self.pe, weights=self.count, minlength=self.wire.pes).astype(np.int64)


def encode(tensor, pes, dw=32, iw=32, mode=0):
    """CISS of a sparse matrix or 3-D tensor (`~.formats.Tensor` or scipy sparse) for
    ``pes`` PEs, slicing along ``mode``."""
    coords, values, shape = coordinates(tensor)
    wire = CissWire(pes, dw, iw, len(shape))
    if isinstance(mode, bool) or mode not in range(len(shape)):
        raise ParameterError(f"mode={mode!r}: the tensor has modes 0..{len(shape) - 1}")
    modes = (mode, *(m for m in range(len(shape)) if m != mode))
    held = values != 0
    if not held.all():
        coords, values = coords[held], values[held]
    coords, values = _canonical(coords[:, modes], values, modes, shape)
    _check_indices(coords, wire, modes)
    bits, kind, rounded = value_bits(values, dw)
    starts = np.flatnonzero(first_of_runs(coords[:, 0]))
    slices = coords[starts, 0]
    count = np.diff(np.append(starts, len(values)))
    pe, start, entries = schedule(count + 1, pes)
    idle = entries * pes - len(values) - len(slices)
    if idle > max(MAX_IDLE, len(values) + len(slices)):
        raise ParameterError(f"{pes} PEs: the CISS stream would be {entries} entries of "
                             f"{pes} lanes, {idle} of them idle, more than its "
                             f"{len(values) + len(slices)} nonzeros and headers: too many "
                             f"PEs for {len(slices)} slices")
    lanes = {f.name: np.zeros((entries, pes), dtype=np.uint64) for f in wire.lane}
    lanes["ij"][:] = wire.idle
    lanes["ij"][start, pe] = slices
    slot = np.repeat((start + 1 - starts) * pes + pe, count) + np.arange(len(values)) * pes
    lanes["nnz"].reshape(-1)[slot] = bits
    for column, field in enumerate(wire.lane[1:], 1):  # ij = j, then k
        lanes[field.name].reshape(-1)[slot] = coords[:, column]
    words = pack_lane_words(wire.lane, pes, lanes)
    return Ciss(wire, tuple(shape), mode, kind, words, slices, pe, start, count, rounded)


def schedule(lengths, pes):
    """``(pe, start, entries)``: the PE and first entry of each slice of ``lengths``
    entries handed out in order to the PE that frees first (ties to the lower PE), and
    the stream's length."""
    heap = list(range(pes))  # free entry * pes + PE: the heap's head is the next PE
    keys = []
    take, replace = keys.append, heapq.heapreplace
    for step in (np.asarray(lengths, dtype=np.int64) * pes).tolist():
        key = heap[0]
        take(key)
        replace(heap, key + step)
    start, pe = np.divmod(np.array(keys, dtype=np.int64), pes)
    return pe, start, max(heap) // pes


def _canonical(coords, values, modes, shape):
    """Entries sorted by (i, j, k) (``modes`` of ``shape``); a repeated coordinate is
    refused."""
    order = lex_order(coords, [shape[m] for m in modes])
    if order is not None:
        coords, values = np.take(coords, order, axis=0), values[order]
    if len(values) > 1:
        repeat = ~np.logical_or.reduce([first_of_runs(c) for c in coords.T])
        if repeat.any():
            where = coords[np.argmax(repeat)][np.argsort(modes)]
            raise ParameterError(f"coordinate {tuple(int(c) for c in where)} appears more "
                                 "than once")
    return coords, values


def _check_indices(coords, wire, modes):
    """Every index fits ``iw`` bits; slice indices stay below the idle sentinel."""
    if not len(coords):
        return
    top = coords.max(axis=0)
    if top[0] >= wire.idle:
        raise ParameterError(f"index width iw={wire.iw} is too small: slice index {top[0]} "
                             f"(mode {modes[0]}) needs {int(top[0] + 1).bit_length()} bits, "
                             f"as {wire.idle} marks idle lanes")
    for level in range(1, len(top)):
        if top[level] > wire.idle:
            raise ParameterError(f"index width iw={wire.iw} is too small: mode "
                                 f"{modes[level]} index {top[level]} needs "
                                 f"{int(top[level]).bit_length()} bits")


def value_bits(values, dw):
    """``(bits uint64, kind, rounded)``: nonzero values as ``dw``-bit words (see the module)."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        values = values.astype(np.int64)
    if values.dtype.kind not in "iuf":
        raise ParameterError(f"values of type {values.dtype}: CISS carries integer or real "
                             "values")
    if values.dtype.kind in "iu" or np.array_equal(values, np.round(values)):
        return signed_words(values, dw, "the values", "dw"), "int", 0
    if dw not in FLOATS:
        raise ParameterError(f"the values are not all integers, so they go as IEEE floats: "
                             f"dw must be 16, 32 or 64, not {dw}")
    with np.errstate(over="ignore"):  # an overflow is refused just below
        narrow = values.astype(FLOATS[dw])
    bad = np.flatnonzero(~np.isfinite(narrow) | (narrow == 0))
    if len(bad):
        raise ParameterError(f"value {values[bad[0]]} is not a finite nonzero {dw}-bit float")
    rounded = int(np.count_nonzero(narrow != values))
    bits = narrow.view(np.dtype(f"u{dw // 8}")).astype(np.uint64)
    return bits, "float", rounded


def decode(ciss):
    """The `~.formats.Tensor` a CISS stream holds, coordinates in order (int values as
    int64, float values as float64)."""
    wire, pes = ciss.wire, ciss.wire.pes
    lanes = {n: a.T.reshape(-1) for n, a in unpack_lane_words(wire.lane, pes,
                                                              ciss.words).items()}
    entries = ciss.entries
    marker = lanes["nnz"] == 0  # a header or an idle lane
    position = np.arange(entries * pes)
    last = np.maximum.accumulate(np.where(marker, position, -1))
    nonzero = np.flatnonzero(~marker)
    owner = last[nonzero]
    bad = (owner < nonzero - nonzero % max(entries, 1)) | (lanes["ij"][owner] == wire.idle)
    if bad.any():
        where = nonzero[np.argmax(bad)]
        raise ParameterError(f"CISS entry {where % entries}, PE {where // entries}: a nonzero "
                             "outside any slice (before its PE's first header, or after an "
                             "idle lane)")
    columns = [lanes["ij"][owner], *(lanes[f.name][nonzero] for f in wire.lane[1:])]
    modes = (ciss.mode, *(m for m in range(wire.order) if m != ciss.mode))
    coords = np.empty((len(nonzero), wire.order), dtype=np.int64)
    coords[:, modes] = np.stack(columns, axis=1).astype(np.int64)
    outside = np.argwhere((coords < 0) | (coords >= np.array(ciss.shape, dtype=np.int64)))
    if len(outside):
        n, m = outside[0]
        raise ParameterError(f"CISS stream: mode {m} index {coords[n, m]} is outside the "
                             f"shape {tuple(ciss.shape)}")
    values = bits_values(lanes["nnz"][nonzero], ciss.kind, wire.dw)
    coords, values = _canonical(coords, values, tuple(range(wire.order)), ciss.shape)
    return Tensor(coords, values, tuple(ciss.shape))


def bits_values(bits, kind, dw):
    """Values from their ``dw``-bit words: the inverse of `value_bits`."""
    if kind == "float":
        return bits.astype(np.dtype(f"u{dw // 8}")).view(FLOATS[dw]).astype(np.float64)
    shift = np.int64(64 - dw)  # sign-extend the dw-bit field
    return np.ascontiguousarray(bits, dtype=np.uint64).view(np.int64) << shift >> shift


def save(path, ciss):
    """Write ``ciss`` as the module's ``.npz`` layout."""
    w = ciss.wire
    np.savez(path, format=np.bytes_(b"ciss"), words=ciss.words, pes=np.int64(w.pes),
             dw=np.int64(w.dw), iw=np.int64(w.iw), mode=np.int64(ciss.mode),
             shape=np.array(ciss.shape, dtype=np.int64), kind=np.bytes_(ciss.kind.encode()),
             **{name: getattr(ciss, name) for name in _SCHEDULE})


def load(path):
    """The `Ciss` in a `save` archive, its arrays checked; FormatError names what is wrong."""
    with open_npz(path) as npz:
        names = ("format", "words", "pes", "dw", "iw", "mode", "shape", "kind", *_SCHEDULE)
        missing = [n for n in names if n not in npz.files]
        if missing:
            raise FormatError(path, f"not a CISS archive: no {', '.join(missing)}")
        arrays = {n: npz[n] for n in names}
    if arrays["format"].tobytes().rstrip(b"\0") != b"ciss":
        raise FormatError(path, f"format is {arrays['format']!r}, not b'ciss'")
    kind = arrays["kind"].tobytes().rstrip(b"\0").decode(errors="replace")
    try:
        wire = CissWire(*(int(arrays[n]) for n in ("pes", "dw", "iw")),
                        len(arrays["shape"]))
    except (TypeError, ValueError) as exc:
        raise FormatError(path, str(exc)) from None
    schedule = [arrays[n] for n in _SCHEDULE]
    words = arrays["words"]
    if (words.dtype != np.uint64 or words.ndim != 2
            or words.shape[1] != math.ceil(wire.entry_width / 64) or kind not in ("int", "float")
            or any(a.dtype != np.int64 or a.shape != schedule[0].shape for a in schedule)
            or int(arrays["mode"]) not in range(wire.order)):
        raise FormatError(path, f"arrays do not form a CISS stream of {wire.pes} PEs, "
                          f"dw={wire.dw}, iw={wire.iw}")
    return Ciss(wire, tuple(int(n) for n in arrays["shape"]), int(arrays["mode"]), kind,
                words, *schedule)
