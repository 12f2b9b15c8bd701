"""Wire formats: the bit fields every stream between host and hardware carries.

Defined once, as data, with numpy only (no scipy, no Amaranth), so the
hardware's payload layouts (:mod:`sparseforge.hw.interfaces` turns a tuple of
:class:`Field` into an ``amaranth.lib.data.StructLayout``), the host encoders
and the testbenches' packing all derive from the same lists. Fields are packed
LSB first in the order listed, the order ``StructLayout`` uses. The Tensaurus
kernel, MINT_m's mode and the HYTE accessor's status and mode are ``enum.IntEnum``
s: Amaranth takes one as a port's shape, and the Verilog header names its values.
"""

import enum
from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError

ROWS = 4
"""Rows per Eureka block: the MAC rows of the 4x4 sub-array (the paper's p)."""

COMPACTIONS = (1, 2, 4)
"""The compaction factors P the 16:1 operand multiplexer supports."""

ROTATION_BITS = 2
"""Bits of the per-block rotation (4 MAC rows)."""

PER_SLOT = 2
"""At most this many blocks per systolic row per slot of the systolic schedule."""


@dataclass(frozen=True)
class Field:
    """One bit field of a record."""

    name: str
    width: int


def width(fields):
    """Total bits of a record of ``fields``."""
    return sum(f.width for f in fields)


def pack(fields, values):
    """Pack arrays of field values (non-negative, each within its width) into int words.

    ``values`` maps each field's name to an array (or a scalar); the result is
    an object array of Python ints (records may exceed 64 bits).
    """
    word, shift = 0, 0
    for f in fields:
        v = np.asarray(values[f.name]).astype(np.int64)
        if v.size and (v.min() < 0 or v.max() >> f.width):
            raise ParameterError(f"field {f.name} does not fit in {f.width} bits")
        word = word + (v.astype(object) << shift)
        shift += f.width
    return word


def unpack(fields, words):
    """Split int words (an object array, or an int) into ``{name: int64 array}``."""
    words = np.asarray(words, dtype=object)
    out, shift = {}, 0
    for f in fields:
        out[f.name] = np.asarray((words >> shift) & ((1 << f.width) - 1)).astype(np.int64)
        shift += f.width
    return out


# -- Buffet and Tailor ------------------------------------------------------------

def buffet_update(index_width, data_width):
    """A Buffet update: overwrite the element ``index`` places from the head."""
    return (Field("index", index_width), Field("data", data_width))


def tailor_owfill(data_width):
    """A Tailor overwriting fill: the element, and ``last`` on the tile's last index."""
    return (Field("data", data_width), Field("last", 1))


def spmv_entry(index_width, value_width):
    """One entry of A's stream into the SpMV engine: a read of x and what to do with it.

    ``index`` is the tile index of x to read, ``value`` A's value (two's
    complement; 0 for the read that only ends a pass), ``row_end`` marks the
    last entry of a row (emit y) and ``tile_end`` the last entry of a tile
    (free the whole buffer).
    """
    return (Field("index", index_width), Field("value", value_width), Field("row_end", 1),
            Field("tile_end", 1))


# -- Eureka -----------------------------------------------------------------------

def check_compaction(compaction):
    """Return the compaction factor P as an int, or raise :class:`ParameterError`."""
    if isinstance(compaction, bool) or compaction not in COMPACTIONS:
        raise ParameterError(f"compaction factor P={compaction!r}: expected one of "
                             f"{', '.join(map(str, COMPACTIONS))}")
    return int(compaction)


def slot_count_bits():
    """Bits of one systolic row's block count in a slot descriptor (0..PER_SLOT)."""
    return PER_SLOT.bit_length()


@dataclass(frozen=True)
class EurekaWire:
    """The Eureka filter stream's fields for compaction P and ``value_width``-bit operands.

    Header word, LSB first: ``rotation`` (2 bits; MAC row m holds block row
    (m + rotation) % 4) and ``cycles`` (bit_length(4P); 0..4P, the slot words
    that follow). Lane, one per MAC row: ``value`` (two's complement; 0 idles
    the MAC row), ``column`` (log2(4P), the input row the operand mux
    selects), ``displaced`` (1; the value belongs to the MAC row above). A
    slot word is the lanes of MAC rows 0..3 from the low bits up. A *record*
    is one block: the header's fields, then 4P slot words. A *beat*, what
    the sub-array takes each cycle, is a slot word and the :attr:`beat` fields.
    :class:`~sparseforge.sw.eureka_format.EurekaFormat` encodes and decodes it.
    """

    compaction: int = 4
    value_width: int = 16

    def __post_init__(self):
        check_compaction(self.compaction)
        w = self.value_width
        if isinstance(w, bool) or not isinstance(w, int) or not 2 <= w <= 32:
            raise ParameterError(f"value_width={self.value_width!r}: expected an integer "
                                 "in [2, 32]")

    @property
    def header(self):
        """Fields of a block's header word."""
        return (Field("rotation", ROTATION_BITS),
                Field("cycles", (ROWS * self.compaction).bit_length()))

    @property
    def lane(self):
        """Fields of one MAC row's part of a slot word."""
        return (Field("value", self.value_width),
                Field("column", (ROWS * self.compaction).bit_length() - 1),
                Field("displaced", 1))

    lanes = ROWS
    """Lanes per slot word, one per MAC row."""

    @property
    def slots(self):
        """Slot words per record: 4P, the longest block."""
        return ROWS * self.compaction

    @property
    def word_width(self):
        """Bits per stream word."""
        return max(width(self.header), self.slot_width)

    @property
    def slot_width(self):
        """Bits of a slot word's lanes (the word without padding)."""
        return self.lanes * width(self.lane)

    @property
    def beat(self):
        """Fields after a beat's slot word (the sub-array's filter stream, one beat per
        cycle of a block): ``rotation`` (the block's), ``last`` (the block's last beat) and
        ``empty`` (the block holds no value: its one beat has zero lanes)."""
        return (Field("rotation", ROTATION_BITS), Field("last", 1), Field("empty", 1))

    @property
    def record_width(self):
        """Bits of a block record: the header's fields and room for 4P slot words."""
        return width(self.header) + self.slots * self.slot_width


