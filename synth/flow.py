"""Synthesis with Yosys and place-and-route with nextpnr (YoWASP builds).

Area comes from the block alone (``synth`` for a generic gate count,
``synth_ice40``/``synth_ecp5`` for FPGA cells). Fmax comes from nextpnr on
the block inside :class:`~sparseforge.synth.harness.Harness`, so wide blocks
fit the package; the harness's own flip-flops are counted separately.
"""

import contextlib
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from amaranth.back import rtlil

from ..core.errors import ParameterError, ToolError, ToolStopped
from ..core.export import rtlil_text
from ..core.registry import get
from ..core.tools import processor_seconds, run_yowasp, status
from . import outreg
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


def _stat(il, top, target, nodsp=False):
    """Yosys's cells by type and, on an FPGA target, the netlist for nextpnr (``nodsp``:
    multipliers in LUTs on the ECP5, ``synth_ecp5 -nodsp``).

    ABC9, the LUT mapper of ``synth_ecp5``, crashes on some netlists in the
    WebAssembly build (an exit with no message, or a WebAssembly trap); those are mapped
    again with ABC (``abc -lut 4``) in its place, which the third return value says.
    """
    outputs = ["stat.json"] + ([f"{top}.json"] if target != "generic" else [])
    nodsp = " -nodsp" if nodsp and target == "ecp5" else ""
    scripts = [TARGETS[target]["synth"].format(top=top) + nodsp]
    if target == "ecp5":
        scripts.append(f"synth_ecp5 -top {top}{nodsp} -run begin:map_luts\n"
                       "techmap -map +/lattice/latches_map.v\nabc -lut 4\nclean\n"
                       f"synth_ecp5 -top {top} -run map_cells: -json {top}.json")
    for n, body in enumerate(scripts):
        script = f"read_rtlil {top}.il\n{body}\ntee -q -o stat.json stat -json\n"
        try:
            out = run_yowasp("yosys", ["-q", "-s", "run.ys"],
                             inputs={f"{top}.il": il, "run.ys": script}, outputs=outputs)
            break
        except ToolError as exc:
            crashed = not str(exc).strip().split(":")[-1].strip() or "wasm trap" in str(exc)
            if not crashed or n + 1 == len(scripts):
                raise
    stat = json.loads(out["stat.json"])
    return stat["design"]["num_cells_by_type"], out.get(f"{top}.json"), "abc" if n else ""


@contextlib.contextmanager
def timed(seconds, step):
    """Put the time the block takes into ``seconds[step]``: ``wall`` seconds and ``cpu``,
    the tools' processor seconds (what a machine others share does not stretch)."""
    wall, cpu = time.monotonic(), processor_seconds(own=False)
    yield
    seconds[step] = {"wall": round(time.monotonic() - wall, 1),
                     "cpu": round(processor_seconds(own=False) - cpu, 1)}


def pnr_steps(times):
    """nextpnr's :data:`PNR_STEPS` from the ``(wall, cpu)`` times of a run at its checksum
    lines and at its end (:func:`~sparseforge.core.tools.run_yowasp`'s ``times``): each
    step's ``wall`` and ``cpu`` seconds (``cpu`` None where the system did not say)."""
    if len(times) < len(PNR_STEPS):
        raise ToolError(f"nextpnr logged {len(times) - 1} checksums, expected one after "
                        f"each of {', '.join(PNR_STEPS[:-1])}")
    ends = [*times[:len(PNR_STEPS) - 1], times[-1]]
    steps, before = {}, (0.0, 0.0)
    for step, end in zip(PNR_STEPS, ends, strict=True):
        cpu = None if None in (end[1], before[1]) else round(end[1] - before[1], 1)
        steps[step] = {"wall": round(end[0] - before[0], 1), "cpu": cpu}
        before = end
    return steps


def _resources(cells, target):
    """The ``target``'s resources (:data:`_RESOURCES`) in Yosys's cells by type."""
    return {resource: _count(cells, pattern)
            for resource, pattern in _RESOURCES[target].items()}


def _count(cells, pattern):
    return sum(n for cell, n in cells.items() if re.fullmatch(r"\$?_?(" + pattern + r")_?", cell))


DEVICES = {"25k": ("--25k", "CABGA256", "P6"), "45k": ("--45k", "CABGA256", "P6"),
           "85k": ("--85k", "CABGA381", "G2")}
