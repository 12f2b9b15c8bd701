"""HYTE's sampling estimators for ``C = A B`` (HYTE Section 5.1, Algorithms 1-2), and
the exact figures they estimate.

- *effMAC*, the effectual multiply-accumulates: ``sum_k nnz(A[:, k]) nnz(B[k, :])``.
  Estimated from a sample ``S_I`` of A's rows and ``S_J`` of B's columns, scaled by the
  sampling fractions (Algorithm 2, ESTEFFMAC).
- *nnzCTk*, C's nonzero traffic when the contracted dimension is tiled by ``T_k``: each
  k-tile produces its own partial C, so ``nnzCTk = sum_t nnz(A[:, t] B[t, :])`` (``T_k =
  K``: nnz(C); ``T_k = 1``: effMAC). Estimated with k-minimum values (Algorithm 2,
  ESTNNZCTK): every sampled product pair ``(i, j)`` gets the hash ``(h1(i) - h2(j)) mod
  1``; with ``v`` the ``sk``-th smallest over the distinct pairs, a tiling's estimate is
  the (pair, tile) pairs hashed at most ``v``, over ``v`` and the sampling fractions.
  One pass finds the pairs under ``v`` with their finest tile; each coarser ``T_k``
  merges adjacent tiles (the paper's heaps of the finest tiles, merged pairwise).

Rows and columns that hold no nonzeros add nothing to either figure, so the samples are
drawn from those that do (an unbiased estimate with less variance, and host memory that
follows the nonzeros: a 10^12-row matrix of three entries is estimated in milliseconds).
Deterministic under ``seed``. The paper's defaults are ``sp = 1/sqrt(N)`` and ``sk =
sqrt(N)``; small dimensions leave few sampled rows and few minimum values, so ours
samples at least ``min_rows`` rows and columns and keeps at least ``min_sk`` values,
which halves the error where sqrt(N) is small (measured in ``bench hyte``).
"""

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError

MIN_ROWS = 256
MIN_SK = 1024
ROUND_PRODUCTS = 8
"""Sampled products per kept minimum value below which the sample is doubled."""
FRACTION_BITS = 53


def _pattern(matrix, fmt):
    """``matrix``'s nonzero pattern as a scipy array of ``fmt`` with 1.0 values."""
    m = sp.csr_array(matrix) if fmt == "csr" else sp.csc_array(matrix)
    m.sum_duplicates()
    m.eliminate_zeros()
    return type(m)((np.ones(m.nnz), m.indices, m.indptr), shape=m.shape)


def _occupied(a, b):
    """A's rows and B's columns that hold nonzeros, as patterns over only those rows and
    columns and the ``k`` either holds (CSR of A's rows, CSC of B's columns), and the
    ``k`` themselves: memory follows the nonzeros, not the dimensions."""
    a, b = sp.coo_array(a), sp.coo_array(b)
    a_held, b_held = a.data != 0, b.data != 0
    a_row, a_col = a.row[a_held], a.col[a_held]
    b_row, b_col = b.row[b_held], b.col[b_held]
    rows, a_i = np.unique(a_row, return_inverse=True)
    cols, b_j = np.unique(b_col, return_inverse=True)
    ks, k = np.unique(np.concatenate([a_col, b_row]), return_inverse=True)
    a_rows = _pattern(sp.coo_array((np.ones(len(a_i)), (a_i, k[:len(a_i)])),
                                   shape=(len(rows), len(ks))), "csr")
    b_cols = _pattern(sp.coo_array((np.ones(len(b_j)), (k[len(a_i):], b_j)),
                                   shape=(len(ks), len(cols))), "csc")
    return a_rows, b_cols, ks


def _distinct(first, second):
    """How many distinct ``(first, second)`` pairs the two arrays hold."""
    order = np.lexsort((second, first))
    first, second = first[order], second[order]
    return int(len(first) > 0) + int(np.count_nonzero((np.diff(first) != 0)
                                                      | (np.diff(second) != 0)))


def check_pair(a, b):
    """Refuse a pair whose inner dimensions differ (ParameterError naming both)."""
    if a.shape[1] != b.shape[0]:
        raise ParameterError(f"A is {a.shape[0]} x {a.shape[1]} and B is {b.shape[0]} x "
                             f"{b.shape[1]}: A's columns must equal B's rows")


def tile_sizes(k):
    """The ``T_k`` HYTE considers: 1, 2, 4, ... up to and including ``k``."""
    sizes = [1 << n for n in range(max(1, k).bit_length()) if (1 << n) < k]
    return [*sizes, max(1, k)]


def exact_eff_mac(a, b):
    """effMAC of ``A B``: ``sum_k nnz(A[:, k]) nnz(B[k, :])``."""
    check_pair(a, b)
    a_rows, b_cols, ks = _occupied(a, b)
    per_a = np.bincount(a_rows.indices, minlength=len(ks)).astype(np.int64)
    per_b = np.bincount(b_cols.indices, minlength=len(ks)).astype(np.int64)
    return int(per_a @ per_b)


