# amaranth: UnusedElaboratable=no
"""The Tensaurus MSU: the model alone, then the RTL against it, directed and random on
Amaranth's simulator and a longer random run natively on Verilator, every stream
stalled at random (the write port too), with one bank and several; drains to one word
back to back (the read-modify-write hazard), output tiles of several input tiles, the
next output tile adding into one half while the other is written, the round-robin
arbiter, one drain a cycle in each bank."""

import random

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.tensaurus_msu import MsuSignature, TensaurusMsu
from sparseforge.sim.models import tensaurus_msu as model
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.tb.tensaurus_msu import MsuBench, expected, output_tiles, simulate, tile_items

FAST = 1.0


def fast(component):
    return {**{f"drains__{i}": FAST for i in range(component.inputs)}, "tiles": FAST,
            "out_mem": FAST}


def want(component, runs, tiles):
    return expected(component, runs, tile_items(component, tiles))


def workload(component, rng, drains, out_rows, hot=3):
    """One run: ``drains`` per input, most of them on a few hot words and many repeating
    the input's previous word (back to back), lanes over the accumulator's whole range;
    some to rows past ``out_rows`` (kept for a later run) or outside the buffer."""
    A, V = component.acc_width, component.vlen
    words = [(rng.randrange(max(out_rows, 1)), rng.randrange(component.tlen))
             for _ in range(hot)]
    chunk_top = (1 << max(1, (component.tlen - 1).bit_length())) - 1    # a chunk field's max
    run = []
    for _ in range(component.inputs):
        items, word = [], words[0]
        for _ in range(drains):
            roll = rng.random()
            if roll < 0.35:
                pass                                          # the same word again
            elif roll < 0.8:
                word = rng.choice(words)
            elif roll < 0.97:
                word = (rng.randrange(component.depth), rng.randrange(component.tlen))
            else:
                word = (rng.randrange(component.depth + 2),
                        rng.randrange(min(chunk_top, component.tlen) + 1))
            lanes = [rng.randrange(-(1 << (A - 1)), 1 << (A - 1)) for _ in range(V)]
            items.append((min(word[0], (1 << component.iw) - 1), word[1], lanes))
        run.append(items)
    return run


def random_rates(component, rng):
    return {**{f"drains__{i}": rng.uniform(0.3, 1.0) for i in range(component.inputs)},
            "tiles": rng.uniform(0.3, 1.0), "out_mem": rng.uniform(0.3, 1.0)}


# -- the model -------------------------------------------------------------------------

def test_model_sums_wraps_clears_and_keeps_unwritten_rows_in_their_half():
    msu = model.Msu(cols=2, tlen=2, vlen=2, acc_width=8, depth=3)
    # An input tile that does not close its output tile writes nothing.
    assert model.run(msu, [[(0, 1, [100, 1])], [(0, 0, [5, 6])], [(2, 1, [7, 7])], []],
                     (0, 1, 0)) == []
    out = model.run(msu, [[(0, 1, [100, -3])], [], [(3, 0, [9, 9])], [(0, 2, [1, 1])]],
                    (10, 1, 1))
    # Input 1 (q=1) chunk 0 -> chunk 1; input 0 chunk 1 -> 2; 200 wraps to -56; row 3
    # and chunk 2 were outside the half. Words from the base, 4 a row.
    assert out == [(10, (0, 0)), (11, (5, 6)), (12, (-56, -2)), (13, (0, 0))]
    # The next output tile adds into the other half, from zero.
    assert model.run(msu, [[(0, 0, [1, 2])], [], [], []], (20, 1, 1))[0] == (20, (1, 2))
    # Back in the first half: row 2, not written, kept its sum (input 2 is q=0: chunk 1
    # -> 2); row 0 was cleared.
    assert model.run(msu, [[], [], [], []], (0, 3, 1)) == [
        (r * 4 + g, (7, 7) if (r, g) == (2, 2) else (0, 0)) for r in range(3)
        for g in range(4)]


# -- directed, on Amaranth's simulator ------------------------------------------------

