# amaranth: UnusedElaboratable=no
"""The CSR-to-CSC converter (MINT Fig. 8c): its units alone, the block on Amaranth's
simulator (the paper's example, directed shapes, random matrices, its throughput), natively
on Verilator on real matrices against :func:`sparseforge.sw.conversion.convert` under random
back-pressure on every stream, ``convert --engine rtl``, lint and the synthesis report; its
COO mode and the edges it gives (COO in any order to CSC and CSR, CSC to CSR), one or two
counting sorts, from a ``.mtx`` in its file's order."""

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp
from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.cli import main
from sparseforge.core.errors import FormatError, ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_csc import (
    ChunkGroups,
    CsrToCsc,
    CsrToCscSignature,
    Drain,
    Increment,
    PathEntry,
    PointerScan,
    RowCounter,
)
from sparseforge.hw.interfaces import struct
from sparseforge.hw.mint_units import ClusterCounter, ZeroDetect
from sparseforge.hw.prefix_sum import PrefixSum
from sparseforge.hw.stream_units import Lockstep
from sparseforge.sim import native as native_build
from sparseforge.sim.models import csr_to_csc as cycle_model
from sparseforge.sim.models import mint as model
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw import wire
from sparseforge.sw.formats import read_matrix, read_mtx_in_order, read_tensor
from sparseforge.sw.passes import column_passes, join_groups, record_slices, row_bands, sort_passes
from sparseforge.tb import native
from sparseforge.tb.convert import block_of, route, rtl_convert
from sparseforge.tb.convert_csc import (
    CONVERSIONS,
    RTL,
    SINKS,
    SOURCES,
    CscBench,
    CscResult,
    SortPass,
    band_parts,
    canonical_csr,
    held_records,
    run_native,
    run_passes,
    sort_by_column,
    sort_records,
)
from sparseforge.tb.mint import PipelineBench
from sparseforge.tb.streams import Bench, Columns, Static
from tests.test_conversion import FIG8

FULL = dict.fromkeys(SOURCES + SINKS, 1.0)
SMALL = {"lanes": 4, "max_rows": 64, "max_cols": 64, "max_nnz": 1024, "value_width": 64}
REAL = RTL                           # the block convert --engine rtl builds: one build for all
MATRICES = ["suitesparse/494_bus.mtx", "suitesparse/lp_e226.mtx", "suitesparse/bcspwr05.mtx",
            "suitesparse/impcol_a.mtx", "pypi/nx_les_miserables.mtx",
            "suitesparse/ash219.mtx"]


def csr(matrix):
    """A canonical CSR array of a dense array or any scipy matrix."""
    return canonical_csr(sp.csr_array(matrix))


def real(shared_data, name):
    return canonical_csr(cv.convert(read_matrix(shared_data / "matrices" / name), "csr"))


def assert_converted(result, matrices):
    assert len(result.csc) == len(matrices)
    for got, matrix in zip(result.csc, matrices, strict=True):
        assert cv.same(got, cv.convert(matrix, "csc")), matrix.shape


def simulate(top, testbench):
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


# -- the units ---------------------------------------------------------------------------

def test_lockstep_carries_the_tag_beside_units_under_back_pressure():
    step = Lockstep({"zero": ZeroDetect(lanes=4, width=8),
                     "count": ClusterCounter(lanes=4, bins=4)}, 12)
    rng = np.random.default_rng(seed_from_env(1))
    values = rng.integers(0, 256, (120, 4)) * (rng.random((120, 4)) < 0.5)
    keep = rng.random((120, 4)) < 0.7
    indices = rng.integers(0, 4, (120, 4))
    mask, count = model.zero_detect(values)
    hist = model.cluster_counts(indices, keep, 4)
    items = [{"zero": v.tolist(), "count": {"indices": x.tolist(),
                                             "mask": int(sum(1 << i for i in np.flatnonzero(k)))},
              "tag": n} for n, (v, x, k) in enumerate(zip(values, indices, keep, strict=True))]
    expected = [{"zero": {"values": v.tolist(), "mask": int(mk), "count": int(c)},
                 "count": h.tolist(), "tag": n}
                for n, (v, mk, c, h) in enumerate(zip(values, mask, count, hist, strict=True))]
    result = pysim(PipelineBench(step, "given", items, "taken", expected, 1,
                                 {"given": 0.8, "taken": 0.4}))
    assert result.outputs == expected


def test_lockstep_refuses_units_of_different_latencies():
    with pytest.raises(ValueError, match=r"latencies \[2, 4\]"):
        Lockstep({"a": ZeroDetect(lanes=4, width=8), "b": PrefixSum(lanes=8, width=8)}, 1)


