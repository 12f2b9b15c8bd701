# amaranth: UnusedElaboratable=no
"""The merged converter (MINT_m): every mode equals the golden converter and its separate
block (MINT_b), directed on Amaranth's simulator, back to back with the mode changing
between matrices (and tensors), and on real matrices and tensors natively on Verilator
under random back-pressure."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.core.registry import get
from sparseforge.hw.compose.csr_to_dense import CsrToDense
from sparseforge.hw.convert_bsr import BsrToCoo, CsrToBsr
from sparseforge.hw.convert_ciss import CsrToCiss
from sparseforge.hw.convert_csc import CsrToCsc
from sparseforge.hw.convert_csf import CsfToCoo, DenseToCsf
from sparseforge.hw.convert_dense import DenseToCoo, ZvcToDense
from sparseforge.hw.convert_expand import CooToDense
from sparseforge.hw.convert_rlc import DenseToRlc, RlcToCoo
from sparseforge.hw.divider import DivMod
from sparseforge.hw.mint_merged import MintMerged, MintMergedSignature, ciss_width
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw import wire
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.wire import MintMode
from sparseforge.synth.flow import merged_rows
from sparseforge.tb import convert_bsr, convert_ciss, convert_dense, convert_expand, convert_rlc
from sparseforge.tb.convert_csc import CscBench
from sparseforge.tb.convert_csf import (
    RTL,
    CsfBench,
    CsfToCooBench,
    as_order3,
    csf_to_coo,
    run_native,
)
from sparseforge.tb.convert_dense import ConverterBench
from sparseforge.tb.mint_merged import (
    CissEntries,
    MixedBench,
    bench,
    golden_ciss,
    outputs_of,
    rebuild,
    simulate,
)
from sparseforge.tb.streams import Static
from tests.test_conversion import FIG8
from tests.test_convert_bsr import assert_same, convert_all
from tests.test_convert_csf import LASTFM, TAGS, densest, fig8f
from tests.test_convert_rlc import DENSE_FULL, assert_same_rlc, encode_all

TO = {MintMode.DENSE_TO_COO: "coo", MintMode.DENSE_TO_CSR: "csr",
      MintMode.DENSE_TO_ZVC: "zvc", MintMode.ZVC_TO_DENSE: "dense",
      MintMode.RLC_TO_COO: "coo", MintMode.DENSE_TO_CSF: "csf", MintMode.CSR_TO_BSR: "bsr",
      MintMode.CSR_TO_CSC: "csc", MintMode.DENSE_TO_RLC: "rlc",
      MintMode.COO_TO_DENSE: "dense", MintMode.CSR_TO_DENSE: "dense",
      MintMode.COO_TO_CSC: "csc", MintMode.BSR_TO_COO: "coo", MintMode.CSF_TO_COO: "coo",
      MintMode.CSR_TO_CISS: "ciss"}
MATRIX_MODES = [mode for mode in MintMode if mode != MintMode.DENSE_TO_CSF]
"""The modes that convert matrices (Dense to CSF converts 3-D tensors; CSF to COO takes a
matrix's CSF as a ``1 x M x N`` tensor's)."""
STALLS = {"dense": 0.9, "mask": 0.6, "values": 0.4, "pairs": 0.5, "words": 0.3,
          "marks": 0.5, "expanded": 0.4, "level0": 0.5, "level1": 0.3, "level2": 0.4,
          "rlc": 0.5}
RUN_BITS = 2
SMALL = {"lanes": 4, "width": 8, "index_width": 4, "ptr_width": 8, "run_bits": RUN_BITS,
         "position_width": 8, "depth": 8, "max_rows": 16, "max_cols": 32, "max_nnz": 64,
         "pes": 2, "inflight": 2, "quotient_width": 7}
BLOCK = (2, 2)
"""The BSR blocks of the merged converter's default ``block_rows`` and ``block_cols``."""

EXAMPLE = np.array([[0, 1, 0, 0, 2, 0],
                    [0, 0, 0, 0, 0, 0],
                    [3, 4, 5, 6, 7, 8],
                    [0, 0, 0, 9, 0, 10]], dtype=np.uint8)


def blocked(matrix):
    """``matrix`` padded with zeros to whole :data:`BLOCK` s, as CSR to BSR takes it."""
    return np.pad(matrix, [(0, -n % b) for n, b in zip(matrix.shape, BLOCK, strict=True)])


def source_of(mode, matrix, run_bits=RUN_BITS):
    """What ``mode`` takes for ``matrix``: the matrix, its ZVC, its RLC, its COO or its CSR
    (padded to whole blocks for CSR to BSR)."""
    if mode == MintMode.ZVC_TO_DENSE:
        return cv.convert(matrix, "zvc")
    if mode == MintMode.RLC_TO_COO:
        return cv.convert(matrix, "rlc", run_bits=run_bits)
    if mode == MintMode.CSR_TO_BSR:
        return sp.csr_array(blocked(matrix))
    if mode == MintMode.BSR_TO_COO:                 # blocks by column (scipy's may not be)
        return cv.convert(blocked(matrix), "bsr", block=BLOCK)
    if mode == MintMode.CSF_TO_COO:
        return as_order3(cv.convert(matrix, "csf")) if np.ndim(matrix) == 2 else cv.convert(
            matrix, "csf")
    if mode in (MintMode.CSR_TO_CSC, MintMode.CSR_TO_DENSE, MintMode.CSR_TO_CISS):
        return sp.csr_array(matrix)
    if mode == MintMode.COO_TO_DENSE:
        return sp.coo_array(matrix)
    if mode == MintMode.COO_TO_CSC:                 # records column-major
        return sp.coo_array(sp.csc_array(matrix))
    return matrix


def golden(mode, matrix, component):
    """The golden converter's result of ``mode`` for ``matrix``."""
    if mode == MintMode.DENSE_TO_RLC:
        return cv.convert(matrix, "rlc", run_bits=component.run_bits)
    if mode in (MintMode.BSR_TO_COO, MintMode.CSF_TO_COO):
        return cv.convert(source_of(mode, matrix), "coo")
    if mode == MintMode.CSR_TO_CISS:
        return golden_ciss(component, matrix)
    if mode == MintMode.CSR_TO_BSR:
        return cv.convert(sp.csr_array(blocked(matrix)), "bsr", block=BLOCK)
    if mode in (MintMode.CSR_TO_CSC, MintMode.COO_TO_CSC):
        return cv.convert(sp.csr_array(matrix), "csc")
    return matrix if TO[mode] == "dense" else cv.convert(matrix, TO[mode])


def csf_tensors(lanes):
    """Dense to CSF's directed tensors (uint8): Fig. 3b's (Fig. 8f), empty slices and
    fibers, none and all nonzero, one element, a last mode of exactly and just over
    ``lanes``, one fiber a slice, a slice of one fiber."""
    gaps = np.zeros((5, 4, lanes + 3), np.uint8)
    gaps[1, 2, [0, lanes + 2]] = [1, 2]
    gaps[3, :, lanes - 1] = [3, 4, 5, 6]
    one = np.zeros((2, 3, lanes), np.uint8)
    one[1, 2, lanes - 1] = 7
    return [fig8f().astype(np.uint8), gaps, np.zeros((2, 2, lanes), np.uint8),
            np.arange(1, 1 + 2 * 3 * lanes, dtype=np.uint8).reshape(2, 3, lanes), one,
            np.ones((1, 1, lanes + 1), np.uint8), np.ones((3, 1, lanes + 2), np.uint8)]


