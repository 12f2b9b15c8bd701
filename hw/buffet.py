"""The Buffet storage idiom (Pellauer et al., ASPLOS 2019; Tailors paper §3.2)."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory, ReadPort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..params import Param, check_params
from ..registry import block
from .interfaces import BuffetSignature


class ReadStage(wiring.Component):
    """The read pipeline of a buffet-like store: request in, data out of one memory read port.

    ``present`` says the element ``read`` asks for is in the store and
    ``addr`` is its memory address (both from the owner, who decodes the
    request's index). One request is in flight in the memory's output
    register, which holds its data (``en`` low) while ``read_data`` is
    stalled; a new request is accepted when that slot is free or being
    emptied, so reads sustain one per cycle. ``accepted`` pulses on the cycle
    a read is accepted; its data appears on ``read_data`` from the next cycle.
    """

    def __init__(self, depth, width, index):
        super().__init__({
            "read": In(stream.Signature(index)),
            "read_data": Out(stream.Signature(width)),
            "present": In(1),
            "addr": In(range(depth)),
            "mem": In(ReadPort.Signature(addr_width=ceil_log2(depth), shape=width)),
            "accepted": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        resp_valid = Signal()
        m.d.comb += [
            self.read.ready.eq((~resp_valid | self.read_data.ready) & self.present),
            self.accepted.eq(self.read.valid & self.read.ready),
            self.mem.en.eq(self.accepted),
            self.mem.addr.eq(self.addr),
            self.read_data.valid.eq(resp_valid),
            self.read_data.payload.eq(self.mem.data),
        ]
        with m.If(self.accepted):
            m.d.sync += resp_valid.eq(1)
        with m.Elif(self.read_data.ready):
            m.d.sync += resp_valid.eq(0)
        return m


@block("buffet")
class Buffet(wiring.Component):
    """A buffet: a queue with random reads and updates relative to its head.

    Parameters
    ----------
    depth : capacity in elements (a power of two, so pointers wrap for free).
    width : element width in bits.

    Members
    -------
    fill : In(stream(width))
        Appends the payload at the tail. Not ready while full: a full buffet
        exerts back-pressure.
    read : In(stream(index))
        Read request: the element ``index`` places from the head. Not ready
        until that element has been filled, so a read never returns stale data.
    read_data : Out(stream(width))
        Read responses, in request order, one cycle after the request at the
        earliest; back-pressure on it holds the read pipeline.
    update : In(stream({index, data}))
        Overwrites the element ``index`` places from the head; not ready until
        that element has been filled. Takes the write port from fill for a cycle.
    shrink : In(stream(count))
        Frees ``count`` elements from the head; not ready while ``count``
        exceeds the occupancy.
    credit : Out(count)
        Credits returned to the parent on this cycle (the count of the shrink
        accepted on the previous cycle, else 0). A parent that starts with
        ``depth`` credits and spends one per fill never overruns the buffet.
    occupancy : Out(count)
        Elements held, exact at full and at empty.

    Concurrency: on one cycle the buffet accepts a fill or an update (they
    share the memory's single write port; update has priority), a read and a
    shrink. Each uses the state at the start of the cycle; a read of the
    element updated on the same cycle returns the new data.

    Latency and throughput: one fill and one read per cycle sustained; read
    data one cycle after the request. Storage is one ``Memory`` with one write
    and one read port, so it maps to block RAM.
    """

    PARAMS = (
        Param("depth", 64, 2, 1 << 16, "capacity in elements", pow2=True),
        Param("width", 32, 1, 1024, "element width in bits"),
    )

    # Configurations in the synthesis report.
    REPORT = ({"depth": 64, "width": 32}, {"depth": 1024, "width": 32})

    def __init__(self, depth=64, width=32):
        values = check_params(self.PARAMS, {"depth": depth, "width": width})
        self.depth, self.width = values["depth"], values["width"]
        super().__init__(BuffetSignature(self.depth, self.width))

    def elaborate(self, platform):
        m = Module()
        mask = self.depth - 1
        m.submodules.store = store = Memory(shape=self.width, depth=self.depth, init=[])
        wr = store.write_port()
        rd = store.read_port(transparent_for=(wr,))

        head = Signal(range(self.depth))
        occupancy = Signal(range(self.depth + 1))
        m.d.comb += self.occupancy.eq(occupancy)

        # Write port: update has priority over fill.
        do_update = Signal()
        do_fill = Signal()
        m.d.comb += [
            self.update.ready.eq(self.update.payload.index < occupancy),
            do_update.eq(self.update.valid & self.update.ready),
            # Gate fill on an accepted update only: an update waiting for its
            # element must not block the fill that brings it.
            self.fill.ready.eq((occupancy != self.depth) & ~do_update),
            do_fill.eq(self.fill.valid & self.fill.ready),
            wr.en.eq(do_fill | do_update),
            wr.addr.eq(Mux(do_update, head + self.update.payload.index,
                           head + occupancy) & mask),
            wr.data.eq(Mux(do_update, self.update.payload.data, self.fill.payload)),
        ]

        m.submodules.read_stage = reads = ReadStage(self.depth, self.width,
                                                    len(self.read.payload))
        wiring.connect(m, wiring.flipped(self.read), reads.read)
        wiring.connect(m, reads.read_data, wiring.flipped(self.read_data))
        wiring.connect(m, reads.mem, rd)
        m.d.comb += [reads.present.eq(self.read.payload < occupancy),
                     reads.addr.eq(head + self.read.payload)]

        # Shrink frees from the head and returns its count as credits.
        do_shrink = Signal()
        m.d.comb += [
            self.shrink.ready.eq(self.shrink.payload <= occupancy),
            do_shrink.eq(self.shrink.valid & self.shrink.ready),
        ]
        freed = Mux(do_shrink, self.shrink.payload, 0)
        m.d.sync += [
            head.eq((head + freed) & mask),
            occupancy.eq(occupancy + do_fill - freed),
            self.credit.eq(freed),
        ]
        return m
