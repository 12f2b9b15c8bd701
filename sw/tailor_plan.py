"""The streams of a Tailor's parent and child over a run of tiles, planned on the host.

Written from the protocol alone (README, "Driving a Tailor"), not from the
behavioural model that checks the hardware, so the two can disagree. Every
stream item carries the counts of other streams' transfers it must wait for,
so a testbench in Python and a source inside the simulator play the same plan:

- the child reads each pass in index order (``read_after_shrinks``: its
  shrinks so far), may free the head of the tile between passes with a partial
  shrink, and ends the tile with a shrink of the whole buffer (each shrink
  waits for the reads before it, ``shrink_after_reads``);
- the parent fills the first ``min(L, D)`` elements of a tile once the child
  has ended the tile before (``fill_after_shrinks``). A tile that overbooks
  (``L > D``) is streamed once per pass with ``owfill``: indices
  ``D .. L-1`` for the first pass, then from the first bumped index to
  ``L - 1`` for each later one, ``last`` on ``L - 1``. A pass's stream starts
  only after the child's shrinks before that pass (``owfill_after_shrinks``),
  so the parent knows whether its wrap backfills: after a partial shrink it
  does, and when what is left of the tile then fits (``L - gone <= D``)
  nothing more is streamed; otherwise the buffer splits again and the bumped
  part starts at ``gone + B``. Each owfill waits for its tile's fills
  (``owfill_after_fills``) and for ``owfill_credits`` of ``fifo_credits``
  (the level shown on the cycle before, less the owfill it paid for): all
  ``F`` for a wrap, which may backfill, else 1.

Tiles are dicts: ``length`` L, ``passes``, ``reads`` (one list of indices per
pass, as they are after the earlier shrinks), optional ``shrinks`` (pass ->
count, between that pass and the next) and ``values`` (the L elements).
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError


@dataclass(frozen=True, eq=False)
class TilePlan:
    """Every stream of a Tailor run, item by item (int64 arrays)."""

    read_index: np.ndarray
    read_truth: np.ndarray          # the tile's element each read must return
    read_after_shrinks: np.ndarray
    shrink_count: np.ndarray
    shrink_after_reads: np.ndarray
    shrink_ends_tile: np.ndarray    # 1 on the shrink of the whole buffer
    fill_value: np.ndarray
    fill_after_shrinks: np.ndarray
    owfill_data: np.ndarray
    owfill_last: np.ndarray
    owfill_credits: np.ndarray
    owfill_after_fills: np.ndarray
    owfill_after_shrinks: np.ndarray

    @property
    def transfers(self):
        """Parent-to-buffer transfers: fills and overwriting fills."""
        return self.fill_value.size + self.owfill_data.size


def plan_tiles(tiles, depth, fifo):
    """The :class:`TilePlan` of ``tiles`` on a Tailor of capacity ``depth``, FIFO ``fifo``."""
    base = depth - fifo
    parts = {name: [] for name in TilePlan.__dataclass_fields__}
    reads = shrinks = fills = 0
    for t, tile in enumerate(tiles):
        length, passes = tile["length"], tile["passes"]
        values = np.asarray(tile["values"], dtype=np.int64)
        if values.size != length or len(tile["reads"]) != passes or passes < 1:
            raise ParameterError(f"tile {t}: {values.size} values and {len(tile['reads'])} "
                                 f"passes for length {length} and {passes} passes")
        parts["fill_value"].append(values[:depth])
        parts["fill_after_shrinks"].append(np.full(min(length, depth), shrinks))
        fills += min(length, depth)
        gone, before_pass = 0, []
        for k, indices in enumerate(tile["reads"]):
            indices = np.asarray(indices, dtype=np.int64)
            if indices.size and (indices.min() < 0 or indices.max() >= length - gone):
                raise ParameterError(f"tile {t} pass {k}: a read beyond the {length - gone} "
                                     "elements left")
            before_pass.append((shrinks, gone))
            parts["read_index"].append(indices)
            parts["read_truth"].append(values[indices + gone])
            parts["read_after_shrinks"].append(np.full(indices.size, shrinks))
            reads += indices.size
            count = tile.get("shrinks", {}).get(k) if k < passes - 1 else None
            if count:
                _shrink(parts, count, reads, 0)
                shrinks, gone = shrinks + 1, gone + count
        _shrink(parts, min(length - gone, depth), reads, 1)
        shrinks += 1
        if length > depth:
            _stream(parts, values, depth, base, fills, before_pass)
    return TilePlan(**{name: np.concatenate(chunks).astype(np.int64) if chunks
                       else np.zeros(0, dtype=np.int64) for name, chunks in parts.items()})


def _shrink(parts, count, reads, ends):
    parts["shrink_count"].append(np.array([count]))
    parts["shrink_after_reads"].append(np.array([reads]))
    parts["shrink_ends_tile"].append(np.array([ends]))


def _stream(parts, values, depth, base, fills, before_pass):
    """The owfills of one overbooked tile: one stream per pass (see the module doc)."""
    length = values.size
    fifo = depth - base
    start, gone_at_split = depth, 0          # the first pass: D .. L-1, after the split
    for k, (after_shrinks, gone) in enumerate(before_pass):
        if k:
            backfills = gone != gone_at_split
            if backfills and length - gone <= depth:
                stream = np.arange(start, length)      # the backfill that leaves it fitting
                _owfills(parts, values, stream, fifo, fills, after_shrinks)
                return
            if backfills:                              # full again, then a new split
                gone_at_split = gone
        stream = np.arange(start, length)
        _owfills(parts, values, stream, fifo if k else 1, fills, after_shrinks)
        start = gone_at_split + base                   # where the next pass's stream wraps to


def _owfills(parts, values, stream, first_credits, fills, after_shrinks):
    credits = np.ones(stream.size, dtype=np.int64)
    credits[:1] = first_credits
    parts["owfill_data"].append(values[stream])
    parts["owfill_last"].append((stream == values.size - 1).astype(np.int64))
    parts["owfill_credits"].append(credits)
    parts["owfill_after_fills"].append(np.full(stream.size, fills))
    parts["owfill_after_shrinks"].append(np.full(stream.size, after_shrinks))
