# amaranth: UnusedElaboratable=no
"""The block-RAM AXI4 slave: the accelerator's AXI master with every kind of port busy on
it under random back-pressure (reads of its initial words, writes landed, read back
through its second port), and its pins driven by hand for what the master never does
(narrow and unaligned INCR bursts, IDs echoed, addresses past the memory, a wrong
WLAST)."""

import random

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from sparseforge import board
from sparseforge.core.errors import ParameterError
from sparseforge.hw.axi import DECERR, OKAY, SLVERR
from sparseforge.hw.axi_master import AxiMaster
from sparseforge.hw.axi_ram import AxiRam
from sparseforge.sim.runners import seed_from_env
from sparseforge.sw import wire
from sparseforge.tb.axi import OrderedReads, TaggedReads, Writes, simulate


class OnChip:
    """The memory is gateware inside the design: nothing for the bench to drive."""

    def drive(self, ctx):
        pass

    def sample(self, ctx):
        pass

    def quiet(self):
        return True


class Served(wiring.Component):
    """An :class:`AxiMaster` of ``params`` (its ports driven by the bench) on an
    :class:`AxiRam` of ``depth`` bus words holding ``init``; the memory's ``peek``."""

    def __init__(self, depth, init, **params):
        self.master = AxiMaster(**params)
        self.ram = AxiRam.serving(self.master.m_axi.signature, depth, init)
        super().__init__({"peek": self.ram.signature.members["peek"]})

    def elaborate(self, platform):
        m = Module()
        m.submodules.master, m.submodules.ram = self.master, self.ram
        wiring.connect(m, self.master.m_axi, self.ram.s_axi)
        wiring.connect(m, wiring.flipped(self.peek), self.ram.peek)
        return m


def bus_words(words, width, data):
    """Words of ``width`` bits, word ``a`` at byte ``a * word_bytes(width)``, as the bus
    words of ``data`` bits that hold them."""
    return board.bus_words(wire.to_bytes(np.array(words, dtype=object),
                                         wire.word_bytes(width)), data)


@pytest.mark.parametrize("params", [
    {"reads": 1, "ordered": 2, "writes": 2, "word": 48, "data": 32, "tag": 2},
    {"reads": 1, "ordered": 1, "writes": 1, "word": 16, "data": 64, "tag": 3}])
def test_the_master_reads_and_writes_it_under_back_pressure(params):
    """Words of 48 bits over a 32-bit bus cross in two-beat bursts; words of 16 bits over
    64 in narrow single beats on their lanes. Reads from every port at random rates,
    their answers taken at random; writes to a range of each port's own."""
    rng = random.Random(seed_from_env(5))
    n, per_port, depth = 40, 40, 512
    params = {"addr_width": 10, "axi_addr": 16, **params}
    width = params["word"]
    values = [rng.getrandbits(width) for _ in range(n)]
    dut = Served(depth, bus_words(values, width, params["data"]), **params)
    tagged = [TaggedReads(dut.master.tagged[k], [rng.randrange(n) for _ in range(per_port)], rng,
                          .6, .6) for k in range(params["reads"])]
    ordered = [OrderedReads(dut.master.ordered[k], [rng.randrange(n) for _ in range(per_port)],
                            rng, .6, .6) for k in range(params["ordered"])]
    wanted = [list(o.addrs) for o in ordered]
    writes = [[(n + 64 * k + rng.randrange(60), rng.getrandbits(width))
               for _ in range(per_port)] for k in range(params["writes"])]
    posts = [Writes(dut.master.write[k], writes[k], rng, .6) for k in range(params["writes"])]
    contents, errors = [], []

    def settled(ctx):
        if ctx.get(dut.master.idle):
            contents.extend(ctx.get(dut.ram.memory.data[a]) for a in range(depth))
            errors.append(ctx.get(dut.master.error))
        return ctx.get(dut.master.idle)

    simulate(dut, OnChip(), [*tagged, *ordered, *posts], settled, limit=300 * per_port)
    for port in tagged:
        assert len(port.got) == per_port and all(values[a] == d for a, d in port.got)
    for port, addrs in zip(ordered, wanted, strict=True):
        assert port.got == [values[a] for a in addrs]
    landed = dict(pair for mine in writes for pair in mine)
    image = [landed.get(a, values[a] if a < n else 0) for a in range(n + 64 * len(writes))]
    want = bus_words(image, width, params["data"])
    assert contents[:len(want)] == want and not any(contents[len(want):])
    assert errors == [0]


# -- its pins by hand ------------------------------------------------------------------

INIT = [int.from_bytes(bytes(range(4 * k, 4 * k + 4)), "little") for k in range(16)]
"""16 words of 32 bits whose bytes count from 0: byte ``a`` holds ``a``."""


