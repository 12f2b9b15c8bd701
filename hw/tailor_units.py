"""The Tailor's units: the split/backfill state machine, the region locator, the frontier.

:class:`~sparseforge.hw.tailor.Tailor` composes them around one memory.
:class:`SplitControl` holds the buffer's state (and derives ``fifo_base`` and
``tile_end`` from it); :class:`RegionLocator` says where a read's element is;
:class:`FrontierUnit` tracks how far the reader has passed in the bumped
stream and grants the parent ``fifo_credits``. Stream positions are signed
and compared modulo ``2**len(position)``; the Tailor's docstring states the
addressing they implement.
"""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2


class Geometry:
    """The Tailor's sizes (D, F, B = D - F, tile L) and the signatures its units share.

    ``region`` is the buffer's state, as :class:`SplitControl` drives it;
    ``location`` is where a read's element is, as :class:`RegionLocator` says.
    """

    def __init__(self, depth, fifo, tile):
        self.depth, self.fifo, self.tile = depth, fifo, tile
        self.base = depth - fifo
        self.index_width = ceil_log2(tile)
        self.position = signed(self.index_width + 2)
        self.slot_bits = exact_log2(fifo)
        self.region = wiring.Signature({name: Out(shape) for name, shape in {
            "split": 1,                      # the FIFO region is in use
            "backfill": 1,                   # owfills append (after a partial shrink)
            "full": 1,
            "head": range(depth),
            "occupancy": range(depth + 1),   # D while split
            "first": range(depth),           # while split: the first bumped index
            "fifo_base": range(depth),       # head + first: where FIFO slot 0 is (mod D)
            "newest": self.position,         # stream position of the newest owfill
            "newest_index": self.index_width,
            "held": range(fifo + 1),         # elements in the FIFO region
            "known": 1,                      # the tile's end is known
            "tile_end": range(tile + 1),     # first + bumped, once known
            "bumped": range(tile + 1),       # L - B, once known (a shrink leaves it)
        }.items()})
        self.location = wiring.Signature({name: Out(shape) for name, shape in {
            "present": 1,                    # the element is in the buffer
            "bumped": 1,                     # its index is past the buffet region
            "in_tile": 1,                    # the index is below the tile's end (if known)
            "addr": range(depth),            # its memory address, if present
            "position": self.position,       # its stream position, if present in the FIFO
            "upcoming": self.position,       # the stream position its next copy will have
        }.items()})


