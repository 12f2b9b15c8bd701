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
    at offsets 0, 1, ... until an answer is not a ``HIT``, ``inflight`` reads ahead of
    their answers (the length is not known before ``END``: the reads past it are
    answered and dropped); each word, a ``{col, value}`` element
    (:func:`~sparseforge.sw.wire.csr_entry`), is held back one answer so that the row's
    final element leaves with ``last``; a row with none answers one ``empty`` element.
    At the first ``MISS`` (the word bypassed the buffer: it and every later one of the
    segment miss) the positions of the row's kept entry (:func:`~sparseforge.sw.wire.
    hyte_kept`, written by :class:`~.hyte_positions.HytePositions`; its low bits, a
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

    Latency and throughput: a row at a time, an element a cycle at best once
    ``inflight`` covers the accessor's or memory's latency; a row's end costs the
    reads past it draining. The engine's ``inflight`` requests queue behind it.
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
        request, response = self.rows.request, self.rows.response
        read, answer, elements = self.read, self.read_data, self.elements
        row, asked, off = Signal(self.index_width), Signal(self.count_width), Signal(
            self.count_width)
        begin, length, wanted = (Signal(self.pos_width, name=n)
                                 for n in ("begin", "length", "wanted"))
        pending = Signal(range(self.inflight + 1))     # accessor reads unanswered
        held = Signal(self.element)
        have, missed = Signal(), Signal()       # an element held back; the row missed
        kept = data.View(self.kept_layout, self.kept.response.payload)
        hit = answer.payload.status == HyteStatus.HIT
        m.d.comb += [read.payload.segment.eq(row - self.k0), read.payload.offset.eq(asked),
                     self.kept.request.payload.eq(self.kept_base + row),
                     elements.request.payload.eq(self.elements_base + begin + wanted),
                     response.payload.col.eq(held.col), response.payload.value.eq(held.value)]
        m.d.sync += pending.eq(pending + (read.valid & read.ready)
                               - (answer.valid & answer.ready))

        def take(valid, word):
            """A word arriving (``valid``): the one held leaves (not the last), it is
            held; ``True`` on the cycle it is taken."""
            m.d.comb += response.valid.eq(have & valid)
            taken = valid & (~have | response.ready)
            with m.If(taken):
                m.d.sync += [held.eq(word), have.eq(1), off.eq(off + 1)]
            return ~have | response.ready

        with m.FSM():
            with m.State("idle"):
                m.d.comb += request.ready.eq(1)
                with m.If(request.valid):
                    m.d.sync += [row.eq(request.payload.row), asked.eq(0), off.eq(0),
                                 have.eq(0), missed.eq(0)]
                    m.next = "ask"
            # Reads of the next offsets, up to ``inflight`` unanswered, until an answer
            # is not a HIT; the reads past it are answered and dropped.
            with m.State("ask"):
                m.d.comb += read.valid.eq(pending < self.inflight)
                with m.If(read.valid & read.ready):
                    m.d.sync += asked.eq(asked + 1)
                room = take(answer.valid & hit, answer.payload.data)
                m.d.comb += answer.ready.eq(~hit | room)
                with m.If(answer.valid & ~hit):
                    m.d.sync += missed.eq(answer.payload.status == HyteStatus.MISS)
                    m.next = "drop"
            with m.State("drop"):
                m.d.comb += answer.ready.eq(1)
                with m.If((pending == 0) & missed):
                    m.next = "where"
                with m.Elif(pending == 0):
                    m.next = "finish"
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
            # The rest of the segment from memory, up to ``inflight`` reads unanswered.
            with m.State("miss"):
                with m.If(off == length):
                    m.next = "finish"
                m.d.comb += elements.request.valid.eq((wanted != length)
                                                      & (wanted - off < self.inflight))
                with m.If(elements.request.valid & elements.request.ready):
                    m.d.sync += wanted.eq(wanted + 1)
                m.d.comb += elements.response.ready.eq(
                    take(elements.response.valid, elements.response.payload))
            with m.State("finish"):
                m.d.comb += [response.valid.eq(1), response.payload.last.eq(1),
                             response.payload.empty.eq(~have)]
                with m.If(response.ready):
                    m.next = "idle"
        return m
