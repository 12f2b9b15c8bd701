"""Systolic scheduling of blocks onto a systolic array of 4x4 sub-arrays (Eureka Section 3.3).

Model (the paper gives the idea, Figure 10, not the machine; this is ours):

- The tensor core is ``rows`` systolic rows of 4x4 sub-arrays (2 for the
  paper's four sub-arrays per tensor core). The sub-arrays of one systolic
  row run the same filter block, each against its own inputs, so a systolic
  row is one lane of work here.
- Output stationary at tile level: block rows go to the array in *bands* of
  ``rows``; systolic row ``r`` of band ``j`` runs every block of block row
  ``j * rows + r``. Those blocks add into the same outputs, so their order
  is free; bands run one after another.
- Lockstep: the systolic rows advance together in *slots*. A slot lasts as
  long as the most work any systolic row has in it; a row with less work
  idles, and its idle cycles are *bubbles*.
- A systolic row runs at most 2 blocks per slot, back to back (the paper
  limits it to keep filter loading cheap). Empty blocks (0 cycles) are
  skipped.

:func:`in_order` is the unscheduled baseline, Figure 10(a): each row's blocks
in block-column order, one per slot. :func:`schedule` is systolic
scheduling, Figure 10(b): best fit decreasing per band; the slot lasts as
long as the longest block left in the band, and every row fills it with its
longest block that fits, then the longest that fits in the rest (blocks of
equal or complementary cycles).

Cycles are array cycles for one pass of the inputs (the sum of slot
lengths); ``rows * cycles = work + bubbles``, work being the blocks' cycles.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from .wire import PER_SLOT


@dataclass(frozen=True, eq=False)
class SystolicSchedule:
    """Slots of blocks on ``rows`` systolic rows.

    Attributes
    ----------
    rows : systolic rows.
    slot_cycles : [nslots] length of each slot, in order.
    blocks : [nslots, rows, PER_SLOT] block numbers (row-major over the block
        grid, as in :mod:`.compaction`) run in each slot by each systolic row,
        in order; -1 for none.
    work : total cycles of all blocks.
    """

    rows: int
    slot_cycles: np.ndarray
    blocks: np.ndarray
    work: int

    @property
    def cycles(self):
        """Array cycles: the sum of slot lengths."""
        return int(self.slot_cycles.sum())

    @property
    def bubbles(self):
        """Idle systolic-row cycles: ``rows * cycles - work``."""
        return self.rows * self.cycles - self.work


def in_order(cycles, rows=2):
    """Unscheduled: one block per slot, each systolic row in block-column order.

    ``cycles`` is the [block rows, block columns] grid of per-block cycles.
    Vectorized: each row's nonempty blocks are left-aligned and the slot is
    the longest of the rows' blocks at that position.
    """
    grid = _grid(cycles)
    rows = check_rows(rows)
    nbr, nbc = grid.shape
    bands = -(-nbr // rows)
    padded = np.zeros((bands * rows, nbc), dtype=np.int64)
    padded[:nbr] = grid
    ids = np.full(padded.shape, -1, dtype=np.int64)
    ids[:nbr] = np.arange(nbr * nbc).reshape(nbr, nbc)
    order = np.argsort(padded == 0, axis=1, kind="stable")
    padded = np.take_along_axis(padded, order, axis=1)
    ids = np.where(padded > 0, np.take_along_axis(ids, order, axis=1), -1)
    lengths = padded.reshape(bands, rows, nbc).max(axis=1, initial=0)
    used = lengths > 0
    blocks = np.full((int(used.sum()), rows, PER_SLOT), -1, dtype=np.int64)
    blocks[:, :, 0] = ids.reshape(bands, rows, nbc).transpose(0, 2, 1)[used]
    return SystolicSchedule(rows, lengths[used], blocks, int(grid.sum()))


def schedule(cycles, rows=2):
    """Systolic scheduling: best fit decreasing within each band (see the module docstring).

    A band's blocks are binned by cycles (at most 4P + 1 values), and a slot
    decision repeats while every bin it draws from still has blocks, so the
    work per band is bounded by the number of bins, not of blocks.
    """
    grid = _grid(cycles)
    rows = check_rows(rows)
    nbr, nbc = grid.shape
    slot_cycles = [np.zeros(0, dtype=np.int64)]
    blocks = [np.zeros((0, rows, PER_SLOT), dtype=np.int64)]
    for first in range(0, nbr, rows):
        ids = np.arange(first * nbc, min(first + rows, nbr) * nbc).reshape(-1, nbc)
        _pack_band([_Bins(grid[first + r], ids[r]) for r in range(len(ids))], rows,
                   slot_cycles, blocks)
    return SystolicSchedule(rows, np.concatenate(slot_cycles), np.concatenate(blocks),
                            int(grid.sum()))


class _Bins:
    """One systolic row's blocks in a band, binned by cycles, longest first."""

    def __init__(self, cycles, ids):
        nonempty = cycles > 0
        cycles, ids = cycles[nonempty], ids[nonempty]
        order = np.argsort(-cycles, kind="stable")
        self.ids = ids[order]
        self.left = np.bincount(cycles, minlength=1).tolist()  # blocks left per cycle count
        taken_before = np.cumsum(self.left[::-1])[::-1] - self.left  # longer blocks come first
        self.next = taken_before.tolist()

    def longest(self, limit, reserved=0):
        """The longest cycle count <= ``limit`` with a block left (beyond one ``reserved``
        of that length), else 0."""
        for length in range(min(limit, len(self.left) - 1), 0, -1):
            if self.left[length] > (length == reserved):
                return length
        return 0

    def pick(self, limit):
        """Best fit for a slot of ``limit`` cycles: the longest block, then the longest that
        fits beside it; a tuple of 0, 1 or 2 cycle counts."""
        first = self.longest(limit)
        second = self.longest(limit - first, reserved=first) if first else 0
        return tuple(length for length in (first, second) if length)

    def take(self, length, count):
        """Remove ``count`` blocks of ``length`` cycles; return their numbers."""
        start = self.next[length]
        self.next[length] += count
        self.left[length] -= count
        return self.ids[start:start + count]


