"""Testbench for the Tailor: directed programs and overbooked tiles, checked every cycle.

Two ways to drive it, one scoreboard (:class:`TailorScoreboard`, the Buffet's
extended with the FIFO region's ports):

- :class:`ProgramBench` runs a list of operations strictly in order, each
  one presented only after the one before it was accepted: the paper's Fig. 5
  sequence, and other directed cases.
- :class:`TileBench` plays a parent and a child over a series of tiles, as
  an accelerator would, from the host's plan
  (:mod:`sparseforge.sw.tailor_plan`, written from the protocol alone, not
  from the model that checks the design): the parent fills each tile and,
  when it overbooks, streams the bumped part once per pass with ``owfill``
  within ``fifo_credits``; the child reads each pass in index order (a random
  subset that always includes the tile's last element), may free the head of
  the tile between passes with a partial shrink, and ends the tile with a
  shrink of the whole buffer.

Every cycle the accepted operations, and the index of a read presented but
not accepted, go to the model (:class:`sparseforge.sim.models.tailor.Tailor`),
which rejects illegal ones; occupancy, credits, ``fifo_credits`` and every
read response are compared with it, and each response also with the tile's
true element at that index.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..sim.models.tailor import Tailor as TailorModel
from ..sim.runners import cocotb_run, cocotb_test
from ..sw.tailor_plan import plan_tiles
from .buffet import FILL, READ, SHRINK, UPDATE, BufferResult, BuffetScoreboard, port
from .streams import Columns

OWFILL = "owfill"


@dataclass(frozen=True)
class TailorResult(BufferResult):
    """A buffer's result, and the overwriting fills the parent sent."""

    owfills: int

    @property
    def transfers(self):
        """Parent-to-buffer transfers: accepted fills and overwriting fills."""
        return self.fills + self.owfills


