"""An AXI4 memory for Amaranth's simulator, and the memory ports' drivers that test
the AXI4 master and its bridges against it.

:class:`AxiMemory` is a slave that checks the master as it serves it: every channel's
payload held while ``valid`` waits for ``ready``, INCR bursts that do not cross a 4 KiB
page, WLAST on each burst's final beat and nowhere else, strobes inside the beat's
lanes. It answers reads after a random delay, out of order across IDs and with their
beats interleaved (in order within an ID, as AXI requires), and holds each ready and
valid it drives at random, so every channel sees back-pressure. Reads see every write
answered before them.

It drives either a master's pins (:class:`~sparseforge.hw.axi.PinSignature`: ``araddr``)
or its channels (``ar.payload.addr``), through :class:`Pins` or :class:`Channels`.
"""

import random
from collections import deque
from dataclasses import dataclass, field

from amaranth.back import rtlil
from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..core.export import clean_verilog
from ..hw.axi import BURST_INCR, OKAY, SLVERR
from ..hw.axi_master import AxiMaster
from ..hw.regfile import RegisterFile
from ..hw.stream_units import lowest
from ..sw import wire

PAGE = 4096


class Pins:
    """A master's pins, by channel and field (``araddr``, ``arvalid``)."""

    def __init__(self, pins):
        self.pins = pins

    def has(self, channel):
        return True

    def signal(self, channel, name):
        return getattr(self.pins, channel + name)


class Channels:
    """A master's channels, by channel and field (``ar.payload.addr``, ``ar.valid``), the
    read and write sides given apart (either may be ``None``)."""

    def __init__(self, read=None, write=None):
        self.sides = {c: read for c in ("ar", "r")} | {c: write for c in ("aw", "w", "b")}

    def has(self, channel):
        return self.sides[channel] is not None

    def signal(self, channel, name):
        stream = getattr(self.sides[channel], channel)
        return getattr(stream, name) if name in ("valid", "ready") else stream.payload[name]


FIELDS = {"ar": ("id", "addr", "len", "size", "burst"),
          "aw": ("id", "addr", "len", "size", "burst"),
          "w": ("data", "strb", "last")}


@dataclass
class _Burst:
    id: int
    addr: int
    beats: int
    size: int
    due: int
    beat: int = 0
    resp: int = OKAY


