"""``bench accel --spgemm``: HYTE's tiling in the accelerator's Gustavson build, in RTL
cycles.

Each real matrix (:data:`MATRICES`; C = A·A, or A·Aᵀ where A is not square, A's pattern
with values 1..4) runs natively on Verilator against the DDR4-timed AXI memory under
every scheme (:data:`SCHEMES`), C checked equal to scipy's product: B's rows read from
memory (``none``, the build without a buffer) and, on one build with HYTE's buffer
(:data:`BUILD`), the baselines' static shapes (Tailors', DRT's and HARP's,
:data:`~sparseforge.sw.accel_spgemm.BASELINES`), HYTE's static schedule, and it tuned at
run time by the tiling controller, the schemes differing only in the registers the host
writes.
Beside each: DRAM traffic, B's tiles and shapes, the host's scheduling time, and the
speed-ups by HYTE's definition (a baseline's cycles over the scheme's, on one matrix,
§8.1) beside the paper's (§8.1, Fig. 6 and 8). One more run a matrix, ``k untiled``
(:func:`untiled_k_job`), says where HYTE's cycles go against no buffer: B through the
buffer with A read and C written once, as without it.
"""

import sys
from pathlib import Path

import click
import numpy as np
import scipy.sparse as sp
from tqdm import tqdm

from sparseforge.bench.accel import geomean, speedup
from sparseforge.cli import echo_claims
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.run.accel import DATA, RATES, TAGS, by_tensor, spgemm_plan
from sparseforge.sw import accel_spgemm, accel_spgemm_model
from sparseforge.sw.formats import read_matrix

MATRICES = ("suitesparse/bcspwr01.mtx", "suitesparse/GD97_b.mtx", "suitesparse/lp_afiro.mtx",
            "suitesparse/bcspwr03.mtx")
QUICK = MATRICES[:1]
OPT = MATRICES[:1]
"""The matrices Static-Opt searches exhaustively in RTL cycles (one run a scheme)."""
SMALLEST = 8
"""The narrowest tile Static-Opt tries along k and j."""
SCHEMES = accel_spgemm.SCHEMES
BUILD = accel_spgemm.SpgemmConfig(pes=1, tile_cols=64, buffer=32)
"""``run accel --kernel spgemm --pes 1 --tile-cols 64 --buffer-words 32``: one PE (HYTE's
accessor serves one), a buffer scaled to these small matrices as HYTE's 4 MB is to its
(their B tiles overflow it, so the shape matters)."""

DEFINITIONS = {
    "cycles": "the accelerator's cycle counter, start to done (RTL)",
    "read, written": "bytes the accelerator read and wrote (its counters): A's CSR per "
                     "tile, B's segments and the positions kept across tiles, C's partial "
                     "rows, the tile log",
    "by tensor": "HYTE Fig. 7's breakdown: A's reads, C's writes and the metadata (the "
                 "tile list; the tile log and the kept entries written) as the plan gives "
                 "them exactly, B's reads the rest of the counter's (with the positions "
                 "unit's scans and kept entries read)",
    "model": "the host model's cycles (sw/accel_spgemm_model.py: the build's units priced "
             "per tile command, no simulation) and its error against the RTL's",
    "tiles, shapes": "tile commands the controller sent; B's tile shapes (Tk x Tj) among "
                     "them (more than one: the tuning changed it mid-run)",
    "schedule": "host seconds of HYTE's static scheduler (sampled estimates, the pruned "
                "search), not in the cycles",
    "speed-up": "a baseline's RTL cycles over the scheme's on the same matrix (HYTE Sec. "
                "8.1), geometric mean over the matrices",
    "static-opt": "the fastest in RTL cycles of every static scheme tried (HYTE Sec. 8.1: "
                  "exhaustive search in the simulator, not the cost model)",
    "k untiled": "B through HYTE's buffer in tiles of all of k (as wide as the engine's "
                 "columns, k innermost): A read and C written once, as with no buffer; "
                 "its cycles against none are the buffer's path alone, against hyte-static "
                 "what the k tiles cost",
}