def exact_nnz_ctk(a, b, sizes=None):
    """``{T_k: sum_t nnz(A[:, t] B[t, :])}`` for each tile size, by scipy's SpGEMM: the
    k-tiles' products stacked as row blocks of one product (A's row ``i`` of tile ``t``
    becomes a row of its own; only the rows that hold entries, so memory follows the
    nonzeros)."""
    check_pair(a, b)
    sizes = sizes or tile_sizes(a.shape[1])
    a_rows, b_cols, ks = _occupied(a, b)
    a, b = a_rows.tocoo(), b_cols.tocsr()
    out = {}
    for size in sizes:
        _, rows = np.unique(np.stack([ks[a.col] // size, a.row]), axis=1,
                            return_inverse=True)
        stacked = sp.csr_array((a.data, (rows.ravel(), a.col)),
                               shape=(int(rows.max(initial=-1)) + 1, a.shape[1]))
        out[size] = int((stacked @ b).nnz)
    return out


def _hash(indices, seed, salt):
    """A fixed-point hash of ``indices`` into [0, 1) (splitmix64), seeded."""
    x = (np.asarray(indices, dtype=np.uint64) + np.uint64((seed * 2 + salt) * 0x9E3779B97F4A7C15
                                                          % (1 << 64)))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(64 - FRACTION_BITS)).astype(np.float64) / float(1 << FRACTION_BITS)


def _sample(n, rng, min_rows):
    """A sorted sample of ``max(sqrt(n), min_rows)`` of ``range(n)`` (all of it if fewer),
    without replacement, and its fraction."""
    take = min(n, max(math.isqrt(n), min_rows))
    chosen = np.sort(rng.choice(n, size=take, replace=False)) if take < n else np.arange(n)
    return chosen, take / n if n else 1.0


@dataclass(frozen=True)
class Estimate:
    """HYTE's estimates for ``C = A B``: ``eff_mac``, ``nnz_ctk`` (``{T_k: estimate}``),
    the sample sizes and fractions, and ``sk``."""

    eff_mac: float
    nnz_ctk: dict
    rows: int
    cols: int
    fraction_i: float
    fraction_j: float
    sk: int
    pairs: int          # sampled (i, k, j) products

    @property
    def nnz_c(self):
        """nnz(C) (no tiling of k)."""
        return self.nnz_ctk[max(self.nnz_ctk)]


def estimate(a, b, seed=0, min_rows=MIN_ROWS, min_sk=MIN_SK, sizes=None):
    """The :class:`Estimate` of effMAC and nnzCTk for ``C = A B``."""
    check_pair(a, b)
    sizes = sizes or tile_sizes(a.shape[1])
    a_rows, b_cols, ks = _occupied(a, b)
    (n_i, n_k), n_j = a_rows.shape, b_cols.shape[1]
    sk = max(math.isqrt(max(n_i, n_j)), min_sk)
    # Sampling rounds: while the sample holds too few products to measure C, sample
    # twice the rows and columns afresh (a second round, as the issue suggests).
    take = min_rows
    while True:
        rng = np.random.default_rng([seed, take])
        rows, sp_i = _sample(n_i, rng, take)
        cols, sp_j = _sample(n_j, rng, take)
        a_s = _pattern(a_rows[rows], "csc")                 # sampled rows, by k
        b_s = _pattern(b_cols[:, cols], "csr")              # sampled columns, by k
        per_a = np.diff(a_s.indptr).astype(np.int64)
        per_b = np.diff(b_s.indptr).astype(np.int64)
        products = int(per_a @ per_b)
        if products >= ROUND_PRODUCTS * sk or (len(rows) == n_i and len(cols) == n_j):
            break
        take *= 2
    scale = 1.0 / (sp_i * sp_j)
    eff_mac = products * scale

    # Every sampled product (i, k, j): A's entries of column k against B's of row k.
    pairs = per_a * per_b
    total = products
    if total == 0:
        return Estimate(0.0, dict.fromkeys(sizes, 0.0), len(rows), len(cols), sp_i, sp_j,
                        sk, 0)
    k_of = np.repeat(np.arange(n_k), pairs)                 # a position in ks
    start = np.cumsum(pairs) - pairs
    offset = np.arange(total) - np.repeat(start, pairs)
    i = a_s.indices[a_s.indptr[k_of] + offset // np.repeat(per_b, pairs)]
    j = b_s.indices[b_s.indptr[k_of] + offset % np.repeat(per_b, pairs)]
    h_i, h_j = _hash(rows[i], seed, 1), _hash(cols[j], seed, 2)
    value = np.mod(h_i - h_j, 1.0)
    pair = i.astype(np.int64) * len(cols) + j

    # The sk-th smallest value over distinct pairs; keep the products at or under it.
    _, first = np.unique(pair, return_index=True)
    ranked = np.sort(value[first])
    exact = len(ranked) <= sk
    cut = ranked[-1] if exact else ranked[sk - 1]
    kept = value <= cut
    pair, k_kept = pair[kept], ks[k_of[kept]]
    factor = scale if exact else scale * (sk - 1) / sk / cut
    counts = {size: _distinct(pair, k_kept // size) * factor for size in sizes}
    return Estimate(eff_mac, counts, len(rows), len(cols), sp_i, sp_j, sk, total)


def relative_error(estimated, exact):
    """``(estimated - exact) / exact`` (0 where both are 0)."""
    if exact == 0:
        return 0.0 if estimated == 0 else math.inf
    return (estimated - exact) / exact
