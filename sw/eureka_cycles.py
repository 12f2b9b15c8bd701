"""Eureka's cycles for a weight matrix: dense, 2:4, compaction, greedy and optimal SUDS, and
the same on a systolic array with and without systolic scheduling (Sections 3-3.3, Fig. 12).

The host cycle model behind ``sparseforge suds`` and ``sparseforge bench
eureka``: per-block critical paths from :mod:`.compaction` and :mod:`.suds`,
summed, and slot lengths from :mod:`.systolic`. The RTL runs exactly these
cycles when nothing stalls: its filter beats enter on them back to back,
and the last tile leaves the array's pipeline latency (4 cycles) later (the
``eureka_array`` and ``eureka_systolic`` tests check both).
"""

import numpy as np

from . import systolic
from .compaction import ROWS, compact
from .eureka_format import EurekaFormat
from .suds import displace, greedy, ideal_cycles, optimal

BLOCK_FIGURES = (("dense", "dense"), ("two_four", "2:4 (Ampere)"),
                 ("compaction", "compaction, no SUDS"), ("greedy", "greedy SUDS"),
                 ("optimal", "optimal SUDS"), ("ideal", "one-sided ideal"))
"""(key, label) of the per-block cycle totals, in Figure 12's order."""

SYSTOLIC_FIGURES = (("dense", "dense", "dense", False),
                    ("compaction", "compaction, no SUDS", "compaction", False),
                    ("greedy", "greedy SUDS", "greedy", False),
                    ("optimal", "optimal SUDS", "optimal", False),
                    ("no_suds", "scheduled, no SUDS", "compaction", True),
                    ("eureka", "Eureka: optimal + scheduled", "optimal", True))
"""(key, label, per-block cycles used, systolic scheduling?) on the systolic array."""

CHUNK = 1 << 14
"""Blocks assigned, placed and encoded at a time: bounds the 4 x 4P arrays per block."""


def suds_report(weights, compaction, systolic_rows, value_width):
    """Cycle totals, systolic figures and filter-stream size of integer-coded ``weights``.

    Returns a dict: ``blocks``, ``block_shape``, ``cycles`` (per
    :data:`BLOCK_FIGURES` key, summed over blocks), ``systolic`` (``rows``
    and, per :data:`SYSTOLIC_FIGURES` key, ``cycles`` and ``bubbles``) and
    ``stream`` (the encoded filter stream's size; it is decoded again and
    checked against the compacted weights).

    Only the non-empty blocks are visited, :data:`CHUNK` at a time; the empty
    ones take 0 cycles except in the dense and 2:4 modes (4P and 2P) and are
    a one-word header each in the stream, so they are counted, not listed.
    """
    compacted = compact(weights, compaction)
    rows = systolic.check_rows(systolic_rows)
    fmt = EurekaFormat(compaction, value_width)
    nonempty = len(compacted.counts)
    per_block = {key: np.zeros(nonempty, dtype=np.uint8)
                 for key in ("compaction", "greedy", "optimal")}
    ideal = 0
    for start, part in compacted.chunks(CHUNK):
        done = slice(start, start + len(part.counts))
        best = optimal(part.counts)
        per_block["compaction"][done] = part.counts.max(axis=1)
        per_block["greedy"][done] = greedy(part.counts).cycles
        per_block["optimal"][done] = best.cycles
        ideal += int(ideal_cycles(part.counts).sum())
        _check_stream(fmt, part, best)
    width, nblocks = compacted.width, compacted.nblocks
    totals = {"dense": nblocks * width, "two_four": nblocks * (width // 2),
              **{key: int(cycles.sum(dtype=np.int64)) for key, cycles in per_block.items()},
              "ideal": ideal}
    array = {"rows": systolic_rows}
    for key, _, cycles, scheduled in SYSTOLIC_FIGURES:
        if cycles == "dense":
            run = systolic.uniform_totals(compacted.grid, width, rows)
        else:
            run = systolic.totals(compacted.block_rows, per_block[cycles], rows, scheduled)
        array[key] = {"cycles": run.cycles, "bubbles": run.bubbles}
    return {
        "blocks": nblocks,
        "block_shape": [ROWS, width],
        "cycles": totals,
        "systolic": array,
        "stream": {"value_width": value_width, "word_width": fmt.word_width,
                   "words": nblocks + totals["optimal"]},
    }


def _check_stream(fmt, compacted, assignment):
    """Encode the blocks of ``compacted`` under ``assignment``, decode them, and check that
    every value comes back to its block, row and column."""
    words = fmt.stream(displace(compacted, assignment))
    decoded = fmt.decode(words, compacted.shape, (compacted.block_rows, compacted.block_cols))
    block, row, column, value = decoded.block_entries()
    expected = compacted.positions()
    if not (np.array_equal(block, expected[0]) and np.array_equal(row, expected[1])
            and np.array_equal(column, compacted.columns)
            and np.array_equal(value, compacted.values)):
        raise AssertionError("the encoded stream does not decode to the input")
