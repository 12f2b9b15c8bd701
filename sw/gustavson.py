"""Host side of the Gustavson SpGEMM engine (HYTE Section 2): C = A·B in column tiles.

The engine's accumulator holds ``cols`` columns, whatever the matrices: B wider than that
is cut here into column tiles of ``cols`` (the passes over j HYTE tiles by), each a job
whose column ``offset`` goes with it; C's tiles, disjoint in columns, are joined again.
Only tiles holding a nonzero of B are jobs (an empty tile's C is empty), so a matrix of
10^12 columns and a handful of nonzeros plans in milliseconds. numpy and scipy only.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from .wire import signed_words


@dataclass(frozen=True)
class ColumnTile:
    """B's columns ``offset .. offset + cols - 1``: a CSR of B's shape holding only them
    (column ids absolute, as B stores them)."""

    offset: int
    b: sp.csr_matrix


def operands(a, b):
    """``(A, B)`` as canonical integer CSR (int64), or :class:`ParameterError` where they
    do not multiply or hold values that are not integers."""
    a, b = sp.csr_matrix(a), sp.csr_matrix(b)
    if a.shape[1] != b.shape[0]:
        raise ParameterError(f"A is {a.shape[0]} x {a.shape[1]} and B {b.shape[0]} x "
                             f"{b.shape[1]}: A's columns must be B's rows")
    out = []
    for name, m in (("A", a), ("B", b)):
        m.sum_duplicates()
        if m.dtype.kind == "f" and not np.array_equal(m.data, np.round(m.data)):
            raise ParameterError(f"{name} holds values that are not integers: the engine's "
                                 "data path is exact integers")
        if m.dtype.kind not in "biuf":
            raise ParameterError(f"{name} holds {m.dtype} values: the engine takes integers")
        m = sp.csr_matrix((m.data.astype(np.int64), m.indices, m.indptr), shape=m.shape)
        m.eliminate_zeros()
        out.append(m)
    return tuple(out)


def check_fits(a, b, index_width, acc_width):
    """:class:`ParameterError` where a row or column id of A, B or C needs more than
    ``index_width`` bits, or a value of C more than ``acc_width`` (two's complement)."""
    for name, m in (("A", a), ("B", b)):
        if max(m.shape) > 1 << index_width:
            raise ParameterError(f"{name} is {m.shape[0]} x {m.shape[1]}: ids of "
                                 f"index_width={index_width} bits reach "
                                 f"{1 << index_width}")
    c = a @ b
    signed_words(c.data, acc_width, "C = A·B", "acc_width")


def column_tiles(b, cols):
    """B's column tiles of ``cols`` columns that hold a nonzero, in column order."""
    if cols < 1:
        raise ParameterError(f"cols={cols}: a column tile holds at least one column")
    b = sp.csr_matrix(b)
    tile = b.indices // cols
    rows = np.repeat(np.arange(b.shape[0]), np.diff(b.indptr))
    tiles = []
    for t in np.unique(tile):
        keep = tile == t
        counts = np.bincount(rows[keep], minlength=b.shape[0])
        indptr = np.concatenate(([0], np.cumsum(counts)))
        tiles.append(ColumnTile(int(t) * cols, sp.csr_matrix(
            (b.data[keep], b.indices[keep], indptr), shape=b.shape)))
    return tiles


def a_entries(a, value_width):
    """A's stream for one job, as columns of the engine's A entries
    (:func:`~sparseforge.sw.wire.gustavson_a_entry`): each row's nonzeros in column
    order, ``row_end`` on its last, an empty row one ``empty`` entry; ``last`` on the
    final entry. Values as their two's-complement bits, refused past ``value_width``."""
    a = sp.csr_matrix(a)
    if a.shape[0] == 0:
        raise ParameterError("A has no rows: a job streams at least one")
    counts = np.diff(a.indptr)
    slots = np.maximum(counts, 1)
    ends = np.cumsum(slots)
    n = int(ends[-1])
    empty = np.zeros(n, dtype=np.int64)
    empty[ends[counts == 0] - 1] = 1
    k = np.zeros(n, dtype=np.int64)
    value = np.zeros(n, dtype=np.int64)
    k[empty == 0] = a.indices
    value[empty == 0] = signed_words(a.data, value_width, "A", "value_width")
    row_end = np.zeros(n, dtype=np.int64)
    row_end[ends - 1] = 1
    last = np.zeros(n, dtype=np.int64)
    last[-1] = 1
    return {"k": k, "value": value, "row_end": row_end, "empty": empty, "last": last}


def join(shape, tiles):
    """C from its column tiles (CSRs of C's shape, disjoint in columns), canonical."""
    c = sp.csr_matrix(shape, dtype=np.int64)
    for tile in tiles:
        c = c + tile
    c.sort_indices()
    return c
