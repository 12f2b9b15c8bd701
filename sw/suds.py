"""Single-step uni-directional displacement (SUDS) work assignment (Eureka Sections 3.1-3.2).

After compaction a block's cycles are the length of its longest row (one
compacted column is broadcast per cycle, outer product, output stationary).
SUDS shortens that critical path: every value either stays in its row or is
*displaced* to the next row (the last row wraps to the first); a displaced
value is not moved again, and its partial product is accumulated back in its
original row. A row with ``c`` values that displaces ``d`` of them and
receives ``d_above`` has load ``c - d + d_above``; the block takes
``max(load)`` cycles. Which of a row's values move does not change any load,
so the optimum depends only on the per-row counts: everything here works on a
``[nblocks, p]`` array of counts (p = 4 rows), vectorized over blocks.

- :func:`decide`: the paper's Algorithm 1, the decision problem for a
  critical path K, trying each *slack row* as the *base row*.
- :func:`optimal`: :func:`decide` inside a binary search over K from
  ``ceil(nnz / p)`` (:func:`ideal_cycles`) to the longest row.
- :func:`greedy`: the baseline of Figure 7(b) / Figure 12's Greedy SUDS.
- :func:`brute_force_cycles`: every displacement choice, for tests.
- :func:`displace`: which values move, placed on MAC rows and cycles, rotated
  so the base row sits on the last MAC row (which then needs no SUDS
  hardware, Section 3.2).
- :func:`in_place`: no compaction, no displacement: the dense baseline's
  placement, which the same array runs in its dense mode.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .compaction import ROWS, assemble, block_grid


@dataclass(frozen=True, eq=False)
class Assignment:
    """A SUDS work assignment for many blocks.

    Attributes
    ----------
    counts : [nblocks, p] values per block row before displacement.
    displaced : [nblocks, p] how many values row ``i`` displaces to row
        ``(i + 1) % p``; its last ones in column order.
    base_row : [nblocks] a row that displaces nothing.
    """

    counts: np.ndarray
    displaced: np.ndarray
    base_row: np.ndarray

    @cached_property
    def loads(self):
        """[nblocks, p] values each row multiplies: kept plus received from the row above."""
        return self.counts - self.displaced + np.roll(self.displaced, 1, axis=1)

    @cached_property
    def cycles(self):
        """[nblocks] the critical path: the longest load."""
        return self.loads.max(axis=1, initial=0)

    @property
    def rotation(self):
        """[nblocks] rows to rotate so the base row lands on the last MAC row.

        MAC row ``m`` holds block row ``(m + rotation) % p``.
        """
        return (self.base_row + 1) % self.counts.shape[1]


def ideal_cycles(counts):
    """[nblocks] the one-sided ideal: ``ceil(nnz / p)`` per block, any row taking any value."""
    counts = np.asarray(counts, dtype=np.int64)
    return -(-counts.sum(axis=1) // counts.shape[1])


def decide(counts, k):
    """Algorithm 1: can each block fit in ``k`` cycles with SUDS?

    For each slack row (length <= k) taken as the base row, walk upwards: the
    current row absorbs as many values from the row above as its slack
    allows, then the row above becomes current; the try fails if a row still
    holds more than k of its own values. The first base row that works wins.

    The paper's listing runs p iterations; the last one would displace out of
    the base row itself, values it received included, which SUDS forbids and
    which never changes the answer, so the walk here stops after p - 1.

    Parameters
    ----------
    counts : [nblocks, p] values per block row.
    k : candidate critical path, a scalar or one per block.

    Returns
    -------
    fits : [nblocks] bool.
    base_row : [nblocks] the base row found (0 where none fits).
    displaced : [nblocks, p] the minimal assignment found (zero where none fits).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n, p = counts.shape
    k = np.broadcast_to(np.asarray(k, dtype=np.int64), (n,))
    fits = np.zeros(n, dtype=bool)
    base_row = np.zeros(n, dtype=np.int64)
    displaced = np.zeros((n, p), dtype=np.int64)
    for base in range(p):
        trial = np.zeros((n, p), dtype=np.int64)
        ok = counts[:, base] <= k  # only a slack row can be a base row
        load = counts[:, base]
        for step in range(1, p):
            above = (base - step) % p
            slack = np.maximum(k - load, 0)
            moved = np.minimum(counts[:, above], slack)  # the paper's n_disp
            trial[:, above] = moved
            load = counts[:, above] - moved  # what the row above keeps of its own
            ok &= load <= k
        new = ok & ~fits
        base_row[new] = base
        displaced[new] = trial[new]
        fits |= ok
    return fits, base_row, displaced


