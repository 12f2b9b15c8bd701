# amaranth: UnusedElaboratable=no
"""The accelerator's benches: the host's side of a run.

The host lays out the run's memory (:mod:`sparseforge.sw.accel_image`) in an AXI4 slave,
writes the run's registers over AXI4-Lite, starts it and polls ``status`` until done;
then reads the counters, and Y from memory.

- :func:`simulate` (native, Verilator): :class:`AccelBench` runs an
  :class:`AccelHarness`, the accelerator with a :class:`~sparseforge.hw.lite_host.
  LiteHost` taking the host's register commands as a stream, its memory
  :class:`~sparseforge.tb.axi_native.AxiDram` (DDR4 timing, random readiness, answers
  out of order across IDs, beats interleaved). One build serves every run of a
  configuration, and its Verilog is generated once (kept by the accelerator's
  parameters): the matrix, B and the plan are images read at run time.
- :func:`pysim` (Amaranth's simulator): the checking :class:`~sparseforge.tb.axi.AxiMemory`
  and the host as a Python coroutine (:class:`~sparseforge.tb.axi.LiteHost`).
"""

import random
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..hw.compose.accel import Accel
from ..hw.lite_host import LiteOp
from ..sw import accel_eureka, accel_image, accel_spgemm, regmap
from . import native
from .axi import AxiMemory, LiteHost, Pins
from .axi_native import AxiDram
from .lite_host import HostedRegisters
from .streams import Bench

COUNTERS = ("cycles", "bytes_read", "bytes_written", "refetched", "status")
"""The registers the host reads after a run, in order."""
DRAM_BURSTS = ("dram_reads", "dram_writes", "shared_reads", "shared_writes")
"""The memory's DRAM bursts (:class:`~sparseforge.tb.axi_native.AxiRun`) a run reports."""


@dataclass(frozen=True)
class AccelRun:
    """A run's output ``y`` (SpGEMM's C: a CSR), its ``cycles`` (the accelerator's
    count), the memory traffic it counted, the entries it refetched, its ``status``
    fields and ``dram``: the DRAM bursts its reads and writes took on the memory's data
    bus and those answered with the burst before (:data:`DRAM_BURSTS`; 0 on Amaranth's
    simulator, whose memory has no DRAM)."""

    y: np.ndarray
    cycles: int
    bytes_read: int
    bytes_written: int
    refetched: int
    status: dict
    dram: dict = field(default_factory=dict)

    def fault(self, golden, name="Y"):
        """Why the run is not ``golden`` (a dense array, or a CSR for SpGEMM's C): the
        status's error, or the first element of ``y`` unlike it, named ``name``; None
        where the run equals it."""
        if self.status["error"]:
            return "status.error set"
        if sp.issparse(golden):
            wrong = np.transpose((self.y != golden).nonzero())
        elif np.array_equal(self.y, golden):
            return None
        else:
            wrong = np.argwhere(self.y != golden)
        if not len(wrong):
            return None
        at = tuple(int(i) for i in wrong[0])
        return (f"{name}({', '.join(map(str, at))}) is {self.y[at]}, the golden "
                f"{golden[at]}")


def host_of(plan):
    """The host module of ``plan``'s kernel (its ``image``, ``registers`` and ``output``):
    :mod:`~sparseforge.sw.accel_spgemm` for SpGEMM, :mod:`~sparseforge.sw.accel_eureka`
    for pruned GEMM, else :mod:`~sparseforge.sw.accel_image`."""
    return {"spgemm": accel_spgemm, "pruned-gemm": accel_eureka}.get(plan.kernel,
                                                                     accel_image)


def params_of(config):
    """The ``accel`` block's parameters for a host :class:`~sparseforge.sw.accel_plan.
    AccelConfig` (a Tensaurus build), :class:`~sparseforge.sw.accel_spgemm.SpgemmConfig`
    (a Gustavson build) or :class:`~sparseforge.sw.accel_eureka.EurekaConfig` (an Eureka
    build)."""
    if isinstance(config, accel_eureka.EurekaConfig):
        return {"engine": "eureka", "compaction": config.compaction, "cols": config.cols,
                "dw": config.dw, "iw": config.iw, "acc_width": config.acc_width}
    if isinstance(config, accel_spgemm.SpgemmConfig):
        return {"engine": "gustavson", "pes": config.pes, "tile_cols": config.tile_cols,
                "lanes": config.lanes, "inflight": config.inflight, "dw": config.dw,
                "iw": config.iw, "acc_width": config.acc_width, "buffer": config.buffer,
                "cursors": config.cursors}
    return {"pes": config.pes, "cols": config.cols, "vlen": config.vlen, "tlen": config.tlen,
            "spm_rows": config.spm_rows, "out_rows": config.out_rows, "depth": config.depth,
            "fifo": config.fifo, "dw": config.dw, "iw": config.iw,
            "acc_width": config.acc_width, "order": config.order}


def pysim(dut, plan, matrix, b, seed, limit=200_000, rates=None):
    """Run ``plan`` (of ``matrix @ b``; SpMTTKRP's of a tensor ``matrix`` and factors
    ``b``, ``(B, C)``) through ``dut`` (an ``accel``) on Amaranth's simulator: the
    :class:`AccelRun`. A run not done after ``limit`` reads of ``status``
    (a few cycles each) fails."""
    return pysim_runs(dut, [(plan, matrix, b)], seed, limit, rates)[0]


