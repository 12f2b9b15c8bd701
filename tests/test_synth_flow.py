# amaranth: UnusedElaboratable=no
"""The synthesis report's honesty: a harness whose own paths are one LUT long, nextpnr's
critical path named with its source lines, the device's own area, Fmax over seeds."""

import json
import os
import re
import subprocess
import sys

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from sparseforge.core import tools
from sparseforge.core.errors import ParameterError, ToolError
from sparseforge.core.registry import blocks, get
from sparseforge.synth import flow
from sparseforge.synth.flow import critical_path, parts_rows, pnr_steps, smallest_device
from sparseforge.synth.harness import FOLD, Harness, _levels


class Wide(wiring.Component):
    """Outputs that are the inputs, registered: parity in, parity out."""

    a: In(7)
    y: Out(9)

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.y.eq(self.a * 3)
        return m


def test_fold_levels_reduce_by_four_to_one_bit():
    assert _levels(1) == [] and _levels(4) == [1] and _levels(5) == [2, 1]
    assert _levels(100) == [25, 7, 2, 1]
    harness = Harness(Wide())
    assert harness.in_width == 7 and harness.out_width == 9
    assert harness.luts == sum(_levels(9)) and FOLD == 4
    assert harness.ffs == 7 + 9 + sum(_levels(9)) + 1


def test_sout_is_the_parity_of_the_outputs_a_fixed_number_of_cycles_later():
    harness = Harness(Wide())
    seen = []

    async def bench(ctx):
        for bit in [1, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1]:
            ctx.set(harness.sin, bit)
            await ctx.tick()
            seen.append((ctx.get(harness.block.y), ctx.get(harness.sout)))

    sim = Simulator(harness)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    delay = 1 + len(_levels(9)) + 1        # output register, the fold's levels, sout
    parity = [bin(y).count("1") & 1 for y, _ in seen]
    assert [s for _, s in seen][delay:] == parity[:-delay]


def test_critical_path_names_its_ends_sources_levels_and_routing():
    report = {"critical_paths": [{"from": "c", "to": "c", "path": [
        {"type": "clk-to-q", "delay": 0.5, "from": {"cell": "block.x_FF"},
         "to": {"cell": "block.x_FF"}},
        {"type": "routing", "net": "block.x[3]", "delay": 1.0, "from": {"cell": "block.x_FF"},
         "to": {"cell": "block.l"}},
        {"type": "logic", "delay": 0.5, "from": {"cell": "block.l"}, "to": {"cell": "block.l"}},
        {"type": "routing", "net": "block.y_TRELLIS_FF_Q_DI", "delay": 2.0,
         "from": {"cell": "block.l"}, "to": {"cell": "block.y_FF"}},
        {"type": "setup", "delay": 0.0, "from": {"cell": "block.y_FF"},
         "to": {"cell": "block.y_FF"}}]}]}
    netlist = json.dumps({"modules": {"harness": {"netnames": {
        "block.x": {"attributes": {"src": "hw/a.py:3"}},
        "block.y": {"attributes": {"src": "hw/b.py:9|hw/c.py:1"}}}}}})
    path = critical_path(report, netlist)
    assert path["from"] == "block.x_FF" and path["to"] == "block.y_FF" and path["inside_block"]
    assert path["from_source"] == "hw/a.py:3" and path["to_source"] == "hw/b.py:9"
    assert path["logic_levels"] == 1 and path["delay_ns"] == 4.0
    assert path["routing_share"] == 0.75
    assert critical_path({}, netlist) is None


