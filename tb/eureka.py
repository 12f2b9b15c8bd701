"""Testbenches for the Eureka sub-array and systolic array: real pruned layers times
activation tiles.

The host software plans a run (:func:`plan`): compaction, optimal SUDS and
rotation (or the dense placement), the block records of the filter stream,
and each block's input slab; the model
(:mod:`sparseforge.sim.models.eureka`) gives every block's output tile.
:class:`ArrayBench` drives records and slabs into the array with random
stalls, takes the tiles with random back-pressure, compares every tile with
the model's as it arrives, and counts the cycles the MACs computed.
:meth:`ArrayBench.product` sums the tiles into W X for comparison with numpy.

:class:`SystolicBench` does the same for every systolic row of an
``eureka_systolic``, with the systolic schedule's slot descriptors
(:func:`systolic_plan`) as one more randomly stalled stream.

Empty blocks (no nonzero) are not sent: they cost the optimal schedule no
cycle. The dense mode runs every block, with no column metadata in the
stream (the array must select input row t on cycle t itself).
"""

from dataclasses import dataclass, replace

import numpy as np

from ..sim.models import eureka as model
from ..sim.runners import cocotb_test
from ..sw.compaction import compact
from ..sw.eureka_format import EurekaFormat
from ..sw.suds import displace, in_place, optimal
from .streams import Bench, StreamSink, StreamSource


def pack(values, width):
    """Signed ``values`` (any shape, row-major) as one int, element i at bits i*width."""
    mask = (1 << width) - 1
    word = 0
    for i, v in enumerate(np.asarray(values, dtype=np.int64).ravel().tolist()):
        word |= (v & mask) << (i * width)
    return word


def unpack(word, shape, width):
    """The inverse of :func:`pack`: an int64 array of ``shape``."""
    mask, sign = (1 << width) - 1, 1 << (width - 1)
    count = int(np.prod(shape))
    flat = [(((word >> (i * width)) & mask) ^ sign) - sign for i in range(count)]
    return np.array(flat, dtype=np.int64).reshape(shape)


@dataclass(frozen=True, eq=False)
class Plan:
    """One run of W X on the array: what is sent and what must come back.

    Attributes
    ----------
    weights : [M, K] int64, activations : [K, N] int64.
    grid : block grid of W.
    ids : [nsent] block numbers sent, in order.
    records : filter records (ints), slabs : [nsent, 4P, N] input slabs.
    tiles : [nsent, 4, N] the model's output tiles.
    block_cycles : [nsent] each sent block's critical path.
    cycles : the host model's cycles: their sum.
    dense : run in dense mode.
    """

    weights: np.ndarray
    activations: np.ndarray
    grid: tuple
    ids: np.ndarray
    records: list
    slabs: np.ndarray
    tiles: np.ndarray
    block_cycles: np.ndarray
    cycles: int
    dense: bool


def plan(weights, activations, compaction, value_width=8, dense=False, send_empty=False):
    """Plan W X (``weights`` int M x K, scipy or dense; ``activations`` int K x N).

    ``send_empty`` also sends the empty blocks (each passes in one cycle).
    """
    compacted = compact(weights, compaction)
    if dense:
        # Dense mode needs no metadata: send zero columns so the array must count.
        placed = in_place(compacted)
        placed = replace(placed, columns=np.zeros_like(placed.columns))
    else:
        placed = displace(compacted, optimal(compacted.counts))
    sent = dense or send_empty
    ids = np.arange(len(placed.cycles)) if sent else np.flatnonzero(placed.cycles)
    slabs = model.slabs_for(placed, activations, compacted.grid)
    tiles = model.tiles(placed, slabs, dense=dense)
    records = EurekaFormat(compaction, value_width).records(placed)
    dense_weights = weights.toarray() if hasattr(weights, "toarray") else np.asarray(weights)
    return Plan(weights=dense_weights.astype(np.int64),
                activations=np.asarray(activations, dtype=np.int64), grid=compacted.grid,
                ids=ids, records=[records[i] for i in ids], slabs=slabs[ids],
                tiles=tiles[ids], block_cycles=placed.cycles[ids],
                cycles=int(placed.cycles[ids].sum()), dense=dense)


class Static:
    """Holds an input port at a constant (a mode pin), from reset on."""

    def __init__(self, name, value):
        self.name, self.value = name, value

    def idle(self, io):
        io.set(self.name, self.value)

    def drive(self, io, cycle):
        io.set(self.name, self.value)

    def sample(self, io, cycle):
        pass


