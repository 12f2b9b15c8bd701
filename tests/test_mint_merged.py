# amaranth: UnusedElaboratable=no
"""The merged converter (MINT_m): every mode equals the golden converter, directed on
Amaranth's simulator and on real matrices natively on Verilator under random
back-pressure, as its separate converters (MINT_b) do."""

import numpy as np
import pytest

from sparseforge.hw.convert_dense import DenseToCoo, ZvcToDense
from sparseforge.hw.mint_merged import MintMerged, MintMergedSignature
from sparseforge.sim.runners import pysim, seed_from_env
from sparseforge.sw import conversion as cv
from sparseforge.sw import wire
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.wire import MintMode
from sparseforge.synth.flow import merged_rows
from sparseforge.tb import convert_dense
from sparseforge.tb.convert_dense import ConverterBench
from sparseforge.tb.mint_merged import STREAMS, bench, rebuild, simulate
from sparseforge.tb.streams import Static

TO = {MintMode.DENSE_TO_COO: "coo", MintMode.DENSE_TO_CSR: "csr",
      MintMode.DENSE_TO_ZVC: "zvc", MintMode.ZVC_TO_DENSE: "dense"}
STALLS = {"dense": 0.9, "mask": 0.6, "values": 0.4, "words": 0.3, "marks": 0.5,
          "expanded": 0.4}

EXAMPLE = np.array([[0, 1, 0, 0, 2, 0],
                    [0, 0, 0, 0, 0, 0],
                    [3, 4, 5, 6, 7, 8],
                    [0, 0, 0, 9, 0, 10]], dtype=np.uint8)


def run(component, mode, matrix, seed, rates=None, engine="native", work_dir=None):
    """``(result, golden, cycles)`` of ``matrix`` through the merged converter in ``mode``."""
    to = TO[mode]
    source = cv.convert(matrix, "zvc") if to == "dense" else matrix
    got, cycles = simulate(component, mode, source, seed, rates, engine, work_dir)
    return got, matrix if to == "dense" else cv.convert(matrix, to), cycles


@pytest.mark.parametrize("matrix", [
    EXAMPLE, np.zeros((3, 5), np.uint8), np.arange(1, 17, dtype=np.uint8).reshape(4, 4),
    np.array([[1, 2, 3, 4, 5], [6, 7, 0, 0, 0], [0, 0, 0, 0, 11]], np.uint8),
])
@pytest.mark.parametrize("mode", list(MintMode))
def test_directed_every_mode_equals_the_golden_converter(mode, matrix):
    component = MintMerged(lanes=4, width=8, index_width=4, ptr_width=8)
    for seed, rates in ((1, None), (2, STALLS)):
        got, want, _ = run(component, mode, matrix, seed_from_env(seed), rates, "pysim")
        assert cv.same(got, want), (mode, seed)


def test_each_mode_leaves_the_other_modes_outputs_silent():
    """The mode steers the handshakes: in each mode the outputs of the others never
    raise ``valid`` (each is taken every cycle by a sink that expects nothing), so no
    part of the datapath works on a matrix that is not its mode's."""
    component = MintMerged(lanes=4, width=8, index_width=4, ptr_width=8)
    for mode in MintMode:
        to = TO[mode]
        source = cv.convert(EXAMPLE, "zvc") if to == "dense" else EXAMPLE
        run = bench(component, mode, source, seed_from_env(3), STALLS)
        for name in {"words", "marks", "expanded"} - set(STREAMS[mode].values()):
            silent = run.sink_on(name, 1.0, expected=0)
            run.sinks.append(silent)
            run.drivers.append(silent)
        out = pysim(run).outputs
        assert cv.same(rebuild(component, mode, source, out),
                       EXAMPLE if to == "dense" else cv.convert(EXAMPLE, to)), mode


