# amaranth: UnusedElaboratable=no
"""MINT's streaming converters from and to Dense: Dense to COO, CSR and ZVC, and ZVC to
Dense (MINT Section V-B; Figure 8f steps 1-4; ZVC after Rhu et al. [9]).

A dense matrix streams in as vectors of ``lanes`` values. The converters are built from
MINT's building blocks as Section V-B4 describes: the comparators of zero detection
(:class:`~.mint_units.ZeroDetect`) find a vector's nonzeros, and the prefix-sum unit
(:class:`~.prefix_sum.PrefixSum`), adding one per nonzero with its running carry, gives
each nonzero its position in the output (:class:`NonzeroPositions`). Two units use the
positions:

- :class:`Compactor` moves each nonzero's record to its position: a log-shifter network
  (each record moves down by the zeros before it, one bit of that count per level) packs
  the vector, a rotation by the position's offset in its word aligns it, and a two-word
  buffer gathers the records into full words of ``lanes``;
- :class:`Expander` (ZVC to Dense) does the inverse: each lane whose mask bit is set
  takes the packed value at its position from a window of two value words.

The coordinates come from counters, not from MINT's divide/modulo (Fig. 8f step 3):
Dense-to-COO and Dense-to-CSR take row-padded streams (:func:`~sparseforge.sw.wire.dense_flags`),
whose vectors never hold two rows, so a vector's row is the count of row ends before it
and lane ``i``'s column is the vector's first column plus ``i``. ZVC's mask runs on
across rows, so the ZVC converters take flat streams and need no coordinates.
"""

from dataclasses import replace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .interfaces import dense_layout, record_word_layout, struct
from .mint_units import ZeroDetect
from .pipeline import Pipeline, levels_param, stages
from .prefix_sum import PrefixSum
from .stream_units import Lockstep

LANES = Param("lanes", 8, 2, 32, "values per vector (L)", pow2=True)
WIDTH = Param("width", 16, 1, 64, "bits of a value (its bits pass through as they are)")
LEVELS = replace(levels_param("adder and multiplexer"), default=3)
"""Three levels a stage: the stall signal that reaches every stage's registers, not the
logic between them, sets the clock (fewer stages, fewer loads on it)."""


def position_bits(lanes):
    """Bits of a position as the converters keep it: modulo ``2 * lanes``, enough to tell a
    lane of the current word from one of the next."""
    return exact_log2(lanes) + 1


