"""``sparseforge suds``: Eureka cycle counts of one weight matrix (Eureka Sections 3-3.3)."""

from pathlib import Path

import click
import numpy as np
import scipy.sparse as sp

from sparseforge.cli import emit, json_option, read_input, seed_option
from sparseforge.core.errors import ParameterError
from sparseforge.sw import systolic
from sparseforge.sw.compaction import check_compaction
from sparseforge.sw.eureka_cycles import BLOCK_FIGURES, SYSTOLIC_FIGURES, suds_report
from sparseforge.sw.eureka_format import operand_codes
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.layers import seeded_int8


@click.command("suds")
@click.argument("weights", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--compaction", "-P", "compaction", type=click.Choice(["1", "2", "4"]),
              default="4", show_default=True,
              help="Compaction factor P: a block is 4 rows x 4P columns.")
@click.option("--systolic-rows", type=click.IntRange(1, 1024), default=2, show_default=True,
              help="Systolic rows of 4x4 sub-arrays for the scheduling figures.")
@seed_option(0, "Seed of the nonzero int8 values given to a file without values.")
@json_option
def command(weights, compaction, systolic_rows, seed, as_json):
    """Cycles of the weight matrix WEIGHTS (.mtx, .npy, DLMC .smtx) on Eureka.

    Rows of WEIGHTS are output channels. Prints the cycles summed over all
    4 x 4P blocks for dense, 2:4, compaction alone, greedy and optimal SUDS and
    the one-sided ideal; the same on a systolic array of 4x4 sub-arrays, with
    and without systolic scheduling; and the size of the encoded filter
    stream, which is decoded again and checked against the input.
    """
    compaction = check_compaction(int(compaction))
    systolic.check_rows(systolic_rows)
    matrix = read_input(weights, read_matrix)
    codes, value_width, values_from = _operands(weights, matrix, seed)
    coded = sp.coo_array((codes, (matrix.row, matrix.col)), shape=matrix.shape)
    del matrix  # the codes replace its values: free them before the report's peak
    result = {"file": str(weights), "shape": list(coded.shape), "nnz": int(coded.nnz),
              "values": values_from, "compaction": compaction}
    result.update(suds_report(coded, compaction, systolic_rows, value_width))
    emit(result, as_json, _print_table)


def _operands(path, matrix, seed):
    """Integer operand codes of ``matrix``'s values, their width, and where they came from.

    A file without values (DLMC ``.smtx``; a Matrix Market pattern, which
    reads back as all ones) gets nonzero int8 values drawn from ``seed``.
    Integer values are kept, real ones become FP16 codes.
    """
    if np.iscomplexobj(matrix.data):
        raise ParameterError(f"{path}: complex weights are not supported")
    if str(path).lower().endswith((".smtx", ".smtx.gz")) or (matrix.data == 1).all():
        return seeded_int8(matrix.nnz, seed), 8, f"int8 from seed {seed}"
    codes, width = operand_codes(matrix.data)
    integer = np.issubdtype(matrix.data.dtype, np.integer)
    return codes, width, "file" if integer else "file, as FP16"


def _print_table(result):
    """The human-readable report."""
    rows, width = result["block_shape"]
    shape = "x".join(map(str, result["shape"]))
    click.echo(f"{result['file']}: {shape}, {result['nnz']} nonzeros, P={result['compaction']}, "
               f"{result['blocks']} blocks of {rows}x{width}")
    dense = result["cycles"]["dense"]
    click.echo(f"\n{'summed over blocks':30} {'cycles':>10} {'speedup':>8}")
    for key, label in BLOCK_FIGURES:
        cycles = result["cycles"][key]
        click.echo(f"{label:30} {cycles:>10} {_speedup(dense, cycles):>8}")
    array = result["systolic"]
    dense = array["dense"]["cycles"]
    click.echo(f"\n{'systolic array, ' + str(array['rows']) + ' rows':30} {'cycles':>10} "
               f"{'speedup':>8} {'bubbles':>10}")
    for key, label, _, _ in SYSTOLIC_FIGURES:
        cycles, bubbles = array[key]["cycles"], array[key]["bubbles"]
        click.echo(f"{label:30} {cycles:>10} {_speedup(dense, cycles):>8} {bubbles:>10}")
    stream = result["stream"]
    click.echo(f"\nfilter stream: {stream['words']} words of {stream['word_width']} bits, "
               f"{stream['value_width']}-bit values ({result['values']}); decodes to the input")


def _speedup(dense, cycles):
    """Dense cycles over ``cycles``, formatted."""
    return f"{dense / cycles:.2f}x" if cycles else "-"
