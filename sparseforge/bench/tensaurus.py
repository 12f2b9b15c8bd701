"""``sparseforge bench tensaurus``: the Tensaurus RTL on real tensors and matrices, beside
the paper's roofline (Fig. 7).

Each workload is planned (:func:`sparseforge.sw.tensaurus_job.plan`, integer factors of
rank ``RANK``, TTMc's B of rank ``R1``; a real matrix's pattern with small integer
values), run natively on
Verilator through the whole accelerator (2x2 PEs of 2 lanes) with memories that answer
every cycle (the tensor's out of order within the TLU's tags), and checked equal to the
golden kernel; two run again in tiles. Printed per workload: cycles (waiting
for matrices to load, and computing), the
MACs' utilization while computing, the operational intensity, the throughput in ops per
cycle over the whole run and the roofline's attainable figure there: ``min(peak,
intensity x bandwidth)``, the bandwidth being what the two memory ports move a cycle at
most (the TLU's one CISS entry and the MLU's one matrix chunk), the intensity the run's
ops over every byte it moved (the stream, each tile's matrix rows, the output). Beside
them: Fig. 3e's share of memory words that carry data when the PE rows stream CISS or
per-PE CSR slices (:mod:`sparseforge.sw.ciss_bandwidth`); the speed of Verilator against
Amaranth's simulator on a 4x4 array, the same run in each; ``--plot`` draws the roofline.
"""

import time

import click
import numpy as np
from tqdm import tqdm

from sparseforge.cli import OutputFile, echo_claims, emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.sw.ciss_bandwidth import ciss_bandwidth, csr_bandwidth
from sparseforge.sw.formats import read_matrix, read_tensor
from sparseforge.sw.tensaurus_job import plan, roofline

ROWS, COLS, VLEN, RANK, R1 = 2, 2, 2, 8, 4
LARGEST = (4, 4)
"""The array Verilator and Amaranth's simulator both run, for their speed."""
WORKLOADS = (("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns"),
             ("spmttkrp", "tensors/movielens-100k_user-item-day.tns"),
             ("spttmc", "tensors/movielens-latest-small_user-movie-tag.tns"),
             ("spmm", "matrices/suitesparse/494_bus.mtx"),
             ("spmm", "matrices/graphs/email-Eu-core.mtx"),
             ("spmv", "matrices/suitesparse/bcspwr06.mtx"),
             ("dmttkrp", "dense 12x10x8"),
             ("dttmc", "dense 12x10x8"),
             ("gemm", "dense 48x40"),
             ("spmttkrp", "tensors/movielens-100k_user-item-day.tns", {"spm_rows": 512}),
             ("spmm", "matrices/graphs/email-Eu-core.mtx", {"spm_rows": 256}),
             ("dmttkrp", "dense 12x10x8", {"banks": 2}),
             ("dmttkrp", "dense 12x10x8", {"banks": 4}))
"""(kernel, input[, options]): ``spm_rows`` runs in tiles of that many rows, each loading
behind the last; ``banks`` the scratchpads' banks (default the paper's 8), whose conflicts
stall PEs."""
QUICK = (WORKLOADS[0], WORKLOADS[2], WORKLOADS[3])

PAPER = {
    "roofline": ("every kernel close to its roofline: memory-bound sparse kernels near the "
                 "bandwidth line, dense ones near the peak", "Sec. 7.1, Fig. 7"),
    "peak": ("peak = MACs x 2 x 0.5: each PE spends every other cycle reading its scratchpad",
             "Sec. 7.1"),
}


def _operand(root, kernel, name, rng):
    if name.startswith("dense"):
        shape = tuple(int(n) for n in name.split()[1].split("x"))
        dense = rng.integers(-9, 10, shape) * (rng.random(shape) < 0.6)
        return dense, shape
    if name.endswith(".tns"):
        tensor = read_tensor(root / name)
        return tensor, tensor.shape
    matrix = read_matrix(root / name).tocsr()
    matrix.data = rng.integers(1, 10, matrix.nnz) * rng.choice([-1, 1], matrix.nnz)
    return matrix, matrix.shape


