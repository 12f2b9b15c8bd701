"""Wire formats: the bit fields every stream between host and hardware carries.

Defined once, as data, with numpy only (no scipy, no Amaranth), so the
hardware's payload layouts (:mod:`sparseforge.hw.interfaces` turns a tuple of
:class:`Field` into an ``amaranth.lib.data.StructLayout``), the host encoders
and the testbenches' packing all derive from the same lists. Fields are packed
LSB first in the order listed, the order ``StructLayout`` uses.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

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
    is one block: the header's fields, then 4P slot words.
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
    def record_width(self):
        """Bits of a block record: the header's fields and room for 4P slot words."""
        return width(self.header) + self.slots * self.slot_width
