"""``sparseforge data fetch``: the real data sets the tests and benchmarks read."""

import click

from sparseforge.cli import emit, json_option
from sparseforge.core import data


@click.group(name="data")
def command():
    """The real sparse matrices, tensors and pruned layers the tests read."""


@command.command()
@click.option("--dest", type=click.Path(file_okay=False), metavar="DIR",
              help="Folder to fill (default: the user cache, which the tests find by "
                   "themselves; for another folder set SPARSEFORGE_DATA=DIR).")
@click.option("--only", "names", multiple=True, metavar="NAME",
              help="Fetch only this file, file name or folder of the collection "
                   "(repeatable), e.g. --only matrices/suitesparse.")
@click.option("--mirror", metavar="URL",
              help="Base URL of a copy of the whole data folder; every file then "
                   "comes from it, converted ones included.")
@click.option("--manifest", "manifest_path", type=click.Path(dir_okay=False, exists=True),
              help="A manifest of your own (CSV: path, sha256, bytes, verbatim, url, "
                   "member) instead of the shipped one.")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True,
              help="Seconds to wait for each server.")
@json_option
def fetch(dest, names, mirror, manifest_path, timeout, as_json):
    """Download the real-data files into the user cache (or --dest).

    The shipped manifest lists every file of the collection with its SHA-256
    and its public source (a raw-file URL pinned to a commit, or the package
    release or archive it came from); each download is checked against its
    hash. Files stored upstream byte for byte (the SuiteSparse and
    Rutherford-Boeing matrices, the Graph Challenge layers) are fetched from
    their public URL. The others were converted from their source (graphs
    rewritten as Matrix Market, tensors built from ratings, DLMC layers
    compressed) and come only from --mirror; without one they are listed as
    needing it, and the tests that read them skip.
    """
    import logging

    import pooch

    pooch.get_logger().setLevel(logging.WARNING)
    every = data.manifest(manifest_path)
    entries = data.select(every, names)
    if names:   # the collection's index (shipped in the package) comes with any selection
        entries = [e for e in every if not e.url and "/" not in e.path and e not in entries
                   ] + entries
    folder = dest or data.cache_dir()
    status = data.fetch(entries, folder, mirror=mirror, timeout=timeout)
    counts = {k: sum(1 for v in status.values() if v == k)
              for k in ("fetched", "present", "needs --mirror")}
    result = {"dest": str(folder), **{k.replace(" --", "_"): v for k, v in counts.items()},
              "needs_mirror_files": [p for p, v in status.items() if v == "needs --mirror"]}

    def human(r):
        click.echo(f"{r['dest']}: {r['fetched']} fetched, {r['present']} already present, "
                   f"{r['needs_mirror']} need --mirror (converted from their source)")

    emit(result, as_json, human)
