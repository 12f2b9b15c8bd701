# amaranth: UnusedElaboratable=no
"""The CSR-to-CISS converters (``csr_to_ciss``, and ``csr_tile_to_ciss`` a tile at a
time: :class:`TileBench`) as benches.

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
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..sw import ciss as golden
from ..sw import wire
from ..sw.ciss_csr import coo_image, coo_pointer_reads, csr_image, prepass_reads
from ..sw.formats import Tensor
from . import native
from .streams import Bench, Codec, Columns, Static
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


def lane_reads(image, ciss, pe, first=None):
    """The element indices lane ``pe`` reads for ``ciss`` (its rows in order, each row's
    elements in order); ``first`` maps each slice to its first element (default: its row
    pointer, the row whole)."""
    held = ciss.pe == pe
    base = image.row_ptr[ciss.slices[held]] if first is None else first[held]
    count = ciss.count[held]
    return np.repeat(base - np.cumsum(count) + count, count) + np.arange(count.sum())


class EntryWords(Codec):
    """The ``ciss`` stream's codec: an entry is its word as an int (the wire's packing,
    :class:`~sparseforge.sw.wire.CissWire`, lane 0 lowest, as memory holds it), both
    ways; unpacking each entry into its lanes' fields would cost more than the run."""

    def unpack(self, bits):
        return int(bits) & ((1 << self.width) - 1)

    def unpack_all(self, words):
        return [self.unpack(w) for w in words]


def element_words(image, reads, iw, dw):
    """The memory's answers to ``reads`` (element indices): ``{col, value}`` words, or a
    tensor's (a :class:`~sparseforge.sw.ciss_csr.CooImage`) ``{col, k, value}``."""
    k = getattr(image, "k", None)
    fields = {"col": image.col[reads][:, None], "value": image.bits[reads][:, None]}
    if k is not None:
        fields["k"] = k[reads][:, None]
    return wire.pack_lanes(wire.element_entry(iw, dw, 2 if k is None else 3), 1, (), fields)


