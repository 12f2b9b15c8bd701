"""A first-order model of an ``accel`` SpGEMM run (:mod:`~sparseforge.sw.accel_spgemm`):
its memory traffic exactly, its cycles from the bound the memory sets.

Traffic, per column tile of B (``T`` of them), as the Gustavson build reads and writes:
the tile's word of the tile list; A's rows again, two row pointers a row and a column id
and a value a nonzero; for each nonzero A(i, k) B's row k, two row pointers and a column
id and a value for each of its elements (every tile reads the whole row and drops the
other tiles' columns); C's words (a row of ``n`` nonzeros in the tile ``n // lanes + 1``
words) and a row length a row. Every pointer, id, value and length is a read or write of
its own (one AXI burst, :mod:`~sparseforge.hw.csr_reader`), so the run is bound by the
memory's accesses rather than its bytes: the DDR4 model's data bus takes a burst of its
own for each (:attr:`~sparseforge.sw.accel_model.Memory.burst` cycles). The model's
cycles are the larger of that bound and the PEs' (one B element a cycle each, a row's
drain a cycle), plus a round trip for each of the four reads a tile's first product
waits on in turn (its tile word, A's pointers, A's element, B's pointers and element are
five; the first overlaps the start).

What it leaves out: the DRAM's row misses and bank conflicts beyond the burst's average,
the PEs waiting on each other at the reorder, and the tail of writes after the last
product.
"""

from dataclasses import dataclass

import numpy as np

from . import accel_image, accel_model, wire
from .accel_spgemm import word_fields


@dataclass(frozen=True)
class SpgemmPrediction:
    """A run's predicted ``cycles``, and its exact ``reads`` and ``writes`` (accesses)
    and ``bytes_read`` and ``bytes_written``."""

    cycles: int
    reads: int
    writes: int
    bytes_read: int
    bytes_written: int


def row_lengths(plan_):
    """C's row lengths per tile, ``tiles x rows`` (the lengths the run writes)."""
    c, m = plan_.golden, plan_.shape[0]
    tile = np.searchsorted(np.asarray(plan_.offsets), c.indices, side="right") - 1
    rows = np.repeat(np.arange(m), np.diff(c.indptr))
    out = np.zeros((len(plan_.offsets), m), dtype=np.int64)
    np.add.at(out, (tile, rows), 1)
    return out


def predict(plan_, memory=accel_model.DRAM):
    """The :class:`SpgemmPrediction` of ``plan_`` against ``memory``
    (:class:`~sparseforge.sw.accel_model.Memory`)."""
    c, (m, _, _) = plan_.config, plan_.shape
    size = wire.word_bytes
    ptr, col, value = size(accel_image.ADDR_WIDTH), size(c.iw), size(c.dw)
    tiles, nnz = len(plan_.offsets), plan_.a.nnz
    elements = int(np.diff(plan_.b.indptr)[plan_.a.indices].sum())    # a tile's products
    reads = tiles * (1 + 2 * m + 2 * nnz + 2 * nnz + 2 * elements)
    bytes_read = tiles * (size(wire.width(wire.gustavson_job(c.iw))) + 2 * m * ptr
                          + nnz * (col + value) + 2 * nnz * ptr + elements * (col + value))
    words = int((row_lengths(plan_) // c.lanes + 1).sum())
    writes = words + tiles * m
    bytes_written = words * size(wire.width(word_fields(c))) + tiles * m * col
    pes = tiles * (elements + m) / c.pes
    bound = max((reads + writes) * memory.burst, pes)
    return SpgemmPrediction(round(bound + 4 * memory.ordered), reads, writes, bytes_read,
                            bytes_written)
