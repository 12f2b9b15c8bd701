"""The Eureka 4x4 sub-array: output-stationary outer product with SUDS (Sections 2.3-3.3).

The sub-array's parts, each a component with its own signature and tests:

- :class:`BlockSequencer` steps one block record at a time through its
  slots and drives the MAC grid;
- :class:`MacGrid`, the 4 x ``columns`` Eureka MACs wired for SUDS;
- :class:`Unrotate` hands a finished tile out in output-row order;

:class:`EurekaArray`, the sub-array, composes them (``cols`` sub-arrays side
by side form a systolic row), and :class:`SlotBarrier` holds each systolic
row's blocks to its slot of the systolic schedule, for the systolic
composition (:mod:`sparseforge.hw.compose.eureka_systolic`).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import Param, check_params
from ..registry import block
from ..sw.wire import PER_SLOT, ROTATION_BITS, ROWS, EurekaWire
from .eureka_mac import COMPACTION, WIDTHS, EurekaMac
from .interfaces import (
    EUREKA_COLUMNS,
    EurekaRowSignature,
    MacGridSignature,
    SystolicSlotsSignature,
    record_layout,
    slab_layout,
    slot_layout,
    tile_layout,
)
from .mux import mux

COLS = Param("cols", 1, 1, 4, "4x4 sub-arrays side by side, running the same blocks")


class BlockSequencer(wiring.Component):
    """Runs one block record at a time: slot ``t`` of the record on cycle ``t``.

    The control of a (row of) sub-array(s), Section 3.2. A block runs
    while its record, its slab and room for its tile are all there; each
    running cycle drives slot ``t``'s lanes onto the MAC rows (``clear`` on
    t = 0, so every block starts fresh accumulators), and on the block's
    last cycle takes the record and the slab and marks the tile finished.
    An empty block (``cycles`` 0) passes in one cycle with zero weights; a
    record claiming more than 4P cycles (malformed) ends after its 4P slots.

    Parameters
    ----------
    compaction, weight_width, act_width : as :class:`EurekaArray`.
    columns : input columns of the slab (4 per sub-array).

    Members
    -------
    filter, inputs : In(stream)
        :class:`~.interfaces.EurekaRowSignature`'s: a block's record and
        slab, both taken on its last cycle.
    macs : In(MacGridSignature)
        The MAC grid's controls (flipped: driven here). In dense mode slot
        ``t`` selects input row ``t`` and nothing is displaced.
    drain : Out(stream(2))
        A finished tile waits in the accumulators; the payload is its
        rotation (0 in dense mode). A block's first cycle waits until the
        previous tile is taken (it may be taken on that same cycle).
    dense : In(1)
        Dense mode: every block runs 4P cycles. Change it only between blocks.
    busy : Out(1)
        The MACs compute a slot on this cycle (a running cycle of a non-empty block).

    Latency and throughput: a block of c cycles runs on c consecutive cycles
    (one for c = 0); its tile is on ``drain`` the next cycle; the next block
    starts right after, with no gap.
    """

    def __init__(self, compaction, weight_width, act_width, columns=EUREKA_COLUMNS):
        self.fmt = EurekaWire(compaction, weight_width)
        super().__init__({
            "filter": In(stream.Signature(record_layout(self.fmt))),
            "inputs": In(stream.Signature(slab_layout(compaction, act_width, columns))),
            "macs": In(MacGridSignature(compaction, weight_width, act_width, columns)),
            "drain": Out(stream.Signature(ROTATION_BITS)),
            "dense": In(1),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        width = self.fmt.slots
        header, macs, drain = self.filter.payload.header, self.macs, self.drain
        t = Signal(range(width))
        cycles = Signal(range(width + 1))
        last = Signal()  # the block's last cycle
        go = Signal()    # the block runs this cycle
        slot = Signal(slot_layout(self.fmt))
        m.d.comb += [
            cycles.eq(Mux(self.dense, width, header.cycles)),
            last.eq((t + 1 >= cycles) | (t == width - 1)),
            go.eq(self.filter.valid & self.inputs.valid & (~drain.valid | drain.ready)),
            self.busy.eq(go & cycles.any()),
            self.filter.ready.eq(go & last),
            self.inputs.ready.eq(go & last),
            slot.eq(mux(t, [self.filter.payload.slots[i] for i in range(width)])),
            macs.operands.eq(self.inputs.payload),
            macs.enable.eq(go),
            macs.clear.eq(~t.any()),
        ]
        for row in range(ROWS):
            lane = slot[row]
            m.d.comb += [
                macs.weight[row].eq(Mux(cycles.any(), lane.value.as_signed(), 0)),
                macs.select[row].eq(Mux(self.dense, t, lane.column)),
                macs.displaced[row].eq(lane.displaced & ~self.dense),
            ]
        with m.If(go):
            m.d.sync += t.eq(Mux(last, 0, t + 1))
        with m.If(go & last):
            m.d.sync += [drain.valid.eq(1), drain.payload.eq(Mux(self.dense, 0, header.rotation))]
        with m.Elif(drain.ready):
            m.d.sync += drain.valid.eq(0)
        return m


class MacGrid(wiring.Component):
    """4 x ``columns`` Eureka MACs wired for SUDS (Figures 2(b), 8).

    MAC (m, n) multiplies MAC row m's weight by the input row its operand
    multiplexer selects from slab column n, and accumulates output (m, n).
    A product whose weight is ``displaced`` goes up to MAC (m - 1, n), which
    adds it with its three-input adder; MAC row 3 (the base row after
    rotation) has the two-input adder and no product from below.

    Parameters
    ----------
    compaction, weight_width, act_width, acc_width : as :class:`EurekaArray`.
    columns : MAC columns.

    Members
    -------
    macs : Out(MacGridSignature)
        The per-cycle controls and the slab.
    acc : Out([4][columns] signed acc_width)
        The accumulators, in MAC-row order.

    Latency: the accumulators update on the clock edge after ``enable``.
    """

    def __init__(self, compaction, weight_width, act_width, acc_width, columns=EUREKA_COLUMNS):
        self.compaction, self.columns = compaction, columns
        self.widths = weight_width, act_width, acc_width
        super().__init__({
            "macs": Out(MacGridSignature(compaction, weight_width, act_width, columns)),
            "acc": Out(tile_layout(acc_width, columns)),
        })

    def elaborate(self, platform):
        m = Module()
        c = self.macs
        grid = [[EurekaMac(self.compaction, *self.widths, from_below=int(row < ROWS - 1))
                 for _ in range(self.columns)] for row in range(ROWS)]
        for row, macs in enumerate(grid):
            for col, mac in enumerate(macs):
                m.submodules[f"mac_{row}_{col}"] = mac
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


class Unrotate(wiring.Component):
    """Hands a finished tile out in output-row order (Section 3.2).

    MAC row m holds output row (m + rotation) % 4, so output row r at
    rotation k is MAC row (r - k) % 4: a 4:1 multiplexer per output,
    selected by the rotation. Combinational; the stream passes through.

    Parameters
    ----------
    acc_width : accumulator bits.
    columns : MAC columns.

    Members
    -------
    acc : In([4][columns] signed acc_width)
        The accumulators, in MAC-row order.
    drain : In(stream(2))
        A finished tile is in ``acc``; the payload is its rotation.
    outputs : Out(stream([4][columns] signed acc_width))
        The tile, in output-row order, transferred with ``drain``.
    """

    def __init__(self, acc_width, columns=EUREKA_COLUMNS):
        self.columns = columns
        super().__init__({
            "acc": In(tile_layout(acc_width, columns)),
            "drain": In(stream.Signature(ROTATION_BITS)),
            "outputs": Out(stream.Signature(tile_layout(acc_width, columns))),
        })

    def elaborate(self, platform):
        m = Module()
        rotation = self.drain.payload
        m.d.comb += [self.outputs.valid.eq(self.drain.valid),
                     self.drain.ready.eq(self.outputs.ready)]
        for row in range(ROWS):
            for col in range(self.columns):
                m.d.comb += self.outputs.payload[row][col].eq(mux(rotation, [
                    self.acc[(row - k) % ROWS][col] for k in range(ROWS)]))
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
    accumulators restart with each block, and the tile leaves un-rotated
    (MAC row m is output row (m + rotation) % 4). Whoever sums a block row's
    tiles (here the testbench, in the paper the GPU registers) does so in
    output-row order, oblivious of rotation.

    Dense mode (``dense`` high): the same array as the dense tensor core.
    Each block runs 4P cycles, cycle t selects input row t, and the column
    metadata, ``displaced`` bits and rotation are ignored.

    A :class:`BlockSequencer` drives a :class:`MacGrid`, whose finished tile
    leaves through :class:`Unrotate`.

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
        :class:`~.interfaces.EurekaRowSignature` with 4``cols`` columns: one
        block record (:meth:`EurekaFormat.records`) and its 4P-row input slab
        per block, held until the block's last cycle; one tile of 4 output
        rows per block, in output-row order.
    dense : In(1)
        Dense mode; change it only between blocks.
    busy : Out(1)
        The MACs compute a slot on this cycle.

    Latency and throughput: a block of c cycles computes on c consecutive
    cycles (an empty block, c = 0, takes one cycle to pass); its tile is
    valid on the next cycle. Back-to-back blocks run without a gap: with no
    back-pressure a run takes exactly the blocks' summed cycles. A tile not
    yet taken holds the next block at its first cycle.
    """

    PARAMS = (COMPACTION, *WIDTHS)
    REPORT = ({"compaction": 4}, {"compaction": 2})

    def __init__(self, compaction=4, weight_width=8, act_width=8, acc_width=32, cols=1):
        v = check_params((*self.PARAMS, COLS), {
            "compaction": compaction, "weight_width": weight_width, "act_width": act_width,
            "acc_width": acc_width, "cols": cols})
        self.compaction, self.cols = v["compaction"], v["cols"]
        self.widths = v["weight_width"], v["act_width"], v["acc_width"]
        self.columns = EUREKA_COLUMNS * self.cols
        row = EurekaRowSignature(self.compaction, *self.widths, self.columns)
        super().__init__({**row.members, "dense": In(1), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        weight_width, act_width, acc_width = self.widths
        # In this order Yosys's ECP5 flow maps the sub-array (P = 4) to about 15% fewer
        # LUTs than in the others: its ABC9 mapping depends on the netlist's order.
        m.submodules.unrotate = unrotate = Unrotate(acc_width, self.columns)
        m.submodules.sequencer = seq = BlockSequencer(self.compaction, weight_width, act_width,
                                                      self.columns)
        m.submodules.grid = grid = MacGrid(self.compaction, *self.widths, self.columns)
        wiring.connect(m, wiring.flipped(self.filter), seq.filter)
        wiring.connect(m, wiring.flipped(self.inputs), seq.inputs)
        wiring.connect(m, seq.macs, grid.macs)
        wiring.connect(m, seq.drain, unrotate.drain)
        wiring.connect(m, unrotate.outputs, wiring.flipped(self.outputs))
        m.d.comb += [unrotate.acc.eq(grid.acc), seq.dense.eq(self.dense),
                     self.busy.eq(seq.busy)]
        return m


class SlotBarrier(wiring.Component):
    """Holds each systolic row's block records to the slots of the systolic schedule.

    Section 3.3 and the machine of :mod:`sparseforge.sw.systolic`: the
    systolic rows advance together in slots; a slot descriptor says how
    many blocks each row runs in it. A row's record stream passes through
    while its row has blocks left in the current slot, and is held (valid
    low) once it has run them all; the descriptor is taken on the cycle
    the last row's last block of the slot is taken, so the next slot's
    blocks start on the next cycle. A row that runs the record it is
    shown to the end (as :class:`EurekaArray` does, taking it on its last
    cycle) thus never starts a block beyond its slot, and a row with less
    work idles (a bubble).

    Parameters
    ----------
    rows : systolic rows.
    compaction, weight_width : the records' format.

    Members
    -------
    slots : In(stream([rows] x 0..PER_SLOT))
        :class:`~.interfaces.SystolicSlotsSignature`.
    filter : In(stream(record)) x rows
        Each row's block records, from the host.
    release : Out(stream(record)) x rows
        The same records, to the rows, held outside the row's slot.

    Combinational but for a block count per row: no latency, no bubble
    between slots.
    """

    def __init__(self, rows, compaction, weight_width):
        self.rows = rows
        records = stream.Signature(record_layout(EurekaWire(compaction, weight_width)))
        super().__init__({**SystolicSlotsSignature(rows).members,
                          "filter": In(records).array(rows),
                          "release": Out(records).array(rows)})

    def elaborate(self, platform):
        m = Module()
        runs, through = [], []
        for r in range(self.rows):
            held, release = self.filter[r], self.release[r]
            run = Signal(range(PER_SLOT + 1), name=f"run{r}")  # blocks taken in this slot
            allowed = self.slots.payload[r]
            open_ = Signal(name=f"open{r}")      # the row may take a block
            taken = Signal(name=f"taken{r}")     # it takes one on this cycle
            done = Signal(name=f"done{r}")       # and is then through the slot
            m.d.comb += [
                open_.eq(self.slots.valid & (run < allowed)),
                release.payload.eq(held.payload),
                release.valid.eq(held.valid & open_),
                held.ready.eq(release.ready & open_),
                taken.eq(held.valid & held.ready),
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