def run(component, mode, matrix, seed, rates=None, engine="native", work_dir=None):
    """``(result, golden, cycles)`` of ``matrix`` through the merged converter in ``mode``."""
    source = source_of(mode, matrix, component.run_bits)
    got, cycles = simulate(component, mode, source, seed, rates, engine, work_dir)
    return got, golden(mode, matrix, component), cycles


def separate_rlc(component, rlc, seed, rates=None):
    """The separate RLC-to-COO block's result for ``rlc``, on Amaranth's simulator."""
    block = RlcToCoo(lanes=component.lanes, run_bits=component.run_bits,
                     width=component.position_width, value_width=component.width)
    records = pysim(convert_rlc.RlcBench(block, [rlc], seed, rates)).records
    return convert_rlc.records_to_coo(records, rlc.shape, rlc.dtype)


DIRECTED = [EXAMPLE, np.zeros((3, 5), np.uint8), np.arange(1, 17, dtype=np.uint8).reshape(4, 4),
            np.array([[1, 2, 3, 4, 5], [6, 7, 0, 0, 0], [0, 0, 0, 0, 11]], np.uint8)]


def same(got, want):
    """Whether a result equals the golden one: CSR to CISS's entry for entry, the others
    as :func:`~sparseforge.sw.conversion.same` says."""
    if isinstance(want, CissEntries):
        return got == want
    return cv.same(got, want)


def mixed(component, jobs, seed, rates=None):
    """Each of ``jobs`` (``[(mode, matrix)]``) back to back through ``component`` on
    Amaranth's simulator: ``[(result, golden)]``."""
    bench = MixedBench(component, [(mode, source_of(mode, m, component.run_bits))
                                   for mode, m in jobs], seed, rates)
    results = bench.results(pysim(bench).outputs)
    return [(got, golden(mode, m, component))
            for got, (mode, m) in zip(results, jobs, strict=True)]


@pytest.mark.parametrize("seed, rates", [(1, None), (2, STALLS)])
def test_directed_every_mode_back_to_back_equals_the_golden_converter(seed, rates):
    """Every mode on every directed matrix (one with an empty row, an all-zero one, a full
    one, rows ending part-way into a vector), one after another in one run, the mode and
    the column count changing between each matrix and the next; the bench fails an item
    on an output past its jobs' count, so no output moves in a mode that is not its own."""
    modes = MATRIX_MODES
    jobs = [(modes[(i + j) % len(modes)], matrix) for i in range(len(modes))
            for j, matrix in enumerate(DIRECTED)]
    for (mode, _), (got, want) in zip(jobs, mixed(MintMerged(**SMALL), jobs,
                                                  seed_from_env(seed), rates), strict=True):
        assert same(got, want), mode


def test_rlc_mode_equals_the_separate_block_at_its_edges():
    """A small matrix as Fig. 8d converts, a gap of fillers filling whole vectors,
    a nonzero at the matrix's first and at its last position (the largest the positions
    hold), a column count that is not a power of two: the records RLC to COO's separate
    block emits, nonzero for nonzero."""
    component = MintMerged(**{**SMALL, "index_width": 5})
    fig8 = np.array([[1, 0, 0, 2], [0, 3, 0, 0], [0, 0, 0, 0], [0, 4, 5, 0]], np.uint8)
    gaps = np.zeros((8, 32), np.uint8)                      # 256 elements: 8-bit positions
    gaps[0, 0], gaps[3, 7], gaps[7, 31] = 1, 2, 3
    odd = np.zeros((7, 9), np.uint8)
    odd.reshape(-1)[[4, 9, 17, 18, 62]] = [5, 6, 7, 8, 9]
    for k, matrix in enumerate((fig8, gaps, odd)):
        rlc = source_of(MintMode.RLC_TO_COO, matrix)
        if matrix is gaps:
            assert (rlc.values == 0).sum() >= 2 * component.lanes    # whole vectors of fillers
        want = separate_rlc(component, rlc, seed_from_env(k))
        assert cv.same(want, cv.convert(rlc, "coo"))
        got, _ = simulate(component, MintMode.RLC_TO_COO, rlc, seed_from_env(k + 7), STALLS,
                          "pysim")
        assert same(got, want), k


def test_rlc_encoding_mode_equals_the_separate_block_cycle_for_cycle():
    """Dense to RLC: fillers ending inside a vector and filling whole ones, a filler
    just before a nonzero, trailing zeros, a nonzero at the first and the last position,
    a matrix of none: back to back under back-pressure, the pairs of the separate
    :class:`~sparseforge.hw.convert_rlc.DenseToRlc` at the merged converter's widths and
    the host encoder's; unstalled, in the same cycles (its units are the separate block's,
    zero detection and the compactor shared)."""
    component = MintMerged(**SMALL)
    alone = DenseToRlc(lanes=4, run_bits=RUN_BITS, width=8, value_width=8)
    gaps = np.zeros((5, 7), np.uint8)
    gaps.reshape(-1)[[0, 4, 5, 21, 22, 34]] = [1, 2, 3, 4, 255, 6]
    trailing = np.zeros((3, 9), np.uint8)
    trailing.reshape(-1)[[3, 12]] = [7, 8]
    matrices = [gaps, trailing, np.zeros((2, 3), np.uint8)]
    want, _ = encode_all(alone, matrices, 5)
    jobs = [(MintMode.DENSE_TO_RLC, matrix) for matrix in matrices]
    for k, (got, golden_rlc) in enumerate(mixed(component, jobs, seed_from_env(5), STALLS)):
        assert_same_rlc(want[k], golden_rlc)
        assert_same_rlc(got, want[k])
    _, cycles = simulate(component, MintMode.DENSE_TO_RLC, gaps, 0,
                         dict.fromkeys([*STALLS, "dense"], 1.0), "pysim")
    assert cycles == encode_all(alone, [gaps], 5, DENSE_FULL)[1]


def test_rlc_encoding_mode_at_the_edge_of_its_filler_count():
    """A 4 x 16 matrix (64 elements) fills a 6-bit filler count and encodes exactly, its
    only nonzero the last element; a 5 x 13 one (65) is refused."""
    component = MintMerged(**{**SMALL, "position_width": 6, "max_nnz": 32})
    edge = np.zeros((4, 16), np.uint8)
    edge[3, 15] = 9
    got, want, _ = run(component, MintMode.DENSE_TO_RLC, edge, seed_from_env(6), STALLS,
                       "pysim")
    assert_same_rlc(got, want)
    with pytest.raises(ParameterError, match="6-bit filler count"):
        bench(component, MintMode.DENSE_TO_RLC, np.ones((5, 13), np.uint8), 0)


