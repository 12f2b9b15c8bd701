# amaranth: UnusedElaboratable=no
"""The Tailor: model, Fig. 5, Amaranth-simulator runs, Verilator co-simulation, lint."""

import json
import random

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.buffet import Buffet
from sparseforge.hw.tailor import Tailor
from sparseforge.sim.models.tailor import Tailor as Model
from sparseforge.sim.models.tailor import TailorError
from sparseforge.sim.runners import pysim, seed_from_env, verilator
from sparseforge.sw.traffic import tile_transfers
from sparseforge.tb.buffet import BuffetBench, random_program
from sparseforge.tb.tailor import ProgramBench, TileBench, random_tiles

ALL_IN = {k: 1.0 for k in ("fill", "owfill", "read", "update", "shrink", "read_data")}

# Fig. 5: capacity 4, FIFO region 2, tile a..f (index 0..5).
A, B, C, D, E, F = 0xA, 0xB, 0xC, 0xD, 0xE, 0xF
FIG5 = [("fill", A), ("fill", B), ("fill", C), ("fill", D),
        ("owfill", (E, 0)), ("owfill", (F, 1)),
        ("read", 5), ("read", 0), ("read", 1),
        ("owfill", (C, 0)), ("read", 2), ("owfill", (D, 0))]
# Buffer contents after each operation, as the figure draws them ((index, value) per offset).
FIG5_STATES = {
    3: [(0, A), (1, B), (2, C), (3, D)],
    4: [(0, A), (1, B), (4, E), None],
    5: [(0, A), (1, B), (4, E), (5, F)],
    9: [(0, A), (1, B), (2, C), (5, F)],
    11: [(0, A), (1, B), (2, C), (3, D)],
}


def program_bench(program, depth=4, fifo=2, tile=8, rates=None, seed=0):
    return ProgramBench(Tailor(depth=depth, width=8, fifo=fifo, tile=tile), program, seed,
                        rates or ALL_IN)


def run_program(program, **kwargs):
    bench = program_bench(program, **kwargs)
    pysim(bench)
    return bench


# -- the model ------------------------------------------------------------------

def test_model_reproduces_fig5_state_by_state():
    m = Model(4, 2)
    reads = []
    for n, (kind, arg) in enumerate(FIG5):
        if kind == "read":
            reads.append(m.step(read=arg))
        else:
            m.step(**{kind: arg})
        if n in FIG5_STATES:
            assert m.slots() == FIG5_STATES[n], f"after operation {n} ({kind})"
    assert reads == [F, A, B, C]
    # Read(5) found f at offset 3: the FIFO offset (index - offset) was 2, as drawn.
    assert FIG5_STATES[5][3][0] - 3 == 2


def test_model_rejects_what_the_hardware_refuses():
    m = Model(4, 2)
    with pytest.raises(TailorError):
        m.step(owfill=(1, 0))                 # not full
    for v in range(4):
        m.fill(v)
    m.step(owfill=(4, 0))
    with pytest.raises(TailorError):
        m.read(3)                             # cleared by the split, not yet re-streamed
    with pytest.raises(TailorError):
        m.update(2, 9)                        # bumped: re-streamed, an update would be lost
    with pytest.raises(TailorError):
        m.shrink(3)                           # only buffet-region elements, or all
    m.shrink(4)
    assert m.occupancy == 0 and not m.split


def test_model_credits_follow_the_child():
    m = Model(8, 2)                           # B = 6
    for v in range(8):
        m.fill(v)
    assert m.fifo_credits == 0                # tail elements 6, 7 not yet passed
    m.step(read=6)
    assert m.fifo_credits == 0
    m.step(request=9)                         # asks for index 9: passes 6, 7, 8
    assert m.frontier == 3 and m.fifo_credits == 2
    m.step(owfill=(8, 0))                     # index 8 is already passed: replaceable
    assert m.fifo_credits == 2
    m.step(owfill=(9, 0))
    assert m.fifo_credits == 1


# -- directed, on Amaranth's simulator --------------------------------------------

def test_fig5_on_the_rtl():
    bench = run_program(FIG5)
    assert [v for _, v in bench.sink.received] == [F, A, B, C]
    assert bench.model.slots() == FIG5_STATES[11]


def test_read_of_a_bumped_element_stalls_until_it_arrives():
    program = [*FIG5[:5], ("read", 5), ("owfill", (F, 1))]
    bench = program_bench(program)
    # Strict order would never present the owfill behind a stalled read: let it run free.
    bench.sources["owfill"].gate = None
    bench.sources["owfill"].stall = lambda: bench.cycle >= 30
    pysim(bench)
    (read_cycle, _), = bench.sources["read"].accepted
    assert read_cycle > bench.sources["owfill"].accepted[-1][0] >= 30
    assert [v for _, v in bench.sink.received] == [F]


