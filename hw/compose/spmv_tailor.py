# amaranth: UnusedElaboratable=no
"""The SpMV engine: x held tile by tile in a Tailor, read by a multiply-accumulate unit."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ...core.params import check_params
from ...core.registry import block
from ..spmv import DEPTH, FIFO, TILE, WIDTHS, SpmvMac
from ..tailor import Tailor


@block("spmv_tailor")
class SpmvTailor(wiring.Component):
    """y = A·x with x in a Tailor smaller than its tiles (Tailors §3.3, the demo's engine).

    A :class:`~sparseforge.hw.tailor.Tailor` and an
    :class:`~sparseforge.hw.spmv.SpmvMac` as its child, joined through the
    Tailor's child side (``read``, ``read_data``, ``shrink``, and
    ``occupancy`` for the whole-buffer shrink that ends a tile). The MAC only
    reads: the Tailor's ``update`` stays idle.

    Parameters
    ----------
    depth, fifo, tile : the Tailor's (capacity D, FIFO region F, longest tile).
    x_width : the Tailor's element width, x unsigned.
    value_width, acc_width : A's values and y, two's complement.

    Members
    -------
    parent : Out(TailorParentSignature)
        The Tailor's parent side (``fill``, ``owfill``, ``credit``,
        ``fifo_credits``): the parent fills each tile of x and
        streams its bumped part as the README's "Driving a Tailor" says. The
        MAC ends each tile with one shrink of the whole buffer, so a nonzero
        ``credit`` marks the end of a tile: only then may the next tile's
        fills start.
    a : In(stream(spmv_entry))
        A's stream (:func:`~sparseforge.sw.traces.spmv_stream`).
    y : Out(stream(signed(acc_width)))
        One sum per row of A's stream.

    Latency and throughput: those of the Tailor's reads (at read latency 1, so
    the MAC's two-entry queue sustains them); one entry of A per cycle while x
    is present; y three cycles after its row's last read.

    Clock: below 100 MHz on the ECP5 (the synthesis report), on the Tailor's frontier:
    the critical path runs from the MAC's read index through the frontier's arithmetic
    on it (the position the read passes, capped as a shrink would) into a stall's next
    distance, three fifths of it routing (the Tailor's Timing paragraph says why its
    frontier is where its paths end).
    """

    PARAMS = (DEPTH, FIFO, TILE, *WIDTHS)
    REPORT = ({"depth": 64, "fifo": 16, "tile": 256, "x_width": 16, "value_width": 16,
               "acc_width": 48},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        # Built here for their signatures (the pragma above: they go unused only when
        # this engine does, which warns itself, or when the Tailor refuses its parameters).
        # Read latency 1: the MAC's queue holds one entry per read in flight plus one.
        self.tailor = Tailor(depth=v["depth"], width=v["x_width"], fifo=v["fifo"], tile=v["tile"],
                             read_latency=1)
        self.mac = SpmvMac(depth=v["depth"], tile=v["tile"], x_width=v["x_width"],
                           value_width=v["value_width"], acc_width=v["acc_width"])
        members = self.mac.signature.members
        super().__init__({"parent": self.tailor.signature.members["parent"],
                          "a": members["a"], "y": members["y"]})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tailor = tailor = self.tailor
        m.submodules.mac = mac = self.mac
        wiring.connect(m, wiring.flipped(self.parent), tailor.parent)
        wiring.connect(m, mac.buffer, tailor.child)
        wiring.connect(m, wiring.flipped(self.a), mac.a)
        wiring.connect(m, mac.y, wiring.flipped(self.y))
        return m
