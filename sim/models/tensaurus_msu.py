"""Behavioural model of the Tensaurus matrix store unit (Tensaurus Sections 5.1, 5.2.5):
the double buffer that sums the PEs' drains across the input tiles of an output tile in
one half and, when the output tile's last input tile ends, writes that half to memory
(clearing it) and turns to the other.

Output row ``i`` has ``tlen * cols`` chunks of ``vlen`` accumulators; PE ``(r, q)`` (input
``r * cols + q``) drains its chunk ``t`` into the row's chunk ``t * cols + q``. Sums wrap
to ``acc_width`` bits, as the hardware's accumulators. The hardware's ``banks`` decide only
where a chunk is stored and which drains are taken on one cycle, not the sums nor the
writes, so the model has none.

In the direct mode (Section 5.2.5) the buffer is unused: each drain is added to its word
in memory (:func:`direct`), which holds the output.
"""

from .tensaurus import wrap


class Msu:
    """The two halves of ``depth`` output rows; :meth:`drain` adds into the accumulating
    one, :meth:`close` ends an input tile.

    A drain outside a half (``row >= depth`` or ``chunk >= tlen``) is dropped; rows of a
    half not written keep their sums, for the next output tile in that half.
    """

    def __init__(self, cols, tlen, vlen, acc_width, depth):
        self.cols, self.tlen, self.vlen = cols, tlen, vlen
        self.acc_width, self.depth = acc_width, depth
        self.halves = ({}, {})                      # (row, chunk of the row) -> lanes
        self.half = 0                               # the one drains add into

    def drain(self, pe, row, chunk, lanes):
        """Input ``pe``'s drain: ``lanes`` into ``row``'s chunk ``chunk * cols + pe % cols``."""
        if row >= self.depth or chunk >= self.tlen:
            return
        acc = self.halves[self.half]
        key = (row, chunk * self.cols + pe % self.cols)
        old = acc.get(key, [0] * self.vlen)
        acc[key] = [wrap(a + b, self.acc_width) for a, b in zip(old, lanes, strict=True)]

    def close(self, base, rows, closes):
        """The end of an input tile: if it ``closes`` its output tile, that tile's writes
        ``(addr, lanes)``, rows ``0 .. rows - 1`` chunk by chunk from ``base``, each word
        cleared, and the other half takes the drains; else none."""
        if not closes:
            return []
        acc, chunks = self.halves[self.half], self.tlen * self.cols
        self.half ^= 1
        return [(base + row * chunks + g, tuple(acc.pop((row, g), [0] * self.vlen)))
                for row in range(rows) for g in range(chunks)]


def run(msu, drains, tile):
    """One input tile of ``msu``: ``drains[i]`` input ``i``'s ``(row, chunk, lanes)`` in
    order (the order between inputs does not change the sums), then its close with
    ``tile`` ``(base, rows, closes)``: the writes it makes."""
    for pe, items in enumerate(drains):
        for row, chunk, lanes in items:
            msu.drain(pe, row, chunk, lanes)
    return msu.close(*tile)


def direct(cols, tlen, vlen, acc_width, drains, tile, memory):
    """One input tile in the direct mode: each drain ``(row, chunk, lanes)`` of input
    ``pe`` (``drains[pe]``), of a row below the tile's ``rows`` and a chunk below ``tlen``,
    added into ``memory`` (``{addr: lanes}``, absent words 0) at ``base + row * tlen *
    cols + chunk * cols + pe % cols``, as its writes. ``tile`` is ``(base, rows,
    closes)``. Returns how many writes it made."""
    base, rows, _ = tile
    writes = 0
    for pe, items in enumerate(drains):
        for row, chunk, lanes in items:
            if row < rows and chunk < tlen:
                addr = base + (row * tlen + chunk) * cols + pe % cols
                old = memory.get(addr, [0] * vlen)
                memory[addr] = [wrap(a + b, acc_width) for a, b in zip(old, lanes, strict=True)]
                writes += 1
    return writes
