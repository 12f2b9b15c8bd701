# amaranth: UnusedElaboratable=no
"""The CSR-to-CISS converter (MINT Section V into Tensaurus's CISS, Fig. 3d): its schedule
alone, the block on Amaranth's simulator (Fig. 3's example, directed shapes, hypothesis'
matrices, its throughput), natively on Verilator on real matrices against
:func:`sparseforge.sw.ciss.encode` under random back-pressure on every stream, the host's
refusals, lint and the synthesis report. Then the tile converter (``csr_tile_to_ciss``), a
band of rows and a window of columns at a time: its pre-pass's reads, hand tiles with the
host's cycle model, hypothesis' tilings, a Tensaurus tiling of a real matrix natively, the
host's refusals at their edges."""

import numpy as np
import pytest
import scipy.sparse as sp
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_ciss import (
    CsrTileToCiss,
    CsrTileToCissSignature,
    CsrToCiss,
    CsrToCissSignature,
    LeastLoaded,
)
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import ciss, wire
from sparseforge.sw import conversion as cv
from sparseforge.sw.ciss_csr import (
    TileJobs,
    coo_image,
    coo_pointer_reads,
    csr_image,
    prepass_reads,
    tensaurus_windows,
    tile_cycles,
    tile_jobs,
)
from sparseforge.sw.formats import Tensor, read_matrix, read_tensor
from sparseforge.sw.tensaurus_job import plan
from sparseforge.tb.convert_ciss import (
    CONVERSIONS,
    CissBench,
    TileBench,
    run_native,
    run_tiles_native,
)
from sparseforge.tb.convert_csc import canonical_csr
from sparseforge.tb.tensaurus_tlu import entry_ints

STREAMS = ("rows", "row_ptr", "ciss", "count", "request", "response")
FULL = dict.fromkeys(STREAMS, 1.0)
SMALL = {"pes": 3, "dw": 8, "iw": 8, "addr_width": 12}
REAL = {"pes": 8, "dw": 32, "iw": 16, "addr_width": 20}
MATRICES = ["suitesparse/494_bus.mtx", "suitesparse/lp_e226.mtx", "suitesparse/impcol_a.mtx",
            "pypi/nx_les_miserables.mtx", "suitesparse/ash219.mtx", "suitesparse/west0067.mtx"]


def csr(dense):
    """A CSR array of a dense array, ints kept."""
    return sp.csr_array(np.asarray(dense))


def real(shared_data, name):
    return canonical_csr(cv.convert(read_matrix(shared_data / "matrices" / name), "csr"))


def assert_encoded(run, bench):
    """The block emitted every matrix's :func:`~sparseforge.sw.ciss.encode` entries and
    counts."""
    assert run.entries == [entry_ints(g) for g in bench.golden]
    assert run.counts == [g.entries for g in bench.golden]


def convert(params, matrices, seed, rates=None):
    bench = CissBench(CsrToCiss(**params), matrices, seed, rates)
    run = pysim(bench)
    assert_encoded(run, bench)
    return run, bench


# -- the schedule alone -------------------------------------------------------------------

@pytest.mark.parametrize(("pes", "lengths"), [
    (2, [4, 2, 3, 3]),                      # Fig. 3d: slice 1 ends first, slice 2 to PE1
    (4, [2, 2, 2, 2, 2, 2, 2, 2, 5]),       # ties all along: the lower lane
    (3, [9, 2, 2, 2, 2, 2, 2, 2, 2, 3]),    # one long slice, the others round it
    (5, [2, 7, 2, 2, 4, 2, 3, 3, 2, 2, 6, 2]),
])
def test_least_loaded_hands_each_slice_to_the_lane_sw_schedule_picks(pes, lengths):
    unit = LeastLoaded(pes, 8, 10)
    want_pe, _, _ = ciss.schedule(np.array(lengths), pes)

    async def testbench(ctx):
        ctx.set(unit.restart, 1)
        await ctx.tick()
        ctx.set(unit.restart, 0)
        got = []
        for n, length in enumerate(lengths):
            ctx.set(unit.slices.valid, 1)
            ctx.set(unit.slices.payload, {"row": n, "base": 0, "count": length - 1})
            for p in range(pes):
                ctx.set(unit.assign[p].ready, n % 3 != 1 or p != 0)
            while not ctx.get(unit.slices.ready):
                await ctx.tick()
                for p in range(pes):
                    ctx.set(unit.assign[p].ready, 1)
            got.append([p for p in range(pes) if ctx.get(unit.assign[p].valid)])
            await ctx.tick()
        ctx.set(unit.slices.valid, 0)
        assert got == [[p] for p in want_pe.tolist()]

    sim = Simulator(unit)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


