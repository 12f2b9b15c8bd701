"""The Tailor: a buffet extended with overwriting fills (Tailors paper §3.3)."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .buffet import ReadStage
from .interfaces import TailorSignature
from .tailor_units import FrontierUnit, Geometry, RegionLocator, SplitControl


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
    read_latency : cycles from an accepted read to its data, 1 or 2 (default 2),
            as in the Buffet, whose :class:`~sparseforge.hw.buffet.ReadStage` it uses.

    Members
    -------
    parent : Out(TailorParentSignature)
        The Buffet's parent side (``fill``, ``credit``) and the FIFO region's
        ``owfill`` and ``fifo_credits``
        (:class:`~sparseforge.hw.interfaces.TailorParentSignature`).
    child : Out(BuffetChildSignature), update : In(stream({index, data}))
        The Buffet's child side (``read``, ``read_data``, ``shrink``,
        ``occupancy``) and ``update``; see :class:`~sparseforge.hw.buffet.Buffet`.

    The parent side's own members:

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
    ``first`` being B less any shrink since the split. A read finds its
    element by compares of its index with registers: the FIFO region holds the
    indices from ``oldest_index`` to ``newest_index``, wrapping from the
    tile's last index back to ``first`` (correct for any L), so a held
    element is less than F behind the newest, and its slot is its index plus
    ``shift`` (``newest - newest_index`` mod F; less ``bumped`` for an index of
    the pass before). No stream position is kept: the newest is held as its
    slot, the frontier as its distance behind the newest (at most
    F), so whether a copy is behind the frontier (the reader passed it; it
    belongs to an earlier pass) is one more ``log2 F``-bit compare.

    Storage is one ``Memory`` with one write port (update, then fill or
    owfill) and one read port, as in the Buffet; the FIFO region adds index
    arithmetic and a handful of registers (see the synthesis report).

    Timing: every acceptance is at most a compare from registers and then one
    priority (the update's compare made in both forms at once; a shrink waits
    while an owfill the buffer could take is offered, not for its
    acceptance). What the lookup and the owfill's address need of the state is
    kept in registers beside it (``wraps``, the newest at the tile's last
    index; ``previous``, the newest's index a pass back; ``shift``), so a read's
    address is one sum of its index and the base, and its collision with an
    owfill is its index against the oldest's. The frontier's three next values
    are registered with the read's pick among them, and at read latency 2 the
    block RAM reads whenever its output register is free (see
    :class:`~sparseforge.hw.buffet.ReadStage`). What is left is many paths of
    about one length from the registers through the lookup or a handshake
    into the next values of the state and the frontier (the pick into the
    shrink's sum and cap, the window's compares into the read's acceptance):
    every next value still waits for a handshake decided in its own cycle.
    Going further needs the state's updates a stage behind their acceptances,
    with bypasses or a bubble for what arrives while one is pending (the
    lookup a stage ahead alone is not enough), which changes the cycles the
    model counts; with the state's and the frontier's updates both taken from
    registered acceptances, what is left is the lookup into the read's
    acceptance and the frontier's own arithmetic on the read's index, so the
    read itself would need a request stage ahead of its acceptance. The
    window, the tile's end and the frontier each keep tile-wide values, each
    with a subtractor for a shrink and compares with the read index, which is
    why the Tailor takes several times the Buffet's logic. The synthesis
    report gives the clock and the cells.
    """

    PARAMS = (
        Param("depth", 64, 4, 1 << 16, "capacity D in elements", pow2=True),
        Param("width", 32, 1, 1024, "element width in bits"),
        Param("fifo", 16, 1, 1 << 15, "FIFO region size F (at most depth/2)", pow2=True),
        Param("tile", 256, 8, 1 << 20, "longest tile in elements (above depth)", pow2=True),
        Param("read_latency", 2, 1, 2, "cycles from a read request to its data"),
    )

    REPORT = ({"depth": 64, "width": 32, "fifo": 16, "tile": 256},
              {"depth": 1024, "width": 32, "fifo": 64, "tile": 4096})

    def __init__(self, **params):
        values = check_params(self.PARAMS, params)
        self.depth, self.width = values["depth"], values["width"]
        self.latency = values["read_latency"]
        self.fifo, self.tile = values["fifo"], values["tile"]
        if self.fifo > self.depth // 2:
            raise ParameterError(f"parameter fifo={self.fifo}: at most depth/2 = "
                                 f"{self.depth // 2}")
        if self.tile <= self.depth:
            raise ParameterError(f"parameter tile={self.tile}: must exceed depth={self.depth}")
        self.geometry = Geometry(self.depth, self.fifo, self.tile)
        super().__init__(TailorSignature(self.depth, self.width, self.fifo, self.tile))

    def elaborate(self, platform):
        m = Module()
        parent, child = self.parent, self.child
        g = self.geometry
        D = g.depth
        m.submodules.read_stage = reads = ReadStage(D, self.width, g.index_width, self.latency)
        m.submodules.store = store = reads.memory(D)
        wr = store.write_port()
        reads.connect_memory(m, store, wr)
        m.submodules.control = control = SplitControl(g)
        m.submodules.locator = locator = RegionLocator(g)
        m.submodules.frontier = frontier = FrontierUnit(g)
        r, loc = control.region, locator.location
        m.d.comb += [
            child.occupancy.eq(r.occupancy),
            locator.index.eq(child.read.payload),
            locator.distance.eq(frontier.distance),
        ]
        wiring.connect(m, control.region, locator.region, frontier.region)
        wiring.connect(m, locator.location, frontier.location)

        # -- shrink: a buffet's, or while split part of the buffet region or all --
        count = child.shrink.payload
        do_shrink = Signal()
        do_update, do_fill, do_owfill = self._write_port(m, wr, control)

        m.d.comb += [
            child.shrink.ready.eq(~(parent.owfill.valid & (r.full | r.backfill))
                                  & Mux(r.split, (count <= r.first) | (count == D),
                                        count <= r.occupancy)),
            do_shrink.eq(child.shrink.valid & child.shrink.ready),
        ]
        m.d.sync += parent.credit.eq(Mux(do_shrink, count, 0))
        m.d.comb += [
            control.fill.eq(do_fill),
            control.owfill.eq(do_owfill),
            control.last.eq(parent.owfill.payload.last),
            control.shrink.eq(do_shrink),
            control.count.eq(count),
        ]

        # -- reads: never from the slot an owfill overwrites this cycle ---------
        wiring.connect(m, wiring.flipped(child.read), reads.read)
        wiring.connect(m, reads.read_data, wiring.flipped(child.read_data))
        # Only an element already held can be hit: in a full FIFO region, the oldest (the
        # one element of its index in the window), which the owfill replaces; any, on the
        # owfill that releases the region; else the first bumped index, which the split's
        # owfill clears. Compares of the index with registers, no slot arithmetic.
        index = child.read.payload
        oldest = (r.held == g.fifo) & (index == r.oldest_index)
        hazard = do_owfill & Mux(r.split, loc.bumped & (control.rejoin | oldest),
                                 r.full & (index == g.base))
        m.d.comb += [reads.present.eq(loc.present & ~hazard), reads.addr.eq(loc.addr)]
        if self.latency == 2:
            # An update writes the buffet region only, where equal indices are one element.
            same = self.update.payload.index == child.read.payload
            m.d.comb += [reads.hit.eq(do_update & same),
                         reads.hit_data.eq(self.update.payload.data)]

        # -- the frontier and the FIFO region's credits ----------------------------
        m.d.comb += [
            frontier.index.eq(child.read.payload),
            frontier.request.eq(child.read.valid),
            frontier.read.eq(reads.accepted),
            frontier.owfill.eq(do_owfill),
            frontier.shrink.eq(do_shrink),
            frontier.count.eq(count),
            frontier.rejoin.eq(control.rejoin),
            frontier.restart.eq(control.restart),
            parent.fifo_credits.eq(frontier.fifo_credits),
        ]
        return m

    def _write_port(self, m, wr, control):
        """The single write port: an update, else a fill or an owfill; returns which is
        accepted. Each acceptance is a compare deep at most, then one priority: both forms
        of the update's compare are made at once."""
        parent, r = self.parent, control.region
        do_update, do_fill, do_owfill = Signal(), Signal(), Signal()
        index = self.update.payload.index
        m.d.comb += [
            self.update.ready.eq(Mux(r.split, index < r.first, index < r.occupancy)),
            do_update.eq(self.update.valid & self.update.ready),
            parent.fill.ready.eq(~r.full & ~do_update),
            do_fill.eq(parent.fill.valid & parent.fill.ready),
            parent.owfill.ready.eq((r.full | r.backfill) & ~do_update),
            do_owfill.eq(parent.owfill.valid & parent.owfill.ready),
            wr.en.eq(do_update | do_fill | do_owfill),
            wr.addr.eq(Mux(do_owfill, control.owfill_addr,
                           Mux(do_update, r.head + self.update.payload.index,
                               r.head + r.occupancy))),
            wr.data.eq(Mux(do_update, self.update.payload.data,
                           Mux(do_owfill, parent.owfill.payload.data, parent.fill.payload))),
        ]
        return do_update, do_fill, do_owfill
