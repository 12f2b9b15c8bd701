"""``sparseforge bench csc``: CSR->CSC's cycles for real matrices back to back.

The ``csr_to_csc`` block ``convert --engine rtl`` builds (:data:`~sparseforge.tb.convert_csc.RTL`),
natively on Verilator, each result checked against the golden converter:

- one real matrix (494_bus) ``--copies`` times back to back, and six different ones;
- each without stalls (beside the cycle model of :mod:`sparseforge.sim.models.csr_to_csc`)
  and under random back-pressure on every stream (0.7 each; then the output ``csc`` at 0.4);
- a larger matrix (bcspwr10) in its column passes, which go through back to back.

MINT Section V-B1 pipelines its chunks; here the next matrix's count and scan run beside
the drain of the one before (a counter bank each), so back to back a matrix costs about
``max(count + scan, drain) + scatter`` where alone it costs their sum. ``--banks 1``
builds the block with one counter bank, the next matrix waiting for the drain.
"""

import click

from sparseforge.cli import emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.sim.models import csr_to_csc as model
from sparseforge.sw import conversion
from sparseforge.sw.formats import read_matrix

COPIED = "suitesparse/494_bus"
SIX = ("suitesparse/494_bus", "suitesparse/lp_e226", "suitesparse/bcspwr05",
       "suitesparse/impcol_a", "pypi/nx_les_miserables", "suitesparse/ash219")
PASSED = "suitesparse/bcspwr10"
STREAMS = ("shape", "col_ids", "row_ptr", "csr", "coo", "col_ptr", "csc")
STALLS = {"none": dict.fromkeys(STREAMS, 1.0), "0.7": dict.fromkeys(STREAMS, 0.7),
          "0.7, csc 0.4": {**dict.fromkeys(STREAMS, 0.7), "csc": 0.4}}


def measure(copies, banks, seed):
    from sparseforge.tb.convert_csc import RTL, CsrToCsc, canonical_csr, run_native, run_passes

    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("bench csc needs the shared data (set SPARSEFORGE_DATA)")

    def real(name):
        return canonical_csr(conversion.convert(read_matrix(root / "matrices" / f"{name}.mtx"),
                                                "csr"))

    params = {**RTL, "banks": banks}
    block, rows = CsrToCsc(**params), []
    workloads = {f"{COPIED.split('/')[-1]} x{copies}": [real(COPIED)] * copies,
                 "six matrices": [real(name) for name in SIX]}
    for label, matrices in workloads.items():
        nnz = sum(m.nnz for m in matrices)
        for stalls, rates in STALLS.items():
            result = run_native(block, matrices, seed, rates)
            rows.append({"workload": label, "matrices": len(matrices), "nnz": nnz,
                         "stalls": stalls, "cycles": result.cycles,
                         "cycles_per_nnz": result.cycles / nnz,
                         "model": model.cycles(matrices, block.lanes, banks)
                         if stalls == "none" else None,
                         "matches_golden": all(conversion.same(got, conversion.convert(m, "csc"))
                                               for got, m in zip(result.csc, matrices,
                                                                 strict=True))})
    matrix = real(PASSED)
    csc, cycles, passes, _ = run_passes(block, matrix, seed, STALLS["0.7"])
    rows.append({"workload": f"{PASSED.split('/')[-1]} in passes", "matrices": passes,
                 "nnz": matrix.nnz, "stalls": "0.7", "cycles": int(cycles),
                 "cycles_per_nnz": int(cycles) / matrix.nnz, "model": None,
                 "matches_golden": conversion.same(csc, conversion.convert(matrix, "csc"))})
    return {"block": "csr_to_csc", "params": params, "seed": seed, "rows": rows}


def _human(result):
    click.echo(f"csr_to_csc {result['params']}, natively on Verilator, seed {result['seed']}")
    click.echo(f"{'workload':22} | {'matrices':>8} | {'nnz':>6} | {'stalls':12} | "
               f"{'cycles':>7} | {'per nnz':>7} | {'model':>7} | golden")
    for r in result["rows"]:
        model_cycles = "" if r["model"] is None else r["model"]
        click.echo(f"{r['workload']:22} | {r['matrices']:8} | {r['nnz']:6} | {r['stalls']:12} | "
                   f"{r['cycles']:7} | {r['cycles_per_nnz']:7.3f} | {model_cycles:>7} | "
                   f"{'equal' if r['matches_golden'] else 'DIFFERS'}")
    click.echo("note: model: sparseforge.sim.models.csr_to_csc, the cycles without stalls")


@click.command("csc")
@click.option("--copies", type=click.IntRange(1, 64), default=8, show_default=True,
              help="How many times the one matrix goes through back to back.")
@click.option("--banks", type=click.IntRange(1, 2), default=2, show_default=True,
              help="Counter banks: 1 drains a matrix before the next one counts.")
@seed_option(1, "Seed of the random back-pressure.")
@json_option
def command(copies, banks, seed, as_json):
    """CSR->CSC's cycles for real matrices back to back, beside its cycle model."""
    emit(measure(copies, banks, seed), as_json, _human)
