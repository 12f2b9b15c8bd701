# amaranth: UnusedElaboratable=no
"""An AXI4 slave memory with DRAM timing for native runs: a design's AXI4 master served
inside the simulator, at Verilator's speed.

A bench whose component has AXI4 master pins (:func:`~sparseforge.hw.axi.pins` of an
:class:`~sparseforge.hw.axi.AxiSignature`, ``m_axi__araddr``, ...) puts an
:class:`AxiDram` among its drivers::

    self.memory = AxiDram(self, "m_axi", image, rates={"ar": .7, "r": .8}, writes=n)
    self.drivers = [*sources, *sinks, self.memory]
    ...
    run = self.memory.result()      # in from_outputs: an AxiRun

``image`` is the memory's contents from byte address 0 (bytes or a uint8 array); the
memory is that long, and an access past it is answered SLVERR. A native run
(:func:`sparseforge.tb.native.run`) builds :class:`AxiDramMemory` into the simulated
design on those pins; its storage holds ``capacity`` bytes (a power of two, by default
the image's size rounded up), and the image, the coins' rates and seeds and the other
run-time settings are read when the run starts, so another image of at most that size,
another seed, other rates or another ``latency`` need no new build. After the run,
:meth:`AxiDram.result` gives the memory's final contents (what the design wrote, e.g. an
accelerator's output) and its counters (:class:`AxiRun`). The run ends when the bench's
sinks are done and the memory has answered ``writes`` write bursts on B with nothing left
in flight (``writes`` 0: the sinks alone end it; a bench with no sinks, only the pins,
ends on the writes).
On Amaranth's simulator the same driver serves the pins with the checking
:class:`~sparseforge.tb.axi.AxiMemory` (random delays in place of DRAM timing: the same
data, other cycles).

The gateware is sized by ``capacity``, ``reads`` and ``in_writes`` (bursts in flight on
each side) and ``bookings`` (DRAM bursts the controller keeps in view), never by the
image; a bench keeps them fixed so that every run reuses one build, and its Verilog: they
are the memory's :attr:`AxiDram.design`, by which a native run keeps the design's
Verilog (:func:`~sparseforge.tb.native.top_verilog`).

The memory, cycle for cycle:

- AR: a burst is taken on a cycle where its coin allows, a slot of the table of ``reads``
  reads in flight is free (slots are taken in turn) and the DRAM controller
  (:class:`~sparseforge.tb.dram.DramScheduler`, the named part's timing) books the last
  of its DRAM bursts: they are booked one a cycle, so a 4 KiB burst takes 64 cycles,
  and only while the controller has ``bookings`` in view (its ``room``). Its completion
  is that of its last DRAM burst, or the cycle it is taken if the burst is the one just
  fetched (answered with it), ``latency`` cycles later (the run-time setting: a
  controller's or an interconnect's pipeline beyond the part's timing, 0 by default, so
  that every access takes it).
- R: on a cycle where R's register is empty or being taken and R's coin allows, a beat
  is chosen among the reads due by the next cycle that are the oldest in flight of
  their ID (AXI's order within an ID): the oldest such (so reads that found their rows
  open overtake those that wait for an activation: out of order across IDs), or with
  ``interleave`` any such at random, so beats of different IDs interleave; without it a
  burst once begun runs to its end. The beat carries its byte lanes (others zero);
  a beat past the image is SLVERR with zero data.
- AW: taken on its coin when a slot of the ``writes`` table is free. W: taken on its coin
  once its burst's AW is; each beat is stored at once under its strobes and lanes (none
  past the image: SLVERR; a WLAST out of place: SLVERR too). A burst whose beats are
  all in is booked like a read (its DRAM bursts, sharing banks and the data bus with the
  reads; a write taken as long as a read), and B answers it once complete (``latency``
  later, as a read): the oldest due of those that are their ID's oldest, on B's coin.
  So a read taken after a write's B sees the write.
- Reads and writes both waiting to book take turns.

Coins are the house's seeded LFSRs (:func:`~sparseforge.tb.native.coin`), one a channel.
Every cycle's work is in the design; the storage is a Verilog array (:data:`RAM`) loaded
from the image when the simulation starts and written back when it ends. A transfer on
any channel counts as movement for the run's deadlock watchdog (``Bench.patience``),
which must exceed the part's worst read (:attr:`~sparseforge.sw.dram.Timing.worst`).
"""

