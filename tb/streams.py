"""Cycle-level stream drivers, independent of the simulator.

A testbench here is plain Python that runs one clock cycle at a time against
an ``io`` object with ``set(name, value)`` and ``get(name)`` on the design's
flattened port names (``parent__fill__valid``, ``child__read_data__payload``,
...). The same bench therefore runs on Amaranth's simulator and, through
cocotb, on Verilator (see :mod:`sparseforge.sim.runners`).

Each cycle: every driver sets its inputs (:meth:`drive`), the design settles,
every driver looks at the handshake (:meth:`sample`), then the clock ticks. A
transfer happens on a cycle where ``valid`` and ``ready`` are both high.
Random stalls come from :class:`Backpressure`, seeded, so a failing run
replays exactly from its seed.

Payloads are Python values (an int, a dict for a struct, a list for an
array) packed into bits and back through the layout the component itself
declares for the stream (:class:`Codec`), never by hand.
"""

import random
import zlib

import numpy as np
from amaranth.hdl import Shape
from amaranth.lib import data

from ..core.errors import ParameterError


class Codec:
    """Packs a stream's payloads into bits and back through the port's own shape.

    ``shape`` is a payload's ``amaranth.lib.data.Layout`` (a value packed
    with ``layout.const(value).as_bits()``, unpacked with ``layout.from_bits``;
    an int is a word a host encoder already packed from the same wire format,
    and goes as it is), or a plain shape, for which a payload is an int (two's
    complement when signed).
    """

    def __init__(self, shape):
        self.shape = shape
        self.layout = shape if isinstance(shape, data.Layout) else None
        plain = Shape.cast(shape)
        self.width, self.signed = plain.width, plain.signed

    def pack(self, value):
        """The bits of ``value``, an unsigned int."""
        if self.layout is not None and not isinstance(value, int | np.integer):
            return self.layout.const(value).as_bits()
        return int(value) & ((1 << self.width) - 1)

    def unpack(self, bits):
        """The value of ``bits`` (either simulator's reading), as plain Python."""
        bits &= (1 << self.width) - 1
        if self.layout is not None:
            return plain(self.layout.from_bits(bits))
        if self.signed and bits >> (self.width - 1):
            bits -= 1 << self.width
        return bits


    def pack_all(self, items):
        """The bits of every item: uint64 when they fit, else an object array of ints.

        Vectorized for a numpy array of ints and for :class:`Columns` of a
        struct whose fields are plain; per item otherwise.
        """
        wide = self.width > 64
        if isinstance(items, Columns) and isinstance(self.layout, data.StructLayout):
            word = np.zeros(len(items), dtype=object if wide else np.uint64)
            for name, field in self.layout:
                column = np.asarray(items.columns[name]).astype(np.int64)
                column = column.astype(object) if wide else column.astype(np.uint64)
                mask = (1 << field.width) - 1
                word |= (column & (mask if wide else np.uint64(mask))) << (
                    field.offset if wide else np.uint64(field.offset))
            return word
        if isinstance(items, np.ndarray) and items.dtype.kind in "iu" and not wide:
            return items.astype(np.int64).astype(np.uint64) & np.uint64((1 << self.width) - 1)
        return np.array([self.pack(item) for item in items],
                        dtype=object if wide else np.uint64)

    def unpack_all(self, words):
        """The values of packed words (uint64 or object array): ints, or plain Python."""
        if self.layout is not None:
            return [self.unpack(int(w)) for w in words]
        values = np.asarray(words).astype(np.uint64) if self.width <= 64 else words
        if self.width > 64:
            return [self.unpack(int(w)) for w in values]
        values = values & np.uint64((1 << self.width) - 1)
        if not self.signed:
            return values.astype(np.int64) if self.width < 64 else values
        sign = np.uint64(1 << (self.width - 1))
        return (values ^ sign).astype(np.int64) - np.int64(1 << (self.width - 1))


class Columns:
    """Struct payloads as one array per field: ``Columns({"data": a, "last": b})``.

    A sequence of dicts for the Python drivers, packed column-wise for a native run.
    """

    def __init__(self, columns):
        self.columns = {k: np.asarray(v) for k, v in columns.items()}
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths {sorted(lengths)}")
        self.length = lengths.pop() if lengths else 0

    def __len__(self):
        return self.length

    def __getitem__(self, n):
        return {k: int(v[n]) for k, v in self.columns.items()}


def plain(value):
    """A ``data.Const`` view as nested dicts and lists of ints."""
    if not isinstance(value, data.Const):
        return value
    layout = value.shape()
    if isinstance(layout, data.ArrayLayout):
        return [plain(value[i]) for i in range(layout.length)]
    return {name: plain(value[name]) for name, _ in layout}


