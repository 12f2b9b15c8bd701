"""Chained behavioural model of the SpMV engine: a Tailor holding x, a MAC reading it.

The executable specification of the ``spmv_tailor`` composite, built on the
Tailor's own model (:class:`~sparseforge.sim.models.tailor.Tailor`). The
parent fills each tile of x and streams its bumped part with overwriting
fills; the MAC walks A's stream (:func:`~sparseforge.sw.traces.spmv_stream`):
each entry reads x at its tile index and accumulates ``value * x``, a
``row_end`` entry emits y and clears the sum, a ``tile_end`` entry frees the
whole buffer. Cycle-free: here the parent sends an overwriting fill only when
the MAC's next read needs it; a parent that sends earlier within
``fifo_credits`` changes no value read.
"""

from .tailor import Tailor


def spmv_tailor(depth, fifo, tiles, entries):
    """y, one per row, of A's stream ``entries`` over the tiles of x.

    ``tiles`` holds each tile's x values in index order; ``entries`` yields
    ``(index, value, row_end, tile_end)`` per entry.
    """
    tailor = Tailor(depth, fifo)
    ys, acc, tile, fresh = [], 0, 0, True
    for index, value, row_end, tile_end in entries:
        values = tiles[tile]
        if not 0 <= index < len(values):
            raise ValueError(f"entry reads index {index} of a tile of {len(values)}")
        if fresh:
            for v in values[:depth]:
                tailor.step(fill=v)
            fresh = False
        while not tailor.can_access(index):
            tailor.step(request=index)          # passes the stream up to index
            bumped = tailor.next_owfill_index()
            tailor.step(owfill=(values[bumped], bumped == len(values) - 1))
        acc += int(value) * tailor.step(read=index)
        if row_end:
            ys.append(acc)
            acc = 0
        if tile_end:
            tailor.step(shrink=tailor.occupancy)
            tile, fresh = tile + 1, True
    return ys
