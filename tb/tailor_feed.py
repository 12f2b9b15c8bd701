"""Testbenches of a tile held in a Tailor, fed by a replaying producer and read by tag.

- :class:`HeldTileBench` drives the ``held_tile`` composite as the accelerator would:
  the producer's pass commands and entries (:func:`~sparseforge.sw.tailor_feed.producer_streams`,
  from the host), and a tagged reader that reads every pass of every tile in index
  order, entry ``n`` tagged ``n % tags`` and only once the answer to read ``n - tags``
  is taken. Every answer must be the tile's entry with its tag, every report the
  host's (:func:`~sparseforge.sw.tailor_feed.tile_report`). Its streams are gated
  only by other streams' counts, so it also runs natively.
- :class:`FeedBench` drives the :class:`~sparseforge.hw.tailor_feed.TailorFeed` alone
  against the Tailor's behavioural model (:mod:`sparseforge.sim.models.tailor`), which
  plays the Tailor and refuses every write or shrink the semantics forbid, and a child
  that reads each pass in order through it; each read must return the tile's entry.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..sim.models.tailor import Tailor as TailorModel
from ..sw.tailor_feed import pass_starts, producer_streams, replay_start, tile_report
from .streams import Bench, Columns

RATE = 0.7
STREAMS = ("passes", "entries", "mem__request", "mem__response", "report")


@dataclass(frozen=True)
class HeldTileRun:
    """A run: its cycles, the reader's answers ``{tag, data}`` and the tiles' reports."""

    cycles: int
    answers: list
    reports: list


def random_tile(rng, length, passes, depth, fifo, width):
    """A tile of ``length`` random entries of ``width`` bits, read ``passes`` times, each
    later pass starting at a random index up to B."""
    base = depth - fifo
    return {"values": [rng.getrandbits(width) for _ in range(length)], "passes": passes,
            "starts": [rng.randint(0, base) for _ in range(passes - 1)]}


def watchdog(transfers, rates):
    """Cycles a run of ``transfers`` (reads and producer items) may take: each stream
    moves on a fraction ``rate`` of the cycles, the producer's and the reader's overlap
    at best and follow each other at worst, with a margin of 2 and the pipelines' fill."""
    return int(4 * transfers / min(rates.values())) + 200


class HeldTileBench(Bench):
    """``tiles`` (dicts of ``values``, ``passes``, optional ``starts``) through the
    ``held_tile`` composite, with random stalls on every stream (``rates`` by name)."""

    def __init__(self, component, tiles, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(STREAMS, RATE), **(rates or {})}
        depth, fifo, tags = component.depth, component.fifo, 1 << len(
            component.mem.request.payload.tag)
        longest = max((len(t["values"]) for t in tiles), default=0)
        if longest > component.tile:
            raise ParameterError(f"a tile of {longest} entries: longer than tile = "
                                 f"{component.tile}")
        commands, entries = producer_streams(tiles, depth, fifo)
        addrs = np.concatenate([np.tile(np.arange(len(t["values"])), t["passes"])
                                for t in tiles] or [np.zeros(0, dtype=np.int64)])
        data = [int(t["values"][i]) for t in tiles
                for _ in range(t["passes"]) for i in range(len(t["values"]))]
        n = np.arange(addrs.size)
        requests = Columns({"addr": addrs, "tag": n % tags})
        self.outputs = {
            "mem__response": [{"tag": int(k) % tags, "data": d}
                              for k, d in zip(n, data, strict=True)],
            "report": [tile_report(len(t["values"]), t["passes"], depth, fifo,
                                   t.get("starts")) for t in tiles],
        }
        self.drivers = [
            self.source_on("passes", Columns(commands), rates["passes"]),
            self.source_on("entries", Columns(entries), rates["entries"]),
            self.source_on("mem__request", requests, rates["mem__request"],
                           after={"mem__response": np.maximum(0, n - tags + 1)}),
            self.sink_on("mem__response", rates["mem__response"], addrs.size),
            self.sink_on("report", rates["report"], len(tiles)),
        ]
        self.max_cycles = watchdog(addrs.size + entries["end"].size, rates)

    def check(self, io, cycle):
        sink = self.streams["mem__response"]
        if sink.fired is not None:
            want = self.outputs["mem__response"][len(sink.received) - 1]
            if sink.fired != want:
                self.fail(f"answer {len(sink.received) - 1}: got {sink.fired}, want {want}")

    def from_outputs(self, cycles, outputs):
        return HeldTileRun(cycles, outputs["mem__response"], outputs["report"])


