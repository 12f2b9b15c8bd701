# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus accelerator (``tensaurus``): a :class:`~sparseforge.sw.
tensaurus_job.Job` from memory images to the output.

The tensor (CISS entries, or a dense kernel's dense words) sits in a memory that answers
the TLU out of order (:func:`sparseforge.tb.tensaurus_tlu.memory`), the matrices, laid
out by :func:`sparseforge.sw.tensaurus_host.matrix_loads`, in one that answers the MLU
out of order too (:func:`sparseforge.tb.tensaurus_mlu.answers`), each within ``window``
reads; the output is taken at random.
Every read is checked against the addresses the run must make and the output is
rebuilt from what the MSU sent. Nothing is driven from Python per cycle but the
streams' coins, so it runs natively on Verilator at its speed.
"""

from dataclasses import dataclass

import numpy as np

from ..sw.tensaurus_host import matrix_loads
from ..sw.wire import TensaurusKernel
from . import native
from .streams import Bench, Static
from .tensaurus_mlu import answers
from .tensaurus_tlu import dense_fields, memory

RATE = 0.7


@dataclass(frozen=True)
class TensaurusRun:
    cycles: int
    load_cycles: int        # the accelerator's count: no tile computing, one loading
    compute_cycles: int     # and the rest, to the output's end
    output: np.ndarray      # out_rows x rank (TTMc: out_rows x r1 x rank), as the MSU sent it


class TensaurusBench(Bench):
    """``job`` through ``component``; the tensor memory answers out of order within
    ``window`` reads (default: the TLU's tags), the matrices' memory the MLU likewise."""

    def __init__(self, component, job, seed, rates=None, window=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "tensor", "matrix", "out"), RATE), **(rates or {})}
        tags = component.tags
        rng = np.random.default_rng(seed)
        streams, self.tensor_reads, responses, after = memory(
            [tile.stream for tile in job.tiles], tags, window or tags, rng)
        loads, words, tile_reads = matrix_loads(job, component.dw, component.mlu.b_chunks)
        self.matrix_reads, matrix_responses, matrix_after = answers(
            tile_reads, words, tags, window or tags, rng)
        self.job = job
        self.chunks = component.olen * component.cols
        n = len(self.matrix_reads)
        tiles = [{"tensor_base": stream["base"], "entries": stream["count"], **start,
                  **dense_fields(tile.stream), "out_rows": job.out_rows,
                  "last": int(t == len(loads) - 1)}
                 for t, (stream, start, tile) in enumerate(zip(streams, loads, job.tiles,
                                                               strict=True))]
        self.sources = [
            self.source_on("start", tiles, rates["start"]),
            self.source_on("tensor_mem__response", responses, rates["tensor"],
                           after={"tensor_mem__request": after}),
            self.source_on("matrix_mem__response", matrix_responses, rates["matrix"],
                           after={"matrix_mem__request": matrix_after})]
        self.sinks = [self.sink_on("tensor_mem__request", rates["tensor"],
                                   len(self.tensor_reads)),
                      self.sink_on("matrix_mem__request", rates["matrix"], n),
                      self.sink_on("out", rates["out"], job.out_rows * self.chunks)]
        self.sinks.append(self.sink_on("stats", rates["out"], 1))
        kernel = TensaurusKernel[job.mode.upper()]
        self.drivers = [Static("kernel", kernel.value), *self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        """The :class:`TensaurusRun` of what the sinks took, every read checked."""
        if list(outputs["matrix_mem__request"]) != self.matrix_reads:
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