CONFIGS = [dict(rows=1, cols=1, tlen=1, vlen=1, iw=4, acc_width=8, depth=4, banks=1),
           dict(rows=2, cols=2, tlen=2, vlen=2, iw=6, acc_width=12, depth=5, banks=1),
           dict(rows=2, cols=2, tlen=2, vlen=2, iw=6, acc_width=12, depth=5, banks=2),
           dict(rows=1, cols=3, tlen=3, vlen=1, iw=5, acc_width=16, depth=3, banks=2)]
"""One bank and several; with 3 columns in 2 banks, bank 0 holds two and bank 1 one."""


def pattern(name, q):
    """Words of one input: the same one, two alternating (a hazard two writes back),
    three in turn (just past the bypass)."""
    return {"same": [(1, 0)] * 9, "two": [(1, 0), (0, 0)] * 5,
            "three": [(0, 0), (1, 0), (2, 0)] * 4}[name]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x".join(
    str(c[k]) for k in ("rows", "cols", "tlen", "vlen")) + f"-b{c['banks']}")
@pytest.mark.parametrize("name", ["same", "two", "three"])
def test_back_to_back_updates_of_one_word(config, name):
    """Every input hammering the same few words, nothing stalling: each drain reads a
    word the one or two before it are still writing."""
    component = TensaurusMsu(**config)
    rows = min(3, component.depth)
    one = [[((r % rows), c, [i + 1 + 10 * k] * component.vlen)
            for k, (r, c) in enumerate(pattern(name, i))] for i in range(component.inputs)]
    alone = [items if i == 0 else [] for i, items in enumerate(one)]
    tiles = output_tiles([rows, rows])
    run, _ = simulate(component, [alone, one], tiles, seed_from_env(3), fast(component))
    assert run.writes == want(component, [alone, one], tiles)


@pytest.mark.parametrize("banks", [1, 2])
def test_output_tiles_sum_their_input_tiles_and_start_from_zero(banks):
    """Output tiles of 2 and then 4 rows, of 3 and 1 input tiles: the first sums its
    three, the second starts from zero in the other half and goes on from the first's
    words."""
    component = TensaurusMsu(rows=1, cols=2, tlen=1, vlen=1, iw=4, acc_width=8, depth=4,
                             banks=banks)
    runs = [[[(0, 0, [1])], [(1, 0, [3])]], [[(0, 0, [4])], []], [[], [(1, 0, [6])]],
            [[(3, 0, [7])], [(0, 0, [2])]]]
    tiles = [(2, 0), (2, 0), (2, 1), (4, 1)]
    run, _ = simulate(component, runs, tiles, seed_from_env(4), {"out_mem": 0.5})
    assert [(a, lanes[0]) for a, lanes in run.writes] == [
        (0, 5), (1, 0), (2, 0), (3, 9), (4, 0), (5, 2), (6, 0), (7, 0), (8, 0), (9, 0),
        (10, 7), (11, 0)]


class HalvesBench(MsuBench):
    """The MSU's bench, also noting the cycles ``writing`` is high and those a read of
    the direct mode is offered."""

    def __init__(self, *args):
        super().__init__(*args)
        self.writing, self.reading = [], []

    def check(self, io, cycle):
        super().check(io, cycle)
        if io.get("writing"):
            self.writing.append(cycle)
        if io.get("out_read__request__valid"):
            self.reading.append(cycle)


@pytest.mark.parametrize("banks", [1, 2])
def test_the_next_output_tile_adds_while_the_last_is_written(banks):
    """Three output tiles of one input tile each, the write port slow: every drain of the
    second tile is taken while the first is being written; its close (the tile item taken)
    waits for the first's last write, as the half it would hand over is the other's;
    the third's drains are held until then."""
    component = TensaurusMsu(rows=1, cols=2, tlen=1, vlen=1, iw=4, acc_width=8, depth=4,
                             banks=banks)
    runs = [[[(r, 0, [r + 1]) for r in range(4)]] * 2 for _ in range(3)]
    tiles = output_tiles([4, 4, 4])
    bench = HalvesBench(component, runs, tile_items(component, tiles), seed_from_env(6),
                        {**fast(component), "out_mem": 0.25})
    got = pysim(bench)
    assert got.writes == want(component, runs, tiles)
    writes = [cycle for cycle, _ in bench.sink.received]
    closed = [cycle for cycle, _ in bench.tiles.accepted]
    first_written = writes[8 - 1]                               # 8 words a tile
    second = [cycle for s in bench.sources for cycle, _ in s.accepted[5:10]]
    third = [cycle for s in bench.sources for cycle, _ in s.accepted[10:]]
    assert closed[0] < min(second) and max(second) < first_written, (closed, second, writes)
    assert set(second) <= set(bench.writing)
    assert closed[1] == first_written + 1, (closed, first_written)
    assert min(third) > closed[1]
    assert set(range(closed[0] + 1, first_written + 1)) <= set(bench.writing)