@pytest.mark.parametrize("mode, separate", [(MintMode.COO_TO_DENSE, CooToDense),
                                            (MintMode.CSR_TO_DENSE, CsrToDense)],
                         ids=["coo", "csr"])
def test_to_dense_modes_equal_the_separate_blocks_cycle_for_cycle(mode, separate):
    """COO and CSR to Dense through the one :class:`~sparseforge.hw.convert_expand.CooToDense`
    (CSR's records from :class:`~sparseforge.hw.convert_expand.CsrToCoo`): a matrix with
    an empty row, gaps of whole rows and a nonzero at its first and last position gives
    the separate block's dense vectors in its cycles, unstalled; a 4 x 16 matrix fills
    6-bit positions and a 5 x 13 one is refused."""
    component, alone = MintMerged(**SMALL), separate(lanes=4, width=8, value_width=8)
    gaps = np.zeros((7, 5), np.uint8)
    gaps[0, 0], gaps[1, 3], gaps[5, 2], gaps[6, 4] = 1, 2, 3, 4
    full = dict.fromkeys([*STALLS, "records", "row_ptr", "entries", "dense_shape"], 1.0)
    got, cycles = simulate(component, mode, source_of(mode, gaps), 0, full, "pysim")
    (want,), alone_cycles = convert_expand.simulate(
        alone, [source_of(mode, gaps)], 0, {**full, "shape": 1.0, "dense": 1.0}, "pysim")
    assert np.array_equal(got, gaps) and np.array_equal(want, gaps)
    assert cycles == alone_cycles
    narrow = MintMerged(**{**SMALL, "position_width": 6, "max_nnz": 32})
    edge = np.zeros((4, 16), np.uint8)
    edge[0, 0], edge[3, 15] = 5, 6
    got, want, _ = run(narrow, mode, edge, seed_from_env(9), STALLS, "pysim")
    assert same(got, want)
    with pytest.raises(ParameterError, match="6-bit rows, columns and positions"):
        bench(narrow, mode, source_of(mode, np.ones((5, 13), np.uint8)), 0)


def test_positions_at_the_edge_of_position_width():
    """A 4 x 16 matrix fills 6-bit positions (its last element at 63) and converts
    exactly in every mode that divides; a 5 x 13 one (65 elements) is refused."""
    component = MintMerged(**{**SMALL, "position_width": 6, "max_nnz": 32})
    edge = np.zeros((4, 16), np.uint8)
    edge[0, 0], edge[2, 5], edge[3, 15] = 1, 2, 3
    for mode in (MintMode.DENSE_TO_COO, MintMode.DENSE_TO_CSR, MintMode.RLC_TO_COO):
        got, want, _ = run(component, mode, edge, seed_from_env(4), STALLS, "pysim")
        assert same(got, want), mode
    for mode in (MintMode.DENSE_TO_COO, MintMode.RLC_TO_COO):
        with pytest.raises(ParameterError, match="6-bit positions"):
            bench(component, mode, source_of(mode, np.ones((5, 13), np.uint8)), 0)


def test_quotients_at_the_edge_of_quotient_width():
    """With 3-bit quotients, 8 rows (RLC to COO), 8 fibers (I J) and block column 7 (16
    columns) divide exactly, back to back under stalls; 9 rows (Dense to COO and CSR, RLC
    to COO), 9 fibers and 18 columns are refused in one line naming the width."""
    component = MintMerged(**{**SMALL, "quotient_width": 3})
    rows = np.zeros((8, 5), np.uint8)
    rows[[0, 4, 7], [4, 0, 4]] = [1, 2, 3]
    fibers = np.zeros((2, 4, 4), np.uint8)
    fibers[1, 3, 3], fibers[0, 0, 0] = 4, 5
    columns = np.zeros((2, 16), np.uint8)
    columns[1, [0, 15]] = [6, 7]
    edges = [(MintMode.RLC_TO_COO, rows), (CSF, fibers), (MintMode.CSR_TO_BSR, columns)]
    for (mode, _), (got, want) in zip(edges, mixed(component, edges, seed_from_env(35),
                                                   STALLS), strict=True):
        assert same(got, want), mode
    over = [(MintMode.DENSE_TO_COO, np.ones((9, 5), np.uint8)),
            (MintMode.DENSE_TO_CSR, np.ones((9, 5), np.uint8)),
            (MintMode.RLC_TO_COO, np.ones((9, 5), np.uint8)),
            (CSF, np.ones((3, 3, 4), np.uint8)), (MintMode.CSR_TO_BSR, np.ones((2, 18), np.uint8))]
    for mode, source in over:
        with pytest.raises(ParameterError, match="3-bit quotients"):
            bench(component, mode, source_of(mode, source), 0)


def test_each_mode_leaves_the_other_modes_outputs_silent():
    """The mode steers the handshakes: every mode's job back to back in one run, every
    output taken on every cycle, and an item on an output past the count its jobs so far
    emit fails the run, so no output of another mode raises ``valid``: no part of the
    datapath works on a matrix that is not its mode's."""
    component = MintMerged(**SMALL)
    jobs = [(mode, fig8f().astype(np.uint8) if mode == MintMode.DENSE_TO_CSF else EXAMPLE)
            for mode in MintMode]
    rates = {**STALLS, **dict.fromkeys(outputs_of(component), 1.0)}
    for (mode, _), (got, want) in zip(jobs, mixed(component, jobs, seed_from_env(3), rates),
                                      strict=True):
        assert same(got, want), mode


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(list(MintMode)), st.integers(1, 5),
                          st.integers(1, 9), st.floats(0, 1)), min_size=1, max_size=6),
       st.integers(0, 2**16))
def test_hypothesis_small_matrices_back_to_back(jobs, seed):
    """Matrices, and in Dense-to-CSF mode tensors of 1 to 3 slices of them (their last mode
    at least the lanes), in every mode back to back; in CSR-to-BSR mode no wider than a
    scratchpad bank holds a row (a wider row of a block row but its last is refused)."""
    rng = np.random.default_rng(seed)

    def shape(mode, rows, cols):
        if mode == MintMode.DENSE_TO_CSF:
            return (1 + rows % 3, rows, max(cols, SMALL["lanes"]))
        if mode == MintMode.CSR_TO_BSR:
            return (rows, min(cols, SMALL["depth"]))
        return (rows, cols)

    # (CISS values are two's complement: below 128 in 8 bits)
    made = [(mode, (rng.integers(1, 128 if mode == MintMode.CSR_TO_CISS else 256,
                                 shape(mode, rows, cols))
                    * (rng.random(shape(mode, rows, cols)) < density)).astype(np.uint8))
            for mode, rows, cols, density in jobs]
    for got, want in mixed(MintMerged(**SMALL), made, seed, STALLS):
        assert same(got, want)


