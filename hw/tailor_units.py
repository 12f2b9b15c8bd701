"""The Tailor's units: the split/backfill state machine, the region locator, the frontier.

:class:`~sparseforge.hw.tailor.Tailor` composes them around one memory.
:class:`SplitControl` holds the buffer's state, every part of it a register;
:class:`RegionLocator` says where a read's element is;
:class:`FrontierUnit` tracks how far the reader has passed in the bumped
stream and grants the parent ``fifo_credits``. No unit keeps a stream
position: the frontier is held as its distance behind the newest element,
the newest as its FIFO slot; the Tailor's docstring states the addressing.
"""

from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
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
        # newest - frontier, at most F (all held copies reachable): down to -L when
        # the reader has asked for a later pass; F - frontier before a split.
        self.distance = signed(self.index_width + 1)
        self.slot_bits = exact_log2(fifo)
        self.region = wiring.Signature({name: Out(shape) for name, shape in {
            "split": 1,                      # the FIFO region is in use
            "backfill": 1,                   # owfills append (after a partial shrink)
            "full": 1,
            "head": range(depth),
            "occupancy": range(depth + 1),   # D while split
            "first": range(depth),           # while split: the first bumped index
            "fifo_base": range(depth),       # while split: head + first, where FIFO slot 0 is
            "newest": self.slot_bits,        # the FIFO slot of the newest owfill
            "shift": self.slot_bits,         # newest - newest_index: a held index's slot, less it
            "shift_back": self.slot_bits,    # shift - bumped: the same past the newest index
            "newest_index": self.index_width,
            "oldest_index": self.index_width,  # the index of the oldest element held
            "held": range(fifo + 1),         # elements in the FIFO region
            "known": 1,                      # the tile's end is known
            "last_index": self.index_width,  # first + bumped - 1, once known
            "bumped": range(tile + 1),       # L - B, once known (a shrink leaves it)
            "previous": self.distance,       # newest_index - bumped, once known: a pass back
        }.items()})
        self.location = wiring.Signature({name: Out(shape) for name, shape in {
            "present": 1,                    # the element is in the buffer
            "bumped": 1,                     # its index is past the buffet region
            "in_tile": 1,                    # the index is below the tile's end (if known)
            "addr": range(depth),            # its memory address, if present
            "behind": self.slot_bits,        # how far behind the newest, if present in the FIFO
            "lead": self.distance,           # newest - the stream position of its next copy
            "beyond": 1,                     # that copy is beyond the frontier (lead < distance)
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
            "shrink": In(1),                    # a shrink is accepted
            "count": In(range(g.depth + 1)),    # its count (given before it is accepted)
            "region": Out(g.region),
            "rejoin": Out(1),
            "owfill_addr": Out(range(g.depth)),
            "restart": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geometry
        D, F, B = g.depth, g.fifo, g.base
        owfill, last, shrink, count = self.owfill, self.last, self.shrink, self.count

        split, backfill = Signal(), Signal()
        head = Signal(range(D))
        occupancy = Signal(range(D + 1))
        first = Signal(range(D))
        newest = Signal(g.slot_bits)            # the newest owfill's slot: its position mod F
        shift, shift_back = Signal(g.slot_bits), Signal(g.slot_bits)
        newest_index = Signal(g.index_width)
        oldest_index = Signal(g.index_width)
        held = Signal(range(F + 1))
        known = Signal()
        bumped = Signal(range(g.tile + 1))      # L - B: constant while the tile is split
        last_index = Signal(g.index_width)
        previous = Signal(g.distance)
        fifo_base = Signal(range(D))
        full = occupancy == D

        # The next owfill: where it goes in the stream and in the buffer.
        successor = Signal(g.index_width)
        wraps = Signal()                        # the newest is the tile's last index: a register
        oldest_next = Signal(g.index_width)     # the oldest index's successor, wrapped like it
        appends = ~split & ~full
        next_index = Signal(g.index_width)
        next_slot = Signal(g.slot_bits)
        m.d.comb += [
            successor.eq(newest_index + 1),
            oldest_next.eq(Mux(known & (oldest_index == last_index), first, oldest_index + 1)),
            self.rejoin.eq(split & (first != B) & wraps),
            next_index.eq(Mux(split, Mux(wraps, first, successor), D)),
            next_slot.eq(Mux(~split, 0, newest + 1)),   # the split's: position F
            self.owfill_addr.eq(Mux(split, Mux(self.rejoin, fifo_base, fifo_base + next_slot),
                                    head + Mux(full, B, occupancy))),
        ]

        releases = owfill & (self.rejoin | appends)  # back to a buffet: backfill or append
        streams = owfill & ~releases                 # the owfill writes the FIFO region
        ends = split & shrink & (count == D)         # a shrink of the whole buffer ends the tile
        trims = split & shrink & (count != D)        # a shrink frees part of the buffet region
        grows = self.fill | (owfill & appends)       # a buffet's occupancy grows by one
        m.d.comb += self.restart.eq((owfill & self.rejoin) | ends)
        self._states(m, split, backfill, ends=ends, appends=appends)

        # A held index's slot is the index plus ``shift`` (``shift_back`` past the newest,
        # an index of the pass before): kept as registers, so a read's address is one sum
        # of its index. Both step only at the stream's wrap, its end and a trim.
        now_bumped = Signal.like(bumped)        # ``bumped`` if this owfill is the last
        shift_wrap = Signal(g.slot_bits)
        m.d.comb += [now_bumped.eq(next_index + 1 - Mux(split, first, B)),
                     shift_wrap.eq(Mux(split & wraps, shift + bumped[:g.slot_bits], shift)),
                     ]
        streamed = Mux(split, shift_wrap, 0)    # the split's: slot 0 holds index D
        # ``wraps`` as it will be: set by the owfill of the last index, else by the one
        # before it (its successor is the last index), cleared by the wrap and a release.
        m.d.sync += wraps.eq(Mux(streams, Mux(last, 1, split & ~wraps & known
                                              & (successor == last_index)),
                                 Mux(releases | ends, 0, wraps)))
        m.d.sync += previous.eq(Mux(streams, Mux(last, Mux(split, first, B) - 1,
                                                 Mux(wraps, first - bumped, previous + 1)),
                                    Mux(trims, previous - count, previous)))
        m.d.sync += [
            shift.eq(Mux(streams, streamed, Mux(trims, shift + count, shift))),
            shift_back.eq(Mux(streams, Mux(last, streamed - now_bumped[:g.slot_bits],
                                           Mux(split & wraps, shift, shift_back)),
                              Mux(trims, shift_back + count, shift_back))),
        ]
        m.d.sync += [
            head.eq(Mux(shrink, head + count, head)),
            occupancy.eq(Mux(split, Mux(owfill & self.rejoin, first + 1, Mux(ends, 0, occupancy)),
                             Mux(shrink, Mux(grows, occupancy + 1 - count, occupancy - count),
                                 Mux(grows, occupancy + 1, occupancy)))),
            first.eq(Mux(streams & ~split, B, Mux(trims, first - count, first))),
            newest.eq(Mux(streams, next_slot, newest)),
            newest_index.eq(Mux(streams, next_index,
                                Mux(trims, newest_index - count, newest_index))),
            oldest_index.eq(Mux(streams, Mux(~split, next_index,
                                             Mux(held == F, oldest_next, oldest_index)),
                                Mux(trims, oldest_index - count, oldest_index))),
            held.eq(Mux(streams, Mux(split, Mux(held != F, held + 1, F), 1),
                        Mux(releases | ends, 0, held))),
            fifo_base.eq(Mux(streams & ~split, head + B, fifo_base)),   # a trim keeps it
            last_index.eq(Mux(streams & last, next_index,
                              Mux(trims, last_index - count, last_index))),
            known.eq(Mux(streams & last, 1, Mux(releases | ends, 0, known))),
            bumped.eq(Mux(streams & last, now_bumped, bumped)),
        ]

        r = self.region
        m.d.comb += [
            r.split.eq(split), r.backfill.eq(backfill), r.full.eq(full), r.head.eq(head),
            r.occupancy.eq(occupancy), r.first.eq(first), r.fifo_base.eq(fifo_base),
            r.newest.eq(newest), r.shift.eq(shift), r.shift_back.eq(shift_back),
            r.newest_index.eq(newest_index),
            r.oldest_index.eq(oldest_index), r.held.eq(held),
            r.known.eq(known), r.last_index.eq(last_index), r.bumped.eq(bumped),
            r.previous.eq(previous),
        ]
        return m

    def _states(self, m, split, backfill, *, ends, appends):
        """The FSM: FITTING, SPLIT or BACKFILL, driving ``split`` and ``backfill``.

        ``ends``: a shrink of the whole buffer; ``appends``: an owfill would
        append (not split, not full).
        """
        owfill, last, rejoin = self.owfill, self.last, self.rejoin
        with m.FSM() as fsm:
            with m.State("FITTING"), m.If(owfill):
                m.next = "SPLIT"
            with m.State("SPLIT"):
                with m.If(ends | (owfill & rejoin & last)):
                    m.next = "FITTING"
                with m.Elif(owfill & rejoin):
                    m.next = "BACKFILL"
            with m.State("BACKFILL"):
                with m.If(owfill & ~appends):
                    m.next = "SPLIT"
                with m.Elif(owfill & last):
                    m.next = "FITTING"
        m.d.comb += [split.eq(fsm.ongoing("SPLIT")), backfill.eq(fsm.ongoing("BACKFILL"))]


class RegionLocator(wiring.Component):
    """Where the element a read asks for is: its presence, address and stream position.

    Combinational. A buffet-region index (below ``first`` while split) is at
    ``head + index``. A bumped one is held when it lies in the FIFO region's
    window of indices, from ``oldest_index`` to ``newest_index`` (wrapping
    from the tile's end to ``first``): compares with registers, no arithmetic
    on the index. Its distance ``behind`` the newest is then below F, so the
    low ``log2 F`` bits give it, its slot, and whether the copy is not behind
    the frontier, ``distance`` behind the newest (a copy the reader already
    passed belongs to an earlier pass).
    """

    def __init__(self, geometry):
        self.geometry = g = geometry
        super().__init__({
            "index": In(g.index_width),
            "region": In(g.region),
            "distance": In(g.distance),
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
        slot_here, slot_back = Signal(s), Signal(s)         # the slot, in the same two forms
        reach = self.distance               # newest - frontier: copies not yet passed
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
            loc.behind.eq(behind),
            reached.eq((reach >= 0) & ((reach[s:] != 0) | Mux(ahead, behind_wrap <= reach[:s],
                                                              behind_here <= reach[:s]))),
            slot_here.eq(index[:s] + r.shift),
            slot_back.eq(index[:s] + r.shift_back),
            loc.bumped.eq(index >= boundary),
            loc.addr.eq(Mux(r.split & loc.bumped,
                            Mux(ahead, r.fifo_base + slot_back, r.fifo_base + slot_here),
                            r.head + index)),
            loc.present.eq(Mux(r.split, ~loc.bumped | (held & reached), index < r.occupancy)),
            # The next copy: later in this pass, in the next (once the end is known),
            # or just after the newest. Whether it is beyond the frontier compares the
            # index with registers' differences, not the difference with the index.
            loc.lead.eq(Mux(ahead, r.newest_index - index, Mux(r.known, r.previous - index, -1))),
            loc.beyond.eq(Mux(ahead, index > r.newest_index - reach,
                              Mux(r.known, index > r.previous - reach, reach >= 0))),
        ]
        return m


class FrontierUnit(wiring.Component):
    """The frontier, the first stream position the reader has not passed, and ``fifo_credits``.

    A read passes every earlier position: one accepted moves the frontier
    past its element, one presented but absent moves it to the position its
    element will come at. The unit keeps ``distance``, the newest position
    less the frontier, held at most F (every copy held is then ahead of the
    frontier), so a lookup does no arithmetic on positions. Before the split
    the newest counts as position F, the split's own, positions count from
    the first index the FIFO region will take (``B``) and a shrink renumbers
    them. The next distance is kept as three registered outcomes (the read
    passed its element, a stall moved the frontier, neither) and the read's
    pick, ``distance`` their choice: the lookup's result ends in a register.
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
            "owfill": In(1),                    # an owfill is accepted
            "shrink": In(1),                    # a shrink is accepted
            "count": In(range(g.depth + 1)),    # the shrink's count (given before it is accepted)
            "rejoin": In(1),
            "restart": In(1),
            "distance": Out(g.distance),
            "fifo_credits": Out(range(g.fifo + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        g = self.geometry
        D, F = g.depth, g.fifo
        r, loc, distance = self.region, self.location, self.distance

        def capped(value, name):
            """``value``, a distance, at most F (the frontier not below position 0)."""
            out = Signal(g.distance, name=name)
            m.d.comb += out.eq(Mux(value > F, F, value))
            return out

        # Each outcome is computed before the late signals pick one: ``read`` and
        # ``request`` (after the lookup and the handshakes), ``owfill`` and ``shrink``
        # (after the write port's priorities). A read passes every earlier position.
        # The three outcomes (the read's element is passed, a stall moves the frontier
        # to its next copy, or neither) are registered with which one the read picked:
        # the choice, after the lookup, moves past the register to the next lookup.
        stalled = self.request & loc.bumped & ~loc.present
        idle, stall, read = (Signal(g.distance, init=F, name=n) for n in ("idle", "stall", "read"))
        reads, stalls = Signal(), Signal()
        m.d.comb += distance.eq(Mux(reads, read, Mux(stalls, stall, idle)))
        m.d.sync += [reads.eq(self.read & loc.bumped),
                     stalls.eq(stalled & (loc.in_tile | ~r.split))]

        def outcome(split, shrunk, still):
            """The next distance: while split, after a shrink in a buffet, else."""
            return Mux(self.restart, F, Mux(r.split, split, Mux(self.shrink, shrunk, still)))

        # While split, a hit is never behind the frontier, so reading it moves the frontier
        # to just past it; a stall moves it to the element's next copy (if in the tile);
        # an owfill moves the newest on.
        stay_on = Signal(g.distance)
        m.d.comb += stay_on.eq(Mux(distance == F, F, distance + 1))

        # In a buffet, a read of index i >= B accepted passes position i - B (the
        # distance becomes at most lead - 1, lead = D - i), one stalled the positions
        # before it (at most lead); a shrink renumbers positions, the frontier not below
        # 0, so the distance grows by its count, to at most F. ``near`` and ``level``
        # compare before the shrink, which adds to both sides.
        # ``D + count`` is the count's bits with one more on top (``count <= D``) and
        # ``-1 - index`` the index's bits inverted: each shrunk outcome is one sum.
        k = exact_log2(D)
        count, wide = self.count, g.distance.width
        lead, near, level = Signal(g.distance), Signal(), Signal()
        lead_less = Signal(g.distance)                              # lead - 1
        with_count = Cat(count[:k], ~count[k], count[k])            # D + count
        inverted = Cat(~self.index, C(-1, wide - len(self.index))).as_signed()   # -1 - index
        m.d.comb += [lead.eq(D - self.index), lead_less.eq(D + inverted),
                     near.eq(distance <= lead), level.eq(distance == lead)]
        kept = capped(distance + count, "kept")
        m.d.sync += [
            idle.eq(outcome(Mux(self.owfill, stay_on, distance), kept, distance)),
            stall.eq(outcome(Mux(self.owfill, Mux(loc.beyond, loc.lead + 1, stay_on),
                                 Mux(loc.beyond, loc.lead, distance)),
                             Mux(near, kept, capped(with_count - self.index, "stall_shrunk")),
                             Mux(near, distance, lead))),
            read.eq(outcome(Mux(self.owfill, loc.behind, loc.behind - 1),
                            Mux(near & ~level, kept, capped(with_count + inverted, "read_shrunk")),
                            Mux(near & ~level, distance, lead_less))),
        ]

        spare = Signal(g.distance)      # F - 1 - distance: slots passed, beyond the newest
        room = Signal(range(D + 1))
        m.d.comb += [spare.eq(F - 1 - distance), room.eq(D - r.occupancy)]
        with m.If(self.rejoin):
            m.d.comb += self.fifo_credits.eq(Mux(distance < 0, F, 0))    # all passed
        with m.Elif(r.split):
            m.d.comb += self.fifo_credits.eq(Mux(spare < 0, 0, Mux(spare > F, F, spare)))
        with m.Elif(r.full & (distance <= 0)):
            m.d.comb += self.fifo_credits.eq(F)
        with m.Elif(~r.full & r.backfill):
            m.d.comb += self.fifo_credits.eq(Mux(room > F, F, room))
        return m
