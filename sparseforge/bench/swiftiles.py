"""``sparseforge bench swiftiles``: overbooking accuracy, utilization, tiling tax and traffic.

Runs uniform, prescient and Swiftiles tiling (k = 10%, y = 10, as the paper)
on every real matrix under ``matrices/`` of the shared data (SuiteSparse,
graphs, small matrices from PyPI packages; duplicates by pattern counted
once) for several buffer capacities, and prints every figure measured in this
run beside the Tailors/Swiftiles paper's claims. A matrix is run at a
capacity B only if it has at least ``8 B`` nonzeros, so it is far from
fitting on chip (the paper picks "tensors that cannot fully fit inside the
global buffer"). The DRAM-traffic model (:mod:`sparseforge.sw.traffic`)
computes Z = A·A, so it runs on square matrices only.

Preprocessing times exclude reading the file and building the column-major
coordinates (the operand's compressed storage, needed by both strategies).
"""

import hashlib
import math
import sys

import click
import numpy as np
from tqdm import tqdm

from sparseforge.cli import echo_claims, emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.sw.formats import read_matrix
from sparseforge.sw.occupancy import Pattern, TileGrid, tile_occupancy
from sparseforge.sw.swiftiles import (
    a_tile_shape,
    prescient_tiling,
    swiftiles,
    uniform_tiling,
)
from sparseforge.sw.traffic import spmspm_traffic

K = 0.1
Y = 10
BUFFERS = (64, 256, 1024, 4096)
MIN_NNZ_PER_BUFFER = 8
QUICK_MATRICES = ("power.mtx", "bcspwr10.mtx", "G51.mtx", "rajat19.mtx")
QUICK_BUFFERS = (256,)

# What the paper claims (Tailors/Swiftiles, MICRO 2023). Quoted, not measured.
TRAVERSALS = (1, 4, 16)
"""Traversals r of a resident B tile per A tile (1: one buffer level; a lower bound)."""

PAPER = {
    "mae": ("5.8%", "Fig. 12, y = 10"),
    "mae_all_tiles": ("5.5%", "Fig. 12, every tile sampled"),
    "mae_initial": ("well above the scaled estimate", "Fig. 11 (value lost in the text)"),
    "mean_rate": ("about k = 10%", "Sec. 6.3 (value lost in the text)"),
    "utilization": ("uniform << prescient < overbooked",
                    "Sec. 1, Fig. 1: prescient < 10% for 90% of tiles on one tensor"),
    "time_ratio": ("prescient >> Swiftiles",
                   "Sec. 4.1: prescient traverses the tensor per shape; not timed (Sec. 6.1)"),
    "traffic_p_over_n": ("< 1", "ExTensor-P faster than ExTensor-N, Fig. 7"),
    "traffic_ob_over_p": ("< 1, most on high-variability tensors", "Figs. 7, 8"),
    "traffic_buffets_over_p": ("overbooking needs Tailors", "Sec. 3.2, Fig. 3"),
    "streaming_overhead": ("26%", "Fig. 9(a), mean over workloads"),
}


def _matrices(root, quick):
    """Paths of the real matrices to run (Matrix Market files under ``matrices/``)."""
    paths = sorted((root / "matrices").rglob("*.mtx"))
    if quick:
        paths = [p for p in paths if p.name in QUICK_MATRICES]
    return paths


def _fingerprint(pattern):
    return hashlib.sha1(pattern.keys.tobytes() + repr(pattern.shape).encode()).hexdigest()


def _traffic(pattern, tilings, buffer):
    """Traffic of Z = A·A for each tiling, A tiles built with the same size as B tiles."""
    return {name: spmspm_traffic(pattern, pattern, a_tile_shape(t.tile_size, pattern.shape),
                                 t.tile_shape, buffer)
            for name, t in tilings.items()}