def random_tiles(rng, depth, fifo, ratios, passes, skip=0.0, shrink=0.0):
    """Tiles of occupancy ``ratio * depth`` for each ratio, each read ``passes`` times.

    ``skip`` is the chance the child skips an element in a pass (never the
    last); ``shrink`` the chance it frees up to ``(depth - fifo) / 4`` elements
    from the head after a pass (at most twice per tile). Returns dicts with
    ``length``, ``passes``, ``reads`` (one index list per pass, indices as
    they are after the earlier shrinks) and ``shrinks`` (pass -> count); a
    tile may also carry its ``values`` (else the bench draws them).
    """
    tiles = []
    most = max(1, (depth - fifo) // 4)
    for ratio in ratios:
        length = max(1, round(ratio * depth))
        shrinks, reads, gone = {}, [], 0
        for k in range(passes):
            left = length - gone
            reads.append([i for i in range(left) if i == left - 1 or rng.random() >= skip])
            if k < passes - 1 and len(shrinks) < 2 and left > most and rng.random() < shrink:
                shrinks[k] = rng.randint(1, most)
                gone += shrinks[k]
        tiles.append({"length": length, "passes": passes, "reads": reads, "shrinks": shrinks})
    return tiles


class TailorScoreboard(BuffetScoreboard):
    """The Buffet's scoreboard with the Tailor's ports: ``owfill``, ``fifo_credits``.

    Besides the model's answer, each read response is checked against the
    tile's true element where the bench knows it (``self.truth``, per read).
    """

    PORTS = (FILL, OWFILL, READ, UPDATE, SHRINK)

    def __init__(self, component, seed, rates=None):
        super().__init__(component, TailorModel(component.depth, component.fifo), seed, rates)
        self.fifo = component.fifo
        self.truth = []

    def compare(self, io):
        super().compare(io)
        got = io.get(port("fifo_credits"))
        if got != self.model.fifo_credits:
            self.fail(f"fifo_credits {got} != model {self.model.fifo_credits}")

    def operations(self):
        ops = super().operations()
        if ops[OWFILL] is not None:
            ops[OWFILL] = (ops[OWFILL]["data"], ops[OWFILL]["last"])
        read = self.sources[READ]
        if read.fired is None and read.presenting:     # a stalled read passes the stream too
            ops["request"] = read.item(read.next)
        return ops

    def expect(self, data):
        super().expect((data, self.truth[self.sources[READ].next - 1]))

    def respond(self, got, want):
        want, true = want
        super().respond(got, want)
        if true is not None and got != true:
            self.fail(f"read response {self.responses}: got {got:#x}, the tile holds {true:#x}")

    def result(self):
        return TailorResult(**vars(super().result()),
                            owfills=len(self.sources[OWFILL].accepted))


class ProgramBench(TailorScoreboard):
    """Runs ``program`` (``(kind, arg)`` pairs) strictly in order.

    ``arg`` is a value for fill, ``(value, last)`` for owfill, an index for
    read, ``(index, value)`` for update and a count for shrink.
    """

    def __init__(self, component, program, seed, rates=None):
        super().__init__(component, seed, rates)
        streams = {kind: [] for kind in self.PORTS}
        order = {kind: [] for kind in self.PORTS}     # per item: its place in the program
        for n, (kind, arg) in enumerate(program):
            if kind == OWFILL:
                arg = {"data": arg[0], "last": int(arg[1])}
            elif kind == UPDATE:
                arg = {"index": arg[0], "data": arg[1]}
            streams[kind].append(arg)
            order[kind].append(n)
        self.truth = [None] * len(streams[READ])
        for kind in self.PORTS:
            self.sources[kind] = self.source_on(port(kind), streams[kind], self.rates[kind],
                                                gate=self._after_previous(order[kind]))
        self.reads = len(streams[READ])
        self.drivers = [*self.sources.values(), self.sink]

    def _after_previous(self, places):
        def gate(n):
            done = sum(len(s.accepted) for s in self.sources.values())
            return done == places[n]
        return gate


def parent_sources(bench, plan, shrinks):
    """The parent's ``fill`` and ``owfill`` sources of ``plan`` on ``bench``.

    ``shrinks`` names what counts the child's shrinks: its own stream, or a
    pulse counter where the child is inside the design.
    """
    owfills = Columns({"data": plan.owfill_data, "last": plan.owfill_last})
    return {
        FILL: bench.source_on(port(FILL), plan.fill_value, bench.rates[FILL],
                              {shrinks: plan.fill_after_shrinks}),
        OWFILL: bench.source_on(port(OWFILL), owfills, bench.rates[OWFILL],
                                {port(FILL): plan.owfill_after_fills,
                                 shrinks: plan.owfill_after_shrinks},
                                credits=(port("fifo_credits"), plan.owfill_credits)),
    }


class TileBench(TailorScoreboard):
    """A parent and a child working through ``tiles`` (see :func:`random_tiles`).

    The streams are the host's plan (:func:`~sparseforge.sw.tailor_plan.plan_tiles`),
    every item gated by the counts of the streams it waits for and, for an
    overwriting fill, by ``fifo_credits``; a tile without ``values`` gets
    random ones of the Tailor's width.
    """

    def __init__(self, component, tiles, seed, rates=None):
        super().__init__(component, seed, rates)
        tiles = [t if t.get("values") is not None else
                 {**t, "values": [self.rng.getrandbits(component.width)
                                  for _ in range(t["length"])]} for t in tiles]
        longest = max((t["length"] for t in tiles), default=0)
        if longest > 1 << len(component.child.read.payload):
            raise ParameterError(f"a tile of {longest} elements: longer than the Tailor's "
                                 f"tile = {1 << len(component.child.read.payload)}")
        for t, tile in enumerate(tiles):
            values = np.asarray(tile["values"])
            if values.size and (values.min() < 0 or values.max() >> component.width):
                raise ParameterError(f"tile {t}: a value does not fit the Tailor's width "
                                     f"{component.width}")
        plan = self.plan = plan_tiles(tiles, self.depth, self.fifo)
        self.truth = plan.read_truth
        self.sources = {
            **parent_sources(self, plan, port(SHRINK)),
            READ: self.source_on(port(READ), plan.read_index, self.rates[READ],
                                 {port(SHRINK): plan.read_after_shrinks}),
            SHRINK: self.source_on(port(SHRINK), plan.shrink_count, self.rates[SHRINK],
                                   {port(READ): plan.shrink_after_reads}),
            UPDATE: self.source_on(port(UPDATE), [], self.rates[UPDATE]),
        }
        self.reads = self.sink.expected = len(self.truth)
        self.outputs = {port("read_data"): plan.read_truth}
        self.drivers = [*self.sources.values(), self.sink]

    @property
    def tiles_done(self):
        """Tiles the child has ended with its shrink of the whole buffer."""
        return int(self.plan.shrink_ends_tile[:len(self.sources[SHRINK].accepted)].sum())


def _tile_bench(component, args, seed):
    """The tiles in the arguments, or random ones (``ratios``, ``passes``, ``skip``, ``shrink``)."""
    import random

    tiles = args.get("tiles") or random_tiles(
        random.Random(seed), component.depth, component.fifo,
        args.get("ratios", [0.5, 1, 1.5, 2, 4]), args.get("passes", 3), args.get("skip", 0.2),
        args.get("shrink", 0.3))
    return TileBench(component, tiles, seed, args.get("rates"))


@cocotb_test
async def overbooked_tiles(dut):
    """Tiles from half to four times the capacity, several passes, random stalls."""
    await cocotb_run(dut, _tile_bench)
