"""The Tailor's units: the split/backfill state machine, the region locator, the frontier.

:class:`~sparseforge.hw.tailor.Tailor` composes them around one memory.
:class:`SplitControl` holds the buffer's state, every part of it a register;
:class:`RegionLocator` says where a read's element is;
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
            "fifo_base": range(depth),       # while split: head + first, where FIFO slot 0 is
            "newest": self.position,         # stream position of the newest owfill
            "newest_index": self.index_width,
            "oldest_index": self.index_width,  # the index of the oldest element held
            "offset": self.position,         # newest - newest_index: a pass's position of index 0
            "held": range(fifo + 1),         # elements in the FIFO region
            "known": 1,                      # the tile's end is known
            "last_index": self.index_width,  # first + bumped - 1, once known
            "bumped": range(tile + 1),       # L - B, once known (a shrink leaves it)
        }.items()})
        self.location = wiring.Signature({name: Out(shape) for name, shape in {
            "present": 1,                    # the element is in the buffer
            "bumped": 1,                     # its index is past the buffet region
            "in_tile": 1,                    # the index is below the tile's end (if known)
            "addr": range(depth),            # its memory address, if present
            "slot": self.slot_bits,          # its FIFO slot, if present there
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
            "owfill_slot": Out(g.slot_bits),    # while split: its FIFO slot
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
        oldest_index = Signal(g.index_width)
        offset = Signal(g.position)
        held = Signal(range(F + 1))
        known = Signal()
        bumped = Signal(range(g.tile + 1))      # L - B: constant while the tile is split
        last_index = Signal(g.index_width)
        fifo_base = Signal(range(D))
        full = occupancy == D

        # The next owfill: where it goes in the stream and in the buffer.
        successor = Signal(g.index_width)
        wraps = known & (newest_index == last_index)
        oldest_next = Signal(g.index_width)     # the oldest index's successor, wrapped like it
        appends = ~split & ~full
        next_pos = Signal(g.position)
        next_index = Signal(g.index_width)
        next_slot = Signal(g.slot_bits)
        m.d.comb += [
            successor.eq(newest_index + 1),
            oldest_next.eq(Mux(known & (oldest_index == last_index), first, oldest_index + 1)),
            self.rejoin.eq(split & (first != B) & wraps),
            next_pos.eq(Mux(split, newest + 1, F)),
            next_index.eq(Mux(split, Mux(wraps, first, successor), D)),
            next_slot.eq(Mux(self.rejoin, 0, next_pos[:g.slot_bits])),
            self.owfill_slot.eq(next_slot),
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
            oldest_index.eq(Mux(streams, Mux(~split, next_index,
                                             Mux(held == F, oldest_next, oldest_index)),
                                Mux(trims, oldest_index - freed, oldest_index))),
            offset.eq(Mux(streams, Mux(~split, F - D, Mux(wraps, offset + bumped, offset)),
                          Mux(trims, offset + freed, offset))),
            held.eq(Mux(streams, Mux(split, Mux(held != F, held + 1, F), 1),
                        Mux(releases | ends, 0, held))),
            fifo_base.eq(Mux(streams & ~split, head + B, fifo_base)),   # a trim keeps it
            last_index.eq(Mux(streams & last, next_index,
                              Mux(trims, last_index - freed, last_index))),
            known.eq(Mux(streams & last, 1, Mux(releases | ends, 0, known))),
            bumped.eq(Mux(streams & last, next_index + 1 - Mux(split, first, B), bumped)),
        ]

        r = self.region
        m.d.comb += [
            r.split.eq(split), r.backfill.eq(backfill), r.full.eq(full), r.head.eq(head),
            r.occupancy.eq(occupancy), r.first.eq(first), r.fifo_base.eq(fifo_base),
            r.newest.eq(newest), r.newest_index.eq(newest_index),
            r.oldest_index.eq(oldest_index), r.offset.eq(offset), r.held.eq(held),
            r.known.eq(known), r.last_index.eq(last_index), r.bumped.eq(bumped),
        ]
        return m


class RegionLocator(wiring.Component):
    """Where the element a read asks for is: its presence, address and stream position.

    Combinational. A buffet-region index (below ``first`` while split) is at
    ``head + index``. A bumped one is held when it lies in the FIFO region's
    window of indices, from ``oldest_index`` to ``newest_index`` (wrapping
    from the tile's end to ``first``): compares with registers, no arithmetic
    on the index. Its distance ``behind`` the newest is then below F, so the
    low ``log2 F`` bits give it, its slot, and whether the copy is not behind
    ``frontier`` (a copy the reader already passed belongs to an earlier pass).
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
        s = g.slot_bits
        r, index, loc = self.region, self.index, self.location

        boundary = Signal(range(g.depth))   # indices below it are the buffet region's
        ahead = Signal()                    # past the newest index: held only from before a wrap
        wrapped = Signal()                  # the window wraps from the tile's end to ``first``
        held = Signal()                     # in the window
        behind = Signal(s)                  # distance behind the newest, if held
        behind_here, behind_wrap = Signal(s), Signal(s)     # if not ahead, if ahead
        reach = Signal(g.position)          # newest - frontier: copies not yet passed
        reached = Signal()
        m.d.comb += [
            boundary.eq(Mux(r.split, r.first, g.base)),
            ahead.eq(index > r.newest_index),
            wrapped.eq(r.oldest_index > r.newest_index),
            loc.in_tile.eq(~r.known | (index <= r.last_index)),
            held.eq(loc.in_tile & Mux(wrapped, (index >= r.oldest_index) | ~ahead,
                                      (index >= r.oldest_index) & ~ahead)),
            # Both forms at once, the slower ``ahead`` picks: no carry chain after it.
            behind_here.eq(r.newest_index[:s] - index[:s]),
            behind_wrap.eq(r.newest_index[:s] + r.bumped[:s] - index[:s]),
            behind.eq(Mux(ahead, behind_wrap, behind_here)),
            reach.eq(r.newest - self.frontier),
            reached.eq((reach >= 0) & ((reach[s:] != 0) | Mux(ahead, behind_wrap <= reach[:s],
                                                              behind_here <= reach[:s]))),
            loc.slot.eq(r.newest[:s] - behind),
            loc.bumped.eq(index >= boundary),
            loc.addr.eq(Mux(r.split & loc.bumped, r.fifo_base + loc.slot, r.head + index)),
            loc.present.eq(Mux(r.split, ~loc.bumped | (held & reached), index < r.occupancy)),
            loc.position.eq(r.newest - behind),
            loc.upcoming.eq(Mux(ahead, r.offset + index,
                                Mux(r.known, r.offset + r.bumped + index, r.newest + 1))),
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
            "shrink": In(1),                    # a shrink is accepted
            "count": In(range(g.depth + 1)),    # the shrink's count (given before it is accepted)
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
        # behind the frontier, so reading it always advances the frontier. While
        # split positions stay; in a buffet a shrink renumbers them.
        first_pass = Signal(signed(g.index_width + 1))  # index - B: its first-pass position
        upcoming, upcoming_ahead = Signal(position), Signal(position)
        stalled = self.request & loc.bumped & ~loc.present
        m.d.comb += [
            first_pass.eq(self.index - g.base),
            upcoming_ahead.eq(loc.upcoming - frontier),
            upcoming.eq(Mux(upcoming_ahead > 0, loc.upcoming, frontier)),
        ]

        def buffet(passed, name):
            """The frontier once a buffet's read passes ``passed``, after this cycle's
            shrink, which renumbers positions (not below 0)."""
            ahead = Signal(position, name=f"ahead_{name}")
            after = Signal(position, name=f"after_{name}")
            kept = Signal(position, name=f"kept_{name}")
            m.d.comb += [ahead.eq(passed - frontier),
                         after.eq(Mux(ahead > 0, passed, frontier)),
                         kept.eq(after - self.count)]
            return Mux(self.shrink, Mux(kept < 0, 0, kept), after)

        # Each outcome is computed before ``read``, ``request`` and ``shrink``, which
        # arrive late (they wait for the lookup and handshakes), pick one.
        m.d.sync += frontier.eq(Mux(self.restart, 0, Mux(
            r.split,
            Mux(self.read & loc.bumped, loc.position + 1,
                Mux(stalled & loc.in_tile, upcoming, frontier)),
            Mux(self.read & loc.bumped, buffet(first_pass + 1, "read"),
                Mux(stalled, buffet(first_pass, "stall"), buffet(frontier, "idle"))))))

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