def _run(name, pattern, buffer, seed):
    """All measurements for one matrix at one buffer capacity."""
    estimate = swiftiles(pattern, buffer, k=K, y=Y, seed=seed)
    initial = TileGrid(pattern.shape, estimate.initial_shape)
    every_tile = swiftiles(pattern, buffer, k=K, y=max(1, math.ceil(K * initial.n_tiles)),
                           seed=seed)
    tilings = {"uniform": uniform_tiling(pattern, buffer),
               "prescient": prescient_tiling(pattern, buffer),
               "swiftiles": estimate}
    occupancy = {n: tile_occupancy(pattern, t.tile_shape) for n, t in tilings.items()}
    row = {
        "matrix": name,
        "shape": list(pattern.shape),
        "nnz": pattern.nnz,
        "buffer": buffer,
        "tile_shape": {n: list(t.tile_shape) for n, t in tilings.items()},
        "overbooked_fraction": occupancy["swiftiles"].overbooked_fraction(buffer),
        "predicted_fraction": estimate.predicted_fraction,
        "initial_fraction": tile_occupancy(pattern, initial.tile_shape).overbooked_fraction(buffer),
        "all_tiles_fraction": tile_occupancy(pattern, every_tile.tile_shape)
        .overbooked_fraction(buffer),
        "utilization": {n: o.utilization(buffer) for n, o in occupancy.items()},
        "seconds": {n: tilings[n].seconds for n in ("prescient", "swiftiles")},
        "candidates": tilings["prescient"].candidates,
        "sampled_subset": len(estimate.samples) < initial.n_tiles,
    }
    if pattern.shape[0] == pattern.shape[1]:
        traffic = _traffic(pattern, tilings, buffer)
        ob = tilings["swiftiles"]
        overhead_r = {r: spmspm_traffic(pattern, pattern, a_tile_shape(ob.tile_size,
                                                                       pattern.shape),
                                        ob.tile_shape, buffer, traversals=r).streaming_overhead
                      for r in TRAVERSALS}
        row["traffic"] = {"N": traffic["uniform"].tailors, "P": traffic["prescient"].tailors,
                          "OB": traffic["swiftiles"].tailors,
                          "OB_buffets": traffic["swiftiles"].buffets,
                          "streaming_overhead": traffic["swiftiles"].streaming_overhead,
                          "streaming_overhead_r": overhead_r,
                          "prescient_one_column": tilings["prescient"].tile_shape[1] == 1,
                          "one_column": tilings["prescient"].tile_shape[1] == 1
                          and estimate.tile_shape[1] == 1}
    return row


def _geomean(values):
    return float(np.exp(np.mean(np.log(values))))


def _summary(rows):
    """Aggregate figures over all runs (traffic over the square-matrix runs)."""
    rate = np.array([r["overbooked_fraction"] for r in rows])
    util = {n: float(np.mean([r["utilization"][n] for r in rows]))
            for n in ("uniform", "prescient", "swiftiles")}
    seconds = {n: np.array([r["seconds"][n] for r in rows]) for n in ("prescient", "swiftiles")}
    square = [r["traffic"] for r in rows if "traffic" in r]
    summary = {
        "runs": len(rows),
        "matrices": len({r["matrix"] for r in rows}),
        "mean_rate": float(rate.mean()),
        "mae": float(np.mean(np.abs(rate - K))),
        "mae_all_tiles": float(np.mean([abs(r["all_tiles_fraction"] - K) for r in rows])),
        "mae_initial": float(np.mean([abs(r["initial_fraction"] - K) for r in rows])),
        "sampled_runs": sum(r["sampled_subset"] for r in rows),
        "utilization": util,
        "time_ratio": _geomean(seconds["prescient"] / seconds["swiftiles"]),
        "total_seconds": {n: float(s.sum()) for n, s in seconds.items()},
        "traffic_runs": len(square),
    }
    if square:
        summary.update({
            "traffic_p_over_n": _geomean([t["P"] / t["N"] for t in square]),
            "traffic_ob_over_p": _geomean([t["OB"] / t["P"] for t in square]),
            "traffic_buffets_over_p": _geomean([t["OB_buffets"] / t["P"] for t in square]),
            "ob_below_p": float(np.mean([t["OB"] < t["P"] for t in square])),
            "ob_equal_p": float(np.mean([t["OB"] == t["P"] for t in square])),
            "ob_above_p": float(np.mean([t["OB"] > t["P"] for t in square])),
            "ob_above_p_one_column": float(np.mean([t["OB"] > t["P"] and t["one_column"]
                                                    for t in square])),
            "p_above_n": float(np.mean([t["P"] > t["N"] for t in square])),
            "streaming_overhead": float(np.mean([t["streaming_overhead"] for t in square])),
            "streaming_overhead_r": {r: float(np.mean([t["streaming_overhead_r"][r]
                                                       for t in square]))
                                     for r in TRAVERSALS},
        })
        dense = [t for t in square if t["prescient_one_column"]]
        rest = [t for t in square if not t["prescient_one_column"]]
        summary["traffic_ob_over_p_split"] = {
            "one_column": _geomean([t["OB"] / t["P"] for t in dense]) if dense else None,
            "one_column_runs": len(dense),
            "others": _geomean([t["OB"] / t["P"] for t in rest]) if rest else None,
            "other_runs": len(rest)}
    return summary


