# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus matrix store unit (``tensaurus_msu``).

Each drain input streams its drains of every input tile, each tile ended by its ``last``;
the tiles' items (their output tile's base and rows, and whether they close it) come on
their own stream; the write port is taken at random, and every write is checked, as it is
taken, against the model (:class:`sparseforge.sim.models.tensaurus_msu.Msu`) fed the same
tiles, whatever the MSU's ``banks`` (they change when drains are taken, not what is
written). Every stream is gated by nothing but its coin and the sink knows its count, so
the bench runs on Amaranth's simulator and natively on Verilator alike.

In the direct mode the MSU adds each drain to its word in memory: a
:class:`~sparseforge.tb.streams.RamPort` answers its reads with what its writes left,
and the memory the writes leave is checked against the model's
(:func:`sparseforge.sim.models.tensaurus_msu.direct`), with the count of writes.
"""

from dataclasses import dataclass

from ..sim.models import tensaurus_msu as model
from ..sw import wire
from . import native
from .streams import Bench, RamPort, Static

RATE = 0.7
"""Each stream's chance to act on a cycle, by default."""


@dataclass(frozen=True)
class MsuRun:
    """What the MSU wrote: its cycles and every write ``(addr, lanes)``, in order (in the
    direct mode, the read-modify-writes)."""

    cycles: int
    writes: list


def drain_items(runs, pe, vlen):
    """Input ``pe``'s items over ``runs`` (each run an input tile: a list, by input, of
    ``(row, chunk, lanes)``): each tile's drains, then its end marker."""
    items = []
    for run in runs:
        items += [{"row": r, "chunk": c, "lanes": list(lanes), "last": 0}
                  for r, c, lanes in run[pe]]
        items.append({"row": 0, "chunk": 0, "lanes": [0] * vlen, "last": 1})
    return items


def output_tiles(sizes, per=1):
    """``(rows, closes)`` of each input tile of output tiles of ``sizes`` rows, ``per``
    input tiles each."""
    return [(rows, int(n == per - 1)) for rows in sizes for n in range(per)]


def tile_items(component, tiles):
    """``(base, rows, closes)`` of each input tile of ``tiles`` (``(rows, closes)`` pairs):
    each output tile's rows laid in memory after the one before, from address 0."""
    items, base = [], 0
    for rows, closes in tiles:
        items.append((base, rows, closes))
        base += rows * component.chunks if closes else 0
    return items


def expected(component, runs, tiles):
    """The model's writes ``(addr, lanes)`` over ``runs``, input tile ``k`` closed with
    ``tiles[k]`` ``(base, rows, closes)``."""
    msu = model.Msu(component.cols, component.tlen, component.vlen, component.acc_width,
                    component.depth)
    return [w for run, tile in zip(runs, tiles, strict=True) for w in model.run(msu, run, tile)]


class MsuBench(Bench):
    """``runs`` (input tiles, each a list, by input, of ``(row, chunk, lanes)``) through
    ``component``, tile ``k`` closed with ``tiles[k]`` ``(base, rows, closes)``; streams
    act with their chance in ``rates`` (``drains__<i>``, ``tiles``, ``out_mem``,
    ``out_read``; default :data:`RATE`); ``direct`` runs the direct mode."""

    def __init__(self, component, runs, tiles, seed, rates=None, direct=False):
        super().__init__(component, seed)
        n = component.inputs
        names = [f"drains__{i}" for i in range(n)]
        rates = {**dict.fromkeys([*names, "tiles", "out_mem", "out_read"], RATE),
                 **(rates or {})}
        self.direct = direct
        self.sources = [self.source_on(name, drain_items(runs, i, component.vlen),
                                       rates[name])
                        for i, name in enumerate(names)]
        self.tiles = self.source_on("tiles", [{"base": b, "rows": r, "closes": c}
                                              for b, r, c in tiles], rates["tiles"])
        self.drivers = [Static("direct", int(direct)), *self.sources, self.tiles]
        if direct:
            self.memory = {}
            writes = sum(model.direct(component.cols, component.tlen, component.vlen,
                                      component.acc_width, run, tile, self.memory)
                         for run, tile in zip(runs, tiles, strict=True))
            self.sink = self.sink_on("out_mem__request", rates["out_mem"], writes)
            depth = max([b + r * component.chunks for b, r, _ in tiles], default=1)
            self.drivers += [self.sink, RamPort("out_read", "out_mem__request", max(depth, 1),
                                                self.stall("out_read", rates["out_read"]),
                                                self.codecs["out_mem__request"])]
            return
        self.want = expected(component, runs, tiles)
        self.sink = self.sink_on("out_mem__request", rates["out_mem"], len(self.want))
        words = wire.tensaurus_out_words([lanes for _, lanes in self.want] or
                                         [[0] * component.vlen], component.acc_width)
        self.outputs = {"out_mem__request": [{"addr": a, "data": int(w)} for (a, _), w
                                             in zip(self.want, words, strict=False)]}
        self.drivers.append(self.sink)

    def check(self, io, cycle):
        if self.sink.fired is None or self.direct:
            return
        n = len(self.sink.received) - 1
        got = self.write_of(self.sink.fired)
        if n >= len(self.want):
            self.fail(f"out_mem: more than the {len(self.want)} writes expected, {got}")
        if got != self.want[n]:
            self.fail(f"out_mem write {n} is {got}, expected {self.want[n]}")

    def finished(self):
        return len(self.sink.received) == self.sink.expected and self.tiles.done and all(
            s.done for s in self.sources)

    def write_of(self, item):
        """A write's payload (plain Python) as ``(addr, lanes)``."""
        (lanes,) = wire.tensaurus_out_values([item["data"]], self.component.vlen,
                                             self.component.acc_width)
        return item["addr"], tuple(int(v) for v in lanes)

    def from_outputs(self, cycles, outputs):
        writes = [self.write_of(v) for v in outputs["out_mem__request"]]
        if self.direct:
            left = {addr: list(lanes) for addr, lanes in writes}     # the last write wins
            if left != self.memory:
                bad = min(set(left) ^ set(self.memory) or
                          {a for a in left if left[a] != self.memory[a]})
                raise AssertionError(f"out_mem: word {bad} is left {left.get(bad)}, "
                                     f"expected {self.memory.get(bad)}")
        return MsuRun(cycles, writes)


def simulate(component, runs, tiles, seed, rates=None, engine="pysim", work_dir=None,
             direct=False):
    """``(run, bench)``: ``runs`` through ``component`` on ``engine`` (``pysim`` or
    ``native``), closed with ``tiles`` (``(rows, closes)`` pairs, laid out by
    :func:`tile_items`), every write checked against the model; ``direct`` in the direct
    mode."""
    bench = MsuBench(component, runs, tile_items(component, tiles), seed, rates, direct)
    return native.simulate(bench, engine, work_dir), bench
