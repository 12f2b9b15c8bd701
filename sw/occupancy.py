"""Per-tile occupancy of a sparse matrix under coordinate-space tiling.

Tailors/Swiftiles (Sections 1, 2.2 and 4) reason about the *occupancy* of a
tile: the number of nonzeros inside a uniformly shaped tile of the
uncompressed coordinate space. This module computes it for any 2-D tile shape,
for every tile at once (one pass over the nonzeros, as prescient tiling must)
or for a few chosen tiles (what Swiftiles' sampling touches).

Conventions
-----------
- A *nonzero* is a stored entry after duplicates are summed; explicit zeros
  that a file stores stay, as they occupy the buffer like any other entry.
- Tiles are laid on a grid anchored at (0, 0); tiles on the last row and
  column of the grid are cut off by the matrix edge and may be smaller.
- Tile ids are row-major over the grid: ``(row // tr) * ntc + col // tc``.
- Fractions "over all tiles" (:meth:`Occupancy.overbooked_fraction`) count
  empty tiles too, as Swiftiles' random tiles are drawn from all tiles: the
  paper's k is "the number of tiles that are overbooked out of the total
  number of tiles". Buffer utilization (:meth:`Occupancy.utilization`) is
  averaged over non-empty tiles only, since an empty tile is never loaded.

Everything is vectorized numpy; nothing loops over nonzeros in Python. Memory
follows the nonzeros, whatever the matrix's area: tiles are counted from the
tile ids of the nonzeros (a counter per tile only where there are no more
tiles than nonzeros, else a sort), and a sampled tile is measured by binary
search over the nonzeros it may hold.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..core.errors import ParameterError

INT64_MAX = int(np.iinfo(np.int64).max)


@dataclass(frozen=True, eq=False)
class Pattern:
    """The nonzero coordinates of a matrix, in column-major (CSC) order.

    Parameters
    ----------
    shape : (rows, cols) of the matrix.
    rows, cols : int64 coordinates of the nonzeros, sorted by (col, row).

    ``keys = col * rows + row`` is therefore ascending, so the nonzeros of any
    column interval are one contiguous run found by binary search; that is
    what lets Swiftiles measure a sampled tile without scanning the matrix.
    """

    shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray

    @classmethod
    def from_matrix(cls, matrix):
        """Build from any ``scipy.sparse`` matrix or array (duplicates summed).

        Sorts the coordinates; memory follows the nonzeros, whatever the shape.
        scipy is imported here, where a scipy matrix comes in, so the numpy-only
        users of this module (the behavioural models) load without it.
        """
        import scipy.sparse

        if not scipy.sparse.issparse(matrix) or len(matrix.shape) != 2:
            raise ParameterError(f"expected a 2-D scipy.sparse matrix, got {type(matrix).__name__}")
        coo = scipy.sparse.coo_array(matrix)
        shape = tuple(int(s) for s in coo.shape)
        if shape[0] * shape[1] <= INT64_MAX:
            keys = coo.col.astype(np.int64)
            keys *= shape[0]
            keys += coo.row
            keys.sort()
            distinct = first_of_runs(keys)
            if not distinct.all():
                keys = keys[distinct]
            cols, rows = np.divmod(keys, shape[0])
        else:  # linear indices would overflow: sort by the pair
            order = np.lexsort((coo.row, coo.col))
            rows, cols = coo.row[order].astype(np.int64), coo.col[order].astype(np.int64)
            distinct = first_of_runs(rows) | first_of_runs(cols)
            rows, cols = rows[distinct], cols[distinct]
        return cls(shape, rows, cols)

    @property
    def nnz(self):
        return len(self.rows)

    @property
    def density(self):
        """Average density d = nnz / (rows * cols)."""
        return self.nnz / (self.shape[0] * self.shape[1])

    @cached_property
    def keys(self):
        """Ascending column-major linear indices ``col * rows + row``."""
        if self.shape[0] * self.shape[1] > INT64_MAX:
            raise ParameterError(f"a {self.shape[0]} x {self.shape[1]} matrix has linear indices "
                                 "beyond 64 bits")
        return self.cols * self.shape[0] + self.rows

    @cached_property
    def column_runs(self):
        """``(columns, bounds)``: the non-empty columns, ascending, and where each one's run of
        nonzeros starts, plus ``nnz`` at the end."""
        starts = first_of_runs(self.cols).nonzero()[0]
        return self.cols[starts], np.append(starts, self.nnz)


def first_of_runs(values):
    """Mask of the entries that differ from the one before (the first one always does)."""
    mask = np.empty(len(values), dtype=bool)
    mask[:1] = True
    np.not_equal(values[1:], values[:-1], out=mask[1:])
    return mask


@dataclass(frozen=True)
class TileGrid:
    """A matrix of ``shape`` cut into tiles of ``tile_shape`` = (tr, tc)."""

    shape: tuple[int, int]
    tile_shape: tuple[int, int]

    def __post_init__(self):
        for extent, tile in zip(self.shape, self.tile_shape, strict=True):
            if not 1 <= tile <= extent:
                raise ParameterError(
                    f"tile shape {tuple(self.tile_shape)}: each range must be in [1, extent] "
                    f"for matrix shape {tuple(self.shape)}")
        if self.n_tiles > INT64_MAX:
            raise ParameterError(f"tile shape {tuple(self.tile_shape)} cuts a {self.shape[0]} x "
                                 f"{self.shape[1]} matrix into {self.n_tiles} tiles; tile ids "
                                 "must fit in 64 bits")

    @property
    def grid_shape(self):
        """Number of tiles along each dimension (the last ones may be cut off)."""
        return tuple(-(-extent // tile) for extent, tile in zip(self.shape, self.tile_shape,
                                                                strict=True))

    @property
    def n_tiles(self):
        return self.grid_shape[0] * self.grid_shape[1]

    @property
    def tile_size(self):
        """Elements (zeros and nonzeros) in a full tile: tr * tc."""
        return self.tile_shape[0] * self.tile_shape[1]

    def tile_ids(self, rows, cols):
        """Row-major id of the tile holding each coordinate."""
        return (rows // self.tile_shape[0]) * self.grid_shape[1] + cols // self.tile_shape[1]

    def bounds(self, ids):
        """Half-open row and column ranges ``(r0, r1, c0, c1)`` of tiles ``ids``."""
        r0 = (ids // self.grid_shape[1]) * self.tile_shape[0]
        c0 = (ids % self.grid_shape[1]) * self.tile_shape[1]
        r1 = np.minimum(r0 + self.tile_shape[0], self.shape[0])
        c1 = np.minimum(c0 + self.tile_shape[1], self.shape[1])
        return r0, r1, c0, c1


@dataclass(frozen=True, eq=False)
class Occupancy:
    """Occupancy of every tile of ``grid``, stored for the non-empty ones.

    Parameters
    ----------
    grid : the tiling.
    ids : ascending ids of the non-empty tiles.
    counts : their occupancies (nonzeros per tile); every other tile is empty.
    """

    grid: TileGrid
    ids: np.ndarray
    counts: np.ndarray

    @property
    def n_tiles(self):
        """All tiles of the grid, empty ones included."""
        return self.grid.n_tiles

    @property
    def n_empty(self):
        return self.n_tiles - len(self.ids)

    @property
    def max(self):
        """Worst observed occupancy (what prescient tiling must fit)."""
        return int(self.counts.max(initial=0))

    def overbooked_fraction(self, buffer):
        """Fraction of all tiles (empty included) whose occupancy exceeds ``buffer``."""
        return np.count_nonzero(self.counts > min(buffer, INT64_MAX)) / self.n_tiles

    def utilization(self, buffer):
        """Mean buffer utilization over non-empty tiles; an overbooked tile counts as full."""
        if len(self.counts) == 0:
            return 0.0
        return float(np.minimum(self.counts, min(buffer, INT64_MAX)).mean() / buffer)


def tile_occupancy(pattern, tile_shape):
    """Exact occupancy of every tile of ``tile_shape``: one pass over all nonzeros.

    Counts by tile id: a counter per tile where the grid has no more tiles than
    nonzeros, else a sort of the ids, so memory follows the nonzeros.
    """
    grid = TileGrid(pattern.shape, tuple(int(t) for t in tile_shape))
    ids = grid.tile_ids(pattern.rows, pattern.cols)
    if grid.n_tiles <= max(pattern.nnz, 1):
        per_tile = np.bincount(ids, minlength=grid.n_tiles)
        nonempty = np.flatnonzero(per_tile)
        return Occupancy(grid, nonempty, per_tile[nonempty])
    ids.sort()
    starts = first_of_runs(ids).nonzero()[0]
    return Occupancy(grid, ids[starts], np.diff(starts, append=len(ids)))


def sampled_occupancy(pattern, grid, ids):
    """Occupancy of the tiles ``ids`` of ``grid`` only, by binary search in the sorted nonzeros.

    Tiles spanning whole columns cost O(len(ids) * log nnz): their nonzeros are
    one run. Others cost a binary search per non-empty column they cover,
    independent of the nonzeros elsewhere and of the tile's width.
    """
    ids = np.asarray(ids, dtype=np.int64)
    r0, r1, c0, c1 = grid.bounds(ids)
    if grid.tile_shape[0] == pattern.shape[0]:
        return np.searchsorted(pattern.cols, c1) - np.searchsorted(pattern.cols, c0)
    columns, bounds = pattern.column_runs
    first, last = np.searchsorted(columns, c0), np.searchsorted(columns, c1)
    widths = last - first  # non-empty columns per tile
    owner = np.repeat(np.arange(len(ids)), widths)
    column = first[owner] + np.arange(len(owner)) - np.repeat(np.cumsum(widths) - widths, widths)
    start, stop = bounds[column], bounds[column + 1]
    runs = (_search_runs(pattern.rows, start, stop, r1[owner])
            - _search_runs(pattern.rows, start, stop, r0[owner]))
    return np.bincount(owner, weights=runs, minlength=len(ids)).astype(np.int64)


def _search_runs(values, start, stop, targets):
    """Per query, the first index in ``[start, stop)`` whose value is >= its target (``stop``
    if none): one binary search per sorted run of ``values``, all queries at once."""
    lo, hi = np.array(start, dtype=np.int64), np.array(stop, dtype=np.int64)
    while (open_ := lo < hi).any():
        mid = (lo + hi) // 2
        below = values[np.where(open_, mid, 0)] < targets
        lo = np.where(open_ & below, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)
    return lo
