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

from collections import deque
from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..hw.interfaces import TailorSignature
from ..sim.models.buffet import Buffet as BuffetModel
from ..sim.runners import cocotb_run, cocotb_test
from ..sw.buffet_program import KINDS, BuffetProgram
from .streams import Bench, Columns

FILL, READ, UPDATE, SHRINK = "fill", "read", "update", "shrink"
_SIDES = TailorSignature(4, 1, 1, 8).members    # any sizes: only the names are read


def port(name):
    """The flattened port of a buffer's member ``name``: ``fill`` is ``parent__fill``,
    ``read`` is ``child__read``, ``update`` (on neither side) is ``update``."""
    for side in ("parent", "child"):
        if name in _SIDES[side].signature.members:
            return f"{side}__{name}"
    return name


class MemberStalls(Bench):
    """A bench of a buffer whose streams stall as their members do, whichever side
    carries them: a stream's stalls are seeded by its member's name (``fill``, not
    ``parent__fill``), so a seeded run takes the same cycles however the port is
    grouped."""

    def stall(self, name, rate):
        return super().stall(name.rpartition("__")[2], rate)


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


class BuffetScoreboard(MemberStalls):
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
        self.sink = self.sink_on(port("read_data"), self.rates["read_data"])

    def compare(self, io):
        """Compare the design's outputs with the model's, at the start of this cycle."""
        for name, want in (("occupancy", self.model.occupancy), ("credit", self.last_shrink)):
            if io.get(port(name)) != want:
                self.fail(f"{name} {io.get(port(name))} != model {want}")

    def operations(self):
        """The operations accepted on this cycle, as :meth:`model.step` takes them."""
        fired = {kind: self.sources[kind].fired for kind in self.PORTS if kind in self.sources}
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
    """Runs a program on ``component`` (a Buffet, or a Tailor used as one).

    ``program`` is a :class:`~sparseforge.sw.buffet_program.BuffetProgram` or
    ``(kind, arg)`` pairs. An index the buffet cannot hold or a value wider
    than its elements is refused (:class:`~sparseforge.core.errors.ParameterError`).
    """

    def __init__(self, component, program, seed, rates=None):
        super().__init__(component, BuffetModel(component.depth), seed, rates)
        if not isinstance(program, BuffetProgram):
            program = BuffetProgram.from_ops(program)
        _check_fits(program, component)
        for kind in self.PORTS:
            code = KINDS.index(kind)
            mask = program.kind == code
            items = program.arg[mask]
            if kind == UPDATE:
                items = Columns({"index": items, "data": program.data[mask]})
            after = {port(other): program.before(code, KINDS.index(other))
                     for other in WAITS_FOR[kind]}
            self.sources[kind] = self.source_on(port(kind), items, self.rates[kind], after)
        self.reads = self.sink.expected = int(np.count_nonzero(program.kind == KINDS.index(READ)))
        self.outputs = {port("read_data"): program.responses(component.depth)[0]}
        self.drivers = [*self.sources.values(), self.sink]


def _check_fits(program, component):
    """Refuse a program no run on ``component`` could play."""
    access = np.isin(program.kind, (KINDS.index(READ), KINDS.index(UPDATE)))
    limits = ((access, program.arg, 1 << len(component.child.read.payload), "an index"),
              (program.kind == KINDS.index(SHRINK), program.arg, component.depth + 1,
               "a shrink of"),
              (program.kind == KINDS.index(FILL), program.arg, 1 << component.width, "a value"),
              (program.kind == KINDS.index(UPDATE), program.data, 1 << component.width,
               "a value"))
    for mask, values, bound, what in limits:
        bad = mask & ((values < 0) | (values >= bound))
        if bad.any():
            n = int(np.argmax(bad))
            raise ParameterError(f"program operation {n}: {what} {int(values[n])} does not fit "
                                 f"a buffer of depth {component.depth} and width "
                                 f"{component.width} (at most {bound - 1})")


def _bench(component, args, seed):
    """The program in the arguments, or a random one of ``ops`` operations."""
    import random

    program = args.get("program")
    if program is None:
        program = random_program(random.Random(seed), component.depth, component.width,
                                 args.get("ops", 10_000))
    return BuffetBench(component, program, seed, args.get("rates"))


@cocotb_test
async def random_mixed_operations(dut):
    """Random fills, reads, updates and shrinks under random stalls on every stream."""
    await cocotb_run(dut, _bench)
