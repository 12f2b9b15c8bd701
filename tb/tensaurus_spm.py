# amaranth: UnusedElaboratable=no
"""Testbench of a Tensaurus scratchpad (``tensaurus_spm``): fill it, then read it from
every port.

The fills stream in first; each port's requests wait (``after``) until every fill has
been taken, then stream in, every stream stalled at random. Each port's responses must
be the chunks :class:`~sparseforge.sim.models.tensaurus_spm.Scratchpad` holds for its
requests, in order: checked as each arrives on Amaranth's simulator, and after the run
natively on Verilator (where ``read_half`` is held, so the answers are known up front).
"""

import random
from collections import deque
from dataclasses import dataclass

from ..core.errors import ParameterError
from ..sim.models.tensaurus_spm import Scratchpad
from ..sim.runners import pysim
from . import native
from .streams import Bench, Static

RATE = 0.7
"""Each stream's chance to act on a cycle, by default."""


@dataclass(frozen=True)
class SpmRun:
    """A run: its cycles, each port's responses (lanes) in order and, from a Python run,
    the cycles each fill, request and response was taken on (empty from a native one)."""

    cycles: int
    responses: list
    filled: list
    requested: list
    answered: list


class RandomHalf:
    """Drives ``read_half`` with a fresh random bit every cycle (Python runs only)."""

    def __init__(self, seed):
        self.rng, self.value, self.fired = random.Random(seed), 0, None

    def idle(self, io):
        io.set("read_half", 0)

    def drive(self, io, cycle):
        self.value = self.rng.getrandbits(1)
        io.set("read_half", self.value)

    def sample(self, io, cycle):
        pass


def port_stream(p, name):
    """The flattened name of port ``p``'s ``request`` or ``response`` stream."""
    return f"ports__{p}__{name}"


class SpmBench(Bench):
    """``fills`` (dicts of :func:`~sparseforge.hw.interfaces.spm_fill_layout`), then each
    port's ``requests`` (dicts or :class:`~sparseforge.tb.streams.Columns` of operand,
    row, chunk) read from half ``half`` (0 or 1 held, or ``"random"``: a new one every
    cycle). ``rates`` maps a stream's name, or ``fill``, ``request``, ``response`` for
    every port's, to its chance to act on a cycle. With ``broadcast`` held (every port
    making the same requests) port 0's reads answer them all."""

    def __init__(self, component, fills, requests, seed, half=0, rates=None, broadcast=False):
        super().__init__(component, seed)
        if len(requests) != component.nports:
            raise ParameterError(f"{len(requests)} request lists for {component.nports} ports")
        rates = rates or {}

        def rate(name, kind):
            return rates.get(name, rates.get(kind, RATE))

        self.model = Scratchpad(component.rows, component.tlen, component.vlen)
        for f in fills:
            self.model.fill(f["half"], f["operand"], f["row"], f["chunk"], f["lanes"])
        self.fill = self.source_on("fill", fills, rate("fill", "fill"))
        gate = len(fills)
        self.requests = [self.source_on(port_stream(p, "request"), r,
                                        rate(port_stream(p, "request"), "request"),
                                        after={"fill": [gate] * len(r)})
                         for p, r in enumerate(requests)]
        self.responses = [self.sink_on(port_stream(p, "response"),
                                       rate(port_stream(p, "response"), "response"), len(r))
                          for p, r in enumerate(requests)]
        self.half = RandomHalf(seed) if half == "random" else Static("read_half", half)
        if half != "random":
            for p, r in enumerate(requests):
                self.outputs[port_stream(p, "response")] = [
                    self.model.read(half, **r[n]) for n in range(len(r))]
        self.expect = [deque() for _ in requests]
        self.drivers = [self.half, self.fill, *self.requests, *self.responses]
        if component.nports > 1:
            self.drivers.append(Static("broadcast", int(broadcast)))
        elif broadcast:
            raise ParameterError("a scratchpad of one port has no broadcast")

    def check(self, io, cycle):
        for p, (source, sink) in enumerate(zip(self.requests, self.responses, strict=True)):
            if source.fired is not None:
                self.expect[p].append((source.fired, self.model.read(self.half.value,
                                                                     **source.fired)))
            if sink.fired is not None:
                if not self.expect[p]:
                    self.fail(f"port {p}: a response with no request outstanding")
                request, want = self.expect[p].popleft()
                if sink.fired != want:
                    self.fail(f"port {p}: response {len(sink.received) - 1} to {request} is "
                              f"{sink.fired}, expected {want}")

    def finished(self):
        return all(len(s.received) == s.expected for s in self.responses)

    def result(self):
        return SpmRun(self.cycle, [[v for _, v in s.received] for s in self.responses],
                      [c for c, _ in self.fill.accepted],
                      [[c for c, _ in s.accepted] for s in self.requests],
                      [[c for c, _ in s.received] for s in self.responses])


def simulate(component, fills, requests, seed, half=0, rates=None, engine="pysim",
             work_dir=None, broadcast=False):
    """The :class:`SpmRun` of ``fills`` then ``requests`` (as :class:`SpmBench` takes them)
    on Amaranth's simulator (``engine="pysim"``) or natively on Verilator (``"native"``,
    with ``half`` held)."""
    bench = SpmBench(component, fills, requests, seed, half, rates, broadcast)
    if engine == "native":
        if half == "random":
            raise ParameterError("a native run holds read_half: give 0 or 1")
        done = native.run(bench, work_dir=work_dir)
        return SpmRun(done.cycles, [done.outputs[s.name] for s in bench.responses], [], [],
                      [])
    return pysim(bench)
