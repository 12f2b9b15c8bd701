"""``sparseforge demo``: generate, simulate and verify blocks on real data.

SpMV y = A·x on a real matrix, with x held on chip two ways:

- a Buffet holds a sliding window of x (the window trace);
- a Tailor smaller than the tiles holds x tile by tile, one tile per block
  of rows and one pass over it per row; tiles that overbook it stream their
  bumped part once per pass;
- the SpMV engine (``spmv_tailor``) runs that same tiling in hardware: a
  Tailor holding x and a multiply-accumulate unit reading it for A's stream.

Each runs on Verilator (cocotb) and on Amaranth's simulator. For the first
two, every read response is checked against the model and y recomputed from
the RTL's read responses must equal scipy's product exactly; the engine
emits y itself, which must equal scipy's (integer) product exactly.
"""

import tempfile
import time
from pathlib import Path

import click
import numpy as np
import scipy.sparse as sp

from ..cli import emit, json_option
from ..data import bundled
from ..errors import SparseforgeError
from ..hw.buffet import Buffet
from ..hw.compose.spmv_tailor import SpmvTailor
from ..hw.tailor import Tailor
from ..sim.runners import pysim, verilator
from ..sw.formats import read_matrix
from ..sw.traces import rcm_order, spmv_stream, spmv_tiles, spmv_window
from ..sw.traffic import tile_transfers
from ..tb.buffet import BuffetBench
from ..tb.spmv import SpmvBench
from ..tb.tailor import TileBench
from ..tools import verilator_lint

WIDTH = 16
TAILOR = {"depth": 8, "fifo": 2}     # smaller than most tiles of 6 rows of bcspwr01
ROWS_PER_TILE = 6
ENGINE = {**TAILOR, "x_width": WIDTH, "value_width": 16, "acc_width": 48}


def buffet_spmv(path, seed):
    """Run the SpMV window trace of the matrix at ``path`` through the Buffet."""
    matrix = rcm_order(read_matrix(path))
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1 << WIDTH, matrix.shape[1])
    trace = spmv_window(matrix, x)
    depth = max(2, 1 << (trace.window - 1).bit_length())
    params = {"depth": depth, "width": WIDTH}

    with tempfile.TemporaryDirectory(prefix="sf-demo-") as tmp:
        run = verilator("buffet", "sparseforge.tb.buffet", params=params, seed=seed,
                        args={"program": trace.program}, work_dir=tmp)
    rtl = run.result
    lint = verilator_lint(run.verilog)   # the very Verilog that was simulated

    start = time.perf_counter()
    pysim_cycles = pysim(BuffetBench(Buffet(**params), trace.program, seed)).cycles
    pysim_seconds = time.perf_counter() - start

    # y = A·x from the values the RTL returned, against scipy's product.
    got = np.asarray(rtl.read_data, dtype=np.int64)
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
        "verilator_cycles": rtl.cycles, "verilator_seconds": round(run.seconds, 3),
        "pysim_cycles": pysim_cycles, "pysim_seconds": round(pysim_seconds, 3),
        "spmv_matches_scipy": bool(np.array_equal(y_rtl, y_ref)),
        "reads_checked": len(got),
    }


def _product_from_reads(a, got, served):
    """y = A·x from the x values the RTL returned, ``served[k]`` = CSR position of read k."""
    keep = np.asarray(served) >= 0
    x_at = np.zeros(a.nnz, dtype=np.int64)
    x_at[np.asarray(served)[keep]] = np.asarray(got, dtype=np.int64)[keep]
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    y = np.zeros(a.shape[0])
    np.add.at(y, rows, a.data * x_at)
    return y


def _tile(trace):
    """The Tailor's ``tile`` parameter for ``trace``: its longest tile, above the depth."""
    longest = max(t["length"] for t in trace.tiles)
    return max(2 * TAILOR["depth"], 1 << (longest - 1).bit_length())


def tailor_spmv(path, seed):
    """Run the tiled SpMV trace of the matrix at ``path`` through a small Tailor."""
    matrix = rcm_order(read_matrix(path))
    x = np.random.default_rng(seed).integers(0, 1 << WIDTH, matrix.shape[1])
    trace = spmv_tiles(matrix, x, ROWS_PER_TILE)
    params = {**TAILOR, "width": WIDTH, "tile": _tile(trace)}
    depth = TAILOR["depth"]

    with tempfile.TemporaryDirectory(prefix="sf-demo-") as tmp:
        run = verilator("tailor", "sparseforge.tb.tailor", params=params, seed=seed,
                        args={"tiles": trace.tiles}, work_dir=tmp)
    rtl = run.result
    lint = verilator_lint(run.verilog)

    start = time.perf_counter()
    pysim_cycles = pysim(TileBench(Tailor(**params), trace.tiles, seed)).cycles
    pysim_seconds = time.perf_counter() - start

    y_rtl = _product_from_reads(trace.matrix, rtl.read_data, trace.nonzero)
    lengths = [t["length"] for t in trace.tiles]
    buffets, tailors = tile_transfers(lengths, depth, TAILOR["fifo"],
                                      [t["passes"] for t in trace.tiles])
    return {
        "matrix": str(path), "shape": list(trace.matrix.shape), "nnz": int(trace.matrix.nnz),
        "params": params, "rows_per_tile": ROWS_PER_TILE, "tile_lengths": lengths,
        "overbooked_tiles": sum(n > depth for n in lengths),
        "lint_clean": lint == "",
        "verilator_cycles": rtl.cycles, "verilator_seconds": round(run.seconds, 3),
        "pysim_cycles": pysim_cycles, "pysim_seconds": round(pysim_seconds, 3),
        "transfers": rtl.transfers, "transfers_expected": int(tailors.sum()),
        "buffet_transfers": int(buffets.sum()),
        "spmv_matches_scipy": bool(np.array_equal(y_rtl, trace.matrix @ x.astype(float))),
        "reads_checked": rtl.reads,
    }


