# amaranth: UnusedElaboratable=no
"""Named interfaces: blocks join through ``wiring.connect``; the read stage alone."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from sparseforge.hw.buffet import Buffet, ReadStage
from sparseforge.hw.interfaces import (
    BuffetChildSignature,
    BuffetParentSignature,
    BuffetSignature,
    TailorSignature,
)
from sparseforge.hw.stream_units import MemoryPortSignature
from sparseforge.hw.tailor import Tailor


def simulate(top, testbench):
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


class Client(wiring.Component):
    """A buffet's parent and child in one: declares each side's flipped signature."""

    parent: In(BuffetParentSignature(8, 8))
    child: In(BuffetChildSignature(8, 8))

    def elaborate(self, platform):
        return Module()


class Pair(wiring.Component):
    """A client and a buffet joined by one ``wiring.connect`` a side; the client's ports are
    driven here."""

    fill_valid: In(1)
    fill_payload: In(8)
    read_valid: In(1)
    read_index: In(3)
    read_data: Out(8)
    read_data_valid: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.submodules.client = client = Client()
        m.submodules.buffet = buffet = Buffet(depth=8, width=8)
        wiring.connect(m, client.parent, buffet.parent)
        wiring.connect(m, client.child, buffet.child)
        fill, read, data = client.parent.fill, client.child.read, client.child.read_data
        m.d.comb += [
            fill.valid.eq(self.fill_valid), fill.payload.eq(self.fill_payload),
            read.valid.eq(self.read_valid), read.payload.eq(self.read_index),
            data.ready.eq(1),
            self.read_data.eq(data.payload), self.read_data_valid.eq(data.valid),
        ]
        return m


def test_a_parent_and_a_child_connect_to_a_buffet_one_connect_each():
    top = Pair()

    async def testbench(ctx):
        for value in (0x11, 0x22, 0x33):
            ctx.set(top.fill_valid, 1)
            ctx.set(top.fill_payload, value)
            await ctx.tick()
        ctx.set(top.fill_valid, 0)
        ctx.set(top.read_valid, 1)
        ctx.set(top.read_index, 1)
        await ctx.tick()
        ctx.set(top.read_valid, 0)
        await ctx.tick()                    # the buffet's read latency is 2
        assert ctx.get(top.read_data_valid) and ctx.get(top.read_data) == 0x22

    simulate(top, testbench)


def test_signatures_keep_the_flattened_port_names():
    tailor = Tailor(depth=8, width=8, fifo=2, tile=16)
    names = ["__".join(map(str, path)) for path, _, _ in tailor.signature.flatten(tailor)]
    streams = ("parent__fill", "parent__owfill", "child__read", "child__read_data",
               "child__shrink", "update")
    assert set(names) == {*(f"{name}__{part}" for name in streams
                            for part in ("payload", "valid", "ready")),
                          "parent__credit", "parent__fifo_credits", "child__occupancy"}
    sig = TailorSignature(8, 8, 2, 16)
    parent, child = sig.members["parent"].signature, sig.members["child"].signature
    assert parent.members["owfill"].signature.members["payload"].shape.size == 9
    assert child.members["read"].signature.members["payload"].shape == 4
    assert BuffetSignature(8, 8).members["child"].signature.members == (
        BuffetChildSignature(8, 8).members)


def test_a_wrapper_passes_the_tailor_signature_through():
    class Wrapper(wiring.Component):
        port: Out(TailorSignature(8, 8, 2, 16))

        def elaborate(self, platform):
            m = Module()
            m.submodules.tailor = tailor = Tailor(depth=8, width=8, fifo=2, tile=16)
            wiring.connect(m, wiring.flipped(self.port), tailor)
            return m

    Wrapper().elaborate(None)     # connect raises on any mismatch of members


def test_memory_port_connects_a_fetcher_to_its_parent():
    fetcher = wiring.Signature({"mem": Out(MemoryPortSignature(10, 32))}).create()
    parent = wiring.Signature({"mem": In(MemoryPortSignature(10, 32))}).create()
    wiring.connect(Module(), fetcher.mem, parent.mem)


class StageOnMemory(wiring.Component):
    """A :class:`ReadStage` on a memory holding ``0x10 + address``."""

    def __init__(self):
        self.stage = ReadStage(8, 8, 3)
        super().__init__({name: member for name, member in self.stage.signature.members.items()
                          if name != "mem"})

    def elaborate(self, platform):
        m = Module()
        m.submodules.store = store = Memory(shape=8, depth=8, init=[0x10 + a for a in range(8)])
        m.submodules.stage = stage = self.stage
        wiring.connect(m, stage.mem, store.read_port())
        wiring.connect(m, wiring.flipped(self.read), stage.read)
        wiring.connect(m, stage.read_data, wiring.flipped(self.read_data))
        m.d.comb += [stage.present.eq(self.present), stage.addr.eq(self.addr),
                     self.accepted.eq(stage.accepted)]
        return m


def test_read_stage_holds_one_read_in_flight_under_back_pressure():
    dut = StageOnMemory()

    async def testbench(ctx):
        ctx.set(dut.present, 1)
        ctx.set(dut.read.valid, 1)
        ctx.set(dut.addr, 3)
        assert ctx.get(dut.read.ready) and ctx.get(dut.accepted)     # pipeline empty
        await ctx.tick()
        ctx.set(dut.addr, 5)                                         # a second read waits
        for _ in range(3):                                           # read_data stalled
            assert ctx.get(dut.read_data.valid) and ctx.get(dut.read_data.payload) == 0x13
            assert not ctx.get(dut.read.ready) and not ctx.get(dut.accepted)
            await ctx.tick()
        ctx.set(dut.read_data.ready, 1)                              # taken: the slot frees
        assert ctx.get(dut.read_data.payload) == 0x13 and ctx.get(dut.accepted)
        await ctx.tick()
        ctx.set(dut.read.valid, 0)
        assert ctx.get(dut.read_data.valid) and ctx.get(dut.read_data.payload) == 0x15
        await ctx.tick()
        assert not ctx.get(dut.read_data.valid)
        ctx.set(dut.read.valid, 1)
        ctx.set(dut.present, 0)                                      # absent: not accepted
        assert not ctx.get(dut.read.ready)
        await ctx.tick()
        assert not ctx.get(dut.read_data.valid)

    simulate(dut, testbench)