@pytest.mark.parametrize("tlen, cols, banks", [(3, 1, 1), (1, 2, 1), (1, 2, 2)])
def test_drains_outside_the_buffer_are_dropped(tlen, cols, banks):
    """Rows at and past ``depth`` and a chunk past ``tlen`` (their addresses would wrap
    onto rows inside) are taken and dropped."""
    component = TensaurusMsu(rows=1, cols=cols, tlen=tlen, vlen=1, iw=4, acc_width=8,
                             depth=4, banks=banks)
    outside = [(r, 0, [1]) for r in (4, 5, 6, 15)] + [(0, 3, [1])] * (tlen == 3)
    runs = [[[(1, 0, [2]), *outside, (1, 0, [3])]] + [outside] * (cols - 1)]
    run, _ = simulate(component, runs, [(4, 1)], seed_from_env(5), fast(component))
    sums = [lanes[0] for _, lanes in run.writes]
    assert sums == [0] * component.chunks + [5] + [0] * (3 * component.chunks - 1)


RANDOM = [*CONFIGS, dict(rows=2, cols=2, tlen=3, vlen=2, iw=5, acc_width=10, depth=6, banks=2),
          dict(rows=3, cols=4, tlen=2, vlen=1, iw=4, acc_width=8, depth=5, banks=4)]


@pytest.mark.parametrize("seed", range(1, 7))
def test_random_drains_with_backpressure(seed):
    """Output tiles of random sizes up to the depth, of 1 to 3 input tiles each."""
    seed = seed_from_env(seed)
    rng = random.Random(seed)
    component = TensaurusMsu(**RANDOM[seed % len(RANDOM)])
    tiles = [(rows, int(n == per - 1)) for rows, per in
             ((rng.randrange(1, component.depth + 1), rng.randrange(1, 4)) for _ in range(3))
             for n in range(per)]
    runs = [workload(component, rng, rng.randrange(5, 25), rows) for rows, _ in tiles]
    run, _ = simulate(component, runs, tiles, seed, random_rates(component, rng))
    assert run.writes == want(component, runs, tiles)


# -- the arbiter and the rate ------------------------------------------------------------

def test_round_robin_among_waiting_inputs():
    """All inputs always offering, one bank: they take turns, one drain a cycle in all."""
    component = TensaurusMsu(rows=2, cols=3, tlen=1, vlen=1, iw=4, acc_width=8, depth=4,
                             banks=1)
    n, k = component.inputs, 12
    runs = [[[(i % 4, 0, [1])] * k for i in range(n)]]
    run, bench = simulate(component, runs, [(4, 1)], seed_from_env(7), fast(component))
    taken = sorted((cycle, i) for i, s in enumerate(bench.sources)
                   for cycle, item in s.accepted)
    order = [i for _, i in taken[:n * k]]
    assert order == [t % n for t in range(n * k)]
    cycles = [c for c, _ in taken]
    assert cycles == list(range(cycles[0], cycles[0] + n * (k + 1)))
    assert run.writes == want(component, runs, [(4, 1)])


