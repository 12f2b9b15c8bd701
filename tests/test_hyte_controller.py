# amaranth: UnusedElaboratable=no
"""The HYTE tiling controller: the model (Section 6.2's Change sequence, Fig. 5(c)'s
50% hit rate, the 5% rule and the delayed application), the tuner alone against the
model's decision, the RTL against the model under random stalls on Amaranth's simulator,
a real matrix's tiles natively on Verilator, parameters and lint."""

import random
from fractions import Fraction

import pytest
from amaranth.sim import Simulator

from sparseforge.core.errors import ParameterError
from sparseforge.hw.hyte_accessor import HyteAccessor
from sparseforge.hw.hyte_controller import HyteController
from sparseforge.hw.hyte_tuner import TUNED, Tuner
from sparseforge.sim.models.hyte_controller import (
    DIMS,
    ORDERS,
    Config,
    Controller,
    J,
    K,
    allowed,
    counts_dict,
    decide,
    hit_rate,
    matrix_trace,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.occupancy import Pattern
from sparseforge.sw.wire import HyteMode
from sparseforge.tb.hyte_accessor import simulate as simulate_accessor
from sparseforge.tb.hyte_controller import ControllerBench, random_oracle, simulate

STALLS = {"config": 0.5, "counts": 0.4, "tile": 0.3}
FAST = dict.fromkeys(STALLS, 1.0)


def zero(_command):
    return [[0, 0], [0, 0]]


def each(commands, field):
    """``field`` of every command, a tuple over the dimensions i, j, k."""
    return [tuple(d[field] for d in c) for c in commands]


def changes(commands):
    return each(commands, "change")


def test_section_6_2_change_sequence_i_j_k():
    # i > j > k over 2 x 2 x 3 tiles: (0, 0, 1) until the last innermost, then (0, 1, 2).
    commands, _ = simulate(HyteController(), Config(4, 4, 6, 1, 1, 1, 0, 8), zero, 0, FAST)
    assert changes(commands) == [(2, 2, 2), (0, 0, 1), (0, 0, 1), (0, 1, 2), (0, 0, 1),
                                 (0, 0, 1), (1, 2, 2), (0, 0, 1), (0, 0, 1), (0, 1, 2),
                                 (0, 0, 1), (0, 0, 1)]
    assert [c[K]["begin"] for c in commands[:4]] == [0, 2, 4, 0]
    assert set(each(commands, "t")) == {(2, 2, 2)}


@pytest.mark.parametrize("order", range(6))
def test_every_order_covers_the_space_once_innermost_first(order):
    config = Config(5, 3, 7, 1, 0, 2, order, 8)
    commands, _ = simulate(HyteController(), config, zero, seed_from_env(order), STALLS)
    tiles = set(each(commands, "begin"))
    assert len(tiles) == len(commands) == 3 * 3 * 2
    inner, outer = DIMS.index(ORDERS[order][-1]), DIMS.index(ORDERS[order][0])
    assert all(c[inner]["change"] for c in commands)        # every tile moves it
    assert sum(c[outer]["change"] == 1 for c in commands) == (2, 2, 1)[outer]


def test_fig5c_counts_3_0_0_1_with_a_buffer_of_1_hit_50_percent():
    counts = [[3, 0], [0, 1]]
    for rule in ("tiles", "area"):
        # B is 4 x 4 (K x J) in one 4 x 4 tile; its 2 x 2 quadrants hold 3, 0, 0, 1.
        assert hit_rate(counts, 4, 4, 0, 0, 1, 4, 4, 4, rule) == Fraction(1, 2)
        assert hit_rate(counts, 4, 4, 1, 1, 1, 4, 4, 4, "tiles") == Fraction(1, 4)
    # The paper's own example of the formula, Tk/2 x 2Tj.
    assert hit_rate([[1, 2], [3, 4]], 4, 4, 0, 2, 5, 8, 8, 10) == \
        Fraction(8 * 8, 2 * 8) * Fraction(min(6, 5) + min(14, 5), 2) / 10


def test_fig5c_the_controller_halves_both_and_applies_each_at_its_change():
    # The 4 x 4 B tile of Fig. 5(c) counts (3, 0, 0, 1) with a buffer of 1: 2 x 2 is
    # 50% against 25%, so Tk and Tj halve; Tk at the next k change, Tj at the next j
    # (counts keep saying so while j = 0; Tk halves again from its own tiles).
    config = Config(2, 8, 8, 1, 2, 2, 0, 1)
    fig5 = [[3, 0], [0, 1]]
    commands, _ = simulate(HyteController(), config,
                           lambda c: fig5 if c[J]["begin"] == 0 else zero(c),
                           seed_from_env(3), STALLS)
    assert (commands[1][K]["t"], commands[1][J]["t"]) == (2, 4)      # k changes: applied
    assert all(c[J]["t"] == 4 for c in commands if c[J]["begin"] == 0)  # j waits for its
    assert changes(commands[4:5]) == [(0, 1, 2)]                       # next change
    assert (commands[4][J]["begin"], commands[4][J]["t"]) == (4, 2)


def test_the_five_percent_rule():
    config = Config(64, 64, 64, 2, 2, 2, 0, 100)
    # 21 against 20 nonzeros that fit is 5%: kept. 22 against 20: taken.
    assert decide([[10, 10], [0, 0]], 2, 2, config) == (2, 2)
    worse = Config(64, 64, 64, 2, 2, 2, 0, 20)
    # A buffer of 20: the tile keeps 20; halved, its quadrants keep 11 + 10 (5% more:
    # kept) or 12 + 10 (10% more: halved, both dimensions winning the tie).
    assert decide([[11, 10], [0, 0]], 2, 2, worse) == (2, 2)
    assert decide([[12, 10], [0, 0]], 2, 2, worse) == (1, 1)


@pytest.mark.parametrize("counts, tk", [([[11, 10], [0, 0]], 4), ([[12, 10], [0, 0]], 2)])
def test_the_five_percent_rule_in_the_rtl(counts, tk):
    config = Config(1, 8, 8, 0, 2, 2, 0, 20)
    commands, _ = simulate(HyteController(), config,
                           lambda c: counts if c[J]["begin"] == 0 else zero(c), 0, FAST)
    assert commands[1][K]["t"] == tk         # 5% more: kept; 10% more: halved


@pytest.mark.parametrize("rule", ["tiles", "area"])
def test_the_tuner_alone_targets_the_models_shape_18_cycles_after_the_counts(rule):
    rng = random.Random(seed_from_env(7))
    cases = [([[rng.randint(0, 40) for _ in range(2)] for _ in range(2)], rng.randint(0, 4),
              rng.randint(0, 4), Config(1, rng.randint(1, 40), rng.randint(1, 40), 0, 0, 0, 0,
                                        rng.randint(1, 40))) for _ in range(12)]
    dut = Tuner(16, 16, rule)
    tuning = dut.tuning

    async def bench(ctx):
        for counts, log_tk, log_tj, config in cases:
            ctx.set(tuning.bufsize, config.bufsize)
            for t, (log, dim) in enumerate((log_tj, config.j) if d == "j" else (log_tk, config.k)
                                           for d in TUNED):
                ctx.set(tuning.shape[t].log_t, log)
                ctx.set(tuning.shape[t].grow, (1 << log) < dim)
            ctx.set(dut.counts.payload, counts_dict(counts))
            ctx.set(dut.counts.valid, 1)
            ctx.set(tuning.measure.valid, 1)
            await ctx.tick()
            ctx.set(dut.counts.valid, 0)
            ctx.set(tuning.measure.valid, 0)
            cycles = 1
            while not ctx.get(tuning.target.valid):
                await ctx.tick()
                cycles += 1
            target = ctx.get(tuning.target.payload)
            logs = {d: target[t].log_t for t, d in enumerate(TUNED)}
            assert (logs["k"], logs["j"]) == decide(counts, log_tk, log_tj, config, rule)
            assert all(target[t].extent == 1 << target[t].log_t for t in range(len(TUNED)))
            assert cycles == 18
            ctx.set(tuning.target.ready, 1)
            await ctx.tick()
            ctx.set(tuning.target.ready, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


class KeepsItsWalker(HyteController):
    """The controller, its walker kept so that a bench can watch the walker and tuner
    talk (the shape and ``grow`` at each measure, each target taken)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        self.walker = m.submodules.walker
        return m


class WatchingBench(ControllerBench):
    """The controller's bench, also recording per command what the tuner is told and
    what it answers; it runs until the last command's target is taken."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.shapes, self.targets = [], []

    def check(self, io, cycle):
        super().check(io, cycle)
        get, tuning = io.ctx.get, self.component.walker.tuning
        if get(tuning.measure.valid) and get(tuning.measure.ready):
            self.shapes.append({d: (get(tuning.shape[t].log_t), get(tuning.shape[t].grow))
                                for t, d in enumerate(TUNED)})
        if get(tuning.target.valid) and get(tuning.target.ready):
            target = get(tuning.target.payload)
            self.targets.append({d: target[t].log_t for t, d in enumerate(TUNED)})

    def finished(self):
        return super().finished() and len(self.targets) == len(self.outputs["tile"])


@pytest.mark.parametrize("config, grows, logs, targets", [
    # K = 4 with Tk = 4: the tile spans k exactly and may not double; J = 5 with Tj = 4
    # (the largest extent short of it) may, so Tj's target is 8, taken at the next
    # aligned j (i's second pass), where it spans j and stops. (k, j) throughout.
    (Config(2, 5, 4, 0, 2, 2, 0, 100), [(0, 1), (0, 1), (0, 0)], [(2, 2), (2, 2), (2, 3)],
     [(2, 3)] * 3),
    # The same with j and k swapped: Tj = J = 4 may not double, Tk = 4 < K = 5 may.
    (Config(2, 4, 5, 0, 2, 2, 0, 100), [(1, 0), (1, 0), (0, 0)], [(2, 2), (2, 2), (3, 2)],
     [(3, 2)] * 3),
])
def test_a_tile_spanning_its_dimension_exactly_does_not_grow(config, grows, logs, targets):
    # Under the area rule a larger shape always scores higher (the tiles rule never
    # prefers a doubling), so the target doubles every dimension allowed to grow and
    # the grow gate alone decides it. Counts (1, 2, 3, 4), a buffer of 100 (none capped).
    # The commands alone cannot show a wrong gate (a tile grown past its dimension is
    # clamped to it), so the bench watches the walker and the tuner.
    counts = [[1, 2], [3, 4]]
    bench = WatchingBench(KeepsItsWalker(rule="area"), config, lambda _c: counts, 0, FAST)
    commands = pysim(bench).commands
    assert commands == bench.outputs["tile"] and len(commands) == 3
    # Per command, what the walker told the tuner, (log_t, grow) of k and j, and the
    # target the tuner answered: the spanning dimension kept, the other doubled.
    assert [(s["k"][1], s["j"][1]) for s in bench.shapes] == grows
    assert [(s["k"][0], s["j"][0]) for s in bench.shapes] == logs
    assert [(t["k"], t["j"]) for t in bench.targets] == targets
    # The same as the model's: grow is allowed(), a doubling only short of the dimension.
    ctl, told, answered = Controller(config, "area"), [], []
    while ctl.next() is not None:
        told.append({d: (ctl.log_t[d], int(allowed(ctl.log_t[d], ctl.dims[d], 2)))
                     for d in TUNED})
        ctl.counts(counts)
        answered.append({d: ctl.target[d] for d in TUNED})
    assert (bench.shapes, bench.targets) == (told, answered)


def test_a_change_waits_for_an_aligned_begin():
    ctl = Controller(Config(1, 1, 16, 0, 0, 1, 0, 4))
    ctl.next()
    ctl.target["k"] = 2                       # grow Tk 2 -> 4
    begins = []
    while (c := ctl.next()) is not None:
        begins.append((c[K]["begin"], c[K]["t"]))
    assert begins == [(2, 2), (4, 4), (8, 4), (12, 4)]


@pytest.mark.parametrize("seed", [0, 1, 2, pytest.param(3, marks=pytest.mark.soak)])  # 3: long
@pytest.mark.parametrize("rule", ["tiles", "area"])
def test_random_jobs_under_stalls(rule, seed):
    seed = seed_from_env(seed)
    rng = random.Random(seed)
    config = Config(*(rng.randint(1, 40) for _ in range(3)), *(rng.randint(0, 4)
                                                                for _ in range(3)),
                    rng.randrange(6), rng.randint(1, 40))
    commands, bench = simulate(HyteController(rule=rule), config,
                               random_oracle(random.Random(seed), 30), seed, STALLS)
    assert commands == bench.outputs["tile"]


EMAIL = Config(256, 1005, 1005, 8, 6, 6, 0, 64)


@pytest.fixture(scope="module")
def email(shared_data):
    """email-Eu-core as B and its tuned run from 64 x 64 tiles (:data:`EMAIL`)."""
    matrix = read_matrix(shared_data / "matrices" / "graphs" / "email-Eu-core.mtx")
    return matrix, matrix_trace(matrix, EMAIL)


def test_email_eu_core_as_b_changes_the_tile_shape(email):
    matrix, trace = email
    assert len(set(trace.shapes)) > 1
    assert trace.after > trace.before
    # The accessor's counts of the first 64 x 64 tile, its quadrants 32 x 32.
    p = Pattern.from_matrix(matrix)
    inside = (p.rows < 64) & (p.cols < 64)
    r, c = p.rows[inside] >= 32, p.cols[inside] >= 32
    assert trace.counts[0] == [[int((~r & ~c).sum()), int((~r & c).sum())],
                               [int((r & ~c).sum()), int((r & c).sum())]]
    assert min(map(min, trace.counts[0])) > 0


def first_tiles(trace, n):
    """The accessor program of ``trace``'s first ``n`` tiles (each ends with its evict)."""
    ends = [i for i, (port, _) in enumerate(trace.fetches) if port == "evict"]
    return trace.fetches[:ends[n - 1] + 1]


@pytest.mark.soak       # test_hyte_tiling checks these counts inside the closed loop
@pytest.mark.parametrize("engine, tiles", [
    ("pysim", 10), pytest.param("native", None, marks=pytest.mark.verilator)])
def test_the_counts_tuned_from_are_the_rtl_accessors(email, tmp_path, engine, tiles):
    # email-Eu-core as B: its tiles, as the tuned run fetched them, through the
    # accessor's RTL under random stalls, which counts their quadrants itself; its
    # counts are the ones the controller was given (and the RTL controller replays
    # them in test_email_eu_core_natively_on_verilator).
    _, trace = email
    tiles = tiles or len(trace.commands)
    program = first_tiles(trace, tiles)
    accessor = HyteAccessor(depth=64, width=16, coord_width=16)
    _, bench = simulate_accessor(accessor, program, EMAIL.bufsize, HyteMode.BUFFERING,
                                 seed_from_env(11), engine=engine, work_dir=tmp_path)
    # The bench checks each count against the model as it leaves (natively, against
    # these): the model's are the trace's.
    assert bench.outputs["counts"] == [counts_dict(c) for c in trace.counts[:tiles]]
    assert len(bench.counts.received) == tiles or engine == "native"
    assert sum(port == "fill" for port, _ in program) > 500


@pytest.mark.soak       # test_email_eu_core_as_b_changes_the_tile_shape: the default run's
@pytest.mark.verilator
def test_email_eu_core_natively_on_verilator(shared_data, tmp_path):
    matrix = read_matrix(shared_data / "matrices" / "graphs" / "email-Eu-core.mtx")
    config = Config(512, 1005, 1005, 9, 5, 5, 0, 32)
    trace = matrix_trace(matrix, config)
    replay = iter(trace.counts)
    commands, _ = simulate(HyteController(), config, lambda _c: next(replay),
                           seed_from_env(5), STALLS, engine="native", work_dir=tmp_path)
    assert commands == trace.commands and len(set(trace.shapes)) > 1


@pytest.mark.parametrize("params, message", [({"dim_width": 1}, "dim_width=1"),
                                             ({"count_width": 40}, "count_width=40"),
                                             ({"rule": "best"}, "rule='best'")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HyteController(**params)


@pytest.mark.parametrize("params", [{}, {"dim_width": 4, "count_width": 4, "rule": "area"},
                                    {"dim_width": 24, "count_width": 24}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_controller", params) == ""
