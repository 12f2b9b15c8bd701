"""The HYTE tiling controller (HYTE Sections 6.2 and 6.4): tile commands in the
inter-tile order, and dynamic tuning of the tuned tensor's tile shape."""

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib import wiring

from ..params import Param, check_params, choice
from ..registry import block
from .interfaces import HYTE_ORDERS, HyteControllerSignature

RULES = ("tiles", "area")

# The nine candidates (a, b) along k and j (0 halve, 1 keep, 2 double), the current
# shape first so that it wins a tie, then the others by number 3 a + b.
SCAN = [(1, 1)] + [(a, b) for a in range(3) for b in range(3) if (a, b) != (1, 1)]
# Shift making each candidate's rate an integer multiple of one constant, per rule:
# 4 / (T'k T'j / Tk Tj * sub-tiles) for "tiles", 16 T'k T'j / (Tk Tj sub-tiles) for "area".
SHIFTS = {"tiles": {(0, 0): 2, (0, 1): 2, (0, 2): 1, (1, 0): 2, (1, 1): 2, (1, 2): 1,
                    (2, 0): 1, (2, 1): 1, (2, 2): 0},
          "area": {(0, 0): 0, (0, 1): 2, (0, 2): 3, (1, 0): 2, (1, 1): 4, (1, 2): 5,
                   (2, 0): 3, (2, 1): 5, (2, 2): 6}}