def serve(bench, name, addrs, words, rate, answer_rate):
    """Memory port ``name`` of ``bench``: its reads, taken at ``rate``, checked against
    ``addrs``; each answered with its word once made, offered at ``answer_rate`` (so at
    a random latency)."""
    bench.sinks.append(bench.sink_on(f"{name}__request", rate, len(addrs)))
    bench.outputs[f"{name}__request"] = addrs
    bench.sources.append(bench.source_on(f"{name}__response", words, answer_rate,
                                         after={f"{name}__request": np.arange(1, len(addrs) + 1)}))


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
            words = np.concatenate([np.zeros(0, object), *(
                element_words(i, r, c.iw, c.dw) for i, r in zip(images, reads, strict=True))])
            serve(self, f"mem__{p}", np.concatenate([np.zeros(0, np.int64), *reads]), words,
                  rates["request"], rates["response"])
        self.drivers = [*self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        return _run(self, cycles, outputs)


class TileBench(Bench):
    """The tiles ``jobs`` (:class:`~sparseforge.sw.ciss_csr.TileJobs`) of the CSR
    ``matrix`` through ``component`` (a :class:`~.hw.convert_ciss.CsrTileToCiss`), back to
    back; ``rates`` as :class:`CissBench`'s, with ``job`` for the jobs and ``ptr`` and
    ``cols`` for the pointer and pre-pass ports (their requests and answers). The golden
    model of a tile is :func:`sparseforge.sw.ciss.encode` of ``A[i0 : i0 + rows, k0 :
    k1]``; the pre-pass's reads are :func:`~sparseforge.sw.ciss_csr.prepass_reads`'s and
    each lane's its slices' elements in the window.

    A block of ``order`` 3 takes a 3-D :class:`~sparseforge.sw.formats.Tensor` as
    ``matrix``, stored as COO (:func:`~sparseforge.sw.ciss_csr.coo_image`); a tile is
    ``T[i0 : i0 + rows, k0 : k1, :]`` (its window over j), and ``ptr`` reads the i ids
    :func:`~sparseforge.sw.ciss_csr.coo_pointer_reads` says, the block told the
    tensor's ``nnz``."""

    def __init__(self, component, matrix, jobs, seed, rates=None):
        super().__init__(component, seed)
        c = component
        names = ("job", "ciss", "count", "request", "response", "ptr", "cols")
        rates = {**dict.fromkeys(names, 0.7), **(rates or {})}
        tensor = getattr(c, "order", 2) == 3
        if tensor:
            image = coo_image(matrix, c.dw, c.iw, c.addr_width)
            self.golden = [golden.encode(_tensor_tile(image, c.dw, matrix.shape[2], i0, n, k0,
                                                      k1), c.pes, c.dw, c.iw)
                           for i0, n, k0, k1 in zip(jobs.i0, jobs.rows, jobs.k0, jobs.k1,
                                                    strict=True)]
        else:
            image = csr_image(matrix, c.dw, c.iw, c.addr_width, tiled=True)
            csr = sp.csr_array(matrix)
            self.golden = [golden.encode(csr[i0:i0 + n, k0:k1], c.pes, c.dw, c.iw)
                           for i0, n, k0, k1 in zip(jobs.i0, jobs.rows, jobs.k0, jobs.k1,
                                                    strict=True)]
        mixed = [n for n, g in enumerate(self.golden) if g.nnz and g.kind != image.kind]
        if mixed:
            raise ParameterError(f"tile {mixed[0]}: its values are all integers, which "
                                 "encode sends as such, but the matrix's are floats in "
                                 "memory; tiles of one matrix take integer values (as a "
                                 "Tensaurus run does) or floats throughout")
        self.sizes = [g.entries for g in self.golden]
        entries = [e for g in self.golden for e in entry_ints(g)]
        self.codecs["ciss"] = EntryWords(self.codecs["ciss"].shape)
        self.outputs = {"ciss": entries, "count": self.sizes}
        self.sources = [self.source_on("job", Columns({
            "i0": jobs.i0, "rows": jobs.rows, "k0": jobs.k0, "k1": jobs.k1,
            "first": jobs.first}), rates["job"])]
        self.sinks = [self.sink_on("ciss", rates["ciss"], len(entries)),
                      self.sink_on("count", rates["count"], len(jobs))]
        if tensor:
            ids = coo_pointer_reads(image, jobs)
            serve(self, "ptr", ids, image.i[ids], rates["ptr"], rates["response"])
            self.drivers_static = [Static("nnz", len(image.i))]
        else:
            loads = np.flatnonzero(jobs.first & (jobs.rows > 0))
            pointers = np.concatenate([np.zeros(0, np.int64), *(
                jobs.i0[n] + np.arange(jobs.rows[n] + 1) for n in loads)])
            serve(self, "ptr", pointers, image.row_ptr[pointers], rates["ptr"],
                  rates["response"])
            self.drivers_static = []
        self.reads, _ = prepass_reads(image, jobs)
        serve(self, "cols", self.reads, image.col[self.reads], rates["cols"], rates["response"])
        key = np.repeat(np.arange(image.rows, dtype=np.int64), np.diff(image.row_ptr))
        key = key << c.iw | image.col if len(key) else key
        firsts = [np.searchsorted(key, (i0 + g.slices) << c.iw | k0)
                  for g, i0, k0 in zip(self.golden, jobs.i0, jobs.k0, strict=True)]
        for p in range(c.pes):
            reads = np.concatenate([np.zeros(0, np.int64), *(
                lane_reads(image, g, p, f) for g, f in zip(self.golden, firsts, strict=True))])
            serve(self, f"mem__{p}", reads, element_words(image, reads, c.iw, c.dw),
                  rates["request"], rates["response"])
        self.drivers = [*self.drivers_static, *self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        return _run(self, cycles, outputs)


def _tensor_tile(image, dw, depth, i0, rows, k0, k1):
    """``T[i0 : i0 + rows, k0 : k1, :]`` of a :class:`~sparseforge.sw.ciss_csr.CooImage`
    of ``dw``-bit values and ``depth`` slices of k, its slices from ``i0`` and its j from
    ``k0`` (as the block numbers them)."""
    held = (image.i >= i0) & (image.i < i0 + rows) & (image.col >= k0) & (image.col < k1)
    coords = np.stack([image.i[held] - i0, image.col[held] - k0, image.k[held]], axis=1)
    values = golden.bits_values(image.bits[held], image.kind, dw)
    return Tensor(coords, values, (max(rows, 1), max(k1 - k0, 1), depth))


def _run(bench, cycles, outputs):
    """A :class:`CissRun` from what a bench's sinks took: each conversion's entries (of
    ``bench.sizes``), the counts and each lane's reads."""
    words = iter(outputs["ciss"])
    entries = [[next(words) for _ in range(n)] for n in bench.sizes]
    reads = [list(outputs[f"mem__{p}__request"]) for p in range(bench.component.pes)]
    return CissRun(cycles, entries, list(outputs["count"]), reads)


def run_native(component, matrices, seed, rates=None):
    """``matrices`` through ``component`` natively on Verilator: ``(run, bench)``, the
    run a :class:`CissRun`, every sink checked against the golden model."""
    bench = CissBench(component, matrices, seed, rates)
    return native.simulate(bench), bench


def run_tiles_native(component, matrix, jobs, seed, rates=None):
    """The tiles ``jobs`` of ``matrix`` through ``component`` natively on Verilator:
    ``(run, bench)`` as :func:`run_native`."""
    bench = TileBench(component, matrix, jobs, seed, rates)
    return native.simulate(bench), bench
