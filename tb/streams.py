"""Cycle-level stream drivers, independent of the simulator.

A testbench here is plain Python that runs one clock cycle at a time against
an ``io`` object with ``set(name, value)`` and ``get(name)`` on the design's
flattened port names (``fill__valid``, ``read_data__payload``, ...). The same
bench therefore runs on Amaranth's simulator and, through cocotb, on
Verilator (see :mod:`sparseforge.sim.runners`).

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

from amaranth.hdl import Shape
from amaranth.lib import data


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
        if self.layout is not None and not isinstance(value, int):
            return self.layout.const(value).as_bits()
        return value & ((1 << self.width) - 1)

    def unpack(self, bits):
        """The value of ``bits`` (either simulator's reading), as plain Python."""
        bits &= (1 << self.width) - 1
        if self.layout is not None:
            return plain(self.layout.from_bits(bits))
        if self.signed and bits >> (self.width - 1):
            bits -= 1 << self.width
        return bits


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


class Backpressure:
    """A seeded coin that says, each cycle, whether a port may act.

    ``rate`` is the probability of acting: 1.0 never stalls.
    """

    def __init__(self, rng, rate):
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"back-pressure rate {rate} outside (0, 1]")
        self.rng = rng
        self.rate = rate

    def __call__(self):
        return self.rate >= 1.0 or self.rng.random() < self.rate


class StreamSource:
    """Drives a stream into the design from a queue of payloads.

    Once it raises ``valid`` it holds the payload until the transfer (valid is
    never withdrawn). ``gate(n)``, when given, may hold the ``n``-th item back
    until the rest of the bench allows it (e.g. ordering between streams).
    ``codec`` packs each item (default: items are already bits).
    ``accepted`` records ``(cycle, item)`` of every transfer; ``fired`` is the
    item transferred on this cycle, else ``None``.
    """

    def __init__(self, name, items, stall, gate=None, codec=None):
        self.name = name
        self.items = list(items)
        self.next = 0
        self.stall = stall
        self.gate = gate
        self.codec = codec
        self.presenting = False
        self.accepted = []
        self.fired = None

    @property
    def done(self):
        return self.next == len(self.items)

    def idle(self, io):
        io.set(f"{self.name}__valid", 0)

    def _present(self):
        """Whether to raise ``valid`` with the next item on this cycle."""
        return bool(self.stall() and (self.gate is None or self.gate(self.next)))

    def drive(self, io, cycle):
        if not self.presenting and not self.done:
            self.presenting = self._present()
        io.set(f"{self.name}__valid", int(self.presenting))
        if self.presenting:
            item = self.items[self.next]
            io.set(f"{self.name}__payload", self.codec.pack(item) if self.codec else item)

    def sample(self, io, cycle):
        self.fired = None
        if self.presenting and io.get(f"{self.name}__ready"):
            self.fired = self.items[self.next]
            self.accepted.append((cycle, self.fired))
            self.next += 1
            self.presenting = False


class LazySource(StreamSource):
    """A source whose next payload is made only when it is about to be presented.

    For a driver whose payloads depend on what happened so far (a parent that
    follows the design's state). ``produce()`` returns the payload; ``gate(n)``
    says whether item ``n`` may be presented now; ``ended()`` says no more
    items will come.
    """

    def __init__(self, name, produce, stall, gate, ended, codec=None):
        super().__init__(name, [], stall, gate, codec)
        self.produce = produce
        self.ended = ended

    @property
    def done(self):
        return not self.presenting and self.ended()

    def _present(self):
        if self.ended() or not super()._present():
            return False
        self.items.append(self.produce())
        return True


class StreamSink:
    """Accepts a stream from the design with randomly stalled ``ready``.

    ``codec`` unpacks each payload (default: kept as bits). ``received``
    records ``(cycle, payload)``; ``fired`` is the payload taken on this cycle.
    """

    def __init__(self, name, stall, codec=None):
        self.name = name
        self.stall = stall
        self.codec = codec
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

    Subclasses fill ``self.drivers`` (making streams with :meth:`source_on`,
    :meth:`lazy_source_on` and :meth:`sink_on`, which pack through the
    component's layouts) and implement :meth:`check` (called each cycle after sampling, to
    feed the scoreboard), :meth:`finished` and :meth:`result` (what the run
    produced, as a dataclass). ``seed`` makes every random choice replayable.

    Watchdog: a run fails once no stream has transferred for ``patience``
    cycles (a deadlock shows in a fraction of a second, whatever the
    workload), or after ``max_cycles`` in all when that is set.
    """

    patience = 1_000
    max_cycles = None

    def __init__(self, component, seed):
        self.component = component
        self.codecs = codecs(component)
        self.seed = seed
        self.rng = random.Random(seed)
        self.drivers = []
        self.cycle = 0
        self.quiet = 0          # cycles since the last transfer

    def stall(self, rate):
        return Backpressure(self.rng, rate)

    def source_on(self, name, items, rate, gate=None):
        """A :class:`StreamSource` on stream ``name``, stalled with probability ``1 - rate``."""
        return StreamSource(name, items, self.stall(rate), gate, self.codecs[name])

    def lazy_source_on(self, name, produce, rate, gate, ended):
        """A :class:`LazySource` on stream ``name``."""
        return LazySource(name, produce, self.stall(rate), gate, ended, self.codecs[name])

    def sink_on(self, name, rate):
        """A :class:`StreamSink` on stream ``name``, ready with probability ``rate``."""
        return StreamSink(name, self.stall(rate), self.codecs[name])

    def check(self, io, cycle):
        """Scoreboard hook, after every driver has sampled this cycle."""

    def finished(self):
        raise NotImplementedError

    def result(self):
        """What the run produced: a dataclass, the same from either simulator."""
        raise NotImplementedError

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

