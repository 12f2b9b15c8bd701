"""HYTE's fiber-segment positions across tiles (HYTE Section 6.2, Fig. 5a): where a
tile's segment of a CSR row begins and ends, from positions kept in memory."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .interfaces import MemoryWritePortSignature, struct
from .stream_units import MemoryPortSignature


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

    Latency and throughput: a fetch at a time; the row end and begin one read in flight
    each, then the scan, ``inflight`` reads in flight (one element a cycle once they
    cover the memory's latency), a write and the answer. One comparator and one adder a
    cycle: the scan is memory-bound.
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
        fetch, out, mem, writes = self.fetch, self.segment, self.memory, self.writes
        layout = struct(wire.hyte_kept(self.dim_width, self.pos_width))
        row, bj, ej = (Signal.like(fetch.payload[f], name=f) for f in ("row", "bj", "ej"))
        begin, pos, stop, ask = (Signal(self.pos_width, name=n)
                                 for n in ("begin", "pos", "stop", "ask"))
        pending = Signal(range(self.inflight + 1))     # scan reads unanswered
        found = Signal()                                # a column reached ``ej``
        m.d.sync += pending.eq(pending + (mem.request.valid & mem.request.ready)
                               - (mem.response.valid & mem.response.ready))
        addr = Signal.like(mem.request.payload, name="addr")
        answer = mem.response.payload
        kept = data.View(layout, answer)
        entry = data.View(layout, writes.request.payload.data)
        m.d.comb += [mem.request.payload.eq(addr),
                     writes.request.payload.addr.eq(self.kept_base + row),
                     entry.bj.eq(bj), entry.ej.eq(ej), entry.begin.eq(begin),
                     entry.end.eq(pos),
                     out.payload.begin.eq(begin), out.payload.end.eq(pos)]

        def read(state, answered):
            """Send the read at ``addr``, then wait in ``answered`` for its answer."""
            with m.State(state):
                m.d.comb += mem.request.valid.eq(1)
                with m.If(mem.request.ready):
                    m.next = answered

        with m.FSM():
            with m.State("idle"):
                m.d.comb += fetch.ready.eq(1)
                with m.If(fetch.valid):
                    p = fetch.payload
                    m.d.sync += [row.eq(p.row), bj.eq(p.bj), ej.eq(p.ej),
                                 addr.eq(self.ptr_base + p.row + 1)]
                    m.next = "end"
            read("end", "end_answer")
            with m.State("end_answer"):
                m.d.comb += mem.response.ready.eq(1)
                with m.If(mem.response.valid):
                    m.d.sync += [stop.eq(answer),
                                 addr.eq(Mux(bj == 0, self.ptr_base, self.kept_base) + row)]
                    m.next = "begin"
            read("begin", "begin_answer")
            with m.State("begin_answer"):
                m.d.comb += mem.response.ready.eq(1)
                with m.If(mem.response.valid):
                    first = Mux(bj == 0, answer[:self.pos_width],
                                Mux((kept.bj == bj) & (kept.ej == ej), kept.begin, kept.end))
                    m.d.sync += [begin.eq(first), pos.eq(first), ask.eq(first),
                                 found.eq(0)]
                    m.next = "scan"
            # The column ids from ``pos`` until one reaches ``ej`` or the row ends, up to
            # ``inflight`` reads ahead of their answers (none past the row's end); the
            # answers after the one that reached ``ej`` are dropped.
            with m.State("scan"):
                m.d.comb += [mem.request.payload.eq(self.cols_base + ask),
                             mem.request.valid.eq((ask != stop) & ~found
                                                  & (pending < self.inflight)),
                             mem.response.ready.eq(1)]
                with m.If(mem.request.valid & mem.request.ready):
                    m.d.sync += ask.eq(ask + 1)
                with m.If(mem.response.valid & ~found):
                    with m.If(answer[:self.dim_width] >= ej):
                        m.d.sync += found.eq(1)
                    with m.Else():
                        m.d.sync += pos.eq(pos + 1)
                with m.If((found | (pos == stop)) & (pending == 0)):
                    m.next = "write"
            with m.State("write"):
                m.d.comb += writes.request.valid.eq(1)
                with m.If(writes.request.ready):
                    m.next = "send"
            with m.State("send"):
                m.d.comb += out.valid.eq(1)
                with m.If(out.ready):
                    m.next = "idle"
        return m
