# amaranth: UnusedElaboratable=no
"""The Dense-to-CSF converter (``dense_to_csf``) as a bench and as ``convert --engine rtl``.

:class:`CsfBench` streams dense 3-D tensors into the block, one after the other, ``lanes``
elements a vector in row-major order, under random back-pressure on every stream, and
takes the three levels' records. Its result is each
:class:`~sparseforge.sw.conversion.CSF` rebuilt from what the block emitted (each
level's masked lanes, the closing pointers from the last records' totals), never from a
golden converter; tests compare it with :func:`sparseforge.sw.conversion.convert`.
Values travel as their bits (a float's -0.0 as the zero it is).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.convert_csf import MODES, CooToCsf, CsfToCoo, DenseToCsf
from ..sw import wire
from ..sw.conversion import CSF
from ..sw.formats import Tensor, index_dtype
from . import native
from .streams import Bench, Columns

LEVELS = tuple(f"level{n}" for n in range(MODES))

RTL = {"lanes": 8, "index_width": 16, "count_width": 32, "value_width": 64}
"""The ``dense_to_csf`` block ``convert --engine rtl`` builds, whatever the tensor: modes
of up to 65,536, up to 2**32 - 1 nonzeros, 64-bit values (any value type's bits). A
larger tensor is refused."""


def record_counts(dense, lanes):
    """How many records each level makes: one per vector holding a node of the level, and
    one for the last vector on every level."""
    position = np.flatnonzero(dense)
    vectors = -(-dense.size // lanes)
    counts = []
    for level in range(MODES):
        node = position // int(np.prod(dense.shape[level + 1:], dtype=np.int64))
        first = position[np.r_[True, node[1:] != node[:-1]]] if len(position) else position
        counts.append(len(np.union1d(first // lanes, [vectors - 1])))
    return counts


def levels_to_csf(levels, tensors):
    """The CSF of each of ``tensors`` (``(shape, dtype)`` each) from a block's level records
    (``levels``: each level's, in order, as dicts; a tensor's end on each level is its
    record with ``last``): each level's masked lanes appended, ``fptr`` closed with the
    ``total`` of the ``last`` record of the level below."""
    ends = [[n for n, r in enumerate(records) if r["last"]] for records in levels]
    if any(len(e) != len(tensors) or e[-1:] != [len(records) - 1]
           for e, records in zip(ends, levels, strict=True)):
        raise AssertionError(f"last is set on records {ends} of {len(tensors)} "
                             "tensors: expected once per tensor, on its final record")
    out = []
    for t, (shape, dtype) in enumerate(tensors):
        mine = [records[(ends[n][t - 1] + 1 if t else 0):ends[n][t] + 1]
                for n, records in enumerate(levels)]
        nodes = [[lane for r in records for n, lane in enumerate(r["lanes"])
                  if r["mask"] >> n & 1] for records in mine]
        fids = tuple(np.array([lane["id"] for lane in level], dtype=np.int64)
                     for level in nodes)
        fptr = tuple(np.array([lane["data"] for lane in nodes[n]] + [mine[n + 1][-1]["total"]],
                              dtype=np.int64) for n in range(MODES - 1))
        leaves = wire.bits_values([lane["data"] for lane in nodes[-1]], dtype)
        out.append(CSF(fids, fptr, leaves, shape))
    return out


@dataclass(frozen=True)
class CsfResult:
    """Tensors through the block: the cycles, and the CSF it emitted for each."""

    cycles: int
    csf: list


class CsfBench(Bench):
    """The dense 3-D ``tensors`` through ``component``, one after the other.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7 on every
    stream).
    """

    def __init__(self, component, tensors, seed, rates=None):
        super().__init__(component, seed)
        tensors = [np.asarray(t) for t in tensors]
        lanes = component.lanes
        for dense in tensors:
            check_fits(dense, lanes, component.index_width, component.count_width,
                       component.value_width)
        self.tensors = [(t.shape, t.dtype) for t in tensors]
        rates = {**dict.fromkeys(("shape", "dense", *LEVELS), 0.7), **(rates or {})}
        shapes = np.array([t.shape for t in tensors], dtype=np.int64).reshape(-1, MODES)
        # the block compares bits with 0: a float's -0.0 goes as the zero it is
        vectors = [np.pad(wire.value_bits(t.ravel())[0], (0, -t.size % lanes))
                   for t in tensors]
        self.sources = [
            self.source_on("shape", Columns({f"dim{n}": shapes[:, n] for n in range(MODES)}),
                           rates["shape"]),
            self.source_on("dense", np.concatenate([np.zeros(0, np.uint64), *vectors])
                           .reshape(-1, lanes).tolist(), rates["dense"])]
        counts = np.sum([record_counts(t, lanes) for t in tensors], axis=0, dtype=np.int64)
        self.sinks = [self.sink_on(name, rates[name], expected=int(count))
                      for name, count in zip(LEVELS, counts.reshape(MODES), strict=True)]
        self.drivers = [*self.sources, *self.sinks]

    def rebuild(self, levels):
        """The CSF of each tensor from the block's records: :func:`levels_to_csf`."""
        return levels_to_csf(levels, self.tensors)

    def result(self):
        return CsfResult(self.cycle, self.rebuild([[v for _, v in s.received]
                                                   for s in self.sinks]))


