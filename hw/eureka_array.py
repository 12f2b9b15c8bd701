"""The Eureka 4x4 sub-array: output-stationary outer product with SUDS (Sections 2.3-3.3).

The sub-array's parts, each a component with its own signature and tests:

- :class:`BlockSequencer` takes the filter stream a slot per cycle and
  drives the MAC grid;
- :class:`MacGrid`, the 4 x ``columns`` pipelined Eureka MACs wired for SUDS;

:class:`EurekaArray`, the sub-array, composes them (``cols`` sub-arrays side
by side form a systolic row), and :class:`SlotBarrier` holds each systolic
row's blocks to its slot of the systolic schedule, for the systolic
composition (:mod:`sparseforge.hw.compose.eureka_systolic`).
"""

from amaranth.hdl import Cat, EnableInserter, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import PER_SLOT, ROTATION_BITS, ROWS, EurekaWire
from .eureka_mac import COMPACTION, WIDTHS, EurekaMac
from .interfaces import (
    EUREKA_COLUMNS,
    EurekaRowSignature,
    SystolicSlotsSignature,
    beat_layout,
    slab_layout,
    tile_layout,
)

COLS = Param("cols", 1, 1, 4, "4x4 sub-arrays side by side, running the same blocks")


PIPELINE = 2
"""Registers in each MAC before its adder (:class:`EurekaMac`'s ``pipeline``): with them the
sub-array closes timing; each adds a cycle of latency, none of throughput."""
LATENCY = 2 + PIPELINE
"""Cycles from a block's last slot entering the array to its tile on ``outputs`` when
nothing stalls: the slot register, the MACs' registers and their adder."""