def groups_of(ids, mask, lanes):
    """ChunkGroups' groups of one chunk, by the definition: the lowest remaining id's word and
    every remaining id in it."""
    left = [i for i in range(lanes) if mask >> i & 1]
    out = []
    while left:
        word = ids[left[0]] // lanes
        group = [i for i in left if ids[i] // lanes == word]
        out.append({"word": word, "chunk": {"indices": [c % lanes for c in ids],
                                            "mask": sum(1 << i for i in group)}})
        left = [i for i in left if i not in group]
    return out


@pytest.mark.parametrize("rates", [{}, {"chunk": 1.0, "groups": 0.3}])
def test_chunk_groups_split_a_chunk_by_counter_word(rates):
    rng = np.random.default_rng(seed_from_env(2))
    chunks = [(rng.integers(0, 32, 4).tolist(), int(rng.integers(0, 16))) for _ in range(150)]
    chunks += [([5, 5, 5, 5], 0b1111), ([1, 2, 3, 0], 0b1011), ([31, 0, 31, 0], 0b0101)]
    expected = [g for ids, mask in chunks for g in groups_of(ids, mask, 4)]
    items = [{"ids": ids, "mask": mask} for ids, mask in chunks]
    result = pysim(PipelineBench(ChunkGroups(4, 5), "chunk", items, "groups", expected, 3,
                                 rates))
    assert result.outputs == expected


def test_chunk_groups_take_a_chunk_of_one_word_every_cycle():
    items = [{"ids": [8 * n + i for i in range(8)], "mask": 0xFF} for n in range(20)]
    expected = [g for item in items for g in groups_of(item["ids"], 0xFF, 8)]
    result = pysim(PipelineBench(ChunkGroups(8, 8), "chunk", items, "groups", expected, 0,
                                 {"chunk": 1.0, "groups": 1.0}))
    assert result.taken == list(range(20)) and len(expected) == 20


class RowBench(Bench):
    """Row pointers and entries into a :class:`RowCounter`; the entries out with their rows."""

    def __init__(self, component, indptr, seed, rates):
        super().__init__(component, seed)
        nnz = int(indptr[-1])
        self.sources = [self.source_on("row_ptr", np.asarray(indptr[1:]), rates),
                        self.source_on("csr", Columns({"col": np.arange(nnz) % 7,
                                                       "value": np.arange(nnz)}), rates)]
        self.sink = self.sink_on("entries", rates, expected=nnz)
        self.drivers = [*self.sources, self.sink, Static("rows", len(indptr) - 1)]

    def finished(self):
        return len(self.sink.received) == self.sink.expected and all(
            s.done for s in self.sources)

    def result(self):
        return self.cycle, self.sink.received


@pytest.mark.parametrize("indptr", [[0, 3, 3, 3, 5, 9, 9], [0, 0, 0, 1], [0, 4], [0, 0],
                                    [0, 1, 2, 3, 4, 5, 6, 7, 8]])
@pytest.mark.parametrize("rate", [1.0, 0.6])
def test_row_counter_gives_each_entry_its_row(indptr, rate):
    entry = struct(wire.csr_entry(3, 8))
    _, received = pysim(RowBench(RowCounter(16, 8, entry), np.array(indptr), 4, rate))
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    assert [e["row"] for _, e in received] == rows.tolist()
    assert [e["entry"]["value"] for _, e in received] == list(range(indptr[-1]))
    if rate == 1.0 and received:    # one entry a cycle, a cycle more for each empty row inside
        inside = np.diff(indptr)[rows[0]:rows[-1] + 1]
        assert received[-1][0] - received[0][0] == len(rows) - 1 + int(np.sum(inside == 0))


LANES, PTR = 4, 8
WORDS = 5
ENTRY = struct(wire.csc_entry(4, 8))


def memories(counts, entries=()):
    """A module with the counter memory (``WORDS`` words of ``LANES`` counts) and a 16-entry
    scratchpad of ``{row, value}``."""
    m = Module()
    m.submodules.counters = counters = Memory(shape=data.ArrayLayout(PTR, LANES), depth=WORDS,
                                              init=counts)
    m.submodules.scratch = scratch = Memory(shape=ENTRY.size, depth=16, init=list(entries))
    return m, counters, scratch


async def counts(ctx, counters):
    return [[ctx.get(counters.data[w])[i] for i in range(LANES)] for w in range(WORDS)]


def test_increment_adds_to_the_word_written_the_cycle_before_and_places_entries():
    tag = data.StructLayout({"word": 3, "lane": 2, "entry": ENTRY, "scatter": 1})
    unit = Increment(WORDS, LANES, PTR, 16, tag)
    m, counters, scratch = memories([[0, 2, 4, 6]] * WORDS)
    write = counters.write_port()
    wiring.connect(m, unit.read, counters.read_port(transparent_for=(write,)))
    wiring.connect(m, unit.write, write)
    wiring.connect(m, unit.place, scratch.write_port())
    m.submodules.unit = unit
    # back to back on one word and lane: each reads the count the one before left
    items = [({"word": 1, "lane": 3, "entry": {"row": n, "value": 10 + n}, "scatter": 1},
              [0, 0, 0, 1]) for n in range(4)]
    items += [({"word": 4, "lane": 0, "entry": {"row": 0, "value": 0}, "scatter": 0},
               [3, 1, 0, 2]),
              ({"word": 1, "lane": 1, "entry": {"row": 9, "value": 99}, "scatter": 1},
               [0, 1, 0, 0])]

    async def testbench(ctx):
        for item, increments in items:
            ctx.set(unit.items.valid, 1)
            ctx.set(unit.items.payload, {"counter": increments, "tag": item})
            await ctx.tick()
        ctx.set(unit.items.valid, 0)
        await ctx.tick().repeat(3)
        got = await counts(ctx, counters)
        assert got[0] == [0, 2, 4, 6] and got[1] == [0, 3, 4, 10] and got[4] == [3, 3, 4, 8]
        placed = {slot: ctx.get(scratch.data[slot]) for slot in (6, 7, 8, 9, 2)}
        assert placed == {**{6 + n: n | (10 + n) << 4 for n in range(4)}, 2: 9 | 99 << 4}

    simulate(m, testbench)


def test_path_entry_registers_a_group_or_an_entry_and_counts_what_is_on_the_path():
    tag = data.StructLayout({"word": 3, "lane": 2, "entry": ENTRY, "scatter": 1})
    entries = data.StructLayout({"row": 4, "entry": struct(wire.csr_entry(5, 8))})
    unit = PathEntry(LANES, 5, entries, tag, 6)

    async def testbench(ctx):
        assert ctx.get(unit.empty)
        ctx.set(unit.count, 1)
        ctx.set(unit.groups.valid, 1)
        ctx.set(unit.groups.payload, {"word": 5, "chunk": {"indices": [1, 2, 3, 0],
                                                           "mask": 0b0110}})
        await ctx.tick()
        # scattering: the group still offered is not taken, the entry is
        ctx.set(unit.count, 0)
        ctx.set(unit.scatter, 1)
        ctx.set(unit.entries.valid, 1)
        ctx.set(unit.entries.payload, {"row": 9, "entry": {"col": 23, "value": 77}})
        group = ctx.get(unit.given.payload)
        assert ctx.get(unit.given.valid) and not ctx.get(unit.empty)
        assert not ctx.get(unit.groups.ready) and ctx.get(unit.entries.ready)
        assert [group.counter.indices[i] for i in range(LANES)] == [1, 2, 3, 0]
        assert (group.counter.mask, group.tag.word, group.tag.scatter) == (0b0110, 5, 0)
        await ctx.tick()
        ctx.set(unit.entries.valid, 0)
        ctx.set(unit.settled, 1)
        placed = ctx.get(unit.given.payload)
        assert ctx.get(unit.given.valid)
        assert (placed.counter.indices[0], placed.counter.mask) == (23 % LANES, 1)
        assert (placed.tag.word, placed.tag.lane, placed.tag.scatter) == (23 // LANES, 3, 1)
        assert (placed.tag.entry.row, placed.tag.entry.value) == (9, 77)
        await ctx.tick()
        assert not ctx.get(unit.given.valid) and not ctx.get(unit.empty)
        await ctx.tick()                        # both items settled
        assert ctx.get(unit.empty)

    simulate(unit, testbench)


@pytest.mark.parametrize("cols", [0, 3, 4, 17, 19])
def test_pointer_scan_writes_the_exclusive_sums_back_and_sends_them(cols):
    given = (np.arange(WORDS * LANES).reshape(WORDS, LANES) % 5).tolist()
    m, counters, _ = memories(given)
    unit = PointerScan(WORDS, LANES, PTR, 19)
    write = counters.write_port()
    wiring.connect(m, unit.read, counters.read_port(transparent_for=(write,)))
    wiring.connect(m, unit.write, write)
    m.submodules.unit = unit
    scanned = cols // LANES + 1
    sums = np.concatenate([[0], np.cumsum(given[:scanned])[:-1]]).reshape(scanned, LANES)

    async def testbench(ctx):
        ctx.set(unit.cols, cols)
        ctx.set(unit.start, 1)
        await ctx.tick()
        ctx.set(unit.start, 0)
        vectors = []
        for cycle in range(60):
            ctx.set(unit.col_ptr.ready, cycle % 3 != 1)
            await ctx.delay(1e-9)
            if ctx.get(unit.col_ptr.valid) and ctx.get(unit.col_ptr.ready):
                vector = ctx.get(unit.col_ptr.payload)
                vectors.append(([vector.ptr[i] for i in range(LANES)], vector.last))
                assert ctx.get(unit.done) == (len(vectors) == scanned)
            await ctx.tick()
        assert vectors == [(row, int(n == scanned - 1)) for n, row in enumerate(sums.tolist())]
        assert await counts(ctx, counters) == sums.tolist() + given[scanned:]

    simulate(m, testbench)


@pytest.mark.parametrize(("cols", "nnz"), [(0, 0), (5, 16), (16, 3)])
def test_drain_streams_the_scratchpad_and_clears_the_counters(cols, nnz):
    m, counters, scratch = memories([[7] * LANES] * WORDS, range(100, 116))
    unit = Drain(WORDS, LANES, PTR, 16, 16, ENTRY)
    wiring.connect(m, unit.read, scratch.read_port())
    wiring.connect(m, unit.clear, counters.write_port())
    m.submodules.unit = unit

    async def testbench(ctx):
        ctx.set(unit.cols, cols)
        ctx.set(unit.nnz, nnz)
        ctx.set(unit.start, 1)
        await ctx.tick()
        ctx.set(unit.start, 0)
        ctx.set(unit.cols, 16 - cols)             # the next matrix's: sampled with start
        ctx.set(unit.nnz, 16 - nnz)
        out = []
        for cycle in range(80):
            assert ctx.get(unit.busy)
            ctx.set(unit.csc.ready, cycle % 2)
            await ctx.delay(1e-9)
            if ctx.get(unit.done):
                break
            if ctx.get(unit.csc.valid) and ctx.get(unit.csc.ready):
                out.append(ctx.get(unit.csc.payload.as_value()))
            await ctx.tick()
        await ctx.tick()
        assert out == list(range(100, 100 + nnz)) and not ctx.get(unit.busy)
        cleared = cols // LANES + 1
        assert await counts(ctx, counters) == \
            [[0] * LANES] * cleared + [[7] * LANES] * (WORDS - cleared)

    simulate(m, testbench)


# -- the block on Amaranth's simulator ------------------------------------------------------

def test_fig8c_the_paper_example():
    matrix = csr(FIG8)
    result = pysim(CscBench(CsrToCsc(lanes=4, max_rows=4, max_cols=32, max_nnz=8,
                                     value_width=64), [matrix], seed_from_env(8), FULL))
    csc = result.csc[0]
    assert csc.indptr.tolist() == [0, 2, 3, 5, 7]         # the prefix sum of the counts
    assert csc.data.tolist().index(FIG8[0, 2]) == 3       # a, col_ids 2: col_ptr[2] = 3
    assert csc.data.tolist().index(FIG8[1, 2]) == 4       # c, the next of column 2
    assert csc.indices.tolist() == [2, 3, 2, 0, 1, 0, 3]
    assert_converted(result, [matrix])


def directed():
    """Matrices with empty columns and rows, a dense column, a single row or column, none."""
    dense_column = np.zeros((50, 60))
    dense_column[:, 3] = np.arange(1, 51)
    gaps = np.zeros((9, 40))
    gaps[[0, 4, 8], :] = np.arange(1, 41)
    gaps[:, ::3] = 0
    return [csr(dense_column), csr(np.arange(1.0, 41.0).reshape(1, 40)),
            csr(np.arange(1.0, 31.0).reshape(30, 1)), csr(np.zeros((7, 9))), csr(gaps),
            csr(np.eye(16)), csr(np.ones((8, 64))), csr(np.zeros((64, 63))),
            csr(FIG8), csr(np.ones((1, 1)))]


@pytest.mark.parametrize("rates", [FULL, {}, {"col_ptr": 0.2, "csc": 0.3}])
def test_directed_matrices_back_to_back(rates):
    matrices = directed()
    assert_converted(pysim(CscBench(CsrToCsc(**SMALL), matrices, seed_from_env(9), rates)),
                     matrices)


@pytest.mark.parametrize(("seed", "banks"), [(11, 2), (12, 1)])
def test_random_matrices_under_back_pressure(seed, banks):
    rng = np.random.default_rng(seed_from_env(seed))
    matrices = [csr(sp.random_array((rng.integers(1, 65), rng.integers(1, 65)),
                                    density=d, rng=rng)) for d in (0.01, 0.05, 0.2, 0.6)]
    ints = csr((rng.integers(-3, 4, (20, 40)) * (rng.random((20, 40)) < 0.3)).astype(np.int16))
    assert_converted(pysim(CscBench(CsrToCsc(**{**SMALL, "value_width": 16}), [ints],
                                    seed)), [ints])
    assert_converted(pysim(CscBench(CsrToCsc(**{**SMALL, "banks": banks}), matrices, seed)),
                     matrices)


def test_scatter_and_drain_take_one_nonzero_a_cycle_and_count_a_word_a_cycle():
    """Without stalls: a row of one counter word's columns counts a chunk a cycle, and the
    scatter and the drain move one nonzero every cycle."""
    matrix = csr(np.arange(1.0, 8 * 64 + 1).reshape(8, 64))
    bench = CscBench(CsrToCsc(**{**SMALL, "lanes": 8}), [matrix], 0, FULL)
    assert_converted(pysim(bench), [matrix])
    chunks, _, entries = (s.accepted for s in bench.sources[1:4])
    for taken in ([c for c, _ in chunks], [c for c, _ in entries],
                  [c for c, _ in bench.sinks[1].received]):
        assert np.all(np.diff(taken) == 1)


def test_the_cycle_model_gives_the_cycles_without_stalls_exactly():
    """Back to back, CSR and COO, lanes 4 and 8, one counter bank or two: empty matrices,
    none of rows, a last row empty, wide ones whose drain is its clearing, the scratchpad's
    drain longer or shorter than the next matrix's count and scan."""
    rng = np.random.default_rng(seed_from_env(45))
    matrices = [*directed()[:6], csr(sp.csr_array((np.ones(2), ([0, 1], [0, 60])),
                                                  shape=(2, 64))),
                csr(sp.csr_array((0, 4))), csr(sp.csr_array((3, 64)))]
    matrices += [csr(sp.random_array((int(rng.integers(1, 60)), int(rng.integers(1, 64))),
                                     density=d, rng=rng)) for d in (0.02, 0.2, 0.5)]
    rng.shuffle(matrices)
    for lanes, banks, batch in ((4, 2, matrices), (8, 2, matrices[::-2]), (4, 1, matrices[1::2]),
                                (4, 2, [shuffled(m, 46) for m in matrices[::2] if m.nnz])):
        block = CsrToCsc(**{**SMALL, "lanes": lanes, "banks": banks})
        result = pysim(CscBench(block, batch, 0, FULL))
        assert result.cycles == cycle_model.cycles(batch, lanes, banks)
        for got, matrix in zip(result.csc, batch, strict=True):
            want = stable_by_column(matrix) if matrix.format == "coo" else \
                stable_by_column(sp.coo_array(matrix))
            assert (got.indptr.tolist(), got.indices.tolist(), got.data.tolist()) == want
    assert cycle_model.groups([0, 1, 9, 2, 17, 16, 3], 4) == 2 + 2   # words {0, 2} | {4, 0}


def test_the_next_matrix_counts_and_scans_while_the_one_before_drains():
    """Its column ids are taken and its pointers are out before the previous matrix's last
    CSC entry, under back-pressure on ``csc``; without stalls they take less than alone."""
    spread = np.zeros((20, 40))
    spread[:, ::4] = 1.0                          # a counter word each id: a group each
    matrices = [csr(np.arange(1.0, 8 * 40 + 1).reshape(8, 40)), csr(spread)]
    bench = CscBench(CsrToCsc(**SMALL), matrices, seed_from_env(47), {**FULL, "csc": 0.5})
    together = pysim(bench)
    assert_converted(together, matrices)
    ids, pointers = bench.sources[1].accepted, bench.sinks[0].received
    first_out = bench.sinks[1].received[matrices[0].nnz - 1][0]      # matrix 0's last entry
    assert ids[-1][0] < first_out and pointers[-1][0] < first_out
    alone = sum(cycle_model.cycles([m], 4) for m in matrices)       # the model is exact
    assert pysim(CscBench(CsrToCsc(**SMALL), matrices, 0, FULL)).cycles < alone - 200


def test_a_matrix_larger_than_the_block_is_refused():
    with pytest.raises(ParameterError, match="65 columns does not fit the csr_to_csc block"):
        CscBench(CsrToCsc(**SMALL), [csr(np.ones((2, 65)))], 0)
    with pytest.raises(ParameterError, match="1025 nonzeros"):
        CscBench(CsrToCsc(**SMALL), [csr(np.ones((41, 25)))], 0)


# -- natively on Verilator, real matrices --------------------------------------------------

@pytest.mark.verilator
def test_real_matrices_natively_against_the_golden_converter(shared_data):
    matrices = [real(shared_data, name) for name in MATRICES]
    assert_converted(run_native(CsrToCsc(**REAL), matrices, seed_from_env(21)), matrices)
    outputs = {"col_ptr": 0.25, "csc": 0.35, "csr": 0.9}
    assert_converted(run_native(CsrToCsc(**REAL), matrices[:3], seed_from_env(22), outputs),
                     matrices[:3])


@pytest.mark.verilator
def test_native_and_python_driven_runs_take_the_same_cycles(shared_data):
    matrix = real(shared_data, "suitesparse/bcspwr01.mtx")
    bench = CscBench(CsrToCsc(**REAL), [matrix], seed_from_env(23))
    python = pysim(CscBench(CsrToCsc(**REAL), [matrix], bench.seed))
    run = native.run(bench)
    assert run.cycles == python.cycles
    assert cv.same(bench.rebuild(*(run.outputs[s.name] for s in bench.sinks))[0],
                   python.csc[0])


@pytest.mark.verilator
def test_convert_rtl_writes_exactly_what_sw_writes(shared_data, tmp_path, capsys):
    source = tmp_path / "lp_e226_csr.npz"
    sp.save_npz(source, real(shared_data, "suitesparse/lp_e226.mtx"))
    out = {}
    for engine in ("sw", "rtl"):
        main(["convert", str(source), "--to", "csc", "--engine", engine, "-o",
              str(tmp_path / f"{engine}.npz"), "--json"])
        out[engine] = json.loads(capsys.readouterr().out)
    assert (tmp_path / "rtl.npz").read_bytes() == (tmp_path / "sw.npz").read_bytes()
    assert out["rtl"]["from"] == "csr" and out["rtl"]["cycles"] > 2 * out["rtl"]["nnz"]


@pytest.mark.verilator
def test_a_matrix_larger_than_the_buffers_goes_through_in_column_passes(shared_data):
    """bcspwr10: 5,300 columns and 21,842 nonzeros through 1,024 columns' counters and a
    4,096-entry scratchpad, every stream stalling at random."""
    matrix = real(shared_data, "suitesparse/bcspwr10.mtx")
    rates = {**dict.fromkeys(SOURCES + SINKS, 0.6), "csc": 0.4}
    csc, cycles, passes, _ = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(24), rates)
    assert passes == len(column_passes(matrix.indices, 5300, 1024, 4096)) - 1 > 5
    assert cv.same(csc, cv.convert(matrix, "csc"))
    assert cycles > passes * matrix.shape[0]          # every pass takes every row's pointer


@pytest.mark.verilator
def test_a_full_scratchpad_is_one_pass_and_one_more_nonzero_makes_two():
    rng = np.random.default_rng(seed_from_env(25))
    coords = rng.choice(600 * 1024, 4097, replace=False)
    rows, cols = coords // 1024, coords % 1024
    for nnz, want in ((4096, 1), (4097, 2)):
        matrix = canonical_csr(sp.csr_array((rng.standard_normal(nnz), (rows[:nnz], cols[:nnz])),
                                            shape=(600, 1024)))
        csc, _, passes, _ = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(26))
        assert passes == want and cv.same(csc, cv.convert(matrix, "csc"))


