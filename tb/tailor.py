"""Testbench for the Tailor: directed programs and overbooked tiles, checked every cycle.

Two ways to drive it, one scoreboard:

- :class:`ProgramBench` runs a list of operations strictly in order, each
  one presented only after the one before it was accepted: the paper's Fig. 5
  sequence, and other directed cases.
- :class:`TileBench` plays a parent and a child over a series of tiles, as
  an accelerator would. The parent fills each tile; when it overbooks, it
  streams the bumped part once per pass of the child with ``owfill``, at full
  speed but never beyond ``fifo_credits`` (all ``F`` for the owfill that
  backfills), following the Tailor's state as a parent's address generator
  would. The child reads each pass in index order (a random subset that
  always includes the tile's last element), may free the head of the tile
  between passes with a partial shrink, and ends the tile with a shrink of
  the whole buffer. A tile that overbooks starts on an empty buffer.

Every cycle the accepted operations, and the index of a read presented but
not accepted, go to the model (:class:`sparseforge.sim.models.tailor.Tailor`),
which rejects illegal ones; occupancy, credits, ``fifo_credits`` and every
read response are compared with it, and each response also with the tile's
true element at that index.
"""

from collections import deque

from amaranth.utils import ceil_log2

from ..sim.models.tailor import Tailor as TailorModel
from ..sim.runners import cocotb_test
from .streams import Bench, LazySource, StreamSink, StreamSource

FILL, OWFILL, READ, UPDATE, SHRINK = "fill", "owfill", "read", "update", "shrink"
PORTS = (FILL, OWFILL, READ, UPDATE, SHRINK)


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


class TailorBench(Bench):
    """The scoreboard; subclasses build ``self.sources`` from their scenario."""

    def __init__(self, depth, fifo, width, tile, seed, rates=None):
        super().__init__(seed)
        self.rates = {**dict.fromkeys(PORTS, 0.7), "read_data": 0.7, **(rates or {})}
        self.depth, self.fifo, self.width = depth, fifo, width
        self.index_bits = ceil_log2(tile)
        self.model = TailorModel(depth, fifo)
        self.expected = deque()          # (model's value, the tile's true value) per read
        self.truth = []                  # per read item: the true value, or None
        self.responses = 0
        self.reads = 0
        self.last_shrink = 0
        self.fifo_credits = 0
        self.sources = {}
        self.sink = StreamSink("read_data", self.stall(self.rates["read_data"]))

    def owfill_payload(self, value, last):
        return value | int(last) << self.width

    def update_payload(self, index, value):
        return index | value << self.index_bits

    def check(self, io, cycle):
        model = self.model
        for name, want in (("occupancy", model.occupancy), ("credit", self.last_shrink),
                           ("fifo_credits", model.fifo_credits)):
            if io.get(name) != want:
                self.fail(f"{name} {io.get(name)} != model {want}")
        self.fifo_credits = model.fifo_credits
        if self.sink.fired is not None:
            if not self.expected:
                self.fail(f"read response {self.sink.fired:#x} with no read outstanding")
            want, true = self.expected.popleft()
            if self.sink.fired != want:
                self.fail(f"read response {self.responses}: got {self.sink.fired:#x}, "
                          f"model says {want:#x}")
            if true is not None and self.sink.fired != true:
                self.fail(f"read response {self.responses}: got {self.sink.fired:#x}, "
                          f"the tile holds {true:#x}")
            self.responses += 1

        src = self.sources
        owfill = src[OWFILL].fired
        if owfill is not None:
            owfill = (owfill & ((1 << self.width) - 1), owfill >> self.width)
        update = src[UPDATE].fired
        if update is not None:
            update = (update & ((1 << self.index_bits) - 1), update >> self.index_bits)
        read = src[READ].fired
        request = None
        if read is None and src[READ].presenting:
            request = src[READ].items[src[READ].next]
        try:
            data = model.step(fill=src[FILL].fired, owfill=owfill, read=read, request=request,
                              update=update, shrink=src[SHRINK].fired)
        except AssertionError as exc:
            self.fail(f"design accepted an illegal operation: {exc}")
        if read is not None:
            self.expected.append((data, self.truth[src[READ].next - 1]))
        self.last_shrink = src[SHRINK].fired or 0

    def finished(self):
        return all(s.done for s in self.sources.values()) and self.responses == self.reads

    def transfers(self):
        """Parent-to-buffer transfers: accepted fills and overwriting fills."""
        return len(self.sources[FILL].accepted) + len(self.sources[OWFILL].accepted)


