"""Testbench for the SpMV engine (``spmv_tailor``): y from the hardware, checked row by row.

The bench plays the Tailor's parent (:class:`~sparseforge.tb.tailor.TailorParent`,
written from the protocol, not from the model) on the engine's parent-side
ports and feeds A's stream (:func:`~sparseforge.sw.traces.spmv_stream`); the
MAC inside is the child. The parent learns that a tile ended from ``credit``
(the MAC's only shrink frees the whole buffer, which the bench checks).
Every stream stalls at random. Each y is checked against scipy's A·x
(``golden``) and the chained model (:func:`~sparseforge.sim.models.spmv.spmv_tailor`).
"""

from dataclasses import dataclass

import numpy as np
from amaranth.utils import ceil_log2

from ..sim.models.spmv import spmv_tailor
from ..sim.runners import cocotb_run, cocotb_test
from .streams import Bench
from .tailor import FILL, OWFILL, TailorParent

A, Y = "a", "y"


@dataclass(frozen=True)
class SpmvResult:
    """What one run of the engine produced."""

    cycles: int
    y: list            # one per row of A's stream, as the hardware emitted them
    fills: int
    owfills: int


class SpmvBench(Bench):
    """The parent and A's stream for ``tiles`` (a :class:`~sparseforge.sw.traces.TileTrace`'s).

    ``component`` is the engine; ``stream`` is A's stream over those tiles
    and ``golden`` scipy's y at ``stream.rows``.
    """

    def __init__(self, component, tiles, stream, golden, seed, rates=None):
        super().__init__(component, seed)
        self.rates = {**dict.fromkeys((FILL, OWFILL, A, Y), 0.7), **(rates or {})}
        self.depth, self.fifo = component.tailor.depth, component.tailor.fifo
        values = [t["values"] for t in tiles]
        model = spmv_tailor(self.depth, self.fifo, values, stream.entries())
        self.expected = list(zip(np.asarray(golden).tolist(), model, strict=True))
        self.parent = TailorParent(self, [(t["length"], t["passes"], v)
                                          for t, v in zip(tiles, values, strict=True)],
                                   self.rates)
        words = stream.words(ceil_log2(component.tailor.tile), component.mac.value_width)
        self.sources = {FILL: self.parent.fill, OWFILL: self.parent.owfill,
                        A: self.source_on(A, words.tolist(), self.rates[A])}
        self.sink = self.sink_on(Y, self.rates[Y])
        self.y = []
        self.drivers = [*self.sources.values(), self.sink]

    @property
    def tiles_done(self):
        return self.parent.tile

    def check(self, io, cycle):
        credit = io.get("credit")
        if credit and credit != self.parent.holds:
            self.fail(f"credit {credit} after tile {self.tiles_done}: the buffer held "
                      f"{self.parent.holds}")
        self.parent.observe(io)
        if self.sink.fired is not None:
            y = self.sink.fired
            if len(self.y) == len(self.expected):
                self.fail(f"y {y} beyond the {len(self.expected)} rows")
            golden, model = self.expected[len(self.y)]
            if y != golden or y != model:
                self.fail(f"y of row {len(self.y)}: {y}, scipy says {golden}, model {model}")
            self.y.append(y)

    def finished(self):
        return len(self.y) == len(self.expected) and all(s.done for s in self.sources.values())

    def result(self):
        return SpmvResult(self.cycle, self.y, len(self.sources[FILL].accepted),
                          len(self.sources[OWFILL].accepted))


@cocotb_test
async def spmv(dut):
    """A's stream through the engine under random stalls; every y checked."""
    await cocotb_run(dut, lambda component, args, seed: SpmvBench(
        component, args["tiles"], args["stream"], args["golden"], seed, args.get("rates")))
