"""The HYTE tensor accessor (HYTE Section 6.3, Fig. 5b): a Buffet at fiber-segment
granularity, with the segments' metadata kept beside their data."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import HyteMode, HyteStatus
from .interfaces import struct


class HyteAccessorSignature(wiring.Signature):
    """A HYTE tensor accessor (Section 6.3), seen from it.

    - ``mode`` (in, :class:`~sparseforge.sw.wire.HyteMode`); ``capacity`` (in): the
      words allocated to this tensor (1 to ``depth``). Both held while it holds data.
    - ``segment`` (stream in, ``length``): a new fiber segment of ``length`` words
      (0: empty); taken once the previous segment's words have all been filled.
    - ``fill`` (stream in, ``width``): the next word of the open segment.
    - ``read`` (stream in, :func:`~sparseforge.sw.wire.hyte_read`): word ``offset`` of
      segment ``segment`` counted from the oldest held; taken once that segment has begun.
    - ``read_data`` (stream out, :func:`~sparseforge.sw.wire.hyte_read_data`): answers in
      request order, once each is known (the word filled, bypassed, or the segment
      complete); ``last`` on a ``HIT`` of a segment's final word (stored whole).
    - ``evict`` (stream in, count): frees that many segments from the oldest, data and
      metadata; taken once they are complete and no read is being answered.
    - ``occupancy`` (out): segments held; ``free`` (out): words free of ``capacity``;
      ``bypass`` (out): later data bypass the buffer (buffering mode, after an overflow).
    - ``tile`` (stream in, :func:`~sparseforge.sw.wire.hyte_quadrants`): count the next
      ``rows`` segments' words by quadrant; taken while no segment is open and no
      tile is being counted (its counts taken).
    - ``counts`` (stream out, :func:`~sparseforge.sw.wire.hyte_counts`): a tile's
      ``cnt00..cnt11`` once its last segment is complete, every word counted, stored
      or bypassed; a word's coordinate is its low ``coord_width`` bits.
    """

    def __init__(self, depth, width, count_width, coord_width):
        super().__init__({
            "tile": In(stream.Signature(struct(wire.hyte_quadrants(count_width,
                                                                   coord_width)))),
            "counts": Out(stream.Signature(struct(wire.hyte_counts(count_width)))),
            "mode": In(HyteMode),
            "capacity": In(range(depth + 1)),
            "segment": In(stream.Signature(count_width)),
            "fill": In(stream.Signature(width)),
            "read": In(stream.Signature(struct(wire.hyte_read(count_width)))),
            "read_data": Out(stream.Signature(struct(wire.hyte_read_data(width)))),
            "evict": In(stream.Signature(count_width)),
            "occupancy": Out(count_width),
            "free": Out(range(depth + 1)),
            "bypass": Out(1),
        })


class HeldSignature(wiring.Signature):
    """What the accessor holds, as its read path sees it; seen from the allocation.

    - ``segs`` (out): segments held, bypassed ones included; ``stored`` (out): those
      with a metadata entry.
    - ``mhead``, ``mtail`` (out): the metadata ring's oldest entry and next free one;
      ``dtail`` (out): the data ring's next free word.
    - ``open_stored`` (out): the open segment has an entry; ``owords`` (out): its words
      stored; ``cut`` (out): the newest stored segment lost a word to the bypass.
    - ``evicting`` (out): an evict waits, and holds new reads.
    - ``reading`` (in): a read is being looked up or answered, and holds evicts.
    """

    def __init__(self, depth, count_width):
        A = exact_log2(depth)
        super().__init__({
            "segs": Out(count_width), "stored": Out(A + 1),
            "mhead": Out(A), "mtail": Out(A), "dtail": Out(A),
            "open_stored": Out(1), "owords": Out(A), "cut": Out(1),
            "evicting": Out(1), "reading": In(1),
        })


class SeenSignature(wiring.Signature):
    """What the allocation takes on a cycle, as the quadrant counter sees it; seen from
    the allocation: ``segment``, a segment begun; ``fill``, a word taken, ``coord`` its
    low ``coord_width`` bits; ``complete``, a segment completed (all its words taken)."""

    def __init__(self, coord_width):
        super().__init__({"segment": Out(1), "fill": Out(1), "coord": Out(coord_width),
                          "complete": Out(1)})


class Allocation(wiring.Component):
    """Segments, fills and evicts: the two rings' pointers and the words they use.

    Members
    -------
    mode, capacity, segment, fill, evict, occupancy, free, bypass: as
    :class:`HyteAccessorSignature` says.
    data_write, meta_write: the rings' write ports; head_read: a metadata read port,
    the data head after a partial evict.
    held: :class:`HeldSignature`; seen: :class:`SeenSignature`.
    """

    def __init__(self, depth, width, count_width, coord_width):
        self.depth, self.count_width = depth, count_width
        A = exact_log2(depth)
        ports = HyteAccessorSignature(depth, width, count_width, coord_width).members
        super().__init__({
            "seen": Out(SeenSignature(coord_width)),
            **{name: ports[name] for name in ("mode", "capacity", "segment", "fill", "evict",
                                              "occupancy", "free", "bypass")},
            "data_write": In(memory.WritePort.Signature(addr_width=A, shape=width)),
            "meta_write": In(memory.WritePort.Signature(addr_width=A, shape=A)),
            "head_read": In(memory.ReadPort.Signature(addr_width=A, shape=A)),
            "held": Out(HeldSignature(depth, count_width)),
        })

    def elaborate(self, platform):
        m = Module()
        A, cw, h = exact_log2(self.depth), self.count_width, self.held
        dwr, mwr, head_rd = self.data_write, self.meta_write, self.head_read
        mhead, mtail, stored, dtail, owords = h.mhead, h.mtail, h.stored, h.dtail, h.owords
        segs, cut, open_stored = h.segs, h.cut, h.open_stored
        dhead = Signal(A)                               # the data ring's oldest word
        remaining = Signal(cw)                          # words the open segment still takes
        complete = Signal(cw)                           # segments held and complete
        bypass, pending, settle, is_open = Signal(), Signal(), Signal(), Signal()
        used = Signal(A + 2)                            # data held, with entries: kept
        # ``used < capacity`` as a register for the readies, for the value ``used``
        # takes next (a capacity written takes effect a cycle later; none is used out
        # of reset, and a capacity is at least 1).
        used_next, room = Signal(A + 2), Signal(init=1)
        held = Signal(A + 2)
        m.d.comb += held.eq((dtail - dhead)[:A] + stored)     # data words, entries
        buffering = self.mode == HyteMode.BUFFERING
        m.d.comb += [self.occupancy.eq(segs), self.bypass.eq(bypass),
                     self.free.eq(Mux(held < self.capacity, self.capacity - held, 0))]

        # Segments and fills: stored while they fit; in buffering mode, else bypassed.
        seg, fill = self.segment, self.fill
        wait = pending | settle
        m.d.comb += [seg.ready.eq(~is_open & ~wait & (segs != (1 << cw) - 1)
                                  & (buffering | room)),
                     fill.ready.eq(is_open & ~wait & (buffering | room))]
        do_seg, do_fill = seg.valid & seg.ready, fill.valid & fill.ready
        store_seg = do_seg & ~bypass & room
        store_fill = do_fill & open_stored & ~bypass & room
        m.d.comb += [mwr.en.eq(store_seg), mwr.addr.eq(mtail), mwr.data.eq(dtail),
                     dwr.en.eq(store_fill), dwr.addr.eq(dtail), dwr.data.eq(fill.payload)]
        ends = do_fill & (remaining == 1)
        with m.If(do_seg):
            m.d.sync += [remaining.eq(seg.payload), owords.eq(0),
                         is_open.eq(seg.payload != 0),
                         open_stored.eq(store_seg & (seg.payload != 0))]
        with m.If(do_fill):
            m.d.sync += remaining.eq(remaining - 1)
        with m.If(ends):
            m.d.sync += [is_open.eq(0), open_stored.eq(0)]
        with m.If(store_fill):
            m.d.sync += [dtail.eq(dtail + 1), owords.eq(owords + 1)]
        with m.If(store_seg):
            m.d.sync += mtail.eq(mtail + 1)
        with m.If((do_seg & ~store_seg) | (do_fill & ~store_fill)):
            m.d.sync += bypass.eq(1)
        with m.If(do_fill & ~store_fill & open_stored):
            m.d.sync += cut.eq(1)

        # Evict: the oldest segments, complete, once no read is being looked up. The
        # data head moves to the first kept segment's begin, looked up on this cycle.
        evict = self.evict
        count = evict.payload
        m.d.comb += [evict.ready.eq((count <= complete) & ~wait & ~h.reading),
                     h.evicting.eq(evict.valid), head_rd.addr.eq(mhead + count)]
        do_evict = evict.valid & evict.ready
        # Each counter's evict (a subtraction beside the compare) is chosen before its
        # increment, so no carry chain waits for another's; an evict takes at most
        # ``segs`` segments, so their difference is kept unsigned.
        partial = count < stored                        # some metadata entries are kept
        done = (do_seg & (seg.payload == 0)) | ends     # a segment completes
        m.d.comb += [self.seen.segment.eq(do_seg), self.seen.fill.eq(do_fill),
                     self.seen.coord.eq(fill.payload), self.seen.complete.eq(done)]
        # ``room`` next from compares of registers, the late evict and store choosing
        # among them: a partial evict's (pending and settling next, no store meanwhile)
        # is made again as it settles.
        cap = self.capacity
        grows = store_seg | store_fill                  # never both: one carry chain
        m.d.comb += used_next.eq(Mux(settle, held, Mux(do_evict, Mux(partial, used - count,
                                                                     0), used) + grows))
        m.d.sync += [
            segs.eq(Mux(do_evict, (segs - count)[:cw], segs) + do_seg),
            complete.eq(Mux(do_evict, complete - count, complete) + done),
            stored.eq(Mux(do_evict, Mux(partial, stored - count, 0), stored) + store_seg),
            used.eq(used_next),
            room.eq(Mux(settle, held < cap, Mux(do_evict, Mux(grows, cap[1:].any(), cap.any()),
                                                Mux(grows, used + 1 < cap, used < cap)))),
            mhead.eq(Mux(do_evict, Mux(partial, mhead + count, mtail), mhead)),
            dhead.eq(Mux(do_evict & ~partial, dtail, dhead))]
        with m.If(do_evict):
            with m.If(partial):
                m.d.sync += pending.eq(1)
            with m.Else():
                m.d.sync += cut.eq(0)
            with m.If((count == segs) & ~do_seg):
                m.d.sync += [bypass.eq(0), cut.eq(0)]
        # A partial evict's data head is looked up (into ``dhead``, past one multiplexer),
        # then ``used`` is made again.
        with m.If(pending):
            m.d.sync += [dhead.eq(head_rd.data), pending.eq(0), settle.eq(1)]
        with m.If(settle):
            m.d.sync += settle.eq(0)
        return m


class ReadPath(wiring.Component):
    """Reads answered in order through three stages and an output register.

    Members
    -------
    read, read_data: as :class:`HyteAccessorSignature` says.
    meta_begin, meta_next: metadata read ports, the read's segment and the one after
    it; data_read: the data ring's read port.
    held: the flip of :class:`HeldSignature`.
    """

    def __init__(self, depth, width, count_width, coord_width):
        self.depth, self.count_width = depth, count_width
        A = exact_log2(depth)
        ports = HyteAccessorSignature(depth, width, count_width, coord_width).members
        meta = memory.ReadPort.Signature(addr_width=A, shape=A)
        super().__init__({
            "read": ports["read"], "read_data": ports["read_data"],
            "meta_begin": In(meta), "meta_next": In(meta),
            "data_read": In(memory.ReadPort.Signature(addr_width=A, shape=width)),
            "held": In(HeldSignature(depth, count_width)),
        })

    def elaborate(self, platform):
        m = Module()
        A, cw, h = exact_log2(self.depth), self.count_width, self.held
        read, out = self.read, self.read_data
        begin_rd, next_rd, data_rd = self.meta_begin, self.meta_next, self.data_read
        # All stages after the first move together unless the answer is stalled.
        o_valid, o_status = Signal(), Signal(2)
        adv = ~o_valid | out.ready

        # Stage 1: the read waits until its answer is known (the word filled or
        # bypassed, or its segment complete); its metadata addresses are registers.
        s1_valid, s1_idx, s1_nidx = Signal(), Signal(A), Signal(A)
        s1_off, s1_unstored = Signal(cw), Signal()
        s1_last = s1_nidx == h.mtail                    # the newest stored segment
        known = (s1_unstored | ~(h.open_stored & s1_last) | h.cut
                 | (s1_off < h.owords))
        s1_go = s1_valid & known & adv
        take = Signal()
        m.d.comb += [read.ready.eq((read.payload.segment < h.segs) & ~h.evicting
                                   & (~s1_valid | s1_go)),
                     take.eq(read.valid & read.ready),
                     begin_rd.addr.eq(s1_idx), next_rd.addr.eq(s1_nidx),
                     begin_rd.en.eq(adv), next_rd.en.eq(adv)]
        with m.If(take):
            idx = h.mhead + read.payload.segment
            m.d.sync += [s1_valid.eq(1), s1_idx.eq(idx), s1_nidx.eq(idx + 1),
                         s1_off.eq(read.payload.offset),
                         s1_unstored.eq(read.payload.segment >= h.stored)]
        with m.Elif(s1_go):
            m.d.sync += s1_valid.eq(0)

        # Stage 2: the metadata memory's output, with the state it was read in (the
        # newest stored segment still open or cut: its stored words are not all).
        s2_valid, s2_off, s2_unstored = Signal(), Signal(cw), Signal()
        s2_last, s2_cut, s2_open, s2_dtail = Signal(), Signal(), Signal(), Signal(A)
        # Stage 3: the segment's begin and end registered; its size, the answer, and
        # the data read.
        s3_valid, s3_off, s3_unstored = Signal(), Signal(cw), Signal()
        s3_begin, s3_end, s3_miss, s3_partial = Signal(A), Signal(A), Signal(), Signal()
        size, o_last = Signal(A), Signal()
        m.d.comb += size.eq(s3_end - s3_begin)
        hit = ~s3_unstored & (s3_off < size)
        with m.If(adv):
            m.d.sync += [s2_valid.eq(s1_go), s2_off.eq(s1_off), s2_unstored.eq(s1_unstored),
                         s2_last.eq(s1_last), s2_cut.eq(h.cut), s2_dtail.eq(h.dtail),
                         s2_open.eq(h.open_stored),
                         s3_valid.eq(s2_valid), s3_off.eq(s2_off),
                         s3_unstored.eq(s2_unstored), s3_begin.eq(begin_rd.data),
                         s3_end.eq(Mux(s2_last, s2_dtail, next_rd.data)),
                         s3_miss.eq(s2_unstored | (s2_last & s2_cut)),
                         s3_partial.eq(s2_last & (s2_cut | s2_open)),
                         o_valid.eq(s3_valid),
                         o_last.eq(hit & ~s3_partial & (s3_off + 1 == size)),
                         o_status.eq(Mux(hit, HyteStatus.HIT,
                                         Mux(s3_miss, HyteStatus.MISS, HyteStatus.END)))]
        m.d.comb += [data_rd.addr.eq(s3_begin + s3_off[:A]), data_rd.en.eq(adv),
                     out.valid.eq(o_valid), out.payload.status.eq(o_status),
                     out.payload.last.eq(o_last),
                     out.payload.data.eq(Mux(o_status == HyteStatus.HIT, data_rd.data, 0)),
                     h.reading.eq(s1_valid | s2_valid | s3_valid)]
        return m


class QuadrantCounter(wiring.Component):
    """The four counters of Section 6.4: a tile's words by quadrant, from what the
    allocation takes.

    A tile is taken while idle; from then each segment begun is the tile's next row
    (the upper half until ``split_k`` have begun), each word counted in its quadrant
    (the right half from ``split_j``), and once ``rows`` segments have completed the
    counts go out, held until taken; a tile of no rows sends zeros at once. Segments
    taken while idle are not counted. What the allocation takes is registered before it
    is counted (the counts leave two cycles after the tile's last word), so the
    allocation's handshake, which waits on its room compare, does not also drive the
    counters' adders.

    Members
    -------
    tile, counts: as :class:`HyteAccessorSignature` says; seen: the flip of
    :class:`SeenSignature`.
    """

    def __init__(self, depth, width, count_width, coord_width):
        self.count_width = count_width
        ports = HyteAccessorSignature(depth, width, count_width, coord_width).members
        super().__init__({"tile": ports["tile"], "counts": ports["counts"],
                          "seen": In(SeenSignature(coord_width))})

    def elaborate(self, platform):
        m = Module()
        cw, tile, counts, seen = self.count_width, self.tile, self.counts, self.seen
        counting, lower = Signal(), Signal()             # lower: the open segment's half
        left, begun, split_k = Signal(cw), Signal(cw), Signal(cw)
        split_j = Signal.like(tile.payload.split_j)
        cnt = [Signal(cw, name=f"cnt{n >> 1}{n & 1}") for n in range(4)]
        m.d.comb += [tile.ready.eq(~counting & ~counts.valid),
                     *(counts.payload[f"cnt{n >> 1}{n & 1}"].eq(cnt[n]) for n in range(4))]
        with m.If(counts.valid & counts.ready):
            m.d.sync += counts.valid.eq(0)
        with m.If(tile.valid & tile.ready):
            rows = tile.payload.rows
            m.d.sync += [counting.eq(rows != 0), counts.valid.eq(rows == 0), left.eq(rows),
                         begun.eq(0), split_k.eq(tile.payload.split_k),
                         split_j.eq(tile.payload.split_j), *(c.eq(0) for c in cnt)]
        # What the allocation took, registered: its handshakes stay off the counters'
        # adders; what was taken before a tile is counting is not counted.
        took = SeenSignature(len(seen.coord)).flip().create(path=("took",))
        m.d.sync += [getattr(took, f).eq(getattr(seen, f))
                     for f in ("segment", "fill", "coord", "complete")]
        with m.If(counting):
            with m.If(took.segment):
                m.d.sync += [begun.eq(begun + 1), lower.eq(begun >= split_k)]
            with m.If(took.fill), m.Switch(Cat(took.coord >= split_j, lower)):
                for n in range(4):
                    with m.Case(n):
                        m.d.sync += cnt[n].eq(cnt[n] + 1)
            with m.If(took.complete):
                m.d.sync += left.eq(left - 1)
                with m.If(left == 1):
                    m.d.sync += [counting.eq(0), counts.valid.eq(1)]
        return m


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
    ``MISS`` (the parent, which knows the segment's extent, re-fetches it from the
    next level); one past a complete segment's end ``END``; a segment's final word
    answers with ``last`` (a segment stored whole), so its reader stops there. The
    tile's end is not marked: the parent evicts a buffered tile whole once reused, which
    ends its bypass.
    :mod:`sparseforge.sim.models.hyte_accessor` states the semantics in full. An
    :class:`Allocation` (segments, fills, evicts) and a :class:`ReadPath` share the
    two memories, joined by a :class:`HeldSignature`; a :class:`QuadrantCounter` counts
    the words the allocation takes by quadrant of the tile (Section 6.4), for the
    tiling controller's tuning.

    Parameters
    ----------
    depth : entries of each ring, the largest ``capacity`` (a power of two).
    width : bits of a data word.
    count_width : bits of a segment length, read offset, segment number and evict count,
        and of a quadrant count.
    coord_width : the low bits of a word that are its coordinate along j (a B
        element's column, :func:`~sparseforge.sw.wire.csr_entry`), at most ``width``.

    Members
    -------
    As :class:`HyteAccessorSignature` says. ``free`` reads low on the cycle after an
    evict of fewer segments than hold metadata (the data head is looked up then);
    segments and fills wait that cycle and the next (``used``, kept in a register for
    the readies, is summed again).

    Latency and throughput: one segment or fill a cycle; one read a cycle, answered
    four cycles after it is taken at the earliest (two more than a combinational
    lookup, for the clock): stage 1 holds the read until its answer is known (the word
    filled or bypassed, or the segment complete) and addresses the metadata from
    registers; stage 2 is the metadata memory's output, copied to registers in stage 3,
    which works out the size and answer and reads the data; then the answer. Stages 2,
    3 and the answer move together, held only while ``read_data`` stalls. An evict
    waits for stages 1 to 3 and holds new reads while it waits.

    Clock: above 100 MHz in both report configurations (the synthesis report). A partial
    evict's data head goes from the metadata block RAM through one multiplexer into a
    register, the words held being the data ring's tail less it, so the path left is
    that difference and the entries' sum into ``room`` and ``free``.
    """

    PARAMS = (Param("depth", 64, 4, 1 << 15, "entries of each ring (largest capacity)",
                    pow2=True),
              Param("width", 32, 1, 256, "bits of a data word"),
              Param("count_width", 16, 16, 32, "bits of a length, offset, segment or count"),
              Param("coord_width", 16, 1, 32, "low bits of a word that are its coordinate j"))
    REPORT = ({"depth": 64, "width": 32}, {"depth": 1024, "width": 32})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.depth, self.width, self.count_width = v["depth"], v["width"], v["count_width"]
        self.coord_width = v["coord_width"]
        if self.coord_width > self.width:
            raise ParameterError(f"coord_width={self.coord_width}: a word's coordinate is "
                                 f"some of its width={self.width} bits, no more")
        super().__init__(HyteAccessorSignature(self.depth, self.width, self.count_width,
                                               self.coord_width))

    def elaborate(self, platform):
        m = Module()
        A = exact_log2(self.depth)
        ports = (self.depth, self.width, self.count_width, self.coord_width)
        m.submodules.data = data = Memory(shape=self.width, depth=self.depth, init=[])
        m.submodules.meta = meta = Memory(shape=A, depth=self.depth, init=[])
        m.submodules.allocation = allocation = Allocation(*ports)
        m.submodules.reads = reads = ReadPath(*ports)
        wiring.connect(m, wiring.flipped(self.segment), allocation.segment)
        wiring.connect(m, wiring.flipped(self.fill), allocation.fill)
        wiring.connect(m, wiring.flipped(self.evict), allocation.evict)
        wiring.connect(m, wiring.flipped(self.read), reads.read)
        wiring.connect(m, reads.read_data, wiring.flipped(self.read_data))
        m.d.comb += [allocation.mode.eq(self.mode), allocation.capacity.eq(self.capacity),
                     self.occupancy.eq(allocation.occupancy), self.free.eq(allocation.free),
                     self.bypass.eq(allocation.bypass)]
        wiring.connect(m, allocation.held, reads.held)
        m.submodules.quadrants = quadrants = QuadrantCounter(*ports)
        wiring.connect(m, wiring.flipped(self.tile), quadrants.tile)
        wiring.connect(m, quadrants.counts, wiring.flipped(self.counts))
        wiring.connect(m, allocation.seen, quadrants.seen)
        # No port is transparent: a read looks an entry or word up at least a cycle
        # after it was written, and the evict's head entry is an old one.
        wiring.connect(m, allocation.data_write, data.write_port())
        wiring.connect(m, allocation.meta_write, meta.write_port())
        wiring.connect(m, allocation.head_read, meta.read_port())
        wiring.connect(m, reads.meta_begin, meta.read_port())
        wiring.connect(m, reads.meta_next, meta.read_port())
        wiring.connect(m, reads.data_read, data.read_port())
        return m
