# amaranth: UnusedElaboratable=no
"""The CSR-to-CSC converter (MINT Fig. 8c): its units alone, the block on Amaranth's
simulator (the paper's example, directed shapes, random matrices, its throughput), natively
on Verilator on real matrices against :func:`sparseforge.sw.conversion.convert` under random
back-pressure on every stream, ``convert --engine rtl``, lint and the synthesis report."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from sparseforge.cli import main
from sparseforge.core.errors import ParameterError
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
from sparseforge.sim.models import mint as model
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw import wire
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.passes import column_passes
from sparseforge.tb import native
from sparseforge.tb.convert import rtl_convert
from sparseforge.tb.convert_csc import (
    RTL,
    SINKS,
    SOURCES,
    CscBench,
    canonical_csr,
    run_native,
    run_passes,
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
        out = []
        for cycle in range(80):
            ctx.set(unit.csc.ready, cycle % 2)
            await ctx.delay(1e-9)
            if ctx.get(unit.done):
                break
            if ctx.get(unit.csc.valid) and ctx.get(unit.csc.ready):
                out.append(ctx.get(unit.csc.payload.as_value()))
            await ctx.tick()
        await ctx.tick()
        assert out == list(range(100, 100 + nnz))
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


@pytest.mark.parametrize("seed", [11, 12])
def test_random_matrices_under_back_pressure(seed):
    rng = np.random.default_rng(seed_from_env(seed))
    matrices = [csr(sp.random_array((rng.integers(1, 65), rng.integers(1, 65)),
                                    density=d, rng=rng)) for d in (0.01, 0.05, 0.2, 0.6)]
    ints = csr((rng.integers(-3, 4, (20, 40)) * (rng.random((20, 40)) < 0.3)).astype(np.int16))
    assert_converted(pysim(CscBench(CsrToCsc(**{**SMALL, "value_width": 16}), [ints],
                                    seed)), [ints])
    assert_converted(pysim(CscBench(CsrToCsc(**SMALL), matrices, seed)), matrices)


def test_scatter_and_drain_take_one_nonzero_a_cycle_and_count_a_word_a_cycle():
    """Without stalls: a row of one counter word's columns counts a chunk a cycle, and the
    scatter and the drain move one nonzero every cycle."""
    matrix = csr(np.arange(1.0, 8 * 64 + 1).reshape(8, 64))
    bench = CscBench(CsrToCsc(**{**SMALL, "lanes": 8}), [matrix], 0, FULL)
    assert_converted(pysim(bench), [matrix])
    chunks, _, entries = (s.accepted for s in bench.sources[1:])
    for taken in ([c for c, _ in chunks], [c for c, _ in entries],
                  [c for c, _ in bench.sinks[1].received]):
        assert np.all(np.diff(taken) == 1)


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
    csc, cycles, passes = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(24), rates)
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
        csc, _, passes = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(26))
        assert passes == want and cv.same(csc, cv.convert(matrix, "csc"))


@pytest.mark.verilator
def test_a_matrix_of_another_size_reuses_the_build(monkeypatch):
    built = []

    def build(verilog, name, waves=False):
        built.append(verilog)
        return real_build(verilog, name, waves)

    real_build = native_build.build
    monkeypatch.setattr(native_build, "build", build)
    for shape in ((5, 3000), (70, 40)):
        matrix = sp.random_array(shape, density=0.05, format="csr",
                                 rng=np.random.default_rng(shape[0]))
        got, _ = rtl_convert(matrix, "csc")
        assert cv.same(got, cv.convert(matrix, "csc"))
    assert len(built) == 2 and built[0] == built[1]


@pytest.mark.verilator
def test_the_most_rows_go_through_and_one_more_is_refused():
    tall = sp.csr_array((np.ones(3), ([0, 40000, 65535], [0, 2, 1])), shape=(65536, 3))
    assert cv.same(rtl_convert(tall, "csc")[0], cv.convert(tall, "csc"))
    with pytest.raises(ParameterError, match="a matrix of 65537 rows does not fit the "
                                             r"csr_to_csc block \(at most 65536\)"):
        rtl_convert(sp.csr_array((65537, 3)), "csc")
    with pytest.raises(ParameterError, match="column 1 holds 4097 nonzeros"):
        rtl_convert(sp.csr_array(np.ones((4097, 2)) * [0, 1]), "csc")


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
    csc, _, passes = run_passes(CsrToCsc(**RTL), matrix, seed_from_env(310), rates)
    assert passes > 1 and cv.same(csc, cv.convert(matrix, "csc"))


# -- parameters, interface, Verilog, report -------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"lanes": 3}, r"lanes=3: expected a power of two in \[2, 16\]"),
    ({"max_cols": 16}, r"max_cols=16: expected a power of two in \[32, 1048576\]"),
    ({"max_nnz": 1000}, "max_nnz=1000"), ({"value_width": 65}, "value_width=65"),
])
def test_bad_parameters_are_named_with_their_range(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        CsrToCsc(**kwargs)


def test_declares_its_named_signature():
    block = CsrToCsc(**SMALL)
    assert dict(block.signature.members) == dict(CsrToCscSignature(4, 64, 64, 1024, 64).members)


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "max_rows": 2, "max_cols": 32,
                                         "max_nnz": 2, "value_width": 1},
                                    {"lanes": 16, "max_rows": 1 << 24, "max_cols": 1 << 14,
                                     "max_nnz": 1 << 14, "value_width": 64}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("csr_to_csc", params) == ""


def test_in_the_synthesis_report():
    blk = get("csr_to_csc")
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))
