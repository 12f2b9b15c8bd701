"""``sparseforge run tensaurus``: a tensor kernel through the generated Tensaurus RTL.

Plans the run (:func:`sparseforge.sw.tensaurus_job.plan`: the CISS stream, the padded
factors, the golden output, the input and output tiles), builds the accelerator for it,
simulates it natively on Verilator with the memories answering at random (the tensor's
out of order) and the MSU's writes taken into the output's memory (in the direct mode,
a memory the MSU also reads), writes the output,
and reports its cycles and its measures as ``bench tensaurus`` does
(:func:`~sparseforge.sw.tensaurus_job.measures`), the paper's definition (Sec. 7.1, Fig.
7) beside ours, each labelled. The output must equal the golden kernel's exactly; a
difference is a hardware fault, reported and exit 1.
"""

from pathlib import Path

import click
import numpy as np

from sparseforge.cli import OutputFile, emit, json_option, read_input, seed_option, waves_option
from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import status
from sparseforge.sw.formats import read_matrix, read_npy, read_tensor
from sparseforge.sw.tensaurus_job import DENSE, KERNELS, measures, plan


def pe_array(text):
    rows, _, cols = text.lower().partition("x")
    try:
        r, c = int(rows), int(cols)
    except ValueError:
        raise ParameterError(f"--pes {text}: expected RxC, e.g. 2x2") from None
    if not (1 <= r <= 16 and 1 <= c <= 16):
        raise ParameterError(f"--pes {text}: rows and columns from 1 to 16")
    return r, c


def _operand(path, kernel):
    path = str(path)
    if path.lower().endswith(".npy"):
        array = read_npy(path)
        if kernel in DENSE:
            return array
        raise ParameterError(f"{path}: {kernel} takes a sparse operand (.tns, .mtx, .npz)")
    if kernel in DENSE:
        raise ParameterError(f"{path}: {kernel} takes a dense operand (.npy)")
    if path.lower().endswith((".tns", ".tns.gz")):
        return read_tensor(path)
    return read_matrix(path)


def _human(r):
    ranks = f"{r['r1']} x {r['rank']}" if KERNELS[r["kernel"]] == "ttmc" else r["rank"]
    click.echo(f"{r['kernel']} on {r['input']}: {r['pes']} PEs x {r['vlen']} lanes, rank "
               f"{ranks} as tlen={r['tlen']}; {r['nnz']} nonzeros in {r['entries']} CISS "
               f"entries")
    click.echo(f"  cycles       {r['cycles']:,} in {r['tiles']:,} tile(s) of {r['spm_rows']:,} "
               f"rows ({r['load_cycles']:,} waiting for matrices to load, "
               f"{r['compute_cycles']:,} computing), " + (
                   f"accumulated in memory: {r['drains']:,} drains, each a read and a write"
                   if r["direct"] else
                   f"{r['out_tiles']:,} output tile(s) of {r['out_rows']:,} rows"))
    click.echo("  memory       " + ("DDR4-2400, a channel a port, the accelerator at 1 GHz"
                                    if r["memory"] == "ddr4" else
                                    f"answering {r['memory_rate']:.0%} of cycles, out of "
                                    "order within the reads in flight"))
    click.echo(f"  ops          {r['useful_ops']:,} useful, as the paper counts (a multiply "
               f"and an add a MAC, real values only); {r['executed_ops']:,} executed, padded "
               "lanes included")
    click.echo(f"  ops/B        {r['intensity_useful_ops_per_byte']:.2f} useful ops a byte, "
               f"{r['bytes']:,.0f} bytes moved")
    click.echo(f"  ops/c        {r['useful_ops_per_cycle']:.2f} useful ops a cycle over the "
               "whole run")
    for whose, by, formula in (("ours", "", "MACs x 2"),
                               ("the paper's", "paper_", "MACs x 2 x 0.5")):
        click.echo(f"  util         {whose}, of peak {formula} = "
                   f"{r[by + 'peak_ops_per_cycle']:g} ops/cycle: "
                   f"{r[by + 'utilization_useful']:.1%} computing, "
                   f"{r[by + 'utilization_useful_with_loading']:.1%} over the whole run")
    click.echo(f"  exec         {r['utilization_executed']:.1%} of our peak computing, padded "
               "lanes included")
    if r["active_pes"] < r["array_pes"]:
        click.echo(f"  PEs          {r['active_pes']} of {r['pes']} compute (SpMV and GEMV: the "
                   "first column); the peaks are the whole array's")
    click.echo(f"  roof         one memory, {r['bandwidth_bytes_per_cycle']:g} bytes a cycle "
               f"(the widest port's word): ours {r['attainable_ops_per_cycle']:.2f} ops/cycle "
               f"({r['of_attainable']:.0%} of it reached), the paper's "
               f"{r['paper_attainable_ops_per_cycle']:.2f}")
    click.echo(f"  output       {r['out']}: equal to the golden kernel")


