"""The Eureka filter stream: the words a SUDS sub-array consumes (Eureka Sections 3-3.2).

The fields are defined once, as data, in :class:`~.wire.EurekaWire`: every
field and its width as a function of the compaction factor P and the operand
width. The encoder and decoder here use only those lists, and the hardware's
payload layouts come from the same lists (:func:`sparseforge.hw.interfaces.struct`).
Fields are packed LSB first in the order listed, the order ``StructLayout`` uses.

The stream holds the blocks in block order (row-major over the block grid).
Each block is one *header* word followed by ``cycles`` *slot* words; slot
word ``t`` says what every MAC row does in the block's cycle ``t``.

Header word, LSB first:

    rotation   2 bits           MAC row m holds block row (m + rotation) % 4
    cycles     bit_length(4P)   0..4P: the critical path, the slot words that follow

Lane, one per MAC row, LSB first:

    value      value_width      operand code, two's complement; 0: the MAC row idles
    column     log2(4P)         the input row its 4P:1 operand mux selects
    displaced  1                the value belongs to the MAC row above, which
                                accumulates its product; never set on MAC row 0

Slot word: the lanes of MAC rows 0, 1, 2, 3 from the low bits up.

Every word is ``word_width = max(header, slot)`` bits wide; a header uses the
low bits. Empty blocks are a header with ``cycles = 0``. The rotation is per
block (Section 3.2): the block's outputs sit in MAC-row order, and whoever
stores or accumulates them maps MAC row m to output row (m + rotation) % 4.

:meth:`EurekaFormat.records` puts each block's words side by side in one
*record*, the host's unit of a block. The sub-array takes the stream one
slot per cycle: :meth:`EurekaFormat.beats` turns records into *beats*, each
a slot word with the block's rotation and whether it is the block's last
(and, for an empty block, one beat of zero lanes marked ``empty``), so the
header costs the array no cycle.
"""

import numpy as np

from ..core.errors import FormatError, ParameterError
from . import wire
from .compaction import block_grid
from .suds import DisplacedBlocks
from .wire import ROWS, EurekaWire