def measure(quick, seed):
    from sparseforge.hw.compose.tensaurus import Tensaurus
    from sparseforge.sw.tensaurus_host import params_for
    from sparseforge.tb.tensaurus import simulate

    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("bench tensaurus needs the shared data (set SPARSEFORGE_DATA)")
    rows = []
    for kernel, name, *options in tqdm(QUICK if quick else WORKLOADS, desc="bench tensaurus",
                                       leave=False):
        options = options[0] if options else {}
        rng = np.random.default_rng(seed)
        operand, shape = _operand(root, kernel, name, rng)
        rank = 1 if kernel == "spmv" else RANK
        ranks = [R1, rank] if kernel in ("spttmc", "dttmc") else [rank] * (len(shape) - 1)
        mats = [rng.integers(-9, 10, (n, f)) for n, f in zip(shape[1:], ranks, strict=True)]
        if kernel == "spmv":
            mats = [mats[0][:, 0]]
        job = plan(kernel, operand, mats, ROWS, COLS, VLEN, spm_rows=options.get("spm_rows"))
        params = {**params_for(job), **{k: v for k, v in options.items() if k == "banks"}}
        component = Tensaurus(**params)
        full = {"start": 1.0, "tensor": 1.0, "matrix": 1.0, "out": 1.0}
        result = simulate(component, job, seed, full)
        wire = job.wire
        figures = roofline(job, result.cycles, result.compute_cycles, wire.entry_width,
                           VLEN * wire.dw)
        # Bytes a cycle the two memory ports move at most: a CISS entry and a matrix chunk.
        bandwidth = (wire.entry_width + VLEN * wire.dw) / 8
        attainable = min(figures["peak_ops_per_cycle"],
                         figures["intensity_ops_per_byte"] * bandwidth)
        stream = job.tiles[0].ciss              # Fig. 3e: the words carrying data
        useful = ({"ciss_fraction": ciss_bandwidth(stream).fraction,
                   "csr_fraction": csr_bandwidth(stream).fraction}
                  if len(job.tiles) == 1 else {})
        rows.append({"kernel": kernel, "input": name, "nnz": job.nnz, "tiles": len(job.tiles),
                     **useful,
                     "spm_rows": job.spm_rows, "banks": component.banks,
                     "cycles": result.cycles, "load_cycles": result.load_cycles,
                     "compute_cycles": result.compute_cycles,
                     "equal_to_golden": bool(np.array_equal(result.output, job.golden)),
                     "bandwidth_bytes_per_cycle": bandwidth,
                     "attainable_ops_per_cycle": attainable,
                     "of_attainable": figures["ops_per_cycle"] / attainable, **figures})
    return {"array": f"{ROWS}x{COLS} PEs x {VLEN} lanes", "rank": RANK, "r1": R1,
            "workloads": rows, "simulators": None if quick else simulators(seed)}


def simulators(seed):
    """Verilator against Amaranth's simulator on the largest array here (``LARGEST`` PEs):
    the same run (DMTTKRP of a dense 24x20x16 tensor) in each, cycles per second of
    Verilator's run proper (its build and start-up apart) and of Amaranth's whole run."""
    from sparseforge.hw.compose.tensaurus import Tensaurus
    from sparseforge.sim.runners import pysim
    from sparseforge.sw.tensaurus_host import params_for
    from sparseforge.tb import native
    from sparseforge.tb.tensaurus import TensaurusBench

    rng = np.random.default_rng(seed)
    dense, shape = _operand(None, "dmttkrp", "dense 24x20x16", rng)
    mats = [rng.integers(-9, 10, (n, RANK)) for n in shape[1:]]
    job = plan("dmttkrp", dense, mats, *LARGEST, VLEN)
    component = Tensaurus(**params_for(job))
    full = dict.fromkeys(("start", "tensor", "matrix", "out"), 1.0)
    done = native.run(TensaurusBench(component, job, seed, full))
    start = time.perf_counter()
    result = pysim(TensaurusBench(component, job, seed, full))
    amaranth = time.perf_counter() - start
    if result.cycles != done.cycles or not np.array_equal(result.output, job.golden):
        raise SparseforgeError("bench tensaurus: the simulators disagree")
    return {"pes": f"{LARGEST[0]}x{LARGEST[1]}", "cycles": done.cycles,
            "verilator_cycles_per_second": done.cycles / done.run.run_seconds,
            "verilator_start_seconds": done.run.start_seconds,
            "amaranth_cycles_per_second": done.cycles / amaranth,
            "ratio": amaranth / done.run.run_seconds}