@pytest.mark.synth
def test_synth_json_reports_the_device_area_seeds_and_path(tmp_path):
    out = subprocess.run([sys.executable, "-m", "sparseforge", "synth", "prefix_sum",
                          "--seeds", "2", "--json"], capture_output=True, text=True,
                         env={**os.environ, "SPARSEFORGE_CACHE": str(tmp_path)})  # placed
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert list(r["fmax_seeds"]) == ["1", "2"] and r["fmax_mhz"] in r["fmax_seeds"].values()
    device = r["device"]
    assert device["name"] == "LFE5U-25F" and device["ff"] == r["ff"]
    assert device["logic_cells"] >= r["lut"]            # carry cells hold two LUT4s each
    path = r["critical_path"]
    assert path["inside_block"] and path["logic_levels"] >= 1
    assert all(re.fullmatch(r"\S+\.py:\d+", path[end]) for end in ("from_source", "to_source"))
    seconds = r["seconds"]
    assert list(seconds) == ["yosys", "yosys harness", "seed 1", "seed 2"]
    assert all(list(seconds[f"seed {n}"]) == ["pack", "place", "route"] for n in (1, 2))
    assert all(step["wall"] > 0 and step["cpu"] >= 0
               for seed in ("seed 1", "seed 2") for step in seconds[seed].values())
    assert r["pnr"] == "--placer heap --router router1"     # timing-driven: the report's


def test_a_seed_router1_cannot_route_in_its_budget_is_routed_with_router2(monkeypatch):
    """router1 is stopped once its iterations pass ``ROUTER1_BUDGET`` times its arcs, or
    its routing has taken ``ROUTER1_SECONDS`` of processor time (at either limit exactly it
    goes on; the seconds its own table logs are not what counts); that seed is placed and
    routed again with router2, its steps led by the stopped run's time, and the result
    names the seed."""
    from sparseforge.core.errors import ToolStopped

    netlist = json.dumps({"modules": {"harness": {"cells": {}, "netnames": {}}}})
    monkeypatch.setattr(flow, "_stat", lambda il, top, target, nodsp=False: ({}, netlist, ""))
    iterations, seconds = flow.ROUTER1_BUDGET * 100, float(flow.ROUTER1_SECONDS)
    # (iterations, processor seconds since routing began), each logged beside a wall time
    # of 10,000 s that would stop any of them
    last = {1: (iterations, seconds), 2: (iterations + 1, 1.0), 3: (10, seconds + 0.01)}
    calls = []

    def row(n, t):
        return f"Info: {n:>10} |       1          2 |    1     2 |       5|       0.10  {t:>9.2f}|"

    def pnr(tool, args, inputs=None, outputs=(), mark=None, stop=None):
        seed, router = int(args[args.index("--seed") + 1]), args[args.index("--router") + 1]
        calls.append((seed, router))
        if router == "router1":
            begun = 250.0                   # the processor seconds placing took
            for line, cpu in (("Info: Routing globals...", begun - 1),
                              ("Info: Routing 100 arcs.", begun),
                              (row(1, 10000.0) + "\n", begun + 0.5),
                              (row(last[seed][0], 10000.0) + "\n", begun + last[seed][1])):
                reason = stop(line, cpu)
                if reason:
                    raise ToolStopped(reason, (3.0, 2.0))
        report = {"fmax": {"clk": {"achieved": 90.0 + seed}}, "utilization": {}}
        return {"report.json": json.dumps(report), "log": "",
                "times": [(1.0, 0.5), (5.0, 2.5), (9.0, 4.0)]}

    monkeypatch.setattr(flow, "run_yowasp", pnr)
    r = flow.fmax("skid", get("skid").resolve({}), "ecp5", seeds=(1, 2, 3))
    assert calls == [(1, "router1"), (2, "router1"), (2, "router2"), (3, "router1"),
                     (3, "router2")]
    assert r["router2_seeds"] == [2, 3] and r["fmax_seeds"][2] == 92.0
    assert list(r["seconds"]["seed 2"]) == ["router1 stopped", "pack", "place", "route"]
    assert r["seconds"]["seed 2"]["router1 stopped"] == {"wall": 3.0, "cpu": 2.0}
    assert list(r["seconds"]["seed 1"]) == ["pack", "place", "route"]
    # Where the system gives no processor seconds, router1's own (last in its table) count.
    rule = flow.router1_budget()
    assert rule("Info: Routing 100 arcs.", None) is None
    assert rule(row(1, seconds) + "\n", None) is None
    assert rule(row(2, seconds + 0.01) + "\n", None) == "router1 past 600 s routing 100 arcs"


