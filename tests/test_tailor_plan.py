# amaranth: UnusedElaboratable=no
"""The host's plan of a Tailor run: exact streams on small tiles, and the RTL obeying it."""

import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.tailor import Tailor
from sparseforge.sim.runners import pysim
from sparseforge.sw.tailor_plan import plan_tiles
from sparseforge.tb.tailor import TileBench

ALL_IN = dict.fromkeys(("fill", "owfill", "read", "update", "shrink", "read_data"), 1.0)


def tile(length, reads, shrinks=None):
    return {"length": length, "passes": len(reads), "reads": reads, "shrinks": shrinks or {},
            "values": [10 + i for i in range(length)]}


def test_a_shrink_between_passes_makes_the_next_wrap_backfill_and_split_again():
    # D = 4, F = 2 (B = 2), L = 6: the child frees one element after its first pass.
    plan = plan_tiles([tile(6, [list(range(6)), list(range(5)), list(range(5))], {0: 1})], 4, 2)
    assert plan.fill_value.tolist() == [10, 11, 12, 13]
    # Pass 1: indices 4, 5 after the split. Pass 2 waits for the shrink; its wrap to 2
    # backfills, what is left (5) still overbooks, so the buffer splits again and the
    # bumped part starts at gone + B = 3 for pass 3. Every wrap waits for all F credits.
    assert plan.owfill_data.tolist() == [14, 15, 12, 13, 14, 15, 13, 14, 15]
    assert plan.owfill_last.tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 1]
    assert plan.owfill_credits.tolist() == [1, 1, 2, 1, 1, 1, 2, 1, 1]
    assert plan.owfill_after_shrinks.tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert plan.owfill_after_fills.tolist() == [4] * 9
    assert plan.shrink_count.tolist() == [1, 4] and plan.shrink_ends_tile.tolist() == [0, 1]
    assert plan.shrink_after_reads.tolist() == [6, 16]
    assert plan.read_truth.tolist() == [*range(10, 16), *range(11, 16), *range(11, 16)]
    assert plan.transfers == 4 + 9


def test_a_backfill_that_leaves_the_tile_fitting_ends_the_streaming():
    plan = plan_tiles([tile(5, [list(range(5)), list(range(3)), list(range(3))], {0: 2})], 4, 2)
    assert plan.owfill_data.tolist() == [14, 12, 13, 14]     # pass 3 reads the buffet alone
    assert plan.shrink_count.tolist() == [2, 3]


def test_the_next_tile_waits_for_the_end_of_the_last():
    plan = plan_tiles([tile(3, [[0, 1, 2]]), tile(6, [list(range(6))])], 4, 2)
    assert plan.fill_after_shrinks.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert plan.owfill_after_fills.tolist() == [7, 7]


def test_a_read_beyond_the_tile_is_refused():
    with pytest.raises(ParameterError, match="tile 0 pass 1"):
        plan_tiles([tile(6, [list(range(6)), [5]], {0: 1})], 4, 2)


@pytest.mark.parametrize("tiles", [
    [tile(6, [list(range(6)), list(range(5)), list(range(5))], {0: 1})],
    [tile(5, [list(range(5)), list(range(3)), list(range(3))], {0: 2}), tile(2, [[0, 1]])],
])
def test_the_rtl_runs_the_plan_and_agrees_with_the_model(tiles):
    result = pysim(TileBench(Tailor(depth=4, width=8, fifo=2, tile=8), tiles, 0, ALL_IN))
    plan = plan_tiles(tiles, 4, 2)
    assert result.read_data == plan.read_truth.tolist()
    assert result.transfers == plan.transfers
