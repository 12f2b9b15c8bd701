"""``sparseforge synth``: area and Fmax of a block, or the report of all blocks."""

import csv
import io
import json
import sys

import click
from tqdm import tqdm

from ..cli import OutputFile, emit, json_option, param_option, parse_params
from ..core.errors import ParameterError
from ..core.export import rtlil_text
from ..core.registry import blocks, get
from ..core.tools import cache_dir
from ..sweep import Cache, cache_keys
from ..synth.flow import DEVICES, SEEDS, TARGETS, merged_rows, parts_rows, synthesize

COLUMNS = ("block", "params", "target", "device", "logic_cells", "lut", "carry", "ff", "bram",
           "dsp", "cells_total", "fmax_mhz", "fmax_seeds", "critical_path", "latency",
           "noabc9", "seconds", "paper")


def path_text(path):
    """A critical path in a few words: where it starts and ends, its levels and routing."""
    if not path:
        return ""
    ends = f"{path['from_source'] or path['from']} -> {path['to_source'] or path['to']}"
    where = "" if path["inside_block"] else " (touches the harness)"
    return (f"{ends}, {path['logic_levels']} levels, {path['routing_share']:.0%} routing"
            f"{where}")


def _time_text(seconds):
    """The time each step took, in a few words: Yosys (the block's and the harness's
    together), then nextpnr's pack, place and route on the slowest seed; wall seconds, then
    the tools' processor seconds."""
    if not seconds:
        return ""
    yosys = [v for step, v in seconds.items() if step.startswith("yosys")]
    steps = {"Yosys": {"wall": sum(v["wall"] for v in yosys),
                       "cpu": sum(v["cpu"] for v in yosys)}}
    seeds = [v for step, v in seconds.items() if step.startswith("seed")]
    if seeds:
        steps.update(max(seeds, key=lambda seed: sum(v["wall"] for v in seed.values())))
    wall = ", ".join(f"{step} {v['wall']:.0f}" for step, v in steps.items())
    cpu = ", ".join("?" if v["cpu"] is None else f"{v['cpu']:.0f}" for v in steps.values())
    slowest = "the slowest seed's; " if len(seeds) > 1 else ""
    return f"{wall} s ({slowest}CPU {cpu} s)"


def _params_text(params):
    return " ".join(f"{k}={v}" for k, v in params.items())


def _row(r):
    params = _params_text(r["params"])
    fmax, device = r.get("fmax_mhz"), r.get("device", {})
    seeds = " ".join(f"{v:.1f}" for v in r.get("fmax_seeds", {}).values())
    return {**{c: r.get(c, "") for c in COLUMNS}, "params": params,
            "device": device.get("name", ""),
            "logic_cells": device.get("logic_cells", ""), "dsp": device.get("dsp", ""),
            "fmax_mhz": f"{fmax:.1f}" if fmax else "", "fmax_seeds": seeds,
            "critical_path": path_text(r.get("critical_path")),
            "noabc9": " ".join(r.get("noabc9", [])), "seconds": _time_text(r.get("seconds"))}


TARGET_MHZ = 100
"""The clock every block is built for; a block placed below it says why."""


def clock_note(name):
    """The paragraph of block ``name``'s docstring (its class's, else its module's) that
    begins ``Clock:`` or ``Timing:``, on one line, or None: why its clock is what it is."""
    cls = get(name).cls
    for doc in (cls.__doc__, sys.modules[cls.__module__].__doc__):
        for paragraph in (doc or "").split("\n\n"):
            words = paragraph.split()
            if words[:1] in (["Clock:"], ["Timing:"]):
                return " ".join(words)
    return None


def below_target(results):
    """The report's rows placed below :data:`TARGET_MHZ`: block, params, Fmax, critical
    path and the block's ``why`` (:func:`clock_note`, None where its docstring gives none)."""
    return [{"block": r["block"], "params": r["params"], "fmax_mhz": r["fmax_mhz"],
             "critical_path": path_text(r.get("critical_path")), "why": clock_note(r["block"])}
            for r in results if r.get("fmax_mhz") and r["fmax_mhz"] < TARGET_MHZ]


