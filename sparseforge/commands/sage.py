"""``sparseforge sage``: SAGE's memory and algorithm formats for O = A·B (MINT/SAGE Section VI).

A comes from a matrix file (its exact compactness) or from bare dimensions
and densities (expected sizes); ``--mcf FORMAT`` fixes the memory format A
is stored in (alone, the format of the file: a ``.mtx`` is COO), and SAGE
picks only its compute format and the converter blocks that bring it there;
``--table3`` prints the paper's Table III beside our choices. The model is
:mod:`sparseforge.sw.sage`; conversions are priced from the blocks' measured
rates.
"""

import click

from sparseforge.cli import emit, json_option, read_input
from sparseforge.core.errors import ParameterError
from sparseforge.sw import conversion
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.sage import ACFS, KERNELS, MCFS, Workload, recommend, recommend_matrix
from sparseforge.sw.sage_table3 import NOT_MODELLED, reproduce

_DENSITY = click.FloatRange(0, 1, min_open=True)
_FROM_FILE = "from-file"  # --mcf given without a FORMAT


def _mcf(text):
    """``--mcf``'s FORMAT, in any case, as SAGE names it."""
    names = {f.lower(): f for f in MCFS}
    if text.lower() not in names:
        raise ParameterError(f"--mcf {text!r}: expected one of {', '.join(MCFS)}")
    return names[text.lower()]


def _stored(path):
    """The matrix in ``path`` and the MCF it is stored in (a .mtx is COO)."""
    source = read_input(path, conversion.load)
    stored = conversion.format_of(source)
    if len(source.shape) != 2:
        raise ParameterError(f"{path}: a {len(source.shape)}-mode tensor; SAGE takes a matrix")
    if stored.upper() not in {f.upper() for f in MCFS}:
        raise ParameterError(f"{path}: stored as {stored.upper()}, not one of SAGE's memory "
                             f"formats ({', '.join(MCFS)}); give --mcf FORMAT")
    if stored in ("rlc", "zvc"):
        source = conversion.convert(source, "coo")
    return source, _mcf(stored)


@click.command("sage")
@click.argument("matrix", required=False, type=click.Path(dir_okay=False))
@click.option("--kernel", type=click.Choice(KERNELS), default=None, show_default="spgemm",
              help="spgemm (B sparse) or spmm (B dense).")
@click.option("--shape", metavar="M,K,N",
              help="Bare dimensions instead of MATRIX: A is M x K, B is K x N.")
@click.option("--density-a", type=_DENSITY, help="A's density in (0, 1], with --shape.")
@click.option("--density-b", type=_DENSITY, show_default="A's for spgemm, 1 for spmm",
              help="B's density in (0, 1].")
@click.option("--n", "n", type=click.IntRange(1, 2**62), show_default="ceil(M / 2), as the paper",
              help="B's columns N with MATRIX.")
@click.option("--value-bits", type=click.IntRange(1, 64), default=None, show_default="32",
              help="Bits of a value.")
@click.option("--index-bits", type=click.IntRange(1, 64), default=None,
              show_default="the log of its largest value", help="Bits of every index.")
@click.option("--mcf", metavar="FORMAT", is_flag=False, flag_value=_FROM_FILE,
              help=f"A's memory format, fixed ({', '.join(MCFS)}): SAGE picks only the "
                   "compute formats and the conversion path; --mcf alone: the format MATRIX is "
                   "stored in (.mtx and .smtx are COO, .npy Dense, .npz its own).")
@click.option("--table3", is_flag=True, help="The paper's Table III beside our choices.")
@json_option
def command(matrix, kernel, shape, density_a, density_b, n, value_bits, index_bits, mcf,
            table3, as_json):
    """SAGE: the lowest-EDP memory (MCF) and algorithm (ACF) formats for A·B.

    Give MATRIX (A; .mtx, .smtx, .npy, .npz) or --shape M,K,N with
    --density-a, or --table3 alone; --mcf FORMAT fixes A's memory format.
    """
    if table3:
        given = {"MATRIX": matrix, "--kernel": kernel, "--shape": shape,
                 "--density-a": density_a, "--density-b": density_b, "--n": n,
                 "--value-bits": value_bits, "--index-bits": index_bits, "--mcf": mcf}
        extra = [name for name, value in given.items() if value is not None]
        if extra:
            raise ParameterError(f"--table3 takes no {', '.join(extra)}: it runs the "
                                 "paper's own dimensions and 32-bit values")
        emit(reproduce().to_dict(), as_json, _print_table3)
        return
    kernel = kernel or "spgemm"
    value_bits = value_bits or 32
    if kernel == "spmm" and density_b not in (None, 1):
        raise ParameterError(f"--density-b {density_b}: SpMM's B is dense (omit it or give 1)")
    if (matrix is None) == (shape is None):
        raise ParameterError("give one of MATRIX or --shape M,K,N (or --table3)")
    if mcf == _FROM_FILE and matrix is None:
        raise ParameterError("--mcf without a FORMAT takes the format MATRIX is stored in: "
                             "give MATRIX, or --mcf FORMAT with --shape")
    if mcf not in (None, _FROM_FILE):
        mcf = _mcf(mcf)
    if matrix is not None:
        if density_a is not None:
            raise ParameterError("--density-a: MATRIX gives A's density")
        if mcf == _FROM_FILE:
            a, mcf = _stored(matrix)
        else:
            a = read_input(matrix, read_matrix)
        try:
            rec = recommend_matrix(a, kernel, n, density_b, value_bits, index_bits, mcf_a=mcf)
        except ParameterError as exc:
            raise ParameterError(f"{matrix}: {exc}") from exc
    else:
        if density_a is None:
            raise ParameterError("--shape needs --density-a")
        if n is not None:
            raise ParameterError("--n: only with MATRIX (--shape gives N)")
        m, k, n = _shape(shape)
        if density_b is None:
            density_b = density_a if kernel == "spgemm" else 1.0
        rec = recommend(Workload(kernel, m, k, n, density_a, density_b, value_bits, index_bits),
                        mcf_a=mcf)
    emit({"matrix": matrix, **rec.to_dict()}, as_json, _print_recommendation)


