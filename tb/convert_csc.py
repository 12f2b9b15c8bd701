# amaranth: UnusedElaboratable=no
"""The CSR-to-CSC converter (``csr_to_csc``) as a bench and as ``convert --engine rtl``.

:class:`CscBench` plays CSR matrices into the block, one after the other, under random
back-pressure on every stream: each one's ``shape``, its column ids in chunks, then its
row pointers and entries (the block takes them once every column pointer is out), and
takes ``col_ptr`` and ``csc``. Its result is each CSC matrix rebuilt from what the block
emitted, the pointers and the ``{row, value}`` entries, never from a golden converter;
tests compare it with :func:`sparseforge.sw.conversion.convert`. Values travel as their
bits (a float64 as 64 bits), so the result is bit for bit.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from ..core.params import check_params
from ..hw.convert_csc import CsrToCsc
from ..sw import wire
from ..sw.formats import index_dtype
from . import native
from .streams import Bench, Columns

SOURCES = ("shape", "col_ids", "row_ptr", "csr")
SINKS = ("col_ptr", "csc")


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
    """The arrays one after the other, as ``dtype`` (an integer type: values' bits)."""
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


def block_for(matrix, lanes=8):
    """A ``csr_to_csc`` block just large enough for ``matrix`` (powers of two)."""
    def fit(size, least):
        return 1 << max(int(size) - 1, least - 1, 0).bit_length()

    values = {"lanes": lanes, "max_rows": fit(matrix.shape[0], 2),
              "max_cols": fit(matrix.shape[1], 32), "max_nnz": fit(matrix.nnz, 2),
              "value_width": wire.value_width(matrix.dtype)}
    try:
        return CsrToCsc(**check_params(CsrToCsc.PARAMS, values))
    except ParameterError as exc:
        raise ParameterError(f"the csr_to_csc block cannot hold this {matrix.shape[0]} x "
                             f"{matrix.shape[1]} matrix with {matrix.nnz} nonzeros: {exc}") \
            from None


def run_native(component, matrices, seed, rates=None):
    """``matrices`` through ``component`` natively on Verilator: a :class:`CscResult`."""
    bench = CscBench(component, matrices, seed, rates)
    run = native.run(bench)
    return CscResult(run.cycles, bench.rebuild(*(run.outputs[s.name] for s in bench.sinks)))


def convert(source, block=None, run_bits=None, seed=1):
    """``convert --engine rtl`` from CSR to CSC: ``(csc, cycles)`` from the block."""
    matrix = canonical_csr(source)
    result = run_native(block_for(matrix), [matrix], seed)
    return result.csc[0], result.cycles


CONVERSIONS = {("csr", "csc"): convert}
