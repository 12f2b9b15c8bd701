"""``sparseforge bench tensaurus``: the Tensaurus RTL on real tensors and matrices, beside
the paper's roofline (Fig. 7).

Each workload is planned (:func:`sparseforge.sw.tensaurus_job.plan`, integer factors of
the array's rank, TTMc's B of rank ``r1``; a real matrix's pattern with small integer
values; a dense input fully dense), run natively on Verilator through the whole
accelerator (2x2 PEs of 2 lanes; with ``--paper`` the paper's 8x8 of VLEN 4 and its
on-chip memories) with memories that answer every cycle (the tensor's out of order
within a window of the TLU's reads), and checked equal to the golden kernel; two run
again in tiles. Printed per workload: cycles (waiting for matrices to load, and
computing), the ops, the MACs' utilization while computing, the operational intensity,
the throughput over the whole run and the roofline's attainable figure there, as
:func:`~sparseforge.sw.tensaurus_job.measures` defines them for this bench and
``sparseforge run tensaurus`` alike (Sec. 7.1, Fig. 7): ops on real values only, a lane
the PEs run because the rank is padded to ``tlen x cols x vlen`` not an op, the ops the
array executed beside; the roof one memory system's, as the paper's one HBM. Beside
them: Fig. 3e's share of memory words that carry data when the PE rows stream CISS or
per-PE CSR slices (:mod:`sparseforge.sw.ciss_bandwidth`); the speed of Verilator against
Amaranth's simulator on a 4x4 array, the same run in each; Fig. 3e measured, the RTL TLU
streaming CISS against per-PE CSR reads from a DDR4 model (:mod:`~sparseforge.bench.
ciss_dram`); ``--plot`` draws the roofline.
"""

import time

import click
import numpy as np
from tqdm import tqdm

from sparseforge.bench import ciss_dram
from sparseforge.cli import OutputFile, echo_claims, emit, json_option, seed_option
from sparseforge.core.data import shared_data_dir
from sparseforge.core.errors import SparseforgeError
from sparseforge.sw.ciss_bandwidth import ciss_bandwidth, csr_bandwidth
from sparseforge.sw.formats import read_matrix, read_tensor
from sparseforge.sw.tensaurus_job import DENSE, KERNELS, measures, plan, tlen_of

ARRAYS = {
    "ours": {"rows": 2, "cols": 2, "vlen": 2, "rank": 8, "r1": 4},
    "paper": {"rows": 8, "cols": 8, "vlen": 4, "rank": 32, "r1": 4},
}
"""The arrays the bench runs: a small one for every run, and with ``--paper`` the paper's
(Sec. 7: 8x8 PEs of VLEN 4), a rank that fills its 32 lanes, and its on-chip memories
(:data:`PAPER_MEMORY`)."""
PAPER_MEMORY = {"spm_bytes": 16 << 10, "banks": 8, "msu_bytes": 128 << 10, "msu_banks": 8}
"""The paper's memories (Sec. 7): each scratchpad a double buffer of 2 x 16 KB in 8 banks
(the first column's 2 x 32 KB holds TTMc's B once; here every column keeps its own copy
in its 16 KB), the MSU 2 x 128 KB in 8 banks."""
TAGS, WINDOW = 16, 8
"""The TLU's reads in flight, and the window within which the tensor's memory answers out
of order: a memory that answers out of order within all of the TLU's reads stalls it half
the time (it cannot issue the next window before the first returns). The MSU has a bank a
PE column (8 at most, as the paper's), so a PE row's drains are taken together."""
LARGEST = (4, 4)
"""The array Verilator and Amaranth's simulator both run, for their speed."""
WORKLOADS = (("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns"),
             ("spmttkrp", "tensors/movielens-100k_user-item-day.tns"),
             ("spttmc", "tensors/movielens-latest-small_user-movie-tag.tns"),
             ("spmm", "matrices/suitesparse/494_bus.mtx"),
             ("spmm", "matrices/graphs/email-Eu-core.mtx"),
             ("spmv", "matrices/suitesparse/bcspwr06.mtx"),
             ("dmttkrp", "dense 24x20x16"),
             ("dttmc", "dense 24x20x16"),
             ("gemm", "dense 96x80"),
             ("gemv", "dense 96x80"),
             ("spmttkrp", "tensors/movielens-100k_user-item-day.tns", {"spm_rows": 512}),
             ("spmm", "matrices/graphs/email-Eu-core.mtx", {"spm_rows": 256}),
             ("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns", {"banks": 2}),
             ("spmttkrp", "tensors/movielens-latest-small_user-movie-tag.tns", {"banks": 4}),
             ("spmttkrp", "tensors/movielens-100k_user-item-day.tns", {"out_rows": 64}),
             ("spmttkrp", "tensors/movielens-100k_user-item-day.tns",
              {"out_rows": 64, "direct": True}))
