# amaranth: UnusedElaboratable=no
"""The CSR-to-CSC converter (``csr_to_csc``) as a bench and as ``convert --engine rtl``.

:class:`CscBench` plays CSR matrices into the block, one after the other, under random
back-pressure on every stream: each one's ``shape``, its column ids in chunks, then its
row pointers and entries (the block takes them once every column pointer is out), and
takes ``col_ptr`` and ``csc``. Its result is each CSC matrix rebuilt from what the block
emitted, the pointers and the ``{row, value}`` entries, never from a golden converter;
tests compare it with :func:`sparseforge.sw.conversion.convert`. Values travel as their
bits (a float64 as 64 bits), so the result is bit for bit.

``convert --engine rtl`` builds one block (:data:`RTL`) for every matrix, so a matrix of
any size reuses the build; a matrix larger than the block's counters or scratchpad goes
through in column passes the host plans and joins (:mod:`sparseforge.sw.passes`), all in
one run.
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
from .streams import Bench, Columns

SOURCES = ("shape", "col_ids", "row_ptr", "csr")
SINKS = ("col_ptr", "csc")

RTL = {"lanes": 8, "max_rows": 1 << 16, "max_cols": 1024, "max_nnz": 4096, "value_width": 64}
"""The ``csr_to_csc`` block ``convert --engine rtl`` builds, whatever the matrix: the
block's default buffers (1,024 columns' counters, a 4,096-entry scratchpad), rows up to
65,536 (the largest of the shared data; a row id costs bits, not memory) and 64-bit values
(any value type's bits). A matrix beyond the buffers goes through in column passes; one of
more rows, or a column of more than 4,096 nonzeros, is refused."""


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
    after the other.

    ``rates`` gives each stream's probability of acting on a cycle (default 0.7 on
    every stream).
    """

    def __init__(self, component, matrices, seed, rates=None):
        super().__init__(component, seed)
        lanes = component.lanes
        for matrix in matrices:
            check_fits(component, matrix)
        self.matrices = [(m.shape, m.nnz, m.dtype) for m in matrices]
        self.patience = max(self.patience, 2 * component.words)   # the drain's clearing
        rates = {**dict.fromkeys(SOURCES + SINKS, 0.7), **(rates or {})}
        shapes = np.array([(*m.shape, m.nnz) for m in matrices], dtype=np.int64).reshape(-1, 3)
        chunks = [np.pad(m.indices, (0, -m.nnz % lanes)) for m in matrices]
        csr = {"col": joined((m.indices for m in matrices), np.int64),
               "value": joined((wire.value_bits(m.data)[0] for m in matrices), np.uint64)}
        self.sources = [
            self.source_on("shape", Columns(dict(zip(("rows", "cols", "nnz"), shapes.T,
                                                     strict=True))), rates["shape"]),
            self.source_on("col_ids", joined(chunks, np.int64).reshape(-1, lanes).tolist(),
                           rates["col_ids"]),
            self.source_on("row_ptr", joined((m.indptr[1:] for m in matrices), np.int64),
                           rates["row_ptr"]),
            self.source_on("csr", Columns(csr), rates["csr"]),
        ]
        self.sinks = [
            self.sink_on("col_ptr", rates["col_ptr"],
                         expected=sum(m.shape[1] // lanes + 1 for m in matrices)),
            self.sink_on("csc", rates["csc"], expected=sum(m.nnz for m in matrices))]
        self.drivers = [*self.sources, *self.sinks]

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


def run_passes(component, matrix, seed, rates=None):
    """``matrix`` (canonical CSR) through ``component`` in the passes of
    :func:`~sparseforge.sw.passes.column_passes`, natively on Verilator, one after the
    other in one run: ``(csc, cycles, passes)``, the CSC joined on the host from what the
    block emitted for each pass."""
    bounds = passes.column_passes(matrix.indices, matrix.shape[1], component.max_cols,
                                  component.max_nnz)
    parts = column_parts(matrix, bounds)
    result = run_native(component, parts, seed, rates)
    index = index_dtype(*matrix.shape, matrix.nnz)
    joined_ptr = passes.join_columns([m.indptr for m in result.csc])
    csc = sp.csc_array((joined((m.data for m in result.csc), matrix.dtype),
                        joined((m.indices for m in result.csc), index),
                        joined_ptr.astype(index)), shape=matrix.shape)
    csc.has_canonical_format = True
    return csc, result.cycles, len(parts)


def convert(source, block=None, run_bits=None, seed=1):
    """``convert --engine rtl`` from CSR to CSC: ``(csc, cycles)`` from the block built
    once as :data:`RTL` says, the matrix in passes through it."""
    csc, cycles, _ = run_passes(CsrToCsc(**RTL), canonical_csr(source), seed)
    return csc, cycles


CONVERSIONS = {("csr", "csc"): convert}
