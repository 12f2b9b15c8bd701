"""Synthesis with Yosys and place-and-route with nextpnr (YoWASP builds).

Area comes from the block alone (``synth`` for a generic gate count,
``synth_ice40``/``synth_ecp5`` for FPGA cells). Fmax comes from nextpnr on
the block inside :class:`~sparseforge.synth.harness.Harness`, so wide blocks
fit the package; the harness's own flip-flops are counted separately.
"""

import json
import re

from amaranth.back import rtlil

from ..errors import ParameterError, ToolError
from ..export import rtlil_text
from ..registry import get
from ..tools import run_yowasp, status
from .harness import Harness

TARGETS = {
    "generic": {"synth": "synth -top {top}", "pnr": None},
    "ice40": {"synth": "synth_ice40 -top {top} -json {top}.json",
              "pnr": ("nextpnr-ice40", ["--up5k", "--package", "sg48",
                                        "--pcf-allow-unconstrained"])},
    "ecp5": {"synth": "synth_ecp5 -top {top} -json {top}.json",
             "pnr": ("nextpnr-ecp5", ["--25k", "--package", "CABGA256",
                                      "--lpf-allow-unconstrained"])},
}

# Cell-name patterns that make up each resource on each target.
_RESOURCES = {
    "ice40": {"lut": r"SB_LUT4", "ff": r"SB_DFF\w*", "bram": r"SB_RAM40_4K\w*",
              "carry": r"SB_CARRY"},
    "ecp5": {"lut": r"LUT4", "ff": r"TRELLIS_FF", "bram": r"DP16KD|PDPW16KD",
             "lutram": r"TRELLIS_DPR16X4", "carry": r"CCU2C"},
    "generic": {},
}


def _stat(il, top, target):
    """Yosys's cells by type and, on an FPGA target, the netlist for nextpnr.

    ABC9, the LUT mapper of ``synth_ecp5``, crashes on some netlists in the
    WebAssembly build (an exit with no message); those are mapped again with
    ABC (``abc -lut 4``) in its place, which the third return value says.
    """
    outputs = ["stat.json"] + ([f"{top}.json"] if target != "generic" else [])
    synth = TARGETS[target]["synth"].format(top=top)
    scripts = [synth]
    if target == "ecp5":
        scripts.append(f"synth_ecp5 -top {top} -run begin:map_luts\n"
                       "techmap -map +/lattice/latches_map.v\nabc -lut 4\nclean\n"
                       f"synth_ecp5 -top {top} -run map_cells: -json {top}.json")
    for n, body in enumerate(scripts):
        script = f"read_rtlil {top}.il\n{body}\ntee -q -o stat.json stat -json\n"
        try:
            out = run_yowasp("yosys", ["-q", "-s", "run.ys"],
                             inputs={f"{top}.il": il, "run.ys": script}, outputs=outputs)
            break
        except ToolError as exc:
            silent = not str(exc).strip().split(":")[-1].strip()
            if not silent or n + 1 == len(scripts):
                raise
    stat = json.loads(out["stat.json"])
    return stat["design"]["num_cells_by_type"], out.get(f"{top}.json"), "abc" if n else ""


def _count(cells, pattern):
    return sum(n for cell, n in cells.items() if re.fullmatch(r"\$?_?(" + pattern + r")_?", cell))


def fmax(name, params, target):
    """Fmax in MHz from nextpnr for the block in its harness, the harness's FF count, and
    the LUT mapper if ABC9 crashed on the harness (``"abc"``, else ``""``)."""
    tool, args = TARGETS[target]["pnr"]
    status(f"{name}: placing and routing on {target} (seconds to minutes)...")
    harness = Harness(get(name).cls(**params))
    il = rtlil.convert(harness, name="harness", ports=[harness.sin, harness.sout],
                       emit_src=False)
    cells, netlist, mapper = _stat(il, "harness", target)
    out = run_yowasp(tool, [*args, "--json", "harness.json", "--freq", "50",
                            "--timing-allow-fail", "-q", "--report", "report.json"],
                     inputs={"harness.json": netlist}, outputs=["report.json"])
    report = json.loads(out["report.json"])
    clocks = report.get("fmax", {})
    mhz = min((c["achieved"] for c in clocks.values()), default=None)
    return mhz, _count(cells, _RESOURCES[target]["ff"]), mapper


def synthesize(name, params=None, target="ecp5", with_fmax=True):
    """Area (and, on FPGA targets, Fmax) of block ``name`` with ``params``.

    Returns a dict: ``block``, ``params``, ``target``, ``cells`` (by type),
    ``cells_total``, the target's resources (``lut``, ``ff``, ``bram``, ...),
    and ``fmax_mhz`` with ``harness_ff`` where place-and-route ran; ``noabc9``
    lists the mappings (``area``, ``fmax``) that ABC9 crashed on and ABC did;
    ``latency`` in cycles for a pipelined block that states one (its
    ``latency`` attribute; such blocks take one input per cycle).
    """
    if target not in TARGETS:
        raise ParameterError(f"target {target!r}: expected one of {', '.join(TARGETS)}")
    il, resolved, component = rtlil_text(name, params)
    cells, _, mapper = _stat(il, name, target)
    result = {"block": name, "params": resolved, "target": target,
              "cells_total": sum(cells.values()), "cells": cells,
              "noabc9": ["area"] if mapper else [],
              "latency": getattr(component, "latency", None)}
    for resource, pattern in _RESOURCES[target].items():
        result[resource] = _count(cells, pattern)
    if with_fmax and TARGETS[target]["pnr"]:
        result["fmax_mhz"], result["harness_ff"], mapper = fmax(name, resolved, target)
        result["noabc9"] += ["fmax"] if mapper else []
    return result


def logic(result):
    """A synthesis result's logic as the device sees it: LUT4s plus two per carry cell."""
    return result["lut"] + 2 * result["carry"]


def merged_rows(results):
    """For each block in ``results`` that declares ``MERGES`` (the separate blocks it
    replaces) and ``MERGES_PAPER`` (the paper's figure), its logic beside theirs in the
    same results: their first report configuration each."""
    from ..registry import get

    first = {}
    for r in results:
        first.setdefault(r["block"], r)
    rows = []
    for name, r in first.items():
        cls = get(name).cls
        merges = getattr(cls, "MERGES", None)
        if merges is None or not all(b in first for b in merges):
            continue
        separate = sum(logic(first[b]) for b in merges)
        rows.append({"block": name, "logic": logic(r), "separate": list(merges),
                     "separate_logic": separate, "ratio": logic(r) / separate,
                     "paper": cls.MERGES_PAPER})
    return rows
