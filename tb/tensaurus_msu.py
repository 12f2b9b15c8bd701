# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus matrix store unit (``tensaurus_msu``).

Each drain input streams its drains of every run, each run closed by its ``last``; the
output is taken at random, and every output chunk is checked, as it is taken, against the
model (:class:`sparseforge.sim.models.tensaurus_msu.Msu`) fed the same runs, whatever the
MSU's ``banks`` (they change when drains are taken, not what comes out). With one
``out_rows`` for every run the bench's streams are gated by nothing but their coins and
its sink knows its count, so it runs on Amaranth's simulator and natively on Verilator
alike; ``out_rows`` given per run is driven from Python (Amaranth's simulator only).
"""

from dataclasses import dataclass

from ..sim.models import tensaurus_msu as model
from . import native
from .streams import Bench, Static

RATE = 0.7
"""Each stream's chance to act on a cycle, by default."""


@dataclass(frozen=True)
class MsuRun:
    """What the MSU streamed out: its cycles and every output chunk ``(row, chunk, lanes,
    last)``, every run's in order."""

    cycles: int
    out: list


def drain_items(runs, pe, vlen):
    """Input ``pe``'s items over ``runs`` (each run a list, by input, of ``(row, chunk,
    lanes)``): each run's drains, then its end marker."""
    items = []
    for run in runs:
        items += [{"row": r, "chunk": c, "lanes": list(lanes), "last": 0}
                  for r, c, lanes in run[pe]]
        items.append({"row": 0, "chunk": 0, "lanes": [0] * vlen, "last": 1})
    return items


def expected(component, runs, out_rows):
    """The model's output chunks over ``runs``, with ``out_rows[k]`` rows after run ``k``."""
    msu = model.Msu(component.cols, component.tlen, component.vlen, component.acc_width,
                    component.depth)
    return [chunk for run, rows in zip(runs, out_rows, strict=True)
            for chunk in model.run(msu, run, rows)]


class RunRows:
    """Drives ``out_rows`` with ``values[k]`` from the first transfer of run ``k`` on any
    input (the MSU has ended run ``k - 1`` by then, and reads it when run ``k`` ends)."""

    def __init__(self, values, sources):
        self.values, self.sources = values, sources
        self.fired = None

    def _run(self):
        """The run of the latest item any input has taken: the ends before it."""
        return max(sum(item["last"] for item in s.items[:max(len(s.accepted) - 1, 0)])
                   for s in self.sources)

    def idle(self, io):
        io.set("out_rows", self.values[0])

    def drive(self, io, cycle):
        io.set("out_rows", self.values[self._run()])

    def sample(self, io, cycle):
        pass


class MsuBench(Bench):
    """``runs`` (each a list, by input, of ``(row, chunk, lanes)``) through ``component``,
    ``out_rows`` rows read out after each (one int for all, or one per run); streams act
    with their chance in ``rates`` (``drains__<i>``, ``out``; default :data:`RATE`)."""

    def __init__(self, component, runs, out_rows, seed, rates=None):
        super().__init__(component, seed)
        n = component.inputs
        per_run = isinstance(out_rows, list | tuple)
        rows = list(out_rows) if per_run else [out_rows] * len(runs)
        names = [f"drains__{i}" for i in range(n)]
        rates = {**dict.fromkeys([*names, "out"], RATE), **(rates or {})}
        self.want = expected(component, runs, rows)
        self.sources = [self.source_on(name, drain_items(runs, i, component.vlen),
                                       rates[name])
                        for i, name in enumerate(names)]
        self.sink = self.sink_on("out", rates["out"], len(self.want))
        self.outputs = {"out": [as_dict(c) for c in self.want]}
        pin = RunRows(rows, self.sources) if per_run else Static("out_rows", out_rows)
        self.drivers = [pin, *self.sources, self.sink]

    def check(self, io, cycle):
        if self.sink.fired is None:
            return
        n = len(self.sink.received) - 1
        got = chunk_of(self.sink.fired)
        if n >= len(self.want):
            self.fail(f"out: more than the {len(self.want)} chunks expected, {got}")
        if got != self.want[n]:
            self.fail(f"out chunk {n} is {got}, expected {self.want[n]}")

    def finished(self):
        return len(self.sink.received) == self.sink.expected and all(
            s.done for s in self.sources)

    def from_outputs(self, cycles, outputs):
        return MsuRun(cycles, [chunk_of(v) for v in outputs["out"]])


def as_dict(chunk):
    row, g, lanes, last = chunk
    return {"row": row, "chunk": g, "lanes": list(lanes), "last": last}


def chunk_of(item):
    """An output payload (plain Python) as ``(row, chunk, lanes, last)``."""
    return item["row"], item["chunk"], tuple(item["lanes"]), item["last"]


def simulate(component, runs, out_rows, seed, rates=None, engine="pysim", work_dir=None):
    """``(run, bench)``: ``runs`` through ``component`` on ``engine`` (``pysim`` or
    ``native``), every output chunk checked against the model."""
    bench = MsuBench(component, runs, out_rows, seed, rates)
    return native.simulate(bench, engine, work_dir), bench
