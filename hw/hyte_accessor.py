"""The HYTE tensor accessor (HYTE Section 6.3, Fig. 5b): a Buffet at fiber-segment
granularity, with the segments' metadata kept beside their data."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.utils import exact_log2

from ..params import Param, check_params
from ..registry import block
from .buffet import ReadStage
from .interfaces import HYTE_BUFFERING, HYTE_END, HYTE_HIT, HYTE_MISS, HyteAccessorSignature


@block("hyte_accessor")
class HyteAccessor(wiring.Component):
    """A tensor accessor: fiber segments and their begin locations in one allocation.

    Each stored segment takes one metadata entry (its begin location in the data) and
    its words; together they may use ``capacity`` words, the data growing from one end
    and the metadata from the other until they meet (the paper's accounting). They sit
    in two rings of ``depth`` entries, one memory each, so that a segment begin and a
    fill both write on one cycle and a read looks up its segment's metadata while the
    previous read's data leave: in one memory, after an eviction in streaming mode the
    circular data and metadata regions would run into each other. A segment's size is
    the difference of two adjacent metadata entries (or of its entry and the data tail
    for the newest). The metadata ring has a head and an occupancy register, as a
    Buffet has for its data, and ``evict`` returns segments as a Buffet's shrink does.

    Streaming mode: a segment or word that does not fit waits for ``evict``. Buffering
    mode (a tile kept for reuse): nothing is evicted to make room; once a segment or
    word does not fit, it and everything after it bypass (taken, counted, not stored)
    until the held segments have all been evicted. A read of a bypassed word answers
    ``HYTE_MISS`` (the parent, which knows the segment's extent, re-fetches it from the
    next level); one past a complete segment's end ``HYTE_END``. The tile's end is not
    marked: the parent evicts a buffered tile whole once reused, which ends its bypass.
    :mod:`sparseforge.sim.models.hyte_accessor` states the semantics in full.

    Parameters
    ----------
    depth : entries of each ring, the largest ``capacity`` (a power of two).
    width : bits of a data word.
    count_width : bits of a segment length, read offset, segment number and evict count.

    Members
    -------
    As :class:`~sparseforge.hw.interfaces.HyteAccessorSignature` says. ``free`` reads
    low on the cycle after an evict of fewer segments than hold metadata (the data head
    is looked up then); segments and fills wait that cycle.

    Latency and throughput: one segment or fill a cycle; one read a cycle, answered two
    cycles after it is taken at the earliest (metadata lookup, then the data read of
    :class:`~sparseforge.hw.buffet.ReadStage`). An evict waits for the read being
    answered and holds new reads while it waits.
    """

    PARAMS = (Param("depth", 64, 4, 1 << 15, "entries of each ring (largest capacity)",
                    pow2=True),
              Param("width", 32, 1, 256, "bits of a data word"),
              Param("count_width", 16, 16, 32, "bits of a length, offset, segment or count"))
    REPORT = ({"depth": 64, "width": 32}, {"depth": 1024, "width": 32})

    def __init__(self, depth=64, width=32, count_width=16):
        v = check_params(self.PARAMS, {"depth": depth, "width": width,
                                       "count_width": count_width})
        self.depth, self.width, self.count_width = v["depth"], v["width"], v["count_width"]
        super().__init__(HyteAccessorSignature(self.depth, self.width, self.count_width))

    def elaborate(self, platform):
        m = Module()
        A, cw = exact_log2(self.depth), self.count_width
        m.submodules.data = data = Memory(shape=self.width, depth=self.depth, init=[])
        m.submodules.meta = meta = Memory(shape=A, depth=self.depth, init=[])
        dwr = data.write_port()
        mwr = meta.write_port()
        begin_rd = meta.read_port(transparent_for=(mwr,))      # the read's segment
        next_rd = meta.read_port(transparent_for=(mwr,))       # the segment after it
        head_rd = meta.read_port(transparent_for=(mwr,))       # the data head after evict

        mhead, stored = Signal(A), Signal(A + 1)       # metadata ring: head, entries
        dhead, dtail = Signal(A), Signal(A)            # data ring
        segs = Signal(cw)                              # segments held, bypassed included
        remaining = Signal(cw)                         # words the open segment still takes
        bypass, cut, pending = Signal(), Signal(), Signal()
        mtail = Signal(A)
        words, used = Signal(A), Signal(A + 2)                 # data held; with entries
        m.d.comb += [mtail.eq(mhead + stored), words.eq(dtail - dhead),
                     used.eq(words + stored)]
        room = used < self.capacity
        buffering = self.mode == HYTE_BUFFERING
        open_stored = (remaining != 0) & (segs == stored)   # the open segment has metadata
        m.d.comb += [self.occupancy.eq(segs), self.bypass.eq(bypass),
                     self.free.eq(Mux(room, self.capacity - used, 0))]

        # Segments and fills: stored while they fit; in buffering mode, else bypassed.
        seg, fill = self.segment, self.fill
        m.d.comb += [seg.ready.eq((remaining == 0) & ~pending & (segs != (1 << cw) - 1)
                                  & (buffering | room)),
                     fill.ready.eq((remaining != 0) & ~pending & (buffering | room))]
        do_seg, do_fill = seg.valid & seg.ready, fill.valid & fill.ready
        store_seg = do_seg & ~bypass & room
        store_fill = do_fill & open_stored & ~bypass & room
        m.d.comb += [mwr.en.eq(store_seg), mwr.addr.eq(mtail), mwr.data.eq(dtail),
                     dwr.en.eq(store_fill), dwr.addr.eq(dtail), dwr.data.eq(fill.payload)]
        with m.If(do_seg):
            m.d.sync += remaining.eq(seg.payload)
        with m.If(do_fill):
            m.d.sync += remaining.eq(remaining - 1)
        with m.If(store_fill):
            m.d.sync += dtail.eq(dtail + 1)
        with m.If((do_seg & ~store_seg) | (do_fill & ~store_fill)):
            m.d.sync += bypass.eq(1)
        with m.If(do_fill & ~store_fill & open_stored):
            m.d.sync += cut.eq(1)

        # Reads, stage 1: the segment has begun; its metadata are looked up.
        read = self.read
        evict = self.evict
        s2_valid, s2_go = Signal(), Signal()
        s2_idx, s2_off, s2_unstored = Signal(A), Signal(cw), Signal()
        take = Signal()
        m.d.comb += [read.ready.eq((read.payload.segment < segs) & ~evict.valid
                                   & (~s2_valid | s2_go)),
                     take.eq(read.valid & read.ready)]
        idx = Mux(take, mhead + read.payload.segment, s2_idx)
        m.d.comb += [begin_rd.addr.eq(idx), next_rd.addr.eq(idx + 1)]
        with m.If(take):
            m.d.sync += [s2_valid.eq(1), s2_idx.eq(mhead + read.payload.segment),
                         s2_off.eq(read.payload.offset),
                         s2_unstored.eq(read.payload.segment >= stored)]
        with m.Elif(s2_go):
            m.d.sync += s2_valid.eq(0)

        # Stage 2: size from two adjacent entries (or the data tail for the newest);
        # answered once the word is filled or bypassed, or the segment complete.
        last = (s2_idx + 1)[:A] == mtail
        begin = begin_rd.data
        size = Signal(A)
        m.d.comb += size.eq(Mux(last, dtail, next_rd.data) - begin)
        hit = ~s2_unstored & (s2_off < size)
        miss = s2_unstored | (last & cut)
        known = hit | miss | ~(last & open_stored)
        status = Signal(2)
        m.d.comb += status.eq(Mux(hit, HYTE_HIT, Mux(miss, HYTE_MISS, HYTE_END)))

        m.submodules.read_stage = stage = ReadStage(self.depth, self.width, 1)
        wiring.connect(m, stage.mem, data.read_port(transparent_for=(dwr,)))
        m.d.comb += [stage.read.valid.eq(s2_valid & known), stage.present.eq(1),
                     stage.addr.eq(begin + s2_off[:A]), s2_go.eq(stage.accepted)]
        answer = Signal(2)
        with m.If(stage.accepted):
            m.d.sync += answer.eq(status)
        out = self.read_data
        m.d.comb += [out.valid.eq(stage.read_data.valid), stage.read_data.ready.eq(out.ready),
                     out.payload.status.eq(answer),
                     out.payload.data.eq(Mux(answer == HYTE_HIT, stage.read_data.payload, 0))]

        # Evict: the oldest segments, complete, while no read is being answered. The
        # data head moves to the first kept segment's begin, looked up on this cycle.
        complete = segs - (remaining != 0)
        count = evict.payload
        m.d.comb += [evict.ready.eq((count <= complete) & ~pending & ~s2_valid),
                     head_rd.addr.eq(mhead + count)]
        do_evict = evict.valid & evict.ready
        gone = Mux(do_evict, count, 0)                          # segments evicted
        unlisted = Mux(do_evict, Mux(count < stored, count, stored), 0)  # their entries
        m.d.sync += [segs.eq(segs + do_seg - gone), stored.eq(stored + store_seg - unlisted),
                     mhead.eq(mhead + unlisted)]
        with m.If(do_evict):
            with m.If(count < stored):
                m.d.sync += pending.eq(1)
            with m.Else():
                m.d.sync += [dhead.eq(dtail), cut.eq(0)]
            with m.If((count == segs) & ~do_seg):
                m.d.sync += [bypass.eq(0), cut.eq(0)]
        with m.If(pending):
            m.d.sync += [dhead.eq(head_rd.data), pending.eq(0)]
        return m
