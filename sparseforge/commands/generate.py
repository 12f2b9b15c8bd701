"""``sparseforge generate``: write a block's Verilog and the parameters used."""

import json
from pathlib import Path

import click

from ..cli import emit, json_option, param_option, parse_params
from ..export import verilog_text


@click.command()
@click.argument("block")
@param_option
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="Folder for BLOCK.v and BLOCK.json.")
@json_option
def command(block, params, outdir, as_json):
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
    emit(result, as_json, lambda r: click.echo(
        f"wrote {r['verilog']} ({r['lines']} lines) and {r['params_file']}"))