# -- the block on Amaranth's simulator ----------------------------------------------------

def fig3_matrix():
    """Fig. 3a's 4 x 2 x 2 tensor with (j, k) as one column 2 j + k: the rows are its
    slices, of 3, 1, 2 and 2 nonzeros."""
    dense = np.zeros((4, 4), dtype=np.int64)
    for n, (i, j, k) in enumerate([(0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 1, 0), (2, 0, 0),
                                   (2, 1, 1), (3, 0, 1), (3, 1, 0)]):
        dense[i, 2 * j + k] = n + 1
    return csr(dense)


def test_fig3_the_paper_example():
    run, _ = convert({**SMALL, "pes": 2, "iw": 4}, [fig3_matrix()], seed_from_env(1), FULL)
    f = wire.unpack_lane_words(wire.CissWire(2, 8, 4, 2).lane, 2,
                               [[w] for w in run.entries[0]])
    got = [[(int(f["nnz"][e, p]), int(f["ij"][e, p])) for p in range(2)] for e in range(7)]
    idle = (0, 15)
    assert got == [[(0, 0), (0, 1)],        # headers of slices 0 and 1 (Fig. 3d)
                   [(1, 0), (4, 2)],
                   [(2, 1), (0, 2)],        # slice 1 ended first: PE1 takes slice 2
                   [(3, 3), (5, 0)],
                   [(0, 3), (6, 3)],        # then PE0 slice 3
                   [(7, 1), idle],          # PE1 has run out
                   [(8, 2), idle]]
    assert run.counts == [7]
    assert [len(r) for r in run.reads] == [5, 3]     # PE0 reads slices 0 and 3, PE1 1 and 2


def directed():
    """Empty rows (leading, inside, trailing, all), a row longer than all the others
    together, rows that tie in load, a single row, column and element."""
    long = np.zeros((7, 60), dtype=np.int64)
    long[1] = np.arange(1, 61)
    long[[3, 4, 6], :2] = 5
    ties = np.kron(np.eye(6, dtype=np.int64), np.ones((1, 3), dtype=np.int64)) * 7
    gaps = np.zeros((12, 9), dtype=np.int64)
    gaps[[2, 3, 7], ::2] = -3
    return [csr(long), csr(ties), csr(gaps), csr(np.zeros((5, 5), dtype=np.int64)),
            csr(np.arange(1, 41).reshape(1, 40)), csr(np.arange(1, 31).reshape(30, 1)),
            fig3_matrix(), csr(np.ones((1, 1), dtype=np.int64)), csr(np.eye(9, dtype=int)),
            sp.csr_array((np.zeros(0, int), np.zeros(0, int), [0]), shape=(0, 3))]


@pytest.mark.parametrize(("pes", "rates"), [(1, FULL), (3, {}), (8, {"ciss": 0.2,
                                                                      "response": 0.3})])
def test_directed_matrices_back_to_back(pes, rates):
    convert({**SMALL, "pes": pes}, directed(), seed_from_env(2), rates)


def test_values_go_as_encode_makes_them():
    """Floats rounded to dw bits, negative ints in two's complement, full-width indices."""
    rng = np.random.default_rng(seed_from_env(3))
    floats = sp.random_array((20, 30), density=0.3, rng=rng, format="csr")
    floats.data -= 0.5
    floats.data[floats.data == 0] = 1.0
    ints = csr(rng.integers(-128, 128, (9, 255)) * (rng.random((9, 255)) < 0.2))
    ints.eliminate_zeros()
    convert({"pes": 4, "dw": 16, "iw": 8, "addr_width": 10}, [sp.csr_array(floats), ints],
            seed_from_env(3))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 5), st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12),
                                             st.floats(0, 1)), min_size=1, max_size=3),
       st.integers(0, 2**16))
def test_hypothesis_matrices_under_back_pressure(pes, shapes, seed):
    rng = np.random.default_rng(seed)
    matrices = [csr(rng.integers(1, 100, (r, c)) * (rng.random((r, c)) < d))
                for r, c, d in shapes]
    for m in matrices:
        m.eliminate_zeros()
    rates = {s: 0.3 + 0.7 * rng.random() for s in STREAMS}
    convert({**SMALL, "pes": pes}, matrices, seed, rates)


