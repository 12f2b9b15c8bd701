"""A Tailor filled from a producer that replays the tile, and read by tag (Tailors §3.3).

Two units for a tile held in a :class:`~sparseforge.hw.tailor.Tailor` across passes,
each with named ports, for a composite to join with ``wiring.connect``:

- :class:`TailorFeed`, the Tailor's parent for a producer that cannot fetch a single
  entry but re-runs from some earlier point (a format converter re-run over the input
  tiles that hold the bumped indices): it keeps what the Tailor needs from each pass,
  drops the rest, and ends the tile with the shrink;
- :class:`TaggedResponder`, a :class:`~sparseforge.hw.interfaces.TaggedMemoryPortSignature`
  served from the Tailor's child read port, so a tagged reader (the Tensaurus TLU) reads
  the held tile by address without knowing it is a Tailor.

Cost of a tile (the host model's). A tile of ``L`` entries read ``P`` times on a
Tailor of capacity ``D``, FIFO region ``F`` and buffet region ``B = D - F``; on pass
``k >= 2`` the producer starts at index ``s_k <= B``:

- pass 1 takes the ``L`` entries: ``min(L, D)`` fills, ``max(0, L - D)`` owfills;
- a later pass of a tile that fits (``L <= D``) takes nothing (the producer is not run);
- a later pass of a tile that overbooks (``L > D``) takes ``L - s_k`` entries: it drops
  ``B - s_k`` and refetches ``L - B`` (owfills of ``B .. L-1``);
- so the tile refetches ``(P - 1)(L - B)`` entries if ``L > D``, else none, and drops
  ``sum_k (B - s_k)``.

Cycles, with nothing stalled (the producer always offering, the reader asking for an
index a cycle and taking each answer at once), from a tile's first pass command to its
shrink: pass 1 takes ``L + 2`` (the command, ``L`` entries, the end marker; an entry is
written when the item after it comes), ``+ 1`` for the reader's read of entry ``L - 1``
(if ``L > 0``), ``+ 2`` if the tile overbooks (the split's owfill waits for the credits of
the reader's read of index ``D - 1``, a cycle after its fill, and a cycle more for the feed
to see them, :class:`TailorFeed`'s ``tailor``); a later pass takes
``max(L, L - s_k + 2)`` if ``L > D`` (the reader's ``L`` reads, or the producer's entries,
end marker and command, the producer up to a pass ahead), else ``max(L, 1)``; the shrink
one more, after the reader's last read. The next tile's first command follows on the
next cycle. These hold for a FIFO region of 4 or more (``F >= 4``): with 2 or 1 the feed's
owfills wait for credits on every other cycle at best.
:func:`sparseforge.sw.tailor_feed.tile_cost` computes these figures per pass.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from .interfaces import TaggedMemoryPortSignature, TailorParentSignature
from .stream_units import Beside


def pass_layout(index_width):
    """A pass command: ``start``, the index of the producer's first entry in the pass
    (0 on a tile's first pass), and ``final``, the tile's last pass."""
    return data.StructLayout({"start": index_width, "final": 1})


def entry_layout(width):
    """A producer's item: an entry's ``data``, or with ``end`` the end of the pass (its
    data unused)."""
    return data.StructLayout({"data": width, "end": 1})


def report_layout(index_width, count_width):
    """A tile's counts, after its shrink: its ``length`` L, the entries the feed
    ``dropped`` and those it ``refetched`` (owfills after the first pass)."""
    return data.StructLayout({"length": index_width + 1, "dropped": count_width,
                              "refetched": count_width})


class ReadsSignature(wiring.Signature):
    """The child's reads, as its parent sees and holds them, seen from the reading side.

    - ``served`` (stream out, never stalled): the index of each read the Tailor takes.
    - ``last_index`` (in): the tile's last index, once the parent knows it.
    - ``hold_last`` (in): take no read of ``last_index``: that read would end a pass
      the parent has not yet been asked for (the reader keeps within the passes fed).
    - ``hold`` (in): take no read: the reader has ended the tile's last pass and the
      whole-buffer shrink is not yet taken, so a read now would see the old tile.
    """

    def __init__(self, index_width):
        super().__init__({"served": Out(stream.Signature(index_width, always_ready=True)),
                          "last_index": In(index_width), "hold_last": In(1),
                          "hold": In(1)})


class TailorFeed(wiring.Component):
    """The parent of a Tailor for a producer that replays the tile pass by pass.

    Parameters
    ----------
    depth, fifo, tile : the Tailor's capacity D, FIFO region F and longest tile.
    width : bits of an entry.
    count_width : bits of the report's counts (they wrap).

    Members
    -------
    passes : In(stream(:func:`pass_layout`))
        One command a pass. Taken while the reader is no more than a pass behind
        (so the producer runs at most one pass ahead of it), after the previous pass's
        end marker; on a later pass of a tile that fits, the pass is done once taken.
    entries : In(stream(:func:`entry_layout`))
        The producer's entries in index order from the pass's ``start``, then one item
        with ``end``. On a tile's first pass all of them (``start`` 0); on a later pass
        of a tile that overbooks, from any ``start`` up to B; on a later pass of a tile
        that fits, none (no end marker either).
    tailor : In(TailorParentSignature)
        The Tailor's parent side. Entry ``i`` of the first pass is filled if
        ``i < D``, else owfilled; on a later pass, entries below B are dropped and
        the rest owfilled. An entry waits in a register for the item after it, so an
        owfill carries ``last`` on the tile's last index, and no element is written
        before the tile's length is known to the feed. An owfill goes while the
        ``fifo_credits`` the Tailor showed on the cycle before, less the owfill sent
        then, are not 0: a cycle's lag, safe as the feed never shrinks part of the
        buffer (only an owfill then takes credits away).
    reads : In(ReadsSignature)
        The child's reads: a read of index ``L - 1`` ends one of the reader's passes
        (it reads each pass in index order, to the last index). The feed holds the one
        that would end a pass not yet commanded, and every read from the end of the last
        pass to the shrink, so a reader may run ahead without reading the wrong tile.
    shrink : Out(stream(count))
        To the Tailor child side's ``shrink``: after the final pass's end marker, once
        the reader has ended every pass, ``min(L, D)``, which frees the whole buffer;
        its size is a register, set with L, so the Tailor's frontier starts at it.
    report : Out(stream(:func:`report_layout`))
        The tile's counts, from a register, offered once the shrink is taken; the next
        shrink waits for it to be taken.

    Throughput: one entry a cycle (kept or dropped), one cycle for a pass's end marker
    and one for its command; the module docstring gives a tile's cycles and counts.
    Between registers: the producer's ``valid`` into the Tailor's write, the Tailor's
    ``ready`` (its full flag) back into the producer's ``ready``; the credits an owfill
    waits for are the feed's registers, so no path joins the Tailor's frontier to its
    write.
    """

    def __init__(self, depth, fifo, tile, width, count_width=32):
        if not 0 < fifo <= depth // 2 or tile <= depth:
            raise ValueError(f"fifo={fifo}, depth={depth}, tile={tile}: a Tailor's "
                             "0 < fifo <= depth/2 and tile > depth")
        self.depth, self.fifo, self.base = depth, fifo, depth - fifo
        self.index_width = iw = ceil_log2(tile)
        super().__init__({
            "passes": In(stream.Signature(pass_layout(iw))),
            "entries": In(stream.Signature(entry_layout(width))),
            "tailor": In(TailorParentSignature(depth, width, fifo)),
            "reads": In(ReadsSignature(iw)),
            "shrink": Out(stream.Signature(ceil_log2(depth + 1))),
            "report": Out(stream.Signature(report_layout(iw, count_width))),
        })

    def elaborate(self, platform):
        m = Module()
        D, iw = self.depth, self.index_width
        cmd, report = self.passes, self.report
        index = Signal(iw + 1)                  # the next entry's index in the tile
        length, last_index = Signal(iw + 1), Signal(iw)
        freed = Signal.like(self.shrink.payload, name="freed")  # min(L, D), set with L
        known = Signal()                        # L is known: the first pass has ended
        final = Signal()                        # this pass is the tile's last
        lag = Signal(range(3))                  # passes fed that the reader has not ended
        fed = Signal()                          # a pass is fed this cycle
        dropped, refetched = (Signal.like(report.payload.dropped, name=n)
                              for n in ("dropped", "refetched"))

        # The reader ends a pass with its read of the tile's last index.
        served = self.reads.served
        read_end = served.valid & known & (served.payload == last_index)
        m.d.sync += lag.eq(lag + fed - read_end)
        m.d.comb += [self.reads.last_index.eq(last_index), self.shrink.payload.eq(freed),
                     self.reads.hold_last.eq(known & (lag == 0))]
        with m.If(report.ready):
            m.d.sync += report.valid.eq(0)

        # The credits as the Tailor showed them on the cycle before, less the owfill sent
        # then: registers, so no path runs from the Tailor's frontier through the feed's
        # choice into the Tailor's write. Safe, as the feed never shrinks part of the
        # buffer: then only an owfill takes credits away (a read, a stall only give).
        tailor = self.tailor
        seen, paid = Signal.like(tailor.fifo_credits, name="seen_credits"), Signal()
        m.d.sync += [seen.eq(tailor.fifo_credits),
                     paid.eq(tailor.owfill.valid & tailor.owfill.ready)]
        credited = seen[1:].any() | (seen[0] & ~paid)

        with m.FSM():
            with m.State("WAIT"):
                m.d.comb += cmd.ready.eq(lag != 2)
                with m.If(cmd.valid & cmd.ready):
                    m.d.sync += [index.eq(cmd.payload.start), final.eq(cmd.payload.final)]
                    skip = known & (length <= D)            # a later pass of a tile that fits
                    m.d.comb += fed.eq(skip & (length != 0))
                    with m.If(~skip):
                        m.next = "FEED"
                    with m.Elif(cmd.payload.final):
                        m.next = "END"
            with m.State("FEED"):
                ends = self._feed(m, index, known, dropped, refetched, credited)
                with m.If(ends):
                    total = Mux(known, length, index)
                    m.d.comb += fed.eq(total != 0)
                    m.d.sync += [length.eq(total), last_index.eq(total - 1), known.eq(1),
                                 freed.eq(Mux(total > D, D, total))]
                    m.next = "WAIT"
                    with m.If(final):
                        m.next = "END"
            with m.State("END"):
                m.d.comb += [self.reads.hold.eq(lag == 0),
                             self.shrink.valid.eq((lag == 0) & ~report.valid)]
                with m.If(self.shrink.valid & self.shrink.ready):
                    m.d.sync += [report.valid.eq(1), report.payload.length.eq(length),
                                 report.payload.dropped.eq(dropped),
                                 report.payload.refetched.eq(refetched),
                                 dropped.eq(0), refetched.eq(0), known.eq(0)]
                    m.next = "WAIT"
        return m

    def _feed(self, m, index, known, dropped, refetched, credited):
        """A pass's entries: each dropped, or held until the item after it comes, then
        written (filled, or owfilled with ``last`` if that item is the end marker, while
        ``credited``). Returns whether the end marker is taken on this cycle."""
        tailor, item = self.tailor, self.entries
        pending, owfill = Signal(), Signal()            # an entry waits; it is an owfill
        data_ = Signal.like(item.payload.data, name="pending_data")
        drops = ~item.payload.end & known & (index < self.base)
        taken = item.valid & item.ready
        wrote = Signal()
        m.d.comb += [
            tailor.fill.payload.eq(data_),
            tailor.owfill.payload.data.eq(data_),
            tailor.owfill.payload.last.eq(item.payload.end),
            tailor.fill.valid.eq(pending & item.valid & ~owfill),
            tailor.owfill.valid.eq(pending & item.valid & owfill
                                   & credited),
            wrote.eq((tailor.fill.valid & tailor.fill.ready)
                     | (tailor.owfill.valid & tailor.owfill.ready)),
            item.ready.eq(drops | ~pending | wrote),
        ]
        with m.If(taken):
            m.d.sync += [pending.eq(~item.payload.end & ~drops), data_.eq(item.payload.data),
                         owfill.eq(known | (index >= self.depth))]
        with m.If(taken & ~item.payload.end):
            m.d.sync += index.eq(index + 1)
        with m.If(taken & drops):
            m.d.sync += dropped.eq(dropped + 1)
        with m.If(tailor.owfill.valid & tailor.owfill.ready & known):
            m.d.sync += refetched.eq(refetched + 1)
        return taken & item.payload.end


class TaggedResponder(wiring.Component):
    """A tagged memory port served from a buffer's child read port: address = index.

    Parameters
    ----------
    width : bits of an element.
    index_width : bits of a read index (the Tailor's, ``log2 tile``).
    addr_width : bits of an address; the index is its low ``index_width`` bits (the
        rest must be 0).
    tag_width : bits of a tag.
    latency : the buffer's read latency (at least 2, the tag queue's own).

    Members
    -------
    mem : In(TaggedMemoryPortSignature)
        The reader's side: ``{addr, tag}`` in, ``{tag, data}`` out, one per request.
        Answered in request order (which the signature allows, not requires).
    read : Out(stream(index)), read_data : In(stream(width))
        To the Tailor child side's ``read`` and ``read_data``: a request goes on
        when the buffer takes its read (it stalls while its element is not yet
        present), its tag waiting beside the read.
    reads : Out(ReadsSignature)
        To the parent (:class:`TailorFeed`): the index of each read the buffer takes;
        a request waits while the parent holds it.

    Latency and throughput: the buffer's, plus nothing: a request and its read are one
    transfer, the response is the read's data with its tag; one a cycle. The tags wait
    in a :class:`~sparseforge.hw.stream_units.Beside` queue of ``latency + 2``.
    """

    def __init__(self, width, index_width, addr_width, tag_width, latency=2):
        if addr_width < index_width:
            raise ValueError(f"addr_width={addr_width}: at least index_width={index_width}")
        self.index_width, self.latency = index_width, latency
        self.tag_width = tag_width
        super().__init__({
            "mem": In(TaggedMemoryPortSignature(addr_width, width, tag_width)),
            "read": Out(stream.Signature(index_width)),
            "read_data": In(stream.Signature(width)),
            "reads": Out(ReadsSignature(index_width)),
        })

    def elaborate(self, platform):
        m = Module()
        width = len(self.read_data.payload)
        m.submodules.tags = tags = Beside(self.index_width, width, self.tag_width,
                                          self.latency)
        request, response, reads = self.mem.request, self.mem.response, self.reads
        index = request.payload.addr[:self.index_width]
        held = reads.hold | reads.hold_last & (index == reads.last_index)
        m.d.comb += [
            tags.enter.valid.eq(request.valid & ~held),
            tags.enter.payload.data.eq(index),
            tags.enter.payload.side.eq(request.payload.tag),
            request.ready.eq(tags.enter.ready & ~held),
            response.valid.eq(tags.leave.valid),
            response.payload.tag.eq(tags.leave.payload.side),
            response.payload.data.eq(tags.leave.payload.data),
            tags.leave.ready.eq(response.ready),
            reads.served.valid.eq(self.read.valid & self.read.ready),
            reads.served.payload.eq(self.read.payload),
        ]
        wiring.connect(m, tags.to_pipe, wiring.flipped(self.read))
        wiring.connect(m, wiring.flipped(self.read_data), tags.from_pipe)
        return m