def test_a_block_that_names_router2_is_routed_with_it_on_every_seed(monkeypatch):
    """A block whose ``ROUTER`` is router2 (the accelerator) is placed and routed once a
    seed with the fallback's options, router1 never run; a router no flow has is refused
    before Yosys maps the harness."""
    netlist = json.dumps({"modules": {"harness": {"cells": {}, "netnames": {}}}})
    monkeypatch.setattr(flow, "_stat", lambda il, top, target, nodsp=False: ({}, netlist, ""))
    calls = []

    def pnr(tool, args, inputs=None, outputs=(), mark=None, stop=None):
        calls.append((int(args[args.index("--seed") + 1]), args[args.index("--router") + 1],
                      "--tmg-ripup" in args, stop))
        report = {"fmax": {"clk": {"achieved": 50.0 + len(calls)}}, "utilization": {}}
        return {"report.json": json.dumps(report), "log": "", "times": [(1.0, 0.5)] * 3}

    monkeypatch.setattr(flow, "run_yowasp", pnr)
    monkeypatch.setattr(get("skid").cls, "ROUTER", "router2", raising=False)
    r = flow.fmax("skid", get("skid").resolve({}), "ecp5", seeds=(1, 2, 3))
    assert calls == [(1, "router2", True, None), (2, "router2", True, None),
                     (3, "router2", True, None)]
    assert r["pnr"] == "--placer heap --router router2 --tmg-ripup"
    assert r["router2_seeds"] == [] and r["fmax_mhz"] == 52.0
    assert list(r["seconds"]["seed 1"]) == ["pack", "place", "route"]
    monkeypatch.setattr(get("skid").cls, "ROUTER", "router3")
    monkeypatch.setattr(flow, "_stat", lambda *a, **k: pytest.fail("Yosys ran first"))
    with pytest.raises(ParameterError, match="skid: ROUTER = 'router3'; expected one of "
                                             "router1, router2"):
        flow.fmax("skid", get("skid").resolve({}), "ecp5", seeds=(1,))
    assert get("accel").cls.ROUTER == "router2"


def test_run_yowasp_ends_a_tool_its_stop_rule_stops(monkeypatch):
    """The tool is ended on the first line its rule gives a reason for (a real process, a
    Python one standing in for nextpnr)."""
    from sparseforge.core.errors import ToolStopped

    seen = []

    def stop(line, cpu):
        seen.append(line)
        assert cpu is None or cpu >= 0
        return "enough" if line.startswith("2") else None

    monkeypatch.setattr(tools, "yowasp", lambda tool: sys.executable)
    with pytest.raises(ToolStopped, match="python: enough") as stopped:
        tools.run_yowasp("python", ["-u", "-c", "import time\nfor i in range(1, 60):\n"
                                    "    print(i, flush=True); time.sleep(0.05)"], stop=stop)
    assert seen == ["1\n", "2\n"] and stopped.value.seconds[0] < 2.5


@pytest.mark.parametrize(("log", "mapped"), [
    ("", "abc"),                                                  # an exit with no message
    ("   9: 0x14b75c8 - yosys.wasm!abc::CmdCommandSource\nCaused by:\n"
     "    wasm trap: wasm `unreachable` instruction executed", "abc"),
    ("ERROR: Module `top' not found!", None),                     # no crash: refused
])
def test_abc9_crashing_in_the_webassembly_build_is_mapped_with_abc(monkeypatch, log, mapped):
    scripts = []

    def yosys(tool, args, inputs=None, outputs=()):
        scripts.append(inputs["run.ys"])
        if len(scripts) == 1:
            raise ToolError(f"yosys failed (exit 1):\n{log}")
        return {"stat.json": json.dumps({"design": {"num_cells_by_type": {"LUT4": 3}}}),
                "top.json": "{}"}

    monkeypatch.setattr(flow, "run_yowasp", yosys)
    if mapped is None:
        with pytest.raises(ToolError, match="not found"):
            flow._stat("", "top", "ecp5")
        assert len(scripts) == 1
    else:
        assert flow._stat("", "top", "ecp5") == ({"LUT4": 3}, "{}", mapped)
        assert "abc -lut 4" in scripts[1]


