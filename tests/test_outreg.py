"""Folding a block's registers into the ECP5 block RAMs' output registers
(:mod:`sparseforge.synth.outreg`): only registers that are the RAM's data and
nothing else, on its clock, with one enable and no other reset, fold."""

import json

import pytest

from sparseforge.synth import outreg


def netlist(ff_params=None, ff_clk=2, ff_lsr="0", extra_user=False, name="block.q"):
    """A DP16KD whose port B's two outputs drive two flip-flops (and, with
    ``extra_user``, a LUT too)."""
    ff = {"CEMUX": "CE", "CLKMUX": "CLK", "REGSET": "RESET", **(ff_params or {})}
    cells = {"ram": {"type": "DP16KD",
                     "parameters": {"REGMODE_A": "NOREG", "REGMODE_B": "NOREG",
                                    "CLKBMUX": "CLKB"},
                     "port_directions": {"DOB0": "output", "DOB1": "output", "DOB2": "output",
                                         "CLKB": "input", "OCEB": "input", "RSTB": "input"},
                     "connections": {"DOB0": [10], "DOB1": [11], "DOB2": [12], "CLKB": [2],
                                     "OCEB": ["1"], "RSTB": [3]}}}
    for n, bit in enumerate((10, 11)):
        cells[f"{name}{n}"] = {"type": "TRELLIS_FF", "parameters": ff,
                               "port_directions": {"CLK": "input", "CE": "input",
                                                   "DI": "input", "LSR": "input",
                                                   "Q": "output"},
                               "connections": {"CLK": [ff_clk], "CE": [5], "DI": [bit],
                                               "LSR": [ff_lsr], "Q": [20 + n]}}
    if extra_user:
        cells["lut"] = {"type": "LUT4", "parameters": {},
                        "port_directions": {"A": "input", "Z": "output"},
                        "connections": {"A": [10], "Z": [30]}}
    return json.dumps({"modules": {"top": {"cells": cells, "netnames": {}}}})


def test_registers_behind_a_port_fold_into_its_output_register():
    text, folded = outreg.absorb(netlist(ff_lsr=3), "top", inside="block.")
    cells = json.loads(text)["modules"]["top"]["cells"]
    assert folded == 2 and set(cells) == {"ram"}
    ram = cells["ram"]
    assert ram["parameters"]["REGMODE_B"] == "OUTREG"
    assert ram["parameters"]["REGMODE_A"] == "NOREG"
    assert ram["connections"]["DOB0"] == [20] and ram["connections"]["DOB1"] == [21]
    assert ram["connections"]["OCEB"] == [5]


@pytest.mark.parametrize("case", [{"ff_clk": 7}, {"ff_lsr": 9}, {"extra_user": True},
                                  {"ff_params": {"CLKMUX": "INV"}},
                                  {"ff_params": {"REGSET": "SET"}, "ff_lsr": 3},
                                  {"name": "harness.q"}])
def test_other_registers_stay(case):
    """Another clock, another reset, a second user of the data, an inverted clock, a set
    instead of a reset, a register outside the block: nothing folds."""
    text, folded = outreg.absorb(netlist(**case), "top", inside="block.")
    assert folded == 0 and text == json.dumps(json.loads(netlist(**case)))


@pytest.mark.synth
def test_the_buffet_reads_through_the_output_register():
    from amaranth.back import rtlil

    from sparseforge.hw.buffet import Buffet
    from sparseforge.synth.flow import _stat
    from sparseforge.synth.harness import Harness

    harness = Harness(Buffet(depth=1024, width=8))
    il = rtlil.convert(harness, name="harness", ports=[harness.sin, harness.sout])
    _, text, _ = _stat(il, "harness", "ecp5")
    folded_text, folded = outreg.absorb(text, "harness", inside="block.")
    assert folded == 8
    rams = [c for c in json.loads(folded_text)["modules"]["harness"]["cells"].values()
            if c["type"] == "DP16KD"]
    assert [r["parameters"]["REGMODE_B"] for r in rams] == ["OUTREG"]
