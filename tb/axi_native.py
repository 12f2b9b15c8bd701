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

The memory is sized by ``capacity``, ``reads`` and ``in_writes`` (bursts in flight on
each side) and ``bookings`` (DRAM bursts the controller keeps in view), never by the
image; they are the memory's :attr:`AxiDram.design`, by which a native run keeps the
design's Verilog (:func:`~sparseforge.tb.native.top_verilog`), though the model reads
them, as the part's timing, when the run starts.

The memory, cycle for cycle:

- AR: a burst is taken on a cycle where its coin allows, a slot of the table of ``reads``
  reads in flight is free (slots are taken in turn) and the DRAM controller (the rules
  of :class:`~sparseforge.tb.dram.DramScheduler`, the named part's timing) books the last
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
The rules run in C++ beside the Verilated design (``axi_native.cpp``, :data:`SOURCE`),
called once a rising edge by a Verilog wrapper on the pins (:data:`VERILOG`): a
simulator evaluates gateware whole every cycle, and this memory's tables and DRAM
timing in gateware were a third of the accelerator's simulated logic, where the C++
does only what a cycle moves. Its storage is loaded from the image when the simulation
starts and written back when it ends. A transfer on any channel counts as movement for
the run's deadlock watchdog (``Bench.patience``), which must exceed the part's worst
read (:attr:`~sparseforge.sw.dram.Timing.worst`).
"""

import random
from dataclasses import dataclass
from importlib import resources

import numpy as np
from amaranth.back import rtlil
from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..core.errors import ParameterError
from ..core.export import clean_verilog
from ..hw.axi import OKAY, AxiSignature, pins
from ..sim import native
from ..sim.runners import flat_ports
from ..sw.dram import timing
from .axi import AxiMemory
from .streams import LFSR_TAPS, rate_threshold, stream_seed

CHANNELS = ("ar", "aw", "w", "r", "b")
"""The channels with a coin: readiness on AR, AW, W; a beat or an answer offered on R, B."""

COUNTERS = ("bytes_read", "bytes_written", "read_bursts", "write_bursts", "read_cycles",
            "overtakes", "interleaved", "errors", "dram_reads", "dram_writes", "shared_reads",
            "shared_writes")
"""The memory's counters, 64 bits each, in :class:`AxiRun`'s order."""

LATENCY = 12
"""Bits of the run-time ``latency`` setting: cycles added to every access, at most
``2**LATENCY - 1`` (well inside a bench's watchdog, which sees no transfer meanwhile)."""

TIMINGS = ("cl", "trcd", "trp", "tras", "trtp", "tccd_l", "trrd_s", "trrd_l", "tfaw",
           "trefi", "trfc", "burst")
"""The part's timings the controller keeps (:class:`~sparseforge.sw.dram.Timing`'s)."""

SETTINGS = ("size", "writes", "interleave", "latency", "taps",
            *(f"{c}_{f}" for c in CHANNELS for f in ("rate", "seed")),
            "addr_width", "data_width", "capacity", "reads", "in_writes", "bookings",
            "group_bits", "column_bits", "bank_bits", "row_bits", "burst_bytes", *TIMINGS)
"""What the C++ model reads when the run starts, a 64-bit value each, in this order (its
``Setting``): the image's bytes, the write bursts whose answers end the run,
interleaving, the latency added to every access, the coins' LFSR feedback and each
channel's rate (of 65536) and seed; then the memory's sizes and the DRAM part's
geometry (bits of a burst address's fields) and timing."""

SOURCE = resources.files("sparseforge.tb").joinpath("axi_native.cpp")
"""The model in C++ (``axi_native.cpp``), built with every native run that holds one."""

VERILOG = """
// The AXI4 slave memory of sparseforge.tb.axi_native: the design's pins handed, each
// rising edge, to its C++ model (tb/axi_native.cpp), which answers with the next cycle's
// registers; AR's readiness is the model's ar_ok and the burst's span on the pins.
// Settings from source image SOURCE, contents from SOURCE + 1; when the simulation
// ends, the contents go to sink SINK and the counters to SINK + 1.
module sf_axi_dram #(parameter integer SOURCE = 0, parameter integer SINK = 0,
                     parameter integer ADDR = 32, parameter integer DATA = 64,
                     parameter integer RID = 1, parameter integer WID = 1) (
    input clk, input rst,
    input [RID-1:0] arid, input [ADDR-1:0] araddr, input [7:0] arlen, input [2:0] arsize,
    input [1:0] arburst, input arvalid, output arready,
    output reg [RID-1:0] rid, output reg [DATA-1:0] rdata, output reg [1:0] rresp,
    output reg rlast, output reg rvalid, input rready,
    input [WID-1:0] awid, input [ADDR-1:0] awaddr, input [7:0] awlen, input [2:0] awsize,
    input [1:0] awburst, input awvalid, output reg awready,
    input [DATA-1:0] wdata, input [DATA/8-1:0] wstrb, input wlast, input wvalid,
    output reg wready,
    output reg [WID-1:0] bid, output reg [1:0] bresp, output reg bvalid, input bready,
    output moved, output reg done);
  import "DPI-C" function void sf_axi_open(input int source, input int sink);
  import "DPI-C" function void sf_axi_close(input int source);
  import "DPI-C" pure function bit sf_axi_ends(input int source, input int part,
                                               input longint addr, input int size,
                                               input int len);
  import "DPI-C" function void sf_axi_step(
      input int source, input bit reset, input int ar_id, input int ar, input longint ar_addr,
      input int aw_id, input int aw, input longint aw_addr, input bit [511:0] w_data,
      input bit [63:0] w_strb, input int ctl, output int r_id, output bit [511:0] r_data,
      output int rctl, output int b_id, output int state);
  reg ar_ok;
  reg [9:0] part;
  initial sf_axi_open(SOURCE, SINK);
  final sf_axi_close(SOURCE);
  assign arready = arvalid && ar_ok && sf_axi_ends(SOURCE, 32'(part), 64'(araddr),
                                                   32'(arsize), 32'(arlen));
  assign moved = (arvalid & arready) | (rvalid & rready) | (awvalid & awready)
                 | (wvalid & wready) | (bvalid & bready);
  always @(posedge clk) begin : edge_
    /* verilator lint_off UNUSEDSIGNAL */
    int r_id, rctl, b_id, state;        // the model's words, of which the bus takes some
    bit [511:0] r_data;
    /* verilator lint_on UNUSEDSIGNAL */
    sf_axi_step(SOURCE, rst, 32'(arid), 32'({arvalid, arburst, arsize, arlen}), 64'(araddr),
                32'(awid), 32'({awvalid, awburst, awsize, awlen}), 64'(awaddr),
                512'(wdata), 64'(wstrb), 32'({bready, rready, wlast, wvalid}), r_id, r_data,
                rctl, b_id, state);
    rid <= r_id[RID-1:0];
    rdata <= r_data[DATA-1:0];
    {rvalid, rlast, rresp} <= rctl[3:0];
    bid <= b_id[WID-1:0];
    {bvalid, bresp} <= state[2:0];
    {done, ar_ok, wready, awready} <= state[7:4];
    part <= state[25:16];
  end
endmodule
"""
"""The memory's Verilog: a wrapper calling the C++ model (:data:`SOURCE`) each edge."""


class AxiDramMemory(wiring.Component):
    """An AXI4 slave over a memory image with DRAM timing, by the rules of
    :mod:`sparseforge.tb.axi_native`: :data:`VERILOG`'s wrapper on the pins, the rules
    in its C++ model.

    Parameters
    ----------
    source, sink : the ids of its first source image (settings, then contents) and first
        sink image (contents, then counters) in the native run.
    addr_width, data_width, read_id, write_id : the bus's
        (:class:`~sparseforge.hw.axi.AxiSignature`); at most 512 data bits.
    timing : :class:`~sparseforge.sw.dram.Timing`.
    capacity : bytes of storage, a power of two.
    reads, writes : bursts in flight at most on each side (powers of two, at most 64).
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
        for name, value in (("reads", reads), ("writes", writes)):
            if value > 64:
                raise ParameterError(f"{name}={value}: at most 64 bursts in flight")
        if capacity < data_width // 8:
            raise ParameterError(f"capacity={capacity}: less than a beat of the "
                                 f"{data_width}-bit bus")
        if data_width > 512:
            raise ParameterError(f"data_width={data_width}: the memory serves buses of at "
                                 "most 512 bits")
        self.source, self.sink, self.timing = source, sink, timing_
        self.addr_width, self.data_width = addr_width, data_width
        self.read_id, self.write_id = read_id, write_id
        self.capacity = capacity
        self.reads, self.writes, self.bookings = reads, writes, bookings
        super().__init__({"axi": In(pins(AxiSignature(addr_width, data_width, read_id,
                                                      write_id))),
                          "moved": Out(1), "done": Out(1)})

    def elaborate(self, platform):
        m = Module()
        pins_ = {f"{'o' if member.flow == Out else 'i'}_{name}": getattr(self.axi, name)
                 for name, member in self.axi.signature.members.items()}
        m.submodules.model = Instance(
            "sf_axi_dram", p_SOURCE=self.source, p_SINK=self.sink, p_ADDR=self.addr_width,
            p_DATA=self.data_width, p_RID=self.read_id, p_WID=self.write_id,
            i_clk=ClockSignal(), i_rst=ResetSignal(), o_moved=self.moved, o_done=self.done,
            **pins_)
        return m


@dataclass(frozen=True)
class AxiRun:
    """What an :class:`AxiDram` memory saw: its final contents (``image``, bytes as long as
    the image it started with) and its counters (``read_cycles``: cycles with a read in
    flight; ``overtakes``: read bursts answered before an older one; ``interleaved``:
    beats that broke into another burst's; ``errors``: SLVERR beats and answers; of the
    DRAM bursts the reads and the writes span, ``dram_reads`` and ``dram_writes`` those
    that took a turn of the DRAM's data bus, ``shared_reads`` and ``shared_writes`` those
    answered with the burst booked just before, which take none). On Amaranth's
    simulator ``overtakes`` and the DRAM's bursts are not counted (0): its memory has no
    DRAM."""

    image: bytes
    bytes_read: int
    bytes_written: int
    read_bursts: int
    write_bursts: int
    read_cycles: int
    overtakes: int
    interleaved: int
    errors: int
    dram_reads: int
    dram_writes: int
    shared_reads: int
    shared_writes: int


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
    memory (:class:`AxiDramMemory`).
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

    verilog = VERILOG

    @property
    def cpp(self):
        """The C++ its unit calls (:data:`SOURCE`), built with the run's model."""
        return SOURCE.read_text()

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
        reads, in_writes, bookings = self.sizes
        part, t = self.timing.part, self.timing
        values = {"size": len(self.image), "writes": self.writes,
                  "interleave": int(self.interleave), "latency": self.latency,
                  "taps": LFSR_TAPS, "addr_width": self.addr_width,
                  "data_width": self.data_width, "capacity": self.capacity, "reads": reads,
                  "in_writes": in_writes, "bookings": bookings,
                  "group_bits": exact_log2(part.bank_groups),
                  "column_bits": exact_log2(part.columns // part.burst_length),
                  "bank_bits": exact_log2(part.banks), "row_bits": exact_log2(part.rows),
                  "burst_bytes": part.burst_bytes, **{k: getattr(t, k) for k in TIMINGS}}
        for c in CHANNELS:
            values |= {f"{c}_rate": rate_threshold(self.rates[c]), f"{c}_seed": self.seeds[c]}
        settings = np.array([values[name] for name in SETTINGS], dtype=np.uint64)
        return ([native.Image(settings.view(np.uint32).reshape(1, -1), 0, 1),
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
                      s["read_cycles"], 0, self.memory.interleaved, s["errors"], 0, 0, 0, 0)

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