def test_smallest_device_holds_the_multipliers_luts_and_block_rams():
    def result(dsp=0, lut=100, carry=0, bram=0, lutram=0):
        return {"cells": {"MULT18X18D": dsp}, "lut": lut, "carry": carry, "bram": bram,
                "lutram": lutram}

    assert smallest_device(result()) == "25k"
    assert smallest_device(result(dsp=28)) == "25k"
    assert smallest_device(result(dsp=29)) == "45k"
    assert smallest_device(result(dsp=100)) == "85k"
    assert smallest_device(result(lut=30000)) == "45k"
    assert smallest_device(result(lut=20000, carry=2000)) == "45k"     # 1.2 x 24,000
    assert smallest_device(result(bram=60)) == "45k"
    assert smallest_device(result(dsp=1000)) == "85k"                   # none holds it
    # From a block's least device up: one that fits the 25F goes on its least, one that
    # needs more than its least on the next that holds it.
    assert smallest_device(result(), least="45k") == "45k"
    assert smallest_device(result(dsp=29), least="45k") == "45k"
    assert smallest_device(result(dsp=73), least="45k") == "85k"
    assert smallest_device(result(), least="85k") == "85k"
    # A distributed RAM takes six LUT4 positions: 20,000 + 6 x 40 = 20,240, x 1.2 fits
    # the 25F's 24,288 exactly; one RAM more does not.
    assert smallest_device(result(lut=20000, lutram=40)) == "25k"
    assert smallest_device(result(lut=20000, lutram=41)) == "45k"


def test_auto_places_a_block_on_no_smaller_device_than_it_names(monkeypatch):
    """``--device auto`` asks the block for its ``LEAST_DEVICE`` (the accelerator's and
    MINT_m's: the 85F) and places on the 25F a block that names none."""
    placed = []

    class Block:
        LEAST_DEVICE = "45k"

    monkeypatch.setattr(flow, "_stat", lambda il, top, target, nodsp=False: (
        {"LUT4": 100}, None, ""))
    monkeypatch.setattr(flow, "fmax", lambda name, params, target, device, *rest: (
        placed.append(device) or {"mapper": "", "seconds": {}}))
    for component, want in ((Block(), "45k"), (object(), "25k")):
        monkeypatch.setattr(flow, "rtlil_text", lambda name, params, c=component: ("", {}, c))
        flow.synthesize("skid", {}, device="auto")
        assert placed[-1] == want
    assert get("accel").cls.LEAST_DEVICE == get("mint_merged").cls.LEAST_DEVICE == "85k"


def test_a_block_past_the_device_is_refused_before_placement():
    """The LUT4 positions its distributed RAMs take count: the accelerator's Eureka build
    (36,180 LUT4s and carry cells' positions, 2,760 distributed RAMs) fills 122% of the
    45F when placed, though its logic alone would fit."""
    eureka = {"block": "accel", "params": {"engine": "eureka"}, "cells": {"MULT18X18D": 32},
              "lut": 32912, "carry": 1634, "bram": 0, "lutram": 2760}
    with pytest.raises(ParameterError, match=r"52,740 lut of its 43,848 on the LFE5U-45F; "
                                             r"--device 85k holds it"):
        flow.check_fits(eureka, "45k")
    flow.check_fits(eureka, "85k")
    assert smallest_device(eureka) == "85k"
    fits = dict(eureka, lut=43848 - 2 * 1634 - 6 * 2760 + 1)
    with pytest.raises(ParameterError, match="43,849 lut"):
        flow.check_fits(fits, "45k")
    flow.check_fits(dict(fits, lut=fits["lut"] - 1), "45k")             # the last that fits