def codecs(component):
    """``{stream name: Codec}`` for every stream of ``component``, by flattened name.

    A stream is a member with a ``payload``; ``row__0__filter`` names the
    ``filter`` stream of element 0 of the ``row`` array.
    """
    out = {}
    for path, member, _value in component.signature.flatten(component):
        if path[-1] == "payload" and member.is_port:
            out["__".join(map(str, path[:-1]))] = Codec(member.shape)
    return out


LFSR_TAPS = 0x80200003
"""Feedback of the 32-bit Galois LFSR behind every stream's back-pressure (maximal length)."""


def stream_seed(seed, name):
    """The LFSR seed of stream ``name`` in a bench seeded ``seed``: nonzero, 32 bits."""
    return (zlib.crc32(f"{seed}/{name}".encode()) | 1) & 0xFFFFFFFF


def rate_threshold(rate):
    """A stream acts on a cycle where the LFSR's low 16 bits are below this (of 65536)."""
    if not 0.0 < rate <= 1.0:
        raise ParameterError(f"back-pressure rate {rate}: expected a number in (0, 1]")
    return max(1, min(1 << 16, round(rate * (1 << 16))))


class Backpressure:
    """Says, each cycle, whether a port may act: a coin of probability ``rate``.

    The coin comes from a 32-bit Galois LFSR (:data:`LFSR_TAPS`) started at
    ``seed`` on the first cycle after reset and stepped once per cycle, so
    the sources and sinks a native run builds inside the simulator
    (:mod:`sparseforge.tb.native`) draw exactly the same stalls. ``clock()``
    gives the current cycle.
    """

    def __init__(self, seed, rate, clock):
        self.seed, self.rate, self.clock = seed, rate, clock
        self.threshold = rate_threshold(rate)
        self.state, self.at = (seed | 1) & 0xFFFFFFFF, 0

    def __call__(self):
        while self.at < self.clock():
            self.state = (self.state >> 1) ^ (LFSR_TAPS if self.state & 1 else 0)
            self.at += 1
        return (self.state & 0xFFFF) < self.threshold


class StreamSource:
    """Drives a stream into the design from a list of payloads.

    Once it raises ``valid`` it holds the payload until the transfer (valid is
    never withdrawn). It presents item ``n`` on a cycle where ``stall()``
    allows and its gates are open:

    - ``after`` maps a counter name to an array: item ``n`` waits until that
      counter (``counters[name]()``, transfers of another stream accepted on
      earlier cycles) reaches ``after[name][n]``;
    - ``credits``, a ``(port, needs)`` pair: item ``n`` waits until the level
      of output ``port`` on the previous cycle, less this source's transfer
      on it, reaches ``needs[n]`` (a parent obeying its child's credits);
    - ``gate(n)``, a free condition for directed tests (Python only).

    ``codec`` packs each item (default: items are already bits).
    ``accepted`` records ``(cycle, item)`` of every transfer; ``fired`` is the
    item transferred on this cycle, else ``None``.
    """

    def __init__(self, name, items, stall, gate=None, codec=None, after=None, counters=None,
                 credits=None):
        self.name = name
        self.items = items if hasattr(items, "__getitem__") else list(items)
        self.next = 0
        self.stall = stall
        self.gate = gate
        self.codec = codec
        self.after = {k: list(map(int, v)) for k, v in (after or {}).items()}
        self.counters = counters or {}
        self.credits = credits
        self.credit_needs = list(map(int, credits[1])) if credits else None
        self.seen = 0               # credits available on this cycle
        self.presenting = False
        self.accepted = []
        self.fired = None

    @property
    def done(self):
        return self.next == len(self.items)

    def idle(self, io):
        io.set(f"{self.name}__valid", 0)

    def _open(self, n):
        """Whether every gate of item ``n`` is open on this cycle."""
        if any(self.counters[k]() < v[n] for k, v in self.after.items()):
            return False
        if self.credits and self.seen < self.credit_needs[n]:
            return False
        return self.gate is None or self.gate(n)

    def drive(self, io, cycle):
        if not self.presenting and not self.done:
            self.presenting = bool(self.stall() and self._open(self.next))
        io.set(f"{self.name}__valid", int(self.presenting))
        if self.presenting:
            item = self.item(self.next)
            io.set(f"{self.name}__payload", self.codec.pack(item) if self.codec else item)

    def item(self, n):
        """Item ``n``, as Python values (a numpy array's elements become ints)."""
        item = self.items[n]
        return int(item) if isinstance(item, np.integer) else item

    def sample(self, io, cycle):
        self.fired = None
        if self.presenting and io.get(f"{self.name}__ready"):
            self.fired = self.item(self.next)
            self.accepted.append((cycle, self.fired))
            self.next += 1
            self.presenting = False
        if self.credits:
            self.seen = io.get(self.credits[0]) - (self.fired is not None)


