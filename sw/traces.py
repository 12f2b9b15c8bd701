"""Buffer access traces of real kernels, to drive buffer blocks with real data.

:func:`spmv_window` turns sparse matrix-vector multiplication y = A·x into the
operations a buffet holding a sliding window of x sees: x is filled in order,
each nonzero A[i, j] reads x[j] relative to the window's head, and the head
advances (shrink) as soon as no later row needs the oldest entries. Ordering
the matrix by reverse Cuthill–McKee first keeps the window narrow.
"""

from dataclasses import dataclass
from itertools import chain

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..core.errors import ParameterError
from .buffet_program import FILL, READ, SHRINK, BuffetProgram
from .wire import pack, spmv_entry


@dataclass(frozen=True, eq=False)
class WindowTrace:
    program: BuffetProgram   # fills of x, reads relative to the head, shrinks; in order
    window: int              # largest number of x entries held at once
    matrix: sp.csr_array
    x: np.ndarray
    reads: np.ndarray        # column of every read, in order (what each response must be)


def rcm_order(matrix):
    """``matrix`` symmetrically permuted by reverse Cuthill–McKee."""
    a = sp.csr_array(matrix)
    perm = reverse_cuthill_mckee(sp.csr_matrix(a + a.T), symmetric_mode=True)
    return a[perm][:, perm]


def spmv_window(matrix, x):
    """The sliding-window buffet trace of y = matrix · x (row by row).

    The buffet holds x from the smallest column any later row still needs
    (``start``) up to the largest column needed so far. Per row with
    nonzeros, in order: a shrink of what falls below its ``start`` (when that
    moved), the fills of x up to its last column (x below ``start`` is never
    filled), one read per nonzero. The trace ends with the buffet empty, so
    traces run one after another. Vectorized.
    """
    a = sp.csr_array(matrix)
    a.sort_indices()
    lengths = np.diff(a.indptr)
    rows = np.flatnonzero(lengths)
    if rows.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return WindowTrace(BuffetProgram(empty, empty, empty), 0, a, np.asarray(x), empty)
    first = a.indices[a.indptr[rows]]
    last = a.indices[a.indptr[rows + 1] - 1]
    start = np.minimum.accumulate(first[::-1])[::-1].astype(np.int64)
    filled = np.maximum.accumulate(last).astype(np.int64) + 1     # x up to here after each row
    before = np.concatenate([[0], filled[:-1]])                    # ... and before it
    freed = np.minimum(start, before) - np.concatenate([[0], start[:-1]])
    lower = np.maximum(before, start)                              # the first x each row fills
    fills = filled - lower
    segments = np.stack([freed > 0, fills, lengths[rows]], axis=1).ravel()
    kind = np.repeat(np.tile([SHRINK, FILL, READ], rows.size), segments)
    arg = np.empty(kind.size, dtype=np.int64)
    arg[kind == SHRINK] = freed[freed > 0]
    offsets = np.cumsum(fills) - fills
    arg[kind == FILL] = np.asarray(x)[np.repeat(lower - offsets, fills) + np.arange(fills.sum())]
    arg[kind == READ] = a.indices - np.repeat(start, lengths[rows])
    kind = np.append(kind, SHRINK)                                 # the last window freed
    arg = np.append(arg, filled[-1] - start[-1])
    program = BuffetProgram(kind, arg, np.zeros(kind.size, dtype=np.int64))
    return WindowTrace(program, int((filled - start).max()), a, np.asarray(x),
                       a.indices.astype(np.int64))


@dataclass(frozen=True)
class TileTrace:
    """y = A·x with x held tile by tile: each tile is the x entries a block of rows needs."""

    tiles: list        # per tile: {length, passes, reads, values} for the Tailor's tile bench
    nonzero: list      # per read, in order: the CSR position it serves, -1 for an end-of-pass read
    matrix: sp.csr_array
    x: np.ndarray
    rows: list         # per pass, in order: the row it computes