def plot(result, path):
    """The runs under the roofline (Fig. 7): ops a cycle against intensity, the roof of
    each run's bandwidth and the peak."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["workloads"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    peak = rows[0]["peak_ops_per_cycle"]
    bandwidth = max(r["bandwidth_bytes_per_cycle"] for r in rows)
    x = np.geomspace(0.1, 100, 200)
    ax.plot(x, np.minimum(peak, x * bandwidth), "k-", label="roof (both memory ports)")
    for r in rows:
        ax.scatter(r["intensity_ops_per_byte"], r["ops_per_cycle"], s=18)
        ax.annotate(f"{r['kernel']} {r['input'].split('/')[-1][:14]}",
                    (r["intensity_ops_per_byte"], r["ops_per_cycle"]), fontsize=6)
    ax.set(xscale="log", yscale="log", xlabel="ops per byte moved",
           ylabel="ops per cycle (whole run)", title=f"Tensaurus RTL, {result['array']}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def _human(result):
    click.echo(f"Tensaurus RTL, {result['array']}, rank {result['rank']} (TTMc: B's "
               f"{result['r1']}, C's {result['rank']}), on Verilator")
    click.echo(f"{'kernel input':44} {'nnz':>7} {'tiles':>5} {'banks':>5} {'load':>7} "
               f"{'compute':>8} {'util':>6} "
               f"{'ops/B':>6} {'ops/c':>6} {'roof':>6} {'of roof':>7}  golden")
    for r in result["workloads"]:
        click.echo(f"{r['kernel'] + ' ' + r['input']:44.44} {r['nnz']:>7} {r['tiles']:>5} "
                   f"{r['banks']:>5} {r['load_cycles']:>7} "
                   f"{r['compute_cycles']:>8} {r['utilization']:>6.1%} "
                   f"{r['intensity_ops_per_byte']:>6.2f} {r['ops_per_cycle']:>6.2f} "
                   f"{r['attainable_ops_per_cycle']:>6.2f} {r['of_attainable']:>7.0%}  "
                   f"{'equal' if r['equal_to_golden'] else 'DIFFERS'}")
    click.echo()
    shown = set()
    for r in result["workloads"]:
        if "ciss_fraction" in r and r["input"] not in shown:
            shown.add(r["input"])
            click.echo(f"  Fig. 3e at {ROWS} PEs, {r['input']}: {r['ciss_fraction']:.0%} of "
                       f"the memory words carry data as CISS, {r['csr_fraction']:.0%} as "
                       "per-PE CSR slices")
    sims = result.get("simulators")
    if sims:
        click.echo(f"  simulators, {sims['pes']} PEs, the same {sims['cycles']:,}-cycle run: "
                   f"Verilator {sims['verilator_cycles_per_second']:,.0f} cycles/s (after "
                   f"{sims['verilator_start_seconds']:.1f} s starting), Amaranth "
                   f"{sims['amaranth_cycles_per_second']:,.0f} cycles/s: {sims['ratio']:,.0f}x")
    click.echo()
    rows = result["workloads"]
    ours = {
        "roofline": (f"{min(r['of_attainable'] for r in rows):.0%}..."
                     f"{max(r['of_attainable'] for r in rows):.0%} of the attainable "
                     "over the whole run"),
        "peak": (f"a MAC utilization of {min(r['utilization'] for r in rows):.0%}..."
                 f"{max(r['utilization'] for r in rows):.0%} while computing (the PE "
                 "reads and computes in the same cycle)"),
    }
    echo_claims([(k, ours[k], *PAPER[k]) for k in PAPER],
                ["'load' counts the cycles no tile computes, waiting for its matrices: in "
                 "one tile (scratchpads holding every row) the whole load, the MLU reading "
                 "one chunk of VLEN values a cycle; in tiles only what a tile's compute "
                 "does not cover, the next tile loading into the scratchpads' other half "
                 "while one computes",
                 "ops/c is per cycle of the whole run; the roof is min(peak, intensity x "
                 "(one CISS entry + one matrix chunk) a cycle)",
                 "util is short of the 90% target on compute-bound kernels: the PE rows "
                 "share their column's scratchpad, whose bank conflicts stall one of them "
                 "(the banks rows); a fiber's end waits for the TSR's last sum in flight "
                 "(one or two bubbles at tlen <= 2); and a run's start and its output's "
                 "drain (tens of cycles) weigh on these small workloads"],
                (9, 60), ("what", "ours (this run)", "paper"))


@click.command("tensaurus")
@click.option("--quick", is_flag=True, help="Three small workloads (for tests).")
@click.option("--plot", "plot_path", type=OutputFile(plot=True),
              help="Also draw the runs under the roofline (PNG).")
@seed_option(1, "Seed of the values, the factors and the memories' order.")
@json_option
def command(quick, plot_path, seed, as_json):
    """The Tensaurus RTL on real tensors and matrices: cycles, utilization, roofline."""
    result = measure(quick, seed)
    if plot_path:
        plot(result, plot_path)
    emit(result, as_json, _human)
