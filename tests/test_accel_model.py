# amaranth: UnusedElaboratable=no
"""The accelerator's cycle model (:mod:`sparseforge.sw.accel_model`): its traffic exact,
worked by hand and counted by the accelerator itself; its cycles within 5% of the RTL's
on Amaranth's simulator (the bench's AXI memory, :data:`~sparseforge.sw.accel_model.
BENCH`) and, on a real matrix, natively (the DDR4-timed memory, :data:`~sparseforge.sw.
accel_model.DRAM`)."""

import dataclasses
import os

import numpy as np
import pytest
import scipy.sparse as sp

from sparseforge.sw import accel_model, accel_plan, ciss_csr, formats
from sparseforge.sw.accel_image import ADDR_WIDTH
from sparseforge.sw.accel_plan import AccelConfig

# A (3 x 5, 6 nonzeros) and B (5 x 3): M, K and N differ, so a term counted over the
# wrong dimension shows. Two windows of A's columns (spm_rows 4: [0, 4) and [4, 5)), one
# band of the 3 rows, 2 passes over B's 3 columns (R = 2).
A = sp.csr_array(np.array([[1, 0, 2, 0, 0],
                           [0, 0, 0, 0, 3],
                           [4, 5, 0, 0, 6]]))
B = np.arange(15).reshape(5, 3)
SMALL = dict(pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=4, fifo=2)


def _hand(converted_passes):
    """The run's bytes by region, worked by hand, with the band converted on
    ``converted_passes`` of its 2 passes."""
    return {
        # 2 tile words (128 bits: 16 bytes) read on each of 2 passes.
        "tiles": 2 * 2 * 16,
        # rows + 1 = 4 row pointers (24 bits: 4 bytes) a conversion.
        "a_rowptr": converted_passes * 4 * 4,
        # The pre-pass reads all 6 column ids (16 bits: 2 bytes) in the first window:
        # every element's row predecessor is below k1 = 4; the second window decides
        # the peeked ones without a read.
        "a_prepass": converted_passes * 6 * 2,
        # The lanes read each of the 6 nonzeros' column id and value (2 bytes each).
        "a_colid": converted_passes * 6 * 2,
        "a_values": converted_passes * 6 * 2,
        # B's rows: 4 + 1 of the windows, tlen = 2 words of 16 bits each, every pass.
        "b": 2 * (4 + 1) * 2 * 2,
    }


def _one_band(depth):
    """The plan of the 3 rows as one band (uniform's for a Tailor of 16 entries: the
    band dense takes 2 lanes' worth of 5 columns and 2 headers, 14) on a Tailor of
    ``depth`` entries."""
    plan = accel_plan.plan(A, B, "uniform", AccelConfig(depth=16, **SMALL))
    return dataclasses.replace(plan, config=AccelConfig(depth=depth, **SMALL))


def test_traffic_by_hand_fitting_band():
    """A Tailor of 8 entries holds the band's 5 (3 + 2): converted once, on pass 1."""
    plan = _one_band(8)
    assert [len(band.inputs) for band in plan.bands] == [2] and plan.passes == 2
    reads, writes = accel_model.traffic(plan, A)
    assert reads == _hand(1)
    # Y: M = 3 rows of tlen * cols = 2 words of 32 bits, on each of 2 passes.
    assert writes == {"out": 3 * 2 * 4 * 2}


def test_traffic_by_hand_overbooked_band():
    """A Tailor of 4 entries, buffet region 2: the band's 5 entries overbook it and both
    tiles hold bumped entries, so pass 2 converts the band again (pointers, pre-pass,
    lanes); B, the tile list and Y are as before."""
    plan = _one_band(4)
    assert plan.overbooked == 1 and plan.reconverted_entries() == 5
    reads, writes = accel_model.traffic(plan, A)
    assert reads == _hand(2)
    assert writes == {"out": 3 * 2 * 4 * 2}
    prediction = accel_model.predict(plan, A)
    assert prediction.bytes_read == sum(_hand(2).values())
    assert prediction.refetched == plan.refetched_entries() == 3


# SpMV on the same A: b (5) at vlen 2 is ``per = 2`` values a scratchpad row, so with
# spm_rows 2 the windows are again [0, 4) and [4, 5) (spm_rows * per columns), one pass.
SPMV = dict(pes=2, cols=1, vlen=2, tlen=2, spm_rows=2, out_rows=4, fifo=2)