import random
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from amaranth.back import rtlil
from amaranth.hdl import Array, Cat, ClockSignal, Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..core.errors import ParameterError
from ..core.export import clean_verilog
from ..hw.axi import BURST_INCR, OKAY, SLVERR, AxiSignature, pins
from ..sim import native
from ..sim.runners import flat_ports
from ..sw.dram import timing
from .axi import AxiMemory
from .dram import TIME, DramScheduler, _max
from .native import coin, lfsr
from .streams import rate_threshold, stream_seed

CHANNELS = ("ar", "aw", "w", "r", "b")
"""The channels with a coin: readiness on AR, AW, W; a beat or an answer offered on R, B."""

COUNTERS = ("bytes_read", "bytes_written", "read_bursts", "write_bursts", "read_cycles",
            "overtakes", "interleaved", "errors")
"""The memory's counters, 64 bits each, in :class:`AxiRun`'s order."""

LATENCY = 12
"""Bits of the run-time ``latency`` setting: cycles added to every access, at most
``2**LATENCY - 1`` (well inside a bench's watchdog, which sees no transfer meanwhile)."""

SETTINGS = (("size", 64), ("writes", 32), ("interleave", 1), ("latency", LATENCY),
            *((f"{c}_{f}", w) for c in CHANNELS for f, w in (("rate", 17), ("seed", 31))))
"""The run-time settings, packed from bit 0 up: the image's bytes, the write bursts whose
answers end the run, interleaving, the latency added to every access, and each
channel's coin (its rate of 65536, its seed but bit 0, which is always set)."""

RAM = """
// The storage of sparseforge.tb.axi_native's AXI memory: DEPTH rows of WIDTH bits,
// loaded from source image IMAGE when the simulation starts (rows past it zero), a
// registered read and a byte-strobed write a cycle; when it ends, the image's rows go
// to sink DUMP and the STATS counters (64 bits each) to sink DUMP + 1.
module sf_axi_ram #(parameter integer IMAGE = 0, parameter integer DUMP = 0,
                    parameter integer WIDTH = 64, parameter integer ABITS = 10,
                    parameter integer STATS = 1) (
    input clk, input re, input [ABITS-1:0] raddr, output reg [WIDTH-1:0] rdata,
    input we, input [ABITS-1:0] waddr, input [WIDTH-1:0] wdata,
    input [WIDTH/8-1:0] wstrb, input [64*STATS-1:0] stats);
  import "DPI-C" function void sf_source_open(input int id, output longint items,
                                              output int rate, output int seed);
  import "DPI-C" function longint sf_source_chunk(input int id, input longint index,
                                                 input int chunk);
  import "DPI-C" function void sf_sink_open(input int id, output longint items,
                                            output int rate, output int seed);
  import "DPI-C" function void sf_sink_chunk(input int id, input int chunk,
                                             input longint value);
  localparam integer CHUNKS = (WIDTH + 63) / 64;
  reg [WIDTH-1:0] rows [0:(1 << ABITS)-1];
  reg [64*CHUNKS-1:0] word;
  longint n;
  /* verilator lint_off UNUSEDSIGNAL */
  longint unused;
  int r, s;
  /* verilator lint_on UNUSEDSIGNAL */
  initial begin
    sf_source_open(IMAGE, n, r, s);
    sf_sink_open(DUMP, unused, r, s);
    sf_sink_open(DUMP + 1, unused, r, s);
    for (longint i = 0; i < (1 << ABITS); i++) begin
      for (int k = 0; k < CHUNKS; k++) word[64*k +: 64] = sf_source_chunk(IMAGE, i, k);
      rows[i[ABITS-1:0]] = word[WIDTH-1:0];
    end
  end
  always @(posedge clk) begin
    if (re) rdata <= rows[raddr];
    if (we)
      for (int b = 0; b < WIDTH / 8; b++) if (wstrb[b]) rows[waddr][8*b +: 8] <= wdata[8*b +: 8];
  end
  final begin
    for (longint i = 0; i < n; i++) begin
      word = {{(64*CHUNKS-WIDTH){1'b0}}, rows[i[ABITS-1:0]]};
      for (int k = 0; k < CHUNKS; k++) sf_sink_chunk(DUMP, k, word[64*k +: 64]);
    end
    for (int k = 0; k < STATS; k++) sf_sink_chunk(DUMP + 1, 0, stats[64*k +: 64]);
  end
endmodule
"""