class NonzeroPositions(wiring.Component):
    """The nonzeros of each vector and their positions: zero detection, then the prefix
    sum of the nonzeros (Section V-B4, Figure 8f step 2).

    Parameters
    ----------
    lanes : L, values per vector (a power of two).
    width : bits of a value.
    tag : the shape of what travels with each vector (its coordinates, its flags).
    levels : adder levels of the prefix sum between pipeline registers.

    Members
    -------
    vectors : In(stream({values[L], last, tag}))
        ``last`` ends a matrix: the positions start again from 0 after it.
    positions : Out(stream({values[L], mask, sums[L], total, last, tag}))
        One per vector, in order: ``mask`` bit ``i`` set where value ``i`` is nonzero,
        ``sums[i]`` the nonzeros of the matrix before lane ``i`` and ``total`` those
        through the vector, both modulo ``2 * L``.

    Latency and throughput: ``2 + scan`` cycles (zero detection's 2, then the
    Kogge-Stone prefix sum's ``scan = ceil(log2 L / levels) + 1``); one vector a cycle
    while ``positions`` is taken. The tag waits beside each unit in step with it
    (:class:`~.stream_units.Lockstep`).
    """

    def __init__(self, lanes, width, tag, levels=1):
        self.lanes, self.width = lanes, width
        values, position = data.ArrayLayout(width, lanes), position_bits(lanes)
        self.detect = Lockstep({"detect": ZeroDetect(lanes=lanes, width=width)},
                               data.StructLayout({"last": 1, "tag": tag}))
        self.scan = Lockstep({"scan": PrefixSum(lanes=lanes, width=position, variant="kogge_stone",
                                                inclusive=0, levels=levels)},
                             data.StructLayout({"values": values, "mask": lanes, "tag": tag}))
        self.latency = self.detect.latency + self.scan.latency
        super().__init__({
            "vectors": wiring.In(stream.Signature(data.StructLayout(
                {"values": values, "last": 1, "tag": tag}))),
            "positions": wiring.Out(stream.Signature(data.StructLayout({
                "values": values, "mask": lanes, "sums": data.ArrayLayout(position, lanes),
                "total": position, "last": 1, "tag": tag}))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.detect = detect = self.detect
        m.submodules.scan = scan = self.scan
        given, found, scanned = self.vectors, detect.taken, scan.taken
        m.d.comb += [
            detect.given.valid.eq(given.valid), given.ready.eq(detect.given.ready),
            detect.given.payload.detect.eq(given.payload.values),
            detect.given.payload.tag.last.eq(given.payload.last),
            detect.given.payload.tag.tag.eq(given.payload.tag),
            scan.given.valid.eq(found.valid), found.ready.eq(scan.given.ready),
            scan.given.payload.scan.last.eq(found.payload.tag.last),
            scan.given.payload.tag.values.eq(found.payload.detect.values),
            scan.given.payload.tag.mask.eq(found.payload.detect.mask),
            scan.given.payload.tag.tag.eq(found.payload.tag.tag),
        ]
        m.d.comb += [scan.given.payload.scan.counts[i].eq(found.payload.detect.mask[i])
                     for i in range(self.lanes)]
        out = self.positions
        m.d.comb += [
            out.valid.eq(scanned.valid), scanned.ready.eq(out.ready),
            out.payload.values.eq(scanned.payload.tag.values),
            out.payload.mask.eq(scanned.payload.tag.mask),
            out.payload.sums.eq(scanned.payload.scan.sums),
            out.payload.total.eq(scanned.payload.scan.total),
            out.payload.last.eq(scanned.payload.scan.last),
            out.payload.tag.eq(scanned.payload.tag.tag),
        ]
        return m


def _below(lane, offset):
    """Whether ``lane`` is below ``offset`` (a k-bit value, so never for the top lane)."""
    if lane == 0:
        return offset.any()
    return Const(0) if lane == (1 << len(offset)) - 1 else offset > lane


def compact_layouts(lanes, record_width, tag_width=0, position_width=0):
    """The compactor's payloads ``(vectors, words, marks)``.

    ``vectors``: ``{records[lanes], mask, sums[lanes], total, last, mark, tag}``, the
    sums and total ``log2(lanes) + 1`` bits (positions modulo ``2 * lanes``); ``words``:
    :func:`~.interfaces.record_word_layout` of ``record_width``-bit records; ``marks``: ``{tag,
    position, last}``.
    """
    position = ceil_log2(lanes) + 1
    vectors = data.StructLayout({
        "records": data.ArrayLayout(record_width, lanes), "mask": lanes,
        "sums": data.ArrayLayout(position, lanes), "total": position, "last": 1, "mark": 1,
        "tag": tag_width})
    marks = data.StructLayout({"tag": tag_width, "position": position_width, "last": 1})
    return vectors, record_word_layout(record_width, lanes), marks


class CompactSignature(wiring.Signature):
    """A stream compactor, seen from it: vectors of ``lanes`` records of ``record_width``
    bits in, the records whose mask bit is set out, packed ``lanes`` a word.

    - ``vectors`` (stream in, :func:`compact_layouts`): ``records``, ``mask`` (bit ``i``
      set where record ``i`` is kept), ``sums`` and ``total`` (the prefix-sum unit's
      exclusive sums of the mask bits and its total, modulo ``2 * lanes``: each kept
      record's position in the matrix, and the position after the vector), ``last`` on a
      matrix's final vector; ``mark`` and ``tag`` ask for a mark.
    - ``words`` (stream out): the kept records in order, framed as
      :func:`~sparseforge.sw.wire.word_end` says.
    - ``marks`` (stream out, present where ``tag_width`` or ``position_width`` is not
      0): one per vector with ``mark`` set, in order: its ``tag``, ``position`` (the
      records kept in the matrix so far, this vector's included, modulo
      ``2**position_width``) and ``last``.
    """

    def __init__(self, lanes, record_width, tag_width=0, position_width=0):
        vectors, words, marks = compact_layouts(lanes, record_width, tag_width,
                                                position_width)
        members = {"vectors": In(stream.Signature(vectors)),
                   "words": Out(stream.Signature(words))}
        if tag_width or position_width:
            members["marks"] = Out(stream.Signature(marks))
        super().__init__(members)


def take_positions(m, found, vectors):
    """:class:`NonzeroPositions`'s ``found`` vectors into a :class:`Compactor`'s
    ``vectors``: the handshake and each vector's mask, positions, total and ``last`` (the
    records are the caller's to give)."""
    m.d.comb += [vectors.valid.eq(found.valid), found.ready.eq(vectors.ready),
                 *(getattr(vectors.payload, name).eq(getattr(found.payload, name))
                   for name in ("mask", "sums", "total", "last"))]


class Compactor(wiring.Component):
    """Packs the kept records of each vector into words of ``lanes`` (Section V-B, the
    placement of Figure 8d step 5 and 8f step 4).

    A kept record's position (its ``sums`` entry) says where it goes: the word
    ``position // L`` and the lane ``position % L``. Inside a vector the kept records
    are ``c = sums[0] % L`` lanes into the current word: record ``i`` moves down by
    ``z_i``, the dropped records before it (``i - (sums[i] - sums[0])``), then the
    packed vector rotates up by ``c``; a rotated lane below ``c`` belongs to the next
    word. Both are log-shifter networks of ``log2 L`` levels of 2:1 multiplexers:
    moving down by ``z_i``, one bit of it per level from the lowest, never puts two
    records on one lane (they keep their order and ``z`` only grows along the vector).
    Two word buffers, by the parity of the word index, gather the records; a word
    completes when a vector's records reach its end, and it is copied to the output
    register with that vector's records in it.

    Parameters
    ----------
    lanes : L, records per vector and per word (a power of two, at least 2).
    record_width : bits of a record.
    levels : multiplexer levels between pipeline registers.
    tag_width, position_width : the marks' fields; both 0 leaves out ``marks``.

    Members
    -------
    vectors : In(stream(...))
    words : Out(stream({lanes[L], count, last}))
    marks : Out(stream({tag, position, last}))
        As :class:`~sparseforge.hw.convert_dense.CompactSignature` says.

    Latency and throughput: ``latency = ceil(2 log2 L / levels) + 1`` cycles from a
    vector that completes a word to that word on ``words``. One vector a cycle while
    ``words`` (and ``marks``) are taken; a matrix whose last vector completes a word
    takes one cycle more, to send the final word.
    """

    def __init__(self, lanes, record_width, levels=1, tag_width=0, position_width=0):
        self.lanes, self.record_width, self.levels = lanes, record_width, levels
        self.shift_bits = exact_log2(lanes)
        self.has_marks = bool(tag_width or position_width)
        self.position_width = position_width
        self.latency = stages(2 * self.shift_bits, levels) + 1
        super().__init__(CompactSignature(lanes, record_width, tag_width, position_width))

    def _network(self, pipe):
        """The log-shifter levels: compaction by ``z`` (lowest bit first), then rotation."""
        L, k = self.lanes, self.shift_bits

        def down(j):
            def level(state):
                # A lane's ``shift`` holds the bits of its z from bit j up; they move with it.
                def onward(lane):
                    rest = {"shift": lane["shift"][1:]} if j + 1 < k else {}
                    return {"record": lane["record"], **rest}

                lanes, out = state["lanes"], []
                for x, here in enumerate(lanes):
                    keep = here["keep"] & ~here["shift"][0]
                    moved = onward(here)
                    if x + (1 << j) < L:
                        there = lanes[x + (1 << j)]
                        moves = pipe.wire(there["keep"] & there["shift"][0], "moves")
                        moved = {key: pipe.wire(Mux(moves, value, moved[key]), key)
                                 for key, value in onward(there).items()}
                        keep = moves | keep
                    out.append({**moved, "keep": keep})
                return {**state, "lanes": out}
            return level

        def up(j):
            def level(state):
                turn, lanes = state["offset"][j], state["lanes"]
                return {**state, "lanes": [
                    {key: Mux(turn, lanes[(x - (1 << j)) % L][key], lanes[x][key])
                     for key in ("record", "keep")} for x in range(L)]}
            return level

        return [down(j) for j in range(k)] + [up(j) for j in range(k)]

    def elaborate(self, platform):
        m = Module()
        L, k, R = self.lanes, self.shift_bits, self.record_width
        packed = stream.Signature(0).create()
        pipe = Pipeline(m, self.vectors, packed)
        given = self.vectors.payload
        base = given.sums[0]
        state = {
            "lanes": [{"record": given.records[i], "keep": given.mask[i],
                       "shift": pipe.wire((i + base - given.sums[i])[:k], "shift") if i
                       else Const(0, k)}
                      for i in range(L)],
            "offset": base[:k], "word": base[k], "count": (given.total - base)[:k + 1],
            "last": given.last, "mark": given.mark, "tag": given.tag,
        }
        done = pipe.network(state, self._network(pipe), self.levels)
        pipe.finish()

        # The word buffers: lane x of a vector goes to the word of parity ``word``, or the
        # next one below the offset. A vector that reaches the end of the current word
        # completes it; a matrix's last vector sends what it has.
        lanes, offset, word, last = done["lanes"], done["offset"], done["word"], done["last"]
        end = pipe.wire((offset + done["count"])[:k + 1], "end")
        complete, rest = end[k], end[:k]
        spills = [_below(x, offset) for x in range(L)]
        buffers = [Signal(data.ArrayLayout(R, L), name=f"buffer{p}") for p in range(2)]
        flush, flush_word, flush_count = Signal(), Signal(), Signal(k)
        out = self.words
        free = ~out.valid | out.ready
        emits = complete | last
        ready = ~flush & (~emits | free)
        if self.has_marks:
            ready &= ~done["mark"] | ~self.marks.valid | self.marks.ready
        m.d.comb += packed.ready.eq(ready)
        accept = packed.valid & ready

        for x, lane in enumerate(lanes):
            parity = word ^ spills[x]
            for p, buffer in enumerate(buffers):
                with m.If(accept & lane["keep"] & (parity == p)):
                    m.d.sync += buffer[x].eq(lane["record"])
        finished = Cat(Mux(lane["keep"] & ~spills[x], lane["record"],
                           Mux(word, buffers[1][x], buffers[0][x]))
                       for x, lane in enumerate(lanes))

        with m.If(accept & emits):
            m.d.sync += [out.valid.eq(1), out.payload.lanes.eq(finished),
                         out.payload.count.eq(Mux(complete, L, rest)),
                         out.payload.last.eq(last & ~complete),
                         flush.eq(last & complete), flush_word.eq(~word),
                         flush_count.eq(rest)]
        with m.Elif(flush & free):
            m.d.sync += [out.valid.eq(1),
                         out.payload.lanes.eq(Mux(flush_word, buffers[1], buffers[0])),
                         out.payload.count.eq(flush_count), out.payload.last.eq(1),
                         flush.eq(0)]
        with m.Elif(out.ready):
            m.d.sync += out.valid.eq(0)

        if self.has_marks:
            self._marks(m, accept, done)
        return m

    def _marks(self, m, accept, done):
        """A mark per marked vector: its tag and the records kept so far in the matrix."""
        marks = self.marks
        mark = [marks.valid.eq(1), marks.payload.tag.eq(done["tag"]),
                marks.payload.last.eq(done["last"])]
        if self.position_width:
            running = Signal(self.position_width)
            position = (running + done["count"])[:self.position_width]
            mark.append(marks.payload.position.eq(position))
            with m.If(accept):
                m.d.sync += running.eq(Mux(done["last"], 0, position))
        with m.If(accept & done["mark"]):
            m.d.sync += mark
        with m.Elif(marks.ready):
            m.d.sync += marks.valid.eq(0)


def expand_layout(lanes):
    """The expander's positions: ``{mask, sums[lanes], total, last}``, as the compactor's."""
    position = ceil_log2(lanes) + 1
    return data.StructLayout({"mask": lanes, "sums": data.ArrayLayout(position, lanes),
                              "total": position, "last": 1})


class ExpandSignature(wiring.Signature):
    """A stream expander, the compactor's inverse, seen from it: ``lanes`` lanes of
    ``width`` bits.

    - ``vectors`` (stream in, :func:`expand_layout`): a mask, the prefix-sum unit's
      exclusive sums of its bits and their total (modulo ``2 * lanes``), ``last``.
    - ``values`` (stream in, :func:`~.interfaces.record_word_layout` without ``count``):
      the packed values, framed as :func:`~sparseforge.sw.wire.word_end` says.
    - ``dense`` (stream out, :func:`~.interfaces.dense_layout`, flat): per vector, lane
      ``i`` the next packed value where mask bit ``i`` is set, else 0; ``last`` as given.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "vectors": In(stream.Signature(expand_layout(lanes))),
            "values": In(stream.Signature(record_word_layout(width, lanes, count=False))),
            "dense": Out(stream.Signature(dense_layout(lanes, width, rows=False))),
        })


class Expander(wiring.Component):
    """Places packed values at the set bits of each mask: the compactor's inverse (ZVC to
    Dense).

    Value word ``w`` of a matrix waits in the window slot of its parity ``w % 2``; the
    value a set mask bit takes is at its position (its ``sums`` entry, modulo
    ``2 * L``): slot ``position // L``, lane ``position % L``, a ``2L``:1 multiplexer
    per lane. A word leaves the window once a vector's values reach its end, and a
    matrix's final word with its last vector; a new word may enter a slot on the cycle
    its word leaves.

    Parameters
    ----------
    lanes : L, values per vector and per word (a power of two, at least 2).
    width : bits of a value.

    Members
    -------
    vectors, values : In(stream(...))
    dense : Out(stream({lanes[L], last}))
        As :class:`~sparseforge.hw.convert_dense.ExpandSignature` says.

    Latency and throughput: 1 cycle from a vector to its dense vector (registered);
    one vector a cycle while its value words are there and ``dense`` is taken.
    """

    latency = 1

    def __init__(self, lanes, width):
        self.lanes, self.width = lanes, width
        self.shift_bits = exact_log2(lanes)
        super().__init__(ExpandSignature(lanes, width))

    def elaborate(self, platform):
        m = Module()
        L, k = self.lanes, self.shift_bits
        window = [Signal(data.ArrayLayout(self.width, L), name=f"slot{p}") for p in range(2)]
        held, popped, fill = Signal(2), Signal(2), Signal()

        given = self.vectors.payload
        base = given.sums[0]
        count, end = Signal(k + 1), Signal(k + 1)
        m.d.comb += [count.eq(given.total - base), end.eq(base[:k] + count)]
        crosses, rest, word = end[k], end[:k], base[k]
        needs_head = (count != 0) | given.last
        needs_next = crosses & ((rest != 0) | given.last)
        free = ~self.dense.valid | self.dense.ready
        head, after = Mux(word, held[1], held[0]), Mux(word, held[0], held[1])
        ready = (~needs_head | head) & (~needs_next | after) & free
        accept = self.vectors.valid & ready
        pop_head, pop_next = accept & (crosses | given.last), accept & crosses & given.last
        m.d.comb += [self.vectors.ready.eq(ready),
                     popped.eq(Mux(word, Cat(pop_next, pop_head), Cat(pop_head, pop_next)))]

        values = self.values
        m.d.comb += values.ready.eq(~Mux(fill, held[1], held[0]) | Mux(fill, popped[1],
                                                                        popped[0]))
        takes = values.valid & values.ready
        for p, slot in enumerate(window):
            enters = takes & (fill == p)
            with m.If(enters):
                m.d.sync += slot.eq(values.payload.lanes)
            m.d.sync += held[p].eq(enters | (held[p] & ~popped[p]))
        with m.If(takes):
            m.d.sync += fill.eq(~fill & ~values.payload.last)

        slots = Array([*window[0], *window[1]])
        out = self.dense
        with m.If(accept):
            m.d.sync += [out.valid.eq(1), out.payload.last.eq(given.last)]
            m.d.sync += [out.payload.lanes[i].eq(
                Mux(given.mask[i], slots[given.sums[i]], 0))
                for i in range(L)]
        with m.Elif(out.ready):
            m.d.sync += out.valid.eq(0)
        return m


def coordinates(m, dense, lanes, index_width):
    """``{row, col}`` of each vector of a row-padded stream ``dense``: the rows ended
    before it, and its first column (a multiple of ``lanes``), counted from the
    handshakes on ``dense``."""
    row, col = Signal(index_width), Signal(index_width)
    given = dense.payload
    ends = given.row_end | given.last
    with m.If(dense.valid & dense.ready):
        m.d.sync += [row.eq(Mux(given.last, 0, row + ends)),
                     col.eq(Mux(ends, 0, col + lanes))]
    return {"row": row, "col": col}


def column(col, lane, lanes, index_width):
    """Lane ``lane``'s column in a vector whose first column is ``col``."""
    k = exact_log2(lanes)
    return Cat(Const(lane, k), col[k:])[:index_width]


class _DenseToWords(wiring.Component):
    """What Dense to COO, CSR and ZVC share: :class:`NonzeroPositions`, then a
    :class:`Compactor` of each nonzero's record. A converter says what travels with a
    vector (:meth:`tag`), each lane's record (:meth:`fields`), and drives the compactor's
    marks and its own outputs (:meth:`finish`).
    """

    def __init__(self, signature, record, tag, tag_width=0, position_width=0):
        self.record = struct(record)
        self.nonzeros = NonzeroPositions(self.lanes, self.width, tag, self.levels)
        self.compactor = Compactor(self.lanes, self.record.size, self.levels, tag_width,
                                   position_width)
        self.latency = self.nonzeros.latency + self.compactor.latency
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.nonzeros = nonzeros = self.nonzeros
        m.submodules.compactor = compactor = self.compactor
        dense, given = self.dense, nonzeros.vectors
        m.d.comb += [given.valid.eq(dense.valid), dense.ready.eq(given.ready),
                     given.payload.values.eq(dense.payload.lanes),
                     given.payload.last.eq(dense.payload.last)]
        m.d.comb += [given.payload.tag[name].eq(value) for name, value in self.tag(m).items()]
        found, vectors = nonzeros.positions, compactor.vectors
        take_positions(m, found, vectors)
        for i in range(self.lanes):
            record = data.View(self.record, vectors.payload.records[i])
            m.d.comb += [record[name].eq(value)
                         for name, value in self.fields(found.payload, i).items()]
        self.finish(m, found.payload, compactor)
        return m

    def coordinates(self, m):
        return coordinates(m, self.dense, self.lanes, self.index_width)

    def column(self, col, lane):
        return column(col, lane, self.lanes, self.index_width)

    def tag(self, m):
        """What travels with a vector from the input (its fields by name), built in ``m``."""
        raise NotImplementedError

    def fields(self, found, lane):
        """The record fields of ``lane`` of a vector ``found`` by :class:`NonzeroPositions`."""
        raise NotImplementedError

    def finish(self, m, found, compactor):
        """Drive the compactor's ``mark`` and ``tag`` from ``found``, and the outputs."""
        raise NotImplementedError


class DenseToCooSignature(wiring.Signature):
    """A Dense-to-COO converter, seen from it: ``lanes`` values of ``width`` bits a vector,
    row and column ids of ``index_width`` bits.

    - ``dense`` (stream in, :func:`~.interfaces.dense_layout`, row-padded): a matrix's rows.
    - ``coo`` (stream out, :func:`~sparseforge.hw.interfaces.record_word_layout` of
      :func:`~sparseforge.sw.wire.coo_entry`): its nonzeros ``{row, col, value}`` in
      row-major order, ``lanes`` a word, framed as :func:`~sparseforge.sw.wire.word_end`
      says.
    """

    def __init__(self, lanes, width, index_width):
        entry = wire.coo_entry(index_width, width)
        super().__init__({"dense": In(stream.Signature(dense_layout(lanes, width))),
                          "coo": Out(stream.Signature(record_word_layout(entry, lanes)))})


@block("dense_to_coo")
class DenseToCoo(_DenseToWords):
    """Dense to COO: a row-padded dense stream's nonzeros as (row, col, value), L a cycle.

    MINT Section V-B4, Figure 8f steps 1-4: zero detection, the prefix sum of the
    nonzeros for their positions, and their records placed at those positions.

    Parameters
    ----------
    lanes : L, values per vector and records per word (a power of two).
    width : bits of a value (its bits: a value is zero when all of them are).
    index_width : bits of a row and a column id (rows and columns up to
        ``2**index_width``).
    levels : adder and multiplexer levels between pipeline registers (prefix sum and
        compaction network).

    Members
    -------
    dense : In(stream({lanes[L], row_end, last}))
    coo : Out(stream({lanes[L] x {row, col, value}, count, last}))
        As :class:`~sparseforge.hw.convert_dense.DenseToCooSignature` says: the nonzeros in
        row-major order, ``L`` a word, then one ``last`` word with the rest.

    Structure: row and column counters on the input; :class:`NonzeroPositions` (zero
    detection and the prefix sum); a :class:`Compactor` of the records.

    Latency and throughput: ``latency = 2 + scan + ceil(2 log2 L / levels) + 1`` cycles
    from the vector that completes a word to that word (``scan = ceil(log2 L / levels)
    + 1``); one vector (L elements) a cycle while ``coo`` is taken, and one cycle more
    per matrix whose last vector completes a word. A matrix of ``v`` vectors with
    nothing stalled takes ``v + latency`` cycles, or one more.
    """

    PARAMS = (LANES, WIDTH, Param("index_width", 16, 1, 32, "bits of a row and a column id"),
              LEVELS)
    REPORT = ({"lanes": 8, "width": 16, "index_width": 16},
              {"lanes": 8, "width": 16, "index_width": 16, "levels": 1})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width = v["lanes"], v["width"]
        self.index_width, self.levels = v["index_width"], v["levels"]
        entry = wire.coo_entry(self.index_width, self.width)
        super().__init__(DenseToCooSignature(self.lanes, self.width, self.index_width), entry,
                         data.StructLayout({"row": self.index_width, "col": self.index_width}))

    def tag(self, m):
        return self.coordinates(m)

    def fields(self, found, lane):
        return {"row": found.tag.row, "col": self.column(found.tag.col, lane),
                "value": found.values[lane]}

    def finish(self, m, found, compactor):
        wiring.connect(m, compactor.words, wiring.flipped(self.coo))


class DenseToCsrSignature(wiring.Signature):
    """A Dense-to-CSR converter, seen from it: ``lanes`` values of ``width`` bits a vector,
    column ids of ``index_width`` bits, row pointers of ``ptr_width`` bits.

    - ``dense`` (stream in, :func:`~.interfaces.dense_layout`, row-padded): a matrix's rows.
    - ``entries`` (stream out, :func:`~sparseforge.hw.interfaces.record_word_layout` of
      :func:`~sparseforge.sw.wire.csr_entry`): its nonzeros ``{col, value}`` in row-major
      order, ``lanes`` a word, framed as :func:`~sparseforge.sw.wire.word_end` says.
    - ``row_ptr`` (stream out, :func:`~sparseforge.sw.wire.pointer`): ``row_ptr[1 ..
      rows]``, each row's end (``row_ptr[0]`` is 0), ``last`` on the final one; modulo
      ``2**ptr_width``.
    """

    def __init__(self, lanes, width, index_width, ptr_width):
        entry = wire.csr_entry(index_width, width)
        super().__init__({
            "dense": In(stream.Signature(dense_layout(lanes, width))),
            "entries": Out(stream.Signature(record_word_layout(entry, lanes))),
            "row_ptr": Out(stream.Signature(struct(wire.pointer(ptr_width)))),
        })


@block("dense_to_csr")
class DenseToCsr(_DenseToWords):
    """Dense to CSR: a row-padded dense stream's row pointers and (col, value), L a cycle.

    MINT Section V-B4, as :class:`DenseToCoo`, with the rows as pointers.

    A row pointer is the count of the matrix's nonzeros through the row's last vector:
    the compactor's running count, sent as a mark of each vector with ``row_end``.

    Parameters
    ----------
    lanes : L, values per vector and entries per word (a power of two).
    width : bits of a value.
    index_width : bits of a column id.
    ptr_width : bits of a row pointer (pointers wrap modulo ``2**ptr_width``).
    levels : adder and multiplexer levels between pipeline registers.

    Members
    -------
    dense : In(stream({lanes[L], row_end, last}))
    entries : Out(stream({lanes[L] x {col, value}, count, last}))
    row_ptr : Out(stream({ptr, last}))
        As :class:`~sparseforge.hw.convert_dense.DenseToCsrSignature` says: ``row_ptr[1 ..
        rows]`` (``row_ptr[0]`` is 0).

    Latency and throughput: as :class:`DenseToCoo`'s, the row pointer of a row with its
    last vector's word; one vector a cycle while both outputs are taken.
    """

    PARAMS = (LANES, WIDTH, Param("index_width", 16, 1, 32, "bits of a column id"),
              Param("ptr_width", 32, 1, 48, "bits of a row pointer"), LEVELS)
    REPORT = ({"lanes": 8, "width": 16, "index_width": 16, "ptr_width": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.index_width = v["lanes"], v["width"], v["index_width"]
        self.ptr_width, self.levels = v["ptr_width"], v["levels"]
        entry = wire.csr_entry(self.index_width, self.width)
        super().__init__(DenseToCsrSignature(self.lanes, self.width, self.index_width,
                                             self.ptr_width), entry,
                         data.StructLayout({"col": self.index_width, "row_end": 1}),
                         position_width=self.ptr_width)

    def tag(self, m):
        return {"col": self.coordinates(m)["col"], "row_end": self.dense.payload.row_end}

    def fields(self, found, lane):
        return {"col": self.column(found.tag.col, lane), "value": found.values[lane]}

    def finish(self, m, found, compactor):
        vectors, marks, ptr = compactor.vectors.payload, compactor.marks, self.row_ptr
        m.d.comb += [vectors.mark.eq(found.tag.row_end | found.last),
                     ptr.valid.eq(marks.valid), marks.ready.eq(ptr.ready),
                     ptr.payload.ptr.eq(marks.payload.position),
                     ptr.payload.last.eq(marks.payload.last)]
        wiring.connect(m, compactor.words, wiring.flipped(self.entries))


class DenseToZvcSignature(wiring.Signature):
    """A Dense-to-ZVC converter, seen from it: ``lanes`` values of ``width`` bits a vector.

    - ``dense`` (stream in, :func:`~.interfaces.dense_layout`, flat): a matrix's elements.
    - ``mask`` (stream out, :func:`~sparseforge.sw.wire.zvc_mask`): one word per vector,
      ``last`` on the final one.
    - ``values`` (stream out, :func:`~.interfaces.record_word_layout` without ``count``):
      the nonzeros in order, ``lanes`` a word, framed as
      :func:`~sparseforge.sw.wire.word_end` says.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "dense": In(stream.Signature(dense_layout(lanes, width, rows=False))),
            "mask": Out(stream.Signature(struct(wire.zvc_mask(lanes)))),
            "values": Out(stream.Signature(record_word_layout(width, lanes, count=False))),
        })


@block("dense_to_zvc")
class DenseToZvc(_DenseToWords):
    """Dense to ZVC: a flat dense stream's mask, a word a vector, and nonzeros, L a cycle.

    MINT Section V-B (ZVC of Rhu et al. [9]): zero detection gives the mask, and the
    nonzeros are placed as :class:`DenseToCoo` places its records.

    Parameters
    ----------
    lanes : L, values per vector, mask bits per word and values per word (a power of
        two).
    width : bits of a value.
    levels : adder and multiplexer levels between pipeline registers.

    Members
    -------
    dense : In(stream({lanes[L], last}))
    mask : Out(stream({mask, last}))
    values : Out(stream({lanes[L], last}))
        As :class:`~sparseforge.hw.convert_dense.DenseToZvcSignature` says.

    Latency and throughput: as :class:`DenseToCoo`'s, each vector's mask word with the
    word its nonzeros complete; one vector a cycle while both outputs are taken.
    """

    PARAMS = (LANES, WIDTH, LEVELS)
    REPORT = ({"lanes": 8, "width": 16},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.levels = v["lanes"], v["width"], v["levels"]
        super().__init__(DenseToZvcSignature(self.lanes, self.width),
                         (wire.Field("value", self.width),), data.StructLayout({}),
                         tag_width=self.lanes)

    def tag(self, m):
        return {}

    def fields(self, found, lane):
        return {"value": found.values[lane]}

    def finish(self, m, found, compactor):
        vectors, marks, words = compactor.vectors.payload, compactor.marks, compactor.words
        m.d.comb += [vectors.mark.eq(1), vectors.tag.eq(found.mask),
                     self.mask.valid.eq(marks.valid), marks.ready.eq(self.mask.ready),
                     self.mask.payload.mask.eq(marks.payload.tag),
                     self.mask.payload.last.eq(marks.payload.last),
                     self.values.valid.eq(words.valid), words.ready.eq(self.values.ready),
                     self.values.payload.lanes.eq(words.payload.lanes),
                     self.values.payload.last.eq(words.payload.last)]


class ZvcToDenseSignature(wiring.Signature):
    """A ZVC-to-Dense converter, seen from it: the Dense-to-ZVC converter's streams, each
    the other way.

    - ``mask`` (stream in, :func:`~sparseforge.sw.wire.zvc_mask`) and ``values`` (stream
      in): a matrix in ZVC, as Dense-to-ZVC emits it.
    - ``dense`` (stream out, :func:`~.interfaces.dense_layout`, flat): one vector per mask word.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "mask": In(stream.Signature(struct(wire.zvc_mask(lanes)))),
            "values": In(stream.Signature(record_word_layout(width, lanes, count=False))),
            "dense": Out(stream.Signature(dense_layout(lanes, width, rows=False))),
        })


@block("zvc_to_dense")
class ZvcToDense(wiring.Component):
    """ZVC to Dense: mask words and packed values to a flat dense stream, L elements a cycle.

    MINT Section V-B (ZVC of Rhu et al. [9]).

    The mask bits go through the prefix-sum unit (their exclusive sums, with the running
    carry: each nonzero's position among the values), the mask waiting beside it
    (:class:`~.stream_units.Lockstep`); an :class:`Expander` places the values.

    Parameters
    ----------
    lanes : L, mask bits and values per word, values per dense vector (a power of two).
    width : bits of a value.
    levels : adder levels of the prefix sum between pipeline registers.

    Members
    -------
    mask : In(stream({mask, last}))
    values : In(stream({lanes[L], last}))
    dense : Out(stream({lanes[L], last}))
        As :class:`~sparseforge.hw.convert_dense.ZvcToDenseSignature` says: one dense vector
        per mask word.

    Latency and throughput: ``scan + 1`` cycles from a mask word to its dense vector
    (``scan = ceil(log2 L / levels) + 1``); one vector (L elements) a cycle while its
    value words keep up and ``dense`` is taken.
    """

    PARAMS = (LANES, WIDTH, LEVELS)
    REPORT = ({"lanes": 8, "width": 16},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.levels = v["lanes"], v["width"], v["levels"]
        self.scan = Lockstep({"scan": PrefixSum(lanes=self.lanes, width=position_bits(self.lanes),
                                                variant="kogge_stone", inclusive=0,
                                                levels=self.levels)}, self.lanes)
        self.expander = Expander(self.lanes, self.width)
        self.latency = self.scan.latency + self.expander.latency
        super().__init__(ZvcToDenseSignature(self.lanes, self.width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.scan = scan = self.scan
        m.submodules.expander = expander = self.expander
        given, scanned, vectors = self.mask, scan.taken, expander.vectors
        m.d.comb += [scan.given.valid.eq(given.valid), given.ready.eq(scan.given.ready),
                     scan.given.payload.scan.last.eq(given.payload.last),
                     scan.given.payload.tag.eq(given.payload.mask),
                     vectors.valid.eq(scanned.valid), scanned.ready.eq(vectors.ready),
                     vectors.payload.mask.eq(scanned.payload.tag),
                     vectors.payload.sums.eq(scanned.payload.scan.sums),
                     vectors.payload.total.eq(scanned.payload.scan.total),
                     vectors.payload.last.eq(scanned.payload.scan.last)]
        m.d.comb += [scan.given.payload.scan.counts[i].eq(given.payload.mask[i])
                     for i in range(self.lanes)]
        wiring.connect(m, wiring.flipped(self.values), expander.values)
        wiring.connect(m, expander.dense, wiring.flipped(self.dense))
        return m