class StreamSink:
    """Accepts a stream from the design with randomly stalled ``ready``.

    ``codec`` unpacks each payload (default: kept as bits). ``received``
    records ``(cycle, payload)``; ``fired`` is the payload taken on this
    cycle. ``expected``, when set, is how many payloads the run must take (a
    native run needs it to know when it is done).
    """

    def __init__(self, name, stall, codec=None, expected=None):
        self.name = name
        self.stall = stall
        self.codec = codec
        self.expected = expected
        self.received = []
        self.fired = None

    def idle(self, io):
        io.set(f"{self.name}__ready", 0)

    def drive(self, io, cycle):
        io.set(f"{self.name}__ready", int(self.stall()))

    def sample(self, io, cycle):
        self.fired = None
        if io.get(f"{self.name}__valid") and io.get(f"{self.name}__ready"):
            bits = io.get(f"{self.name}__payload")
            self.fired = self.codec.unpack(bits) if self.codec else bits
            self.received.append((cycle, self.fired))


class PulseCounter:
    """Counts the cycles on which output ``port`` is nonzero (e.g. credits returned)."""

    def __init__(self, port):
        self.port = port
        self.count = 0
        self.fired = None

    def idle(self, io):
        pass

    def drive(self, io, cycle):
        pass

    def sample(self, io, cycle):
        self.count += bool(io.get(self.port))


class RamPort:
    """Serves the in-order read port ``name`` (a
    :class:`~sparseforge.hw.stream_units.MemoryPortSignature`) from a memory that also
    takes the writes the design makes on ``writes`` (the request stream of a
    :class:`~sparseforge.hw.interfaces.MemoryWritePortSignature`, taken by a sink): a read
    answers what the writes taken up to its own cycle left at its address, 0 where none.

    A read is taken on a cycle where the coin ``stall`` allows and fewer than two answers
    wait; its answer is offered from the next cycle, in order, until taken. A read
    offered and not taken must stay offered, the same address, until taken (the stream's
    rule; a withdrawn or changed one fails the run). A native run
    builds :class:`~sparseforge.tb.native.RamMemory` with the same rules, of ``depth``
    words (an address past them fails here). ``codec`` unpacks a write's ``{addr, data}``.
    With ``writes`` ``None`` it is a read-only memory whose ``words`` the bench sets up
    (Amaranth's simulator only).
    """

    def __init__(self, name, writes, depth, stall, codec):
        self.name, self.writes, self.depth = name, writes, depth
        self.stall, self.codec = stall, codec
        self.words, self.answers = {}, []
        self.free = False
        self.fired = self.offered = None      # the read taken; the one offered, not taken

    def idle(self, io):
        io.set(f"{self.name}__request__ready", 0)
        io.set(f"{self.name}__response__valid", 0)

    def drive(self, io, cycle):
        self.free = len(self.answers) < 2 and self.stall()
        io.set(f"{self.name}__request__ready", int(self.free))
        io.set(f"{self.name}__response__valid", int(bool(self.answers)))
        if self.answers:
            io.set(f"{self.name}__response__payload", self.answers[0])

    def sample(self, io, cycle):
        self.fired = None
        if self.answers and io.get(f"{self.name}__response__ready"):
            self.fired = self.answers.pop(0)
        if self.writes and io.get(f"{self.writes}__valid") and io.get(f"{self.writes}__ready"):
            write = self.codec.unpack(io.get(f"{self.writes}__payload"))
            self.words[self._within(write["addr"])] = write["data"]
        valid = io.get(f"{self.name}__request__valid")
        addr = io.get(f"{self.name}__request__payload")
        if self.offered is not None and (not valid or addr != self.offered):
            raise AssertionError(f"{self.name}: the read of {self.offered} withdrawn before "
                                 "it was taken")
        self.offered = addr if valid and not self.free else None
        if self.free and valid:
            self.answers.append(self.words.get(self._within(addr), 0))
            self.fired = addr

    def _within(self, addr):
        if addr >= self.depth:
            raise AssertionError(f"{self.name}: address {addr} past the memory's "
                                 f"{self.depth} words")
        return addr


class Static:
    """Holds an input port at a constant (a mode pin), from reset on."""

    def __init__(self, name, value):
        self.name, self.value = name, value
        self.fired = None

    def idle(self, io):
        io.set(self.name, self.value)

    def drive(self, io, cycle):
        io.set(self.name, self.value)

    def sample(self, io, cycle):
        pass


