"""HYTE's fiber-segment positions across tiles (HYTE Section 6.2, Fig. 5a): where a
tile's segment of a CSR row begins and ends, from positions kept in memory."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .interfaces import MemoryWritePortSignature, struct
from .stream_units import MemoryPortSignature, Queue, Skid

END, BEGIN = 0, 1
"""The tags of a fetch's two reads: its row's end, where its segment begins."""


class SegmentPositionsSignature(wiring.Signature):
    """The positions unit (Section 6.2), seen from it.

    - ``fetch`` (stream in, :func:`~sparseforge.sw.wire.hyte_fetch`): a segment to find.
    - ``segment`` (stream out, :func:`~sparseforge.sw.wire.hyte_segment`): its positions,
      one per fetch, in order.
    - ``memory`` (:class:`~.stream_units.MemoryPortSignature`): reads of one memory
      holding B's row pointers at ``ptr_base``, its column ids at ``cols_base`` (each in
      a word's low bits) and the kept entries (:func:`~sparseforge.sw.wire.hyte_kept`),
      one per row, at ``kept_base``; ``writes``
      (:class:`~.interfaces.MemoryWritePortSignature`): the kept entries' writes.
    - ``ptr_base``, ``cols_base``, ``kept_base`` (in): held while fetches run.
    """

    def __init__(self, dim_width, pos_width, addr_width):
        word = struct(wire.hyte_kept(dim_width, pos_width)).size
        super().__init__({
            "fetch": In(stream.Signature(struct(wire.hyte_fetch(dim_width)))),
            "segment": Out(stream.Signature(struct(wire.hyte_segment(pos_width)))),
            "memory": Out(MemoryPortSignature(addr_width, word)),
            "writes": Out(MemoryWritePortSignature(addr_width, word)),
            "ptr_base": In(addr_width), "cols_base": In(addr_width),
            "kept_base": In(addr_width),
        })


@block("hyte_positions")
class HytePositions(wiring.Component):
    """Finds a tile's segment of a CSR row from the positions kept across tiles.

    HYTE keeps, per fiber, where its segments lie, in memory (a tile's coordinates do
    not say where its elements are stored). Per fetch: the row's end (``ptr[row +
    1]``); where the segment begins: the row pointer when ``bj`` is 0 (a sweep along j
    starts over), else the kept entry's ``begin`` when its bounds are the fetch's (the
    same tile again) or its ``end`` (the next tile along j, which begins where the last
    ended); then the column ids from there until one reaches ``ej`` or the row ends;
    the entry ``{bj, ej, begin, end}`` written back; the segment sent.
    :mod:`sparseforge.sim.models.hyte_positions` is the specification (a fetch no sweep
    of adjacent tiles makes is refused there, and not checked here).

    Parameters
    ----------
    dim_width : bits of a row and a column id.
    pos_width : bits of a position in B's arrays.
    addr_width : bits of a memory address.
    inflight : column ids the scan reads ahead of their answers (1: one at a time, so
        it reads none past the one that ends the segment; more: up to ``inflight - 1``
        more of the row, answered and dropped, for a scan a word a cycle).

    Members
    -------
    As :class:`SegmentPositionsSignature` says.

    Latency and throughput: pipelined across fetches, every read tagged (a queue of
    their kinds beside the port) so the in-order answers go where they belong. A fetch's
    two reads (the row's end; the row pointer or the kept entry) go out together, as
    soon as it arrives and while earlier rows' column ids are read: up to two fetches
    read ahead of the scan. A row's scan reads its column ids from ``begin``, ``inflight``
    reads in flight across rows (the next row's begin as the last row's reads end, the
    answers of two rows told apart by a sequence bit); a row ends once its reads are
    answered, its entry is written and then its segment sent, while later rows scan. So
    a fetch costs about its reads once the reads in flight cover the memory's latency,
    not three round trips. A fetch of a row no higher than the last waits until every
    earlier segment is sent (its kept entry may be the one being written): rows rise
    inside a tile. A read offered stays offered until taken, so a column id offered
    as the segment's end is found still goes out (its answer dropped). One comparator
    and one adder a cycle on the scan.
    """

    PARAMS = (Param("dim_width", 16, 2, 32, "bits of a row and column id"),
              Param("pos_width", 20, 2, 32, "bits of a position in B's arrays"),
              Param("addr_width", 24, 4, 48, "bits of a memory address"),
              Param("inflight", 1, 1, 64, "column ids read ahead of their answers"))
    REPORT = ({}, {"dim_width": 24, "pos_width": 32, "addr_width": 32})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.dim_width, self.pos_width, self.addr_width = (v["dim_width"], v["pos_width"],
                                                           v["addr_width"])
        self.inflight = v["inflight"]
        super().__init__(SegmentPositionsSignature(self.dim_width, self.pos_width,
                                                   self.addr_width))

    def elaborate(self, platform):
        m = Module()
        out, mem, writes = self.segment, self.memory, self.writes
        # The fetches through a register slice: their handshake stays off the reads'.
        m.submodules.fetches = fetches = Skid(self.fetch.payload.shape())
        wiring.connect(m, wiring.flipped(self.fetch), fetches.i)
        fetch = fetches.o
        P, W = self.pos_width, self.dim_width
        at = struct(wire.hyte_fetch(W))
        row_layout = data.StructLayout({"at": at, "begin": P, "stop": P})
        kept_layout = struct(wire.hyte_kept(W, P))
        # Every read's tag, in request order: what its answer is (``END``, ``BEGIN``, or
        # a column id of the row scanned under sequence bit ``COL | seq``).
        m.submodules.tags = tags = Queue(2, depth=self.inflight + 4, latency=1)
        # Fetches whose two reads went out; rows with both answered; rows scanned (their
        # column reads under way), oldest first; segments found, to write and send.
        m.submodules.waiting = waiting = Queue(at, depth=2, latency=1)
        m.submodules.headers = headers = Queue(row_layout, depth=2, latency=1)
        m.submodules.scanning = scanning = Queue(row_layout, depth=2, latency=1)
        m.submodules.done = done = Queue(row_layout, depth=2, latency=1)

        # -- requests: a row's column ids first, else the next fetch's two reads --------
        busy = Signal()                                 # a row's column reads go out
        ask, stop = Signal(P, name="ask"), Signal(P, name="stop")
        iseq, nseq, aseq = Signal(), Signal(), Signal()  # the issued, next, scanned rows'
        owed = [Signal(range(self.inflight + 1), name=f"owed{s}") for s in (0, 1)]
        flight = Signal(range(self.inflight + 1))      # their sum, a register of its own
        found = Signal()                                # the scanned row reached ``ej``
        second, begin_at = Signal(), Signal.like(mem.request.payload, name="begin_at")
        fetched = Signal(range(3))                      # fetches read, rows not yet begun
        flying = Signal(range(16))                      # fetches taken, segments not sent
        last_row = Signal(W)
        # A read offered stays offered, the same read, until taken: ``held`` says which
        # kind was offered and not taken (a column id, the begin, a fetch's end).
        held = Signal(3)
        mine = busy & (iseq == aseq) & found            # the issued row's end was found
        asked = Signal()                                # ``ask == stop``, as a register
        ending = asked | (mine & ~held[0])
        p = fetch.payload
        # A fetch's kept entry is read once no earlier fetch of its row can still write
        # it: rows rise inside a tile; anything else waits for the unit to drain. Whether
        # the fetch offered rises is a register: compared on the cycle before, while it
        # waited (so a fetch behind others waits a cycle at least).
        waited, rises = Signal(), Signal()
        m.d.sync += [waited.eq(fetch.valid & ~fetch.ready), rises.eq(p.row > last_row)]
        wants = Cat(busy & ~ending & (flight < self.inflight), second,
                    ~second & fetch.valid & (fetched < 2) & waiting.i.ready
                    & ((flying == 0) | (waited & rises)))
        col, second_, take = (Mux(held.any(), held[n], wants[n] & ~wants[:n].any())
                              for n in range(3))
        fire = mem.request.valid & mem.request.ready
        m.d.sync += held.eq(Mux(mem.request.valid & ~fire, Cat(col, second_, take), 0))
        m.d.comb += [mem.request.valid.eq(tags.i.ready & (col | second_ | take)),
                     tags.i.valid.eq(fire),
                     waiting.i.payload.eq(p)]
        with m.If(col):
            m.d.comb += [mem.request.payload.eq(self.cols_base + ask),
                         tags.i.payload.eq(Cat(iseq, 1))]
            with m.If(fire):
                m.d.sync += [ask.eq(ask + 1), asked.eq(ask + 1 == stop)]
        with m.Elif(second_):
            m.d.comb += [mem.request.payload.eq(begin_at), tags.i.payload.eq(BEGIN)]
            with m.If(fire):
                m.d.sync += second.eq(0)
        with m.Else():
            m.d.comb += [mem.request.payload.eq(self.ptr_base + p.row + 1),
                         tags.i.payload.eq(END),
                         fetch.ready.eq(fire), waiting.i.valid.eq(fire)]
            with m.If(fire):
                m.d.sync += [second.eq(1), last_row.eq(p.row),
                             begin_at.eq(Mux(p.bj == 0, self.ptr_base, self.kept_base)
                                         + p.row)]
        # A row whose reads are answered begins its scan as the last row's reads end.
        start = (~busy | ending) & headers.o.valid & scanning.i.ready
        m.d.comb += [scanning.i.payload.eq(headers.o.payload),
                     scanning.i.valid.eq(start), headers.o.ready.eq(start)]
        with m.If(busy & ending):
            m.d.sync += busy.eq(0)
        with m.If(start):
            h = headers.o.payload
            m.d.sync += [busy.eq(1), ask.eq(h.begin), stop.eq(h.stop),
                         asked.eq(h.begin == h.stop), iseq.eq(nseq), nseq.eq(~nseq)]
        m.d.sync += fetched.eq(fetched + (fetch.valid & fetch.ready) - start)

        # -- answers, in request order by their tags -----------------------------------
        tag, answer = tags.o.payload, mem.response.payload
        kept = data.View(kept_layout, answer)
        row_end = Signal(P)
        w = waiting.o.payload
        cur = scanning.o.payload
        n = Signal(P)                                   # the scanned row's elements so far
        took = mem.response.valid & mem.response.ready
        m.d.comb += [tags.o.ready.eq(took),
                     headers.i.payload.at.eq(w), headers.i.payload.stop.eq(row_end),
                     headers.i.payload.begin.eq(
                         Mux(w.bj == 0, answer[:P],
                             Mux((kept.bj == w.bj) & (kept.ej == w.ej), kept.begin,
                                 kept.end)))]
        with m.If(tags.o.valid), m.Switch(tag):
            with m.Case(END):
                m.d.comb += mem.response.ready.eq(1)
                with m.If(took):
                    m.d.sync += row_end.eq(answer[:P])
            with m.Case(BEGIN):
                m.d.comb += [mem.response.ready.eq(headers.i.ready),
                             headers.i.valid.eq(mem.response.valid),
                             waiting.o.ready.eq(took)]
            with m.Default():                       # a column id: the scanned row's
                m.d.comb += mem.response.ready.eq(tag[0] == aseq)
                with m.If(took & ~found):
                    with m.If(answer[:W] >= cur.at.ej):
                        m.d.sync += found.eq(1)
                    with m.Else():
                        m.d.sync += n.eq(n + 1)
        for s in (0, 1):
            issued = fire & col & (iseq == s)
            answered = took & tag[1] & (tag[0] == s)
            m.d.sync += owed[s].eq(owed[s] + issued - answered)
        m.d.sync += flight.eq(flight + (fire & col) - (took & tag[1]))
        # The scanned row ends once the issuer is past it and its reads are answered.
        end = (scanning.o.valid & ~(busy & (iseq == aseq)) & (Array(owed)[aseq] == 0)
               & done.i.ready)
        m.d.comb += [done.i.valid.eq(end), scanning.o.ready.eq(end),
                     done.i.payload.at.eq(cur.at), done.i.payload.begin.eq(cur.begin),
                     done.i.payload.stop.eq(cur.begin + n)]
        with m.If(end):
            m.d.sync += [n.eq(0), found.eq(0), aseq.eq(~aseq)]

        # -- each segment's kept entry written, then the segment sent ------------------
        written = Signal()
        seg, entry = done.o.payload, data.View(kept_layout, writes.request.payload.data)
        m.d.comb += [writes.request.payload.addr.eq(self.kept_base + seg.at.row),
                     entry.bj.eq(seg.at.bj), entry.ej.eq(seg.at.ej),
                     entry.begin.eq(seg.begin), entry.end.eq(seg.stop),
                     out.payload.begin.eq(seg.begin), out.payload.end.eq(seg.stop),
                     writes.request.valid.eq(done.o.valid & ~written),
                     out.valid.eq(done.o.valid & written), done.o.ready.eq(out.ready & written)]
        with m.If(writes.request.valid & writes.request.ready):
            m.d.sync += written.eq(1)
        with m.If(out.valid & out.ready):
            m.d.sync += written.eq(0)
        m.d.sync += flying.eq(flying + (fetch.valid & fetch.ready) - (out.valid & out.ready))
        return m
