# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus accelerator (``tensaurus``): a :class:`~sparseforge.sw.
tensaurus_job.Job` from memory images to the output.

The CISS stream sits in a memory that answers the TLU out of order
(:func:`sparseforge.tb.tensaurus_tlu.memory`), the matrices in one that answers the MLU
in order after a random latency (:func:`sparseforge.tb.tensaurus_mlu.load`); the output
is taken at random. Every read is checked against the addresses the run must make and
the output is rebuilt from what the MSU sent. Nothing is driven from Python per cycle
but the streams' coins, so it runs natively on Verilator at its speed.
"""

from dataclasses import dataclass

import numpy as np

from ..hw.interfaces import TensaurusKernel
from . import native
from .streams import Bench, Static
from .tensaurus_mlu import matrix_words
from .tensaurus_tlu import memory

RATE = 0.7
MODES = {"mttkrp": TensaurusKernel.MTTKRP, "mm": TensaurusKernel.MM,
         "ttmc": TensaurusKernel.TTMC}


@dataclass(frozen=True)
class TensaurusRun:
    cycles: int
    load_cycles: int        # the accelerator's count: no tile computing, one loading
    compute_cycles: int     # and the rest, to the output's end
    output: np.ndarray      # out_rows x rank (TTMc: out_rows x r1 x rank), as the MSU sent it


def params_for(job, iw=None):
    """The accelerator ``run tensaurus`` builds for ``job``: its array, and scratchpads and
    an output buffer rounded up to powers of two (so few distinct builds), each scratchpad
    in the paper's 8 banks (Section 6; fewer if it holds fewer rows)."""
    def up(n):
        return 1 << max(0, int(n) - 1).bit_length()
    spm_rows = max(2, up(job.spm_rows))
    largest = max(job.entries, *(m.size // job.vlen for m in job.mats), 2)
    return {"rows": job.rows, "cols": job.cols, "vlen": job.vlen, "tlen": job.tlen,
            "r1": job.r1, "dw": job.wire.dw, "iw": iw or job.wire.iw,
            "acc_width": job.acc_width, "order": 2 if job.mode == "mm" else 3,
            "spm_rows": spm_rows, "banks": min(8, spm_rows), "out_rows": up(job.out_rows),
            "addr_width": max(16, int(largest).bit_length() + 1)}


def matrix_loads(job, dw):
    """``(starts, words, reads)``: each tile's MLU start fields for its rows of the
    matrices, laid one after the other in memory; the memory's words; and the reads the
    tiles make, in order."""
    words, bases = [], []
    for matrix in job.mats:
        bases.append(len(words))
        words += matrix_words(matrix, job.vlen, dw)
    starts, reads = [], []
    for tile in job.tiles:
        start = {"base0": 0, "rows0": 0, "base1": 0, "rows1": 0}
        for n, ((first, count), matrix, base) in enumerate(zip(tile.rows, job.mats, bases,
                                                               strict=False)):
            chunks = matrix.shape[1] // job.vlen
            start |= {f"base{n}": base + first * chunks, f"rows{n}": count}
            reads += range(base + first * chunks, base + (first + count) * chunks)
        starts.append(start)
    return starts, words, reads


class TensaurusBench(Bench):
    """``job`` through ``component``; the tensor memory answers out of order within
    ``window`` reads (default: the TLU's tags)."""

    def __init__(self, component, job, seed, rates=None, window=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "tensor", "matrix", "out"), RATE), **(rates or {})}
        tags = component.tags
        streams, self.tensor_reads, responses, after = memory(
            [tile.ciss for tile in job.tiles], tags, window or tags,
            np.random.default_rng(seed))
        loads, words, self.matrix_reads = matrix_loads(job, component.dw)
        self.job = job
        self.chunks = component.olen * component.cols
        n = len(self.matrix_reads)
        tiles = [{"tensor_base": stream["base"], "entries": stream["count"], **start,
                  "out_rows": job.out_rows, "last": int(t == len(loads) - 1)}
                 for t, (stream, start) in enumerate(zip(streams, loads, strict=True))]
        self.sources = [
            self.source_on("start", tiles, rates["start"]),
            self.source_on("tensor_mem__response", responses, rates["tensor"],
                           after={"tensor_mem__request": after}),
            self.source_on("matrix_mem__response", [words[a] for a in self.matrix_reads],
                           rates["matrix"],
                           after={"matrix_mem__request": np.arange(1, n + 1)})]
        self.sinks = [self.sink_on("tensor_mem__request", rates["tensor"],
                                   len(self.tensor_reads)),
                      self.sink_on("matrix_mem__request", rates["matrix"], n),
                      self.sink_on("out", rates["out"], job.out_rows * self.chunks)]
        self.sinks.append(self.sink_on("stats", rates["out"], 1))
        self.drivers = [Static("kernel", MODES[job.mode].value), *self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        """The :class:`TensaurusRun` of what the sinks took, every read checked."""
        got = [int(a) for a in outputs["matrix_mem__request"]]
        if got != self.matrix_reads:
            raise AssertionError("matrix_mem: the MLU's reads are not the tiles' rows of the "
                                 "matrices in order")
        if list(outputs["tensor_mem__request"]) != self.tensor_reads:
            raise AssertionError("tensor_mem: the TLU's reads are not the entries in order")
        job, vlen, out = self.job, self.component.vlen, outputs["out"]
        y = np.zeros((job.out_rows, self.chunks * vlen), dtype=np.int64)
        for n, item in enumerate(out):
            row, chunk = divmod(n, self.chunks)
            if (item["row"], item["chunk"], item["last"]) != (row, chunk, n == len(out) - 1):
                raise AssertionError(f"out item {n}: row {item['row']} chunk {item['chunk']} "
                                     f"last {item['last']}, expected row {row} chunk {chunk}")
            y[row, chunk * vlen:(chunk + 1) * vlen] = item["lanes"]
        (stats,) = outputs["stats"]
        # Row i is Y[i, u] for each u in turn (TTMc; one u otherwise), each tlen * cols
        # chunks.
        y = y.reshape(job.out_rows, self.component.r1, -1)[:, :job.r1, :job.rank]
        return TensaurusRun(cycles, stats["load_cycles"], stats["compute_cycles"],
                            y if job.mode == "ttmc" else y[:, 0])


def simulate(component, job, seed, rates=None, engine="native", work_dir=None, window=None,
             progress=None):
    """The :class:`TensaurusRun` of ``job`` through ``component`` (``progress``: the
    label of a progress bar for a long native run)."""
    bench = TensaurusBench(component, job, seed, rates, window)
    return native.simulate(bench, engine, work_dir, progress)
