# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus accelerator (``tensaurus``): a :class:`~sparseforge.sw.
tensaurus_job.Job` from memory images to the output.

The tensor (CISS entries, or a dense kernel's dense words) sits in a memory that answers
the TLU out of order (:func:`sparseforge.tb.tensaurus_tlu.memory`), the matrices, laid
out by :func:`sparseforge.sw.tensaurus_host.matrix_loads`, in one that answers the MLU
out of order too (:func:`sparseforge.tb.tensaurus_tlu.answers`), each within ``window``
reads; the MSU's writes are taken at random into a memory image of the output
(:func:`sparseforge.sw.tensaurus_host.output_tiles`). Every read is checked against the
addresses the run must make, every output word must be written exactly once, and the
output is rebuilt from the image. A job in the direct mode reads and writes the output
in a :class:`~sparseforge.tb.streams.RamPort`, which keeps the writes: each drain one
write, and the image what the last write of each word left (0 where none). Nothing is
driven from Python per cycle but the streams' coins, so it runs natively on Verilator at
its speed.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..sw import wire
from ..sw.tensaurus_host import matrix_loads, output_tiles
from . import native
from .dram import DramPort
from .streams import Bench, RamPort, Static
from .tensaurus_tlu import answers, dense_fields, image, memory

RATE = 0.7


@dataclass(frozen=True)
class TensaurusRun:
    cycles: int
    load_cycles: int        # the accelerator's count: no tile computing, one loading
    compute_cycles: int     # and the rest, to the output's end
    output: np.ndarray      # out_rows x rank (TTMc: out_rows x r1 x rank), as the MSU wrote it


class TensaurusBench(Bench):
    """``job`` through ``component``, ``runs`` times back to back (each run's tensor and
    output in memory after the one before's); ``rates``' ``out`` is the write port's.
    The ``memory``: ``"random"``, the tensor's answering out of order within ``window``
    reads (default: the TLU's tags), the matrices' the MLU likewise, every read checked;
    ``"dram"``, each a :class:`~sparseforge.tb.dram.DramPort` of ``timing`` (default:
    DDR4-2400 at 1 GHz, a channel each) with the tags' reads in flight. A job in the
    direct mode reads the output from a :class:`~sparseforge.tb.streams.RamPort` at the
    write port's rate."""

    def __init__(self, component, job, seed, rates=None, window=None, runs=1,
                 memory="random", timing=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "tensor", "matrix", "out"), RATE), **(rates or {})}
        if memory not in ("random", "dram"):
            raise ParameterError(f"memory={memory!r}: expected 'random' or 'dram'")
        tensors = [tile.stream for tile in job.tiles] * runs
        loads, words, reads = matrix_loads(job, component.dw, component.mlu.b_chunks)
        self.job, self.runs, self.memory = job, runs, memory
        if memory == "dram":
            streams, tensor_words = image(tensors)
            self.sources = [DramPort(name, np.array(image_words, dtype=object), self.codecs,
                                     timing, component.tags)
                            for name, image_words in (("tensor_mem", tensor_words),
                                                      ("matrix_mem", words))]
            self.sinks = []
        else:
            streams = self._random(tensors, reads * runs, words, rates, window)
        self.chunks = component.olen * component.cols
        self.size = job.out_rows * self.chunks         # a run's output words
        outs = output_tiles(job, component.out_rows, self.chunks)
        tiles = [{"tensor_base": stream["base"], "entries": stream["count"], **start,
                  **dense_fields(tile.stream), **out,
                  "out_base": out["out_base"] + t // len(loads) * self.size,
                  "last": int(t % len(loads) == len(loads) - 1)}
                 for t, (stream, start, tile, out) in enumerate(zip(
                     streams, loads * runs, job.tiles * runs, outs * runs, strict=True))]
        self.sources.insert(0, self.source_on("start", tiles, rates["start"]))
        writes = runs * (job.drains(component.r1) if job.direct else self.size)
        self.sinks += [self.sink_on("out_mem__request", rates["out"], writes),
                       self.sink_on("stats", rates["out"], runs)]
        kernel = wire.TensaurusKernel[job.mode.upper()]
        self.drivers = [Static("kernel", kernel.value), Static("direct", int(job.direct)),
                        *self.sources, *self.sinks]
        if job.direct:
            self.drivers.append(RamPort("out_read", "out_mem__request", runs * self.size,
                                        self.stall("out_read", rates["out"]),
                                        self.codecs["out_mem__request"]))

    def _random(self, tensors, reads, words, rates, window):
        """The memories that answer out of order at random (their answers as sources,
        their reads into sinks); the tensor's starts."""
        tags = self.component.tags
        rng = np.random.default_rng(self.seed)
        streams, self.tensor_reads, responses, after = memory(tensors, tags, window or tags,
                                                              rng)
        self.matrix_reads, matrix_responses, matrix_after = answers(
            reads, words, tags, window or tags, rng)
        self.sources = [
            self.source_on("tensor_mem__response", responses, rates["tensor"],
                           after={"tensor_mem__request": after}),
            self.source_on("matrix_mem__response", matrix_responses, rates["matrix"],
                           after={"matrix_mem__request": matrix_after})]
        self.sinks = [self.sink_on("tensor_mem__request", rates["tensor"],
                                   len(self.tensor_reads)),
                      self.sink_on("matrix_mem__request", rates["matrix"],
                                   len(self.matrix_reads))]
        return streams

    def from_outputs(self, cycles, outputs):
        """The :class:`TensaurusRun` of the first run from what the sinks took, every read
        checked (from the random memories), every output word written once, every run's
        output the first's."""
        if self.memory == "random":
            self._check_reads(outputs)
        job, component = self.job, self.component
        writes = outputs["out_mem__request"]
        size = self.runs * self.size
        addrs = np.array([w["addr"] for w in writes], dtype=np.int64)
        counts = np.bincount(addrs, minlength=size)
        if len(counts) > size or (not job.direct and (counts != 1).any()):
            bad = int(np.flatnonzero(counts != 1)[0])
            raise AssertionError(f"out_mem: word {bad} written {counts[bad]} times; each of "
                                 f"the output's {size} words once")
        words, last = np.unique(addrs[::-1], return_index=True)    # each word's last write
        image = np.zeros(size, dtype=object)
        image[words] = [writes[len(writes) - 1 - n]["data"] for n in last]
        y = wire.tensaurus_out_values(image, component.vlen, component.acc_width)
        # Row i is Y[i, u] for each u in turn (TTMc; one u otherwise), each tlen * cols
        # chunks.
        y = y.reshape(self.runs, job.out_rows, component.r1, -1)[..., :job.r1, :job.rank]
        if (y != y[:1]).any():
            raise AssertionError("out_mem: a run's output differs from the first run's")
        stats = outputs["stats"][0]
        return TensaurusRun(cycles, stats["load_cycles"], stats["compute_cycles"],
                            y[0] if job.mode == "ttmc" else y[0, :, 0])


    def _check_reads(self, outputs):
        if list(outputs["matrix_mem__request"]) != self.matrix_reads:
            raise AssertionError("matrix_mem: the MLU's reads are not the tiles' rows of the "
                                 "matrices in order")
        if list(outputs["tensor_mem__request"]) != self.tensor_reads:
            raise AssertionError("tensor_mem: the TLU's reads are not the entries in order")


def simulate(component, job, seed, rates=None, engine="native", work_dir=None, window=None,
             progress=None, runs=1, memory="random", timing=None):
    """The :class:`TensaurusRun` of ``job`` through ``component``, ``runs`` times, from
    the ``memory`` :class:`TensaurusBench` says (``progress``: the label of a progress bar
    for a long native run)."""
    bench = TensaurusBench(component, job, seed, rates, window, runs, memory, timing)
    return native.simulate(bench, engine, work_dir, progress)
