# amaranth: UnusedElaboratable=no
"""The Eureka sub-array row attached to memory: ``accel``'s engine for pruned GEMM, Y = W X.

The host lays W out as its sent blocks' SUDS records and their places, X as slabs and
Y as tiles (:mod:`sparseforge.sw.accel_eureka`); a run is ``passes`` passes over the
block list, one a panel of X's columns:

- two **walkers** ask for every block's place and record, pass after pass, each on its
  own in-order port;
- a block's **place** asks for its slab of X (the panel's base and its block column)
  and queues where its block row's tile goes and whether it ends the row;
- the **serializer** hands the record to the array a slot word a cycle, with the
  block's rotation, ``last`` on its final slot;
- the **array** (:class:`~sparseforge.hw.eureka_array.EurekaArray`, ``cols`` 4x4
  sub-arrays side by side) runs the block against its slab;
- the **accumulator** puts each tile in Y's row order by its rotation and adds it to
  its block row's sum, which it writes at the row's ``end`` and then clears.

``stats`` carries one item once the run's last tile has been taken (the run's last write
then is in the master, :class:`~sparseforge.hw.accel_control.RunStatus` waits for it to
land); at once for a run of no blocks or no passes.
"""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...sw import wire
from ...sw.wire import ROWS, EurekaWire
from ..eureka_array import EurekaArray
from ..interfaces import EUREKA_COLUMNS, MemoryWritePortSignature, struct, tile_layout
from ..stream_units import MemoryPortSignature, Queue


def pruned_gemm_config_layout(addr_width):
    """What the registers give the engine (word addresses and counts): the blocks a
    pass, the passes, the words from one of X's panels to the next, Y's base and the
    words from one of its panels to the next."""
    return data.StructLayout({"count": addr_width, "passes": 16, "b_panel": addr_width,
                              "out_base": addr_width, "out_panel": addr_width})


