# amaranth: UnusedElaboratable=no
"""The merged converter (MINT_m): every mode equals the golden converter and its separate
block (MINT_b), directed on Amaranth's simulator, back to back with the mode changing
between matrices, and on real matrices natively on Verilator under random
back-pressure."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseforge.core.errors import ParameterError
from sparseforge.hw.convert_dense import DenseToCoo, ZvcToDense
from sparseforge.hw.convert_rlc import RlcToCoo
from sparseforge.hw.mint_merged import MintMerged, MintMergedSignature
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw import wire
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.wire import MintMode
from sparseforge.synth.flow import merged_rows
from sparseforge.tb import convert_dense, convert_rlc
from sparseforge.tb.convert_dense import ConverterBench
from sparseforge.tb.mint_merged import OUTPUTS, STREAMS, MixedBench, bench, rebuild, simulate
from sparseforge.tb.streams import Static

TO = {MintMode.DENSE_TO_COO: "coo", MintMode.DENSE_TO_CSR: "csr",
      MintMode.DENSE_TO_ZVC: "zvc", MintMode.ZVC_TO_DENSE: "dense",
      MintMode.RLC_TO_COO: "coo"}
STALLS = {"dense": 0.9, "mask": 0.6, "values": 0.4, "pairs": 0.5, "words": 0.3,
          "marks": 0.5, "expanded": 0.4}
RUN_BITS = 2
SMALL = {"lanes": 4, "width": 8, "index_width": 4, "ptr_width": 8, "run_bits": RUN_BITS,
         "position_width": 8}

EXAMPLE = np.array([[0, 1, 0, 0, 2, 0],
                    [0, 0, 0, 0, 0, 0],
                    [3, 4, 5, 6, 7, 8],
                    [0, 0, 0, 9, 0, 10]], dtype=np.uint8)


def source_of(mode, matrix, run_bits=RUN_BITS):
    """What ``mode`` takes for ``matrix``: the matrix, its ZVC or its RLC."""
    if mode == MintMode.ZVC_TO_DENSE:
        return cv.convert(matrix, "zvc")
    if mode == MintMode.RLC_TO_COO:
        return cv.convert(matrix, "rlc", run_bits=run_bits)
    return matrix


def golden(mode, matrix):
    return matrix if mode == MintMode.ZVC_TO_DENSE else cv.convert(matrix, TO[mode])


def run(component, mode, matrix, seed, rates=None, engine="native", work_dir=None):
    """``(result, golden, cycles)`` of ``matrix`` through the merged converter in ``mode``."""
    source = source_of(mode, matrix, component.run_bits)
    got, cycles = simulate(component, mode, source, seed, rates, engine, work_dir)
    return got, golden(mode, matrix), cycles


def separate_rlc(component, rlc, seed, rates=None):
    """The separate RLC-to-COO block's result for ``rlc``, on Amaranth's simulator."""
    block = RlcToCoo(lanes=component.lanes, run_bits=component.run_bits,
                     width=component.position_width, value_width=component.width)
    records = pysim(convert_rlc.RlcBench(block, [rlc], seed, rates)).records
    return convert_rlc.records_to_coo(records, rlc.shape, rlc.dtype)


DIRECTED = [EXAMPLE, np.zeros((3, 5), np.uint8), np.arange(1, 17, dtype=np.uint8).reshape(4, 4),
            np.array([[1, 2, 3, 4, 5], [6, 7, 0, 0, 0], [0, 0, 0, 0, 11]], np.uint8)]


def mixed(component, jobs, seed, rates=None):
    """Each of ``jobs`` (``[(mode, matrix)]``) back to back through ``component`` on
    Amaranth's simulator: ``[(result, golden)]``."""
    bench = MixedBench(component, [(mode, source_of(mode, m, component.run_bits))
                                   for mode, m in jobs], seed, rates)
    results = bench.results(pysim(bench).outputs)
    return [(got, golden(mode, m)) for got, (mode, m) in zip(results, jobs, strict=True)]


@pytest.mark.parametrize("seed, rates", [(1, None), (2, STALLS)])
def test_directed_every_mode_back_to_back_equals_the_golden_converter(seed, rates):
    """Every mode on every directed matrix (one with an empty row, an all-zero one, a full
    one, rows ending part-way into a vector), one after another in one run, the mode and
    the column count changing between each matrix and the next; the bench fails an item
    on an output past its jobs' count, so no output moves in a mode that is not its own."""
    modes = list(MintMode)
    jobs = [(modes[(i + j) % len(modes)], matrix) for i in range(len(modes))
            for j, matrix in enumerate(DIRECTED)]
    for (mode, _), (got, want) in zip(jobs, mixed(MintMerged(**SMALL), jobs,
                                                  seed_from_env(seed), rates), strict=True):
        assert cv.same(got, want), mode


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
        assert cv.same(got, want), k


def test_positions_at_the_edge_of_position_width():
    """A 4 x 16 matrix fills 6-bit positions (its last element at 63) and converts
    exactly in every mode that divides; a 5 x 13 one (65 elements) is refused."""
    component = MintMerged(**{**SMALL, "position_width": 6})
    edge = np.zeros((4, 16), np.uint8)
    edge[0, 0], edge[2, 5], edge[3, 15] = 1, 2, 3
    for mode in (MintMode.DENSE_TO_COO, MintMode.DENSE_TO_CSR, MintMode.RLC_TO_COO):
        got, want, _ = run(component, mode, edge, seed_from_env(4), STALLS, "pysim")
        assert cv.same(got, want), mode
    for mode in (MintMode.DENSE_TO_COO, MintMode.RLC_TO_COO):
        with pytest.raises(ParameterError, match="6-bit positions"):
            bench(component, mode, source_of(mode, np.ones((5, 13), np.uint8)), 0)


