"""``sparseforge run accel``: SpMM, SpMV, SpMTTKRP or SpGEMM through the whole
accelerator's RTL.

Plans the run on the host (:mod:`sparseforge.sw.accel_plan`: bands by the tiling policy,
passes over B's columns, the tile list), lays out its memory (:mod:`sparseforge.sw.
accel_image`: A as CSR, as stored, less its stored zeros), builds the accelerator once
for its configuration and simulates it natively on Verilator against a DDR4-timed AXI4
memory that answers out of order, its registers programmed over AXI4-Lite; reads Y back
from memory, which must equal the golden product exactly (a difference is a hardware
fault: exit 1). SpMTTKRP (``--kernel spmttkrp T.tns --factors B.npy C.npy``) runs on the
accelerator's tensor build (``order`` 3), the tensor stored as COO sorted by (i, j, k).
``--mem-latency`` and ``--mem-bytes-per-cycle`` set that memory's added
latency and its channels' readiness at run time (the same build serves every value), and
the host model (:func:`~sparseforge.sw.accel_model.dram`) predicts the run against the
same. SpGEMM (``--kernel spgemm A.mtx [B.mtx] --out C.npz``) runs on the accelerator's
Gustavson build (:mod:`sparseforge.sw.accel_spgemm`: A and B as CSR, as stored, B's
column tiles in the tile list), C read back from the engine's words and row lengths and
saved with ``scipy.sparse.save_npz``; its model is :mod:`sparseforge.sw.accel_spgemm_model`.
Pruned GEMM (``--kernel pruned-gemm W --factors X.npy``) runs on the Eureka build
(:mod:`sparseforge.run.accel_eureka`).
"""

import time
from pathlib import Path

import click
import numpy as np
import scipy.sparse as sp

from sparseforge.cli import OutputFile, emit, json_option, read_input, seed_option
from sparseforge.core.errors import ParameterError
from sparseforge.core.tools import status
from sparseforge.run.tensaurus import pe_array
from sparseforge.sw import accel_model, accel_plan, accel_spgemm, accel_spgemm_model
from sparseforge.sw.formats import Tensor, read_matrix, read_npy, read_tensor
from sparseforge.sw.wire import word_bytes

KERNELS = ("spmm", "spmv", "spmttkrp", "spgemm", "pruned-gemm")
TAGS = 8
DATA = 64
"""Bits of the AXI data bus: ``--mem-bytes-per-cycle`` at most its bytes."""
RATES = ("ar", "aw", "w", "r", "b")
"""The memory's channels, each ready (or answering) on ``--mem-bytes-per-cycle`` over
the bus's bytes of cycles (by default 5.6 of 8, 70%: the host model's
:data:`~sparseforge.sw.accel_model.DRAM`)."""
BYTES_PER_CYCLE = 5.6
LEAST_RATE = 1 / 512
"""A channel's coin fires at least this often: a silence as long as the bench's
watchdog (20,000 cycles) then never comes by chance."""


def memory_of(latency, bytes_per_cycle):
    """``(rate, memory)``: every channel's readiness for the bench's AXI memory and the
    host model's :class:`~sparseforge.sw.accel_model.Memory` to match, ``bytes_per_cycle``
    checked against the bus and ``latency`` against the memory's setting."""
    from sparseforge.tb.axi_native import LATENCY

    most = (1 << LATENCY) - 1
    if not 0 <= latency <= most:
        raise ParameterError(f"--mem-latency {latency}: expected cycles from 0 to {most}")
    bus = DATA // 8
    if not LEAST_RATE * bus <= bytes_per_cycle <= bus:
        raise ParameterError(f"--mem-bytes-per-cycle {bytes_per_cycle:g}: expected "
                             f"{LEAST_RATE * bus:g} to {bus} (the {DATA}-bit bus's bytes)")
    rate = bytes_per_cycle / bus
    return rate, accel_model.dram(latency, rate)


def most_pe_rows(order=2):
    """The accelerator's most PE rows (:data:`~sparseforge.hw.compose.accel.MOST_PES`;
    a tensor build's, ``order`` 3, :data:`~sparseforge.hw.compose.accel.MOST_TENSOR_PES`)."""
    from sparseforge.hw.compose.accel import MOST_PES, MOST_TENSOR_PES

    return MOST_TENSOR_PES if order == 3 else MOST_PES


