"""Testbench for the SpMV engine (``spmv_tailor``): y from the hardware, checked row by row.

The bench plays the Tailor's parent on the engine's parent-side ports, from
the host's plan (:mod:`sparseforge.sw.tailor_plan`, written from the
protocol, not from the model), and feeds A's stream
(:func:`~sparseforge.sw.traces.spmv_stream`); the MAC inside is the child.
The parent learns that a tile ended from ``credit`` (the MAC's only shrink
frees the whole buffer, whose count the bench checks).
Every stream stalls at random. Each y is checked against scipy's A·x
(``golden``) and the chained model (:func:`~sparseforge.sim.models.spmv.spmv_tailor`).
"""

from dataclasses import dataclass

import numpy as np

from ..sim.models.spmv import spmv_tailor
from ..sim.runners import cocotb_run, cocotb_test
from ..sw.tailor_plan import plan_tiles
from .buffet import MemberStalls, port
from .streams import Columns
from .tailor import FILL, OWFILL, parent_sources

A, Y, CREDIT = "a", "y", port("credit")


@dataclass(frozen=True)
class SpmvResult:
    """What one run of the engine produced."""

    cycles: int
    y: list            # one per row of A's stream, as the hardware emitted them
    fills: int
    owfills: int


class SpmvBench(MemberStalls):
    """The parent and A's stream for ``tiles`` (a :class:`~sparseforge.sw.traces.TileTrace`'s).

    ``component`` is the engine; ``stream`` is A's stream over those tiles
    and ``golden`` scipy's y at ``stream.rows``. The parent's streams are the
    host's plan (:func:`~sparseforge.sw.tailor_plan.plan_tiles`); the MAC's
    shrinks, which end the tiles, reach it as the nonzero ``credit`` pulses.
    """

    def __init__(self, component, tiles, stream, golden, seed, rates=None):
        super().__init__(component, seed)
        self.rates = {**dict.fromkeys((FILL, OWFILL, A, Y), 0.7), **(rates or {})}
        self.depth, self.fifo = component.tailor.depth, component.tailor.fifo
        model = spmv_tailor(self.depth, self.fifo, [t["values"] for t in tiles],
                            stream.entries())
        self.expected = list(zip(np.asarray(golden).tolist(), model, strict=True))
        plan = self.plan = plan_tiles(tiles, self.depth, self.fifo)
        self.ends = self.pulses_on(CREDIT)
        self.sources = {
            **parent_sources(self, plan, CREDIT),
            A: self.source_on(A, Columns({"index": stream.index, "value": stream.value,
                                          "row_end": stream.row_end,
                                          "tile_end": stream.tile_end}), self.rates[A]),
        }
        self.sink = self.sink_on(Y, self.rates[Y], expected=len(self.expected))
        self.outputs = {Y: np.asarray(golden)}
        self.y = []
        self.drivers = [*self.sources.values(), self.sink, self.ends]

    @property
    def tiles_done(self):
        return self.ends.count

    def check(self, io, cycle):
        credit = io.get(CREDIT)
        if credit and credit != self.plan.shrink_count[self.ends.count - 1]:
            self.fail(f"credit {credit} at the end of tile {self.ends.count - 1}: the "
                      f"buffer held {self.plan.shrink_count[self.ends.count - 1]}")
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
