"""The SpMV multiply-accumulate unit: the child that reads x from a Tailor for A's stream."""

from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw.wire import spmv_entry
from .interfaces import BuffetChildSignature, struct
from .stream_units import Queue
from .tailor import Tailor

_TAILOR = {p.name: p for p in Tailor.PARAMS}
DEPTH, FIFO, TILE = _TAILOR["depth"], _TAILOR["fifo"], _TAILOR["tile"]
WIDTHS = (
    Param("x_width", 16, 1, 64, "bits of an element of x (unsigned)"),
    Param("value_width", 16, 2, 32, "bits of a value of A (two's complement)"),
    Param("acc_width", 48, 4, 128, "bits of y (two's complement)",
          at_least=("x_width", "value_width")),
)


@block("spmv_mac")
class SpmvMac(wiring.Component):
    """y = A·x row by row, reading x from a Tailor (or a Buffet) as its child.

    Parameters
    ----------
    depth : capacity D of the buffer it reads (sets the shrink count's width).
    tile : the longest tile (sets the index width).
    x_width, value_width, acc_width : x unsigned, A's values and y signed.

    Members
    -------
    a : In(stream(spmv_entry))
        A's stream (:func:`~sparseforge.sw.wire.spmv_entry`): per entry the
        tile index of x to read and A's value; ``row_end`` on a row's last
        entry, ``tile_end`` on a tile's last.
    buffer : In(BuffetChildSignature)
        The buffer's child side: ``read`` carries each entry's index,
        ``read_data`` returns x in order. After a ``tile_end`` entry's read it
        shrinks the whole buffer (``occupancy``, which a split Tailor reports
        as D) and reads nothing of the next tile until that is accepted.
    y : Out(stream(signed(acc_width)))
        One sum per row, from a register.

    Pipeline: an entry and its read transfer together, and its value and
    ``row_end`` wait in a two-entry queue for the response (one cycle later
    at the earliest, held under back-pressure); the product is registered,
    then added to the row's sum; y is valid the cycle after the row's last
    product. One entry per cycle sustained.
    """

    PARAMS = (DEPTH, TILE, *WIDTHS)
    REPORT = ({"depth": 64, "tile": 256, "x_width": 16, "value_width": 16, "acc_width": 48},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.x_width, self.value_width, self.acc_width = (v["x_width"], v["value_width"],
                                                           v["acc_width"])
        index_width = ceil_log2(v["tile"])
        super().__init__({
            "buffer": In(BuffetChildSignature(v["depth"], self.x_width, index_width)),
            "a": In(stream.Signature(struct(spmv_entry(index_width, self.value_width)))),
            "y": Out(stream.Signature(signed(self.acc_width))),
        })

    def elaborate(self, platform):
        m = Module()
        vw, buffer = self.value_width, self.buffer
        m.submodules.queue = queue = Queue(vw + 1, depth=2, latency=1)

        # -- issue: an entry and its read transfer together ------------------------
        entry = self.a.payload
        owed = Signal()          # a whole-buffer shrink is due; the next tile waits
        take = Signal()
        m.d.comb += [
            buffer.read.payload.eq(entry.index),
            buffer.read.valid.eq(self.a.valid & queue.i.ready & ~owed),
            self.a.ready.eq(buffer.read.ready & queue.i.ready & ~owed),
            take.eq(self.a.valid & self.a.ready),
            queue.i.valid.eq(take),
            queue.i.payload.eq(Cat(entry.value, entry.row_end)),
            buffer.shrink.valid.eq(owed),
            buffer.shrink.payload.eq(buffer.occupancy),
        ]
        with m.If(take & entry.tile_end):
            m.d.sync += owed.eq(1)
        with m.Elif(buffer.shrink.ready):
            m.d.sync += owed.eq(0)

        # -- multiply: x times the queued value, registered ------------------------
        product = Signal(signed(self.x_width + vw))
        full = Signal()          # ``product`` holds one not yet added
        ends = Signal()          # ... and it is its row's last
        advance = ~(full & ends & self.y.valid & ~self.y.ready)
        m.d.comb += [buffer.read_data.ready.eq(advance),
                     queue.o.ready.eq(buffer.read_data.valid & advance)]
        with m.If(buffer.read_data.valid & advance):
            queued = queue.o.payload
            m.d.sync += [product.eq(queued[:vw].as_signed() * buffer.read_data.payload),
                         full.eq(1), ends.eq(queued[vw])]
        with m.Elif(advance):
            m.d.sync += full.eq(0)

        # -- accumulate; y leaves from a register ------------------------------
        acc = Signal(signed(self.acc_width))
        with m.If(self.y.ready):
            m.d.sync += self.y.valid.eq(0)
        with m.If(full & advance):
            with m.If(ends):
                m.d.sync += [self.y.payload.eq(acc + product), self.y.valid.eq(1), acc.eq(0)]
            with m.Else():
                m.d.sync += acc.eq(acc + product)
        return m
