"""Host planning of Eureka runs (sw.eureka_plan) and the cycle model (sw.eureka_cycles)."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.sw.eureka_cycles import BLOCK_FIGURES, SYSTOLIC_FIGURES, suds_report
from sparseforge.sw.eureka_format import EurekaFormat
from sparseforge.sw.eureka_plan import plan, slabs_for, systolic_plan
from sparseforge.sw.wire import PER_SLOT


def figure_7():
    a = np.zeros((4, 4), dtype=np.int64)
    a[0] = [1, 2, 3, 4]
    a[1, 2], a[2, 2], a[3, 3] = -5, 6, 7
    return a


def test_slabs_are_each_blocks_input_rows_zero_padded_past_k():
    weights = np.ones((8, 10), dtype=np.int64)      # P = 1: a 2 x 3 block grid, K padded to 12
    activations = np.arange(20).reshape(10, 2)
    work = plan(weights, activations, 1)
    slabs = slabs_for(work.placed, activations, work.grid)
    assert slabs.shape == (6, 4, 2)
    assert np.array_equal(slabs[4], activations[4:8]) and np.array_equal(slabs[1], slabs[4])
    assert np.array_equal(slabs[5][:2], activations[8:]) and not slabs[5][2:].any()


def test_plan_sends_the_nonempty_blocks_unless_asked():
    weights = np.zeros((4, 12), dtype=np.int64)
    weights[2, [0, 9]] = [5, -6]                     # blocks 0 and 2 hold a value
    activations = np.arange(48).reshape(12, 4)
    work = plan(weights, activations, 1)
    assert work.ids.tolist() == [0, 2] and work.cycles == 2 and len(work.records) == 2
    assert np.array_equal(work.slabs, slabs_for(work.placed, activations, work.grid)[[0, 2]])
    every = plan(weights, activations, 1, send_empty=True)
    assert every.ids.tolist() == [0, 1, 2] and every.cycles == 2
    assert every.records[1] == EurekaFormat(1, 8).records(every.placed)[1]
    dense = plan(weights, activations, 1, dense=True)
    assert dense.cycles == 12 and not dense.placed.columns.any()


def test_only_keeps_the_named_blocks_in_their_order():
    weights = sp.random_array((8, 32), density=0.3, rng=1, format="csr", dtype=np.int64,
                              data_sampler=lambda size: np.full(size, 3))
    work = plan(weights, np.ones((32, 4), dtype=np.int64), 2)
    part = work.only(work.ids[[3, 0]])
    assert part.ids.tolist() == work.ids[[3, 0]].tolist()
    assert part.records == [work.records[3], work.records[0]]
    assert np.array_equal(part.slabs, work.slabs[[3, 0]])
    assert part.cycles == work.block_cycles[[3, 0]].sum()


@pytest.mark.parametrize("scheduled", [True, False])
def test_systolic_plan_splits_the_work_by_the_schedule(scheduled):
    rng = np.random.default_rng(4)
    weights = sp.random_array((24, 64), density=0.2, rng=rng, format="csr", dtype=np.int64,
                              data_sampler=lambda size: rng.integers(1, 9, size))
    work = plan(weights, np.ones((64, 8), dtype=np.int64), 4)
    run = systolic_plan(weights, np.ones((64, 8), dtype=np.int64), 4, 2, scheduled=scheduled)
    assert run.slots.shape[1] == 2 and run.slots.max() <= PER_SLOT
    assert [len(row.ids) for row in run.rows] == run.slots.sum(axis=0).tolist()
    assert sorted(np.concatenate([row.ids for row in run.rows]).tolist()) == work.ids.tolist()
    assert sum(row.cycles for row in run.rows) == work.cycles
    assert 2 * run.cycles - work.cycles == run.bubbles


def test_cycle_model_of_figure_7():
    report = suds_report(sp.coo_array(figure_7()), 1, 2, 8)
    assert report["cycles"] == {"dense": 4, "two_four": 2, "compaction": 4, "greedy": 3,
                                "optimal": 2, "ideal": 2}
    assert [key for key, _ in BLOCK_FIGURES] == list(report["cycles"])
    assert report["systolic"]["eureka"] == {"cycles": 2, "bubbles": 2}
    assert set(report["systolic"]) == {"rows", *(key for key, *_ in SYSTOLIC_FIGURES)}
    assert report["stream"] == {"value_width": 8, "word_width": 44, "words": 3}


def _reference_report(weights, compaction, rows, value_width):
    """The figures as the grid-wide model computes them: every block of the grid listed, each
    schedule listed slot by slot, the whole stream encoded and decoded."""
    from sparseforge.sw import systolic
    from sparseforge.sw.compaction import compact
    from sparseforge.sw.suds import displace, greedy, ideal_cycles, optimal

    compacted = compact(weights, compaction, empty=True)
    counts = compacted.counts
    best = optimal(counts)
    per_block = {"dense": np.full(len(counts), compacted.width),
                 "two_four": np.full(len(counts), compacted.width // 2),
                 "compaction": counts.max(axis=1), "greedy": greedy(counts).cycles,
                 "optimal": best.cycles, "ideal": ideal_cycles(counts)}
    array = {"rows": rows}
    for key, _, cycles, scheduled in SYSTOLIC_FIGURES:
        arrange = systolic.schedule if scheduled else systolic.in_order
        run = arrange(per_block[cycles].reshape(compacted.grid), rows)
        array[key] = {"cycles": run.cycles, "bubbles": run.bubbles}
    fmt = EurekaFormat(compaction, value_width)
    words = fmt.encode(displace(compacted, best))
    assert (fmt.decode(words, compacted.shape).matrix() != weights).nnz == 0
    return {"blocks": compacted.nblocks, "block_shape": [4, compacted.width],
            "cycles": {key: int(cycles.sum()) for key, cycles in per_block.items()},
            "systolic": array,
            "stream": {"value_width": value_width, "word_width": fmt.word_width,
                       "words": len(words)}}


@pytest.mark.parametrize("chunk", [3, 1 << 14])
def test_cycle_model_from_the_nonempty_blocks_equals_the_grid_wide_one(monkeypatch, chunk):
    """Empty blocks counted, not listed; blocks taken ``chunk`` at a time: the same report."""
    from sparseforge.sw import eureka_cycles, systolic

    monkeypatch.setattr(eureka_cycles, "CHUNK", chunk)
    monkeypatch.setattr(systolic, "CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for shape, density in [((37, 200), 0.02), ((64, 64), 0.4), ((5, 300), 0.1), ((120, 9), 0.05)]:
        weights = sp.random_array(shape, density=density, rng=rng, format="coo",
                                  data_sampler=lambda size: rng.integers(-128, 128, size))
        weights = sp.coo_array(weights.astype(np.int64))
        for compaction, rows in [(1, 2), (2, 3), (4, 4), (4, 1)]:
            assert suds_report(weights, compaction, rows, 8) == _reference_report(
                weights, compaction, rows, 8)