@pytest.mark.verilator
def test_a_matrix_of_another_size_reuses_the_build(monkeypatch):
    built = []

    def build(verilog, name, **options):
        built.append(verilog)
        return real_build(verilog, name, **options)

    real_build = native_build.build
    monkeypatch.setattr(native_build, "build", build)
    for shape in ((5, 3000), (70, 40)):
        matrix = sp.random_array(shape, density=0.05, format="csr",
                                 rng=np.random.default_rng(shape[0]))
        got, _ = rtl_convert(matrix, "csc")
        assert cv.same(got, cv.convert(matrix, "csc"))
    assert len(built) == 2 and built[0] == built[1]


@pytest.mark.verilator
@pytest.mark.soak
def test_the_most_rows_are_one_band_and_one_more_row_makes_two():
    """Row ids are 16 bits in the RTL build: 65,537 rows go through in two bands, the first
    of the most rows (its last row's id all ones), the second of the one row more (the tiny
    block's tests take columns past the scratchpad and sorts by row carrying more columns
    than row ids)."""
    tall = sp.csr_array((np.arange(1.0, 6.0), ([0, 40000, 65535, 65535, 65536],
                                               [0, 2, 1, 2, 1])), shape=(65537, 3))
    assert [p.shape for p in band_parts(CsrToCsc(**RTL), tall)[0]] == [(65536, 3), (1, 3)]
    # the block itself (the engine's route may price CSR->COO->CSC cheaper for so many rows)
    got, cycles = CONVERSIONS[("csr", "csc")](tall, None, None, 1)
    assert cv.same(got, cv.convert(tall, "csc"))
    assert [p.parts for p in cycles.passes] == [2]