class EurekaFormat(EurekaWire):
    """The stream layout for compaction factor P and ``value_width``-bit operands: the
    fields of :class:`~.wire.EurekaWire`, and the encoder and decoder built on them."""

    def words(self, cycles):
        """Stream length in words for blocks of these ``cycles``: one header each plus a slot
        per cycle."""
        cycles = np.asarray(cycles)
        return int(cycles.size + cycles.sum())

    def encode(self, blocks):
        """The stream for ``blocks`` (:class:`~.suds.DisplacedBlocks` holding integer operand
        codes), as a list of ints. Vectorized over blocks and cycles."""
        return self.stream(blocks).tolist()

    def stream(self, blocks):
        """:meth:`encode`'s words as a numpy array: uint64 where every word fits in 64 bits
        (then the arithmetic is native), else Python ints."""
        if blocks.compaction != self.compaction:
            raise ParameterError(f"blocks are compacted with P={blocks.compaction}, the "
                                 f"format has P={self.compaction}")
        values = blocks.values
        if not np.issubdtype(values.dtype, np.integer):
            raise ParameterError("the stream carries integer operand codes; convert the "
                                 "values with operand_codes() first")
        lo, hi = -(1 << (self.value_width - 1)), 1 << (self.value_width - 1)
        if values.size and (values.min() < lo or values.max() >= hi):
            raise ParameterError(f"operand codes must lie in [{lo}, {hi - 1}] for "
                                 f"value_width={self.value_width}")
        if blocks.displaced[:, 0].any():
            raise ParameterError("MAC row 0 holds a displaced value: the rotation does not "
                                 "put a base row on the last MAC row")
        cycles = blocks.cycles
        used = np.arange(values.shape[2]) < cycles[:, None]  # [n, width]: slots sent
        block, cycle = np.nonzero(used)
        native = self.word_width <= 64
        lanes = _pack(self.lane, {
            "value": values[block, :, cycle] & ((1 << self.value_width) - 1),
            "column": blocks.columns[block, :, cycle],
            "displaced": blocks.displaced[block, :, cycle],
        }, native)  # [nslots, lanes]
        lane_width = wire.width(self.lane)
        slots = sum(lanes[:, m] << (m * lane_width) for m in range(self.lanes))
        headers = _pack(self.header, {"rotation": blocks.rotation, "cycles": cycles}, native)
        starts = np.arange(len(cycles)) + np.cumsum(cycles) - cycles
        stream = np.empty(len(cycles) + len(block), dtype=np.uint64 if native else object)
        stream[starts] = headers
        stream[starts[block] + 1 + cycle] = slots
        return stream

    def records(self, blocks):
        """The stream of ``blocks`` regrouped as one *record* per block, a list of ints.

        A record is the block's header fields (low bits), then its ``cycles``
        slot words of :attr:`slot_width` bits each, then zeros up to
        :attr:`record_width`: the whole filter sub-matrix of a block, which
        :meth:`beats` hands to the sub-array a slot at a time. Vectorized over
        blocks.
        """
        words = self.encode(blocks)
        stream = np.empty(len(words), dtype=object)
        stream[:] = words
        cycles = blocks.cycles
        starts = np.arange(len(cycles)) + np.cumsum(cycles) - cycles
        records = stream[starts].copy()  # headers
        shift = wire.width(self.header)
        for i in range(ROWS * self.compaction):
            present = i < cycles
            records[present] += stream[starts[present] + 1 + i] << (shift + i * self.slot_width)
        return records.tolist()

    def beats(self, records):
        """The sub-array's filter stream for block ``records`` (:meth:`records`), a list of
        ints: per block, one beat per cycle (one for an empty block), each a slot word (zero
        for an empty block) and then the :attr:`~.wire.EurekaWire.beat` fields."""
        header = wire.width(self.header)
        records = np.asarray(records, dtype=object)
        fields = wire.unpack(self.header, records & ((1 << header) - 1))
        cycles = fields["cycles"]
        if (cycles > self.slots).any():
            bad = int(np.argmax(cycles > self.slots))
            raise FormatError("<eureka records>", f"block {bad} claims {cycles[bad]} cycles; "
                              f"at most {self.slots} at P={self.compaction}")
        beats = np.maximum(cycles, 1)
        block = np.repeat(np.arange(len(records)), beats)
        cycle = np.arange(len(block)) - np.repeat(np.cumsum(beats) - beats, beats)
        slots = (records[block] >> (header + cycle * self.slot_width)) & (
            (1 << self.slot_width) - 1)
        ends = wire.pack(self.beat, {"rotation": fields["rotation"][block],
                                     "last": cycle == beats[block] - 1,
                                     "empty": cycles[block] == 0})
        return (slots + (ends << self.slot_width)).tolist()

    def decode(self, words, shape, blocks=None):
        """The :class:`~.suds.DisplacedBlocks` of an ``shape`` = (M, K) matrix from its stream.

        ``blocks`` = (block rows, block columns) of the blocks a stream of only
        some blocks holds, in order; by default the stream holds every block.
        Raises :class:`FormatError` if the stream is malformed: a word wider than
        ``word_width``, a cycle count above 4P, a truncated block, a displaced
        value on MAC row 0, or a block count that does not match.
        """
        where = "<eureka stream>"
        if not (isinstance(words, np.ndarray) and words.dtype == np.uint64):
            stream = list(words)
            words = np.empty(len(stream), dtype=object)
            words[:] = [int(w) for w in stream]
        if len(words) and (words.min() < 0 or int(words.max()) >> self.word_width):
            raise FormatError(where, f"a word does not fit in {self.word_width} bits")
        if self.word_width <= 64:
            words = words.astype(np.uint64)
        width = ROWS * self.compaction
        grid = block_grid(shape, self.compaction)
        cycles_field = _unpack(self.header, words)["cycles"]  # meaningful at headers only
        starts = _headers(cycles_field)
        if len(starts) and starts[-1] + 1 + cycles_field[starts[-1]] > len(words):
            raise FormatError(where, f"block {len(starts) - 1} (word {starts[-1]}) is truncated")
        if blocks is None:
            if len(starts) != grid[0] * grid[1]:
                raise FormatError(where, f"{len(starts)} blocks, but a {shape[0]}x{shape[1]} "
                                  f"matrix has {grid[0] * grid[1]} at P={self.compaction}")
            blocks = np.divmod(np.arange(len(starts)), grid[1])
        elif len(starts) != len(blocks[0]):
            raise FormatError(where, f"{len(starts)} blocks, {len(blocks[0])} expected")
        header = _unpack(self.header, words[starts])
        cycles = header["cycles"]
        if (cycles > width).any():
            bad = int(np.argmax(cycles > width))
            raise FormatError(where, f"block {bad} (word {starts[bad]}) claims "
                              f"{cycles[bad]} cycles; at most {width} at P={self.compaction}")
        block, cycle = np.nonzero(np.arange(width) < cycles[:, None])
        lane_width = wire.width(self.lane)
        slots = words[starts[block] + 1 + cycle]
        lanes = np.stack([(slots >> (m * lane_width)) & ((1 << lane_width) - 1)
                          for m in range(self.lanes)], axis=-1)
        fields = _unpack(self.lane, lanes)
        if fields["displaced"][:, 0].any():
            bad = int(np.argmax(fields["displaced"][:, 0]))
            raise FormatError(where, f"block {block[bad]} cycle {cycle[bad]}: displaced value "
                              "on MAC row 0")
        n = len(starts)
        values = np.zeros((n, ROWS, width), dtype=np.int64)
        columns = np.zeros((n, ROWS, width), dtype=np.uint8)
        displaced = np.zeros((n, ROWS, width), dtype=bool)
        sign = 1 << (self.value_width - 1)
        values[block, :, cycle] = (fields["value"] ^ sign) - sign
        columns[block, :, cycle] = fields["column"]
        displaced[block, :, cycle] = fields["displaced"].astype(bool)
        return DisplacedBlocks(shape=tuple(shape), compaction=self.compaction, values=values,
                               columns=columns, displaced=displaced,
                               rotation=header["rotation"], cycles=cycles,
                               block_rows=np.asarray(blocks[0], dtype=np.int64),
                               block_cols=np.asarray(blocks[1], dtype=np.int64))


