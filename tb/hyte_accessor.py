"""Testbench of the HYTE tensor accessor (``hyte_accessor``): programs of segments,
fills, reads, evicts and tiles to count, checked every cycle against the model.

A *program* is a list of ``(port, item)`` legal in program order. Each port's items
wait for the earlier items of the ports in :data:`WAITS_FOR` (a parent and child
keeping order across ports the accessor cannot see across): a read is relative to
the head, so it waits for earlier evicts; an evict waits for earlier reads, segments
and fills; segments and fills wait for earlier evicts, so which words bypass in
buffering mode does not depend on the stalls; a tile waits for the segments and fills
before it, and a segment for the tiles before it, so each tile counts its own. The
answers and counts are then known up front (the model in program order), and the bench
runs natively as well.
"""

from collections import deque
from dataclasses import dataclass

from ..sim.models.hyte_accessor import Accessor
from ..sim.models.hyte_controller import counts_dict
from ..sim.runners import pysim
from ..sw.wire import HyteMode
from . import native
from .streams import Bench, Static

PORTS = ("segment", "fill", "read", "evict", "tile")
WAITS_FOR = {"segment": ("evict", "tile"), "fill": ("evict",), "read": ("evict",),
             "evict": ("read", "segment", "fill"), "tile": ("segment", "fill")}


@dataclass(frozen=True)
class AccessorRun:
    cycles: int
    answers: list          # every read_data payload, in order
    counts: list           # every counts payload, in order
    accepted: dict         # port -> cycles its items were taken on


def random_program(rng, capacity, mode, n_ops, width=8, coord_width=4):
    """A random program of about ``n_ops`` operations, legal in program order.

    Segments of 0 to ``capacity - 1`` words in streaming mode (a longer one could
    never complete), up to twice the capacity in buffering mode, where tiles of a few
    segments overflow now and then and are evicted whole after their reads. Now and
    then a tile of up to 4 rows is counted, split anywhere (at its edges included).
    """
    model = Accessor(capacity, mode, coord_width=coord_width)
    program = []
    longest = capacity - 1 if mode == HyteMode.STREAMING else 2 * capacity
    while len(program) < n_ops:
        roll = rng.random()
        held = model.occupancy
        if model.can_tile() and rng.random() < 0.1:
            rows = rng.randint(0, 4)
            tile = (rows, rng.randint(0, rows), rng.randrange(1 << coord_width))
            model.tile(*tile)
            program.append(("tile", tile))
            continue
        if held and roll < 0.3:
            s = rng.randrange(held)
            offset = rng.randrange(model.segments[s].length + 2)
            if model.read(s, offset) is not None:
                program.append(("read", (s, offset)))
                continue
        if model.open is not None:
            if model.can_fill():
                word = rng.getrandbits(width)
                model.fill(word)
                program.append(("fill", word))
                continue
        elif roll < 0.75 and model.can_segment():
            length = rng.choice((0, 1, rng.randint(0, longest)))
            model.segment(length)
            program.append(("segment", length))
            continue
        complete = model.complete_count()
        if mode == HyteMode.STREAMING or roll > 0.97 or not model.can_segment():
            n = complete if rng.random() < 0.3 else rng.randint(0, min(complete, 3))
            model.evict(n)
            program.append(("evict", n))
    return program


def answers(program, capacity, mode, coord_width):
    """``(answers, counts)``: the answer to every read of ``program`` and every tile's
    counts, as payloads, the model run in program order."""
    model = Accessor(capacity, mode, coord_width=coord_width)
    out = []
    for port, item in program:
        if port == "read":
            status, data, last = model.read(*item)
            out.append({"data": data, "status": status, "last": int(last)})
        elif port == "tile":
            model.tile(*item)
        else:
            getattr(model, port)(item)
    return out, [counts_dict(c) for c in model.counts]


