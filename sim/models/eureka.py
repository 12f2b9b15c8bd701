"""Behavioural model of the Eureka SUDS sub-array (Eureka Sections 2.3-3.2, Figure 8).

The executable specification the ``eureka_array`` and ``eureka_systolic``
generators are checked against, cycle-free and vectorized over blocks.

A 4x4 sub-array runs one block (the filter sub-matrix of 4 rows x 4P
columns, as :class:`~sparseforge.sw.suds.DisplacedBlocks` places it) against
an input slab of 4P rows x 4 columns, output stationary:

- on cycle ``t`` MAC (m, n) multiplies MAC row m's operand ``values[m, t]``
  by slab row ``columns[m, t]`` (its 4P:1 operand mux; in dense mode slab
  row ``t``) of slab column n;
- a product whose value is ``displaced`` belongs to the MAC row above and is
  accumulated there (the three-input adder of MAC row m - 1); every other
  product is accumulated by its own MAC row;
- MAC row m holds output row ``(m + rotation) % 4``; the tile is drained in
  MAC-row order with the rotation (:func:`drained`), and whoever takes it
  puts it in output-row order (:func:`unrotate`).

MAC row 0 has no MAC above, so a displaced value there is an error: the
rotation must put a base row on the last MAC row.
"""

import numpy as np

from ...sw.wire import ROWS


class ModelError(AssertionError):
    """The blocks ask for something the SUDS sub-array cannot do."""


def tiles(blocks, slabs, dense=False, ids=None):
    """The output tile of blocks ``ids`` (default: every block), in output-row order:
    ``[n, 4, columns]`` int64. Arguments as :func:`drained`."""
    return unrotate(*drained(blocks, slabs, dense, ids))


def unrotate(acc, rotation):
    """Tiles in MAC-row order (``[n, 4, columns]``) with their rotations put in output-row
    order: MAC row m is output row ``(m + rotation) % 4``."""
    acc = np.asarray(acc, dtype=np.int64)
    rotation = np.asarray(rotation, dtype=np.int64)
    out = np.empty_like(acc)
    out[np.arange(len(acc))[:, None], (np.arange(ROWS) + rotation[:, None]) % ROWS] = acc
    return out


def drained(blocks, slabs, dense=False, ids=None):
    """What the array drains for blocks ``ids`` (default: every block): the accumulators in
    MAC-row order, ``[n, 4, columns]`` int64, and each block's rotation, ``[n]`` (0 in dense
    mode).

    ``blocks`` is a :class:`~sparseforge.sw.suds.DisplacedBlocks`; ``slabs``
    is ``[n, 4P, columns]``, the input rows each of those blocks' columns
    select from (:func:`~sparseforge.sw.eureka_plan.slabs_for`). ``dense``
    selects slab row ``t`` on cycle ``t`` and ignores the column metadata,
    displacement and rotation, as the array's dense mode does.
    """
    ids = np.arange(len(blocks.cycles)) if ids is None else np.asarray(ids, dtype=np.int64)
    values = np.asarray(blocks.values, dtype=np.int64)[ids]
    n, _, width = values.shape
    slabs = np.asarray(slabs, dtype=np.int64)
    if slabs.shape[:2] != (n, width):
        raise ModelError(f"slabs of shape {slabs.shape} for {n} blocks of width {width}")
    cycle = np.arange(width)
    if dense:
        select = np.broadcast_to(cycle, values.shape)
        displaced = np.zeros(values.shape, dtype=bool)
        rotation = np.zeros(n, dtype=np.int64)
    else:
        select = blocks.columns[ids].astype(np.int64)
        displaced = blocks.displaced[ids]
        rotation = np.asarray(blocks.rotation, dtype=np.int64)[ids]
        if displaced[:, 0].any():
            raise ModelError("a displaced value on MAC row 0, which has no MAC row above")
    live = cycle < np.asarray(blocks.cycles)[ids][:, None, None]  # [n, 1, width] after broadcast
    operands = np.take_along_axis(slabs[:, None], select[..., None], axis=2)  # [n, 4, w, c]
    products = np.where(live[..., None], values[..., None] * operands, 0)
    own = np.where(displaced[..., None], 0, products).sum(axis=2)  # [n, 4, c]
    up = np.where(displaced[..., None], products, 0).sum(axis=2)
    acc = own
    acc[:, :-1] += up[:, 1:]  # the product of MAC row m + 1 returns to MAC row m
    return acc, rotation


def product(tiles_, block_ids, grid, rows):
    """``W X`` assembled from output tiles: tile ``i`` of block ``block_ids[i]`` adds into
    its block row. ``rows`` is M; returns ``[M, columns]`` int64."""
    tiles_ = np.asarray(tiles_, dtype=np.int64)
    out = np.zeros((grid[0] * ROWS, tiles_.shape[2]), dtype=np.int64)
    block_row = np.asarray(block_ids, dtype=np.int64) // grid[1]
    np.add.at(out.reshape(grid[0], ROWS, -1), block_row, tiles_)
    return out[:rows]


def flush16(values):
    """FP16 ``values`` as the FP16 MACs read them: subnormals flushed to a zero of their
    sign. Infinities and NaNs are outside their domain (:mod:`sparseforge.hw.float`)."""
    values = np.asarray(values, dtype=np.float16)
    if not np.isfinite(values).all():
        raise ModelError("an FP16 infinity or NaN: the FP16 MACs take finite values only")
    tiny = np.abs(values) < np.finfo(np.float16).smallest_normal
    return np.where(tiny, np.copysign(np.float16(0), values), values)


def products(weights, operands, dtype="int8"):
    """The MACs' products ``weights * operands``: int64, or for ``fp16`` the exact float32
    products of the flushed FP16 values."""
    if dtype == "fp16":
        return flush16(weights).astype(np.float32) * flush16(operands).astype(np.float32)
    return np.asarray(weights, dtype=np.int64) * np.asarray(operands, dtype=np.int64)


def accumulate(local, below=None):
    """A MAC's accumulator after each cycle, from +0 on: ``acc + (local + below)`` per
    cycle along the last axis, in the arrays' type (float32: each addition rounded to
    nearest even, as the FP16 MACs' FP32 adders). ``local`` and ``below`` are what the
    MAC's 2:1 multiplexers pass (0 where they pass nothing)."""
    local = np.asarray(local)
    addends = local if below is None else local + np.asarray(below, dtype=local.dtype)
    acc = np.zeros(local.shape[:-1], dtype=local.dtype)
    out = np.empty_like(addends)
    for t in range(addends.shape[-1]):
        acc = acc + addends[..., t]
        out[..., t] = acc
    return out
