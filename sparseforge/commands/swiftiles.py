"""``sparseforge swiftiles MATRIX --buffer N``: overbooking tile size for one matrix.

Runs Swiftiles (Tailors/Swiftiles Section 4.2) on the matrix as operand B of
Z = A·B, then measures the chosen tile shape exactly: the fraction of *all*
tiles (empty ones included) whose occupancy exceeds the buffer. ``--plot``
draws the tile-occupancy distribution with the buffer capacity marked, as the
paper's Fig. 1 (histogram) and Fig. 13 (sampled, scaled and observed CDFs).
"""

import math

import click
import numpy as np

from sparseforge.cli import OutputFile, emit, json_option, read_input, seed_option
from sparseforge.core.errors import ParameterError
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.occupancy import Pattern, tile_occupancy
from sparseforge.sw.swiftiles import swiftiles

_PAPER_K = 0.1
_PAPER_Y = 10


def _plot(path, occupancy, estimate, buffer):
    """Fig. 1: occupancy histogram of all tiles; Fig. 13: sampled, scaled and observed CDFs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    counts, n_tiles = occupancy.counts, occupancy.n_tiles
    fig, (hist_ax, cdf_ax) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    edges = np.histogram_bin_edges(np.append(counts, [0, buffer]), bins=60)
    hist, _ = np.histogram(counts, edges)
    hist[0] += occupancy.n_empty
    hist_ax.stairs(hist, edges, fill=True, alpha=0.7)
    hist_ax.set_yscale("log")
    hist_ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    hist_ax.set_xlabel("tile occupancy (nonzeros)")
    hist_ax.set_ylabel("tiles")
    hist_ax.set_title(f"{n_tiles} tiles of shape {estimate.tile_shape}")

    values, tally = np.unique(counts, return_counts=True)
    observed = (occupancy.n_empty + np.cumsum(tally)) / n_tiles
    scale = estimate.tile_size / math.prod(estimate.initial_shape)
    sampled = np.sort(estimate.samples)
    steps = np.arange(1, len(sampled) + 1) / len(sampled)
    cdf_ax.step(sampled, steps, where="post", label=f"sampled at T0 {estimate.initial_shape}")
    cdf_ax.step(sampled * scale, steps, where="post", label="scaled to T (predicted)")
    cdf_ax.step(np.append(0, values), np.append(occupancy.n_empty / n_tiles, observed),
                where="post", label=f"observed at T {estimate.tile_shape}")
    cdf_ax.axhline(1 - estimate.k, color="grey", linestyle=":", label=f"1 - k = {1 - estimate.k:g}")
    cdf_ax.set_xlabel("tile occupancy (nonzeros)")
    cdf_ax.set_ylabel("fraction of tiles")
    for ax in (hist_ax, cdf_ax):
        ax.axvline(buffer, color="red", linestyle="--", label=f"buffer {buffer}")
    hist_ax.legend()
    cdf_ax.legend(loc="lower right", fontsize="small")
    try:
        fig.savefig(path)
    except (OSError, ValueError) as exc:  # unwritable path, unknown image format
        raise ParameterError(f"--plot {path}: cannot write the plot: {exc}") from exc
    finally:
        plt.close(fig)


def _human(result):
    click.echo(f"{result['matrix']}: {result['shape'][0]} x {result['shape'][1]}, "
               f"{result['nnz']} nonzeros, buffer {result['buffer']}")
    click.echo(f"  initial estimate T0 shape {result['initial_shape']}, "
               f"{result['sampled_tiles']} tiles sampled, O_k = {result['o_k']}")
    click.echo(f"  tile shape {result['tile_shape']} (size {result['tile_size']}), "
               f"{result['tiles']} tiles")
    click.echo(f"  overbooked: {result['overbooked_fraction']:.1%} measured over all tiles, "
               f"{result['predicted_fraction']:.1%} predicted, target k = {result['k']:.1%}")
    click.echo(f"  mean buffer utilization {result['utilization']:.1%}, "
               f"max occupancy {result['max_occupancy']}, "
               f"preprocessing {result['preprocess_seconds'] * 1e3:.2f} ms")


@click.command("swiftiles")
@click.argument("matrix", type=click.Path(dir_okay=False))
@click.option("--buffer", "buffer", type=click.IntRange(1, 2**62), required=True,
              help="Buffer capacity B in nonzeros.")
@click.option("--confidence", "k", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=_PAPER_K, show_default=True,
              help="Target fraction k of tiles that overbook the buffer, in (0, 1).")
@click.option("--samples", "y", type=click.IntRange(1, 10**6), default=_PAPER_Y,
              show_default=True,
              help="Samples y expected above the top-k quantile; ceil(y/k) tiles are drawn.")
@seed_option(0, "Seed of the tile sampling.")
@click.option("--plot", "plot_path", type=OutputFile(plot=True),
              help="Write the tile-occupancy distribution (Figs. 1 and 13) to this image.")
@json_option
def command(matrix, buffer, k, y, seed, plot_path, as_json):
    """Pick an overbooking tile size for MATRIX with Swiftiles and measure it exactly."""
    pattern = Pattern.from_matrix(read_input(matrix, read_matrix))
    estimate = swiftiles(pattern, buffer, k=k, y=y, seed=seed)
    occupancy = tile_occupancy(pattern, estimate.tile_shape)
    if plot_path:
        _plot(plot_path, occupancy, estimate, buffer)
    result = {
        "matrix": matrix,
        "shape": list(pattern.shape),
        "nnz": pattern.nnz,
        "buffer": buffer,
        "k": k,
        "y": y,
        "seed": seed,
        "initial_shape": list(estimate.initial_shape),
        "sampled_tiles": len(estimate.samples),
        "o_k": estimate.o_k,
        "tile_shape": list(estimate.tile_shape),
        "tile_size": estimate.tile_size,
        "tiles": occupancy.n_tiles,
        "overbooked_fraction": occupancy.overbooked_fraction(buffer),
        "predicted_fraction": estimate.predicted_fraction,
        "utilization": occupancy.utilization(buffer),
        "max_occupancy": occupancy.max,
        "preprocess_seconds": estimate.seconds,
        "plot": plot_path,
    }
    emit(result, as_json, _human)