class Bench:
    """Base class of a cycle-level testbench for ``component``.

    Subclasses fill ``self.drivers`` (making streams with :meth:`source_on`
    and :meth:`sink_on`, which pack through the component's layouts and draw
    their stalls from a per-stream LFSR seeded from ``seed``) and implement
    :meth:`check` (called each cycle after sampling, to feed the scoreboard),
    :meth:`finished` and :meth:`result` (what the run produced, as a
    dataclass). ``seed`` makes every random choice replayable; ``rng`` draws
    the bench's own random data.

    A bench whose sources are gated only by ``after`` and ``credits`` (no
    ``gate`` function) and whose sinks declare ``expected`` also runs inside
    the simulator (:func:`sparseforge.tb.native.run`), with the same stalls,
    and checks there what its sinks took against ``outputs``.

    Watchdog: a run fails once no stream has transferred for ``patience``
    cycles (a deadlock shows in a fraction of a second, whatever the
    workload), or after ``max_cycles`` in all when that is set.
    """

    patience = 1_000
    max_cycles = None
    stop_at = None          # end the run after this many cycles, finished or not

    def __init__(self, component, seed):
        self.component = component
        self.codecs = codecs(component)
        self.seed = seed
        self.rng = random.Random(seed)
        self.drivers = []
        self.streams = {}       # name -> source, sink or pulse counter
        self.outputs = {}       # sink name -> every item it must take, where known up front
        self.cycle = 0
        self.quiet = 0          # cycles since the last transfer

    def stall(self, name, rate):
        """Stream ``name``'s coin of probability ``rate``."""
        return Backpressure(stream_seed(self.seed, name), rate, lambda: self.cycle)

    def count(self, name):
        """Transfers so far on stream ``name`` (pulses, for a pulse counter)."""
        stream = self.streams[name]
        if isinstance(stream, PulseCounter):
            return stream.count
        return len(stream.accepted if isinstance(stream, StreamSource) else stream.received)

    def source_on(self, name, items, rate, after=None, credits=None, gate=None):
        """A :class:`StreamSource` on stream ``name``, acting with probability ``rate``.

        ``after`` names other streams (or pulse counters) whose counts gate
        each item; ``credits`` is ``(port, needs)``.
        """
        counters = {k: (lambda k=k: self.count(k)) for k in (after or {})}
        self.streams[name] = StreamSource(name, items, self.stall(name, rate), gate,
                                          self.codecs[name], after, counters, credits)
        return self.streams[name]

    def sink_on(self, name, rate, expected=None):
        """A :class:`StreamSink` on stream ``name``, ready with probability ``rate``."""
        self.streams[name] = StreamSink(name, self.stall(name, rate), self.codecs[name],
                                        expected)
        return self.streams[name]

    def pulses_on(self, port):
        """A :class:`PulseCounter` on output ``port``, countable as ``port`` in ``after``."""
        self.streams[port] = PulseCounter(port)
        return self.streams[port]

    def check(self, io, cycle):
        """Scoreboard hook, after every driver has sampled this cycle."""

    def finished(self):
        """Whether every sink has taken the items it expects (a bench whose end is more
        than that says so itself)."""
        return all(len(s.received) == s.expected for s in self.streams.values()
                   if isinstance(s, StreamSink))

    def taken(self):
        """What each sink has taken: ``{stream: payloads in order}``."""
        return {name: [v for _, v in s.received] for name, s in self.streams.items()
                if isinstance(s, StreamSink)}

    def from_outputs(self, cycles, outputs):
        """The run's result from its cycles and what its sinks took (``{stream: items}``),
        whichever simulator ran it; a bench that defines this gets :meth:`result` and
        :func:`sparseforge.tb.native.simulate`."""
        raise NotImplementedError

    def running(self):
        """Whether to simulate another cycle: not finished, and not at ``stop_at``."""
        return not self.finished() and (self.stop_at is None or self.cycle < self.stop_at)

    def result(self):
        """What the run produced: a dataclass, the same from either simulator."""
        return self.from_outputs(self.cycle, self.taken())

    def fail(self, message):
        raise AssertionError(f"{message} (cycle {self.cycle}; replay with "
                             f"SPARSEFORGE_SEED={self.seed})")

    def idle(self, io):
        """Drive every input inactive (during reset), drawing no random numbers."""
        for driver in self.drivers:
            driver.idle(io)

    def step_inputs(self, io):
        for driver in self.drivers:
            driver.drive(io, self.cycle)

    def step_outputs(self, io):
        for driver in self.drivers:
            driver.sample(io, self.cycle)
        self.check(io, self.cycle)
        self.cycle += 1
        moved = any(driver.fired is not None for driver in self.drivers)
        self.quiet = 0 if moved else self.quiet + 1
        if self.quiet > self.patience:
            self.fail(f"no transfer on any stream for {self.patience} cycles (deadlock?)")
        if self.max_cycles is not None and self.cycle > self.max_cycles:
            self.fail(f"no completion within {self.max_cycles} cycles")

