"""Native runs of a bench: its stream sources and sinks built into the simulated design.

A :class:`~sparseforge.tb.streams.Bench` whose sources are gated only by
``after`` and ``credits`` and whose sinks declare how many items they take
runs here at Verilator's speed (:func:`run`). Each Python driver becomes a
component beside the block, with the same rules cycle for cycle:

- :class:`ImageSource` presents its items in order from a memory image,
  holds ``valid`` until the transfer, presents the next one on a cycle where
  its coin allows and its gates are open (the counts of the streams it waits
  for, the credits it needs);
- :class:`ImageSink` takes a stream with ``ready`` from its coin, into a
  memory image;
- the coins are the per-stream LFSRs of :class:`~sparseforge.tb.streams.Backpressure`,
  with the same seeds, and pulse counters and mode pins as in Python (a pin's value an
  image read at run time, so a new value needs no new build);
- a memory port given a :class:`~sparseforge.tb.dram.DramPort` is served by
  :class:`~sparseforge.tb.dram.DramMemory`, its contents an image read by address;
- one given a :class:`~sparseforge.tb.streams.RamPort` by :class:`RamMemory`, a memory
  that holds what the design writes;
- a driver with a ``native`` method (AXI4 pins given a
  :class:`~sparseforge.tb.axi_native.AxiDram`) builds its own unit:
  ``native(m, ports, source, sink)`` puts it beside the design on its ``ports``, its
  images numbered from ids ``source`` and ``sink``, and returns its ``(moved, done)``;
  ``images()`` are its ``(sources, sinks)``, ``verilog`` the modules it instantiates,
  ``cpp`` (if it has one) the C++ they call through DPI, built with the model, and
  ``collect(taken)`` takes its sinks' words after the run.

So a native run and the Python-driven one of the same bench take the same
cycles; the native one checks its sinks against the bench's ``outputs``
(what each sink must take, known up front) after the run.
"""

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from amaranth.back import rtlil
from amaranth.hdl import (
    ClockSignal,
    Const,
    Elaboratable,
    Instance,
    Module,
    Mux,
    ResetSignal,
    Signal,
    signed,
)
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..core.export import cached_verilog, clean_verilog
from ..hw.stream_units import MemoryPortSignature, any_of
from ..sim import native
from ..sim.runners import flat_ports, pysim, waves_file
from .dram import DramMemory, DramPort
from .streams import LFSR_TAPS, PulseCounter, RamPort, Static, StreamSink, StreamSource


def lfsr(m, seed):
    """The state on this cycle of a :data:`~.streams.LFSR_TAPS` LFSR started at ``seed``
    after reset and stepped every cycle, as :class:`~.streams.Backpressure`'s."""
    started, state, now = Signal(), Signal(32), Signal(32)
    m.d.comb += now.eq(Mux(started, state, seed | 1))
    m.d.sync += [started.eq(1), state.eq(Mux(now[0], (now >> 1) ^ LFSR_TAPS, now >> 1))]
    return now


def coin(m, rate, seed):
    """A stream's coin on this cycle: its LFSR (:func:`lfsr`) below ``rate`` (of 65536)."""
    return lfsr(m, seed)[:16] < rate


