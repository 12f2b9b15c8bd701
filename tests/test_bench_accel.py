"""``sparseforge bench accel``: its ratios by the papers' definitions against hand-worked
values, the prepared-CISS figure against a plan worked by hand, the Eureka section's
figures by hand and its lines, and (soak) a quick run."""

import dataclasses
import json

import numpy as np
import pytest

from sparseforge.bench import accel as bench
from sparseforge.sw.accel_model import Memory, Prediction, traffic
from sparseforge.sw.accel_plan import AccelConfig, AccelPlan, Band, InputTile


def test_the_papers_ratios_by_their_definitions():
    # Tailors Fig. 7: baseline cycles over the design's; 300 against 120 cycles.
    assert bench.speedup(300, 120) == pytest.approx(2.5)
    assert bench.speedup(90, 120) == pytest.approx(0.75)        # slower than the baseline
    # Fig. 9(a): 1260 bytes streamed against 1000 on a buffer that holds it all.
    assert bench.streaming_overhead(1260, 1000) == pytest.approx(0.26)
    assert bench.streaming_overhead(1000, 1000) == 0
    # The model predicting 95 cycles of a run of 100: 5% short.
    assert bench.model_error(95, 100) == pytest.approx(-0.05)
    # In line 200 cycles, prepared 150: conversion a quarter of the run.
    assert bench.conversion_share(200, 150) == pytest.approx(0.25)
    assert bench.geomean([1, 4, 16]) == pytest.approx(4)


def _plan():
    """Two bands on a Tailor of 8 entries (buffet region 6), 3 passes: the first band of 10
    entries overbooks (4 bumped, refetched on 2 later passes: 8), the second of 5 fits."""
    config = AccelConfig(pes=2, cols=1, vlen=1, tlen=2, spm_rows=4, out_rows=4, depth=8,
                         fifo=2)
    first = Band(0, 2, (InputTile(0, 4, 6, 0, False), InputTile(4, 8, 4, 6, True)))
    second = Band(2, 2, (InputTile(0, 4, 5, 0, True),))
    return AccelPlan(config, (4, 8), 6, (first, second), 3, None, np.zeros((4, 6)))


def _prediction(mlu):
    reads = {"tiles": 50, "a_rowptr": 100, "a_prepass": 50, "a_colid": 200, "a_values": 200,
             "b": 400}
    parts = {"converter": 700, "compute": 100, "mlu": mlu, "msu": 50}
    return Prediction(1000, sum(reads.values()), 96, 8, parts, reads, {"out": 96})


def test_prepared_ciss_reads_the_entries_the_tailor_takes():
    """15 entries on the first pass and 8 refetched: 23 of 16 bytes replace the 550 bytes
    of CSR (1000 - 550 + 368 = 818); reading them, 2 beats each at half a beat a cycle,
    takes 92 cycles for the converter's 700: 1000 - 700 + 92 = 392."""
    plan = _plan()
    assert plan.refetched_entries() == 8
    memory = Memory(latency=10, ordered=10, rate=0.5)
    assert bench.prepared_ciss(plan, _prediction(300), 16, 2, memory) == (392, 818)


def test_prepared_ciss_is_never_faster_than_the_busiest_other_unit():
    """With B's loads busy for 500 cycles, 392 is not reachable: 500."""
    memory = Memory(latency=10, ordered=10, rate=0.5)
    assert bench.prepared_ciss(_plan(), _prediction(500), 16, 2, memory)[0] == 500
    assert bench.prepared_ciss(_plan(), _prediction(392), 16, 2, memory)[0] == 392


