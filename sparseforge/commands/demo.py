"""``sparseforge demo``: generate, simulate and verify blocks on real data.

Today: the Buffet as the sliding x-window of SpMV on a real matrix. The
program runs on Verilator (cocotb) and on Amaranth's simulator; every read
response is checked against the model, and y = A·x recomputed from the RTL's
read responses must equal scipy's product exactly.
"""

import json
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from ..cli import emit, json_option
from ..data import bundled
from ..errors import SparseforgeError
from ..hw.buffet import Buffet
from ..sim.runners import pysim, verilator
from ..sw.formats import read_matrix
from ..sw.traces import rcm_order, spmv_window
from ..tb.buffet import BuffetBench
from ..tools import verilator_lint

WIDTH = 16


def buffet_spmv(path, seed):
    """Run the SpMV window trace of the matrix at ``path`` through the Buffet."""
    matrix = rcm_order(read_matrix(path))
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1 << WIDTH, matrix.shape[1])
    trace = spmv_window(matrix, x)
    depth = max(2, 1 << (trace.window - 1).bit_length())
    params = {"depth": depth, "width": WIDTH}

    with tempfile.TemporaryDirectory(prefix="sf-demo-") as tmp:
        dump = Path(tmp, "result.json")
        run = verilator("buffet", "sparseforge.tb.buffet", params=params, seed=seed,
                        args={"program": trace.program, "dump": str(dump)}, work_dir=tmp)
        rtl = json.loads(dump.read_text())
    lint = verilator_lint(run["verilog"])   # the very Verilog that was simulated

    start = time.perf_counter()
    bench = BuffetBench(depth, WIDTH, trace.program, seed)
    pysim_cycles = pysim(Buffet(**params), bench)
    pysim_seconds = time.perf_counter() - start

    # y = A·x from the values the RTL returned, against scipy's product.
    got = np.asarray(rtl["read_data"], dtype=np.int64)
    if not np.array_equal(got, x[trace.reads]):
        raise SparseforgeError("RTL read responses differ from x at the read columns")
    a = trace.matrix
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    y_rtl = np.zeros(a.shape[0])
    np.add.at(y_rtl, rows, a.data * got)
    y_ref = a @ x.astype(float)
    ops = {k: sum(1 for op in trace.program if op[0] == k) for k in ("fill", "read", "shrink")}
    return {
        "matrix": str(path), "shape": list(a.shape), "nnz": int(a.nnz),
        "window": trace.window, "params": params, "ops": ops,
        "lint_clean": lint == "",
        "verilator_cycles": rtl["cycles"], "verilator_seconds": round(run["seconds"], 3),
        "pysim_cycles": pysim_cycles, "pysim_seconds": round(pysim_seconds, 3),
        "spmv_matches_scipy": bool(np.array_equal(y_rtl, y_ref)),
        "reads_checked": len(got),
    }


def _human(r):
    b = r["buffet"]
    click.echo(f"Buffet on the SpMV x-window of {Path(b['matrix']).name} "
               f"({b['shape'][0]}x{b['shape'][1]}, {b['nnz']} nonzeros, RCM-ordered)")
    click.echo(f"  window {b['window']} entries -> buffet depth {b['params']['depth']}, "
               f"width {b['params']['width']}; Verilog lint clean: {b['lint_clean']}")
    click.echo(f"  {b['ops']['fill']} fills, {b['ops']['read']} reads, "
               f"{b['ops']['shrink']} shrinks under random stalls on every stream")
    click.echo(f"  Verilator: {b['verilator_cycles']} cycles in {b['verilator_seconds']} s; "
               f"Amaranth simulator: {b['pysim_cycles']} cycles in {b['pysim_seconds']} s")
    click.echo(f"  {b['reads_checked']} read responses match the model; "
               f"y = A·x from RTL reads equals scipy: {b['spmv_matches_scipy']}")
    click.echo("PASS" if r["pass"] else "FAIL")


@click.command()
@click.option("--matrix", type=click.Path(exists=True, dir_okay=False),
              help="Matrix Market file (default: the bundled bcspwr01).")
@click.option("--seed", default=1, show_default=True, help="Seed for x and for the stalls.")
@json_option
def command(matrix, seed, as_json):
    """Generate, simulate and verify the blocks on real data; print a summary."""
    buffet = buffet_spmv(matrix or bundled("bcspwr01.mtx"), seed)
    result = {"buffet": buffet, "pass": buffet["lint_clean"] and buffet["spmv_matches_scipy"]}
    emit(result, as_json, _human)
    if not result["pass"]:
        raise SystemExit(1)
