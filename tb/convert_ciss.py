# amaranth: UnusedElaboratable=no
"""The CSR-to-CISS converter (``csr_to_ciss``) as a bench.

:class:`CissBench` plays CSR matrices into the block, one after the other, under random
back-pressure on every stream: each one's rows and row pointers, and on every lane's
memory port the elements it reads, each answer offered once its read is made (in order,
at random after that). The golden model is :func:`sparseforge.sw.ciss.encode`: its
entries and count are what ``ciss`` and ``count`` must carry, and its schedule says which
elements each lane reads, in order (what its memory must answer, known up front so the
bench also runs natively). The result is what the block emitted.

``CONVERSIONS`` is empty: :mod:`sparseforge.sw.conversion` has no CISS format, so
``convert --engine rtl`` does not reach this block (``sparseforge ciss`` encodes on the
host).
"""

from dataclasses import dataclass

import numpy as np

from ..sw import ciss as golden
from ..sw import wire
from ..sw.ciss_csr import csr_image
from . import native
from .streams import Bench, Codec
from .tensaurus_tlu import entry_ints

CONVERSIONS = {}


@dataclass(frozen=True)
class CissRun:
    """Matrices through the block: the cycles, each one's entries (ints, lane 0 lowest),
    the counts it sent, each lane's reads."""

    cycles: int
    entries: list       # per matrix: its entries as ints
    counts: list
    reads: list         # per lane: the addresses it read


def lane_reads(image, ciss, pe):
    """The element indices lane ``pe`` reads for ``ciss`` (its rows in order, each row's
    elements in order)."""
    rows = ciss.slices[ciss.pe == pe]
    base, count = image.row_ptr[rows], ciss.count[ciss.pe == pe]
    return np.repeat(base - np.cumsum(count) + count, count) + np.arange(count.sum())


class EntryWords(Codec):
    """The ``ciss`` stream's codec: an entry is its word as an int (the wire's packing,
    :class:`~sparseforge.sw.wire.CissWire`, lane 0 lowest, as memory holds it), both
    ways; unpacking each entry into its lanes' fields would cost more than the run."""

    def unpack(self, bits):
        return int(bits) & ((1 << self.width) - 1)

    def unpack_all(self, words):
        return [self.unpack(w) for w in words]


class CissBench(Bench):
    """The CSR ``matrices`` through ``component`` (a :class:`~.hw.convert_ciss.CsrToCiss`),
    one after the other; ``rates`` gives each stream's probability of acting on a cycle
    (default 0.7 everywhere: ``rows``, ``row_ptr``, ``ciss``, ``count``, and ``request``
    and ``response`` for every lane's memory)."""

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        c = component
        rates = {**dict.fromkeys(("rows", "row_ptr", "ciss", "count", "request", "response"),
                                 0.7), **(rates or {})}
        images = [csr_image(m, c.dw, c.iw, c.addr_width) for m in matrices]
        self.golden = [golden.encode(m, c.pes, c.dw, c.iw) for m in matrices]
        self.sizes = [g.entries for g in self.golden]
        entries = [e for g in self.golden for e in entry_ints(g)]
        self.codecs["ciss"] = EntryWords(self.codecs["ciss"].shape)
        self.outputs = {"ciss": entries, "count": self.sizes}
        self.sources = [self.source_on("rows", [i.rows for i in images], rates["rows"]),
                        self.source_on("row_ptr", np.concatenate(
                            [np.zeros(0, np.int64), *(i.row_ptr[1:] for i in images)]),
                            rates["row_ptr"])]
        self.sinks = [self.sink_on("ciss", rates["ciss"], len(entries)),
                      self.sink_on("count", rates["count"], len(matrices))]
        for p in range(c.pes):
            reads = [lane_reads(i, g, p) for i, g in zip(images, self.golden, strict=True)]
            fields = wire.csr_entry(c.iw, c.dw)
            words = wire.pack_lanes(fields, 1, (), {
                "col": np.concatenate([np.zeros(0, np.int64), *(
                    i.col[r] for i, r in zip(images, reads, strict=True))])[:, None],
                "value": np.concatenate([np.zeros(0, np.uint64), *(
                    i.bits[r] for i, r in zip(images, reads, strict=True))])[:, None]})
            addrs = np.concatenate([np.zeros(0, np.int64), *reads])
            name = f"mem__{p}"
            self.sinks.append(self.sink_on(f"{name}__request", rates["request"], len(addrs)))
            self.outputs[f"{name}__request"] = addrs
            self.sources.append(self.source_on(
                f"{name}__response", words, rates["response"],
                after={f"{name}__request": np.arange(1, len(addrs) + 1)}))
        self.drivers = [*self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        words = iter(outputs["ciss"])
        entries = [[next(words) for _ in range(n)] for n in self.sizes]
        reads = [list(outputs[f"mem__{p}__request"]) for p in range(self.component.pes)]
        return CissRun(cycles, entries, list(outputs["count"]), reads)


def run_native(component, matrices, seed, rates=None):
    """``matrices`` through ``component`` natively on Verilator: ``(run, bench)``, the
    run a :class:`CissRun`, every sink checked against the golden model."""
    bench = CissBench(component, matrices, seed, rates)
    return native.simulate(bench), bench
