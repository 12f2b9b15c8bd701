# amaranth: UnusedElaboratable=no
"""The HYTE tensor accessor: the model, Fig. 5(b) on Amaranth's simulator (A streaming,
B buffering and overflowing), random programs under random stalls against the model,
one long run natively on Verilator, parameters and lint."""

import random

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.hyte_accessor import HyteAccessor
from sparseforge.sim.models.hyte_accessor import Accessor, AccessorError
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw.wire import HyteMode, HyteStatus
from sparseforge.tb.hyte_accessor import AccessorBench, random_program, simulate

FAST = dict.fromkeys(("segment", "fill", "read", "evict", "read_data"), 1.0)
A, B, C, D = 0xA, 0xB, 0xC, 0xD
STREAMING, BUFFERING = HyteMode.STREAMING, HyteMode.BUFFERING
HIT, MISS, END = HyteStatus.HIT, HyteStatus.MISS, HyteStatus.END


def accessor(depth):
    """The accessor of these tests: bytes, their low 4 bits a coordinate."""
    return HyteAccessor(depth=depth, width=8, coord_width=4)


def hit(x, last=0):
    """A word held, ``last`` on its segment's final one."""
    return {"data": x, "status": HIT, "last": last}


GONE, PAST = {"data": 0, "status": MISS, "last": 0}, {"data": 0, "status": END, "last": 0}


def test_model_fig5b_streaming_evicts_the_oldest_segment():
    m = Accessor(6, STREAMING)
    for op, arg in (("segment", 2), ("fill", A), ("fill", B), ("segment", 0),
                    ("segment", 1), ("fill", C)):
        getattr(m, op)(arg)
    assert m.free == 0 and not m.can_segment()          # time 3: full
    m.evict(1)                                          # time 4: (a, b) and its entry
    assert m.free == 3 and m.occupancy == 2
    m.segment(1)
    m.fill(D)                                           # time 5: d
    assert [m.read(s, 0) for s in range(3)] == [(END, 0, False), (HIT, C, True),
                                                (HIT, D, True)]


def test_model_rejects_illegal_operations():
    m = Accessor(4, STREAMING)
    with pytest.raises(AccessorError):
        m.fill(1)
    m.segment(3)
    with pytest.raises(AccessorError):
        m.segment(1)                # the open segment is not complete
    with pytest.raises(AccessorError):
        m.evict(1)
    with pytest.raises(AccessorError):
        m.read(1, 0)
    assert m.read(0, 0) is None     # not filled yet: unknown


def test_fig5b_a_streaming_waits_for_the_evict():
    program = [("segment", 2), ("fill", A), ("fill", B), ("segment", 0), ("segment", 1),
               ("fill", C), ("read", (0, 1)), ("read", (2, 0)), ("evict", 1),
               ("segment", 1), ("fill", D), ("read", (0, 0)), ("read", (1, 0)),
               ("read", (2, 0)), ("read", (2, 1))]
    bench = AccessorBench(accessor(8), program, 6, STREAMING, seed_from_env(0),
                          FAST)
    bench.sources["segment"].after = {}         # d is offered early: the buffer holds it
    run = pysim(bench)
    assert run.answers == [hit(B, 1), hit(C, 1), PAST, hit(C, 1), hit(D, 1), PAST]
    assert run.accepted["segment"][3] > run.accepted["evict"][0]


def test_fig5b_b_buffering_overflows_by_bypassing_without_evicting():
    program = [("segment", 2), ("fill", 1), ("fill", 2), ("segment", 1), ("fill", 3),
               ("segment", 3), ("fill", 4), ("fill", 5), ("fill", 6), ("segment", 1),
               ("fill", 7), ("read", (0, 1)), ("read", (0, 2)), ("read", (1, 0)),
               ("read", (1, 1)), ("read", (2, 0)), ("read", (3, 0)), ("evict", 4),
               ("segment", 1), ("fill", 8), ("read", (0, 0))]
    answers, bench = simulate(accessor(8), program, 6, BUFFERING,
                              seed_from_env(1), FAST)
    assert answers == [hit(2, 1), PAST, hit(3, 1), PAST, GONE, GONE, hit(8, 1)]
    # Nothing waited for room: the tile's 11 segments and fills took 11 cycles, and the
    # four segments stayed until the evict.
    start = bench.sources["segment"].accepted[0][0]
    assert bench.sources["segment"].accepted[3][0] - start == 9
    assert bench.sources["fill"].accepted[6][0] - start == 10


def test_buffering_state_while_overflowed():
    program = [("segment", 3), ("fill", 1), ("fill", 2), ("fill", 3), ("read", (0, 2)),
               ("evict", 1), ("segment", 1), ("fill", 9), ("read", (0, 0))]
    bench = AccessorBench(accessor(4), program, 3, BUFFERING, seed_from_env(2),
                          FAST)
    seen = []
    check = bench.check

    def spy(io, cycle):
        seen.append((io.get("occupancy"), io.get("bypass"), io.get("free")))
        check(io, cycle)

    bench.check = spy
    assert pysim(bench).answers == [GONE, hit(9, 1)]    # the evict ended the bypass
    assert (1, 1, 0) in seen and (0, 0, 3) in seen[3:]


def test_a_partial_evict_does_not_end_the_bypass():
    # Capacity 4: A (1 word) and B's entry and first word fit; B's second word bypasses.
    # Evicting A frees room, but B's later words still bypass: B was cut.
    program = [("segment", 1), ("fill", 1), ("segment", 4), ("fill", 2), ("fill", 3),
               ("evict", 1), ("fill", 4), ("fill", 5), ("read", (0, 0)), ("read", (0, 1)),
               ("read", (0, 2))]
    answers, _ = simulate(accessor(4), program, 4, BUFFERING, seed_from_env(3),
                          FAST)
    assert answers == [hit(2), GONE, GONE]      # cut: its final stored word not its last


