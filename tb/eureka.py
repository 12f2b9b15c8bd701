"""Testbenches for the Eureka sub-array and systolic array: planned runs, checked tile by tile.

The host plans a run (:mod:`sparseforge.sw.eureka_plan`): the block
records of the filter stream, each block's input slab and, for the
systolic array, the slot descriptors. The model
(:func:`sparseforge.sim.models.eureka.drained`) gives every block's output
tile. :class:`ArrayBench` drives filter beats and slabs into an
``eureka_array`` with random stalls, takes the tiles with random
back-pressure, compares every tile (in MAC-row order, with its rotation)
with the model's as it arrives, puts it in output-row order, and
counts the cycles the MACs computed; :class:`SystolicBench` does the same
for every systolic row of an ``eureka_systolic``, with the slot
descriptors as one more randomly stalled stream. Slabs, tiles and slot
descriptors are packed through the component's layouts; the filter beats are
the host encoder's words (:meth:`~sparseforge.sw.eureka_format.EurekaFormat.beats`
of the plan's records).
"""

from dataclasses import dataclass

import numpy as np

from ..sim.models import eureka as model
from ..sim.runners import cocotb_run, cocotb_test
from ..sw.eureka_format import EurekaFormat
from ..sw.eureka_plan import SystolicPlan
from ..sw.wire import ROWS
from .streams import Bench, Codec, Static

STREAMS = ("filter", "inputs", "outputs", "slots")


@dataclass(frozen=True)
class ArrayResult:
    """What one run of an ``eureka_array`` produced.

    ``busy``: cycles the MACs computed; ``span``: cycles from the first
    computing cycle to the last filter beat's acceptance; ``drained``: to the
    last tile's (``span`` and the array's latency, when nothing stalls);
    ``tiles``: tiles received; ``product``: W X (``[M][N]``) summed from them.
    """

    cycles: int
    busy: int
    span: int
    drained: int
    tiles: int
    product: list


@dataclass(frozen=True)
class SystolicResult:
    """What one run of an ``eureka_systolic`` produced: as :class:`ArrayResult`, ``busy``
    and ``tiles`` per systolic row, ``span`` up to the last slot's end."""

    cycles: int
    busy: list
    span: int
    drained: int
    tiles: list
    product: list


class Lane:
    """The streams of a sub-array (or of a systolic row): a plan's records and slabs in, tiles
    out, each checked against the model's as it arrives. Stream names start with ``prefix``."""

    def __init__(self, bench, run, prefix, rates):
        self.run = run
        acc, rotation = model.drained(run.placed, run.slabs, run.dense, ids=run.ids)
        self.expected = [{"tile": tile.tolist(), "rotation": int(r)}
                         for tile, r in zip(acc, rotation, strict=True)]
        slabs = bench.codecs[prefix + "inputs"]
        fmt = EurekaFormat(bench.component.fmt.compaction, bench.component.fmt.value_width)
        self.filter = bench.source_on(prefix + "filter", fmt.beats(run.records), rates["filter"])
        self.inputs = bench.source_on(prefix + "inputs",
                                      [slabs.pack(s.tolist()) for s in run.slabs],
                                      rates["inputs"])
        self.sink = bench.sink_on(prefix + "outputs", rates["outputs"], len(self.expected))
        bench.outputs[self.sink.name] = self.expected
        self.drivers = [self.filter, self.inputs, self.sink]
        self.received = []

    def check(self, bench):
        drained = self.sink.fired
        if drained is None:
            return
        i = len(self.received)
        if i >= len(self.expected):
            bench.fail(f"{self.sink.name}: a tile with no block outstanding")
        if drained != self.expected[i]:
            bench.fail(f"{self.sink.name} tile {i} (block {self.run.ids[i]}): got {drained}, "
                       f"model says {self.expected[i]}")
        tile = model.unrotate([drained["tile"]], [drained["rotation"]])[0]
        self.received.append(tile.tolist())

    @property
    def done(self):
        return len(self.received) == len(self.expected)

    def product(self):
        """This lane's share of W X, from the tiles the design returned."""
        columns = self.run.activations.shape[1]
        tiles = np.reshape(np.asarray(self.received, dtype=np.int64), (-1, ROWS, columns))
        return model.product(tiles, self.run.ids, self.run.grid, len(self.run.weights))


