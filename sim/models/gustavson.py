"""Behavioural model of the Gustavson SpGEMM engine (HYTE Section 2): one column tile.

C's row i is the sum, over A's nonzeros A(i, k), of B's row k scaled by A(i, k)
(Gustavson's row-wise dataflow). Here, as in the engine, each scaled row is merged into
a dense accumulator over the tile's ``cols`` columns with an occupancy bitmap (a column's
first product writes, later ones add), emptied in column order when the row ends: groups
of ``lanes`` columns with an occupied one, each a vector through MINT's compactor, whose
zero detection drops a sum that cancelled to 0 (as scipy's product does).

Beside C it counts the work the RTL is meant to do, per row of A (:class:`RowWork`), and
:func:`cycles` turns the counts into the engine's cycles: the base a host model of the
accelerator builds on.
"""

from dataclasses import dataclass

import numpy as np

PIPELINE = 4
"""Cycles from a row's last product taken to its drain's first vector: the multiply,
the accumulator read, its registered data and the add and write (``hw/gustavson.py``)."""

FILL = 13
"""Cycles a job spends outside its rows: its first entry through the deal and request
queues to the PE's first B element, and its last drain vector through zero detection,
the prefix sum, the compactor and the output queues to the last word of C."""


@dataclass(frozen=True)
class RowWork:
    """What one row of A costs the engine: B rows requested, B elements taken (each one
    multiply), empty B rows answered, drain vectors (occupied groups of ``lanes``
    columns, at least 1) and C's nonzeros."""

    requests: int
    multiplies: int
    empty_rows: int
    vectors: int
    nonzeros: int

    @property
    def items(self):
        """Items the PE takes from its B port: elements and empty answers (an empty row
        of A takes one slot)."""
        return max(self.multiplies + self.empty_rows, 1)


def tile(a, b, offset, cols, lanes):
    """``((rows, cols, values), work)``: C = A·B over columns ``offset .. offset + cols
    - 1`` as coordinate arrays in row-major order (cancelled sums dropped), and a
    :class:`RowWork` per row of A.

    A and B are integer CSRs (anything with ``shape``, ``indptr``, ``indices`` and
    ``data``, as :func:`~sparseforge.sw.gustavson.operands` gives); B may hold columns
    past the tile, which are read and dropped, as the engine does."""
    acc = np.zeros(cols, dtype=object)          # exact: Python ints
    occupied = np.zeros(cols, dtype=bool)
    rows, cols_out, values, work = [], [], [], []
    for i in range(a.shape[0]):
        requests = multiplies = empty_rows = 0
        for p in range(a.indptr[i], a.indptr[i + 1]):
            k, scale = a.indices[p], int(a.data[p])
            requests += 1
            lo, hi = b.indptr[k], b.indptr[k + 1]
            if lo == hi:
                empty_rows += 1
            for q in range(lo, hi):
                multiplies += 1
                j = int(b.indices[q]) - offset
                if not 0 <= j < cols:
                    continue
                product = scale * int(b.data[q])
                acc[j] = acc[j] + product if occupied[j] else product
                occupied[j] = True
        groups = occupied.reshape(-1, lanes).any(axis=1)       # cols: a multiple of lanes
        kept = np.flatnonzero(occupied & (acc != 0))
        rows += [i] * len(kept)
        cols_out += (kept + offset).tolist()
        values += [int(v) for v in acc[kept]]
        work.append(RowWork(requests, multiplies, empty_rows,
                            max(int(groups.sum()), 1), len(kept)))
        occupied[:] = False
    return (np.array(rows, dtype=np.int64), np.array(cols_out, dtype=np.int64),
            np.array(values, dtype=np.int64)), work


def cycles(work, pes):
    """The engine's cycles for one job from its rows' work, rows dealt to the ``pes``
    PEs in turn: each PE takes one B item a cycle, waits :data:`PIPELINE` cycles for its
    row's last sum and drains a vector a cycle, row after row, and A's stream brings one
    entry a cycle to them all; the job ends with its slowest PE (or its last entry),
    :data:`FILL` cycles on. The B port answers at once and C is taken at once; a PE that
    waits for its turn at the reorder is not modelled. For one PE the RTL takes these
    cycles within two (a full word's flush through the compactor, not counted here, may
    or may not hold a drain back)."""
    load = np.zeros(pes, dtype=np.int64)
    for i, w in enumerate(work):
        load[i % pes] += w.items + PIPELINE + w.vectors
    entries = sum(max(w.requests, 1) for w in work)     # A's stream: one entry a cycle
    return max(int(load.max()), entries) + FILL