class SplitControl(wiring.Component):
    """The buffer's state and the split/backfill state machine (Tailors §3.3).

    States: FITTING (a buffet), SPLIT (buffet region ``[0, first)`` and the
    FIFO region), BACKFILL (after a partial shrink: owfills append until the
    buffer is full, then split again). Inputs are the transfers accepted this
    cycle; ``region`` is the state at the start of the cycle. ``rejoin`` says
    the next owfill backfills, ``owfill_addr`` where it goes, and ``restart``
    that stream positions start again from 0 on the next cycle.
    """

    def __init__(self, geometry):
        self.geometry = g = geometry
        super().__init__({
            "fill": In(1),
            "owfill": In(1),
            "last": In(1),
            "freed": In(range(g.depth + 1)),    # the count of the accepted shrink, else 0
            "region": Out(g.region),
            "rejoin": Out(1),
            "owfill_addr": Out(range(g.depth)),
            "restart": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geometry
        D, F, B = g.depth, g.fifo, g.base
        owfill, last, freed = self.owfill, self.last, self.freed

        split, backfill = Signal(), Signal()
        head = Signal(range(D))
        occupancy = Signal(range(D + 1))
        first = Signal(range(D))
        newest = Signal(g.position)
        newest_index = Signal(g.index_width)
        held = Signal(range(F + 1))
        known = Signal()
        bumped = Signal(range(g.tile + 1))      # L - B: constant while the tile is split
        tile_end = Signal(range(g.tile + 1))
        full = occupancy == D

        # The next owfill: where it goes in the stream and in the buffer.
        successor = Signal(range(g.tile + 1))
        wraps = known & (successor == tile_end)
        appends = ~split & ~full
        next_pos = Signal(g.position)
        next_index = Signal(g.index_width)
        next_slot = Signal(g.slot_bits)
        fifo_base = Signal(range(D))
        m.d.comb += [
            successor.eq(newest_index + 1),
            self.rejoin.eq(split & (first != B) & wraps),
            next_pos.eq(Mux(split, newest + 1, F)),
            next_index.eq(Mux(split, Mux(wraps, first, successor), D)),
            next_slot.eq(Mux(self.rejoin, 0, next_pos[:g.slot_bits])),
            fifo_base.eq(head + first),
            tile_end.eq(first + bumped),
            self.owfill_addr.eq(Mux(split, fifo_base + next_slot,
                                    head + Mux(full, B, occupancy))),
        ]

        releases = owfill & (self.rejoin | appends)  # back to a buffet: backfill or append
        streams = owfill & ~releases                 # the owfill writes the FIFO region
        ends = split & (freed == D)                  # a shrink of the whole buffer ends the tile
        trims = split & ~ends                        # a shrink frees part of the buffet region
        m.d.comb += self.restart.eq((owfill & self.rejoin) | ends)

        with m.FSM() as fsm:
            with m.State("FITTING"), m.If(owfill):
                m.next = "SPLIT"
            with m.State("SPLIT"):
                with m.If(ends | (owfill & self.rejoin & last)):
                    m.next = "FITTING"
                with m.Elif(owfill & self.rejoin):
                    m.next = "BACKFILL"
            with m.State("BACKFILL"):
                with m.If(owfill & ~appends):
                    m.next = "SPLIT"
                with m.Elif(owfill & last):
                    m.next = "FITTING"
        m.d.comb += [split.eq(fsm.ongoing("SPLIT")), backfill.eq(fsm.ongoing("BACKFILL"))]

        m.d.sync += [
            head.eq(head + freed),
            occupancy.eq(Mux(split, Mux(owfill & self.rejoin, first + 1, Mux(ends, 0, occupancy)),
                             occupancy + self.fill + (owfill & appends) - freed)),
            first.eq(Mux(streams & ~split, B, Mux(trims, first - freed, first))),
            newest.eq(Mux(streams, next_pos, newest)),
            newest_index.eq(Mux(streams, next_index,
                                Mux(trims, newest_index - freed, newest_index))),
            held.eq(Mux(streams, Mux(split, Mux(held != F, held + 1, F), 1),
                        Mux(releases | ends, 0, held))),
            known.eq(Mux(streams & last, 1, Mux(releases | ends, 0, known))),
            bumped.eq(Mux(streams & last, next_index + 1 - Mux(split, first, B), bumped)),
        ]

        r = self.region
        m.d.comb += [
            r.split.eq(split), r.backfill.eq(backfill), r.full.eq(full), r.head.eq(head),
            r.occupancy.eq(occupancy), r.first.eq(first), r.fifo_base.eq(fifo_base),
            r.newest.eq(newest), r.newest_index.eq(newest_index), r.held.eq(held),
            r.known.eq(known), r.tile_end.eq(tile_end), r.bumped.eq(bumped),
        ]
        return m


class RegionLocator(wiring.Component):
    """Where the element a read asks for is: its presence, address and stream position.

    Combinational. A buffet-region index (below ``first`` while split) is at
    ``head + index``. A bumped one is found from the newest owfill: its
    distance behind it, modulo the bumped part's length once known, must be
    less than the count held and not reach behind ``frontier`` (a copy the
    reader already passed belongs to an earlier pass).
    """

    def __init__(self, geometry):
        self.geometry = g = geometry
        super().__init__({
            "index": In(g.index_width),
            "region": In(g.region),
            "frontier": In(g.position),
            "location": Out(g.location),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geometry
        r, index, loc = self.region, self.index, self.location

        boundary = Signal(range(g.depth))   # indices below it are the buffet region's
        dist_raw = Signal(signed(g.index_width + 1))
        behind = Signal(signed(g.index_width + 2))   # distance behind the newest
        reach = Signal(g.position)                   # newest - frontier: copies not yet passed
        hit = Signal()
        hit_slot = Signal(g.slot_bits)
        m.d.comb += [
            boundary.eq(Mux(r.split, r.first, g.base)),
            dist_raw.eq(r.newest_index - index),
            behind.eq(Mux((dist_raw < 0) & r.known, dist_raw + r.bumped, dist_raw)),
            reach.eq(r.newest - self.frontier),
            loc.in_tile.eq(~r.known | (index < r.tile_end)),
            hit.eq((behind >= 0) & (behind < r.held) & (behind <= reach) & loc.in_tile),
            hit_slot.eq(r.newest[:g.slot_bits] - behind[:g.slot_bits]),
            loc.bumped.eq(index >= boundary),
            loc.addr.eq(Mux(r.split & loc.bumped, r.fifo_base + hit_slot, r.head + index)),
            loc.present.eq(Mux(r.split, ~loc.bumped | hit, index < r.occupancy)),
            loc.position.eq(r.newest - behind),
            loc.upcoming.eq(Mux(dist_raw < 0, r.newest - dist_raw,
                                Mux(r.known, r.newest + r.bumped - dist_raw, r.newest + 1))),
        ]
        return m


class FrontierUnit(wiring.Component):
    """The frontier, the first stream position the reader has not passed, and ``fifo_credits``.

    A read passes every earlier position: one accepted moves the frontier
    past its element, one presented but absent moves it to the position its
    element will come at. Before the split, positions count from the first
    index the FIFO region will take (``B``) and a shrink renumbers them.
    ``fifo_credits`` grants the parent the FIFO slots whose element the
    reader has passed (all ``F`` for the owfill that backfills), or while
    backfilling the room left.
    """

    def __init__(self, geometry):
        self.geometry = g = geometry
        super().__init__({
            "region": In(g.region),
            "location": In(g.location),
            "index": In(g.index_width),
            "request": In(1),                   # a read is presented
            "read": In(1),                      # a read is accepted
            "freed": In(range(g.depth + 1)),
            "rejoin": In(1),
            "restart": In(1),
            "frontier": Out(g.position),
            "fifo_credits": Out(range(g.fifo + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geometry
        F = g.fifo
        r, loc, frontier = self.region, self.location, self.frontier
        position = g.position

        # Where a read moves the frontier, accepted or stalled. A hit is never
        # behind the frontier, so reading it always advances the frontier.
        first_pass = Signal(signed(g.index_width + 1))  # index - B: its first-pass position
        read_ahead, after_read = Signal(position), Signal(position)
        stall_pos, stall_ahead, after_stall = Signal(position), Signal(position), Signal(position)
        stalled = self.request & loc.bumped & ~loc.present & (loc.in_tile | ~r.split)
        m.d.comb += [
            first_pass.eq(self.index - g.base),
            read_ahead.eq(first_pass + 1 - frontier),
            after_read.eq(Mux(r.split, loc.position + 1,
                              Mux(read_ahead > 0, first_pass + 1, frontier))),
            stall_pos.eq(Mux(r.split, loc.upcoming, first_pass)),
            stall_ahead.eq(stall_pos - frontier),
            after_stall.eq(Mux(stall_ahead > 0, stall_pos, frontier)),
        ]

        def renumbered(value, name):
            """``value`` after this cycle's shrink: a buffet's renumbers positions (not
            below 0), a shrink while split does not."""
            kept = Signal(position, name=f"kept_{name}")
            m.d.comb += kept.eq(value - self.freed)
            return Mux(r.split, value, Mux(kept < 0, 0, kept))

        # Each outcome is renumbered before ``read``, which arrives late (it waits
        # for the lookup), picks one: the subtraction stays off that path.
        m.d.sync += frontier.eq(Mux(self.restart, 0, Mux(
            self.read & loc.bumped, renumbered(after_read, "read"),
            Mux(stalled, renumbered(after_stall, "stall"), renumbered(frontier, "idle")))))

        spare = Signal(position)
        room = Signal(range(g.depth + 1))
        m.d.comb += [spare.eq(frontier + F - r.newest - 1), room.eq(g.depth - r.occupancy)]
        with m.If(self.rejoin):
            m.d.comb += self.fifo_credits.eq(Mux(spare >= F, F, 0))     # all passed
        with m.Elif(r.split):
            m.d.comb += self.fifo_credits.eq(Mux(spare < 0, 0, Mux(spare > F, F, spare)))
        with m.Elif(r.full & (frontier >= F)):
            m.d.comb += self.fifo_credits.eq(F)
        with m.Elif(~r.full & r.backfill):
            m.d.comb += self.fifo_credits.eq(Mux(room > F, F, room))
        return m