def test_csr_mode_marks_a_final_vector_that_does_not_end_a_row():
    """``last`` ends the matrix's last row by itself: a final vector without ``row_end``
    (here the last row's second, half-padded vector) still gives the last row pointer,
    ``last`` set."""
    mode = MintMode.DENSE_TO_CSR
    component = MintMerged(**SMALL)
    vectors, flags = wire.dense_vectors(EXAMPLE, 4)
    assert flags["last"][-1] and flags["row_end"][-1]
    flags["row_end"][-1] = 0
    dense = wire.pack_lanes((wire.Field("value", 8),), 4, wire.dense_flags(),
                            {"value": vectors, **flags})
    sinks = {s.name: s.expected for s in bench(component, mode, EXAMPLE, 0).sinks}
    for seed, rates in ((1, None), (2, STALLS)):
        run = ConverterBench(component, {"dense": dense}, sinks, seed_from_env(seed), rates)
        run.drivers[:0] = [Static("mode", mode.value), Static("columns", EXAMPLE.shape[1])]
        out = pysim(run).outputs
        assert [p["last"] for p in out["marks"]] == [0, 0, 0, 1]
        assert cv.same(rebuild(component, mode, EXAMPLE, out), cv.convert(EXAMPLE, "csr")), seed


def test_cycles_are_the_separate_converters_cycles_and_the_dividers():
    """One vector a cycle in every mode: a Dense-to-X mode takes the cycles its separate
    converter takes, the register slice's before the divider and the position scan's and
    divider's latency; ZVC to Dense the 2
    more of zero detection, which its path now goes through; RLC to COO sends a vector
    of pairs a cycle, where the separate block sends a nonzero a cycle."""
    merged = MintMerged(**SMALL)
    fast = dict.fromkeys([*STALLS, "coo", "entries", "row_ptr", "dense", "records"], 1.0)
    dense_extra = merged.latency - DenseToCoo(lanes=4, width=8, index_width=4).latency
    assert dense_extra == merged.entry.latency + merged.beside.latency + 1
    for mode, block, extra in ((MintMode.DENSE_TO_COO, DenseToCoo, dense_extra),
                               (MintMode.ZVC_TO_DENSE, ZvcToDense, 2)):
        _, _, cycles = run(merged, mode, EXAMPLE, 0, fast, "pysim")
        index = {"index_width": 4} if block is DenseToCoo else {}
        source = source_of(mode, EXAMPLE)
        _, alone = convert_dense.simulate(block(lanes=4, width=8, **index), source, 0, fast,
                                          engine="pysim")
        assert cycles == alone + extra, mode
    full = np.arange(1, 65, dtype=np.uint8).reshape(8, 8)      # 64 nonzeros, 16 vectors
    _, _, cycles = run(merged, MintMode.RLC_TO_COO, full, 0, fast, "pysim")
    assert cycles <= 16 + merged.latency + 2


@pytest.mark.verilator
@pytest.mark.soak
@pytest.mark.parametrize("name", ["pypi/nx_karate_club", "suitesparse/494_bus"])
def test_real_matrices_every_mode_on_verilator(shared_data, tmp_path, name):
    """Every mode on a real matrix natively under random back-pressure on every stream;
    RLC to COO, CSR to BSR, BSR to COO, CSF to COO and CSR to CISS also against their
    separate blocks' native runs."""
    matrix = cv.convert(read_matrix(shared_data / "matrices" / f"{name}.mtx"), "dense")
    component = MintMerged(**convert_dense.params_for(DenseToCoo, matrix), ptr_width=32)
    for mode in MATRIX_MODES:
        got, want, _ = run(component, mode, matrix, seed_from_env(int(mode.value)), STALLS,
                           work_dir=tmp_path)
        assert same(got, want), mode
        if mode == MintMode.RLC_TO_COO:
            alone, _ = convert_rlc.run(source_of(mode, matrix, component.run_bits))
            assert cv.same(got, alone)
        if mode == MintMode.CSR_TO_BSR:
            alone, _ = convert_bsr.run(source_of(mode, matrix), BLOCK)
            assert_same(got, alone)
        if mode in (UNBLOCK, UNFOLD):
            runner = convert_bsr.run_coo if mode == UNBLOCK else csf_to_coo
            alone, _ = runner(source_of(mode, matrix), seed=seed_from_env(50))
            assert same(got, alone), mode
        if mode == CISS:
            block = CsrToCiss(pes=component.pes, dw=ciss_width(component.width),
                              iw=component.index_width, addr_width=component.addr_width)
            alone, _ = convert_ciss.run_native(block, [sp.csr_array(matrix)],
                                               seed_from_env(51), STALLS)
            assert list(got.entries) == alone.entries[0] and got.count == alone.counts[0]


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("name", ["pypi/pyamg_bar", "graphs/email-Eu-core",
                                  "suitesparse/G51"])
def test_soak_real_matrices_every_mode(shared_data, tmp_path, name):
    """Every mode natively on larger real matrices, CSR and COO to CSC where the matrix
    fits their default buffers (the separate block takes larger ones in column passes the host
    plans; the merged converter's bench does not)."""
    matrix = cv.convert(read_matrix(shared_data / "matrices" / f"{name}.mtx"), "dense")
    component = MintMerged(**convert_dense.params_for(DenseToCoo, matrix), ptr_width=32)
    rng = np.random.default_rng(len(name))
    fits = np.count_nonzero(matrix) <= component.sorter.max_nnz
    sorts = (MintMode.CSR_TO_CSC, MintMode.COO_TO_CSC)
    for mode in [m for m in MATRIX_MODES if m not in sorts or fits]:
        rates = {k: float(rng.choice([0.2, 0.5, 0.9, 1.0])) for k in STALLS}
        got, want, _ = run(component, mode, matrix, 21 + int(mode.value), rates,
                           work_dir=tmp_path)
        assert same(got, want), mode


# -- Dense to CSF (Fig. 8f): positions divided by dim2, the tree built after the divider --

CSF = MintMode.DENSE_TO_CSF


def separate_csf(component, tensors, seed, rates=None):
    """The separate Dense-to-CSF block's CSF of each of ``tensors``, on Amaranth's
    simulator, at the merged converter's widths."""
    block = DenseToCsf(lanes=component.lanes, index_width=component.index_width,
                       count_width=component.ptr_width, value_width=component.width)
    rates = rates and {name: rate for name, rate in rates.items() if name.startswith("level")}
    return pysim(CsfBench(block, tensors, seed, rates)).csf


def test_csf_mode_fig8f_and_directed_tensors_equal_the_separate_block():
    """Fig. 8f's tensor (Fig. 3b) gives the paper's tree; it and the other directed
    tensors, back to back with a matrix in another mode after each under stalls on every
    stream, give what the separate block gives. The mode, the column count and the fibers
    change between jobs, and no output moves past its jobs' count (so the levels stay
    silent in the other modes, the others' outputs in this)."""
    component = MintMerged(**SMALL)
    tensors = csf_tensors(SMALL["lanes"])
    alone = separate_csf(component, tensors, seed_from_env(11), STALLS)
    jobs = []
    for j, tensor in enumerate(tensors):
        jobs += [(CSF, tensor), (MATRIX_MODES[j % len(MATRIX_MODES)], DIRECTED[j % 4])]
    done = mixed(component, jobs, seed_from_env(12), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=True):
        assert same(got, want), mode
    for tensor, want, (got, _) in zip(tensors, alone, done[::2], strict=True):
        assert same(got, want), tensor.shape
    fig = done[0][0]
    assert [ids.tolist() for ids in fig.fids] == [[0, 2, 3], [1, 3, 0, 2, 3],
                                                  [0, 3, 2, 1, 2, 0]]
    assert [ptr.tolist() for ptr in fig.fptr] == [[0, 2, 3, 5], [0, 2, 3, 4, 5, 6]]
    assert fig.values.tolist() == [1, 2, 3, 4, 5, 6]