def markdown(results):
    """The synthesis report as a Markdown table, then each row below :data:`TARGET_MHZ`
    with why."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(v) for v in _row(r).values()) + " |" for r in results]
    slow = below_target(results)
    if slow:
        lines += ["", f"Below {TARGET_MHZ} MHz, and why (the block's docstring):", ""]
        lines += [f"- `{s['block']}` {_params_text(s['params'])}: "
                  f"{s['fmax_mhz']:.1f} MHz"
                  f"{', path ' + s['critical_path'] if s['critical_path'] else ''}. "
                  f"{s['why'] or 'Its docstring gives no reason.'}" for s in slow]
    return "\n".join(lines)


def _parts(table):
    """A composite's area by part (:func:`~sparseforge.synth.flow.parts_rows`); nothing for
    a build that lists no parts."""
    if not table["parts"]:
        return
    click.echo(f"\n{table['block']} {table['params']} by part (each part synthesized as "
               "this composite builds it, Yosys logic cells: LUT4s and two per carry cell, "
               "times its instances; shares of the parts' total):")
    width = max(len(p["part"]) for p in table["parts"])
    for p in table["parts"]:
        paper = ("" if p["paper_share"] is None
                 else f"   paper: {p['paper_share']:.1f}% of area")
        click.echo(f"  {p['part']:{width}} {p['instances']:>3} x {p['block']:16} "
                   f"{p['logic_cells']:>7} logic cells {p['share']:>6.1%}, "
                   f"{p['bram']:>3} BRAMs{paper}")
    if "whole" in table:
        parts = sum(p["logic_cells"] for p in table["parts"])
        click.echo(f"  the whole composite: {table['whole']} logic cells, its parts' sum "
                   f"{parts / table['whole']:.0%} of it (apart, a part is optimized alone)")


def _human(result):
    if "report" in result:
        click.echo(markdown(result["report"]))
        for row in result["merged"]:
            click.echo(f"\n{row['block']}: {row['logic']} logic cells (LUT4 + 2 per carry), "
                       f"{row['ratio']:.0%} of the {row['separate_logic']} of the separate "
                       f"{', '.join(row['separate'])} as built; paper: {row['paper']}")
            if "paper_style_ratio" in row:
                click.echo(f"  {row['paper_style_ratio']:.0%} of the "
                           f"{row['paper_style_logic']} of the separate converters built the "
                           f"paper's way: {', '.join(row['divides'])} each with its own "
                           f"{row['divider']} {row['divider_params']} "
                           f"({row['divider_logic']} logic cells)")
        for table in result["parts"]:
            _parts(table)
        return
    r = result
    click.echo(f"{r['block']} {r['params']} on {r['target']}: {r['cells_total']} Yosys cells")
    for key in ("lut", "ff", "bram", "lutram", "carry"):
        if key in r:
            click.echo(f"  {key:<7} {r[key]}")
    if r.get("device"):
        d = r["device"]
        click.echo(f"  on the {d['name']} (nextpnr, the harness taken out): "
                   f"{d['logic_cells']} logic cells (LUT4 positions, carry cells' included), "
                   f"{d['ff']} FFs, {d['bram']} block RAMs, {d['dsp']} DSPs")
    if r.get("fmax_mhz"):
        seeds = ", ".join(f"{v:.1f}" for v in r["fmax_seeds"].values())
        click.echo(f"  fmax    {r['fmax_mhz']:.1f} MHz, the median of seeds ({seeds}), in a "
                   f"harness of {r['harness_ff']} FFs and {r['harness_lut']} LUT4s with "
                   "registered inputs and outputs")
        click.echo(f"  path    {path_text(r['critical_path'])}")
        if r.get("router2_seeds"):
            click.echo(f"  router2 on seeds {', '.join(map(str, r['router2_seeds']))}: "
                       "router1's rip-up did not converge within its budget")
    if r.get("seconds"):
        click.echo(f"  time    {_time_text(r['seconds'])}")
    if r.get("cached"):
        click.echo("  (kept from an earlier run of this design, flow, device and seeds)")
    for table in r.get("parts", ()):
        _parts(table)


def kept(name, params, target, device, seeds, with_fmax=True, jobs=1, quick=False):
    """:func:`~sparseforge.synth.flow.synthesize`'s result (its JSON form), from the cache's
    ``synth`` folder where a run of the same design on the same flow, tools, target,
    ``device`` (``auto`` as such) and ``seeds`` is kept, keyed as a sweep's point
    (:func:`~sparseforge.sweep.cache_keys`); else run and kept. ``cached`` says which. A
    kept critical path names the source lines of the run that made it. ``jobs``: seeds
    placed at once (not part of the key: the result is the same); ``quick``: placed by
    wirelength alone, kept apart from the timing-driven result. Without ``with_fmax``, a
    kept timing-driven result placed with ``seeds`` serves too."""
    il, resolved, _ = rtlil_text(name, params)
    key, _ = cache_keys(name, resolved, il, target, device, seeds if with_fmax else (), None,
                        quick and with_fmax)
    store = Cache(cache_dir("synth"))
    found = store.get(key)
    if found is None and not with_fmax:
        found = store.get(cache_keys(name, resolved, il, target, device, seeds, None)[0])
    if found is None:
        found = json.loads(json.dumps(synthesize(name, params, target, with_fmax, device,
                                                 seeds, jobs=jobs, quick=quick), default=str))
        store.put(key, found)
        return {**found, "cached": False}
    return {**found, "cached": True}


def device_for(target, device, default):
    """The ``--device`` to place on: refused where ``--target`` has no device to choose."""
    if device and target != "ecp5":
        raise ParameterError(f"--device {device} places on an ECP5; --target {target} has "
                             "no device to choose")
    return device or default


@click.command()
@click.argument("block", required=False)
@param_option
@click.option("--target", type=click.Choice(list(TARGETS)), default="ecp5", show_default=True)
@click.option("--device", type=click.Choice([*DEVICES, "auto"]), default=None,
              help="The ECP5 to place on (LFE5U-25F, -45F or -85F; auto: the smallest "
                   "that holds the block, no smaller than one it names). Default: 25k "
                   "for a block, auto for the report.")
@click.option("--seeds", type=click.IntRange(1, 9), default=len(SEEDS), show_default=True,
              help="nextpnr seeds; Fmax is their median.")
@click.option("--jobs", type=click.IntRange(1, 9), default=1, show_default=True,
              help="Seeds placed at once (one core each).")
@click.option("--quick", is_flag=True,
              help="Place by wirelength alone (nextpnr --no-tmdriv): faster, its Fmax no "
                   "timing-driven placement's; not for --report.")
@click.option("--no-fmax", is_flag=True, help="Skip place-and-route.")
@click.option("--report", "report", is_flag=True,
              help="Synthesize every block in its report configurations.")
@click.option("--md", type=OutputFile(".md"), help="Also write the report as Markdown.")
@click.option("--csv", "csv_path", type=OutputFile(".csv"),
              help="Also write the report as CSV.")
@json_option
def command(block, params, target, device, seeds, jobs, quick, no_fmax, report, md, csv_path,
            as_json):
    """Yosys cell/LUT/FF/BRAM counts and, on FPGA targets, nextpnr Fmax."""
    if report == bool(block):
        raise ParameterError("give either a BLOCK or --report")
    if (md or csv_path) and not report:
        raise ParameterError("--md and --csv write the report: add --report")
    if quick and report:
        raise ParameterError("--quick places without timing-driven placement: the report's "
                             "Fmax is a timing-driven one, so drop --quick")
    device = device_for(target, device, "auto" if report else "25k")
    if block:
        result = kept(block, parse_params(params), target, device,
                      tuple(range(1, seeds + 1)), with_fmax=not no_fmax, jobs=jobs,
                      quick=quick)
        result["parts"] = parts_rows([result])
    else:
        designs = [(name, cfg) for name, b in blocks().items()
                   for cfg in getattr(b.cls, "REPORT", ({},))]
        result = {"report": [kept(name, cfg, target, device, tuple(range(1, seeds + 1)),
                                  with_fmax=not no_fmax, jobs=jobs)
                             for name, cfg in tqdm(designs, desc="synth", unit="design")]}
        result["below_target"] = below_target(result["report"])
        result["merged"] = merged_rows(result["report"], lambda name, params: kept(
            name, params, target, device, (), with_fmax=False))
        result["parts"] = parts_rows(result["report"])
        if md:
            with open(md, "w") as f:
                f.write(markdown(result["report"]) + "\n")
        if csv_path:
            buf = io.StringIO()
            writer = csv.DictWriter(buf, COLUMNS)
            writer.writeheader()
            writer.writerows(_row(r) for r in result["report"])
            with open(csv_path, "w") as f:
                f.write(buf.getvalue())
    emit(result, as_json, _human)
