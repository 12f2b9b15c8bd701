"""A Buffet inside your own Amaranth design, simulated with Amaranth's simulator.

``Reverser`` is a user's design: it takes batches of ``BATCH`` values from its
input stream and sends each batch back last-first. Its own logic, the
``Sequencer``, fills a :class:`sparseforge.hw.Buffet` with a batch, reads it
back from the highest index down and frees it with one shrink; the two are
joined with ``wiring.connect`` like any Amaranth components. The testbench
streams two batches in with gaps, takes the output with back-pressure, and
checks every value.

Run: python examples/buffet_in_my_design.py
"""

import random

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from sparseforge.hw import Buffet
from sparseforge.hw.interfaces import BuffetSignature

DEPTH, WIDTH, BATCH = 16, 8, 5


class Sequencer(wiring.Component):
    """Fill a batch, read it back last-first, shrink it; the Buffet's parent and child."""

    def __init__(self, depth, width, batch):
        self.batch = batch
        super().__init__({
            "inp": In(stream.Signature(width)),
            "out": Out(stream.Signature(width)),
            # The client's side of a buffet's port (both halves: it is the buffet's
            # parent and its child): the signature, flipped.
            "buffet": In(BuffetSignature(depth, width)),
        })

    def elaborate(self, platform):
        m = Module()
        parent, child, last = self.buffet.parent, self.buffet.child, self.batch - 1
        count = Signal(range(self.batch))       # filled, read or passed on, per state
        issued = Signal(range(self.batch + 1))
        with m.FSM():
            with m.State("FILL"):
                m.d.comb += [parent.fill.payload.eq(self.inp.payload),
                             parent.fill.valid.eq(self.inp.valid),
                             self.inp.ready.eq(parent.fill.ready)]
                with m.If(self.inp.valid & parent.fill.ready):
                    m.d.sync += count.eq(count + 1)
                    with m.If(count == last):
                        m.d.sync += count.eq(0)
                        m.next = "READ"
            with m.State("READ"):
                m.d.comb += [child.read.payload.eq(last - issued),
                             child.read.valid.eq(issued != self.batch),
                             self.out.payload.eq(child.read_data.payload),
                             self.out.valid.eq(child.read_data.valid),
                             child.read_data.ready.eq(self.out.ready)]
                with m.If(child.read.valid & child.read.ready):
                    m.d.sync += issued.eq(issued + 1)
                with m.If(self.out.valid & self.out.ready):
                    m.d.sync += count.eq(count + 1)
                    with m.If(count == last):
                        m.d.sync += [count.eq(0), issued.eq(0)]
                        m.next = "SHRINK"
            with m.State("SHRINK"):
                m.d.comb += [child.shrink.payload.eq(self.batch), child.shrink.valid.eq(1)]
                with m.If(child.shrink.ready):
                    m.next = "FILL"
        return m


class Reverser(wiring.Component):
    """The user's top: a stream in, each batch reversed out, a Buffet inside."""

    inp: In(stream.Signature(WIDTH))
    out: Out(stream.Signature(WIDTH))

    def elaborate(self, platform):
        m = Module()
        m.submodules.sequencer = sequencer = Sequencer(DEPTH, WIDTH, BATCH)
        m.submodules.buffet = buffet = Buffet(depth=DEPTH, width=WIDTH)
        wiring.connect(m, sequencer.buffet, buffet)
        wiring.connect(m, wiring.flipped(self.inp), sequencer.inp)
        wiring.connect(m, sequencer.out, wiring.flipped(self.out))
        return m


def main():
    dut = Reverser()
    rng = random.Random(1)
    values = [rng.randrange(1 << WIDTH) for _ in range(2 * BATCH)]
    received = []

    async def feed(ctx):
        for value in values:
            ctx.set(dut.inp.payload, value)
            ctx.set(dut.inp.valid, 1)
            await ctx.tick().until(dut.inp.ready)
            ctx.set(dut.inp.valid, 0)
            for _ in range(rng.randrange(2)):     # a gap now and then
                await ctx.tick()

    async def drain(ctx):
        while len(received) < len(values):
            ctx.set(dut.out.ready, 1)
            (payload,) = await ctx.tick().sample(dut.out.payload).until(dut.out.valid)
            ctx.set(dut.out.ready, 0)
            received.append(payload)
            for _ in range(rng.randrange(3)):     # back-pressure
                await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(feed)
    sim.add_testbench(drain)
    sim.run()

    expected = [v for i in range(0, len(values), BATCH) for v in reversed(values[i:i + BATCH])]
    print("in: ", values)
    print("out:", received)
    if received != expected:
        raise SystemExit(f"FAIL: expected {expected}")
    print(f"PASS: {len(values) // BATCH} batches of {BATCH} reversed through a Buffet")


if __name__ == "__main__":
    main()