def test_an_evict_waits_for_the_read_being_answered():
    program = [("segment", 2), ("fill", 1), ("fill", 2), ("read", (0, 0)), ("read", (0, 1)),
               ("evict", 1)]
    bench = AccessorBench(accessor(4), program, 4, STREAMING, 0, FAST)
    bench.sink.stall = lambda: bench.cycle >= 30      # the second read waits in the pipe
    assert pysim(bench).answers == [hit(1), hit(2, 1)]
    assert bench.sources["evict"].accepted[0][0] >= 30


def fig5c(split_k, split_j):
    """Fig. 5(c)'s 4 x 4 B tile (quadrants 3, 0, 0, 1) as a program, buffered in 6
    words (it overflows: the counts are of every word, stored or not), split at
    ``split_k``, ``split_j``; a word is its column (the low 4 bits) plus 0x10."""
    rows = [[0, 1], [0], [], [3]]
    program = [("tile", (4, split_k, split_j))]
    for cols in rows:
        program += [("segment", len(cols)), *(("fill", 0x10 | c) for c in cols)]
    return [*program, ("evict", 4), ("tile", (0, 0, 0))]


@pytest.mark.parametrize("split, counts", [
    ((2, 2), [[3, 0], [0, 1]]),         # the paper's halves
    ((0, 0), [[0, 0], [0, 4]]),         # every row and column in the second half
    ((4, 15), [[4, 0], [0, 0]]),        # the largest splits: all in the first
    ((3, 3), [[3, 0], [0, 1]]),         # a split on the word (k = 3, j = 3): second
    ((1, 1), [[1, 1], [1, 1]]),
])
def test_fig5c_the_accessor_counts_the_quadrants(split, counts):
    _, bench = simulate(accessor(8), fig5c(*split),
                              6, BUFFERING, seed_from_env(4))
    zero = {f"cnt{r}{c}": 0 for r in range(2) for c in range(2)}
    assert pysim(bench).counts == [
        {f"cnt{r}{c}": counts[r][c] for r in range(2) for c in range(2)}, zero]


def test_model_counts_only_the_tiles_segments():
    m = Accessor(16, STREAMING, coord_width=4)
    m.segment(1)
    m.fill(3)                           # before the tile: not counted
    m.tile(2, 1, 2)
    with pytest.raises(AccessorError):
        m.tile(1, 0, 0)                 # one tile counts at a time
    for length, words in ((2, (1, 2)), (1, (7,))):
        m.segment(length)
        for w in words:
            m.fill(w)
        assert m.counts == ([] if length == 2 else [[[1, 1], [0, 1]]])
    m.segment(1)
    m.fill(0)                           # after it: not counted
    assert m.counts == [[[1, 1], [0, 1]]] and m.can_tile()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode", [STREAMING, BUFFERING])
@pytest.mark.parametrize("depth", [4, 16])
def test_random_programs_under_stalls(depth, mode, seed):
    seed = seed_from_env(seed)
    rng = random.Random(seed)
    capacity = rng.randint(2, depth)
    program = random_program(rng, capacity, mode, 600)
    answers, bench = simulate(accessor(depth), program, capacity, mode, seed)
    assert answers == bench.outputs["read_data"]
    assert {a["status"] for a in answers} >= ({HIT, END} | ({MISS} if mode else set()))
    counts = bench.result().counts
    assert counts == bench.outputs["counts"] and len(counts) > 5
    assert all(sum(c[f"cnt{n}"] for c in counts) for n in ("00", "01", "10", "11"))


def test_one_read_a_cycle():
    program = [("segment", 32)] + [("fill", v) for v in range(32)]
    program += [("read", (0, o)) for o in range(33)]
    answers, bench = simulate(accessor(64), program, 64, STREAMING, 0, FAST)
    assert answers == [hit(v, int(v == 31)) for v in range(32)] + [PAST]
    reads = [c for c, _ in bench.sources["read"].accepted]
    assert reads[-1] - reads[0] == 32
    # Each answered 4 cycles after it was taken (2 before the read stage was split for
    # the clock: registered metadata addresses and the metadata memory's output).
    assert [c for c, _ in bench.sink.received] == [c + 4 for c in reads]


@pytest.mark.verilator
@pytest.mark.parametrize("mode", [STREAMING, BUFFERING])
def test_long_random_program_natively_on_verilator(tmp_path, mode):
    seed = seed_from_env(7 + mode)
    program = random_program(random.Random(seed), 48, mode, 40_000)
    answers, bench = simulate(accessor(64), program, 48, mode, seed,
                              engine="native", work_dir=tmp_path)
    assert answers == bench.outputs["read_data"] and len(answers) > 5_000


@pytest.mark.parametrize("params, message", [({"depth": 6}, "depth=6"),
                                             ({"width": 0}, "width=0"),
                                             ({"count_width": 8}, "count_width=8"),
                                             ({"width": 8, "coord_width": 9},
                                              "coord_width=9"),
                                             ({"coord_width": 0}, "coord_width=0")])
def test_bad_parameters(params, message):
    with pytest.raises(ParameterError, match=message):
        HyteAccessor(**params)


def test_a_coordinate_may_be_the_whole_word():
    assert HyteAccessor(width=8, coord_width=8).coord_width == 8


@pytest.mark.parametrize("params", [{"depth": 4, "width": 1, "coord_width": 1}, {},
                                    {"depth": 1024, "width": 32, "count_width": 20}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("hyte_accessor", params) == ""