PAPER = {
    "over_drt": ("3.3x on average over DRT (3.9x online only)", "HYTE Sec. 8.1, Fig. 6"),
    "over_harp": ("4.5x on average over HARP (5.2x online only)", "HYTE Sec. 8.1, Fig. 6"),
    "over_tailors": ("6.2x on average over Tailors (7.4x online only)", "HYTE Sec. 8.1, Fig. 6"),
    "over_none": ("no such baseline: each design there tiles", "HYTE Sec. 8.1"),
    "dynamic": ("+dynamic 1.15x on average, up to 1.9x, on 9 of 18 matrices",
                "HYTE Sec. 8.2, Fig. 8"),
    "static": ("the static scheduler alone close to Static-Opt", "HYTE Sec. 8.2, Fig. 8"),
}

NOTES = (
    "one PE and a 32-word buffer, against HYTE's 32 MACs and 4 MB on matrices of "
    "millions of nonzeros: the ratios compare like for like here, not to the paper's "
    "absolute cycles",
    "A and C are streamed (A's rows read per tile, C's partial rows written per k tile and "
    "summed by the host as it reads C), not held in their parts of the buffer as HYTE's "
    "allocation has them; A's part is its segment positions: on-chip cursors for the rows "
    "of A's tile, from which a k tile that follows the last one in the same rows (k inside "
    "i: HYTE's schedules here) reads them, from their first element in the tile to their "
    "ends, pointers not read; the first k tile of a sweep, and every one where i moves "
    "inside k (DRT, HARP), reads its rows whole",
    "the cycles exclude the host's scheduling, so ours compare with the paper's online-only "
    "speed-ups; Static-Opt is searched in RTL cycles on the first matrix only, over "
    "power-of-two B tiles from 8 (k or j innermost, A untiled)",
    "DRT and HARP size each tile at run time to the data it holds (DRT: micro-tiles of 32 x "
    "32 grown k, i, j until the buffer is full; HARP: pseudo-tiles of rows merged); the "
    "controller walks one uniform power-of-two shape, so each stands here as the shape "
    "grown the same way while the mean tile of HYTE's sampled estimates fits exactly (no "
    "overbooking) in its buffer shares (HYTE Table 2: DRT 5/45/50%, HARP 4.5/91/4.5% of "
    "A/B/C): a tile denser than the mean overflows into the bypass where theirs would be "
    "smaller; both i innermost (i first, Table 2)",
    "HARP tiles i alone: k whole, and j whole but for the engine's accumulator, which "
    "cuts B's tiles to the build's column tiles",
    "B's tile is kept across the commands that move A's tile alone (neither fetched nor "
    "counted again): DRT and HARP walk i innermost, so each of their B tiles is fetched "
    "once for all of A's rows; HYTE's schedules here walk k innermost (B's tile changes "
    "every command), so it gains nothing from it; DRT's small k tiles still read A's "
    "rows and write C's partial rows once a k tile",
    "HYTE's scheduler prices A's tiles by their own nonzeros (A once a pass of j whatever "
    "the k tiles); this build reads a row from its segment's start to the row's end (the "
    "segment's end is found by reading past it), so A's reads still grow with the k "
    "tiles, if far less than whole rows would",
    "the host model (sw/accel_spgemm_model.py) counts every access exactly (but the "
    "positions unit's reads ahead of a segment's end) and prices, per tile command, the "
    "bus, the k filter, the engine, the round trips its first reads wait on and its DRAM "
    "row misses (its units' streams spread evenly over it: C's regions past 128 KiB close"
    " the rows A's and B's arrays keep open), two constants fitted on these matrices and "
    "schemes on this build and two more",
    "why no buffer can still win here: where k untiled (A and C once, as with no buffer) "
    "is slower than none, it is the buffer's path: a tile's fetch begins only once the "
    "last is evicted (the job's first reads of B wait for its first segments), a bypassed"
    " row's words are read twice (by the fetch, which counts them, and by the row server "
    "after its kept entry), and the row server pays the accessor's latency once a row of"
    " B (a few elements each here); "
    "hyte-static against k untiled is what its k tiles save in B's bypassed reads less "
    "what they cost: each streams its rows of A to their ends through the k filter (whole"
    " for the first of a sweep), the engine waiting for the elements it keeps, and writes"
    " C's partial rows (A read, C written above)",
    "why tuning can lose here: Section 6.4's rule weighs B's hit rate alone; halving Tk "
    "to keep B's tiles in the buffer multiplies A's and C's traffic, which it does not "
    "see",
)


