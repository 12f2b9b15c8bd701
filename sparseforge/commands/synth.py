"""``sparseforge synth``: area and Fmax of a block, or the report of all blocks."""

import csv
import io

import click
from tqdm import tqdm

from ..cli import emit, json_option, param_option, parse_params
from ..errors import ParameterError
from ..registry import blocks
from ..synth.flow import TARGETS, merged_rows, synthesize

COLUMNS = ("block", "params", "target", "lut", "ff", "bram", "carry", "cells_total",
           "fmax_mhz", "harness_ff", "latency", "noabc9")


def _row(r):
    params = " ".join(f"{k}={v}" for k, v in r["params"].items())
    fmax = r.get("fmax_mhz")
    return {**{c: r.get(c, "") for c in COLUMNS}, "params": params,
            "fmax_mhz": f"{fmax:.1f}" if fmax else "", "noabc9": " ".join(r.get("noabc9", []))}


def markdown(results):
    """The synthesis report as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(v) for v in _row(r).values()) + " |" for r in results]
    return "\n".join(lines)


def _human(result):
    if "report" in result:
        click.echo(markdown(result["report"]))
        for row in result["merged"]:
            click.echo(f"\n{row['block']}: {row['logic']} logic cells (LUT4 + 2 per carry), "
                       f"{row['ratio']:.0%} of the {row['separate_logic']} of the separate "
                       f"{', '.join(row['separate'])}; paper: {row['paper']}")
        return
    r = result
    click.echo(f"{r['block']} {r['params']} on {r['target']}: {r['cells_total']} cells")
    for key in ("lut", "ff", "bram", "lutram", "carry"):
        if key in r:
            click.echo(f"  {key:<7} {r[key]}")
    if r.get("fmax_mhz"):
        click.echo(f"  fmax    {r['fmax_mhz']:.1f} MHz (in a serial I/O harness adding "
                   f"{r['harness_ff']} FFs)")


@click.command()
@click.argument("block", required=False)
@param_option
@click.option("--target", type=click.Choice(list(TARGETS)), default="ecp5", show_default=True)
@click.option("--no-fmax", is_flag=True, help="Skip place-and-route.")
@click.option("--report", "report", is_flag=True,
              help="Synthesize every block in its report configurations.")
@click.option("--md", type=click.Path(dir_okay=False), help="Also write the report as Markdown.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False),
              help="Also write the report as CSV.")
@json_option
def command(block, params, target, no_fmax, report, md, csv_path, as_json):
    """Yosys cell/LUT/FF/BRAM counts and, on FPGA targets, nextpnr Fmax."""
    if report == bool(block):
        raise ParameterError("give either a BLOCK or --report")
    if (md or csv_path) and not report:
        raise ParameterError("--md and --csv write the report: add --report")
    if block:
        result = synthesize(block, parse_params(params), target, with_fmax=not no_fmax)
    else:
        jobs = [(name, cfg) for name, b in blocks().items()
                for cfg in getattr(b.cls, "REPORT", ({},))]
        result = {"report": [synthesize(name, cfg, target, with_fmax=not no_fmax)
                             for name, cfg in tqdm(jobs, desc="synth", unit="design")]}
        result["merged"] = merged_rows(result["report"])
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
