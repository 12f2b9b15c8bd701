"""``sparseforge build``: a block's self-check as a bitstream for a board."""

import click

from ..board import BOARDS, build
from ..cli import emit, json_option, param_option, parse_params, seed_option


def _human(r):
    met = "met" if r["timing_met"] else "NOT met"
    fmax = f"{r['fmax_mhz']:.1f} MHz" if r["fmax_mhz"] else "unknown"
    used = ", ".join(f"{cell} {u['used']}/{u['available']}" for cell, u in r["resources"].items())
    leds = ", ".join(f"LED {n} = {meaning}" for n, meaning in r["leds"].items())
    click.echo(f"{r['block']} {r['params']} on {r['board']} ({r['device']})")
    click.echo(f"  bitstream  {r['bitstream']} ({r['bytes']:,} bytes)")
    margin = (f" (margin {r['margin_mhz']:+.1f} MHz, slack {r['slack_ns']:+.2f} ns)"
              if r["fmax_mhz"] else "")
    click.echo(f"  timing     Fmax {fmax} against the board's {r['clock_mhz']:g} MHz clock: "
               f"{met}{margin}")
    click.echo(f"  resources  {used}")
    if "workload" in r:
        w = r["workload"]
        shape = " x ".join(map(str, w["shape"]))
        click.echo(f"  workload   {w['kernel']} of {w['data']} ({shape}, {w['nnz']} nonzeros) "
                   f"by {w['columns']} columns, {w['memory_bytes']:,} bytes of memory, "
                   f"a hang failed after {w['watchdog_cycles']:,} cycles")
    click.echo(f"  self-check {r['ops']} operations, {r['checked']} outputs checked; "
               f"{leds} (neither: not running)")
    click.echo(f"  flash      {r['flash']}")


@click.command()
@click.argument("block")
@param_option
@click.option("--board", required=True, type=click.Choice(list(BOARDS)),
              help="The board (amaranth-boards); ulx3s is the 85F.")
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False),
              help="Build folder (default build/BLOCK-BOARD).")
@click.option("--ops", "n_ops", type=click.IntRange(16, 4096), default=256, show_default=True,
              help="Operations in the self-check program (the accelerator's run is its "
                   "data's: unused).")
@seed_option(1, "Seed of the self-check program.")
@json_option
def command(block, params, board, outdir, n_ops, seed, as_json):
    """Build BLOCK's self-check for a board: the bitstream, Fmax against the board's
    clock, resources. On the board, LED 0 lit means fail, LED 1 lit means pass. The
    accelerator (accel) checks a small real run: SpMM, or pruned GEMM with -p
    engine=eureka."""
    emit(build(block, parse_params(params), board, outdir, seed, n_ops), as_json, _human)
