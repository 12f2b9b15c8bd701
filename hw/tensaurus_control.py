"""Tensaurus's run control (Section 5.1): a run, tile by tile, as two state machines.

The load stage takes a tile, starts the MLU into the tile's half of the scratchpads and
waits until the load is written whole; the compute stage takes a loaded tile once the
one before it has ended, streams it through the TLU from its half and hands the MSU the
tile's output tile (its rows, its base in memory, whether the tile is its last), which
the MSU takes once every PE's drains are in. So a tile's matrices load while the tile
before it computes. On the run's last tile the compute stage then waits for the MSU's
last write: the run ends with its output in memory.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..sw.wire import TensaurusKernel


class TensaurusControlSignature(wiring.Signature):
    """Tensaurus's run control, seen from it; every stream's shape is its unit's.

    - ``kernel`` (in, :class:`~sparseforge.sw.wire.TensaurusKernel`): held while
      a run goes; TTMc and MV broadcast B's (b's) rows.
    - ``start``, ``stats``: the accelerator's (``top``, a
      :class:`~sparseforge.hw.compose.tensaurus.TensaurusSignature`).
    - ``load`` (stream out): the MLU's ``start`` (``mlu``).
    - ``tensor`` (stream out): the TLU's ``start`` (``tlu``).
    - ``read_half`` (out): the scratchpads' half the computing tile reads.
    - ``broadcast`` (out): the computing tile is dense; the scratchpads broadcast port
      0's reads (:class:`~sparseforge.hw.tensaurus_spm.SpmSignature`).
    - ``msu_tile`` (stream out), ``writing`` (in): the MSU's ``tiles`` and ``writing``
      (``msu``).
    """

    def __init__(self, top, mlu, tlu, msu):
        super().__init__({
            "kernel": In(TensaurusKernel),
            "start": In(top.members["start"].flip().signature),
            "stats": Out(top.members["stats"].signature),
            "load": Out(mlu.members["start"].flip().signature),
            "tensor": Out(tlu.members["start"].flip().signature),
            "read_half": Out(1),
            "broadcast": Out(1),
            "msu_tile": Out(msu.members["tiles"].flip().signature),
            "writing": In(msu.members["writing"].shape),
        })


class TensaurusControl(wiring.Component):
    """Tensaurus's load/compute control: one state machine per stage.

    Parameters
    ----------
    top, mlu, tlu, msu : the signatures of the accelerator, its MLU, TLU and MSU.

    Members
    -------
    kernel, start, stats, load, tensor, read_half, broadcast, msu_tile, writing
        As :class:`TensaurusControlSignature` says. A run's first tile is taken once
        the previous run's stats are; a later tile once the tile before it has been
        handed to the compute stage; none after the run's ``last`` until its last write.
        ``stats`` counts the run's cycles from its first tile taken to the cycle after
        its last write, split into those the compute stage is idle (``load_cycles``)
        and the rest (``compute_cycles``).

    Latency: a tile's load is offered to the MLU the cycle after the tile is taken; the
    cycle after the MLU is ready again (the load written whole) the tile moves to the
    compute stage if that is idle, and the TLU's start is offered the cycle after; then
    the tile's item is offered to the MSU, and the compute stage is idle again the cycle
    after the MSU takes it (on the run's last tile, the cycle after ``writing`` is seen
    low). Its outputs are decoded from registers (the two states, the tiles' records,
    the counters).
    """

    def __init__(self, top, mlu, tlu, msu):
        super().__init__(TensaurusControlSignature(top, mlu, tlu, msu))

    def elaborate(self, platform):
        m = Module()
        l_job = Signal.like(self.start.payload)     # the loading tile
        c_job = Signal.like(self.start.payload)     # the computing tile
        l_half, c_half = Signal(), Signal()         # l_half flips with each tile taken
        busy, final = Signal(), Signal()    # a run goes; its last tile has been taken
        computing = Signal()                # the compute stage holds a tile
        handoff = Signal()                  # the loaded tile moves to the compute stage
        stats, msu_tile = self.stats, self.msu_tile
        load_cycles, compute_cycles = stats.payload.load_cycles, stats.payload.compute_cycles
        load, tensor = self.load.payload, self.tensor.payload
        m.d.comb += [
            *(load[name].eq(l_job[name]) for name in ("base0", "rows0", "base1", "rows1")),
            load.half.eq(l_half),
            load.broadcast.eq((self.kernel == TensaurusKernel.TTMC)
                              | (self.kernel == TensaurusKernel.MV)),
            tensor.base.eq(c_job.tensor_base),
            tensor.count.eq(c_job.entries),
            *(tensor[name].eq(c_job[name]) for name in ("dense", "jn", "kn")),
            self.read_half.eq(c_half),
            self.broadcast.eq(computing & c_job.dense),
            msu_tile.payload.base.eq(c_job.out_base),
            msu_tile.payload.rows.eq(c_job.out_rows),
            msu_tile.payload.closes.eq(c_job.closes),
        ]
        with m.If(busy):
            with m.If(computing):
                m.d.sync += compute_cycles.eq(compute_cycles + 1)
            with m.Else():
                m.d.sync += load_cycles.eq(load_cycles + 1)
        with m.If(stats.ready):
            m.d.sync += stats.valid.eq(0)

        with m.FSM(name="compute") as compute:
            with m.State("IDLE"), m.If(handoff):
                m.d.sync += [c_job.eq(l_job), c_half.eq(l_half)]
                m.next = "STREAM"
            with m.State("STREAM"):
                m.d.comb += self.tensor.valid.eq(1)
                with m.If(self.tensor.ready):
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += msu_tile.valid.eq(1)
                with m.If(msu_tile.ready):
                    with m.If(c_job.last):
                        m.next = "WRITE"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("WRITE"), m.If(~self.writing):
                m.d.sync += [busy.eq(0), final.eq(0), stats.valid.eq(1)]
                m.next = "IDLE"
        m.d.comb += computing.eq(~compute.ongoing("IDLE"))

        with m.FSM(name="load"):
            with m.State("IDLE"):
                m.d.comb += self.start.ready.eq(~final & ~stats.valid)
                with m.If(self.start.valid & self.start.ready):
                    m.d.sync += [l_job.eq(self.start.payload), l_half.eq(~l_half),
                                 busy.eq(1), final.eq(self.start.payload.last)]
                    with m.If(~busy):
                        m.d.sync += [load_cycles.eq(0), compute_cycles.eq(0)]
                    m.next = "START"
            with m.State("START"):
                m.d.comb += self.load.valid.eq(1)
                with m.If(self.load.ready):
                    m.next = "WAIT"
            # The MLU takes a start only once its previous load has been written whole.
            with m.State("WAIT"), m.If(self.load.ready):
                m.next = "LOADED"
            with m.State("LOADED"):
                m.d.comb += handoff.eq(~computing)
                with m.If(handoff):
                    m.next = "IDLE"
        return m
