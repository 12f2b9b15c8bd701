"""Host planning of W X on Eureka: what a sub-array or a systolic array is sent (Sections 3-3.3).

:func:`plan` prepares one run on a sub-array (or one systolic row): the
weights compacted, placed by optimal SUDS and rotated (or in place, for the
dense mode), encoded as block records (:meth:`~.eureka_format.EurekaFormat.records`),
and each block's input slab (:func:`slabs_for`). :func:`systolic_plan`
splits that work over the systolic rows by the systolic schedule
(:mod:`.systolic`) and adds the slot descriptors.

Empty blocks (no nonzero) are not sent: they cost the optimal schedule no
cycle. The dense mode sends every block, with zero column metadata (the
array must select input row t on cycle t itself).
"""

from dataclasses import dataclass, replace

import numpy as np

from . import systolic
from .compaction import compact
from .eureka_format import EurekaFormat
from .suds import displace, in_place, optimal


@dataclass(frozen=True, eq=False)
class Plan:
    """One run of W X on a sub-array: what is sent, in order.

    Attributes
    ----------
    weights : [M, K] int64, activations : [K, N] int64.
    grid : the block grid of W.
    placed : the :class:`~.suds.DisplacedBlocks` of every block of W, as sent.
    ids : [nsent] block numbers sent, in order.
    records : the sent blocks' filter records (ints, :meth:`EurekaFormat.records`).
    slabs : [nsent, 4P, N] their input slabs.
    block_cycles : [nsent] each sent block's critical path.
    cycles : the host model's cycles: their sum.
    dense : run in dense mode.
    """

    weights: np.ndarray
    activations: np.ndarray
    grid: tuple
    placed: object
    ids: np.ndarray
    records: list
    slabs: np.ndarray
    block_cycles: np.ndarray
    cycles: int
    dense: bool

    def only(self, ids):
        """This plan for the sent blocks numbered ``ids`` alone, in that order."""
        where = {int(b): i for i, b in enumerate(self.ids)}
        sent = [where[int(b)] for b in ids]
        cycles = self.block_cycles[sent]
        return replace(self, ids=np.asarray(ids, dtype=np.int64),
                       records=[self.records[i] for i in sent], slabs=self.slabs[sent],
                       block_cycles=cycles, cycles=int(cycles.sum()))


def plan(weights, activations, compaction, value_width=8, dense=False, send_empty=False):
    """Plan W X (``weights`` int M x K, scipy or dense; ``activations`` int K x N).

    ``send_empty`` also sends the empty blocks (each passes in one cycle). Every
    block of the grid is placed, so the grid is limited as in :func:`~.compaction.compact`.
    """
    compacted = compact(weights, compaction, empty=True)
    if dense:
        # Dense mode needs no metadata: send zero columns so the array must count.
        placed = in_place(compacted)
        placed = replace(placed, columns=np.zeros_like(placed.columns))
    else:
        placed = displace(compacted, optimal(compacted.counts))
    sent = dense or send_empty
    ids = np.arange(len(placed.cycles)) if sent else np.flatnonzero(placed.cycles)
    slabs = slabs_for(placed, activations, compacted.grid)
    records = EurekaFormat(compaction, value_width).records(placed)
    dense_weights = weights.toarray() if hasattr(weights, "toarray") else np.asarray(weights)
    return Plan(weights=dense_weights.astype(np.int64),
                activations=np.asarray(activations, dtype=np.int64), grid=compacted.grid,
                placed=placed, ids=ids, records=[records[i] for i in ids], slabs=slabs[ids],
                block_cycles=placed.cycles[ids], cycles=int(placed.cycles[ids].sum()),
                dense=dense)


def slabs_for(blocks, activations, grid):
    """``[nblocks, 4P, columns]``: the input rows of ``activations`` each block multiplies.

    A block in block column ``c`` covers weight columns ``4P * c`` onward, so
    it takes those rows of the K x N activations, zero-padded past K.
    """
    width = blocks.values.shape[2]
    activations = np.asarray(activations, dtype=np.int64)
    padded = np.zeros((grid[1] * width, activations.shape[1]), dtype=np.int64)
    padded[:len(activations)] = activations
    return padded.reshape(grid[1], width, -1)[blocks.block_cols]


@dataclass(frozen=True, eq=False)
class SystolicPlan:
    """W X on ``len(rows)`` systolic rows.

    Attributes
    ----------
    slots : [nslots, rows] int64, blocks per systolic row in each slot.
    rows : one :class:`Plan` per systolic row, its blocks in slot order.
    cycles, bubbles : the schedule's (:class:`~.systolic.SystolicSchedule`).
    """

    slots: np.ndarray
    rows: list
    cycles: int
    bubbles: int


def systolic_plan(weights, activations, compaction, rows, value_width=8, scheduled=True):
    """Plan W X on a systolic array: optimal SUDS, then systolic scheduling (or in order).

    ``activations`` has 4 columns per sub-array of a systolic row.
    """
    work = plan(weights, activations, compaction, value_width)
    cycles = np.zeros(work.grid[0] * work.grid[1], dtype=np.int64)
    cycles[work.ids] = work.block_cycles
    arrange = systolic.schedule if scheduled else systolic.in_order
    schedule = arrange(cycles.reshape(work.grid), rows)
    blocks = schedule.blocks  # [slots, rows, PER_SLOT], -1 for none
    per_row = [work.only(blocks[:, r][blocks[:, r] >= 0]) for r in range(rows)]
    return SystolicPlan(slots=(blocks >= 0).sum(axis=2), rows=per_row,
                        cycles=schedule.cycles, bubbles=schedule.bubbles)
