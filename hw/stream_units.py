"""Stream plumbing the converters share: a FIFO beside a pipeline, a skid buffer, and
one-hot selection of the lowest set bit."""

import functools
import operator

from amaranth.hdl import Const, Module, Shape, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out


class Beside(wiring.Component):
    """Carries side data past a one-in, one-out pipeline and rejoins it with the output.

    A pipeline block (prefix sum, divide/modulo) transforms its own payload only;
    whatever belongs with an item (its values, its flags) waits in a FIFO beside it,
    in order, and leaves with the pipeline's result for that item.

    Parameters
    ----------
    data_in, data_out : the pipeline's input and output payload shapes.
    side : the shape of what travels beside it.
    latency : the pipeline's latency, at least 2 (the FIFO's own); the FIFO holds
        ``latency + 2`` items, enough for one item a cycle.

    Members
    -------
    enter : In(stream({data: data_in, side}))
    to_pipe : Out(stream(data_in))
        To the pipeline's input.
    from_pipe : In(stream(data_out))
        From the pipeline's output: one item per item sent, in order.
    leave : Out(stream({data: data_out, side}))

    An item enters when the pipeline and the FIFO both take it and leaves when
    both its result and its side are there. Latency: the pipeline's; throughput:
    one item a cycle.
    """

    def __init__(self, data_in, data_out, side, latency):
        if latency < 2:
            raise ValueError(f"latency={latency}: Beside needs a pipeline of at least 2 "
                             "cycles (its FIFO's latency)")
        self.side_width = Shape.cast(side).width
        self.depth = latency + 2
        super().__init__({
            "enter": In(stream.Signature(data.StructLayout({"data": data_in, "side": side}))),
            "to_pipe": Out(stream.Signature(data_in)),
            "from_pipe": In(stream.Signature(data_out)),
            "leave": Out(stream.Signature(data.StructLayout({"data": data_out,
                                                              "side": side}))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=self.side_width, depth=self.depth)
        enter, leave = self.enter, self.leave
        m.d.comb += [
            self.to_pipe.payload.eq(enter.payload.data),
            self.to_pipe.valid.eq(enter.valid & fifo.w_rdy),
            fifo.w_data.eq(enter.payload.side),
            fifo.w_en.eq(enter.valid & self.to_pipe.ready),
            enter.ready.eq(self.to_pipe.ready & fifo.w_rdy),
            leave.payload.data.eq(self.from_pipe.payload),
            leave.payload.side.eq(fifo.r_data),
            leave.valid.eq(self.from_pipe.valid & fifo.r_rdy),
            self.from_pipe.ready.eq(leave.ready & fifo.r_rdy),
            fifo.r_en.eq(leave.ready & self.from_pipe.valid),
        ]
        return m


class Skid(wiring.Component):
    """A register slice: registers a stream's payload and its ``ready``, with a skid
    register for the item that arrives while the output stalls.

    Cuts the paths through a stream (ready back, payload forward) into two cycles.

    Members
    -------
    i : In(stream(shape))
    o : Out(stream(shape))

    Latency 1 cycle; throughput one item a cycle.
    """

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        spare, held = Signal(self.shape), Signal()
        m.d.comb += i.ready.eq(~held)
        stalled = o.valid & ~o.ready
        with m.If(stalled & ~held):                     # an arriving item waits aside
            m.d.sync += [spare.eq(i.payload), held.eq(i.valid)]
        with m.Elif(~stalled & held):
            m.d.sync += [o.payload.eq(spare), o.valid.eq(1), held.eq(0)]
        with m.Elif(~stalled):
            m.d.sync += [o.payload.eq(i.payload), o.valid.eq(i.valid)]
        return m


def lowest(m, bits):
    """``(first, rest)``: the lowest set bit of ``bits`` (one-hot) and the others, as
    signals (so the Verilog keeps every bit of them in use)."""
    first, rest = Signal(len(bits)), Signal(len(bits))
    m.d.comb += [rest.eq(bits & (bits - 1)), first.eq(bits & ~rest)]
    return first, rest


def any_of(values):
    """The OR of ``values`` (0 for none)."""
    return functools.reduce(operator.or_, values, Const(0))
