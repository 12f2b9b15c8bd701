"""The ``sparseforge`` command line.

Top-level commands live one per module in :mod:`sparseforge.commands` and
benchmarks one per module in :mod:`sparseforge.bench`; each module exposes a
``click`` command called ``command`` and is found here by name, so adding one
touches no other file. Errors a user can cause print as one line and exit 2.
"""

import importlib
import json
import pkgutil
import sys

import click

from .errors import ParameterError, SparseforgeError


def emit(result, as_json, human):
    """Print ``result`` as exactly one JSON object, or through ``human(result)``."""
    if as_json:
        click.echo(json.dumps(result, indent=None, sort_keys=False, default=_jsonable))
    else:
        human(result)


def _jsonable(value):
    # numpy scalars and arrays, Paths
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def echo_claims(rows, notes, widths, head):
    """Print a benchmark's ``(label, ours, claim, where)`` rows, then its notes.

    ``widths`` are the label and ours columns' widths, ``head`` the three titles.
    """
    label_width, ours_width = widths
    click.echo(f"{head[0]:{label_width}} | {head[1]:{ours_width}} | {head[2]}")
    for label, ours, claim, where in rows:
        click.echo(f"{label:{label_width}} | {ours:{ours_width}} | {claim} [{where}]")
    click.echo()
    for note in notes:
        click.echo(f"note: {note}")


json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print exactly one JSON object on stdout.")

param_option = click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
                            help="Set a generator parameter (repeatable).")


def parse_params(pairs):
    """``("depth=64", ...)`` -> ``{"depth": "64"}``; values are checked by the block."""
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ParameterError(f"-p {pair!r}: expected NAME=VALUE")
        params[name.strip()] = value.strip()
    return params


class _Discovered(click.Group):
    """A group whose subcommands are the ``command`` of each module in a package."""

    def __init__(self, *args, package, **kwargs):
        super().__init__(*args, **kwargs)
        self.package = package

    def _modules(self):
        pkg = importlib.import_module(self.package)
        return sorted(info.name for info in pkgutil.iter_modules(pkg.__path__))

    def list_commands(self, ctx):
        names = [m.replace("_", "-") for m in self._modules()]
        return sorted(set(names) | set(self.commands))

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        module = name.replace("-", "_")
        if module not in self._modules():
            return None
        return importlib.import_module(f"{self.package}.{module}").command


@click.group(cls=_Discovered, package="sparseforge.commands")
def cli():
    """Verified, synthesizable building blocks for sparse tensor accelerators."""


@cli.group(cls=_Discovered, package="sparseforge.bench")
def bench():
    """Benchmarks: our measured figures beside the papers' claims."""


def main(argv=None):
    try:
        cli.main(args=argv, prog_name="sparseforge", standalone_mode=False)
    except SparseforgeError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
