"""A tile held in a Tailor and fed by a producer that replays it: streams and costs.

The host side of :class:`~sparseforge.hw.tailor_feed.TailorFeed` (whose docstring gives
the rules): what a producer sends each pass, and what a tile costs, pass by pass, for
the accelerator's host model. A tile of ``L`` entries is read ``P`` times from a Tailor
of capacity ``D``, FIFO region ``F``, buffet region ``B = D - F``; on a later pass the
producer starts at an index ``s <= B`` (the first entry of the input tile that holds
index B, for a converter re-run over input tiles).
"""

from dataclasses import dataclass, replace

import numpy as np

from ..core.errors import ParameterError


@dataclass(frozen=True)
class PassCost:
    """One pass of a tile: the producer's ``entries`` (kept or dropped), the Tailor's
    ``fills`` and ``owfills``, the ``dropped`` and ``refetched`` entries (owfills after
    the first pass), and its ``cycles`` with nothing stalled (:func:`tile_cost`)."""

    entries: int
    fills: int
    owfills: int
    dropped: int
    refetched: int
    cycles: int


def pass_starts(length, passes, depth, fifo, starts=None):
    """The producer's first index on each pass: 0 on the first, then ``starts`` (one a
    later pass, each at most B; by default B itself, a producer that can start there)."""
    base = depth - fifo
    later = [base] * (passes - 1) if starts is None else [int(s) for s in starts]
    if passes < 1 or len(later) != passes - 1:
        raise ParameterError(f"{passes} passes need {passes - 1} later starts, "
                             f"got {len(later)}")
    if length > depth and any(not 0 <= s <= base for s in later):
        raise ParameterError(f"a later pass starts at one of {later}: past B = {base}, "
                             "so the bumped entries below it would be missed")
    return [0, *later]


def _pass_counts(length, depth, fifo, k, start):
    """Pass ``k``'s counts, its producer from index ``start``: a :class:`PassCost` of no
    cycles."""
    base = depth - fifo
    if k == 0:
        return PassCost(length, min(length, depth), max(0, length - depth), 0, 0, 0)
    if length > depth:
        return PassCost(length - start, 0, length - base, base - start, length - base, 0)
    return PassCost(0, 0, 0, 0, 0, 0)


def tile_cost(length, passes, depth, fifo, starts=None):
    """Each pass's :class:`PassCost` of a tile of ``length`` entries, read ``passes``
    times, the later passes' producer starting at ``starts`` (:func:`pass_starts`).

    The counts and cycles are those :mod:`sparseforge.hw.tailor_feed`'s docstring
    states; a pass's cycles are those it adds to the tile's, the last pass's with the
    shrink. The cycles of a tile that overbooks hold for ``fifo`` 4 or more.
    """
    if length > depth and fifo < 4:
        raise ParameterError(f"fifo={fifo}: a tile that overbooks has these cycles with a "
                             "FIFO region of 4 or more (fewer credits hold the owfills "
                             "back)")
    out = []
    for k, s in enumerate(pass_starts(length, passes, depth, fifo, starts)):
        shrink = int(k == passes - 1)
        if k == 0:
            cycles = length + 2 + (length > 0) + 2 * (length > depth)
        elif length > depth:
            cycles = max(length, length - s + 2)
        else:
            cycles = max(length, 1)
        out.append(replace(_pass_counts(length, depth, fifo, k, s), cycles=cycles + shrink))
    return out


def tile_report(length, passes, depth, fifo, starts=None):
    """The feed's report of the tile: ``{length, dropped, refetched}``."""
    counts = [_pass_counts(length, depth, fifo, k, s)
              for k, s in enumerate(pass_starts(length, passes, depth, fifo, starts))]
    return {"length": length, "dropped": sum(c.dropped for c in counts),
            "refetched": sum(c.refetched for c in counts)}


def producer_streams(tiles, depth, fifo):
    """The producer's side of a run of ``tiles``: ``(commands, entries)``.

    ``tiles`` are dicts of ``values`` (the L entries), ``passes`` and optional
    ``starts`` (:func:`pass_starts`). ``commands`` has ``start`` and ``final`` per
    pass; ``entries`` has ``data`` and ``end`` per item (numpy columns): each pass the
    producer runs, its entries from its start and the end marker.
    """
    commands = {"start": [], "final": []}
    data, end = [], []
    for tile in tiles:
        values = np.asarray(tile["values"], dtype=np.int64)
        length, passes = values.size, tile["passes"]
        for k, s in enumerate(pass_starts(length, passes, depth, fifo, tile.get("starts"))):
            commands["start"].append(s)
            commands["final"].append(int(k == passes - 1))
            if k == 0 or length > depth:
                data += [values[s:], [0]]
                end += [np.zeros(length - s, dtype=np.int64), [1]]
    return ({k: np.asarray(v, dtype=np.int64) for k, v in commands.items()},
            {"data": np.concatenate(data) if data else np.zeros(0, dtype=np.int64),
             "end": np.concatenate(end) if end else np.zeros(0, dtype=np.int64)})


def replay_start(counts, depth, fifo):
    """Where a converter re-run over input tiles starts a later pass: the first index of
    the input tile that holds index B, for a tile made of input tiles of ``counts``
    entries each (``None`` when the tile fits and nothing is re-run)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.sum() <= depth:
        return None
    offsets = np.cumsum(counts) - counts
    return int(offsets[np.searchsorted(offsets + counts, depth - fifo, side="right")])
