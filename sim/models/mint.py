"""Behavioural models of the MINT building blocks (MINT Section V).

The executable specification the ``prefix_sum``, ``divmod``, ``zero_detect``,
``cluster_counter`` and ``sorter`` generators are checked against:
cycle-free and vectorized, one row per stream transfer (a vector or a
chunk), lane 0 first. Values are unsigned; results are uint64 (int64 for
counts).
"""

import numpy as np


def _wrap(values, width):
    """``values`` (uint64) modulo ``2**width``."""
    return values if width >= 64 else values & np.uint64((1 << width) - 1)


def prefix_sums(counts, last, width, inclusive=False):
    """The prefix-sum unit: ``(sums [n, N], totals [n])``.

    ``counts`` is ``[n, N]``, one vector a row; ``last[v]`` ends a sequence
    with vector ``v``, and the next vector starts again from 0. ``sums[v, i]``
    is the sum of the sequence's counts before lane ``i`` of vector ``v``
    (``inclusive``: up to and including it); ``totals[v]`` the sum through
    vector ``v``'s last lane. All modulo ``2**width``.
    """
    counts = np.asarray(counts, dtype=np.uint64)
    n, lanes = counts.shape
    last = np.asarray(last, dtype=bool)
    # Running sums over every vector (uint64 wraps modulo 2**64, a multiple of 2**width).
    through = np.cumsum(counts.reshape(-1), dtype=np.uint64).reshape(n, lanes)
    before = np.zeros(n, dtype=np.uint64)              # the running sum before vector v
    before[1:] = through[:-1, -1]
    starts = np.ones(n, dtype=bool)
    starts[1:] = last[:-1]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))  # its sequence's start
    inclusive_sums = through - before[first][:, None]
    sums = inclusive_sums if inclusive else inclusive_sums - counts
    return _wrap(sums, width), _wrap(inclusive_sums[:, -1], width)


def divmod_lanes(dividends, divisors, width):
    """The divide/modulo unit: ``(quotients, remainders)``, both ``[n, L]``.

    ``dividends`` is ``[n, L]``; ``divisors[v]`` the divisor vector ``v`` was
    accepted with. A divisor of 0 gives a quotient of ``2**width - 1`` and
    the dividend as remainder.
    """
    x = np.asarray(dividends, dtype=np.uint64)
    d = np.asarray(divisors, dtype=np.uint64)[:, None]
    zero = d == 0
    safe = np.where(zero, np.uint64(1), d)
    quotients = np.where(zero, np.uint64((1 << width) - 1), x // safe)
    return quotients, np.where(zero, x, x % safe)


def zero_detect(values):
    """Zero detection: ``(mask [n], count [n])``, bit ``i`` of ``mask[v]`` set where value
    ``i`` of vector ``v`` is nonzero."""
    nonzero = np.asarray(values) != 0
    bits = np.left_shift(np.uint64(1), np.arange(nonzero.shape[1], dtype=np.uint64))
    mask = (nonzero.astype(np.uint64) * bits).sum(axis=1, dtype=np.uint64)
    return mask, nonzero.sum(axis=1)


def cluster_counts(indices, mask, bins):
    """The cluster counter: ``[n, bins]``, how many of chunk ``v``'s indices equal each bin
    value, counting lane ``i`` only where ``mask[v, i]`` is set."""
    hits = np.asarray(indices)[:, :, None] == np.arange(bins)
    return (hits & np.asarray(mask, dtype=bool)[:, :, None]).sum(axis=1)


def stable_sort(keys, data):
    """The sorter: each chunk (row) of ``keys`` and ``data`` by ascending key, ties in
    lane order."""
    keys, data = np.asarray(keys), np.asarray(data)
    order = np.argsort(keys, axis=1, kind="stable")
    return np.take_along_axis(keys, order, axis=1), np.take_along_axis(data, order, axis=1)