def spmv_tiles(matrix, x, rows_per_tile):
    """The tiled trace of y = matrix · x: one tile per block of rows, one pass per row.

    Tile ``k`` holds x at the distinct columns of rows ``[k R, (k+1) R)`` in
    order; row ``i`` of the block reads the tile indices of its columns, in
    order. A Tailor's child asks for the tile's last element in every pass
    (it passes the rest of the stream), so a row that does not use it reads
    it once more at the end of its pass and discards the value.
    """
    a = sp.csr_array(matrix)
    a.sort_indices()
    x = np.asarray(x)
    tiles, nonzero, passes = [], [], []
    for top in range(0, a.shape[0], rows_per_tile):
        rows = range(top, min(top + rows_per_tile, a.shape[0]))
        span = slice(a.indptr[rows.start], a.indptr[rows.stop])
        columns = np.unique(a.indices[span])
        if columns.size == 0:
            continue
        reads = []
        for i in rows:
            cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
            indices = np.searchsorted(columns, cols).tolist()
            nonzero.extend(range(a.indptr[i], a.indptr[i + 1]))
            if not indices or indices[-1] != columns.size - 1:
                indices.append(int(columns.size - 1))
                nonzero.append(-1)
            reads.append(indices)
            passes.append(i)
        tiles.append({"length": int(columns.size), "passes": len(reads), "reads": reads,
                      "values": [int(v) for v in x[columns]]})
    return TileTrace(tiles, nonzero, a, x, passes)


@dataclass(frozen=True)
class AStream:
    """A's stream into the SpMV engine: one entry per read of a :class:`TileTrace`.

    The fields of :func:`~sparseforge.sw.wire.spmv_entry`, one array each;
    ``rows`` is the row of each y the engine emits, in order (rows of blocks
    without nonzeros have no pass and y = 0).
    """

    index: np.ndarray
    value: np.ndarray      # A's value, signed; 0 on a read that only ends a pass
    row_end: np.ndarray
    tile_end: np.ndarray
    rows: np.ndarray

    def entries(self):
        """``(index, value, row_end, tile_end)`` per entry, as Python ints."""
        return zip(self.index.tolist(), self.value.tolist(), self.row_end.tolist(),
                   self.tile_end.tolist(), strict=True)

    def words(self, index_width, value_width):
        """The entries packed as stream words (``value`` in two's complement)."""
        return pack(spmv_entry(index_width, value_width),
                    {"index": self.index, "value": self.value & ((1 << value_width) - 1),
                     "row_end": self.row_end, "tile_end": self.tile_end})


def spmv_stream(trace, value_width):
    """Encode ``trace`` as A's stream; A's values must be integers of ``value_width`` bits."""
    data = trace.matrix.data
    lo, hi = -(1 << (value_width - 1)), (1 << (value_width - 1)) - 1
    if data.size and (np.any(data != np.round(data)) or data.min() < lo or data.max() > hi):
        raise ParameterError(f"value_width={value_width}: A's values must be integers in "
                             f"[{lo}, {hi}]")
    passes = [r for t in trace.tiles for r in t["reads"]]
    ends = np.cumsum([len(r) for r in passes], dtype=np.int64) - 1
    tile_ends = ends[np.cumsum([t["passes"] for t in trace.tiles], dtype=np.int64) - 1]
    nonzero = np.asarray(trace.nonzero, dtype=np.int64)
    value = np.where(nonzero >= 0, data.astype(np.int64)[nonzero.clip(0)], 0)
    index = np.fromiter(chain.from_iterable(passes), dtype=np.int64)
    row_end = np.zeros(index.size, dtype=np.int64)
    tile_end = np.zeros(index.size, dtype=np.int64)
    row_end[ends], tile_end[tile_ends] = 1, 1
    return AStream(index, value, row_end, tile_end, np.asarray(trace.rows, dtype=np.int64))
