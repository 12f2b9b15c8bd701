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


def check_cycles_and_rtl(result):
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


@pytest.mark.verilator
def test_bench_eureka_quick_cycles_and_rtl(shared_data):
    """The default run's bench: every figure but the area (fourteen syntheses, the DSP view's
    with place and route; the soak test below adds them)."""
    result = bench("--no-area")
    check_cycles_and_rtl(result)
    assert result["area"] is None


@pytest.mark.soak
@pytest.mark.verilator
@pytest.mark.synth
def test_bench_eureka_quick(shared_data):
    result = bench()
    check_cycles_and_rtl(result)
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