def _pack_band(bins, rows, slot_cycles, blocks):
    """Append the slots of one band to ``slot_cycles`` and ``blocks``."""
    while True:
        length = max(b.longest(len(b.left)) for b in bins)
        if not length:
            return
        picks = [b.pick(length) for b in bins]
        # The same picks repeat until one of the bins they draw from runs short.
        repeat = min(b.left[c] // p.count(c) for b, p in zip(bins, picks, strict=True) for c in p)
        slot = np.full((repeat, rows, PER_SLOT), -1, dtype=np.int64)
        for r, (b, p) in enumerate(zip(bins, picks, strict=True)):
            if len(p) == PER_SLOT and p[0] == p[1]:
                slot[:, r] = b.take(p[0], PER_SLOT * repeat).reshape(repeat, PER_SLOT)
            else:
                for k, c in enumerate(p):
                    slot[:, r, k] = b.take(c, repeat)
        slot_cycles.append(np.full(repeat, length, dtype=np.int64))
        blocks.append(slot)


def _grid(cycles):
    """``cycles`` as a 2-D int64 [block rows, block columns] array of non-negative counts."""
    grid = np.asarray(cycles, dtype=np.int64)
    if grid.ndim != 2 or (grid < 0).any():
        raise ParameterError("block cycles must be a 2-D grid of non-negative counts, "
                             f"got shape {grid.shape}")
    return grid


def check_rows(rows):
    """Return ``rows`` (systolic rows) as an int >= 1, or raise :class:`ParameterError`."""
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer) or rows < 1:
        raise ParameterError(f"systolic rows={rows!r}: expected an integer >= 1")
    return int(rows)