@block("hyte_controller")
class HyteController(wiring.Component):
    """The tiling controller: tile commands over ``I x J x K``, B's ``Tk x Tj`` tuned.

    Inter-tile iteration (6.2): each command gives ``begin``, ``t`` (the extent, a power
    of two clamped to the dimension) and ``change`` (0 same, 1 advance by the previous
    ``T``, 2 reset) per dimension, in the order of ``config.order`` (outermost first);
    the first resets all. After each command it waits for that command's B-tile
    quadrant counts, and sends the next once it has weighed them.

    Dynamic tuning (6.4): the nine shapes ``{Tk/2, Tk, 2Tk} x {Tj/2, Tj, 2Tj}`` are
    scored from the counts as :mod:`sparseforge.sim.models.hyte_controller` states
    (``sum of min(scale nnz, bufsize)`` over the sub-tiles, shifted so every rate is
    a multiple of one constant: ``nnz_total`` and the tile counts cancel, so the
    hardware needs neither and no divider); the best becomes the target if ``20 best >
    21 current`` (more than 5% better), else the measured shape does. A dimension takes
    its target at the next command that changes it at a begin aligned to the new extent.
    Shapes never halve below 1 nor double past a tile spanning its dimension.

    Parameters
    ----------
    dim_width : bits of a dimension and a coordinate.
    count_width : bits of a quadrant count and of ``bufsize``.
    rule : ``tiles`` (default): a rate of ``(K/T'k)(J/T'j) E / nnz_total``, at most 1;
        ``area``: the paper's formula as printed, ``T'k T'j E / nnz_total``.

    Members
    -------
    As :class:`~sparseforge.hw.interfaces.HyteControllerSignature` says.

    Latency and throughput: the first command 3 cycles after the config; each next one
    about 18 cycles after the counts of the last (registered half sums, the nine
    candidates scored one a cycle through a two-stage pipeline, the 5% compare, then
    the iteration step in four registered stages), so each stage holds about one adder
    and a compare. Tiles last far longer than that.
    """

    PARAMS = (Param("dim_width", 16, 2, 32, "bits of a dimension"),
              Param("count_width", 16, 4, 32, "bits of a quadrant count and bufsize"),
              choice("rule", "tiles", RULES, "hit-rate estimate"))
    REPORT = ({}, {"dim_width": 24, "count_width": 24})

    def __init__(self, dim_width=16, count_width=16, rule="tiles"):
        v = check_params(self.PARAMS, {"dim_width": dim_width, "count_width": count_width,
                                       "rule": rule})
        self.dim_width, self.count_width, self.rule = (v["dim_width"], v["count_width"],
                                                       v["rule"])
        super().__init__(HyteControllerSignature(self.dim_width, self.count_width))

    def elaborate(self, platform):
        m = Module()
        W, cw = self.dim_width, self.count_width
        cfg = self.config.payload
        L = len(cfg.log_ti)
        dims = Array(Signal(W, name=f"dim_{d}") for d in "ijk")
        log_t = Array(Signal(L, name=f"log_t{d}") for d in "ijk")
        begin = Array(Signal(W, name=f"begin_{d}") for d in "ijk")
        change = Array(Signal(2, name=f"change_{d}") for d in "ijk")
        more = Array(Signal(name=f"more_{d}") for d in "ijk")      # another tile along d
        target = {d: Signal(L, name=f"target_{d}") for d in (1, 2)}  # j, k
        order, bufsize = Signal(3), Signal(cw)

        def extent(d):
            return Const(1, W + 1) << log_t[d]

        # Counts, their half sums, and the candidates' scoring pipeline.
        cnt = {rc: Signal(cw, name=f"cnt{rc}") for rc in ("00", "01", "10", "11")}
        half = {n: Signal(cw + 1, name=n) for n in ("k0", "k1", "j0", "j1")}
        total = Signal(cw + 2)
        step = Signal(range(len(SCAN) + 1))
        sc_valid, sc_first = Signal(), Signal()
        sc_raw, sc_ab = Signal(cw + 5), Signal(4)
        best, current, best_ab = Signal(cw + 11), Signal(cw + 11), Signal(4)
        tile = self.tile

        with m.FSM():
            with m.State("idle"):
                m.d.comb += self.config.ready.eq(1)
                with m.If(self.config.valid):
                    m.d.sync += [dims[0].eq(cfg.i), dims[1].eq(cfg.j), dims[2].eq(cfg.k),
                                 log_t[0].eq(cfg.log_ti), log_t[1].eq(cfg.log_tj),
                                 log_t[2].eq(cfg.log_tk), target[1].eq(cfg.log_tj),
                                 target[2].eq(cfg.log_tk), order.eq(cfg.order),
                                 bufsize.eq(cfg.bufsize),
                                 *(begin[d].eq(0) for d in range(3)),
                                 *(change[d].eq(2) for d in range(3))]
                    m.next = "command"
            with m.State("command"):
                for d, name in enumerate("ijk"):
                    t = extent(d)
                    m.d.sync += [getattr(tile.payload, f"begin_{name}").eq(begin[d]),
                                 getattr(tile.payload, f"t_{name}").eq(
                                     Mux(t > dims[d], dims[d], t)),
                                 getattr(tile.payload, f"change_{name}").eq(change[d])]
                m.next = "send"
            with m.State("send"):
                m.d.comb += tile.valid.eq(1)
                with m.If(tile.ready):
                    m.next = "counts"
            with m.State("counts"):
                m.d.comb += self.counts.ready.eq(1)
                with m.If(self.counts.valid):
                    m.d.sync += [cnt[rc].eq(getattr(self.counts.payload, f"cnt{rc}"))
                                 for rc in cnt]
                    m.next = "sums"
            with m.State("sums"):
                m.d.sync += [half["k0"].eq(cnt["00"] + cnt["01"]),
                             half["k1"].eq(cnt["10"] + cnt["11"]),
                             half["j0"].eq(cnt["00"] + cnt["10"]),
                             half["j1"].eq(cnt["01"] + cnt["11"]),
                             step.eq(0)]
                m.next = "score"
            with m.State("score"):
                m.d.comb += total.eq(half["k0"] + half["k1"])
                # Stage 1: candidate ``step``'s sum of min(scale nnz, bufsize), if allowed.
                with m.If(step != len(SCAN)):
                    m.d.sync += step.eq(step + 1)
                m.d.sync += [sc_valid.eq(0), sc_first.eq(step == 0)]
                with m.Switch(step):
                    for n, (a, b) in enumerate(SCAN):
                        with m.Case(n):
                            self._candidate(m, a, b, cnt, half, total, bufsize, log_t, dims,
                                            sc_raw, sc_valid, sc_ab, extent)
                # Stage 2: the rate, kept if strictly the best so far.
                weighted = Signal(cw + 11)
                with m.Switch(sc_ab):
                    for (a, b), shift in SHIFTS[self.rule].items():
                        with m.Case(4 * a + b):
                            m.d.comb += weighted.eq(sc_raw << shift)
                with m.If(sc_valid & (sc_first | (weighted > best))):
                    m.d.sync += [best.eq(weighted), best_ab.eq(sc_ab)]
                with m.If(sc_valid & sc_first):
                    m.d.sync += current.eq(weighted)
                with m.If((step == len(SCAN)) & ~sc_valid):
                    m.next = "decide"
            with m.State("decide"):
                better = (best << 4) + (best << 2) > (current << 4) + (current << 2) + current
                for d, ab in ((2, best_ab[2:]), (1, best_ab[:2])):
                    m.d.sync += target[d].eq(Mux(better, log_t[d] + ab - 1, log_t[d]))
                m.next = "more"
            with m.State("more"):
                m.d.sync += [more[d].eq(begin[d] + extent(d) < dims[d]) for d in range(3)]
                m.next = "change"
            # Innermost first: advance the first dimension with another tile, reset the
            # ones inside it; none left, the job is done.
            with m.State("change"), m.Switch(order):
                for n, name in enumerate(HYTE_ORDERS):
                    with m.Case(n):
                        out, mid, inner = ("ijk".index(c) for c in name)
                        m.d.sync += [
                            change[inner].eq(Mux(more[inner], 1, 2)),
                            change[mid].eq(Mux(more[inner], 0, Mux(more[mid], 1, 2))),
                            change[out].eq(Mux(more[inner] | more[mid], 0,
                                               Mux(more[out], 1, 2)))]
                        with m.If(more[inner] | more[mid] | more[out]):
                            m.next = "advance"
                        with m.Else():
                            m.next = "idle"
            with m.State("advance"):
                for d in range(3):
                    with m.If(change[d] == 1):
                        m.d.sync += begin[d].eq(begin[d] + extent(d))
                    with m.Elif(change[d] == 2):
                        m.d.sync += begin[d].eq(0)
                m.next = "apply"
            with m.State("apply"):
                for d in (1, 2):
                    mask = (Const(1, W + 1) << target[d]) - 1
                    with m.If((change[d] != 0) & ((begin[d] & mask) == 0)):
                        m.d.sync += log_t[d].eq(target[d])
                m.next = "command"
        return m

    def _candidate(self, m, a, b, cnt, half, total, bufsize, log_t, dims, raw, valid, ab,
                   extent):
        """Register candidate ``(a, b)``'s score numerator, whether allowed, and its id."""
        if a == 0 and b == 0:
            groups = [cnt[rc] for rc in ("00", "01", "10", "11")]
        elif a == 0:
            groups = [half["k0"], half["k1"]]
        elif b == 0:
            groups = [half["j0"], half["j1"]]
        else:
            groups = [total]
        scale = (a == 2) + (b == 2)
        terms = []
        for n, g in enumerate(groups):
            terms.append(Signal(len(bufsize), name=f"min{a}{b}_{n}"))
            m.d.comb += terms[-1].eq(Mux((g << scale) > bufsize, bufsize, g << scale))
        ok = 1
        for d, c in ((2, a), (1, b)):
            if c == 0:
                ok &= log_t[d] != 0
            elif c == 2:
                ok &= extent(d) < dims[d]
        m.d.sync += [raw.eq(sum(terms)), valid.eq(ok), ab.eq(4 * a + b)]
