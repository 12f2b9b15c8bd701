"""``sparseforge bench eureka``: figures consistent with each other and with the RTL."""

import json
import subprocess
import sys

import pytest


@pytest.mark.verilator
@pytest.mark.synth
def test_bench_eureka_quick(shared_data):
    out = subprocess.run([sys.executable, "-m", "sparseforge", "bench", "eureka", "--quick",
                          "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for group in result["groups"]:
        p4 = group["p4"]["cycles"]
        assert p4["ideal"] <= p4["optimal"] <= p4["greedy"] <= p4["compaction"] <= p4["dense"]
        assert p4["two_four"] * 2 == p4["dense"]
        systolic = group["p4"]["systolic"]
        assert systolic["eureka"]["cycles"] <= systolic["optimal"]["cycles"]
        assert systolic["eureka"]["bubbles"] >= 0
    rtl = result["rtl"]
    for mode in ("suds", "dense"):  # no back-pressure: the RTL runs exactly the model's cycles
        assert rtl[mode]["span"] == rtl[mode]["busy"] == rtl[mode]["model_cycles"] > 0
    assert rtl["dense"]["model_cycles"] == 16 * rtl["dense"]["blocks"]
    systolic = rtl["systolic_8x8"]
    assert systolic["span"] == systolic["model_cycles"]
    assert 2 * systolic["span"] - sum(systolic["busy"]) == systolic["model_bubbles"]
    area = result["area"]
    assert area["ecp5"]["eureka_mac"]["lut"] > area["ecp5"]["ampere_mac"]["lut"]
    assert area["generic"]["ratio"] > 1.0
    assert set(result["ours"]) == set(result["paper"])
