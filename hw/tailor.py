"""The Tailor: a buffet extended with overwriting fills (Tailors paper §3.3)."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..errors import ParameterError
from ..params import Param, check_params
from ..registry import block
from .buffet import buffet_ports, read_stage


@block("tailor")
class Tailor(wiring.Component):
    """A tail-overbooked buffer: a buffet whose tail streams what does not fit.

    Parameters
    ----------
    depth : capacity D in elements (a power of two).
    width : element width in bits.
    fifo  : size F of the FIFO region at the tail (a power of two, at most D/2);
            the buffet region of an overbooked tile is ``B = D - F``.
    tile  : the longest tile L the parent may send (a power of two above D);
            sets the width of read and update indices.

    Members
    -------
    The Buffet's (``fill``, ``read``, ``read_data``, ``update``, ``shrink``,
    ``credit``, ``occupancy``; see :class:`~sparseforge.hw.buffet.Buffet`), and:

    owfill : In(stream({data, last}))
        Overwriting fill, accepted while the buffer is full (or backfilling).
        The first one splits the buffer (clears the F tail slots and keeps
        indices ``[0, B)`` as the buffet region); each one writes the next
        element of the bumped stream over the oldest of the FIFO region. The
        parent sends the bumped indices in order, once per pass of the child,
        with ``last`` on index ``L - 1``, and wraps to the first bumped index.
    fifo_credits : Out(range(F + 1))
        How many ``owfill`` the parent may send now without overwriting an
        element the child has not yet passed (count your in-flight ones
        against it). A read passes every earlier element of the stream (it
        asks for the next occurrence of its index), so a parent that obeys
        this never loses an element. The mechanism itself does not wait for it.

    A read of a bumped index that is not in the FIFO region stalls until an
    ``owfill`` brings it. While split, updates go to the buffet region only.
    A shrink of the whole buffer ends the tile; between passes the child may
    shrink part of the buffet region, and the stream's next wrap *backfills*
    (§3.3.2): that owfill, which needs all F credits, releases the FIFO region
    and later ones append until the buffer is full and splits again. A tile
    that overbooks starts with an empty buffer; one that fits behaves exactly
    like the Buffet, cycle for cycle. The behavioural model,
    :mod:`sparseforge.sim.models.tailor`, states the semantics in full.

    Addressing: the element at stream position ``p`` (position 0 is the
    first bumped index of the first pass) lives at offset ``first + p mod F``,
    ``first`` being B less any shrink since the split. Rather than the
    paper's single FIFO offset, which only holds while the FIFO region holds
    consecutive indices, a read finds its element from the newest one: its
    distance ``d = (newest_index - index) mod (L - B)`` behind it is present
    when ``d`` is less than the count held and the copy is not behind the
    frontier (a copy the child already passed belongs to an earlier pass).
    That stays correct where the stream wraps from index L - 1 back to B, for
    any L.

    Storage is one ``Memory`` with one write port (update, then fill or
    owfill) and one read port, as in the Buffet; the FIFO region adds index
    arithmetic and a handful of registers (see the synthesis report).
    """

    PARAMS = (
        Param("depth", 64, 4, 1 << 16, "capacity D in elements", pow2=True),
        Param("width", 32, 1, 1024, "element width in bits"),
        Param("fifo", 16, 1, 1 << 15, "FIFO region size F (at most depth/2)", pow2=True),
        Param("tile", 256, 8, 1 << 20, "longest tile in elements (above depth)", pow2=True),
    )

    REPORT = ({"depth": 64, "width": 32, "fifo": 16, "tile": 256},
              {"depth": 1024, "width": 32, "fifo": 64, "tile": 4096})

    def __init__(self, depth=64, width=32, fifo=16, tile=256):
        values = check_params(self.PARAMS, {"depth": depth, "width": width, "fifo": fifo,
                                            "tile": tile})
        self.depth, self.width = values["depth"], values["width"]
        self.fifo, self.tile = values["fifo"], values["tile"]
        if self.fifo > self.depth // 2:
            raise ParameterError(f"parameter fifo={self.fifo}: at most depth/2 = "
                                 f"{self.depth // 2}")
        if self.tile <= self.depth:
            raise ParameterError(f"parameter tile={self.tile}: must exceed depth={self.depth}")
        self.base = self.depth - self.fifo
        self.index_width = ceil_log2(self.tile)
        ports = buffet_ports(self.depth, self.width, self.index_width)
        ports["owfill"] = In(stream.Signature(data.StructLayout(
            {"data": self.width, "last": 1})))
        ports["fifo_credits"] = Out(range(self.fifo + 1))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        D, F, B = self.depth, self.fifo, self.base
        mask = D - 1
        pos_width = self.index_width + 2     # stream positions, compared modulo 2**pos_width
        position = signed(pos_width)

        m.submodules.store = store = Memory(shape=self.width, depth=D, init=[])
        wr = store.write_port()
        rd = store.read_port(transparent_for=(wr,))

        head = Signal(range(D))
        occupancy = Signal(range(D + 1))     # D while split
        split = Signal()
        backfill = Signal()                  # owfills append (after a partial shrink)
        first = Signal(range(D))             # while split: the first bumped index
        fifo_base = Signal(range(D))         # head + first: where FIFO slot 0 is (mod D)
        tile_end = Signal(range(self.tile + 1))  # first + bumped: the tile's end, once known
        newest = Signal(position)            # stream position of the newest owfill
        newest_index = Signal(self.index_width)
        held = Signal(range(F + 1))          # elements in the FIFO region
        bumped = Signal(range(self.tile + 1))    # L - B, valid once ``known``
        known = Signal()
        frontier = Signal(position)          # first stream position not yet passed
        full = occupancy == D
        m.d.comb += self.occupancy.eq(occupancy)

        slot_bits = exact_log2(F)

        def slot_of(pos):
            """The FIFO-region slot of a stream position: ``pos mod F``."""
            return pos[:slot_bits]

        # -- where a read's element is ----------------------------------------
        index = self.read.payload
        boundary = Signal(range(D))          # indices below it are the buffet region's
        dist_raw = Signal(signed(self.index_width + 1))
        behind = Signal(signed(self.index_width + 2))   # distance behind the newest
        in_tile = ~known | (index < tile_end)
        hit = Signal()
        hit_pos = Signal(position)
        hit_slot = Signal(slot_bits)
        reach = Signal(position)                 # newest - frontier: copies not yet passed
        m.d.comb += [
            boundary.eq(Mux(split, first, B)),
            dist_raw.eq(newest_index - index),
            behind.eq(Mux((dist_raw < 0) & known, dist_raw + bumped, dist_raw)),
            reach.eq(newest - frontier),
            # A copy behind the frontier (behind > reach) belongs to an earlier pass.
            hit.eq((behind >= 0) & (behind < held) & (behind <= reach) & in_tile),
            hit_pos.eq(newest - behind),
            hit_slot.eq(slot_of(newest) - behind[:slot_bits]),
        ]
        is_bumped = index >= boundary
        read_addr = Signal(range(D))
        m.d.comb += read_addr.eq(Mux(split & is_bumped, fifo_base + hit_slot,
                                     head + index))
        present = Mux(split, ~is_bumped | hit, index < occupancy)

        # -- the single write port: update, else fill or owfill -------------
        do_update, do_fill, do_owfill = Signal(), Signal(), Signal()
        next_pos = Signal(position)
        next_index = Signal(self.index_width)
        successor = Signal(range(self.tile + 1))
        writable = Signal(range(D + 1))          # indices an update may touch
        wraps = known & (successor == tile_end)
        rejoin = split & (first != B) & wraps    # the next owfill backfills
        appends = ~split & ~full                 # the next owfill appends (backfill)
        owfill_addr = Signal(range(D))
        next_slot = Signal(slot_bits)
        m.d.comb += [
            successor.eq(newest_index + 1),
            next_pos.eq(Mux(split, newest + 1, F)),
            next_index.eq(Mux(split, Mux(wraps, first, successor), D)),
            next_slot.eq(Mux(rejoin, 0, slot_of(next_pos))),
            owfill_addr.eq(Mux(split, fifo_base + next_slot,
                               head + Mux(full, B, occupancy))),
            writable.eq(Mux(split, first, occupancy)),
            self.update.ready.eq(self.update.payload.index < writable),
            do_update.eq(self.update.valid & self.update.ready),
            self.fill.ready.eq(~full & ~do_update),
            do_fill.eq(self.fill.valid & self.fill.ready),
            self.owfill.ready.eq((full | backfill) & ~do_update),
            do_owfill.eq(self.owfill.valid & self.owfill.ready),
            wr.en.eq(do_update | do_fill | do_owfill),
            wr.addr.eq(Mux(do_owfill, owfill_addr,
                           head + Mux(do_update, self.update.payload.index, occupancy))),
            wr.data.eq(Mux(do_update, self.update.payload.data,
                           Mux(do_owfill, self.owfill.payload.data, self.fill.payload))),
        ]
        last = self.owfill.payload.last
        with m.If(do_owfill):
            with m.If(rejoin | appends):
                m.d.sync += [split.eq(0), backfill.eq(~last), known.eq(0), held.eq(0)]
            with m.Else():
                m.d.sync += [
                    split.eq(1),
                    backfill.eq(0),
                    newest.eq(next_pos),
                    newest_index.eq(next_index),
                    held.eq(Mux(split & (held != F), held + 1, Mux(split, F, 1))),
                ]
                with m.If(~split):
                    m.d.sync += [first.eq(B), fifo_base.eq(head + B)]
                with m.If(last):
                    m.d.sync += [bumped.eq(next_index + 1 - Mux(split, first, B)),
                                 tile_end.eq(next_index + 1), known.eq(1)]

        # -- reads: never from the slot an owfill overwrites this cycle ---------
        hazard = do_owfill & (read_addr == owfill_addr)
        do_read = read_stage(m, rd, self.read, self.read_data, present & ~hazard, read_addr)

        # -- the frontier: reads pass earlier stream positions ------------------
        upcoming = Mux(dist_raw < 0, newest - dist_raw,
                       Mux(known, newest + bumped - dist_raw, newest + 1))
        first_pass = Signal(signed(self.index_width + 1))  # index - B: its first-pass position
        m.d.comb += first_pass.eq(index - B)
        # Both outcomes are computed before do_read picks one. A hit is never
        # behind the frontier, so reading it always advances the frontier.
        after_read = Signal(position)
        after_stall = Signal(position)
        stall_pos = Signal(position)
        read_ahead = Signal(position)
        stall_ahead = Signal(position)
        m.d.comb += [
            read_ahead.eq(first_pass + 1 - frontier),
            after_read.eq(Mux(split, hit_pos + 1,
                              Mux(read_ahead > 0, first_pass + 1, frontier))),
            stall_pos.eq(Mux(split, upcoming, first_pass)),
            stall_ahead.eq(stall_pos - frontier),
            after_stall.eq(Mux(stall_ahead > 0, stall_pos, frontier)),
        ]
        stalled = self.read.valid & is_bumped & ~present & (in_tile | ~split)

        # -- shrink: a buffet's, or while split part of the buffet region or all --
        do_shrink = Signal()
        ends = Signal()                          # a shrink of the whole buffer while split
        count = self.shrink.payload
        m.d.comb += [
            ends.eq(split & (count == D)),
            self.shrink.ready.eq(~do_owfill & Mux(split, (count <= first) | (count == D),
                                                  count <= occupancy)),
            do_shrink.eq(self.shrink.valid & self.shrink.ready),
        ]
        freed = Signal(range(D + 1))
        m.d.comb += freed.eq(Mux(do_shrink, count, 0))

        def shifted(value):
            """A buffet's shrink renumbers positions; while split it does not."""
            kept = Signal(position)
            m.d.comb += kept.eq(value - freed)
            return Mux(split, value, Mux(kept < 0, 0, kept))
        m.d.sync += [
            head.eq((head + freed) & mask),
            self.credit.eq(freed),
            frontier.eq(Mux(do_read & is_bumped, shifted(after_read),
                            Mux(stalled, shifted(after_stall), shifted(frontier)))),
        ]
        with m.If(~split):
            m.d.sync += occupancy.eq(occupancy + do_fill + (do_owfill & appends) - freed)
        with m.If(do_shrink & split & ~ends):
            m.d.sync += [first.eq(first - freed), newest_index.eq(newest_index - freed),
                         tile_end.eq(tile_end - freed)]
        with m.If(do_owfill & rejoin):
            m.d.sync += [occupancy.eq(first + 1), frontier.eq(0)]
        with m.If(do_shrink & ends):
            m.d.sync += [split.eq(0), known.eq(0), held.eq(0), frontier.eq(0),
                         occupancy.eq(0), backfill.eq(0)]

        # -- credits for the FIFO region ------------------------------------------
        spare = Signal(position)
        room = Signal(range(D + 1))
        m.d.comb += [spare.eq(frontier + F - newest - 1), room.eq(D - occupancy)]
        with m.If(split & rejoin):
            m.d.comb += self.fifo_credits.eq(Mux(spare >= F, F, 0))     # all passed
        with m.Elif(split):
            m.d.comb += self.fifo_credits.eq(Mux(spare < 0, 0, Mux(spare > F, F, spare)))
        with m.Elif(full & (frontier >= F)):
            m.d.comb += self.fifo_credits.eq(F)
        with m.Elif(~full & backfill):
            m.d.comb += self.fifo_credits.eq(Mux(room > F, F, room))
        return m