class PrunedGemm(wiring.Component):
    """An Eureka sub-array row of ``cols`` sub-arrays (compaction ``compaction``, ``dw``
    bits of W's and X's values, ``acc_width`` of Y's, ``iw`` of a block's place) reading
    and writing memory at word addresses of ``addr_width`` bits.

    Members
    -------
    config : In(:func:`pruned_gemm_config_layout`), held while a run goes.
    start : In(1), a pulse starting a run; ``busy`` : Out(1), until its last read is asked.
    stats : Out(stream(1)), one item after the run's last tile is taken.
    tiles, records, slabs : the in-order read ports (Out(MemoryPortSignature)), each an
        array of the run's from index 0; :attr:`reads` lists them in order as ``(member,
        word width, the register of the array's base without its _base)``.
    out : Out(MemoryWritePortSignature), Y's tile words.
    """

    def __init__(self, addr_width, compaction, dw, acc_width, cols, iw, depth=8):
        self.addr_width, self.depth = addr_width, depth
        self.array = EurekaArray(compaction=compaction, weight_width=dw, act_width=dw,
                                 acc_width=acc_width, cols=cols)
        self.fmt = EurekaWire(compaction, dw)
        self.place = struct(wire.eureka_block(iw))
        self.tile = tile_layout(acc_width, EUREKA_COLUMNS * cols)
        slab = self.array.signature.members["inputs"].signature.members["payload"].shape
        self.reads = [("tiles", self.place.size, "tiles"),
                      ("records", self.fmt.record_width, "w_records"),
                      ("slabs", slab.size, "b")]
        super().__init__({
            "config": In(pruned_gemm_config_layout(addr_width)),
            "start": In(1), "busy": Out(1),
            "stats": Out(stream.Signature(1)),
            **{name: Out(MemoryPortSignature(addr_width, w)) for name, w, _ in self.reads},
            "out": Out(MemoryWritePortSignature(addr_width, self.tile.size)),
        })

    def ports(self):
        """The in-order read ports, in :attr:`reads` order."""
        return [getattr(self, name) for name, _, _ in self.reads]

    def _count(self, m, step, begin, name):
        """Count ``step``s over index 0 .. count - 1, ``passes`` times from ``begin``:
        ``(index, active, ending)``, the index now, whether the count goes on, and whether
        this step is its last."""
        cfg, A = self.config, self.addr_width
        index, left, active = Signal(A, name=f"{name}_index"), \
            Signal(16, name=f"{name}_left"), Signal(name=f"{name}_active")
        ending = Signal(name=f"{name}_ending")
        m.d.comb += ending.eq(step & (index + 1 == cfg.count) & (left == 1))
        with m.If(begin):
            m.d.sync += [index.eq(0), left.eq(cfg.passes),
                         active.eq((cfg.count != 0) & (cfg.passes != 0))]
        with m.Elif(step):
            m.d.sync += index.eq(index + 1)
            with m.If(index + 1 == cfg.count):
                m.d.sync += [index.eq(0), left.eq(left - 1)]
            with m.If(ending):
                m.d.sync += active.eq(0)
        return index, active, ending

    def _walk(self, m, request, begin, name):
        """Ask ``request`` for index 0 .. count - 1, ``passes`` times from ``begin``;
        return whether it is still asking."""
        index, active, _ = self._count(m, request.valid & request.ready, begin, name)
        m.d.comb += [request.valid.eq(active), request.payload.eq(index)]
        return active

    def elaborate(self, platform):
        m = Module()
        cfg, A, array, fmt = self.config, self.addr_width, self.array, self.fmt
        m.submodules.array = array
        begin = self.start & ~self.busy
        asking = [self._walk(m, port.request, begin, name)
                  for name, port in (("tiles", self.tiles), ("records", self.records))]
        m.d.comb += self.busy.eq(asking[0] | asking[1])

        # -- a block's place: its slab asked for, its tile's address queued ----------------
        m.submodules.places = places = Queue(
            data.StructLayout({"addr": A, "end": 1}), depth=self.depth, latency=1)
        place = data.View(self.place, self.tiles.response.payload)
        answer, slab = self.tiles.response, self.slabs.request
        panel, out_panel, taken = Signal(A), Signal(A), Signal(A)
        m.d.comb += [slab.payload.eq(panel + place.col),
                     places.i.payload.addr.eq(cfg.out_base + out_panel + place.row),
                     places.i.payload.end.eq(place.end),
                     slab.valid.eq(answer.valid & places.i.ready),
                     places.i.valid.eq(answer.valid & slab.ready),
                     answer.ready.eq(slab.ready & places.i.ready)]
        with m.If(begin):
            m.d.sync += [panel.eq(0), out_panel.eq(0), taken.eq(0)]
        with m.Elif(answer.valid & answer.ready):
            m.d.sync += taken.eq(taken + 1)
            with m.If(taken + 1 == cfg.count):
                m.d.sync += [taken.eq(0), panel.eq(panel + cfg.b_panel),
                             out_panel.eq(out_panel + cfg.out_panel)]

        # -- the serializer: a record to the array a slot word a cycle ---------------------
        record, beat = self.records.response, array.filter
        head = data.View(struct(fmt.header), record.payload[:wire.width(fmt.header)])
        header = wire.width(fmt.header)
        slots = Signal(fmt.record_width - header)
        rotation, cycles = Signal.like(head.rotation), Signal.like(head.cycles)
        t, holding = Signal.like(head.cycles), Signal()
        last = (t + 1 >= cycles)
        m.d.comb += [beat.valid.eq(holding), beat.payload.slot.eq(slots[:fmt.slot_width]),
                     beat.payload.rotation.eq(rotation), beat.payload.last.eq(last),
                     beat.payload.empty.eq(cycles == 0),
                     record.ready.eq(~holding | (beat.ready & last))]
        with m.If(beat.valid & beat.ready):
            m.d.sync += [t.eq(t + 1), slots.eq(slots >> fmt.slot_width)]
            with m.If(last):
                m.d.sync += holding.eq(0)
        with m.If(record.valid & record.ready):
            m.d.sync += [holding.eq(1), t.eq(0), slots.eq(record.payload[header:]),
                         rotation.eq(head.rotation), cycles.eq(head.cycles)]
        wiring.connect(m, wiring.flipped(self.slabs.response), array.inputs)
        m.d.comb += array.dense.eq(0)

        # -- the accumulator: tiles in Y's row order, summed, written at the row's end ------
        tile, at, write = array.outputs, places.o, self.out.request
        columns = self.tile.elem_shape.length
        total = Signal(self.tile)
        sums = Signal(self.tile)
        drained = tile.payload.tile
        for row in range(ROWS):         # Y's row ``row`` is MAC row ``row - rotation``
            for col in range(columns):
                mac = Array(drained[(row - r) % ROWS][col] for r in range(ROWS))
                m.d.comb += total[row][col].eq(sums[row][col] + mac[tile.payload.rotation])
        end = at.payload.end
        m.d.comb += [write.payload.addr.eq(at.payload.addr), write.payload.data.eq(total),
                     write.valid.eq(tile.valid & at.valid & end),
                     tile.ready.eq(at.valid & (~end | write.ready)),
                     at.ready.eq(tile.valid & (~end | write.ready))]
        with m.If(tile.valid & tile.ready):
            m.d.sync += sums.eq(Mux(end, 0, total.as_value()))

        # -- done: every block of every pass drained ---------------------------------------
        finished = Signal()
        _, _, drained = self._count(m, tile.valid & tile.ready, begin, "drained")
        with m.If(drained):
            m.d.sync += finished.eq(1)
        m.d.comb += self.stats.valid.eq(finished)
        with m.If(self.stats.valid & self.stats.ready):
            m.d.sync += finished.eq(0)
        with m.If(begin):
            m.d.sync += [sums.eq(0), holding.eq(0),
                         finished.eq((cfg.count == 0) | (cfg.passes == 0))]
        return m