def check_fits(dense, lanes, index_width, count_width, value_width, block="dense_to_csf"):
    """Refuse (ParameterError) a dense tensor a Dense-to-CSF converter of ``lanes`` lanes,
    ``index_width``-bit coordinates, ``count_width``-bit counts and ``value_width``-bit
    values does not take (``block`` names it in the message)."""
    dense = np.asarray(dense)
    shape = dense.shape
    if dense.ndim != MODES:
        raise ParameterError(f"the {block} block converts 3-D tensors; this one is "
                             f"{dense.ndim}-D")
    if min(shape) < 1 or max(shape) > 1 << index_width or shape[2] < lanes:
        raise ParameterError(f"a {' x '.join(map(str, shape))} tensor does not fit the "
                             f"{block} block: modes of 1 to {1 << index_width}"
                             f", the last at least lanes = {lanes}")
    check_extent(shape, np.count_nonzero(dense), dense.dtype, index_width, count_width,
                 value_width)


def run_native(component, tensors, seed, rates=None):
    """``tensors`` through ``component`` natively on Verilator: a :class:`CsfResult`."""
    bench = CsfBench(component, tensors, seed, rates)
    run = native.run(bench)
    return CsfResult(run.cycles, bench.rebuild([run.outputs[s.name] for s in bench.sinks]))


def convert(source, block=None, run_bits=None, seed=1):
    """``convert --engine rtl`` from Dense to CSF: ``(csf, cycles)`` from the block built
    once as :data:`RTL` says. A last mode shorter than the block's lanes is padded with
    zeros to them (its nonzeros, and so its CSF, are the same) and the shape given back."""
    dense = np.asarray(source)
    component = DenseToCsf(**RTL)
    if dense.ndim == MODES and 0 < dense.shape[-1] < component.lanes:
        dense = np.pad(dense, [(0, 0)] * (MODES - 1)
                       + [(0, component.lanes - dense.shape[-1])])
    result = run_native(component, [dense], seed)
    csf = result.csf[0]
    return CSF(csf.fids, csf.fptr, csf.values, np.shape(source)), result.cycles


# -- COO to CSF and CSF to COO ----------------------------------------------------------

@dataclass(frozen=True)
class CooResult:
    """Tensors through ``csf_to_coo``: the cycles, and the COO :class:`Tensor` it emitted
    for each."""

    cycles: int
    coo: list


def check_order(source, block):
    """The modes of ``source``: 3, or 2 (a matrix, converted as a ``1 x M x N`` tensor);
    any other order refused (ParameterError)."""
    order = len(source.shape)
    if order not in (2, MODES):
        raise ParameterError(f"the {block} block converts 3-D tensors and matrices; this one "
                             f"is {order}-D")
    return order