def _pack(fields, values, native):
    """:func:`.wire.pack`, into uint64 words when ``native`` (they fit in 64 bits)."""
    if not native:
        return wire.pack(fields, values)
    word, shift = np.uint64(0), 0
    for f in fields:
        v = np.asarray(values[f.name]).astype(np.int64)
        if v.size and (v.min() < 0 or v.max() >> f.width):
            raise ParameterError(f"field {f.name} does not fit in {f.width} bits")
        word = word | v.astype(np.uint64) << np.uint64(shift)
        shift += f.width
    return word


def _unpack(fields, words):
    """:func:`.wire.unpack` of Python-int words, or natively of uint64 ones."""
    if words.dtype != np.uint64:
        return wire.unpack(fields, words)
    out, shift = {}, 0
    for f in fields:
        out[f.name] = ((words >> np.uint64(shift)) & np.uint64((1 << f.width) - 1)).astype(
            np.int64)
        shift += f.width
    return out


def _headers(cycles_field):
    """Word index of every block header: the chain 0, next(0), ... with next(i) = i + 1 +
    ``cycles_field[i]``, found by pointer doubling (no loop over blocks)."""
    n = len(cycles_field)
    step = np.append(np.minimum(np.arange(1, n + 1) + cycles_field, n), n)  # n: past the end
    starts = np.zeros(min(n, 1), dtype=np.int64)
    while len(starts):  # invariant: step[i] is the header len(starts) blocks after header i
        following = step[starts]
        starts = np.concatenate((starts, following[following < n]))
        if following[-1] >= n:
            return starts
        step = step[step]
    return starts


def operand_codes(values):
    """Integer operand codes for the ``value`` field, and the width they need.

    Integers are kept (two's complement) in the narrowest of 8, 16 or 32 bits
    that holds them; anything else becomes FP16 bit patterns (16 bits), the
    paper's operand type. A nonzero value that FP16 rounds to +0 (the idle
    code) or to infinity is rejected.
    """
    values = np.asarray(values)
    if np.issubdtype(values.dtype, np.integer):
        for width in (8, 16, 32):
            if not values.size or (values.min() >= -(1 << (width - 1))
                                   and values.max() < 1 << (width - 1)):
                return values.astype(np.int64), width
        raise ParameterError("integer weights do not fit in 32 bits")
    if np.iscomplexobj(values):
        raise ParameterError("complex weights have no operand code")
    with np.errstate(over="ignore"):
        half = values.astype(np.float16)
    codes = half.view(np.int16)
    bad = np.flatnonzero((values != 0) & ((codes == 0) | ~np.isfinite(half)))
    if len(bad):
        raise ParameterError(f"weight {values[bad[0]]!r} (entry {bad[0]}) has no FP16 code: "
                             "it rounds to zero or overflows")
    return codes.astype(np.int64), 16