def test_csf_mode_a_real_tensor_between_matrices(shared_data):
    """A dense cut of a real tensor (its float values as their 64 bits) between matrices
    in two other modes, back to back under stalls on every stream."""
    tensor = densest(shared_data, LASTFM, (2, 8, 16))
    assert np.count_nonzero(tensor) > 20
    jobs = [(MintMode.DENSE_TO_CSR, EXAMPLE), (CSF, tensor), (MintMode.RLC_TO_COO, EXAMPLE),
            (CSF, tensor[::-1])]
    component = MintMerged(**{**SMALL, "width": 64})
    for (mode, _), (got, want) in zip(jobs, mixed(component, jobs, seed_from_env(8), STALLS),
                                      strict=True):
        assert same(got, want), mode


def test_csf_mode_at_the_edges_of_its_widths():
    """A 16 x 1 x 16 tensor with 255 nonzeros fills 4-bit coordinates (i and k up to 15),
    8-bit positions (its last element at 255) and 8-bit counts (fptr up to 255), and
    converts exactly; one more nonzero, a mode of 17, a last mode below the lanes and a
    position past 8 bits are refused."""
    component = MintMerged(**SMALL)
    edge = np.arange(1, 257).reshape(16, 1, 16).astype(np.uint8)   # 256 % 256 == 0
    assert np.count_nonzero(edge) == 255 and edge[15, 0, 15] == 0
    edge[15, 0, 15], edge[15, 0, 14] = 9, 0
    got, _ = simulate(component, CSF, edge, seed_from_env(7), STALLS, "pysim")
    assert cv.same(got, cv.convert(edge, "csf"))
    for tensor, message in ((np.ones((16, 1, 16), np.uint8), "256 nonzeros do not fit"),
                            (np.ones((17, 1, 4), np.uint8), "modes of 1 to 16"),
                            (np.ones((2, 2, 3), np.uint8), "last at least lanes = 4"),
                            (np.zeros((3, 16, 6), np.uint8), "8-bit positions"),
                            (np.ones((2, 3), np.uint8), "converts 3-D tensors")):
        with pytest.raises(ParameterError, match=message):
            bench(component, CSF, tensor, 0)


def test_csf_mode_takes_a_vector_a_cycle():
    """Without stalls, the dense vectors of a tensor whose fibers begin part-way into
    vectors are taken on consecutive cycles, as the separate block takes them."""
    component = MintMerged(**SMALL)
    tensor = np.arange(1, 1 + 3 * 4 * 6, dtype=np.uint8).reshape(3, 4, 6)
    tensor[:, 1, 2:] = 0
    fast = dict.fromkeys(STALLS, 1.0)
    run = bench(component, CSF, tensor, 0, fast)
    done = pysim(run)
    assert cv.same(rebuild(component, CSF, tensor, done.outputs), cv.convert(tensor, "csf"))
    taken = [cycle for cycle, _ in run.sources[0].accepted]
    assert len(taken) == tensor.size // 4 and np.all(np.diff(taken) == 1)


# -- CSR to BSR (Fig. 8e): block columns by the shared divider, the rest csr_to_bsr's units --

BSR = MintMode.CSR_TO_BSR


def fig8e_matrices():
    """Fig. 8e-like matrices: block columns apart and shared across a block row's rows,
    two empty block rows, a full block in the corner; an empty matrix; a matrix of no
    rows; one row of a block row longer than the other."""
    dense = np.zeros((8, 12), np.uint8)
    dense[0, [0, 5, 11]] = [1, 2, 3]
    dense[1, [2, 4, 5, 10]] = [4, 5, 6, 7]
    dense[6:8, 10:12] = [[8, 9], [10, 11]]
    dense[7, 0] = 12
    long = np.zeros((4, 20), np.uint8)
    long[0, 2:10], long[1, 17] = np.arange(1, 9), 13
    return [dense, np.zeros((8, 12), np.uint8), np.zeros((0, 6), np.uint8), long]


def test_bsr_mode_fig8e_matrices_equal_the_separate_block():
    """Each matrix's blocks and block-row pointers, back to back with another mode's job
    after each under stalls on every stream, are the golden converter's and those the
    separate csr_to_bsr block emits."""
    matrices = fig8e_matrices()
    alone, _ = convert_all(CsrToBsr(block_rows=2, block_cols=2, width=8, value_width=8,
                                    depth=8), [sp.csr_array(m) for m in matrices], 21,
                           STALLS)
    jobs = []
    for j, matrix in enumerate(matrices):
        jobs += [(BSR, matrix), (MATRIX_MODES[j % 5], DIRECTED[j])]
    done = mixed(MintMerged(**SMALL), [*jobs, (CSF, fig8f().astype(np.uint8))],
                 seed_from_env(22), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=False):
        assert same(got, want), mode
    for want, (got, golden_bsr) in zip(alone, done[::2], strict=False):
        assert_same(got, want)
        assert_same(got, golden_bsr)


def test_bsr_mode_at_the_edges_of_its_widths():
    """254 columns (block column 126, column 253 the largest below the 8-bit pointers)
    and a row of 8 nonzeros, a bank's depth, before its block row's last row convert; a
    row of 9, 256 columns, and a shape the block does not divide are refused."""
    component = MintMerged(**SMALL)
    edge = np.zeros((4, 254), np.uint8)
    edge[0, [0, *range(100, 106), 253]] = np.arange(1, 9)
    edge[1, 101], edge[3, 252] = 9, 10
    got, _ = simulate(component, BSR, sp.csr_array(edge), seed_from_env(9), STALLS, "pysim")
    assert_same(got, cv.convert(sp.csr_array(edge), "bsr", block=BLOCK))
    assert got.indices.max() == 126
    deep = edge.copy()
    deep[0, 50] = 11
    for matrix, message in ((deep, "a row of 9 nonzeros"),
                            (np.ones((2, 256), np.uint8), "8-bit pointers"),
                            (np.ones((3, 4), np.uint8), "does not divide")):
        with pytest.raises(ParameterError, match=message):
            bench(component, BSR, sp.csr_array(matrix), 0)


def test_bsr_mode_takes_a_nonzero_a_cycle():
    """Without stalls, the nonzeros go in on consecutive cycles once the first block
    row's pointers are in, as the separate block takes them."""
    dense = (np.arange(1, 1 + 8 * 24).reshape(8, 24) % 251).astype(np.uint8)
    dense[dense % 3 == 0] = 0
    component = MintMerged(**{**SMALL, "depth": 64})     # a bank holds a row and the latency
    run = bench(component, BSR, sp.csr_array(dense), 0, dict.fromkeys(outputs_of(component), 1.0)
                | dict.fromkeys(("row_ptr", "entries"), 1.0))
    done = pysim(run)
    assert_same(rebuild(component, BSR, sp.csr_array(dense), done.outputs),
                cv.convert(sp.csr_array(dense), "bsr", block=BLOCK))
    taken = [cycle for cycle, _ in run.sources[1].accepted]
    assert np.diff(taken).tolist() == [1] * (np.count_nonzero(dense) - 1)


