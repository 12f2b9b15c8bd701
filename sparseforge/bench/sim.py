"""``sparseforge bench sim``: simulation speed, native Verilator against the Python-driven paths.

Per block (Buffet, Tailor, the SpMV engine) one real-matrix workload: the
demo's SpMV traces (the Buffet's sliding window, the Tailor's tiles, the
engine's A stream) of the largest square matrices in the shared data, one
after another, with fresh x on each round, until the workload reaches the
target cycles (10^7). Random stalls on every stream, rate 0.7.

And the accelerator (``accel``, the 4 x 4 build of ``run accel``, or ``--pes``'s) end to
end on SpMM of nr-bio-dmela (7,393 rows, 51,138 nonzeros) with B of 16 columns: its
cycles per second of simulation proper (wall and CPU: on a machine others share, the wall
rate is the CPU's share), and the whole run's seconds (planning, the memory image, the
design's Verilog and its build, both cached once made, the images, the run, reading Y and
checking it against the golden product) over the simulation proper's, in wall and in
CPU time.

Measured in one run, on the same workload:

- native Verilator (:mod:`sparseforge.tb.native`): stream sources and sinks
  inside the simulator, the clock from a C++ main; cycles per second of the
  run proper, with building the model and loading its images beside it;
- Python-driven Verilator (cocotb, :func:`sparseforge.sim.runners.verilator`)
  and Amaranth's simulator (:func:`sparseforge.sim.runners.pysim`), where
  every cycle crosses into Python: timed on the workload's first
  ``PREFIX_CYCLES`` cycles (the same stalls, so the same cycles as the native
  run's start) and stated so; cocotb's rate is its clock loop's, with its
  start-up beside it.
"""

import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from sparseforge.cli import echo_claims, emit, json_option, seed_option
from sparseforge.commands.demo import ENGINE, ROWS_PER_TILE, TAILOR, WIDTH, workload
from sparseforge.core.data import bundled, shared_data_dir
from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import processor_seconds
from sparseforge.hw.buffet import Buffet
from sparseforge.hw.compose.spmv_tailor import SpmvTailor
from sparseforge.hw.tailor import Tailor
from sparseforge.sim.runners import pysim, verilator
from sparseforge.sw.buffet_program import BuffetProgram
from sparseforge.sw.traces import AStream, spmv_stream, spmv_tiles, spmv_window
from sparseforge.tb import native
from sparseforge.tb.buffet import BuffetBench
from sparseforge.tb.spmv import SpmvBench
from sparseforge.tb.tailor import TileBench

TARGET_CYCLES = 10**7
PREFIX_CYCLES = 20_000
MATRICES = ("graphs/delaunay_n16.mtx", "graphs/bcsstk25_pattern.mtx", "graphs/astro-ph.mtx",
            "suitesparse/pushpull.mtx", "graphs/nr-ca-CondMat.mtx", "graphs/ego-Facebook.mtx")
CYCLES_PER_ITEM = 1.4   # about, for the stalls here: how large a workload to build

KINDS = ("buffet", "tailor", "engine", "accel")
ACCEL = ("graphs/nr-bio-dmela.mtx", "4x4", 16)
"""The accelerator's workload: the matrix, the PE array (``--pes`` chooses another), B's
columns."""

# What the issue asks of the native path (not a paper's claim).
TARGETS = {
    "rate": ("at least 10^7 cycles/s of simulation proper, workloads of 10^7 cycles",
             "issue: RTL at native speed"),
    "vs_pysim": ("at least 300x Amaranth's simulator", "issue: RTL at native speed"),
    "accel_rate": ("a 4x4-PE accelerator at >= 10^6 cycles/s natively",
                   "issue 25: simulation speed"),
    "accel_whole": ("a run's whole time within 2x of its simulation proper; ~7,000 rows "
                    "and 45,000 nonzeros end to end within a minute",
                    "issue 25: simulation speed"),
}


def _status(message):
    click.echo(message, err=True)


def _traces(kind, a, x):
    """One matrix's piece of a block's workload, and its count of stream items."""
    if kind == "buffet":
        trace = spmv_window(a, x)
        return trace, len(trace.program)
    trace = spmv_tiles(a, x, ROWS_PER_TILE)
    items = len(trace.nonzero) + sum(t["passes"] * max(0, t["length"] - TAILOR["depth"]) +
                                     min(t["length"], TAILOR["depth"]) for t in trace.tiles)
    if kind == "engine":
        stream = spmv_stream(trace, ENGINE["value_width"])
        trace = (trace, stream, (trace.matrix @ x)[stream.rows])
    return trace, items