def test_a_copy_from_an_earlier_pass_is_not_read():
    # After Fig. 5 the FIFO region holds c, d of pass 2. Read(3) takes d; a
    # following Read(2) asks for pass 3's c (re-streamed here with new data),
    # not the stale pass-2 copy still in the buffer.
    program = [*FIG5, ("read", 3), ("read", 2),
               ("owfill", (E, 0)), ("owfill", (F, 1)), ("owfill", (0xCC, 0))]
    bench = program_bench(program)
    strict = bench.sources["owfill"].gate
    bench.sources["owfill"].gate = lambda n: strict(n) if n < 4 else (
        len(bench.sources["read"].accepted) >= 5)
    pysim(bench)
    assert [v for _, v in bench.sink.received] == [F, A, B, C, D, 0xCC]


def test_a_read_never_takes_the_slot_an_owfill_overwrites_that_cycle():
    # The FIFO region holds e, f; Read(4) and OWFill(c), which replaces e,
    # arrive on the same cycle. The overwrite proceeds; the read waits for the
    # next e of the stream.
    program = [*FIG5[:6], ("read", 4), ("owfill", (C, 0)), ("owfill", (D, 0)),
               ("owfill", (0xEE, 0))]
    bench = program_bench(program)
    fills = bench.sources["fill"]
    strict = bench.sources["owfill"].gate
    bench.sources["owfill"].gate = lambda n: strict(n) if n < 2 else bench.cycle >= 20
    bench.sources["read"].gate = lambda n: len(fills.accepted) == 4 and bench.cycle >= 20
    pysim(bench)
    owfills = [c for c, _ in bench.sources["owfill"].accepted]
    (read_cycle, _), = bench.sources["read"].accepted
    assert owfills[2] == 20 and read_cycle > owfills[-1]
    assert [v for _, v in bench.sink.received] == [0xEE]


def test_a_shrink_while_split_frees_only_the_buffet_region():
    # Split with B = 2: a shrink of 3 would free a FIFO element; it is never accepted.
    bench = program_bench([*FIG5[:5], ("shrink", 3)])
    bench.patience = 40
    with pytest.raises(AssertionError, match="no transfer"):
        pysim(bench)
    assert bench.sources["shrink"].accepted == []


def test_a_shrink_of_the_whole_buffet_region_while_split_is_accepted():
    # Split with B = 2: shrink(2) frees a and b, exactly the buffet region (first = 2).
    # c, d went with the split; the stream's wrap back to c (now index 0) backfills.
    program = [*FIG5[:5], ("shrink", 2), ("owfill", (F, 1)), ("owfill", (C, 0)),
               ("owfill", (D, 0)), ("read", 0), ("read", 1)]
    bench = run_program(program)
    assert [v for _, v in bench.sink.received] == [C, D]
    assert bench.model.backfill and bench.model.occupancy == 2


def test_the_wrap_after_a_partial_shrink_backfills():
    # Fig. 5 up to f, the child reads its pass, then frees a: b is index 0, the bumped
    # part starts at index 1 and the stream's wrap to c (index 1) backfills: the FIFO
    # region is released, c lands after b and the next owfills append d and e; the
    # buffer is full again and f splits it anew.
    program = [*FIG5[:6], ("read", 5), ("read", 0), ("read", 1), ("shrink", 1),
               ("owfill", (C, 0)), ("owfill", (D, 0)), ("owfill", (E, 0)),
               ("read", 0), ("read", 1), ("read", 2), ("read", 3), ("owfill", (F, 1)),
               ("read", 4)]
    bench = run_program(program)
    assert [v for _, v in bench.sink.received] == [F, A, B, B, C, D, E, F]
    assert bench.model.split and bench.model.first == 2


def test_a_partial_shrink_after_the_wrap_backfills_at_the_next_wrap():
    # The wrap to c comes before the child frees a: that pass streams on, split, with
    # indices shifted down (b = 0, c = 1, ...); the following wrap to c backfills.
    program = [*FIG5[:6], ("read", 0), ("read", 1), ("read", 4), ("read", 5),
               ("owfill", (C, 0)), ("shrink", 1), ("read", 0), ("read", 1),
               ("owfill", (D, 0)), ("read", 2), ("owfill", (E, 0)), ("read", 3),
               ("owfill", (F, 1)), ("read", 4), ("owfill", (C, 0))]
    bench = run_program(program)
    assert bench.model.backfill and bench.model.occupancy == 2
    # d, e append until the buffer is full; f splits it again, clearing d and e.
    more = run_program([*program, ("owfill", (D, 0)), ("owfill", (E, 0)), ("owfill", (F, 1)),
                        ("read", 0), ("read", 1), ("read", 4)])
    assert [v for _, v in more.sink.received] == [A, B, E, F, B, C, D, E, F, B, C, F]
    assert more.model.split and more.model.first == 2


