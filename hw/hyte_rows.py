"""B's rows for the Gustavson engine served from a HYTE tensor accessor (HYTE Section
6.3): the adapter :class:`~.gustavson.RowReadSignature`'s docstring describes."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import HyteStatus
from .gustavson import RowReadSignature
from .interfaces import struct
from .stream_units import MemoryPortSignature


@block("hyte_rows")
class HyteRows(wiring.Component):
    """Serves reads of B's rows from the accessor that holds B's tile.

    A request for row ``row`` reads segment ``row - k0`` (``k0`` the tile's first row)
    at offsets 0, 1, ... until ``END``; each word, a ``{col, value}`` element
    (:func:`~sparseforge.sw.wire.csr_entry`), is held back one answer so that the row's
    final element leaves with ``last``; a row with none answers one ``empty`` element.
    At the first ``MISS`` (the word bypassed the buffer: it and every later one of the
    segment miss) the positions of the row's kept entry (:func:`~sparseforge.sw.wire.
    hyte_kept`, written by :class:`~.hyte_positions.HytePositions`; its low bits, a
    :func:`~sparseforge.sw.wire.hyte_segment`) give where the segment lies in memory
    and how long it is, and the rest of it is read from memory.

    Parameters
    ----------
    index_width, value_width : as the Gustavson engine's.
    count_width : the accessor's segment and offset bits.
    pos_width : bits of a position in B's arrays.
    addr_width : bits of a memory address.

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

    Latency and throughput: one read in flight, to the accessor or memory, and a row at
    a time: an element every accessor answer (four cycles and more) at best. A
    simple server: the engine's ``inflight`` requests queue behind it.
    """

    PARAMS = (Param("index_width", 16, 4, 32, "bits of a row and a column id"),
              Param("value_width", 16, 2, 32, "bits of a value of B"),
              Param("count_width", 16, 16, 32, "the accessor's segment and offset bits"),
              Param("pos_width", 20, 2, 32, "bits of a position in B's arrays"),
              Param("addr_width", 24, 4, 48, "bits of a memory address"))
    REPORT = ({},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.index_width, self.value_width = v["index_width"], v["value_width"]
        self.count_width, self.pos_width = v["count_width"], v["pos_width"]
        self.addr_width = v["addr_width"]
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
        request, response = self.rows.request, self.rows.response
        read, answer = self.read, self.read_data
        row, off = Signal(self.index_width), Signal(self.count_width)
        begin, length = Signal(self.pos_width), Signal(self.pos_width)
        word, held = Signal(self.element), Signal(self.element)
        have, missed = Signal(), Signal()       # an element held back; the row missed
        kept = data.View(self.kept_layout, self.kept.response.payload)
        m.d.comb += [read.payload.segment.eq(row - self.k0), read.payload.offset.eq(off),
                     self.kept.request.payload.eq(self.kept_base + row),
                     self.elements.request.payload.eq(self.elements_base + begin + off),
                     response.payload.col.eq(held.col), response.payload.value.eq(held.value)]

        with m.FSM():
            with m.State("idle"):
                m.d.comb += request.ready.eq(1)
                with m.If(request.valid):
                    m.d.sync += [row.eq(request.payload.row), off.eq(0), have.eq(0),
                                 missed.eq(0)]
                    m.next = "ask"
            with m.State("ask"):
                m.d.comb += read.valid.eq(1)
                with m.If(read.ready):
                    m.next = "answer"
            with m.State("answer"):
                m.d.comb += answer.ready.eq(1)
                with m.If(answer.valid):
                    m.d.sync += word.eq(answer.payload.data)
                    with m.Switch(answer.payload.status):
                        with m.Case(HyteStatus.HIT):
                            m.next = "word"
                        with m.Case(HyteStatus.END):
                            m.next = "finish"
                        with m.Default():
                            m.d.sync += missed.eq(1)
                            m.next = "where"
            # The first miss: where the segment lies in memory, and its length.
            with m.State("where"):
                m.d.comb += self.kept.request.valid.eq(1)
                with m.If(self.kept.request.ready):
                    m.next = "where_answer"
            with m.State("where_answer"):
                m.d.comb += self.kept.response.ready.eq(1)
                with m.If(self.kept.response.valid):
                    m.d.sync += [begin.eq(kept.begin), length.eq(kept.end - kept.begin)]
                    m.next = "miss"
            with m.State("miss"):
                with m.If(off == length):
                    m.next = "finish"
                with m.Else():
                    m.d.comb += self.elements.request.valid.eq(1)
                    with m.If(self.elements.request.ready):
                        m.next = "miss_answer"
            with m.State("miss_answer"):
                m.d.comb += self.elements.response.ready.eq(1)
                with m.If(self.elements.response.valid):
                    m.d.sync += word.eq(self.elements.response.payload)
                    m.next = "word"
            # The element before this one leaves (not the last); this one is held.
            with m.State("word"):
                m.d.comb += response.valid.eq(have)
                with m.If(~have | response.ready):
                    m.d.sync += [held.eq(word), have.eq(1), off.eq(off + 1)]
                    with m.If(missed):
                        m.next = "miss"
                    with m.Else():
                        m.next = "ask"
            with m.State("finish"):
                m.d.comb += [response.valid.eq(1), response.payload.last.eq(1),
                             response.payload.empty.eq(~have)]
                with m.If(response.ready):
                    m.next = "idle"
        return m
