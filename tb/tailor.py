"""Testbench for the Tailor: directed programs and overbooked tiles, checked every cycle.

Two ways to drive it, one scoreboard (:class:`TailorScoreboard`, the Buffet's
extended with the FIFO region's ports):

- :class:`ProgramBench` runs a list of operations strictly in order, each
  one presented only after the one before it was accepted: the paper's Fig. 5
  sequence, and other directed cases.
- :class:`TileBench` plays a parent and a child over a series of tiles, as
  an accelerator would. The parent (:class:`TailorParent`) is written from
  the protocol alone (README, "Driving a Tailor"), not from the model that
  checks the design: it fills each tile and, when it overbooks, streams the
  bumped part once per pass with ``owfill`` within ``fifo_credits``, learning
  the child's shrinks from ``credit``. The child reads each pass in index
  order (a random subset that always includes the tile's last element), may
  free the head of the tile between passes with a partial shrink, and ends
  the tile with a shrink of the whole buffer.

Every cycle the accepted operations, and the index of a read presented but
not accepted, go to the model (:class:`sparseforge.sim.models.tailor.Tailor`),
which rejects illegal ones; occupancy, credits, ``fifo_credits`` and every
read response are compared with it, and each response also with the tile's
true element at that index.
"""

from dataclasses import dataclass

from ..sim.models.tailor import Tailor as TailorModel
from ..sim.runners import cocotb_run, cocotb_test
from .buffet import FILL, READ, SHRINK, UPDATE, BufferResult, BuffetScoreboard

OWFILL = "owfill"


@dataclass(frozen=True)
class TailorResult(BufferResult):
    """A buffer's result, and the overwriting fills the parent sent."""

    owfills: int

    @property
    def transfers(self):
        """Parent-to-buffer transfers: accepted fills and overwriting fills."""
        return self.fills + self.owfills