def eureka_block(index_width):
    """Where a sent block of W lies on its block grid: its block ``row`` (the 4 rows of Y
    its tile adds to), block ``col`` (the 4P rows of X its slab holds), and ``end`` on the
    last sent block of its block row (the row's sum is then complete)."""
    return (Field("row", index_width), Field("col", index_width), Field("end", 1))


# -- HYTE: the tensor accessor (Section 6.3) and the tiling controller (6.2, 6.4) --

class HyteStatus(enum.IntEnum):
    """``status`` of an accessor's answer: ``HIT``, the word is held; ``MISS``, it is not
    (bypassed: the parent re-fetches it); ``END``, the offset is past the end of a
    complete segment."""

    HIT = 0
    MISS = 1
    END = 2


class HyteMode(enum.IntEnum):
    """``mode`` of the accessor: ``STREAMING`` (a segment or word that does not fit
    waits for an evict) or ``BUFFERING`` (it and what follows bypass)."""

    STREAMING = 0
    BUFFERING = 1


HYTE_DIMS = ("i", "j", "k")
"""The dimensions of ``C = A B`` (A is ``I x K``, B ``K x J``), in the order a tile
command lists them."""

HYTE_ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")
"""The inter-tile orders, outermost dimension first, by index (``ijk`` is i > j > k)."""


def hyte_read(count_width):
    """A read of the accessor: word ``offset`` of segment ``segment`` (from the head)."""
    return (Field("segment", count_width), Field("offset", count_width))


def hyte_read_data(width):
    """An accessor's answer: ``data`` (0 unless ``status`` is ``HIT``), ``status``
    (:class:`HyteStatus`) and ``last``, a ``HIT`` on its segment's final word (the
    segment stored whole), so a reader of the segment knows its end without reading
    past it."""
    return (Field("data", width), Field("status", max(HyteStatus).bit_length()),
            Field("last", 1))


def hyte_log_width(dim_width):
    """Bits of a tile extent's log (a tile spans at most ``2**dim_width``)."""
    return dim_width.bit_length()


def hyte_config(dim_width, count_width):
    """A tiling job: dimensions ``i, j, k``, the initial tile shape as ``log_ti, log_tj,
    log_tk`` (powers of two), ``order`` (an index of :data:`HYTE_ORDERS`) and
    ``bufsize``, the tuned tensor's buffer in words."""
    return (*(Field(d, dim_width) for d in HYTE_DIMS),
            *(Field(f"log_t{d}", hyte_log_width(dim_width)) for d in HYTE_DIMS),
            Field("order", 3), Field("bufsize", count_width))


def hyte_counts(count_width):
    """The four quadrant counters of a fetched tile of the tuned tensor B (``Tk x Tj``):
    ``cnt<r><c>``, r the half along k, c the half along j."""
    return tuple(Field(f"cnt{r}{c}", count_width) for r in range(2) for c in range(2))


def hyte_quadrants(count_width, coord_width):
    """A tile the accessor counts (Section 6.4): its next ``rows`` segments (the tile's
    extent along k), the first ``split_k`` of them its upper half, and ``split_j``, the
    first coordinate of its right half along j."""
    return (Field("rows", count_width), Field("split_k", count_width),
            Field("split_j", coord_width))


def hyte_fetch(dim_width):
    """A segment to find (Section 6.2): row ``row``'s elements with columns in ``[bj,
    ej)`` (``ej`` one bit wider: a tile may end at ``2**dim_width``)."""
    return (Field("row", dim_width), Field("bj", dim_width), Field("ej", dim_width + 1))


def hyte_segment(pos_width):
    """A segment found: the positions ``[begin, end)`` of its elements in B's arrays."""
    return (Field("begin", pos_width), Field("end", pos_width))


def hyte_kept(dim_width, pos_width):
    """A row's kept position entry, one memory word: its last segment's positions
    ``begin``, ``end`` (low bits: a reader of the positions alone reads them as a
    :func:`hyte_segment`) and column bounds ``bj``, ``ej``."""
    return (*hyte_segment(pos_width), *hyte_fetch(dim_width)[1:])


