"""``sparseforge blocks``: the registered hardware blocks and their parameters."""

import click

from ..cli import emit, json_option
from ..core.registry import blocks


def _human(result):
    for name, info in result["blocks"].items():
        click.echo(f"{name}: {info['doc']}")
        for p in info["params"]:
            kind = "power of two " if p["pow2"] else ""
            least = f", at least {p['at_least']}" if p["at_least"] else ""
            click.echo(f"    {p['name']:<12} default {p['default']:<8} "
                       f"{kind}in [{p['min']}, {p['max']}]{least}  {p['doc']}")


@click.command()
@json_option
def command(as_json):
    """List the registered blocks with their parameters, defaults and ranges."""
    result = {"blocks": {name: {"doc": b.doc, "params": [p.as_dict() for p in b.params]}
                         for name, b in blocks().items()}}
    emit(result, as_json, _human)
