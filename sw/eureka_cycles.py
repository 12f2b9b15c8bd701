"""Eureka's cycles for a weight matrix: dense, 2:4, compaction, greedy and optimal SUDS, and
the same on a systolic array with and without systolic scheduling (Sections 3-3.3, Fig. 12).

The host cycle model behind ``sparseforge suds`` and ``sparseforge bench
eureka``: per-block critical paths from :mod:`.compaction` and :mod:`.suds`,
summed, and slot lengths from :mod:`.systolic`. The RTL runs exactly these
cycles when nothing stalls (the ``eureka_array`` and ``eureka_systolic``
tests check it).
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


def suds_report(weights, compaction, systolic_rows, value_width):
    """Cycle totals, systolic figures and filter-stream size of integer-coded ``weights``.

    Returns a dict: ``blocks``, ``block_shape``, ``cycles`` (per
    :data:`BLOCK_FIGURES` key, summed over blocks), ``systolic`` (``rows``
    and, per :data:`SYSTOLIC_FIGURES` key, ``cycles`` and ``bubbles``) and
    ``stream`` (the encoded filter stream's size; it is decoded again and
    checked against ``weights``).
    """
    compacted = compact(weights, compaction)
    counts = compacted.counts
    best = optimal(counts)
    block_cycles = {
        "dense": np.full(len(counts), compacted.width),
        "two_four": np.full(len(counts), compacted.width // 2),
        "compaction": counts.max(axis=1, initial=0),
        "greedy": greedy(counts).cycles,
        "optimal": best.cycles,
        "ideal": ideal_cycles(counts),
    }
    array = {"rows": systolic_rows}
    for key, _, cycles, scheduled in SYSTOLIC_FIGURES:
        arrange = systolic.schedule if scheduled else systolic.in_order
        run = arrange(block_cycles[cycles].reshape(compacted.grid), systolic_rows)
        array[key] = {"cycles": run.cycles, "bubbles": run.bubbles}
    fmt = EurekaFormat(compaction, value_width)
    words = fmt.encode(displace(compacted, best))
    if (fmt.decode(words, compacted.shape).matrix() != weights).nnz:
        raise AssertionError("the encoded stream does not decode to the input")
    return {
        "blocks": compacted.nblocks,
        "block_shape": [ROWS, compacted.width],
        "cycles": {key: int(cycles.sum()) for key, cycles in block_cycles.items()},
        "systolic": array,
        "stream": {"value_width": value_width, "word_width": fmt.word_width,
                   "words": len(words)},
    }
