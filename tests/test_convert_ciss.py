# amaranth: UnusedElaboratable=no
"""The CSR-to-CISS converter (MINT Section V into Tensaurus's CISS, Fig. 3d): its schedule
alone, the block on Amaranth's simulator (Fig. 3's example, directed shapes, hypothesis'
matrices, its throughput), natively on Verilator on real matrices against
:func:`sparseforge.sw.ciss.encode` under random back-pressure on every stream, the host's
refusals, lint and the synthesis report."""

import numpy as np
import pytest
import scipy.sparse as sp
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.convert_ciss import CsrToCiss, CsrToCissSignature, LeastLoaded
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import ciss, wire
from sparseforge.sw import conversion as cv
from sparseforge.sw.ciss_csr import csr_image
from sparseforge.sw.formats import read_matrix
from sparseforge.tb.convert_ciss import CONVERSIONS, CissBench, run_native
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
    (csr(np.array([[-129, 1]])), r"value -129 does not fit in 8-bit two's complement"),
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
