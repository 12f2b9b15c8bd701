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

from ..core.errors import ParameterError
from .occupancy import first_of_runs
from .wire import PER_SLOT

MAX_SCHEDULE = 1 << 26
"""Most entries (slots x rows x PER_SLOT) a listed :class:`SystolicSchedule` may hold."""

CHUNK = 1 << 20
"""Blocks :func:`totals` takes at a time (whole bands)."""


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


@dataclass(frozen=True)
class SystolicTotals:
    """A schedule added up: its ``cycles``, ``work`` and number of ``slots`` on ``rows``."""

    rows: int
    cycles: int
    work: int
    slots: int

    @property
    def bubbles(self):
        """Idle systolic-row cycles: ``rows * cycles - work``."""
        return self.rows * self.cycles - self.work


def in_order(cycles, rows=2):
    """Unscheduled: one block per slot, each systolic row in block-column order.

    ``cycles`` is the [block rows, block columns] grid of per-block cycles.
    """
    return _listed_schedule(cycles, rows, _in_order)


def schedule(cycles, rows=2):
    """Systolic scheduling: best fit decreasing within each band (see the module docstring)."""
    return _listed_schedule(cycles, rows, _best_fit)


def totals(block_rows, cycles, rows=2, scheduled=True):
    """:class:`SystolicTotals` of :func:`schedule` (or :func:`in_order`) from the blocks
    alone: their block rows and cycles, listed in block order (row-major); blocks
    left out take 0 cycles. Bands add up independently, so they are taken
    :data:`CHUNK` blocks at a time: memory and time follow the blocks listed."""
    rows = check_rows(rows)
    block_rows, cycles = np.asarray(block_rows, dtype=np.int64), np.asarray(cycles)
    if cycles.ndim != 1 or cycles.shape != block_rows.shape or (cycles < 0).any():
        raise ParameterError("block cycles must be non-negative, one per block row listed")
    if (block_rows[1:] < block_rows[:-1]).any():
        raise ParameterError("blocks must be listed in block order (row-major)")
    arrange = _best_fit if scheduled else _in_order
    length = slots = 0
    for part in _bands_at_a_time(block_rows, rows):
        listed = cycles[part] > 0
        (_, run_length, count), _ = arrange(block_rows[part][listed],
                                            cycles[part][listed].astype(np.int64), rows,
                                            places=False)
        length += int((run_length * count).sum())
        slots += int(count.sum())
    return SystolicTotals(rows, length, int(cycles.sum(dtype=np.int64)), slots)


def _bands_at_a_time(block_rows, rows):
    """Slices of about :data:`CHUNK` sorted ``block_rows``, each ending at a band's end."""
    start = 0
    while start < len(block_rows):
        stop = start + CHUNK
        if stop < len(block_rows):
            band = block_rows[stop] // rows * rows  # the first block row of its band
            stop = int(np.searchsorted(block_rows, band))
            if stop <= start:  # a band longer than CHUNK: whole
                stop = int(np.searchsorted(block_rows, band + rows))
        yield slice(start, stop)
        start = stop