def _operands(path, seed):
    """A's pattern with values 1..4 from ``seed``, and B: A, or Aᵀ where A is not square."""
    a = sp.csr_matrix(read_matrix(path))
    a.eliminate_zeros()
    a.data = np.random.default_rng(seed).integers(1, 5, a.nnz)
    return a, (a if a.shape[0] == a.shape[1] else a.T.tocsr())


def _config(scheme):
    return BUILD if scheme != "none" else accel_spgemm.SpgemmConfig(
        pes=BUILD.pes, tile_cols=BUILD.tile_cols)


def run_scheme(a, b, scheme, seed, label, job=None):
    """One native run of ``scheme`` (or of the controller's ``job``, given): its figures;
    a C other than scipy's is a fault."""
    from sparseforge.tb.accel import AccelHarness, params_of, simulate

    config = _config(scheme)
    plan, _, seconds = spgemm_plan(a, b, config, scheme, seed, job)
    harness = AccelHarness(**params_of(config), tags=TAGS, data=DATA)
    run = simulate(harness, plan, plan.a, plan.b, seed, rates=dict.fromkeys(RATES, 0.7),
                   progress=f"bench accel --spgemm: {label}")
    if run.fault(plan.golden, "C"):
        raise click.ClickException(f"hardware fault: {label} differs from scipy's product "
                                   f"(replay with --seed {seed})")
    shapes = sorted({(cmd[2]["t"], cmd[1]["t"]) for cmd in plan.commands})
    model = accel_spgemm_model.predict(plan).cycles
    return {"cycles": run.cycles, "model_cycles": model, "model_error": model / run.cycles - 1,
            "bytes_read": run.bytes_read,
            "bytes_written": run.bytes_written,
            "tiles": len(plan.commands) or len(plan.offsets), "shapes": shapes,
            "traffic": by_tensor(plan, run),
            "job": plan.tiling, "schedule_seconds": seconds}


def _log(top):
    """The log of the smallest power of two at least ``top`` (at least 1)."""
    return max(top - 1, 1).bit_length()


def static_job(a, b, log_tk, log_tj, order):
    """A static scheme of the build: B's tiles of ``2**log_tk x 2**log_tj`` in inter-tile
    ``order`` (an index of :data:`~sparseforge.sw.wire.HYTE_ORDERS`), A's rows untiled (as
    in HYTE's pruned space for Gust); no tuning (``bufsize`` 0)."""
    m, k = a.shape
    return {"i": m, "j": b.shape[1], "k": k, "log_ti": _log(m), "log_tj": log_tj,
            "log_tk": log_tk, "order": order, "bufsize": 0}


def static_jobs(a, b):
    """The static schemes Static-Opt searches on the build: B's tiles of ``Tk x Tj``,
    each a power of two from :data:`SMALLEST` to the dimension's (``Tj`` to the
    engine's ``tile_cols``), k or j innermost."""
    def logs(top):
        return range(SMALLEST.bit_length() - 1, _log(top) + 1)

    return [static_job(a, b, lk, lj, order)
            for lk in logs(a.shape[1]) for lj in logs(min(b.shape[1], BUILD.tile_cols))
            for order in (0, 1)]                 # ijk (k innermost), ikj (j innermost)


def untiled_k_job(a, b):
    """B's tiles of all of k, as wide as the engine's columns, k innermost: A read and
    C written once, as by the build without a buffer."""
    return static_job(a, b, _log(a.shape[1]), _log(min(b.shape[1], BUILD.tile_cols)), 0)


