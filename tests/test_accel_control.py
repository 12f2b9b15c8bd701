"""The accelerator's sequencer against the host's jobs (sw.accel_plan.jobs), under random
back-pressure, with overbooked bands, several passes and back-to-back runs."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.hw.accel_control import AccelControl, ConverterFeed
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import accel_plan
from sparseforge.sw.accel_plan import AccelConfig, Bases
from sparseforge.tb.accel_control import AccelControlBench, ConverterFeedBench


def _plan(depth, fifo, columns, seed=3, kernel="spmm", vlen=1):
    rng = np.random.default_rng(seed)
    a = sp.random_array((23, 40), density=0.25, rng=rng, format="csr")
    a.data = rng.integers(1, 9, a.nnz)
    b = rng.integers(-3, 4, (40, columns))
    config = AccelConfig(pes=2, cols=1, vlen=vlen, tlen=2, spm_rows=8, out_rows=6,
                         depth=depth, fifo=fifo)
    return accel_plan.plan(a, b, "prescient", config, kernel=kernel)


BASES = Bases(tiles=5, b=100, b_panel=80, out=7000, out_panel=300)


def _run(plan, seed, runs=1, bases=BASES):
    c = plan.config
    dut = AccelControl(c.depth, c.fifo, c.tlen, c.tlen * c.cols, c.vlen)
    bench = AccelControlBench(dut, plan, seed, bases, runs)
    _, taken = pysim(bench)
    for name, items in bench.expected.items():
        assert taken[name] == items, name
    return bench


@pytest.mark.parametrize(("depth", "fifo", "columns"), [
    (64, 8, 5),     # bands fit: later passes convert nothing
    (16, 4, 5),     # bands overbook: the tiles past the buffet region again each pass
    (16, 4, 2),     # one pass
])
def test_jobs_equal_the_hosts(depth, fifo, columns):
    plan = _plan(depth, fifo, columns)
    assert plan.passes == -(-columns // 2)
    if depth == 16:
        assert plan.overbooked > 0 and (plan.passes == 1 or plan.refetched_entries() > 0)
    _run(plan, seed=depth + columns)


def test_spmv_loads_b_as_operand_1_in_windows_of_per_rows():
    """SpMV on Tensaurus's mapping (vlen 2: b's values 2 a row): windows of 16 of A's
    columns, each loading its 8 rows of b, one a word, as operand 1; one pass."""
    plan = _plan(16, 4, 1, kernel="spmv", vlen=2)
    assert plan.passes == 1 and {(t.k0 % 16, t.k1 - t.k0) for b in plan.bands
                                 for t in b.inputs} <= {(0, 16), (0, 8)}
    computes = accel_plan.jobs(plan, BASES)[2]
    assert {(c["rows0"], c["rows1"]) for c in computes} <= {(0, 8), (0, 4)}
    assert all(c["base1"] == BASES.b + c_k0 // 2 for c, c_k0 in
               zip(computes, [t.k0 for b in plan.bands for t in b.inputs], strict=True))
    _run(plan, seed=21)


def test_back_to_back_runs():
    _run(_plan(16, 4, 5), seed=11, runs=2)


FEED_JOBS = [{"i0": 8, "rows": 4, "k0": 0, "kn": 16, "first": 1, "entries": 3, "closes": 0},
             {"i0": 8, "rows": 4, "k0": 32, "kn": 10, "first": 0, "entries": 0, "closes": 0},
             {"i0": 8, "rows": 4, "k0": 48, "kn": 16, "first": 0, "entries": 2, "closes": 1},
             {"i0": 12, "rows": 3, "k0": 16, "kn": 16, "first": 1, "entries": 1, "closes": 1}]


def _feed():
    return ConverterFeed(24, 16, 8, 12)


@pytest.mark.parametrize("rate", [0.4, 1.0])
def test_converter_feed_passes_entries_and_marks_each_pass_end(rate):
    """An empty tile, a band's tiles and the next band's: the windows reach the converter
    with ``k1``, the entries the feed, an end marker after each closing tile; the counts
    agree, so no error."""
    bench = ConverterFeedBench(_feed(), FEED_JOBS, seed_from_env(4), rate=rate)
    taken = pysim(bench)
    for name, items in bench.expected.items():
        assert taken[name] == items, name
    assert not bench.error


def test_converter_feed_flags_a_count_unlike_the_hosts():
    bench = ConverterFeedBench(_feed(), FEED_JOBS, seed_from_env(4), counts=[3, 0, 1, 1])
    pysim(bench)
    assert bench.error


def test_spmttkrp_loads_c_whole_as_operand_0_and_b_windows_as_operand_1():
    """A tensor's bands (windows of 8 over j) with passes and an overbooked Tailor: each
    tile loads C's panel of the pass, all K rows, as operand 0 and its window's rows of
    B's panel as operand 1."""
    from sparseforge.sw.formats import Tensor

    rng = np.random.default_rng(5)
    dense = rng.integers(1, 9, (13, 20, 6)) * (rng.random((13, 20, 6)) < 0.15)
    coords = np.argwhere(dense)
    t = Tensor(coords, dense[tuple(coords.T)], dense.shape)
    config = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=8, out_rows=6, depth=16,
                         fifo=4, order=3)
    factors = (rng.integers(-3, 4, (20, 5)), rng.integers(-3, 4, (6, 5)))
    plan = accel_plan.plan(t, factors, "prescient", config, kernel="spmttkrp")
    assert plan.passes == 3 and plan.overbooked > 0
    bases = Bases(tiles=5, b=100, b_panel=80, out=7000, out_panel=300, c=2000, c_panel=12)
    computes = accel_plan.jobs(plan, bases)[2]
    assert {(c["base0"] - 2000) % 12 for c in computes} == {0}
    assert {c["rows0"] for c in computes} == {6}
    _run(plan, seed=7, bases=bases)


