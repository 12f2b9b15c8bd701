"""Behavioural model of the Tensaurus matrix store unit (Tensaurus Section 4.2, 5.2.5):
the output buffer that sums the PEs' drains across input tiles and is read out (and
cleared) row by row at the end of a run.

Output row ``i`` has ``tlen * cols`` chunks of ``vlen`` accumulators; PE ``(r, q)`` (input
``r * cols + q``) drains its chunk ``t`` into the row's chunk ``t * cols + q``. Sums wrap
to ``acc_width`` bits, as the hardware's accumulators. The hardware's ``banks`` decide only
where a chunk is stored and which drains are taken on one cycle, not the sums nor the
output's order, so the model has none.
"""

from .tensaurus import wrap


class Msu:
    """The buffer of ``depth`` output rows; :meth:`drain` adds, :meth:`flush` reads out.

    A drain outside the buffer (``row >= depth`` or ``chunk >= tlen``) is dropped; rows
    not read out keep their sums.
    """

    def __init__(self, cols, tlen, vlen, acc_width, depth):
        self.cols, self.tlen, self.vlen = cols, tlen, vlen
        self.acc_width, self.depth = acc_width, depth
        self.acc = {}                               # (row, chunk of the row) -> lanes

    def drain(self, pe, row, chunk, lanes):
        """Input ``pe``'s drain: ``lanes`` into ``row``'s chunk ``chunk * cols + pe % cols``."""
        if row >= self.depth or chunk >= self.tlen:
            return
        key = (row, chunk * self.cols + pe % self.cols)
        old = self.acc.get(key, [0] * self.vlen)
        self.acc[key] = [wrap(a + b, self.acc_width) for a, b in zip(old, lanes, strict=True)]

    def flush(self, out_rows):
        """Rows ``0 .. out_rows - 1`` as ``(row, chunk, lanes, last)``, chunk by chunk,
        each cleared."""
        chunks = self.tlen * self.cols
        out = []
        for row in range(out_rows):
            for g in range(chunks):
                lanes = tuple(self.acc.pop((row, g), [0] * self.vlen))
                out.append((row, g, lanes, int(row == out_rows - 1 and g == chunks - 1)))
        return out


def run(msu, drains, out_rows):
    """One run of ``msu``: ``drains[i]`` input ``i``'s ``(row, chunk, lanes)`` in order (the
    order between inputs does not change the sums), then its output."""
    for pe, items in enumerate(drains):
        for row, chunk, lanes in items:
            msu.drain(pe, row, chunk, lanes)
    return msu.flush(out_rows)
