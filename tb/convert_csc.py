# amaranth: UnusedElaboratable=no
"""The CSR-to-CSC converter (``csr_to_csc``) as a bench and as ``convert --engine rtl``.

:class:`CscBench` plays CSR matrices into the block, one after the other, under random
back-pressure on every stream: each one's ``shape``, its column ids in chunks, then its
row pointers and entries (the block takes them once every column pointer is out), and
takes ``col_ptr`` and ``csc``; or, in the block's COO mode, COO matrices: the column ids
of their records in their order, then the records. Its result is each CSC matrix rebuilt
from what the block emitted, the pointers and the ``{row, value}`` entries, never from a
golden converter; tests compare it with :func:`sparseforge.sw.conversion.convert`. Values
travel as their bits (a float64 as 64 bits), so the result is bit for bit.

``convert --engine rtl`` builds one block (:data:`RTL`) for every matrix, so a matrix of
any size reuses the build; a matrix larger than the block's counters or scratchpad goes
through in passes the host plans and joins (:mod:`sparseforge.sw.passes`), all in one run:
row bands whose row ids fit the block's, each in column passes within its counters and
scratchpad. The block's four edges:

- CSR -> CSC: the block's own conversion, one counting sort keyed on the column.
- CSC -> CSR: the same on the transposed view (CSR of A is CSC of A^T): A's CSC is A^T's
  CSR, one sort keyed on A's row.
- COO -> CSC, in the records' order (a ``.mtx`` read by
  :func:`~sparseforge.sw.formats.read_mtx_in_order` keeps its file's): the COO mode, one
  sort keyed on the column where the rows already ascend within each column, else two
  stable sorts, by row then by column (:func:`~sparseforge.sw.passes.sort_passes`), the
  first one's output rebuilt by the bench and played in again. A sort by row is the
  block's on the transposed view: the host swaps the coordinates as it presents records.
- COO -> CSR: the same with rows and columns swapped.

Stored zeros: the host drops them as it presents the records (the golden converters drop
them): in hardware a comparator where the records are read. The block cannot: its count
sees column ids alone, and the pointers it scans are final. Repeated coordinates: refused
(ParameterError naming the two records; the file-order reader names the file and both
lines). Adding repeats needs an adder of the values' type, the block carries bits it never
interprets, and the pointers would shrink after the scan.

Each edge returns ``(result, cycles)``, ``cycles`` a :class:`Cycles`: the total, as an
int, with each counting sort's :class:`SortPass` in ``cycles.passes``; each names its
block, ``csr_to_csc``, in ``run.block``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..hw.convert_csc import CsrToCsc
from ..sw import passes, wire
from ..sw.formats import index_dtype
from . import native
from .convert import column_parts
from .streams import Bench, Columns, Static

SOURCES = ("shape", "col_ids", "row_ptr", "csr", "coo")
SINKS = ("col_ptr", "csc")

RTL = {"lanes": 8, "max_rows": 1 << 16, "max_cols": 1024, "max_nnz": 4096, "value_width": 64}
"""The ``csr_to_csc`` block ``convert --engine rtl`` builds, whatever the matrix: the
block's default buffers (1,024 columns' counters, a 4,096-entry scratchpad), 16-bit row ids
(65,536 rows; a row id costs bits, not memory) and 64-bit values (any value type's bits). A
matrix beyond them goes through in passes: row bands of at most 65,536 rows and 4,096
nonzeros of a column, each in column passes; so a matrix of any size converts, and a sort by
row (on the transposed view) carries columns of any count."""


@dataclass(frozen=True)
class SortPass:
    """One counting sort through the block: the coordinate it was keyed on (``"column"``
    or ``"row"``), its cycles, and the passes through the block's buffers it took (row
    bands in column passes: :mod:`sparseforge.sw.passes`), all in one run."""

    key: str
    cycles: int
    parts: int


class Cycles(int):
    """A conversion's cycles through the block, an int (as ``convert --engine rtl``
    reports cycles), and ``passes``: each counting sort's :class:`SortPass`, in order."""

    def __new__(cls, passes):
        cycles = super().__new__(cls, sum(p.cycles for p in passes))
        cycles.passes = tuple(passes)
        return cycles