def test_csr_mode_marks_a_final_vector_that_does_not_end_a_row():
    """``last`` ends the matrix's last row by itself, as the row counter takes it: a
    final vector without ``row_end`` (here the last row's second, half-padded vector)
    still gives the last row pointer, ``last`` set."""
    mode = MintMode.DENSE_TO_CSR
    component = MintMerged(lanes=4, width=8, index_width=4, ptr_width=8)
    vectors, flags = wire.dense_vectors(EXAMPLE, 4)
    assert flags["last"][-1] and flags["row_end"][-1]
    flags["row_end"][-1] = 0
    dense = wire.pack_lanes((wire.Field("value", 8),), 4, wire.dense_flags(),
                            {"value": vectors, **flags})
    sinks = {s.name: s.expected for s in bench(component, mode, EXAMPLE, 0).sinks}
    for seed, rates in ((1, None), (2, STALLS)):
        run = ConverterBench(component, {"dense": dense}, sinks, seed_from_env(seed), rates)
        run.drivers.insert(0, Static("mode", mode.value))
        out = pysim(run).outputs
        assert [p["last"] for p in out["marks"]] == [0, 0, 0, 1]
        assert cv.same(rebuild(component, mode, EXAMPLE, out), cv.convert(EXAMPLE, "csr")), seed


def test_cycles_are_the_separate_converters_cycles():
    """A Dense-to-X mode takes the cycles its separate converter takes; ZVC to Dense the
    2 more of zero detection, which its path now goes through."""
    merged = MintMerged(lanes=4, width=8, index_width=4, ptr_width=8)
    fast = dict.fromkeys([*STALLS, "coo", "entries", "row_ptr", "dense"], 1.0)
    for mode, block, extra in ((MintMode.DENSE_TO_COO, DenseToCoo, 0),
                               (MintMode.ZVC_TO_DENSE, ZvcToDense, 2)):
        _, _, cycles = run(merged, mode, EXAMPLE, 0, fast, "pysim")
        index = {"index_width": 4} if block is DenseToCoo else {}
        source = cv.convert(EXAMPLE, "zvc") if block is ZvcToDense else EXAMPLE
        _, alone = convert_dense.simulate(block(lanes=4, width=8, **index), source, 0, fast,
                                          engine="pysim")
        assert cycles == alone + extra, mode


@pytest.mark.verilator
@pytest.mark.soak
@pytest.mark.parametrize("name", ["pypi/nx_karate_club", "suitesparse/494_bus"])
def test_real_matrices_every_mode_on_verilator(shared_data, tmp_path, name):
    matrix = cv.convert(read_matrix(shared_data / "matrices" / f"{name}.mtx"), "dense")
    component = MintMerged(**convert_dense.params_for(DenseToCoo, matrix), ptr_width=32)
    for mode in MintMode:
        got, want, _ = run(component, mode, matrix, seed_from_env(int(mode.value)), STALLS,
                           work_dir=tmp_path)
        assert cv.same(got, want), mode


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
    merged = MintMerged(lanes=4, width=8, index_width=5, ptr_width=9)
    assert dict(merged.signature.members) == dict(MintMergedSignature(4, 8, 5, 9).members)


@pytest.mark.parametrize("params", [{}, {"lanes": 2, "width": 1, "index_width": 1,
                                          "ptr_width": 1, "levels": 1}])
def test_verilog_lints_clean_with_wall(lint, params):
    assert lint("mint_merged", params) == ""


def test_synth_report_sets_it_beside_the_separate_converters():
    results = [{"block": name, "lut": lut, "carry": carry} for name, lut, carry in (
        ("dense_to_coo", 100, 5), ("dense_to_coo", 999, 0), ("dense_to_csr", 80, 0),
        ("dense_to_zvc", 50, 0), ("zvc_to_dense", 60, 0), ("mint_merged", 140, 10))]
    (row,) = merged_rows(results)
    assert row["block"] == "mint_merged" and row["separate_logic"] == 110 + 80 + 50 + 60
    assert row["ratio"] == 160 / 300 and "43%" in row["paper"]
    assert merged_rows([r for r in results if r["block"] != "zvc_to_dense"]) == []