def test_reads_of_the_buffet_region_sustain_one_per_cycle_while_split():
    depth, fifo = 16, 4
    program = [("fill", v) for v in range(depth)] + [("owfill", (0x40, 0))]
    program += [("read", i % (depth - fifo)) for i in range(48)]
    bench = program_bench(program, depth, fifo, 32)
    bench.sources["read"].gate = lambda n: bench.model.split
    pysim(bench)
    cycles = [c for c, _ in bench.sources["read"].accepted]
    assert cycles[-1] - cycles[0] == len(cycles) - 1


def test_a_tile_that_fits_behaves_exactly_like_the_buffet():
    seed = seed_from_env(5)
    program = random_program(random.Random(seed), 8, 8, 1200)
    runs = []
    for dut in (Buffet(depth=8, width=8), Tailor(depth=8, width=8, fifo=2, tile=16)):
        bench = BuffetBench(dut, program, seed)
        runs.append((pysim(bench).cycles, bench.sink.received))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("depth, fifo", [(4, 1), (4, 2), (8, 2), (16, 4), (16, 8)])
def test_overbooked_tiles_on_amaranth_simulator(depth, fifo, seed):
    seed = seed_from_env(seed)
    tiles = random_tiles(random.Random(seed), depth, fifo, [0.5, 1, 1.5, 2, 4, 3.25, 1.25], 5,
                         skip=0.3, shrink=0.6)
    bench = TileBench(Tailor(depth=depth, width=8, fifo=fifo, tile=8 * depth), tiles, seed,
                      {"owfill": 0.5, "read_data": 0.5})
    pysim(bench)
    assert bench.model.split is False and bench.responses == bench.reads
    assert bench.tiles_done == len(tiles)


def test_scan_order_parent_at_full_speed_needs_one_stream_per_pass():
    depth, fifo, passes = 16, 4, 4
    tiles = [{"length": 40, "passes": passes, "reads": [list(range(40))] * passes}]
    result = pysim(TileBench(Tailor(depth=depth, width=8, fifo=fifo, tile=64), tiles, 0, ALL_IN))
    assert result.transfers == tile_transfers(40, depth, fifo, passes)[1] == 40 + 3 * 28


# -- parameters and Verilog -----------------------------------------------------

@pytest.mark.parametrize("kwargs, name", [({"fifo": 64}, "fifo"), ({"fifo": 3}, "fifo"),
                                          ({"tile": 64}, "tile"), ({"depth": 2}, "depth")])
def test_bad_parameters_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=name):
        Tailor(**kwargs)


@pytest.mark.parametrize("params", [{"depth": 4, "fifo": 1, "tile": 8, "width": 1},
                                    {"depth": 64, "fifo": 16, "tile": 256, "width": 32},
                                    {"depth": 1024, "fifo": 64, "tile": 4096, "width": 32}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("tailor", params) == ""


# -- Verilator co-simulation ----------------------------------------------------

@pytest.mark.verilator
@pytest.mark.parametrize("depth, fifo", [pytest.param(8, 2, marks=pytest.mark.soak), (64, 16)])
def test_overbooked_tiles_on_verilator(tmp_path, depth, fifo):
    seed = seed_from_env(21 + depth)
    run = verilator("tailor", "sparseforge.tb.tailor",
                    params={"depth": depth, "fifo": fifo, "tile": 4 * depth, "width": 32},
                    args={"passes": 3, "skip": 0.2}, seed=seed, work_dir=tmp_path)
    assert run.result.owfills > 0


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(200, 206))
@pytest.mark.parametrize("depth, fifo", [(4, 2), (32, 4), (256, 64)])
def test_soak_on_verilator(tmp_path, depth, fifo, seed):
    ratios = [r / 4 for r in range(2, 17)] * 3
    verilator("tailor", "sparseforge.tb.tailor",
              params={"depth": depth, "fifo": fifo, "tile": 4 * depth, "width": 16},
              args={"ratios": ratios, "passes": 4, "skip": 0.3,
                    "rates": {"read_data": 0.4, "owfill": 0.5}},
              seed=seed, work_dir=tmp_path)


# -- the benchmark ----------------------------------------------------------------

def _bench(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "sparseforge", "bench", "tailors", *args],
                          capture_output=True, text=True)


@pytest.mark.soak
@pytest.mark.verilator
def test_bench_counts_transfers_from_the_rtl():
    result = _bench("--quick", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [row["ratio"] for row in out["rows"]] == [0.5, 1, 1.5, 2, 4]
    for row in out["rows"]:
        for kind in ("buffet", "tailor"):
            assert row[kind]["transfers"] == row[kind]["expected"], (row["ratio"], kind)
        if row["length"] > out["depth"]:
            assert row["tailor"]["transfers"] < row["buffet"]["transfers"]
            assert row["tailor"]["buffet_region_reads_per_cycle"] == 1.0


def test_bench_rejects_a_fifo_region_too_large():
    result = _bench("--depth", "16", "--fifo", "16")
    assert result.returncode == 2
    assert "fifo" in result.stderr and "Traceback" not in result.stderr
