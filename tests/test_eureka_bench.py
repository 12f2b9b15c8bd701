"""``sparseforge bench eureka``: figures consistent with each other and with the RTL."""

import json
import subprocess
import sys

import pytest


def bench(*options):
    out = subprocess.run([sys.executable, "-m", "sparseforge", "bench", "eureka", "--quick",
                          "--json", *options], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def check_cycles(result):
    for group in result["groups"]:
        p4 = group["p4"]["cycles"]
        assert p4["ideal"] <= p4["optimal"] <= p4["greedy"] <= p4["compaction"] <= p4["dense"]
        assert p4["two_four"] * 2 == p4["dense"]
        systolic = group["p4"]["systolic"]
        assert systolic["eureka"]["cycles"] <= systolic["optimal"]["cycles"]
        assert systolic["eureka"]["bubbles"] >= 0


def check_rtl(result):
    rtl = result["rtl"]
    for mode in ("suds", "dense"):  # no back-pressure: the RTL runs exactly the model's cycles
        assert rtl[mode]["span"] == rtl[mode]["busy"] == rtl[mode]["model_cycles"] > 0
    assert rtl["dense"]["model_cycles"] == 16 * rtl["dense"]["blocks"]
    systolic = rtl["systolic_8x8"]
    assert systolic["span"] == systolic["model_cycles"]
    assert 2 * systolic["span"] - sum(systolic["busy"]) == systolic["model_bubbles"]


def test_bench_eureka_quick_cycles(shared_data):
    """The default run's bench: the cycle figures. Its RTL runs (the array's SUDS and dense
    modes and the 8x8 systolic array on Verilator) repeat what test_eureka_array and
    test_eureka_systolic run on real layers, and its area is fourteen syntheses with the
    DSP view's place and route: the soak test below adds both."""
    result = bench("--no-area", "--no-rtl")
    check_cycles(result)
    assert result["rtl"] is None and result["area"] is None


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.synth
def test_bench_eureka_quick(shared_data):
    result = bench()
    check_cycles(result)
    check_rtl(result)
    area = result["area"]
    for dtype in ("int8", "fp16"):
        for view in ("dsp", "lut", "generic"):
            cells = area[dtype][view]
            assert cells["eureka_mac"] > cells["ampere_mac"] > 0  # the mux and SUDS add area
            assert cells["ratio"] == cells["eureka_mac"] / cells["ampere_mac"]
        # The multiplier in LUTs costs logic cells the DSP view does not count.
        assert area[dtype]["lut"]["ampere_mac"] > area[dtype]["dsp"]["ampere_mac"]
        assert all(f > 0 for f in area[dtype]["fmax_mhz"].values())
    # FP16 operands, products and adders are wider than int8's.
    assert area["fp16"]["generic"]["ampere_mac"] > area["int8"]["generic"]["ampere_mac"]
    assert set(result["ours"]) == set(result["paper"])
