"""Testbench for the Buffet: random or directed programs, checked every cycle.

A *program* is a list of operations valid in program order. The bench splits
it into the four input streams and enforces the ordering a buffet's parent
and child must keep between separate ports (the buffet itself cannot see
across them): a read or update waits until every earlier shrink has been
accepted (its index is relative to the head), a shrink until every earlier
read and update, and reads and updates wait for each other's earlier items,
so each read returns what program order says. Fills run ahead freely; a full
buffet holds them back.

Every cycle the scoreboard (:class:`BuffetScoreboard`, which the Tailor's
extends) feeds the operations the design accepted to the model
(:class:`sparseforge.sim.models.buffet.Buffet`), which rejects any that were
illegal, and compares occupancy, credits and every read response.
"""

import contextlib
from collections import deque
from dataclasses import dataclass

from ..sim.models.buffet import Buffet as BuffetModel
from ..sim.models.buffet import BuffetError
from ..sim.runners import cocotb_run, cocotb_test
from .streams import Bench

FILL, READ, UPDATE, SHRINK = "fill", "read", "update", "shrink"

# What each port's items wait for in a program: the earlier items of these ports.
# Reads and updates wait for each other too, so every read returns what the
# program order says, whatever the stalls.
WAITS_FOR = {READ: (SHRINK, UPDATE), UPDATE: (SHRINK, READ), SHRINK: (READ, UPDATE),
             FILL: ()}


@dataclass(frozen=True)
class BufferResult:
    """What one run of a buffer produced, from its handshakes."""

    cycles: int
    fills: int
    read_data: list        # every read response, in order
    read_indices: list     # the index of every accepted read, in order
    read_cycles: list      # the cycle each read was accepted on

    @property
    def reads(self):
        return len(self.read_data)


def random_program(rng, depth, width, n_ops):
    """A random program of ``n_ops`` operations, legal in program order.

    Occupancy swings between empty and full in phases, so full, empty,
    read-of-the-newest and shrink-to-empty all happen often.
    """
    model = BuffetModel(depth)
    program = []
    filling = True
    while len(program) < n_ops:
        occ = model.occupancy
        if occ == depth or (occ > 0 and rng.random() < 0.02):
            filling = False
        elif occ == 0 or rng.random() < 0.02:
            filling = True
        roll = rng.random()
        if occ and roll < 0.35:
            index = occ - 1 if rng.random() < 0.2 else rng.randrange(occ)
            program.append((READ, index))
        elif occ and roll < 0.45:
            index = rng.randrange(occ)
            value = rng.getrandbits(width)
            model.update(index, value)
            program.append((UPDATE, (index, value)))
        elif occ and (roll < 0.55 or (not filling and roll < 0.8)):
            count = occ if rng.random() < 0.1 else rng.randint(0, min(occ, 4))
            model.shrink(count)
            program.append((SHRINK, count))
        elif occ < depth:
            value = rng.getrandbits(width)
            model.fill(value)
            program.append((FILL, value))
    return program


def responses(depth, program):
    """What each read of ``program`` returns, run in program order on the model.

    A program the model refuses (a directed test of the hardware refusing it
    too) has responses up to the refused operation only.
    """
    model = BuffetModel(depth)
    out = []
    with contextlib.suppress(BuffetError):
        for kind, arg in program:
            if kind == READ:
                out.append(model.read(arg))
            elif kind == UPDATE:
                model.update(*arg)
            else:
                getattr(model, kind)(arg)
    return out


class BuffetScoreboard(Bench):
    """Checks a buffet-like design against ``model`` every cycle.

    Subclasses put the input sources in ``self.sources`` (by port name) and
    set ``self.reads`` (the responses to wait for). ``rates`` gives, per
    port, the probability of acting on a cycle (sources, and the
    ``read_data`` sink). The hooks :meth:`compare`, :meth:`operations` and
    :meth:`expect` are what a design with more ports (the Tailor) extends.
    """

    PORTS = (FILL, READ, UPDATE, SHRINK)

    def __init__(self, component, model, seed, rates=None):
        super().__init__(component, seed)
        self.rates = {**dict.fromkeys(self.PORTS, 0.7), "read_data": 0.7, **(rates or {})}
        self.depth = component.depth
        self.model = model
        self.sources = {}
        self.reads = 0
        self.expected = deque()
        self.responses = 0
        self.last_shrink = 0
        self.sink = self.sink_on("read_data", self.rates["read_data"])

    def compare(self, io):
        """Compare the design's outputs with the model's, at the start of this cycle."""
        for name, want in (("occupancy", self.model.occupancy), ("credit", self.last_shrink)):
            if io.get(name) != want:
                self.fail(f"{name} {io.get(name)} != model {want}")

    def operations(self):
        """The operations accepted on this cycle, as :meth:`model.step` takes them."""
        fired = {port: self.sources[port].fired for port in self.PORTS if port in self.sources}
        if fired.get(UPDATE) is not None:
            fired[UPDATE] = (fired[UPDATE]["index"], fired[UPDATE]["data"])
        return fired

    def expect(self, data):
        """Queue what the read accepted on this cycle must return (the model's ``data``)."""
        self.expected.append(data)

    def respond(self, got, want):
        """Check one read response against what :meth:`expect` queued."""
        if got != want:
            self.fail(f"read response {self.responses}: got {got:#x}, model says {want:#x}")

    def check(self, io, cycle):
        self.compare(io)
        if self.sink.fired is not None:
            if not self.expected:
                self.fail(f"read response {self.sink.fired:#x} with no read outstanding")
            self.respond(self.sink.fired, self.expected.popleft())
            self.responses += 1
        try:
            data = self.model.step(**self.operations())
        except AssertionError as exc:
            self.fail(f"design accepted an illegal operation: {exc}")
        if self.sources[READ].fired is not None:
            self.expect(data)
        self.last_shrink = self.sources[SHRINK].fired or 0

    def finished(self):
        return all(s.done for s in self.sources.values()) and self.responses == self.reads

    def result(self):
        reads = self.sources[READ].accepted
        return BufferResult(self.cycle, len(self.sources[FILL].accepted),
                            [v for _, v in self.sink.received], [i for _, i in reads],
                            [c for c, _ in reads])


class BuffetBench(BuffetScoreboard):
    """Runs a program on ``component`` (a Buffet, or a Tailor used as one)."""

    def __init__(self, component, program, seed, rates=None):
        super().__init__(component, BuffetModel(component.depth), seed, rates)
        streams = {port: [] for port in self.PORTS}
        after = {port: {other: [] for other in WAITS_FOR[port]} for port in self.PORTS}
        for kind, arg in program:
            for other, counts in after[kind].items():
                counts.append(len(streams[other]))
            streams[kind].append({"index": arg[0], "data": arg[1]} if kind == UPDATE else arg)
        self.reads = self.sink.expected = len(streams[READ])
        self.outputs = {"read_data": responses(component.depth, program)}
        for port, items in streams.items():
            self.sources[port] = self.source_on(port, items, self.rates[port], after[port])
        self.drivers = [*self.sources.values(), self.sink]


def _bench(component, args, seed):
    """The program in the arguments, or a random one of ``ops`` operations."""
    import random

    program = args.get("program") or random_program(
        random.Random(seed), component.depth, component.width, args.get("ops", 10_000))
    return BuffetBench(component, [tuple(op) for op in program], seed, args.get("rates"))


@cocotb_test
async def random_mixed_operations(dut):
    """Random fills, reads, updates and shrinks under random stalls on every stream."""
    await cocotb_run(dut, _bench)
