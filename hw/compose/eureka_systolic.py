"""Systolic composition of Eureka 4x4 sub-arrays into 8x8 and 16x16 arrays (Section 3.3)."""

from dataclasses import replace

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ...core.params import Param, check_params
from ...core.registry import block
from ...sw.wire import EurekaWire
from ..eureka_array import COLS, LATENCY, EurekaArray, SlotBarrier
from ..eureka_mac import COMPACTION, WIDTHS
from ..interfaces import EUREKA_COLUMNS, EurekaRowSignature, SystolicSlotsSignature


@block("eureka_systolic")
class EurekaSystolic(wiring.Component):
    """``rows`` x ``cols`` Eureka 4x4 sub-arrays running a systolic schedule in lockstep slots.

    Section 3.3 and the machine of :mod:`sparseforge.sw.systolic`: the
    sub-arrays of a systolic row run the same filter block, each against
    its own 4 input columns, so a systolic row is one
    :class:`~..eureka_array.EurekaArray` of ``cols`` sub-arrays (a 4 x
    4``cols`` MAC grid with one block sequencer, broadcasting each slot to
    all its sub-arrays on the same cycle). The systolic rows advance
    together in *slots*: a :class:`~..eureka_array.SlotBarrier` passes each
    row's records to it while the slot descriptor gives the row blocks to
    run (0 to 2), and takes the descriptor once every row has run its
    blocks, so a row with less work idles (a bubble). With no back-pressure
    a slot takes exactly the longest row's work and a run takes the
    schedule's summed slot lengths. 8x8 is ``rows = cols = 2``, 16x16 is
    ``rows = cols = 4``.

    Parameters
    ----------
    rows : systolic rows (block rows in flight).
    cols : sub-arrays per systolic row (4 input columns each).
    compaction, weight_width, act_width, acc_width : as the sub-array.

    Members
    -------
    slots : In(stream([rows] x 0..2))
        :class:`~..interfaces.SystolicSlotsSignature`: blocks per systolic
        row in each slot, in schedule order.
    row[r].filter, row[r].inputs, row[r].outputs
        Systolic row r's :class:`~..interfaces.EurekaRowSignature` with
        4``cols`` input columns: its blocks' records and slabs in slot
        order (one beat per cycle), one tile (in MAC-row order, with its
        rotation) per block.
    dense : In(1)
        Dense mode on every sub-array.
    busy : Out([rows] x 1)
        Element r: systolic row r's MACs compute on this cycle.

    Latency and throughput: a row's tile is valid :attr:`latency` cycles
    after its block's last slot entered (the sub-array's pipeline); slots
    follow each other without a gap.

    Clock: below 100 MHz at 2 x 2 (8 x 8 MACs, on the LFE5U-45F; the synthesis report).
    The critical path is a MAC's multiply, from its operand registers through the DSP
    into its product register: one logic level, the multiplier, and the rest routing
    between the registers and the DSP columns the array's many MACs spread across. One
    sub-array alone (its own row) meets 100 MHz with the same path.
    """

    PARAMS = (Param("rows", 2, 1, 4, "systolic rows of 4x4 sub-arrays"),
              replace(COLS, default=2, doc="4x4 sub-arrays per systolic row"),
              COMPACTION, *WIDTHS)
    # One sub-array with the slot control, and the 8x8 array (64 multipliers: the report
    # places it on the smallest ECP5 that holds them, the 45k; its path a MAC's operand
    # register -> DSP multiply -> product register, mostly routing to multipliers spread
    # over the die). 16x16 needs 256, more than any ECP5 has (156 on the 85k).
    REPORT = ({"rows": 1, "cols": 1, "compaction": 4}, {"rows": 2, "cols": 2, "compaction": 4})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.rows = v.pop("rows")
        self.array = v  # each systolic row's EurekaArray
        self.fmt = EurekaWire(v["compaction"], v["weight_width"])  # the filter beats' fields
        row = EurekaRowSignature(v["compaction"], v["weight_width"], v["act_width"],
                                 v["acc_width"], EUREKA_COLUMNS * v["cols"])
        super().__init__({**SystolicSlotsSignature(self.rows).members,
                          "row": Out(row).array(self.rows),
                          "dense": In(1), "busy": Out(data.ArrayLayout(1, self.rows))})

    @property
    def latency(self):
        """Cycles from a block's last slot entering to its tile on ``outputs``: the
        sub-array's (:data:`~..eureka_array.LATENCY`)."""
        return LATENCY

    def elaborate(self, platform):
        m = Module()
        m.submodules.barrier = barrier = SlotBarrier(self.rows, self.array["compaction"],
                                                     self.array["weight_width"])
        wiring.connect(m, wiring.flipped(self.slots), barrier.slots)
        for r, port in enumerate(self.row):
            m.submodules[f"row{r}"] = row = EurekaArray(**self.array)
            wiring.connect(m, wiring.flipped(port.filter), barrier.filter[r])
            wiring.connect(m, barrier.release[r], row.filter)
            wiring.connect(m, wiring.flipped(port.inputs), row.inputs)
            wiring.connect(m, row.outputs, wiring.flipped(port.outputs))
            m.d.comb += [row.dense.eq(self.dense), self.busy[r].eq(row.busy)]
        return m