async def read(ctx, s, id_, addr, length, size, burst=1):
    """A read burst on ``s``'s pins, R taken every other cycle: ``[(id, data, resp,
    last)]``."""
    ctx.set(s.arid, id_), ctx.set(s.araddr, addr), ctx.set(s.arlen, length)
    ctx.set(s.arsize, size), ctx.set(s.arburst, burst), ctx.set(s.arvalid, 1)
    await ctx.tick().until(s.arready)
    ctx.set(s.arvalid, 0)
    beats, cycle = [], 0
    while not beats or not beats[-1][3]:
        cycle += 1
        ctx.set(s.rready, cycle % 2)
        if ctx.get(s.rvalid) and cycle % 2:
            beats.append(tuple(ctx.get(getattr(s, f"r{f}")) for f in ("id", "data", "resp",
                                                                        "last")))
        await ctx.tick()
    ctx.set(s.rready, 0)
    return beats


async def write(ctx, s, id_, addr, size, beats, burst=1):
    """A write burst of ``beats`` (``(data, strb, last)``) on ``s``'s pins: ``(id,
    resp)``."""
    ctx.set(s.awid, id_), ctx.set(s.awaddr, addr), ctx.set(s.awlen, len(beats) - 1)
    ctx.set(s.awsize, size), ctx.set(s.awburst, burst), ctx.set(s.awvalid, 1)
    await ctx.tick().until(s.awready)
    ctx.set(s.awvalid, 0)
    for data, strb, last in beats:
        ctx.set(s.wdata, data), ctx.set(s.wstrb, strb), ctx.set(s.wlast, last)
        ctx.set(s.wvalid, 1)
        await ctx.tick().until(s.wready)
    ctx.set(s.wvalid, 0)
    ctx.set(s.bready, 1)
    await ctx.tick().until(s.bvalid)
    answer = ctx.get(s.bid), ctx.get(s.bresp)
    ctx.set(s.bready, 0)
    return answer


def by_hand(bench):
    """Run ``bench(ctx, pins, ram)`` on a 64-byte :class:`AxiRam` holding :data:`INIT`."""
    ram = AxiRam(INIT, addr=16, data=32, read_id=3, write_id=2, depth=16)
    sim = Simulator(ram)
    sim.add_clock(1e-8)
    out = []

    async def run(ctx):
        out.append(await bench(ctx, ram.s_axi, ram))

    sim.add_testbench(run)
    sim.run()
    return out[0]


def test_a_narrow_unaligned_burst_reads_its_beats_words_and_echoes_its_id():
    """Four beats of 2 bytes from byte 3: the first at 3, the rest aligned (4, 6, 8),
    so bus words 0, 1, 1, 2, each whole; R held while not taken."""
    beats = by_hand(lambda ctx, s, _: read(ctx, s, 5, 3, 3, 1))
    assert beats == [(5, INIT[w], OKAY, int(k == 3)) for k, w in enumerate((0, 1, 1, 2))]


def test_beats_past_the_memory_answer_decerr_and_land_nowhere():
    async def bench(ctx, s, ram):
        # Two beats from the last word: the second, at byte 64, is outside.
        b = await write(ctx, s, 2, 60, 2, [(0xAABBCCDD, 0xF, 0), (0x11223344, 0xF, 1)])
        r = await read(ctx, s, 1, 60, 1, 2)
        return b, r, [ctx.get(ram.memory.data[a]) for a in range(16)]

    b, r, contents = by_hand(bench)
    assert b == (2, DECERR)
    assert [(beat[1], beat[2]) for beat in r] == [(0xAABBCCDD, OKAY), (r[1][1], DECERR)]
    assert contents == [*INIT[:15], 0xAABBCCDD]          # nothing wrapped onto word 0


def test_strobes_pick_the_bytes_a_wrong_wlast_answers_slverr_and_peek_sees_it():
    async def bench(ctx, s, ram):
        b = await write(ctx, s, 1, 4, 2, [(0xFFFFFFFF, 0b0101, 0)])   # one beat, no WLAST
        ctx.set(ram.peek.addr, 1)
        await ctx.tick()
        return b, ctx.get(ram.peek.data)

    b, word = by_hand(bench)
    assert b == (1, SLVERR) and word == 0x07FF05FF


def test_a_fixed_burst_answers_slverr_and_writes_nothing():
    async def bench(ctx, s, ram):
        b = await write(ctx, s, 0, 8, 2, [(0xDEAD, 0xF, 0), (0xBEEF, 0xF, 1)], burst=0)
        r = await read(ctx, s, 6, 8, 0, 2, burst=0)
        return b, r, [ctx.get(ram.memory.data[a]) for a in range(16)]

    b, r, contents = by_hand(bench)
    assert b == (0, SLVERR) and [(beat[0], beat[2]) for beat in r] == [(6, SLVERR)]
    assert contents == INIT


def test_depth_is_refused_past_the_address_bits_and_init_past_the_depth():
    AxiRam(addr=8, data=32, depth=64)                    # 256 bytes: all 8 address bits
    with pytest.raises(ParameterError, match="depth=128"):
        AxiRam(addr=8, data=32, depth=128)
    AxiRam([0] * 4, depth=4)
    with pytest.raises(ParameterError, match="init: 5 words"):
        AxiRam([0] * 5, depth=4)


def test_verilog_lints_clean_with_wall(lint):
    assert lint("axi_ram", AxiRam.REPORT[0]) == ""
