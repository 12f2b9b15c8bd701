"""Swiftiles: pick a tile size that overbooks a buffer for about a fraction k of tiles.

Tailors/Swiftiles Section 4. Three tilings of one sparse matrix for a buffer
holding ``buffer`` nonzeros (B):

- **uniform** (ExTensor-N): the tile is assumed dense, so its size is B.
- **prescient** (ExTensor-P): the largest candidate tile whose *maximum*
  occupancy fits in B, found by measuring every candidate shape exactly (one
  traversal of all nonzeros per candidate: the paper's "tiling tax").
- **swiftiles** (ExTensor-OB): one-shot statistical estimate, Section 4.2.

  1. Initial estimate ``T0 = B / d``, d = nnz / (rows * cols).
  2. Draw ``N = ceil(y / k)`` random tiles of size T0 (from all tiles, empty
     ones included), so about y samples land in the top-k tail.
  3. ``O_k`` = the occupancy that a fraction k of the samples exceed; the
     final tile size is ``T = T0 * B / O_k`` (T0 here is the size of the
     shape actually sampled, after rounding to whole ranges).

All three only choose a tile *size*; the shape comes from the SpMSpM
construction for Z = A·B (Section 5.2): grow along the shared dimension k to
its end first, then along B's free dimension n, then along A's free dimension
m. The matrix being tiled plays operand B (rows are k, columns are n), the
tile the buffer holds.
"""

import math
import time
from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from .occupancy import INT64_MAX, TileGrid, sampled_occupancy, tile_occupancy