def pysim_runs(dut, runs, seed, limit=200_000, rates=None):
    """:func:`pysim`'s runs ``[(plan, matrix, b), ...]`` one after another on one
    simulation of ``dut``, never reset between them: before each the host writes the
    run's memory image over the memory (the runs' regions may coincide) and programs its
    registers. Their :class:`AccelRun` s."""
    from amaranth.sim import Simulator

    images = [host_of(plan).image(plan, matrix, b) for plan, matrix, b in runs]
    memory = AxiMemory(Pins(dut.m_axi), dut.data, max(len(i) for i, _ in images),
                       random.Random(seed),
                       rates=rates or dict.fromkeys(("ar", "aw", "w", "r", "b"), 0.7))
    regs = regmap.by_name()
    found = []

    async def serve(ctx):
        while True:
            memory.drive(ctx)
            memory.sample(ctx)
            await ctx.tick()

    async def host(ctx):
        bus = LiteHost(ctx, dut.s_axil)
        for (plan, _, _), (image, regions) in zip(runs, images, strict=True):
            memory.memory[:len(image)] = image.tobytes()
            for offset, value in regmap.writes(host_of(plan).registers(plan, regions)):
                assert await bus.write(offset, value) == 0, f"register at {offset:#x} refused"
            for _ in range(limit):
                word, _ = await bus.read(regs["status"].offset)
                status = regmap.decode_status(word)
                if status["done"] and not status["busy"]:
                    break
            else:
                raise AssertionError(f"accel: not done after {limit} polls: a hang")
            read = {"status": status}
            for name in ("cycles", "bytes_read", "bytes_written", "refetched"):
                read[name] = (await bus.read(regs[name].offset))[0]
            y = host_of(plan).output(plan, np.frombuffer(bytes(memory.memory), dtype=np.uint8),
                                     regions)
            found.append(AccelRun(y, read["cycles"], read["bytes_read"],
                                  read["bytes_written"], read["refetched"], read["status"]))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(serve, background=True)
    sim.add_testbench(host)
    sim.run()
    return found


class AccelHarness(HostedRegisters):
    """An ``accel`` of ``params`` with the gateware host on its registers
    (:class:`~.lite_host.HostedRegisters`): the host's commands in (``commands``), their
    responses out (``responses``), memory on ``m_axi``."""

    def __init__(self, **params):
        super().__init__(Accel(**params), passed=("m_axi",))

    @property
    def design(self):
        """The accelerator's parameters: the harness adds no state of its own."""
        return super().design


def commands(plan, regions):
    """The host's commands for a run: its register writes, ``start`` last, a wait for
    ``status.done``, then a read of each of :data:`COUNTERS`."""
    regs = regmap.by_name()
    done = next(f for f in regs["status"].fields if f.name == "done")
    out = [{"op": LiteOp.WRITE, "addr": offset, "data": value}
           for offset, value in regmap.writes(host_of(plan).registers(plan, regions))]
    out.append({"op": LiteOp.WAIT, "addr": regs["status"].offset, "data": 1 << done.lsb})
    out += [{"op": LiteOp.READ, "addr": regs[name].offset, "data": 0} for name in COUNTERS]
    return out


class AccelBench(Bench):
    """A run of ``plan`` (``matrix @ b``) through an :class:`AccelHarness`, its memory
    answering with ``rates`` on its channels, ``latency`` cycles added to every access."""

    patience = 20_000

    def __init__(self, component, plan, matrix, b, seed, rates=None, latency=0):
        super().__init__(component, seed)
        self.plan = plan
        image, self.regions = host_of(plan).image(plan, matrix, b)
        self.commands = commands(plan, self.regions)
        self.memory = AxiDram(self, "m_axi", image.tobytes(), rates=rates, capacity=1 << 24,
                              latency=latency)
        self.drivers = [self.source_on("commands", self.commands, 1.0),
                        self.sink_on("responses", 1.0, len(self.commands)), self.memory]

    def from_outputs(self, cycles, outputs):
        responses = outputs["responses"]
        bad = [(c, r) for c, r in zip(self.commands, responses, strict=True) if r["resp"]]
        if bad:
            raise AssertionError(f"register access at {bad[0][0]['addr']:#x} answered "
                                 f"{bad[0][1]['resp']}")
        read = dict(zip(COUNTERS, (r["data"] for r in responses[-len(COUNTERS):]),
                        strict=True))
        memory = self.memory.result()
        y = host_of(self.plan).output(self.plan, np.frombuffer(memory.image, dtype=np.uint8),
                                      self.regions)
        return AccelRun(y, read["cycles"], read["bytes_read"], read["bytes_written"],
                        read["refetched"], regmap.decode_status(read["status"]),
                        {k: getattr(memory, k) for k in DRAM_BURSTS})


def simulate(component, plan, matrix, b, seed, rates=None, engine="native", work_dir=None,
             progress=None, latency=0):
    """The :class:`AccelRun` of ``plan`` through ``component`` (an :class:`AccelHarness`)."""
    bench = AccelBench(component, plan, matrix, b, seed, rates, latency)
    return native.simulate(bench, engine, work_dir, progress)
