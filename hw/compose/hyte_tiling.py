# amaranth: UnusedElaboratable=no
"""HYTE's tiling loop closed in hardware (Sections 6.2-6.4): the tiling controller's
commands, B's tiles fetched from memory at the positions kept across tiles into a
tensor accessor that counts their quadrants, and the controller tuning B's tile shape
from those counts."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...core.errors import ParameterError
from ...core.params import Param, check_params, choice
from ...core.registry import block
from ...sw import wire
from ..hyte_accessor import HyteAccessor
from ..hyte_controller import HyteController, hyte_config_layout, hyte_tile_layout
from ..hyte_positions import HytePositions
from ..hyte_tuner import RULES
from ..interfaces import struct
from ..stream_units import MemoryPortSignature, Queue

K, J = wire.HYTE_DIMS.index("k"), wire.HYTE_DIMS.index("j")


def tile_rows_layout(dim_width):
    """B's rows in a commanded tile: the segments of rows ``row`` to ``row + rows - 1``
    with columns in ``[bj, ej)`` (:func:`~sparseforge.sw.wire.hyte_fetch`'s fields)."""
    fetch = struct(wire.hyte_fetch(dim_width))
    return data.StructLayout({**{name: f.shape for name, f in fetch}, "rows": dim_width})


class QuadrantSpec(wiring.Component):
    """Each tile command, and for one that fetches B's tile, the tile the accessor is to
    count and B's rows to fetch into it.

    The job passes through (its ``k`` kept); each command goes to the parent first
    (which evicts the last tile where this one does not keep it); then, unless it keeps
    B's tile (``keep``), on one cycle, B's tile to the accessor and its rows to the
    fetcher: its rows, the command's ``t_k`` cut off at ``K``, split at half of ``t_k``
    (at least 1), and its columns ``[b_j, b_j + t_j)``, split at ``b_j`` plus half of
    ``t_j``. The controller sends a command only once the last fetched one's counts are
    taken, so the accessor's counter is free to take it.

    Members
    -------
    job : In(stream(:func:`~..hyte_controller.hyte_config_layout`)); config : Out(...)
    commands : In(stream(:func:`~..hyte_controller.hyte_tile_layout`)); tile : Out(...)
    keep : In(1), held with each command (the controller's).
    quadrants : Out(stream(:func:`~sparseforge.sw.wire.hyte_quadrants`))
    rows : Out(stream(:func:`tile_rows_layout`))
    """

    def __init__(self, dim_width, count_width):
        self.dim_width = dim_width
        config = stream.Signature(hyte_config_layout(dim_width, count_width))
        tile = stream.Signature(hyte_tile_layout(dim_width))
        super().__init__({
            "job": In(config), "config": Out(config),
            "commands": In(tile), "tile": Out(tile), "keep": In(1),
            "quadrants": Out(stream.Signature(struct(wire.hyte_quadrants(count_width,
                                                                         dim_width)))),
            "rows": Out(stream.Signature(tile_rows_layout(dim_width)))})

    def elaborate(self, platform):
        m = Module()
        job, config, commands = self.job, self.config, self.commands
        tile, quadrants, fetch = self.tile, self.quadrants, self.rows
        k = Signal(self.dim_width)
        m.d.comb += [config.valid.eq(job.valid), config.payload.eq(job.payload),
                     job.ready.eq(config.ready)]
        with m.If(job.valid & job.ready):
            m.d.sync += k.eq(job.payload.k)
        # The accessor's tile and the fetcher's rows, worked out from the command as it
        # goes to the parent and registered for the next state's offer.
        cmd = commands.payload
        (bk, tk), (bj, tj) = ((cmd[d].begin, cmd[d].t) for d in (K, J))
        left = Signal(self.dim_width)
        q, r = Signal.like(quadrants.payload), Signal.like(fetch.payload)
        m.d.comb += [left.eq(k - bk), tile.payload.eq(cmd),
                     quadrants.payload.eq(q), fetch.payload.eq(r)]
        with m.FSM():
            with m.State("tile"):
                m.d.comb += [tile.valid.eq(commands.valid),
                             commands.ready.eq(tile.ready & self.keep)]
                with m.If(commands.valid & tile.ready & ~self.keep):
                    rows = Mux(left < tk, left, tk)
                    m.d.sync += [q.rows.eq(rows), q.split_k.eq(Mux(tk > 1, tk >> 1, 1)),
                                 q.split_j.eq(bj + Mux(tj > 1, tj >> 1, 1)),
                                 r.row.eq(bk), r.rows.eq(rows), r.bj.eq(bj),
                                 r.ej.eq(bj + tj)]
                    m.next = "fetch"
            # Each offered when the other can take it: both take it at once.
            with m.State("fetch"):
                m.d.comb += [quadrants.valid.eq(commands.valid & fetch.ready),
                             fetch.valid.eq(commands.valid & quadrants.ready),
                             commands.ready.eq(quadrants.ready & fetch.ready)]
                with m.If(commands.valid & commands.ready):
                    m.next = "tile"
        return m


class TileFetch(wiring.Component):
    """Fetches each commanded tile of B into the accessor, once the last is evicted.

    A tile's rows wait for the accessor to be ``empty`` (the parent evicted the last
    tile), so a tile is alone in the buffer and its words are stored or bypassed as
    the model has them. Then a fetch per row goes to the positions unit
    (:class:`~..hyte_positions.HytePositions`, which works several rows ahead); per
    segment ``[begin, end)`` it finds, its words are read from ``cols_base + begin`` on
    and its length queued, and the accessor takes the length and then the words as
    they come. The two sides are apart: the next segment's words are asked for as soon
    as the last one's are (up to four segments ahead), while the last one's answers
    still flow into the accessor, as many in flight as the memory takes.

    Members
    -------
    rows : In(stream(:func:`tile_rows_layout`)); empty : In(1)
    fetch : Out(stream(:func:`~sparseforge.sw.wire.hyte_fetch`))
    found : In(stream(:func:`~sparseforge.sw.wire.hyte_segment`))
    segment, fill : Out, the accessor's (:class:`~..hyte_accessor.HyteAccessorSignature`)
    columns : Out(:class:`~..stream_units.MemoryPortSignature`); cols_base : In
    """

    def __init__(self, dim_width, count_width, pos_width, addr_width, width):
        self.pos_width = pos_width
        super().__init__({
            "rows": In(stream.Signature(tile_rows_layout(dim_width))), "empty": In(1),
            "fetch": Out(stream.Signature(struct(wire.hyte_fetch(dim_width)))),
            "found": In(stream.Signature(struct(wire.hyte_segment(pos_width)))),
            "segment": Out(stream.Signature(count_width)),
            "fill": Out(stream.Signature(width)),
            "columns": Out(MemoryPortSignature(addr_width, width)),
            "cols_base": In(addr_width)})

    def elaborate(self, platform):
        m = Module()
        rows, fetch, found, mem = self.rows, self.fetch, self.found, self.columns
        left = Signal.like(rows.payload.rows)
        walked = Signal()                               # ``left == 0``, as a register
        row = Signal.like(fetch.payload.row)
        bounds = Signal.like(rows.payload)
        m.d.comb += [fetch.payload.row.eq(row), fetch.payload.bj.eq(bounds.bj),
                     fetch.payload.ej.eq(bounds.ej)]
        with m.FSM():
            with m.State("idle"):
                m.d.comb += rows.ready.eq(self.empty)
                with m.If(rows.valid & self.empty):
                    m.d.sync += [bounds.eq(rows.payload), row.eq(rows.payload.row),
                                 left.eq(rows.payload.rows),
                                 walked.eq(rows.payload.rows == 0)]
                    m.next = "walk"
            with m.State("walk"):
                with m.If(walked):
                    m.next = "idle"
                with m.Else():
                    m.d.comb += fetch.valid.eq(1)
                    with m.If(fetch.ready):
                        m.d.sync += [row.eq(row + 1), left.eq(left - 1),
                                     walked.eq(left == 1)]

        # Requests: each segment's words, read from ``cols_base + begin`` on, its length
        # queued for the answers; the next segment's taken as the last word is asked.
        m.submodules.lengths = lengths = Queue(self.segment.payload.shape(), depth=4,
                                               latency=1)
        pos, due = (Signal(self.pos_width, name=n) for n in ("pos", "due"))
        zero, one = Signal(init=1), Signal()           # ``due`` 0 or 1, as registers
        seg, asked = found.payload, mem.request.valid & mem.request.ready
        size = Signal.like(due)
        free = zero | (one & mem.request.ready)
        m.d.comb += [size.eq(seg.end - seg.begin),
                     mem.request.payload.eq(self.cols_base + pos),
                     mem.request.valid.eq(~zero),
                     lengths.i.payload.eq(size),
                     lengths.i.valid.eq(found.valid & free),
                     found.ready.eq(lengths.i.ready & free)]
        with m.If(asked):
            m.d.sync += [pos.eq(pos + 1), due.eq(due - 1), zero.eq(one), one.eq(due == 2)]
        with m.If(found.valid & found.ready):
            m.d.sync += [pos.eq(seg.begin), due.eq(size), zero.eq(size == 0),
                         one.eq(size == 1)]
        # Answers: a segment's length to the accessor, then its words as they come.
        words = Signal.like(lengths.o.payload)
        none = Signal(init=1)                           # ``words == 0``, as a register
        with m.If(none):
            m.d.comb += [self.segment.valid.eq(lengths.o.valid),
                         self.segment.payload.eq(lengths.o.payload),
                         lengths.o.ready.eq(self.segment.ready)]
            with m.If(lengths.o.valid & lengths.o.ready):
                m.d.sync += [words.eq(lengths.o.payload), none.eq(lengths.o.payload == 0)]
        with m.Else():
            m.d.comb += [self.fill.valid.eq(mem.response.valid),
                         self.fill.payload.eq(mem.response.payload),
                         mem.response.ready.eq(self.fill.ready)]
            with m.If(self.fill.valid & self.fill.ready):
                m.d.sync += [words.eq(words - 1), none.eq(words == 1)]
        return m


@block("hyte_tiling")
class HyteTiling(wiring.Component):
    """The tiling controller and B's accessor, the tuning loop between them closed.

    A :class:`~..hyte_controller.HyteController` sends the job's tile commands; a
    :class:`QuadrantSpec` hands each to the parent and, for one that does not keep B's
    tile, tells the :class:`~..hyte_accessor.HyteAccessor` which tile of B to count and
    the :class:`TileFetch` which rows of B to fetch; the fetcher has the
    :class:`~..hyte_positions.HytePositions` find each row's segment of the tile from
    the positions kept across tiles and fills the accessor with its words (each word
    B's column id, in its low ``dim_width`` bits). The parent reads the tile, for each
    command that keeps it too, and evicts it before a command that does not; the
    accessor's quadrant counts go to the controller, which tunes B's shape from them
    and sends the next command.

    Parameters
    ----------
    dim_width, rule, log_most_tj : the controller's; count_width : the controller's and the
        accessor's (at least 16).
    depth, width : the accessor's (``width`` at least ``dim_width``).
    pos_width, addr_width, inflight : the positions unit's.

    Members
    -------
    config, tile, keep : the controller's
        (:class:`~..hyte_controller.HyteControllerSignature`).
    mode, capacity, read, read_data, evict, occupancy, free, bypass : the accessor's
        (:class:`~..hyte_accessor.HyteAccessorSignature`).
    memory, writes, ptr_base, cols_base, kept_base : the positions unit's
        (:class:`~..hyte_positions.SegmentPositionsSignature`).
    columns : Out(:class:`~..stream_units.MemoryPortSignature`): reads of B's column
        ids, ``width`` bits a word, at ``cols_base`` on (the memory ``memory`` reads).

    Latency and throughput: the controller's, the positions unit's and the accessor's;
    a tile's fetch begins once the last tile is evicted (its rows' segments then found
    and its words read back to back, pipelined across rows), and its counts leave the
    accessor two cycles after its last word.
    """

    PARAMS = (Param("dim_width", 16, 2, 32, "bits of a dimension"),
              Param("count_width", 16, 16, 32, "bits of a quadrant count and bufsize"),
              choice("rule", "tiles", RULES, "hit-rate estimate"),
              Param("log_most_tj", 32, 0, 32, "log2 of the widest B tile tuning makes"),
              Param("depth", 64, 4, 1 << 15, "the accessor's words", pow2=True),
              Param("width", 32, 2, 256, "bits of a word of B"),
              *(p for p in HytePositions.PARAMS if p.name != "dim_width"))
    REPORT = ({},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        if v["width"] < v["dim_width"]:
            raise ParameterError(f"width={v['width']}: a word of B holds its column, "
                                 f"dim_width={v['dim_width']} bits, and more")
        self.dim_width, self.count_width = v["dim_width"], v["count_width"]
        self.controller = HyteController(dim_width=v["dim_width"],
                                         count_width=v["count_width"], rule=v["rule"],
                                         log_most_tj=v["log_most_tj"])
        self.rule = self.controller.rule
        self.accessor = HyteAccessor(depth=v["depth"], width=v["width"],
                                     count_width=v["count_width"],
                                     coord_width=v["dim_width"])
        self.positions = HytePositions(dim_width=v["dim_width"], pos_width=v["pos_width"],
                                       addr_width=v["addr_width"], inflight=v["inflight"])
        self.spec = QuadrantSpec(v["dim_width"], v["count_width"])
        self.fetcher = TileFetch(v["dim_width"], v["count_width"], v["pos_width"],
                                 v["addr_width"], v["width"])
        ctl, acc = self.controller.signature.members, self.accessor.signature.members
        pos = self.positions.signature.members
        super().__init__({
            "config": ctl["config"], "tile": ctl["tile"], "keep": ctl["keep"],
            **{n: acc[n] for n in ("mode", "capacity", "read", "read_data", "evict",
                                   "occupancy", "free", "bypass")},
            **{n: pos[n] for n in ("memory", "writes", "ptr_base", "cols_base",
                                   "kept_base")},
            "columns": self.fetcher.signature.members["columns"]})

    def elaborate(self, platform):
        m = Module()
        ctl, acc, spec = self.controller, self.accessor, self.spec
        pos, fetcher = self.positions, self.fetcher
        m.submodules.controller, m.submodules.accessor, m.submodules.spec = ctl, acc, spec
        m.submodules.positions, m.submodules.fetcher = pos, fetcher
        wiring.connect(m, wiring.flipped(self.config), spec.job)
        wiring.connect(m, spec.config, ctl.config)
        wiring.connect(m, ctl.tile, spec.commands)
        wiring.connect(m, spec.tile, wiring.flipped(self.tile))
        wiring.connect(m, spec.quadrants, acc.tile)
        wiring.connect(m, acc.counts, ctl.counts)
        wiring.connect(m, spec.rows, fetcher.rows)
        wiring.connect(m, fetcher.fetch, pos.fetch)
        wiring.connect(m, pos.segment, fetcher.found)
        wiring.connect(m, fetcher.segment, acc.segment)
        wiring.connect(m, fetcher.fill, acc.fill)
        for name in ("memory", "writes"):
            wiring.connect(m, getattr(pos, name), wiring.flipped(getattr(self, name)))
        wiring.connect(m, fetcher.columns, wiring.flipped(self.columns))
        for name in ("read", "evict"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(acc, name))
        wiring.connect(m, acc.read_data, wiring.flipped(self.read_data))
        m.d.comb += [spec.keep.eq(ctl.keep), self.keep.eq(ctl.keep),
                     acc.mode.eq(self.mode), acc.capacity.eq(self.capacity),
                     self.occupancy.eq(acc.occupancy), self.free.eq(acc.free),
                     self.bypass.eq(acc.bypass), fetcher.empty.eq(acc.occupancy == 0),
                     fetcher.cols_base.eq(self.cols_base),
                     *(getattr(pos, n).eq(getattr(self, n))
                       for n in ("ptr_base", "cols_base", "kept_base"))]
        return m
