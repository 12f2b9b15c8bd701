"""``sparseforge generate``: write a block's Verilog, the parameters used and, with
``--core``, a FuseSoC core file for it."""

import json
from pathlib import Path

import click

from ..cli import emit, json_option, param_option, parse_params
from ..core.export import core_text, verilog_text


@click.command()
@click.argument("block")
@param_option
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Folder for BLOCK.v and BLOCK.json.")
@click.option("--core", is_flag=True,
              help="Also write DIR/BLOCK.core, a FuseSoC CAPI2 core with a lint target.")
@json_option
def command(block, params, outdir, core, as_json):
    """Write DIR/BLOCK.v (lint-clean Verilog) and DIR/BLOCK.json (parameters)."""
    text, resolved = verilog_text(block, parse_params(params))
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    verilog = out / f"{block}.v"
    verilog.write_text(text)
    meta = out / f"{block}.json"
    meta.write_text(json.dumps({"block": block, "params": resolved}, indent=2) + "\n")
    result = {"block": block, "params": resolved, "verilog": str(verilog),
              "params_file": str(meta), "lines": text.count("\n")}
    if core:
        result["core"] = str(out / f"{block}.core")
        Path(result["core"]).write_text(core_text(block, resolved))
    emit(result, as_json, lambda r: click.echo(
        f"wrote {r['verilog']} ({r['lines']} lines), {r['params_file']}"
        + (f" and {r['core']}" if core else "")))
