"""The HYTE tiling controller (HYTE Sections 6.2 and 6.4): tile commands in the
inter-tile order, and dynamic tuning of the tuned tensor's tile shape."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
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
    about 22 cycles after the counts of the last, one adder or compare deep per cycle:
    the half sums, each group's ``min(scale nnz, bufsize)`` and the total, the
    candidates' sums, then the nine weighted scores shifting past one compare (no
    wide mux), ``20 best`` and ``21 current`` registered before their compare, then the
    iteration step (``begin + T`` and the target's mask and extent registered ahead of
    their uses, the extents ``1 << log_t`` kept beside ``log_t``). Tiles last far
    longer than that.
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
        ext = Array(Signal(W + 1, name=f"ext_{d}") for d in "ijk")   # 1 << log_t, kept
        begin = Array(Signal(W, name=f"begin_{d}") for d in "ijk")
        nbegin = Array(Signal(W + 1, name=f"nbegin_{d}") for d in "ijk")  # begin + T
        change = Array(Signal(2, name=f"change_{d}") for d in "ijk")
        more = Array(Signal(name=f"more_{d}") for d in "ijk")      # another tile along d
        grow = Array(Signal(name=f"grow_{d}") for d in "ijk")      # 2T within the dimension
        target = {d: Signal(L, name=f"target_{d}") for d in (1, 2)}  # j, k
        tmask = {d: Signal(W, name=f"tmask_{d}") for d in (1, 2)}     # bits below target
        text = {d: Signal(W + 1, name=f"text_{d}") for d in (1, 2)}   # 1 << target
        order, bufsize = Signal(3), Signal(cw)
        one = Const(1, W + 1)

        # Counts, their half sums and total, each group's min(scale nnz, bufsize), then
        # the candidates' sums: one adder or compare deep per state.
        cnt = {rc: Signal(cw, name=f"cnt{rc}") for rc in ("00", "01", "10", "11")}
        half = {n: Signal(cw + 1, name=n) for n in ("k0", "k1", "j0", "j1")}
        total = Signal(cw + 2)
        capped = {}

        def cap(name, g, scale):
            capped[name, scale] = sig = Signal(cw, name=f"cap_{name}_{scale}")
            return sig.eq(Mux((g << scale) > bufsize, bufsize, g << scale))

        raw = {ab: Signal(cw + 2, name=f"raw{ab[0]}{ab[1]}") for ab in SCAN}
        pair = (Signal(cw + 1, name="pair_k0"), Signal(cw + 1, name="pair_k1"))
        # The scan: the nine weighted scores shift past one compare, a cycle each.
        WB = cw + 9
        sh_w = [Signal(WB, name=f"sh_w{n}") for n in range(len(SCAN))]
        sh_ok = [Signal(name=f"sh_ok{n}") for n in range(len(SCAN))]
        sh_ab = [Signal(4, name=f"sh_ab{n}") for n in range(len(SCAN))]
        step = Signal(range(len(SCAN) + 1))
        best, current, best_ab = Signal(WB), Signal(WB), Signal(4)
        best20, cur20, cur21 = Signal(WB + 5), Signal(WB + 5), Signal(WB + 5)
        better = Signal()
        tile = self.tile

        with m.FSM():
            with m.State("idle"):
                m.d.comb += self.config.ready.eq(1)
                with m.If(self.config.valid):
                    logs = (cfg.log_ti, cfg.log_tj, cfg.log_tk)
                    m.d.sync += [dims[0].eq(cfg.i), dims[1].eq(cfg.j), dims[2].eq(cfg.k),
                                 *(log_t[d].eq(logs[d]) for d in range(3)),
                                 *(ext[d].eq(one << logs[d]) for d in range(3)),
                                 target[1].eq(cfg.log_tj), target[2].eq(cfg.log_tk),
                                 order.eq(cfg.order), bufsize.eq(cfg.bufsize),
                                 *(begin[d].eq(0) for d in range(3)),
                                 *(change[d].eq(2) for d in range(3))]
                    m.next = "command"
            with m.State("command"):
                for d, name in enumerate("ijk"):
                    m.d.sync += [getattr(tile.payload, f"begin_{name}").eq(begin[d]),
                                 getattr(tile.payload, f"t_{name}").eq(
                                     Mux(ext[d] > dims[d], dims[d], ext[d])),
                                 getattr(tile.payload, f"change_{name}").eq(change[d]),
                                 grow[d].eq(ext[d] < dims[d])]
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
                for a, b in SCAN:
                    if a == 0 and b == 0:
                        m.d.sync += raw[a, b].eq(pair[0] + pair[1])
                    elif a == 0:
                        m.d.sync += raw[a, b].eq(capped["k0", b // 2] + capped["k1", b // 2])
                    elif b == 0:
                        m.d.sync += raw[a, b].eq(capped["j0", a // 2] + capped["j1", a // 2])
                m.next = "load"
            with m.State("load"):
                for n, (a, b) in enumerate(SCAN):
                    value = raw[a, b] if 0 in (a, b) else capped["t", (a == 2) + (b == 2)]
                    ok = 1
                    for d, c in ((2, a), (1, b)):
                        ok &= (log_t[d] != 0) if c == 0 else grow[d] if c == 2 else 1
                    m.d.sync += [sh_w[n].eq(value << SHIFTS[self.rule][a, b]),
                                 sh_ok[n].eq(ok), sh_ab[n].eq(4 * a + b)]
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
                for d, ab in ((2, best_ab[2:]), (1, best_ab[:2])):
                    m.d.sync += target[d].eq(Mux(better, log_t[d] + ab - 1, log_t[d]))
                m.d.sync += [nbegin[d].eq(begin[d] + ext[d]) for d in range(3)]
                m.next = "more"
            with m.State("more"):
                m.d.sync += [more[d].eq(nbegin[d] < dims[d]) for d in range(3)]
                for d in (1, 2):
                    below = Cat(target[d].any(), *(target[d] > i for i in range(1, W)))
                    m.d.sync += [tmask[d].eq(below),
                                 text[d].eq(one << target[d])]
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
                        m.d.sync += begin[d].eq(nbegin[d])
                    with m.Elif(change[d] == 2):
                        m.d.sync += begin[d].eq(0)
                m.next = "apply"
            with m.State("apply"):
                for d in (1, 2):
                    with m.If((change[d] != 0) & ((begin[d] & tmask[d]) == 0)):
                        m.d.sync += [log_t[d].eq(target[d]), ext[d].eq(text[d])]
                m.next = "command"
        return m
