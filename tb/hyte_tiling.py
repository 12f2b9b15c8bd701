"""Testbench of HYTE's tiling loop (``hyte_tiling``): a job, and a parent that fetches
each commanded tile of a real matrix B into the accessor and evicts it; the commands,
tuned by the controller from the accessor's own counts, checked against the model.

The model (:func:`~sparseforge.sim.models.hyte_controller.matrix_trace`) walks the same
job up front: its commands, and what it gave its accessor per command. Each command's
segments wait for that command (taken by the parent's sink), its evict for its words,
the next command's segments for the evict, so the bench runs from lists alone. The
counts the controller takes from the accessor inside are watched too (Amaranth's
simulator: they are not a port)."""

from ..sim.models.hyte_controller import matrix_trace
from ..sim.runners import pysim
from ..sw.wire import HyteMode
from .hyte_accessor import _before
from .streams import Bench, Static


class TilingBench(Bench):
    """``config``'s job on ``component`` with ``matrix`` as B; streams act with their
    chance in ``rates``."""

    def __init__(self, component, matrix, config, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("config", "tile", "segment", "fill", "evict"), 0.7),
                 **(rates or {})}
        self.trace = trace = matrix_trace(matrix, config, component.rule)
        program = trace.fetches
        tiles, command = [], 0
        for port, _ in program:
            command += port == "tile"
            if port == "segment":
                tiles.append(command)
        self.outputs = {"tile": trace.commands}
        self.counts = []        # the accessor's counts, as the controller took them
        self.sink = self.sink_on("tile", rates["tile"], len(trace.commands))
        waits = {"segment": {"evict": _before(program, "segment", "evict"), "tile": tiles},
                 "fill": {"evict": _before(program, "fill", "evict")},
                 "evict": {"segment": _before(program, "evict", "segment"),
                           "fill": _before(program, "evict", "fill")}}
        self.sources = sources = [self.source_on(port, [item for p, item in program if p == port],
                                  rates[port], after) for port, after in waits.items()]
        self.drivers = [Static("mode", HyteMode.BUFFERING),
                        Static("capacity", config.bufsize),
                        self.source_on("config", [config.as_dict()], rates["config"]),
                        *sources, self.sink]

    def check(self, io, cycle):
        counts, get = self.component.accessor.counts, io.ctx.get
        if get(counts.valid) and get(counts.ready):
            n, got = len(self.counts), get(counts.payload)
            self.counts.append([[int(got[f"cnt{r}{c}"]) for c in range(2)] for r in range(2)])
            if self.counts[-1] != self.trace.counts[n]:
                self.fail(f"counts {n}: {self.counts[-1]}, model says {self.trace.counts[n]}")
        if self.sink.fired is not None:
            n = len(self.sink.received) - 1
            if self.sink.fired != self.outputs["tile"][n]:
                self.fail(f"tile {n}: {self.sink.fired}, model says "
                          f"{self.outputs['tile'][n]}")

    def finished(self):
        return super().finished() and len(self.counts) == len(self.trace.counts) and all(
            s.done for s in self.sources)

    def result(self):
        return [v for _, v in self.sink.received]


def simulate(component, matrix, config, seed, rates=None):
    """``(commands, bench)``: the job through ``component`` on Amaranth's simulator."""
    bench = TilingBench(component, matrix, config, seed, rates)
    return pysim(bench), bench
