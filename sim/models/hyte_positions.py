"""Behavioural model of the fiber-segment positions HYTE keeps across tiles (HYTE
Section 6.2, Fig. 5a), for a CSR tensor whose fibers (rows) are cut by tiles of the
other dimension.

A tile's segment of row ``k`` is its elements with columns in ``[bj, ej)``: a run of
positions of the row, found without the tile's coordinates being stored anywhere. As
the accessor fetches a segment it increments the position until a column reaches the
tile's boundary (or the row ends); that position is where the next tile's segment of
the row begins. So each row keeps, in memory, the last segment it gave: its column
bounds and its begin and end positions. A fetch of ``[bj, ej)`` begins at the row
pointer when ``bj`` is 0 (a sweep starts over), at the kept begin when the bounds are
the kept ones (the same tile again), and at the kept end when ``bj`` is the kept
``ej`` (the next tile along j); anything else is not a sweep of adjacent tiles and is
refused. The table has an entry per row (``K`` for B under ``i > j > k``).
"""


class PositionError(AssertionError):
    """A fetch that no sweep of adjacent tiles makes."""


class SegmentPositions:
    """The positions of one CSR tensor's rows: ``ptr`` its row pointers, ``cols`` its
    column ids. ``traffic`` counts what a fetch reads and writes: row pointers, kept
    entries (read and written), and elements (one past a segment where a column ends it)."""

    def __init__(self, ptr, cols):
        self.ptr, self.cols = ptr, cols
        self.kept = {}          # row -> (bj, ej, begin, end)
        self.traffic = dict.fromkeys(("row_pointers", "entry_reads", "entry_writes",
                                      "elements"), 0)

    def segment(self, k, bj, ej):
        """``(begin, end)``: the positions of row ``k``'s elements in ``[bj, ej)``."""
        t = self.traffic
        t["row_pointers"] += 1                          # the row's end, ptr[k + 1]
        if bj == 0:
            t["row_pointers"] += 1
            begin = int(self.ptr[k])
        else:
            t["entry_reads"] += 1
            kept = self.kept.get(k)
            if kept is not None and kept[:2] == (bj, ej):
                begin = kept[2]
            elif kept is not None and kept[1] == bj:
                begin = kept[3]
            else:
                raise PositionError(f"row {k}: a segment at [{bj}, {ej}) after {kept}")
        end, stop = begin, int(self.ptr[k + 1])
        while end < stop and self.cols[end] < ej:
            end += 1
        t["elements"] += end - begin + (end < stop)
        self.kept[k] = (bj, ej, begin, end)
        t["entry_writes"] += 1
        return begin, end
