"""Behavioural model of a Tensaurus scratchpad (Tensaurus Section 4.2): what it holds and
what each read returns.

Two halves (double buffering) of two operands of ``rows`` x ``tlen`` chunks of ``vlen``
values. A fill writes one chunk; a read returns one, or zeros outside ``rows`` x ``tlen``
(where a fill is dropped), as the hardware does.
"""

import numpy as np


class Scratchpad:
    """The contents of one SPM, every chunk zero at first."""

    def __init__(self, rows, tlen, vlen):
        self.rows, self.tlen, self.vlen = rows, tlen, vlen
        self.data = np.zeros((2, 2, rows, tlen, vlen), dtype=np.int64)

    def inside(self, row, chunk):
        return row < self.rows and chunk < self.tlen

    def fill(self, half, operand, row, chunk, lanes):
        """Write one chunk (``lanes``: ``vlen`` ints); dropped outside the tile."""
        if self.inside(row, chunk):
            self.data[half, operand, row, chunk] = lanes

    def read(self, half, operand, row, chunk):
        """One chunk as a list of ``vlen`` ints (zeros outside the tile)."""
        if not self.inside(row, chunk):
            return [0] * self.vlen
        return self.data[half, operand, row, chunk].tolist()
