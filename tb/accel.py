"""The accelerator's bench: the host's side of a run, on Amaranth's simulator.

The host lays out the run's memory (:mod:`sparseforge.sw.accel_image`) in an AXI4 slave
(:class:`~sparseforge.tb.axi.AxiMemory`: random readiness, delays, answers out of order
across IDs with their beats interleaved, every burst checked), writes the run's
registers over AXI4-Lite (:class:`~sparseforge.tb.axi.LiteHost`), starts it and polls
``status`` until done; then reads the counters and Y from memory.
"""

import random
from dataclasses import dataclass

import numpy as np

from ..sw import accel_image, regmap
from .axi import AxiMemory, LiteHost, Pins


@dataclass(frozen=True)
class AccelRun:
    """A run's output ``y``, its ``cycles`` (the accelerator's count), the memory
    traffic it counted, the entries it refetched and its ``status`` fields."""

    y: np.ndarray
    cycles: int
    bytes_read: int
    bytes_written: int
    refetched: int
    status: dict


def params_of(config):
    """The ``accel`` block's parameters for a host :class:`~sparseforge.sw.accel_plan.
    AccelConfig`."""
    return {"pes": config.pes, "cols": config.cols, "vlen": config.vlen, "tlen": config.tlen,
            "spm_rows": config.spm_rows, "out_rows": config.out_rows, "depth": config.depth,
            "fifo": config.fifo, "dw": config.dw, "iw": config.iw,
            "acc_width": config.acc_width}


def pysim(dut, plan, matrix, b, seed, limit=200_000, rates=None):
    """Run ``plan`` (of ``matrix @ b``) through ``dut`` (an ``accel``) on Amaranth's
    simulator: the :class:`AccelRun`. A run not done after ``limit`` reads of ``status``
    (a few cycles each) fails."""
    from amaranth.sim import Simulator

    image, regions = accel_image.image(plan, matrix, b)
    memory = AxiMemory(Pins(dut.m_axi), dut.data, len(image), random.Random(seed),
                       rates=rates or dict.fromkeys(("ar", "aw", "w", "r", "b"), 0.7))
    memory.memory[:] = image.tobytes()
    regs = regmap.by_name()
    found = {}

    async def serve(ctx):
        while True:
            memory.drive(ctx)
            memory.sample(ctx)
            await ctx.tick()

    async def host(ctx):
        bus = LiteHost(ctx, dut.s_axil)
        for offset, value in regmap.writes(accel_image.registers(plan, regions)):
            assert await bus.write(offset, value) == 0, f"register at {offset:#x} refused"
        for _ in range(limit):
            word, _ = await bus.read(regs["status"].offset)
            status = regmap.decode_status(word)
            if status["done"] and not status["busy"]:
                break
        else:
            raise AssertionError(f"accel: not done after {limit} polls: a hang")
        found["status"] = status
        for name in ("cycles", "bytes_read", "bytes_written", "refetched"):
            found[name] = (await bus.read(regs[name].offset))[0]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(serve, background=True)
    sim.add_testbench(host)
    sim.run()
    y = accel_image.output(plan, np.frombuffer(bytes(memory.memory), dtype=np.uint8), regions)
    return AccelRun(y, found["cycles"], found["bytes_read"], found["bytes_written"],
                    found["refetched"], found["status"])
