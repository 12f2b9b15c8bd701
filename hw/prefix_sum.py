"""The MINT prefix-sum unit in three variants (MINT Section V-A, Figure 9).

A scan network computes each vector's local inclusive prefix sums; a row of
adders at the end adds the running carry of the sequence, the sum of every
earlier vector (the paper's "offset, the maximum value from the previous
cycle"), so the unit takes one vector per cycle. The networks, as lists of
adder levels, each level a list of ``(dst, src)`` lanes (``dst += src``,
reading the previous level's values):

- ``serial``: the serial chain (Fig. 9a), ``N - 1`` levels of one adder;
- ``brent_kung``: work-efficient (Fig. 9b), an up-sweep tree and a
  down-sweep, ``2 log2 N - 1`` levels and ``2N - 2 - log2 N`` adders;
- ``kogge_stone``: highly parallel (Fig. 9c), ``log2 N`` levels and
  ``N log2 N - N + 1`` adders.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params, choice
from ..core.registry import block
from .interfaces import prefix_sum_layouts
from .pipeline import Pipeline, levels_param, stages


def serial(lanes):
    """The serial chain: lane ``i`` adds lane ``i - 1``, one lane a level."""
    return [[(i, i - 1)] for i in range(1, lanes)]


def _strides(lanes):
    d = 1
    while d < lanes:
        yield d
        d *= 2


def brent_kung(lanes):
    """Work-efficient: the up-sweep (a reduction tree) and the down-sweep filling the gaps."""
    up = [[(i, i - d) for i in range(2 * d - 1, lanes, 2 * d)] for d in _strides(lanes)]
    down = [[(i, i - d) for i in range(3 * d - 1, lanes, 2 * d)]
            for d in reversed(list(_strides(lanes // 2)))]
    return up + down


def kogge_stone(lanes):
    """Highly parallel: at stride ``d`` every lane from ``d`` on adds the lane ``d`` below."""
    return [[(i, i - d) for i in range(d, lanes)] for d in _strides(lanes)]


VARIANTS = {"serial": serial, "brent_kung": brent_kung, "kogge_stone": kogge_stone}


class PrefixSumSignature(wiring.Signature):
    """A prefix-sum (scan) unit over ``lanes`` counts of ``width`` bits a cycle, seen from it.

    A *sequence* (one matrix's counts) is a run of vectors ending with ``last``.

    - ``counts`` (stream in, :func:`~.interfaces.prefix_sum_layouts`): one vector, lane 0
      first; ``last`` ends the sequence, and the running sum starts again
      from 0 with the next vector.
    - ``sums`` (stream out): one per vector, in order. ``sums[i]`` is the sum
      of the sequence's counts before lane ``i`` of this vector (exclusive
      scan), or up to and including it (inclusive scan, where the unit is
      built so); ``total`` the sum up to and including this vector's last
      lane (the sequence's size on its ``last`` vector); ``last`` as given.
      All modulo ``2**width``.
    """

    def __init__(self, lanes, width):
        counts, sums = prefix_sum_layouts(lanes, width)
        super().__init__({"counts": In(stream.Signature(counts)),
                          "sums": Out(stream.Signature(sums))})


@block("prefix_sum")
class PrefixSum(wiring.Component):
    """The prefix-sum unit: N lanes a cycle, a running carry across cycles (Section V-A, Fig. 9).

    Parameters
    ----------
    lanes : N, counts per vector (a power of two).
    width : W, bits of a count and of a sum; sums wrap modulo ``2**W``.
    variant : the scan network (module docstring): ``serial``,
        ``brent_kung`` or ``kogge_stone`` (the default; by name or index).
    inclusive : 0 for an exclusive scan (the default: CSR-to-CSC and
        CSR-to-BSR pointers, ``ptr[j]`` the count before ``j``, with
        ``total`` of the ``last`` vector the final pointer), 1 for an
        inclusive one (RLC-to-COO and Dense-to-COO positions).
    levels : adder levels between pipeline registers (1: one level a cycle,
        as in Fig. 9; more trade registers for latency).

    Members
    -------
    counts : In(stream({counts[N], last}))
    sums : Out(stream({sums[N], total, last}))
        As :class:`~sparseforge.hw.prefix_sum.PrefixSumSignature` says: one
        output per vector; ``last`` ends a sequence and the carry restarts
        from 0 after it.

    Latency and throughput: ``latency = ceil(depth / levels) + 1`` cycles
    from a vector's transfer to its sums on ``sums`` (``depth`` the
    network's levels, the ``+ 1`` the registered offset row). At
    ``levels = 1`` and N = 8 / 16 that is 8 / 16 cycles (serial), 6 / 8
    (Brent-Kung) and 4 / 5 (Kogge-Stone). One vector (N sums) per cycle
    while ``sums`` is taken, in every variant; a held output holds the
    pipeline. Between registers: ``levels`` W-bit adders in series; the
    carry loop is one W-bit adder and a clear.
    """

    PARAMS = (
        Param("lanes", 8, 1, 64, "counts per vector (N)", pow2=True),
        Param("width", 16, 1, 64, "bits of a count and of a sum (sums wrap modulo 2**width)"),
        choice("variant", "kogge_stone", VARIANTS, "the scan network"),
        Param("inclusive", 0, 0, 1, "1: inclusive scan; 0: exclusive (pointers: CSR to CSC)"),
        levels_param("adder"),
    )
    # Every variant at N = 8 and 16, then fewer registers for more logic a cycle.
    REPORT = (*({"lanes": n, "width": 16, "variant": v} for n in (8, 16) for v in VARIANTS),
              {"lanes": 16, "width": 16, "variant": "serial", "levels": 4},
              {"lanes": 16, "width": 16, "variant": "kogge_stone", "levels": 2})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.variant = v["lanes"], v["width"], v["variant"]
        self.inclusive, self.levels = v["inclusive"], v["levels"]
        self.network = VARIANTS[self.variant](self.lanes)
        self.latency = stages(len(self.network), self.levels) + 1
        self.adders = sum(map(len, self.network)) + self.lanes   # with the offset row
        super().__init__(PrefixSumSignature(self.lanes, self.width))

    def elaborate(self, platform):
        m = Module()
        W = self.width
        pipe = Pipeline(m, self.counts, self.sums)
        given = self.counts.payload

        def level(pairs):
            def add(state):
                lanes = list(state["lanes"])
                for dst, src in pairs:
                    lanes[dst] = (state["lanes"][dst] + state["lanes"][src])[:W]
                return {**state, "lanes": lanes}
            return add

        scanned = pipe.network({"lanes": list(given.counts), "last": given.last},
                               [level(pairs) for pairs in self.network], self.levels)
        local, last = scanned["lanes"], scanned["last"]

        # The offset row: the carry (the sequence's sum before this vector) added to
        # each lane; the carry takes this vector's total, or 0 after the last vector.
        carry = Signal(W)
        running = pipe.wire((carry + local[-1])[:W], "running")
        with m.If(pipe.advance & pipe.valid):
            m.d.sync += carry.eq(Mux(last, 0, running))
        partial = [(carry + s)[:W] for s in local[:-1]]
        sums = [*partial, running] if self.inclusive else [carry, *partial]
        out = pipe.stage({"sums": sums, "total": running, "last": last})
        pipe.finish()
        payload = self.sums.payload
        m.d.comb += [payload.sums[i].eq(s) for i, s in enumerate(out["sums"])]
        m.d.comb += [payload.total.eq(out["total"]), payload.last.eq(out["last"])]
        return m