class ProgramBench(TailorBench):
    """Runs ``program`` (``(kind, arg)`` pairs) strictly in order.

    ``arg`` is a value for fill, ``(value, last)`` for owfill, an index for
    read, ``(index, value)`` for update and a count for shrink.
    """

    def __init__(self, depth, fifo, width, tile, program, seed, rates=None):
        super().__init__(depth, fifo, width, tile, seed, rates)
        streams = {kind: [] for kind in PORTS}
        order = {kind: [] for kind in PORTS}     # per item: its place in the program
        for n, (kind, arg) in enumerate(program):
            if kind == OWFILL:
                arg = self.owfill_payload(*arg)
            elif kind == UPDATE:
                arg = self.update_payload(*arg)
            streams[kind].append(arg)
            order[kind].append(n)
        self.truth = [None] * len(streams[READ])
        self.program = program
        for kind in PORTS:
            self.sources[kind] = StreamSource(kind, streams[kind], self.stall(self.rates[kind]),
                                              gate=self._after_previous(order[kind]))
        self.reads = len(streams[READ])
        self.drivers = [*self.sources.values(), self.sink]

    def _after_previous(self, places):
        def gate(n):
            done = sum(len(s.accepted) for s in self.sources.values())
            return done == places[n]
        return gate


class TileBench(TailorBench):
    """A parent and a child working through ``tiles`` (see :func:`random_tiles`)."""

    def __init__(self, depth, fifo, width, tile, tiles, seed, rates=None):
        super().__init__(depth, fifo, width, tile, seed, rates)
        self.tiles = tiles
        self.values = []
        fills, reads, shrinks = [], [], []
        self.fill_tile, self.fills_before = [], []
        self.read_after, self.shrink_after = [], []   # child program order
        for t, spec in enumerate(tiles):
            length = spec["length"]
            if length > 1 << self.index_bits:
                raise ValueError(f"tile of {length} elements exceeds the Tailor's tile size")
            values = spec.get("values") or [self.rng.getrandbits(width) for _ in range(length)]
            self.values.append(values)
            fills += values[:depth]
            self.fill_tile += [t] * min(length, depth)
            self.fills_before.append(len(fills))
            gone = 0
            for k, indices in enumerate(spec["reads"]):
                for i in indices:
                    reads.append(i)
                    self.truth.append(values[i + gone])
                    self.read_after.append(len(shrinks))
                count = spec.get("shrinks", {}).get(k) if k < spec["passes"] - 1 else None
                if count:
                    shrinks.append((t, count))
                    self.shrink_after.append(len(reads))
                    gone += count
            shrinks.append((t, None))                  # the whole buffer: ends the tile
            self.shrink_after.append(len(reads))
        self.shrink_plan = shrinks
        self.lasts = [0] * len(tiles)        # passes of each tile the parent has streamed
        self.gone = [0] * len(tiles)         # elements the child has shrunk, per tile
        self._ends = 0

        self.sources = {
            FILL: StreamSource(FILL, fills, self.stall(self.rates[FILL]), gate=self._fill_gate),
            READ: StreamSource(READ, reads, self.stall(self.rates[READ]), gate=self._read_gate),
            SHRINK: LazySource(SHRINK, self._shrink_payload, self.stall(self.rates[SHRINK]),
                               self._shrink_gate, lambda: self.tiles_done == len(tiles)),
            OWFILL: LazySource(OWFILL, self._owfill_payload, self.stall(self.rates[OWFILL]),
                               self._owfill_gate, lambda: self.tiles_done == len(tiles)),
            UPDATE: StreamSource(UPDATE, [], self.stall(self.rates[UPDATE])),
        }
        self.reads = len(reads)
        self.drivers = [*self.sources.values(), self.sink]

    @property
    def tiles_done(self):
        """Tiles the child has ended with its last shrink."""
        return self._ends

    # -- the child ----------------------------------------------------------------

    def _read_gate(self, n):
        return len(self.sources[SHRINK].accepted) >= self.read_after[n]

    def _shrink_gate(self, n):
        return len(self.sources[READ].accepted) >= self.shrink_after[n]

    def _shrink_payload(self):
        count = self.shrink_plan[len(self.sources[SHRINK].items)][1]
        return self.model.occupancy if count is None else count

    # -- the parent ---------------------------------------------------------------

    def _fill_gate(self, n):
        return self.tiles_done >= self.fill_tile[n]

    def _streaming(self):
        """The tile whose bumped part the parent streams now, or ``None``."""
        t = self.tiles_done
        if t >= len(self.tiles) or len(self.sources[FILL].accepted) < self.fills_before[t]:
            return None
        spec, model = self.tiles[t], self.model
        if spec["length"] <= self.depth or self.lasts[t] == spec["passes"]:
            return None
        fits = spec["length"] - self.gone[t] <= self.depth
        if self.lasts[t] and fits and not (model.split or model.backfill):
            return None
        return t

    def _owfill_gate(self, n):
        if self._streaming() is None:
            return False
        # The level sampled last cycle, less the owfill it may have paid for.
        credits = self.fifo_credits - (self.sources[OWFILL].fired is not None)
        return credits >= (self.fifo if self.model.rejoin_next else 1)

    def _owfill_payload(self):
        # The model stands in for the parent's own copy of the Tailor's state.
        t = self._streaming()
        index = self.model.next_owfill_index() + self.gone[t]
        last = index == self.tiles[t]["length"] - 1
        self.lasts[t] += last
        return self.owfill_payload(self.values[t][index], last)

    def check(self, io, cycle):
        super().check(io, cycle)
        fired = self.sources[SHRINK].fired
        if fired is not None:
            t, count = self.shrink_plan[len(self.sources[SHRINK].accepted) - 1]
            if count is None:
                self._ends += 1
            else:
                self.gone[t] += count


