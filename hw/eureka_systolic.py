"""Systolic composition of Eureka 4x4 sub-arrays into 8x8 and 16x16 arrays (Section 3.3)."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import Param
from ..registry import block
from ..sw.wire import PER_SLOT, EurekaWire
from .eureka_array import COLUMNS, BlockSequencer, array_ports, mac_grid, unrotate
from .eureka_mac import COMPACTION, WIDTHS, check_widths


@block("eureka_systolic")
class EurekaSystolic(wiring.Component):
    """``rows`` x ``cols`` Eureka 4x4 sub-arrays running a systolic schedule in lockstep slots.

    Section 3.3 and the machine of :mod:`sparseforge.sw.systolic`: the
    sub-arrays of a systolic row run the same filter block, each against
    its own 4 input columns, so a systolic row is a 4 x 4``cols`` MAC grid
    with one block sequencer (:class:`~.eureka_array.EurekaArray`'s),
    broadcasting each slot to all its sub-arrays on the same cycle. The
    systolic rows advance together in *slots*: a slot descriptor says how
    many blocks (0 to 2) each row runs in it; each row runs its blocks back
    to back, and the next slot starts once every row is done, so a row with
    less work idles (a bubble). With no back-pressure a slot takes exactly
    the longest row's work and a run takes the schedule's summed slot
    lengths. 8x8 is ``rows = cols = 2``, 16x16 is ``rows = cols = 4``.

    Parameters
    ----------
    rows : systolic rows (block rows in flight).
    cols : sub-arrays per systolic row (4 input columns each).
    compaction, weight_width, act_width, acc_width : as the sub-array.

    Members
    -------
    slots : In(stream([rows] x 2 bits))
        Blocks per systolic row in each slot, in schedule order.
    row[r].filter, row[r].inputs, row[r].outputs
        Systolic row r's streams, as the sub-array's with 4``cols`` input
        columns: its blocks' records and slabs in slot order, one tile per
        block.
    dense : In(1)
        Dense mode on every sub-array.
    busy : Out(rows)
        Bit r: systolic row r's MACs compute on this cycle.

    Latency and throughput: a row's tile is valid the cycle after its
    block's last; slots follow each other without a gap.
    """

    PARAMS = (Param("rows", 2, 1, 4, "systolic rows of 4x4 sub-arrays"),
              Param("cols", 2, 1, 4, "4x4 sub-arrays per systolic row"),
              COMPACTION, *WIDTHS)
    # One sub-array with the slot control: two or more need over the 28 multipliers of
    # the report's ECP5-25k; their area is rows x cols sub-arrays and this control.
    REPORT = ({"rows": 1, "cols": 1, "compaction": 4},)

    def __init__(self, rows=2, cols=2, compaction=4, weight_width=8, act_width=8,
                 acc_width=32):
        v = check_widths(self.PARAMS, {"rows": rows, "cols": cols, "compaction": compaction,
                                       "weight_width": weight_width, "act_width": act_width,
                                       "acc_width": acc_width})
        self.rows, self.cols = v["rows"], v["cols"]
        self.fmt = EurekaWire(v["compaction"], v["weight_width"])
        self.act_width, self.acc_width = v["act_width"], v["acc_width"]
        row = wiring.Signature(array_ports(v["compaction"], v["weight_width"], v["act_width"],
                                           v["acc_width"], COLUMNS * self.cols))
        super().__init__({
            "slots": In(stream.Signature(data.ArrayLayout(range(PER_SLOT + 1), self.rows))),
            "row": Out(row).array(self.rows),
            "dense": In(1),
            "busy": Out(self.rows),
        })

    def elaborate(self, platform):
        m = Module()
        columns = COLUMNS * self.cols
        finishing = []  # per row: this row is done with the slot after this cycle
        taken = []
        for r, ports in enumerate(self.row):
            count = Signal(range(PER_SLOT + 1), name=f"taken{r}")  # blocks done in this slot
            allowed = self.slots.payload[r]
            seq = BlockSequencer(m, self.fmt, ports.filter, ports.inputs, ports.outputs,
                                 self.dense, start=self.slots.valid & (count < allowed))
            macs = mac_grid(m, seq, self.fmt, self.act_width, self.acc_width,
                            ports.inputs.payload, columns, prefix=f"row{r}_")
            unrotate(m, seq, macs, ports.outputs.payload, columns)
            ending = Signal(name=f"ending{r}")
            m.d.comb += [ending.eq(seq.go & seq.last), self.busy[r].eq(seq.busy)]
            finish = Signal(name=f"finishing{r}")
            m.d.comb += finish.eq(count + ending == allowed)
            finishing.append(finish)
            taken.append((count, ending))
        slot_done = Signal()
        m.d.comb += [slot_done.eq(self.slots.valid & Cat(*finishing).all()),
                     self.slots.ready.eq(slot_done)]
        for count, ending in taken:
            with m.If(slot_done):
                m.d.sync += count.eq(0)
            with m.Elif(ending):
                m.d.sync += count.eq(count + 1)
        return m

