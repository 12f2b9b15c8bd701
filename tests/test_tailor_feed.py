# amaranth: UnusedElaboratable=no
"""A tile held in a Tailor: its replaying parent against the Tailor's model, the tagged
reads of the held tile, the cost formula, native runs on real CISS entries, lint."""

import random

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.utils import ceil_log2

from sparseforge.core.errors import ParameterError
from sparseforge.hw.compose.held_tile import HeldTile
from sparseforge.hw.tailor_feed import TaggedResponder, TailorFeed
from sparseforge.hw.tensaurus_tlu import TensaurusTlu
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import ciss as cissmod
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.tailor_feed import pass_starts, replay_start, tile_cost, tile_report
from sparseforge.tb import native
from sparseforge.tb.tailor_feed import FeedBench, HeldTileBench, TluReadsBench, random_tile

D, F = 8, 2                     # B = 6
STREAMS = ("passes", "entries", "mem__request", "mem__response", "report", "tailor", "read")
ALL_IN = dict.fromkeys(STREAMS, 1.0)
# Back-pressure everywhere; pass commands late (the reader runs ahead of them); the reader
# slow (the producer runs ahead of it).
PROFILES = {"stalls": None, "late_commands": {"passes": 0.05},
            "slow_reader": {"mem__request": 0.1, "read": 0.1, "passes": 1.0, "entries": 1.0}}
# Hand-worked on HD = 16, HF = 4, B = 12 (tile_cost's rules, counted by hand; the cycles
# of a tile that overbooks hold for F >= 4), with the figures the RTL gives below: per
# pass (entries, fills, owfills, dropped, refetched, cycles), the last pass's cycles with
# the shrink.
HD, HF = 16, 4
HAND = {
    # fits: pass 1 is the command, 9 entries, the end and the read of entry 8; later
    # passes are the reader's 9 reads.
    (9, 3, None): [(9, 9, 0, 0, 0, 12), (0, 0, 0, 0, 0, 9), (0, 0, 0, 0, 0, 10)],
    # exactly at capacity: 16 fills, no owfill; pass 2 is 16 reads and the shrink.
    (16, 2, None): [(16, 16, 0, 0, 0, 19), (0, 0, 0, 0, 0, 17)],
    # overbooks by one: index 16 owfilled (two cycles' wait for the split's credits, the
    # feed seeing them a cycle late); pass 2 re-runs from 0, drops 0..11, refetches
    # 12..16: 17 entries, end, command = 19 > 17 reads.
    (17, 2, (0,)): [(17, 16, 1, 0, 0, 22), (17, 0, 5, 12, 5, 20)],
    # by six times F: pass 2 from B (28 entries, 30 cycles < 40 reads), pass 3 from 2
    # (drops 10, 38 entries, 40 cycles: the producer as long as the reader).
    (40, 3, (12, 2)): [(40, 16, 24, 0, 0, 45), (28, 0, 28, 0, 28, 40),
                       (38, 0, 28, 10, 28, 41)],
}


def tiles_of(cases, width=16, seed=0):
    """Tiles of random entries, one per ``(length, passes, starts)``."""
    rng = random.Random(seed)
    return [{"values": [rng.getrandbits(width) for _ in range(length)], "passes": passes,
             "starts": None if starts is None else list(starts)}
            for length, passes, starts in cases]