class _LanesBench(Bench):
    """A bench of :class:`Lane` s, one per computing flag in ``busy``, counting computing cycles."""

    def __init__(self, component, seed, rates):
        super().__init__(component, seed)
        self.rates = {**dict.fromkeys(STREAMS, 0.7), **(rates or {})}
        self.lanes = []
        self.busy = []
        self.first_busy = None

    def lane(self, run, prefix=""):
        self.lanes.append(Lane(self, run, prefix, self.rates))
        self.busy.append(0)
        return self.lanes[-1]

    def computing(self, io):
        """Per lane, whether its MACs compute on this cycle (from ``busy``)."""
        raise NotImplementedError

    def check(self, io, cycle):
        busy = self.computing(io)
        for r, lane in enumerate(self.lanes):
            self.busy[r] += busy[r]
            lane.check(self)
        if any(busy) and self.first_busy is None:
            self.first_busy = cycle

    def span_until(self, source):
        """Cycles from the first computing cycle to the last transfer on ``source``."""
        last = source.accepted[-1][0] if source.accepted else -1
        return 0 if self.first_busy is None else last - self.first_busy + 1

    def drained(self):
        """Cycles from the first computing cycle to the last tile taken."""
        last = max((lane.sink.received[-1][0] for lane in self.lanes if lane.sink.received),
                   default=-1)
        return 0 if self.first_busy is None else last - self.first_busy + 1

    def product(self):
        """W X assembled from every lane's tiles."""
        return sum(lane.product() for lane in self.lanes)

    def finished(self):
        return all(lane.done for lane in self.lanes)


class ArrayBench(_LanesBench):
    """Runs a :class:`~sparseforge.sw.eureka_plan.Plan` on ``component``, an ``eureka_array``.

    ``rates`` gives, per stream, the probability of acting on a cycle
    (``filter``, ``inputs`` sources; ``outputs`` sink).
    """

    def __init__(self, component, run, seed, rates=None):
        super().__init__(component, seed, rates)
        self.run = run
        lane = self.lane(run)
        self.drivers = [*lane.drivers, Static("dense", int(run.dense))]

    @property
    def received(self):
        """The tiles the design returned, as ``[4][N]`` lists in output-row order."""
        return self.lanes[0].received

    def computing(self, io):
        return [io.get("busy")]

    def result(self):
        return ArrayResult(self.cycle, self.busy[0], self.span_until(self.lanes[0].filter),
                           self.drained(), len(self.received), self.product().tolist())


class SystolicBench(_LanesBench):
    """Runs a :class:`~sparseforge.sw.eureka_plan.SystolicPlan` on ``component``, an
    ``eureka_systolic``: the slot descriptors, and every row's streams as :class:`ArrayBench`'s
    (``rates`` also for ``slots``)."""

    def __init__(self, component, run, seed, rates=None):
        super().__init__(component, seed, rates)
        self.run = run
        self.slots = self.source_on("slots", [counts.tolist() for counts in run.slots],
                                    self.rates["slots"])
        lanes = [self.lane(row, f"row__{r}__") for r, row in enumerate(run.rows)]
        self.drivers = [self.slots, *(d for lane in lanes for d in lane.drivers),
                        Static("dense", 0)]
        self.busy_bits = Codec(component.signature.members["busy"].shape)

    def computing(self, io):
        return self.busy_bits.unpack(io.get("busy"))

    def finished(self):
        return self.slots.done and super().finished()

    def result(self):
        return SystolicResult(self.cycle, list(self.busy), self.span_until(self.slots),
                              self.drained(), [len(lane.received) for lane in self.lanes],
                              self.product().tolist())


def _bench(component, args, seed):
    """The bench for ``args["plan"]``: an :class:`ArrayBench`, or a :class:`SystolicBench` for a
    :class:`~sparseforge.sw.eureka_plan.SystolicPlan`."""
    run = args["plan"]
    bench = SystolicBench if isinstance(run, SystolicPlan) else ArrayBench
    return bench(component, run, seed, args.get("rates"))


@cocotb_test
async def planned_run(dut):
    """A planned W X under random stalls on every stream; every tile checked."""
    await cocotb_run(dut, _bench)
