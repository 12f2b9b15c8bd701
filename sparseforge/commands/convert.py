"""``sparseforge convert IN --to FMT -o OUT``: convert a matrix or tensor between formats.

The golden converters of :mod:`sparseforge.sw.conversion` (MINT §V) do the
work with ``--engine sw``; ``--engine rtl`` runs the same conversion through
MINT's converter blocks natively on Verilator (:mod:`sparseforge.tb.convert`)
and reports their cycles. Each block is built once at fixed sizes, whatever the
matrix; a matrix larger than its buffers goes through in passes the host plans.
"""

import time

import click

from sparseforge.cli import OutputFile, emit, json_option, read_input, waves_option
from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import status
from sparseforge.sw import conversion
from sparseforge.sw.formats import read_mtx_in_order
from sparseforge.tb.convert import rtl_convert

_BIG = 10**7  # nonzeros from which converting and writing are announced on stderr


def _block(ctx, param, value):
    """``--block R,C`` as (R, C); the conversion checks the sizes."""
    if value is None:
        return None
    try:
        rows, cols = (int(part) for part in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected R,C (two integers)") from None
    return rows, cols


def _reader(engine, path):
    """What reads IN: for the RTL engine a ``.mtx`` in its file's order, as a converter
    reading it from memory would see it (it sorts it first: MINT's counting sort); the
    format's loader otherwise, which gives COO sorted."""
    if engine == "rtl" and str(path).lower().endswith((".mtx", ".mtx.gz")):
        return read_mtx_in_order
    return conversion.load


def _human(result):
    shape = " x ".join(str(n) for n in result["shape"])
    click.echo(f"{result['input']} ({result['from']}, {shape}, {result['nnz']} nonzeros) -> "
               f"{result['output']} ({result['to']}) in {result['seconds'] * 1e3:.1f} ms")
    for stage in result["stages"] or ():
        passes = f" in {len(stage['passes'])} passes" if len(stage["passes"]) > 1 else ""
        click.echo(f"  {stage['source'].upper()} -> {stage['target'].upper()} on "
                   f"{stage['block']}: {stage['cycles']} cycles{passes}")


@click.command("convert")
@click.argument("source_path", metavar="IN", type=click.Path(dir_okay=False))
@click.option("--to", "to", required=True,
              type=click.Choice(conversion.FORMATS, case_sensitive=False),
              help="Format to convert to.")
@click.option("--block", "block", callback=_block, metavar="R,C",
              help="BSR block size; R and C must divide the matrix's shape.")
@click.option("--run-bits", "run_bits", type=click.IntRange(1, conversion.MAX_RUN_BITS),
              help=f"Width of RLC's run field [default: {conversion.RUN_BITS}, as Eyeriss].")
@click.option("-o", "--output", "output", required=True, type=OutputFile(),
              help="File to write: .npz (sparse formats), .npy (dense), .tns (tensor COO).")
@click.option("--engine", type=click.Choice(["sw", "rtl"]), default="sw", show_default=True,
              help="Golden software converters, or MINT's converter blocks (built once at "
                   "fixed sizes; a larger matrix goes through them in passes).")
@waves_option
@json_option
def command(source_path, to, block, run_bits, output, engine, as_json):
    """Convert the matrix or tensor IN to the format --to and write it to -o.

    IN is a matrix (.mtx, .mtx.gz, .smtx, .npy, or .npz: scipy.sparse or our
    RLC, ZVC and CSF layouts) or a FROSTT .tns tensor. CSR, CSC, BSR, RLC and
    ZVC hold matrices; dense, COO and CSF hold tensors too. With --engine rtl a
    .mtx is read in its file's order and must give each coordinate once.
    """
    source = read_input(source_path, _reader(engine, source_path))
    source_format = conversion.format_of(source)
    wanted = conversion.suffix(to, len(source.shape))
    if not output.endswith(wanted):
        raise ParameterError(f"-o {output}: {to.upper()} is written as a {wanted} file")
    try:
        block, run_bits = conversion.check_request(source, to, block, run_bits)
    except ParameterError as exc:
        raise ParameterError(f"{source_path}: {exc}") from None
    big = conversion.nonzeros(source) >= _BIG
    if big:
        status(f"converting {source_format.upper()} -> {to.upper()}...")
    start = time.perf_counter()
    if engine == "rtl":
        result, stages = rtl_convert(source, to, block=block, run_bits=run_bits)
        cycles = sum(stage.cycles for stage in stages)
    else:
        result = conversion.convert(source, to, block=block, run_bits=run_bits)
        stages, cycles = (), None
    seconds = time.perf_counter() - start
    if big:
        status(f"writing {output}...")
    conversion.save(output, result)
    emit({"input": source_path, "output": output, "from": source_format, "to": to,
          "engine": engine, "shape": list(result.shape), "nnz": conversion.nonzeros(result),
          "block": list(result.blocksize) if to == "bsr" else None,
          "run_bits": result.run_bits if to == "rlc" else None,
          "seconds": seconds, "cycles": cycles,
          "stages": [stage._asdict() for stage in stages] if engine == "rtl" else None},
         as_json, _human)
