"""Buffer access traces of real kernels, to drive buffer blocks with real data.

:func:`spmv_window` turns sparse matrix-vector multiplication y = A·x into the
operations a buffet holding a sliding window of x sees: x is filled in order,
each nonzero A[i, j] reads x[j] relative to the window's head, and the head
advances (shrink) as soon as no later row needs the oldest entries. Ordering
the matrix by reverse Cuthill–McKee first keeps the window narrow.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee


@dataclass(frozen=True)
class WindowTrace:
    program: list      # [("fill", x) | ("read", index) | ("shrink", count)], in order
    window: int        # largest number of x entries held at once
    matrix: sp.csr_array
    x: np.ndarray
    reads: np.ndarray  # column of every read, in order (what each response must be)


def rcm_order(matrix):
    """``matrix`` symmetrically permuted by reverse Cuthill–McKee."""
    a = sp.csr_array(matrix)
    perm = reverse_cuthill_mckee(sp.csr_matrix(a + a.T), symmetric_mode=True)
    return a[perm][:, perm]


def spmv_window(matrix, x):
    """The sliding-window buffet trace of y = matrix · x (row by row)."""
    a = sp.csr_array(matrix)
    a.sort_indices()
    n_rows, n_cols = a.shape
    lengths = np.diff(a.indptr)
    first = np.full(n_rows, n_cols)
    last = np.full(n_rows, -1)
    nonempty = lengths > 0
    first[nonempty] = a.indices[a.indptr[:-1][nonempty]]
    last[nonempty] = a.indices[a.indptr[1:][nonempty] - 1]
    # The window may start at the smallest column any later row still needs.
    start = np.minimum.accumulate(first[::-1])[::-1]
    program, head, filled, window = [], 0, 0, 0
    for i in np.flatnonzero(nonempty):
        if start[i] > head:
            program.append(("shrink", int(start[i] - head)))
            head = int(start[i])
        while filled <= last[i]:
            program.append(("fill", int(x[filled])))
            filled += 1
        window = max(window, filled - head)
        cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
        program.extend(("read", int(j - head)) for j in cols)
    return WindowTrace(program, window, a, np.asarray(x), a.indices.copy())