def test_parts_rows_count_each_part_by_its_instances():
    """The Tensaurus composite's parts as the paper's Table 2 lists them, each synthesized
    as the composite builds it: a 2 x 3 array of VLEN 4 has 6 PEs of VLEN 4 and 3
    scratchpads of 2 ports; shares are of the parts' total logic cells (LUT4s and two per
    carry cell)."""
    seen = []

    def synth(unit):
        seen.append((unit.block_name, unit.block_params))
        cells = {"tensaurus_pe": 100, "tensaurus_spm": 50, "tensaurus_msu": 200,
                 "tensaurus_tlu": 30, "tensaurus_mlu": 10}[unit.block_name]
        return {"lut": cells - 2, "carry": 1,
                "bram": 2 if unit.block_name == "tensaurus_spm" else 0}

    composite = {"block": "tensaurus", "params": get("tensaurus").resolve(
        {"rows": 2, "cols": 3, "vlen": 4})}
    results = [composite, {"block": "tensaurus_pe", "params": {"vlen": 1}}]
    (table,) = parts_rows(results, synth)
    rows = {row["part"]: row for row in table["parts"]}
    assert [rows[p]["instances"] for p in ("PE", "SPM", "MSU", "TLU", "MLU")] == [6, 3, 1, 1, 1]
    assert rows["PE"]["params"]["vlen"] == 4 and rows["SPM"]["params"]["ports"] == 2
    assert rows["PE"]["logic_cells"] == 600 and rows["SPM"]["bram"] == 6
    assert rows["MSU"]["share"] == pytest.approx(200 / (600 + 150 + 200 + 30 + 10))
    assert rows["PE"]["paper_share"] == 27.2
    assert len(seen) == 5                                   # one synthesis a part
    assert parts_rows(results[1:], synth) == []             # no composite, no table
    assert "whole" not in table                             # its own area not given


def test_a_composite_whose_build_lists_no_parts_prints_no_table(monkeypatch, capsys):
    from sparseforge.commands.synth import _parts

    monkeypatch.setattr(get("tensaurus").cls, "PARTS", ())
    composite = {"block": "tensaurus", "params": get("tensaurus").resolve({})}
    (table,) = parts_rows([composite], lambda unit: pytest.fail("no part to measure"))
    assert table["parts"] == []
    _parts(table)
    assert capsys.readouterr().out == ""


def test_the_accelerators_parts_follow_its_engine():
    """The accelerator lists its units by engine, the unregistered ones (its sequencer,
    the converter's feed) measured from their own RTLIL, and sets its whole logic
    beside them; a part's area is the unit the build made (its PE rows, its Tailor's
    depth)."""
    def synth(unit):
        return {"lut": 10 if type(unit).__name__ == "Tensaurus" else 4, "carry": 1, "bram": 0}

    params = get("accel").resolve({"pes": 2, "depth": 256})
    (table,) = parts_rows([{"block": "accel", "params": params, "lut": 60, "carry": 5}],
                          synth)
    rows = {row["part"]: row for row in table["parts"]}
    assert list(rows) == ["AXI master", "sequencer", "feed", "MINT converter", "Tailor",
                          "Tensaurus"]
    assert rows["sequencer"]["block"] == "AccelControl" and rows["sequencer"]["params"] is None
    assert rows["Tensaurus"]["params"]["rows"] == 2 and rows["Tensaurus"]["logic_cells"] == 12
    assert rows["Tensaurus"]["share"] == pytest.approx(12 / (5 * 6 + 12))
    assert table["whole"] == 70
    eureka = {"block": "accel", "params": get("accel").resolve({"engine": "eureka"})}
    (table,) = parts_rows([eureka], synth)
    assert [row["part"] for row in table["parts"]] == ["AXI master", "Eureka"]


def test_a_unit_without_parameters_of_its_own_is_measured_as_built():
    """A unit a composite built with arguments the registry cannot rebuild it from is
    synthesized from its own RTLIL: the same count as the registered block's."""
    from sparseforge.hw.stream_units import Skid
    from sparseforge.synth.flow import unit_area

    registered, built = Skid(width=12), Skid(12)
    assert registered.block_params == {"width": 12} and built.block_params is None
    area, again = unit_area(registered), unit_area(built)
    assert area["ff"] > 12
    assert all(area[k] == again[k] for k in ("lut", "ff", "carry", "bram"))


