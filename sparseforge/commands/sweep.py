"""``sparseforge sweep``: a block synthesized at every point of a parameter grid, on Dask."""

import csv

import click

from ..cli import OutputFile, emit, json_option, param_option, parse_params
from ..core.errors import ParameterError
from ..sweep import TARGETS, area, pareto, parse_grid, sweep
from ..synth.flow import DEVICES, SEEDS
from .synth import device_for, path_text

COLUMNS = ("block", "params", "target", "device", "logic_cells", "lut", "carry", "ff", "bram",
           "dsp", "fmax_mhz", "critical_path", "verify", "pass", "error", "cached")


def _cells(row):
    """A row as text cells: parameters as ``name=value``, the critical path in words."""
    cells = {c: "" if row[c] is None else row[c] for c in COLUMNS}
    cells["params"] = " ".join(f"{k}={v}" for k, v in row["params"].items())
    cells["critical_path"] = path_text(row["critical_path"])
    if row["fmax_mhz"]:
        cells["fmax_mhz"] = f"{row['fmax_mhz']:.1f}"
    return cells


def plot(rows, path):
    """Every passing point's area against Fmax, the Pareto front joined and labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if r["pass"] and r["fmax_mhz"]]
    front = pareto(rows)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter([area(r) for r in done], [r["fmax_mhz"] for r in done], color="0.6",
               label="design points")
    ax.step([area(r) for r in front], [r["fmax_mhz"] for r in front], "o-", where="post",
            color="C0", label="Pareto front")
    swept = [k for k in rows[0]["params"] if len({r["params"][k] for r in rows}) > 1]
    for r in front:
        label = " ".join(f"{k}={r['params'][k]}" for k in swept)
        ax.annotate(label, (area(r), r["fmax_mhz"]), fontsize=7, xytext=(4, 4),
                    textcoords="offset points")
    ecp5 = rows[0]["target"] == "ecp5"
    ax.set_xlabel("logic cells (nextpnr, LUT4 positions)" if ecp5 else "LUT4s (Yosys)")
    ax.set_ylabel("Fmax (MHz)")
    ax.set_title(f"{rows[0]['block']} on {rows[0]['target']}: {len(done)} of {len(rows)} points")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _human(result):
    for row in result["rows"]:
        cells = _cells(row)
        if row["error"]:
            click.echo(f"{cells['params']}: FAILED: {row['error']}")
            continue
        verify = f", verify {row['verify']}" if row["verify"] else ""
        logic = f"{row['logic_cells']} logic cells, " if row["logic_cells"] is not None else ""
        click.echo(f"{cells['params']}: {logic}{row['lut']} LUT4, {row['ff']} FF, "
                   f"{row['bram']} BRAM, {cells['fmax_mhz'] or '-'} MHz{verify}"
                   f"{' (cached)' if row['cached'] else ''}")
    front = ", ".join(_cells(r)["params"] for r in result["pareto"])
    click.echo(f"{result['passed']} of {len(result['rows'])} points passed; "
               f"Pareto front (area, Fmax): {front or 'none'}")


@click.command()
@click.argument("block")
@param_option
@click.option("--target", type=click.Choice(TARGETS), default="ecp5", show_default=True)
@click.option("--device", type=click.Choice(list(DEVICES)),
              help="The ECP5 to place on (LFE5U-25F, -45F or -85F)  [default: 25k]")
@click.option("--seeds", type=click.IntRange(1, 9), default=len(SEEDS), show_default=True,
              help="nextpnr seeds per point; Fmax is their median.")
@click.option("--scheduler", metavar="ADDRESS",
              help="An existing Dask scheduler (tcp://host:8786); default: a local cluster.")
@click.option("--workers", type=click.IntRange(1, 256),
              help="Processes of the local cluster (default: one per core).")
@click.option("--verify", is_flag=True,
              help="Also run each point's Verilator bench (blocks without one say so).")
@click.option("--csv", "csv_path", type=OutputFile(".csv"), help="Write the rows as CSV.")
@click.option("--plot", "plot_path", type=OutputFile(plot=True),
              help="Draw the area-Fmax Pareto front (PNG, SVG or PDF).")
@json_option
def command(block, params, target, device, seeds, scheduler, workers, verify, csv_path,
            plot_path, as_json):
    """Synthesize BLOCK at every combination of -p NAME=V1,V2,... (one Dask task a point).

    Each point's area, Fmax, critical path and (with --verify) co-simulation
    verdict is cached, so a repeated sweep returns at once; a failed point shows
    its error in its row and the others go on.
    """
    if scheduler and workers:
        raise ParameterError("--workers sizes a local cluster; the one at --scheduler has "
                             "its own workers")
    rows = sweep(block, parse_grid(parse_params(params)), target,
                 device_for(target, device, "25k"),
                 tuple(range(1, seeds + 1)), verify, scheduler=scheduler, workers=workers)
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            writer.writerows(_cells(r) for r in rows)
    if plot_path:
        plot(rows, plot_path)
    emit({"rows": rows, "passed": sum(r["pass"] for r in rows), "pareto": pareto(rows)},
         as_json, _human)
