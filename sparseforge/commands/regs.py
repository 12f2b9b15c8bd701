"""``sparseforge regs``: the accelerator's register map, from its one definition."""

import click

from ..cli import emit, json_option
from ..sw import regmap


@click.command("regs")
@click.option("--c", "as_c", is_flag=True, help="Print a C header of #defines.")
@click.option("--md", "as_md", is_flag=True, help="Print the README's Markdown table.")
@click.option("--set", "values", metavar="NAME=VALUE", multiple=True,
              help="Print the register writes (offset, value) that program a run with "
                   "these RW registers, start last.")
@json_option
def command(as_c, as_md, values, as_json):
    """The AXI4-Lite register map of the accelerator (sw/regmap.py): offsets, access,
    widths, resets and fields; as a table, a C header (--c), Markdown (--md) or JSON."""
    if as_c + as_md + as_json > 1:
        raise click.UsageError("choose one of --c, --md and --json")
    if values:
        writes = regmap.writes(dict(_pair(v) for v in values))
        emit({"writes": [{"offset": o, "value": v} for o, v in writes]}, as_json,
             lambda r: click.echo("\n".join(f"0x{w['offset']:02X} <- 0x{w['value']:X}"
                                            for w in r["writes"])))
    elif as_c:
        click.echo(regmap.c_header(), nl=False)
    elif as_json:
        click.echo(regmap.as_json())
    else:
        click.echo(regmap.markdown(), nl=False)


def _pair(text):
    name, _, value = text.partition("=")
    try:
        return name, int(value, 0)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected NAME=VALUE, VALUE an integer",
                                 param_hint="--set") from None