def config_of(pes, vlen, tlen, buffer_kb, spm_rows, out_rows, order=2):
    """The build: the PE array, and a Tailor of the largest power of two of CISS entries
    (of ``order``) that ``buffer_kb`` KiB hold (its FIFO region a sixteenth of it)."""
    from sparseforge.hw.interfaces import ciss_entry_layout

    rows, cols = pes
    if rows > most_pe_rows(order):
        raise ParameterError(f"--pes {rows}x{cols}: at most {most_pe_rows(order)} PE rows "
                             "(the AXI master's in-order read ports)")
    entry = word_bytes(ciss_entry_layout(rows, 16, 16, order).size)
    entries = buffer_kb * 1024 // entry
    if entries < 8:
        raise ParameterError(f"--buffer-kb {buffer_kb}: holds {entries} CISS entries of "
                             f"{entry} bytes; the Tailor needs at least 8")
    depth = 1 << (entries.bit_length() - 1)
    return accel_plan.AccelConfig(pes=rows, cols=cols, vlen=vlen, tlen=tlen,
                                  spm_rows=spm_rows, out_rows=out_rows, depth=depth,
                                  fifo=max(2, depth // 16), order=order)


def measures(plan, nnz, run):
    """What a run did with the build: ``refetched_bytes`` (the CISS entries the Tailor
    took again, at the bytes each is stored in), ``buffer_utilization`` (the Tailor's,
    Tailors's occupancy averaged over bands) and ``mac_utilization`` (useful MACs over
    the array's MACs times the cycles, Tensaurus's op a nonzero of A and a column of B)."""
    return {"refetched_bytes": run.refetched * plan.config.entry_bytes,
            "buffer_utilization": plan.buffer_utilization(),
            "mac_utilization": plan.mac_utilization(nnz, run.cycles)}


def timing(laps, cycles):
    """``seconds`` (each phase's, ``total`` the whole run's), ``sim_cycles_per_second``
    (the simulation proper's) and ``whole_over_run`` (the whole run's seconds over the
    simulation proper's)."""
    seconds = laps.total()
    run = seconds.get("run")
    return {"seconds": {k: round(v, 3) for k, v in seconds.items()},
            "sim_cycles_per_second": cycles / run if run else None,
            "whole_over_run": seconds["total"] / run if run else None}


class Laps:
    """The seconds a run spends in each of its phases, in order: ``laps("name")`` ends
    the phase ``name`` now (a name lapped again adds to its seconds)."""

    def __init__(self):
        self.seconds = {}
        self.at = self.began = time.perf_counter()

    def __call__(self, name, seconds=None):
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + (now - self.at if seconds is None
                                                            else seconds)
        self.at = now

    def total(self):
        return {**self.seconds, "total": time.perf_counter() - self.began}


def run_natively(bench, laps):
    """``bench``'s :class:`~sparseforge.tb.accel.AccelRun` on Verilator, its phases lapped
    on ``laps``: ``verilog`` (the design's Verilog, from the cache once made, the top
    around it and the images through the simulator's files), ``build`` (Verilator, a
    lookup once built), ``start`` (the simulator reading its images), ``run`` (the
    simulation proper) and ``read`` (Y and the counters read back)."""
    from sparseforge.tb import native

    began = time.perf_counter()
    done = native.run(bench, progress="run accel")
    parts = {"build": done.run.build_seconds, "start": done.run.start_seconds,
             "run": done.run.run_seconds}
    laps("verilog", time.perf_counter() - began - sum(parts.values()))
    for name, seconds in parts.items():
        laps(name, seconds)
    run = bench.from_outputs(done.cycles, done.outputs)
    laps("read")
    return run


def _human(r):
    zeros = r["stored_zeros_dropped"]
    dropped = f" ({zeros:,} stored zero{'s' * (zeros != 1)} dropped)" if zeros else ""
    factors = "B and C" if r["kernel"] == "spmttkrp" else "B"
    click.echo(f"{r['kernel']} on {r['input']}: {' x '.join(map(str, r['shape']))}, "
               f"{r['nnz']:,} nonzeros{dropped}, {factors} of {r['columns']} column(s)")
    click.echo(f"  build        {r['pes']} PEs x {r['vlen']} lanes x tlen {r['tlen']} "
               f"(R = {r['width']} columns a pass), Tailor of {r['depth']} entries "
               f"({r['buffer_kb']} KiB), scratchpads of {r['spm_rows']} rows, bands of at "
               f"most {r['out_rows']} rows")
    click.echo(f"  plan         {r['plan']}")
    click.echo(f"  cycles       {r['cycles']:,} (DDR4-2400, the accelerator at 1 GHz, "
               f"{r['mem_latency']} cycles added to every access, every channel ready "
               f"{r['mem_bytes_per_cycle'] / (DATA // 8):.0%} of cycles: "
               f"{r['mem_bytes_per_cycle']:g} bytes a cycle); the host model predicts "
               f"{r['model_cycles']:,.0f} ({r['model_error']:+.1%})")
    click.echo(f"  memory       {r['dram_bytes_read']:,} bytes read, "
               f"{r['dram_bytes_written']:,} written; {r['refetched_entries']:,} CISS "
               f"entries refetched into the overbooked Tailor (the plan: "
               f"{r['planned_refetched_entries']:,}), {r['refetched_bytes']:,} bytes")
    click.echo(f"  utilization  the Tailor {r['buffer_utilization']:.1%} (averaged over "
               f"bands), the MACs {r['mac_utilization']:.1%} (a nonzero times a column of "
               "B an op)")
    split = ", ".join(f"{k} {v:.2f}" for k, v in r["seconds"].items() if k != "total")
    if r["sim_cycles_per_second"] is not None:      # a run that was simulated
        click.echo(f"  simulation   {r['sim_cycles_per_second']:,.0f} cycles a second; the "
                   f"whole run {r['seconds']['total']:.1f} s, {r['whole_over_run']:.2f} "
                   f"times the simulation proper ({split})")
    click.echo(f"  output       {r['out']}: equal to the golden product")


def nonzeros(a):
    """``(A as CSR with its stored zeros dropped, how many were dropped)``: a stored zero
    adds nothing to the product, and the CISS stream the converter makes of A marks a
    header with a zero value, so none may reach it. A tensor likewise (a
    :class:`~sparseforge.sw.formats.Tensor`)."""
    if isinstance(a, Tensor):
        held = a.values != 0
        return Tensor(a.coords[held], a.values[held], a.shape), int((~held).sum())
    a = sp.csr_array(a)
    stored = a.nnz
    a.eliminate_zeros()
    return a, stored - a.nnz


def operands(kernel, path, factors, more, pattern):
    """``(A, its stored zeros dropped, factors)`` of a run: ``path`` read as the kernel
    takes it (SpMTTKRP a 3-D ``.tns``, SpMM and SpMV a matrix) and ``factors`` and
    ``more`` (C's path, SpMTTKRP's only) as ``.npy``; ParameterError in one line where
    they do not fit the kernel."""
    tensor = str(path).lower().endswith((".tns", ".tns.gz"))
    if kernel == "spmttkrp":
        if not tensor:
            raise ParameterError(f"{path}: spmttkrp takes a 3-D tensor (.tns), not a matrix")
        if len(more) != 1:
            raise ParameterError("spmttkrp takes two factors: --factors B.npy C.npy")
        a = read_input(path, read_tensor)
        if a.ndim != 3:
            raise ParameterError(f"{path}: a tensor of {a.ndim} modes; spmttkrp takes 3")
    else:
        if tensor:
            raise ParameterError(f"{path}: a tensor; {kernel} takes a matrix (.mtx)")
        if more:
            raise ParameterError(f"{kernel} takes one factor (--factors B.npy), not "
                                 f"{1 + len(more)}")
        a = read_input(path, read_matrix)
    mats = [read_npy(p) for p in (factors, *more)]
    if kernel == "spmv" and mats[0].ndim != 1 and mats[0].shape[1:] != (1,):
        raise ParameterError(f"{factors} is {mats[0].shape}: spmv takes a vector; spmm a "
                             "matrix")
    a, dropped = nonzeros(a)
    values = a.values if kernel == "spmttkrp" else a.data
    if pattern:
        values = np.ones(len(values), dtype=np.int64)
        a = (Tensor(a.coords, values, a.shape) if kernel == "spmttkrp"
             else a.astype(bool).astype(np.int64))
    if not np.all(np.mod(values, 1) == 0):
        raise ParameterError(f"{path}: values that are not integers (the PEs compute on "
                             "integers of dw=16 bits); --pattern takes its sparsity alone")
    if kernel == "spmttkrp":
        a = Tensor(a.coords, values.astype(np.int64), a.shape)
    for p, m in zip((factors, *more), mats, strict=True):
        if not np.issubdtype(m.dtype, np.integer):
            raise ParameterError(f"{p}: {m.dtype} values; the PEs compute on integers of "
                                 "dw=16 bits")
    return a, dropped, mats


@click.command("accel")
@click.option("--kernel", type=click.Choice(KERNELS), required=True)
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--factors", type=click.Path(dir_okay=False),
              help="B.npy: K x N integers (spmv: a vector of K); spmttkrp: B.npy (J x R) "
                   "then C.npy (K x R) as the next argument; spgemm takes none (B is the "
                   "second matrix, or A again).")
@click.option("--out", "out", required=True, type=OutputFile(".npy", ".npz"),
              help="Where to write Y (.npy); spgemm's C (.npz, scipy.sparse.save_npz).")
@click.option("--tiling", help="How the host sizes A's bands for the Tailor (Tailors Sec. "
                                "4): uniform, prescient or swiftiles (the default); spgemm: "
                                "how B is tiled, none (the default: B's rows read from "
                                "memory), or B's tiles in HYTE's buffer (one PE) "
                                "shaped as tailors, drt or harp would, or as HYTE's static "
                                "schedule (hyte-static), tuned at run time (hyte).")
@click.option("--buffer-kb", type=click.IntRange(1, 1 << 16), default=32, show_default=True,
              help="The Tailor's size: the largest power of two of CISS entries it holds. "
                   "Its utilization (buffer_utilization) is Tailors's: the share of it a "
                   "band's entries occupy, averaged over bands. spgemm: HYTE's buffer, the "
                   "largest power of two of B's elements it holds.")
@click.option("--buffer-words", type=int,
              help="spgemm: HYTE's buffer in B's elements (a word each), a power of two "
                   "from 4 to 32768, in place of --buffer-kb.")
@click.option("--pes", help="The PE array, RxC (default 4x2); spgemm: the Gustavson "
                            "PEs, N (default 2); pruned-gemm: Eureka's 4x4 sub-arrays side "
                            "by side, N (default 2).")
@click.option("--tile-cols", type=int, default=64, show_default=True,
              help="spgemm: C's columns a column tile holds (the PEs' accumulator), a "
                   "power of two from 8 to 4096.")
@click.option("--compaction", type=click.Choice(["1", "2", "4"]), default="4",
              show_default=True, help="pruned-gemm: Eureka's compaction factor P (blocks of "
                                      "4 x 4P).")
@click.option("--vlen", type=click.IntRange(1, 16), default=2, show_default=True)
@click.option("--tlen", type=click.IntRange(1, 64), default=2, show_default=True)
@click.option("--spm-rows", type=click.IntRange(2, 1 << 16), default=64, show_default=True)
@click.option("--out-rows", type=click.IntRange(1, 1 << 15), default=64, show_default=True)
@click.option("--pattern", is_flag=True,
              help="Take A's sparsity only, every nonzero 1 (for a matrix of real values: "
                   "the PEs compute on integers). A stored zero is no nonzero: it is "
                   "dropped on reading, with or without this flag.")
@click.option("--mem-latency", type=int, default=0, show_default=True,
              help="Cycles the memory adds to every access beyond the DDR4 part's timing "
                   "(set at run time, no new build).")
@click.option("--mem-bytes-per-cycle", type=float, default=BYTES_PER_CYCLE, show_default=True,
              help="Bytes a cycle the memory moves at most: every AXI channel ready on this "
                   "share of the bus's 8 bytes (set at run time, no new build).")
@seed_option(1, "Seed of the memory's random readiness and the swiftiles sampling.")
@json_option
def command(kernel, paths, factors, out, tiling, buffer_kb, buffer_words, pes, tile_cols,
            compaction, vlen, tlen, spm_rows, out_rows, pattern, mem_latency,
            mem_bytes_per_cycle, seed, as_json):
    """MATRIX (A, read as CSR, its stored zeros dropped) times --factors B through the
    accelerator's RTL; or, ``--kernel spmttkrp T.tns --factors B.npy C.npy``, the tensor's
    SpMTTKRP (T stored as COO, its stored zeros dropped); or, ``--kernel spgemm A.mtx
    [B.mtx] --out C.npz``, C = A·B (A·A without B) on the Gustavson build; or, ``--kernel
    pruned-gemm W.smtx --factors X.npy``, Y = W X of a pruned layer on the Eureka build."""
    from sparseforge.tb.accel import AccelBench, AccelHarness, params_of

    laps = Laps()
    if (kernel == "spgemm") != str(out).lower().endswith(".npz"):
        raise ParameterError(f"--out {out}: spgemm writes C as .npz, the other kernels Y "
                             "as .npy")
    if kernel == "spgemm":
        if factors:
            raise ParameterError("spgemm takes no --factors: B is the second matrix")
        config = spgemm_config(pes, tile_cols, tiling or "none", buffer_kb, buffer_words)
        return spgemm(paths, out, config, tiling or "none", pattern, mem_latency,
                      mem_bytes_per_cycle, seed, as_json, laps)
    if kernel == "pruned-gemm":
        from sparseforge.run.accel_eureka import pruned_gemm

        return pruned_gemm(paths, factors, out, pes or "2", int(compaction), mem_latency,
                           mem_bytes_per_cycle, seed, as_json, laps)
    if factors is None:
        raise ParameterError(f"{kernel} needs --factors")
    pes = pes or "4x2"
    matrix, *more = paths
    if spm_rows & (spm_rows - 1):
        raise ParameterError(f"--spm-rows {spm_rows}: a power of two")
    rate, memory = memory_of(mem_latency, mem_bytes_per_cycle)
    order = 3 if kernel == "spmttkrp" else 2
    config = config_of(pe_array(pes), vlen, tlen, buffer_kb, spm_rows, out_rows, order)
    a, dropped, mats = operands(kernel, matrix, factors, more, pattern)
    b = mats[0] if order == 2 else tuple(mats)
    laps("input")
    plan = accel_plan.plan(a, b, tiling or "swiftiles", config, seed=seed, kernel=kernel)
    laps("plan")
    status(f"run accel: {accel_plan.describe(plan)}; simulating...")
    component = AccelHarness(**params_of(config), tile=1 << 16, tags=TAGS, data=DATA)
    model = accel_model.predict(plan, a, memory, tags=TAGS)
    laps("model")
    bench = AccelBench(component, plan, a, b, seed, dict.fromkeys(RATES, rate), mem_latency)
    laps("image")
    run = checked(run_natively(bench, laps), plan.golden, seed)
    y = run.y[:, 0] if kernel == "spmv" and b.ndim == 1 else run.y
    nnz = len(a.values) if order == 3 else int(a.nnz)
    np.save(Path(out), y)
    laps("check")
    emit({"kernel": kernel, "input": matrix, "shape": list(a.shape), "nnz": nnz,
          "stored_zeros_dropped": dropped,
          "columns": plan.columns, "pes": pes, "vlen": vlen, "tlen": tlen,
          "width": config.width, "depth": config.depth, "buffer_kb": buffer_kb,
          "spm_rows": spm_rows, "out_rows": out_rows, "tiling": tiling,
          "mem_latency": mem_latency, "mem_bytes_per_cycle": mem_bytes_per_cycle,
          "plan": accel_plan.describe(plan), "bands": len(plan.bands),
          "passes": plan.passes, "overbooked_bands": plan.overbooked,
          "cycles": run.cycles, "dram_bytes_read": run.bytes_read,
          "dram_bytes_written": run.bytes_written, "refetched_entries": run.refetched,
          "planned_refetched_entries": plan.refetched_entries(), **measures(plan, nnz, run),
          "model_cycles": model.cycles, "model_error": model.cycles / run.cycles - 1,
          "model_bytes_read": model.bytes_read, "dram_bursts": run.dram,
          "model_dram_bursts": round(model.parts["bus"] / memory.burst),
          **timing(laps, run.cycles), "out": out,
          "equal_to_golden": True}, as_json, _human)


def checked(run, golden, seed, name="Y"):
    """``run`` where it equals ``golden``; else a hardware fault (exit 1) naming the first
    difference and the seed that replays it."""
    where = run.fault(golden, name)
    if where:
        raise click.ClickException(f"hardware fault: {where} (replay with --seed {seed})")
    return run


def gustavson_pes(text):
    """The Gustavson build's PEs from ``--pes N``."""
    from sparseforge.hw.compose.accel import MOST_GUSTAVSON_PES

    try:
        n = int(text)
    except ValueError:
        raise ParameterError(f"--pes {text}: spgemm takes a number of PEs, e.g. 2") from None
    if not 1 <= n <= MOST_GUSTAVSON_PES:
        raise ParameterError(f"--pes {n}: spgemm takes 1 to {MOST_GUSTAVSON_PES} PEs (three "
                             "of the AXI master's in-order read ports a PE)")
    return n


def spgemm_operands(paths, pattern):
    """``(A, B, stored zeros dropped)`` of C = A·B from ``paths`` (A, and B or A again),
    each read as a matrix; ParameterError in one line for a tensor or a third path."""
    if len(paths) > 2:
        raise ParameterError(f"spgemm takes A and at most B, not {len(paths)} matrices")
    mats, dropped = [], 0
    for path in paths:
        if str(path).lower().endswith((".tns", ".tns.gz")):
            raise ParameterError(f"{path}: a tensor; spgemm takes matrices (.mtx)")
        m, zeros = nonzeros(read_input(path, read_matrix))
        if pattern:
            m = m.astype(bool).astype(np.int64)
        if not np.all(np.mod(m.data, 1) == 0):
            raise ParameterError(f"{path}: values that are not integers (the PEs compute "
                                 "on integers); --pattern takes its sparsity alone")
        mats.append(m)
        dropped += zeros
    return mats[0], mats[-1], dropped


def spgemm_config(pes, tile_cols, tiling, buffer_kb, buffer_words=None):
    """The Gustavson build for ``run accel --kernel spgemm``'s options: ``--pes`` (default
    2, or 1 with HYTE's buffer, which serves one PE), ``--tile-cols``, ``--tiling`` (one
    of :data:`~sparseforge.sw.accel_spgemm.SCHEMES`) and ``--buffer-kb`` (HYTE's buffer:
    the largest power of two of B's elements, a word each, it holds) or
    ``--buffer-words``."""
    from sparseforge.hw.compose.accel import BUFFER, LEAST_BUFFER, TILE_COLS

    if tiling not in accel_spgemm.SCHEMES:
        raise ParameterError(f"--tiling {tiling}: spgemm takes one of "
                             f"{', '.join(accel_spgemm.SCHEMES)}")
    try:
        TILE_COLS.check(tile_cols)
    except ParameterError:
        raise ParameterError(f"--tile-cols {tile_cols}: expected {TILE_COLS.allowed()}") \
            from None
    buffer = 0
    if tiling != "none":
        if pes not in (None, "1"):
            raise ParameterError(f"--pes {pes}: --tiling {tiling} keeps B in HYTE's buffer, "
                                 "which serves one PE (--pes 1)")
        element = accel_spgemm.SpgemmConfig.dw + accel_spgemm.SpgemmConfig.iw
        words = buffer_kb * 1024 // word_bytes(element)
        buffer = 1 << (words.bit_length() - 1) if buffer_words is None else buffer_words
        try:
            BUFFER.check(buffer)
            if buffer < LEAST_BUFFER:
                raise ParameterError
        except ParameterError:
            raise ParameterError(f"--buffer-words {buffer}: expected a power of two from "
                                 f"{LEAST_BUFFER} (a row's metadata and its first elements) "
                                 f"to {BUFFER.hi}") from None
    return accel_spgemm.SpgemmConfig(pes=gustavson_pes(pes or ("1" if buffer else "2")),
                                     tile_cols=tile_cols, buffer=buffer)


def spgemm_plan(a, b, config, tiling, seed, job=None):
    """``(plan, schedule, seconds)`` of ``run accel --kernel spgemm``: on a build with
    HYTE's buffer, the controller's job for ``tiling`` (or ``job``, given), the seconds
    the host took to schedule it, and the commands the controller's model sends for it
    on B (:func:`~sparseforge.sim.models.hyte_controller.matrix_trace`)."""
    from sparseforge.sim.models.hyte_controller import Config, matrix_trace

    if not config.buffer:
        return accel_spgemm.plan(a, b, config), None, 0.0
    a, b = accel_spgemm.operands(a, b, config)
    start = time.perf_counter()
    schedule = None
    if job is None:
        job, schedule = accel_spgemm.hyte_job(a, b, config, tiling, seed)
    seconds = time.perf_counter() - start
    trace = matrix_trace(b, Config(**job), most_tj=config.tile_cols)
    return accel_spgemm.plan(a, b, config, job, trace.commands), schedule, seconds


def by_tensor(plan, run):
    """A SpGEMM run's traffic by tensor (HYTE Fig. 7's breakdown): A's reads, C's writes
    and the metadata (the tile list; HYTE's tile log and kept entries) as the plan gives
    them (:func:`~sparseforge.sw.accel_spgemm_model.known_traffic`), B's reads the rest
    of the run's (with HYTE's positions unit's); ``unaccounted``, written bytes the plan
    does not give (0 where the count is exact)."""
    known = accel_spgemm_model.known_traffic(plan)
    return {"a_read": known["a_read"],
            "b_read": run.bytes_read - known["a_read"] - known["meta_read"],
            "c_written": known["c_written"],
            "metadata": known["meta_read"] + known["meta_written"],
            "unaccounted": run.bytes_written - known["c_written"] - known["meta_written"]}


def spgemm(paths, out, config, tiling, pattern, mem_latency, mem_bytes_per_cycle, seed,
           as_json, laps):
    """``run accel --kernel spgemm``: C = A·B on the accelerator's Gustavson build
    (``config``, :func:`spgemm_config`'s)."""
    from sparseforge.tb.accel import AccelBench, AccelHarness, params_of

    rate, memory = memory_of(mem_latency, mem_bytes_per_cycle)
    n, tile_cols = config.pes, config.tile_cols
    a, b, dropped = spgemm_operands(paths, pattern)
    laps("input")
    plan, schedule, seconds = spgemm_plan(a, b, config, tiling, seed)
    laps("plan")
    model = accel_spgemm_model.predict(plan, memory)
    laps("model")
    tiles = (f"{len(plan.commands)} HYTE tile(s), {tiling}" if config.buffer else
             f"{len(plan.offsets)} column tile(s) of {tile_cols}")
    status(f"run accel: C = A·B, {tiles}; simulating...")
    component = AccelHarness(**params_of(config), tags=TAGS, data=DATA)
    bench = AccelBench(component, plan, a, b, seed, dict.fromkeys(RATES, rate), mem_latency)
    laps("image")
    run = checked(run_natively(bench, laps), plan.golden, seed, "C")
    sp.save_npz(Path(out), run.y)
    laps("check")
    multiplies = accel_spgemm.multiplies(plan)
    tensors = by_tensor(plan, run)
    emit({"kernel": "spgemm", "input": paths[0], "b_input": paths[-1],
          "shape": list(plan.shape), "nnz": int(plan.a.nnz), "b_nnz": int(plan.b.nnz),
          "c_nnz": int(plan.golden.nnz), "stored_zeros_dropped": dropped, "pes": n,
          "tile_cols": tile_cols, "tiling": tiling, "buffer_words": config.buffer,
          "schedule": None if schedule is None else {
              "tile_ikj": list(schedule.tile), "order": schedule.order,
              "job": plan.tiling, "seconds": seconds},
          "tiles": len(plan.commands) if config.buffer else len(plan.offsets),
          "shapes": sorted({(cmd[2]["t"], cmd[1]["t"]) for cmd in plan.commands}),
          "mem_latency": mem_latency, "mem_bytes_per_cycle": mem_bytes_per_cycle,
          "cycles": run.cycles, "dram_bytes_read": run.bytes_read,
          "dram_bytes_written": run.bytes_written, "multiplies": multiplies,
          "mac_utilization": multiplies / (n * run.cycles),
          "model_cycles": model.cycles, "model_error": model.cycles / run.cycles - 1,
          "model_bytes_read": model.bytes_read, "model_bytes_written": model.bytes_written,
          "model_dram_bursts": model.dram_bursts,
          "dram_bursts": run.dram, "traffic_by_tensor": tensors,
          **timing(laps, run.cycles), "out": out, "equal_to_golden": True},
         as_json, _spgemm_human)


def _spgemm_human(r):
    zeros = r["stored_zeros_dropped"]
    dropped = f" ({zeros:,} stored zero{'s' * (zeros != 1)} dropped)" if zeros else ""
    m, k, n = r["shape"]
    click.echo(f"spgemm on {r['input']} x {r['b_input']}: A {m} x {k} ({r['nnz']:,} "
               f"nonzeros), B {k} x {n} ({r['b_nnz']:,}){dropped}; C has {r['c_nnz']:,}")
    if r["buffer_words"]:
        shapes = ", ".join(f"{k}x{j}" for k, j in r["shapes"])
        click.echo(f"  build        {r['pes']} Gustavson PE, B's tiles in HYTE's buffer of "
                   f"{r['buffer_words']:,} words, --tiling {r['tiling']}: {r['tiles']} "
                   f"tile(s), B's shapes (Tk x Tj) {shapes}")
    else:
        click.echo(f"  build        {r['pes']} Gustavson PEs, column tiles of "
                   f"{r['tile_cols']} columns: {r['tiles']} tile(s), A streamed once a tile")
    predicted = f"; the host model predicts {r['model_cycles']:,} ({r['model_error']:+.1%})"
    click.echo(f"  cycles       {r['cycles']:,} (DDR4-2400, the accelerator at 1 GHz, "
               f"{r['mem_latency']} cycles added to every access, every channel ready "
               f"{r['mem_bytes_per_cycle'] / (DATA // 8):.0%} of cycles){predicted}")
    modelled = f" (the model: {r['model_bytes_read']:,} and {r['model_bytes_written']:,})"
    click.echo(f"  memory       {r['dram_bytes_read']:,} bytes read, "
               f"{r['dram_bytes_written']:,} written{modelled}")
    t = r["traffic_by_tensor"]
    click.echo(f"  by tensor    A {t['a_read']:,} read, B {t['b_read']:,} read, C "
               f"{t['c_written']:,} written, metadata {t['metadata']:,}"
               + (f", {t['unaccounted']:,} written unaccounted" if t["unaccounted"] else ""))
    bursts = r["dram_bursts"]
    if bursts:
        took = bursts["dram_reads"] + bursts["dram_writes"]
        shared = bursts["shared_reads"] + bursts["shared_writes"]
        model = f" (the model: {r['model_dram_bursts']:,})"
        click.echo(f"  DRAM         {took:,} bursts on the bus, {shared:,} accesses answered "
                   f"with the burst before{model}")
    click.echo(f"  utilization  the multipliers {r['mac_utilization']:.1%} ({r['multiplies']:,} "
               "products of B's elements, every tile's)")
    split = ", ".join(f"{k} {v:.2f}" for k, v in r["seconds"].items() if k != "total")
    click.echo(f"  simulation   {r['sim_cycles_per_second']:,.0f} cycles a second; the whole "
               f"run {r['seconds']['total']:.1f} s, {r['whole_over_run']:.2f} times the "
               f"simulation proper ({split})")
    click.echo(f"  output       {r['out']}: equal to scipy's A @ B")
