"""DRAM traffic of ExTensor-style tiled SpMSpM under uniform, prescient and overbooked tiling.

Tailors/Swiftiles Sections 3.2, 5.2 and 6.2, reduced to one buffer level (the
global buffer, with DRAM as its parent) so that every term can be checked by
hand. Traffic is counted in nonzeros moved from DRAM.

Model of Z[m,n] = sum_k A[m,k] · B[k,n]
---------------------------------------
- Both operands are tiled in coordinate space with the same shared-dimension
  ranges: B in ``(tk, tn)`` tiles, A in ``(tm, tk)`` tiles.
- B is the stationary operand: each non-empty B tile is filled into the
  buffer (capacity ``buffer`` nonzeros) and kept while A streams past it.
- A streams: all of A is fetched once per column of B tiles (n range) that
  holds any nonzero, and every non-empty A tile in a B tile's k range makes
  one *pass* (one traversal) over that resident B tile. A B tile that no A
  tile meets is never fetched. A's own buffering is not modelled.
- A B tile of occupancy L that fits (L <= D, D the capacity) is fetched once:
  L. One that is overbooked (L > D) costs, over its p passes,

  - with **Tailors**: D + p · (L − D). The first D nonzeros stay resident;
    the bumped L − D are re-streamed through the FIFO region once per pass
    (Section 3.3). The FIFO region is taken as negligibly small next to D.
  - with plain **buffets**: p · L. The sliding window is larger than the
    buffer, so the whole tile is dropped and refetched every pass (Fig. 3).

- Output traffic is left out: with tk = K (the construction's first step)
  every output is completed inside a tile and written once under every
  tiling, so it adds the same term to each. Where a tile cannot span K,
  partial sums would also move, and ExTensor would skip A tiles whose B
  partner is empty; both are left out, as they pull in opposite directions.

The paper's Fig. 9(a) measures "the DRAM traffic of streaming bumped data
through the Tailors relative to the baseline DRAM traffic assuming the same
tiling and an infinitely large buffer": :attr:`Traffic.streaming_overhead`.

Traversals ``r``: in the paper the global buffer feeds many PE buffers, and
bumped data is fetched from the parent for every use (HYTE Sections 5.2 and
6.2): each A tile traverses a resident B tile ``r`` times, once per child tile
it is cut into. ``traversals = r`` charges the bumped part ``r`` times per
pass; ``r = 1`` (one traversal, as ExTensor's single level) is a lower bound.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from .occupancy import INT64_MAX, TileGrid, first_of_runs, tile_occupancy


def tile_transfers(length, depth, fifo, passes):
    """Parent-to-buffer transfers ``(buffet, tailor)`` for ``passes`` traversals of a tile.

    A tile of ``length`` L that fits the capacity D is filled once: L. Beyond
    it, a buffet slides over the whole tile every pass, ``p * L``; a Tailor
    keeps its buffet region ``B = D - F`` and re-streams the rest on every
    later pass, ``L + (p - 1) * (L - B)`` (Section 3.3). Vectorized: any
    argument may be an array.
    """
    length, passes = np.asarray(length), np.asarray(passes)
    over = length > depth
    buffet = np.where(over, passes * length, length)
    tailor = np.where(over, length + (passes - 1) * (length - (depth - fifo)), length)
    return buffet, tailor


@dataclass(frozen=True)
class Traffic:
    """DRAM traffic (nonzeros) of one tiling of Z = A·B.

    Parameters
    ----------
    a_stream : A nonzeros fetched (all of A once per non-empty column of B tiles).
    b_fills : B nonzeros fetched with an infinitely large buffer (each used tile once).
    b_tailors : B nonzeros fetched with a Tailor of the given capacity.
    b_buffets : B nonzeros fetched with a plain buffet of the given capacity.
    """

    a_stream: int
    b_fills: int
    b_tailors: int
    b_buffets: int

    @property
    def baseline(self):
        """Traffic with a buffer that never overbooks (same tiling)."""
        return self.a_stream + self.b_fills

    @property
    def tailors(self):
        return self.a_stream + self.b_tailors

    @property
    def buffets(self):
        return self.a_stream + self.b_buffets

    @property
    def streaming_overhead(self):
        """Extra traffic of re-streaming bumped data through Tailors, relative to the baseline."""
        return (self.b_tailors - self.b_fills) / self.baseline


def spmspm_traffic(a, b, a_tile, b_tile, buffer, traversals=1):
    """DRAM traffic of Z = A·B with A tiles ``(tm, tk)``, B tiles ``(tk, tn)`` and ``buffer``.

    Parameters
    ----------
    a, b : :class:`~sparseforge.sw.occupancy.Pattern` of the operands.
    a_tile, b_tile : tile shapes; they must share the k range ``tk``.
    buffer : capacity D of the buffer holding a B tile, in nonzeros.
    traversals : r, traversals of a resident B tile per A tile (1: a lower bound).
    """
    if isinstance(traversals, bool) or not isinstance(traversals, int) or traversals < 1:
        raise ParameterError(f"traversals={traversals!r}: expected a positive integer")
    if a.shape[1] != b.shape[0]:
        raise ParameterError(f"Z = A·B needs A's columns to match B's rows: {a.shape} · {b.shape}")
    if a_tile[1] != b_tile[0]:
        raise ParameterError(f"A tile {tuple(a_tile)} and B tile {tuple(b_tile)} must share tk")
    if not 1 <= buffer <= INT64_MAX:
        raise ParameterError(f"buffer={buffer!r}: expected a positive number of nonzeros "
                             "below 2^63")
    occ = tile_occupancy(b, b_tile)
    n_ranges = occ.grid.grid_shape[1]
    a_grid = TileGrid(a.shape, tuple(a_tile))
    m_ranges = a_grid.grid_shape[0]
    # non-empty A tiles as k * m_ranges + m, sorted: grouped by their k range
    a_tiles = (a.cols // a_grid.tile_shape[1]) * m_ranges + a.rows // a_grid.tile_shape[0]
    a_tiles.sort()
    a_k = a_tiles[first_of_runs(a_tiles)] // m_ranges
    b_k = occ.ids // n_ranges
    passes = np.searchsorted(a_k, b_k, side="right") - np.searchsorted(a_k, b_k)
    n_cols = np.sort(occ.ids % n_ranges)
    n_ranges_used = int(np.count_nonzero(first_of_runs(n_cols)))
    used = passes > 0
    size = occ.counts[used]
    passes = passes[used] * traversals
    buffets, tailors = tile_transfers(size, buffer, 0, passes)   # F negligible next to D
    return Traffic(a_stream=n_ranges_used * a.nnz, b_fills=int(size.sum()),
                   b_tailors=int(tailors.sum()), b_buffets=int(buffets.sum()))