@pytest.mark.parametrize(("pes", "length"), [(8, 16), (8, 7), (4, 3), (8, 3), (8, 1)])
def test_one_entry_a_cycle_while_rows_keep_the_schedule_fed(pes, length):
    """Without stalls: rows of at least P - 1 nonzeros give one entry every cycle; shorter
    ones one row a cycle, ``(1 + length) / P`` entries a cycle."""
    _, bench = convert({**SMALL, "pes": pes}, [csr(np.ones((64, length), dtype=int))], 0,
                       FULL)
    taken = [cycle for cycle, _ in bench.sinks[0].received]
    entries = 64 * (length + 1) // pes
    assert len(taken) == entries and taken[0] == pes + 5
    assert taken[-1] - taken[0] + 1 == max(entries, 64 - pes + (length + 1))


@pytest.mark.parametrize("pes", [3, 8])
def test_a_matrix_starts_p_plus_7_cycles_after_the_last_entry_of_the_one_before(pes):
    """The count, the next ``rows``, then every lane's first row scheduled (P cycles)."""
    matrix = csr(np.ones((16, 8), dtype=int))
    _, bench = convert({**SMALL, "pes": pes}, [matrix, matrix], 0, FULL)
    taken = [cycle for cycle, _ in bench.sinks[0].received]
    n = bench.golden[0].entries
    assert taken[n] - taken[n - 1] == pes + 7


# -- natively on Verilator, real matrices -------------------------------------------------

@pytest.mark.verilator
def test_real_matrices_natively_against_encode(shared_data):
    matrices = [real(shared_data, name) for name in MATRICES]
    block = CsrToCiss(**REAL)
    run, bench = run_native(block, matrices, seed_from_env(21))
    assert_encoded(run, bench)
    # without stalls, an entry a cycle (lp_e226) or a row a cycle where rows are short
    # (494_bus: 3.4 nonzeros a row for 8 lanes), each matrix's first entry P + 5 cycles in
    full, bench = run_native(block, matrices[:2], 23, FULL)
    assert_encoded(full, bench)
    assert full.cycles <= 1.05 * (matrices[0].shape[0] + bench.golden[1].entries) + 4 * 8


# -- the host's preparation ---------------------------------------------------------------

@pytest.mark.parametrize(("matrix", "message"), [
    (sp.csr_array((np.array([1, 2, 3]), np.array([0, 1, 2]), np.array([0, 2, 1, 3])),
                  shape=(3, 4)), r"row pointers fall at row 1: 2 then 1"),
    (sp.csr_array((np.array([1, 2]), np.array([3, 1]), np.array([0, 2])), shape=(1, 5)),
     r"row 0: column 1 after column 3"),
    (sp.csr_array((np.array([1, 2]), np.array([3, 3]), np.array([0, 0, 2])), shape=(2, 5)),
     r"row 1: column 3 after column 3"),
    (sp.csr_array((np.array([1, 0]), np.array([0, 2]), np.array([0, 1, 2])), shape=(2, 5)),
     r"a stored zero at \(1, 2\)"),
    (csr(np.eye(1, 256, 255)), r"column 255 \(row 0\) does not fit iw=7 bits"),
    (csr(np.eye(128, 1)), r"128 rows: .* at most 127 rows"),
    (csr(np.ones((2, 8))), r"16 nonzeros: row pointers of addr_width=4 bits hold at most 15"),
    (csr(np.array([[-129, 1]])), r"value -129 is past 8-bit two's complement \(dw=8; dw=9"),
    (np.eye(3), "expected a scipy sparse matrix, not ndarray"),
])
def test_the_host_refuses_what_the_block_cannot_convert_in_one_line(matrix, message):
    with pytest.raises(ParameterError, match=message) as info:
        csr_image(matrix, 8, 7, 4)
    assert "\n" not in str(info.value)


def test_the_host_takes_the_largest_matrix_the_widths_hold():
    widest = csr_image(csr(np.eye(127, 128, 1, dtype=int)), 8, 7, 8)     # 127 rows, col 127
    assert (widest.rows, int(widest.col.max())) == (127, 127)
    assert csr_image(csr(np.ones((3, 5), dtype=int)), 8, 7, 4).row_ptr[-1] == 15
    assert csr_image(csr(np.array([[-128, 127]])), 8, 7, 4).bits.tolist() == [128, 127]


