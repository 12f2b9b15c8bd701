"""Testbench of HYTE's positions unit (``hyte_positions``): a sweep's fetches of a CSR
matrix's segments, answered from a memory holding its row pointers and column ids (and
the kept entries the unit writes), under random stalls; every segment, every kept entry
written and the reads made checked against the model (the memory, a
:class:`~.streams.RamPort`, fails a read withdrawn before it is taken)."""

from dataclasses import dataclass

from ..hw.interfaces import struct
from ..sim.models.hyte_positions import SegmentPositions
from ..sim.runners import pysim
from ..sw import wire
from .streams import Bench, Codec, RamPort, Static

BASES = {"ptr_base": 0, "cols_base": 1 << 12, "kept_base": 1 << 13}


@dataclass(frozen=True)
class PositionsRun:
    cycles: int
    segments: list          # every segment payload, in order
    reads: int              # memory reads made


class PositionsBench(Bench):
    """``fetches`` (``(row, bj, ej)``) of the CSR ``ptr``, ``cols`` through
    ``component``; streams act with their chance in ``rates``."""

    def __init__(self, component, ptr, cols, fetches, seed, rates=None, bases=BASES):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("fetch", "segment", "memory", "writes"), 0.7),
                 **(rates or {})}
        model = SegmentPositions(ptr, cols)
        segments = [model.segment(*f) for f in fetches]
        self.model_traffic = model.traffic
        kept_base = bases["kept_base"]
        self.outputs = {
            "segment": [{"begin": b, "end": e} for b, e in segments],
            "writes__request": [{"addr": kept_base + row, "data": self.entry(bj, ej, b, e)}
                                for (row, bj, ej), (b, e) in zip(fetches, segments,
                                                                 strict=True)]}
        self.fetch = self.source_on("fetch", [dict(zip(("row", "bj", "ej"), f, strict=True))
                                              for f in fetches], rates["fetch"])
        self.sink = self.sink_on("segment", rates["segment"], len(segments))
        self.writes = self.sink_on("writes__request", rates["writes"], len(segments))
        depth = kept_base + len(ptr)
        self.ram = RamPort("memory", "writes__request", depth,
                           self.stall("memory", rates["memory"]),
                           self.codecs["writes__request"])
        self.ram.words.update({bases["ptr_base"] + n: int(p) for n, p in enumerate(ptr)})
        self.ram.words.update({bases["cols_base"] + n: int(c) for n, c in enumerate(cols)})
        self.reads = 0
        self.drivers = [*(Static(name, value) for name, value in bases.items()), self.fetch,
                        self.sink, self.writes, self.ram]

    def entry(self, bj, ej, begin, end):
        """A kept entry's memory word, packed through the wire format's layout."""
        layout = struct(wire.hyte_kept(self.component.dim_width, self.component.pos_width))
        return Codec(layout).pack({"bj": bj, "ej": ej, "begin": begin, "end": end})

    def check(self, io, cycle):
        if io.get("memory__request__valid") and io.get("memory__request__ready"):
            self.reads += 1
        for sink in (self.sink, self.writes):
            if sink.fired is not None:
                n = len(sink.received) - 1
                want = self.outputs[sink.name][n]
                if sink.fired != want:
                    self.fail(f"{sink.name} {n}: {sink.fired}, model says {want}")

    def result(self):
        return PositionsRun(self.cycle, [v for _, v in self.sink.received], self.reads)


def simulate(component, ptr, cols, fetches, seed, rates=None):
    """``(run, bench)``: the fetches through ``component`` on Amaranth's simulator."""
    bench = PositionsBench(component, ptr, cols, fetches, seed, rates)
    return pysim(bench), bench
