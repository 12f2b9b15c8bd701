# amaranth: UnusedElaboratable=no
"""HYTE's tiling loop closed in hardware (Sections 6.2-6.4): the tiling controller's
commands, B's tiles in a tensor accessor that counts their quadrants, and the
controller tuning B's tile shape from those counts."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...core.errors import ParameterError
from ...core.params import Param, check_params, choice
from ...core.registry import block
from ...sw import wire
from ..hyte_accessor import HyteAccessor
from ..hyte_controller import HyteController, hyte_config_layout, hyte_tile_layout
from ..hyte_tuner import RULES
from ..interfaces import struct

K, J = wire.HYTE_DIMS.index("k"), wire.HYTE_DIMS.index("j")


class QuadrantSpec(wiring.Component):
    """Each tile command, and the tile of B the accessor is to count for it.

    The job passes through (its ``k`` kept); each command goes to the parent and, on
    the same cycle, B's tile to the accessor: its rows, the command's ``t_k`` cut off at
    ``K``, split at half of ``t_k`` (at least 1), and its columns split at ``b_j`` plus
    half of ``t_j``. The controller sends a command only once the last one's counts are
    taken, so the accessor's counter is free to take it.

    Members
    -------
    job : In(stream(:func:`~..hyte_controller.hyte_config_layout`)); config : Out(...)
    commands : In(stream(:func:`~..hyte_controller.hyte_tile_layout`)); tile : Out(...)
    quadrants : Out(stream(:func:`~sparseforge.sw.wire.hyte_quadrants`))
    """

    def __init__(self, dim_width, count_width):
        self.dim_width = dim_width
        config = stream.Signature(hyte_config_layout(dim_width, count_width))
        tile = stream.Signature(hyte_tile_layout(dim_width))
        super().__init__({
            "job": In(config), "config": Out(config),
            "commands": In(tile), "tile": Out(tile),
            "quadrants": Out(stream.Signature(struct(wire.hyte_quadrants(count_width,
                                                                         dim_width))))})

    def elaborate(self, platform):
        m = Module()
        job, config, commands, tile, quadrants = (self.job, self.config, self.commands,
                                                  self.tile, self.quadrants)
        k = Signal(self.dim_width)
        m.d.comb += [config.valid.eq(job.valid), config.payload.eq(job.payload),
                     job.ready.eq(config.ready)]
        with m.If(job.valid & job.ready):
            m.d.sync += k.eq(job.payload.k)
        cmd = commands.payload
        (bk, tk), (bj, tj) = ((cmd[d].begin, cmd[d].t) for d in (K, J))
        left = Signal(self.dim_width)
        m.d.comb += [left.eq(k - bk),
                     tile.payload.eq(cmd),
                     tile.valid.eq(commands.valid & quadrants.ready),
                     quadrants.valid.eq(commands.valid & tile.ready),
                     commands.ready.eq(tile.ready & quadrants.ready),
                     quadrants.payload.rows.eq(Mux(left < tk, left, tk)),
                     quadrants.payload.split_k.eq(Mux(tk > 1, tk >> 1, 1)),
                     quadrants.payload.split_j.eq(bj + Mux(tj > 1, tj >> 1, 1))]
        return m


@block("hyte_tiling")
class HyteTiling(wiring.Component):
    """The tiling controller and B's accessor, the tuning loop between them closed.

    A :class:`~..hyte_controller.HyteController` sends the job's tile commands; a
    :class:`QuadrantSpec` hands each to the parent and tells the
    :class:`~..hyte_accessor.HyteAccessor` which tile of B to count; the parent fetches
    that tile into the accessor (a segment per row of B in the tile, a word per element,
    its column in the word's low ``dim_width`` bits), reads and evicts it; the
    accessor's quadrant counts go to the controller, which tunes B's shape from them and
    sends the next command.

    Parameters
    ----------
    dim_width, rule : the controller's; count_width : the controller's and the
        accessor's (at least 16).
    depth, width : the accessor's (``width`` at least ``dim_width``).

    Members
    -------
    config, tile : the controller's (:class:`~..hyte_controller.HyteControllerSignature`).
    mode, capacity, segment, fill, read, read_data, evict, occupancy, free, bypass :
        the accessor's (:class:`~..hyte_accessor.HyteAccessorSignature`).

    Latency and throughput: the controller's and the accessor's; the counts leave the
    accessor two cycles after the tile's last word.
    """

    PARAMS = (Param("dim_width", 16, 2, 32, "bits of a dimension"),
              Param("count_width", 16, 16, 32, "bits of a quadrant count and bufsize"),
              choice("rule", "tiles", RULES, "hit-rate estimate"),
              Param("depth", 64, 4, 1 << 15, "the accessor's words", pow2=True),
              Param("width", 32, 2, 256, "bits of a word of B"))
    REPORT = ({},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        if v["width"] < v["dim_width"]:
            raise ParameterError(f"width={v['width']}: a word of B holds its column, "
                                 f"dim_width={v['dim_width']} bits, and more")
        self.dim_width, self.count_width = v["dim_width"], v["count_width"]
        self.controller = HyteController(dim_width=v["dim_width"],
                                         count_width=v["count_width"], rule=v["rule"])
        self.rule = self.controller.rule
        self.accessor = HyteAccessor(depth=v["depth"], width=v["width"],
                                     count_width=v["count_width"],
                                     coord_width=v["dim_width"])
        self.spec = QuadrantSpec(v["dim_width"], v["count_width"])
        ctl, acc = self.controller.signature.members, self.accessor.signature.members
        super().__init__({
            "config": ctl["config"], "tile": ctl["tile"],
            **{n: acc[n] for n in ("mode", "capacity", "segment", "fill", "read",
                                   "read_data", "evict", "occupancy", "free", "bypass")}})

    def elaborate(self, platform):
        m = Module()
        ctl, acc, spec = self.controller, self.accessor, self.spec
        m.submodules.controller, m.submodules.accessor, m.submodules.spec = ctl, acc, spec
        wiring.connect(m, wiring.flipped(self.config), spec.job)
        wiring.connect(m, spec.config, ctl.config)
        wiring.connect(m, ctl.tile, spec.commands)
        wiring.connect(m, spec.tile, wiring.flipped(self.tile))
        wiring.connect(m, spec.quadrants, acc.tile)
        wiring.connect(m, acc.counts, ctl.counts)
        for name in ("segment", "fill", "read", "evict"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(acc, name))
        wiring.connect(m, acc.read_data, wiring.flipped(self.read_data))
        m.d.comb += [acc.mode.eq(self.mode), acc.capacity.eq(self.capacity),
                     self.occupancy.eq(acc.occupancy), self.free.eq(acc.free),
                     self.bypass.eq(acc.bypass)]
        return m