"""(kernel, input[, options]): ``spm_rows`` runs in tiles of that many rows, each loading
behind the last; ``banks`` the scratchpads' banks (default the paper's 8), whose conflicts
stall the sparse kernels' PEs (the dense ones read once a column, broadcast);
``out_rows`` an MSU of that many rows a half, the output in output tiles, or with
``direct`` summed in memory (Section 5.2.5). A dense input is fully dense: every element,
zeros too, is read and computed."""
QUICK = (WORKLOADS[0], WORKLOADS[2], WORKLOADS[3])

PAPER = {
    "roofline": ("every kernel close to its roofline: memory-bound sparse kernels near the "
                 "bandwidth line, dense ones near the peak; ops (multiplies and adds) per "
                 "byte from one memory, HBM1's 128 GB/s", "Sec. 7.1, Fig. 7"),
    "peak": ("peak = MACs x 2 x 0.5 (8x8 PEs x 4 lanes: 512 x 2 GHz x 0.5 = 512 GOP/s): "
             "each PE spends every other cycle reading its scratchpad", "Sec. 7.1"),
}


def _operand(root, kernel, name, rng):
    if name.startswith("dense"):
        shape = tuple(int(n) for n in name.split()[1].split("x"))
        return rng.integers(-9, 10, shape), shape
    if name.endswith(".tns"):
        tensor = read_tensor(root / name)
        return tensor, tensor.shape
    matrix = read_matrix(root / name).tocsr()
    matrix.data = rng.integers(1, 10, matrix.nnz) * rng.choice([-1, 1], matrix.nnz)
    return matrix, matrix.shape


def paper_params(params, out_rows):
    """``params`` (a build) with the paper's memories (:data:`PAPER_MEMORY`): its
    scratchpads' banks and its MSU's banks and ``out_rows`` (:func:`paper_rows`)."""
    return {**params, "banks": PAPER_MEMORY["banks"], "msu_banks": PAPER_MEMORY["msu_banks"],
            "out_rows": out_rows}