"""The ECP5 devices (LFE5U-25F, -45F, -85F) ``--device`` places on, with a package and
the primary clock input (PCLK) pin the harness's clock is put on (the icesugar-pro's and
the ULX3S's clock pins): left to nextpnr, the clock can land on a pin the router then fails
to route to the global clock network."""
CAPACITY = {"25k": {"lut": 24288, "dsp": 28, "bram": 56},
            "45k": {"lut": 43848, "dsp": 72, "bram": 108},
            "85k": {"lut": 83640, "dsp": 156, "bram": 208}}
"""What each ECP5 holds: LUT4s, 18x18 multipliers, block RAMs."""
SEEDS = (1, 2, 3)
"""nextpnr seeds; Fmax is their median."""
PNR_OPTIONS = ("--placer", "heap", "--router", "router1")
"""How nextpnr places and routes: HeAP's analytic placement, timing-driven, so the Fmax
is a real one; router1, as router2 left the converters, the Tailor and the accelerator a
fifth to a third less Fmax on the same placements. Where router1's rip-up does not
converge (:data:`ROUTER1_BUDGET`), the seed is placed again and routed with
:data:`FALLBACK`."""
ROUTER1_BUDGET = 2
"""router1 is stopped once its iterations pass this many times the arcs it set out to
route (a design it routes takes about 1.4 times: a converter, the accelerator on the
85F), or once its routing has taken :data:`ROUTER1_SECONDS`: one congested past what its
rip-up resolves runs on for tens of minutes (the accelerator on the 45F)."""
ROUTER1_SECONDS = 600
"""router1's longest routing in processor seconds before :data:`FALLBACK`."""
FALLBACK = ("--placer", "heap", "--router", "router2", "--tmg-ripup")
"""The options a seed router1 gave up on is placed and routed with, and a block that names
router2 as its ``ROUTER``: router2 converges where router1's rip-up does not, and its
timing-driven rip-up routes again the arcs that miss the clock it is given."""
ROUTERS = {"router1": PNR_OPTIONS, "router2": FALLBACK}
"""A block's ``ROUTER`` (router1 unless it names one) and its options: router2 for a block
router1's rip-up leaves unrouted on most seeds, rather than a budget spent on each first."""
QUICK = ("--no-tmdriv",)
"""Added for a quick look (``quick=True``): placement by wirelength alone, its Fmax no
timing-driven placement's, so never the report's."""
PNR_STEPS = ("pack", "place", "route")
"""nextpnr's steps, the first two each ended by the checksum line it logs there
(:data:`_CHECKSUM`), the last by the end of the run."""
_CHECKSUM = r"^Info: Checksum: 0x"
_DEVICE_VIEW = {"logic_cells": "TRELLIS_COMB", "ff": "TRELLIS_FF", "bram": "DP16KD",
                "dsp": "MULT18X18D", "lutram": "TRELLIS_RAMW"}


ROOT = Path(__file__).resolve().parents[1]


def _source(netnames, net):
    """``file:line`` of the signal behind nextpnr net ``net`` (the longest prefix of its
    name that Amaranth recorded a source for), relative to the project."""
    base = net.split("[")[0] if net else ""
    while base:
        src = netnames.get(base, {}).get("attributes", {}).get("src")
        if src:
            path, _, line = src.split("|")[0].rpartition(":")
            with contextlib.suppress(ValueError):
                path = str(Path(path).resolve().relative_to(ROOT))
            return f"{path}:{line}"
        base = base.rpartition("_")[0]
    return None


def critical_path(report, netlist):
    """The worst path of nextpnr's ``report``: start and end cells, the signals there
    (with their source lines where known), logic levels, delay and routing's share."""
    paths = report.get("critical_paths") or []
    if not paths:
        return None
    segments = paths[0]["path"]
    delay = sum(s["delay"] for s in segments)
    routing = sum(s["delay"] for s in segments if s["type"] == "routing")
    nets = [s["net"] for s in segments if s["type"] == "routing" and s.get("net")]
    netnames = json.loads(netlist)["modules"]["harness"]["netnames"]
    start, end = segments[0]["from"]["cell"], segments[-1]["to"]["cell"]
    return {"from": start, "to": end,
            "from_signal": nets[0] if nets else None, "to_signal": nets[-1] if nets else None,
            "from_source": _source(netnames, nets[0]) if nets else None,
            "to_source": _source(netnames, nets[-1]) if nets else None,
            "inside_block": start.startswith("block.") and end.startswith("block."),
            "logic_levels": sum(s["type"] == "logic" for s in segments),
            "delay_ns": delay, "routing_share": routing / delay if delay else 0.0}