def test_the_rtl_engine_refuses_complex_values_by_name():
    with pytest.raises(ParameterError, match="values of type complex128 do not stream"):
        rtl_convert(sp.csr_array(np.eye(3) * 1j), "csc")


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("seed", range(300, 303))
def test_soak_larger_real_matrices(shared_data, seed):
    names = ["suitesparse/dwt_992.mtx", "suitesparse/hangGlider_2.mtx",
             "suitesparse/cryg2500.mtx", "suitesparse/G51.mtx", "graphs/cora_adj.mtx",
             "pypi/pygsp_david500.mtx", "suitesparse/Pd.mtx"]
    matrices = [real(shared_data, name) for name in names]
    rates = {**dict.fromkeys(SOURCES + SINKS, 0.5 + 0.1 * (seed % 3)), "csc": 0.3}
    params = {"lanes": 8, "max_rows": 8192, "max_cols": 8192, "max_nnz": 32768,
              "value_width": 64}
    assert_converted(run_native(CsrToCsc(**params), matrices, seed, rates), matrices)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("name", ["graphs/nr-bio-dmela.mtx", "graphs/delaunay_n16.mtx",
                                  "suitesparse/pushpull.mtx", "graphs/p2p-Gnutella24.mtx"])
def test_soak_large_real_matrices_in_passes_through_the_rtl_block(shared_data, name):
    matrix = real(shared_data, name)
    rates = {**dict.fromkeys(SOURCES + SINKS, 0.8), "csc": 0.5}
    csc, _, passes, _ = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(310), rates)
    assert passes > 1 and cv.same(csc, cv.convert(matrix, "csc"))


