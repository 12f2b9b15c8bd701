"""The Eureka 4x4 sub-array: output-stationary outer product with SUDS (Sections 2.3-3.2)."""

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..registry import block
from ..sw.wire import ROWS, EurekaWire
from .eureka_mac import COMPACTION, WIDTHS, EurekaMac, check_widths
from .interfaces import struct
from .mux import mux

COLUMNS = 4
"""MAC columns of a sub-array: the input columns it multiplies at once."""


def slot_layout(fmt):
    """One slot word: a lane {value, column, displaced} per MAC row, from the format."""
    return data.ArrayLayout(struct(fmt.lane), fmt.lanes)


def record_layout(fmt):
    """One block record (:meth:`~sparseforge.sw.eureka_format.EurekaFormat.records`)."""
    return data.StructLayout({"header": struct(fmt.header),
                              "slots": data.ArrayLayout(slot_layout(fmt),
                                                        ROWS * fmt.compaction)})


def slab_layout(compaction, act_width, columns=COLUMNS):
    """An input slab: ``[4P rows][columns]`` signed activations."""
    return data.ArrayLayout(data.ArrayLayout(signed(act_width), columns), ROWS * compaction)


def tile_layout(acc_width, columns=COLUMNS):
    """An output tile: ``[4 output rows][columns]`` signed accumulators."""
    return data.ArrayLayout(data.ArrayLayout(signed(acc_width), columns), ROWS)


def array_ports(compaction, weight_width, act_width, acc_width, columns=COLUMNS):
    """Stream ports of one systolic row of sub-arrays (``columns`` MAC columns in all)."""
    fmt = EurekaWire(compaction, weight_width)
    return {
        "filter": In(stream.Signature(record_layout(fmt))),
        "inputs": In(stream.Signature(slab_layout(compaction, act_width, columns))),
        "outputs": Out(stream.Signature(tile_layout(acc_width, columns))),
    }


class BlockSequencer:
    """Steps one block record at a time through the MAC rows (shared by sub-array and row).

    Built inside ``elaborate``: drives the stream handshakes and exposes the
    per-MAC-row controls (``weight``, ``select``, ``displaced``) and the
    per-cycle ``enable``/``clear``. ``start`` gates the start of each block
    (the systolic composition's slot barrier); ``rotation`` is the finished
    block's rotation for un-rotating the tile.
    """

    def __init__(self, m, fmt, filter_, inputs, outputs, dense, start=1):
        width = ROWS * fmt.compaction
        record = filter_.payload
        header = record.header
        self.t = t = Signal(range(width))
        cycles = Signal(range(width + 1))
        last = Signal()
        done = Signal()  # the accumulators hold a finished tile
        self.go = go = Signal()  # the MAC array steps this cycle
        self.busy = Signal()
        self.rotation = Signal(2)
        self.last = last
        slot = Signal(slot_layout(fmt))
        m.d.comb += [
            cycles.eq(Mux(dense, width, header.cycles)),
            # An empty block (cycles 0) passes in one cycle; a record claiming more
            # than 4P cycles (malformed) ends after its 4P slots.
            last.eq((t + 1 >= cycles) | (t == width - 1)),
            go.eq(filter_.valid & inputs.valid & (~done | outputs.ready) & (t.any() | start)),
            self.busy.eq(go & cycles.any()),
            # A block's record and slab stay presented until its last cycle.
            filter_.ready.eq(go & last),
            inputs.ready.eq(go & last),
            outputs.valid.eq(done),
            slot.eq(mux(t, [record.slots[i] for i in range(width)])),
        ]
        with m.If(go):
            m.d.sync += t.eq(Mux(last, 0, t + 1))
        with m.If(go & last):
            m.d.sync += [done.eq(1), self.rotation.eq(Mux(dense, 0, header.rotation))]
        with m.Elif(outputs.ready):
            m.d.sync += done.eq(0)

        self.weight, self.select, self.displaced = [], [], []
        for row in range(ROWS):
            lane = slot[row]
            weight = Signal(signed(fmt.value_width), name=f"weight{row}")
            select = Signal(range(width), name=f"select{row}")
            displaced = Signal(name=f"displaced{row}")
            m.d.comb += [
                weight.eq(Mux(cycles.any(), lane.value.as_signed(), 0)),
                select.eq(Mux(dense, t, lane.column)),
                displaced.eq(lane.displaced & ~dense),
            ]
            self.weight.append(weight)
            self.select.append(select)
            self.displaced.append(displaced)


