# amaranth: UnusedElaboratable=no
"""Testbenches of B's rows served from a HYTE accessor (``hyte_rows``): the Gustavson
engine computing C = A·B with its B port served by :class:`~sparseforge.hw.hyte_rows.
HyteRows` from a buffering accessor that B's tile overflows, the bypassed words read
from memory; and the server alone, its accessor answering from the model after a set
latency; every stream stalling at random (Amaranth's simulator: the memories are set
up from Python)."""

from collections import deque
from dataclasses import dataclass

from amaranth.hdl import Module
from amaranth.lib import wiring

from ..hw.gustavson import Gustavson
from ..hw.hyte_accessor import HyteAccessor
from ..hw.hyte_rows import HyteRows
from ..sim.models.hyte_accessor import Accessor
from ..sw.wire import HyteMode, signed_words
from .gustavson import GustavsonBench
from .streams import Bench, Codec, RamPort, Static

BASES = {"kept_base": 0, "elements_base": 1 << 12}


class GustavsonOnAccessor(wiring.Component):
    """The engine with one PE, its B port served by a :class:`~sparseforge.hw.hyte_rows.
    HyteRows` from a :class:`~sparseforge.hw.hyte_accessor.HyteAccessor` of ``depth``:
    the engine's ``job``, ``a`` and ``c``, the accessor's ``mode``, ``capacity``,
    ``segment`` and ``fill``, and the server's memory ports and registers outside;
    ``server_inflight`` the server's ``inflight``."""

    def __init__(self, depth, server_inflight=4, **engine):
        self.engine = Gustavson(pes=1, **engine)
        e = self.engine
        self.pes, self.cols, self.lanes = e.pes, e.cols, e.lanes
        self.index_width, self.value_width, self.acc_width = (e.index_width, e.value_width,
                                                              e.acc_width)
        self.accessor = HyteAccessor(depth=depth, width=e.index_width + e.value_width,
                                     coord_width=e.index_width)
        self.rows = HyteRows(index_width=e.index_width, value_width=e.value_width,
                             inflight=server_inflight)
        acc, rows = self.accessor.signature.members, self.rows.signature.members
        super().__init__({
            **{n: e.signature.members[n] for n in ("job", "a", "c")},
            **{n: acc[n] for n in ("mode", "capacity", "segment", "fill")},
            **{n: rows[n] for n in ("k0", "kept_base", "elements_base", "kept",
                                    "elements")}})

    def elaborate(self, platform):
        m = Module()
        e, acc, rows = self.engine, self.accessor, self.rows
        m.submodules.engine, m.submodules.accessor, m.submodules.rows = e, acc, rows
        for name in ("job", "a"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(e, name))
        wiring.connect(m, e.c, wiring.flipped(self.c))
        for name in ("segment", "fill"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(acc, name))
        for name in ("kept", "elements"):
            wiring.connect(m, getattr(rows, name), wiring.flipped(getattr(self, name)))
        wiring.connect(m, e.b[0], rows.rows)
        wiring.connect(m, rows.read, acc.read)
        wiring.connect(m, acc.read_data, rows.read_data)
        m.d.comb += [acc.mode.eq(self.mode), acc.capacity.eq(self.capacity),
                     acc.counts.ready.eq(1), rows.k0.eq(self.k0),
                     rows.kept_base.eq(self.kept_base),
                     rows.elements_base.eq(self.elements_base)]
        return m


def buffered(b, capacity, words=None):
    """The model's buffering accessor of ``capacity`` words with the CSR ``b``'s rows
    filled as its segments, each element as ``words`` gives it (default: its column)."""
    model = Accessor(capacity, HyteMode.BUFFERING)
    for k in range(b.shape[0]):
        model.segment(int(b.indptr[k + 1] - b.indptr[k]))
        for n in range(b.indptr[k], b.indptr[k + 1]):
            model.fill(int(b.indices[n]) if words is None else words[n])
    return model


def bypassed(b, capacity):
    """Per row of the CSR ``b``, its words the model's buffering accessor of
    ``capacity`` words did not hold (each read from memory every time it is asked)."""
    return [seg.length - len(seg.words) for seg in buffered(b, capacity).segments]


class AccessorGustavsonBench(GustavsonBench):
    """C = ``a`` · ``b`` through a :class:`GustavsonOnAccessor`, B (one column tile)
    filled into its accessor as segments in row order with ``capacity`` words, its
    kept positions and elements in memory; ``misses`` counts the elements read there."""

    def __init__(self, component, a, b, capacity, seed, rates=None):
        self.capacity = capacity
        self.misses = 0
        super().__init__(component, a, b, seed, rates)

    def serve_b(self, answers, rates):
        if len(self.tiles) != 1:
            raise AssertionError(f"B spans {len(self.tiles)} column tiles: one here")
        comp, b = self.component, self.tiles[0].b
        elements = [{"col": int(c), "value": int(v)} for c, v in
                    zip(b.indices, signed_words(b.data, comp.value_width, "B"),
                        strict=True)]
        kept = Codec(comp.rows.kept_layout)
        element = Codec(comp.rows.element)
        memories = []
        for name, words in (("kept", [kept.pack({"begin": int(b.indptr[k]),
                                                 "end": int(b.indptr[k + 1])})
                                      for k in range(b.shape[0])]),
                            ("elements", [element.pack(x) for x in elements])):
            ram = RamPort(name, None, BASES["elements_base"] + len(elements) + 1,
                          self.stall(name, rates.get(name, 0.7)), None)
            ram.words.update({BASES[f"{name}_base"] + n: w for n, w in enumerate(words)})
            memories.append(ram)
        return [Static("mode", HyteMode.BUFFERING), Static("capacity", self.capacity),
                Static("k0", 0), *(Static(n, v) for n, v in BASES.items()),
                self.source_on("segment", [int(n) for n in b.indptr[1:] - b.indptr[:-1]],
                               rates.get("segment", 0.7)),
                self.source_on("fill", [element.pack(x) for x in elements],
                               rates.get("fill", 0.7)), *memories]

    def check(self, io, cycle):
        super().check(io, cycle)
        self.misses += bool(io.get("elements__request__valid")
                            and io.get("elements__request__ready"))