# -- parameters, interface, Verilog, report ------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"pes": 0}, r"pes=0: expected an integer in \[1, 64\]"), ({"pes": 65}, "pes=65"),
    ({"inflight": 1}, "inflight=1"), ({"addr_width": 33}, "addr_width=33"),
])
def test_bad_parameters_are_named_with_their_range(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        CsrToCiss(**kwargs)


def test_declares_its_named_signature_and_no_conversion():
    block = CsrToCiss(**SMALL)
    def ports(signature):
        return [(path, m.flow, m.shape) for path, m in signature.members.flatten() if m.is_port]

    assert ports(block.signature) == ports(CsrToCissSignature(3, 8, 8, 12))
    assert CONVERSIONS == {} and "ciss" not in cv.FORMATS


@pytest.mark.parametrize("params", [{}, {"pes": 1, "dw": 2, "iw": 1, "addr_width": 2,
                                         "inflight": 2}, {"pes": 5, "inflight": 3},
                                    {"pes": 8, "dw": 64, "iw": 32, "addr_width": 32}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("csr_to_ciss", params) == ""


def test_in_the_synthesis_report():
    blk = get("csr_to_ciss")
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))


# -- soak ------------------------------------------------------------------------------------

@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize(("seed", "pes"), [(300, 8), (301, 16), (302, 4)])
def test_soak_larger_real_matrices(shared_data, seed, pes):
    names = ["suitesparse/bcsstk13.mtx", "suitesparse/G51.mtx", "suitesparse/Pd.mtx",
             "suitesparse/cryg2500.mtx", "suitesparse/dwt_992.mtx", "graphs/cora_adj.mtx",
             "suitesparse/hangGlider_2.mtx", "suitesparse/rajat19.mtx", "graphs/astro-ph.mtx",
             "graphs/delaunay_n16.mtx", "suitesparse/Groebner_id2003_aug.mtx"]
    matrices = [real(shared_data, name) for name in names]
    rates = {**{s: 0.5 + 0.1 * (seed % 3) for s in STREAMS}, "ciss": 0.4}
    params = {**REAL, "pes": pes, "iw": 20, "addr_width": 22}     # 65,536 rows, 0.4 M nnz
    run, bench = run_native(CsrToCiss(**params), matrices, seed, rates)
    assert_encoded(run, bench)


# -- one tile at a time: a band of rows, a window of columns --------------------------------

TILE = {"pes": 3, "dw": 8, "iw": 8, "addr_width": 12, "band": 6}
TILE_STREAMS = ("job", "ciss", "count", "request", "response", "ptr", "cols")


def hand_matrix():
    """Rows cut by the windows in different places, an empty row, a row of one element
    past every window but the third, more columns than rows, the last two empty."""
    dense = np.zeros((6, 14), dtype=np.int64)
    dense[0, [1, 2, 5, 6, 7, 9]] = [1, 2, 3, 4, 5, 6]
    dense[1, 0] = 7
    dense[2, [3, 4, 8, 10, 11]] = [8, 9, 10, 11, 12]
    dense[4, [6, 7]] = [13, 14]
    dense[5, 11] = 15
    return csr(dense)


def hand_jobs(image, band=6):
    """Windows of one band in ascending order, one of them empty for the band, then a
    band of three rows whose windows skip columns, then a tile of no rows."""
    return tile_jobs(image, [0, 0, 0, 0, 1, 1, 3, 2], [6, 6, 6, 6, 3, 3, 0, 1],
                     [0, 4, 8, 12, 2, 9, 0, 5], [4, 8, 12, 14, 6, 11, 4, 6], band, 8)


def convert_tiles(params, matrix, jobs, seed, rates=None):
    bench = TileBench(CsrTileToCiss(**params), matrix, jobs, seed, rates)
    run = pysim(bench)
    assert_encoded(run, bench)
    return run, bench


def test_prepass_reads_each_column_id_of_a_band_once():
    image = csr_image(hand_matrix(), 8, 8, 12, tiled=True)
    jobs = hand_jobs(image)
    reads, per_row = prepass_reads(image, jobs)
    # band 0 (rows 0..5): every element once, window by window; row 0's 5 stops the first
    # window and is counted by the second without a read
    assert sorted(reads[:15].tolist()) == list(range(15))
    assert [r.tolist() for r in per_row[:4]] == [[3, 1, 2, 0, 1, 1], [3, 0, 1, 0, 1, 0],
                                                 [0, 0, 2, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
    # rows 1..3, columns 2..5 then 9..10: row 1's 0 skipped, row 2's 8 read in the first
    # window (its stop) and skipped in the second without a read
    assert [r.tolist() for r in per_row[4:6]] == [[1, 3, 0], [0, 2, 0]]
    assert reads[15:21].tolist() == [6, 7, 8, 9, 10, 11]
    assert [r.tolist() for r in per_row[6:]] == [[], [3]]


@pytest.mark.parametrize("pes", [1, 2, 3])
def test_hand_tiles_and_their_cycles(pes):
    """Windows that cut rows, a row empty in a window, a window empty for its band, a
    band of no rows; without stalls each tile takes the cycles the host's model gives."""
    matrix = hand_matrix()
    image = csr_image(matrix, 8, 8, 12, tiled=True)
    jobs = hand_jobs(image)
    run, bench = convert_tiles({**TILE, "pes": pes}, matrix, jobs, seed_from_env(31),
                               dict.fromkeys(TILE_STREAMS, 1.0))
    assert run.counts[3] == 0 and run.counts[6] == 0
    taken = [cycle for cycle, _ in bench.streams["job"].accepted]
    counted = [cycle for cycle, _ in bench.streams["count"].received]
    assert [c - t + 1 for t, c in zip(taken, counted, strict=True)] == tile_cycles(
        image, jobs, bench.golden).tolist()
    assert taken[1:] == [c + 1 for c in counted[:-1]]
    assert bench.streams["cols__request"].received[0][1] == 0


@pytest.mark.parametrize(("pes", "rates"), [(2, {}), (4, {"ciss": 0.3, "response": 0.4,
                                                           "cols": 0.5})])
def test_hand_tiles_under_back_pressure(pes, rates):
    """Stalls change no read: a column id read while the slice's register is full waits
    as a peek, not read again."""
    matrix = hand_matrix()
    image = csr_image(matrix, 8, 8, 12, tiled=True)
    jobs = hand_jobs(image)
    _, bench = convert_tiles({**TILE, "pes": pes}, matrix, jobs, seed_from_env(32), rates)
    assert [a for _, a in bench.streams["cols__request"].received] == (
        prepass_reads(image, jobs)[0].tolist())


def test_a_row_stopped_by_a_read_while_the_slices_wait_keeps_it_unread_again():
    """Every row stops the window on a column id it read; one lane stalled by its output
    backs the slices up, so rows stop while the slice's register is full: each stopping
    id is kept (as a peek) and decided once there is room, never read again."""
    matrix = csr(np.tile([1, 0, 0, 2], (16, 1)))
    image = csr_image(matrix, 8, 8, 12, tiled=True)
    jobs = tile_jobs(image, [0, 0], [16, 16], [0, 2], [2, 4], 16, 8)
    _, bench = convert_tiles({**TILE, "pes": 1, "band": 16}, matrix, jobs,
                             seed_from_env(34), {"ciss": 0.05})
    assert [a for _, a in bench.streams["cols__request"].received] == (
        prepass_reads(image, jobs)[0].tolist())


def test_a_band_of_the_largest_depth_and_one_row_more():
    matrix = csr(np.arange(1, 8 * 5 + 1).reshape(8, 5) % 3)
    image = csr_image(matrix, 8, 8, 12, tiled=True)
    jobs = tile_jobs(image, [0, 0, 1], [6, 6, 6], [0, 3, 0], [3, 5, 5], 6, 8)
    convert_tiles(TILE, matrix, jobs, seed_from_env(33))
    with pytest.raises(ParameterError, match=r"tile 1 \(rows 2..8, columns 0..4\): a band "
                       r"of 7 rows; the block's band=6 holds at most 6$") as info:
        tile_jobs(image, [0, 2], [6, 7], [0, 0], [5, 5], 6, 8)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("tiles", "message"), [
    (([0], [3], [0], [257]), r"column 256 past iw=8 bits"),
    (([6], [3], [0], [4]), r"rows past the matrix's 8"),
    (([0], [3], [3], [2]), r"a window must have 0 <= k0 <= k1"),
    (([0, 0], [3, 3], [2, 0], [4, 2]), r"tile 1 .*: a band's windows go in ascending "
                                       r"order, but this one starts before the previous "
                                       r"one's end 4"),
])
def test_the_host_refuses_a_tile_the_block_cannot_take_in_one_line(tiles, message):
    image = csr_image(csr(np.ones((8, 5), dtype=int)), 8, 8, 12, tiled=True)
    tile_jobs(image, [0], [3], [0], [256], 6, 8)            # the widest window
    tile_jobs(image, [5], [3], [0], [4], 6, 8)              # the band at the end
    with pytest.raises(ParameterError, match=message) as info:
        tile_jobs(image, *tiles, 6, 8)
    assert "\n" not in str(info.value)


def test_a_matrix_of_more_rows_than_iw_indexes_goes_tile_by_tile():
    """Slices count from their tile's first row, so the rows need only ``addr_width``:
    4095 rows with 12 bits (row pointers 0 .. 4095), one more refused."""
    matrix = csr(np.eye(4095, 9, -4086, dtype=int) * 3)
    image = csr_image(matrix, 8, 8, 12, tiled=True)
    jobs = tile_jobs(image, [4089, 4089], [6, 6], [0, 5], [5, 9], 6, 8)
    run, _ = convert_tiles(TILE, matrix, jobs, seed_from_env(37))
    assert run.counts == [2, 4]          # two rows of one element, then four over 3 lanes
    with pytest.raises(ParameterError, match=r"^4096 rows: row pointers indexed by "
                       r"addr_width=12 bits reach at most 4095 rows$"):
        csr_image(csr(np.eye(4096, 9, dtype=int)), 8, 8, 12, tiled=True)


def test_the_tiling_is_tensaurus_job_plans():
    """:func:`tensaurus_windows` makes the tiles :func:`sparseforge.sw.tensaurus_job.plan`
    streams for SpMM, each tile the CISS its run carries, empty output tiles included."""
    rng = np.random.default_rng(seed_from_env(34))
    dense = rng.integers(1, 9, (37, 75)) * (rng.random((37, 75)) < 0.08)
    dense[16:24] = 0
    matrix = csr(dense)
    job = plan("spmm", matrix, [np.ones((75, 4), dtype=int)], rows=3, spm_rows=16,
               out_rows=8)
    i0, rows, k0, k1 = tensaurus_windows(matrix, 8, 16)
    assert [t.out for t in job.tiles] == list(zip(i0.tolist(), rows.tolist(), strict=True))
    assert [t.rows[0][0] for t in job.tiles if t.stream.nnz] == k0[k1 > k0][
        [bool(matrix[a:a + n, b:c].nnz) for a, n, b, c in zip(i0, rows, k0, k1,
                                                               strict=True)]].tolist()
    for tile, a, n, b, c in zip(job.tiles, i0, rows, k0, k1, strict=True):
        assert entry_ints(tile.stream) == entry_ints(ciss.encode(matrix[a:a + n, b:c], 3,
                                                                 16, 16))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.integers(1, 9), st.integers(1, 14), st.floats(0, 0.6),
       st.integers(1, 6), st.integers(1, 7), st.integers(0, 2**16))
def test_hypothesis_tilings_under_back_pressure(pes, rows, cols, density, out_rows,
                                                spm_rows, seed):
    rng = np.random.default_rng(seed)
    matrix = csr(rng.integers(1, 100, (rows, cols)) * (rng.random((rows, cols)) < density))
    image = csr_image(matrix, 8, 8, 12, tiled=True)
    jobs = tile_jobs(image, *tensaurus_windows(matrix, out_rows, spm_rows), 6, 8)
    rates = {s: 0.3 + 0.7 * rng.random() for s in TILE_STREAMS}
    convert_tiles({**TILE, "pes": pes}, matrix, jobs, seed, rates)


def integral(matrix):
    """``matrix`` with integer values of its values' signs (a Tensaurus run computes on
    integers; :class:`TileBench` takes one kind of value throughout)."""
    matrix = matrix.copy()
    matrix.data = np.sign(matrix.data) * (np.abs(np.rint(matrix.data)) % 100 + 1)
    return matrix


def tensaurus_tiles(matrix, out_rows, spm_rows, params):
    image = csr_image(matrix, params["dw"], params["iw"], params["addr_width"], tiled=True)
    return tile_jobs(image, *tensaurus_windows(matrix, out_rows, spm_rows), params["band"],
                     params["iw"])


@pytest.mark.verilator
def test_real_matrix_tile_by_tile_natively_against_encode(shared_data):
    """494_bus as a Tensaurus run of 16-row output tiles and 32-row scratchpads streams
    it, tiles back to back, random back-pressure and memory latency on every stream (the
    soak checks the host's cycle model on it)."""
    matrix = integral(real(shared_data, "suitesparse/494_bus.mtx"))
    params = {**REAL, "pes": 3, "dw": 16, "band": 16}
    run, bench = run_tiles_native(CsrTileToCiss(**params), matrix,
                                  tensaurus_tiles(matrix, 16, 32, params), seed_from_env(35))
    assert_encoded(run, bench)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"band": 0}, r"band=0: expected an integer in \[1, 4096\]"),
    ({"iw": 4, "band": 15}, r"band=15: .* so band is at most 14"),
])
def test_tile_parameters_are_refused_at_their_edge(kwargs, message):
    CsrTileToCiss(iw=4, band=14)
    with pytest.raises(ParameterError, match=message):
        CsrTileToCiss(**kwargs)


