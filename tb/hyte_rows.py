# amaranth: UnusedElaboratable=no
"""Testbench of B's rows served from a HYTE accessor (``hyte_rows``): the Gustavson
engine computing C = A·B with its B port served by :class:`~sparseforge.hw.hyte_rows.
HyteRows` from a buffering accessor that B's tile overflows, the bypassed words read
from memory, every stream stalling at random (Amaranth's simulator: the memories are
set up from Python)."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ..hw.gustavson import Gustavson
from ..hw.hyte_accessor import HyteAccessor
from ..hw.hyte_rows import HyteRows
from ..sim.models.hyte_accessor import Accessor
from ..sw.wire import HyteMode, signed_words
from .gustavson import GustavsonBench
from .streams import Codec, RamPort, Static

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


def bypassed(b, capacity):
    """Per row of the CSR ``b``, its words the model's buffering accessor of
    ``capacity`` words did not hold (each read from memory every time it is asked)."""
    model = Accessor(capacity, HyteMode.BUFFERING)
    for k in range(b.shape[0]):
        model.segment(int(b.indptr[k + 1] - b.indptr[k]))
        for c in b.indices[b.indptr[k]:b.indptr[k + 1]]:
            model.fill(int(c))
    return [seg.length - len(seg.words) for seg in model.segments]


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