def check_extent(shape, nonzeros, dtype, index_width, count_width, value_width):
    """Refuse (ParameterError) a tensor of ``shape``, ``nonzeros`` and ``dtype`` beyond a
    CSF converter's ``index_width``-bit coordinates, ``count_width``-bit counts or
    ``value_width``-bit values."""
    if max(shape) > 1 << index_width:
        raise ParameterError(f"a {' x '.join(map(str, shape))} tensor does not fit the "
                             f"{index_width}-bit coordinates: modes of 1 to "
                             f"{1 << index_width}")
    if nonzeros >> count_width:
        raise ParameterError(f"{nonzeros} nonzeros do not fit the {count_width}-bit counts")
    if wire.value_width(dtype) > value_width:
        raise ParameterError(f"{dtype} values do not fit the block's {value_width}-bit "
                             "values")


def widths(component):
    """``(index_width, count_width, value_width)`` of a CSF converter ``component``."""
    return component.index_width, component.count_width, component.value_width


def sorted_records(tensor):
    """Refuse (ParameterError) a COO tensor whose entries are not in strictly rising
    lexicographic order (sorted, one per coordinate), naming the first out of place."""
    coords = np.asarray(tensor.coords, dtype=np.int64).reshape(-1, len(tensor.shape))
    if len(coords) > 1:
        step = coords[1:] - coords[:-1]
        first = np.argmax(step != 0, axis=1)
        bad = np.flatnonzero(step[np.arange(len(step)), first] <= 0)
        if len(bad):
            n = int(bad[0]) + 1
            raise ParameterError(f"the coo_to_csf block takes entries in lexicographic order, "
                                 f"one per coordinate: entry {n} {tuple(coords[n].tolist())} "
                                 f"follows {tuple(coords[n - 1].tolist())}")
    return coords


def level_counts(coords, bits, lanes):
    """How many records each level of ``coo_to_csf`` makes for one tensor's records
    (``coords`` [n, 3], value ``bits``): ``m // lanes + 1``, m the level's nodes made before
    the final record."""
    kept = bits != 0
    kept[-1:] = False                       # the final record's nodes go in the last records
    held = coords[kept]
    slices = np.r_[True, held[1:, 0] != held[:-1, 0]] if len(held) else np.zeros(0, bool)
    fibers = slices | np.r_[True, held[1:, 1] != held[:-1, 1]] if len(held) else slices
    return [int(np.count_nonzero(marks)) // lanes + 1
            for marks in (slices, fibers, np.ones(len(held), bool))]


class CooToCsfBench(Bench):
    """COO 3-D ``tensors`` (:class:`~sparseforge.sw.formats.Tensor`, entries sorted, one per
    coordinate; a value may be 0) through a ``coo_to_csf`` ``component``, back to back,
    one record an entry (one record of value 0 for a tensor with none), under random
    back-pressure (``rates``: each stream's probability of acting, default 0.7)."""

    def __init__(self, component, tensors, seed, rates=None):
        super().__init__(component, seed)
        rates = {"records": 0.7, **dict.fromkeys(LEVELS, 0.7), **(rates or {})}
        columns, counts = {name: [] for name in ("i", "j", "k", "value", "last")}, []
        self.tensors = []
        for tensor in tensors:
            check_order(tensor, "coo_to_csf")
            check_extent(tensor.shape, len(tensor.values), tensor.values.dtype,
                         *widths(component))
            coords = sorted_records(tensor)
            bits = wire.value_bits(tensor.values)[0]
            if not len(bits):
                coords, bits = np.zeros((1, MODES), np.int64), np.zeros(1, np.uint64)
            last = np.zeros(len(bits), np.uint8)
            last[-1] = 1
            for n, name in enumerate(("i", "j", "k")):
                columns[name].append(coords[:, n])
            columns["value"].append(bits)
            columns["last"].append(last)
            counts.append(level_counts(coords, bits, component.lanes))
            self.tensors.append((tuple(tensor.shape), tensor.values.dtype))
        self.source = self.source_on("records", Columns(
            {name: np.concatenate(parts) for name, parts in columns.items()}), rates["records"])
        self.sinks = [self.sink_on(name, rates[name], expected=int(count))
                      for name, count in zip(LEVELS, np.sum(counts, axis=0), strict=True)]
        self.drivers = [self.source, *self.sinks]

    def from_outputs(self, cycles, outputs):
        return CsfResult(cycles, levels_to_csf([outputs[name] for name in LEVELS],
                                               self.tensors))