@pytest.mark.parametrize("banks, waits", [(1, 3), (2, 1)])
def test_one_input_takes_a_drain_a_cycle(banks, waits):
    """N drains from one input (not the one granted at reset) take N cycles; the first
    write is taken 6 cycles after the last end is (the tile closed 3 cycles after it, its
    last drain written), then one a cycle."""
    component = TensaurusMsu(rows=2, cols=2, tlen=2, vlen=2, iw=5, acc_width=16, depth=8,
                             banks=banks)
    n = 64
    runs = [[[] for _ in range(3)] + [[(t % 8, t % 2, [t, -t]) for t in range(n)]]]
    run, bench = simulate(component, runs, [(8, 1)], seed_from_env(8), fast(component))
    cycles = [cycle for cycle, _ in bench.sources[3].accepted]
    assert cycles == list(range(waits, waits + n + 1)), cycles
    ends = max(s.accepted[-1][0] for s in bench.sources)
    out = [cycle for cycle, _ in bench.sink.received]
    assert out == list(range(ends + 6, ends + 6 + 8 * component.chunks))
    # Input 3 waits for the ends of the inputs before it in its bank, one a cycle (with
    # one bank inputs 0-2, cycles 0-2; with two, bank 1 holds inputs 1 and 3: input 1's
    # on cycle 0), then its drains and end, then the latency and the output.
    assert run.cycles == waits + n + 6 + 8 * component.chunks
    assert run.writes == want(component, runs, [(8, 1)])


@pytest.mark.parametrize("banks, cycles", [(1, 75), (4, 47)])
def test_a_pe_row_drains_into_every_bank_at_once(banks, cycles):
    """A 2 x 4 array, PE row 0 draining 8 chunks from each PE at once, PE row 1 only its
    ends, every stream at full rate; 4 rows of 8 chunks written.

    One bank: 4 * (8 + 1) + 4 = 40 items through one arbiter, one a cycle (cycles 0-39;
    row 0's last drain on 35, the ends of 36-39 behind it, so the pipeline is empty
    when they are in): the tile is closed on cycle 40, its writes are taken from 43 for
    32 cycles: 75.
    ``banks = cols = 4``: bank ``q`` serves PEs (0, q) and (1, q), granted first to
    (0, q). Cycle 0: the 4 PEs of row 0 each drain, one per bank; cycle 1: row 1's
    ends; cycles 2-8 row 0's other 7 drains, 4 a cycle; cycle 9 its ends, 6 cycles
    before the first write (its last drains still in the pipeline), on cycles 15-46:
    47."""
    component = TensaurusMsu(rows=2, cols=4, tlen=2, vlen=1, iw=4, acc_width=8, depth=4,
                             banks=banks)
    row0 = [[(t % 4, t % 2, [t + q]) for t in range(8)] for q in range(4)]
    runs = [row0 + [[] for _ in range(4)]]
    run, bench = simulate(component, runs, [(4, 1)], seed_from_env(10), fast(component))
    assert run.cycles == cycles
    assert run.writes == want(component, runs, [(4, 1)])
    if banks == 4:
        taken = [[cycle for cycle, _ in s.accepted] for s in bench.sources]
        assert taken == [[0, *range(2, 10)]] * 4 + [[1]] * 4


# -- the direct-to-memory mode ----------------------------------------------------------

def left(run):
    """``{addr: lanes}`` the run's writes leave (the last write of a word wins)."""
    return {addr: list(lanes) for addr, lanes in run.writes}


def test_model_direct_adds_into_memory_at_the_write_backs_addresses():
    """Worked by hand: 1 x 2 PEs, tlen 2, a tile of 3 rows from word 10 (a row 4 words):
    PE 1's chunk 1 of row 2 is word 10 + 2 * 4 + 1 * 2 + 1 = 21; row 3 is past the tile,
    chunk 2 past tlen; a second tile adds onto the first's words."""
    memory = {}
    first = [[(0, 0, [1, 2]), (3, 0, [9, 9])], [(2, 1, [3, 4]), (0, 2, [9, 9])]]
    assert model.direct(2, 2, 2, 8, first, (10, 3, 0), memory) == 2
    assert memory == {10: [1, 2], 21: [3, 4]}
    assert model.direct(2, 2, 2, 8, [[(0, 0, [127, 1])], []], (10, 3, 1), memory) == 1
    assert memory == {10: [-128, 3], 21: [3, 4]}


