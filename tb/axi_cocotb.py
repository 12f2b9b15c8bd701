"""cocotb tests of the AXI ports against cocotbext-axi's models, an implementation of
the protocol independent of ours, on Verilator (run by
:func:`~sparseforge.sim.runners.cocotb_verilog`).

- :func:`copy_through_axi_ram`: :class:`~sparseforge.tb.axi.AxiCopy` copies words
  through the AXI4 master into cocotbext-axi's ``AxiRam``, every channel paused at
  random.
- :func:`registers_through_axi_lite_master`: cocotbext-axi's ``AxiLiteMaster`` writes and
  reads the register file: every RW register, byte strobes, an RO register, a hole in
  the map, ``start``'s pulse, and writes refused while busy.
"""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiResp

from ..sim.runners import case_args
from ..sw import regmap, wire


def _pauses(rng, rate):
    """A pause generator: paused on a cycle with probability ``rate``."""
    while True:
        yield rng.random() < rate


def pause_every_channel(rng, rate, *interfaces):
    """Pause every channel of cocotbext-axi's ``interfaces`` (a model's ``read_if`` and
    ``write_if``) on a cycle with probability ``rate``, each from its own draws of ``rng``."""
    for interface in interfaces:
        for name in ("aw_channel", "w_channel", "b_channel", "ar_channel", "r_channel"):
            channel = getattr(interface, name, None)
            if channel is not None:
                channel.set_pause_generator(_pauses(rng, rate))


async def reset(dut):
    """Start ``dut``'s 10 ns clock and hold ``rst`` for three cycles."""
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await RisingEdge(dut.clk)


@cocotb.test()
async def copy_through_axi_ram(dut):
    args = case_args()
    rng = random.Random(args["seed"])
    word, count, src, dst = args["word"], args["count"], args["src"], args["dst"]
    size = wire.word_bytes(word)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi_"), dut.clk, dut.rst, size=args["bytes"])
    pause_every_channel(rng, args["pause"], ram.write_if, ram.read_if)
    words = [rng.getrandbits(word) for _ in range(count)]
    for i, value in enumerate(words):
        ram.write((src + i) * size, value.to_bytes(size, "little"))
    dut.start.value = 0
    dut.src.value, dut.dst.value, dut.count.value = src, dst, count
    await reset(dut)
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    for _ in range(args["watchdog"]):
        await RisingEdge(dut.clk)
        if dut.done.value:
            break
    else:
        raise AssertionError(f"no done after {args['watchdog']} cycles")
    assert not dut.error.value
    got = [int.from_bytes(ram.read((dst + i) * size, size), "little") for i in range(count)]
    assert got == words, next(i for i, (g, w) in enumerate(zip(got, words, strict=True))
                               if g != w)
    left = ram.read(src * size, count * size)
    assert left == b"".join(v.to_bytes(size, "little") for v in words)


@cocotb.test()
async def registers_through_axi_lite_master(dut):
    args = case_args()
    rng = random.Random(args["seed"])
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    pause_every_channel(rng, args["pause"], host.write_if, host.read_if)
    regs = regmap.by_name()
    for name in ("busy", "done", "error"):
        getattr(dut, f"regs__{name}").value = 0
    dut.regs__cycles.value = 0x12345678
    await reset(dut)

    async def read(name):
        got = await host.read(regs[name].offset, 4)
        assert got.resp == AxiResp.OKAY, (name, got.resp)
        return int.from_bytes(got.data, "little")

    values = {}
    for r in regmap.REGISTERS:
        if r.access == "RW":
            assert await read(r.name) == r.reset
            values[r.name] = rng.getrandbits(r.width)
    for offset, value in regmap.writes(values)[:-1]:
        done = await host.write(offset, value.to_bytes(4, "little"))
        assert done.resp == AxiResp.OKAY
    for name, value in values.items():
        assert await read(name) == value, name
        assert getattr(dut, f"regs__{name}").value.to_unsigned() == value

    # WSTRB: one byte of a register
    base = regs["b_base"].offset
    await host.write(base + 2, b"\xab")
    want = values["b_base"] & ~0xFF0000 | 0xAB0000
    assert await read("b_base") == want

    # RO: read the input; a write is refused with SLVERR; a hole answers DECERR
    assert await read("cycles") == 0x12345678
    assert (await host.write(regs["cycles"].offset, b"\0\0\0\0")).resp == AxiResp.SLVERR
    hole = 0x1C
    assert hole not in {r.offset for r in regmap.REGISTERS}
    assert (await host.write(hole, b"\1\0\0\0")).resp == AxiResp.DECERR
    assert (await host.read(hole, 4)).resp == AxiResp.DECERR

    # busy: writes refused with SLVERR and flagged; start clears the flag
    dut.regs__busy.value = 1
    done = await host.write(base, b"\1\2\3\4")
    assert done.resp == AxiResp.SLVERR
    assert await read("b_base") == want
    status = regmap.decode_status(await read("status"))
    assert status["busy"] == 1 and status["refused"] == 1, status
    dut.regs__busy.value = 0
    dut.regs__done.value = 1
    pulses = 0

    async def count():
        nonlocal pulses
        while True:
            await RisingEdge(dut.clk)
            pulses += int(dut.regs__start.value)

    counter = cocotb.start_soon(count())
    offset, one = regmap.writes({})[-1]
    assert (await host.write(offset, one.to_bytes(4, "little"))).resp == AxiResp.OKAY
    await ClockCycles(dut.clk, 4)
    counter.cancel()
    assert pulses == 1
    status = regmap.decode_status(await read("status"))
    assert status == {"done": 1, "error": 0, "busy": 0, "refused": 0}, status