class AccessorBench(Bench):
    """Runs ``program`` on ``component`` with ``capacity`` and ``mode`` held."""

    def __init__(self, component, program, capacity, mode, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys((*PORTS, "read_data", "counts"), 0.7), **(rates or {})}
        self.model = Accessor(capacity, mode, (1 << component.count_width) - 1,
                              component.coord_width)
        self.sources = {}
        for port in PORTS:
            items = [item for p, item in program if p == port]
            if port == "read":
                items = [{"segment": s, "offset": o} for s, o in items]
            elif port == "tile":
                items = [dict(zip(("rows", "split_k", "split_j"), t, strict=True))
                         for t in items]
            after = {other: _before(program, port, other) for other in WAITS_FOR[port]}
            self.sources[port] = self.source_on(port, items, rates[port], after)
        read_data, counts = answers(program, capacity, mode, component.coord_width)
        self.outputs = {"read_data": read_data, "counts": counts}
        self.sink = self.sink_on("read_data", rates["read_data"], len(read_data))
        self.counts = self.sink_on("counts", rates["counts"], len(counts))
        self.pending = deque()      # [ident, offset, answer or None] of reads taken
        self.evicted = False        # an evict was taken on the previous cycle
        self.drivers = [Static("mode", mode), Static("capacity", capacity),
                        *self.sources.values(), self.sink, self.counts]

    def compare(self, io):
        """The design's outputs against the model's, at the start of this cycle."""
        want = {"occupancy": self.model.occupancy, "bypass": int(self.model.bypass)}
        if not self.evicted:
            want["free"] = self.model.free
        for name, value in want.items():
            if io.get(name) != value:
                self.fail(f"{name} {io.get(name)} != model {value}")

    def check(self, io, cycle):
        self.compare(io)
        fired = {port: source.fired for port, source in self.sources.items()}
        if fired["read"] is not None:
            fired["read"] = (fired["read"]["segment"], fired["read"]["offset"])
        if fired["tile"] is not None:
            fired["tile"] = tuple(fired["tile"].values())
        evict = fired.pop("evict")
        try:
            ident = self.model.step(**fired)
            if ident is not None:
                self.pending.append([ident, fired["read"][1], None])
            for item in self.pending:
                if item[2] is None:
                    item[2] = self.model.answer(item[0], item[1])
            if evict is not None:
                if any(p[2] is None for p in self.pending):
                    self.fail("evict taken while a read waits for its answer")
                self.model.step(evict=evict)
        except AssertionError as exc:
            self.fail(f"design accepted an illegal operation: {exc}")
        self.evicted = evict is not None
        if self.sink.fired is not None:
            if not self.pending or self.pending[0][2] is None:
                self.fail(f"answer {self.sink.fired} before the model knows it")
            status, data, last = self.pending.popleft()[2]
            if self.sink.fired != {"data": data, "status": status, "last": int(last)}:
                self.fail(f"answer {self.sink.fired}, model says {(status, data, last)}")
        if self.counts.fired is not None:
            if not self.model.counts:
                self.fail(f"counts {self.counts.fired} before the model's tile is complete")
            want = counts_dict(self.model.counts.pop(0))
            if self.counts.fired != want:
                self.fail(f"counts {self.counts.fired}, model says {want}")

    def finished(self):
        return all(s.done for s in self.sources.values()) and all(
            len(s.received) == s.expected for s in (self.sink, self.counts))

    def result(self):
        return AccessorRun(self.cycle, [v for _, v in self.sink.received],
                           [v for _, v in self.counts.received],
                           {p: [c for c, _ in s.accepted] for p, s in self.sources.items()})


def _before(program, port, other):
    """For each item of ``port``, how many items of ``other`` come before it."""
    seen, out = 0, []
    for p, _ in program:
        if p == other:
            seen += 1
        elif p == port:
            out.append(seen)
    return out


def simulate(component, program, capacity, mode, seed, rates=None, engine="pysim",
             work_dir=None):
    """``(answers, bench)``: ``program`` through ``component`` on either simulator."""
    bench = AccessorBench(component, program, capacity, mode, seed, rates)
    if engine == "native":
        done = native.run(bench, work_dir=work_dir)
        return done.outputs["read_data"], bench
    return pysim(bench).answers, bench
