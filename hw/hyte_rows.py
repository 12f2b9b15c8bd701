"""B's rows for the Gustavson engine served from a HYTE tensor accessor (HYTE Section
6.3): the adapter :class:`~.gustavson.RowReadSignature`'s docstring describes."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import HyteStatus
from .gustavson import RowReadSignature
from .interfaces import struct
from .stream_units import MemoryPortSignature, Skid


@block("hyte_rows")
class HyteRows(wiring.Component):
    """Serves reads of B's rows from the accessor that holds B's tile, back to back.

    A request for row ``row`` reads segment ``row - k0`` (``k0`` the tile's first row)
    at offsets 0, 1, ..., ``inflight`` reads ahead of their answers, until an answer
    ends the row: a ``HIT`` flagged ``last`` (the segment's final word), which leaves
    with the row's ``last``, or ``END`` (a segment of no words), which answers one
    ``empty`` element. Each word is a ``{col, value}`` element
    (:func:`~sparseforge.sw.wire.csr_entry`). The next request's reads begin on the
    cycle the row ends; the reads already sent past its end are still answered, in
    order, so they are counted (every read unanswered then was the ended row's) and
    their answers dropped while the next row's reads go out behind them. At the first
    ``MISS`` (the word bypassed the buffer: it and every later one of the segment miss)
    the positions of the row's kept entry (:func:`~sparseforge.sw.wire.hyte_kept`,
    written by :class:`~.hyte_positions.HytePositions`; its low bits, a
    :func:`~sparseforge.sw.wire.hyte_segment`) give where the segment lies in memory
    and how long it is, and the rest of it is read from memory, ``inflight`` reads
    ahead, none past its end (so memory sees the same reads whatever ``inflight``).

    Parameters
    ----------
    index_width, value_width : as the Gustavson engine's.
    count_width : the accessor's segment and offset bits.
    pos_width : bits of a position in B's arrays.
    addr_width : bits of a memory address.
    inflight : reads sent ahead of their answers, to the accessor or memory (1: one
        at a time); covers their latency.

    Members
    -------
    rows : In(:class:`~.gustavson.RowReadSignature`)
        The engine's reads of B's rows.
    read, read_data : the accessor's read port, as
        :class:`~.hyte_accessor.HyteAccessorSignature` names it, seen from its reader.
    kept, elements : Out(:class:`~.stream_units.MemoryPortSignature`)
        Reads of the kept entries' positions at ``kept_base + row`` and of B's elements
        at ``elements_base + position``.
    k0, kept_base, elements_base : In, held while rows are read.

    Latency and throughput: an element a cycle once ``inflight`` covers the accessor's
    latency. A row's end is known only when its final word's answer arrives, so the
    next row's first read goes out then: each row held in the buffer costs its words
    plus the accessor's latency, the reads sent past its end in the meantime answered
    and dropped while the next row's answers wait behind them (where the accessor
    answers on the next cycle, rows follow each other with no idle cycle). A row whose
    rest bypassed waits for its kept entry's read, then its rest from memory. The
    elements leave through a register slice (a cycle), which cuts the accessor's data
    and the engine's ``ready`` apart. The engine's ``inflight`` requests queue behind
    the row being served.
    """

    PARAMS = (Param("index_width", 16, 4, 32, "bits of a row and a column id"),
              Param("value_width", 16, 2, 32, "bits of a value of B"),
              Param("count_width", 16, 16, 32, "the accessor's segment and offset bits"),
              Param("pos_width", 20, 2, 32, "bits of a position in B's arrays"),
              Param("addr_width", 24, 4, 48, "bits of a memory address"),
              Param("inflight", 4, 1, 256, "reads unanswered, to the accessor or memory"))
    REPORT = ({},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.index_width, self.value_width = v["index_width"], v["value_width"]
        self.count_width, self.pos_width = v["count_width"], v["pos_width"]
        self.addr_width, self.inflight = v["addr_width"], v["inflight"]
        iw, vw, cw, aw = self.index_width, self.value_width, self.count_width, self.addr_width
        self.element = struct(wire.csr_entry(iw, vw))
        self.kept_layout = struct(wire.hyte_segment(self.pos_width))
        super().__init__({
            "rows": In(RowReadSignature(iw, vw)),
            "read": Out(stream.Signature(struct(wire.hyte_read(cw)))),
            "read_data": In(stream.Signature(struct(wire.hyte_read_data(self.element.size)))),
            "kept": Out(MemoryPortSignature(aw, self.kept_layout.size)),
            "elements": Out(MemoryPortSignature(aw, self.element.size)),
            "k0": In(iw), "kept_base": In(aw), "elements_base": In(aw),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.out = out = Skid(self.rows.response.payload.shape())
        wiring.connect(m, out.o, wiring.flipped(self.rows.response))
        request, response = self.rows.request, out.i
        read, answer, elements = self.read, self.read_data, self.elements
        row, asked = Signal(self.index_width), Signal(self.count_width)
        off, begin, length, wanted = (Signal(self.pos_width, name=n)
                                      for n in ("off", "begin", "length", "wanted"))
        pending = Signal(range(self.inflight + 1))     # accessor reads unanswered
        skip = Signal(range(self.inflight + 1))        # of them, an ended row's
        kept = data.View(self.kept_layout, self.kept.response.payload)
        word = data.View(self.element, answer.payload.data)
        status = answer.payload.status
        mine = answer.valid & (skip == 0)               # an answer of the current row
        start = request.valid & request.ready           # a row's first read, now
        m.d.comb += [read.payload.segment.eq(Mux(start, request.payload.row, row) - self.k0),
                     read.payload.offset.eq(Mux(start, 0, asked)),
                     self.kept.request.payload.eq(self.kept_base + row),
                     elements.request.payload.eq(self.elements_base + begin + wanted),
                     answer.ready.eq(skip != 0)]       # an ended row's answers dropped
        sent, answered = read.valid & read.ready, answer.valid & answer.ready
        m.d.sync += pending.eq(pending + sent - answered)
        with m.If(skip != 0):
            m.d.sync += skip.eq(skip - answered)

        def element(valid, col, value, last, empty):
            """The row's next element offered; ``True`` on the cycle it is taken."""
            m.d.comb += [response.valid.eq(valid), response.payload.col.eq(col),
                         response.payload.value.eq(value), response.payload.last.eq(last),
                         response.payload.empty.eq(empty)]
            with m.If(valid & response.ready):
                m.d.sync += off.eq(off + 1)
            return valid & response.ready

        def then(ended):
            """Once the row has ``ended``, the next request's reads begin at once."""
            m.d.comb += request.ready.eq(ended)
            with m.If(start):
                m.next = "ask"
            with m.Elif(ended):
                m.next = "idle"

        with m.FSM():
            with m.State("idle"):
                then(1)
                m.d.comb += read.valid.eq(start & (pending < self.inflight))
            # The row's words from the accessor, reads sent until an answer ends it.
            with m.State("ask"):
                hit, end = status == HyteStatus.HIT, status == HyteStatus.END
                stop = mine & (~hit | answer.payload.last)   # no more reads of this row
                taken = element(mine & (hit | end), word.col, word.value,
                                answer.payload.last | end, end)
                with m.If(mine):
                    m.d.comb += answer.ready.eq(taken | ~(hit | end))
                ended = taken & stop
                then(ended)
                m.d.comb += read.valid.eq((pending < self.inflight) & (~stop | start))
                with m.If(ended | (mine & (status == HyteStatus.MISS))):
                    m.d.sync += skip.eq(pending - 1)     # this row's reads left unanswered
                with m.If(mine & (status == HyteStatus.MISS)):
                    m.next = "where"
            # The first miss: where the segment lies in memory, and its length.
            with m.State("where"):
                m.d.comb += self.kept.request.valid.eq(1)
                with m.If(self.kept.request.ready):
                    m.next = "where_answer"
            with m.State("where_answer"):
                m.d.comb += self.kept.response.ready.eq(1)
                with m.If(self.kept.response.valid):
                    m.d.sync += [begin.eq(kept.begin), length.eq(kept.end - kept.begin),
                                 wanted.eq(off)]
                    m.next = "miss"
            # The rest of the segment from memory, up to ``inflight`` reads unanswered; a
            # row of none (its segment bypassed whole) answers one empty element.
            with m.State("miss"):
                m.d.comb += elements.request.valid.eq((wanted != length)
                                                      & (wanted - off < self.inflight))
                with m.If(elements.request.valid & elements.request.ready):
                    m.d.sync += wanted.eq(wanted + 1)
                got = data.View(self.element, elements.response.payload)
                empty = off == length
                taken = element(elements.response.valid | empty, got.col, got.value,
                                empty | (off + 1 == length), empty)
                m.d.comb += elements.response.ready.eq(response.ready & ~empty)
                then(taken & (empty | (off + 1 == length)))
                m.d.comb += read.valid.eq(start & (pending < self.inflight))
        # After the FSM: a row that begins as the last ends counts its words from 0.
        with m.If(start):
            m.d.sync += [row.eq(request.payload.row), asked.eq(sent), off.eq(0)]
        with m.Elif(sent):
            m.d.sync += asked.eq(asked + 1)
        return m
