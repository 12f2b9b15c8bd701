# amaranth: UnusedElaboratable=no
"""The Buffet: model, Amaranth-simulator tests, Verilator co-simulation, lint."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from sparseforge.core.errors import ParameterError
from sparseforge.hw.buffet import Buffet, plus_one_minus
from sparseforge.sim.models.buffet import Buffet as Model
from sparseforge.sim.models.buffet import BuffetError
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.tb.buffet import BuffetBench, random_program

ALL_IN = {"fill": 1.0, "read": 1.0, "update": 1.0, "shrink": 1.0, "read_data": 1.0}


LATENCIES = pytest.mark.parametrize("latency", [1, 2])


def run(depth, program, rates=None, seed=0, delay=None, latency=2):
    """Run ``program`` on pysim; ``delay`` holds one port back until a cycle."""
    bench = BuffetBench(Buffet(depth=depth, width=8, read_latency=latency), program, seed,
                        rates or ALL_IN)
    if delay:
        port, cycle = delay
        bench.sources[port].stall = lambda: bench.cycle >= cycle
    pysim(bench)
    return bench


# -- the model ------------------------------------------------------------------

def test_model_rejects_illegal_operations():
    m = Model(2)
    with pytest.raises(BuffetError):
        m.read(0)
    m.fill(1)
    m.fill(2)
    with pytest.raises(BuffetError):
        m.fill(3)
    with pytest.raises(BuffetError):
        m.shrink(3)
    m.shrink(2)
    assert m.occupancy == 0 and m.credits == 2


def test_model_same_cycle_update_is_visible_to_read():
    m = Model(4)
    m.fill(5)
    assert m.step(read=0, update=(0, 9)) == 9


# -- directed, on Amaranth's simulator --------------------------------------------

@LATENCIES
def test_full_and_empty(latency):
    depth = 4
    program = [("fill", v) for v in range(depth + 2)]
    program[depth:depth] = [("read", 0), ("shrink", 2)]
    bench = run(depth, program, latency=latency)
    fills = [c for c, _ in bench.sources["fill"].accepted]
    shrink_cycle = bench.sources["shrink"].accepted[0][0]
    # The fifth fill waits for the shrink, and no fill is lost or doubled.
    assert fills[:depth] == list(range(depth))
    assert fills[depth] > shrink_cycle
    assert bench.model.occupancy == depth


@LATENCIES
def test_read_before_fill_stalls_until_the_data_arrives(latency):
    program = [("fill", 0x11), ("fill", 0x22), ("read", 1)]
    bench = run(4, program, delay=("fill", 20), latency=latency)
    (read_cycle, _), = bench.sources["read"].accepted
    second_fill = bench.sources["fill"].accepted[1][0]
    assert read_cycle > second_fill
    assert [v for _, v in bench.sink.received] == [0x22]


def test_shrink_to_empty_returns_all_credits():
    program = [("fill", v) for v in (1, 2, 3)] + [("shrink", 3), ("fill", 4), ("read", 0)]
    bench = BuffetBench(Buffet(depth=4, width=8), program, 0, ALL_IN)
    # The fourth fill only after the shrink, so the shrink empties the buffet.
    bench.sources["fill"].gate = lambda n: n < 3 or bench.sources["shrink"].accepted
    pysim(bench)
    (cycle, count), = bench.sources["shrink"].accepted
    assert count == 3 and bench.sources["fill"].accepted[3][0] > cycle
    assert [v for _, v in bench.sink.received] == [4]   # head moved past all three


def test_a_shrink_never_accepted_fails_in_a_thousand_cycles():
    # The watchdog sees no transfer and stops the run long before any cycle cap.
    bench = BuffetBench(Buffet(depth=4, width=8), [("fill", 1), ("shrink", 2)], 0, ALL_IN)
    with pytest.raises(AssertionError, match="no transfer on any stream for 1000 cycles"):
        pysim(bench)
    assert bench.cycle == bench.patience + 2


@LATENCIES
def test_a_read_on_the_cycle_of_an_update_returns_the_new_data(latency):
    program = [("fill", 1), ("fill", 2), ("read", 1), ("update", (1, 0x77))]
    bench = BuffetBench(Buffet(depth=4, width=8, read_latency=latency), program, 0, ALL_IN)
    bench.sources["read"].after = {}           # both wait for the fills, not for each other
    bench.sources["update"].after = {}
    both = lambda n: len(bench.sources["fill"].accepted) == 2     # noqa: E731
    bench.sources["read"].gate = bench.sources["update"].gate = both
    pysim(bench)
    assert bench.sources["read"].accepted[0][0] == bench.sources["update"].accepted[0][0]
    assert [v for _, v in bench.sink.received] == [0x77]


@LATENCIES
def test_update_then_read(latency):
    program = [("fill", 1), ("fill", 2), ("update", (1, 0x77)), ("read", 1), ("read", 0)]
    bench = run(4, program, latency=latency)
    assert [v for _, v in bench.sink.received] == [0x77, 1]


@LATENCIES
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("depth", [2, 8])
def test_random_on_amaranth_simulator(depth, seed, latency):
    seed = seed_from_env(seed)
    program = random_program(random.Random(seed), depth, 8, 1500)
    bench = BuffetBench(Buffet(depth=depth, width=8, read_latency=latency), program, seed)
    pysim(bench)
    assert bench.responses == sum(op == "read" for op, _ in program)


@LATENCIES
def test_sustains_one_fill_and_one_read_per_cycle(latency):
    depth = 64
    program = [("fill", v % 256) for v in range(depth)]
    program += [("read", i) for i in range(depth)]
    bench = run(depth, program, latency=latency)
    fills = [c for c, _ in bench.sources["fill"].accepted]
    reads = [c for c, _ in bench.sources["read"].accepted]
    assert fills[-1] - fills[0] == depth - 1
    assert reads[-1] - reads[0] == depth - 1


@LATENCIES
def test_a_fill_and_a_read_every_cycle_at_once(latency):
    """Read each element as soon as it is filled: both ports transfer on every cycle,
    and each response comes ``latency`` cycles after its request."""
    program = [op for v in range(64) for op in (("fill", v), ("read", v))]
    bench = run(64, program, latency=latency)
    fills = [c for c, _ in bench.sources["fill"].accepted]
    reads = [c for c, _ in bench.sources["read"].accepted]
    assert fills == list(range(fills[0], fills[0] + 64))
    assert reads == [c + 1 for c in fills]           # each read the cycle after its fill
    answered = [c for c, _ in bench.sink.received]
    assert answered == [c + latency for c in reads]
    assert [v for _, v in bench.sink.received] == list(range(64))


@LATENCIES
def test_back_pressure_holds_every_read_in_flight(latency):
    """read_data stalled for a while: reads already accepted wait in the pipeline, no more
    are accepted than it holds, and none is lost or reordered."""
    program = [("fill", v) for v in range(8)] + [("read", i) for i in range(8)]
    bench = BuffetBench(Buffet(depth=8, width=8, read_latency=latency), program, 0, ALL_IN)
    bench.sink.stall = lambda: bench.cycle >= 30
    pysim(bench)
    early = [c for c, _ in bench.sources["read"].accepted if c < 30]
    assert len(early) == latency                     # one read per pipeline stage
    assert [v for _, v in bench.sink.received] == list(range(8))


@pytest.mark.parametrize("bits, count_bits", [(2, 2), (4, 3)])
def test_plus_one_minus_is_one_more_than_the_difference(bits, count_bits):
    """Every ``a`` and ``c`` of these widths, a narrower ``c`` zero-extended: the sum
    modulo the result's range, so a negative one wraps as the register would."""
    a, c = Signal(bits), Signal(count_bits)
    out = Signal(bits)
    m = Module()
    m.d.comb += out.eq(plus_one_minus(a, c))
    sim = Simulator(m)
    got = {}

    async def testbench(ctx):
        for x in range(1 << bits):
            for y in range(1 << count_bits):
                ctx.set(a, x)
                ctx.set(c, y)
                got[x, y] = ctx.get(out)

    sim.add_testbench(testbench)
    sim.run()
    assert got == {(x, y): (x + 1 - y) % (1 << bits) for x, y in got}
    assert len(got) == 1 << (bits + count_bits)