def pieces(kind, paths, seed, target):
    """The matrices' pieces, round after round with fresh x, to about ``target`` cycles."""
    out, items, round_ = [], 0, 0
    while items * CYCLES_PER_ITEM < target:
        for path in paths:
            a, x, _ = workload(path, seed + round_)
            piece, n = _traces(kind, a, x)
            out.append(piece)
            items += n
            if items * CYCLES_PER_ITEM >= target:
                break
        round_ += 1
    return out


def _tile_param(traces):
    longest = max(t["length"] for trace in traces for t in trace.tiles)
    return max(2 * TAILOR["depth"], 1 << (longest - 1).bit_length())


def benches(kind, parts, seed):
    """``(block, params, make(first_only=False), cocotb args of the first piece)``."""
    if kind == "buffet":
        depth = max(2, 1 << (max(t.window for t in parts) - 1).bit_length())
        params = {"depth": depth, "width": WIDTH}
        program = BuffetProgram.concat(t.program for t in parts)
        return ("buffet", params,
                lambda: BuffetBench(Buffet(**params), program, seed),
                {"program": parts[0].program})
    if kind == "tailor":
        params = {**TAILOR, "width": WIDTH, "tile": _tile_param(parts)}
        tiles = [t for trace in parts for t in trace.tiles]
        return ("tailor", params, lambda: TileBench(Tailor(**params), tiles, seed),
                {"tiles": parts[0].tiles})
    params = {**ENGINE, "tile": _tile_param([p[0] for p in parts])}
    tiles = [t for trace, _, _ in parts for t in trace.tiles]
    stream = AStream(*(np.concatenate([getattr(s, f) for _, s, _ in parts])
                       for f in ("index", "value", "row_end", "tile_end", "rows")))
    golden = np.concatenate([g for _, _, g in parts])
    first, head, head_golden = parts[0]
    return ("spmv_tailor", params,
            lambda: SpmvBench(SpmvTailor(**params), tiles, stream, golden, seed),
            {"tiles": first.tiles, "stream": head, "golden": head_golden})


MODULES = {"buffet": "sparseforge.tb.buffet", "tailor": "sparseforge.tb.tailor",
           "spmv_tailor": "sparseforge.tb.spmv"}


def _cocotb(block, params, args, seed, folder):
    """``(cycles, seconds of the clock loop, seconds in all)`` of a cocotb run."""
    run = verilator(block, MODULES[block], params=params, args=args, seed=seed, work_dir=folder)
    return run.result.cycles, run.loop_seconds, run.seconds


def measure(kind, paths, seed, target, prefix):
    """One block's speeds on its workload (see the module docstring)."""
    _status(f"bench sim: {kind}: building the workload ...")
    block, params, make, first = benches(kind, pieces(kind, paths, seed, target), seed)
    _status(f"bench sim: {kind}: native run ...")
    with tempfile.TemporaryDirectory(prefix="sf-bench-sim-") as tmp:
        start = time.perf_counter()
        run = native.run(make(), work_dir=tmp)
        total = time.perf_counter() - start
        _status(f"bench sim: {kind}: {prefix} cycles on Amaranth's simulator and on cocotb ...")
        bench = make()
        bench.stop_at = prefix
        start = time.perf_counter()
        python = pysim(bench)
        pysim_seconds = time.perf_counter() - start
        cycles, cocotb_seconds, cocotb_total = _cocotb(
            block, params, {**first, "stop_at": prefix}, seed, Path(tmp, "prefix"))
    r = run.run
    out = {"block": block, "params": params, "cycles": run.cycles, "native_rate": r.rate,
           "native_run_seconds": r.run_seconds, "native_start_seconds": r.start_seconds,
           "native_build_seconds": r.build_seconds, "native_total_seconds": total,
           "prefix_cycles": python.cycles, "pysim_seconds": pysim_seconds,
           "pysim_rate": python.cycles / pysim_seconds, "cocotb_cycles": cycles,
           "cocotb_seconds": cocotb_seconds,
           "cocotb_start_seconds": cocotb_total - cocotb_seconds,
           "cocotb_rate": cycles / cocotb_seconds}
    out["vs_pysim"] = out["native_rate"] / out["pysim_rate"]
    out["vs_cocotb"] = out["native_rate"] / out["cocotb_rate"]
    return out


