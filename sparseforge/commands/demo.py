"""``sparseforge demo``: generate, simulate and verify blocks on a real matrix.

SpMV y = A·x on a real square matrix (RCM-ordered; A's own values where they
are integers of 16 bits, else random ones on its pattern; x random 16-bit),
with x held on chip three ways:

- a Buffet holds a sliding window of x (the window trace);
- a Tailor smaller than the tiles holds x tile by tile, one tile per block
  of rows and one pass over it per row; tiles that overbook it stream their
  bumped part once per pass;
- the SpMV engine (``spmv_tailor``) runs that same tiling in hardware: a
  Tailor holding x and a multiply-accumulate unit reading it for A's stream.

Each runs natively on Verilator (stream sources and sinks inside the
simulator, random stalls on every stream) at any size, and, where it takes
seconds, on Amaranth's simulator too, which must take the very same cycles.
y recomputed from the Buffet's and the Tailor's read responses, and the
engine's own y, must equal scipy's integer product exactly.
"""

import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np
import scipy.sparse as sp

from ..cli import emit, json_option, read_input, seed_option
from ..core.data import bundled
from ..core.errors import ParameterError
from ..core.export import verilog_text
from ..core.tools import verilator_lint
from ..hw.buffet import Buffet
from ..hw.compose.spmv_tailor import SpmvTailor
from ..hw.tailor import Tailor
from ..sim.runners import pysim
from ..sw.formats import read_matrix
from ..sw.traces import rcm_order, spmv_stream, spmv_tiles, spmv_window
from ..sw.traffic import tile_transfers
from ..tb import native
from ..tb.buffet import BuffetBench, port
from ..tb.spmv import SpmvBench
from ..tb.tailor import TileBench

WIDTH = 16
TAILOR = {"depth": 8, "fifo": 2}     # smaller than most tiles of 6 rows
ROWS_PER_TILE = 6
ENGINE = {**TAILOR, "x_width": WIDTH, "value_width": 16, "acc_width": 48}
PYSIM_CYCLES = 40_000
"""Amaranth's simulator runs a design only up to this many cycles (tens of seconds)."""


def _status(message):
    click.echo(message, err=True)


def workload(path, seed):
    """``(A, x, values)``: A RCM-ordered, integer-valued; x random; whose values A has."""
    matrix = read_input(path, read_matrix)
    if matrix.shape[0] != matrix.shape[1] or matrix.nnz == 0:
        raise ParameterError(f"{path}: the demo needs a square matrix with nonzeros, not "
                             f"{matrix.shape[0]} x {matrix.shape[1]} with {matrix.nnz}")
    rng = np.random.default_rng(seed)
    half = 1 << (ENGINE["value_width"] - 1)
    data = matrix.data
    own = (not np.iscomplexobj(data) and bool(np.all(data == np.round(data)))
           and bool(np.all((-half <= data) & (data < half))))
    values = data.astype(np.int64) if own else rng.integers(-half, half, matrix.nnz)
    a = rcm_order(sp.csr_array((values, (matrix.row, matrix.col)), shape=matrix.shape))
    x = rng.integers(0, 1 << WIDTH, a.shape[1])
    return a, x, "the matrix's" if own else f"random {ENGINE['value_width']}-bit"


def _simulate(name, make, params, waves):
    """Run the bench ``make()`` natively, and on Amaranth's simulator where that takes seconds.

    ``waves``, a folder or ``None``, receives the native run's waveform.
    Returns ``(bench, native result, pysim result or None, report)``.
    """
    _status(f"  {name}: native run on Verilator...")
    bench = make()
    with tempfile.TemporaryDirectory(prefix="sf-demo-") as tmp:
        run = native.run(bench, work_dir=tmp, waves=waves and Path(waves, f"{name}.fst"))
    report = {"lint_clean": verilator_lint_text(name, params) == "",
              "verilator_cycles": run.cycles,
              "verilator_seconds": round(run.run.run_seconds, 4),
              "verilator_build_seconds": round(run.run.build_seconds, 2),
              "verilator_cycles_per_second": round(run.run.rate)}
    if run.cycles > PYSIM_CYCLES:
        report["pysim_skipped"] = (f"{run.cycles} cycles would take minutes on Amaranth's "
                                   f"simulator (a few thousand cycles/s); it runs designs of "
                                   f"up to {PYSIM_CYCLES} cycles here")
        return bench, run, None, report
    _status(f"  {name}: Amaranth's simulator...")
    start = time.perf_counter()
    python = pysim(make())
    report.update(pysim_cycles=python.cycles,
                  pysim_seconds=round(time.perf_counter() - start, 3))
    return bench, run, python, report