def achieved_mhz(report):
    """The slowest clock's achieved frequency in a nextpnr ``--report``, or None."""
    return min((c["achieved"] for c in report.get("fmax", {}).values()), default=None)


def router1_budget():
    """A ``stop`` rule for :func:`~sparseforge.core.tools.run_yowasp`: a reason once
    router1's progress table (iterations first) passes :data:`ROUTER1_BUDGET` times the
    arcs its log says it routes, or its routing has taken :data:`ROUTER1_SECONDS` of
    processor time (the tool's own, from the line that starts routing, so a machine
    others share stops no run sooner; where the system does not say, the seconds router1
    logs, last in its table)."""
    arcs = start = None

    def stop(line, cpu):
        nonlocal arcs, start
        found = re.match(r"Info: Routing (\d+) arcs", line)
        if found:
            arcs, start = int(found[1]), cpu
        row = re.match(r"Info:\s+(\d+) \|.*\s([\d.]+)\|$", line.rstrip())
        if not (arcs and row):
            return None
        if int(row[1]) > ROUTER1_BUDGET * arcs:
            return f"router1 past {ROUTER1_BUDGET} x its {arcs} arcs in iterations"
        spent = float(row[2]) if None in (cpu, start) else cpu - start
        if spent > ROUTER1_SECONDS:
            return f"router1 past {ROUTER1_SECONDS} s routing {arcs} arcs"
        return None
    return stop


