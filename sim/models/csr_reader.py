"""Behavioural model of the CSR row reader (``hw/csr_reader.py``): what it answers for a
sequence of row requests, and the reads it makes of the CSR's arrays.

Each row requested is its elements in stored order, ``last`` on the final one; an empty
row is one element with ``empty`` and ``last``. It reads two row pointers a row and one
``{col, value}`` an element.
"""

import numpy as np


def answers(indptr, indices, values, rows):
    """``{"col", "value", "last", "empty"}``: int64 columns of the elements answered to
    the requests ``rows`` (an empty row's ``col`` and ``value`` 0)."""
    indptr, rows = np.asarray(indptr, dtype=np.int64), np.asarray(rows, dtype=np.int64)
    lo, hi = indptr[rows], indptr[rows + 1]
    counts = np.maximum(hi - lo, 0)
    slots = np.maximum(counts, 1)
    ends = np.cumsum(slots)
    n = int(ends[-1]) if len(ends) else 0
    out = {k: np.zeros(n, dtype=np.int64) for k in ("col", "value", "last", "empty")}
    out["last"][ends - 1] = 1
    out["empty"][ends[counts == 0] - 1] = 1
    starts = np.repeat(lo - (ends - slots), counts)          # element -> its array index
    held = np.flatnonzero(out["empty"] == 0)
    out["col"][held] = np.asarray(indices, dtype=np.int64)[starts + held]
    out["value"][held] = np.asarray(values, dtype=np.int64)[starts + held]
    return out


def reads(indptr, rows):
    """``(pointer reads, element reads)`` the reader makes for the requests ``rows``."""
    indptr, rows = np.asarray(indptr, dtype=np.int64), np.asarray(rows, dtype=np.int64)
    return 2 * len(rows), int(np.maximum(indptr[rows + 1] - indptr[rows], 0).sum())