def mixed_tiles(rng, depth, fifo, width):
    """A tile that fits, one at capacity, one over by one, one by several times F, and an
    empty one, each read 1, 2 and 5 times, in a random order."""
    lengths = [depth // 2 + 1, depth, depth + 1, depth + 3 * fifo + 1, 0]
    tiles = [random_tile(rng, length, passes, depth, fifo, width)
             for length in lengths for passes in (1, 2, 5)]
    rng.shuffle(tiles)
    return tiles


# -- the host's side ------------------------------------------------------------------

def test_the_cost_formula_on_hand_worked_tiles():
    for (length, passes, starts), want in HAND.items():
        got = [(c.entries, c.fills, c.owfills, c.dropped, c.refetched, c.cycles)
               for c in tile_cost(length, passes, HD, HF, starts)]
        assert got == want, (length, passes, starts)
    assert tile_report(40, 3, HD, HF, (12, 2)) == {"length": 40, "dropped": 10,
                                                  "refetched": 56}
    assert tile_report(17, 5, HD, HF) == {"length": 17, "dropped": 0, "refetched": 20}
    assert tile_report(9, 5, D, F) == {"length": 9, "dropped": 0, "refetched": 12}


def test_the_cycles_of_a_tile_that_overbooks_need_a_fifo_region_of_four():
    assert tile_cost(9, 2, 8, 4, (0,))[0].cycles == 9 + 2 + 1 + 2
    assert tile_cost(8, 2, 8, 2)[1].cycles == 9                  # fits: any F
    with pytest.raises(ParameterError, match="fifo=2: a tile that overbooks"):
        tile_cost(9, 2, 8, 2, (0,))


def test_the_rtl_takes_the_formulas_cycles_and_counts():
    """The hand-worked tiles back to back, nothing stalled: each tile's report comes the
    cycle after its shrink, at the sum of the formula's cycles."""
    cases = list(HAND)
    bench = HeldTileBench(HeldTile(depth=HD, fifo=HF, tile=64, width=16), tiles_of(cases),
                          seed_from_env(1), ALL_IN)
    run = pysim(bench)
    ends = np.cumsum([sum(c.cycles for c in tile_cost(length, passes, HD, HF, starts))
                      for length, passes, starts in cases])
    assert [cycle for cycle, _ in bench.streams["report"].received] == list(ends)
    assert run.reports == [tile_report(length, passes, HD, HF, starts)
                           for length, passes, starts in cases]


def test_a_later_pass_starts_at_most_at_b():
    assert pass_starts(9, 3, D, F, [6, 0]) == [0, 6, 0]
    with pytest.raises(ParameterError, match="past B = 6"):
        pass_starts(9, 2, D, F, [7])
    assert pass_starts(8, 2, D, F, [7]) == [0, 7]            # fits: no producer run
    with pytest.raises(ParameterError, match="2 passes need 1 later starts"):
        pass_starts(9, 2, D, F, [])


def test_a_re_run_starts_at_the_input_tile_holding_b():
    assert [replay_start(c, D, F) for c in ([3, 4, 5], [6, 1, 5], [7, 5], [4, 4],
                                            [0, 6, 5])] == [3, 6, 0, None, 6]


# -- the feed against the Tailor's model ------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_feed_on_the_tailors_model(profile):
    """Every kind of tile, 1, 2 and 5 passes, the later passes from random starts; the
    model refuses a write, owfill without credits or shrink the Tailor would not take,
    and every read of every pass returns the tile's entry."""
    seed = seed_from_env(11)
    tiles = mixed_tiles(random.Random(seed), D, F, 16)
    bench = FeedBench(TailorFeed(D, F, 32, 16), tiles, seed, PROFILES[profile])
    run = pysim(bench)
    assert run.answers == sum(len(t["values"]) * t["passes"] for t in tiles)


def test_the_longest_tile_passes_and_a_longer_one_is_refused():
    component = HeldTile(depth=D, fifo=F, tile=16, width=8)
    run = pysim(HeldTileBench(component, tiles_of([(16, 2, (3,))], 8), seed_from_env(2)))
    assert run.reports == [{"length": 16, "dropped": 3, "refetched": 10}]
    with pytest.raises(ParameterError, match="a tile of 17 entries"):
        HeldTileBench(component, tiles_of([(17, 1, None)], 8), 0)


def test_feed_takes_a_tailors_geometry_only():
    assert TailorFeed(8, 4, 16, 1).base == 4
    for depth, fifo, tile in ((8, 5, 16), (8, 0, 16), (8, 4, 8)):
        with pytest.raises(ValueError, match=f"fifo={fifo}, depth={depth}, tile={tile}"):
            TailorFeed(depth, fifo, tile, 1)


def test_responder_refuses_an_address_narrower_than_the_index():
    assert len(TaggedResponder(8, 5, 5, 2).mem.request.payload.addr) == 5
    with pytest.raises(ValueError, match="addr_width=4"):
        TaggedResponder(8, 5, 4, 2)


# -- the composite: tagged reads of the held tile ---------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_held_tile_answers_every_read_with_its_tag(profile):
    seed = seed_from_env(21)
    tiles = mixed_tiles(random.Random(seed), D, F, 16)
    bench = HeldTileBench(HeldTile(depth=D, fifo=F, tile=32, width=16, tags=4), tiles, seed,
                          PROFILES[profile])
    run = pysim(bench)
    assert run.answers == bench.outputs["mem__response"]
    assert run.reports == bench.outputs["report"]


def real_tiles(matrix, pes, depth, fifo, rows, rng):
    """The CISS entries of ``matrix`` for ``pes`` PEs, its rows in input tiles of
    ``rows`` rows (each converted alone), joined into tiles of one to eight input tiles;
    a later pass re-runs from the input tile that holds index B."""
    blocks = [cissmod.encode(matrix[r:r + rows], pes, dw=16, iw=15)
              for r in range(0, matrix.shape[0], rows)]
    words = [[int(w[0]) for w in b.words] for b in blocks]
    tiles, at = [], 0
    while at < len(words):
        group = words[at:at + rng.randint(1, 8)]
        at += len(group)
        passes = rng.choice((1, 2, 5))
        start = replay_start([len(g) for g in group], depth, fifo)
        tiles.append({"values": [w for g in group for w in g], "passes": passes,
                      "starts": None if start is None else [start] * (passes - 1)})
    return tiles


@pytest.mark.verilator
@pytest.mark.soak
def test_real_ciss_entries_natively(shared_data, tmp_path):
    """A real matrix's CISS entries for 2 PEs (62-bit entries) in tiles of input tiles,
    on a Tailor of 32 with a FIFO region of 8: tiles that fit and that overbook by up
    to several times F, 1 to 5 passes, random stalls on every stream, natively."""
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr03.mtx").tocsr()
    seed = seed_from_env(31)
    rng = random.Random(seed)
    tiles = real_tiles(matrix, 2, 32, 8, 8, rng)
    lengths = [len(t["values"]) for t in tiles]
    assert min(lengths) <= 32 and max(lengths) > 32 + 3 * 8
    component = HeldTile(depth=32, fifo=8, tile=256, width=62, tags=8)
    bench = HeldTileBench(component, tiles, seed)
    done = native.run(bench, work_dir=tmp_path)
    assert done.outputs["report"] == bench.outputs["report"]
    assert sum(r["refetched"] for r in done.outputs["report"]) > 0
    # The same stalls in both simulators: the same cycles.
    over = [t for t in tiles if len(t["values"]) > 32 and t["passes"] > 1]
    few = [min(over, key=lambda t: len(t["values"]) * t["passes"]), tiles[0]]
    slow = pysim(HeldTileBench(component, few, seed))
    assert native.run(HeldTileBench(component, few, seed), work_dir=tmp_path).cycles == (
        slow.cycles)


class TluOnHeldTile(wiring.Component):
    """The Tensaurus TLU (matrices, ``pes`` rows) reading a held tile through its tagged
    memory port: the TLU's ``start`` and ``lanes``, the held tile's producer side."""

    def __init__(self, pes, tags, depth, fifo, tile):
        self.depth, self.fifo, self.tile = depth, fifo, tile
        self.tlu = TensaurusTlu(pes=pes, dw=16, iw=15, order=2, tags=tags,
                                addr_width=ceil_log2(tile))
        self.held = HeldTile(depth=depth, width=pes * 31, fifo=fifo, tile=tile, tags=tags)
        tlu, held = self.tlu.signature.members, self.held.signature.members
        super().__init__({"start": tlu["start"], "lanes": tlu["lanes"],
                          **{name: held[name] for name in ("passes", "entries", "report")}})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tlu, m.submodules.held = self.tlu, self.held
        wiring.connect(m, self.tlu.mem, self.held.mem)
        wiring.connect(m, wiring.flipped(self.start), self.tlu.start)
        for p, lane in enumerate(self.lanes):
            wiring.connect(m, self.tlu.lanes[p], wiring.flipped(lane))
        for name in ("passes", "entries"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(self.held, name))
        wiring.connect(m, self.held.report, wiring.flipped(self.report))
        return m


def test_the_tlu_reads_a_held_tile_as_it_reads_memory(shared_data):
    """Input tiles of a real matrix's CISS entries (8 rows each, converted alone), three
    to a tile that overbooks a Tailor of 32 (F 8) by more than 3F, then one that fits:
    the TLU, started per input tile and pass at its offset in the tile, hands each PE
    row what it would from memory, pass after pass, while the bumped part is refetched."""
    matrix = read_matrix(shared_data / "matrices" / "suitesparse" / "bcspwr01.mtx").tocsr()
    blocks = [cissmod.encode(matrix[r:r + 8], 2, dw=16, iw=15) for r in range(0, 32, 8)]
    tiles, passes = [blocks[:3], blocks[3:]], [2, 2]
    assert sum(b.entries for b in blocks[:3]) > 32 + 3 * 8 and blocks[3].entries <= 32
    bench = TluReadsBench(TluOnHeldTile(2, 4, 32, 8, 128), tiles, passes, seed_from_env(41))
    run = pysim(bench)
    assert run.reports[0]["refetched"] > 0 and run.reports[1]["refetched"] == 0


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(8))
def test_soak_random_tiles_natively(seed, tmp_path):
    """48 random tiles up to eight times the capacity, 1 to 8 passes, later passes from
    random starts, random stalls at a random rate on every stream, natively: on a Tailor
    of 64 (F 16) and of 256 (F 8), read with 2, 4, 8 or 16 tags."""
    rng = random.Random(seed_from_env(100 + seed))
    depth, fifo = ((64, 16), (256, 8))[seed % 2]
    tiles = [random_tile(rng, rng.choice([0, rng.randint(1, depth), depth, depth + 1,
                                           rng.randint(depth, 8 * depth)]),
                         rng.randint(1, 8), depth, fifo, 34) for _ in range(48)]
    rates = {name: rng.choice((0.3, 0.7, 1.0)) for name in STREAMS}
    bench = HeldTileBench(HeldTile(depth=depth, fifo=fifo, tile=8 * depth, width=34,
                                   tags=(2, 4, 8, 16)[seed % 4]), tiles, seed, rates)
    done = native.run(bench, work_dir=tmp_path)
    assert done.outputs["report"] == bench.outputs["report"]


@pytest.mark.parametrize("params", [HeldTile.REPORT[0],
                                    {"depth": 4, "fifo": 1, "tile": 8, "width": 1,
                                     "tags": 2, "count_width": 8}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("held_tile", params) == ""