def test_the_tile_block_declares_its_named_signature():
    block = CsrTileToCiss(**TILE)

    def ports(signature):
        return [(path, m.flow, m.shape) for path, m in signature.members.flatten() if m.is_port]

    assert ports(block.signature) == ports(CsrTileToCissSignature(3, 8, 8, 12, 6))


@pytest.mark.parametrize("params", [{"pes": 1, "dw": 2, "iw": 2, "addr_width": 2,
                                     "inflight": 2, "band": 1},
                                    {"pes": 1, "dw": 64, "iw": 32, "addr_width": 32,
                                     "band": 4096},
                                    {"pes": 4, "dw": 16, "iw": 16, "addr_width": 24,
                                     "band": 64, "order": 3}])
def test_tile_verilog_lints_clean_with_wall(lint, params):
    assert lint("csr_tile_to_ciss", params) == ""


def test_the_tile_block_in_the_synthesis_report():
    blk = get("csr_tile_to_ciss")
    for config in blk.cls.REPORT:
        blk.cls(**blk.resolve(config))


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize(("seed", "pes", "name", "tiles"), [
    (310, 8, "suitesparse/bcsstk13.mtx", (64, 128)), (311, 4, "suitesparse/dwt_992.mtx", (64, 128)),
    (312, 4, "suitesparse/494_bus.mtx", (16, 32))])
