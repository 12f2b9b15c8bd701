"""``sparseforge bench accel``: its ratios by the papers' definitions against hand-worked
values, the prepared-CISS figure against a plan worked by hand, and (soak) a quick run."""

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
    exact (else the bench fails); the model's traffic equal to the RTL's counters; the
    Tailor refetches, the single-pass runs and the Tailor that holds it all do not, and
    the traffic orders them."""
    from sparseforge.cli import main

    main(["bench", "accel", "--quick", "--json"])
    r = json.loads(capsys.readouterr().out)
    (m,) = r["matrices"]
    a, t, c = m["tailor"], m["tiling"], m["conversion"]
    rows = [a["no_buffer"], a["holds_all"], *t["policies"].values()]
    assert all(row["source"] == "RTL" for row in rows)
    assert all(row["model_bytes_read"] == row["bytes_read"] for row in rows)
    assert all(row["model_cycles"] > 0 and "converter" in row["model_parts"] for row in rows)
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
    traffic beside the RTL's, its error, the bands; each counts in the largest error,
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
                        {"error": 0})

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
        assert row["error"] == pytest.approx(row["model_cycles"] / 1000 - 1)
        assert {"bands", "band_rows", "overbooked", "reconverted"} <= set(row)
    worst = max(abs(row["error"]) for row in t["policies"].values())
    m = {"matrix": "m.mtx", "tailor": {"no_buffer": {"error": 0.0}, "holds_all": {
        "error": 0.0}}, "tiling": {"policies": {"swiftiles": {"error": 0.01}}}}
    rows = bench._rtl_rows([m], t)
    assert [(what, name) for what, name, _ in rows][-3:] == [
        ("t.tns", f"spmttkrp {p}") for p in bench.accel_plan.POLICIES]
    assert max(abs(r["error"]) for _, _, r in rows) == max(worst, 0.01)