def test_each_mode_leaves_the_other_modes_outputs_silent():
    """The mode steers the handshakes: in each mode the outputs of the others never
    raise ``valid`` (each is taken every cycle by a sink that expects nothing), so no
    part of the datapath works on a matrix that is not its mode's."""
    component = MintMerged(**SMALL)
    for mode in MintMode:
        source = source_of(mode, EXAMPLE)
        run = bench(component, mode, source, seed_from_env(3), STALLS)
        for name in set(OUTPUTS) - set(STREAMS[mode].values()):
            silent = run.sink_on(name, 1.0, expected=0)
            run.sinks.append(silent)
            run.drivers.append(silent)
        out = pysim(run).outputs
        assert cv.same(rebuild(component, mode, source, out), golden(mode, EXAMPLE)), mode


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(list(MintMode)), st.integers(1, 5),
                          st.integers(1, 9), st.floats(0, 1)), min_size=1, max_size=6),
       st.integers(0, 2**16))
def test_hypothesis_small_matrices_back_to_back(jobs, seed):
    rng = np.random.default_rng(seed)
    made = [(mode, (rng.integers(1, 256, (rows, cols)) * (rng.random((rows, cols)) < density))
             .astype(np.uint8)) for mode, rows, cols, density in jobs]
    for got, want in mixed(MintMerged(**SMALL), made, seed, STALLS):
        assert cv.same(got, want)


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
    converter takes and the position scan's and divider's latency; ZVC to Dense the 2
    more of zero detection, which its path now goes through; RLC to COO sends a vector
    of pairs a cycle, where the separate block sends a nonzero a cycle."""
    merged = MintMerged(**SMALL)
    fast = dict.fromkeys([*STALLS, "coo", "entries", "row_ptr", "dense", "records"], 1.0)
    dense_extra = merged.latency - DenseToCoo(lanes=4, width=8, index_width=4).latency
    assert dense_extra == merged.beside.latency + 1
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
    RLC to COO also against its separate block's native run."""
    matrix = cv.convert(read_matrix(shared_data / "matrices" / f"{name}.mtx"), "dense")
    component = MintMerged(**convert_dense.params_for(DenseToCoo, matrix), ptr_width=32)
    for mode in MintMode:
        got, want, _ = run(component, mode, matrix, seed_from_env(int(mode.value)), STALLS,
                           work_dir=tmp_path)
        assert cv.same(got, want), mode
        if mode == MintMode.RLC_TO_COO:
            alone, _ = convert_rlc.run(source_of(mode, matrix, component.run_bits))
            assert cv.same(got, alone)


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.parametrize("name", ["pypi/pyamg_bar", "graphs/email-Eu-core",
                                  "suitesparse/G51"])
def test_soak_real_matrices_every_mode(shared_data, tmp_path, name):
    matrix = cv.convert(read_matrix(shared_data / "matrices" / f"{name}.mtx"), "dense")
    component = MintMerged(**convert_dense.params_for(DenseToCoo, matrix), ptr_width=32)
    rng = np.random.default_rng(len(name))
    for mode in MintMode:
        rates = {k: float(rng.choice([0.2, 0.5, 0.9, 1.0])) for k in STALLS}
        got, want, _ = run(component, mode, matrix, 21 + int(mode.value), rates,
                           work_dir=tmp_path)
        assert cv.same(got, want), mode


def test_declares_the_named_signature():
    merged = MintMerged(lanes=4, width=8, index_width=5, ptr_width=9, run_bits=3,
                        position_width=10)
    assert dict(merged.signature.members) == dict(
        MintMergedSignature(4, 8, 5, 9, 3, 10).members)
    assert merged.divider.lanes == 4 and merged.divider.width == 10
    divider = MintMerged(**MintMerged.REPORT[0]).divider
    name, params = MintMerged.DIVIDER
    assert name == "divmod" and params == {"lanes": divider.lanes, "width": divider.width,
                                           "levels": divider.levels}


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "width": 1, "index_width": 1,
                                          "ptr_width": 1, "run_bits": 1,
                                          "position_width": 2, "levels": 1}])
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
                   ("divmod", 7, 0), ("mint_merged", 140, 10))]
    asked = []

    def synth(block, params):
        asked.append((block, params))
        return {"lut": 300, "carry": 50}

    (row,) = merged_rows(results, synth)
    assert asked == [MintMerged.DIVIDER]
    separate = 110 + 80 + 50 + 60 + 90
    assert row["block"] == "mint_merged" and row["separate_logic"] == separate
    assert row["ratio"] == 160 / separate and "43%" in row["paper"]
    assert row["divider_logic"] == 400 and row["divides"] == list(MintMerged.DIVIDES)
    assert row["paper_style_logic"] == separate + 3 * 400
    assert row["paper_style_ratio"] == 160 / (separate + 1200)
    held = {"block": "divmod", "lut": 200, "carry": 0, "params": {"lanes": 8, "width": 32,
                                                                  "levels": 1}}
    (row,) = merged_rows([*results, held], synth)
    assert row["divider_logic"] == 200 and len(asked) == 1
    assert merged_rows([r for r in results if r["block"] != "rlc_to_coo"], synth) == []
    (row,) = merged_rows(results)                   # no divider to hand: one ratio only
    assert row["ratio"] == 160 / separate and "paper_style_ratio" not in row
