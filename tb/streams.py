"""Cycle-level stream drivers, independent of the simulator.

A testbench here is plain Python that runs one clock cycle at a time against
an ``io`` object with ``set(name, value)`` and ``get(name)`` on the design's
flattened port names (``fill__valid``, ``read_data__payload``, ...). The same
bench therefore runs on Amaranth's simulator and, through cocotb, on
Verilator (see :mod:`sparseforge.tb.runners`).

Each cycle: every driver sets its inputs (:meth:`drive`), the design settles,
every driver looks at the handshake (:meth:`sample`), then the clock ticks. A
transfer happens on a cycle where ``valid`` and ``ready`` are both high.
Random stalls come from :class:`Backpressure`, seeded, so a failing run
replays exactly from its seed.
"""

import random


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
    ``accepted`` records ``(cycle, payload)`` of every transfer.
    """

    def __init__(self, name, items, stall, gate=None):
        self.name = name
        self.items = list(items)
        self.next = 0
        self.stall = stall
        self.gate = gate
        self.presenting = False
        self.accepted = []
        self.fired = None

    @property
    def done(self):
        return self.next == len(self.items)

    def idle(self, io):
        io.set(f"{self.name}__valid", 0)

    def drive(self, io, cycle):
        if not self.presenting and not self.done:
            self.presenting = self.stall() and (self.gate is None or self.gate(self.next))
        io.set(f"{self.name}__valid", int(self.presenting))
        if self.presenting:
            io.set(f"{self.name}__payload", self.items[self.next])

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

    def __init__(self, name, produce, stall, gate, ended):
        super().__init__(name, [], stall, gate)
        self.produce = produce
        self.ended = ended

    @property
    def done(self):
        return not self.presenting and self.ended()

    def drive(self, io, cycle):
        if not self.presenting and not self.ended():
            self.presenting = self.stall() and self.gate(self.next)
            if self.presenting:
                self.items.append(self.produce())
        io.set(f"{self.name}__valid", int(self.presenting))
        if self.presenting:
            io.set(f"{self.name}__payload", self.items[self.next])


class StreamSink:
    """Accepts a stream from the design with randomly stalled ``ready``."""

    def __init__(self, name, stall):
        self.name = name
        self.stall = stall
        self.received = []
        self.fired = None

    def idle(self, io):
        io.set(f"{self.name}__ready", 0)

    def drive(self, io, cycle):
        io.set(f"{self.name}__ready", int(self.stall()))

    def sample(self, io, cycle):
        self.fired = None
        if io.get(f"{self.name}__valid") and io.get(f"{self.name}__ready"):
            self.fired = io.get(f"{self.name}__payload")
            self.received.append((cycle, self.fired))


class Bench:
    """Base class of a cycle-level testbench.

    Subclasses fill ``self.drivers`` and implement :meth:`check` (called each
    cycle after sampling, to feed the scoreboard) and :meth:`finished`.
    ``seed`` makes every random choice replayable.
    """

    max_cycles = 1_000_000

    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed)
        self.drivers = []
        self.cycle = 0

    def stall(self, rate):
        return Backpressure(self.rng, rate)

    def check(self, io, cycle):
        """Scoreboard hook, after every driver has sampled this cycle."""

    def finished(self):
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
        if self.cycle > self.max_cycles:
            self.fail(f"no completion within {self.max_cycles} cycles (deadlock?)")