def _notes(s):
    """Short explanations wherever our figure falls short of, or differs from, the paper's."""
    notes = [f"Swiftiles drew a random subset of the T0 tiles in {s['sampled_runs']} of "
             f"{s['runs']} runs; elsewhere T0 cuts the matrix into at most ceil(y/k) = "
             f"{math.ceil(Y / K)} tiles and all of them are sampled.",
             "Buffers are 64-4096 nonzeros, scaled to these matrices (<= 0.4M nonzeros); "
             "the paper uses a 30 MB global buffer on larger SuiteSparse/SNAP tensors."]
    if s["mae"] > 0.058:
        notes.append("MAE above the paper's 5.8%: our matrices give few tiles per tiling "
                     "(often < 100), so the measured rate moves in coarse steps and the "
                     "sampled quantile is noisy.")
    if s.get("streaming_overhead", 1.0) < 0.26:
        r = s["streaming_overhead_r"]
        notes.append("Streaming overhead below the paper's 26% at r = 1, a lower bound: there "
                     "each A tile traverses a resident B tile once. In the paper the global "
                     "buffer feeds many PE buffers and bumped data is fetched from the parent "
                     "for every use, so the tile is traversed r times per A tile (one per "
                     "child tile): " + ", ".join(f"r = {k}: {v:.1%}" for k, v in r.items())
                     + ". That traversal count, not overbooking of the PE buffers (whose "
                     "misses never reach DRAM), is the gap.")
    split = s.get("traffic_ob_over_p_split")
    if split and split["one_column_runs"]:
        notes.append(f"OB / P where a dense column forces the prescient tile one column wide: "
                     f"{split['one_column']:.3f} over {split['one_column_runs']} runs; "
                     f"elsewhere {split['others']:.3f} over {split['other_runs']} runs "
                     "(geomeans): P cannot widen there, so it is reported apart.")
    if s.get("p_above_n", 0.0) > 0:
        notes.append(f"P > N traffic in {s['p_above_n']:.0%} of the square runs: there even "
                     "the prescient tile cannot span the shared dimension (tk < K), and the "
                     "partial-sum traffic that would penalize both is not modelled.")
    if s.get("ob_equal_p", 0.0) > 0:
        notes.append(f"OB = P traffic in {s['ob_equal_p']:.0%} of the square runs: overbooking "
                     "did not widen the tile (tn) there and nothing was bumped, as on the "
                     "uniformly sparse tensors of the paper (web-Google, patents_main).")
    if s.get("ob_above_p", 0.0) > 0:
        notes.append(f"OB > P traffic in {s['ob_above_p']:.0%} of the square runs "
                     f"({s['ob_above_p_one_column']:.0%} with both tiles one column wide, "
                     "at small buffers): there A is streamed as often under both tilings and "
                     "a taller tile would save only partial-sum traffic, which the model "
                     "leaves out, while its bumped data still costs. The paper also sees OB "
                     "lose to P on some tensors (email-Enron, sx-askubuntu).")
    return notes