def test_soak_larger_real_matrix_tile_by_tile(shared_data, seed, pes, name, tiles):
    """Under back-pressure against encode; then without stalls, in the cycles the host's
    model gives, to the cycle."""
    matrix = integral(real(shared_data, name))
    params = {**REAL, "pes": pes, "dw": 16, "band": 64}
    jobs = tensaurus_tiles(matrix, *tiles, params)
    block = CsrTileToCiss(**params)
    rates = {**{s: 0.5 + 0.1 * (seed % 3) for s in TILE_STREAMS}, "ciss": 0.4}
    run, bench = run_tiles_native(block, matrix, jobs, seed, rates)
    assert_encoded(run, bench)
    full, bench = run_tiles_native(block, matrix, jobs, seed, dict.fromkeys(TILE_STREAMS, 1.0))
    assert_encoded(full, bench)
    image = csr_image(matrix, 16, 16, 20, tiled=True)
    assert full.cycles == tile_cycles(image, jobs, bench.golden).sum()


# -- a 3-D tensor stored as COO, tile by tile (windows over j) ------------------------------

TENSOR = {**TILE, "order": 3}


def hand_tensor():
    """Slices cut by the windows over j in different places, an empty slice, fibers of
    several k, a slice of one nonzero, the last slice empty."""
    dense = np.zeros((7, 9, 4), dtype=np.int64)
    dense[0, 1, [0, 3]] = [1, 2]
    dense[0, 4, 2] = 3
    dense[0, 8, [1, 2, 3]] = [4, 5, 6]
    dense[2, 0, 0] = 7
    dense[3, [2, 3, 5, 6], 1] = [8, 9, 10, 11]
    dense[4, 7, 3] = 12
    dense[5, 5, [0, 1, 2, 3]] = [13, 14, 15, 16]
    coords = np.argwhere(dense)
    return Tensor(coords, dense[tuple(coords.T)], dense.shape)