class Lane:
    """The filter, inputs and outputs streams of a sub-array (or a systolic row), fed from a
    :class:`Plan` and checked tile by tile against it. Port names start with ``prefix``."""

    def __init__(self, bench, run, prefix, act_width, acc_width, rates):
        self.run, self.acc_width = run, acc_width
        self.sources = {
            "filter": StreamSource(prefix + "filter", run.records,
                                   bench.stall(rates["filter"])),
            "inputs": StreamSource(prefix + "inputs", [pack(s, act_width) for s in run.slabs],
                                   bench.stall(rates["inputs"])),
        }
        self.sink = StreamSink(prefix + "outputs", bench.stall(rates["outputs"]))
        self.drivers = [*self.sources.values(), self.sink]
        self.received = []

    def check(self, bench):
        if self.sink.fired is None:
            return
        i = len(self.received)
        if i >= len(self.run.tiles):
            bench.fail(f"{self.sink.name}: a tile with no block outstanding")
        tile = unpack(self.sink.fired, self.run.tiles[i].shape, self.acc_width)
        if not np.array_equal(tile, self.run.tiles[i]):
            bench.fail(f"{self.sink.name} tile {i} (block {self.run.ids[i]}): got "
                       f"{tile.tolist()}, model says {self.run.tiles[i].tolist()}")
        self.received.append(tile)

    @property
    def done(self):
        return len(self.received) == len(self.run.tiles)

    def product(self):
        """This lane's share of W X, from the tiles the design returned."""
        return model.product(self.received, self.run.ids, self.run.grid,
                             len(self.run.weights))


class ArrayBench(Bench):
    """Runs a :class:`Plan` on an ``eureka_array``; checks each tile as it leaves.

    ``rates`` gives, per stream, the probability of acting on a cycle
    (``filter``, ``inputs`` sources; ``outputs`` sink). ``busy`` counts the
    cycles the MACs computed; ``span`` the cycles from the first computing
    cycle to the last record's acceptance.
    """

    def __init__(self, run, act_width, acc_width, seed, rates=None):
        super().__init__(seed)
        rates = {"filter": 0.7, "inputs": 0.7, "outputs": 0.7, **(rates or {})}
        self.run = run
        self.lane = Lane(self, run, "", act_width, acc_width, rates)
        self.sources = self.lane.sources
        self.drivers = [*self.lane.drivers, Static("dense", int(run.dense))]
        self.busy = 0
        self.first_busy = None

    @property
    def received(self):
        return self.lane.received

    def check(self, io, cycle):
        if io.get("busy"):
            self.busy += 1
            if self.first_busy is None:
                self.first_busy = cycle
        self.lane.check(self)

    def finished(self):
        return self.lane.done

    @property
    def span(self):
        last = self.sources["filter"].accepted[-1][0] if self.run.records else -1
        return 0 if self.first_busy is None else last - self.first_busy + 1

    def product(self):
        """W X assembled from the tiles the design returned."""
        return self.lane.product()


@dataclass(frozen=True, eq=False)
class SystolicPlan:
    """W X on ``rows`` systolic rows: the schedule's slots and one :class:`Plan` per row."""

    slots: list
    rows: list
    cycles: int
    bubbles: int


def systolic_plan(weights, activations, compaction, rows, value_width=8, scheduled=True):
    """Plan W X on a systolic array: optimal SUDS, then systolic scheduling (or in order).

    ``activations`` has 4 columns per sub-array of a systolic row.
    """
    from ..sw import systolic

    work = plan(weights, activations, compaction, value_width)
    cycles = np.zeros(work.grid[0] * work.grid[1], dtype=np.int64)
    cycles[work.ids] = work.block_cycles
    arrange = systolic.schedule if scheduled else systolic.in_order
    schedule = arrange(cycles.reshape(work.grid), rows)
    where = {int(b): i for i, b in enumerate(work.ids)}
    per_row = []
    for r in range(rows):
        ids = [int(b) for b in schedule.blocks[:, r].ravel() if b >= 0]
        sent = [where[b] for b in ids]
        per_row.append(replace(work, ids=np.array(ids, dtype=np.int64),
                               records=[work.records[i] for i in sent],
                               slabs=work.slabs[sent], tiles=work.tiles[sent],
                               block_cycles=cycles[ids], cycles=int(cycles[ids].sum())))
    counts = (schedule.blocks >= 0).sum(axis=2)  # [slots, rows]
    slots = [sum(int(c) << (2 * r) for r, c in enumerate(row)) for row in counts]
    return SystolicPlan(slots=slots, rows=per_row, cycles=schedule.cycles,
                        bubbles=schedule.bubbles)