@pytest.mark.soak
@pytest.mark.verilator
def test_soak_a_real_matrix_of_1_6_million_rows_in_row_bands(shared_data):
    """No matrix of the shared data has more than 65,536 rows; MovieLens-100k's ratings
    unfolded along the day are one: rows (user, item), 943 x 1,682 = 1,586,126 of them, by
    215 days, 100,000 nonzeros. CSR to CSC in 25 row bands under back-pressure (each row id
    within its band's 16 bits); back from CSC to CSR, keyed on the 1.6 million rows, in one
    band of the transposed view and its column passes."""
    tensor = read_tensor(shared_data / "tensors" / "movielens-100k_user-item-day.tns")
    users, items, days = tensor.shape
    matrix = csr(sp.coo_array((tensor.values, (tensor.coords[:, 0] * items + tensor.coords[:, 1],
                                               tensor.coords[:, 2])), shape=(users * items, days)))
    assert matrix.shape == (1586126, 215) and matrix.nnz == 100000
    rates = {**dict.fromkeys(SOURCES + SINKS, 0.8), "csc": 0.6}
    csc, _, passes, bands = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(330), rates)
    assert bands == 25 and passes >= bands and cv.same(csc, cv.convert(matrix, "csc"))
    got, stages = rtl_convert(csc, "csr")
    assert stages[0].passes[0]["parts"] == -(-1586126 // 1024)        # 1,024 columns a pass
    assert cv.same(got, cv.convert(matrix, "csr"))


@pytest.mark.soak
@pytest.mark.verilator
def test_soak_bench_csc_prints_back_to_back_cycles_equal_to_the_model(capsys):
    """With one counter bank or two; two take fewer cycles on every workload."""
    cycles = []
    for banks in (1, 2):
        main(["bench", "csc", "--copies", "2", "--banks", str(banks), "--json"])
        rows = json.loads(capsys.readouterr().out)["rows"]
        assert len(rows) == 7 and all(r["matches_golden"] for r in rows)
        assert all(r["cycles"] == r["model"] for r in rows if r["stalls"] == "none")
        assert [r["matrices"] for r in rows[:3]] == [2, 2, 2]
        cycles.append([r["cycles"] for r in rows])
    assert all(two < one for one, two in zip(*cycles, strict=True))


# -- COO in any order: the block's COO mode, one or two sorts, a .mtx in file order --------

def shuffled(matrix, seed):
    """The nonzeros of ``matrix`` as COO records in a random order."""
    coo = sp.coo_array(matrix)
    order = np.random.default_rng(seed).permutation(coo.nnz)
    return sp.coo_array((coo.data[order], (coo.row[order], coo.col[order])), shape=coo.shape)


def stable_by_column(records):
    """The CSC of COO ``records`` as a stable counting sort by column leaves it: a column's
    entries in the order they came."""
    order = np.argsort(records.col, kind="stable")
    ptr = np.concatenate([[0], np.cumsum(np.bincount(records.col, minlength=records.shape[1]))])
    return ptr.tolist(), records.row[order].tolist(), records.data[order].tolist()


# 5 x 8, values 1..14 all different, rows and columns of different counts
SHUFFLED = shuffled(np.arange(1.0, 41.0).reshape(5, 8) * (np.arange(40).reshape(5, 8) % 3 == 0),
                    5)


def test_coo_mode_places_records_in_any_order_stably_by_column():
    """The records' own rows, no row pointer; a column's entries come out in the order they
    came (the counting sort is stable), back to back with an empty matrix and Fig. 8's."""
    matrices = [SHUFFLED, sp.coo_array((3, 30)), shuffled(FIG8, 6), shuffled(np.ones((1, 1)), 7)]
    bench = CscBench(CsrToCsc(**{**SMALL, "max_cols": 32}), matrices, seed_from_env(30))
    result = pysim(bench)
    for got, records in zip(result.csc, matrices, strict=True):
        assert (got.indptr.tolist(), got.indices.tolist(), got.data.tolist()) == \
            stable_by_column(records)
    assert [len(s.accepted) for s in bench.sources[2:]] == [0, 0, 14 + 7 + 1]
    assert SHUFFLED.shape == (5, 8) and SHUFFLED.nnz == 14
    assert sorted(SHUFFLED.data.tolist()) == [1.0 + 3 * k for k in range(14)]


def test_coo_mode_takes_one_record_a_cycle():
    records = shuffled(np.arange(1.0, 8 * 16 + 1).reshape(8, 16), 8)
    bench = CscBench(CsrToCsc(**SMALL), [records], 0, FULL)
    pysim(bench)
    assert np.all(np.diff([c for c, _ in bench.sources[4].accepted]) == 1)


def test_a_bench_of_csr_and_coo_matrices_is_refused():
    with pytest.raises(ValueError, match="all CSR or all COO"):
        CscBench(CsrToCsc(**SMALL), [csr(FIG8), SHUFFLED], 0)


@pytest.mark.parametrize(("rows", "cols", "by", "passes"), [
    ([0, 0, 1, 2, 2], [3, 1, 0, 2, 0], "column", 1),      # row-major, columns in any order
    ([0, 2, 0, 1], [0, 0, 1, 1], "column", 1),            # rows ascend within each column
    ([1, 0, 2], [0, 0, 1], "column", 2),                  # row 1 before row 0 in column 0
    ([1, 0, 2], [0, 0, 1], "row", 1),
    ([0, 0, 1], [2, 1, 0], "row", 2),
    ([], [], "row", 1),
])
def test_sort_passes_one_where_the_other_coordinate_already_ascends(rows, cols, by, passes):
    assert sort_passes(rows, cols, by) == passes


def test_sort_passes_refuses_a_repeated_coordinate_by_its_records():
    with pytest.raises(ParameterError, match=r"records 1 and 3 are both at \(2, 0\)"):
        sort_passes([0, 2, 1, 2], [0, 0, 1, 0], "column")


def test_record_slices_keep_each_pass_in_arrival_order():
    assert [s.tolist() for s in record_slices([5, 0, 3, 1, 4, 0], [0, 2, 4, 6])] == \
        [[1, 3, 5], [2], [0, 4]]


def write_mtx(path, lines, banner="coordinate real general", size="3 4 5"):
    path.write_text(f"%%MatrixMarket matrix {banner}\n{size}\n" + "".join(
        f"{line}\n" for line in lines))
    return path


def test_read_mtx_in_order_keeps_the_file_order_and_stored_zeros(tmp_path):
    path = write_mtx(tmp_path / "a.mtx", ["3 1 1.5", "1 4 0", "2 2 -2", "1 1 4", "3 4 5"])
    got = read_mtx_in_order(path)
    assert (got.row.tolist(), got.col.tolist(), got.data.tolist()) == \
        ([2, 0, 1, 0, 2], [0, 3, 1, 0, 3], [1.5, 0.0, -2.0, 4.0, 5.0])
    assert cv.same(cv.convert(got, "csr"), cv.convert(read_matrix(path), "csr"))
    sym = read_mtx_in_order(write_mtx(tmp_path / "s.mtx", ["2 1 7", "3 3 1", "3 2 8"],
                                      "coordinate integer symmetric", "3 3 3"))
    assert (sym.row.tolist(), sym.col.tolist(), sym.data.tolist()) == \
        ([1, 2, 2, 0, 1], [0, 2, 1, 1, 2], [7, 1, 8, 7, 8])


def test_read_mtx_in_order_refuses_a_repeated_coordinate_naming_the_file_and_lines(tmp_path):
    path = write_mtx(tmp_path / "rep.mtx", ["1 1 1", "2 3 2", "1 1 3"], size="3 4 3")
    with pytest.raises(FormatError, match=r"rep\.mtx:5: duplicate entry \(1, 1\) \(1-based\), "
                                          r"first given on line 3"):
        read_mtx_in_order(path)
    with pytest.raises(FormatError, match="unknown extension"):
        read_mtx_in_order(tmp_path / "a.npz")


def python(component, matrices, seed, rates=None):
    """``matrices`` through ``component`` on Amaranth's simulator (``run_native``'s use)."""
    return pysim(CscBench(component, matrices, seed, rates))


def sorted_as(records, by, component=None, seed=0, rates=None, simulate=python):
    """``records`` sorted by ``by`` through ``component`` (SMALL's by default), checked
    against the golden CSC or CSR; the :class:`Cycles`."""
    indptr, others, data, cycles = sort_records(component or CsrToCsc(**SMALL), records, by,
                                                seed, rates, simulate)
    want = cv.convert(records, {"column": "csc", "row": "csr"}[by])
    assert indptr.tolist() == want.indptr.tolist()
    assert others.tolist() == want.indices.tolist() and np.array_equal(data, want.data)
    assert cycles == sum(p.cycles for p in cycles.passes)
    assert all(p.cycles > 0 for p in cycles.passes)
    return cycles


def test_coo_directed_in_one_or_two_sorts():
    """The 5 x 8 records in a random order take two sorts either way, the other coordinate
    first; the same records row-major take one to CSC, column-major one to CSR."""
    assert [p.key for p in sorted_as(SHUFFLED, "column").passes] == ["row", "column"]
    assert [p.key for p in sorted_as(SHUFFLED, "row").passes] == ["column", "row"]
    row_major = cv.convert(SHUFFLED, "coo")
    assert [p.key for p in sorted_as(row_major, "column").passes] == ["column"]
    csc = cv.convert(SHUFFLED, "csc")
    column_major = sp.coo_array((csc.data, (csc.indices, np.repeat(np.arange(8),
                                                                   np.diff(csc.indptr)))),
                                shape=(5, 8))
    assert [(p.key, p.parts) for p in sorted_as(column_major, "row").passes] == [("row", 1)]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 16), st.integers(1, 16), st.floats(0, 1), st.integers(0, 2**16))