def _tile_args(args, params):
    import random

    from ..sim.runners import seed_from_env

    seed = seed_from_env(args.get("seed", 1))
    tiles = args.get("tiles") or random_tiles(
        random.Random(seed), params["depth"], params["fifo"],
        args.get("ratios", [0.5, 1, 1.5, 2, 4]), args.get("passes", 3), args.get("skip", 0.2),
        args.get("shrink", 0.3))
    return seed, tiles


async def _run_tiles(dut):
    import json

    from ..sim.runners import cocotb_args, cocotb_loop

    params, args = cocotb_args()
    seed, tiles = _tile_args(args, params)
    bench = TileBench(params["depth"], params["fifo"], params["width"], params["tile"], tiles,
                      seed, args.get("rates"))
    cycles = await cocotb_loop(dut, bench)
    dut._log.info("tailor: %d tiles in %d cycles, %d reads checked, %d transfers", len(tiles),
                  cycles, bench.responses, bench.transfers())
    if args.get("dump"):
        with open(args["dump"], "w") as f:
            json.dump({"cycles": cycles, "transfers": bench.transfers(),
                       "fills": len(bench.sources[FILL].accepted),
                       "owfills": len(bench.sources[OWFILL].accepted),
                       "reads": bench.responses,
                       "read_data": [v for _, v in bench.sink.received],
                       "read_cycles": [c for c, _ in bench.sources[READ].accepted],
                       "read_indices": [i for _, i in bench.sources[READ].accepted]}, f)


@cocotb_test
async def overbooked_tiles(dut):
    """Tiles from half to four times the capacity, several passes, random stalls."""
    await _run_tiles(dut)