def _wire(m, value, name=None):
    """``value`` in a signal of its own: an expression used more than once is built once
    (Amaranth copies an expression into every statement that uses it)."""
    signal = Signal(len(value), name=name)
    m.d.comb += signal.eq(value)
    return signal


def _bit(bits, index):
    """Bit ``index`` of ``bits``, as a multiplexer (a shift would be wider than its use)."""
    return Array(bits[i] for i in range(len(bits)))[index]


def _rotate(m, bits, by):
    """``bits`` turned so that bit ``by`` comes first."""
    n = len(bits)
    return _wire(m, Array(Cat(*(bits[(i + k) % n] for i in range(n))) for k in range(n))[by])


def _times(value, size, width):
    """``value << size`` (``size`` 0 to 7) in ``width`` bits, as a multiplexer of constant
    shifts."""
    return Array((value << k)[:width] for k in range(8))[size]


def _first(m, bits, base):
    """``(any, index)``: whether ``bits`` has a bit set, and the first set from ``base``
    on, round the ring."""
    turned = _rotate(m, bits, base)
    offset = Const(0, len(base))
    for i in reversed(range(len(bits))):
        offset = Mux(turned[i], i, offset)
    return _wire(m, turned.any()), _wire(m, (base + offset)[:len(base)])


class _Table:
    """A ring of ``n`` bursts in flight: their address fields, completion and beats sent,
    as arrays indexed by slot, and which slots are ``busy``."""

    FIELDS = ("id", "addr", "len", "size", "burst", "done", "beat")

    def __init__(self, name, n, addr_width, id_width):
        def array(field, width):
            return Array(Signal(width, name=f"{name}_{field}{i}") for i in range(n))

        self.name, self.n = name, n
        self.id, self.addr = array("id", id_width), array("addr", addr_width)
        self.len, self.size = array("len", 8), array("size", 3)
        self.burst = array("burst", 2)
        self.done, self.beat = array("done", TIME), array("beat", 8)
        self.busy = Signal(n, name=f"{name}_busy")

    def store(self, m, slot, pins, prefix):
        """The address channel ``prefix``'s burst into ``slot``."""
        m.d.sync += [*(getattr(self, f)[slot].eq(getattr(pins, f"{prefix}{f}"))
                       for f in ("id", "addr", "len", "size", "burst")),
                     self.beat[slot].eq(0)]

    def at(self, m, slot, role):
        """Slot ``slot``'s fields, each in a signal of its own (arithmetic on several
        fields indexed at once would multiply their multiplexers)."""
        return SimpleNamespace(**{f: _wire(m, getattr(self, f)[slot], f"{self.name}_{role}_{f}")
                                  for f in self.FIELDS})

    def heads(self, m, base):
        """Per slot: busy and the oldest busy of its ID (the ring's oldest at ``base``)."""
        n = self.n
        ages = [_wire(m, (Const(n + i, len(base) + 1) - base)[:len(base)]) for i in range(n)]
        out = []
        for i in range(n):
            older = Const(0)
            for j in range(n):
                if j != i:
                    older |= self.busy[j] & (self.id[j] == self.id[i]) & (ages[j] < ages[i])
            out.append(self.busy[i] & ~older)
        return _wire(m, Cat(*out), f"{self.name}_heads")


class _Beat:
    """Where beat ``beat`` of a burst at ``addr`` of ``2**size`` bytes lies on a bus of
    ``lanes`` bytes: its ``row`` of the storage, its byte lanes ``mask``, its ``bytes``,
    and whether it is ``bad`` (past ``limit`` bytes, wider than the bus, or not INCR)."""

    def __init__(self, m, burst, lanes, row_bits, limit):
        lane_bits, width = exact_log2(lanes), len(burst.addr) + 9
        at = _wire(m, _aligned(m, burst.addr, burst.size) + _times(burst.beat, burst.size,
                                                                   width))
        self.row = at[lane_bits:][:row_bits]
        self.bytes = _wire(m, _times(Const(1, 8), burst.size, 8))
        if lane_bits:                   # the lanes that agree with the address above size
            below = _wire(m, Array(Const((1 << k) - 1, lane_bits) for k in range(8))
                          [burst.size])
            self.mask = _wire(m, Cat(*(Cat(*((at[b] if k >> b & 1 else ~at[b]) | below[b]
                                             for b in range(lane_bits))).all()
                                       for k in range(lanes))))
        else:
            self.mask = Const(1, 1)
        wide = burst.size > lane_bits if lane_bits < 7 else Const(0)
        self.bad = _wire(m, wide | (burst.burst != BURST_INCR) | (at + self.bytes > limit))


