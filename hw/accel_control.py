"""The accelerator's sequencer: the host's tile list walked band by band, pass by pass.

The tile list (:data:`~sparseforge.sw.wire.ACCEL_TILE`, one word an input tile, bands
in order: :mod:`sparseforge.sw.accel_plan`) says what the Tensaurus array computes; the
sequencer turns it into the units' jobs. For each band, for each pass over B's column
panels, for each of the band's input tiles, read again from memory every pass:

- a **compute** job for Tensaurus (:func:`~sparseforge.hw.compose.tensaurus.
  tensaurus_job_layout`): the tile's CISS entries at its offset in the band's stream (the
  Tailor's index), B's rows ``[k0, k0 + kn)`` of the pass's panel (operand 0, ``tlen``
  words a row; in SpMV, ``mv``, b's rows ``[k0 / per, ceil((k0 + kn) / per))`` as operand
  1, broadcast, a word each, :func:`~sparseforge.sw.wire.mv_layout`), the band's output
  rows in the pass's output panel, ``closes`` on the band's last tile (the MSU writes the
  band's panel then) and ``last`` on the run's final job; in SpMTTKRP (``mttkrp``) the
  tile's window is of j, B's rows ``[k0, k0 + kn)`` of the pass's panel go as operand 1
  and C's ``c_rows`` rows (all of them: the scratchpads hold C whole) of its panel as
  operand 0;
- a **convert** job for the CSR-to-CISS converter (the window ``[k0, k0 + kn)`` of the
  band's rows), on the first pass for every tile and on later passes only for the
  tiles that hold entries the Tailor bumped (past its buffet region, ``depth - fifo``,
  where the band is longer than ``depth``): Tailors §3's refetch;
- a **pass** command for the Tailor's parent (:class:`~sparseforge.hw.tailor_feed.
  TailorFeed`), with the pass's first job: ``start``, the index in the band's stream of
  the converter's first entry this pass (0, or on a later pass of a band that
  overbooks, the offset of the first tile converted again; the parent drops what the
  Tailor still holds), and ``final`` on the band's last pass, after which the band
  leaves the Tailor. On a later pass of a band that overbooks, the command goes with
  the first tile converted again rather than the pass's first, since only then is its
  ``start`` known; the parent lets the reader read the held part of the band before it.

A band's length ``L`` is its tiles' entries summed on the first pass. The tile list is
read one word at a time through an in-order port; a word's read overlaps the jobs
before it, since the units queue them.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..sw import wire
from .compose.tensaurus import tensaurus_job_layout
from .convert_ciss import job_layout
from .interfaces import struct
from .stream_units import MemoryPortSignature, Queue, all_of
from .tailor_feed import entry_layout
from .tailor_feed import pass_layout as tailor_pass_layout


def convert_job_layout(addr_width, iw):
    """A window for the converter: rows ``[i0, i0 + rows)``, columns ``[k0, k0 + kn)``,
    ``first`` on the first window of the band this pass converts (the converter restarts
    its per-row cursors there), ``entries`` the host's count to check its own against,
    ``closes`` on the band's last tile (the pass's last conversion)."""
    return data.StructLayout({"i0": addr_width, "rows": iw + 1, "k0": addr_width,
                              "kn": iw + 1, "first": 1, "entries": addr_width, "closes": 1})


def pass_layout(index_width):
    """A pass of a band for the Tailor's parent: ``start`` the index in the band's stream
    of the converter's first entry this pass, ``final`` on the band's last pass
    (:func:`~sparseforge.hw.tailor_feed.pass_layout`)."""
    return tailor_pass_layout(index_width)


def accel_config_layout(addr_width, iw=16):
    """The run's registers as the sequencer takes them, word addresses: the tile list
    (``tiles_count`` words at ``tiles_base``), ``passes`` over B, B's first panel at
    ``b_base`` and ``b_panel`` words between panels, the output's and C's likewise;
    ``mv`` for SpMV (the ``MV`` kernel: b's rows as operand 1); ``mttkrp`` for SpMTTKRP
    (B's rows as operand 1, C's ``c_rows`` rows as operand 0)."""
    return data.StructLayout({"tiles_base": addr_width, "tiles_count": addr_width,
                              "passes": addr_width, "b_base": addr_width,
                              "b_panel": addr_width, "out_base": addr_width,
                              "out_panel": addr_width, "mv": 1, "mttkrp": 1,
                              "c_base": addr_width, "c_panel": addr_width,
                              "c_rows": iw + 1})


class AccelControlSignature(wiring.Signature):
    """The sequencer, seen from it.

    - ``config`` (in, :func:`accel_config_layout`): held while a run goes.
    - ``start`` (in): a one-cycle pulse starting a run (ignored while ``busy``).
    - ``busy`` (out): from ``start`` until the run's last job is taken.
    - ``tiles`` (out, :class:`~.stream_units.MemoryPortSignature`): the tile list's reads.
    - ``convert``, ``passes``, ``compute`` (streams out): the jobs above.
    """

    def __init__(self, addr_width, iw, index_width):
        super().__init__({
            "config": In(accel_config_layout(addr_width, iw)),
            "start": In(1),
            "busy": Out(1),
            "tiles": Out(MemoryPortSignature(addr_width, wire.width(wire.ACCEL_TILE))),
            "convert": Out(stream.Signature(convert_job_layout(addr_width, iw))),
            "passes": Out(stream.Signature(pass_layout(index_width))),
            "compute": Out(stream.Signature(tensaurus_job_layout(iw, addr_width))),
        })


class AccelControl(wiring.Component):
    """The sequencer for a Tailor of ``depth`` entries (``fifo`` of them its FIFO region
    when overbooked, a band's stream indexed by ``index_width`` bits, ``addr_width`` by
    default) and an array whose B rows are ``tlen`` words, output rows ``chunks`` words
    and PEs ``vlen`` lanes (SpMV's b rows, :func:`~sparseforge.sw.wire.mv_layout`).

    A tile's decisions (whether it converts, whether the pass's command goes with it,
    whether it is the run's last job, the band's end) are registered as its word is
    taken: nothing they read changes between the word and its jobs, so they cost no
    cycle, and the jobs' handshakes and the state machine start at flip-flops rather
    than after ``offset + entries`` and its compares with the Tailor's depths.

    Members
    -------
    config, start, busy, tiles, convert, passes, compute
        As :class:`AccelControlSignature` says.
    """

    def __init__(self, depth, fifo, tlen, chunks, vlen=1, addr_width=24, iw=16,
                 index_width=None):
        self.depth, self.fifo, self.tlen, self.chunks = depth, fifo, tlen, chunks
        self.vlen = vlen
        self.addr_width, self.iw = addr_width, iw
        super().__init__(AccelControlSignature(addr_width, iw, index_width or addr_width))

    def elaborate(self, platform):
        m = Module()
        A, cfg = self.addr_width, self.config
        tile = Signal(struct(wire.ACCEL_TILE))
        addr, left = Signal(A), Signal(A)                # next word, words left
        band_addr, band_left = Signal(A), Signal(A)      # the band's first word, then
        pass_ = Signal(A)
        b_panel, out_panel = Signal(A), Signal(A)        # the pass's panels' bases
        c_panel = Signal(A)
        offset, length = Signal(A), Signal(A)            # in the band's stream; its L
        converted = Signal()                             # a window converted this pass
        commanded = Signal()                             # the pass's command sent
        sent = Signal(3)                                 # convert, pass, compute taken

        # The tile's decisions, registered from its word as it arrives.
        first_pass, final_pass = Signal(), Signal()
        refetch, command, last_job = Signal(), Signal(), Signal()
        restart, more = Signal(), Signal()               # start at 0; bands left
        ends = Signal(A)                                 # offset + entries
        given = struct(wire.ACCEL_TILE)(self.tiles.response.payload)
        at_first, at_final = pass_ == 0, pass_ + 1 == cfg.passes
        fits = length <= self.depth
        bumps = offset + given.entries > self.depth - self.fifo
        decide = [
            first_pass.eq(at_first), final_pass.eq(at_final),
            refetch.eq(at_first | bumps & ~fits),
            command.eq(~commanded & (at_first | fits | bumps)),
            last_job.eq(given.closes & at_final & (left == 0)),
            restart.eq(at_first | fits), more.eq(left != 0),
            ends.eq(offset + given.entries)]

        conv, comp, passes = self.convert.payload, self.compute.payload, self.passes.payload
        m.d.comb += [
            conv.i0.eq(tile.i0), conv.rows.eq(tile.rows), conv.k0.eq(tile.k0),
            conv.kn.eq(tile.kn), conv.first.eq(~converted), conv.entries.eq(tile.entries),
            conv.closes.eq(tile.closes),
            comp.tensor_base.eq(offset), comp.entries.eq(tile.entries),
            comp.out_base.eq(out_panel + tile.i0 * self.chunks), comp.out_rows.eq(tile.rows),
            comp.closes.eq(tile.closes), comp.last.eq(last_job),
            passes.start.eq(Mux(restart, 0, offset)), passes.final.eq(final_pass),
            self.tiles.request.payload.eq(addr),
        ]

        _, shift = wire.mv_layout(self.vlen)
        words = tile.kn >> shift                                # ceil(kn / per) words of b
        if shift:
            words = words + tile.kn[:shift].any()
        with m.If(cfg.mv):
            m.d.comb += [comp.base1.eq(b_panel + (tile.k0 >> shift)), comp.rows1.eq(words)]
        with m.Elif(cfg.mttkrp):
            m.d.comb += [comp.base0.eq(c_panel), comp.rows0.eq(cfg.c_rows),
                         comp.base1.eq(b_panel + tile.k0 * self.tlen), comp.rows1.eq(tile.kn)]
        with m.Else():
            m.d.comb += [comp.base0.eq(b_panel + tile.k0 * self.tlen),
                         comp.rows0.eq(tile.kn)]

        with m.FSM():
            with m.State("idle"), m.If(self.start & (cfg.tiles_count != 0)):
                m.d.sync += [addr.eq(cfg.tiles_base), left.eq(cfg.tiles_count),
                             band_addr.eq(cfg.tiles_base), band_left.eq(cfg.tiles_count),
                             pass_.eq(0), b_panel.eq(cfg.b_base), out_panel.eq(cfg.out_base),
                             c_panel.eq(cfg.c_base),
                             offset.eq(0), length.eq(0), converted.eq(0), commanded.eq(0)]
                m.next = "read"
            with m.State("read"):
                m.d.comb += [self.busy.eq(1), self.tiles.request.valid.eq(1)]
                with m.If(self.tiles.request.ready):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    m.next = "word"
            with m.State("word"):
                m.d.comb += [self.busy.eq(1), self.tiles.response.ready.eq(1)]
                with m.If(self.tiles.response.valid):
                    m.d.sync += [tile.eq(self.tiles.response.payload), sent.eq(0), *decide]
                    m.next = "jobs"
            with m.State("jobs"):
                wants = [refetch, command, Const(1)]
                outs = [self.convert, self.passes, self.compute]
                m.d.comb += self.busy.eq(1)
                for k, (want, out) in enumerate(zip(wants, outs, strict=True)):
                    m.d.comb += out.valid.eq(want & ~sent[k])
                    with m.If(out.valid & out.ready):
                        m.d.sync += sent[k].eq(1)
                done = all_of(sent[k] | ~want | out.ready
                              for k, (want, out) in enumerate(zip(wants, outs, strict=True)))
                with m.If(refetch & self.convert.ready):
                    m.d.sync += converted.eq(1)
                with m.If(command & self.passes.ready):
                    m.d.sync += commanded.eq(1)
                with m.If(done):
                    m.d.sync += offset.eq(ends)
                    with m.If(~tile.closes):
                        m.next = "read"
                    with m.Else():
                        m.d.sync += [offset.eq(0), converted.eq(0), commanded.eq(0)]
                        m.next = "read"
                        with m.If(~final_pass):            # the band again, the next pass
                            m.d.sync += [pass_.eq(pass_ + 1), addr.eq(band_addr),
                                         left.eq(band_left),
                                         b_panel.eq(b_panel + cfg.b_panel),
                                         c_panel.eq(c_panel + cfg.c_panel),
                                         out_panel.eq(out_panel + cfg.out_panel)]
                            with m.If(first_pass):
                                m.d.sync += length.eq(ends)
                        with m.Elif(more):                    # the next band
                            m.d.sync += [pass_.eq(0), band_addr.eq(addr), band_left.eq(left),
                                         length.eq(0), b_panel.eq(cfg.b_base),
                                         c_panel.eq(cfg.c_base), out_panel.eq(cfg.out_base)]
                        with m.Else():
                            m.next = "idle"
        return m


class ConverterFeedSignature(wiring.Signature):
    """Between the sequencer, the tile converter and the Tailor's feed, seen from the unit.

    - ``jobs`` (stream in, :func:`convert_job_layout`): the sequencer's windows.
    - ``job`` (stream out, :func:`~sparseforge.hw.convert_ciss.job_layout`): each to the
      converter (``k1 = k0 + kn``).
    - ``ciss`` (stream in), ``count`` (stream in): the converter's entries and, after a
      tile's last, their number.
    - ``entries`` (stream out, :func:`~sparseforge.hw.tailor_feed.entry_layout`): the
      entries to the feed, and after the tile that closes a band the pass's end marker.
    - ``error`` (out): sticky from a tile whose count is not the host's until ``clear``.
    """

    def __init__(self, addr_width, iw, band, width, count_width):
        super().__init__({
            "jobs": In(stream.Signature(convert_job_layout(addr_width, iw))),
            "job": Out(stream.Signature(job_layout(iw, addr_width, band))),
            "ciss": In(stream.Signature(width)),
            "count": In(stream.Signature(count_width)),
            "entries": Out(stream.Signature(entry_layout(width))),
            "error": Out(1),
            "clear": In(1),
        })


class ConverterFeed(wiring.Component):
    """The converter's windows in, its entries out to the Tailor's feed with each pass's
    end marked, its counts checked against the tile list's.

    A job's ``closes`` and ``entries`` wait in a :class:`~.stream_units.Queue` beside the
    converter (which takes a job only between tiles, so two are ever in flight) until
    its count comes. Entries pass straight through; a count is taken alone, and a tile
    that closes its band holds it until the end marker goes.
    """

    def __init__(self, addr_width, iw, band, width):
        self.addr_width = addr_width
        super().__init__(ConverterFeedSignature(addr_width, iw, band, width, addr_width + 1))

    def elaborate(self, platform):
        m = Module()
        held = data.StructLayout({"entries": self.addr_width, "closes": 1})
        m.submodules.pending = pending = Queue(held, depth=2, latency=1)
        jobs, job, given = self.jobs, self.job, self.jobs.payload
        m.d.comb += [
            job.valid.eq(jobs.valid & pending.i.ready),
            jobs.ready.eq(job.ready & pending.i.ready),
            pending.i.valid.eq(jobs.valid & job.ready),
            pending.i.payload.entries.eq(given.entries),
            pending.i.payload.closes.eq(given.closes),
            job.payload.i0.eq(given.i0), job.payload.rows.eq(given.rows),
            job.payload.k0.eq(given.k0), job.payload.k1.eq(given.k0 + given.kn),
            job.payload.first.eq(given.first),
        ]
        head, count, entries = pending.o, self.count, self.entries
        closing = count.valid & head.payload.closes
        m.d.comb += [
            entries.valid.eq(Mux(count.valid, closing, self.ciss.valid)),
            entries.payload.data.eq(Mux(count.valid, 0, self.ciss.payload)),
            entries.payload.end.eq(count.valid),
            self.ciss.ready.eq(~count.valid & entries.ready),
            count.ready.eq(head.valid & (~head.payload.closes | entries.ready)),
            head.ready.eq(count.valid & count.ready),
        ]
        with m.If(self.clear):
            m.d.sync += self.error.eq(0)
        with m.Elif(count.valid & count.ready & (count.payload != head.payload.entries)):
            m.d.sync += self.error.eq(1)
        return m


class RunStatusSignature(wiring.Signature):
    """A run's state and counters for the register file, seen from the unit.

    - ``start`` (in): the register file's pulse; ``issued`` (in): the sequencer is busy.
    - ``stats`` (stream in, always taken): Tensaurus's, after the run's last write.
    - ``idle`` (in): every write is answered (the AXI master's).
    - ``fault`` (in): an error this cycle (sticky here until the next start).
    - ``ar_taken``, ``ar_len``, ``ar_size`` and ``aw_...`` (in): a read (write) burst
      taken on the bus this cycle, its AxLEN and AxSIZE.
    - ``report`` (stream in, always taken): the held tile's counts per band.
    - ``busy``, ``done``, ``error``, ``cycles``, ``bytes_read``, ``bytes_written``,
      ``refetched`` (out): the status register's fields and the counters.
    """

    def __init__(self, report, stats):
        super().__init__({
            "start": In(1), "issued": In(1), "stats": In(stream.Signature(stats)),
            "idle": In(1), "fault": In(1),
            **{f"{c}_{f}": In(n) for c in ("ar", "aw")
               for f, n in (("taken", 1), ("len", 8), ("size", 3))},
            "report": In(stream.Signature(report)),
            "busy": Out(1), "done": Out(1), "error": Out(1), "cycles": Out(32),
            "bytes_read": Out(32), "bytes_written": Out(32), "refetched": Out(32)})


class RunStatus(wiring.Component):
    """Busy from ``start`` until Tensaurus's stats of the run's last tile have come and
    every write is answered, then done; the counters count from ``start`` (cycles while
    busy; bytes of each burst taken; entries the Tailor's feed refetched)."""

    def __init__(self, report, stats):
        super().__init__(RunStatusSignature(report, stats))

    def _bytes(self, channel):
        """Bytes of the burst taken on ``channel`` this cycle (0 if none)."""
        taken, length, size = (getattr(self, f"{channel}_{f}") for f in ("taken", "len", "size"))
        return Mux(taken, (length + 1) << size, 0)

    def elaborate(self, platform):
        m = Module()
        finished = Signal()
        m.d.comb += [self.stats.ready.eq(1), self.report.ready.eq(1)]
        with m.If(self.start & ~self.busy):
            m.d.sync += [self.busy.eq(1), self.done.eq(0), self.error.eq(0), finished.eq(0),
                         self.cycles.eq(0), self.bytes_read.eq(0), self.bytes_written.eq(0),
                         self.refetched.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += [self.cycles.eq(self.cycles + 1),
                         self.bytes_read.eq(self.bytes_read + self._bytes("ar")),
                         self.bytes_written.eq(self.bytes_written + self._bytes("aw"))]
            with m.If(self.report.valid):
                m.d.sync += self.refetched.eq(self.refetched + self.report.payload.refetched)
            with m.If(self.stats.valid):
                m.d.sync += finished.eq(1)
            with m.If(finished & self.idle & ~self.issued):
                m.d.sync += [self.busy.eq(0), self.done.eq(1)]
        with m.If(self.fault & self.busy):
            m.d.sync += self.error.eq(1)
        return m