@pytest.mark.soak
def test_quick_run_rtl_exact_beside_the_model(capsys, shared_data):
    """One small matrix, seven native runs, and a small tensor, three, every one's Y
    exact (else the bench fails); the model's traffic equal to the RTL's counters, its
    cycles within 5% of the RTL's on every row; the Tailor refetches, the single-pass
    runs and the Tailor that holds it all do not, and the traffic orders them."""
    from sparseforge.cli import main

    main(["bench", "accel", "--quick", "--json"])
    r = json.loads(capsys.readouterr().out)
    (m,) = r["matrices"]
    a, t, c = m["tailor"], m["tiling"], m["conversion"]
    rows = [a["no_buffer"], a["holds_all"], *t["policies"].values()]
    assert all(row["source"] == "RTL" for row in rows)
    assert all(row["model_bytes_read"] == row["bytes_read"] for row in rows)
    assert all(row["model_cycles"] > 0 and "converter" in row["model_parts"] for row in rows)
    # The DRAM's own bursts beside the model's bus on every row; reading A on every pass
    # takes the DRAM more of them than the Tailor's reuse.
    assert all(row["dram_bursts"] > 0 and row["model_bursts"] > 0 for row in rows)
    assert a["no_buffer"]["dram_bursts"] > a["tailor"]["dram_bursts"]
    assert a["tailor"]["refetched"] > 0 and a["tailor"]["overbooked"] > 0
    assert a["no_buffer"]["refetched"] == 0 and a["holds_all"]["refetched"] == 0
    assert a["holds_all"]["bytes_read"] < a["tailor"]["bytes_read"] < a["no_buffer"][
        "bytes_read"]
    assert a["reuse_speedup"] == a["no_buffer"]["cycles"] / a["tailor"]["cycles"]
    assert c["prepared_ciss"]["source"] == "model"
    assert c["prepared_ciss"]["bytes_read"] < c["in_line"]["bytes_read"]
    # SpMTTKRP on MovieLens' tag tensor: each policy exact natively (else the bench
    # fails), the model's traffic the RTL's, prescient's and Swiftiles' bands overbooked.
    t = r["tensor"]["policies"]
    assert list(t) == list(bench.accel_plan.POLICIES)
    assert all(row["source"] == "RTL" and row["model_bytes_read"] == row["bytes_read"]
               for row in t.values())
    assert all(row["refetched"] > 0 for row in t.values())
    assert r["summary"]["max_model_error"] >= max(abs(row["error"]) for row in t.values())
    # The host model within its 5% target on every RTL row, the matrix's and the tensor's
    # (the notes name none it misses).
    assert r["summary"]["max_model_error"] <= 0.05
    assert not any("misses the RTL" in note for note in r["notes"])
    # The Eureka build on the pruned layers' slices: exact natively (else the bench fails),
    # the host's traffic the RTL's, the model within 5%, the array faster than 2:4.
    e = r["eureka"]["layers"]
    assert len(e) == len(bench.accel_eureka.QUICK_LAYERS)
    assert all(abs(row["error"]) <= 0.05 and row["array"] < row["two_four"] for row in e)
    assert all(row["model_bytes_read"] == row["bytes_read"] for row in e)


def test_bands_count_the_overbooked_bands_converted_again_whole():
    """The first band's bumped entries (past the buffet region's 6) lie in its second tile
    only: 4 entries converted again on each of 2 later passes. A band whose first tile
    reaches past the buffet region is converted again whole."""
    plan = _plan()
    bands = bench._bands(plan)
    assert (bands["bands"], bands["overbooked"], bands["reconverted"]) == (2, 1, 8)
    assert bands["reconverted_whole"] == 0
    whole = Band(0, 2, (InputTile(0, 4, 7, 0, False), InputTile(4, 8, 3, 7, True)))
    bands = bench._bands(dataclasses.replace(plan, bands=(whole,)))
    assert (bands["overbooked"], bands["reconverted"], bands["reconverted_whole"]) == (1, 20, 1)


def test_tensor_rows_are_labelled_as_the_matrices(tmp_path, monkeypatch):
    """SpMTTKRP's rows, one a policy, carry the SpMM rows' figures: RTL cycles (here a
    native run answered with the golden output and 1000 cycles), the model's exact
    traffic beside the RTL's, the DRAM's bursts that took its bus beside the model's, its
    error, the bands; each counts in the largest error,
    named after the tensor and its policy."""
    from sparseforge.tb import accel as tb_accel
    from sparseforge.tb.accel import AccelRun

    rng = np.random.default_rng(3)
    dense = rng.integers(1, 5, (5, 7, 3)) * (rng.random((5, 7, 3)) < 0.4)
    lines = [" ".join(map(str, (*(x + 1 for x in co), dense[tuple(co)])))
             for co in np.argwhere(dense)]
    path = tmp_path / "t.tns"
    path.write_text("\n".join(lines) + "\n")

    def run(harness, plan, tensor, factors, seed, **_):
        bytes_read = sum(traffic(plan, tensor)[0].values())
        return AccelRun(plan.golden, 1000, bytes_read, 0, plan.refetched_entries(),
                        {"error": 0}, {"dram_reads": 70, "dram_writes": 2,
                                       "shared_reads": 500, "shared_writes": 3})

    monkeypatch.setattr(tb_accel, "simulate", run)
    steps = []
    t = bench.measure_tensor(path, 1, steps.append)
    assert t["nnz"] == np.count_nonzero(dense) and t["shape"] == [5, 7, 3]
    assert t["rank"] == bench.RANK and t["passes"] == 2
    assert list(t["policies"]) == list(bench.accel_plan.POLICIES) == [s.split()[-1]
                                                                      for s in steps]
    for row in t["policies"].values():
        assert row["source"] == "RTL" and row["cycles"] == 1000
        assert row["model_bytes_read"] == row["bytes_read"] > 0
        assert row["dram_bursts"] == 72 and row["model_bursts"] > 0     # no shared ones
        assert row["error"] == pytest.approx(row["model_cycles"] / 1000 - 1)
        assert {"bands", "band_rows", "overbooked", "reconverted"} <= set(row)
    worst = max(abs(row["error"]) for row in t["policies"].values())
    m = {"matrix": "m.mtx", "tailor": {"no_buffer": {"error": 0.0}, "holds_all": {
        "error": 0.0}}, "tiling": {"policies": {"swiftiles": {"error": 0.01}}}}
    rows = bench._rtl_rows([m], t)
    assert [(what, name) for what, name, _ in rows][-3:] == [
        ("t.tns", f"spmttkrp {p}") for p in bench.accel_plan.POLICIES]
    assert max(abs(r["error"]) for _, _, r in rows) == max(worst, 0.01)


