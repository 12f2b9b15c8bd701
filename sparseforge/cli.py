"""The ``sparseforge`` command line.

Top-level commands live one per module in :mod:`sparseforge.commands` and
benchmarks one per module in :mod:`sparseforge.bench`; each module exposes a
``click`` command called ``command`` and is found here by name, so adding one
touches no other file. Errors a user can cause (a :class:`SparseforgeError`,
a usage error, an output that cannot be written) print as one line and exit
2; numeric options declare their ranges with the option (``click.IntRange``),
so a new command gets the same checks.
"""

import contextlib
import importlib
import json
import os
import pkgutil
import sys

import click

from .core.errors import ParameterError, SparseforgeError


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


def _record_waves(ctx, param, folder):
    if folder:
        from .sim.runners import record_waves

        record_waves(folder)


waves_option = click.option("--waves", type=click.Path(file_okay=False), metavar="DIR",
                            callback=_record_waves, expose_value=False,
                            help="Write an FST waveform of each Verilator run into DIR, "
                                 "named by the block and the seed.")


def read_input(path, reader):
    """``reader(path)``, saying on stderr what it reads when that may take seconds."""
    with contextlib.suppress(OSError):
        size = os.path.getsize(path)
        if size > 50 * 2**20:
            click.echo(f"reading {path} ({size / 2**20:,.0f} MB)...", err=True)
    return reader(path)


class OutputFile(click.ParamType):
    """A file the command writes, checked when the options are parsed, before any work:
    its extension is one of ``suffixes`` (any, if empty; a plot's: the formats matplotlib
    writes), its folder exists and a file can be made there."""

    name = "file"

    def __init__(self, *suffixes, plot=False):
        self.suffixes = tuple(s.lower() for s in suffixes)
        self.plot = plot

    def _wanted(self):
        if not self.plot:
            return self.suffixes
        from matplotlib.backend_bases import FigureCanvasBase

        return tuple(f".{s}" for s in FigureCanvasBase.get_supported_filetypes())

    def convert(self, value, param, ctx):
        path = os.fspath(value)
        wanted = self._wanted()
        if wanted and not path.lower().endswith(wanted):
            self.fail(f"{path}: this option writes {', '.join(wanted)} files", param, ctx)
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            self.fail(f"{path}: the folder {folder} does not exist", param, ctx)
        if os.path.isdir(path):
            self.fail(f"{path}: is a folder", param, ctx)
        if os.path.exists(path):
            if not os.access(path, os.W_OK):
                self.fail(f"{path}: not writable", param, ctx)
            return path
        try:                                # the only sure test: make it, then take it away
            open(path, "x").close()
            os.remove(path)
        except OSError as exc:
            self.fail(f"{path}: cannot be written ({exc.strerror})", param, ctx)
        return path


def seed_option(default, help):
    """``--seed``: a non-negative 32-bit seed (replayable runs)."""
    return click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=default,
                        show_default=True, help=help)

param_option = click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
                            help="Set a generator parameter (repeatable).")


def parse_params(pairs):
    """``("depth=64", ...)`` -> ``{"depth": "64"}``; values are checked by the block."""
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ParameterError(f"-p {pair!r}: expected NAME=VALUE")
        if name.strip() in params:
            raise ParameterError(f"-p {pair!r}: parameter {name.strip()} given twice")
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


@cli.group(cls=_Discovered, package="sparseforge.run")
def run():
    """Workloads through a generated accelerator, simulated on Verilator."""


def main(argv=None):
    """Run the command line: every error a user can cause is one line on stderr, exit 2."""
    try:
        cli.main(args=argv, prog_name="sparseforge", standalone_mode=False)
    except SparseforgeError as exc:
        _fail(str(exc))
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "sparseforge"
        _fail(f"{exc.format_message()} (see '{where} --help')")
    except click.ClickException as exc:
        _fail(exc.format_message())
    except OSError as exc:          # an output that cannot be written, a folder in the way
        _fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


def _fail(message):
    click.echo(f"error: {' '.join(str(message).split())}", err=True)
    sys.exit(2)


if __name__ == "__main__":
    main()