def test_hypothesis_shuffled_coo_to_csc_and_csr(rows, cols, density, seed):
    rng = np.random.default_rng(seed)
    records = shuffled(rng.integers(-50, 50, (rows, cols)) * (rng.random((rows, cols)) < density),
                       seed)
    rates = dict.fromkeys(SOURCES + SINKS, 0.4 + 0.6 * rng.random())
    for by in ("column", "row"):
        sorted_as(records, by, seed=seed, rates=rates)


def test_coo_beyond_the_buffers_goes_through_in_column_passes_in_each_sort():
    """150 records over 140 columns and 100 rows, in a random order, through 64 columns'
    counters: each sort takes column passes of its key."""
    rng = np.random.default_rng(seed_from_env(32))
    coords = rng.choice(100 * 140, 150, replace=False)
    records = sp.coo_array((rng.standard_normal(150), (coords // 140, coords % 140)),
                           shape=(100, 140))
    block = CsrToCsc(**{**SMALL, "max_rows": 256})
    cycles = sorted_as(records, "column", block, seed_from_env(33))
    assert [(p.key, p.parts) for p in cycles.passes] == [("row", 2), ("column", 3)]


def test_coo_stored_zeros_are_dropped_and_repeats_refused_before_any_run():
    zeros = sp.coo_array((np.array([0.0, 2.0, -0.0, 3.0]), ([1, 0, 2, 2], [0, 1, 1, 3])),
                         shape=(3, 4))
    held = held_records(zeros)
    assert (held.row.tolist(), held.col.tolist(), held.data.tolist()) == ([0, 2], [1, 3],
                                                                          [2.0, 3.0])
    assert [p.key for p in sorted_as(held, "row").passes] == ["row"]
    repeats = sp.coo_array((np.ones(3), ([1, 0, 1], [2, 0, 2])), shape=(3, 4))
    for to in ("csc", "csr"):
        with pytest.raises(ParameterError, match=r"records 0 and 2 are both at \(1, 2\)"):
            rtl_convert(repeats, to)


# -- row bands: matrices of more rows than the block's row ids, or of columns past its
# scratchpad ---------------------------------------------------------------------------------

# 7 rows x 5 columns; column counts 2, 2, 1, 5, 2 (12 nonzeros)
BANDED = {0: [0, 3], 1: [1, 3], 2: [3], 3: [0, 3, 4], 4: [2], 5: [3], 6: [1, 4]}
BANDED_CSR = csr(sp.coo_array((np.arange(1.0, 13.0), ([r for r, cs in BANDED.items() for _ in cs],
                                                      [c for cs in BANDED.values() for c in cs])),
                              shape=(7, 5)))


def golden(component, matrices, seed, rates=None):
    """Each pass's CSC from the golden converter: the host's plan and join alone."""
    return CscResult(0, [cv.convert(m, "csc") for m in matrices])


def test_row_bands_worked_by_hand_on_a_7_by_5_matrix():
    """Bands of at most 3 rows and 2 nonzeros of a column: column 3 (rows 0, 1, 2, 3, 5)
    ends the first band before its third nonzero, at row 2; rows 2-4 hold two of it; then
    rows 5-6. Each band in passes of 2 columns and 2 nonzeros."""
    rows_of = np.repeat(np.arange(7), np.diff(BANDED_CSR.indptr))
    assert row_bands(rows_of, BANDED_CSR.indices, 7, 3, 2).tolist() == [0, 2, 5, 7]
    assert row_bands(rows_of[::-1], BANDED_CSR.indices[::-1], 7, 3, 2).tolist() == [0, 2, 5, 7]
    assert row_bands(rows_of, BANDED_CSR.indices, 7, 3, 5).tolist() == [0, 3, 6, 7]
    assert row_bands(rows_of, BANDED_CSR.indices, 7, 7, 5).tolist() == [0, 7]    # exactly fits
    assert row_bands(rows_of, BANDED_CSR.indices, 7, 7, 4).tolist() == [0, 5, 7]  # one more
    assert row_bands([], [], 0, 4, 4).tolist() == [0, 0]
    assert row_bands([], [], 9, 4, 4).tolist() == [0, 4, 8, 9]
    with pytest.raises(ParameterError, match="row 1 holds more than 1 nonzeros of one column"):
        row_bands([0, 1, 1], [0, 2, 2], 2, 4, 1)                 # (1, 2) twice: no band holds it

    class Block:
        max_rows, max_cols, max_nnz = 3, 2, 2

    parts, bands = band_parts(Block, BANDED_CSR)
    assert bands == [(0, 3), (2, 4), (5, 3)]
    # band 1 (rows 2-4: columns 3 | 0, 3, 4 | 2): columns 0-1, 2, 3, 4 (2 and 3 hold 3)
    assert [(p.shape, p.indptr.tolist(), p.indices.tolist()) for p in parts[3:7]] == [
        ((3, 2), [0, 0, 1, 1], [0]), ((3, 1), [0, 0, 0, 1], [0]),
        ((3, 1), [0, 1, 2, 2], [0, 0]), ((3, 1), [0, 0, 1, 1], [0])]
    (indptr, indices, data), _, passes, bands = sort_by_column(Block, BANDED_CSR, 0,
                                                               simulate=golden)
    want = cv.convert(BANDED_CSR, "csc")
    assert (passes, bands) == (10, 3)
    assert indptr.tolist() == want.indptr.tolist() == [0, 2, 4, 5, 10, 12]
    assert indices.tolist() == want.indices.tolist() and data.tolist() == want.data.tolist()


def test_groups_join_band_by_band():
    # three bands over two columns: 1 and 2 entries, 0 and 1, 2 and 0
    ptr, places = join_groups([[0, 1, 3], [0, 0, 1], [0, 2, 2]])
    assert ptr.tolist() == [0, 3, 6]
    # a | b c, - | d, e f | -: column 0 is a e f, column 1 b c d
    assert places.tolist() == [0, 3, 4, 5, 1, 2]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 30), st.integers(1, 40), st.floats(0, 0.6), st.integers(1, 8),
       st.integers(1, 6), st.integers(1, 12), st.integers(0, 2**32 - 1), st.booleans())
