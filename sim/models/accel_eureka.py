"""Behavioural model of the accelerator's Eureka engine: a pruned GEMM run on its memory.

What the engine does with a run's registers and memory
(:mod:`sparseforge.sw.accel_eureka`), cycle-free: for each pass (a panel of X's
columns) it walks the block list, reads each block's record and the slab of X its block
column selects, runs the block on the sub-array (:func:`.eureka.drained`), puts the tile
in Y's row order by its rotation and adds it to its block row's sum; at the block's
``end`` it writes the sum as the block row's tile word of the panel.
"""

from types import SimpleNamespace

import numpy as np

from ...sw import wire
from ...sw.wire import ROWS, EurekaWire
from . import eureka


def _words(memory, base, width, count):
    """``count`` words of ``width`` bits from byte ``base``."""
    n = wire.word_bytes(width)
    return wire.from_bytes(memory[base:base + count * n], n).astype(object)


def _signed(bits, width):
    return np.where(bits >> (width - 1), bits - (1 << width), bits).astype(np.int64)


def _blocks(fmt, records):
    """Blocks as the sub-array runs them (:func:`.eureka.drained`'s fields) from their
    ``records`` (header fields, then 4P slot words of 4 lanes)."""
    header = wire.width(fmt.header)
    head = wire.unpack(fmt.header, records & ((1 << header) - 1))
    lane_width = wire.width(fmt.lane)
    shift = header + np.arange(fmt.slots)[None, None, :] * fmt.slot_width \
        + np.arange(ROWS)[None, :, None] * lane_width               # [1, 4, 4P]
    lanes = wire.unpack(fmt.lane, (records[:, None, None] >> shift) & ((1 << lane_width) - 1))
    live = np.arange(fmt.slots) < head["cycles"][:, None, None]
    return SimpleNamespace(values=np.where(live, _signed(lanes["value"], fmt.value_width), 0),
                           columns=lanes["column"].astype(np.int64),
                           displaced=lanes["displaced"].astype(bool),
                           rotation=head["rotation"], cycles=head["cycles"])


def run(memory, regs, config):
    """``memory`` (uint8, changed in place) after the run programmed by ``regs``
    (``{name: value}``) on a build of ``config``
    (:class:`~sparseforge.sw.accel_eureka.EurekaConfig`)."""
    c = config
    fmt = EurekaWire(c.compaction, c.dw)
    count = regs["tiles_count"]
    if count == 0:                       # W all zeros: Y stays as the host zeroed it
        return memory
    places = wire.eureka_block(c.iw)
    place = wire.unpack(places, _words(memory, regs["tiles_base"], wire.width(places), count))
    rows, cols = place["row"], place["col"]
    blocks = _blocks(fmt, _words(memory, regs["w_records_base"], fmt.record_width, count))
    slab = c.depth * c.columns * c.dw
    tile = ROWS * c.columns * c.acc_width
    ends = np.flatnonzero(place["end"])
    for p in range(regs["passes"]):
        panel = _words(memory, regs["b_base"] + p * regs["b_panel"], slab, int(cols.max()) + 1)
        slabs = wire.tensaurus_out_values(panel[cols], c.depth * c.columns, c.dw)
        tiles = eureka.tiles(blocks, slabs.reshape(-1, c.depth, c.columns))
        sums = np.add.reduceat(tiles, np.append(0, ends[:-1] + 1), axis=0)
        words = wire.tensaurus_out_words(sums.reshape(len(sums), -1), c.acc_width)
        n = wire.word_bytes(tile)
        for row, word in zip(rows[ends], wire.to_bytes(words, n).reshape(-1, n), strict=True):
            at = regs["out_base"] + p * regs["out_panel"] + int(row) * n
            memory[at:at + n] = word
    return memory