def tensor_jobs(image):
    """A band's windows over j, the same band again from its first window (a later pass
    over an overbooked Tailor converting it again), then the next bands, one of them
    past the last nonzero."""
    bands = tile_jobs(image, [0, 0, 0, 4, 4, 6], [4, 4, 4, 2, 2, 1], [0, 3, 6, 0, 6, 0],
                      [3, 6, 9, 6, 9, 9], 6, 8)
    again = [0, 1, 2, 1, 2, 3, 4, 5]                  # band 0 from its second window again
    first = np.array([1, 0, 0, 1, 0, 1, 0, 1])
    return TileJobs(*(getattr(bands, f)[again] for f in ("i0", "rows", "k0", "k1")), first)


def test_the_cluster_counter_reads_each_i_id_once_a_band():
    image = coo_image(hand_tensor(), 8, 8, 12)
    jobs = tensor_jobs(image)
    assert image.row_ptr.tolist() == [0, 6, 6, 7, 11, 12, 16, 16]
    assert jobs.first.tolist() == [1, 0, 0, 1, 0, 1, 0, 1]
    # Band 0 to the first id past it (7), again from 0; band 4 from the 12 already
    # read (11 was) to 15, then no id past the end.
    assert coo_pointer_reads(image, jobs).tolist() == [*range(12), *range(12), 12, 13,
                                                       14, 15]


