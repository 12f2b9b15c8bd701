"""Compaction of a sparse filter matrix into left-aligned blocks (Eureka Section 3).

The weight (filter) matrix W is M x K, its rows are output channels. It is cut
into blocks of ``ROWS`` = 4 consecutive rows by 4P consecutive columns, P being
the compaction factor (1, 2 or 4), and zero-padded to whole blocks. Compaction
left-aligns the nonzeros of every block row and records, per value, its column
inside the block in log2(4P) bits: the select of the MAC's 4P:1 operand
multiplexer (4:1 as in Ampere's 2:4 for P = 1, 16:1 for P = 4, Figure 6).

Blocks are numbered row-major over the block grid: block ``b`` covers rows
``4 * (b // grid[1])`` onward and columns ``4P * (b % grid[1])`` onward.
Within a block row the values keep their column order. Explicit zeros are
dropped: a stored zero costs no MAC cycle.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError
from .wire import COMPACTIONS, ROWS, check_compaction  # noqa: F401 (re-exported)


def block_grid(shape, compaction):
    """(block rows, block columns) covering an M x K matrix, zero-padded to whole blocks."""
    return -(-shape[0] // ROWS), -(-shape[1] // (ROWS * compaction))


@dataclass(frozen=True, eq=False)
class Compacted:
    """A weight matrix as compacted blocks.

    Attributes
    ----------
    shape : (M, K) of the original matrix.
    compaction : the compaction factor P; a block is ``ROWS`` x 4P.
    values : [nblocks, ROWS, 4P] the nonzeros of each block row, left-aligned;
        slots past ``counts`` hold zero.
    columns : [nblocks, ROWS, 4P] uint8, each value's column inside its block
        (log2(4P) bits of metadata); zero past ``counts``.
    counts : [nblocks, ROWS] int64, nonzeros per block row (its length).
    """

    shape: tuple[int, int]
    compaction: int
    values: np.ndarray
    columns: np.ndarray
    counts: np.ndarray

    @property
    def width(self):
        """Columns per block, 4P: the dense (uncompacted) cycles of a block."""
        return ROWS * self.compaction

    @property
    def metadata_bits(self):
        """Bits of column metadata per value, log2(4P)."""
        return self.width.bit_length() - 1

    @property
    def grid(self):
        """(block rows, block columns) of the zero-padded matrix."""
        return block_grid(self.shape, self.compaction)

    @property
    def nblocks(self):
        """Number of blocks, empty ones included."""
        return len(self.counts)

    @property
    def nnz(self):
        """Number of nonzeros."""
        return int(self.counts.sum())


def compact(matrix, compaction):
    """Compact ``matrix`` (scipy sparse or 2-D dense) into ``ROWS`` x 4P blocks.

    Duplicate coordinates are summed and zeros dropped first. Vectorized over
    all nonzeros: one sort by (block, row, column) ranks every value in its
    block row.
    """
    width = ROWS * check_compaction(compaction)
    coo = _canonical(matrix)
    shape = coo.shape
    grid = block_grid(shape, compaction)
    row, col = coo.row.astype(np.int64), coo.col.astype(np.int64)
    # One group per (block, block row); blocks are row-major over the grid.
    group = ((row // ROWS) * grid[1] + col // width) * ROWS + row % ROWS
    column = col % width
    order = np.lexsort((column, group))
    group, column, value = group[order], column[order], coo.data[order]
    counts = np.bincount(group, minlength=grid[0] * grid[1] * ROWS)
    slot = np.arange(len(group)) - (np.cumsum(counts) - counts)[group]
    values = np.zeros((len(counts), width), dtype=coo.dtype)
    columns = np.zeros((len(counts), width), dtype=np.uint8)
    values[group, slot] = value
    columns[group, slot] = column
    return Compacted(shape=shape, compaction=width // ROWS,
                     values=values.reshape(-1, ROWS, width),
                     columns=columns.reshape(-1, ROWS, width),
                     counts=counts.reshape(-1, ROWS))


def decompact(compacted):
    """The matrix that ``compacted`` holds, as a canonical ``scipy.sparse.coo_array``."""
    width = compacted.width
    slot = np.arange(width)
    block, lane, slot = np.nonzero(slot < compacted.counts[..., None])
    return assemble(compacted.values[block, lane, slot], block, lane,
                    compacted.columns[block, lane, slot], compacted.grid, width,
                    compacted.shape)


def assemble(values, block, row, column, grid, width, shape):
    """A canonical ``coo_array`` from entries given by block and in-block position.

    ``block`` numbers blocks row-major over ``grid``; ``row`` (0..3) and
    ``column`` (0..width-1) are positions inside the block.
    """
    block_row, block_col = np.divmod(block, grid[1])
    matrix = sp.coo_array((values, (block_row * ROWS + row, block_col * width + column)),
                          shape=shape)
    matrix.sum_duplicates()
    return matrix


def _canonical(matrix):
    """``matrix`` as a COO array with duplicates summed and zeros dropped (a copy)."""
    if not sp.issparse(matrix):
        matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ParameterError(f"weight matrix must be 2-D, got {matrix.ndim}-D")
    csr = sp.csr_array(matrix, copy=True)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    return csr.tocoo()