def test_hypothesis_bands_and_passes_within_the_buffers_join_to_the_csc(
        rows, cols, density, max_rows, max_cols, max_nnz, seed, coo):
    """Every band within both bounds and as long as they allow; every pass within the
    block's; the passes' CSCs joined are the matrix's, from CSR or from records in any order."""
    matrix = csr(sp.random_array((rows, cols), density=density, rng=np.random.default_rng(seed)))
    rows_of = np.repeat(np.arange(rows), np.diff(matrix.indptr))
    bounds = row_bands(rows_of, matrix.indices, rows, max_rows, max_nnz)
    for lo, hi in itertools.pairwise(bounds):
        counts = np.bincount(matrix.indices[(rows_of >= lo) & (rows_of < hi)], minlength=cols)
        assert (hi > lo or rows == 0) and hi - lo <= max_rows and counts.max(initial=0) <= max_nnz
        longer = np.bincount(matrix.indices[(rows_of >= lo) & (rows_of <= hi)], minlength=cols)
        assert hi == rows or hi - lo == max_rows or longer.max(initial=0) > max_nnz

    class Block:
        pass

    Block.max_rows, Block.max_cols, Block.max_nnz = max_rows, max_cols, max_nnz
    source = shuffled(matrix, seed) if coo else matrix
    parts, _ = band_parts(Block, source)
    assert all(p.shape[0] <= max_rows and p.shape[1] <= max_cols and p.nnz <= max_nnz
               for p in parts)
    (indptr, indices, data), *_ = sort_by_column(Block, source, 0, simulate=golden)
    want = cv.convert(matrix, "csc")
    assert indptr.tolist() == want.indptr.tolist() and indices.tolist() == want.indices.tolist()
    assert np.array_equal(data, want.data)


