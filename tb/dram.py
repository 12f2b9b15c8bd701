# amaranth: UnusedElaboratable=no
"""A memory with DRAM timing for benches: one component serving any memory port, natively.

A bench gives a memory port (:class:`~sparseforge.hw.stream_units.MemoryPortSignature`, in
order, or :class:`~sparseforge.hw.interfaces.TaggedMemoryPortSignature`, out of order)
a :class:`DramPort`: the memory's contents, an image indexed by word address, and its
timing (:mod:`sparseforge.sw.dram`: a DDR4-2400 part in accelerator cycles). A native
run (:mod:`sparseforge.tb.native`) builds :class:`DramMemory` into the simulated design
on that port, reading its data through the same DPI call as a stream source; Amaranth's
simulator runs the :class:`DramPort` itself, the reference controller
(:class:`~sparseforge.sw.dram.Dram`) driven cycle by cycle with the same rules, so the
two runs of one bench take the same cycles.

The rules, cycle for cycle:

- a read is taken on a cycle where the read ``in_flight`` before it has been answered
  (its slot in the table of reads in flight is free); a word of ``k`` bursts books one
  a cycle, the read taken with its last;
- its completion cycle is the controller's (:meth:`~sparseforge.sw.dram.Dram.read`);
- on a cycle where the response register is empty or being taken, a read due by the
  next cycle (completion at most one past this one) is chosen, its data read by address,
  and it is offered from the next cycle until taken: the oldest due read for a tagged
  port (answers out of order across banks, with their tags), only the oldest read for an
  in-order one.

The gateware is two components: :class:`DramScheduler`, the controller's state and its
booking of one burst a cycle, and :class:`DramMemory`, the port's side (the table of
reads in flight, the choice of the answer, the data). Every cycle's work stays in the
simulated design; only the data of an answer comes through the DPI. To time an address
stream by itself, :class:`ReaderBench` reads it through a :class:`Reader`.
"""

from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Array, Cat, ClockSignal, Const, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.errors import ParameterError
from ..hw.interfaces import TaggedMemoryPortSignature
from ..hw.stream_units import MemoryPortSignature
from ..sw.dram import Dram, Geometry, timing
from .streams import Bench, Columns

TIME = 48
"""Bits of a cycle count."""


def _held(m, value, width=TIME):
    """``value`` in a signal of its own, so an expression used twice is built once."""
    signal = Signal(width)
    m.d.comb += signal.eq(value)
    return signal


def _max(m, *values):
    """The largest of ``values``."""
    out = _held(m, values[0])
    for v in values[1:]:
        out = _held(m, Mux(v > out, v, out))
    return out


def _lowest(bits, width):
    """The index of the lowest set bit of ``bits`` (``width`` bits, a power of two)."""
    alone = bits & (~bits + 1)
    return Cat(*((alone & sum(1 << i for i in range(width) if i >> j & 1)).any()
                 for j in range(exact_log2(width))))