class SystolicBench(Bench):
    """Runs a :class:`SystolicPlan` on an ``eureka_systolic``: slots, and every row's streams
    checked like :class:`ArrayBench`'s. ``busy`` counts each row's computing cycles; ``span``
    the cycles from the first computing cycle to the last slot's end."""

    def __init__(self, run, act_width, acc_width, seed, rates=None):
        super().__init__(seed)
        rates = {"filter": 0.7, "inputs": 0.7, "outputs": 0.7, "slots": 0.7, **(rates or {})}
        self.run = run
        self.lanes = [Lane(self, row, f"row__{r}__", act_width, acc_width, rates)
                      for r, row in enumerate(run.rows)]
        self.slots = StreamSource("slots", run.slots, self.stall(rates["slots"]))
        self.drivers = [self.slots, *(d for lane in self.lanes for d in lane.drivers),
                        Static("dense", 0)]
        self.busy = [0] * len(self.lanes)
        self.first_busy = None

    def check(self, io, cycle):
        busy = io.get("busy")
        for r, lane in enumerate(self.lanes):
            self.busy[r] += busy >> r & 1
            lane.check(self)
        if busy and self.first_busy is None:
            self.first_busy = cycle

    def finished(self):
        return self.slots.done and all(lane.done for lane in self.lanes)

    @property
    def span(self):
        last = self.slots.accepted[-1][0] if self.slots.accepted else -1
        return 0 if self.first_busy is None else last - self.first_busy + 1

    def product(self):
        """W X assembled from every row's tiles."""
        return sum(lane.product() for lane in self.lanes)


def real_slice(path, rows, cols, columns, seed):
    """Rows ``rows`` and columns ``cols`` (``[start, stop]``) of a real layer in int8, times
    seeded int8 activations ``[len(cols), columns]``."""
    from ..sw.layers import int8_layer

    weights = int8_layer(path, seed).tocsr()[slice(*rows), slice(*cols)]
    rng = np.random.default_rng([seed, 1])
    activations = rng.integers(-128, 128, size=(weights.shape[1], columns))
    return weights, activations


async def _run(dut):
    """Run the real-layer slice in the arguments on the sub-array or, when the parameters
    have ``rows``, on the systolic array; check W X and the cycle counts."""
    import json

    from ..sim.runners import cocotb_args, cocotb_loop, seed_from_env

    params, args = cocotb_args()
    seed = seed_from_env(args.get("seed", 1))
    columns = 4 * params.get("cols", 1)
    weights, activations = real_slice(args["layer"], args["rows"], args["cols"], columns, seed)
    widths = params["act_width"], params["acc_width"]
    if "rows" in params:
        run = systolic_plan(weights, activations, params["compaction"], params["rows"],
                            params["weight_width"], args.get("scheduled", True))
        bench = SystolicBench(run, *widths, seed, args.get("rates"))
        model = {"model_cycles": run.cycles, "model_bubbles": run.bubbles,
                 "work": [row.cycles for row in run.rows]}
        expected_busy = model["work"]
    else:
        run = plan(weights, activations, params["compaction"], params["weight_width"],
                   args.get("dense", False))
        bench = ArrayBench(run, *widths, seed, args.get("rates"))
        model = {"model_cycles": run.cycles, "blocks": len(run.ids)}
        expected_busy = run.cycles
    dut._log.info("%s: model %s, seed %d", dut._name, model, seed)
    cycles = await cocotb_loop(dut, bench)
    assert np.array_equal(bench.product(), weights.toarray() @ activations), "W X differs"
    assert bench.busy == expected_busy, f"RTL computed {bench.busy} cycles, model {model}"
    dut._log.info("%s: %d cycles, %s computing, span %d", dut._name, cycles, bench.busy,
                  bench.span)
    if args.get("dump"):
        with open(args["dump"], "w") as f:
            json.dump({"cycles": cycles, "busy": bench.busy, "span": bench.span, **model}, f)


@cocotb_test
async def real_layer_slice(dut):
    """A real pruned layer slice times int8 activations under random stalls."""
    await _run(dut)