def fmax(name, params, target, device="25k", seeds=SEEDS, jobs=1, quick=False):
    """Place and route the block in its :class:`~.harness.Harness`, once per seed, ``jobs``
    seeds at once (on the ECP5, with the block's registers behind its block RAMs folded
    into the RAMs' output registers, as :mod:`.outreg` says), with :data:`PNR_OPTIONS`
    (and :data:`QUICK` where ``quick``); a seed whose router1 passes its budget
    (:func:`router1_budget`) is placed and routed again with :data:`FALLBACK`, the
    options a block whose ``ROUTER`` is router2 is placed with (:data:`ROUTERS`).

    Returns a dict: ``fmax_mhz`` (the median over ``seeds``), ``fmax_seeds``, the
    harness's own ``harness_ff`` and ``harness_lut``, ``device`` (on ECP5: the block's
    utilization as nextpnr sees it, the harness's share taken out: ``logic_cells``, LUT4
    positions including those of carry cells, ``ff``, ``bram``, ``dsp``, ``lutram``),
    ``critical_path`` of the median seed's run, ``mapper`` (``"abc"`` if ABC9 crashed on
    the harness), ``seconds``: Yosys's on the harness and each seed's nextpnr steps
    (:func:`pnr_steps`), and ``pnr``, the options nextpnr ran with, ``router2_seeds`` the
    seeds routed with :data:`FALLBACK` instead."""
    tool, args = TARGETS[target]["pnr"]
    router = getattr(get(name).cls, "ROUTER", "router1")
    if router not in ROUTERS:
        raise ParameterError(f"{name}: ROUTER = {router!r}; expected one of "
                             f"{', '.join(ROUTERS)}")
    inputs = {}
    if target == "ecp5":
        if device not in DEVICES:
            raise ParameterError(f"--device {device}: expected one of {', '.join(DEVICES)}")
        flag, package, clock = DEVICES[device]
        args = [flag, "--package", package, "--lpf", "harness.lpf", "--lpf-allow-unconstrained"]
        inputs["harness.lpf"] = f'LOCATE COMP "clk" SITE "{clock}";\n'
    status(f"{name}: placing and routing on {target} with {len(seeds)} seeds "
           "(seconds to minutes)...")
    harness = Harness(get(name).cls(**params))
    il = rtlil.convert(harness, name="harness", ports=[harness.sin, harness.sout],
                       emit_src=True)
    seconds = {}
    with timed(seconds, "yosys harness"):
        _, netlist, mapper = _stat(il, "harness", target)
    if target == "ecp5":
        netlist, _ = outreg.absorb(netlist, "harness", inside="block.")

    extra = list(QUICK if quick else ())

    def nextpnr(seed, options, stop=None):
        return run_yowasp(tool, [*args, *options, *extra, "--json", "harness.json", "--freq",
                                 "50", "--seed", str(seed), "--timing-allow-fail", "--report",
                                 "report.json"],
                          inputs={**inputs, "harness.json": netlist}, outputs=["report.json"],
                          mark=_CHECKSUM, stop=stop)

    def place(seed):
        """``(steps, out)``: :data:`FALLBACK` for a router2 block; else router1 within its
        budget, else :data:`FALLBACK` (its steps then led by ``router1 stopped``, the time
        router1's run took)."""
        if router == "router2":
            out = nextpnr(seed, FALLBACK)
            return pnr_steps(out["times"]), out
        try:
            out = nextpnr(seed, PNR_OPTIONS, router1_budget())
            return pnr_steps(out["times"]), out
        except ToolStopped as stopped:
            out = nextpnr(seed, FALLBACK)
            wall, cpu = stopped.seconds
            return {"router1 stopped": {"wall": wall, "cpu": cpu},
                    **pnr_steps(out["times"])}, out

    runs, fallen = [], []
    with ThreadPoolExecutor(jobs) as pool:
        for seed, (steps, out) in zip(seeds, pool.map(place, seeds), strict=True):
            seconds[f"seed {seed}"] = steps
            if "router1 stopped" in steps:
                fallen.append(seed)
            report = json.loads(out["report.json"])
            runs.append((achieved_mhz(report) or 0.0, seed, report))
    runs.sort(key=lambda run: run[0])
    mhz, _, report = runs[len(runs) // 2]
    result = {"fmax_mhz": mhz or None,
              "fmax_seeds": {seed: f for f, seed, _ in sorted(runs, key=lambda r: r[1])},
              "harness_ff": harness.ffs, "harness_lut": harness.luts, "mapper": mapper,
              "critical_path": critical_path(report, netlist), "seconds": seconds,
              "pnr": " ".join([*ROUTERS[router], *extra]), "router2_seeds": fallen}
    if target == "ecp5":
        used = {k: v["used"] for k, v in report.get("utilization", {}).items()}
        view = {key: used.get(cell, 0) for key, cell in _DEVICE_VIEW.items()}
        view["logic_cells"] = max(0, view["logic_cells"] - harness.luts)
        view["ff"] = max(0, view["ff"] - harness.ffs)
        result["device"] = {"name": f"LFE5U-{device.upper()[:-1]}F", **view}
    return result


def synthesize(name, params=None, target="ecp5", with_fmax=True, device="25k", seeds=SEEDS,
               nodsp=False, jobs=1, quick=False):
    """Area (and, on FPGA targets, Fmax) of block ``name`` with ``params``.

    Returns a dict: ``block``, ``params``, ``target``, ``cells`` (by type),
    ``cells_total``, the target's resources (``lut``, ``ff``, ``bram``, ...),
    and where place-and-route ran (:func:`fmax`, on ``device``, one run per seed):
    ``fmax_mhz`` (the median), ``fmax_seeds``, ``harness_ff``, ``harness_lut``, the
    block as the ``device`` sees it and its ``critical_path``; ``noabc9`` lists the
    mappings (``area``, ``fmax``) that ABC9 crashed on and ABC did; ``latency`` in
    cycles for a pipelined block that states one (its ``latency`` attribute; such
    blocks take one input per cycle). ``nodsp``: multipliers in LUTs (ECP5 area only).
    ``device="auto"``: the smallest ECP5 that holds the block (:func:`smallest_device`),
    no smaller than its ``LEAST_DEVICE`` where it names one (a device key: where it
    routes), or the next larger where nextpnr cannot place it there (:data:`UNPLACED`).
    ``seconds``: the wall and processor seconds of each step (:func:`timed`): ``yosys``
    (the block's area) and, where it placed, ``yosys harness`` and each seed's nextpnr
    steps. ``jobs``: seeds placed at once (the result is the same); ``quick``: placed by
    wirelength alone (:data:`QUICK`), ``pnr`` saying so.
    """
    if target not in TARGETS:
        raise ParameterError(f"target {target!r}: expected one of {', '.join(TARGETS)}")
    il, resolved, component = rtlil_text(name, params)
    seconds = {}
    with timed(seconds, "yosys"):
        cells, _, mapper = _stat(il, name, target, nodsp)
    result = {"block": name, "params": resolved, "target": target,
              "paper": getattr(component, "PAPER", ""),
              "cells_total": sum(cells.values()), "cells": cells,
              "noabc9": ["area"] if mapper else [],
              "latency": getattr(component, "latency", None), "seconds": seconds}
    result.update(_resources(cells, target))
    devices = [device]
    if target == "ecp5" and device == "auto":
        device = smallest_device(result, getattr(component, "LEAST_DEVICE", "25k"))
        devices = _devices_from(device)
    if with_fmax and target == "ecp5":
        check_fits(result, device)
    if with_fmax and TARGETS[target]["pnr"]:
        placed = _placed(name, resolved, target, devices, seeds, jobs, quick)
        result["noabc9"] += ["fmax"] if placed.pop("mapper") else []
        seconds.update(placed.pop("seconds"))
        result.update(placed)
    return result


UNPLACED = "Unable to find legal placement"
"""nextpnr's words for a design it could not place: FFs that share a slice share its
clock, enable and reset, so a part fills before its counts do."""


def _placed(name, params, target, devices, seeds, jobs, quick):
    """:func:`fmax` on the first of ``devices`` (``--device auto``: the smallest that
    holds the block's counts and each larger) on which nextpnr places the block."""
    for n, device in enumerate(devices):
        try:
            return fmax(name, params, target, device, seeds, jobs, quick)
        except ToolError as error:
            if UNPLACED not in str(error) or n == len(devices) - 1:
                raise
            status(f"{name}: nextpnr could not place it on the {device}; the next ECP5")


def _first_configurations(results):
    """Each block's first result in ``results`` (its first report configuration)."""
    first = {}
    for r in results:
        first.setdefault(r["block"], r)
    return first


def parts_rows(results, synth=None):
    """For each composite in ``results`` that declares ``PARTS`` (its units as the
    paper's area table lists them, each the attribute holding its instances, and the
    paper's share of the area, or ``None``), each unit as the composite builds it in its
    first report configuration: its parameters, its instances and their logic cells
    (Yosys: LUT4s and two per carry cell) and block RAMs, and their shares of the units'
    total beside the paper's share. A composite whose parts depend on its build sets
    ``PARTS`` on the instance. ``whole`` is the composite's own logic where ``results``
    holds it, so what the parts leave out shows. A unit is measured by ``synth(unit)``
    (default :func:`unit_area`: Yosys alone)."""
    synth = synth or unit_area
    tables = []
    for name, r in _first_configurations(results).items():
        if getattr(get(name).cls, "PARTS", None) is None:
            continue
        composite = get(name).build(r["params"])
        composite._MustUse__used = True         # built for its parts' parameters alone
        rows = []
        for label, attribute, paper in composite.PARTS:
            units = list(_flatten(getattr(composite, attribute)))
            unit = units[0]
            area = synth(unit)
            rows.append({"part": label,
                         "block": getattr(unit, "block_name", type(unit).__name__),
                         "params": getattr(unit, "block_params", None),
                         "instances": len(units),
                         "logic_cells": len(units) * logic(area),
                         "bram": len(units) * area.get("bram", 0), "paper_share": paper})
        total = sum(row["logic_cells"] for row in rows) or 1
        for row in rows:
            row["share"] = row["logic_cells"] / total
        table = {"block": name, "params": r["params"], "parts": rows}
        if "lut" in r:
            table["whole"] = logic(r)
        tables.append(table)
    return tables


def unit_area(unit, target="ecp5"):
    """Yosys's count of one of a composite's units as the composite built it: a
    registered block with parameters of its own by :func:`synthesize` (its area kept
    as any block's), any other unit from its own RTLIL."""
    if getattr(unit, "block_params", None) is not None:
        return synthesize(unit.block_name, unit.block_params, target, with_fmax=False)
    unit._MustUse__used = True
    cells, _, _ = _stat(rtlil.convert(unit, name="unit", emit_src=False), "unit", target)
    return _resources(cells, target)


def _flatten(units):
    """A composite's instances of a part: one, or lists of them (rows of PEs)."""
    if isinstance(units, (list, tuple)):
        for unit in units:
            yield from _flatten(unit)
    else:
        yield units


def _devices_from(device):
    """The ECP5 keys of :data:`CAPACITY` from ``device`` up, smallest first."""
    devices = list(CAPACITY)
    return devices[devices.index(device):]


def _need(result):
    """What a synthesis result takes of a device, by :data:`CAPACITY`'s keys."""
    return {"lut": positions(result), "dsp": _count(result["cells"], "MULT18X18D"),
            "bram": result.get("bram", 0)}


def smallest_device(result, least="25k"):
    """The smallest ECP5, from ``least`` up (a block's ``LEAST_DEVICE``), whose LUT4
    positions (:func:`positions`), multipliers and block RAMs hold Yosys's count of the
    block, with a fifth to spare for the harness and routing; the largest if none does."""
    need = _need(result)
    need["lut"] *= 1.2
    for device in _devices_from(least):
        if all(need[k] <= CAPACITY[device][k] for k in need):
            return device
    return "85k"


def check_fits(result, device):
    """Refuse, before place-and-route, a block whose Yosys count already passes what
    ECP5 ``device`` holds (:data:`CAPACITY`: LUT4 positions, multipliers, block RAMs):
    nextpnr would fail on it, or route for hours first."""
    need = _need(result)
    room = CAPACITY[device]
    over = [f"{need[k]:,} {k} of its {room[k]:,}" for k in need if need[k] > room[k]]
    if over:
        larger = [d for d in CAPACITY if all(need[k] <= CAPACITY[d][k] for k in need)]
        hint = f"--device {larger[0]} holds it" if larger else "no ECP5 here holds it"
        raise ParameterError(f"{result['block']} {result['params']}: Yosys counts "
                             f"{', '.join(over)} on the LFE5U-{device[:-1].upper()}F; "
                             f"{hint}")


def logic(result):
    """A synthesis result's logic as the device sees it: LUT4s plus two per carry cell."""
    return result["lut"] + 2 * result["carry"]


LUTRAM_POSITIONS = 6
"""LUT4 positions a distributed RAM (``TRELLIS_DPR16X4``) takes as nextpnr packs it: two
slices of its PFU for the RAM and a third for its write port (``TRELLIS_RAMW``), six of
the PFU's eight."""


def positions(result):
    """The LUT4 positions a block takes on an ECP5: its logic and its distributed RAMs'
    (a design of many small memories needs far more than its LUT4s)."""
    return logic(result) + LUTRAM_POSITIONS * result.get("lutram", 0)


def merged_rows(results, synth=None):
    """For each block in ``results`` that declares ``MERGES`` (the separate blocks it
    replaces) and ``MERGES_PAPER`` (the paper's figure), its logic beside theirs in the
    same results: their first report configuration each (``ratio``). A block that also
    declares ``DIVIDES`` (those of them that compute positions) and ``DIVIDER`` (its
    divider as ``(block, params)``) is set beside them built the paper's way too, each of
    ``DIVIDES`` with a divider of its own (``paper_style_ratio``): the divider's logic
    measured once, from ``results`` where they hold it at those parameters, else by
    ``synth(block, params)`` where that is given, and added per converter."""
    first = _first_configurations(results)
    rows = []
    for name, r in first.items():
        cls = get(name).cls
        merges = getattr(cls, "MERGES", None)
        if merges is None or not all(b in first for b in merges):
            continue
        separate = sum(logic(first[b]) for b in merges)
        row = {"block": name, "logic": logic(r), "separate": list(merges),
               "separate_logic": separate, "ratio": logic(r) / separate,
               "paper": cls.MERGES_PAPER}
        row.update(_paper_style(cls, results, synth, logic(r), separate))
        rows.append(row)
    return rows


def _paper_style(cls, results, synth, merged, separate):
    """The fields of :func:`merged_rows` that set the merged block's logic ``merged``
    beside its separate blocks' ``separate`` and a ``cls.DIVIDER`` for each of
    ``cls.DIVIDES``; none where it declares none, or its divider is neither held in
    ``results`` nor ``synth`` given."""
    divides = getattr(cls, "DIVIDES", None)
    if not divides:
        return {}
    divider, params = cls.DIVIDER
    held = [x for x in results if x["block"] == divider
            and all(x["params"].get(k) == v for k, v in params.items())]
    if not held and synth is None:
        return {}
    each = logic(held[0] if held else synth(divider, params))
    paper_style = separate + len(divides) * each
    return {"divider": divider, "divider_params": dict(params), "divider_logic": each,
            "divides": list(divides), "paper_style_logic": paper_style,
            "paper_style_ratio": merged / paper_style}
