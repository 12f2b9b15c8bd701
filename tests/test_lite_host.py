# amaranth: UnusedElaboratable=no
"""The gateware host (sparseforge.hw.lite_host) on the register file, as benches wire it
(sparseforge.tb.lite_host): writes, reads back, a wait that polls until a status bit
rises, RESP passed back, under back-pressure."""

import pytest
from amaranth.hdl import Signal

from sparseforge.hw.lite_host import LiteOp
from sparseforge.hw.regfile import RegisterFile
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import regmap
from sparseforge.tb.lite_host import HostedRegisters
from sparseforge.tb.streams import Bench

REGS = regmap.by_name()


class HostOnRegisters(HostedRegisters):
    """The host on a :class:`RegisterFile` whose ``done`` rises ``delay`` cycles after
    ``start``."""

    def __init__(self, delay):
        self.delay = delay
        super().__init__(RegisterFile(addr_width=8))

    def elaborate(self, platform):
        m = super().elaborate(platform)
        regs = self.target.regs
        count = Signal(range(self.delay + 2))
        with m.If(regs.start):
            m.d.sync += count.eq(1)
        with m.Elif((count != 0) & (count <= self.delay)):
            m.d.sync += count.eq(count + 1)
        m.d.comb += regs.done.eq(count > self.delay)
        return m


class HostBench(Bench):
    def __init__(self, component, commands, seed, rate):
        super().__init__(component, seed)
        self.drivers = [self.source_on("commands", commands, rate),
                        self.sink_on("responses", rate, len(commands))]

    def from_outputs(self, cycles, outputs):
        return cycles, outputs["responses"]


@pytest.mark.parametrize("rate", [0.5, 1.0])
def test_writes_reads_and_a_wait_for_done(rate):
    done = 1 << next(f.lsb for f in REGS["status"].fields if f.name == "done")
    commands = [
        {"op": LiteOp.WRITE, "addr": REGS["tiles_count"].offset, "data": 0x1234_5678},
        {"op": LiteOp.READ, "addr": REGS["tiles_count"].offset, "data": 0},
        {"op": LiteOp.WRITE, "addr": REGS["cycles"].offset, "data": 7},        # RO: SLVERR
        {"op": LiteOp.WRITE, "addr": REGS["start"].offset, "data": 1},
        {"op": LiteOp.WAIT, "addr": REGS["status"].offset, "data": done},
    ]
    cycles, got = pysim(HostBench(HostOnRegisters(40), commands, seed_from_env(3), rate))
    assert got[:4] == [{"data": 0, "resp": 0}, {"data": 0x1234_5678, "resp": 0},
                       {"data": 0, "resp": 2}, {"data": 0, "resp": 0}]
    assert got[4]["data"] & done and got[4]["resp"] == 0
    assert cycles > 40                     # the wait read status until done rose