# -- CSR to CSC (Fig. 8c): csr_to_csc's counting sort, its pointers on the shared scan ------

CSC = MintMode.CSR_TO_CSC


def csc_matrices():
    """Fig. 8c's matrix; empty rows and columns and a dense column; a single row across
    every column the converter holds (32); a single column; no nonzeros."""
    fig = FIG8.astype(np.uint8)
    gaps = np.zeros((9, 13), np.uint8)
    gaps[[0, 4, 8], 12], gaps[:, 5] = [1, 2, 3], np.arange(4, 13)
    row = np.arange(1, 33, dtype=np.uint8)[None]
    column = np.arange(1, 8, dtype=np.uint8)[:, None]
    return [fig, gaps, row, column, np.zeros((3, 4), np.uint8)]


def test_csc_mode_fig8c_and_directed_matrices_equal_the_separate_block():
    """Fig. 8c's pointers and order, and every directed matrix, back to back with other
    modes between them under stalls on every stream, equal the golden converter's CSC and
    the separate csr_to_csc block's: the column pointers come from MINT_m's shared
    (inclusive) position scan, each counter word moved up a lane, and the scan serves the
    divider's positions again in the next job."""
    matrices = csc_matrices()
    block = CsrToCsc(lanes=4, max_rows=16, max_cols=32, max_nnz=64, value_width=8)
    alone = pysim(CscBench(block, [sp.csr_array(m) for m in matrices], seed_from_env(31),
                           {k: v for k, v in STALLS.items() if k in ("col_ptr", "csc")}))
    jobs = []
    for j, matrix in enumerate(matrices):
        jobs += [(CSC, matrix), (MATRIX_MODES[j % 6], DIRECTED[j % 4])]
    done = mixed(MintMerged(**SMALL), [*jobs, (CSF, fig8f().astype(np.uint8))],
                 seed_from_env(32), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=False):
        assert same(got, want), mode
    for want, (got, _) in zip(alone.csc, done[::2], strict=False):
        assert same(got, want)
    fig = done[0][0]
    assert fig.indptr.tolist() == [0, 2, 3, 5, 7]
    assert fig.indices.tolist() == [2, 3, 2, 0, 1, 0, 3]


def test_coo_to_csc_mode_sorts_records_by_column():
    """COO to CSC through the same sort (its records on ``records``, COO to Dense's
    stream, the sort's COO mode), records column-major, back to back with CSR to CSC
    between: the golden converter's CSC and the separate block's in its COO mode; records
    whose column's rows come out of order (one pass cannot sort them) are refused."""
    matrices = csc_matrices()[:3]
    block = CsrToCsc(lanes=4, max_rows=16, max_cols=32, max_nnz=64, value_width=8)
    alone = pysim(CscBench(block, [source_of(MintMode.COO_TO_CSC, m) for m in matrices],
                           seed_from_env(33)))
    jobs = [(mode, m) for m in matrices for mode in (MintMode.COO_TO_CSC, CSC)]
    done = mixed(MintMerged(**SMALL), jobs, seed_from_env(34), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=True):
        assert same(got, want), mode
    for want, (got, _) in zip(alone.csc, done[::2], strict=True):
        assert same(got, want)
    coo = sp.coo_array(EXAMPLE)
    backwards = sp.coo_array((coo.data[::-1], (coo.row[::-1], coo.col[::-1])), shape=coo.shape)
    with pytest.raises(ParameterError, match="each column's records must come in row order"):
        bench(MintMerged(**SMALL), MintMode.COO_TO_CSC, backwards, 0)


def test_csc_mode_at_the_edges_of_its_buffers():
    """16 rows, 32 columns and 64 nonzeros, the converter's most, convert (pointers up
    to 64 in 7 bits); one more row, column or nonzero is refused."""
    component = MintMerged(**SMALL)
    full = np.zeros((16, 32), np.uint8)
    full.reshape(-1)[::8] = np.arange(1, 65)
    got, _ = simulate(component, CSC, sp.csr_array(full), seed_from_env(33), STALLS, "pysim")
    assert cv.same(got, cv.convert(sp.csr_array(full), "csc")) and got.indptr[-1] == 64
    for shape, what in (((17, 4), "17 rows"), ((2, 33), "33 columns"), ((5, 13), "65 nonz")):
        with pytest.raises(ParameterError, match=what):
            bench(component, CSC, sp.csr_array(np.ones(shape, np.uint8)), 0)


def test_csc_mode_scatters_a_nonzero_a_cycle():
    """Without stalls, the entries are placed one a cycle (no empty row), as the
    separate block places them."""
    dense = (np.arange(1, 1 + 6 * 12).reshape(6, 12) % 7).astype(np.uint8)   # 62 nonzeros
    component = MintMerged(**SMALL)
    run = bench(component, CSC, sp.csr_array(dense), 0, dict.fromkeys(
        [*outputs_of(component), "row_ptr", "entries", "shape", "col_ids"], 1.0))
    done = pysim(run)
    assert cv.same(rebuild(run.component, CSC, sp.csr_array(dense), done.outputs),
                   cv.convert(sp.csr_array(dense), "csc"))
    taken = [cycle for cycle, _ in run.sources[1].accepted]
    assert np.diff(taken).tolist() == [1] * (np.count_nonzero(dense) - 1)


@pytest.mark.verilator
@pytest.mark.soak
def test_csf_mode_real_tensors_on_verilator(shared_data, tmp_path):
    """Dense cuts of real tensors natively under random back-pressure on every stream: the
    golden converter's CSF and the separate block's; and back from that CSF to COO, the
    golden converter's and the separate csf_to_coo block's."""
    tensors = [densest(shared_data, LASTFM, (8, 32, 64)),
               densest(shared_data, TAGS, (16, 16, 32))]
    component = MintMerged(lanes=8, width=64, index_width=16, ptr_width=32)
    alone = run_native(DenseToCsf(**RTL), tensors, seed_from_env(39)).csf
    for k, (tensor, want) in enumerate(zip(tensors, alone, strict=True)):
        got, _ = simulate(component, CSF, tensor, seed_from_env(40 + k), STALLS,
                          work_dir=tmp_path)
        assert same(got, want) and cv.same(got, cv.convert(tensor, "csf")), tensor.shape
        back, _ = simulate(component, UNFOLD, got, seed_from_env(42 + k), STALLS,
                           work_dir=tmp_path)
        alone, _ = csf_to_coo(got, seed=seed_from_env(44 + k))
        assert cv.same(back, cv.convert(got, "coo")) and cv.same(back, alone), tensor.shape


# -- BSR and CSF to COO, CSR to CISS: the walkers, on their separate blocks' units ----------