def test_spmv_traffic_by_hand():
    """One band (a Tailor of 16 entries holds the 3 rows dense) and one pass; the
    conversion's reads as SpMM's; b read as the sequencer's ``rows1``, ``ceil(kn / per)``
    words a window: 2 + 1 of 32 bits (``cols * vlen`` values of 16 bits), not SpMM's
    ``kn * tlen``; Y's M = 3 rows of ``tlen * cols`` = 2 words of ``vlen`` accumulators
    (64 bits)."""
    plan = accel_plan.plan(A, np.arange(5), "uniform", AccelConfig(depth=16, **SPMV),
                           kernel="spmv")
    assert plan.passes == 1 and [(t.k0, t.k1) for t in plan.bands[0].inputs] == [(0, 4),
                                                                                (4, 5)]
    reads, writes = accel_model.traffic(plan, A)
    assert reads == {**{k: v // 2 for k, v in _hand(2).items()}, "b": (2 + 1) * 4}
    assert writes == {"out": 3 * 2 * 8}
    _, _, computes = accel_plan.jobs(plan)
    assert sum(job["rows1"] for job in computes) * 4 == reads["b"] == plan.b_words * 4
    prediction = accel_model.predict(plan, A)
    assert (prediction.bytes_read, prediction.bytes_written) == (sum(reads.values()), 48)


def test_parts_add_up():
    """The parts less their overlap are the cycles; each unit's part is positive."""
    plan = accel_plan.plan(A, B, "prescient", AccelConfig(depth=4, **SMALL))
    p = accel_model.predict(plan, A)
    busy = {k: v for k, v in p.parts.items() if k != "overlap"}
    assert all(v > 0 for v in busy.values())
    assert sum(busy.values()) - p.parts["overlap"] == p.cycles


def test_memory_slower_costs_cycles():
    """A longer latency or a lower rate never makes the run faster."""
    plan = accel_plan.plan(A, B, "prescient", AccelConfig(depth=4, **SMALL))
    base = accel_model.predict(plan, A, accel_model.Memory(6, 6, 1.0)).cycles
    assert accel_model.predict(plan, A, accel_model.Memory(12, 12, 1.0)).cycles > base
    assert accel_model.predict(plan, A, accel_model.Memory(6, 6, 0.5)).cycles > base


def test_the_bus_carries_every_access():
    """A DRAM whose bus takes 1000 cycles a burst, and no other wait: the run is the
    bus's. The overbooked band converts both tiles on both passes, each access a burst:
    74 (4 tile words, 2 conversions of 4 pointers, 6 pre-pass column ids, 6 column ids
    and 6 values, 20 words of B; 6 of Y, 3 rows of 2 words, on pass 1, the next pass's
    reads between them), and pass 2's 6 writes of Y, the run's last, alone on the bus:
    its words of 4 bytes 16 to a burst, 6 / 16. The band that fits converts on pass 1
    only (27 and 7 bursts, 6 of Y, then 6 / 16); on pass 2 the MLU reads alone, its
    words of 2 bytes 32 to a burst of 64: the tile word, then 1 + 8 / 32 and 1 + 2 / 32
    for the 8 and 2 words, the tile word once interrupting them."""
    for depth, bursts in ((4, 74 + 6 / 16), (8, 27 + 7 + 6 + 6 / 16 + 2.25 + 2.0625)):
        plan = _one_band(depth)
        p = accel_model.predict(plan, A, accel_model.Memory(1, 1, 1.0, burst=1000))
        assert bursts * 1000 <= p.cycles <= bursts * 1000 + 200, (depth, p.cycles)
        assert abs(p.parts["bus"] - bursts * 1000) < 1
    assert accel_model.predict(plan, A, accel_model.Memory(1, 1, 1.0)).cycles < 200


def test_mlu_words_wider_than_the_bus_take_their_beats():
    """An MLU word of ``cols * vlen * dw`` bits crosses R in ``word / data`` beats, at
    ``rate`` beats a cycle. SMALL's word is 16 bits: one beat on a 16-bit bus, two on an
    8-bit one. The fitting band's 2 passes load 4 + 1 rows of B of tlen = 2 words each
    (20 words) in 4 loads; a memory answering after 1 cycle at rate 0.5 (a beat every 2
    cycles) and tags enough: the MLU's part is 4 * 1 + 20 * 2 * beats, 44 and 84."""
    plan = _one_band(8)
    memory = accel_model.Memory(1, 1, 0.5)
    mlu = [accel_model.predict(plan, A, memory, tags=8, data=data).parts["mlu"]
           for data in (16, 8)]
    assert mlu == [44, 84]
    assert accel_model.predict(plan, A, memory, tags=8).parts["mlu"] == 44


def test_reads_circulating_through_r_by_hand():
    """Mean value analysis of ``tags`` reads circulating between ``away`` cycles off R and
    ``service`` on it. One read: the two in turn. Two: the second finds the first on R
    with probability ``service / (away + service)``; 3 off and 1 on, it waits a quarter
    of a beat, (3 + 1.25) / 2 = 2.125 cycles a read; 1 off and 3 on, three quarters of
    three, (1 + 5.25) / 2 = 3.125 (the arguments swapped show)."""
    assert accel_model._circulating(5.0, 2.0, 1) == 7.0
    assert accel_model._circulating(3.0, 1.0, 2) == pytest.approx(2.125)
    assert accel_model._circulating(1.0, 3.0, 2) == pytest.approx(3.125)


def test_a_word_of_two_beats_holds_its_tag_on_r_by_hand():
    """A memory answering 8 cycles after a request at rate 1, 2 tags: a one-beat word 4
    cycles (8 / 2, as fitted). Its reads' time off R, ``a``, makes that 4: (a + 1 + 1 /
    (a + 1)) / 2 = 4, a = 6.873; a word of two beats is then (a + 2 (1 + 2 / (a + 2))) /
    2 = 4.662 cycles, more than the round trip's 4 and R's 2. At rate 0.5, latency 1 and 8
    tags the words are R's alone: 2 and 4 cycles a word of one and two beats."""
    memory = accel_model.Memory(latency=8, ordered=8, rate=1.0)
    assert accel_model._tagged_gap(memory, 2, 1) == 4.0
    away = (6 + 60 ** 0.5) / 2
    assert away == pytest.approx(6.873, abs=1e-3)
    assert accel_model._tagged_gap(memory, 2, 2) == pytest.approx(
        (away + 2 * (1 + 2 / (away + 2))) / 2) == pytest.approx(4.662, abs=1e-3)
    bound = accel_model.Memory(1, 1, 0.5)
    assert [accel_model._tagged_gap(bound, 8, b) for b in (1, 2)] == pytest.approx([2, 4])


def test_loads_queue_on_the_bus_by_hand(monkeypatch):
    """A unit busy 3 cycles whose accesses hold the bus 4 takes their norm: 5 at norm 2 (1
    beyond the bus's 4), 337 ** (1 / 4) at 4, 7 at norm 1 (one after the other); a unit
    with nothing on the bus takes its own cycles. In a run, the MLU's loads queue on the
    DRAM's bus (``LOADS``): the nearer a sum, the longer; a memory without that bus is
    not touched."""
    assert accel_model._queued(3, 4, 2) == pytest.approx(1)
    assert accel_model._queued(4, 3, 4) == pytest.approx(337 ** 0.25 - 4)
    assert accel_model._queued(3, 4, 1) == pytest.approx(3)
    assert accel_model._queued(5, 0, 6) == pytest.approx(0, abs=1e-12)
    plan = _one_band(4)
    dram, plain = accel_model.Memory(40, 4, 1.0, burst=4), accel_model.Memory(40, 4, 1.0)
    cycles = []
    for norm in (1.0, 2.0, accel_model.LOADS):
        monkeypatch.setattr(accel_model, "LOADS", norm)
        cycles.append((accel_model.predict(plan, A, dram).cycles,
                       accel_model.predict(plan, A, plain).cycles))
    assert cycles[0][0] > cycles[1][0] > cycles[2][0]
    assert cycles[0][1] == cycles[1][1] == cycles[2][1]


def test_the_mlu_shares_r_with_the_tiles_other_reads_by_hand():
    """A memory whose tagged reads spend ``away`` = 4 cycles off R, at rate 1 and one tag:
    each word of B circulates through R with its share of the tile's other reads, 4 + 1
    + others / words cycles. The fitting band (2 passes) converts on pass 1: its first
    tile (8 words of B) reads its tile word, 4 pointers, 6 pre-pass column ids and 4
    nonzeros' column ids and values (19 others), its second (2 words) its tile word and
    2 nonzeros' (5); on pass 2 each reads its tile word alone. The MLU's part: 4 loads of
    a cycle's latency and 8 (5 + 19 / 8) + 2 (5 + 5 / 2) + 8 (5 + 1 / 8) + 2 (5 + 1 / 2)
    = 130; without ``away`` a word a cycle, 4 + 20."""
    plan = _one_band(8)
    mlu = [accel_model.predict(plan, A, accel_model.Memory(1, 1, 1.0, away=away),
                               tags=1).parts["mlu"] for away in (4, 0)]
    assert mlu == [130, 24]


def test_row_misses_by_hand():
    """A (3 x 65,536: one nonzero a row, in columns 0, 40,000 and 65,535) and B of 2
    columns: three bands of one row, a window each, one pass. B's region (65,536 rows of
    2 words of 2 bytes) runs from byte 16,384 to 278,528, past 128 KiB; the tile list
    follows it. Bank (group 0, bank 0) holds the tile words (row 2) and A's pointers,
    column ids, values and B's first window (row 0): band 0's first access after its
    tile word misses (B's first word, first in the round robin); bands 1 and 2 miss on
    their tile word (back to row 2) and on their first pointer (back to row 0), their
    windows of B in banks of their own (group 0 bank 1 row 1; group 3 bank 0 row 2)."""
    a = sp.csr_array((np.arange(1, 4), ([0, 1, 2], [0, 40_000, 65_535])), shape=(3, 65_536))
    plan = accel_plan.plan(a, np.ones((65_536, 2), dtype=np.int64), "uniform",
                           AccelConfig(depth=8, **SMALL))
    assert [(t.k0, t.k1) for band in plan.bands for t in band.inputs] == [
        (0, 4), (40_000, 40_004), (65_532, 65_536)] and plan.passes == 1
    image = ciss_csr.csr_image(a, 16, 16, ADDR_WIDTH, tiled=True)
    assert accel_model._row_misses(plan, image) == [[0, 1], [2, 0], [2, 0]]
    small = _one_band(4)
    assert not np.any(accel_model._row_misses(small, ciss_csr.csr_image(
        A, 16, 16, ADDR_WIDTH, tiled=True)))


def test_a_later_pass_loads_beside_the_last_conversion_by_hand():
    """The A above with B of 4 columns: 2 passes, each band fitting, so pass 2 converts
    nothing and its first tile's loads run beside pass 1's last conversion. Band 0 in
    bank (group 0, bank 0): its tile word in row 4; its pointers, pre-pass and lane's
    column ids and value and pass 1's 8 words of B in row 0; pass 2's 8 words of B (the
    panel at byte 278,528) in row 2. The 5 conversion's and 16 MLU's accesses
    interleaved evenly: pass 1's words first, then from the 9th on pass 2's, between the
    conversion's 3rd, 4th and 5th accesses: the first access after the tile word misses
    (pass 1's B), each of the conversion's last 2 (back to row 0) and of pass 2's 3 runs
    of words (to row 2); pass 2's tile word misses again (back to row 4)."""
    a = sp.csr_array((np.arange(1, 4), ([0, 1, 2], [0, 40_000, 65_535])), shape=(3, 65_536))
    plan = accel_plan.plan(a, np.ones((65_536, 4), dtype=np.int64), "uniform",
                           AccelConfig(depth=8, **SMALL))
    assert plan.passes == 2 and [(t.k0, t.k1) for t in plan.bands[0].inputs] == [(0, 4)]
    image = ciss_csr.csr_image(a, 16, 16, ADDR_WIDTH, tiled=True)
    assert accel_model._row_misses(plan, image)[:2] == [[2, 1], [1, 3]]


def test_dram_latency_and_rate():
    """``dram``'s ``extra`` cycles reach every access; a slower channel adds its coins'
    waits; the default is :data:`~sparseforge.sw.accel_model.DRAM`."""
    assert accel_model.dram() == accel_model.DRAM
    base, later = accel_model.dram(0, 1.0), accel_model.dram(100, 1.0)
    assert (later.latency - base.latency, later.ordered - base.ordered) == (100, 100)
    slow = accel_model.dram(0, 0.5)
    assert slow.latency - base.latency == slow.ordered - base.ordered == accel_model.COINS
    assert slow.burst == base.burst > 0
    plan = accel_plan.plan(A, B, "prescient", AccelConfig(depth=4, **SMALL))
    cycles = [accel_model.predict(plan, A, m).cycles for m in (base, slow, later)]
    assert cycles[0] < cycles[1] < cycles[2]


# Cases run on the RTL: (M, K, N, density, seed, policy, config); a config's ``planned``
# depth sizes the bands for a larger Tailor than the build's, as the policies size bands to
# fit: so an "overbooked" case overbooks, and the uniform cases keep bands of 2 rows.
CASES = {
    "pes2-3passes-prescient-overbooked": (6, 8, 5, 0.6, 1, "prescient", dict(
        pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=4, depth=8, fifo=2, planned=16)),
    "pes2-3passes-uniform": (6, 8, 5, 0.6, 1, "uniform", dict(
        pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=4, depth=8, fifo=2, planned=16)),
    "pes4-2passes-prescient-overbooked": (20, 24, 8, 0.3, 2, "prescient", dict(
        pes=4, cols=1, vlen=2, tlen=2, spm_rows=8, out_rows=8, depth=16, fifo=4, planned=32)),
    "pes2-2passes-uniform-16rows": (30, 16, 3, 0.3, 3, "uniform", dict(
        pes=2, cols=1, vlen=1, tlen=2, spm_rows=8, out_rows=16, depth=32, fifo=4)),
    "pes2-cols2-3passes-prescient": (32, 40, 12, 0.2, 4, "prescient", dict(
        pes=2, cols=2, vlen=1, tlen=2, spm_rows=16, out_rows=16, depth=32, fifo=8)),
    "pes4-3passes-swiftiles": (40, 24, 6, 0.25, 5, "swiftiles", dict(
        pes=4, cols=1, vlen=1, tlen=2, spm_rows=8, out_rows=16, depth=16, fifo=4)),
    "pes2-1pass-prescient-overbooked": (16, 20, 2, 0.3, 6, "prescient", dict(
        pes=2, cols=1, vlen=1, tlen=2, spm_rows=8, out_rows=8, depth=16, fifo=4, planned=32)),
    "pes4-3passes-uniform-24": (24, 24, 6, 0.25, 7, "uniform", dict(
        pes=4, cols=1, vlen=1, tlen=2, spm_rows=8, out_rows=8, depth=16, fifo=4)),
    "pes2-tlen4-swiftiles": (30, 30, 8, 0.2, 8, "swiftiles", dict(
        pes=2, cols=1, vlen=1, tlen=4, spm_rows=16, out_rows=16, depth=32, fifo=8)),
}
TAGS = 4


def _case(name):
    m, k, n, density, seed, policy, config = CASES[name]
    config = dict(config)
    planned = config.pop("planned", config["depth"])
    rng = np.random.default_rng(seed)
    a = sp.random_array((m, k), density=density, rng=rng, format="csr")
    a.data = rng.integers(1, 5, a.nnz)
    b = rng.integers(-2, 3, (k, n))
    plan = accel_plan.plan(a, b, policy, AccelConfig(**{**config, "depth": planned}),
                           seed=seed)
    return a, b, dataclasses.replace(plan, config=AccelConfig(**config)), seed


def _against_rtl(name):
    """The model's prediction and the RTL's run of case ``name`` (the memory's
    randomness seeded by the case: the model predicts its expectation)."""
    from sparseforge.hw.compose.accel import Accel
    from sparseforge.tb.accel import params_of, pysim

    a, b, plan, seed = _case(name)
    dut = Accel(**params_of(plan.config), tile=1024, tags=TAGS, data=64)
    run = pysim(dut, plan, a, b, seed, limit=100_000)
    np.testing.assert_array_equal(run.y, a @ b)
    return accel_model.predict(plan, a, accel_model.BENCH, tags=TAGS), run


def _check(name):
    p, run = _against_rtl(name)
    assert (p.bytes_read, p.bytes_written, p.refetched) == (
        run.bytes_read, run.bytes_written, run.refetched)
    error = (p.cycles - run.cycles) / run.cycles
    assert abs(error) <= 0.05, f"{name}: model {p.cycles} cycles, RTL {run.cycles}"


@pytest.mark.soak
@pytest.mark.parametrize("name", list(CASES))
def test_cycles_within_5_percent_of_rtl_soak(name):
    """Every case (tests/test_accel.py checks the first in the default run)."""
    _check(name)


def _real(shared_data, name, n, seed=1):
    """A real matrix's pattern with small integer values, and B of ``n`` columns."""
    a = sp.csr_array(formats.read_matrix(os.path.join(shared_data, "matrices", name)))
    rng = np.random.default_rng(seed)
    a.data = rng.integers(1, 5, a.nnz)
    return a, rng.integers(-2, 3, (a.shape[1], n))


@pytest.mark.soak
def test_cycles_within_5_percent_of_rtl_on_a_real_matrix(shared_data):
    """cage5 (37 x 37, 233 nonzeros), Swiftiles' bands for a Tailor of 40 entries
    overbooking the Tailor of 32, 2 passes, 4 PE rows."""
    from sparseforge.hw.compose.accel import Accel
    from sparseforge.tb.accel import params_of, pysim

    a, b = _real(shared_data, "suitesparse/cage5.mtx", 8)
    config = AccelConfig(pes=4, cols=1, vlen=2, tlen=2, spm_rows=16, out_rows=16, depth=32,
                         fifo=8)
    plan = accel_plan.plan(a, b, "swiftiles", dataclasses.replace(config, depth=40), seed=1)
    plan = dataclasses.replace(plan, config=config)
    assert plan.overbooked and plan.passes == 2
    run = pysim(Accel(**params_of(config), tile=1024, tags=TAGS, data=64), plan, a, b, 1,
                limit=100_000)
    np.testing.assert_array_equal(run.y, a @ b)
    p = accel_model.predict(plan, a, accel_model.BENCH, tags=TAGS)
    assert (p.bytes_read, p.bytes_written, p.refetched) == (
        run.bytes_read, run.bytes_written, run.refetched)
    assert abs(p.cycles - run.cycles) <= 0.05 * run.cycles, (p.cycles, run.cycles)


@pytest.mark.soak
def test_cycles_within_5_percent_natively_on_a_real_matrix(shared_data, tmp_path):
    """GD97_b (47 x 47, 264 nonzeros) on Verilator against the DDR4-timed memory
    (:data:`~sparseforge.sw.accel_model.DRAM`): prescient bands of one row, 18 of them
    overbooking a Tailor of 8 entries, 3 passes."""
    from sparseforge.tb.accel import AccelHarness, params_of, simulate

    a, b = _real(shared_data, "suitesparse/GD97_b.mtx", 5)
    config = AccelConfig(**{k: v for k, v in CASES["pes2-3passes-prescient-overbooked"][-1]
                            .items() if k != "planned"})
    plan = accel_plan.plan(a, b, "prescient", config, seed=1)
    assert plan.overbooked and plan.passes == 3
    harness = AccelHarness(**params_of(config), tile=1 << 16, tags=TAGS, data=64)
    run = simulate(harness, plan, a, b, 1, rates=dict.fromkeys(("ar", "aw", "w", "r", "b"),
                                                                  0.7), work_dir=tmp_path)
    np.testing.assert_array_equal(run.y, a @ b)
    p = accel_model.predict(plan, a, accel_model.DRAM, tags=TAGS)
    assert (p.bytes_read, p.bytes_written, p.refetched) == (
        run.bytes_read, run.bytes_written, run.refetched)
    assert abs(p.cycles - run.cycles) <= 0.05 * run.cycles, (p.cycles, run.cycles)


# The default build natively (``run accel``'s 4 x 2 PEs, tags 8, a Tailor of 1 KiB: 64
# entries), prescient bands, B of 12 columns (2 passes): (matrix, --mem-latency,
# --mem-bytes-per-cycle), each a shape of its own.
DEFAULT_BUILD = [
    ("494_bus", 0, 5.6),    # 494 x 494, 1,666 nonzeros: bands that overbook, bus-bound
    ("ash219", 0, 5.6),     # 219 x 85, two nonzeros a row
    ("GD97_b", 0, 5.6),     # 47 x 47, rows of 1 to 25: the converter's pre-pass bound
    ("494_bus", 20, 4.0),   # a slower memory, set at run time on the same build
]


@pytest.mark.soak
@pytest.mark.parametrize("name, latency, per_cycle", DEFAULT_BUILD)
def test_cycles_within_5_percent_natively_on_the_default_build(
        shared_data, tmp_path, capsys, name, latency, per_cycle):
    """``run accel`` as a user runs it: its RTL cycles against the model's prediction
    (its JSON's ``model_error``), the traffic exact."""
    import json

    from sparseforge.cli import main

    a = formats.read_matrix(os.path.join(shared_data, "matrices", "suitesparse",
                                         f"{name}.mtx"))
    np.save(tmp_path / "b.npy", np.random.default_rng(1).integers(-2, 3, (a.shape[1], 12)))
    main(["run", "accel", "--kernel", "spmm", str(shared_data / "matrices" / "suitesparse"
                                                  / f"{name}.mtx"),
          "--factors", str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"),
          "--buffer-kb", "1", "--tiling", "prescient", "--pattern",
          "--mem-latency", str(latency), "--mem-bytes-per-cycle", str(per_cycle), "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["passes"] == 2
    assert r["model_bytes_read"] == r["dram_bytes_read"]
    assert abs(r["model_error"]) <= 0.05, (r["cycles"], r["model_cycles"])


@pytest.mark.soak
@pytest.mark.parametrize("name", ["dwt_878", "GD97_b", "impcol_a"])
def test_spmv_cycles_within_5_percent_natively(shared_data, tmp_path, capsys, name):
    """``run accel --kernel spmv`` as a user runs it (the default build and memory,
    swiftiles bands, one pass) against the model, its traffic exact, b read ``ceil(kn /
    per)`` words a window: dwt_878 (878 x 878, 7,448 nonzeros, windows of 128 of A's
    columns); GD97_b (47 x 47, one band) and impcol_a (207 x 207, four bands), whose
    last band's writes of y meet no reads and share the DRAM's bursts."""
    import json

    from sparseforge.cli import main

    matrix = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    a = formats.read_matrix(matrix)
    np.save(tmp_path / "b.npy", np.random.default_rng(1).integers(-2, 3, a.shape[1]))
    main(["run", "accel", "--kernel", "spmv", str(matrix), "--factors",
          str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--pattern", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["passes"] == 1
    assert r["model_bytes_read"] == r["dram_bytes_read"]
    assert abs(r["model_error"]) <= 0.05, (r["cycles"], r["model_cycles"])


# Images past 128 KiB, where the DRAM's rows miss (``run accel``'s build: 4 x 2 PEs, or
# 4 x 4 with MLU words of two beats of the bus, tags 8, a Tailor of 32 KiB, swiftiles
# bands): (matrix, kernel, B's columns, PEs).
ROW_MISSES = [
    ("graphs/nr-bio-dmela.mtx", "spmm", 16, "4x2"),  # 7,393 x 7,393, 51,138 nonzeros
    ("suitesparse/bcsstk13.mtx", "spmv", 1, "4x2"),  # 2,003 x 2,003, 83,883 nonzeros
    ("graphs/nr-bio-dmela.mtx", "spmm", 16, "4x4"),  # one pass, R near the tags' pace
]


@pytest.mark.soak
@pytest.mark.parametrize("name, kernel, columns, pes", ROW_MISSES)
def test_cycles_within_5_percent_natively_past_the_dram_rows(
        shared_data, tmp_path, capsys, name, kernel, columns, pes):
    """``run accel`` on an image whose regions share the DRAM's banks at other rows:
    the model's row misses (and, on the 4 x 4 build, its tags circulating through R)
    keep it within 5% of the RTL, its traffic exact."""
    import json

    from sparseforge.cli import main

    matrix = shared_data / "matrices" / name
    a = formats.read_matrix(matrix)
    rng = np.random.default_rng(1)
    b = rng.integers(-2, 3, (a.shape[1], columns) if kernel == "spmm" else a.shape[1])
    np.save(tmp_path / "b.npy", b)
    main(["run", "accel", "--kernel", kernel, str(matrix), "--factors",
          str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--pattern", "--pes",
          pes, "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["model_bytes_read"] == r["dram_bytes_read"]
    assert abs(r["model_error"]) <= 0.05, (r["cycles"], r["model_cycles"])


@pytest.mark.soak
@pytest.mark.parametrize("name", ["Erdos971", "rajat19"])
def test_cycles_within_5_percent_natively_on_a_single_pass(shared_data, tmp_path, capsys,
                                                           name):
    """``run accel`` as bench accel's "no buffer" row runs each pass (``--buffer-kb 1``,
    swiftiles bands, B of one panel of 8 columns): every tile converted while its rows
    of B load, the MLU's reads queued on the DRAM's bus with the conversion's."""
    import json

    from sparseforge.cli import main

    matrix = shared_data / "matrices" / "suitesparse" / f"{name}.mtx"
    a = formats.read_matrix(matrix)
    np.save(tmp_path / "b.npy", np.random.default_rng(1).integers(-2, 3, (a.shape[1], 8)))
    main(["run", "accel", "--kernel", "spmm", str(matrix), "--factors",
          str(tmp_path / "b.npy"), "--out", str(tmp_path / "y.npy"), "--buffer-kb", "1",
          "--pattern", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["equal_to_golden"] and r["passes"] == 1
    assert r["model_bytes_read"] == r["dram_bytes_read"]
    assert abs(r["model_error"]) <= 0.05, (r["cycles"], r["model_cycles"])


def test_the_i_ids_share_their_bursts_by_hand():
    """The cluster counter reads a band's i ids one after another, 32 (2 bytes each) to a
    burst of 64 bytes: of 70, 3 open a burst, and the other 67 are answered with the
    burst the id before fetched, but for one an access came between: each burst of the
    tile's load once (2.5 of them: 2.5), all of them at most (100: 67); one id alone
    opens its burst; no load, none broken."""
    assert accel_model._shared_ids(70, 2.5, 32) == (64.5, 2.5)
    assert accel_model._shared_ids(70, 100.0, 32) == (0, 67)
    assert accel_model._shared_ids(1, 5.0, 32) == (0, 0)
    assert accel_model._shared_ids(64, 0.0, 32) == (62, 0)


def test_a_tensors_i_ids_on_the_bus_by_hand(monkeypatch):
    """A tensor of one slice (1 x 4 x 12: 40 elements, j 0..3, k 0..11 in order), one
    band, one window of j (spm_rows 16), rank 2 (one pass), on a DRAM whose bus takes
    1,000 cycles a burst. The bus carries its tile word, its 40 i ids (each element's,
    none past them), 40 pre-pass j ids and 40 elements' j id, k id and value (120), less
    the 37 ids answered with the burst before (40 less 2 opening a burst and 1 broken by
    the load's one burst: C's 12 and B's 4 rows of tlen 2 words of 2 bytes, 32 to a
    burst), 164; the 32 words of B and C a burst each (the 164 between them); and Y's 2
    words of 4 bytes, the run's last, 16 to a burst: 196.125 bursts. Counted a burst
    each, the ids take 37 more; the broken id waits :data:`SAME_BURST` more in the
    converter."""
    jk = np.array([(j, k) for j in range(4) for k in range(12)])[:40]
    t = formats.Tensor(np.column_stack([np.zeros(40, dtype=np.int64), jk]),
                       np.arange(40) % 4 + 1, (1, 4, 12))
    rng = np.random.default_rng(1)
    config = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=16, out_rows=4, depth=64,
                         fifo=2, order=3)
    plan = accel_plan.plan(t, (rng.integers(-2, 3, (4, 2)), rng.integers(-2, 3, (12, 2))),
                           "prescient", config, kernel="spmttkrp")
    assert plan.passes == 1 and [[(w.k0, w.k1) for w in b.inputs] for b in plan.bands] == [
        [(0, 4)]]
    memory = accel_model.Memory(20, 20, 1.0, burst=1000)
    p = accel_model.predict(plan, t, memory)
    assert p.parts["bus"] == 196_125
    monkeypatch.setattr(accel_model, "_shared_ids", lambda ids, loaded, per_burst: (0, 0))
    q = accel_model.predict(plan, t, memory)
    assert q.parts["bus"] - p.parts["bus"] == 37_000
    assert p.parts["converter"] - q.parts["converter"] == accel_model.SAME_BURST