@pytest.mark.soak
@pytest.mark.synth
def test_synth_of_a_composite_prints_its_parts_as_it_builds_them():
    """``synth tensaurus`` in a configuration of one PE of VLEN 3: the breakdown counts
    one PE, one scratchpad of one port, and each at the composite's VLEN."""
    out = subprocess.run([sys.executable, "-m", "sparseforge", "synth", "tensaurus", "-p",
                          "rows=1", "-p", "cols=1", "-p", "vlen=3", "-p", "tlen=1", "-p",
                          "spm_rows=2", "-p", "out_rows=2", "-p", "banks=1", "--no-fmax",
                          "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (table,) = json.loads(out.stdout)["parts"]
    rows = {row["part"]: row for row in table["parts"]}
    assert [rows[p]["instances"] for p in ("PE", "SPM", "MSU", "TLU", "MLU")] == [1] * 5
    assert rows["PE"]["params"]["vlen"] == rows["SPM"]["params"]["vlen"] == 3
    assert sum(row["share"] for row in rows.values()) == pytest.approx(1)


def test_synth_keeps_each_run_and_repeats_none_with_the_same_design_device_and_seeds(
        monkeypatch, tmp_path):
    """``synth`` (a block or the report) takes a kept result where the design, target,
    device and seeds are the same, and runs again where any differs (here a stand-in
    flow counts the runs)."""
    from sparseforge.commands import synth

    runs = []

    def flow(name, params, target, with_fmax, device, seeds, jobs, quick):
        runs.append((name, params, device, seeds, quick))
        return {"block": name, "params": params, "fmax_mhz": 100.0 + len(runs),
                "fmax_seeds": {seed: 100.0 for seed in seeds}}

    monkeypatch.setenv("SPARSEFORGE_CACHE", str(tmp_path))
    monkeypatch.setattr(synth, "synthesize", flow)
    first = synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (1, 2, 3))
    again = synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (1, 2, 3))
    assert not first["cached"] and again["cached"] and len(runs) == 1
    assert again["fmax_mhz"] == first["fmax_mhz"] == 101.0
    assert list(again["fmax_seeds"]) == ["1", "2", "3"]     # as JSON has it, run or kept
    synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (1,))
    synth.kept("buffet", {"depth": 16}, "ecp5", "45k", (1, 2, 3))
    synth.kept("buffet", {"depth": 32}, "ecp5", "auto", (1, 2, 3))
    assert synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (1, 2, 3),
                      with_fmax=False)["fmax_mhz"] == 101.0     # the placed result serves
    synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (), with_fmax=False)
    assert len(runs) == 5
    assert synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (1, 2, 3), jobs=2)["cached"]
    quick = synth.kept("buffet", {"depth": 16}, "ecp5", "auto", (1, 2, 3), quick=True)
    assert not quick["cached"] and runs[-1][-1] is True and len(runs) == 6


def test_the_report_places_every_design_with_the_jobs_asked(monkeypatch, capsys):
    """``synth --report --jobs J`` hands each design J (the design list once shadowed the
    count, which only a run not kept would show)."""
    from sparseforge.cli import main
    from sparseforge.commands import synth

    calls = []

    def kept(name, params, target, device, seeds, with_fmax=True, jobs=1, quick=False):
        calls.append((name, jobs, seeds))
        return {"block": name, "params": params, "target": target}

    monkeypatch.setattr(synth, "kept", kept)
    monkeypatch.setattr(synth, "merged_rows", lambda results, run: [])
    monkeypatch.setattr(synth, "parts_rows", lambda results: [])
    main(["synth", "--report", "--jobs", "2", "--seeds", "2"])
    designs = sum(len(b.cls.REPORT) for b in blocks().values())
    assert len(calls) == designs and {(j, s) for _, j, s in calls} == {(2, (1, 2))}
    assert capsys.readouterr().out.count("| buffet |") == 2


