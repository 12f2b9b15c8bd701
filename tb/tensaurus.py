# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus accelerator (``tensaurus``): a :class:`~sparseforge.sw.
tensaurus_job.Job` from memory images to the output.

The tensor (CISS entries, or a dense kernel's dense words) sits in a memory that answers
the TLU out of order (:func:`sparseforge.tb.tensaurus_tlu.memory`), the matrices, laid
out by :func:`sparseforge.sw.tensaurus_host.matrix_loads`, in one that answers the MLU
out of order too (:func:`sparseforge.tb.tensaurus_mlu.answers`), each within ``window``
reads; the MSU's writes are taken at random into a memory image of the output
(:func:`sparseforge.sw.tensaurus_host.output_tiles`). Every read is checked against the
addresses the run must make, every output word must be written exactly once, and the
output is rebuilt from the image. Nothing is driven from Python per cycle but the
streams' coins, so it runs natively on Verilator at its speed.
"""

from dataclasses import dataclass

import numpy as np

from ..sw import wire
from ..sw.tensaurus_host import matrix_loads, output_tiles
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
    output: np.ndarray      # out_rows x rank (TTMc: out_rows x r1 x rank), as the MSU wrote it


class TensaurusBench(Bench):
    """``job`` through ``component``, ``runs`` times back to back (each run's tensor and
    output in memory after the one before's); the tensor memory answers out of order
    within ``window`` reads (default: the TLU's tags), the matrices' memory the MLU
    likewise; ``rates``' ``out`` is the write port's."""

    def __init__(self, component, job, seed, rates=None, window=None, runs=1):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "tensor", "matrix", "out"), RATE), **(rates or {})}
        tags = component.tags
        rng = np.random.default_rng(seed)
        streams, self.tensor_reads, responses, after = memory(
            [tile.stream for tile in job.tiles] * runs, tags, window or tags, rng)
        loads, words, reads = matrix_loads(job, component.dw, component.mlu.b_chunks)
        self.matrix_reads, matrix_responses, matrix_after = answers(
            reads * runs, words, tags, window or tags, rng)
        self.job, self.runs = job, runs
        self.chunks = component.olen * component.cols
        self.size = job.out_rows * self.chunks         # a run's output words
        n = len(self.matrix_reads)
        outs = output_tiles(job, component.out_rows, self.chunks)
        tiles = [{"tensor_base": stream["base"], "entries": stream["count"], **start,
                  **dense_fields(tile.stream), **out,
                  "out_base": out["out_base"] + t // len(loads) * self.size,
                  "last": int(t % len(loads) == len(loads) - 1)}
                 for t, (stream, start, tile, out) in enumerate(zip(
                     streams, loads * runs, job.tiles * runs, outs * runs, strict=True))]
        self.sources = [
            self.source_on("start", tiles, rates["start"]),
            self.source_on("tensor_mem__response", responses, rates["tensor"],
                           after={"tensor_mem__request": after}),
            self.source_on("matrix_mem__response", matrix_responses, rates["matrix"],
                           after={"matrix_mem__request": matrix_after})]
        self.sinks = [self.sink_on("tensor_mem__request", rates["tensor"],
                                   len(self.tensor_reads)),
                      self.sink_on("matrix_mem__request", rates["matrix"], n),
                      self.sink_on("out_mem__request", rates["out"], runs * self.size)]
        self.sinks.append(self.sink_on("stats", rates["out"], runs))
        kernel = wire.TensaurusKernel[job.mode.upper()]
        self.drivers = [Static("kernel", kernel.value), *self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        """The :class:`TensaurusRun` of the first run from what the sinks took, every read
        checked, every output word written once, every run's output the first's."""
        if list(outputs["matrix_mem__request"]) != self.matrix_reads:
            raise AssertionError("matrix_mem: the MLU's reads are not the tiles' rows of the "
                                 "matrices in order")
        if list(outputs["tensor_mem__request"]) != self.tensor_reads:
            raise AssertionError("tensor_mem: the TLU's reads are not the entries in order")
        job, component = self.job, self.component
        writes = outputs["out_mem__request"]
        size = self.runs * self.size
        addrs = np.array([w["addr"] for w in writes], dtype=np.int64)
        counts = np.bincount(addrs, minlength=size)
        if len(counts) > size or (counts != 1).any():
            bad = int(np.flatnonzero(counts != 1)[0])
            raise AssertionError(f"out_mem: word {bad} written {counts[bad]} times; each of "
                                 f"the output's {size} words once")
        image = np.empty(size, dtype=object)
        image[addrs] = [w["data"] for w in writes]
        y = wire.tensaurus_out_values(image, component.vlen, component.acc_width)
        # Row i is Y[i, u] for each u in turn (TTMc; one u otherwise), each tlen * cols
        # chunks.
        y = y.reshape(self.runs, job.out_rows, component.r1, -1)[..., :job.r1, :job.rank]
        if (y != y[:1]).any():
            raise AssertionError("out_mem: a run's output differs from the first run's")
        stats = outputs["stats"][0]
        return TensaurusRun(cycles, stats["load_cycles"], stats["compute_cycles"],
                            y[0] if job.mode == "ttmc" else y[0, :, 0])


def simulate(component, job, seed, rates=None, engine="native", work_dir=None, window=None,
             progress=None, runs=1):
    """The :class:`TensaurusRun` of ``job`` through ``component``, ``runs`` times
    (``progress``: the label of a progress bar for a long native run)."""
    bench = TensaurusBench(component, job, seed, rates, window, runs)
    return native.simulate(bench, engine, work_dir, progress)