def canonical_csr(matrix):
    """``matrix`` (a CSR array) with repeats added, stored zeros dropped and columns sorted:
    the nonzeros a conversion carries (:mod:`sparseforge.sw.conversion`)."""
    matrix = sp.csr_array(matrix, copy=True)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix


@dataclass(frozen=True)
class CscResult:
    """Matrices through the block: the cycles, and the CSC matrices it emitted."""

    cycles: int
    csc: list          # scipy.sparse.csc_array, one per matrix


class CscBench(Bench):
    """The CSR ``matrices`` (canonical: :func:`canonical_csr`) through ``component``, one
    after the other; or COO ``matrices`` (``coo_array``, records in any order, one a
    coordinate, no stored zero: the block places each) through its COO mode.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7 on
    every stream).
    """

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        lanes = component.lanes
        coo = {m.format == "coo" for m in matrices}
        if len(coo) > 1:
            raise ValueError("a bench's matrices are all CSR or all COO (the mode is held)")
        coo = coo == {True}
        for matrix in matrices:
            check_fits(component, matrix)
        self.matrices = [(m.shape, m.nnz, m.dtype) for m in matrices]
        self.patience = max(self.patience, 2 * component.words)   # the drain's clearing
        rates = {**dict.fromkeys(SOURCES + SINKS, 0.7), **(rates or {})}
        shapes = np.array([(*m.shape, m.nnz) for m in matrices], dtype=np.int64).reshape(-1, 3)
        cols = [m.col if coo else m.indices for m in matrices]
        chunks = [np.pad(c, (0, -len(c) % lanes)) for c in cols]
        values = joined((wire.value_bits(m.data)[0] for m in matrices), np.uint64)
        entries = {"col": joined(cols, np.int64), "value": values}
        if coo:                                 # the records, and no CSR
            records = {"row": joined((m.row for m in matrices), np.int64), **entries,
                       "last": joined((np.arange(m.nnz) == m.nnz - 1 for m in matrices),
                                      np.int64)}
            entries, pointers = dict.fromkeys(entries, np.zeros(0, np.int64)), []
        else:
            records = dict.fromkeys(("row", "col", "value", "last"), np.zeros(0, np.int64))
            pointers = joined((m.indptr[1:] for m in matrices), np.int64)
        self.sources = [
            self.source_on("shape", Columns(dict(zip(("rows", "cols", "nnz"), shapes.T,
                                                     strict=True))), rates["shape"]),
            self.source_on("col_ids", joined(chunks, np.int64).reshape(-1, lanes).tolist(),
                           rates["col_ids"]),
            self.source_on("row_ptr", pointers, rates["row_ptr"]),
            self.source_on("csr", Columns(entries), rates["csr"]),
            self.source_on("coo", Columns(records), rates["coo"]),
        ]
        self.sinks = [
            self.sink_on("col_ptr", rates["col_ptr"],
                         expected=sum(m.shape[1] // lanes + 1 for m in matrices)),
            self.sink_on("csc", rates["csc"], expected=sum(m.nnz for m in matrices))]
        self.drivers = [*self.sources, *self.sinks, Static("from_coo", int(coo))]

    def rebuild(self, col_ptr, csc):
        """The CSC matrices of the block's ``col_ptr`` vectors and ``csc`` entries."""
        out, vectors, entries = [], iter(col_ptr), iter(csc)
        for shape, nnz, dtype in self.matrices:
            index = index_dtype(*shape, nnz)
            pointers = [p for _ in range(shape[1] // self.component.lanes + 1)
                        for p in next(vectors)["ptr"]][:shape[1] + 1]
            mine = [next(entries) for _ in range(nnz)]
            matrix = sp.csc_array((wire.bits_values([e["value"] for e in mine], dtype),
                                   np.array([e["row"] for e in mine], dtype=index),
                                   np.array(pointers, dtype=index)), shape=shape)
            matrix.has_canonical_format = True
            out.append(matrix)
        return out

    def result(self):
        return CscResult(self.cycle, self.rebuild(*([v for _, v in s.received]
                                                    for s in self.sinks)))


def joined(arrays, dtype):
    """The arrays one after the other, as ``dtype``."""
    return np.concatenate([np.zeros(0, dtype), *(np.asarray(a).astype(dtype) for a in arrays)])


def check_fits(component, matrix):
    """Refuse (ParameterError) a matrix larger than ``component`` holds."""
    for what, size, most in [("rows", matrix.shape[0], component.max_rows),
                             ("columns", matrix.shape[1], component.max_cols),
                             ("nonzeros", matrix.nnz, component.max_nnz),
                             ("value bits", wire.value_width(matrix.dtype),
                              component.value_width)]:
        if size > most:
            raise ParameterError(f"a matrix of {size} {what} does not fit the csr_to_csc "
                                 f"block (at most {most})")


def run_native(component, matrices, seed, rates=None):
    """``matrices`` through ``component`` natively on Verilator: a :class:`CscResult`."""
    bench = CscBench(component, matrices, seed, rates)
    run = native.run(bench)
    return CscResult(run.cycles, bench.rebuild(*(run.outputs[s.name] for s in bench.sinks)))


def record_parts(matrix, bounds):
    """The COO matrix of each pass of ``bounds`` (:mod:`sparseforge.sw.passes`): the
    records of ``matrix`` (COO) in the pass's columns, in their order, renumbered from its
    first."""
    return [sp.coo_array((matrix.data[mine], (matrix.row[mine], matrix.col[mine] - lo)),
                         shape=(matrix.shape[0], hi - lo))
            for mine, lo, hi in zip(passes.record_slices(matrix.col, bounds), bounds[:-1],
                                    bounds[1:], strict=True)]


def band_parts(component, matrix):
    """``matrix`` (canonical CSR, or COO records) as the block takes it: its row bands
    (:func:`~sparseforge.sw.passes.row_bands`), each its rows renumbered from its first, in
    the column passes of :func:`~sparseforge.sw.passes.column_passes`. ``(parts, bands)``:
    every pass's matrix, band after band, and each band's first row and passes."""
    coo, (rows, cols) = matrix.format == "coo", matrix.shape
    rows_of = matrix.row if coo else np.repeat(np.arange(rows), np.diff(matrix.indptr))
    bounds = passes.row_bands(rows_of, matrix.col if coo else matrix.indices, rows,
                              component.max_rows, component.max_nnz)
    parts, bands = [], []
    for mine, lo, hi in zip(passes.record_slices(rows_of, bounds), bounds[:-1], bounds[1:],
                            strict=True):
        if coo:
            band = sp.coo_array((matrix.data[mine], (matrix.row[mine] - lo, matrix.col[mine])),
                                shape=(hi - lo, cols))
        else:                                   # a band of CSR is a run of its entries
            ptr = matrix.indptr[lo:hi + 1] - matrix.indptr[lo]
            band = sp.csr_array((matrix.data[mine], matrix.indices[mine], ptr),
                                shape=(hi - lo, cols))
            band.has_canonical_format = True
        columns = passes.column_passes(band.col if coo else band.indices, cols,
                                       component.max_cols, component.max_nnz)
        mine = (record_parts if coo else column_parts)(band, columns)
        parts += mine
        bands.append((int(lo), len(mine)))
    return parts, bands


def sort_by_column(component, matrix, seed, rates=None, simulate=run_native):
    """``matrix`` (canonical CSR, or COO records as :class:`CscBench` takes them) through
    ``component`` in the passes of :func:`band_parts`, one after the other in one run of
    ``simulate`` (:func:`run_native`'s arguments and result): ``((indptr, indices, data),
    cycles, parts, bands)``, the CSC arrays joined on the host from what the block emitted
    for each pass (a band's column passes one after the other, its rows moved up by its
    first; then the bands column by column), a column's entries band by band and within a
    band in the order they came; and the passes and bands it took."""
    parts, bands = band_parts(component, matrix)
    result = simulate(component, parts, seed, rates)
    index = index_dtype(*matrix.shape, matrix.nnz)
    emitted, pointers, rows, data = iter(result.csc), [], [], []
    for lo, count in bands:
        mine = [next(emitted) for _ in range(count)]
        pointers.append(passes.join_columns([m.indptr for m in mine]))
        rows.append(joined((m.indices for m in mine), np.int64) + lo)
        data.append(joined((m.data for m in mine), matrix.dtype))
    indptr, places = passes.join_groups(pointers)
    indices, values = np.empty(len(places), index), np.empty(len(places), matrix.dtype)
    indices[places], values[places] = joined(rows, index), joined(data, matrix.dtype)
    return (indptr.astype(index), indices, values), result.cycles, len(parts), len(bands)


def run_passes(component, matrix, seed, rates=None):
    """``matrix`` (canonical CSR) through ``component`` as :func:`sort_by_column` says:
    ``(csc, cycles, passes, bands)``."""
    (indptr, indices, data), cycles, parts, bands = sort_by_column(component, matrix, seed,
                                                                   rates)
    csc = sp.csc_array((data, indices, indptr), shape=matrix.shape)
    csc.has_canonical_format = True
    return csc, cycles, parts, bands


def sort_records(component, records, by, seed, rates=None, simulate=run_native):
    """COO ``records`` (any order, one a coordinate, no stored zero) in order by ``by``
    (``"column"``: CSC's, ``"row"``: CSR's) through ``component``'s COO mode, in the one
    or two counting sorts of :func:`~sparseforge.sw.passes.sort_passes`, each keyed on one
    coordinate (on the row: the records presented transposed): ``(indptr, other, data,
    cycles)``, the pointers over ``by``, each entry's other coordinate and its value in
    the sorted order, and a :class:`Cycles`. A first sort's output is rebuilt into records
    and played in again; ``simulate`` runs each sort (:func:`sort_by_column`)."""
    other = {"column": "row", "row": "column"}
    keys = [other[by], by][2 - passes.sort_passes(records.row, records.col, by):]
    row, col, data, shape, done = records.row, records.col, records.data, records.shape, []
    for n, key in enumerate(keys):
        view = (sp.coo_array((data, (row, col)), shape=shape) if key == "column" else
                sp.coo_array((data, (col, row)), shape=shape[::-1]))
        (indptr, others, data), cycles, parts, _ = sort_by_column(component, view, seed + n,
                                                                  rates, simulate)
        done.append(SortPass(key, cycles, parts))
        keyed = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        row, col = (others, keyed) if key == "column" else (keyed, others)
    return indptr, others, data, Cycles(done)


def convert(source, block=None, run_bits=None, seed=1):
    """``convert --engine rtl`` from CSR to CSC: ``(csc, cycles)`` from the block built
    once as :data:`RTL` says, the matrix in passes through it."""
    csc, cycles, parts, _ = run_passes(CsrToCsc(**RTL), canonical_csr(source), seed)
    return csc, Cycles([SortPass("column", cycles, parts)])


def csc_to_csr(source, block=None, run_bits=None, seed=1):
    """``convert --engine rtl`` from CSC to CSR: CSR to CSC on the transposed view (A's
    CSC is A^T's CSR, and A^T's CSC is A's CSR), one sort keyed on A's row."""
    csc, cycles, parts, _ = run_passes(CsrToCsc(**RTL), canonical_csr(sp.csc_array(source).T),
                                       seed)
    csr = sp.csr_array((csc.data, csc.indices, csc.indptr), shape=source.shape)
    csr.has_canonical_format = True
    return csr, Cycles([SortPass("row", cycles, parts)])


csc_to_csr.block = "csr_to_csc"


def held_records(source):
    """The COO ``source``'s records in their order, its stored zeros dropped (as a
    comparator would where they are read)."""
    held = source.data != 0
    return sp.coo_array((source.data[held], (source.row[held], source.col[held])),
                        shape=source.shape)


def coo_to(to):
    """``convert --engine rtl`` from COO, records in their order, to ``to`` (CSC or CSR):
    :func:`held_records` sorted by :func:`sort_records`."""
    by, kind = {"csc": ("column", sp.csc_array), "csr": ("row", sp.csr_array)}[to]

    def run(source, block=None, run_bits=None, seed=1):
        indptr, others, data, cycles = sort_records(CsrToCsc(**RTL), held_records(source), by,
                                                    seed)
        index = index_dtype(*source.shape, len(data))
        result = kind((data, others.astype(index), indptr.astype(index)), shape=source.shape)
        result.has_canonical_format = True
        return result, cycles

    run.block, run.any_order = "csr_to_csc", True
    return run


CONVERSIONS = {("csr", "csc"): convert, ("csc", "csr"): csc_to_csr,
               ("coo", "csc"): coo_to("csc"), ("coo", "csr"): coo_to("csr")}