def test_the_report_says_why_each_row_below_100_mhz_is():
    """A row below 100 MHz carries its block's ``Clock:`` (or ``Timing:``) paragraph (the
    class's docstring, else the module's), or says its docstring gives none; a row at 100
    MHz is not listed."""
    from sparseforge.commands.synth import below_target, clock_note, markdown

    path = {"from": "a", "from_source": "hw/x.py:1", "to": "b", "to_source": "hw/x.py:2",
            "inside_block": True, "logic_levels": 7, "routing_share": 0.8}
    rows = [{"block": "rlc_to_coo", "params": {"lanes": 8}, "fmax_mhz": 99.9,
             "critical_path": path},
            {"block": "eureka_mac", "params": {}, "fmax_mhz": 50.0},
            {"block": "skid", "params": {"width": 32}, "fmax_mhz": 99.0},
            {"block": "buffet", "params": {}, "fmax_mhz": 100.0},
            {"block": "queue", "params": {}}]                    # not placed
    slow = below_target(rows)
    assert [s["block"] for s in slow] == ["rlc_to_coo", "eureka_mac", "skid"]
    assert slow[0]["why"].startswith("Clock: above 100 MHz at both") and "\n" not in slow[0]["why"]
    assert slow[1]["why"] == clock_note("eureka_mac") and "fp16" in slow[1]["why"]  # module's
    assert slow[2]["why"] is None
    assert clock_note("tailor").startswith("Timing: every acceptance")
    text = markdown(rows)
    assert "- `rlc_to_coo` lanes=8: 99.9 MHz, path hw/x.py:1 -> hw/x.py:2, 7 levels" in text
    assert "- `skid` width=32: 99.0 MHz. Its docstring gives no reason." in text
    assert "`buffet`" not in text and "Below" not in markdown(rows[3:])


