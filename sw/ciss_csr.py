"""The CSR a ``csr_to_ciss`` block reads (:mod:`sparseforge.hw.convert_ciss`), prepared
and checked on the host.

The block converts the CSR as it is stored: it reads ``row_ptr[1 ..]`` and each row's
elements ``{col, value}`` (:func:`~sparseforge.sw.wire.csr_entry`) in their order, and
cannot sort, merge or drop anything. So a matrix it would convert into something other
than :func:`sparseforge.sw.ciss.encode`'s stream is refused here, in one line naming the
first place it breaks: row pointers that fall, columns out of order or repeated within
a row, a stored zero (it would read as a header), an index or a count past the block's
widths, a value past ``dw`` bits. Values go as :func:`~sparseforge.sw.ciss.value_bits`
makes them, as the encoder does.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from .ciss import value_bits


@dataclass(frozen=True, eq=False)
class CsrImage:
    """A matrix as the block reads it: ``rows``, ``row_ptr`` (int64, ``rows + 1``), and
    its elements' ``col`` (int64) and value ``bits`` (uint64, ``dw`` bits), ``kind``
    "int" or "float"."""

    rows: int
    row_ptr: np.ndarray
    col: np.ndarray
    bits: np.ndarray
    kind: str


def csr_image(matrix, dw, iw, addr_width):
    """The :class:`CsrImage` of ``matrix`` (scipy sparse, 2-D) for a block of ``dw``-bit
    values, ``iw``-bit indices and ``addr_width``-bit element indices; ParameterError
    (one line) where the block could not convert it as :func:`~.ciss.encode` does."""
    if not sp.issparse(matrix) or matrix.ndim != 2:
        raise ParameterError(f"expected a scipy sparse matrix, not {type(matrix).__name__}")
    csr = sp.csr_array(matrix)
    rows, nnz = csr.shape[0], csr.nnz
    if rows >= 1 << iw:
        raise ParameterError(f"{rows} rows: a slice index of iw={iw} bits stays below "
                             f"{(1 << iw) - 1} (the idle lane's), so at most "
                             f"{(1 << iw) - 1} rows")
    if nnz >= 1 << addr_width:
        raise ParameterError(f"{nnz} nonzeros: row pointers of addr_width={addr_width} bits "
                             f"hold at most {(1 << addr_width) - 1}")
    row_ptr = csr.indptr.astype(np.int64)
    back = np.flatnonzero(np.diff(row_ptr) < 0)
    if len(back):
        i = int(back[0])
        raise ParameterError(f"row pointers fall at row {i}: {row_ptr[i]} then "
                             f"{row_ptr[i + 1]}")
    col = csr.indices.astype(np.int64)
    row = np.repeat(np.arange(rows), np.diff(row_ptr))
    if nnz:
        if col.max() >> iw:
            at = int(np.argmax(col))
            raise ParameterError(f"column {col[at]} (row {row[at]}) does not fit iw={iw} bits")
        bad = np.flatnonzero((np.diff(col) <= 0) & (row[1:] == row[:-1]))
        if len(bad):
            i = bad[0] + 1
            raise ParameterError(f"row {row[i]}: column {col[i]} after column {col[i - 1]}; "
                                 "the block reads a row's columns as stored, so they must "
                                 "ascend without repeats (sort_indices, sum_duplicates)")
        zero = np.flatnonzero(csr.data == 0)
        if len(zero):
            i = zero[0]
            raise ParameterError(f"a stored zero at ({row[i]}, {col[i]}): CISS marks headers "
                                 "with a zero value, so the block takes no stored zeros "
                                 "(eliminate_zeros)")
    bits, kind, _ = value_bits(csr.data, dw)
    return CsrImage(rows, row_ptr, col, bits, kind)
