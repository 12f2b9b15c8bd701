"""The HYTE tiling controller's tuner (HYTE Section 6.4): the tuned tensor's next tile
shape, weighed from the quadrant counts of the last one."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..sw import wire
from .interfaces import struct

RULES = ("tiles", "area")

TUNED = ("j", "k")
"""The tuned tensor B's dimensions (``K x J``), in the order the tuning members list them."""

# The nine candidates (a, b) along k and j (0 halve, 1 keep, 2 double), the current
# shape first so that it wins a tie, then the others by number 3 a + b.
SCAN = [(1, 1)] + [(a, b) for a in range(3) for b in range(3) if (a, b) != (1, 1)]
# Shift making each candidate's rate an integer multiple of one constant, per rule:
# 4 / (T'k T'j / Tk Tj * sub-tiles) for "tiles", 16 T'k T'j / (Tk Tj sub-tiles) for "area".
SHIFTS = {"tiles": {(0, 0): 2, (0, 1): 2, (0, 2): 1, (1, 0): 2, (1, 1): 2, (1, 2): 1,
                    (2, 0): 1, (2, 1): 1, (2, 2): 0},
          "area": {(0, 0): 0, (0, 1): 2, (0, 2): 3, (1, 0): 2, (1, 1): 4, (1, 2): 5,
                   (2, 0): 3, (2, 1): 5, (2, 2): 6}}


def score_width(count_width):
    """Bits of a weighted score: a sum of four capped counts, shifted by up to 6."""
    return count_width + 9


def scores_layout(count_width, rule):
    """The nine weighted scores, a field ``c<a><b>`` per candidate in :data:`SCAN`
    order, each as wide as its value: a sum of capped groups (a candidate that halves),
    else one capped total, shifted."""
    return data.StructLayout({f"c{a}{b}": count_width + 2 * (0 in (a, b)) + SHIFTS[rule][a, b]
                              for a, b in SCAN})


class TuningSignature(wiring.Signature):
    """The tiling controller's walker and tuner joined, seen from the tuner.

    - ``bufsize`` (in): the tuned tensor's buffer in words, held for a job.
    - ``shape`` (in, per dimension of :data:`TUNED`): the last command's ``log_t`` and
      ``grow`` (its tile does not span the dimension, so it may double); held from that
      command until its ``target`` is taken.
    - ``measure`` (stream in, no payload): the last command is out; taken with its
      quadrant counts.
    - ``target`` (stream out, per dimension of :data:`TUNED`): one per measure, the
      shape to take at the dimension's next aligned change: ``log_t``, ``extent`` (``1
      << log_t``) and ``mask`` (a begin's bits below ``extent``).
    """

    def __init__(self, dim_width, count_width):
        L = wire.hyte_log_width(dim_width)
        shape = data.StructLayout({"log_t": L, "grow": 1})
        target = data.StructLayout({"log_t": L, "extent": dim_width + 1, "mask": dim_width})
        super().__init__({
            "bufsize": In(count_width),
            "shape": In(data.ArrayLayout(shape, len(TUNED))),
            "measure": In(stream.Signature(0)),
            "target": Out(stream.Signature(data.ArrayLayout(target, len(TUNED)))),
        })