@pytest.mark.parametrize("reads", [2, 4])
@pytest.mark.parametrize("name", ["same", "two", "three"])
def test_direct_back_to_back_updates_of_one_word(name, reads):
    """Every input hammering the same few words, nothing stalling: a drain to a word
    still being read or written waits for that write, so no sum is lost."""
    component = TensaurusMsu(rows=2, cols=2, tlen=2, vlen=2, iw=4, acc_width=12, depth=4,
                             banks=2, reads=reads)
    one = [[(r % 3, c, [i + 1 + 10 * k, -k]) for k, (r, c) in enumerate(pattern(name, i))]
           for i in range(component.inputs)]
    tiles = output_tiles([3, 3])
    run, bench = simulate(component, [one, one], tiles, seed_from_env(3),
                          {**fast(component), "out_read": FAST}, direct=True)
    assert left(run) == bench.memory and len(run.writes) == bench.sink.expected


@pytest.mark.parametrize("seed", range(1, 4))
def test_direct_random_drains_with_backpressure(seed):
    """Random tiles in the direct mode, every stream (the memory's too) stalling at
    random; rows past a tile's rows and chunks past tlen dropped; ``writing`` stays low."""
    seed = seed_from_env(seed)
    rng = random.Random(seed)
    component = TensaurusMsu(**{**RANDOM[seed % len(RANDOM)], "reads": 4})
    tiles = [(rng.randrange(1, component.depth + 1), rng.randrange(2)) for _ in range(4)]
    runs = [workload(component, rng, rng.randrange(5, 25), rows) for rows, _ in tiles]
    bench = HalvesBench(component, runs, tile_items(component, tiles), seed,
                        {**random_rates(component, rng), "out_read": rng.uniform(0.3, 1)},
                        True)
    run = pysim(bench)
    assert left(run) == bench.memory and len(run.writes) == bench.sink.expected
    assert bench.writing == []


def test_the_buffered_mode_reads_no_memory():
    """The direct mode's read port stays silent in the buffered mode."""
    seed = seed_from_env(11)
    rng = random.Random(seed)
    component = TensaurusMsu(**RANDOM[1])
    tiles = output_tiles([component.depth, 2], per=2)
    runs = [workload(component, rng, 12, rows) for rows, _ in tiles]
    bench = HalvesBench(component, runs, tile_items(component, tiles), seed)
    assert pysim(bench).writes == want(component, runs, tiles)
    assert bench.reading == []


@pytest.mark.parametrize("reads, cycles", [(4, 1), (2, 2)])
def test_direct_rate_follows_the_reads_in_flight(reads, cycles):
    """One input, drains to distinct words, memory and write port never stalling: a read
    holds its slot 4 cycles (issued, taken, answered, written), so 4 reads in flight take
    a drain a cycle and 2 one every other cycle (the skid takes two, then waits)."""
    component = TensaurusMsu(rows=1, cols=1, tlen=1, vlen=1, iw=6, acc_width=8, depth=2,
                             banks=1, reads=reads)
    n = 32
    runs = [[[(t, 0, [t]) for t in range(n)]]]
    run, bench = simulate(component, runs, [(n, 1)], seed_from_env(12),
                          {**fast(component), "out_read": FAST}, direct=True)
    taken = [cycle for cycle, _ in bench.sources[0].accepted[:n]]
    assert taken[24] - taken[8] == 16 * cycles, taken       # past the pipeline's filling
    assert left(run) == {t: [t] for t in range(n)}


# -- natively on Verilator -------------------------------------------------------------

@pytest.mark.verilator
@pytest.mark.parametrize("config", [
    pytest.param(dict(rows=2, cols=3, tlen=3, vlen=2, iw=8, acc_width=20, depth=40, banks=1),
                 marks=pytest.mark.soak),
    dict(rows=2, cols=3, tlen=3, vlen=2, iw=8, acc_width=20, depth=40, banks=2),
    dict(rows=4, cols=4, tlen=1, vlen=1, iw=6, acc_width=12, depth=33, banks=4)])