class BlockSequencer(wiring.Component):
    """Runs the filter stream a beat a cycle: slot ``t`` of a block on its cycle ``t``.

    The control of a (row of) sub-array(s), Section 3.2. Each beat (one slot
    of a block) enters a slot register, ``clear`` on a block's first, so
    every block starts fresh accumulators. The slot register drives the MAC
    grid on the next cycle, with the block's slab, which is taken with the
    block's last beat. A finished tile's rotation follows the grid's
    pipeline, ``latency`` registers, to ``drain``. An empty block's one beat
    (zero lanes) clears the accumulators: its tile is zero.

    Parameters
    ----------
    compaction, weight_width, act_width : as :class:`EurekaArray`.
    columns : input columns of the slab (4 per sub-array).
    latency : cycles from the grid taking a slot to its accumulators holding it.

    Members
    -------
    filter, inputs : In(stream)
        :class:`~.interfaces.EurekaRowSignature`'s: a block's beats, each
        taken as it enters the slot register, and its slab, taken as the last
        beat enters the grid.
    macs : In(MacGridSignature)
        The MAC grid's controls (flipped: driven here), from the slot register.
        In dense mode a block's beat ``t`` selects input row ``t`` and nothing
        is displaced. ``advance`` is low while a finished tile waits on
        ``drain``; ``enable`` is low when the slot register is empty or its
        block's slab is not there (the register then keeps its slot).
    drain : Out(stream(2))
        A finished tile waits in the accumulators; the payload is its
        rotation (0 in dense mode). Until it is taken, nothing moves.
    dense : In(1)
        Dense mode (the host sends 4P beats a block). Change it only between blocks.
    busy : Out(1)
        A beat of a non-empty block enters the slot register on this cycle.

    Latency and throughput: a beat a cycle, blocks back to back; a block's
    tile is on ``drain`` 1 + ``latency`` cycles after its last beat entered.
    """

    def __init__(self, compaction, weight_width, act_width, columns=EUREKA_COLUMNS, latency=1):
        self.fmt = EurekaWire(compaction, weight_width)
        self.latency = latency
        super().__init__({
            "filter": In(stream.Signature(beat_layout(self.fmt))),
            "inputs": In(stream.Signature(slab_layout(compaction, act_width, columns))),
            "macs": In(MacGridSignature(compaction, weight_width, act_width, columns)),
            "drain": Out(stream.Signature(ROTATION_BITS)),
            "dense": In(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        beat, macs, drain = self.filter.payload, self.macs, self.drain
        t = Signal(range(self.fmt.slots))  # the beat's cycle in its block
        step = Signal()      # the slot register takes a beat (or none) this cycle
        issue = Signal()     # ... and it takes one
        held = Signal()      # the slot register holds a beat
        held_last = Signal()  # ... its block's last
        rotation = Signal(ROTATION_BITS)  # ... and its block's rotation
        m.d.comb += [
            macs.advance.eq(~drain.valid | drain.ready),
            macs.enable.eq(held & self.inputs.valid),
            step.eq(macs.advance & (~held | self.inputs.valid)),
            issue.eq(step & self.filter.valid),
            self.busy.eq(issue & ~beat.empty),
            self.filter.ready.eq(step),
            self.inputs.ready.eq(macs.advance & held & held_last),
            macs.operands.eq(self.inputs.payload),
        ]
        with m.If(step):
            m.d.sync += [held.eq(issue), held_last.eq(beat.last), macs.clear.eq(~t.any()),
                         rotation.eq(Mux(self.dense, 0, beat.rotation))]
            for row in range(ROWS):
                lane = beat.slot[row]
                m.d.sync += [
                    macs.weight[row].eq(lane.value.as_signed()),
                    macs.select[row].eq(Mux(self.dense, t, lane.column)),
                    macs.displaced[row].eq(lane.displaced & ~self.dense),
                ]
        with m.If(issue):
            m.d.sync += t.eq(Mux(beat.last, 0, t + 1))
        # A block's last slot, through the grid's pipeline: its tile is then in the accumulators.
        done, done_rotation = macs.enable & held_last, rotation
        for k in range(self.latency):
            end = k == self.latency - 1
            valid = drain.valid if end else Signal(name=f"done{k}")
            payload = drain.payload if end else Signal(ROTATION_BITS, name=f"rotation{k}")
            with m.If(macs.advance):
                m.d.sync += [valid.eq(done), payload.eq(done_rotation)]
            done, done_rotation = valid, payload
        return m


class MacGridSignature(wiring.Signature):
    """What a grid of Eureka MACs takes each cycle, seen from the grid (4 MAC rows, ``columns``
    MAC columns, compaction P).

    Not a stream: the controls act on the cycle they are driven.

    - ``weight``, ``select``, ``displaced`` (in, one per MAC row): the MAC
      row's filter value (0 idles it), the input row its 4P:1 operand
      multiplexer selects, and whether the value belongs to the MAC row
      above (which adds the product; never set on MAC row 0).
    - ``operands`` (in, :func:`~sparseforge.hw.interfaces.slab_layout`): the block's input slab,
      column n broadcast down MAC column n.
    - ``enable`` (in): accumulate this cycle's slot; ``clear`` (in): with
      ``enable``, start new outputs (the accumulators ignore what they hold).
    - ``advance`` (in): the grid's pipeline moves on; low holds every
      register of it, the accumulators included, and the controls and slab
      of that cycle are not taken.
    """

    def __init__(self, compaction, weight_width, act_width, columns=EUREKA_COLUMNS):
        super().__init__({
            "weight": In(data.ArrayLayout(signed(weight_width), wire.ROWS)),
            "select": In(data.ArrayLayout(range(wire.ROWS * compaction), wire.ROWS)),
            "displaced": In(wire.ROWS),
            "operands": In(slab_layout(compaction, act_width, columns)),
            "enable": In(1),
            "clear": In(1),
            "advance": In(1),
        })


class MacGrid(wiring.Component):
    """4 x ``columns`` Eureka MACs wired for SUDS (Figures 2(b), 8).

    MAC (m, n) multiplies MAC row m's weight by the input row its operand
    multiplexer selects from slab column n, and accumulates output (m, n).
    A product whose weight is ``displaced`` goes up to MAC (m - 1, n), which
    adds it with its three-input adder; MAC row 3 (the base row after
    rotation) has the two-input adder and no product from below. Every MAC
    is ``pipeline`` registers deep (:class:`EurekaMac`); ``advance`` holds
    them all.

    Parameters
    ----------
    compaction, weight_width, act_width, acc_width : as :class:`EurekaArray`.
    columns : MAC columns.
    pipeline : each MAC's registers before its adder.

    Members
    -------
    macs : Out(MacGridSignature)
        The per-cycle controls and the slab.
    acc : Out([4][columns] signed acc_width)
        The accumulators, in MAC-row order.

    Latency: the accumulators hold a cycle's slot :attr:`latency` advancing
    cycles later.
    """

    def __init__(self, compaction, weight_width, act_width, acc_width, columns=EUREKA_COLUMNS,
                 pipeline=PIPELINE):
        self.compaction, self.columns, self.pipeline = compaction, columns, pipeline
        self.widths = weight_width, act_width, acc_width
        super().__init__({
            "macs": Out(MacGridSignature(compaction, weight_width, act_width, columns)),
            "acc": Out(tile_layout(acc_width, columns)),
        })

    @property
    def latency(self):
        """Advancing cycles from a slot taken to the accumulators holding it: each MAC's
        (:attr:`EurekaMac.latency`), one for the adder and one per register before it."""
        return 1 + self.pipeline

    def elaborate(self, platform):
        m = Module()
        c = self.macs
        weight_width, act_width, acc_width = self.widths
        grid = [[EurekaMac(compaction=self.compaction, weight_width=weight_width,
                           act_width=act_width, acc_width=acc_width,
                           from_below=int(row < ROWS - 1), pipeline=self.pipeline)
                 for _ in range(self.columns)] for row in range(ROWS)]
        for row, macs in enumerate(grid):
            for col, mac in enumerate(macs):
                m.submodules[f"mac_{row}_{col}"] = EnableInserter(c.advance)(mac)
                m.d.comb += [
                    mac.weight.eq(c.weight[row]),
                    mac.select.eq(c.select[row]),
                    mac.displaced.eq(c.displaced[row]),
                    mac.enable.eq(c.enable),
                    mac.clear.eq(c.clear),
                    *[mac.operands[k].eq(c.operands[k][col]) for k in range(len(mac.operands))],
                    self.acc[row][col].eq(mac.acc),
                ]
                if row < ROWS - 1:
                    m.d.comb += [mac.below.eq(grid[row + 1][col].product),
                                 mac.below_displaced.eq(c.displaced[row + 1])]
        return m


@block("eureka_array")
class EurekaArray(wiring.Component):
    """A 4x4 output-stationary outer-product MAC sub-array with SUDS and a dense mode.

    Eureka Sections 2.3 and 3-3.2, Figures 2(b), 6, 8. MAC (m, n) owns output
    (m, n) of a block's 4x4 result. On each cycle of a block the array
    broadcasts one compacted filter column (a slot: one lane per MAC row,
    shared by the row) left to right and the block's 4P-row input slab top
    to bottom; each MAC picks its input row with its 4P:1 operand mux from
    the lane's column metadata. A lane marked ``displaced`` belongs to the
    MAC row above, which adds its product with the three-input adder. The
    host rotates each block so its base row sits on MAC row 3, which never
    displaces (Section 3.2): MAC row 3 has two-input adders and no product
    from below, and MAC row 0 never takes a displaced value.

    One tile per block: a block's rotation is its own, so accumulating a
    second block onto the same accumulators would mix output rows; the
    accumulators restart with each block, and the tile leaves as the
    accumulators hold it, in MAC-row order, with its rotation (MAC row m is
    output row (m + rotation) % 4). Whoever sums a block row's tiles (here
    the testbench, in the paper the GPU registers) puts them in output-row
    order as it does: no multiplexer on the accumulators.

    Dense mode (``dense`` high): the same array as the dense tensor core.
    Each block runs 4P cycles, cycle t selects input row t, and the column
    metadata, ``displaced`` bits and rotation are ignored.

    A :class:`BlockSequencer` drives a :class:`MacGrid` through a slot
    register; the MACs are :data:`PIPELINE` registers deep.

    Parameters
    ----------
    compaction : P, 1, 2 or 4: blocks of 4 x 4P, a 4P:1 operand mux.
    weight_width, act_width, acc_width : signed operand and accumulator bits.
    cols : sub-arrays side by side, one sequencer for all (a systolic row of
        Section 3.3: they run the same blocks against 4``cols`` input
        columns). Not a block parameter: the registered block is one sub-array.

    Members
    -------
    filter, inputs, outputs
        :class:`~.interfaces.EurekaRowSignature` with 4``cols`` columns: a
        block's beats (:meth:`EurekaFormat.beats`), one per cycle, and its
        4P-row input slab; one tile of 4 MAC rows and its rotation per block.
    dense : In(1)
        Dense mode; change it only between blocks.
    busy : Out(1)
        A beat of a non-empty block enters the array on this cycle.

    Latency and throughput: a block of c cycles enters on c consecutive
    cycles (an empty block, c = 0, one beat, takes one cycle to pass); its
    tile is valid :attr:`latency` cycles after its last beat entered (4). Back-to-back
    blocks run without a gap: with no back-pressure a run's slots enter on
    exactly the blocks' summed cycles, and its last tile leaves
    :attr:`latency` cycles later. A slab not there when its block's first
    slot is due in the grid holds the block in the slot register; a tile not
    taken holds the whole array.

    The slot word is registered and streamed a beat a cycle rather than the
    whole record muxed by ``t``, which kept the grid registered and the
    accumulators free of a 4:1 multiplexer a bit. The grid is nearly all of
    the area (16 MACs, their 16:1 operand multiplexers and adders); the
    critical path is a MAC's multiplier (its operand register to its product
    register, one DSP). ``sparseforge synth eureka_array`` measures both.
    """

    PARAMS = (COMPACTION, *WIDTHS)
    REPORT = ({"compaction": 4}, {"compaction": 2})

    def __init__(self, *, cols=COLS.default, **params):
        v = check_params(self.PARAMS, params)
        self.compaction, self.cols = v["compaction"], COLS.check(cols)
        self.widths = v["weight_width"], v["act_width"], v["acc_width"]
        self.columns = EUREKA_COLUMNS * self.cols
        self.fmt = EurekaWire(self.compaction, self.widths[0])  # the filter beats' fields
        row = EurekaRowSignature(self.compaction, *self.widths, self.columns)
        super().__init__({**row.members, "dense": In(1), "busy": Out(1)})

    @property
    def latency(self):
        """Cycles from a block's last beat entering to its tile on
        ``outputs`` when nothing stalls: :data:`LATENCY`."""
        return LATENCY

    def elaborate(self, platform):
        m = Module()
        weight_width, act_width = self.widths[:2]
        m.submodules.grid = grid = MacGrid(self.compaction, *self.widths, self.columns)
        m.submodules.sequencer = seq = BlockSequencer(
            self.compaction, weight_width, act_width, self.columns, grid.latency)
        wiring.connect(m, wiring.flipped(self.filter), seq.filter)
        wiring.connect(m, wiring.flipped(self.inputs), seq.inputs)
        wiring.connect(m, seq.macs, grid.macs)
        m.d.comb += [
            self.outputs.valid.eq(seq.drain.valid),
            seq.drain.ready.eq(self.outputs.ready),
            self.outputs.payload.tile.eq(grid.acc),
            self.outputs.payload.rotation.eq(seq.drain.payload),
            seq.dense.eq(self.dense),
            self.busy.eq(seq.busy),
        ]
        return m


class SlotBarrier(wiring.Component):
    """Holds each systolic row's filter beats to the slots of the systolic schedule.

    Section 3.3 and the machine of :mod:`sparseforge.sw.systolic`: the
    systolic rows advance together in slots; a slot descriptor says how
    many blocks each row runs in it. A row's beat stream passes through
    while its row has blocks left in the current slot, and is held (valid
    low) once it has taken their last beats; the descriptor is taken on
    the cycle the last row's last block of the slot ends, so the next
    slot's blocks start on the next cycle. A row thus never starts a block
    beyond its slot, and a row with less work idles (a bubble).

    Parameters
    ----------
    rows : systolic rows.
    compaction, weight_width : the beats' format.

    Members
    -------
    slots : In(stream([rows] x 0..PER_SLOT))
        :class:`~.interfaces.SystolicSlotsSignature`.
    filter : In(stream(beat)) x rows
        Each row's filter beats, from the host.
    release : Out(stream(beat)) x rows
        The same beats, to the rows, held outside the row's slot.

    Combinational but for a block count per row: no latency, no bubble
    between slots.
    """

    def __init__(self, rows, compaction, weight_width):
        self.rows = rows
        beats = stream.Signature(beat_layout(EurekaWire(compaction, weight_width)))
        super().__init__({**SystolicSlotsSignature(rows).members,
                          "filter": In(beats).array(rows),
                          "release": Out(beats).array(rows)})

    def elaborate(self, platform):
        m = Module()
        runs, through = [], []
        for r in range(self.rows):
            held, release = self.filter[r], self.release[r]
            run = Signal(range(PER_SLOT + 1), name=f"run{r}")  # blocks taken in this slot
            allowed = self.slots.payload[r]
            open_ = Signal(name=f"open{r}")      # the row may take a block
            taken = Signal(name=f"taken{r}")     # it takes a block's last beat on this cycle
            done = Signal(name=f"done{r}")       # and is then through the slot
            m.d.comb += [
                open_.eq(self.slots.valid & (run < allowed)),
                release.payload.eq(held.payload),
                release.valid.eq(held.valid & open_),
                held.ready.eq(release.ready & open_),
                taken.eq(held.valid & held.ready & held.payload.last),
                done.eq(run + taken == allowed),
            ]
            runs.append((run, taken))
            through.append(done)
        m.d.comb += self.slots.ready.eq(self.slots.valid & Cat(*through).all())
        for run, taken in runs:
            with m.If(self.slots.ready):
                m.d.sync += run.eq(0)
            with m.Elif(taken):
                m.d.sync += run.eq(run + 1)
        return m