def test_eureka_figures_by_both_definitions_by_hand():
    """The tiny layer of tests/test_accel_eureka.py (W 6 x 10 at P = 1: 2 x 3 blocks of
    4 x 4, 4 sent, their SUDS cycles 2, 1, 1, 1; X of 6 columns: 2 panels) against an RTL
    run of 200 cycles. By Eureka's definitions every block takes 4P = 4 cycles dense and 2
    under 2:4: 2 x 6 x 4 = 48 and 24; the array 2 x 5 = 10. Paper's definition: 48 / 10
    = 4.8x over dense, 2.4x over 2:4; ours: 48 / 200 = 0.24x and 0.12x. The model (the
    default DRAM) has the bus bound it: 156 cycles, 22% short of 200."""
    from sparseforge.bench import accel_eureka as section
    from sparseforge.sw import accel_eureka
    from tests.test_accel_eureka import TINY, W, X

    r = section.layer_figures(accel_eureka.plan(W, X, TINY), 200)
    assert (r["dense"], r["two_four"], r["array"]) == (48, 24, 10)
    assert r["paper"] == {"over_dense": 4.8, "over_two_four": 2.4}
    assert r["ours"] == {"over_dense": 0.24, "over_two_four": 0.12}
    assert (r["model_cycles"], r["bound"]) == (156, "dram")
    assert r["error"] == pytest.approx(-0.22)


def test_eureka_section_runs_every_quick_slice_and_labels_the_lines(shared_data,
                                                                     monkeypatch):
    """The quick slices, each through a native run (here answered with W X in 5,000
    cycles): a row a slice of the real layer's shape, the traffic the host counts, and
    the printed lines name both definitions, the bound and the paper's claims."""
    from sparseforge.bench import accel_eureka as section
    from sparseforge.sw import accel_eureka
    from sparseforge.tb import accel as tb_accel
    from sparseforge.tb.accel import AccelRun

    def run(harness, plan, w, x, seed, **_):
        return AccelRun(plan.golden, 5000, accel_eureka.traffic(plan)[0], 0, 0, {"error": 0})

    monkeypatch.setattr(tb_accel, "simulate", run)
    steps = []
    s = section.measure(shared_data, True, 1, steps.append)
    assert len(s["layers"]) == len(steps) == len(section.QUICK_LAYERS)
    for r, (_, rows, cols) in zip(s["layers"], section.QUICK_LAYERS, strict=True):
        assert r["rows"] == list(rows) and r["cols"] == list(cols)
        assert r["shape"] == [rows[1] - rows[0], cols[1] - cols[0], section.COLUMNS]
        assert r["passes"] == 2 and r["cycles"] == 5000
        assert r["model_bytes_read"] == r["bytes_read"] > 0
        assert r["dense"] == 2 * r["blocks"] * 16 == 2 * r["two_four"]
        assert r["array"] < r["two_four"] and r["bound"] == "r"
        assert r["ours"]["over_dense"] == r["dense"] / 5000
    lines = []
    section.human(s, lines.append)
    text = "\n".join(lines)
    assert text.count("(memory-bound)") == 2 * len(s["layers"])
    assert "paper's def." in text and "2.4x over 2:4" in text and "2.0x over dense" in text