TINY = {"lanes": 4, "max_rows": 4, "max_cols": 32, "max_nnz": 8, "value_width": 64}
"""A block of 2-bit row ids, 32 columns' counters and an 8-entry scratchpad."""


def test_a_band_of_the_most_rows_is_one_pass_and_one_more_row_makes_two():
    block = CsrToCsc(**TINY)
    for rows, bands in ((4, 1), (5, 2)):
        matrix = csr(np.arange(1.0, 2 * rows + 1).reshape(rows, 2))     # 8 nonzeros, or 10
        (indptr, indices, data), cycles, passes, got = sort_by_column(
            block, matrix, seed_from_env(40), simulate=python)
        want = cv.convert(matrix, "csc")
        assert (passes, got) == (bands, bands) and cycles > 0
        assert cv.same(sp.csc_array((data, indices, indptr), shape=matrix.shape), want)


def test_beyond_every_limit_through_the_block_equals_the_sw_engine():
    """21 rows, 70 columns and a column of 12 nonzeros through the tiny block under
    back-pressure: CSR to CSC, and the same records in a random order to CSC and CSR (the
    sort by row carrying 70 columns as 2-bit row ids)."""
    rng = np.random.default_rng(seed_from_env(41))
    dense = rng.standard_normal((21, 70)) * (rng.random((21, 70)) < 0.06)
    dense[rng.choice(21, 12, replace=False), 5] = np.arange(1.0, 13.0)
    matrix = csr(dense)
    (indptr, indices, data), _, passes, bands = sort_by_column(
        CsrToCsc(**TINY), matrix, seed_from_env(42), simulate=python)
    assert bands > 21 // 4 and passes > bands
    csc = sp.csc_array((data, indices, indptr), shape=matrix.shape)
    assert cv.same(csc, cv.convert(matrix, "csc"))
    records = shuffled(matrix, seed_from_env(43))
    for by in ("column", "row"):
        cycles = sorted_as(records, by, CsrToCsc(**TINY), seed_from_env(44))
        assert all(p.parts > 3 for p in cycles.passes)      # 3 column passes at most: bands


def test_the_block_edges():
    assert {("csr", "csc"), ("csc", "csr"), ("coo", "csc"), ("coo", "csr")} == set(CONVERSIONS)
    assert {block_of(key, run) for key, run in CONVERSIONS.items()} == {"csr_to_csc"}
    assert route(SHUFFLED, "csc") == ["coo", "csc"] and route(SHUFFLED, "csr") == ["coo", "csr"]


@pytest.mark.soak
@pytest.mark.verilator
def test_a_real_mtx_in_file_order_natively_under_back_pressure(shared_data):
    """494_bus is symmetric: its lower triangle column by column, then the mirrored entries,
    so its rows do not ascend within a column: two sorts to CSC (in one to CSR, the
    Amaranth-simulated tests' case)."""
    records = read_mtx_in_order(shared_data / "matrices" / "suitesparse" / "494_bus.mtx")
    rates = {**dict.fromkeys(SOURCES + SINKS, 0.6), "coo": 0.5, "csc": 0.4}
    cycles = sorted_as(records, "column", CsrToCsc(**RTL), seed_from_env(31), rates, run_native)
    assert [p.key for p in cycles.passes] == ["row", "column"]
    assert sort_passes(records.row, records.col, "row") == 1


@pytest.mark.soak
@pytest.mark.verilator
def test_csc_to_csr_is_one_sort_on_the_transposed_view():
    """1,100 rows: A^T's 1,100 columns go through 1,024 columns' counters in two passes."""
    matrix = sp.random_array((1100, 60), density=0.02, format="csc",
                             rng=np.random.default_rng(seed_from_env(34)))
    got, cycles = CONVERSIONS["csc", "csr"](matrix)
    assert cv.same(got, cv.convert(matrix, "csr"))
    assert cycles.passes == (SortPass("row", int(cycles), 2),)


@pytest.mark.soak
@pytest.mark.verilator
def test_convert_rtl_from_a_mtx_writes_exactly_what_sw_writes(shared_data, tmp_path, capsys):
    source = shared_data / "matrices" / "suitesparse" / "lp_e226.mtx"
    for to in ("csr", "csc"):
        out = {}
        for engine in ("sw", "rtl"):
            main(["convert", str(source), "--to", to, "--engine", engine, "-o",
                  str(tmp_path / f"{engine}_{to}.npz"), "--json"])
            out[engine] = json.loads(capsys.readouterr().out)
        assert (tmp_path / f"rtl_{to}.npz").read_bytes() == \
            (tmp_path / f"sw_{to}.npz").read_bytes()
        assert out["rtl"]["from"] == "coo" and out["rtl"]["cycles"] > out["rtl"]["nnz"]


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("name", ["suitesparse/bcspwr10.mtx", "suitesparse/dwt_992.mtx",
                                  "graphs/cora_adj.mtx", "suitesparse/Pd.mtx",
                                  "graphs/delaunay_n16.mtx", "suitesparse/lp_e226.mtx"])
def test_soak_real_mtx_in_file_order_to_csc_and_csr(shared_data, name):
    records = held_records(read_mtx_in_order(shared_data / "matrices" / name))
    rates = {**dict.fromkeys(SOURCES + SINKS, 0.7), "csc": 0.5}
    for by in ("column", "row"):
        cycles = sorted_as(records, by, CsrToCsc(**RTL), seed_from_env(320), rates, run_native)
        assert len(cycles.passes) == sort_passes(records.row, records.col, by)
    csc = cv.convert(records, "csc")
    assert cv.same(rtl_convert(csc, "csr")[0], cv.convert(records, "csr"))


# -- parameters, interface, Verilog, report -------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"lanes": 3}, r"lanes=3: expected a power of two in \[2, 16\]"),
    ({"max_cols": 16}, r"max_cols=16: expected a power of two in \[32, 1048576\]"),
    ({"max_nnz": 1000}, "max_nnz=1000"), ({"value_width": 65}, "value_width=65"),
    ({"banks": 3}, r"banks=3: expected an integer in \[1, 2\]"), ({"banks": 0}, "banks=0"),
])
def test_bad_parameters_are_named_with_their_range(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        CsrToCsc(**kwargs)


def test_declares_its_named_signature():
    block = CsrToCsc(**SMALL)
    assert dict(block.signature.members) == dict(CsrToCscSignature(4, 64, 64, 1024, 64).members)


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "max_rows": 2, "max_cols": 32,
                                         "max_nnz": 2, "value_width": 1, "banks": 1},
                                    {"lanes": 16, "max_rows": 1 << 24, "max_cols": 1 << 14,
                                     "max_nnz": 1 << 14, "value_width": 64}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("csr_to_csc", params) == ""


def test_in_the_synthesis_report():
    blk = get("csr_to_csc")
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))