class FeedBench(Bench):
    """The :class:`~sparseforge.hw.tailor_feed.TailorFeed` ``component`` on the Tailor's
    behavioural model, with a child reading every pass in order (``rates`` for its
    readiness and the producer's streams).

    Each cycle the model says what the Tailor would take: a fill while not full, an
    owfill while full or split (with its ``fifo_credits``), a shrink it allows, and the
    child's read when its element is held (a read presented but absent passes the
    stream, as in hardware). What the feed does is then applied to the model, which
    raises on anything the semantics forbid; each read must return the tile's entry.
    """

    def __init__(self, component, tiles, seed, rates=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("passes", "entries", "tailor", "read"), RATE),
                 **(rates or {})}
        self.model = TailorModel(component.depth, component.fifo)
        commands, entries = producer_streams(tiles, component.depth, component.fifo)
        self.reads = [(i, int(t["values"][i])) for t in tiles for _ in range(t["passes"])
                      for i in range(len(t["values"]))]
        self.reports = [tile_report(len(t["values"]), t["passes"], component.depth,
                                    component.fifo, t.get("starts")) for t in tiles]
        for t in tiles:
            pass_starts(len(t["values"]), t["passes"], component.depth, component.fifo,
                        t.get("starts"))
        self.next_read = 0
        self.tailor_coin = self.stall("tailor", rates["tailor"])
        self.read_coin = self.stall("read", rates["read"])
        self.drivers = [
            self.source_on("passes", Columns(commands), rates["passes"]),
            self.source_on("entries", Columns(entries), rates["entries"]),
            self.sink_on("report", 1.0, len(tiles)),
        ]
        self.max_cycles = watchdog(len(self.reads) + entries["end"].size, rates)
        self.reading = None         # the read presented this cycle

    def finished(self):
        return super().finished() and self.next_read == len(self.reads)

    def step_inputs(self, io):
        super().step_inputs(io)
        m, coin = self.model, self.tailor_coin()
        io.set("tailor__fill__ready", int(coin and not m.split and m.can_fill()))
        io.set("tailor__owfill__ready", int(coin and (m.split or m.backfill
                                                      or m.occupancy == m.depth)))
        io.set("tailor__fifo_credits", m.fifo_credits)
        io.set("shrink__ready", int(coin))
        # The child: its next read, if the feed does not hold it and the model has it.
        self.reading = None
        if self.next_read < len(self.reads) and self.read_coin():
            index = self.reads[self.next_read][0]
            hold = io.get("reads__hold") or (io.get("reads__hold_last")
                                             and index == io.get("reads__last_index"))
            if not hold:
                self.reading = index
        # A read is not taken from the slot an owfill takes on its cycle (as in hardware).
        owfills = io.get("tailor__owfill__valid") and io.get("tailor__owfill__ready")
        served = (self.reading is not None and m.can_access(self.reading)
                  and not (owfills and m._offset(self.reading) == m._victim()))
        io.set("reads__served__valid", int(served))
        io.set("reads__served__payload", self.reading or 0)

    def step_outputs(self, io):
        m = self.model
        ops = {}
        fill = io.get("tailor__fill__valid") and io.get("tailor__fill__ready")
        owfill = io.get("tailor__owfill__valid") and io.get("tailor__owfill__ready")
        if fill:
            ops["fill"] = io.get("tailor__fill__payload")
        if owfill:
            owfill = self.codecs["tailor__owfill"].unpack(io.get("tailor__owfill__payload"))
            ops["owfill"] = (owfill["data"], owfill["last"])
        if io.get("shrink__valid") and io.get("shrink__ready"):
            ops["shrink"] = io.get("shrink__payload")
        if io.get("reads__served__valid"):
            ops["read"] = self.reading
        elif self.reading is not None:
            ops["request"] = self.reading
        if ops.get("owfill") and m.fifo_credits == 0:
            self.fail("an owfill without fifo_credits")
        got = m.step(**ops)
        if "read" in ops:
            index, want = self.reads[self.next_read]
            if got != want:
                self.fail(f"read {self.next_read} of index {index}: got {got:#x}, the "
                          f"tile holds {want:#x}")
            self.next_read += 1
        if set(ops) - {"request"}:
            self.quiet = -1             # the model's side moved: not a deadlock
        super().step_outputs(io)

    def idle(self, io):
        super().idle(io)
        for name in ("tailor__fill__ready", "tailor__owfill__ready", "tailor__fifo_credits",
                     "shrink__ready", "reads__served__valid", "tailor__credit"):
            io.set(name, 0)

    def from_outputs(self, cycles, outputs):
        reports = outputs["report"]
        if reports != self.reports:
            self.fail(f"reports {reports}, the host's {self.reports}")
        return HeldTileRun(cycles, self.next_read, reports)