@dataclass
class RowsRun:
    """A :class:`RowsBench` run: its ``cycles`` and every element answered, in order."""

    cycles: int
    elements: list


class ModelAccessor:
    """Serves an accessor's ``read`` and ``read_data`` from ``model`` (its segments
    filled): a read is taken on a cycle the coin ``stall`` allows; its answer is offered,
    in order, from ``latency`` cycles later (1: the next cycle) on a cycle the coin
    ``answer_stall`` allows, and held until taken. ``reads`` counts the reads taken."""

    def __init__(self, model, latency, stall, answer_stall, codecs):
        self.model, self.latency, self.stall, self.answer_stall = (model, latency, stall,
                                                                   answer_stall)
        self.read, self.answer = codecs["read"], codecs["read_data"]
        self.answers = deque()          # (cycle due, payload)
        self.free = self.offering = False
        self.fired, self.reads = None, 0

    def idle(self, io):
        io.set("read__ready", 0)
        io.set("read_data__valid", 0)

    def drive(self, io, cycle):
        self.free = self.stall()
        io.set("read__ready", int(self.free))
        if not self.offering and self.answers and self.answers[0][0] <= cycle:
            self.offering = self.answer_stall()
        io.set("read_data__valid", int(self.offering))
        if self.offering:
            io.set("read_data__payload", self.answers[0][1])

    def sample(self, io, cycle):
        self.fired = None
        if self.offering and io.get("read_data__ready"):
            self.fired = self.answers.popleft()
            self.offering = False
        if self.free and io.get("read__valid"):
            read = self.read.unpack(io.get("read__payload"))
            status, data, last = self.model.read(read["segment"], read["offset"])
            self.answers.append((cycle + self.latency, self.answer.pack(
                {"data": data, "status": status, "last": int(last)})))
            self.fired, self.reads = read, self.reads + 1


class RowsBench(Bench):
    """:class:`~sparseforge.hw.hyte_rows.HyteRows` alone serving ``requests`` (rows of
    the CSR ``b``, one column tile, values in its ``value_width``) from a
    :class:`ModelAccessor` holding ``b`` as the model's buffering accessor of
    ``capacity`` words does, the kept positions and elements in memory; each stream
    acts with the probability ``rates`` gives it (default 1.0: never stalls). The
    response is checked row by row; ``misses`` counts the elements read from memory,
    ``kept_reads`` the kept entries read."""

    def __init__(self, component, b, requests, capacity, latency, seed, rates=None):
        super().__init__(component, seed)
        rates = rates or {}
        element, kept = Codec(component.element), Codec(component.kept_layout)
        words = [element.pack({"col": int(c), "value": int(v)})
                 for c, v in zip(b.indices, b.data, strict=True)]
        self.expected = []
        for r in requests:
            row = [{"col": int(b.indices[n]), "value": int(b.data[n]), "last": 0,
                    "empty": 0} for n in range(b.indptr[r], b.indptr[r + 1])]
            row = row or [{"last": 1, "empty": 1}]
            row[-1]["last"] = 1
            self.expected += row
        self.accessor = ModelAccessor(buffered(b, capacity, words), latency,
                                      self.stall("read", rates.get("read", 1.0)),
                                      self.stall("read_data", rates.get("read_data", 1.0)),
                                      self.codecs)
        memories = []
        for name, items in (("kept", [kept.pack({"begin": int(b.indptr[k]),
                                                 "end": int(b.indptr[k + 1])})
                                      for k in range(b.shape[0])]), ("elements", words)):
            ram = RamPort(name, None, BASES["elements_base"] + len(words) + 1,
                          self.stall(name, rates.get(name, 1.0)), None)
            ram.words.update({BASES[f"{name}_base"] + n: w for n, w in enumerate(items)})
            memories.append(ram)
        self.kept, self.elements = memories
        self.requests = self.source_on("rows__request", [{"row": int(r)} for r in requests],
                                       rates.get("request", 1.0))
        self.sink = self.sink_on("rows__response", rates.get("response", 1.0),
                                 len(self.expected))
        self.misses = self.kept_reads = 0
        self.drivers = [Static("k0", 0), *(Static(n, v) for n, v in BASES.items()),
                        self.requests, self.accessor, *memories, self.sink]

    def check(self, io, cycle):
        got = self.sink.fired
        if got is not None:
            want = self.expected[len(self.sink.received) - 1]
            if {k: got[k] for k in want} != want:
                self.fail(f"element {len(self.sink.received) - 1} is {got}, expected {want}")
        self.misses += bool(io.get("elements__request__valid")
                            and io.get("elements__request__ready"))
        self.kept_reads += bool(io.get("kept__request__valid")
                                and io.get("kept__request__ready"))

    def from_outputs(self, cycles, outputs):
        return RowsRun(cycles, outputs["rows__response"])
