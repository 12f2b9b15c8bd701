# amaranth: UnusedElaboratable=no
"""The Tailor's units alone, each against the model method it implements.

A random tile run of the whole Tailor records, cycle by cycle, the
operations accepted and the model's state. Each unit is then simulated on its
own: :class:`SplitControl` replays the accepted fills, overwriting fills and
shrinks and must hold the model's state; :class:`RegionLocator`, given a
state, must find every index where the model's lookup does;
:class:`FrontierUnit`, given the state and the lookup, must move the frontier
and grant ``fifo_credits`` as the model does.
"""

import copy
import random

import pytest
from amaranth.sim import Simulator

from sparseforge.hw.tailor import Tailor
from sparseforge.hw.tailor_units import FrontierUnit, Geometry, RegionLocator, SplitControl
from sparseforge.sim.runners import pysim
from sparseforge.tb.tailor import ProgramBench, TileBench, random_tiles

DEPTH, FIFO, TILE = 8, 2, 64


class Recording:
    """Mixed into a Tailor bench: keeps, per cycle, the model's state and the operations."""

    def check(self, io, cycle):
        ops, before = self.operations(), copy.deepcopy(self.model)
        super().check(io, cycle)
        self.trace.append((before, ops))


class RecordedTiles(Recording, TileBench):
    trace = None


class RecordedProgram(Recording, ProgramBench):
    trace = None


# Fig. 5 on a buffer of 8 (B = 6): a parent that overwrites before any read, so the
# FIFO region holds elements the reader has not passed, and the split's cleared slots.
FIG5 = [*(("fill", v) for v in range(8)), ("owfill", (8, 0)), ("owfill", (9, 0)),
        ("owfill", (10, 1)), ("read", 10), ("read", 0), ("owfill", (6, 0)), ("read", 6)]


@pytest.fixture(scope="module", params=["fig5", 0, 1, 2])
def trace(request):
    seed = request.param
    dut = Tailor(depth=DEPTH, width=8, fifo=FIFO, tile=TILE)
    if seed == "fig5":
        bench = RecordedProgram(dut, FIG5, 0, dict.fromkeys(ProgramBench.PORTS, 1.0))
    else:
        tiles = random_tiles(random.Random(seed), DEPTH, FIFO, [0.5, 1.5, 3, 4, 2.25, 5], 4,
                             skip=0.3, shrink=0.7)
        bench = RecordedTiles(dut, tiles, seed, {"owfill": 0.6})
    bench.trace = []
    pysim(bench)
    return bench.trace


def heads(trace):
    """The memory address of the head at the start of each cycle (it moves by each shrink)."""
    head, out = 0, []
    for _, ops in trace:
        out.append(head)
        head = (head + (ops.get("shrink") or 0)) % DEPTH
    return out


def region(model, head, geometry):
    """The ``region`` signals that stand for the model's state."""
    split, first = model.split, model.first if model.split else geometry.base
    known = split and model.bumped is not None
    return {"split": split, "backfill": model.backfill, "full": model.occupancy == DEPTH,
            "head": head, "occupancy": model.occupancy, "first": first,
            "fifo_base": (head + first) % DEPTH,
            "newest": model.newest % FIFO if split else 0,
            "shift": (model.newest - model.index_at(model.newest)) % FIFO if split else 0,
            "shift_back": ((model.newest - model.index_at(model.newest) - model.bumped) % FIFO
                           if known else 0),
            "newest_index": model.index_at(model.newest) if split else 0,
            "oldest_index": model.index_at(min(model.region)) if split and model.region else 0,
            "held": len(model.region), "known": known,
            "last_index": first + model.bumped - 1 if known else 0,
            "bumped": model.bumped if known else 0,
            "previous": model.index_at(model.newest) - model.bumped if known else 0}


def location(model, index, head, geometry):
    """The ``location`` signals for a read of ``index``, from the model's lookup."""
    split = model.split
    boundary = model.first if split else geometry.base
    known = split and model.bumped is not None
    out = {"present": model.can_access(index), "bumped": index >= boundary,
           "in_tile": not known or index < model.first + model.bumped,
           "addr": 0, "behind": 0, "lead": 0, "beyond": 0}
    if out["present"]:
        out["addr"] = (head + model._offset(index)) % DEPTH
    if split and out["bumped"]:
        hit = model.lookup(index)
        if hit is not None:
            out["behind"] = model.newest - hit[0]
        upcoming = model.next_position(index)
        out["lead"] = -1 if upcoming is None else model.newest - upcoming
        out["beyond"] = out["lead"] < distance(model)
    return out