def mac_grid(m, seq, fmt, act_width, acc_width, slab, columns, prefix=""):
    """``columns`` columns of 4 MACs wired for SUDS; returns ``macs[row][column]``."""
    width = ROWS * fmt.compaction
    macs = [[EurekaMac(fmt.compaction, fmt.value_width, act_width, acc_width,
                       from_below=int(row < ROWS - 1)) for _ in range(columns)]
            for row in range(ROWS)]
    for row in range(ROWS):
        for col in range(columns):
            mac = macs[row][col]
            m.submodules[f"{prefix}mac_{row}_{col}"] = mac
            m.d.comb += [
                mac.weight.eq(seq.weight[row]),
                mac.select.eq(seq.select[row]),
                mac.displaced.eq(seq.displaced[row]),
                mac.enable.eq(seq.go),
                mac.clear.eq(~seq.t.any()),
                *[mac.operands[k].eq(slab[k][col]) for k in range(width)],
            ]
            if row < ROWS - 1:
                below = macs[row + 1][col]
                m.d.comb += [mac.below.eq(below.product),
                             mac.below_displaced.eq(seq.displaced[row + 1])]
    return macs


def unrotate(m, seq, macs, tile, columns):
    """Drive ``tile`` with the accumulators, MAC row m as output row (m + rotation) % 4.

    Output row r at rotation k is MAC row (r - k) % 4: a 4:1 mux per output,
    selected by the rotation itself.
    """
    for out_row in range(ROWS):
        for col in range(columns):
            m.d.comb += tile[out_row][col].eq(mux(seq.rotation, [
                macs[(out_row - k) % ROWS][col].acc for k in range(ROWS)]))


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

    Parameters
    ----------
    compaction : P, 1, 2 or 4: blocks of 4 x 4P, a 4P:1 operand mux.
    weight_width, act_width, acc_width : signed operand and accumulator bits.

    Members
    -------
    filter : In(stream(record))
        One block record per transfer (:meth:`EurekaFormat.records`): the
        header {rotation, cycles} and 4P slot words of 4 lanes {value,
        column, displaced}, the first ``cycles`` used. Held until the
        block's last cycle.
    inputs : In(stream([4P][4] signed act_width))
        The block's input slab, one per block, transferred with the record.
    outputs : Out(stream([4][4] signed acc_width))
        The block's 4x4 result, in output-row order, one per block.
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

    def __init__(self, compaction=4, weight_width=8, act_width=8, acc_width=32):
        v = check_widths(self.PARAMS, {"compaction": compaction, "weight_width": weight_width,
                                       "act_width": act_width, "acc_width": acc_width})
        self.fmt = EurekaWire(v["compaction"], v["weight_width"])
        self.act_width, self.acc_width = v["act_width"], v["acc_width"]
        super().__init__({**array_ports(v["compaction"], v["weight_width"], v["act_width"],
                                        v["acc_width"]),
                          "dense": In(1), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        seq = BlockSequencer(m, self.fmt, self.filter, self.inputs, self.outputs, self.dense)
        m.d.comb += self.busy.eq(seq.busy)
        macs = mac_grid(m, seq, self.fmt, self.act_width, self.acc_width,
                        self.inputs.payload, COLUMNS)
        unrotate(m, seq, macs, self.outputs.payload, COLUMNS)
        return m