def test_long_random_run_on_verilator(tmp_path, config):
    seed = seed_from_env(9)
    rng = random.Random(seed)
    component = TensaurusMsu(**config)
    tiles = output_tiles([component.depth, component.depth - 1], per=2)
    runs = [workload(component, rng, 700, rows, hot=6) for rows, _ in tiles]
    run, _ = simulate(component, runs, tiles, seed, random_rates(component, rng), "native",
                      tmp_path)
    assert run.writes == want(component, runs, tiles)


@pytest.mark.verilator
def test_direct_mode_on_verilator_takes_the_cycles_of_amaranths_simulator(tmp_path):
    """The memory that keeps the writes, built natively, answers as the Python one does."""
    seed = seed_from_env(13)
    rng = random.Random(seed)
    component = TensaurusMsu(rows=2, cols=2, tlen=2, vlen=2, iw=5, acc_width=12, depth=6,
                             banks=2)
    tiles = output_tiles([6, 5], per=2)
    runs = [workload(component, rng, 40, rows) for rows, _ in tiles]
    rates = {**random_rates(component, rng), "out_read": 0.6}
    native_run, bench = simulate(component, runs, tiles, seed, rates, "native", tmp_path, True)
    python_run, _ = simulate(component, runs, tiles, seed, rates, direct=True)
    assert native_run == python_run
    assert left(native_run) == bench.memory


# -- interface, parameters, Verilog ------------------------------------------------------

@pytest.mark.parametrize("banks", [1, 2])
def test_declares_the_named_signature(banks):
    msu = TensaurusMsu(rows=3, cols=2, tlen=5, vlen=3, iw=7, acc_width=20, depth=9,
                       banks=banks)
    ports = [[(path, m) for path, m in sig.members.flatten() if m.is_port]
             for sig in (msu.signature, MsuSignature(3, 2, 7, 5, 3, 20, 24))]
    assert ports[0] == ports[1]
    assert msu.words == 9 * 5 * 2


@pytest.mark.parametrize("params, name", [
    ({"rows": 0}, "rows"), ({"cols": 17}, "cols"), ({"tlen": 65}, "tlen"),
    ({"vlen": 0}, "vlen"), ({"iw": 33}, "iw"), ({"acc_width": 1}, "acc_width"),
    ({"depth": 0}, "depth"), ({"depth": (1 << 20) + 1}, "depth"), ({"rows": "two"}, "rows"),
    ({"cols": 16, "banks": 32}, "banks"), ({"cols": 4, "banks": 3}, "banks"),
    ({"banks": 0}, "banks"), ({"cols": 2, "banks": 4}, "banks"),
    ({"cols": 3, "banks": 4}, "banks"), ({"addr_width": 0}, "addr_width"),
    ({"addr_width": 41}, "addr_width")])
def test_parameter_errors_name_the_parameter(params, name):
    with pytest.raises(ParameterError, match=f"{name}=") as error:
        TensaurusMsu(**params)
    assert "\n" not in str(error.value)


def test_banks_up_to_the_columns_and_sixteen():
    """The bounds accepted: a bank for each column, up to 16."""
    assert TensaurusMsu(cols=4, banks=4).bank_inputs(3) == [3, 7]
    assert TensaurusMsu(rows=1, cols=16, tlen=1, vlen=1, banks=16).bank_inputs(15) == [15]


@pytest.mark.parametrize("params", [
    {}, {"rows": 1, "cols": 1, "tlen": 1, "vlen": 1, "banks": 1},
    {"rows": 1, "cols": 1, "tlen": 1, "vlen": 1, "iw": 1, "acc_width": 2, "depth": 1,
     "banks": 1},
    {"rows": 2, "cols": 3, "tlen": 3, "vlen": 2, "iw": 8, "depth": 10, "banks": 1},
    {"rows": 2, "cols": 3, "tlen": 3, "vlen": 2, "iw": 8, "depth": 10, "banks": 2},
    {"rows": 4, "cols": 4, "tlen": 1, "vlen": 2, "depth": 512, "banks": 4},
    {"rows": 1, "cols": 16, "tlen": 1, "vlen": 1, "depth": 4, "banks": 16}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tensaurus_msu", params) == ""