def optimal(counts):
    """The minimum-cycle SUDS assignment of every block.

    Binary search on K between ``ceil(nnz / p)`` (no row can be shorter) and
    the longest row (always feasible: nothing moves), every block at once,
    deciding each candidate with :func:`decide`; O(p^2 log 4P) per block.
    """
    counts = np.asarray(counts, dtype=np.int64)
    lo = ideal_cycles(counts)
    hi = counts.max(axis=1, initial=0)
    while True:
        open_ = np.flatnonzero(lo < hi)
        if not len(open_):
            break
        mid = (lo[open_] + hi[open_]) // 2
        fits = decide(counts[open_], mid)[0]
        hi[open_[fits]] = mid[fits]
        lo[open_[~fits]] = mid[~fits] + 1
    fits, base_row, displaced = decide(counts, lo)
    assert fits.all(), "the longest row is always feasible"
    return Assignment(counts, displaced, base_row)


def greedy(counts):
    """The greedy SUDS baseline (Figure 7(b), Figure 12's Greedy SUDS).

    Target T = ``ceil(nnz / p)``. One pass over the rows top to bottom (the
    last row wrapping to the first): a row holding more than T pushes its
    excess to the row below, as much as that row has room below T. A row
    never looks past its neighbour, so it cannot make room by pushing onward
    first, which is why it can miss the optimum. A row that started within T
    never pushes, so a base row always exists.
    """
    counts = np.asarray(counts, dtype=np.int64)
    p = counts.shape[1]
    target = ideal_cycles(counts)
    loads = counts.copy()
    displaced = np.zeros_like(counts)
    for row in range(p):
        below = (row + 1) % p
        excess = np.maximum(loads[:, row] - target, 0)
        moved = np.minimum(excess, np.maximum(target - loads[:, below], 0))
        displaced[:, row] = moved
        loads[:, row] -= moved
        loads[:, below] += moved
    base_row = np.argmax(displaced == 0, axis=1)
    return Assignment(counts, displaced, base_row)