@click.command("tensaurus")
@click.option("--kernel", type=click.Choice(list(KERNELS)), required=True)
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--factors", "factor", required=True, type=click.Path(dir_okay=False),
              help="B.npy (then C.npy for the MTTKRP and TTMc kernels, as the next "
                   "argument; in TTMc their ranks may differ).")
@click.option("--pes", default="2x2", show_default=True, help="The PE array, RxC.")
@click.option("--vlen", type=click.IntRange(1, 16), default=2, show_default=True)
@click.option("--dw", type=click.IntRange(2, 32), default=16, show_default=True,
              help="Bits of a value (signed): every value of the tensor and factors fits.")
@click.option("--acc-width", type=click.IntRange(2, 64), default=32, show_default=True,
              help="Bits of an accumulator (signed): every output value fits.")
@click.option("--spm-rows", type=click.IntRange(2, 1 << 16), default=None,
              help="Rows of each operand a scratchpad half holds: the run goes in tiles, "
                   "each loading while the one before computes (default: one tile).")
@click.option("--out-rows", type=click.IntRange(1, 1 << 20), default=None,
              help="Output rows the MSU holds a half: the output goes in output tiles of N "
                   "rows, each written to memory while the next sums (default: one).")
@click.option("--accumulate", type=click.Choice(["buffer", "memory", "auto"]),
              default="buffer", show_default=True,
              help="Where the MSU sums the output: in its buffer, in output tiles of "
                   "--out-rows; in memory (Section 5.2.5's direct mode: one output tile, "
                   "each drain read and written); or auto: in memory where the output needs "
                   "several output tiles and that moves fewer bytes.")
@click.option("--out", "out", required=True, type=OutputFile(".npy"),
              help="Where to write the output (.npy).")
@click.option("--memory-rate", type=click.FloatRange(0.05, 1.0), default=1.0,
              show_default=True,
              help="The chance a memory answers on a cycle (the tensor's out of order).")
@click.option("--memory", type=click.Choice(["random", "ddr4"]), default="random",
              show_default=True,
              help="The memories: answering at --memory-rate, out of order within the "
                   "TLU's and MLU's reads; or DDR4-2400 timed, a channel each, the "
                   "accelerator at 1 GHz.")
@seed_option(1, "Seed of the memories' random latency and the streams' stalls.")
@waves_option
@json_option
def command(kernel, paths, factor, pes, vlen, dw, acc_width, spm_rows, out_rows, accumulate,
            out, memory_rate, memory, seed, as_json):
    """TENSOR through the Tensaurus RTL: ``--kernel K TENSOR --factors B.npy [C.npy]``.

    The output is written as the golden kernel gives it: ``I x R`` (MTTKRP, MM; SpMV
    and GEMV ``I x 1``) or ``I x R1 x R2`` (TTMc, B of rank R1 and C of R2)."""
    from sparseforge.hw.compose.tensaurus import Tensaurus
    from sparseforge.sw.tensaurus_host import params_for
    from sparseforge.tb.tensaurus import simulate

    rows, cols = pe_array(pes)
    tensor_path, *more = paths
    factors = [read_npy(p) for p in (factor, *more)]
    operand = read_input(tensor_path, lambda p: _operand(p, kernel))
    job = plan(kernel, operand, factors, rows, cols, vlen, dw=dw, acc_width=acc_width,
               spm_rows=spm_rows, names=[tensor_path, factor, *more], out_rows=out_rows,
               direct={"buffer": False, "memory": True, "auto": "auto"}[accumulate])
    params = params_for(job)
    status(f"run tensaurus: {job.nnz:,} nonzeros in {len(job.tiles):,} tile(s) on "
           f"{rows}x{cols} PEs, simulating...")
    component = Tensaurus(**params)
    rates = {"start": 1.0, "tensor": memory_rate, "matrix": memory_rate, "out": 1.0}
    result = simulate(component, job, seed, rates, progress="run tensaurus",
                      memory="dram" if memory == "ddr4" else "random")
    if not np.array_equal(result.output, job.golden):
        bad = np.argwhere(result.output != job.golden)[0]
        raise click.ClickException(f"hardware fault: output{tuple(bad)} is "
                                   f"{result.output[tuple(bad)]}, the golden kernel's "
                                   f"{job.golden[tuple(bad)]} (replay with --seed {seed})")
    np.save(Path(out), result.output)
    figures = measures(job, result.cycles, result.compute_cycles)
    emit({"kernel": kernel, "input": tensor_path, "pes": f"{rows}x{cols}", "vlen": vlen,
          "rank": job.rank, "r1": job.r1, "tlen": job.tlen, "nnz": job.nnz,
          "entries": job.entries, "tiles": len(job.tiles), "spm_rows": job.spm_rows,
          "out_tiles": sum(tile.closes for tile in job.tiles), "out_rows": job.out_tile_rows,
          "direct": job.direct, "drains": job.drains(component.r1),
          "cycles": result.cycles,
          "load_cycles": result.load_cycles, "compute_cycles": result.compute_cycles,
          "memory_rate": memory_rate, "memory": memory, "out": out,
          "equal_to_golden": True, "params": params, **figures}, as_json, _human)