def random_tiles(rng, depth, fifo, ratios, passes, skip=0.0, shrink=0.0):
    """Tiles of occupancy ``ratio * depth`` for each ratio, each read ``passes`` times.

    ``skip`` is the chance the child skips an element in a pass (never the
    last); ``shrink`` the chance it frees up to ``(depth - fifo) / 4`` elements
    from the head after a pass (at most twice per tile). Returns dicts with
    ``length``, ``passes``, ``reads`` (one index list per pass, indices as
    they are after the earlier shrinks) and ``shrinks`` (pass -> count); a
    tile may also carry its ``values`` (else the bench draws them).
    """
    tiles = []
    most = max(1, (depth - fifo) // 4)
    for ratio in ratios:
        length = max(1, round(ratio * depth))
        shrinks, reads, gone = {}, [], 0
        for k in range(passes):
            left = length - gone
            reads.append([i for i in range(left) if i == left - 1 or rng.random() >= skip])
            if k < passes - 1 and len(shrinks) < 2 and left > most and rng.random() < shrink:
                shrinks[k] = rng.randint(1, most)
                gone += shrinks[k]
        tiles.append({"length": length, "passes": passes, "reads": reads, "shrinks": shrinks})
    return tiles


class TailorScoreboard(BuffetScoreboard):
    """The Buffet's scoreboard with the Tailor's ports: ``owfill``, ``fifo_credits``.

    Besides the model's answer, each read response is checked against the
    tile's true element where the bench knows it (``self.truth``, per read).
    """

    PORTS = (FILL, OWFILL, READ, UPDATE, SHRINK)

    def __init__(self, component, seed, rates=None):
        super().__init__(component, TailorModel(component.depth, component.fifo), seed, rates)
        self.fifo = component.fifo
        self.truth = []

    def compare(self, io):
        super().compare(io)
        if io.get("fifo_credits") != self.model.fifo_credits:
            self.fail(f"fifo_credits {io.get('fifo_credits')} != model {self.model.fifo_credits}")

    def operations(self):
        ops = super().operations()
        if ops[OWFILL] is not None:
            ops[OWFILL] = (ops[OWFILL]["data"], ops[OWFILL]["last"])
        read = self.sources[READ]
        if read.fired is None and read.presenting:     # a stalled read passes the stream too
            ops["request"] = read.items[read.next]
        return ops

    def expect(self, data):
        super().expect((data, self.truth[self.sources[READ].next - 1]))

    def respond(self, got, want):
        want, true = want
        super().respond(got, want)
        if true is not None and got != true:
            self.fail(f"read response {self.responses}: got {got:#x}, the tile holds {true:#x}")

    def result(self):
        return TailorResult(**vars(super().result()),
                            owfills=len(self.sources[OWFILL].accepted))


class ProgramBench(TailorScoreboard):
    """Runs ``program`` (``(kind, arg)`` pairs) strictly in order.

    ``arg`` is a value for fill, ``(value, last)`` for owfill, an index for
    read, ``(index, value)`` for update and a count for shrink.
    """

    def __init__(self, component, program, seed, rates=None):
        super().__init__(component, seed, rates)
        streams = {kind: [] for kind in self.PORTS}
        order = {kind: [] for kind in self.PORTS}     # per item: its place in the program
        for n, (kind, arg) in enumerate(program):
            if kind == OWFILL:
                arg = {"data": arg[0], "last": int(arg[1])}
            elif kind == UPDATE:
                arg = {"index": arg[0], "data": arg[1]}
            streams[kind].append(arg)
            order[kind].append(n)
        self.truth = [None] * len(streams[READ])
        for kind in self.PORTS:
            self.sources[kind] = self.source_on(kind, streams[kind], self.rates[kind],
                                                gate=self._after_previous(order[kind]))
        self.reads = len(streams[READ])
        self.drivers = [*self.sources.values(), self.sink]

    def _after_previous(self, places):
        def gate(n):
            done = sum(len(s.accepted) for s in self.sources.values())
            return done == places[n]
        return gate


class TailorParent:
    """A Tailor's parent, from the protocol alone: fills each tile, streams its bumped part.

    It knows the tiles (``(length, passes, values)`` each) and learns the
    rest from the ports, as a parent's address generator would: the fills and
    overwriting fills the Tailor accepted, ``credit`` (a shrink's count: a
    shrink of everything held ends the tile, a smaller one is the child's
    partial shrink) and ``fifo_credits``. Indices here are the tile's own
    (before any shrink). Per tile:

    - FILLING: the first ``min(L, D)`` elements, once the previous tile ended.
    - FULL: the buffer is full and the tile continues; the next ``owfill``
      (index ``gone + D``) splits it; the bumped part starts at ``gone + B``.
    - SPLIT: ``owfill`` the next index, wrapping from ``L - 1`` to the first
      bumped index, ``last`` on ``L - 1``. A wrap after a partial shrink
      backfills (the Tailor learns of the shrink before the parent does, so
      the parent decides which it was when the owfill is accepted, and
      sends every wrap only with all ``F`` credits).
    - BACKFILL: owfills append the next indices until the buffer is full
      (FULL again) or ``last`` leaves the tile fitting (FITS).
    - FITS: nothing more to stream; the child reads the buffet.

    One stream per pass of the child: streaming ends after ``passes``
    owfills marked ``last``.
    """

    FILLING, FULL, SPLIT, BACKFILL, FITS = "filling", "full", "split", "backfill", "fits"

    def __init__(self, bench, tiles, rates):
        self.depth, self.fifo = bench.depth, bench.fifo
        self.base = self.depth - self.fifo
        self.tiles = tiles
        fills, self.fill_tile = [], []
        for t, (length, _passes, values) in enumerate(tiles):
            fills += values[:min(length, self.depth)]
            self.fill_tile += [t] * min(length, self.depth)
        self.tile = 0
        self.credits = 0            # owfills allowed on this cycle
        self._start_tile()
        self.fill = bench.source_on(FILL, fills, rates[FILL],
                                    gate=lambda n: self.fill_tile[n] == self.tile)
        self.owfill = bench.lazy_source_on(OWFILL, self._produce, rates[OWFILL],
                                           self._may_owfill, self._ended)

    def _start_tile(self):
        self.mode, self.filled, self.gone, self.held, self.lasts = self.FILLING, 0, 0, 0, 0
        self.newest = self.bump_start = self.gone_at_split = self.sending = None

    def _ended(self):
        return self.tile == len(self.tiles)

    @property
    def _length(self):
        return self.tiles[self.tile][0]

    def _next_index(self):
        if self.mode == self.FULL:
            return self.gone + self.depth
        if self.mode == self.SPLIT and self.newest == self._length - 1:
            return self.bump_start
        return self.newest + 1

    def _may_owfill(self, n):
        if self.mode not in (self.FULL, self.SPLIT, self.BACKFILL):
            return False
        if self.lasts == self.tiles[self.tile][1]:
            return False
        wraps = self.mode == self.SPLIT and self.newest == self._length - 1
        return self.credits >= (self.fifo if wraps else 1)

    def _produce(self):
        self.sending = self._next_index()
        return {"data": self.tiles[self.tile][2][self.sending],
                "last": int(self.sending == self._length - 1)}

    def observe(self, io):
        """Follow this cycle's handshakes (called after sampling, every cycle)."""
        credit = io.get("credit")           # the shrink accepted on the previous cycle
        if credit:
            self._shrunk(credit)
        if self.fill.fired is not None:
            self.filled += 1
            self.held += 1
            if self.filled == min(self._length, self.depth):
                self.mode = self.FULL if self._length > self.depth else self.FITS
        if self.owfill.fired is not None:
            self._owfilled(self.sending, self.sending == self._length - 1)
        # The level the design shows on this cycle, less the owfill it pays for.
        self.credits = io.get("fifo_credits") - (self.owfill.fired is not None)

    @property
    def holds(self):
        """The elements the buffer holds, as the parent knows it (D while split)."""
        return self.depth if self.mode == self.SPLIT else self.held

    def _shrunk(self, count):
        if count == self.holds:
            self.tile += 1                  # the child freed everything: the tile ended
            if not self._ended():
                self._start_tile()
            return
        self.gone += count
        if self.mode != self.SPLIT:
            self.held -= count

    def _owfilled(self, index, last):
        if self.mode == self.FULL:
            self.mode, self.held = self.SPLIT, self.depth
            self.bump_start, self.gone_at_split = self.gone + self.base, self.gone
        elif self.mode == self.SPLIT and index == self.bump_start and self.newest == (
                self._length - 1) and self.gone != self.gone_at_split:
            self.mode, self.held = self.BACKFILL, index + 1 - self.gone
        elif self.mode == self.BACKFILL:
            self.held += 1
        self.newest = index
        self.lasts += last
        if self.mode == self.BACKFILL and last:
            self.mode = self.FITS
        elif self.mode == self.BACKFILL and self.held == self.depth:
            self.mode = self.FULL


class TileBench(TailorScoreboard):
    """A parent and a child working through ``tiles`` (see :func:`random_tiles`)."""

    def __init__(self, component, tiles, seed, rates=None):
        super().__init__(component, seed, rates)
        depth, values = self.depth, []
        reads, shrinks = [], []
        self.read_after, self.shrink_after = [], []   # child program order
        for spec in tiles:
            length = spec["length"]
            if length > 1 << len(component.read.payload):
                raise ValueError(f"tile of {length} elements exceeds the Tailor's tile size")
            tile = spec.get("values") or [self.rng.getrandbits(component.width)
                                          for _ in range(length)]
            values.append(tile)
            gone = 0
            for k, indices in enumerate(spec["reads"]):
                for i in indices:
                    reads.append(i)
                    self.truth.append(tile[i + gone])
                    self.read_after.append(len(shrinks))
                count = spec.get("shrinks", {}).get(k) if k < spec["passes"] - 1 else None
                if count:
                    shrinks.append(count)
                    self.shrink_after.append(len(reads))
                    gone += count
            shrinks.append(min(length - gone, depth))   # the whole buffer: ends the tile
            self.shrink_after.append(len(reads))

        self.parent = TailorParent(self, [(s["length"], s["passes"], v)
                                          for s, v in zip(tiles, values, strict=True)],
                                   self.rates)
        self.sources = {
            FILL: self.parent.fill,
            OWFILL: self.parent.owfill,
            READ: self.source_on(READ, reads, self.rates[READ], gate=self._read_gate),
            SHRINK: self.source_on(SHRINK, shrinks, self.rates[SHRINK],
                                   gate=self._shrink_gate),
            UPDATE: self.source_on(UPDATE, [], self.rates[UPDATE]),
        }
        self.reads = len(reads)
        self.drivers = [*self.sources.values(), self.sink]

    @property
    def tiles_done(self):
        """Tiles the parent has seen end."""
        return self.parent.tile

    def _read_gate(self, n):
        return len(self.sources[SHRINK].accepted) >= self.read_after[n]

    def _shrink_gate(self, n):
        return len(self.sources[READ].accepted) >= self.shrink_after[n]

    def check(self, io, cycle):
        super().check(io, cycle)
        self.parent.observe(io)


def _tile_bench(component, args, seed):
    """The tiles in the arguments, or random ones (``ratios``, ``passes``, ``skip``, ``shrink``)."""
    import random

    tiles = args.get("tiles") or random_tiles(
        random.Random(seed), component.depth, component.fifo,
        args.get("ratios", [0.5, 1, 1.5, 2, 4]), args.get("passes", 3), args.get("skip", 0.2),
        args.get("shrink", 0.3))
    return TileBench(component, tiles, seed, args.get("rates"))


@cocotb_test
async def overbooked_tiles(dut):
    """Tiles from half to four times the capacity, several passes, random stalls."""
    await cocotb_run(dut, _tile_bench)