class ImageSource(wiring.Component):
    """Drives a stream from image ``ident`` of a native run, as a :class:`StreamSource` does.

    An item is 32-bit words: the payload's, then one per gate (the count of
    ``after[k]`` the item waits for), then with ``credit_width`` one for the
    credits it needs (against ``credits`` on the cycle before, less its own
    transfer then).

    Members
    -------
    stream : Out(stream(width))
    count : Out(32)
        Transfers before this cycle.
    after : In([gates] x 32)
        The counts of the streams it waits for.
    credits : In(credit_width)
    done, fired : Out(1)
        Every item sent; a transfer on this cycle.
    """

    def __init__(self, ident, width, gates, credit_width):
        self.ident, self.width = ident, width
        self.gates, self.credit_width = gates, credit_width
        self.words = -(-width // 32) + gates + bool(credit_width)
        members = {"stream": Out(stream.Signature(width)), "count": Out(32), "done": Out(1),
                   "fired": Out(1)}
        if gates:
            members["after"] = In(data.ArrayLayout(32, gates))
        if credit_width:
            members["credits"] = In(credit_width)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        item, items = Signal(32 * self.words), Signal(64)
        rate, seed = Signal(32), Signal(32)
        m.submodules.port = Instance(
            "sf_source_port", p_ID=self.ident, p_WIDTH=32 * self.words, i_clk=ClockSignal(),
            i_rst=ResetSignal(),
            i_load=self.fired, i_index=self.count + 1, o_item=item, o_items=items,
            o_rate=rate, o_seed=seed)
        field = (-(-self.width // 32)) * 32
        open_ = Const(1)
        for k in range(self.gates):
            open_ &= self.after[k] >= item[field + 32 * k:field + 32 * (k + 1)]
        if self.credit_width:
            seen = Signal(signed(self.credit_width + 1))   # credits available on this cycle
            need = item[field + 32 * self.gates:field + 32 * (self.gates + 1)]
            m.d.sync += seen.eq(self.credits - self.fired)
            open_ &= seen >= need
        held = Signal()
        more = self.count < items
        s = self.stream
        m.d.comb += [
            s.valid.eq(held | (more & coin(m, rate, seed) & open_)),
            s.payload.eq(item[:self.width]),
            self.fired.eq(s.valid & s.ready),
            self.done.eq(~more),
        ]
        m.d.sync += [held.eq(s.valid & ~s.ready), self.count.eq(self.count + self.fired)]
        return m


class ImageSink(wiring.Component):
    """Takes a stream into image ``ident`` of a native run, as a :class:`StreamSink` does.

    Members
    -------
    stream : In(stream(width))
    count : Out(32)
        Transfers before this cycle.
    done, fired : Out(1)
        The items expected are taken; a transfer on this cycle.
    """

    def __init__(self, ident, width):
        self.ident, self.width = ident, width
        self.words = -(-width // 32)
        super().__init__({"stream": In(stream.Signature(width)), "count": Out(32),
                          "done": Out(1), "fired": Out(1)})

    def elaborate(self, platform):
        m = Module()
        items, rate, seed = Signal(64), Signal(32), Signal(32)
        m.submodules.port = Instance(
            "sf_sink_port", p_ID=self.ident, p_WIDTH=self.width, i_clk=ClockSignal(),
            i_rst=ResetSignal(),
            i_take=self.fired, i_item=self.stream.payload, o_items=items, o_rate=rate,
            o_seed=seed)
        m.d.comb += [self.stream.ready.eq(coin(m, rate, seed)),
                     self.fired.eq(self.stream.valid & self.stream.ready),
                     self.done.eq(self.count >= items)]
        m.d.sync += self.count.eq(self.count + self.fired)
        return m


class RamMemory(wiring.Component):
    """Serves an in-order read port from a memory of ``depth`` words that also takes the
    writes observed on ``write_*``, as a :class:`~.streams.RamPort` does.

    Members
    -------
    port : In(MemoryPortSignature)
    written : In(1)
        A write is taken on this cycle, of ``write_data`` at ``write_addr``.
    write_addr : In(addr_width)
    write_data : In(data_width)
    moved : Out(1)
        A read or an answer transferred on this cycle.
    """

    def __init__(self, depth, addr_width, data_width, rate, seed):
        self.depth, self.rate, self.seed = depth, rate, seed
        super().__init__({"port": In(MemoryPortSignature(addr_width, data_width)),
                          "written": In(1), "write_addr": In(addr_width),
                          "write_data": In(data_width), "moved": Out(1)})

    def elaborate(self, platform):
        m = Module()
        request, response = self.port.request, self.port.response
        m.submodules.words = words = Memory(shape=len(self.write_data), depth=self.depth,
                                            init=[])
        write, read = words.write_port(), words.read_port(domain="comb")
        m.d.comb += [write.en.eq(self.written), write.addr.eq(self.write_addr),
                     write.data.eq(self.write_data), read.addr.eq(request.payload)]
        # The answer sees this cycle's write, as a read taken after it.
        value = Mux(self.written & (self.write_addr == request.payload), self.write_data,
                    read.data)
        count = Signal(range(3))
        head, tail = Signal.like(self.write_data), Signal.like(self.write_data)
        free = (count < 2) & coin(m, Const(self.rate, 32), Const(self.seed, 32))
        taken = request.valid & free
        popped = response.valid & response.ready
        m.d.comb += [request.ready.eq(free), response.valid.eq(count != 0),
                     response.payload.eq(head), self.moved.eq(taken | popped)]
        with m.If(popped):
            m.d.sync += head.eq(tail)
        with m.If(taken & (count - popped == 0)):
            m.d.sync += head.eq(value)
        with m.Elif(taken):
            m.d.sync += tail.eq(value)
        m.d.sync += count.eq(count + taken - popped)
        return m


class NativeTop(wiring.Component):
    """A bench's component with its drivers built in: the top module of a native run.

    ``done`` once every source has sent its items and every sink has taken
    its expected count; ``moved`` on a cycle where any stream transferred.
    """

    done: Out(1)
    moved: Out(1)

    def __init__(self, bench):
        self.bench = bench
        self.sources = [d for d in bench.drivers if isinstance(d, StreamSource)]
        self.sinks = [d for d in bench.drivers if isinstance(d, StreamSink)]
        self.memories = [d for d in bench.drivers if isinstance(d, DramPort)]
        self.rams = [d for d in bench.drivers if isinstance(d, RamPort)]
        ports = flat_ports(bench.component)
        self.statics = [(d, len(ports[d.name])) for d in bench.drivers if isinstance(d, Static)]
        self.attached = [(d, d.images()) for d in bench.drivers if hasattr(d, "native")]
        for d in self.sources:
            if d.gate is not None:
                raise ValueError(f"source {d.name} has a Python gate: it cannot run natively")
        for d in self.sinks:
            if d.expected is None:
                raise ValueError(f"sink {d.name} does not say how many items it takes")
        super().__init__()

    def units(self):
        """What :meth:`elaborate` builds beside the component, by id order: each
        driver's unit as its Verilog holds it (a stream's name and width, the counts it
        waits for, its credits; a memory's widths, timing and reads in flight; a RAM's
        coin; an attached driver's ``design``). Coins, images and a pin's value are read
        at run time and are not here. None when an attached driver has no ``design``."""
        ports = flat_ports(self.bench.component)
        units = [("source", d.name, d.codec.width, list(d.after),
                  *((d.credits[0], len(ports[d.credits[0]])) if d.credits else ()))
                 for d in self.sources]
        units += [("sink", d.name, d.codec.width) for d in self.sinks]
        units += [("pulses", d.port) for d in self.bench.drivers if isinstance(d, PulseCounter)]
        units += [("memory", d.name, d.addr_width, d.data_width, d.tag_width, d.timing,
                   d.in_flight) for d in self.memories]
        units += [("static", d.name, width) for d, width in self.statics]
        units += [("ram", d.name, d.writes, d.depth, d.codec.width, d.stall.threshold,
                   d.stall.seed) for d in self.rams]
        for d, _ in self.attached:
            if getattr(d, "design", None) is None:
                return None
            units.append((type(d).__qualname__, d.name, d.design))
        return units

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.bench.component
        ports = flat_ports(dut)
        counts, units, fired = {}, [], []
        for i, d in enumerate(self.sources):
            credit = len(ports[d.credits[0]]) if d.credits else 0
            unit = ImageSource(i, d.codec.width, len(d.after), credit)
            m.d.comb += [ports[f"{d.name}__valid"].eq(unit.stream.valid),
                         ports[f"{d.name}__payload"].eq(unit.stream.payload),
                         unit.stream.ready.eq(ports[f"{d.name}__ready"])]
            if credit:
                m.d.comb += unit.credits.eq(ports[d.credits[0]])
            units.append((f"source_{d.name}", unit))
        for i, d in enumerate(self.sinks):
            unit = ImageSink(i, d.codec.width)
            m.d.comb += [unit.stream.valid.eq(ports[f"{d.name}__valid"]),
                         unit.stream.payload.eq(ports[f"{d.name}__payload"]),
                         ports[f"{d.name}__ready"].eq(unit.stream.ready)]
            units.append((f"sink_{d.name}", unit))
        for (name, unit), d in zip(units, self.sources + self.sinks, strict=True):
            m.submodules[name] = unit
            counts[d.name] = unit.count
            fired.append(unit.fired)
        for d in self.bench.drivers:
            if isinstance(d, PulseCounter):
                counts[d.port] = count = Signal(32, name=f"pulses_{d.port}")
                m.d.sync += count.eq(count + ports[d.port].any())
        for (_, unit), d in zip(units, self.sources, strict=False):
            for k, name in enumerate(d.after):
                m.d.comb += unit.after[k].eq(counts[name])
        for i, d in enumerate(self.memories):
            m.submodules[f"memory_{d.name}"] = unit = DramMemory(
                len(self.sources) + i, d.addr_width, d.data_width, d.tag_width, d.timing,
                d.in_flight)
            _serve(m, ports, d.name, unit.port)
            fired.append(unit.moved)
        for i, (d, width) in enumerate(self.statics):
            value = Signal(32 * -(-width // 32), name=f"static_{d.name}")
            m.submodules[f"static_{d.name}"] = Instance(
                "sf_source_port", p_ID=len(self.sources) + len(self.memories) + i,
                p_WIDTH=len(value), i_clk=ClockSignal(), i_rst=ResetSignal(), i_load=0,
                i_index=0, o_item=value, o_items=Signal(64), o_rate=Signal(32),
                o_seed=Signal(32))
            m.d.comb += ports[d.name].eq(value[:width])
        for d in self.rams:
            write = data.View(d.codec.layout, ports[f"{d.writes}__payload"])
            m.submodules[f"ram_{d.name}"] = unit = RamMemory(
                d.depth, len(write.addr), len(write.data), d.stall.threshold, d.stall.seed | 1)
            _serve(m, ports, d.name, unit.port)
            m.d.comb += [unit.written.eq(ports[f"{d.writes}__valid"]
                                         & ports[f"{d.writes}__ready"]),
                         unit.write_addr.eq(write.addr), unit.write_data.eq(write.data)]
            fired.append(unit.moved)
        source, sink = len(self.sources) + len(self.memories) + len(self.statics), len(self.sinks)
        finished = [u.done for _, u in units]
        for d, (sources, sinks) in self.attached:
            moved, done = d.native(m, ports, source, sink)
            source, sink = source + len(sources), sink + len(sinks)
            fired.append(moved)
            finished.append(done)
        m.d.comb += [self.done.eq(_all(finished)),
                     self.moved.eq(any_of(fired))]
        return m


def _serve(m, ports, name, port):
    """Memory port ``name`` of the design served by ``port`` (its memory's side)."""
    request, response = port.request, port.response
    m.d.comb += [request.valid.eq(ports[f"{name}__request__valid"]),
                 request.payload.eq(ports[f"{name}__request__payload"]),
                 ports[f"{name}__request__ready"].eq(request.ready),
                 ports[f"{name}__response__valid"].eq(response.valid),
                 ports[f"{name}__response__payload"].eq(response.payload),
                 response.ready.eq(ports[f"{name}__response__ready"])]


def _all(values):
    out = Const(1)
    for v in values:
        out &= v
    return out


@dataclass(frozen=True)
class NativeResult:
    """A native run of a bench: its cycles, every sink's items, and the run's measures."""

    cycles: int
    outputs: dict           # sink name -> the items it took (ints, or plain Python)
    run: native.NativeRun


def _words(values, words):
    """Packed payloads (uint64, or an object array of ints) as ``words`` uint32 columns."""
    out = np.zeros((len(values), words), dtype=np.uint32)
    wide = values.dtype == object
    for w in range(words):
        if wide:
            out[:, w] = np.array([(int(v) >> (32 * w)) & 0xFFFFFFFF for v in values],
                                 dtype=np.uint32)
        elif w < 2:
            out[:, w] = (values >> np.uint64(32 * w)) & np.uint64(0xFFFFFFFF)
    return out


def _values(words):
    """Captured uint32 columns back into packed payloads (uint64, or ints when wider)."""
    if words.shape[1] <= 2:
        out = words[:, 0].astype(np.uint64)
        if words.shape[1] == 2:
            out |= words[:, 1].astype(np.uint64) << np.uint64(32)
        return out
    return np.array([sum(int(w) << (32 * i) for i, w in enumerate(row)) for row in words],
                    dtype=object)


def source_image(driver):
    """The :class:`~sparseforge.sim.native.Image` of a Python source."""
    width = driver.codec.width
    columns = [_words(driver.codec.pack_all(driver.items), -(-width // 32))]
    columns += [np.asarray(v, dtype=np.uint32).reshape(-1, 1) for v in driver.after.values()]
    if driver.credits:
        columns.append(np.asarray(driver.credit_needs, dtype=np.uint32).reshape(-1, 1))
    stall = driver.stall
    return native.Image(np.hstack(columns) if len(driver.items) else
                        np.zeros((0, sum(c.shape[1] for c in columns)), dtype=np.uint32),
                        stall.threshold, stall.seed | 1)


def memory_image(port):
    """The :class:`~sparseforge.sim.native.Image` of a :class:`~.dram.DramPort`'s contents."""
    words = np.asarray(port.words)
    return native.Image(_words(words if words.dtype == object else words.astype(np.uint64),
                               -(-port.data_width // 32)), 1 << 16, 1)


def static_image(driver, width):
    """The one-item :class:`~sparseforge.sim.native.Image` of a mode pin's value: read at
    run time, so a pin's new value needs no new build."""
    value = Const.cast(driver.value).value & ((1 << width) - 1)
    return native.Image(_words(np.array([value], dtype=object), -(-width // 32)), 0, 1)


def run(bench, limit=10**10, waves=None, work_dir=None, progress=None):
    """Run ``bench`` natively on Verilator; check every sink against ``bench.outputs``.

    Returns a :class:`NativeResult`. A run that deadlocks (no transfer for
    ``bench.patience`` cycles), hits ``limit`` (the bench's ``max_cycles`` when set) or
    takes an item other than the one expected raises ``AssertionError`` naming the seed. ``waves``
    names an FST file to write (by default :func:`~sparseforge.sim.runners.waves_file`'s,
    when ``SPARSEFORGE_WAVES`` is set); the model is then built with tracing.
    ``progress`` labels a progress bar on stderr for a long run. The images go to
    ``work_dir``, else to a folder of the cache's ``native-runs`` removed once the run has
    passed (a failed run's stay for a look: they can be as large as the input).
    """
    from ..core.tools import cache_dir

    # One folder a process: parallel test workers running the same bench must not share
    # its images.
    folder = Path(work_dir or cache_dir("native-runs", f"{type(bench).__name__}-{bench.seed}"
                                                       f"-{os.getpid()}"))
    name = type(bench.component).__name__.lower()
    if waves is None:
        waves = waves_file(name, bench.seed)
    top = NativeTop(bench)
    modules = "".join(dict.fromkeys(d.verilog for d, _ in top.attached))
    cpp = list(dict.fromkeys(d.cpp for d, _ in top.attached if getattr(d, "cpp", None)))
    binary, built = native.build(top_verilog(top, name) + modules, name, waves=bool(waves),
                                 cpp=cpp)
    sources = [*map(source_image, top.sources), *map(memory_image, top.memories),
               *(static_image(d, width) for d, width in top.statics),
               *(i for _, (images, _) in top.attached for i in images)]
    sinks = [native.Image(-(-d.codec.width // 32), d.stall.threshold, d.stall.seed | 1,
                          d.expected) for d in top.sinks]
    sinks += [i for _, (_, images) in top.attached for i in images]
    result = native.execute(binary, sources, sinks, folder, bench.max_cycles or limit,
                            bench.patience, waves, progress)
    result = native.NativeRun(**{**vars(result), "build_seconds": built})
    if result.end != "done":
        bench.fail(f"native run ended by {result.end} after {result.cycles} cycles")
    outputs, taken = {}, len(top.sinks)
    for d, (_, images) in top.attached:
        d.collect(result.taken[taken:taken + len(images)])
        taken += len(images)
    for d, words in zip(top.sinks, result.taken[:len(top.sinks)], strict=True):
        got = d.codec.unpack_all(_values(words))
        want = bench.outputs.get(d.name)
        if want is not None:
            _compare(bench, d.name, got, want)
        outputs[d.name] = got
    if work_dir is None:
        shutil.rmtree(folder)
    return NativeResult(result.cycles, outputs, result)


def design_identity(component):
    """What ``component``'s design is made of, when it says: its class, and the
    parameters a registered block was built from alone (``block_params``), or a
    component class's own ``design`` (its parts' identities, for a harness). None
    otherwise, and for a subclass that says neither itself: its state is unknown."""
    cls = type(component)
    own = vars(cls)
    parts = (component.design if "design" in own else
             component.block_params if "block_name" in own else None)
    return None if parts is None else [f"{cls.__module__}.{cls.__qualname__}", parts]


def top_verilog(top, name):
    """The Verilog of ``top`` (a :class:`NativeTop`), generated once for its design: kept
    by its component's :func:`design_identity` and its drivers' units (``top.units()``)
    in the cache (:func:`~sparseforge.core.export.cached_verilog`), so a bench's later runs
    skip Amaranth's conversion and Yosys (a minute for the accelerator) and find their
    Verilator build at once. A top whose component or drivers do not say what they are
    made of is generated on every run."""
    def make():
        return clean_verilog(rtlil.convert(top, name="top", ports=[top.done, top.moved],
                                           emit_src=False))

    identity, units = design_identity(top.bench.component), top.units()
    if identity is None or units is None:
        return make()
    text, made = cached_verilog("native", {"component": identity, "units": units}, make, name)
    if not made:
        seen = set()
        for part in (top, top.bench.component):
            _elaborated(part, seen)
    return text


def _elaborated(part, seen):
    """Mark ``part`` and the elaboratables it holds (attributes, in lists, tuples and
    dicts, down the tree) as used: their design is in the cached Verilog, and Amaranth
    would otherwise warn, wherever each was made, that it never was elaborated."""
    if id(part) in seen:
        return
    seen.add(id(part))
    if isinstance(part, Elaboratable):
        part._MustUse__used = True
        values = vars(part).values()
    elif isinstance(part, (list, tuple)):
        values = part
    elif isinstance(part, dict):
        values = part.values()
    else:
        return
    for value in values:
        _elaborated(value, seen)


def simulate(bench, engine="native", work_dir=None, progress=None):
    """``bench``'s result (its :meth:`~.streams.Bench.from_outputs`), run natively on
    Verilator (``engine="native"``, in ``work_dir``, with a ``progress`` bar label) or on
    Amaranth's simulator (``"pysim"``)."""
    if engine == "native":
        done = run(bench, work_dir=work_dir, progress=progress)
        return bench.from_outputs(done.cycles, done.outputs)
    return pysim(bench)


def _compare(bench, name, got, want):
    if isinstance(got, np.ndarray):
        want = np.asarray(want)
        bad = np.flatnonzero(got != want) if got.shape == want.shape else [min(len(got),
                                                                                len(want))]
    else:
        bad = [i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w]
        if len(got) != len(want):
            bad = [*bad, min(len(got), len(want))]
    if len(bad):
        i = int(bad[0])
        bench.fail(f"native run: {name} item {i} is "
                   f"{got[i] if i < len(got) else 'missing'}, expected "
                   f"{want[i] if i < len(want) else 'none'}")