def figures(runs):
    """The speed-ups of one matrix's ``runs`` (``{scheme: figures}``) by HYTE's
    definition."""
    cycles = {s: r["cycles"] for s, r in runs.items()}
    return {"over_drt": speedup(cycles["drt"], cycles["hyte"]),
            "over_harp": speedup(cycles["harp"], cycles["hyte"]),
            "over_tailors": speedup(cycles["tailors"], cycles["hyte"]),
            "over_none": speedup(cycles["none"], cycles["hyte"]),
            "dynamic": speedup(cycles["hyte-static"], cycles["hyte"]),
            "static": speedup(cycles["tailors"], cycles["hyte-static"])}


def measure(names, seed, static_opt=True):
    """Every matrix of ``names`` (under the shared data's ``matrices/``) under every
    scheme; on those of :data:`OPT` (``static_opt``), every static scheme of
    :func:`static_jobs`, the fastest Static-Opt."""
    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("shared data folder not found: put it at ../shared/data beside "
                               "the repository or set SPARSEFORGE_DATA")
    rows = []
    with tqdm(total=len(names) * len(SCHEMES), desc="bench accel --spgemm", unit="run",
              file=sys.stderr) as bar:
        for name in names:
            a, b = _operands(root / "matrices" / name, seed)
            runs = {}
            for scheme in SCHEMES:
                bar.set_postfix_str(f"{Path(name).stem} {scheme}")
                runs[scheme] = run_scheme(a, b, scheme, seed, f"{Path(name).stem} {scheme}")
                bar.update()
            bar.total += 1
            untiled = run_scheme(a, b, "hyte-static", seed, f"{Path(name).stem} k untiled",
                                 untiled_k_job(a, b))
            bar.update()
            row = {"matrix": Path(name).stem, "shape": list(a.shape), "nnz": int(a.nnz),
                   "runs": runs, "untiled_k": untiled, "speedups": figures(runs)}
            if static_opt and name in OPT:
                jobs = static_jobs(a, b)
                bar.total += len(jobs)
                tried = []
                for job in jobs:
                    bar.set_postfix_str(f"{Path(name).stem} static-opt")
                    tried.append(run_scheme(a, b, "hyte-static", seed,
                                            f"{Path(name).stem} static-opt", job))
                    bar.update()
                best = min(tried, key=lambda r: r["cycles"])
                row["static_opt"] = {**best, "schemes": len(tried)}
                row["speedups"]["opt_over_static"] = speedup(runs["hyte-static"]["cycles"],
                                                             best["cycles"])
                row["speedups"]["opt_over_hyte"] = speedup(runs["hyte"]["cycles"],
                                                           best["cycles"])
            rows.append(row)
    summary = {key: geomean([r["speedups"][key] for r in rows]) for key in PAPER}
    summary["dynamic_most"] = max(r["speedups"]["dynamic"] for r in rows)
    errors = [x["model_error"] for r in rows for x in (*r["runs"].values(), r["untiled_k"])]
    summary["model_error_most"] = max(errors, key=abs)
    summary["model_error_mean"] = float(np.mean(np.abs(errors)))
    opt = [r for r in rows if "static_opt" in r]
    summary["opt_over_static"] = (geomean([r["speedups"]["opt_over_static"] for r in opt])
                                  if opt else None)
    return {"build": {"pes": BUILD.pes, "tile_cols": BUILD.tile_cols,
                      "buffer_words": BUILD.buffer, "data": DATA, "tags": TAGS},
            "seed": seed, "definitions": DEFINITIONS, "matrices": rows, "summary": summary,
            "paper": {k: v[0] for k, v in PAPER.items()}, "notes": list(NOTES)}


def _cycles(x):
    """A run's RTL cycles, the model's and its error, as the table's columns."""
    return f"{x['cycles']:>10,} {x['model_cycles']:>10,} {x['model_error']:>+7.1%}"


