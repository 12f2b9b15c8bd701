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

Only the non-empty blocks are stored, by grid position, so memory follows the
nonzeros and never the matrix's area; the empty ones are known from the grid.
"""

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..core.errors import ParameterError
from .occupancy import INT64_MAX, first_of_runs
from .wire import COMPACTIONS, ROWS, check_compaction  # noqa: F401 (re-exported)

MAX_GRID_BLOCKS = 1 << 20
"""Most blocks :func:`compact` stores when asked to store the empty ones too."""


_ROW_BITS = ROWS.bit_length() - 1


def block_grid(shape, compaction):
    """(block rows, block columns) covering an M x K matrix, zero-padded to whole blocks."""
    return -(-shape[0] // ROWS), -(-shape[1] // (ROWS * compaction))


@dataclass(frozen=True, eq=False)
class Compacted:
    """A weight matrix as compacted blocks, the non-empty ones only (unless asked).

    Attributes
    ----------
    shape : (M, K) of the original matrix.
    compaction : the compaction factor P; a block is ``ROWS`` x 4P.
    block_rows, block_cols : [n] int64, the grid position of each stored block,
        in block order (row-major over the grid).
    counts : [n, ROWS] uint8, nonzeros per block row (its length).
    values : [nnz] the nonzeros, block by block and row by row: each block row
        left-aligned, in column order.
    columns : [nnz] uint8, each value's column inside its block (log2(4P)
        bits of metadata).
    """

    shape: tuple[int, int]
    compaction: int
    block_rows: np.ndarray
    block_cols: np.ndarray
    counts: np.ndarray
    values: np.ndarray
    columns: np.ndarray

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
        """Number of blocks of the grid, empty ones included."""
        return self.grid[0] * self.grid[1]

    @property
    def nnz(self):
        """Number of nonzeros."""
        return len(self.values)

    def chunks(self, size):
        """``(start, blocks)``: the stored blocks ``size`` at a time, from block ``start``,
        each as a :class:`Compacted` of views."""
        first = 0
        for start in range(0, len(self.counts), size):
            counts = self.counts[start:start + size]
            last = first + int(counts.sum(dtype=np.int64))
            yield start, replace(self, block_rows=self.block_rows[start:start + size],
                                 block_cols=self.block_cols[start:start + size],
                                 counts=counts, values=self.values[first:last],
                                 columns=self.columns[first:last])
            first = last

    def positions(self):
        """``(block, row, slot)`` of every value: its stored block, its row in the block and
        its place in the compacted row."""
        lengths = self.counts.ravel().astype(np.int64)
        group = np.repeat(np.arange(len(lengths)), lengths)  # block * ROWS + row
        slot = np.arange(len(group)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        block, row = np.divmod(group, ROWS)
        return block, row, slot


def compact(matrix, compaction, empty=False):
    """Compact ``matrix`` (scipy sparse or 2-D dense) into ``ROWS`` x 4P blocks.

    Duplicate coordinates are summed and zeros dropped first. Vectorized over
    all nonzeros: one sort of a 64-bit key (block, row, column) ranks every
    value in its block row; in a grid too large for that key, the empty block
    rows and columns are squeezed out first. ``empty`` also stores the empty
    blocks, every block of the grid (at most :data:`MAX_GRID_BLOCKS`), for
    what must send or show them all.
    """
    width = ROWS * check_compaction(compaction)
    row, col, data, shape = _entries(matrix)
    grid = block_grid(shape, compaction)
    if empty and grid[0] * grid[1] > MAX_GRID_BLOCKS:
        raise ParameterError(f"a {shape[0]} x {shape[1]} matrix has {grid[0] * grid[1]} blocks "
                             f"at P={compaction}; storing the empty ones too is limited to "
                             f"{MAX_GRID_BLOCKS}")
    used_rows = used_cols = None
    if grid[0] * grid[1] * ROWS * width > INT64_MAX:
        used_rows, row = _squeeze(row, ROWS)
        used_cols, col = _squeeze(col, width)
        grid = len(used_rows), len(used_cols)
        if grid[0] * grid[1] * ROWS * width > INT64_MAX:
            raise ParameterError(f"{len(data)} nonzeros spread over {grid[0]} block rows and "
                                 f"{grid[1]} block columns: too many to sort by 64-bit keys")
    key, data = _sorted_entries(_block_key(row, col, grid, width), data)
    columns = (key & (width - 1)).astype(np.uint8)
    key >>= width.bit_length() - 1
    lane = (key & (ROWS - 1)).astype(np.uint8)
    key >>= _ROW_BITS  # now each value's block, row-major over the grid
    blocks = np.arange(grid[0] * grid[1]) if empty else key[first_of_runs(key)]
    block = np.searchsorted(blocks, key)  # each value's stored block
    del key
    counts = np.zeros((len(blocks), ROWS), dtype=np.uint8)
    np.add.at(counts, (block, lane), 1)
    del block, lane
    block_rows, block_cols = np.divmod(blocks, max(grid[1], 1))
    if used_rows is not None:
        block_rows, block_cols = used_rows[block_rows], used_cols[block_cols]
    return Compacted(shape=shape, compaction=width // ROWS, block_rows=block_rows,
                     block_cols=block_cols, counts=counts, values=data, columns=columns)


def decompact(compacted):
    """The matrix that ``compacted`` holds, as a canonical ``scipy.sparse.coo_array``."""
    block, row, _ = compacted.positions()
    return assemble(compacted.values, compacted.block_rows[block], compacted.block_cols[block],
                    row, compacted.columns, compacted.width, compacted.shape)


def assemble(values, block_row, block_col, row, column, width, shape):
    """A canonical ``coo_array`` from entries given by block position and in-block position.

    ``block_row``, ``block_col`` place each entry's block on the grid; ``row``
    (0..3) and ``column`` (0..width-1) are its position inside the block.
    """
    matrix = sp.coo_array((values, (block_row * ROWS + row, block_col * width + column)),
                          shape=shape)
    matrix.sum_duplicates()
    return matrix


def _entries(matrix):
    """``(row, col, data, shape)`` of the stored entries of ``matrix`` (not copied if COO)."""
    if not sp.issparse(matrix):
        matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ParameterError(f"weight matrix must be 2-D, got {matrix.ndim}-D")
    coo = sp.coo_array(matrix)
    return coo.row, coo.col, coo.data, tuple(int(s) for s in coo.shape)


def _block_key(row, col, grid, width):
    """Each entry's ``((block * ROWS + row) * width + column)``, its block row-major over
    ``grid``: ascending in block order. Built in place, one temporary at a time; ``ROWS``
    and ``width`` are powers of two, so shifts and masks split the coordinates."""
    key = np.right_shift(row, _ROW_BITS, dtype=np.int64)
    key *= grid[1]
    part = np.right_shift(col, width.bit_length() - 1, dtype=np.int64)
    key += part
    key <<= _ROW_BITS
    np.bitwise_and(row, ROWS - 1, out=part)
    key += part
    key <<= width.bit_length() - 1
    np.bitwise_and(col, width - 1, out=part)
    key += part
    return key


def _sorted_entries(key, data):
    """``key`` ascending and ``data`` in the same order, duplicate keys summed, zeros
    dropped."""
    order = np.argsort(key)
    data = data[order]
    del order
    key.sort()
    distinct = first_of_runs(key)
    if not distinct.all():  # duplicates are neighbours now: sum them
        starts = distinct.nonzero()[0]
        key = key[starts]
        data = np.add.reduceat(data, starts)
    nonzero = data != 0
    if not nonzero.all():
        key, data = key[nonzero], data[nonzero]
    return key, data


def _squeeze(index, size):
    """``(used, squeezed)``: the groups ``index // size`` that occur, ascending, and each
    index with its group renumbered among them."""
    used, rank = np.unique(index // size, return_inverse=True)
    return used, rank * size + index % size