def hyte_tile(dim_width):
    """One dimension of a tile command (Section 6.2), which lists :data:`HYTE_DIMS` in
    turn: ``begin``, ``t`` (the extent, at most the dimension) and ``change`` (0 same,
    1 advance by the previous T, 2 reset to 0)."""
    return (Field("begin", dim_width), Field("t", dim_width), Field("change", 2))


# -- MINT converters: CSR to CSC (Fig. 8c) and Dense to CSF (Fig. 8f) -------------------

def csr_shape(rows_width, cols_width, nnz_width):
    """A CSR-to-CSC converter's header: the matrix's ``rows``, ``cols`` and nonzeros ``nnz``."""
    return (Field("rows", rows_width), Field("cols", cols_width), Field("nnz", nnz_width))


def csr_entry(col_width, value_width):
    """A CSR nonzero as the converter reads it: its column id and its value's bits."""
    return (Field("col", col_width), Field("value", value_width))


def tensor_entry(index_width, value_width):
    """A 3-D tensor's nonzero as a converter lane reads it from COO: its mode-1 index
    ``col`` (j), its mode-2 index ``k`` and its value's bits (the mode-0 index i is the
    slice's, read apart)."""
    return (Field("col", index_width), Field("k", index_width), Field("value", value_width))


def element_entry(index_width, value_width, order=2):
    """What a converter lane reads of a nonzero: :func:`csr_entry` for a matrix,
    :func:`tensor_entry` for a 3-D tensor."""
    return (csr_entry if order == 2 else tensor_entry)(index_width, value_width)


def csc_entry(row_width, value_width):
    """A CSC nonzero as the converter emits it: its row id and its value's bits."""
    return (Field("row", row_width), Field("value", value_width))


def tensor_shape(dim_width, modes=3):
    """A tensor converter's header: the size of each mode, ``dim0`` (outermost) first."""
    return tuple(Field(f"dim{mode}", dim_width) for mode in range(modes))


def csf_node(id_width, data_width):
    """One lane of a CSF level record: a node's coordinate ``id`` (its fids entry) and
    ``data``, the index of its first child (its fptr entry) or, at the leaves, its value."""
    return (Field("id", id_width), Field("data", data_width))


def csf_level_end(lanes, count_width):
    """The fields after a CSF level record's lanes: ``mask`` (bit ``i`` set where lane ``i``
    holds a node), ``last`` (the tensor's final record) and ``total`` (the level's nodes so
    far, this record's included: on ``last``, the level's size)."""
    return (Field("mask", lanes), Field("last", 1), Field("total", count_width))


def tensor_record(index_width, value_width):
    """A nonzero of a 3-D tensor in COO as a converter takes or emits it: its coordinates
    ``i``, ``j``, ``k`` (modes 0 to 2), its value's bits, and ``last`` on a tensor's final
    record. A tensor's records come in lexicographic order of ``(i, j, k)``, one per
    coordinate. A record whose value is 0 holds no nonzero and makes no node: a tensor with
    no nonzeros is one such record, with ``last``."""
    return (Field("i", index_width), Field("j", index_width), Field("k", index_width),
            Field("value", value_width), Field("last", 1))


# -- MINT converters: RLC to COO (Fig. 8d) and CSR to BSR (Fig. 8e) -----------------------

def rlc_pair(run_bits, value_width):
    """One lane of a vector into RLC-to-COO: an RLC pair, ``run`` (the zeros before it) and
    its value's bits (0 for a filler). A vector is ``lanes`` pairs, pair 0 in the low
    bits, then :func:`rlc_end`; a final vector's lanes after the matrix's last pair hold
    (0, 0): :func:`rlc_vectors`."""
    return (Field("run", run_bits), Field("value", value_width))


def rlc_end():
    """The field after an RLC vector's pairs: ``last``, on a matrix's final vector."""
    return (Field("last", 1),)


def coo_record(index_width, value_width):
    """A nonzero as a converter emits it in COO: ``row``, ``col``, its value's bits, and
    ``last`` on a matrix's final nonzero."""
    return (Field("row", index_width), Field("col", index_width),
            Field("value", value_width), Field("last", 1))


def pointer(width):
    """A row (or block-row) pointer ``ptr``, and ``last`` on a matrix's final pointer."""
    return (Field("ptr", width), Field("last", 1))


def bsr_block(index_width, value_width, block):
    """A BSR block as CSR-to-BSR emits it: its ``block_col`` and its ``R x C`` values'
    bits, ``value{k}`` the element at block row ``k // C`` and column ``k % C`` (0 where
    the block holds no nonzero)."""
    rows, cols = block
    return (Field("block_col", index_width),
            *(Field(f"value{k}", value_width) for k in range(rows * cols)))


# -- MINT converters: Dense to COO, CSR and ZVC, ZVC to Dense (Section V-B) --------------

