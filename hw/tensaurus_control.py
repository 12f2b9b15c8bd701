"""Tensaurus's run control (Section 5.1): a run, tile by tile, as two state machines.

The load stage takes a tile, starts the MLU into the tile's half of the scratchpads and
waits until the load is written whole; the compute stage takes a loaded tile once the
one before it has ended, streams it through the TLU from its half and waits for every
PE's ``last`` (and for the MSU to release its inputs). So a tile's matrices load while
the tile before it computes. The MSU keeps its sums from tile to tile and sends them
after the run's last tile; the control sits on the MSU's side of the PE array to see
each PE's ``last`` drained and the output's ``last`` sent.
"""

from amaranth.hdl import Module, Mux, Signal
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
    - ``drains`` (streams in) and ``msu_drains`` (streams out): the PEs' drains passed
      on to the MSU unchanged; ``msu_out`` (stream in) and ``out`` (stream out): the
      MSU's output passed on unchanged. The control watches each PE's ``last`` drained
      and the output's ``last`` sent.
    - ``out_rows`` (out), ``closing`` (in): the MSU's (``msu``); ``out_rows`` is the
      run's rows on its last tile, 0 before.
    """

    def __init__(self, top, mlu, tlu, msu):
        drains = msu.members["drains"].flip()      # members' signatures as their producer's
        out = msu.members["out"].signature
        super().__init__({
            "kernel": In(TensaurusKernel),
            "start": In(top.members["start"].flip().signature),
            "stats": Out(top.members["stats"].signature),
            "load": Out(mlu.members["start"].flip().signature),
            "tensor": Out(tlu.members["start"].flip().signature),
            "read_half": Out(1),
            "broadcast": Out(1),
            "drains": In(drains.signature).array(*drains.dimensions),
            "msu_drains": Out(drains.signature).array(*drains.dimensions),
            "msu_out": In(out),
            "out": Out(out),
            "out_rows": Out(msu.members["out_rows"].shape),
            "closing": In(msu.members["closing"].shape),
        })


class TensaurusControl(wiring.Component):
    """Tensaurus's load/compute control: one state machine per stage.

    Parameters
    ----------
    top, mlu, tlu, msu : the signatures of the accelerator, its MLU, TLU and MSU.

    Members
    -------
    kernel, start, stats, load, tensor, read_half, broadcast, drains, msu_drains,
    msu_out, out, out_rows, closing
        As :class:`TensaurusControlSignature` says. A run's first tile is taken once
        the previous run's stats are; a later tile once the tile before it has been
        handed to the compute stage; none after the run's ``last`` until its output
        ends. ``stats`` counts the run's cycles from its first tile taken to its
        output's end, split into those the compute stage is idle (``load_cycles``) and
        the rest (``compute_cycles``).

    Latency: a tile's load is offered to the MLU the cycle after the tile is taken; the
    cycle after the MLU is ready again (the load written whole) the tile moves to the
    compute stage if that is idle, and the TLU's start is offered the cycle after; the
    compute stage is idle again the cycle after its last drain (or, on the run's last
    tile, its output's ``last``) is taken. Its own outputs are decoded from registers
    (the two states, the tiles' records, the counters); the drains and the output pass
    through as wires.
    """

    def __init__(self, top, mlu, tlu, msu):
        super().__init__(TensaurusControlSignature(top, mlu, tlu, msu))

    def elaborate(self, platform):
        m = Module()
        for drain, inner in zip(self.drains, self.msu_drains, strict=True):
            wiring.connect(m, wiring.flipped(drain), wiring.flipped(inner))
        wiring.connect(m, wiring.flipped(self.msu_out), wiring.flipped(self.out))

        l_job = Signal.like(self.start.payload)     # the loading tile
        c_job = Signal.like(self.start.payload)     # the computing tile
        l_half, c_half = Signal(), Signal()         # l_half flips with each tile taken
        busy, final = Signal(), Signal()    # a run goes; its last tile has been taken
        ended = Signal(len(self.drains))    # the PEs that drained their ``last``
        computing = Signal()                # the compute stage holds a tile
        handoff = Signal()                  # the loaded tile moves to the compute stage
        stats = self.stats
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
            self.out_rows.eq(Mux(c_job.last, c_job.out_rows, 0)),
        ]
        with m.If(busy):
            with m.If(computing):
                m.d.sync += compute_cycles.eq(compute_cycles + 1)
            with m.Else():
                m.d.sync += load_cycles.eq(load_cycles + 1)
        with m.If(stats.ready):
            m.d.sync += stats.valid.eq(0)
        for n, drain in enumerate(self.drains):
            with m.If(drain.valid & drain.ready & drain.payload.last):
                m.d.sync += ended[n].eq(1)

        with m.FSM(name="compute") as compute:
            with m.State("IDLE"), m.If(handoff):
                m.d.sync += [c_job.eq(l_job), c_half.eq(l_half)]
                m.next = "STREAM"
            with m.State("STREAM"):
                m.d.comb += self.tensor.valid.eq(1)
                with m.If(self.tensor.ready):
                    m.next = "RUN"
            with m.State("RUN"):
                with m.If(~c_job.last & ended.all() & ~self.closing):
                    m.d.sync += ended.eq(0)
                    m.next = "IDLE"
                with m.If(self.out.valid & self.out.ready & self.out.payload.last):
                    m.d.sync += [ended.eq(0), busy.eq(0), final.eq(0), stats.valid.eq(1)]
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