class TluReadsBench(Bench):
    """The Tensaurus TLU reading tiles held in a Tailor: ``component`` has the TLU's
    ``start`` and ``lanes`` and the held tile's ``passes``, ``entries`` and ``report``,
    the TLU's ``mem`` joined to the held tile's, and the Tailor's ``depth``, ``fifo``
    and ``tile``.

    ``tiles`` are lists of CISS streams (:class:`~sparseforge.sw.ciss.Ciss`, the input
    tiles, each entry one word), each tile with its ``passes``; a later pass re-runs from
    the input tile that holds index B. Per pass and input tile the TLU starts at the
    input tile's offset in the tile; each row must get its lane of every entry and each
    start's end marker, as from memory
    (:func:`~sparseforge.tb.tensaurus_tlu.stream_lanes`).
    """

    def __init__(self, component, tiles, passes, seed, rates=None):
        from .tensaurus_tlu import stream_lanes

        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "passes", "entries", "lanes", "report"), RATE),
                 **(rates or {})}
        depth, fifo = component.depth, component.fifo
        held, starts, lanes = [], [], [[] for _ in component.lanes]
        for blocks, count in zip(tiles, passes, strict=True):
            counts = [b.entries for b in blocks]
            start = replay_start(counts, depth, fifo)
            held.append({"values": [int(w[0]) for b in blocks for w in b.words],
                         "passes": count,
                         "starts": None if start is None else [start] * (count - 1)})
            offsets = np.cumsum(counts) - counts
            for _ in range(count):
                for b, base in zip(blocks, offsets, strict=True):
                    starts.append({"base": int(base), "count": b.entries, "dense": 0,
                                   "jn": 0, "kn": 0})
                    for p, row in enumerate(lanes):
                        columns = stream_lanes(b, p)
                        row += [dict(zip(columns, map(int, item), strict=True))
                                for item in zip(*columns.values(), strict=True)]
        longest = max((len(t["values"]) for t in held), default=0)
        if longest > component.tile:
            raise ParameterError(f"a tile of {longest} entries: longer than tile = "
                                 f"{component.tile}")
        commands, entries = producer_streams(held, depth, fifo)
        self.outputs = {**{f"lanes__{p}": row for p, row in enumerate(lanes)},
                        "report": [tile_report(len(t["values"]), t["passes"], depth, fifo,
                                               t["starts"]) for t in held]}
        self.drivers = [
            self.source_on("start", starts, rates["start"]),
            self.source_on("passes", Columns(commands), rates["passes"]),
            self.source_on("entries", Columns(entries), rates["entries"]),
            *(self.sink_on(f"lanes__{p}", rates["lanes"], len(row))
              for p, row in enumerate(lanes)),
            self.sink_on("report", rates["report"], len(held)),
        ]
        self.max_cycles = watchdog(sum(map(len, lanes)) + entries["end"].size, rates)

    def from_outputs(self, cycles, outputs):
        for name, want in self.outputs.items():
            if outputs[name] != want:
                self.fail(f"{name}: {len(outputs[name])} items, not the {len(want)} expected"
                          if len(outputs[name]) != len(want) else f"{name} differs")
        return HeldTileRun(cycles, [outputs[f"lanes__{p}"] for p in range(
            len(self.component.lanes))], outputs["report"])