class Scorer(wiring.Component):
    """The nine candidates' weighted scores from a tile's quadrant counts.

    Each is ``sum of min(scale nnz, bufsize)`` over the candidate's sub-tiles, shifted
    so that every rate is a multiple of one constant (``nnz_total`` and the tile counts
    cancel: no divider), as :mod:`sparseforge.sim.models.hyte_controller` states.

    Members
    -------
    counts (stream in): the quadrant counts, taken with ``measure``.
    measure (stream in, no payload): a tile to weigh; ``bufsize`` (in): held for a job.
    scores (stream out): the weighted scores in :data:`SCAN` order, 4 cycles after the
    counts: the half sums, each group's ``min(scale nnz, bufsize)`` and the total, the
    candidates' sums, one adder or compare deep per cycle.
    """

    def __init__(self, count_width, rule):
        self.count_width, self.rule = count_width, rule
        super().__init__({
            "counts": In(stream.Signature(struct(wire.hyte_counts(count_width)))),
            "measure": In(stream.Signature(0)),
            "bufsize": In(count_width),
            "scores": Out(stream.Signature(scores_layout(count_width, rule))),
        })

    def elaborate(self, platform):
        m = Module()
        cw, counts, bufsize = self.count_width, self.counts, self.bufsize
        cnt = {rc: Signal(cw, name=f"cnt{rc}") for rc in ("00", "01", "10", "11")}
        half = {n: Signal(cw + 1, name=n) for n in ("k0", "k1", "j0", "j1")}
        total = Signal(cw + 2)
        capped = {}

        def cap(name, g, scale):
            capped[name, scale] = sig = Signal(cw, name=f"cap_{name}_{scale}")
            return sig.eq(Mux((g << scale) > bufsize, bufsize, g << scale))

        raw = {ab: Signal(cw + 2, name=f"raw{ab[0]}{ab[1]}") for ab in SCAN if 0 in ab}
        pair = (Signal(cw + 1, name="pair_k0"), Signal(cw + 1, name="pair_k1"))
        with m.FSM():
            with m.State("idle"):
                m.d.comb += [counts.ready.eq(self.measure.valid),
                             self.measure.ready.eq(counts.valid)]
                with m.If(counts.valid & self.measure.valid):
                    m.d.sync += [cnt[rc].eq(getattr(counts.payload, f"cnt{rc}"))
                                 for rc in cnt]
                    m.next = "halves"
            with m.State("halves"):
                m.d.sync += [half["k0"].eq(cnt["00"] + cnt["01"]),
                             half["k1"].eq(cnt["10"] + cnt["11"]),
                             half["j0"].eq(cnt["00"] + cnt["10"]),
                             half["j1"].eq(cnt["01"] + cnt["11"]),
                             *(cap(rc, cnt[rc], 0) for rc in cnt)]
                m.next = "caps"
            with m.State("caps"):
                m.d.sync += [total.eq(half["k0"] + half["k1"]),
                             *(cap(n, half[n], s) for n in half for s in (0, 1)),
                             pair[0].eq(capped["00", 0] + capped["01", 0]),
                             pair[1].eq(capped["10", 0] + capped["11", 0])]
                m.next = "totals"
            with m.State("totals"):
                m.d.sync += [cap("t", total, s) for s in (0, 1, 2)]
                for a, b in raw:
                    if a == 0 and b == 0:
                        m.d.sync += raw[a, b].eq(pair[0] + pair[1])
                    elif a == 0:
                        m.d.sync += raw[a, b].eq(capped["k0", b // 2] + capped["k1", b // 2])
                    else:
                        m.d.sync += raw[a, b].eq(capped["j0", a // 2] + capped["j1", a // 2])
                m.next = "scores"
            with m.State("scores"):
                m.d.comb += self.scores.valid.eq(1)
                for a, b in SCAN:
                    value = raw[a, b] if 0 in (a, b) else capped["t", (a == 2) + (b == 2)]
                    m.d.comb += self.scores.payload[f"c{a}{b}"].eq(
                        value << SHIFTS[self.rule][a, b])
                with m.If(self.scores.ready):
                    m.next = "idle"
        return m


class Chooser(wiring.Component):
    """The target shape from the candidates' scores: the best if ``20 best > 21
    current`` (more than 5% better), else the measured shape; the current shape wins a
    tie, then the lowest candidate number. Shapes never halve below 1 nor double past a
    tile spanning its dimension.

    Members
    -------
    scores (stream in): as :class:`Scorer` gives them.
    shape (in), target (stream out): as :class:`TuningSignature` says.

    Latency: the target 14 cycles after the scores: the nine scores shifting past one
    compare (no wide mux), ``20 best`` and ``21 current`` registered before their
    compare, the target, then its extent and mask.
    """

    def __init__(self, dim_width, count_width, rule):
        self.dim_width, self.count_width = dim_width, count_width
        tuning = TuningSignature(dim_width, count_width).members
        super().__init__({
            "scores": In(stream.Signature(scores_layout(count_width, rule))),
            "shape": tuning["shape"],
            "target": tuning["target"],
        })

    def elaborate(self, platform):
        m = Module()
        W, WB, shape = self.dim_width, score_width(self.count_width), self.shape
        sh_w = [Signal(WB, name=f"sh_w{n}") for n in range(len(SCAN))]
        sh_ok = [Signal(name=f"sh_ok{n}") for n in range(len(SCAN))]
        sh_ab = [Signal(4, name=f"sh_ab{n}") for n in range(len(SCAN))]
        step = Signal(range(len(SCAN) + 1))
        best, current, best_ab = Signal(WB), Signal(WB), Signal(4)
        best20, cur20, cur21 = Signal(WB + 5), Signal(WB + 5), Signal(WB + 5)
        better = Signal()
        target = self.target.payload
        j, k = (TUNED.index(d) for d in "jk")
        with m.FSM():
            with m.State("idle"):
                m.d.comb += self.scores.ready.eq(1)
                with m.If(self.scores.valid):
                    for n, (a, b) in enumerate(SCAN):
                        ok = 1
                        for d, c in ((k, a), (j, b)):
                            ok &= ((shape[d].log_t != 0) if c == 0 else
                                   shape[d].grow if c == 2 else 1)
                        m.d.sync += [sh_w[n].eq(self.scores.payload[f"c{a}{b}"]),
                                     sh_ok[n].eq(ok),
                                     sh_ab[n].eq(4 * a + b)]
                    m.d.sync += step.eq(0)
                    m.next = "scan"
            with m.State("scan"):
                # The head candidate is kept if strictly the best so far (the first, the
                # current shape, always); the rest shift up.
                m.d.sync += [step.eq(step + 1),
                             *(sh_w[n].eq(sh_w[n + 1]) for n in range(len(SCAN) - 1)),
                             *(sh_ok[n].eq(sh_ok[n + 1]) for n in range(len(SCAN) - 1)),
                             *(sh_ab[n].eq(sh_ab[n + 1]) for n in range(len(SCAN) - 1)),
                             cur20.eq((current << 4) + (current << 2)),
                             cur21.eq(cur20 + current)]
                with m.If(sh_ok[0] & ((step == 0) | (sh_w[0] > best))):
                    m.d.sync += [best.eq(sh_w[0]), best_ab.eq(sh_ab[0])]
                with m.If(step == 0):
                    m.d.sync += current.eq(sh_w[0])
                with m.If(step == len(SCAN) - 1):
                    m.next = "weigh"
            with m.State("weigh"):                  # the 5% rule: 20 best > 21 current
                m.d.sync += [best20.eq((best << 4) + (best << 2)),
                             cur21.eq(cur20 + current)]
                m.next = "compare"
            with m.State("compare"):
                m.d.sync += better.eq(best20 > cur21)
                m.next = "decide"
            with m.State("decide"):
                for d, ab in ((k, best_ab[2:]), (j, best_ab[:2])):
                    m.d.sync += target[d].log_t.eq(Mux(better, shape[d].log_t + ab - 1,
                                                       shape[d].log_t))
                m.next = "extent"
            with m.State("extent"):
                for d in (j, k):
                    log_t = target[d].log_t
                    m.d.sync += [target[d].mask.eq(Cat(log_t.any(),
                                                       *(log_t > i for i in range(1, W)))),
                                 target[d].extent.eq(Const(1, W + 1) << log_t)]
                m.next = "done"
            with m.State("done"):
                m.d.comb += self.target.valid.eq(1)
                with m.If(self.target.ready):
                    m.next = "idle"
        return m


class Tuner(wiring.Component):
    """The tuner: a :class:`Scorer` and a :class:`Chooser`, the target 18 cycles after
    the counts.

    Members
    -------
    counts (stream in): the quadrant counts of the tile ``measure`` announces.
    tuning: :class:`TuningSignature`.
    """

    def __init__(self, dim_width, count_width, rule):
        self.dim_width, self.count_width, self.rule = dim_width, count_width, rule
        super().__init__({
            "counts": In(stream.Signature(struct(wire.hyte_counts(count_width)))),
            "tuning": Out(TuningSignature(dim_width, count_width)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.scorer = scorer = Scorer(self.count_width, self.rule)
        m.submodules.chooser = chooser = Chooser(self.dim_width, self.count_width, self.rule)
        tuning = self.tuning
        wiring.connect(m, wiring.flipped(self.counts), scorer.counts)
        wiring.connect(m, wiring.flipped(tuning.measure), scorer.measure)
        wiring.connect(m, scorer.scores, chooser.scores)
        wiring.connect(m, chooser.target, wiring.flipped(tuning.target))
        m.d.comb += [scorer.bufsize.eq(tuning.bufsize), chooser.shape.eq(tuning.shape)]
        return m
