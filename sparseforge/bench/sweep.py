"""``sparseforge bench sweep``: a 12-point sweep on the local Dask cluster against one process.

The same sweep (the Buffet at four depths and three widths, on the ECP5-25k
with one nextpnr seed) runs twice, each with a fresh, empty cache so that
every point is synthesized: on a LocalCluster of one worker process, then on
one of a worker per core. Both times include starting the cluster; both arms
must give the same results. On a machine of N cores the speed-up is at most N.
"""

import os
import tempfile
import time

import click

from sparseforge.cli import emit, json_option
from sparseforge.core.tools import status
from sparseforge.sweep import sweep

BLOCK = "buffet"
GRID = {"depth": ["16", "64", "256", "1024"], "width": ["8", "16", "32"]}
RESULT = ("logic_cells", "lut", "ff", "bram", "fmax_mhz", "error")


def timed(workers):
    """``(seconds, rows)`` of the sweep on ``workers`` processes, from an empty cache."""
    with tempfile.TemporaryDirectory(prefix="sf-bench-sweep-") as cache:
        start = time.perf_counter()
        rows = sweep(BLOCK, GRID, "ecp5", seeds=(1,), workers=workers, cache=cache)
        return time.perf_counter() - start, rows


def _human(r):
    click.echo(f"{r['points']} points of {r['block']} on {r['target']} ({r['passed']} passed, "
               f"results identical in both arms: {'yes' if r['identical'] else 'NO'})")
    click.echo(f"  1 process:           {r['serial_seconds']:7.1f} s")
    click.echo(f"  {r['workers']} worker processes:  {r['parallel_seconds']:7.1f} s")
    click.echo(f"  speed-up:            {r['speedup']:7.2f}x (at most {r['workers']}x on "
               f"{r['cores']} cores)")


@click.command("sweep")
@json_option
def command(as_json):
    """A 12-point sweep on a LocalCluster of a process per core against one process."""
    cores = len(os.sched_getaffinity(0))
    status(f"sweep bench: {BLOCK} at 12 points, on 1 process then on {cores} "
           "(a minute or more)...")
    serial, rows = timed(1)
    parallel, again = timed(cores)
    result = {"block": BLOCK, "target": "ecp5", "points": len(rows), "cores": cores,
              "workers": cores, "serial_seconds": serial, "parallel_seconds": parallel,
              "speedup": serial / parallel, "passed": sum(r["pass"] for r in rows),
              "identical": [[r[k] for k in RESULT] for r in rows]
              == [[r[k] for k in RESULT] for r in again]}
    emit(result, as_json, _human)