UNBLOCK, UNFOLD, CISS = MintMode.BSR_TO_COO, MintMode.CSF_TO_COO, MintMode.CSR_TO_CISS


def unstalled(component):
    """Rates that never stall a stream of ``component``."""
    inputs = ("row_ptr", "dense_shape", "bsr_mem__response", "csf0", "csf1", "csf2",
              *(f"ciss_mem__{p}__response" for p in range(component.pes)))
    return dict.fromkeys([*outputs_of(component), *inputs], 1.0)


def test_bsr_to_coo_mode_equals_the_separate_block_back_to_back():
    """Fig. 8e's matrices in BSR (blocks apart and shared, empty block rows, a full block,
    an empty matrix, one of no rows, a row longer than a vector) and one of 32 x 32 (the
    5-bit indices' most), back to back with another mode's job after each under stalls
    on every stream: the golden converter's COO, record for record the separate
    bsr_to_coo block's, each block read where it reads (the addresses run on from one
    matrix to the next); 34 columns, or blocks of another size, are refused. Unstalled,
    a block's row a cycle: ``R b`` cycles and the pipeline's, where the separate block
    sends a nonzero a cycle."""
    component = MintMerged(**{**SMALL, "index_width": 5})         # Fig. 8e's: 20 columns
    edge = np.zeros((32, 32), np.uint8)
    edge[0, 0], edge[31, 31], edge[30, 1] = 1, 2, 3
    dense = [*fig8e_matrices(), edge]
    sources = [source_of(UNBLOCK, m) for m in dense]
    alone = convert_bsr.BsrCooBench(BsrToCoo(block_rows=2, block_cols=2, width=8,
                                             value_width=8), sources, seed_from_env(41), STALLS)
    records = pysim(alone).records
    jobs = []
    for j, matrix in enumerate(dense):
        jobs += [(UNBLOCK, matrix), (MATRIX_MODES[(3 * j) % len(MATRIX_MODES)], DIRECTED[j % 4])]
    done = mixed(component, jobs, seed_from_env(42), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=True):
        assert same(got, want), mode
    coo = [got for got, _ in done[::2]]
    for name, field in (("row", "row"), ("col", "col"), ("value", "data")):
        merged = np.concatenate([getattr(c, field).astype(np.int64) for c in coo])
        assert merged.tolist() == records[name].tolist(), name

    full = (np.arange(1, 1 + 8 * 24).reshape(8, 24) % 127).astype(np.uint8)
    full[full % 5 == 0] = 0
    bsr = source_of(UNBLOCK, full)
    blocks = int(bsr.indptr[-1])
    got, cycles = simulate(component, UNBLOCK, bsr, 0, unstalled(component), "pysim")
    assert same(got, cv.convert(bsr, "coo"))
    alone = convert_bsr.BsrCooBench(BsrToCoo(block_rows=2, block_cols=2, width=8,
                                             value_width=8), [bsr], 0,
                                    dict.fromkeys(("block_ptr", "records", "mem__request",
                                                   "mem__response"), 1.0))
    separate = pysim(alone).cycles
    assert cycles <= 2 * blocks + component.compactor.latency + 12 < separate
    for matrix, message in ((cv.convert(np.ones((2, 34), np.uint8), "bsr", block=BLOCK),
                             "5-bit rows and columns"),
                            (cv.convert(np.ones((4, 4), np.uint8), "bsr", block=(4, 4)),
                             "4 x 4 blocks: the converter takes 2 x 2")):
        with pytest.raises(ParameterError, match=message):
            bench(component, UNBLOCK, matrix, 0)


def test_csf_to_coo_mode_equals_the_separate_block_back_to_back():
    """Dense to CSF's directed tensors (Fig. 8f's, empty slices and fibers, none and all
    nonzero, one element) in CSF, back to back with another mode's job after each under
    stalls: the golden converter's COO and the separate csf_to_coo block's (its nodes
    scattered over the lanes); a mode of 17, or a matrix's CSF, is refused."""
    component = MintMerged(**SMALL)
    tensors = csf_tensors(SMALL["lanes"])
    alone = pysim(CsfToCooBench(CsfToCoo(lanes=4, index_width=4, count_width=8,
                                         value_width=8),
                                [cv.convert(t, "csf") for t in tensors], seed_from_env(45),
                                STALLS, scatter=True)).coo
    jobs = []
    for j, tensor in enumerate(tensors):
        jobs += [(UNFOLD, tensor), (MATRIX_MODES[(5 * j) % len(MATRIX_MODES)], DIRECTED[j % 4])]
    done = mixed(component, jobs, seed_from_env(46), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=True):
        assert same(got, want), mode
    for (got, _), want in zip(done[::2], alone, strict=True):
        assert same(got, want)
    for source, message in ((cv.convert(np.ones((17, 1, 4), np.uint8), "csf"),
                             "modes of 1 to 16"),
                            (cv.convert(EXAMPLE, "csf"), "3-D tensor's CSF; this one is 2-D")):
        with pytest.raises(ParameterError, match=message):
            bench(component, UNFOLD, source, 0)


def ciss_matrices():
    """CSR to CISS's directed matrices: rows longer than the PEs and empty ones, an empty
    matrix, one nonzero, 15 rows and 16 columns (the 4-bit indices' most: a slice index
    stays below the idle lane's 15), the largest value of 8 bits."""
    long = np.zeros((6, 12), np.uint8)
    long[0, :11], long[3, [1, 7]], long[5, 11] = np.arange(1, 12), [12, 13], 127
    edge = np.zeros((15, 16), np.uint8)
    edge[0, 15], edge[14, 0], edge[7, 3:9] = 1, 2, 3
    single = np.zeros((3, 4), np.uint8)
    single[2, 3] = 5
    return [EXAMPLE, long, np.zeros((4, 5), np.uint8), single, edge]


def test_csr_to_ciss_mode_equals_the_separate_block_back_to_back():
    """Each directed matrix, back to back with another mode's job after each under stalls
    on every stream (the lanes' memories answering at random): the host encoder's entries
    and count, entry for entry the separate csr_to_ciss block's, each lane reading what
    the encoder's schedule gives it; 16 rows are refused. Unstalled, the block's cycles."""
    component = MintMerged(**SMALL)
    matrices = ciss_matrices()
    block = CsrToCiss(pes=2, dw=8, iw=4, addr_width=20, inflight=2)
    alone = pysim(convert_ciss.CissBench(block, [sp.csr_array(m) for m in matrices],
                                         seed_from_env(47), STALLS))
    jobs = []
    for j, matrix in enumerate(matrices):
        jobs += [(CISS, matrix), (MATRIX_MODES[(7 * j) % len(MATRIX_MODES)], DIRECTED[j % 4])]
    done = mixed(component, jobs, seed_from_env(48), STALLS)
    for (mode, _), (got, want) in zip(jobs, done, strict=True):
        assert same(got, want), mode
    for (got, _), entries, count in zip(done[::2], alone.entries, alone.counts, strict=True):
        assert list(got.entries) == entries and got.count == count
    with pytest.raises(ParameterError, match="16 rows"):
        bench(component, CISS, sp.csr_array(np.ones((16, 2), np.uint8)), 0)
    full = {name: 1.0 for name in ("rows", "row_ptr", "ciss", "count", "request", "response")}
    _, cycles = simulate(component, CISS, sp.csr_array(matrices[1]), 0, unstalled(component),
                         "pysim")
    assert cycles == pysim(convert_ciss.CissBench(block, [sp.csr_array(matrices[1])], 0,
                                                  full)).cycles