def human(result, echo):
    """``result`` as text through ``echo``."""
    b = result["build"]
    echo(f"accel spgemm: {b['pes']} Gustavson PE, column tiles of {b['tile_cols']}, HYTE's "
         f"buffer of {b['buffer_words']} words (B's elements)")
    echo("definitions:")
    for name, text in result["definitions"].items():
        echo(f"  {name}: {text}")
    for r in result["matrices"]:
        echo()
        echo(f"{r['matrix']}: {r['shape'][0]} x {r['shape'][1]}, {r['nnz']:,} nonzeros")
        echo(f"  {'scheme':12} {'cycles':>10} {'model':>10} {'error':>7} {'read':>10} "
             f"{'written':>10} {'tiles':>6}  shapes (Tk x Tj), schedule")
        for scheme, x in r["runs"].items():
            shapes = ", ".join(f"{k}x{j}" for k, j in x["shapes"]) or "-"
            echo(f"  {scheme:12} {_cycles(x)} {x['bytes_read']:>10,} "
                 f"{x['bytes_written']:>10,} {x['tiles']:>6}  {shapes}, "
                 f"{x['schedule_seconds'] * 1e3:.1f} ms")
        if "static_opt" in r:
            x = r["static_opt"]
            shapes = ", ".join(f"{k}x{j}" for k, j in x["shapes"])
            inner = "k" if x["job"]["order"] == 0 else "j"
            echo(f"  {'static-opt':12} {_cycles(x)} {x['bytes_read']:>10,} "
                 f"{x['bytes_written']:>10,} {x['tiles']:>6}  {shapes}, {inner} innermost: "
                 f"the fastest of {x['schemes']} static schemes run")
        x = r["untiled_k"]
        shapes = ", ".join(f"{k}x{j}" for k, j in x["shapes"])
        echo(f"  {'k untiled':12} {_cycles(x)} {x['bytes_read']:>10,} "
             f"{x['bytes_written']:>10,} {x['tiles']:>6}  {shapes}: A and C once")
        echo(f"  {'by tensor':12} {'A read':>10} {'B read':>10} {'C written':>10} "
             f"{'metadata':>10}")
        for scheme, x in [*r["runs"].items(), ("k untiled", r["untiled_k"])]:
            t = x["traffic"]
            echo(f"  {scheme:12} {t['a_read']:>10,} {t['b_read']:>10,} "
                 f"{t['c_written']:>10,} {t['metadata']:>10,}"
                 + (f" ({t['unaccounted']:,} written unaccounted)" if t["unaccounted"] else ""))
        s = r["speedups"]
        echo(f"  hyte over drt {s['over_drt']:.2f}x, over harp {s['over_harp']:.2f}x, over "
             f"tailors {s['over_tailors']:.2f}x, over none {s['over_none']:.2f}x; +dynamic "
             f"{s['dynamic']:.2f}x; hyte-static over tailors {s['static']:.2f}x")
    s = result["summary"]
    ours = {**{k: f"{s[k]:.2f}x (geomean)" for k in ("over_drt", "over_harp",
                                                       "over_tailors", "over_none")},
            "dynamic": f"{s['dynamic']:.2f}x (geomean), up to {s['dynamic_most']:.2f}x",
            "static": (f"Static-Opt {s['opt_over_static']:.2f}x over hyte-static (geomean)"
                       if s["opt_over_static"] else
                       f"hyte-static {s['static']:.2f}x over tailors (geomean)")}
    labels = {"over_drt": "HYTE over DRT", "over_harp": "HYTE over HARP",
              "over_tailors": "HYTE over Tailors", "over_none": "HYTE over no buffer",
              "dynamic": "dynamic tuning", "static": "static schedule"}
    echo()
    echo(f"host model against the RTL (every scheme, k untiled): mean |error| "
         f"{s['model_error_mean']:.1%}, largest {s['model_error_most']:+.1%}")
    echo()
    echo_claims([(labels[k], ours[k], *PAPER[k]) for k in labels], result["notes"],
                (26, 44), ("metric", "ours (measured in this run)", "paper (claim)"))