# -- parameters and Verilog -----------------------------------------------------

@pytest.mark.parametrize("kwargs", [{"depth": 3}, {"depth": 1}, {"width": 0}, {"depth": "x"},
                                    {"read_latency": 3}, {"read_latency": 0}])
def test_bad_parameters_name_the_parameter(kwargs):
    with pytest.raises(ParameterError, match=next(iter(kwargs))):
        Buffet(**kwargs)


@pytest.mark.parametrize("params", [{"depth": 2, "width": 1}, {"depth": 64, "width": 32},
                                    {"depth": 1024, "width": 32},
                                    {"depth": 1024, "width": 32, "read_latency": 1}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("buffet", params) == ""


# -- Verilator co-simulation ----------------------------------------------------

@pytest.mark.verilator
@pytest.mark.parametrize("latency", [1, pytest.param(2, marks=pytest.mark.soak)])
@pytest.mark.parametrize("depth", [4, pytest.param(64, marks=pytest.mark.soak)])  # a build each
def test_ten_thousand_random_operations_on_verilator(tmp_path, depth, latency):
    seed = seed_from_env(11 + depth)
    run = verilator("buffet", "sparseforge.tb.buffet",
                    params={"depth": depth, "width": 32, "read_latency": latency},
                    args={"ops": 10_000}, seed=seed, work_dir=tmp_path)
    assert run.result.reads > 2_000


@pytest.mark.verilator
def test_verilator_and_amaranth_agree_cycle_for_cycle(tmp_path):
    seed = seed_from_env(3)
    program = random_program(random.Random(seed), 8, 16, 800)
    rtl = verilator("buffet", "sparseforge.tb.buffet", params={"depth": 8, "width": 16},
                    args={"program": program}, seed=seed, work_dir=tmp_path).result
    assert rtl == pysim(BuffetBench(Buffet(depth=8, width=16), program, seed))


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("depth", [2, 16, 256])
@pytest.mark.parametrize("seed", range(100, 105))
def test_soak_on_verilator(tmp_path, depth, seed):
    verilator("buffet", "sparseforge.tb.buffet", params={"depth": depth, "width": 8},
              args={"ops": 100_000, "rates": {"read_data": 0.3}}, seed=seed,
              work_dir=tmp_path)