@pytest.mark.verilator
@pytest.mark.soak
def test_walker_modes_on_a_real_matrix_on_verilator(shared_data, tmp_path):
    """BSR to COO and CSR to CISS on 494_bus natively under random back-pressure on every
    stream (the memories answering at random): the golden converter's COO and the host
    encoder's CISS, and the separate blocks' native runs; BSR to COO in fewer cycles than
    the separate block's (a block's row a cycle against a nonzero a cycle), CSR to CISS in
    the separate block's within the stalls' noise."""
    matrix = cv.convert(read_matrix(shared_data / "matrices" / "suitesparse/494_bus.mtx"),
                        "dense")
    component = MintMerged(**convert_dense.params_for(DenseToCoo, matrix), ptr_width=32)
    got, want, cycles = run(component, UNBLOCK, matrix, seed_from_env(52), work_dir=tmp_path)
    alone, alone_cycles = convert_bsr.run_coo(source_of(UNBLOCK, matrix),
                                              seed=seed_from_env(53))
    assert same(got, want) and same(got, alone) and cycles < alone_cycles
    got, want, cycles = run(component, CISS, matrix, seed_from_env(54), work_dir=tmp_path)
    block = CsrToCiss(pes=component.pes, dw=ciss_width(component.width),
                      iw=component.index_width, addr_width=component.addr_width)
    alone, _ = convert_ciss.run_native(block, [sp.csr_array(matrix)], seed_from_env(55))
    assert same(got, want)
    assert list(got.entries) == alone.entries[0] and got.count == alone.counts[0]
    assert abs(cycles - alone.cycles) <= 0.1 * alone.cycles


def test_position_width_must_hold_the_csc_pointers_and_the_block_columns():
    """Pointers of 13 bits (4,096 nonzeros) fit 13-bit positions and not 12, and CSR to
    CSC's 7-bit ones (64 nonzeros) not 6-bit row pointers; a divisor C of 4 fits 3 bits
    and not 2; RLC runs of 4 bits fit the 4-bit columns of the records, and not 5."""
    MintMerged(**{**SMALL, "position_width": 13, "max_nnz": 4096, "ptr_width": 16})
    with pytest.raises(ParameterError, match="13-bit pointers, wider than position_width=12"):
        MintMerged(**{**SMALL, "position_width": 12, "max_nnz": 4096, "ptr_width": 16})
    with pytest.raises(ParameterError, match="7-bit pointers, wider than ptr_width=6"):
        MintMerged(**{**SMALL, "ptr_width": 6})
    MintMerged(**{**SMALL, "position_width": 3, "block_cols": 4, "max_nnz": 4})
    MintMerged(**{**SMALL, "run_bits": 4})
    with pytest.raises(ParameterError, match="run_bits=5 does not fit the 4-bit column"):
        MintMerged(**{**SMALL, "run_bits": 5})
    with pytest.raises(ParameterError, match="block_cols=4 does not fit"):
        MintMerged(**{**SMALL, "position_width": 2, "block_cols": 4, "max_nnz": 2})


def test_declares_the_named_signature():
    merged = MintMerged(lanes=4, width=8, index_width=5, ptr_width=9, run_bits=3,
                        position_width=10, block_rows=3, block_cols=4, max_rows=64,
                        max_cols=128, max_nnz=256)
    def ports(signature):
        return {path: member for path, member in signature.members.flatten() if member.is_port}

    assert ports(merged.signature) == ports(
        MintMergedSignature(4, 8, 5, 9, 3, 10, (3, 4), (64, 128, 256)))
    assert merged.divider.lanes == 4 and merged.divider.width == 10
    divider = MintMerged(**MintMerged.REPORT[0]).divider
    name, params = MintMerged.DIVIDER
    assert name == "divmod" and params == {
        "lanes": divider.lanes, "width": divider.width, "levels": divider.levels,
        "quotient_width": divider.quotient_width, "divisor_width": divider.divisor_width}
    assert params in [get("divmod").resolve(c) for c in DivMod.REPORT]   # the report's


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "width": 1, "index_width": 1,
                                          "ptr_width": 2, "run_bits": 1,
                                          "position_width": 2, "levels": 1,
                                          "block_rows": 1, "block_cols": 1, "depth": 4,
                                          "max_rows": 2, "max_cols": 32, "max_nnz": 2}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("mint_merged", params) == ""


def test_synth_report_sets_it_beside_the_separate_converters_both_ways():
    """Beside the separate converters as built, and as the paper builds them: each that
    computes positions with its own divider, measured once (here by the stand-in
    ``synth``, as the results do not hold it at MINT_m's parameters) and added."""
    results = [{"block": name, "lut": lut, "carry": carry, "params": {}}
               for name, lut, carry in (
                   ("dense_to_coo", 100, 5), ("dense_to_coo", 999, 0), ("dense_to_csr", 80, 0),
                   ("dense_to_zvc", 50, 0), ("zvc_to_dense", 60, 0), ("rlc_to_coo", 90, 0),
                   ("dense_to_csf", 70, 0), ("csr_to_bsr", 120, 0), ("csr_to_csc", 130, 0),
                   ("dense_to_rlc", 40, 0), ("coo_to_dense", 30, 0), ("csr_to_dense", 35, 0),
                   ("bsr_to_coo", 45, 0), ("csf_to_coo", 55, 0), ("csr_to_ciss", 65, 0),
                   ("divmod", 7, 0), ("mint_merged", 140, 10))]
    asked = []

    def synth(block, params):
        asked.append((block, params))
        return {"lut": 300, "carry": 50}

    (row,) = merged_rows(results, synth)
    assert asked == [MintMerged.DIVIDER]
    separate = 110 + 80 + 50 + 60 + 90 + 70 + 120 + 130 + 40 + 30 + 35 + 45 + 55 + 65
    assert row["block"] == "mint_merged" and row["separate_logic"] == separate
    assert row["ratio"] == 160 / separate and "43%" in row["paper"]
    assert row["divider_logic"] == 400 and row["divides"] == list(MintMerged.DIVIDES)
    assert row["paper_style_logic"] == separate + 5 * 400
    assert row["paper_style_ratio"] == 160 / (separate + 2000)
    held = {"block": "divmod", "lut": 200, "carry": 0, "params": dict(MintMerged.DIVIDER[1])}
    (row,) = merged_rows([*results, held], synth)
    assert row["divider_logic"] == 200 and len(asked) == 1
    assert merged_rows([r for r in results if r["block"] != "rlc_to_coo"], synth) == []
    (row,) = merged_rows(results)                   # no divider to hand: one ratio only
    assert row["ratio"] == 160 / separate and "paper_style_ratio" not in row
