"""The HYTE tiling controller (HYTE Sections 6.2 and 6.4): tile commands in the
inter-tile order, and dynamic tuning of the tuned tensor's tile shape."""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params, choice
from ..core.registry import block
from ..sw import wire
from .hyte_tuner import RULES, TUNED, Tuner, TuningSignature
from .interfaces import struct


def hyte_config_layout(dim_width, count_width):
    """A tiling job, :func:`~sparseforge.sw.wire.hyte_config`."""
    return struct(wire.hyte_config(dim_width, count_width))


def hyte_tile_layout(dim_width):
    """A tile command: :func:`~sparseforge.sw.wire.hyte_tile` for each of
    :data:`~sparseforge.sw.wire.HYTE_DIMS`."""
    return data.ArrayLayout(struct(wire.hyte_tile(dim_width)), len(wire.HYTE_DIMS))


def hyte_counts_layout(count_width):
    """A tile's quadrant counts, :func:`~sparseforge.sw.wire.hyte_counts`."""
    return struct(wire.hyte_counts(count_width))


class HyteControllerSignature(wiring.Signature):
    """The HYTE tiling controller (Sections 6.2, 6.4), seen from it.

    - ``config`` (stream in, :func:`hyte_config_layout`): a job; taken when idle.
    - ``tile`` (stream out, :func:`hyte_tile_layout`): the job's tiles in the inter-tile
      order, the first with every ``change`` 2.
    - ``keep`` (out): held with each ``tile``, whether the command keeps the tuned
      tensor B's tile of the command before (its ``k`` and ``j`` begins and extents the
      same, :func:`~sparseforge.sw.hyte_schedule.hyte_fetches`): it is not fetched, so
      it is not counted.
    - ``counts`` (stream in, :func:`hyte_counts_layout`): one per tile that does not keep
      B's tile, the quadrant counts of that command's B tile; the next tile is sent after
      it.
    """

    def __init__(self, dim_width, count_width):
        super().__init__({
            "config": In(stream.Signature(hyte_config_layout(dim_width, count_width))),
            "tile": Out(stream.Signature(hyte_tile_layout(dim_width))),
            "keep": Out(1),
            "counts": In(stream.Signature(hyte_counts_layout(count_width))),
        })


def _clamped(extent, dim):
    """A tile's extent clamped to its dimension."""
    return Mux(extent > dim, dim, extent)


class TileWalker(wiring.Component):
    """Tile commands over ``I x J x K`` (Section 6.2), taking each tuned shape the
    :class:`~sparseforge.hw.hyte_tuner.Tuner` gives at an aligned change.

    Each command gives ``begin``, ``t`` (the extent, a power of two clamped to the
    dimension) and ``change`` (0 same, 1 advance by the previous ``T``, 2 reset) per
    dimension; the first resets all. Innermost first, the first dimension with another
    tile advances and those inside it reset; none left, the job is done. A tuned
    dimension takes its target at the next command that changes it at a begin aligned
    to the target's extent. A command that keeps B's tile (``keep``) is not measured:
    the target of the last measured one stands.

    ``most_tj``: the largest extent along j the tuning may double to (a power of two).

    Members
    -------
    config, tile, keep: as :class:`HyteControllerSignature` says.
    tuning: the flip of :class:`~sparseforge.hw.hyte_tuner.TuningSignature`; after
    each command that fetches B's tile is taken it sends ``measure``, and steps once
    the target is there (and keeps it).

    Latency: the first command 3 cycles after the config; each next one 4 cycles after
    the target (after a kept command is taken): the change, the begins, the tuned
    extents, the command. ``begin + T``, whether another tile follows and ``keep`` are
    registered while the command waits.
    """

    def __init__(self, dim_width, count_width, most_tj):
        self.dim_width, self.count_width, self.most_tj = dim_width, count_width, most_tj
        members = HyteControllerSignature(dim_width, count_width).members
        super().__init__({"config": members["config"], "tile": members["tile"],
                          "keep": members["keep"],
                          "tuning": In(TuningSignature(dim_width, count_width))})

    def elaborate(self, platform):
        m = Module()
        W, cfg, tile, tuning = self.dim_width, self.config.payload, self.tile, self.tuning
        target = tuning.target.payload

        def per_dim(name, shape):
            return [Signal(shape, name=f"{name}_{d}") for d in wire.HYTE_DIMS]

        dims, begin = per_dim("dim", W), per_dim("begin", W)
        log_t = per_dim("log_t", wire.hyte_log_width(W))
        ext, nbegin = per_dim("ext", W + 1), per_dim("nbegin", W + 1)   # 1 << log_t, begin + T
        clamp = per_dim("clamp", W + 1)        # T: ext clamped to the dimension, as ext is set
        change, more = per_dim("change", 2), per_dim("more", 1)       # more: another tile
        order, bufsize = Signal(3), Signal(self.count_width)
        first = Signal()                        # the next command is the job's first
        kept = Signal.like(target)              # the last target taken
        tuned = [(t, wire.HYTE_DIMS.index(d)) for t, d in enumerate(TUNED)]
        m.d.comb += [tuning.bufsize.eq(bufsize),
                     *(tuning.shape[t].log_t.eq(log_t[d]) for t, d in tuned)]

        with m.FSM():
            with m.State("idle"):
                m.d.comb += self.config.ready.eq(1)
                with m.If(self.config.valid):
                    sizes, logs = (cfg.i, cfg.j, cfg.k), (cfg.log_ti, cfg.log_tj, cfg.log_tk)
                    m.d.sync += [order.eq(cfg.order), bufsize.eq(cfg.bufsize),
                                 *(dims[d].eq(sizes[d]) for d in range(3)),
                                 *(log_t[d].eq(logs[d]) for d in range(3)),
                                 *(ext[d].eq(Const(1, W + 1) << logs[d]) for d in range(3)),
                                 *(clamp[d].eq(_clamped(Const(1, W + 1) << logs[d], sizes[d]))
                                   for d in range(3)),
                                 *(begin[d].eq(0) for d in range(3)),
                                 *(change[d].eq(2) for d in range(3)), first.eq(1)]
                    m.next = "command"
            with m.State("command"):
                for d in range(3):
                    m.d.sync += [tile.payload[d].begin.eq(begin[d]),
                                 tile.payload[d].t.eq(clamp[d]),
                                 tile.payload[d].change.eq(change[d]),
                                 nbegin[d].eq(begin[d] + ext[d])]
                # B's tile is the last command's (still in ``tile``): kept, not measured.
                same = [(tile.payload[d].begin == begin[d]) & (tile.payload[d].t == clamp[d])
                        for _, d in tuned]
                m.d.sync += [self.keep.eq(~first & same[0] & same[1]), first.eq(0)]
                limit = {wire.HYTE_DIMS.index("j"): self.most_tj}
                m.d.sync += [tuning.shape[t].grow.eq((ext[d] < dims[d])
                                                     & (ext[d] < limit.get(d, 1 << W)))
                             for t, d in tuned]
                m.next = "send"
            with m.State("send"):
                m.d.comb += tile.valid.eq(1)
                m.d.sync += [more[d].eq(nbegin[d] < dims[d]) for d in range(3)]
                with m.If(tile.ready):
                    with m.If(self.keep):
                        m.next = "change"
                    with m.Else():
                        m.next = "measure"
            with m.State("measure"):
                m.d.comb += tuning.measure.valid.eq(1)
                with m.If(tuning.measure.ready):
                    m.next = "change"
            # Innermost first: advance the first dimension with another tile, reset the
            # ones inside it; none left, the job is done. A measured command's target is
            # taken here and kept.
            with m.State("change"), m.If(self.keep | tuning.target.valid):
                m.d.comb += tuning.target.ready.eq(~self.keep)
                with m.If(~self.keep):
                    m.d.sync += kept.eq(target)
                with m.Switch(order):
                    for n, name in enumerate(wire.HYTE_ORDERS):
                        with m.Case(n):
                            out, mid, inner = (wire.HYTE_DIMS.index(c) for c in name)
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
                for t, d in tuned:
                    with m.If((change[d] != 0) & ((begin[d] & kept[t].mask) == 0)):
                        m.d.sync += [log_t[d].eq(kept[t].log_t), ext[d].eq(kept[t].extent),
                                     clamp[d].eq(_clamped(kept[t].extent, dims[d]))]
                m.next = "command"
        return m