def grow_shape(size, extents, order):
    """Greedy tile construction: grow each axis in ``order`` as far as ``size`` allows.

    Each axis takes ``min(extent, size // product of the axes already grown)``
    and at least 1, so the product never exceeds ``max(size, 1)``.
    """
    shape = [1] * len(extents)
    grown = 1
    for axis in order:
        shape[axis] = int(max(1, min(extents[axis], size // grown)))
        grown *= shape[axis]
    return tuple(shape)


def spmspm_tile_shape(size, m, k, n):
    """Tile ranges ``(tm, tk, tn)`` of the iteration space of Z[m,n] = A[m,k]·B[k,n].

    Grown k first to the end of the dimension (outputs complete inside a tile,
    no partial sums leave the chip), then n (operand B's free dimension), then
    m (operand A's), as in the paper's ExTensor-P/OB construction. Operand B's
    tile is ``(tk, tn)`` and has at most ``size`` elements.
    """
    return grow_shape(size, (m, k, n), order=(1, 2, 0))


def b_tile_shape(size, shape):
    """Tile ``(tk, tn)`` of ``size`` for a matrix of ``shape`` = (K, N) used as operand B."""
    return spmspm_tile_shape(size, 1, *shape)[1:]


def a_tile_shape(size, shape):
    """Tile ``(tm, tk)`` of ``size`` for a matrix of ``shape`` = (M, K) used as operand A."""
    return spmspm_tile_shape(size, *shape, 1)[:2]


@dataclass(frozen=True)
class Tiling:
    """A uniform tile shape chosen by one strategy, and what choosing it cost.

    Parameters
    ----------
    strategy : ``"uniform"``, ``"prescient"`` or ``"swiftiles"``.
    tile_shape : ranges (rows, cols) of every tile.
    seconds : preprocessing time (wall clock) spent choosing it.
    """

    strategy: str
    tile_shape: tuple[int, int]
    seconds: float

    @property
    def tile_size(self):
        return math.prod(self.tile_shape)


@dataclass(frozen=True)
class PrescientTiling(Tiling):
    """Prescient result: also the worst occupancy and how many shapes were measured."""

    max_occupancy: int
    candidates: int


@dataclass(frozen=True, eq=False)
class SwiftilesTiling(Tiling):
    """Swiftiles result, with the intermediate quantities of Section 4.2.

    Parameters
    ----------
    k, y : target overbooking fraction and expected samples in the top-k tail.
    initial_shape : shape of the T0 tiles that were sampled.
    samples : occupancies of the N sampled tiles.
    o_k : occupancy that a fraction k of the samples exceed.
    predicted_fraction : fraction of samples that, scaled linearly from the
        sampled tile size to the chosen one, exceed the buffer: the
        overbooking rate Swiftiles predicts for its own choice.
    """

    k: float
    y: int
    initial_shape: tuple[int, int]
    samples: np.ndarray
    o_k: int
    predicted_fraction: float


def _check(pattern, buffer):
    if isinstance(buffer, bool) or not isinstance(buffer, int | np.integer) or buffer < 1:
        raise ParameterError(f"buffer={buffer!r}: expected a positive number of nonzeros")
    if buffer > INT64_MAX:
        raise ParameterError(f"buffer={buffer!r}: expected at most 2^63 - 1 nonzeros")
    if pattern.nnz == 0:
        raise ParameterError(f"matrix of shape {pattern.shape} has no nonzeros to tile")


def uniform_tiling(pattern, buffer):
    """Uniform shape assuming dense tiles: tile size = buffer capacity (never overbooks)."""
    _check(pattern, buffer)
    start = time.perf_counter()
    shape = b_tile_shape(buffer, pattern.shape)
    return Tiling("uniform", shape, time.perf_counter() - start)


def prescient_candidates(pattern, buffer, per_octave=4):
    """Candidate shapes of interest, ascending in size: sizes B * 2^(i/per_octave) up to the matrix.

    Sizes up to B are left out, as a tile of at most B elements always fits.
    """
    whole = pattern.shape[0] * pattern.shape[1]
    steps = max(0, math.ceil(per_octave * math.log2(whole / buffer)))
    sizes = np.unique(np.minimum(buffer * 2.0 ** (np.arange(1, steps + 1) / per_octave), whole))
    shapes = dict.fromkeys(b_tile_shape(int(s), pattern.shape) for s in sizes)
    return [s for s in shapes if math.prod(s) > buffer]


def prescient_tiling(pattern, buffer, per_octave=4):
    """The largest candidate shape whose maximum tile occupancy is at most ``buffer``.

    Every candidate is measured (max occupancy is not monotone in tile size,
    since the grid shifts), each with a full pass over the nonzeros.
    """
    _check(pattern, buffer)
    start = time.perf_counter()
    best, best_max = b_tile_shape(buffer, pattern.shape), None
    candidates = prescient_candidates(pattern, buffer, per_octave)
    for shape in candidates:
        worst = tile_occupancy(pattern, shape).max
        if worst <= buffer:
            best, best_max = shape, worst
    if best_max is None:
        best_max = tile_occupancy(pattern, best).max
    return PrescientTiling("prescient", best, time.perf_counter() - start, best_max,
                           len(candidates))


def samples_for(k, y):
    """Number of tiles Swiftiles samples: N = ceil(y / k)."""
    return math.ceil(round(y / k, 9))  # rounded first: 10 / 0.1 must give 100, not 101


def quantile_point(samples, k):
    """O_k: the occupancy a fraction ``k`` of ``samples`` exceed (at most ``floor(k n)``
    of the n samples lie above it)."""
    n = len(samples)
    tail = math.floor(round(k * n, 9))
    return int(np.partition(samples, n - 1 - tail)[n - 1 - tail])


def swiftiles(pattern, buffer, k=0.1, y=10, seed=None):
    """Swiftiles tile size for overbooking a fraction ``k`` of tiles (Section 4.2).

    Parameters
    ----------
    pattern : :class:`~sparseforge.sw.occupancy.Pattern` of the matrix.
    buffer : capacity B in nonzeros.
    k : target fraction of tiles that overbook, in (0, 1).
    y : samples expected in the top-k tail; ``ceil(y / k)`` tiles are sampled.
    seed : seed or ``numpy.random.Generator`` for the tile sampling.

    Only the sampled tiles are measured (binary search in the column-major
    coordinates), so the cost grows with the number of samples and only
    logarithmically with the number of nonzeros.
    """
    _check(pattern, buffer)
    if not 0 < k < 1:
        raise ParameterError(f"k={k!r}: the overbooking confidence must be in (0, 1)")
    if isinstance(y, bool) or not isinstance(y, int | np.integer) or y < 1:
        raise ParameterError(f"y={y!r}: expected a positive number of tail samples")
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    initial = TileGrid(pattern.shape, b_tile_shape(buffer / pattern.density, pattern.shape))
    n = min(samples_for(k, y), initial.n_tiles)
    samples = sampled_occupancy(pattern, initial, rng.choice(initial.n_tiles, n, replace=False))
    o_k = quantile_point(samples, k)
    # T = T0 * B / O_k; O_k = 0 (mostly empty tiles) scales as if it were 1 nonzero
    shape = b_tile_shape(initial.tile_size * buffer / max(o_k, 1), pattern.shape)
    seconds = time.perf_counter() - start
    scale = math.prod(shape) / initial.tile_size
    predicted = float(np.mean(samples * scale > buffer))
    return SwiftilesTiling("swiftiles", shape, seconds, k, y, initial.tile_shape, samples, o_k,
                           predicted)