def accel_config(pes):
    """The build of ``run accel`` (its defaults) with PE array ``pes`` (``RxC``); a bad
    array is refused here, before any work."""
    from sparseforge.run import accel as run_accel
    from sparseforge.run.tensaurus import pe_array

    return run_accel.config_of(pe_array(pes), 2, 2, 32, 64, 64)


def measure_accel(path, pes, columns, seed):
    """The accelerator's speed on SpMM of ``path`` with B of ``columns`` random columns, on
    the ``pes`` build of :func:`accel_config`, each phase timed: the host's plan and
    memory image, the native run (the design's Verilog and build, found in the cache once
    made; the simulator's start; the run proper) and reading Y back and checking it
    against the golden product."""
    from sparseforge.run import accel as run_accel
    from sparseforge.sw import accel_plan
    from sparseforge.sw.formats import read_matrix
    from sparseforge.tb.accel import AccelBench, AccelHarness, params_of

    _status(f"bench sim: accel: {pes} on {Path(path).name} ...")
    began, cpu_began = time.perf_counter(), processor_seconds()
    rate, _ = run_accel.memory_of(0, run_accel.BYTES_PER_CYCLE)
    config = accel_config(pes)
    a, _ = run_accel.nonzeros(read_matrix(path))
    b = np.random.default_rng(seed).integers(-3, 4, (a.shape[1], columns))
    plan = accel_plan.plan(a, b, "swiftiles", config, seed=seed, kernel="spmm")
    component = AccelHarness(**params_of(config), tile=1 << 16, tags=run_accel.TAGS,
                             data=run_accel.DATA)
    bench = AccelBench(component, plan, a, b, seed, dict.fromkeys(run_accel.RATES, rate))
    host = time.perf_counter() - began
    with tempfile.TemporaryDirectory(prefix="sf-bench-sim-") as tmp:
        start = time.perf_counter()
        done = native.run(bench, work_dir=tmp, progress="bench sim: accel")
        native_seconds = time.perf_counter() - start
    start = time.perf_counter()
    y = bench.from_outputs(done.cycles, done.outputs).y
    if not np.array_equal(y, plan.golden):
        raise click.ClickException("bench sim: accel: Y differs from the golden product")
    read = time.perf_counter() - start
    r = done.run
    whole, cpu = time.perf_counter() - began, processor_seconds() - cpu_began
    return {"block": "accel", "pes": pes, "matrix": Path(path).name, "nnz": int(a.nnz),
            "columns": columns, "cycles": done.cycles, "native_rate": r.rate,
            "native_cpu_rate": r.cpu_rate, "native_run_seconds": r.run_seconds,
            "native_run_cpu_seconds": r.run_cpu_seconds,
            "seconds": {"host": host, "verilog": native_seconds - r.build_seconds
                        - r.start_seconds - r.run_seconds, "build": r.build_seconds,
                        "start": r.start_seconds, "run": r.run_seconds, "read": read,
                        "total": whole},
            "cpu_seconds": cpu, "whole_over_run": whole / r.run_seconds,
            "whole_over_run_cpu": cpu / r.run_cpu_seconds,
            "later_over_run": (whole - native_seconds + r.start_seconds + r.run_seconds)
            / r.run_seconds}