def dense_flags(rows=True):
    """The fields after a dense vector's ``lanes`` values (each value's bits, lane 0 first).

    A *row-padded* stream (``rows``; into Dense-to-COO and Dense-to-CSR) pads every row
    with zeros to a multiple of ``lanes``, so no vector holds two rows, and sets
    ``row_end`` on each row's final vector. A *flat* stream (Dense-to-ZVC, ZVC-to-Dense)
    runs on across rows, as ZVC's mask does, and pads only its final vector. ``last``
    marks a matrix's final vector (which ends its last row).
    """
    return (Field("row_end", 1), Field("last", 1)) if rows else (Field("last", 1),)


def word_end(lanes, count=True):
    """The fields after a word of ``lanes`` records: ``count``, the records it holds (from
    lane 0; left out where something else says it, as ZVC's mask does for its values), and
    ``last``.

    A matrix's ``n`` records go out as ``n // lanes`` full words, then one word with
    ``last`` holding the other ``n % lanes`` (none when ``lanes`` divides ``n``, and for
    an empty matrix): :func:`record_words`. Lanes past ``count`` hold anything.
    """
    return ((Field("count", lanes.bit_length()),) if count else ()) + (Field("last", 1),)


def coo_entry(index_width, value_width):
    """A COO nonzero in a record word (Dense-to-COO): `coo_record`'s ``row``, ``col`` and
    value bits; the word, not the record, says where the matrix ends."""
    return tuple(f for f in coo_record(index_width, value_width) if f.name != "last")


def zvc_mask(lanes):
    """A ZVC mask word: the mask bits of ``lanes`` consecutive elements (bit ``i`` for the
    word's element ``i``, as ZVC's little-endian mask orders them), and ``last`` on a
    matrix's final word. A ZVC value word is ``lanes`` values and ``last``, framed as
    :func:`word_end` says."""
    return (Field("mask", lanes), Field("last", 1))


def value_bits(values):
    """``(bits, width)``: each value's bits as uint64 and their width (1 for bool, else the
    item size). A float's negative zero is a zero, so its bits become 0; complex values are
    refused (ParameterError)."""
    values = np.asarray(values)
    if values.dtype.kind == "b":
        return values.astype(np.uint64), 1
    if values.dtype.kind not in "iuf":
        raise ParameterError(f"values of type {values.dtype} do not stream: the converters "
                             "take bool, integer or real values")
    if values.dtype.kind == "f":
        values = np.where(values == 0, np.zeros((), values.dtype), values)
    unsigned = np.dtype(f"u{values.dtype.itemsize}")
    return np.ascontiguousarray(values).view(unsigned).astype(np.uint64), 8 * unsigned.itemsize


def signed_words(values, bits, what, name=None):
    """Integral ``values`` as ``bits``-bit two's complement words (uint64): the one check
    of every signed field the host writes. ParameterError names ``what``, the value
    furthest out and, where the width is the setting ``name``, the width that holds it."""
    values = np.asarray(values)
    if values.size:
        low, high = values.min(), values.max()
        for extreme in (low, high):
            if not np.isfinite(extreme):
                raise ParameterError(f"{what}: value {extreme} is not a finite integer")
        low, high = int(low), int(high)
        if low < -(1 << (bits - 1)) or high >= 1 << (bits - 1):
            worst = low if -low > high else high
            need = (worst if worst >= 0 else ~worst).bit_length() + 1
            setting = f" ({name}={bits}; {name}={need} holds it)" if name else ""
            raise ParameterError(f"{what}: value {worst} is past {bits}-bit two's "
                                 f"complement{setting}")
    words = values.astype(np.int64).view(np.uint64)
    return words & np.uint64((1 << bits) - 1) if bits < 64 else words


def value_width(dtype):
    """The bits a value of ``dtype`` streams in (:func:`value_bits`'s width)."""
    return value_bits(np.zeros(0, dtype))[1]


def bits_values(bits, dtype):
    """Values of ``dtype`` from their bits (uint64), the inverse of :func:`value_bits`."""
    dtype = np.dtype(dtype)
    bits = np.asarray(bits, dtype=np.uint64)
    if dtype.kind == "b":
        return bits.astype(bool)
    return bits.astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)