def _aligned(m, addr, size):
    """``addr`` with its low ``size`` bits clear."""
    ones = (1 << len(addr)) - 1
    return _wire(m, addr & Array(Const(ones >> k << k, len(addr)) for k in range(8))[size])


def _dram_bursts(m, addr, size, len_, burst_bytes):
    """``(first, last)``: the DRAM bursts of ``burst_bytes`` an AXI burst spans."""
    shift, width = exact_log2(burst_bytes), len(addr) + 9
    start = _aligned(m, addr, size)
    end = _wire(m, start + _times(len_ + 1, size, width) - 1)[:width]
    return start[shift:], end[shift:]


class AxiDramMemory(wiring.Component):
    """An AXI4 slave over a memory image with DRAM timing, by the rules of
    :mod:`sparseforge.tb.axi_native`.

    Parameters
    ----------
    source, sink : the ids of its first source image (settings, then contents) and first
        sink image (contents, then counters) in the native run.
    addr_width, data_width, read_id, write_id : the bus's
        (:class:`~sparseforge.hw.axi.AxiSignature`).
    timing : :class:`~sparseforge.sw.dram.Timing`.
    capacity : bytes of storage, a power of two.
    reads, writes : bursts in flight at most on each side (powers of two).
    bookings : DRAM bursts the controller keeps in view (``DramScheduler``'s).

    Members
    -------
    axi : In(pins(AxiSignature(addr_width, data_width, read_id, write_id)))
    moved : Out(1)
        A transfer on any channel on this cycle.
    done : Out(1)
        The writes expected are answered and nothing is in flight.
    """

    def __init__(self, source, sink, addr_width, data_width, read_id, write_id, timing_,
                 capacity, reads=16, writes=16, bookings=16):
        for name, value, least in (("capacity", capacity, 1), ("reads", reads, 2),
                                   ("writes", writes, 2)):
            if not isinstance(value, int) or value < least or value & (value - 1):
                raise ParameterError(f"{name}={value!r}: expected a power of two, at least "
                                     f"{least}")
        if capacity < data_width // 8:
            raise ParameterError(f"capacity={capacity}: less than a beat of the "
                                 f"{data_width}-bit bus")
        self.source, self.sink, self.timing = source, sink, timing_
        self.data_width, self.capacity = data_width, capacity
        self.reads, self.writes, self.bookings = reads, writes, bookings
        super().__init__({"axi": In(pins(AxiSignature(addr_width, data_width, read_id,
                                                      write_id))),
                          "moved": Out(1), "done": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p, lanes = self.axi, self.data_width // 8
        row_bits = max(exact_log2(self.capacity // lanes), 1)
        burst_bytes = self.timing.part.burst_bytes

        settings = Signal(sum(w for _, w in SETTINGS))
        m.submodules.settings = Instance(
            "sf_source_port", p_ID=self.source, p_WIDTH=len(settings), i_clk=ClockSignal(),
            i_rst=Const(0), i_load=Const(0), i_index=Const(0, 64), o_item=settings,
            o_items=Signal(64), o_rate=Signal(32), o_seed=Signal(32))
        field, at = {}, 0
        for name, width in SETTINGS:
            field[name], at = settings[at:at + width], at + width

        limit, expected, interleave = field["size"], field["writes"], field["interleave"]
        latency = field["latency"]

        def seed(c):
            return Cat(Const(1, 1), field[f"{c}_seed"])

        coins = {c: _wire(m, coin(m, field[f"{c}_rate"], seed(c)), f"coin_{c}")
                 for c in CHANNELS}
        pick = lfsr(m, seed("r").rotate_left(7))

        m.submodules.scheduler = dram = DramScheduler(self.timing, self.bookings, room=True)
        now = dram.now
        counters = {name: Signal(64, name=name) for name in COUNTERS}
        adds = {name: [] for name in COUNTERS}

        def count(name, when, amount=1):
            adds[name].append(Mux(when, amount, 0))

        re, raddr, rdata = Signal(), Signal(row_bits), Signal(self.data_width)
        we, waddr = Signal(), Signal(row_bits)
        wdata, wstrb = Signal(self.data_width), Signal(lanes)
        m.submodules.ram = Instance(
            "sf_axi_ram", p_IMAGE=self.source + 1, p_DUMP=self.sink, p_WIDTH=self.data_width,
            p_ABITS=row_bits, p_STATS=len(COUNTERS), i_clk=ClockSignal(), i_re=re,
            i_raddr=raddr, o_rdata=rdata, i_we=we, i_waddr=waddr, i_wdata=wdata,
            i_wstrb=wstrb, i_stats=Cat(*counters.values()))

        reads = _Table("read", self.reads, len(p.araddr), len(p.arid))
        writes = _Table("write", self.writes, len(p.awaddr), len(p.awid))

        # -- booking: an AR's DRAM bursts as it waits; a written burst's after its beats
        r_issue = Signal(exact_log2(self.reads))
        r_first, r_last = _dram_bursts(m, p.araddr, p.arsize, p.arlen, burst_bytes)
        r_part, r_far = Signal(10), Signal(TIME)
        want_r = _wire(m, p.arvalid & ~_bit(reads.busy, r_issue) & coins["ar"])

        wb = exact_log2(self.writes)
        w_alloc, w_fill, w_book = Signal(wb + 1), Signal(wb + 1), Signal(wb + 1)
        aslot, fslot, bslot = w_alloc[:wb], w_fill[:wb], w_book[:wb]
        booked = Signal(self.writes)
        booking = writes.at(m, bslot, "booking")
        w_first, w_last = _dram_bursts(m, booking.addr, booking.size, booking.len,
                                       burst_bytes)
        w_part, w_far = Signal(10), Signal(TIME)
        want_w = _wire(m, w_book != w_fill)

        turn = Signal()                         # writes book first on a tie
        grant_w = _wire(m, want_w & (turn | ~want_r) & dram.room)
        grant_r = _wire(m, want_r & ~(want_w & (turn | ~want_r)) & dram.room)
        m.d.comb += [dram.go.eq(grant_r | grant_w),
                     dram.burst.eq(Mux(grant_w, w_first + w_part, r_first + r_part))]
        with m.If(want_r & want_w & dram.room):
            m.d.sync += turn.eq(~turn)

        r_end = _wire(m, r_first + r_part == r_last)
        r_done = _max(m, r_far, dram.done)
        m.d.comb += p.arready.eq(grant_r & r_end)
        with m.If(grant_r):
            m.d.sync += [r_part.eq(Mux(r_end, 0, r_part + 1)), r_far.eq(Mux(r_end, 0, r_done))]
        with m.If(p.arready):
            reads.store(m, r_issue, p, "ar")
            m.d.sync += [reads.done[r_issue].eq(_max(m, r_done, now) + latency),
                         r_issue.eq(r_issue + 1)]

        w_end = _wire(m, w_first + w_part == w_last)
        w_done = _max(m, w_far, dram.done)
        with m.If(grant_w):
            m.d.sync += [w_part.eq(Mux(w_end, 0, w_part + 1)), w_far.eq(Mux(w_end, 0, w_done))]
            with m.If(w_end):
                m.d.sync += [writes.done[bslot].eq(_max(m, w_done, now) + latency),
                             w_book.eq(w_book + 1),
                             booked.bit_select(bslot, 1).eq(1)]

        # -- R: a due read's beat into the register, its data read by row
        heads = reads.heads(m, r_issue)
        due = Cat(*(heads[i] & (reads.done[i] <= now + 1) for i in range(self.reads)))
        current, going = Signal(range(self.reads)), Signal()
        hold = ~interleave & going
        candidates = _wire(m, Mux(hold, Cat(*(current == i for i in range(self.reads))), due))
        base = _wire(m, Mux(interleave, pick[:len(r_issue)], r_issue))
        some, slot = _first(m, candidates, base)
        chosen = reads.at(m, slot, "chosen")
        beat = _Beat(m, chosen, lanes, row_bits, limit)
        last = _wire(m, chosen.beat == chosen.len)
        r_valid, r_mask, r_bad = Signal(), Signal(lanes), Signal()
        load = _wire(m, some & (~r_valid | p.rready) & coins["r"])
        m.d.comb += [re.eq(load), raddr.eq(beat.row), p.rvalid.eq(r_valid),
                     p.rdata.eq(Mux(r_bad, 0, rdata & Cat(*(b.replicate(8) for b in r_mask))))]
        _, oldest = _first(m, reads.busy, r_issue)
        with m.If(load):
            m.d.sync += [r_valid.eq(1), p.rid.eq(chosen.id), p.rlast.eq(last),
                         p.rresp.eq(Mux(beat.bad, SLVERR, OKAY)), r_mask.eq(beat.mask),
                         r_bad.eq(beat.bad), reads.beat[slot].eq(chosen.beat + 1),
                         current.eq(slot), going.eq(~last)]
            with m.If(last):
                m.d.sync += reads.busy.bit_select(slot, 1).eq(0)
        with m.Elif(p.rready):
            m.d.sync += r_valid.eq(0)
        with m.If(p.arready):
            m.d.sync += reads.busy.bit_select(r_issue, 1).eq(1)
        count("read_bursts", p.arready)
        count("bytes_read", load, beat.bytes)
        count("errors", load & beat.bad)
        count("overtakes", load & (chosen.beat == 0) & (slot != oldest))
        count("interleaved", load & going & (slot != current))
        count("read_cycles", reads.busy.any() | r_valid)

        # -- AW and W: the burst's fields, then its beats stored as they come
        took_aw = _wire(m, p.awvalid & p.awready)
        m.d.comb += p.awready.eq(coins["aw"] & ~_bit(writes.busy, aslot))
        w_bad = Signal(self.writes)
        with m.If(took_aw):
            writes.store(m, aslot, p, "aw")
            m.d.sync += [w_alloc.eq(w_alloc + 1), writes.busy.bit_select(aslot, 1).eq(1),
                         booked.bit_select(aslot, 1).eq(0), w_bad.bit_select(aslot, 1).eq(0)]
        filling = writes.at(m, fslot, "filling")
        wbeat = _Beat(m, filling, lanes, row_bits, limit)
        m.d.comb += p.wready.eq(coins["w"] & (w_fill != w_alloc))
        took_w = _wire(m, p.wvalid & p.wready)
        m.d.comb += [we.eq(took_w & ~wbeat.bad), waddr.eq(wbeat.row), wdata.eq(p.wdata),
                     wstrb.eq(p.wstrb & wbeat.mask)]
        with m.If(took_w):
            m.d.sync += writes.beat[fslot].eq(filling.beat + 1)
            with m.If(wbeat.bad | (p.wlast != (filling.beat == filling.len))):
                m.d.sync += w_bad.bit_select(fslot, 1).eq(1)
            with m.If(filling.beat == filling.len):
                m.d.sync += w_fill.eq(w_fill + 1)

        # -- B: the oldest due answer that is its ID's oldest
        w_heads = writes.heads(m, aslot)
        answers = Cat(*(w_heads[i] & booked[i] & (writes.done[i] <= now + 1)
                        for i in range(self.writes)))
        any_b, answer = _first(m, answers, aslot)
        b_valid, answered = Signal(), Signal(32)
        give = _wire(m, any_b & (~b_valid | p.bready) & coins["b"])
        bad_b = _wire(m, _bit(w_bad, answer))
        m.d.comb += p.bvalid.eq(b_valid)
        with m.If(give):
            m.d.sync += [b_valid.eq(1), p.bid.eq(writes.id[answer]),
                         p.bresp.eq(Mux(bad_b, SLVERR, OKAY)),
                         writes.busy.bit_select(answer, 1).eq(0)]
        with m.Elif(p.bready):
            m.d.sync += b_valid.eq(0)
        with m.If(p.bvalid & p.bready):
            m.d.sync += answered.eq(answered + 1)
        count("write_bursts", took_aw)
        count("bytes_written", took_w, wbeat.bytes)
        count("errors", give & bad_b)

        for name, terms in adds.items():
            m.d.sync += counters[name].eq(sum(terms, counters[name]))
        moved = [(getattr(p, f"{c}valid") & getattr(p, f"{c}ready")) for c in CHANNELS]
        m.d.comb += [self.moved.eq(Cat(*moved).any()),
                     self.done.eq((answered >= expected) & ~reads.busy.any()
                                  & ~writes.busy.any() & ~r_valid & ~b_valid)]
        return m


@dataclass(frozen=True)
class AxiRun:
    """What an :class:`AxiDram` memory saw: its final contents (``image``, bytes as long as
    the image it started with) and its counters (``read_cycles``: cycles with a read in
    flight; ``overtakes``: read bursts answered before an older one; ``interleaved``:
    beats that broke into another burst's; ``errors``: SLVERR beats and answers). On
    Amaranth's simulator ``overtakes`` is not counted (0)."""

    image: bytes
    bytes_read: int
    bytes_written: int
    read_bursts: int
    write_bursts: int
    read_cycles: int
    overtakes: int
    interleaved: int
    errors: int


class _Flat:
    """An :class:`~sparseforge.tb.axi.AxiMemory`'s access to pins ``name`` through a
    bench's ``io`` (flat port names)."""

    def __init__(self, name):
        self.name = name

    def has(self, channel):
        return True

    def signal(self, channel, field):
        return f"{self.name}__{channel}{field}"


class _Io:
    """A bench's ``io`` as the ``ctx`` :class:`~sparseforge.tb.axi.AxiMemory` drives."""

    def __init__(self, io):
        self.io = io

    def get(self, name):
        return self.io.get(name)

    def set(self, name, value):
        self.io.set(name, int(value))


class AxiDram:
    """The AXI4 pins ``name`` of ``bench``'s component served by a memory holding
    ``image`` (see :mod:`sparseforge.tb.axi_native`).

    ``rates`` (``{channel: probability}``, 1 where not given) are the coins of
    :data:`CHANNELS`, seeded from the bench's seed and the channel's name; ``timing_`` a
    :class:`~sparseforge.sw.dram.Timing` (default: DDR4-2400 at 1 GHz); ``latency`` the
    cycles added to every access (0 to ``2**LATENCY - 1``; on Amaranth's simulator, to
    the checking memory's random delays); ``interleave``
    lets R's beats of different IDs interleave; ``writes`` the write bursts whose
    answers end the run; ``capacity``, ``reads``, ``in_writes``, ``bookings`` size the
    gateware (:class:`AxiDramMemory`).
    """

    def __init__(self, bench, name, image, rates=None, timing_=None, interleave=True,
                 writes=0, capacity=None, reads=16, in_writes=16, bookings=16, latency=0):
        ports = flat_ports(bench.component)
        self.name, self.bench = name, bench
        self.image = np.frombuffer(bytes(image), dtype=np.uint8)
        self.addr_width, self.data_width = (len(ports[f"{name}__araddr"]),
                                            len(ports[f"{name}__rdata"]))
        self.read_id, self.write_id = len(ports[f"{name}__rid"]), len(ports[f"{name}__bid"])
        self.capacity = capacity or max(1 << ceil_log2(max(len(self.image), 1)),
                                        self.data_width // 8)
        if len(self.image) > self.capacity:
            raise ParameterError(f"image of {len(self.image)} bytes: more than the memory's "
                                 f"capacity={self.capacity}")
        if set(rates or {}) - set(CHANNELS):
            raise ParameterError(f"rates {sorted(rates)}: the channels are {CHANNELS}")
        self.rates = {c: (rates or {}).get(c, 1.0) for c in CHANNELS}
        if not isinstance(latency, int) or not 0 <= latency < 1 << LATENCY:
            raise ParameterError(f"latency={latency!r}: expected cycles from 0 to "
                                 f"{(1 << LATENCY) - 1}")
        self.latency = latency
        self.seeds = {c: stream_seed(bench.seed, f"{name}__{c}") for c in CHANNELS}
        self.timing, self.interleave, self.writes = timing_ or timing(), interleave, writes
        self.sizes = (reads, in_writes, bookings)
        self.taken = None               # a native run's sinks: the contents and counters
        self.memory = None              # on Amaranth's simulator, the checking memory
        self.fired = None

    # -- a native run (tb.native's hooks) ---------------------------------------------------

    verilog = RAM

    @property
    def design(self):
        """What its unit is built from beside its image ids (a native run's Verilog is
        kept by it)."""
        return (self.addr_width, self.data_width, self.read_id, self.write_id, self.timing,
                self.capacity, *self.sizes)

    def native(self, m, ports, source, sink):
        """Build the memory into ``m`` on the design's ``ports``; its images are numbered
        from ``source`` and ``sink``. Returns its ``(moved, done)``."""
        unit = AxiDramMemory(source, sink, *self.design)
        m.submodules[f"axi_{self.name}"] = unit
        for pin, member in unit.axi.signature.members.items():
            outer, inner = ports[f"{self.name}__{pin}"], getattr(unit.axi, pin)
            m.d.comb += inner.eq(outer) if member.flow == In else outer.eq(inner)
        return unit.moved, unit.done

    def images(self):
        """``(sources, sinks)``: the settings and the contents; the contents after the run
        and the counters."""
        lanes = self.data_width // 8
        rows = -(-len(self.image) // lanes)
        padded = np.zeros(rows * lanes, dtype=np.uint8)
        padded[:len(self.image)] = self.image
        words = max(self.data_width // 32, 1)
        contents = (padded.view(np.uint32).reshape(rows, words) if lanes >= 4 else
                    np.pad(padded.reshape(rows, lanes), ((0, 0), (0, 4 - lanes)))
                    .view(np.uint32).reshape(rows, 1))
        values = {"size": len(self.image), "writes": self.writes,
                  "interleave": int(self.interleave), "latency": self.latency}
        for c in CHANNELS:
            values |= {f"{c}_rate": rate_threshold(self.rates[c]),
                       f"{c}_seed": self.seeds[c] >> 1}
        packed, at = 0, 0
        for name, width in SETTINGS:
            packed, at = packed | values[name] << at, at + width
        settings = [packed >> (32 * k) & 0xFFFFFFFF for k in range(-(-at // 32))]
        return ([native.Image(np.array([settings], dtype=np.uint32), 0, 1),
                 native.Image(contents, 0, 1)],
                [native.Image(words, 0, 1, 0), native.Image(2, 0, 1, 0)])

    def collect(self, taken):
        """Keep what the run's sinks took (the contents, the counters)."""
        self.taken = taken

    def result(self):
        """The :class:`AxiRun` of the run just made, native or on Amaranth's simulator."""
        if self.taken is not None:
            contents, stats = self.taken
            image = contents.view(np.uint8).reshape(len(contents), -1)
            lanes = self.data_width // 8
            image = image[:, :lanes].tobytes()[:len(self.image)]
            values = stats.view(np.uint64).ravel()
            return AxiRun(image, *map(int, values))
        s = self.seen
        return AxiRun(bytes(self.memory.memory[:len(self.image)]), s["bytes_read"],
                      s["bytes_written"], s["read_bursts"], s["write_bursts"],
                      s["read_cycles"], 0, self.memory.interleaved, s["errors"])

    # -- Amaranth's simulator: the checking memory -----------------------------------------

    def _start(self):
        self.memory = AxiMemory(_Flat(self.name), self.data_width, self.capacity,
                                random.Random(self.bench.seed), dict(self.rates),
                                delay=(self.latency, self.latency + 6),
                                interleave=self.interleave,
                                bad=frozenset(range(len(self.image), self.capacity)))
        self.memory.memory[:len(self.image)] = self.image.tobytes()
        self.seen = dict.fromkeys(COUNTERS, 0)
        self.flight = 0

    def idle(self, io):
        for c in ("ar", "aw", "w"):
            io.set(f"{self.name}__{c}ready", 0)
        for c in ("r", "b"):
            io.set(f"{self.name}__{c}valid", 0)

    def drive(self, io, cycle):
        if self.memory is None:
            self._start()
        self.memory.drive(_Io(io))

    def sample(self, io, cycle):
        def moved(c):
            return io.get(f"{self.name}__{c}valid") and io.get(f"{self.name}__{c}ready")

        pins_ = {c: moved(c) for c in CHANNELS}
        s, get = self.seen, (lambda f: io.get(f"{self.name}__{f}"))
        for c in ("ar", "aw"):
            if pins_[c]:
                s[f"{'read' if c == 'ar' else 'write'}_bursts"] += 1
                s["bytes_read" if c == "ar" else "bytes_written"] += \
                    (get(f"{c}len") + 1) << get(f"{c}size")
        self.flight += pins_["ar"] - (pins_["r"] and get("rlast"))
        s["errors"] += (pins_["r"] and get("rresp") != OKAY) + \
            (pins_["b"] and get("bresp") != OKAY)
        s["read_cycles"] += self.flight > 0 or bool(self.memory.r)
        self.memory.sample(_Io(io))
        self.fired = True if any(pins_.values()) else None

    def done(self):
        """On Amaranth's simulator: the writes expected answered, nothing in flight."""
        return (self.memory is not None and self.memory.quiet()
                and self.seen["write_bursts"] >= self.writes)


def lint_text(**params):
    """The Verilog of an :class:`AxiDramMemory` of ``params`` (top module ``axi_dram``),
    for ``verilator --lint-only -Wall`` beside the modules it instantiates (:data:`RAM`,
    ``sim/native_io.v``)."""
    unit = AxiDramMemory(0, 0, **params)
    return clean_verilog(rtlil.convert(unit, name="axi_dram", emit_src=False))