def verilator_lint_text(name, params):
    """``verilator --lint-only -Wall`` on block ``name``'s Verilog ('' when clean)."""
    text, _ = verilog_text(name, params)
    with tempfile.TemporaryDirectory(prefix="sf-lint-") as tmp:
        path = Path(tmp, f"{name}.v")
        path.write_text(text)
        return verilator_lint(path)


def _product_from_reads(a, got, served):
    """y = A·x from the x values the RTL returned, ``served[k]`` = CSR position of read k."""
    served = np.asarray(served)
    x_at = np.zeros(a.nnz, dtype=np.int64)
    x_at[served[served >= 0]] = np.asarray(got, dtype=np.int64)[served >= 0]
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    return np.bincount(rows, weights=a.data * x_at, minlength=a.shape[0]).astype(np.int64) \
        if a.nnz else np.zeros(a.shape[0], dtype=np.int64)


def buffet_spmv(a, x, seed, waves=None):
    """The SpMV window trace of ``a`` through a Buffet."""
    trace = spmv_window(a, x)
    depth = max(2, 1 << (trace.window - 1).bit_length())
    params = {"depth": depth, "width": WIDTH}
    _, run, python, report = _simulate("buffet", lambda: BuffetBench(
        Buffet(**params), trace.program, seed), params, waves)
    got = np.asarray(run.outputs[port("read_data")], dtype=np.int64)
    ops = trace.program.counts()
    y = _product_from_reads(trace.matrix, got, np.arange(trace.matrix.nnz))
    return {"window": trace.window, "params": params, "ops": ops, **report,
            "reads_checked": len(got),
            "reads_match_x": bool(np.array_equal(got, trace.x[trace.reads])),
            "spmv_matches_scipy": bool(np.array_equal(y, trace.matrix @ x)),
            "same_cycles": python is None or python.cycles == run.cycles}


def _tile(trace):
    """The Tailor's ``tile`` parameter for ``trace``: its longest tile, above the depth."""
    longest = max(t["length"] for t in trace.tiles)
    return max(2 * TAILOR["depth"], 1 << (longest - 1).bit_length())


def tailor_spmv(a, x, seed, waves=None):
    """The tiled SpMV trace of ``a`` through a small Tailor."""
    trace = spmv_tiles(a, x, ROWS_PER_TILE)
    params = {**TAILOR, "width": WIDTH, "tile": _tile(trace)}
    bench, run, python, report = _simulate("tailor", lambda: TileBench(
        Tailor(**params), trace.tiles, seed), params, waves)
    got = np.asarray(run.outputs[port("read_data")], dtype=np.int64)
    y = _product_from_reads(trace.matrix, got, trace.nonzero)
    lengths = [t["length"] for t in trace.tiles]
    buffets, tailors = tile_transfers(lengths, TAILOR["depth"], TAILOR["fifo"],
                                      [t["passes"] for t in trace.tiles])
    return {"params": params, "rows_per_tile": ROWS_PER_TILE,
            "tiles": len(lengths), "longest_tile": max(lengths),
            "overbooked_tiles": sum(n > TAILOR["depth"] for n in lengths), **report,
            "transfers": int(bench.plan.transfers), "transfers_expected": int(tailors.sum()),
            "buffet_transfers": int(buffets.sum()), "reads_checked": len(got),
            "spmv_matches_scipy": bool(np.array_equal(y, trace.matrix @ x)),
            "same_cycles": python is None or python.cycles == run.cycles}


def engine_spmv(a, x, seed, waves=None):
    """y = A·x computed by the ``spmv_tailor`` engine, against scipy's product."""
    trace = spmv_tiles(a, x, ROWS_PER_TILE)
    stream = spmv_stream(trace, ENGINE["value_width"])
    y_ref = trace.matrix @ x
    golden = y_ref[stream.rows]
    params = {**ENGINE, "tile": _tile(trace)}
    _, run, python, report = _simulate("spmv_tailor", lambda: SpmvBench(
        SpmvTailor(**params), trace.tiles, stream, golden, seed), params, waves)
    y = np.zeros_like(y_ref)
    y[stream.rows] = run.outputs["y"]
    return {"params": params, "entries": int(stream.index.size), "rows": len(golden),
            **report, "spmv_matches_scipy": bool(np.array_equal(y, y_ref)),
            "same_cycles": python is None or python.cycles == run.cycles}


