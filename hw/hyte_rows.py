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
from .stream_units import MemoryPortSignature, Queue, Skid


@block("hyte_rows")
class HyteRows(wiring.Component):
    """Serves reads of B's rows from the accessor that holds B's tile, back to back.

    A request for row ``row`` reads segment ``row - k0`` (``k0`` the tile's first row)
    at offsets 0, 1, ..., ``inflight`` reads ahead of their answers, until an answer
    ends the row: a ``HIT`` flagged ``last`` (the segment's final word), which leaves
    with the row's ``last``; ``END`` (a segment of no words), which answers one
    ``empty`` element; or the first ``MISS`` (the word bypassed the buffer: it and every
    later one of the segment miss). Each word is a ``{col, value}`` element
    (:func:`~sparseforge.sw.wire.csr_entry`). The next request's reads begin on the
    cycle the row ends; the reads already sent past its end are still answered, in
    order, so they are counted (every read unanswered then was the ended row's) and
    their answers dropped while the next row's reads go out behind them.

    A row's ``MISS`` reads its kept entry (:func:`~sparseforge.sw.wire.hyte_kept`,
    written by :class:`~.hyte_positions.HytePositions`; its low bits, a
    :func:`~sparseforge.sw.wire.hyte_segment`: where the segment lies in memory and how
    long it is) on that cycle, and the next rows go on meanwhile: three queues of
    ``inflight`` items (at least 3; at least 5 of what was found) join the accessor's
    side to the memory's and the output. The
    accessor's side queues what it found in row order (words, empty rows, misses) and,
    per miss, where its rest begins; the fetcher takes each miss's kept entry in order
    and reads its rest from memory, none past its end (so memory sees the same reads
    whatever ``inflight``), each read's tag (the row's last? a rest of none?) queued;
    the output takes the words found and, at a miss, the rest's elements as their tags
    say, so rows leave in request order.

    Parameters
    ----------
    index_width, value_width : as the Gustavson engine's.
    count_width : the accessor's segment and offset bits.
    pos_width : bits of a position in B's arrays.
    addr_width : bits of a memory address.
    inflight : reads sent ahead of their answers, to the accessor or memory (1: one
        at a time), covering their latency; and how far the accessor's side runs ahead
        of a miss's rest.

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
    and memory's latencies. A row's end is known only when the answer that ends it
    arrives (its final word, ``END`` or its first ``MISS``), so the next row's first
    read goes out then: on the accessor's side each row costs its words held (1 if none)
    plus the accessor's latency less one, the reads past its end sent meanwhile and
    dropped; where the accessor answers on the next cycle, rows follow each other with
    no idle cycle. A bypassed row's memory round trips (its kept entry, then its rest)
    overlap the next rows' reads; the fetcher spends a cycle a miss taking its kept
    entry. The words found cross their queue (three cycles: its ``ready`` a register,
    so the turnaround does not wait on the queue's level) and a register slice (a cycle
    more), which cut the accessor's data and the engine's ``ready`` apart. The
    engine's ``inflight`` requests queue behind the row being served.
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
        pw, depth = self.pos_width, max(3, self.inflight)    # latency 2: a cycle an item
        element = wire.row_element(self.index_width, self.value_width)
        # What the accessor side found, in row order, for the output: a word, an empty
        # row's answer, or a row's first miss (its rest comes from memory). Its ``ready``
        # from a register, off the accessor's side's turnaround (latency 3: a cycle a
        # word from 5 deep).
        found = struct((*element, wire.Field("miss", 1)))
        m.submodules.found = found_q = Queue(found, depth=max(5, depth), latency=3)
        # Per miss, where its rest begins (the words found before it), to the fetcher.
        m.submodules.rests = rests = Queue(pw, depth=depth, latency=2)
        # Per element read from memory (or a rest of none): the row's last, empty.
        m.submodules.tags = tags = Queue(struct(element[2:]), depth=depth, latency=2)
        m.submodules.out = out = Skid(struct(element))
        wiring.connect(m, out.o, wiring.flipped(self.rows.response))
        self._ask(m, found_q.i, rests.i)
        self._fetch(m, rests.o, tags.i)
        self._emit(m, found_q.o, tags.o, out.i)
        return m

    def _ask(self, m, found, rests):
        """The accessor's side: each request's reads, sent until an answer ends the row
        (its final word, ``END``, or its first ``MISS``, whose kept entry is read at
        once); then the next request's, on the same cycle."""
        request, read, answer = self.rows.request, self.read, self.read_data
        row, asked = Signal(self.index_width), Signal(self.count_width)
        off = Signal(self.pos_width)                    # the row's words found
        busy = Signal()                                 # a row's reads are under way
        pending = Signal(range(self.inflight + 1))     # reads unanswered
        skip = Signal(range(self.inflight + 1))        # of them, an ended row's
        word = data.View(self.element, answer.payload.data)
        status, last = answer.payload.status, answer.payload.last
        hit, end, miss = (status == s for s in (HyteStatus.HIT, HyteStatus.END,
                                                HyteStatus.MISS))
        mine = busy & answer.valid & (skip == 0)        # an answer of the current row
        stop = mine & (~hit | last)                     # no more reads of this row
        kept = self.kept.request
        m.d.comb += [kept.payload.eq(self.kept_base + row),
                     kept.valid.eq(mine & miss & found.ready & rests.ready),
                     rests.payload.eq(off), rests.valid.eq(kept.valid & kept.ready),
                     found.payload.col.eq(word.col), found.payload.value.eq(word.value),
                     found.payload.last.eq(last | end), found.payload.empty.eq(end),
                     found.payload.miss.eq(miss),
                     found.valid.eq(mine & ((hit | end) | rests.valid))]
        taken = found.valid & found.ready
        ended = taken & stop
        m.d.comb += [answer.ready.eq((skip != 0) | taken),   # an ended row's dropped
                     request.ready.eq(~busy | ended)]
        start = request.valid & request.ready           # a row's first read, now
        m.d.comb += [read.payload.segment.eq(Mux(start, request.payload.row, row) - self.k0),
                     read.payload.offset.eq(Mux(start, 0, asked)),
                     read.valid.eq((pending < self.inflight) & ((busy & ~stop) | start))]
        sent, answered = read.valid & read.ready, answer.valid & answer.ready
        m.d.sync += pending.eq(pending + sent - answered)
        with m.If(skip != 0):
            m.d.sync += skip.eq(skip - answered)
        with m.If(ended):
            m.d.sync += [skip.eq(pending - 1), busy.eq(0)]   # the row's reads unanswered
        with m.If(taken):
            m.d.sync += off.eq(off + 1)
        with m.If(sent):
            m.d.sync += asked.eq(asked + 1)
        with m.If(start):
            m.d.sync += [row.eq(request.payload.row), asked.eq(sent), off.eq(0), busy.eq(1)]

    def _fetch(self, m, rests, tags):
        """The memory's side: per miss, in order, its kept entry's answer gives where
        the segment lies and its length; the rest's reads go out one a cycle, each with
        its tag, up to ``inflight`` of them not yet emitted."""
        answer, elements = self.kept.response, self.elements
        kept = data.View(self.kept_layout, answer.payload)
        busy = Signal()
        begin, length, wanted = (Signal(self.pos_width, name=n)
                                 for n in ("begin", "length", "wanted"))
        load = ~busy & answer.valid & rests.valid
        none = wanted == length                         # a rest of no words: its tag alone
        final = none | (wanted + 1 == length)
        m.d.comb += [answer.ready.eq(load), rests.ready.eq(load),
                     elements.request.payload.eq(self.elements_base + begin + wanted),
                     elements.request.valid.eq(busy & ~none & tags.ready),
                     tags.payload.last.eq(final), tags.payload.empty.eq(none),
                     tags.valid.eq(busy & (none | elements.request.ready))]
        with m.If(load):
            m.d.sync += [begin.eq(kept.begin), length.eq(kept.end - kept.begin),
                         wanted.eq(rests.payload), busy.eq(1)]
        with m.If(tags.valid & tags.ready):
            m.d.sync += wanted.eq(wanted + 1)
            with m.If(final):
                m.d.sync += busy.eq(0)

    def _emit(self, m, found, tags, response):
        """The output: what the accessor's side found, in order; at a miss, the row's
        rest from memory as its tags say, then the next."""
        got = data.View(self.element, self.elements.response.payload)
        item = found.payload
        rest = found.valid & item.miss
        memory = rest & tags.valid & ~tags.payload.empty    # an element from memory
        m.d.comb += [response.payload.col.eq(Mux(rest, got.col, item.col)),
                     response.payload.value.eq(Mux(rest, got.value, item.value)),
                     response.payload.last.eq(Mux(rest, tags.payload.last, item.last)),
                     response.payload.empty.eq(Mux(rest, tags.payload.empty, item.empty)),
                     response.valid.eq(Mux(rest, tags.valid & (tags.payload.empty
                                                               | self.elements.response.valid),
                                           found.valid))]
        taken = response.valid & response.ready
        m.d.comb += [found.ready.eq(taken & (~rest | tags.payload.last)),
                     tags.ready.eq(taken & rest),
                     self.elements.response.ready.eq(taken & memory)]
