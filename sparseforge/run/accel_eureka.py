"""``sparseforge run accel --kernel pruned-gemm W --factors X.npy``: Y = W X of a pruned
layer on the accelerator's Eureka build, natively on Verilator.

W is read as a pruned layer in int8 (:func:`~sparseforge.sw.layers.int8_layer`: a DLMC
pattern gets seeded values, real values are quantized per layer keeping every nonzero),
planned by the host's optimal SUDS scheduler and laid out as its block records
(:mod:`sparseforge.sw.accel_eureka`); the run goes through the same bench, memory and
register programming as the other kernels (:mod:`sparseforge.run.accel`), and Y, read
back from memory, must equal W X exactly (a difference is a hardware fault: exit 1).
"""

from pathlib import Path

import click
import numpy as np

from sparseforge.cli import emit, read_input
from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import status
from sparseforge.run.accel import DATA, RATES, TAGS, checked, memory_of, run_natively, timing
from sparseforge.sw import accel_eureka, accel_eureka_model, layers
from sparseforge.sw.formats import read_npy

SUB_ARRAYS = (1, 4)
"""The least and most 4x4 sub-arrays side by side (``--pes``)."""


def sub_arrays(text):
    """The Eureka build's sub-arrays from ``--pes N``."""
    try:
        n = int(text)
    except ValueError:
        raise ParameterError(f"--pes {text}: pruned-gemm takes a number of 4x4 sub-arrays, "
                             "e.g. 2") from None
    if not SUB_ARRAYS[0] <= n <= SUB_ARRAYS[1]:
        raise ParameterError(f"--pes {n}: pruned-gemm takes {SUB_ARRAYS[0]} to "
                             f"{SUB_ARRAYS[1]} sub-arrays side by side")
    return n


def operands(paths, factors, seed):
    """``(W in int8, X)`` from the layer's path and X's; ParameterError in one line where
    W is no pruned layer's matrix or X no integer matrix."""
    if len(paths) != 1:
        raise ParameterError(f"pruned-gemm takes one layer W, not {len(paths)} files")
    (path,) = paths
    if str(path).lower().endswith((".tns", ".tns.gz")):
        raise ParameterError(f"{path}: a tensor; pruned-gemm takes a pruned layer's weight "
                             "matrix (.smtx, .mtx)")
    if factors is None:
        raise ParameterError("pruned-gemm needs --factors X.npy (W's columns x N integers)")
    w = read_input(path, lambda p: layers.int8_layer(p, seed))
    x = read_npy(factors)
    if not np.issubdtype(x.dtype, np.integer):
        raise ParameterError(f"{factors}: {x.dtype} values; the MACs compute on int8")
    return w, x


def pruned_gemm(paths, factors, out, pes, compaction, mem_latency, mem_bytes_per_cycle,
                seed, as_json, laps):
    """``run accel --kernel pruned-gemm``: Y = W X on the accelerator's Eureka build."""
    from sparseforge.tb.accel import AccelBench, AccelHarness, params_of

    rate, memory = memory_of(mem_latency, mem_bytes_per_cycle)
    n = sub_arrays(pes)
    w, x = operands(paths, factors, seed)
    laps("input")
    config = accel_eureka.EurekaConfig(compaction=compaction, cols=n)
    plan = accel_eureka.plan(w, x, config)
    laps("plan")
    model = accel_eureka_model.predict(plan, memory, data=DATA)
    laps("model")
    status(f"run accel: W X, {len(plan.records)} blocks sent of {plan.grid[0] * plan.grid[1]},"
           f" {plan.panels} pass(es); simulating...")
    component = AccelHarness(**params_of(config), tags=TAGS, data=DATA)
    bench = AccelBench(component, plan, w, x, seed, dict.fromkeys(RATES, rate), mem_latency)
    laps("image")
    run = checked(run_natively(bench, laps), plan.golden, seed)
    np.save(Path(out), run.y)
    laps("check")
    emit({"kernel": "pruned-gemm", "input": paths[0], "shape": list(plan.shape),
          "nnz": int(plan.w.nnz), "compaction": compaction, "sub_arrays": n,
          "blocks": plan.grid[0] * plan.grid[1], "blocks_sent": len(plan.records),
          "passes": plan.panels, "mem_latency": mem_latency,
          "mem_bytes_per_cycle": mem_bytes_per_cycle, "cycles": run.cycles,
          "array_cycles": accel_eureka.array_cycles(plan),
          "dense_cycles": accel_eureka.dense_cycles(plan),
          "dram_bytes_read": run.bytes_read, "dram_bytes_written": run.bytes_written,
          "model_cycles": model.cycles, "model_error": model.cycles / run.cycles - 1,
          "model_bytes_read": model.bytes_read, "model_bytes_written": model.bytes_written,
          "dram_bursts": run.dram, "model_dram_bursts": model.dram_bursts,
          **timing(laps, run.cycles), "out": out,
          "equal_to_golden": True}, as_json, _human)


def _human(r):
    m, k, n = r["shape"]
    click.echo(f"pruned-gemm on {r['input']}: W {m} x {k} ({r['nnz']:,} nonzeros), X "
               f"{k} x {n}")
    click.echo(f"  build        {r['sub_arrays']} Eureka 4x4 sub-array(s) side by side, P = "
               f"{r['compaction']}: {r['blocks_sent']:,} of {r['blocks']:,} blocks sent, "
               f"{r['passes']} pass(es)")
    click.echo(f"  cycles       {r['cycles']:,} (DDR4-2400, the accelerator at 1 GHz); the "
               f"host model predicts {r['model_cycles']:,} ({r['model_error']:+.1%}); the "
               f"array computes {r['array_cycles']:,} (SUDS's optimal schedule; dense "
               f"mode {r['dense_cycles']:,})")
    click.echo(f"  memory       {r['dram_bytes_read']:,} bytes read, "
               f"{r['dram_bytes_written']:,} written (the host: {r['model_bytes_read']:,} "
               f"and {r['model_bytes_written']:,})")
    split = ", ".join(f"{k} {v:.2f}" for k, v in r["seconds"].items() if k != "total")
    click.echo(f"  simulation   {r['sim_cycles_per_second']:,.0f} cycles a second; the whole "
               f"run {r['seconds']['total']:.1f} s ({split})")
    click.echo(f"  output       {r['out']}: equal to W X")