def _line(r):
    """How a design ran on both simulators."""
    native_ = (f"Verilator (native): {r['verilator_cycles']} cycles in "
               f"{r['verilator_seconds']} s ({r['verilator_cycles_per_second']:,} cycles/s)")
    if "pysim_skipped" in r:
        return f"{native_}; Amaranth simulator skipped: {r['pysim_skipped']}"
    return (f"{native_}; Amaranth simulator: {r['pysim_cycles']} cycles in "
            f"{r['pysim_seconds']} s (the same cycles: {r['same_cycles']})")


def _human(r):
    click.echo(f"SpMV on {Path(r['matrix']).name} ({r['shape'][0]}x{r['shape'][1]}, "
               f"{r['nnz']} nonzeros, RCM-ordered, {r['values']} values of A)")
    b = r["buffet"]
    click.echo(f"Buffet holding a sliding window of x: window {b['window']} entries -> depth "
               f"{b['params']['depth']}; Verilog lint clean: {b['lint_clean']}")
    click.echo(f"  {b['ops']['fill']} fills, {b['ops']['read']} reads, {b['ops']['shrink']} "
               f"shrinks under random stalls on every stream")
    click.echo(f"  {_line(b)}")
    click.echo(f"  {b['reads_checked']} reads return x; y = A·x from them equals scipy: "
               f"{b['spmv_matches_scipy']}")
    t = r["tailor"]
    click.echo(f"Tailor (depth {t['params']['depth']}, FIFO region {t['params']['fifo']}) "
               f"holding x tile by tile, {t['rows_per_tile']} rows per tile, one pass per row")
    click.echo(f"  {t['tiles']} tiles of up to {t['longest_tile']} entries, "
               f"{t['overbooked_tiles']} overbook it; Verilog lint clean: {t['lint_clean']}")
    click.echo(f"  parent transfers {t['transfers']} (expected {t['transfers_expected']}; "
               f"a Buffet re-filling overbooked tiles every pass: {t['buffet_transfers']})")
    click.echo(f"  {_line(t)}")
    click.echo(f"  {t['reads_checked']} reads return the tile's element; y = A·x from them "
               f"equals scipy: {t['spmv_matches_scipy']}")
    e = r["engine"]
    click.echo("SpMV engine spmv_tailor: that Tailor and a multiply-accumulate unit compute y "
               "in hardware")
    click.echo(f"  {e['entries']} entries of A's stream in, {e['rows']} sums out; Verilog "
               f"lint clean: {e['lint_clean']}")
    click.echo(f"  {_line(e)}")
    click.echo(f"  y from the RTL equals scipy: {e['spmv_matches_scipy']}")
    click.echo("PASS" if r["pass"] else "FAIL")


@click.command()
@click.option("--matrix", type=click.Path(dir_okay=False),
              help="Matrix Market file of a square matrix (default: the bundled bcspwr01).")
@seed_option(1, "Seed for A's values (where the file has none), x and the stalls.")
@click.option("--waves", type=click.Path(file_okay=False, writable=True),
              help="Write each native run's waveform (FST) into this folder.")
@json_option
def command(matrix, seed, waves, as_json):
    """Generate, simulate and verify the blocks on a real matrix; print a summary."""
    path = matrix or bundled("bcspwr01.mtx")
    if waves:
        Path(waves).mkdir(parents=True, exist_ok=True)
    _status(f"demo: reading {path}")
    a, x, values = workload(path, seed)
    runs = {}
    for key, run in (("buffet", buffet_spmv), ("tailor", tailor_spmv), ("engine", engine_spmv)):
        runs[key] = run(a, x, seed, waves)
    ok = all(r["lint_clean"] and r["spmv_matches_scipy"] and r["same_cycles"]
             for r in runs.values())
    ok = ok and runs["buffet"]["reads_match_x"]
    ok = ok and runs["tailor"]["transfers"] == runs["tailor"]["transfers_expected"]
    result = {"matrix": str(path), "shape": list(a.shape), "nnz": int(a.nnz), "values": values,
              **runs, "pass": bool(ok)}
    emit(result, as_json, _human)
    if not result["pass"]:
        sys.exit(1)