@block("hyte_controller")
class HyteController(wiring.Component):
    """The tiling controller: tile commands over ``I x J x K``, B's ``Tk x Tj`` tuned.

    A :class:`TileWalker` sends the commands in the order of ``config.order``
    (outermost first); after each that fetches B's tile it waits for that tile's
    quadrant counts, which the :class:`~sparseforge.hw.hyte_tuner.Tuner` weighs
    (Section 6.4: the nine shapes ``{Tk/2, Tk, 2Tk} x {Tj/2, Tj, 2Tj}``, the best taken
    if more than 5% better), and sends the next once the target is known; after one
    that keeps B's tile (``keep``: not fetched, so not counted) the last target stands.

    Parameters
    ----------
    dim_width : bits of a dimension and a coordinate.
    count_width : bits of a quadrant count and of ``bufsize``.
    rule : ``tiles`` (default): a rate of ``(K/T'k)(J/T'j) E / nnz_total``, at most 1;
        ``area``: the paper's formula as printed, ``T'k T'j E / nnz_total``.
    log_most_tj : B's tiles are doubled along j only up to ``2**log_most_tj`` columns
        (an engine's accumulator holds so many); past ``dim_width``, no limit.

    Members
    -------
    As :class:`HyteControllerSignature` says.

    Latency and throughput: the first command 3 cycles after the config; each next one
    22 cycles after the counts of the last (the tuner's 18, the walker's 4), or 4 after
    a command that keeps B's tile is taken; one adder or compare deep per cycle. Tiles
    last far longer than that.
    """

    PARAMS = (Param("dim_width", 16, 2, 32, "bits of a dimension"),
              Param("count_width", 16, 4, 32, "bits of a quadrant count and bufsize"),
              choice("rule", "tiles", RULES, "hit-rate estimate"),
              Param("log_most_tj", 32, 0, 32, "log2 of the widest B tile tuning makes"))
    REPORT = ({}, {"dim_width": 24, "count_width": 24})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.dim_width, self.count_width, self.rule = (v["dim_width"], v["count_width"],
                                                       v["rule"])
        self.most_tj = 1 << min(v["log_most_tj"], self.dim_width)
        super().__init__(HyteControllerSignature(self.dim_width, self.count_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.walker = walker = TileWalker(self.dim_width, self.count_width,
                                                       self.most_tj)
        m.submodules.tuner = tuner = Tuner(self.dim_width, self.count_width, self.rule)
        wiring.connect(m, wiring.flipped(self.config), walker.config)
        wiring.connect(m, walker.tile, wiring.flipped(self.tile))
        m.d.comb += self.keep.eq(walker.keep)
        wiring.connect(m, wiring.flipped(self.counts), tuner.counts)
        wiring.connect(m, walker.tuning, tuner.tuning)
        return m