def _integer_values(matrix, rng):
    """``(A, source)``: A with its own values when they are integers of the
    engine's value width, else with random ones of that width on its pattern."""
    half = 1 << (ENGINE["value_width"] - 1)
    data = sp.csr_array(matrix).data
    own = bool(np.all(data == np.round(data)) and np.all((-half <= data) & (data < half)))
    a = sp.csr_array(matrix, dtype=np.int64)
    if not own:
        a.data = rng.integers(-half, half, a.nnz)
    return a, "the matrix's" if own else f"random {ENGINE['value_width']}-bit"


def engine_spmv(path, seed):
    """y = A·x computed by the ``spmv_tailor`` engine, against scipy's product."""
    rng = np.random.default_rng(seed)
    matrix = rcm_order(read_matrix(path))
    x = rng.integers(0, 1 << WIDTH, matrix.shape[1])
    a, values = _integer_values(matrix, rng)
    trace = spmv_tiles(a, x, ROWS_PER_TILE)
    stream = spmv_stream(trace, ENGINE["value_width"])
    y_ref = trace.matrix @ x
    params = {**ENGINE, "tile": _tile(trace)}

    golden = y_ref[stream.rows]
    with tempfile.TemporaryDirectory(prefix="sf-demo-") as tmp:
        run = verilator("spmv_tailor", "sparseforge.tb.spmv", params=params, seed=seed,
                        args={"tiles": trace.tiles, "stream": stream, "golden": golden},
                        work_dir=tmp)
    rtl = run.result
    lint = verilator_lint(run.verilog)

    start = time.perf_counter()
    model = pysim(SpmvBench(SpmvTailor(**params), trace.tiles, stream, golden, seed))
    pysim_seconds = time.perf_counter() - start

    y_rtl = np.zeros_like(y_ref)
    y_rtl[stream.rows] = rtl.y
    return {
        "matrix": str(path), "shape": list(a.shape), "nnz": int(a.nnz), "values": values,
        "params": params, "entries": int(stream.index.size), "rows": len(rtl.y),
        "lint_clean": lint == "",
        "verilator_cycles": rtl.cycles, "verilator_seconds": round(run.seconds, 3),
        "pysim_cycles": model.cycles, "pysim_seconds": round(pysim_seconds, 3),
        "owfills": rtl.owfills,
        "spmv_matches_scipy": bool(np.array_equal(y_rtl, y_ref) and model.y == rtl.y),
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
    t = r["tailor"]
    click.echo(f"Tailor (depth {t['params']['depth']}, FIFO region {t['params']['fifo']}) "
               f"holding x tile by tile, {t['rows_per_tile']} rows per tile, one pass per row")
    click.echo(f"  tiles of {min(t['tile_lengths'])}..{max(t['tile_lengths'])} entries, "
               f"{t['overbooked_tiles']} of {len(t['tile_lengths'])} overbook it; "
               f"Verilog lint clean: {t['lint_clean']}")
    click.echo(f"  parent transfers {t['transfers']} (expected {t['transfers_expected']}; "
               f"a Buffet re-filling overbooked tiles every pass: {t['buffet_transfers']})")
    click.echo(f"  Verilator: {t['verilator_cycles']} cycles in {t['verilator_seconds']} s; "
               f"Amaranth simulator: {t['pysim_cycles']} cycles in {t['pysim_seconds']} s")
    click.echo(f"  {t['reads_checked']} read responses match the model and the tile; "
               f"y = A·x from RTL reads equals scipy: {t['spmv_matches_scipy']}")
    e = r["engine"]
    click.echo(f"SpMV engine spmv_tailor: that Tailor and a multiply-accumulate unit "
               f"compute y in hardware ({e['values']} values of A)")
    click.echo(f"  {e['entries']} entries of A's stream in, {e['rows']} sums out, "
               f"{e['owfills']} overwriting fills; Verilog lint clean: {e['lint_clean']}")
    click.echo(f"  Verilator: {e['verilator_cycles']} cycles in {e['verilator_seconds']} s; "
               f"Amaranth simulator: {e['pysim_cycles']} cycles in {e['pysim_seconds']} s")
    click.echo(f"  every y checked against the chained model; y from the RTL equals scipy: "
               f"{e['spmv_matches_scipy']}")
    click.echo("PASS" if r["pass"] else "FAIL")


@click.command()
@click.option("--matrix", type=click.Path(exists=True, dir_okay=False),
              help="Matrix Market file (default: the bundled bcspwr01).")
@click.option("--seed", default=1, show_default=True, help="Seed for x and for the stalls.")
@json_option
def command(matrix, seed, as_json):
    """Generate, simulate and verify the blocks on real data; print a summary."""
    path = matrix or bundled("bcspwr01.mtx")
    runs = {"buffet": buffet_spmv(path, seed), "tailor": tailor_spmv(path, seed),
            "engine": engine_spmv(path, seed)}
    ok = all(r["lint_clean"] and r["spmv_matches_scipy"] for r in runs.values())
    ok = ok and runs["tailor"]["transfers"] == runs["tailor"]["transfers_expected"]
    result = {**runs, "pass": ok}
    emit(result, as_json, _human)
    if not result["pass"]:
        raise SystemExit(1)