def test_a_tiles_jobs_go_the_cycle_after_its_word():
    """Units always ready, the tile list answered on the cycle after each read: every
    tile's jobs are taken the cycle after its word and the next word asked for the cycle
    after that, on every pass of an overbooked band too (the decisions are registered
    from the word as it arrives, with no cycle of their own: the model's ``ISSUE``)."""
    from amaranth.sim import Simulator

    plan = _plan(16, 4, 5)
    c = plan.config
    dut = AccelControl(c.depth, c.fifo, c.tlen, c.tlen * c.cols, c.vlen)
    words = accel_plan.tile_words(plan)
    outs = (dut.convert, dut.passes, dut.compute)
    log = {"read": [], "word": [], "jobs": []}

    async def bench(ctx):
        for name, value in {"tiles_count": len(words), "passes": plan.passes}.items():
            ctx.set(getattr(dut.config, name), value)
        for out in outs:
            ctx.set(out.ready, 1)
        ctx.set(dut.tiles.request.ready, 1)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        asked = None
        for cycle in range(40 * len(words) * plan.passes):
            ctx.set(dut.tiles.response.valid, asked is not None)
            ctx.set(dut.tiles.response.payload, 0 if asked is None else int(words[asked]))
            if asked is not None and ctx.get(dut.tiles.response.ready):
                log["word"].append(cycle)
                asked = None
            if ctx.get(dut.tiles.request.valid):
                log["read"].append(cycle)
                asked = ctx.get(dut.tiles.request.payload)
            if ctx.get(dut.compute.valid):
                log["jobs"].append(cycle)
            await ctx.tick()
            if not ctx.get(dut.busy):
                break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    tiles = len(words) * plan.passes
    assert [len(v) for v in log.values()] == [tiles] * 3
    assert np.all(np.array(log["jobs"]) == np.array(log["word"]) + 1)
    assert np.all(np.array(log["read"][1:]) == np.array(log["jobs"][:-1]) + 1)