@dataclass
class AxiMemory:
    """An AXI4 slave over ``size`` bytes, stepped once a cycle by :meth:`cycle`.

    ``rates`` (``{channel: probability}``, 1 by default) is how often the memory is ready
    on AR, AW, W and offers a beat on R and B when it has one; answers come ``delay``
    (a ``(least, most)`` range) cycles after a burst is complete. ``bad`` byte addresses
    answer SLVERR. ``interleave`` lets R switch IDs between beats of a burst.
    """

    access: object
    data_width: int
    size: int
    rng: random.Random
    rates: dict = field(default_factory=dict)
    delay: tuple = (0, 6)
    interleave: bool = True
    bad: frozenset = frozenset()

    def __post_init__(self):
        self.memory = bytearray(self.size)
        self.reads, self.writes = [], deque()           # read bursts; write bursts in order
        self.beats = deque()                            # W beats before their AW
        self.answers = []                               # B answers, in order per ID
        self.now, self.r, self.b = 0, None, None        # R beat, B answer offered
        self.held = {}                                  # channel -> payload left waiting
        self.r_beats = self.w_beats = self.interleaved = self.r_stalls = 0

    # -- the host's view ---------------------------------------------------------------

    def store(self, addr, width, value):
        """Put a word of ``width`` bits at word address ``addr``."""
        n = wire.word_bytes(width)
        self.memory[addr * n:(addr + 1) * n] = value.to_bytes(n, "little")

    def load(self, addr, width):
        n = wire.word_bytes(width)
        return int.from_bytes(self.memory[addr * n:(addr + 1) * n], "little")

    # -- one cycle ---------------------------------------------------------------------

    def _get(self, ctx, channel, name):
        return ctx.get(self.access.signal(channel, name))

    def _set(self, ctx, channel, name, value):
        ctx.set(self.access.signal(channel, name), value)

    def _coin(self, channel):
        return self.rng.random() < self.rates.get(channel, 1.0)

    def drive(self, ctx):
        """Set this cycle's readies and answers."""
        self.readies = {c: self._coin(c) for c in ("ar", "aw", "w") if self.access.has(c)}
        for c, ready in self.readies.items():
            self._set(ctx, c, "ready", ready)
        if self.r is None and self._coin("r"):
            self.r = self._next_read()
        if self.b is None and self._coin("b"):
            self.b = self._next_answer()
        for channel, item in (("r", self.r), ("b", self.b)):
            if self.access.has(channel):
                self._offer(ctx, channel, item)

    def sample(self, ctx):
        """Take what transfers this cycle and check the rules (after every driver has
        set its inputs, before the clock edge)."""
        got = dict.fromkeys(("ar", "aw", "w"))
        got |= {c: self._take(ctx, c, ready) for c, ready in self.readies.items()}
        if got["ar"]:
            self._address(got["ar"], "AR")
            self.reads.append(_Burst(got["ar"]["id"], got["ar"]["addr"], got["ar"]["len"] + 1,
                                     got["ar"]["size"], self.now + self.rng.randint(*self.delay)))
        if got["aw"]:
            self._address(got["aw"], "AW")
            self.writes.append(_Burst(got["aw"]["id"], got["aw"]["addr"],
                                      got["aw"]["len"] + 1, got["aw"]["size"], 0))
        if got["w"]:
            self.beats.append(got["w"])
            self.w_beats += 1
        self._write()
        if self.r is not None and self._get(ctx, "r", "ready"):
            self.r_beats += 1
            self.r = None
        elif self.r is not None:
            self.r_stalls += 1
        if self.b is not None and self._get(ctx, "b", "ready"):
            self.b = None
        self.now += 1

    def _offer(self, ctx, channel, item):
        self._set(ctx, channel, "valid", item is not None)
        for name, value in (item or {}).items():
            self._set(ctx, channel, name, value)

    def _take(self, ctx, channel, ready):
        """The payload that transfers on ``channel`` this cycle (or None), and the check
        that a waiting payload did not change."""
        valid = self._get(ctx, channel, "valid")
        payload = {n: self._get(ctx, channel, n) for n in FIELDS[channel]} if valid else None
        waiting = self.held.pop(channel, None)
        if waiting is not None and payload != waiting:
            raise AssertionError(f"cycle {self.now}: {channel} changed from {waiting} to "
                                 f"{payload} before it was taken")
        if valid and not ready:
            self.held[channel] = payload
        return payload if valid and ready else None

    def _address(self, a, name):
        beat = 1 << a["size"]
        if a["burst"] != BURST_INCR or beat * 8 > self.data_width or a["addr"] % beat:
            raise AssertionError(f"{name} {a}: not an aligned INCR burst of beats the bus "
                                 "carries")
        if a["addr"] % PAGE + (a["len"] + 1) * beat > PAGE:
            raise AssertionError(f"{name} {a}: the burst crosses a 4 KiB page")
        if a["addr"] + (a["len"] + 1) * beat > self.size:
            raise AssertionError(f"{name} {a}: past the memory's {self.size} bytes")

    def _lanes(self, burst):
        """The byte lanes of ``burst``'s current beat: ``(first byte address, lane)``."""
        addr = burst.addr + (burst.beat << burst.size)
        return addr, addr % (self.data_width // 8)

    def _next_read(self):
        due = [b for b in self.reads if b.due <= self.now]
        if not due:
            return None
        heads = {}
        for b in self.reads:                    # each ID's oldest burst, in order
            heads.setdefault(b.id, b)
        ready = [b for b in heads.values() if b in due]
        if not ready:
            return None
        current = [b for b in ready if b.beat]
        if current and not self.interleave:
            burst = current[0]
        else:
            burst = self.rng.choice(ready)
            self.interleaved += bool(current) and burst not in current
        addr, lane = self._lanes(burst)
        n = 1 << burst.size
        value = int.from_bytes(self.memory[addr:addr + n], "little") << (8 * lane)
        bad = any(a in self.bad for a in range(addr, addr + n))
        burst.beat += 1
        last = burst.beat == burst.beats
        if last:
            self.reads.remove(burst)
        return {"id": burst.id, "data": value, "resp": SLVERR if bad else OKAY, "last": last}

    def _write(self):
        """Apply W beats to the oldest AW still taking beats; schedule its answer."""
        while self.beats and self.writes:
            burst, beat = self.writes[0], self.beats.popleft()
            addr, lane = self._lanes(burst)
            n, strobes = 1 << burst.size, beat["strb"]
            for k in range(self.data_width // 8):
                if strobes >> k & 1:
                    if not lane <= k < lane + n:
                        raise AssertionError(f"W {beat}: strobe {k} outside the beat's "
                                             f"lanes {lane}..{lane + n - 1}")
                    byte = addr - lane + k
                    self.memory[byte] = beat["data"] >> (8 * k) & 0xFF
                    if byte in self.bad:
                        burst.resp = SLVERR
            burst.beat += 1
            if beat["last"] != (burst.beat == burst.beats):
                raise AssertionError(f"W {beat}: WLAST on beat {burst.beat} of {burst.beats}")
            if burst.beat == burst.beats:
                self.writes.popleft()
                burst.due = self.now + self.rng.randint(*self.delay)
                self.answers.append(burst)

    def _next_answer(self):
        heads = {}
        for b in self.answers:
            heads.setdefault(b.id, b)
        ready = [b for b in heads.values() if b.due <= self.now]
        if not ready:
            return None
        burst = self.rng.choice(ready)
        self.answers.remove(burst)
        return {"id": burst.id, "resp": burst.resp}

    def quiet(self):
        """Nothing in flight: no read, write, beat or answer pending or offered."""
        return not (self.reads or self.writes or self.beats or self.answers or self.r
                    or self.b)


# -- the memory ports' drivers -------------------------------------------------------------

class _Driver:
    def __init__(self, port, rng, rate=1.0, ready_rate=1.0):
        self.port, self.rng, self.rate, self.ready_rate = port, rng, rate, ready_rate
        self.offered = None

    def _offer(self, ctx, request, make):
        """Offer the next request (kept until taken) when the coin allows."""
        if self.offered is None and self.rng.random() < self.rate:
            self.offered = make()
        ctx.set(request.valid, self.offered is not None)
        if self.offered is not None:
            ctx.set(request.payload, self.offered[0])

    def _sent(self, ctx, request):
        sent = self.offered is not None and ctx.get(request.ready)
        offered, self.offered = self.offered, None if sent else self.offered
        return offered if sent else None


class TaggedReads(_Driver):
    """Reads ``addrs`` through a tagged port, each on a free tag chosen at random, and
    keeps ``(addr, data)`` of each response in ``got``."""

    def __init__(self, port, addrs, rng, rate=1.0, ready_rate=1.0):
        super().__init__(port, rng, rate, ready_rate)
        self.addrs = deque(addrs)
        self.free = list(range(1 << len(port.request.payload.tag)))
        self.flight, self.got = {}, []

    def _make(self):
        if not self.addrs:
            return None
        tag = self.free.pop(self.rng.randrange(len(self.free)))
        return {"addr": self.addrs[0], "tag": tag}, self.addrs.popleft()

    def drive(self, ctx):
        if self.offered is None and self.free and self.addrs and self.rng.random() < self.rate:
            self.offered = self._make()
        ctx.set(self.port.request.valid, self.offered is not None)
        if self.offered is not None:
            ctx.set(self.port.request.payload, self.offered[0])
        ctx.set(self.port.response.ready, self.rng.random() < self.ready_rate)

    def sample(self, ctx):
        sent = self._sent(ctx, self.port.request)
        if sent:
            self.flight[sent[0]["tag"]] = sent[1]
        response = self.port.response
        if ctx.get(response.valid) and ctx.get(response.ready):
            tag = ctx.get(response.payload.tag)
            if tag not in self.flight:
                raise AssertionError(f"a response of tag {tag}, which is not in flight")
            self.got.append((self.flight.pop(tag), ctx.get(response.payload.data)))
            self.free.append(tag)

    def done(self):
        return not (self.addrs or self.flight or self.offered)


class OrderedReads(_Driver):
    """Reads ``addrs`` through an in-order port; ``got`` the words, in order."""

    def __init__(self, port, addrs, rng, rate=1.0, ready_rate=1.0):
        super().__init__(port, rng, rate, ready_rate)
        self.addrs, self.sent, self.got = deque(addrs), 0, []

    def drive(self, ctx):
        if self.addrs:
            self._offer(ctx, self.port.request, lambda: (self.addrs[0],))
        else:
            ctx.set(self.port.request.valid, 0)
        ctx.set(self.port.response.ready, self.rng.random() < self.ready_rate)

    def sample(self, ctx):
        if self._sent(ctx, self.port.request):
            self.addrs.popleft()
            self.sent += 1
        response = self.port.response
        if ctx.get(response.valid) and ctx.get(response.ready):
            self.got.append(ctx.get(response.payload))

    def done(self):
        return not self.addrs and self.offered is None and len(self.got) == self.sent


class Writes(_Driver):
    """Posts ``writes`` (``(addr, data)`` pairs) through a write port, in order."""

    def __init__(self, port, writes, rng, rate=1.0):
        super().__init__(port, rng, rate)
        self.writes = deque(writes)

    def drive(self, ctx):
        if self.writes:
            self._offer(ctx, self.port.request,
                        lambda: ({"addr": self.writes[0][0], "data": self.writes[0][1]},))
        else:
            ctx.set(self.port.request.valid, 0)

    def sample(self, ctx):
        if self._sent(ctx, self.port.request):
            self.writes.popleft()

    def done(self):
        return not self.writes and self.offered is None


def simulate(dut, memory, drivers, settled, limit=100_000, check=None):
    """Run ``dut`` on Amaranth's simulator with ``memory`` and the port ``drivers`` until
    every driver is done, the memory is quiet and ``settled(ctx)`` holds; return the
    cycles. ``check(ctx)``, if given, runs every cycle after the transfers are taken. A
    run past ``limit`` cycles raises ``AssertionError`` (a hang)."""
    from amaranth.sim import Simulator

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    cycles = []

    async def bench(ctx):
        for cycle in range(limit):
            parts = [*drivers, memory]
            for part in parts:
                part.drive(ctx)
            for part in parts:
                part.sample(ctx)
            if check:
                check(ctx)
            if all(d.done() for d in drivers) and memory.quiet() and settled(ctx):
                cycles.append(cycle)
                return
            await ctx.tick()
        raise AssertionError(f"no end after {limit} cycles: a hang")

    sim.add_testbench(bench)
    sim.run()
    return cycles[0]


class LiteHost:
    """A host's AXI4-Lite transactions on a register file's pins (``awaddr``, ...), one at a
    time: W a cycle after AW, each answered within 8 cycles."""

    def __init__(self, ctx, bus):
        self.ctx, self.bus = ctx, bus

    async def write(self, addr, value, strobes=0xF):
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.awaddr, addr)
        ctx.set(bus.wdata, value)
        ctx.set(bus.wstrb, strobes)
        ctx.set(bus.awvalid, 1)
        await ctx.tick()
        ctx.set(bus.awvalid, 0)
        ctx.set(bus.wvalid, 1)                  # W after AW, a cycle apart
        await ctx.tick()
        ctx.set(bus.wvalid, 0)
        ctx.set(bus.bready, 1)
        for _ in range(8):
            if ctx.get(bus.bvalid):
                resp = ctx.get(bus.bresp)
                await ctx.tick()
                ctx.set(bus.bready, 0)
                return resp
            await ctx.tick()
        raise AssertionError("no B")

    async def read(self, addr):
        ctx, bus = self.ctx, self.bus
        ctx.set(bus.araddr, addr)
        ctx.set(bus.arvalid, 1)
        ctx.set(bus.rready, 1)
        await ctx.tick()
        ctx.set(bus.arvalid, 0)
        for _ in range(8):
            if ctx.get(bus.rvalid):
                got = ctx.get(bus.rdata), ctx.get(bus.rresp)
                await ctx.tick()
                return got
            await ctx.tick()
        raise AssertionError("no R")


# -- a harness for cocotbext-axi ----------------------------------------------------------

class AxiCopy(wiring.Component):
    """Copies ``count`` words from word address ``src`` to ``dst`` through an
    :class:`~sparseforge.hw.axi_master.AxiMaster` (one tagged read port, one write port),
    the harness that puts the master's bus in front of cocotbext-axi's ``AxiRam``.

    A pulse on ``start`` begins a copy: word ``i`` is read on the lowest free of the
    ``2**tag`` tags, so reads overlap and come back in any order, and each answer is
    written to ``dst`` plus its index at once. ``done`` rises once every read is answered
    and every write has landed (the master ``idle``), and stays high until the next
    ``start``. ``error`` is the master's. ``params`` are the master's: ``widths`` may give
    the two ports words of different widths, each word cut or zero-extended on its way.
    """

    def __init__(self, **params):
        self.master = AxiMaster(reads=1, ordered=0, writes=1, **params)
        v = self.master.params
        self.tags = 1 << v["tag"]
        super().__init__({
            "src": In(v["addr_width"]), "dst": In(v["addr_width"]),
            "count": In(v["addr_width"] + 1), "start": In(1),
            "done": Out(1), "error": Out(1),
            "m_axi": Out(self.master.m_axi.signature),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.master = master = self.master
        wiring.connect(m, master.m_axi, wiring.flipped(self.m_axi))
        read, write = master.tagged[0], master.write[0]
        issued, running = Signal.like(self.count), Signal()
        free = Signal(self.tags, init=(1 << self.tags) - 1)
        index = Array(Signal.like(self.count, name=f"index{t}") for t in range(self.tags))
        first, _ = lowest(m, free)
        tag = Signal(range(self.tags))
        for t in reversed(range(self.tags)):
            with m.If(first[t]):
                m.d.comb += tag.eq(t)
        m.d.comb += [read.request.valid.eq(running & (issued != self.count) & free.any()),
                     read.request.payload.addr.eq(self.src + issued),
                     read.request.payload.tag.eq(tag)]
        taken = read.response.payload.tag
        m.d.comb += [write.request.valid.eq(read.response.valid),
                     write.request.payload.addr.eq(self.dst + index[taken]),
                     write.request.payload.data.eq(read.response.payload.data),
                     read.response.ready.eq(write.request.ready)]
        sent = read.request.valid & read.request.ready
        back = read.response.valid & read.response.ready
        with m.If(sent):
            m.d.sync += [issued.eq(issued + 1), index[tag].eq(issued)]
        freed = Cat(back & (taken == t) for t in range(self.tags))
        m.d.sync += free.eq(free & ~(first & sent.replicate(self.tags)) | freed)
        with m.If(running & (issued == self.count) & free.all() & master.idle):
            m.d.sync += [running.eq(0), self.done.eq(1)]
        with m.If(self.start):
            m.d.sync += [running.eq(1), issued.eq(0), self.done.eq(0)]
        m.d.comb += self.error.eq(master.error)
        return m


class AxiPorts(wiring.Component):
    """Both AXI attachments side by side in one top for cocotbext-axi, so one Verilator
    build serves both tests: an :class:`AxiCopy` (its members as they are) and a
    :class:`~sparseforge.hw.regfile.RegisterFile` (``s_axil``, ``regs``)."""

    def __init__(self, **params):
        self.copy, self.regfile = AxiCopy(**params), RegisterFile()
        super().__init__({**self.copy.signature.members, **self.regfile.signature.members})

    def elaborate(self, platform):
        m = Module()
        m.submodules.copy, m.submodules.regfile = self.copy, self.regfile
        for part in (self.copy, self.regfile):
            for name, member in part.signature.members.items():
                outer, inner = getattr(self, name), getattr(part, name)
                if member.is_signature:
                    wiring.connect(m, wiring.flipped(outer), inner)
                else:
                    m.d.comb += inner.eq(outer) if member.flow == In else outer.eq(inner)
        return m


def ports_verilog():
    """The Verilog (top module ``axi_ports``) of the :class:`AxiPorts` both cocotbext-axi
    tests run on: 48-bit words over a 32-bit bus (two beats), 8 tags, 16-bit addresses."""
    harness = AxiPorts(addr_width=12, word=48, tag=3, data=32, axi_addr=16)
    return clean_verilog(rtlil.convert(harness, name="axi_ports", emit_src=False))