def level_records(fids, data, lanes, rng=None):
    """One CSF level's nodes (ids, data bits) as :func:`csf_level_layout` records' columns
    for :func:`~sparseforge.sw.wire.pack_lanes`: ``lanes`` nodes a record from lane 0, the
    final record holding the rest (none perhaps); with ``rng``, a random number of nodes a
    record (none included) in random lanes, as Dense-to-CSF scatters them."""
    nodes = len(fids)
    if rng is None:
        per = np.full(nodes // lanes + 1, lanes)
        per[-1] = nodes % lanes
    else:
        per = []
        while sum(per) < nodes:
            per.append(min(int(rng.integers(0, lanes + 1)), nodes - sum(per)))
        per = np.array([*per, 0] if rng.random() < 0.5 or not per else per, dtype=np.int64)
    count = len(per)
    mask = np.zeros((count, lanes), dtype=bool)
    for r, k in enumerate(per):
        mask[r, np.sort(rng.choice(lanes, k, replace=False)) if rng is not None
             else np.arange(k)] = True
    ids, values = np.zeros((count, lanes), np.uint64), np.zeros((count, lanes), np.uint64)
    ids[mask], values[mask] = fids, data
    last = np.zeros(count, np.uint8)
    last[-1] = 1
    return {"id": ids, "data": values, "mask": mask.astype(np.uint64) @ (1 << np.arange(
        lanes, dtype=np.uint64)), "last": last, "total": np.cumsum(per)}


class CsfToCooBench(Bench):
    """3-D ``tensors`` in :class:`~sparseforge.sw.conversion.CSF` through a ``csf_to_coo``
    ``component``, back to back, each level's nodes packed ``lanes`` a record (``scatter``:
    a random number in random lanes, seeded), under random back-pressure (``rates``)."""

    def __init__(self, component, tensors, seed, rates=None, scatter=False):
        super().__init__(component, seed)
        rates = {"records": 0.7, **dict.fromkeys(LEVELS, 0.7), **(rates or {})}
        rng = np.random.default_rng(seed) if scatter else None
        words, self.tensors, records = [[] for _ in LEVELS], [], 0
        for csf in tensors:
            for n, packed in enumerate(level_words(csf, component.lanes, *widths(component),
                                                   rng)):
                words[n].append(packed)
            self.tensors.append((tuple(csf.shape), csf.values.dtype))
            records += max(len(csf.values), 1)
        self.sources = [self.source_on(name, np.concatenate(parts), rates[name])
                        for name, parts in zip(LEVELS, words, strict=True)]
        self.sink = self.sink_on("records", rates["records"], expected=records)
        self.drivers = [*self.sources, self.sink]

    def from_outputs(self, cycles, outputs):
        return CooResult(cycles, records_to_tensors(outputs["records"], self.tensors))


def level_words(csf, lanes, index_width, count_width, value_width, rng=None):
    """The three levels' packed records (:func:`~.hw.convert_csf.csf_level_layout`) of a
    3-D tensor's ``csf`` for a CSF-to-COO converter of those widths (refused,
    ParameterError, where it does not fit them), as :func:`level_records` places the
    nodes."""
    check_order(csf, "csf_to_coo")
    check_extent(csf.shape, len(csf.values), csf.values.dtype, index_width, count_width,
                 value_width)
    data = [*csf.fptr, wire.value_bits(csf.values)[0]]
    words = []
    for n in range(MODES):
        width = value_width if n == MODES - 1 else count_width
        columns = level_records(csf.fids[n], data[n][:len(csf.fids[n])], lanes, rng)
        words.append(wire.pack_lanes(wire.csf_node(index_width, width), lanes,
                                     wire.csf_level_end(lanes, count_width), columns))
    return words


def records_to_tensors(records, tensors):
    """The COO :class:`~sparseforge.sw.formats.Tensor` of each of ``tensors`` (``(shape,
    dtype)`` each) from a CSF-to-COO converter's records (dicts, in order), ``last`` checked
    once per tensor on its final record."""
    ends = np.flatnonzero([r["last"] for r in records])
    if len(ends) != len(tensors) or ends[-1:].tolist() != [len(records) - 1]:
        raise AssertionError(f"last is set on records {ends.tolist()[:8]} of "
                             f"{len(tensors)} tensors: expected once per tensor, on "
                             "its final record")
    out = []
    for t, (shape, dtype) in enumerate(tensors):
        mine = records[(ends[t - 1] + 1 if t else 0):ends[t] + 1]
        if len(mine) == 1 and mine[0]["value"] == 0:        # a tensor with no leaf
            mine = []
        coords = np.array([[r[name] for name in ("i", "j", "k")] for r in mine],
                          dtype=np.int64).reshape(-1, MODES)
        values = wire.bits_values([r["value"] for r in mine], dtype)
        out.append(Tensor(coords, values, shape))
    return out


def as_tensor(source):
    """``source`` (a COO Tensor or scipy matrix) as a 3-D Tensor; a matrix as ``1 x M x N``."""
    if check_order(source, "coo_to_csf") == MODES:
        return source
    coords = np.stack([np.zeros(source.nnz, np.int64), np.asarray(source.row, np.int64),
                       np.asarray(source.col, np.int64)], axis=1)
    return Tensor(coords, np.asarray(source.data), (1, *source.shape))


def as_order3(csf):
    """``csf`` as the CSF of a 3-D tensor; a matrix's as ``1 x M x N``'s, one slice."""
    if check_order(csf, "csf_to_coo") == MODES:
        return csf
    slices = min(len(csf.values), 1)
    return CSF((np.zeros(slices, np.int64), *csf.fids),
               (np.array([0, len(csf.fids[0])][:slices + 1]), *csf.fptr), csf.values,
               (1, *csf.shape))


def coo_to_csf(source, block=None, run_bits=None, seed=1, engine="native"):
    """``convert --engine rtl`` from COO to CSF: ``(csf, cycles)`` from the ``coo_to_csf``
    block built once as :data:`RTL` says, natively on Verilator (``engine``: or on
    Amaranth's simulator); a matrix's CSF is the two lower levels of its ``1 x M x N``
    tensor's."""
    result = native.simulate(CooToCsfBench(CooToCsf(**RTL), [as_tensor(source)], seed),
                             engine)
    csf = result.csf[0]
    if len(source.shape) != MODES:
        csf = CSF(csf.fids[1:], csf.fptr[1:], csf.values, tuple(source.shape))
    return csf, result.cycles


def csf_to_coo(source, block=None, run_bits=None, seed=1, engine="native"):
    """``convert --engine rtl`` from CSF to COO: ``(coo, cycles)`` from the ``csf_to_coo``
    block built once as :data:`RTL` says, natively on Verilator (``engine``: or on
    Amaranth's simulator): a Tensor, or for a matrix a ``scipy.sparse.coo_array`` (the
    records of its ``1 x M x N`` tensor without ``i``)."""
    result = native.simulate(CsfToCooBench(CsfToCoo(**RTL), [as_order3(source)], seed),
                             engine)
    tensor = result.coo[0]
    if len(source.shape) == MODES:
        return tensor, result.cycles
    index = index_dtype(*source.shape)
    matrix = sp.coo_array((tensor.values, (tensor.coords[:, 1].astype(index),
                                           tensor.coords[:, 2].astype(index))),
                          shape=tuple(source.shape))
    matrix.has_canonical_format = True
    return matrix, result.cycles


convert.orders = (MODES,)
coo_to_csf.orders = csf_to_coo.orders = (2, MODES)

CONVERSIONS = {("dense", "csf"): convert, ("coo", "csf"): coo_to_csf,
               ("csf", "coo"): csf_to_coo}
