# amaranth: UnusedElaboratable=no
"""The stream primitives alone: the queue of each latency, the skid buffer and the FIFO beside
a pipeline pass every item once, in order, under random back-pressure; latencies and
capacities to the cycle; the round-robin arbiter of each kind against a reference model;
the lowest set bit against every input; as registered blocks, their Verilog lint-clean."""

import random

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.divider import DivMod
from sparseforge.hw.interfaces import divmod_layout
from sparseforge.hw.stream_units import (
    Beside,
    Offset,
    Queue,
    RoundRobin,
    Skid,
    Zip,
    any_of,
    at_most_one,
    lowest,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.tb.convert_rlc import UnitBench
from sparseforge.tb.dram import DramPort
from sparseforge.tb.streams import Bench, Static


def simulate(top, testbench):
    """Runs ``testbench`` against ``top`` on Amaranth's simulator."""
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def clocked(unit):
    """``unit`` inside a module with a clock domain, even where it has no state."""
    top = Module()
    top.submodules.unit = unit
    tick = Signal()
    top.d.sync += tick.eq(~tick)
    return top


# -- queue and skid ------------------------------------------------------------------------

QUEUES = [(2, 1, True), (5, 1, True), (3, 2, True), (7, 2, True), (5, 3, True),
          (18, 3, True), (4, 3, False), (9, 3, False)]


@pytest.mark.parametrize(("depth", "latency", "skid"), QUEUES)
@pytest.mark.parametrize("rate", [0.3, 0.7, 1.0])
def test_queue_passes_every_item_once_in_order_under_back_pressure(depth, latency, skid,
                                                                   rate):
    items = random.Random(depth).choices(range(1 << 12), k=200)
    queue = Queue(12, depth=depth, latency=latency, skid=skid)
    bench = UnitBench(queue, {"i": items}, {"o": len(items)}, seed_from_env(depth + latency),
                      rate)
    out = pysim(bench)
    assert out.outputs["o"] == items
    if rate == 1.0:                                       # one item a cycle
        assert out.cycles <= len(items) + latency + 2


def offered_after(component, taken):
    """Cycles from an item taken into an empty ``component`` to it offered, and how many
    items it takes while its output is never taken."""
    seen = {}

    async def bench(ctx):
        ctx.set(component.i.payload, 42)
        ctx.set(component.i.valid, 1)
        await ctx.tick()
        ctx.set(component.i.valid, 0)
        cycles = 1
        while not ctx.get(component.o.valid):
            await ctx.tick()
            cycles += 1
        seen["latency"] = cycles
        assert ctx.get(component.o.payload) == 42
        held = 1
        for k in range(taken):
            ctx.set(component.i.payload, k)
            ctx.set(component.i.valid, 1)
            held += ctx.get(component.i.ready)
            await ctx.tick()
        seen["held"] = held

    simulate(component, bench)
    return seen["latency"], seen["held"]


@pytest.mark.parametrize(("depth", "latency", "skid"), [*QUEUES, (2, 2, True), (4, 3, True)])
def test_queue_offers_an_item_after_its_latency_and_holds_depth(depth, latency, skid):
    assert offered_after(Queue(8, depth=depth, latency=latency, skid=skid), 24) == (latency, depth)


def test_skid_offers_an_item_the_next_cycle_and_holds_two():
    assert offered_after(Skid(8), 6) == (1, 2)


@pytest.mark.parametrize(("depth", "latency", "match"), [(4, 4, "latency=4"),
                                                         (1, 1, "depth=1"),
                                                         (1, 2, "depth=1"),
                                                         (3, 3, "depth=3")])
def test_queue_refuses_a_latency_or_depth_it_cannot_build(depth, latency, match):
    with pytest.raises(ValueError, match=match):
        Queue(8, depth=depth, latency=latency)


@pytest.mark.parametrize("rate", [0.5, 1.0])
def test_skid_passes_every_item_in_order_under_back_pressure(rate):
    items = list(range(300))
    out = pysim(UnitBench(Skid(16), {"i": items}, {"o": len(items)}, seed_from_env(5), rate))
    assert out.outputs["o"] == items
    if rate == 1.0:
        assert out.cycles <= 303


# -- the FIFO beside a pipeline --------------------------------------------------------------

class DividerBeside(wiring.Component):
    """A divide/modulo lane (a :class:`~sparseforge.hw.pipeline.Pipeline`) with a tag
    :class:`Beside` it, in either store: the unit under test."""

    def __init__(self, lockstep):
        self.divider, self.lockstep = DivMod(lanes=1, width=8), lockstep
        layout = data.StructLayout({"data": data.ArrayLayout(8, 1), "side": 8})
        out = data.StructLayout({"data": divmod_layout(1, 8), "side": 8})
        super().__init__({"enter": In(stream.Signature(layout)),
                          "leave": Out(stream.Signature(out)), "divisor": In(8)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.divider = divider = self.divider
        m.submodules.beside = beside = Beside(data.ArrayLayout(8, 1), divmod_layout(1, 8), 8,
                                              divider.latency, lockstep=self.lockstep)
        wiring.connect(m, beside.to_pipe, divider.dividends)
        wiring.connect(m, divider.results, beside.from_pipe)
        wiring.connect(m, wiring.flipped(self.enter), beside.enter)
        wiring.connect(m, beside.leave, wiring.flipped(self.leave))
        m.d.comb += divider.divisor.eq(self.divisor)
        return m


@pytest.mark.parametrize("rate", [0.4, 0.7, 1.0])
def test_beside_rejoins_each_result_with_its_side_alike_in_either_store(rate):
    rng = random.Random(2)
    items = [{"data": [x], "side": rng.randrange(256)} for x in
             (rng.randrange(256) for _ in range(200))]
    want = [{"data": [{"quotient": i["data"][0] // 7, "remainder": i["data"][0] % 7}],
             "side": i["side"]} for i in items]
    runs = [pysim(UnitBench(DividerBeside(lockstep), {"enter": items}, {"leave": 200},
                            seed_from_env(7), rate, static={"divisor": 7}))
            for lockstep in (False, True)]
    for out in runs:
        assert out.outputs["leave"] == want
    assert runs[0].cycles == runs[1].cycles          # the store does not change the flow
    if rate == 1.0:
        assert runs[0].cycles <= 200 + 8 + 2


def test_beside_needs_a_pipeline_of_two_cycles_for_its_fifo():
    with pytest.raises(ValueError, match="latency=1"):
        Beside(8, 8, 8, 1)
    assert Beside(8, 8, 8, 1, lockstep=True).depth == 1


# -- arbitration and selection ------------------------------------------------------------

def reference_round_robin(n, requests):
    """The grants a same-cycle round-robin arbiter over ``n`` gives ``requests``."""
    after, grants = (1 << n) - 1, []
    for r in requests:
        pick = (r & after) or r
        grant = pick & -pick
        grants.append(grant)
        if r:
            after = ~(grant | (grant - 1)) & ((1 << n) - 1)
    return grants


def reference_registered(n, requests):
    """The grants of a registered round-robin arbiter: the grant moves, on the next cycle,
    to the first other requester after it, and stays while no other requests."""
    grant, grants = 1, []
    for r in requests:
        grants.append(grant)
        others = r & ~grant
        after = others & ~(grant | (grant - 1))
        pick = after or others
        if pick:
            grant = pick & -pick
    return grants


def grants(arbiter, requests):
    got = []

    async def bench(ctx):
        for r in requests:
            ctx.set(arbiter.requests, r)
            got.append(ctx.get(arbiter.grant))
            await ctx.tick()

    simulate(clocked(arbiter), bench)
    return got


def random_requests(n, seed):
    rng = random.Random(seed)
    return [rng.randrange(1 << n) if rng.random() < 0.8 else (1 << n) - 1
            for _ in range(300)]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_round_robin_grants_the_first_requester_after_the_last_granted(n):
    requests = random_requests(n, n)
    got = grants(RoundRobin(n=n), requests)
    assert got == reference_round_robin(n, requests)
    assert all(g & r == g and (g == 0) == (r == 0) and g & (g - 1) == 0
               for g, r in zip(got, requests, strict=True))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_registered_round_robin_moves_to_the_next_other_requester(n):
    requests = random_requests(n, n + 10)
    got = grants(RoundRobin(n=n, registered=True), requests)
    assert got == reference_registered(n, requests)
    assert all(g != 0 and g & (g - 1) == 0 for g in got)


def test_round_robin_refuses_no_requesters():
    with pytest.raises(ValueError, match="n=0"):
        RoundRobin(n=0)


def test_lowest_splits_every_value_into_its_lowest_bit_and_the_rest():
    bits = Signal(5)
    m = Module()
    first, rest = lowest(m, bits)
    union = Signal(5)
    m.d.comb += union.eq(any_of([first, rest]))

    async def bench(ctx):
        for value in range(32):
            ctx.set(bits, value)
            assert ctx.get(first) == value & -value
            assert ctx.get(rest) == value & (value - 1)
            assert ctx.get(union) == value

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


# -- as registered blocks ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "params"), [
    ("queue", {}), ("queue", {"depth": 2, "latency": 1, "width": 1}),
    ("queue", {"depth": 3, "latency": 2}), ("queue", {"depth": 4, "latency": 3}),
    ("skid", {}), ("skid", {"width": 1}),
    ("round_robin", {}), ("round_robin", {"n": 1}), ("round_robin", {"n": 2}),
])
def test_verilog_lints_clean_with_wall(lint, name, params):
    assert lint(name, params) == ""


def test_in_the_synthesis_report():
    for name in ("queue", "skid", "round_robin"):
        blk = get(name)
        assert len(blk.cls.REPORT) == 1
        blk.cls(**blk.resolve(blk.cls.REPORT[0]))


def test_a_shape_or_a_width_gives_the_item():
    layout = data.StructLayout({"a": 3, "b": 5})
    assert Skid(layout).shape is layout and Skid(width=7).shape.width == 7
    queue = Queue(layout, depth=6, latency=1)
    assert (queue.shape, queue.depth, queue.latency) == (layout, 6, 1)
    assert Queue(depth=6, latency=2, width=9).shape.width == 9
    with pytest.raises(ParameterError, match="shape or its width"):
        Queue(layout, width=8)
    with pytest.raises(TypeError):
        Queue(layout, 6)
    with pytest.raises(TypeError):
        RoundRobin(3)


# -- the zip of a record's fields from their own arrays ------------------------------------

class ZipBench(Bench):
    """Reads of ``{col, value}`` records through a :class:`Zip`, each field from its own
    memory with DRAM timing (so the two answer apart), under back-pressure."""

    def __init__(self, component, addrs, cols, values, seed, rate):
        super().__init__(component, seed)
        self.drivers = [self.source_on("port__request", addrs, rate),
                        self.sink_on("port__response", rate, len(addrs)),
                        DramPort("part_col", np.asarray(cols, dtype=np.uint64), self.codecs),
                        DramPort("part_value", np.asarray(values, dtype=np.uint64),
                                 self.codecs, in_flight=4)]

    def from_outputs(self, cycles, outputs):
        return outputs["port__response"]


@pytest.mark.parametrize("rate", [0.4, 1.0])
def test_zip_joins_each_record_from_its_fields_arrays(rate):
    rng = np.random.default_rng(3)
    cols, values = rng.integers(0, 1 << 12, 64), rng.integers(0, 1 << 16, 64)
    addrs = [int(a) for a in rng.integers(0, 64, 200)]
    unit = Zip(6, {"col": 12, "value": 16})
    got = pysim(ZipBench(unit, addrs, cols, values, seed_from_env(7), rate))
    assert got == [{"col": int(cols[a]), "value": int(values[a])} for a in addrs]


class OffsetBench(Bench):
    def __init__(self, component, addrs, words, base, seed, rate):
        super().__init__(component, seed)
        self.drivers = [Static("base", base), self.source_on("port__request", addrs, rate),
                        self.sink_on("port__response", rate, len(addrs)),
                        DramPort("mem", np.asarray(words, dtype=np.uint64), self.codecs)]

    def from_outputs(self, cycles, outputs):
        return outputs["port__response"]


class ClockedOffset(Offset):
    """An :class:`Offset` with a clock domain for the simulator (it has no state)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        tick = Signal()
        m.d.sync += tick.eq(~tick)
        return m


def test_offset_reads_each_index_from_the_base_on():
    """Index n reads word base + n: the last index reads the memory's last word."""
    words = np.arange(100, 164)
    base = 40
    addrs = [0, 23, 5, 23, 0]
    got = pysim(OffsetBench(ClockedOffset(6, 8), addrs, words, base, seed_from_env(2), 0.6))
    assert got == [int(words[base + a]) for a in addrs]


@pytest.mark.parametrize("width", [1, 2, 3, 8, 9])
def test_at_most_one_is_no_two_bits_set_for_every_value(width):
    m, bits, out = Module(), Signal(width), Signal()
    m.d.comb += out.eq(at_most_one(bits))

    async def testbench(ctx):
        for value in range(1 << width):
            ctx.set(bits, value)
            assert ctx.get(out) == (bin(value).count("1") <= 1), value

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
