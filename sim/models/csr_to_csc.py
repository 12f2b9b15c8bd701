"""The CSR-to-CSC converter's cycles without stalls (MINT Section V-B1, Fig. 8c): the
model :class:`~sparseforge.hw.convert_csc.CsrToCsc`'s docstring states, checked against
the block on Amaranth's simulator.

A matrix is a *front* (its shape taken, its column ids counted, its pointers scanned) and
a *scatter* (its entries placed), then its *drain*. With two counter banks, a bank each for
two matrices, the next matrix's front runs while the drain empties the scratchpad and the
next scatter waits for both; with one, the next shape is taken as the drain ends. From the
cycle its shape is taken:

- front: ``groups + words + 12 + log2(N) + 1`` (one counter word's group a cycle, one
  pointer word a cycle, the counting path and the prefix sum's ``log2(N) + 1``; 7 fewer
  with no nonzero: nothing to count), its last pointer out 2 cycles before its end,
- scatter: one entry a cycle and, from CSR, a cycle for each empty row; its last entry
  settled 9 cycles after it is taken (8 from COO), its last empty row's pointer 2,
- drain: from the scatter's end, ``nnz + 4`` cycles until the next scatter may start (at
  least ``words + 2``: it clears ``words``); its last entry is out ``nnz + 1`` cycles
  after the scatter's end.

The next matrix's shape is taken on the cycle the scatter ends (with one bank, on the
drain's last cycle, the one before the next scatter could start).
"""

import numpy as np


def groups(ids, lanes):
    """How many groups :class:`~sparseforge.hw.convert_csc.ChunkGroups` gives for column
    ``ids`` in chunks of ``lanes``: each chunk's distinct counter words (``id // lanes``)."""
    words = np.asarray(ids, dtype=np.int64) // lanes
    words = np.sort(np.pad(words, (0, -len(words) % lanes), constant_values=-1)
                    .reshape(-1, lanes), axis=1)
    return int((words[:, 1:] != words[:, :-1]).sum() + len(words) - (words[:, 0] < 0).sum())


def phases(matrix, lanes):
    """``(front, scatter, drain, nnz)`` cycles of one matrix: a CSR array (``indptr``,
    ``indices``) or COO records (``col``), as the phases above say."""
    coo = matrix.format == "coo"
    nnz, words = matrix.nnz, matrix.shape[1] // lanes + 1
    scan = lanes.bit_length()                # the prefix sum's latency, log2(lanes) + 1
    front = (groups(matrix.col if coo else matrix.indices, lanes) + 7 if nnz else 0) + words \
        + 5 + scan
    if coo:
        scatter = nnz + 7 if nnz else 1
    else:                                    # a cycle an entry or empty row, the last ones
        lengths = np.diff(matrix.indptr)
        taken = nnz + int((lengths == 0).sum())
        trailing = len(lengths) - np.flatnonzero(lengths)[-1] - 1 if nnz else taken
        scatter = max(taken - trailing + 8 if nnz else 0, taken + 1)
    return front, scatter, max(nnz + 4, words + 2), nnz


def cycles(matrices, lanes, banks=2):
    """Cycles of ``matrices`` back to back without stalls through a block of ``lanes`` and
    ``banks`` counter banks, from the first shape taken to the last output: with two banks
    each front beside the drain before it, with one after it."""
    start, draining, last = 0, 0, 0          # a matrix's shape taken; the drain before it
    for matrix in matrices:
        front, scatter, drain, nnz = phases(matrix, lanes)
        last = max(last, start + front - 2)                   # its last pointer out
        placed = start + max(front, draining) + scatter
        if nnz:
            last = max(last, placed + nnz + 1)                # its last entry out
        if banks == 2:
            start, draining = placed, drain
        else:
            start = placed + drain - 1
    return last + 1