def brute_force_cycles(counts):
    """[nblocks] minimum cycles over *every* displacement choice (reference for tests).

    Enumerates all ``(d0, d1, d2, d3)`` with ``0 <= d_i <= counts_i`` for a
    4-row block. The cycles are ``max(A(d3, d0), B(d0, d1), C(d1, d2),
    D(d2, d3))`` (one load per row), so for fixed ``(d0, d2)`` the choices of
    d1 and d3 touch disjoint loads and are minimized separately; the min over
    the full grid is unchanged, only cheaper to evaluate.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape[1] != 4:
        raise ValueError("brute_force_cycles handles 4-row blocks")
    cap = int(counts.max(initial=0))
    d = np.arange(cap + 1, dtype=np.int16)
    out = np.empty(len(counts), dtype=np.int64)
    chunk = max(1, (1 << 22) // (cap + 1) ** 3)
    for start in range(0, len(counts), chunk):
        c = counts[start:start + chunk].astype(np.int16)[:, :, None]  # [m, 4, 1]
        allowed = d <= c  # [m, 4, cap + 1]
        # f[d0, d2]: rows 1 and 2 through d1; g[d2, d0]: rows 3 and 0 through d3.
        f = _through(c[:, 1], c[:, 2], allowed[:, 1], d)
        g = _through(c[:, 3], c[:, 0], allowed[:, 3], d)
        total = np.maximum(f, g.transpose(0, 2, 1))
        total = np.where(allowed[:, 0, :, None] & allowed[:, 2, None, :], total, _NEVER)
        out[start:start + chunk] = total.min(axis=(1, 2))
    return out


_NEVER = np.int16(np.iinfo(np.int16).max)


def _through(upper, lower, allowed, d):
    """``[m, a, b]``: min over the displacement ``x`` from ``upper`` to ``lower`` of the
    larger load, ``upper`` receiving ``a`` from above and ``lower`` displacing ``b`` below."""
    a, x, b = d[:, None, None], d[None, :, None], d[None, None, :]
    upper_load = upper[:, :, None, None] - x + a
    lower_load = lower[:, :, None, None] - b + x
    loads = np.maximum(upper_load, lower_load)
    return np.where(allowed[:, None, :, None], loads, _NEVER).min(axis=2)


@dataclass(frozen=True, eq=False)
class DisplacedBlocks:
    """The displaced filter matrix O of some blocks, as the MAC rows execute it.

    Rows are MAC rows after rotation: MAC row ``m`` of block ``b`` holds block
    row ``(m + rotation[b]) % 4``, so the base row sits on MAC row 3, which
    never displaces, and no value ever wraps from MAC row 3 to MAC row 0. At
    cycle ``t`` MAC row ``m`` multiplies ``values[b, m, t]`` (zero: idle)
    by input row ``columns[b, m, t]`` of the block's 4P-row input slab.

    Attributes
    ----------
    shape, compaction : as in :class:`~.compaction.Compacted`.
    values : [nblocks, 4, 4P] operand per MAC row and cycle.
    columns : [nblocks, 4, 4P] column metadata of that operand.
    displaced : [nblocks, 4, 4P] bool: the value belongs to the MAC row
        above, where its product is accumulated.
    rotation : [nblocks] 2-bit rotation.
    cycles : [nblocks] the block's critical path.
    block_rows, block_cols : [nblocks] int64, each block's position on the
        grid (the blocks of a :class:`~.compaction.Compacted`, or all of them).
    """

    shape: tuple[int, int]
    compaction: int
    values: np.ndarray
    columns: np.ndarray
    displaced: np.ndarray
    rotation: np.ndarray
    cycles: np.ndarray
    block_rows: np.ndarray
    block_cols: np.ndarray

    @property
    def grid(self):
        """(block rows, block columns) of the zero-padded matrix."""
        return block_grid(self.shape, self.compaction)

    def block_entries(self):
        """``(block, row, column, value)`` of every value the blocks run (in their first
        ``cycles`` cycles), back in its own block row, in block order (block, row,
        column), as :meth:`~.compaction.Compacted.positions` lists them."""
        block, cycle = np.nonzero(np.arange(self.values.shape[2]) < self.cycles[:, None])
        slot, mac_row = np.nonzero(self.values[block, :, cycle])
        block, cycle = block[slot], cycle[slot]
        row = (mac_row + self.rotation[block] - self.displaced[block, mac_row, cycle]) % ROWS
        column = self.columns[block, mac_row, cycle]
        order = np.argsort((block * ROWS + row) * (ROWS * self.compaction) + column)
        return (block[order], row[order], column[order],
                self.values[block[order], mac_row[order], cycle[order]])

    def matrix(self):
        """The weight matrix these blocks compute, as a canonical ``coo_array``."""
        block, row, column, value = self.block_entries()
        return assemble(value, self.block_rows[block], self.block_cols[block], row, column,
                        ROWS * self.compaction, self.shape)


def displace(compacted, assignment):
    """Place every value of ``compacted`` on a MAC row and cycle under ``assignment``.

    Row ``i`` keeps its first ``counts - displaced`` values in cycles
    0, 1, ...; its last ``displaced`` values follow, in column order, the
    values row ``i + 1`` keeps. Then the rows rotate by
    ``assignment.rotation``. Vectorized over all values.
    """
    counts = compacted.counts
    if not np.array_equal(assignment.counts, counts):
        raise ValueError("the assignment was computed for different row counts")
    block, lane, slot = compacted.positions()
    kept = counts - assignment.displaced
    below = (lane + 1) % ROWS
    moved = slot >= kept[block, lane]
    row = np.where(moved, below, lane)
    cycle = np.where(moved, kept[block, below] + slot - kept[block, lane], slot)
    rotation = assignment.rotation
    at = block, (row - rotation[block]) % ROWS, cycle
    shape = (len(counts), ROWS, compacted.width)
    values = np.zeros(shape, dtype=compacted.values.dtype)
    columns = np.zeros(shape, dtype=np.uint8)
    flags = np.zeros(shape, dtype=bool)
    values[at] = compacted.values
    columns[at] = compacted.columns
    flags[at] = moved
    return DisplacedBlocks(shape=compacted.shape, compaction=compacted.compaction,
                           values=values, columns=columns, displaced=flags,
                           rotation=rotation, cycles=assignment.cycles,
                           block_rows=compacted.block_rows, block_cols=compacted.block_cols)


def in_place(compacted):
    """Every value of ``compacted`` at the cycle of its own column: the dense placement.

    The dense tensor core broadcasts column ``t`` of the block on cycle ``t``
    (Figure 2(b)), so every block takes 4P cycles whatever its sparsity, and
    nothing is displaced or rotated. Vectorized over all values.
    """
    n, width = len(compacted.counts), compacted.width
    block, lane, _ = compacted.positions()
    values = np.zeros((n, ROWS, width), dtype=compacted.values.dtype)
    values[block, lane, compacted.columns] = compacted.values
    return DisplacedBlocks(shape=compacted.shape, compaction=compacted.compaction,
                           values=values,
                           columns=np.broadcast_to(np.arange(width, dtype=np.uint8),
                                                   values.shape).copy(),
                           displaced=np.zeros(values.shape, dtype=bool),
                           rotation=np.zeros(n, dtype=np.int64),
                           cycles=np.full(n, width, dtype=np.int64),
                           block_rows=compacted.block_rows, block_cols=compacted.block_cols)