def distance(model):
    """The frontier as the frontier unit holds it: behind the newest (at most F),
    before a split behind position F."""
    if model.split:
        return min(FIFO, model.newest - model.frontier)
    return FIFO - model.frontier


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8, if_exists=True)      # the locator has no clock
    sim.add_testbench(testbench)
    sim.run()


def test_split_control_holds_the_models_state(trace):
    g = Geometry(DEPTH, FIFO, TILE)
    dut = SplitControl(g)
    fields = ("split", "backfill", "full", "occupancy", "held")
    split_fields = ("first", "fifo_base", "newest_index", "oldest_index", "known")
    known_fields = ("last_index", "bumped", "previous")

    async def testbench(ctx):
        for n, ((model, ops), head) in enumerate(zip(trace, heads(trace), strict=True)):
            want = region(model, head, g)
            got = {name: ctx.get(getattr(dut.region, name)) for name in want}
            for name in fields + (split_fields if model.split else ()) + ("head",) + (
                    known_fields if want["known"] else ()):
                assert got[name] == want[name], (n, name, got, want)
            if model.split:
                for name in ("newest", "shift") + (("shift_back",) if want["known"] else ()):
                    assert got[name] == want[name], (n, name, got, want)
                assert ctx.get(dut.rejoin) == model.rejoin_next, n
            owfill = ops["owfill"]
            if owfill is not None:       # where it writes: the model's victim slot
                assert ctx.get(dut.owfill_addr) == (head + model._victim()) % DEPTH, n
            ctx.set(dut.fill, ops["fill"] is not None)
            ctx.set(dut.owfill, owfill is not None)
            ctx.set(dut.last, owfill is not None and owfill[1])
            ctx.set(dut.shrink, ops["shrink"] is not None)
            ctx.set(dut.count, ops["shrink"] or 0)
            await ctx.tick()

    simulate(dut, testbench)


def test_region_locator_finds_what_the_model_looks_up(trace):
    g = Geometry(DEPTH, FIFO, TILE)
    dut = RegionLocator(g)
    longest = 6 * DEPTH

    async def testbench(ctx):
        for (model, _), head in zip(trace[::3], heads(trace)[::3], strict=True):
            for name, value in region(model, head, g).items():
                ctx.set(getattr(dut.region, name), value)
            ctx.set(dut.distance, distance(model))
            reach = longest if not model.split or model.bumped is None else (
                model.first + model.bumped)
            for index in range(reach):
                ctx.set(dut.index, index)
                want = location(model, index, head, g)
                got = {name: ctx.get(getattr(dut.location, name)) for name in want}
                for name in ("present", "bumped", "in_tile"):
                    assert got[name] == want[name], (index, name, got, want)
                if want["present"]:
                    assert got["addr"] == want["addr"], (index, got, want)
                if model.split and want["bumped"]:      # where the frontier goes
                    kept = ("behind",) if want["present"] else ("lead", "beyond")
                    for name in kept if want["in_tile"] else ():
                        assert got[name] == want[name], (index, name, got, want)

    simulate(dut, testbench)


def test_frontier_unit_moves_as_the_model_passes(trace):
    g = Geometry(DEPTH, FIFO, TILE)
    dut = FrontierUnit(g)

    async def testbench(ctx):
        for n, ((model, ops), head) in enumerate(zip(trace, heads(trace), strict=True)):
            drive(ctx, dut, model, ops, head, g)
            assert ctx.get(dut.distance) == distance(model), (n, ctx.get(dut.distance))
            assert ctx.get(dut.fifo_credits) == model.fifo_credits, n
            await ctx.tick()

    simulate(dut, testbench)


def drive(ctx, dut, model, ops, head, g):
    """Set the frontier unit's inputs for one cycle of the trace."""
    for name, value in region(model, head, g).items():
        ctx.set(getattr(dut.region, name), value)
    index = ops["read"] if ops["read"] is not None else ops.get("request")
    for name, value in location(model, index or 0, head, g).items():
        ctx.set(getattr(dut.location, name), value)
    freed = ops["shrink"] or 0
    rejoin = model.rejoin_next
    ends = model.split and freed == DEPTH
    ctx.set(dut.index, index or 0)
    ctx.set(dut.request, index is not None)
    ctx.set(dut.read, ops["read"] is not None)
    ctx.set(dut.owfill, ops["owfill"] is not None)
    ctx.set(dut.shrink, ops["shrink"] is not None)
    ctx.set(dut.count, freed)
    ctx.set(dut.rejoin, rejoin)
    ctx.set(dut.restart, (ops["owfill"] is not None and rejoin) or ends)