def _human(result):
    blocks = {k: b for k, b in result["blocks"].items() if k != "accel"}
    accel = result["blocks"].get("accel")
    if blocks:
        click.echo(f"{'block':8} {'cycles':>10} | {'native c/s':>11} {'run s':>6} "
                   f"{'start s':>7} {'build s':>7} | {'cocotb c/s':>10} {'pysim c/s':>9} | "
                   f"{'x pysim':>7} {'x cocotb':>8}")
    for kind, b in blocks.items():
        click.echo(f"{kind:8} {b['cycles']:>10} | {b['native_rate']:>11,.0f} "
                   f"{b['native_run_seconds']:>6.2f} {b['native_start_seconds']:>7.3f} "
                   f"{b['native_build_seconds']:>7.1f} | {b['cocotb_rate']:>10,.0f} "
                   f"{b['pysim_rate']:>9,.0f} | {b['vs_pysim']:>7.0f} {b['vs_cocotb']:>8.0f}")
    if accel:
        split = ", ".join(f"{k} {v:.2f}" for k, v in accel["seconds"].items() if k != "total")
        click.echo(f"accel {accel['pes']} SpMM on {accel['matrix']} ({accel['nnz']:,} nonzeros, "
                   f"B of {accel['columns']} columns): {accel['cycles']:,} cycles in "
                   f"{accel['native_run_seconds']:.2f} s ({accel['native_rate']:,.0f} cycles/s), "
                   f"{accel['native_run_cpu_seconds']:.2f} CPU s "
                   f"({accel['native_cpu_rate']:,.0f} cycles/CPU s)")
        click.echo(f"  whole run {accel['seconds']['total']:.1f} s = "
                   f"{accel['whole_over_run']:.2f} x the simulation proper; without the "
                   f"Verilog and the build (made once a configuration) "
                   f"{accel['later_over_run']:.2f} x; in CPU time "
                   f"{accel['cpu_seconds']:.1f} s = {accel['whole_over_run_cpu']:.2f} x the "
                   f"simulation proper's; seconds: {split}")
    click.echo()
    ours = {}
    if blocks:
        ours["rate"] = "; ".join(f"{k}: {b['native_rate'] / 1e6:.1f}M over "
                                 f"{b['cycles'] / 1e6:.1f}M cycles" for k, b in blocks.items())
        ours["vs_pysim"] = "; ".join(f"{k}: {b['vs_pysim']:,.0f}x" for k, b in blocks.items())
    if accel:
        ours["accel_rate"] = (f"{accel['pes']} on {accel['matrix']}: "
                              f"{accel['native_rate'] / 1e6:.2f}M/s wall, "
                              f"{accel['native_cpu_rate'] / 1e6:.2f}M/s CPU")
        ours["accel_whole"] = (f"{accel['whole_over_run']:.2f}x ({accel['later_over_run']:.2f}x "
                               f"built; {accel['whole_over_run_cpu']:.2f}x in CPU time), "
                               f"{accel['seconds']['total']:.0f} s end to end "
                               f"({accel['cpu_seconds']:.0f} CPU s)")
    notes = [] if not blocks else [f"workloads: {result['workload']}",
             f"Amaranth's simulator and cocotb are timed on each workload's first "
             f"{result['prefix_cycles']} cycles; cocotb's rate is its clock loop's, its "
             "start-up and building the bench ("
             + ", ".join(f"{b['cocotb_start_seconds']:.1f} s" for b in blocks.values())
             + ") apart.",
             "native start is loading the images in the simulator; native total "
             "(exporting the design, writing the images, the run, reading and checking "
             "every output): " + ", ".join(f"{k} {b['native_total_seconds']:.1f} s"
                                           for k, b in blocks.items())]
    echo_claims([(key, ours[key], *TARGETS[key]) for key in TARGETS if key in ours], notes,
                (11, 62), ("measure", "ours (this run)", "target"))


@click.command("sim")
@click.option("--quick", is_flag=True, help="The bundled matrix, 10^5 cycles, no accelerator "
                                            "(for tests).")
@click.option("--only", "only", multiple=True, type=click.Choice(KINDS),
              help="Measure these alone (repeatable); by default all (the accelerator when "
                   "the shared data holds its matrix).")
@click.option("--pes", default=ACCEL[1], show_default=True,
              help="The accelerator's PE array, RxC.")
@seed_option(1, "Seed of x, A's values and the stalls.")
@json_option
def command(quick, only, pes, seed, as_json):
    """Cycles per second: native Verilator, cocotb and Amaranth's simulator, on real workloads;
    the accelerator's end to end."""
    root = shared_data_dir()
    paths = ([bundled("bcspwr01.mtx")] if quick or root is None
             else [root / "matrices" / m for m in MATRICES])
    target, prefix = (10**5, 2_000) if quick else (TARGET_CYCLES, PREFIX_CYCLES)
    kinds = only or KINDS[:3 if quick or root is None else 4]
    if "accel" in kinds and root is None:
        raise ParameterError(f"bench sim --only accel: no shared data holds {ACCEL[0]}")
    if "accel" in kinds:
        accel_config(pes)
    blocks = {kind: measure(kind, paths, seed, target, prefix)
              for kind in kinds if kind != "accel"}
    if "accel" in kinds:
        blocks["accel"] = measure_accel(root / "matrices" / ACCEL[0], pes, ACCEL[2], seed)
    result = {"workload": ", ".join(Path(p).name for p in paths) + " (rounds with fresh x)",
              "target_cycles": target, "prefix_cycles": prefix, "seed": seed,
              "blocks": blocks}
    emit(result, as_json, _human)
    if any(b["cycles"] < target for k, b in blocks.items() if k != "accel"):
        click.echo(f"note: a workload fell short of {target} cycles", err=True)
    sys.stdout.flush()