def paper_rows(rank, r1, kernel, vlen, cols, dw, acc_width=32):
    """``(spm_rows, out_rows)`` the paper's memories hold: a scratchpad half's 16 KB over
    the two operands' rows of this column's chunks (``vlen x dw`` bits each), and an MSU
    half's 128 KB over output rows of ``olen x cols`` chunks of ``vlen`` accumulators."""
    from sparseforge.hw.interfaces import spm_chunks

    tlen = tlen_of(KERNELS[kernel], rank, cols, vlen)
    ttmc = KERNELS[kernel] == "ttmc"
    chunks = spm_chunks(tlen, vlen, r1 if ttmc else 1)
    olen = tlen * (r1 if ttmc else 1)
    return (PAPER_MEMORY["spm_bytes"] // (2 * chunks * vlen * dw // 8),
            PAPER_MEMORY["msu_bytes"] // (olen * cols * vlen * acc_width // 8))


def measure(quick, seed, array="ours"):
    from sparseforge.hw.compose.tensaurus import Tensaurus
    from sparseforge.sw.tensaurus_host import params_for
    from sparseforge.tb.tensaurus import simulate

    root = shared_data_dir()
    if root is None:
        raise SparseforgeError("bench tensaurus needs the shared data (set SPARSEFORGE_DATA)")
    a = ARRAYS[array]
    workloads = QUICK if quick else WORKLOADS
    if array == "paper":            # its memories fix the tiles and banks the options vary
        workloads = [w for w in workloads if len(w) == 2]
    rows = []
    for kernel, name, *options in tqdm(workloads, desc="bench tensaurus", leave=False):
        options = options[0] if options else {}
        rng = np.random.default_rng(seed)
        operand, shape = _operand(root, kernel, name, rng)
        rank = 1 if kernel in ("spmv", "gemv") else a["rank"]
        ranks = [a["r1"], rank] if kernel in ("spttmc", "dttmc") else [rank] * (len(shape) - 1)
        mats = [rng.integers(-9, 10, (n, f)) for n, f in zip(shape[1:], ranks, strict=True)]
        if kernel in ("spmv", "gemv"):
            mats = [mats[0][:, 0]]
        spm_rows, out_rows = options.get("spm_rows"), options.get("out_rows")
        if array == "paper":
            spm_rows, out_rows = paper_rows(rank, a["r1"], kernel, a["vlen"], a["cols"], 16)
        job = plan(kernel, operand, mats, a["rows"], a["cols"], a["vlen"], spm_rows=spm_rows,
                   out_rows=out_rows, direct=options.get("direct", False))
        params = {**params_for(job), "tags": TAGS, "msu_banks": min(a["cols"], 8),
                  **{k: v for k, v in options.items() if k == "banks"}}
        if array == "paper":
            params = paper_params(params, out_rows)
        component = Tensaurus(**params)
        full = {"start": 1.0, "tensor": 1.0, "matrix": 1.0, "out": 1.0}
        result = simulate(component, job, seed, full, window=WINDOW)
        figures = measures(job, result.cycles, result.compute_cycles)
        stream = job.tiles[0].stream             # Fig. 3e: the words carrying data
        useful = ({"ciss_fraction": ciss_bandwidth(stream).fraction,
                   "csr_fraction": csr_bandwidth(stream).fraction}
                  if len(job.tiles) == 1 and not job.dense else {})
        rows.append({"kernel": kernel, "input": name, "nnz": job.nnz, "tiles": len(job.tiles),
                     **useful,
                     "spm_rows": job.spm_rows, "banks": component.banks,
                     "msu_banks": component.msu_banks, "out_rows": component.out_rows,
                     "out_tiles": sum(tile.closes for tile in job.tiles),
                     "direct": job.direct, "drains": job.drains(component.r1),
                     "cycles": result.cycles, "load_cycles": result.load_cycles,
                     "compute_cycles": result.compute_cycles,
                     "equal_to_golden": bool(np.array_equal(result.output, job.golden)),
                     **figures})
    whole = not quick and array == "ours"
    return {"array": f"{a['rows']}x{a['cols']} PEs x {a['vlen']} lanes", "config": array,
            "rows": a["rows"], "cols": a["cols"], "vlen": a["vlen"], "rank": a["rank"],
            "r1": a["r1"], "tags": TAGS, "window": WINDOW, "workloads": rows,
            "simulators": simulators(seed) if whole else None,
            "fig3e": ciss_dram.measure(read_tensor(root / "tensors" / ciss_dram.TENSOR))
            if whole else None}


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
    mats = [rng.integers(-9, 10, (n, ARRAYS["ours"]["rank"])) for n in shape[1:]]
    job = plan("dmttkrp", dense, mats, *LARGEST, ARRAYS["ours"]["vlen"])
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
    """The runs under the roofline (Fig. 7): useful ops a cycle against intensity, the
    roof of one memory word a cycle (one for each word width among the runs) at our peak,
    and the paper's peak formula on the same MACs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["workloads"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    peak = rows[0]["peak_ops_per_cycle"]
    x = np.geomspace(0.1, 100, 200)
    widths = sorted({r["bandwidth_bytes_per_cycle"] for r in rows})
    for n, bandwidth in enumerate(widths):
        ax.plot(x, np.minimum(peak, x * bandwidth), "k" + ("-", "-.", ":")[n % 3], lw=1,
                label=f"roof: one memory, {bandwidth:g} B/cycle; peak MACs x 2")
    ax.axhline(rows[0]["paper_peak_ops_per_cycle"], color="grey", ls="--", lw=1,
               label="the paper's peak formula, MACs x 2 x 0.5")
    for r in rows:
        at = (r["intensity_useful_ops_per_byte"], r["useful_ops_per_cycle"])
        ax.scatter(*at, s=18)
        ax.annotate(f"{r['kernel']} {r['input'].split('/')[-1][:14]}", at, fontsize=6)
    ax.set(xscale="log", yscale="log", xlabel="useful ops per byte moved",
           ylabel="useful ops per cycle (whole run)", title=f"Tensaurus RTL, {result['array']}")
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def _by_density(rows):
    """The runs split into sparse and dense kernels, each part that has runs."""
    parts = (("sparse", [r for r in rows if r["kernel"] not in DENSE]),
             ("dense", [r for r in rows if r["kernel"] in DENSE]))
    return [(what, part) for what, part in parts if part]


def _human(result):
    click.echo(f"Tensaurus RTL, {result['array']} ({result['config']}), rank "
               f"{result['rank']} (TTMc: B's {result['r1']}, C's {result['rank']}), on "
               f"Verilator; the tensor's memory answers out of order within "
               f"{result['window']} of the TLU's {result['tags']} reads")
    click.echo(f"{'kernel input':40} {'nnz':>7} {'tiles':>5} {'banks':>5} {'output':>7} "
               f"{'load':>7} "
               f"{'compute':>8} {'ops':>9} {'executed':>9} {'util':>6} {'exec':>6} "
               f"{'ops/B':>6} {'ops/c':>6} {'roof':>6} {'of roof':>7}  golden")
    for r in result["workloads"]:
        output = "memory" if r["direct"] else f"{r['out_tiles']}x{r['out_rows']}"
        click.echo(f"{r['kernel'] + ' ' + r['input']:40.40} {r['nnz']:>7} {r['tiles']:>5} "
                   f"{r['banks']:>5} {output:>7} {r['load_cycles']:>7} "
                   f"{r['compute_cycles']:>8} {r['useful_ops']:>9} {r['executed_ops']:>9} "
                   f"{r['utilization_useful']:>6.1%} {r['utilization_executed']:>6.1%} "
                   f"{r['intensity_useful_ops_per_byte']:>6.2f} "
                   f"{r['useful_ops_per_cycle']:>6.2f} "
                   f"{r['attainable_ops_per_cycle']:>6.2f} {r['of_attainable']:>7.0%}  "
                   f"{'equal' if r['equal_to_golden'] else 'DIFFERS'}")
    click.echo()
    shown = set()
    for r in result["workloads"]:
        if "ciss_fraction" in r and r["input"] not in shown:
            shown.add(r["input"])
            click.echo(f"  Fig. 3e at {result['rows']} PEs, {r['input']}: "
                       f"{r['ciss_fraction']:.0%} of the memory words carry data as CISS, "
                       f"{r['csr_fraction']:.0%} as per-PE CSR slices")
    for r in result["workloads"]:
        tiled = [t for t in result["workloads"] if t["input"] == r["input"] and
                 t["kernel"] == r["kernel"] and t["out_tiles"] > 1 and r["direct"]]
        for t in tiled:
            click.echo(f"  Section 5.2.5, {r['kernel']} {r['input']}: summed in memory "
                       f"rather than in {t['out_tiles']} output tiles of {t['out_rows']} rows, "
                       f"{r['bytes'] / t['bytes']:.2f}x the bytes and "
                       f"{r['cycles'] / t['cycles']:.3f}x the cycles")
    if result.get("fig3e"):
        click.echo()
        ciss_dram.report(result["fig3e"])
    sims = result.get("simulators")
    if sims:
        click.echo(f"  simulators, {sims['pes']} PEs, the same {sims['cycles']:,}-cycle run: "
                   f"Verilator {sims['verilator_cycles_per_second']:,.0f} cycles/s (after "
                   f"{sims['verilator_start_seconds']:.1f} s starting), Amaranth "
                   f"{sims['amaranth_cycles_per_second']:,.0f} cycles/s: {sims['ratio']:,.0f}x")
    click.echo()
    rows = result["workloads"]
    peak, paper = rows[0]["peak_ops_per_cycle"], rows[0]["paper_peak_ops_per_cycle"]
    ours = {
        "roofline": "; ".join(
            f"{what} {min(r['of_attainable'] for r in part):.0%}..."
            f"{max(r['of_attainable'] for r in part):.0%} of the attainable over the whole "
            "run" for what, part in _by_density(rows)),
        "peak": (f"peak {peak} ops/cycle = MACs x 2, no 0.5 (the paper's formula: {paper:g}):"
                 f" the PE reads and computes in the same cycle; MAC utilization "
                 f"{min(r['utilization_useful'] for r in rows):.0%}..."
                 f"{max(r['utilization_useful'] for r in rows):.0%} of useful work while "
                 "computing"),
    }
    echo_claims([(k, ours[k], *PAPER[k]) for k in PAPER],
                ["'load' counts the cycles no tile computes, waiting for its matrices: in "
                 "one tile (scratchpads holding every row) the whole load, the MLU reading "
                 "a word of a chunk of VLEN values for each PE column a cycle; in tiles "
                 "only what a tile's compute "
                 "does not cover, the next tile loading into the scratchpads' other half "
                 "while one computes",
                 "ops are the paper's (Sec. 7.1, Fig. 7): a multiply and an add a MAC, on "
                 "real values only; 'executed' adds the lanes the PEs run past the rank "
                 f"(padded to tlen x {result['cols']} PE columns x {result['vlen']} lanes); "
                 "util and exec are "
                 "each over the MACs' lanes while computing, ops/B and ops/c (whole run) "
                 "are of useful ops",
                 f"spmv runs on the first PE column alone, as the paper's (one element of b "
                 f"a read, one OSR register): {result['rows']} of the "
                 f"{result['rows'] * result['cols']} PEs compute, and its util is of the "
                 "whole array's peak",
                 "output: output tiles x the rows of an MSU half, or 'memory', summed "
                 "directly in memory (Section 5.2.5), each drain read and written; the "
                 "paper's case for it, an output of many MSU halves, is the last two rows: "
                 "in output tiles each loads its own rows of both matrices",
                 "dense kernels run in the TLU's dense mode on fully dense operands: every "
                 "element is read (dw bits, zeros too) and computed, and each column's "
                 "scratchpad broadcasts its first PE's reads, so no bank conflicts",
                 f"peak: ours MACs x 2 = {peak} ops/cycle, the paper's formula MACs x 2 x "
                 f"0.5 = {paper:g} on the same MACs: its PE spends every other cycle "
                 "reading its scratchpad, ours reads and computes in the same cycle, a "
                 "point where this design is ahead of the paper's",
                 "roof = min(our peak, ops/B x one memory's bytes a cycle): one word a "
                 "cycle as wide as the widest memory word (a CISS entry, a dense word or "
                 "the MLU's word of a chunk a column), as the "
                 "paper's tensor, matrices and output share one HBM; the ports here are "
                 "separate, so a run loading tiles behind its compute may pass it",
                 "where util is short of the 90% target on compute-bound kernels: a sparse "
                 "kernel's PE rows share their column's scratchpad, whose bank conflicts "
                 "stall them (the banks rows); a slice group's drains queue at the MSU, one "
                 "a bank a cycle; a fiber's end waits for the TSR's last sum in flight (one "
                 "or two bubbles at tlen <= 2); and a run's start and its output's drain "
                 "(tens of cycles) weigh on small workloads",
                 *(["at the paper's 8x8 the dense workloads here take 1,400 to 2,200 "
                    "cycles, so a run's start and end and each group of 8 slices' drains "
                    "(8 PEs to an MSU bank) weigh more than on the 2x2"]
                   if result["config"] == "paper" else [])],
                (9, 60), ("what", "ours (this run)", "paper"))


@click.command("tensaurus")
@click.option("--quick", is_flag=True, help="Three small workloads (for tests).")
@click.option("--plot", "plot_path", type=OutputFile(plot=True),
              help="Also draw the runs under the roofline (PNG).")
@click.option("--paper", "paper_array", is_flag=True,
              help="At the paper's configuration: 8x8 PEs of VLEN 4, rank 32, its "
                   "scratchpads and MSU (minutes: a build for each kernel).")
@seed_option(1, "Seed of the values, the factors and the memories' order.")
@json_option
def command(quick, plot_path, paper_array, seed, as_json):
    """The Tensaurus RTL on real tensors and matrices: cycles, ops, utilization, roofline."""
    result = measure(quick, seed, "paper" if paper_array else "ours")
    if plot_path:
        plot(result, plot_path)
    emit(result, as_json, _human)
