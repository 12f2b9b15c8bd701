"""Testbench of HYTE's tiling loop (``hyte_tiling``): a job, a memory holding a real
matrix B in CSR (its row pointers and column ids, and the region where the positions
unit keeps an entry per row), and a parent that reads each fetched tile's words out
of the accessor and evicts it (a command that keeps B's tile fetches none); the
commands, tuned by the controller from the accessor's own counts of the tiles the
composite fetched, and the words read, checked against the model.

The model (:func:`~sparseforge.sim.models.hyte_controller.matrix_trace`) walks the same
job up front: its commands, and what it gave its accessor per command; the parent's
reads, every word of every segment and the ``END`` past it, go in before each evict,
and the model's accessor answers them in that order. Each tile's reads wait for the
last tile's evict, its evict for its reads, so the bench runs from lists alone. The
counts the controller takes from the accessor inside are watched too (Amaranth's
simulator: they are not a port)."""

from ..sim.models.hyte_controller import matrix_trace
from ..sim.runners import pysim
from ..sw.wire import HyteMode
from .hyte_accessor import _before, answers
from .hyte_positions import BASES
from .streams import Bench, RamPort, Static


def with_reads(fetches):
    """``fetches`` with, before each evict, a read of every word of each segment of the
    tile and one past its last (``END``)."""
    out, lengths = [], []
    for port, item in fetches:
        if port == "segment":
            lengths.append(item)
        elif port == "evict":
            out += [("read", (s, o)) for s, n in enumerate(lengths) for o in range(n + 1)]
            lengths = []
        out.append((port, item))
    return out


class TilingBench(Bench):
    """``config``'s job on ``component`` with ``matrix`` as B; streams act with their
    chance in ``rates``."""

    def __init__(self, component, matrix, config, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("config", "tile", "read", "read_data", "evict", "memory",
                                  "writes", "columns"), 0.7), **(rates or {})}
        self.trace = trace = matrix_trace(matrix, config, component.rule,
                                             component.controller.most_tj)
        program = with_reads(trace.fetches)
        read_data, _ = answers(program, config.bufsize, HyteMode.BUFFERING,
                               component.dim_width)
        self.outputs = {"tile": trace.commands, "read_data": read_data}
        self.counts = []        # the accessor's counts, as the controller took them
        self.sinks = [self.sink_on(port, rates[port], len(want))
                      for port, want in self.outputs.items()]
        self.sources = [
            self.source_on("read", [dict(zip(("segment", "offset"), item, strict=True))
                                    for p, item in program if p == "read"],
                           rates["read"], {"evict": _before(program, "read", "evict")}),
            self.source_on("evict", [n for p, n in program if p == "evict"], rates["evict"],
                           {"read": _before(program, "evict", "read")})]
        csr = matrix.tocsr()
        csr.sort_indices()
        writes = self.sink_on("writes__request", rates["writes"],
                              sum(p == "segment" for p, _ in trace.fetches))
        memory = RamPort("memory", "writes__request", BASES["kept_base"] + csr.shape[0],
                         self.stall("memory", rates["memory"]),
                         self.codecs["writes__request"])
        memory.words.update({BASES["ptr_base"] + n: int(p) for n, p in enumerate(csr.indptr)})
        memory.words.update({BASES["cols_base"] + n: int(c)
                             for n, c in enumerate(csr.indices)})
        columns = RamPort("columns", None, memory.depth,
                          self.stall("columns", rates["columns"]), None)
        columns.words = memory.words
        self.drivers = [Static("mode", HyteMode.BUFFERING),
                        Static("capacity", config.bufsize),
                        *(Static(name, value) for name, value in BASES.items()),
                        self.source_on("config", [config.as_dict()], rates["config"]),
                        *self.sources, *self.sinks, writes, memory, columns]

    def check(self, io, cycle):
        counts, get = self.component.accessor.counts, io.ctx.get
        if get(counts.valid) and get(counts.ready):
            n, got = len(self.counts), get(counts.payload)
            self.counts.append([[int(got[f"cnt{r}{c}"]) for c in range(2)] for r in range(2)])
            if self.counts[-1] != self.trace.counts[n]:
                self.fail(f"counts {n}: {self.counts[-1]}, model says {self.trace.counts[n]}")
        for sink in self.sinks:
            if sink.fired is not None:
                n = len(sink.received) - 1
                if sink.fired != self.outputs[sink.name][n]:
                    self.fail(f"{sink.name} {n}: {sink.fired}, model says "
                              f"{self.outputs[sink.name][n]}")

    def finished(self):
        return super().finished() and len(self.counts) == len(self.trace.counts) and all(
            s.done for s in self.sources)

    def result(self):
        return [v for _, v in self.sinks[0].received]


def simulate(component, matrix, config, seed, rates=None):
    """``(commands, bench)``: the job through ``component`` on Amaranth's simulator."""
    bench = TilingBench(component, matrix, config, seed, rates)
    return pysim(bench), bench