@pytest.mark.parametrize(("pes", "rates"), [(2, dict.fromkeys(TILE_STREAMS, 1.0)),
                                            (3, {}), (1, {"ciss": 0.3, "ptr": 0.4})])
def test_tensor_tiles_as_encode_makes_them_under_back_pressure(pes, rates):
    tensor = hand_tensor()
    jobs = tensor_jobs(coo_image(tensor, 8, 8, 12))
    run, _ = convert_tiles({**TENSOR, "pes": pes}, tensor, jobs, seed_from_env(36), rates)
    assert run.counts[7] == 0 and run.entries[3] == run.entries[1]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.integers(1, 8), st.integers(1, 9), st.integers(1, 5),
       st.floats(0, 0.5), st.integers(1, 6), st.integers(1, 7), st.integers(0, 2**16))
def test_hypothesis_tensor_tilings_under_back_pressure(pes, slices, j, k, density, height,
                                                       span, seed):
    rng = np.random.default_rng(seed)
    dense = rng.integers(1, 100, (slices, j, k)) * (rng.random((slices, j, k)) < density)
    coords = np.argwhere(dense)
    tensor = Tensor(coords, dense[tuple(coords.T)], dense.shape)
    image = coo_image(tensor, 8, 8, 12)
    i0 = np.arange(0, slices, height)
    bands = [(a, min(height, slices - a), b) for a in i0 for b in range(0, j, span)]
    jobs = tile_jobs(image, *(np.array([x[n] for x in bands]) for n in range(2)),
                     np.array([b for *_, b in bands]),
                     np.array([min(b + span, j) for *_, b in bands]), 6, 8)
    rates = {s: 0.3 + 0.7 * rng.random() for s in TILE_STREAMS}
    convert_tiles({**TENSOR, "pes": pes}, tensor, jobs, seed, rates)


def test_the_host_refuses_a_tensor_it_would_convert_differently_in_one_line():
    tensor = hand_tensor()
    twice = Tensor(np.concatenate([tensor.coords, tensor.coords[:1]]),
                   np.append(tensor.values, 1), tensor.shape)
    with pytest.raises(ParameterError, match=r"^coordinate \(0, 1, 0\) appears more than "
                                             r"once$"):
        coo_image(twice, 8, 8, 12)
    wide = Tensor(np.array([[0, 0, 256]]), np.array([1]), (1, 1, 257))
    with pytest.raises(ParameterError, match=r"^an index of 256 does not fit iw=8 bits"):
        coo_image(wide, 8, 8, 12)
    coo_image(Tensor(np.array([[254, 255, 255]]), np.array([1]), (255, 256, 256)), 8, 8, 12)
    with pytest.raises(ParameterError, match=r"^an index of 255 does not fit"):
        coo_image(Tensor(np.array([[255, 0, 0]]), np.array([1]), (256, 1, 1)), 8, 8, 12)


@pytest.mark.verilator
def test_real_tensor_tile_by_tile_natively_against_encode(shared_data):
    """MovieLens' tag tensor (58 x 1572 x 1475) in bands of 8 users and windows of 256
    movies, random back-pressure and memory latency on every stream."""
    path = shared_data / "tensors" / "movielens-latest-small_user-movie-tag.tns"
    if not path.exists():
        pytest.skip(f"no {path}")
    tensor = read_tensor(path)
    params = {**REAL, "pes": 4, "dw": 16, "band": 8, "order": 3}
    image = coo_image(tensor, 16, 16, 20)
    bands = [(a, min(8, tensor.shape[0] - a), b) for a in range(0, tensor.shape[0], 8)
             for b in range(0, tensor.shape[1], 256)]
    jobs = tile_jobs(image, np.array([a for a, _, _ in bands]),
                     np.array([n for _, n, _ in bands]), np.array([b for *_, b in bands]),
                     np.array([min(b + 256, tensor.shape[1]) for *_, b in bands]), 8, 16)
    run, bench = run_tiles_native(CsrTileToCiss(**params), tensor, jobs, seed_from_env(37))
    assert_encoded(run, bench)