def uniform_totals(grid, cycles, rows=2):
    """:class:`SystolicTotals` of a ``grid`` = (block rows, block columns) whose every block
    takes ``cycles`` (the dense mode), in order or scheduled alike: each band runs one
    block per row and slot."""
    rows = check_rows(rows)
    slots = -(-grid[0] // rows) * grid[1] if cycles else 0
    return SystolicTotals(rows, slots * cycles, grid[0] * grid[1] * cycles, slots)


def _listed_schedule(cycles, rows, arrange):
    """The :class:`SystolicSchedule` of a grid of per-block cycles, every slot listed."""
    grid = _grid(cycles)
    rows = check_rows(rows)
    ids = np.flatnonzero(grid)
    block_rows = ids // max(grid.shape[1], 1)
    (band, length, count), (source, at_band, slot, lane) = arrange(
        block_rows, grid.ravel()[ids], rows, places=True)
    nslots = int(count.sum())
    if nslots * rows * PER_SLOT > MAX_SCHEDULE:
        raise ParameterError(f"a schedule of {nslots} slots on {rows} systolic rows holds "
                             f"{nslots * rows * PER_SLOT} entries; at most {MAX_SCHEDULE}")
    order = np.argsort(band, kind="stable")  # runs band by band, each band's in time order
    band, length, count = band[order], length[order], count[order]
    band_start = (np.cumsum(count) - count)[first_of_runs(band)]
    blocks = np.full((nslots, rows, PER_SLOT), -1, dtype=np.int64)
    blocks[band_start[at_band] + slot, block_rows[source] % rows, lane] = ids[source]
    return SystolicSchedule(rows, np.repeat(length, count), blocks, int(grid.sum()))


def _bands(block_rows, rows):
    """For blocks in block order: where each non-empty block row starts, each block's row
    (numbered among the non-empty ones) and each such row's band (likewise)."""
    row_first = first_of_runs(block_rows)
    row = np.cumsum(row_first) - 1
    band = np.cumsum(first_of_runs(block_rows[row_first] // rows)) - 1
    return row_first.nonzero()[0], row, band


def _in_order(block_rows, cycles, rows, places):
    """In-order slots of blocks listed in block order, all bands at once.

    Returns ``runs`` = (band, slot length, slots), runs of equal slots in
    time order within each band, and, if ``places``, ``takes`` = (block, band,
    slot in its band, place in the slot) of every block.
    """
    row_start, row, row_band = _bands(block_rows, rows)
    band = row_band[row]
    rank = np.arange(len(row)) - row_start[row]  # the block's slot: its place in its row
    band_slots = np.zeros(len(row_band) and row_band[-1] + 1, dtype=np.int64)
    np.maximum.at(band_slots, band, rank + 1)
    slot = np.cumsum(band_slots) - band_slots
    length = np.zeros(band_slots.sum(), dtype=np.int64)
    np.maximum.at(length, slot[band] + rank, cycles)
    runs = np.repeat(np.arange(len(band_slots)), band_slots), length, np.ones_like(length)
    return runs, (np.arange(len(row)), band, rank, np.zeros_like(rank)) if places else None


def _best_fit(block_rows, cycles, rows, places):
    """Best-fit slots of blocks listed in block order, phase by phase, all bands at once.

    ``left[r, b]``: blocks of ``sizes[b]`` cycles block row ``r`` still holds
    (bin 0 holds none). In the phase of slot length L a band runs as many
    slots as its rows hold blocks of L at most; a row takes one per slot,
    then fills each slot left with its longest block and the longest that
    fits beside it, repeated while both last. Returns what :func:`_in_order`
    does.
    """
    sizes = np.append(0, np.unique(cycles))  # the block lengths that occur, ascending
    row_start, row, band = _bands(block_rows, rows)
    band_start = first_of_runs(band).nonzero()[0]
    left = np.bincount(row * len(sizes) + np.searchsorted(sizes, cycles),
                       minlength=len(band) * len(sizes)).reshape(len(band), len(sizes))
    initial = left.copy()
    done = np.zeros(len(band_start), dtype=np.int64)  # slots of the earlier phases, per band
    bins = np.arange(len(sizes))
    runs, takes = [], []
    for length_bin in range(len(sizes) - 1, 0, -1):
        length = sizes[length_bin]
        slots = np.maximum.reduceat(left[:, length_bin], band_start)
        runs.append((np.flatnonzero(slots), np.full(np.count_nonzero(slots), length),
                     slots[slots > 0]))
        own = left[:, length_bin].copy()  # slots used in this phase, per row
        if places:
            r = np.flatnonzero(own)
            takes.append((r, np.full(len(r), length_bin), initial[r, length_bin] - own[r],
                          done[band[r]], np.zeros_like(r), own[r], np.ones_like(r)))
        left[:, length_bin] = 0
        budget = slots[band] - own
        active = np.flatnonzero((budget > 0) & left[:, :length_bin].any(axis=1))
        while len(active):
            held = left[active]
            first = np.where(held > 0, bins, 0).max(axis=1)
            fits = ((held - (bins == first[:, None]) > 0)
                    & (sizes + sizes[first][:, None] <= length))
            second = np.where(fits, bins, 0).max(axis=1)
            twice, beside = second == first, (second > 0) & (second != first)
            k = np.minimum(budget[active], left[active, first] // (1 + twice))
            k[beside] = np.minimum(k[beside], left[active[beside], second[beside]])
            if places:
                at = done[band[active]] + own[active]
                skip = initial[active, first] - left[active, first]
                skip2 = initial[active, second] - left[active, second]
                takes += [(active, first, skip, at, np.zeros_like(k), k, 1 + twice),
                          (active[twice], first[twice], skip[twice] + 1, at[twice],
                           np.ones_like(k[twice]), k[twice], np.full_like(k[twice], 2)),
                          (active[beside], second[beside], skip2[beside], at[beside],
                           np.ones_like(k[beside]), k[beside], np.ones_like(k[beside]))]
            left[active, first] -= k * (1 + twice)
            left[active[beside], second[beside]] -= k[beside]
            budget[active] -= k
            own[active] += k
            active = active[(budget[active] > 0) & left[active, :length_bin].any(axis=1)]
        done += slots
    runs = tuple(np.concatenate([part[i] for part in runs] or [np.zeros(0, np.int64)])
                 for i in range(3))
    if not places:
        return runs, None
    r, c, skip, at, lane, k, stride = (
        np.concatenate([take[i] for take in takes] or [np.zeros(0, np.int64)]).astype(np.int64)
        for i in range(7))
    # each row's blocks by bin, longest first, in column order within a bin
    order = np.lexsort((-cycles, row))
    bin_start = row_start[:, None] + initial[:, ::-1].cumsum(axis=1)[:, ::-1] - initial
    each = np.repeat(np.arange(len(k)), k)
    i = np.arange(len(each)) - np.repeat(np.cumsum(k) - k, k)
    source = order[bin_start[r, c][each] + skip[each] + stride[each] * i]
    return runs, (source, band[r][each], at[each] + i, lane[each])


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