def dense_vectors(bits, lanes, rows=True):
    """The dense vectors of a matrix's element bits ``[rows, cols]``: ``(lanes_bits [n,
    lanes] uint64, {flag: [n]})``, row-padded or flat as :func:`dense_flags` says."""
    bits = np.asarray(bits, dtype=np.uint64)
    if not bits.size:
        raise ParameterError(f"a {bits.shape[0]} x {bits.shape[1]} matrix has no elements "
                             "to stream")
    if rows:
        per_row = -(-bits.shape[1] // lanes)
        padded = np.zeros((bits.shape[0], per_row * lanes), dtype=np.uint64)
        padded[:, :bits.shape[1]] = bits
        vectors = padded.reshape(-1, lanes)
        row_end = np.zeros(len(vectors), dtype=np.uint8)
        row_end[per_row - 1::per_row] = 1
        flags = {"row_end": row_end}
    else:
        flat = bits.reshape(-1)
        vectors = np.zeros((-(-flat.size // lanes), lanes), dtype=np.uint64)
        vectors.reshape(-1)[:flat.size] = flat
        flags = {}
    last = np.zeros(len(vectors), dtype=np.uint8)
    last[-1] = 1
    return vectors, {**flags, "last": last}


def record_words(records, lanes):
    """``(count [w], last [w])``: how ``records`` records go out ``lanes`` a word
    (:func:`word_end`), ``records // lanes + 1`` words."""
    words = records // lanes + 1
    count = np.full(words, lanes, dtype=np.int64)
    count[-1] = records % lanes
    last = np.zeros(words, dtype=np.uint8)
    last[-1] = 1
    return count, last


def pack_lanes(lane_fields, lanes, end_fields, columns):
    """Words of ``lanes`` records of ``lane_fields`` (lane 0 lowest), then ``end_fields``,
    as an object array of ints (records may be wide).

    ``columns`` maps each lane field's name to an ``[n, lanes]`` array and each end
    field's name to an ``[n]`` array, of non-negative integers (uint64 for full 64-bit
    values) that fit their fields.
    """
    parts = [(f, np.asarray(columns[f.name])[:, i]) for i in range(lanes) for f in lane_fields]
    parts += [(f, np.asarray(columns[f.name])) for f in end_fields]
    word, shift = np.zeros(len(parts[0][1]), dtype=object), 0
    for f, column in parts:
        if column.size and (column.min() < 0 or int(column.max()) >> f.width):
            raise ParameterError(f"field {f.name} does not fit in {f.width} bits")
        word = word + (column.astype(np.uint64).astype(object) << shift)
        shift += f.width
    return word


def zvc_mask_words(mask, size, lanes):
    """The mask words (uint64 ``[n]``) of a ZVC mask (uint8 bytes, little-endian bits) over
    ``size`` elements: ``ceil(size / lanes)`` words, the final one padded with 0 bits."""
    bits = np.zeros(-(-size // lanes) * lanes, dtype=np.uint8)
    bits[:size] = np.unpackbits(np.asarray(mask, dtype=np.uint8), bitorder="little")[:size]
    packed = np.packbits(bits.reshape(-1, lanes), axis=1, bitorder="little")
    eight = np.zeros((len(packed), 8), dtype=np.uint8)
    eight[:, :packed.shape[1]] = packed
    return eight.view("<u8").reshape(-1).astype(np.uint64)


def zvc_mask_bytes(words, size, lanes):
    """The ZVC mask (uint8 bytes, little-endian bits) of ``size`` elements from mask words of
    ``lanes`` bits: the inverse of :func:`zvc_mask_words`."""
    eight = np.asarray(words, dtype="<u8").reshape(-1, 1).view(np.uint8)
    bits = np.unpackbits(eight, axis=1, bitorder="little")[:, :lanes].reshape(-1)
    return np.packbits(bits[:size], bitorder="little")


def rlc_vectors(runs, bits, lanes):
    """One matrix's RLC pairs as the columns of vectors of ``lanes`` :func:`rlc_pair`:
    ``{run: [n, lanes], value: [n, lanes], last: [n]}`` (``bits`` from :func:`value_bits`),
    the final vector's unused lanes (0, 0) and ``last`` on it; an empty matrix has none.
    :func:`pack_lanes` makes the words."""
    count = -(-len(runs) // lanes)
    run, value = (np.zeros(count * lanes, dtype=np.uint64) for _ in range(2))
    run[:len(runs)], value[:len(bits)] = runs, bits
    last = np.zeros(count, dtype=np.uint64)
    last[-1:] = 1
    return {"run": run.reshape(count, lanes), "value": value.reshape(count, lanes),
            "last": last}


# -- MINT_m: the merged converter's modes (Section V-A) -----------------------------------

class MintMode(enum.IntEnum):
    """The conversion the merged converter (MINT_m) does, chosen at run time."""

    DENSE_TO_COO = 0
    DENSE_TO_CSR = 1
    DENSE_TO_ZVC = 2
    ZVC_TO_DENSE = 3
    RLC_TO_COO = 4
    DENSE_TO_CSF = 5
    CSR_TO_BSR = 6
    CSR_TO_CSC = 7
    DENSE_TO_RLC = 8
    COO_TO_DENSE = 9
    CSR_TO_DENSE = 10
    COO_TO_CSC = 11
    """One stable counting sort by column: each column's records must come in row order
    (row-major or column-major); other orders are refused before they reach it."""
    BSR_TO_COO = 12
    CSF_TO_COO = 13
    CSR_TO_CISS = 14
    """To Tensaurus's CISS (Section 4), entry for entry as the host encoder lays it out."""


# -- Tensaurus: CISS entries (Section 4, Fig. 3d) ------------------------------------------

CISS_ORDERS = (2, 3)
"""Orders a CISS stream holds: matrices and 3-D tensors."""

CISS_MAX_PES = 1024
"""Most PEs (lanes per CISS entry)."""


@dataclass(frozen=True)
class CissWire:
    """A CISS entry for ``pes`` PEs, ``dw``-bit values and ``iw``-bit indices, of an
    ``order``-mode tensor (2: a matrix).

    An entry is ``pes`` lanes, PE 0's in the low bits. A lane, LSB first, is ``nnz``
    (dw bits), ``ij`` (iw) and, for a 3-D tensor, ``k`` (iw): an entry is
    ``(dw + 2 iw) P`` bits as in the paper; a matrix's lane has no ``k``. A lane is:

    - a nonzero: ``nnz`` its value's bits (two's complement, or an IEEE float of dw
      bits; never all zeros), ``ij`` its mode-1 index j, ``k`` its mode-2 index;
    - a slice header: ``nnz`` = 0, ``ij`` = i, the slice the PE starts, ``k`` = 0;
    - idle (Fig. 3d's "x": the PE has no slice left): ``nnz`` = 0, ``ij`` = :attr:`idle`
      (all ones), ``k`` = 0. A slice index is therefore at most ``idle - 1``.

    A PE's slice ends at its lane's next header or idle lane, or at the stream's end.
    :mod:`sparseforge.sw.ciss` encodes and decodes; :func:`pack_lane_words` packs.
    """

    pes: int
    dw: int = 32
    iw: int = 32
    order: int = 3

    def __post_init__(self):
        for name, low, high in (("pes", 1, CISS_MAX_PES), ("dw", 2, 64), ("iw", 1, 64)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ParameterError(f"{name}={value!r}: expected an integer in [{low}, {high}]")
        if self.order not in CISS_ORDERS:
            raise ParameterError(f"CISS holds matrices and 3-D tensors, not {self.order} modes")

    @property
    def lane(self):
        """Fields of one PE's lane."""
        k = (Field("k", self.iw),) if self.order == 3 else ()
        return (Field("nnz", self.dw), Field("ij", self.iw), *k)

    @property
    def lane_width(self):
        """Bits of a lane (of a nonzero as extended CSR stores it, too)."""
        return width(self.lane)

    @property
    def entry_width(self):
        """Bits of an entry: ``pes`` lanes."""
        return self.pes * self.lane_width

    @property
    def idle(self):
        """``ij`` of an idle lane: all ones."""
        return (1 << self.iw) - 1


def _lane_offsets(lane_fields, lanes):
    """``(field, lane, word, shift)`` of every field of ``lanes`` lanes packed LSB first."""
    offset = 0
    for lane in range(lanes):
        for f in lane_fields:
            if not 1 <= f.width <= 64:
                raise ParameterError(f"field {f.name} of {f.width} bits: word packing takes "
                                     "1 to 64")
            yield f, lane, *divmod(offset, 64)
            offset += f.width


def pack_lane_words(lane_fields, lanes, columns):
    """Records of ``lanes`` lanes of ``lane_fields`` (lane 0 lowest) as uint64 words
    ``[n, ceil(bits / 64)]``, word 0 holding bits 0-63: vectorized, for wide records.

    ``columns`` maps each field's name to an ``[n, lanes]`` array of non-negative
    integers (uint64 for 64-bit values) that fit the field.
    """
    n = len(columns[lane_fields[0].name])
    words = np.zeros((n, -(-lanes * width(lane_fields) // 64)), dtype=np.uint64)
    for f, lane, word, shift in _lane_offsets(lane_fields, lanes):
        column = np.asarray(columns[f.name])[:, lane]
        if column.size and (column.min() < 0 or (f.width < 64 and int(column.max()) >> f.width)):
            raise ParameterError(f"field {f.name} does not fit in {f.width} bits")
        column = column.astype(np.uint64)
        words[:, word] |= column << np.uint64(shift)
        if shift + f.width > 64:
            words[:, word + 1] |= column >> np.uint64(64 - shift)
    return words


def unpack_lane_words(lane_fields, lanes, words):
    """``{name: uint64 [n, lanes]}`` from :func:`pack_lane_words`'s words."""
    words = np.asarray(words, dtype=np.uint64)
    out = {f.name: np.empty((len(words), lanes), dtype=np.uint64) for f in lane_fields}
    for f, lane, word, shift in _lane_offsets(lane_fields, lanes):
        column = words[:, word] >> np.uint64(shift)
        if shift + f.width > 64:
            column |= words[:, word + 1] << np.uint64(64 - shift)
        if f.width < 64:
            column &= np.uint64((1 << f.width) - 1)
        out[f.name][:, lane] = column
    return out


# -- Tensaurus: the kernel code and matrix chunk words (Section 5.2) ----------------------

class TensaurusKernel(enum.IntEnum):
    """What a Tensaurus PE does with a nonzero (Section 5.2.4); a run's ``mode`` is its
    name in lower case (:class:`~sparseforge.sw.tensaurus_job.Job`).

    - ``MTTKRP`` (SpMTTKRP, DMTTKRP): ``TSR += scalar * C[k]`` per nonzero; at a fiber's
      end ``OSR += TSR * B[j]``, TSR cleared.
    - ``MM`` (SpMM, GEMM): ``OSR += scalar * B[j]`` per nonzero; no TSR.
    - ``TTMC`` (SpTTMc, DTTMc): as MTTKRP per nonzero; at a fiber's end the outer
      product ``OSR[u] += B[j][u] * TSR`` for each of B's ``r1`` columns ``u``, TSR
      cleared.
    - ``MV`` (SpMV, GEMV): on the first PE column only, ``OSR[0] += scalar * b[j]`` per
      nonzero, one element of b a read (:func:`mv_layout`); the other columns idle.
    """

    MTTKRP = 0
    MM = 1
    TTMC = 2
    MV = 3



AccelKernel = enum.IntEnum("AccelKernel", {**{k.name: k.value for k in TensaurusKernel},
                                           "SPGEMM": len(TensaurusKernel),
                                           "PRUNED_GEMM": len(TensaurusKernel) + 1})
AccelKernel.__doc__ = """The ``accel`` kernel register's codes: Tensaurus's
(:class:`TensaurusKernel`), then ``SPGEMM``, C = A·B of two sparse matrices on a
Gustavson build, and ``PRUNED_GEMM``, Y = W X of pruned weights and dense activations on
an Eureka build."""

def mv_layout(vlen):
    """``(per, shift)``: b's elements a scratchpad row holds in MV, and its log2. A row
    of ``vlen`` lanes holds ``per``, the largest power of two that fits, so b's element
    ``j`` is lane ``j % per`` of row ``j >> shift``, and the PE splits its index with no
    divider (Section 5.2.4: the SPM reads one element of b)."""
    shift = vlen.bit_length() - 1
    return 1 << shift, shift


def tensaurus_dense_words(values, pes, dw):
    """A dense tensor (or matrix) as Tensaurus's TLU reads it in its dense mode (Section
    5.2.4): ``pes`` slices side by side, one value of each a word, ``dw`` bits each (two's
    complement, lane 0 lowest), zeros included. ``values`` is ``S * pes x J [x K]``
    integers (the slices padded with zeros to a multiple of ``pes``); word ``(s * J + j) *
    K + k`` holds ``values[s * pes + p, j, k]`` in lane ``p``, so the PEs of a slice
    group walk j, then k, in step. Returns uint64 words ``[S * J * K, ceil(pes * dw /
    64)]``."""
    values = np.asarray(values, dtype=np.int64)
    groups = values.reshape(-1, pes, *values.shape[1:])       # [S, pes, J(, K)]
    lanes = np.moveaxis(groups, 1, -1).reshape(-1, pes)        # [S * J * K, pes]
    bits = lanes.astype(np.uint64) & np.uint64((1 << dw) - 1)
    return pack_lane_words((Field("value", dw),), pes, {"value": bits})


def tensaurus_chunk(dw):
    """One lane of a matrix chunk word, as the MLU reads it and a scratchpad holds it: a
    value's ``dw`` bits (two's complement). A chunk word is ``vlen`` lanes, value 0 in
    the low bits; a matrix of ``R`` columns is ``R / vlen`` chunk words a row, row after
    row: :func:`chunk_words`."""
    return (Field("value", dw),)


def chunk_words(matrix, vlen, dw):
    """A ``rows x R`` integer matrix (``R`` a multiple of ``vlen``) as its chunk words,
    row-major: an object array of ints."""
    values = np.asarray(matrix).astype(np.int64).reshape(-1, vlen)
    bits = values.astype(np.uint64) & np.uint64((1 << dw) - 1)
    return pack_lanes(tensaurus_chunk(dw), vlen, (), {"value": bits})


def mlu_words(matrix, cols, vlen, dw):
    """A ``rows x R`` integer matrix (``R`` a multiple of ``vlen``) as the MLU reads it:
    words of ``cols`` chunks, chunk 0 in the low bits, ``ceil(R / (cols * vlen))`` a row
    (the last padded with zero chunks), row-major. Word ``t`` of a row holds its chunks
    ``t * cols .. t * cols + cols - 1``: one read brings a chunk for every PE column. The
    bits of :func:`chunk_words` with ``cols * vlen`` values a word, of the matrix padded
    to a multiple of them."""
    matrix = np.asarray(matrix)
    pad = -matrix.shape[1] % (cols * vlen)
    return chunk_words(np.pad(matrix, ((0, 0), (0, pad))), cols * vlen, dw)


def tensaurus_out_word(acc_width):
    """One lane of an output word, as the MSU writes it (Section 5.2.5): an accumulator's
    ``acc_width`` bits (two's complement). A word is a chunk of ``vlen`` lanes, lane 0 in
    the low bits; the output is its rows one after the other, each its ``chunks`` words
    in order: row ``i``'s chunk ``g`` at word ``i * chunks + g``. So an output tile, rows
    ``i0`` on, is the consecutive words from ``i0 * chunks``: the MSU writes it with a
    counter from its base."""
    return (Field("value", acc_width),)


def tensaurus_out_words(values, acc_width):
    """Output chunks (``[n, vlen]`` integers) as their words (:func:`tensaurus_out_word`):
    an object array of ints."""
    values = np.asarray(values, dtype=np.int64)
    bits = values.astype(np.uint64) & np.uint64((1 << acc_width) - 1)
    return pack_lanes(tensaurus_out_word(acc_width), values.shape[1], (), {"value": bits})


def tensaurus_out_values(words, vlen, acc_width):
    """The values of output words (ints, :func:`tensaurus_out_word`): int64 ``[n,
    vlen]``."""
    words = np.asarray(words, dtype=object).reshape(-1)
    (lane,) = tensaurus_out_word(acc_width)
    mask, top = (1 << lane.width) - 1, 1 << (lane.width - 1)
    values = np.stack([(words >> (v * lane.width)) & mask for v in range(vlen)], axis=-1)
    return np.where(values >= top, values - (1 << lane.width), values).astype(np.int64)


# -- Words in byte-addressed memory (the AXI4 master's bridges) --------------------------

def word_bytes(width):
    """Bytes a word of ``width`` bits takes in byte-addressed memory: the next power of
    two of its bytes, so word ``a`` is at byte ``a * word_bytes(width)``, aligned, and
    never straddles a 4 KiB page (AXI's burst boundary) unless it is larger than one.
    Its bits are the low ``width`` bits of those bytes, little-endian; the rest is 0."""
    if width < 1:
        raise ParameterError(f"word width={width}: expected at least 1 bit")
    return 1 << (-(-width // 8) - 1).bit_length()


def to_bytes(values, n):
    """Words ``values`` as ``n`` bytes each, little-endian (uint8 array)."""
    values = np.asarray(values)
    if n <= 8:
        words = (values.astype(np.uint64) if values.dtype == object
                 else values.astype(np.int64).astype(np.uint64))
        return words.astype(f"<u{n}").view(np.uint8)
    limbs = [((values.astype(object) >> (64 * j)) & ((1 << 64) - 1)).astype(np.uint64)
             for j in range(n // 8)]
    return np.stack(limbs, axis=-1).astype("<u8").view(np.uint8).reshape(-1)


def from_bytes(raw, n):
    """The words of ``raw`` bytes, ``n`` each: uint64, or Python ints past 8 bytes."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    if n <= 8:
        return raw.view(f"<u{n}").astype(np.uint64)
    limbs = raw.view("<u8").reshape(-1, n // 8).astype(object)
    return sum(limbs[:, j] << (64 * j) for j in range(n // 8))


def word_shift(width):
    """log2 of :func:`word_bytes`: the shift from a word address of ``width``-bit words
    to its byte address (and back)."""
    return word_bytes(width).bit_length() - 1


def word_beats(width, data_width):
    """``(beats, size)``: the AXI beats that carry a word of ``width`` bits over a bus of
    ``data_width`` bits, and their ARSIZE/AWSIZE (log2 bytes a beat). A word no wider
    than the bus is one beat of its own :func:`word_bytes` (a narrow transfer on its byte
    lanes); a wider one ``ceil(width / data_width)`` full beats."""
    if word_bytes(width) * 8 <= data_width:
        return 1, word_shift(width)
    return -(-width // data_width), (data_width // 8).bit_length() - 1


# -- The accelerator's tile list ---------------------------------------------------------

ACCEL_TILE = (Field("i0", 32), Field("k0", 32), Field("entries", 32), Field("rows", 15),
              Field("kn", 16), Field("closes", 1))
"""An input tile of an ``accel`` run as its tile list in memory holds it, one 128-bit
word each (:mod:`sparseforge.sw.accel_plan`): its band's first row ``i0`` and ``rows``,
its window's first column ``k0`` and ``kn`` columns, its CISS ``entries`` (the TLU's
length, against which the converter's count is checked) and ``closes`` on the band's
last input tile."""


# -- Gustavson SpGEMM (HYTE Section 2): the engine's streams -------------------------------

def spgemm_row_length(index_width):
    """A row of C the accelerator's SpGEMM wrote with HYTE's buffer: its ``length`` (its
    records, at least one: an empty partial row is not written) and its ``row``."""
    return (Field("length", index_width), Field("row", index_width))


def gustavson_job(index_width):
    """A job of the Gustavson engine: the column ``offset`` of B's column tile it computes
    (its accumulator holds columns ``offset ..``); the job's rows of A follow on its A
    stream."""
    return (Field("offset", index_width),)


def gustavson_a_entry(index_width, value_width):
    """A nonzero A(i, k) on the Gustavson engine's A stream, row by row: ``k`` (the row
    of B it scales), ``value`` (two's complement), ``row_end`` on a row's last entry,
    ``empty`` on the one entry of a row with no nonzeros (its ``k`` and ``value`` unread)
    and ``last`` on a job's final entry."""
    return (Field("k", index_width), Field("value", value_width), Field("row_end", 1),
            Field("empty", 1), Field("last", 1))


def row_request(index_width):
    """A read of a sparse matrix's row: its ``row`` id (the server knows where the row
    lies: a CSR's row pointers, a HYTE accessor's segment metadata)."""
    return (Field("row", index_width),)


def row_element(index_width, value_width):
    """An element of a row read (:func:`row_request`): ``col``, ``value`` (two's
    complement), ``last`` on the row's final element; an empty row answers one element
    with ``empty`` and ``last`` set (its ``col`` and ``value`` unread)."""
    return (Field("col", index_width), Field("value", value_width), Field("last", 1),
            Field("empty", 1))
