# amaranth: UnusedElaboratable=no
"""DRAM timing: the reference controller against reads worked out by hand, then the
gateware memory against it cycle for cycle, natively on Verilator, on random reads with
random back-pressure, tagged and in order."""

import dataclasses

import numpy as np
import pytest

from sparseforge.core.errors import ParameterError
from sparseforge.hw.interfaces import TaggedMemoryPortSignature
from sparseforge.hw.stream_units import MemoryPortSignature
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw.dram import DDR4_2400, PAPER_CLOCK, Dram, Geometry, timing
from sparseforge.tb import native
from sparseforge.tb.dram import Reader, ReaderBench

# Every term a different number, so a term used in another's place shows.
T = dataclasses.replace(timing(), cl=11, trcd=13, trp=17, tras=29, trtp=7, tccd_l=5,
                        trrd_s=3, trrd_l=6, tfaw=19, trefi=1000, trfc=97, burst=4)
BURST = Geometry(512)           # a word a burst: word a is burst a


def completions(reads, geometry=BURST):
    """Completion cycles of ``(word, cycle)`` reads on a fresh controller with :data:`T`."""
    words, cycles = zip(*reads, strict=True)
    return list(Dram(T, geometry).completions(words, cycles))


def test_part_at_one_and_two_gigahertz():
    slow, fast = timing(), timing(clock=PAPER_CLOCK)
    assert (slow.cl, slow.trcd, slow.trp, slow.tras, slow.burst) == (14, 14, 14, 32, 4)
    assert (fast.cl, fast.trefi, fast.trfc, fast.burst) == (27, 15600, 700, 7)
    assert slow.peak == 16e9 and DDR4_2400.peak == 19.2e9
    assert round(DDR4_2400.trc, 2) == 45.32


def test_words_and_bursts():
    assert [(Geometry(b).stride, Geometry(b).bursts) for b in (48, 96, 384, 512, 600)] == \
        [(8, 1), (16, 1), (64, 1), (64, 1), (128, 2)]
    assert list(Geometry(64).first_burst([0, 7, 8])) == [0, 0, 1]
    group, bank, row, column = Geometry(512).locate(np.array([1, 4, 512, 2048]))
    assert list(group) == [1, 0, 0, 0] and list(column) == [0, 1, 0, 0]
    assert list(bank) == [0, 0, 1, 0] and list(row) == [0, 0, 0, 1]


def test_empty_bank_then_row_hit():
    # ACT at 0, read tRCD later, data CL after it; the hit reads at once: CL + burst.
    assert completions([(0, 0), (4, 100)]) == [13 + 11 + 4, 100 + 11 + 4]


def test_row_miss_in_the_same_bank():
    # Late: precharge at once, then tRP + tRCD + CL; early: the precharge waits for tRAS.
    assert completions([(0, 0), (2048, 200)])[1] == 200 + 17 + 13 + 11 + 4
    assert completions([(0, 0), (2048, 1)])[1] == 29 + 17 + 13 + 11 + 4


def test_two_banks_overlap_and_a_hit_overtakes_a_miss():
    # The second bank activates tRRD_S after the first and its burst follows on the bus.
    assert completions([(0, 0), (1, 1)]) == [28, 32]
    # Bank group 0 misses at 100 while group 1's open row answers a later read first.
    done = completions([(0, 0), (1, 1), (2048, 100), (5, 101)])
    assert done[2:] == [100 + 17 + 13 + 11 + 4, 101 + 11 + 4]


def test_refresh_closes_the_rows():
    # A read in the refresh window waits for its end, and the row it would hit is closed.
    assert completions([(0, 0), (4, 1010)])[1] == 1000 + 97 + 13 + 11 + 4
    assert completions([(0, 0), (4, 1100)])[1] == 1100 + 13 + 11 + 4


def test_words_share_the_open_burst():
    assert completions([(0, 0), (7, 1), (8, 2)], Geometry(64)) == [28, 28, 32]


def test_bad_parameters():
    with pytest.raises(ParameterError, match="clock"):
        timing(clock=0)
    with pytest.raises(ParameterError, match="bits"):
        Geometry(0)
    with pytest.raises(ParameterError, match="in_flight=3"):
        ReaderBench(Reader(MemoryPortSignature(8, 32)), [0], 0, {"reads": 1.0}, 3, T)


def random_reads(rng, n):
    """Reads that hit, miss and conflict: runs through a few rows of a few banks."""
    base = rng.choice([0, 1 << 12, 1 << 15, 5 << 15], size=n)
    return base + rng.integers(0, 64, size=n) * rng.choice([1, 1, 4], size=n)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("tagged, bits, in_flight, rates", [
    (True, 64, 8, {"reads": 1.0, "answers": 1.0}),
    (True, 512, 4, {"reads": 0.5, "answers": 0.4}),
    (False, 96, 8, {"reads": 0.8, "answers": 0.6}),
    (False, 600, 2, {"reads": 1.0, "answers": 0.7})])
def test_gateware_follows_the_model(tagged, bits, in_flight, rates, tmp_path):
    """The same reads answered by the gateware (natively) and by the model (driving
    Amaranth's simulator): the same answers on the same cycles; each its word, no earlier
    than the model's completion of it, and an in-order port's in order."""
    quick = dataclasses.replace(T, trefi=2000, trfc=150)      # refreshes in a short run
    check_against_model(tagged, bits, in_flight, rates, quick, 300, tmp_path)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("clock", [1e9, PAPER_CLOCK])
@pytest.mark.parametrize("tagged, bits", [(True, 600), (False, 48)])
def test_soak_the_part_itself(clock, tagged, bits, tmp_path):
    """DDR4-2400's own figures, long enough for several refreshes."""
    check_against_model(tagged, bits, 16, {"reads": 0.9, "answers": 0.8},
                        timing(clock=clock), 8000, tmp_path)


def check_against_model(tagged, bits, in_flight, rates, timing_, reads, tmp_path):
    """``reads`` random reads of words of ``bits`` through both memories."""
    port = (TaggedMemoryPortSignature(20, bits, 14) if tagged else
            MemoryPortSignature(20, bits))
    seed = seed_from_env(7)
    addrs = random_reads(np.random.default_rng(seed), reads)

    def bench():
        return ReaderBench(Reader(port), addrs, seed, rates, in_flight, timing_)

    model = bench()
    want = pysim(model).answers
    assert native.run(bench(), work_dir=tmp_path).outputs["answers"] == want
    issued = [c for c, _ in model.sources[0].accepted]
    done = Dram(timing_, Geometry(bits)).completions(addrs, issued)
    order = [a["answer"]["tag"] for a in want] if tagged else range(len(addrs))
    assert sorted(order) == list(range(len(addrs)))
    for n, a in zip(order, want, strict=True):
        assert (a["answer"]["data"] if tagged else a["answer"]) == model.words[addrs[n]]
        assert a["cycle"] >= done[n]
    if tagged:
        assert order != sorted(order), "no read overtook another"
