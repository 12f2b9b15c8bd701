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

Everything is vectorized numpy; nothing loops over nonzeros in Python.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse

from ..errors import ParameterError

# np.bincount over the tile ids is linear but needs one counter per tile; past
# this many tiles per nonzero a sort (np.unique) is cheaper in memory and time.
_BINCOUNT_TILES_PER_NONZERO = 8


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
        """Build from any ``scipy.sparse`` matrix or array (duplicates summed)."""
        if not scipy.sparse.issparse(matrix) or len(matrix.shape) != 2:
            raise ParameterError(f"expected a 2-D scipy.sparse matrix, got {type(matrix).__name__}")
        csc = scipy.sparse.csc_array(matrix)
        csc.sum_duplicates()
        counts = np.diff(csc.indptr)
        cols = np.repeat(np.arange(csc.shape[1], dtype=np.int64), counts)
        return cls(tuple(int(s) for s in csc.shape), csc.indices.astype(np.int64), cols)

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
        return self.cols * self.shape[0] + self.rows


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
        return np.count_nonzero(self.counts > buffer) / self.n_tiles

    def utilization(self, buffer):
        """Mean buffer utilization over non-empty tiles; an overbooked tile counts as full."""
        if len(self.counts) == 0:
            return 0.0
        return float(np.minimum(self.counts, buffer).mean() / buffer)


def tile_occupancy(pattern, tile_shape):
    """Exact occupancy of every tile of ``tile_shape``: one pass over all nonzeros."""
    grid = TileGrid(pattern.shape, tuple(int(t) for t in tile_shape))
    ids = grid.tile_ids(pattern.rows, pattern.cols)
    if grid.n_tiles <= _BINCOUNT_TILES_PER_NONZERO * max(pattern.nnz, 1):
        per_tile = np.bincount(ids, minlength=grid.n_tiles)
        nonempty = np.flatnonzero(per_tile)
        return Occupancy(grid, nonempty, per_tile[nonempty])
    nonempty, counts = np.unique(ids, return_counts=True)
    return Occupancy(grid, nonempty, counts.astype(np.int64))


def sampled_occupancy(pattern, grid, ids):
    """Occupancy of the tiles ``ids`` of ``grid`` only, by binary search on ``pattern.keys``.

    Costs O(len(ids) * log nnz) for tiles spanning whole columns (their nonzeros
    form one run of keys) and O(len(ids) * tc * log nnz) otherwise, one run per
    column of each tile, independent of the number of nonzeros elsewhere.
    """
    ids = np.asarray(ids, dtype=np.int64)
    keys, height = pattern.keys, pattern.shape[0]
    r0, r1, c0, c1 = grid.bounds(ids)
    if grid.tile_shape[0] == height:
        return np.searchsorted(keys, c1 * height) - np.searchsorted(keys, c0 * height)
    widths = c1 - c0
    owner = np.repeat(np.arange(len(ids)), widths)
    first = np.repeat(np.cumsum(widths) - widths, widths)
    col = c0[owner] + np.arange(len(owner)) - first
    runs = (np.searchsorted(keys, col * height + r1[owner])
            - np.searchsorted(keys, col * height + r0[owner]))
    return np.bincount(owner, weights=runs, minlength=len(ids)).astype(np.int64)