def test_synth_quick_is_refused_for_the_report():
    out = subprocess.run([sys.executable, "-m", "sparseforge", "synth", "--report", "--quick"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "drop --quick" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_pnr_steps_split_a_run_at_its_checksums():
    """pack ends at the first checksum, place at the second, route at the end of the run;
    a checksum after routing changes nothing; a run that logged fewer is an error."""
    times = [(2.0, 0.5), (100.0, 30.5), (160.0, 50.0)]
    steps = pnr_steps(times)
    assert steps == {"pack": {"wall": 2.0, "cpu": 0.5}, "place": {"wall": 98.0, "cpu": 30.0},
                     "route": {"wall": 60.0, "cpu": 19.5}}
    assert pnr_steps([*times[:2], (159.0, 49.0), times[2]]) == steps
    assert pnr_steps([(2.0, None), (100.0, 30.5), (160.0, 50.0)])["pack"]["cpu"] is None
    assert pnr_steps([(2.0, None), (100.0, 30.5), (160.0, 50.0)])["place"]["cpu"] is None
    with pytest.raises(ToolError, match="1 checksums"):
        pnr_steps([(2.0, 0.5), (160.0, 50.0)])


def test_run_yowasp_times_each_marked_line_and_the_end(monkeypatch, tmp_path):
    """A stand-in tool logs two marked lines between others; the runner gives the time at
    each and at the end, in order, beside its log and outputs."""
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho one\necho 'Info: Checksum: 0x1'\nsleep 0.2\n"
                    "echo 'Info: Checksum: 0x2'\necho done > out.txt\n")
    tool.chmod(0o755)
    monkeypatch.setattr(tools, "yowasp", lambda name: str(tool))
    out = tools.run_yowasp("x", [], outputs=["out.txt"], mark=flow._CHECKSUM)
    assert out["out.txt"] == "done\n" and "one\n" in out["log"]
    (first, _), (second, _), (end, cpu) = out["times"]
    assert first < second - 0.15 and second <= end and cpu is not None
    assert len(tools.run_yowasp("x", [])["times"]) == 1            # no mark: the end alone


def test_fmax_places_timing_driven_unless_quick_and_times_every_step(monkeypatch):
    """The report's runs place with HeAP timing-driven and route with router1, the clock
    on the device's clock pin; ``quick`` adds ``--no-tmdriv`` and says so in ``pnr``; each
    seed's steps and the harness's Yosys run are timed; ``jobs`` places seeds at once with
    the same result."""
    netlist = json.dumps({"modules": {"harness": {"cells": {}, "netnames": {}}}})
    monkeypatch.setattr(flow, "_stat", lambda il, top, target, nodsp=False: ({}, netlist, ""))
    calls, lpfs = [], []

    def pnr(tool, args, inputs=None, outputs=(), mark=None, stop=None):
        seed = int(args[args.index("--seed") + 1])
        calls.append(args)
        lpfs.append(inputs[args[args.index("--lpf") + 1]])
        report = {"fmax": {"clk": {"achieved": 100.0 + seed}}, "utilization": {}}
        return {"report.json": json.dumps(report), "log": "",
                "times": [(1.0, 0.5), (5.0, 2.5), (9.0 + seed, 4.0)]}

    monkeypatch.setattr(flow, "run_yowasp", pnr)
    params = get("skid").resolve({})
    timed = flow.fmax("skid", params, "ecp5", seeds=(1, 2, 3))
    assert timed["fmax_mhz"] == 102.0 and timed["pnr"] == "--placer heap --router router1"
    assert timed["router2_seeds"] == []
    assert all("--no-tmdriv" not in args and "router1" in args for args in calls)
    assert list(timed["seconds"]) == ["yosys harness", "seed 1", "seed 2", "seed 3"]
    assert timed["seconds"]["seed 3"]["route"] == {"wall": 7.0, "cpu": 1.5}
    calls.clear()
    quick = flow.fmax("skid", params, "ecp5", seeds=(1, 2, 3), jobs=2, quick=True)
    assert len(calls) == 3 and all("--no-tmdriv" in args for args in calls)
    assert quick["pnr"].endswith("--no-tmdriv")
    assert quick["fmax_seeds"] == timed["fmax_seeds"] == {1: 101.0, 2: 102.0, 3: 103.0}
    # the clock on the device's primary clock pin: unconstrained, the router may not reach
    # the global network from where nextpnr puts it
    assert set(lpfs) == {'LOCATE COMP "clk" SITE "P6";\n'}
    flow.fmax("skid", params, "ecp5", device="85k", seeds=(1,))
    assert lpfs[-1] == 'LOCATE COMP "clk" SITE "G2";\n'


def test_time_text_gives_yosys_then_the_slowest_seeds_steps():
    from sparseforge.commands.synth import _time_text

    step = lambda wall, cpu: {"wall": wall, "cpu": cpu}    # noqa: E731
    seconds = {"yosys": step(30.0, 20.0), "yosys harness": step(35.0, 22.0),
               "seed 1": {"pack": step(2, 1), "place": step(400, 100), "route": step(60, 30)},
               "seed 2": {"pack": step(2, 1), "place": step(500, 120), "route": step(90, None)}}
    assert _time_text(seconds) == ("Yosys 65, pack 2, place 500, route 90 s (the slowest "
                                   "seed's; CPU 42, 1, 120, ? s)")
    assert _time_text({"yosys": step(3.0, 2.0)}) == "Yosys 3 s (CPU 2 s)"
    assert _time_text(None) == ""


def test_auto_moves_to_the_next_device_where_nextpnr_cannot_place(monkeypatch):
    """A block whose counts fit the 25F but whose flip-flops nextpnr cannot legalize there
    (16-lane Dense to CSF: 75% of the 25F's FFs) is placed on the 45F; any other failure,
    and one on a device the user named, is the user's error as nextpnr gave it."""
    tried = []

    def fake(name, params, target, device, *rest):
        tried.append(device)
        if device in failing:
            raise ToolError(f"nextpnr-ecp5 failed (exit 125):\nERROR: {message}")
        return {"mapper": "", "seconds": {}, "device": {"name": device}}

    monkeypatch.setattr(flow, "_stat", lambda il, top, target, nodsp=False: (
        {"LUT4": 100}, None, ""))
    monkeypatch.setattr(flow, "rtlil_text", lambda name, params: ("", {}, object()))
    monkeypatch.setattr(flow, "fmax", fake)
    message, failing = flow.UNPLACED + " for all cells", {"25k"}
    assert flow.synthesize("skid", {}, device="auto")["device"] == {"name": "45k"}
    assert tried == ["25k", "45k"]
    failing = {"25k", "45k", "85k"}
    with pytest.raises(ToolError, match=flow.UNPLACED):
        flow.synthesize("skid", {}, device="auto")
    assert tried[2:] == ["25k", "45k", "85k"]
    failing = {"25k"}
    with pytest.raises(ToolError, match=flow.UNPLACED):
        flow.synthesize("skid", {}, device="25k")
    message = "Failed to route"
    with pytest.raises(ToolError, match="Failed to route"):
        flow.synthesize("skid", {}, device="auto")
    assert tried[5:] == ["25k", "25k"]