def _shape(text):
    """``"M,K,N"`` -> three positive integers."""
    parts = text.split(",")
    try:
        dims = [int(part) for part in parts]
    except ValueError:
        dims = []
    if len(dims) != 3 or min(dims) < 1:
        raise ParameterError(f"--shape {text!r}: expected M,K,N, three positive integers")
    return dims


def _formats(choice):
    return (f"MCF {choice['mcf_a']}(A)-{choice['mcf_b']}(B), "
            f"ACF {choice['acf_a']}(A)-{choice['acf_b']}(B)")


def _path(choice, operand):
    path = choice[f"path_{operand.lower()}"]
    return (f"{operand} {path} in {choice[f'conversion_cycles_{operand.lower()}']:.3g} cycles"
            if path else f"{operand} as stored")


def _print_recommendation(result):
    w = result["workload"]
    click.echo(f"{w['kernel']}: A {w['m']} x {w['k']} at density {w['density_a']:.3g}"
               f"{' (' + result['matrix'] + ')' if result['matrix'] else ''}, "
               f"B {w['k']} x {w['n']} at {w['density_b']:.3g}, {w['value_bits']}-bit values")
    click.echo(f"\n{'MCF bits per element':30}{''.join(f'{f:>9}' for f in MCFS)}")
    for operand, size in result["compactness"].items():
        per = [size["bits"][f] / (size["rows"] * size["cols"]) for f in MCFS]
        label = f"  {operand} ({'exact' if size['exact'] else 'expected'})"
        click.echo(f"{label:30}{''.join(f'{x:>9.3g}' for x in per)}   best {size['best']}")
    click.echo(f"\n{'compute cycles, ACF A / B':30}{''.join(f'{f:>9}' for f in ACFS)}")
    cycles = {(c["acf_a"], c["acf_b"]): c["cycles"] for c in result["compute"]}
    for a in ACFS:
        click.echo(f"  {a:28}{''.join(f'{cycles[a, b]:>9.3g}' for b in ACFS)}")
    best, direct = result["best"], result["direct"]
    click.echo(f"\nSAGE: {_formats(best)}: EDP {best['edp']:.3g} J·s, {best['cycles']:.3g} "
               f"cycles, {best['energy_j']:.3g} J; MINT converts "
               f"{' and '.join(best['converts']) or 'nothing'}")
    click.echo(f"MINT's blocks: {_path(best, 'A')}; {_path(best, 'B')}")
    if direct is None:
        click.echo(f"without MINT: none (A's {result['mcf_a']} is no compute format)")
    else:
        click.echo(f"without MINT: {_formats(direct)}: EDP {direct['edp']:.3g} J·s")
        verdict = (f"yes, EDP {1 - best['edp'] / direct['edp']:.2%} lower"
                   if result["conversion_pays"] else "no")
        click.echo(f"converting pays off: {verdict}")
    if result["mcf_a"]:
        click.echo(f"\nA stored as {result['mcf_a']}: each compute format the blocks reach")
        for c in result["acf_a_options"]:
            click.echo(f"  ACF {c['acf_a']:6} {_path(c, 'A'):42} best EDP {c['edp']:.3g} J·s "
                       f"with {_formats(c)}")


def _print_table3(result):
    click.echo("Table III (MINT/SAGE): MCF A, MCF B, ACF A, ACF B; paper's and ours")
    click.echo(f"{'workload':10} {'kernel':7} {'paper':26} {'ours':26}")
    for row in result["rows"]:
        paper, ours = (" ".join(row[key].values()) for key in ("paper", "ours"))
        mark = "=" if row["agree"] else f"{row['fields_agree']}/4"
        click.echo(f"{row['workload']:10} {row['kernel']:7} {paper:26} {ours:26} {mark}")
    click.echo(f"\nagreement: {result['agree']} of {result['rows_total']} rows, "
               f"{result['fields_agree']} of {result['fields_total']} choices; "
               f"{len(result['not_offered'])} rows' choices need a conversion no converter "
               "block (or chain of them) performs, which SAGE, priced by the blocks, does "
               "not offer")
    click.echo("\ndiffering rows:")
    for row in result["rows"]:
        if not row["agree"]:
            click.echo(f"  {row['workload']} {row['kernel']}: {row['reason']}")
    click.echo("\nnot modelled:")
    for name, why in NOT_MODELLED:
        click.echo(f"  {name}: {why}")