class DramScheduler(wiring.Component):
    """The controller of :class:`~sparseforge.sw.dram.Dram` in gateware: books a burst a
    cycle, with the banks' open rows and ready cycles, refresh, and the data bus.

    The data bus is the last ``bookings`` bursts booked (enough to hold every one still
    ahead: those of the reads in flight): a burst starts at the earliest cycle it may, or
    where a booked one ends, whichever is first clear of them all.

    Members
    -------
    burst : In(32)
        The burst wanted on this cycle.
    go : In(1)
        Book it (its completion is ``done``, this cycle).
    done : Out(TIME)
    now : Out(TIME)
        Cycles since reset.

    The AXI memory of :mod:`sparseforge.tb.axi_native` keeps these rules in C++, and one
    more: as its reads in flight do not bound its bookings, it books only when the
    oldest of the last ``bookings`` has ended (every burst still ahead stays in view).
    """

    def __init__(self, timing_, bookings):
        self.timing, self.bookings = timing_, bookings
        super().__init__({"burst": In(32), "go": In(1), "done": Out(TIME), "now": Out(TIME)})

    def elaborate(self, platform):
        m = Module()
        r, p, now = self.timing, self.timing.part, self.now
        g_bits, c_bits = exact_log2(p.bank_groups), exact_log2(p.columns // p.burst_length)
        b_bits, rows = exact_log2(p.banks), exact_log2(p.rows)
        group = self.burst[:g_bits]
        bank = Cat(group, self.burst[g_bits + c_bits:][:b_bits])
        row = self.burst[g_bits + c_bits + b_bits:][:rows]

        def time(name, n):
            return Array(Signal(TIME, name=f"{name}{i}") for i in range(n))

        def after_refresh(value):
            t = _held(m, value)
            phase = _held(m, t % r.trefi)
            return Mux((t >= r.trefi) & (phase < r.trfc), t - phase + r.trfc, t)

        banks = p.bank_groups * p.banks
        opened, open_row = Signal(banks), Array(Signal(rows) for _ in range(banks))
        epoch, read, precharge = time("epoch", banks), time("read", banks), time("pre", banks)
        group_act, group_burst = time("group_act", p.bank_groups), time("group_burst",
                                                                        p.bank_groups)
        act_s, faw, booked = Signal(TIME), time("faw", 4), time("booked", self.bookings)
        last, last_done, last_valid = Signal(32), Signal(TIME), Signal()

        s = Signal(TIME)
        m.d.comb += s.eq(after_refresh(_max(m, now, read[bank])))
        same_epoch = opened.bit_select(bank, 1) & (epoch[bank] == s // r.trefi)
        hit = same_epoch & (open_row[bank] == row)
        first = _max(m, s, act_s, group_act[group], faw[0])
        act = Signal(TIME)
        m.d.comb += act.eq(after_refresh(
            Mux(same_epoch, _max(m, first, _max(m, s, precharge[bank]) + r.trp), first)))
        earliest = Signal(TIME)
        m.d.comb += earliest.eq(_max(m, Mux(hit, s, act + r.trcd) + r.cl, group_burst[group]))
        slot = Signal(TIME)
        m.d.comb += slot.eq(_clear(m, earliest, booked, r.burst))

        shared = last_valid & (self.burst == last)
        m.d.comb += self.done.eq(Mux(shared, last_done, slot + r.burst))
        m.d.sync += now.eq(now + 1)
        with m.If(self.go & ~shared):
            column = slot - r.cl
            m.d.sync += [last.eq(self.burst), last_valid.eq(1), last_done.eq(slot + r.burst),
                         booked[0].eq(slot), *(booked[i].eq(booked[i - 1])
                                               for i in range(1, self.bookings)),
                         read[bank].eq(column), group_burst[group].eq(slot + r.tccd_l),
                         opened.bit_select(bank, 1).eq(1), open_row[bank].eq(row)]
            with m.If(hit):
                m.d.sync += precharge[bank].eq(_max(m, precharge[bank], column + r.trtp))
            with m.Else():
                m.d.sync += [epoch[bank].eq(act // r.trefi),
                             precharge[bank].eq(_max(m, act + r.tras, column + r.trtp)),
                             act_s.eq(act + r.trrd_s), group_act[group].eq(act + r.trrd_l),
                             *(faw[i].eq(faw[i + 1]) for i in range(3)),
                             faw[3].eq(act + r.tfaw)]
        return m


def _clear(m, earliest, booked, burst):
    """The first cycle from ``earliest`` starting ``burst`` cycles clear of every burst
    ``booked``: ``earliest`` or one's end."""
    ends = [_held(m, b + burst) for b in booked]
    best, have = earliest, Const(0)
    for c in (earliest, *ends):
        fits = c >= earliest
        for b, end in zip(booked, ends, strict=True):
            fits &= (c >= end) | (c + burst <= b)
        fits = _held(m, fits, 1)
        best, have = _held(m, Mux(fits & (~have | (c < best)), c, best)), _held(m, have | fits, 1)
    return best


class DramMemory(wiring.Component):
    """Serves a memory port from image ``ident`` of a native run with DRAM timing, by
    the rules of :mod:`sparseforge.tb.dram`.

    Parameters
    ----------
    ident : the memory image's id among the run's source images (item ``a``: word ``a``).
    addr_width, data_width : the port's.
    tag_width : the tagged port's tag bits; ``None`` for an in-order port.
    timing : :class:`~sparseforge.sw.dram.Timing`.
    in_flight : reads in flight at most (a power of two).

    Members
    -------
    port : In(MemoryPortSignature or TaggedMemoryPortSignature)
    moved : Out(1)
        A read or an answer transferred on this cycle.
    """

    def __init__(self, ident, addr_width, data_width, tag_width, timing_, in_flight):
        self.ident, self.data_width, self.tag_width = ident, data_width, tag_width
        self.timing, self.in_flight = timing_, in_flight
        self.geometry = Geometry(data_width, timing_.part)
        port = (MemoryPortSignature(addr_width, data_width) if tag_width is None else
                TaggedMemoryPortSignature(addr_width, data_width, tag_width))
        super().__init__({"port": In(port), "moved": Out(1)})

    def elaborate(self, platform):
        m = Module()
        n, bursts, geometry = self.in_flight, self.geometry.bursts, self.geometry
        m.submodules.scheduler = scheduler = DramScheduler(self.timing, (n + 1) * bursts)
        request, response = self.port.request, self.port.response
        tagged = self.tag_width is not None
        addr = request.payload.addr if tagged else request.payload
        busy, issued, answered = Signal(n), Signal(range(n)), Signal(range(n))
        done = Array(Signal(TIME, name=f"done{i}") for i in range(n))
        where = Array(Signal(len(addr), name=f"addr{i}") for i in range(n))
        tags = Array(Signal(max(self.tag_width or 0, 1), name=f"tag{i}") for i in range(n))

        # Reads: a burst a cycle while the slot is free; the read taken with its last.
        part, so_far = Signal(range(bursts)), Signal(TIME)
        free = ~busy.bit_select(issued, 1)
        per = geometry.part.burst_bytes
        first = (addr * (geometry.stride // per) if geometry.stride >= per else
                 addr >> exact_log2(per // geometry.stride))
        finished = _max(m, so_far, scheduler.done)
        m.d.comb += [scheduler.burst.eq(first + part), scheduler.go.eq(request.valid & free),
                     request.ready.eq(free & (part == bursts - 1))]
        with m.If(scheduler.go):
            m.d.sync += [part.eq(Mux(request.ready, 0, part + 1)),
                         so_far.eq(Mux(request.ready, 0, finished))]
        taken = request.valid & request.ready
        with m.If(taken):
            m.d.sync += [issued.eq(issued + 1), done[issued].eq(finished),
                         where[issued].eq(addr)]
            if tagged:
                m.d.sync += tags[issued].eq(request.payload.tag)

        # Answers: a due read into the response register, its data read by address.
        due = Cat(*(busy[i] & (done[i] <= scheduler.now + 1) for i in range(n)))
        if tagged:
            rotated = Cat(due, due).bit_select(issued, n)
            pick, slot = rotated.any(), (issued + _lowest(rotated, n))[:len(issued)]
        else:
            slot, pick = answered, due.bit_select(answered, 1)
        valid, tag = Signal(), Signal(len(tags[0]))
        chosen = pick & (~valid | response.ready)
        item = Signal(32 * -(-self.data_width // 32))
        m.submodules.image = Instance(
            "sf_source_port", p_ID=self.ident, p_WIDTH=len(item), i_clk=ClockSignal(),
            i_rst=ResetSignal(), i_load=chosen, i_index=where[slot], o_item=item)
        m.d.comb += [response.valid.eq(valid), self.moved.eq(taken | (valid & response.ready))]
        if tagged:
            m.d.comb += [response.payload.tag.eq(tag),
                         response.payload.data.eq(item[:self.data_width])]
        else:
            m.d.comb += response.payload.eq(item[:self.data_width])
        with m.If(chosen):
            m.d.sync += [valid.eq(1), tag.eq(tags[slot]), answered.eq(answered + 1)]
        with m.Elif(response.ready):
            m.d.sync += valid.eq(0)
        m.d.sync += busy.eq((busy & ~Mux(chosen, Const(1, n) << slot, 0))
                            | Mux(taken, Const(1, n) << issued, 0))
        return m


class DramPort:
    """Memory port ``name`` of a bench served with DRAM timing: natively by
    :class:`DramMemory`, on Amaranth's simulator by this driver, with the same rules.

    ``words`` is the memory's contents by word address (packed ints: a uint64 array, or
    an object array when wider); ``codecs`` the bench's; ``timing_`` a
    :class:`~sparseforge.sw.dram.Timing` (default: DDR4-2400 at 1 GHz); ``in_flight``
    the reads in flight at most. ``fired`` is set on a cycle where a read or an answer
    transferred.
    """

    def __init__(self, name, words, codecs, timing_=None, in_flight=16):
        if not isinstance(in_flight, int) or not 1 <= in_flight <= 256 or \
                in_flight & (in_flight - 1):
            raise ParameterError(f"in_flight={in_flight!r}: expected a power of two in "
                                 "[1, 256]")
        self.name, self.words, self.in_flight = name, words, in_flight
        self.request, self.response = codecs[f"{name}__request"], codecs[f"{name}__response"]
        fields = dict(self.response.layout) if self.response.layout is not None else {}
        self.tag_width = fields["tag"].width if "tag" in fields else None
        self.data_width = fields["data"].width if fields else self.response.width
        self.addr_width = (dict(self.request.layout)["addr"].width if fields else
                           self.request.width)
        self.timing = timing_ or timing()
        self.dram = Dram(self.timing, Geometry(self.data_width, self.timing.part))
        self.table = [None] * in_flight          # (completion, addr, tag) of each slot
        self.issued = self.answered = self.part = self.so_far = 0
        self.out = None                          # the response offered
        self.free = True
        self.fired = None

    def idle(self, io):
        io.set(f"{self.name}__request__ready", 0)
        io.set(f"{self.name}__response__valid", 0)

    def drive(self, io, cycle):
        self.free = self.table[self.issued % self.in_flight] is None
        last = self.part == self.dram.geometry.bursts - 1
        io.set(f"{self.name}__request__ready", int(self.free and last))
        io.set(f"{self.name}__response__valid", int(self.out is not None))
        if self.out is not None:
            io.set(f"{self.name}__response__payload", self.response.pack(self.out))

    def _due(self, cycle):
        """The slot chosen to answer on this cycle, if any."""
        n = self.in_flight
        order = range(self.issued, self.issued + n) if self.tag_width is not None else \
            [self.answered]
        for slot in (k % n for k in order):
            if self.table[slot] is not None and self.table[slot][0] <= cycle + 1:
                return slot
        return None

    def sample(self, io, cycle):
        ready = io.get(f"{self.name}__response__ready")
        self.fired = self.out if self.out is not None and ready else None
        slot = self._due(cycle) if self.out is None or ready else None
        if slot is not None:
            _, addr, tag = self.table[slot]
            data = int(self.words[addr])
            self.out = data if self.tag_width is None else {"tag": tag, "data": data}
            self.table[slot], self.answered = None, self.answered + 1
        elif ready:
            self.out = None
        if io.get(f"{self.name}__request__valid") and self.free:
            self._read(self.request.unpack(io.get(f"{self.name}__request__payload")), cycle)

    def _read(self, payload, cycle):
        """Book the next burst of the read presented on this cycle; take it with its last."""
        addr, tag = (payload, 0) if self.tag_width is None else (payload["addr"],
                                                                 payload["tag"])
        geometry = self.dram.geometry
        burst = int(geometry.first_burst(addr)) + self.part
        self.so_far = max(self.so_far, self.dram.fetch(burst, cycle))
        if self.part < geometry.bursts - 1:
            self.part += 1
            return
        self.table[self.issued % self.in_flight] = (self.so_far, addr, tag)
        self.issued, self.part, self.so_far, self.fired = self.issued + 1, 0, 0, payload


class Reader(wiring.Component):
    """Reads through memory port ``port``: addresses in (``reads``), answers out
    (``answers``) with the cycle each came on, as fast as both sides go."""

    def __init__(self, port):
        request, response = (port.members[n].signature.members["payload"].shape
                             for n in ("request", "response"))
        super().__init__({"reads": In(stream.Signature(request)), "mem": Out(port),
                          "answers": Out(stream.Signature(data.StructLayout(
                              {"answer": response, "cycle": 32})))})

    def elaborate(self, platform):
        m = Module()
        now = Signal(32)
        m.d.sync += now.eq(now + 1)
        reads, request, response = self.reads, self.mem.request, self.mem.response
        m.d.comb += [request.payload.eq(reads.payload), request.valid.eq(reads.valid),
                     reads.ready.eq(request.ready), self.answers.valid.eq(response.valid),
                     self.answers.payload.answer.eq(response.payload),
                     self.answers.payload.cycle.eq(now), response.ready.eq(self.answers.ready)]
        return m


@dataclass(frozen=True)
class ReaderRun:
    cycles: int
    answers: list       # {answer, cycle} each, in the order taken


class ReaderBench(Bench):
    """Word addresses ``addrs`` read through a :class:`Reader` from a DRAM memory holding
    ``words`` (default: word ``a`` is ``a`` scrambled, 32 bits), tagged (on a tagged
    port) with their index; reads offered at ``rates["reads"]``, answers taken at
    ``rates["answers"]``. The watchdog allows each read, one after another, its worst
    alone (:attr:`~sparseforge.sw.dram.Timing.worst`) at the slower rate."""

    def __init__(self, component, addrs, seed, rates, in_flight, timing_, words=None):
        super().__init__(component, seed)
        addrs = np.asarray(addrs)
        self.words = (np.arange(int(addrs.max()) + 1, dtype=np.uint64)
                      * np.uint64(0x9E3779B1) & np.uint64(0xFFFFFFFF) if words is None
                      else words)
        fields = dict(self.codecs["mem__request"].layout or {})
        reads = (Columns({"addr": addrs, "tag": np.arange(len(addrs)) % (1 << fields[
            "tag"].width)}) if "tag" in fields else addrs)
        self.sources = [self.source_on("reads", reads, rates["reads"])]
        self.memory = DramPort("mem", self.words, self.codecs, timing_, in_flight)
        self.sinks = [self.sink_on("answers", rates["answers"], len(addrs))]
        self.drivers = [*self.sources, self.memory, *self.sinks]
        self.max_cycles = int(len(addrs) * timing_.worst / min(rates.values()))

    def from_outputs(self, cycles, outputs):
        return ReaderRun(cycles, outputs["answers"])