def _human(result):
    click.echo(f"{'matrix':28} {'buffer':>6} {'swiftiles tile':>15} {'prescient tile':>15} "
               f"{'overbooked':>10} {'util N/P/OB':>17} {'P/S time':>9} {'traffic P/N OB/P':>17}")
    for r in result["runs"]:
        u, t = r["utilization"], r.get("traffic")
        traffic = f"{t['P'] / t['N']:8.3f} {t['OB'] / t['P']:8.3f}" if t else f"{'-':>17}"
        click.echo(f"{r['matrix'][:28]:28} {r['buffer']:6d} "
                   f"{'x'.join(map(str, r['tile_shape']['swiftiles'])):>15} "
                   f"{'x'.join(map(str, r['tile_shape']['prescient'])):>15} "
                   f"{r['overbooked_fraction']:10.1%} "
                   f"{u['uniform']:5.1%}/{u['prescient']:5.1%}/{u['swiftiles']:5.1%} "
                   f"{r['seconds']['prescient'] / r['seconds']['swiftiles']:8.0f}x {traffic}")
    s = result["summary"]
    u = s["utilization"]
    ours = {
        "mean_rate": f"{s['mean_rate']:.1%}",
        "mae": f"{s['mae']:.1%}",
        "mae_all_tiles": f"{s['mae_all_tiles']:.1%}",
        "mae_initial": f"{s['mae_initial']:.1%}",
        "utilization": f"{u['uniform']:.1%} / {u['prescient']:.1%} / {u['swiftiles']:.1%}",
        "time_ratio": f"{s['time_ratio']:.0f}x (geomean; total "
                      f"{s['total_seconds']['prescient']:.2f} s vs "
                      f"{s['total_seconds']['swiftiles']:.3f} s)",
    }
    if s["traffic_runs"]:
        ours.update({
            "traffic_p_over_n": f"{s['traffic_p_over_n']:.3f} (geomean)",
            "traffic_ob_over_p": f"{s['traffic_ob_over_p']:.3f} (geomean; OB <, =, > P "
                                 f"in {s['ob_below_p']:.0%}, {s['ob_equal_p']:.0%}, "
                                 f"{s['ob_above_p']:.0%})",
            "traffic_buffets_over_p": f"{s['traffic_buffets_over_p']:.3f} (geomean)",
            "streaming_overhead": f"{s['streaming_overhead']:.1%} at r = 1 (a lower bound); "
                                  + ", ".join(f"r = {k}: {v:.1%}" for k, v in
                                              s["streaming_overhead_r"].items() if k > 1),
        })
    labels = {
        "mean_rate": "overbooked tiles, mean (target k = 10%)",
        "mae": "overbooking-rate MAE vs k, y = 10",
        "mae_all_tiles": "overbooking-rate MAE, all tiles sampled",
        "mae_initial": "overbooking-rate MAE, T0 unscaled",
        "utilization": "mean buffer util. uniform / prescient / OB",
        "time_ratio": "preprocessing time prescient / Swiftiles",
        "traffic_p_over_n": "DRAM traffic P / N",
        "traffic_ob_over_p": "DRAM traffic OB (Tailors) / P",
        "traffic_buffets_over_p": "DRAM traffic OB with plain buffets / P",
        "streaming_overhead": "bumped-data streaming overhead (OB)",
    }
    click.echo()
    click.echo(f"Summary: {s['runs']} runs on {s['matrices']} matrices "
               f"({s['traffic_runs']} square runs for traffic), k = {K:.0%}, y = {Y}, "
               f"seed {result['seed']}")
    echo_claims([(label, ours[key], *PAPER[key]) for key, label in labels.items() if key in ours],
                result["notes"], (42, 44), ("metric", "ours (measured in this run)",
                                            "paper (claim)"))


@click.command("swiftiles")
@click.option("--quick", is_flag=True, help="A few small matrices and one buffer (for tests).")
@seed_option(0, "Seed of the tile sampling.")
@json_option
def command(quick, seed, as_json):
    """Swiftiles vs. uniform and prescient tiling on the real matrices, beside the paper."""
    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("shared data folder not found: put it at ../shared/data beside "
                               "the repository or set SPARSEFORGE_DATA")
    buffers = QUICK_BUFFERS if quick else BUFFERS
    rows, seen = [], set()
    for path in tqdm(_matrices(root, quick), desc="swiftiles", unit="matrix", file=sys.stderr):
        pattern = Pattern.from_matrix(read_matrix(path))
        fingerprint = _fingerprint(pattern)
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        for buffer in buffers:
            if pattern.nnz >= MIN_NNZ_PER_BUFFER * buffer:
                rows.append(_run(path.name, pattern, buffer, [seed, len(rows)]))
    if not rows:
        raise SparseforgeError(f"no matrix under {root / 'matrices'} is large enough to run")
    summary = _summary(rows)
    result = {"k": K, "y": Y, "seed": seed, "buffers": list(buffers), "runs": rows,
              "summary": summary, "paper": {k: v[0] for k, v in PAPER.items()},
              "notes": _notes(summary)}
    emit(result, as_json, _human)
