# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus TLU (``tensaurus_tlu``) and the memory it reads: CISS
streams in a memory image that answers reads out of order.

By default (``memory="random"``) the memory's responses are the reads' answers in a
random order that never runs more than a window ahead of the reads (each offered only
once its read has been made, and then at random): :func:`out_of_order`. The composite's
bench (:mod:`sparseforge.tb.tensaurus`) uses the same memory. With ``memory="dram"`` the
streams sit in a DDR4 memory (:mod:`sparseforge.tb.dram`) that answers each read when
its bank, refresh and data bus let it.
"""

from dataclasses import dataclass

import numpy as np

from ..core.errors import ParameterError
from ..sw import wire
from ..sw.tensaurus_job import DenseStream
from . import native
from .dram import DramPort
from .streams import Bench
from .tensaurus_pe import lane_items

RATE = 0.7


def out_of_order(n, window, rng):
    """A permutation of ``range(n)`` in which each item moves within its block of
    ``window`` consecutive items: the order a memory with up to ``window`` reads in
    flight may answer them."""
    order = np.arange(n)
    for start in range(0, n, window):
        rng.shuffle(order[start:start + window])
    return order


def entry_ints(ciss):
    """Each entry of ``ciss`` (or word of a dense stream) as one int (its uint64 words,
    word 0 lowest)."""
    return [sum(int(w) << (64 * i) for i, w in enumerate(row)) for row in ciss.words]


def dense_fields(stream):
    """The TLU start's dense-mode fields for ``stream`` (a CISS stream: none set)."""
    if isinstance(stream, DenseStream):
        return {"dense": 1, "jn": stream.jn, "kn": stream.kn}
    return {"dense": 0, "jn": 0, "kn": 0}


def stream_lanes(stream, pe):
    """Row ``pe``'s lane items (as :func:`~sparseforge.tb.tensaurus_pe.lane_items`) of a
    CISS stream, or those the TLU builds from a dense one: each slice group's header, then
    every ``(j, k)`` with its value (zeros too), then the end marker."""
    if not isinstance(stream, DenseStream):
        return lane_items(stream, pe)
    pes, dw = stream.wire.pes, stream.wire.dw
    values = wire.unpack_lane_words((wire.Field("value", dw),), pes, stream.words)["value"]
    per_group = stream.jn * stream.kn
    groups = len(values) // per_group
    items = np.zeros((groups, per_group + 1, 5), dtype=np.uint64)      # nnz ij k marker last
    items[:, 0, 1] = np.arange(groups) * pes + pe
    items[:, 0, 3] = 1
    items[:, 1:, 0] = values[:, pe].reshape(groups, per_group)
    items[:, 1:, 1] = np.repeat(np.arange(stream.jn), stream.kn)
    items[:, 1:, 2] = np.tile(np.arange(stream.kn), stream.jn)
    items = np.vstack([items.reshape(-1, 5), [[0, stream.wire.idle, 0, 1, 1]]])
    names = ("nnz", "ij", "k", "marker", "last") if stream.wire.order == 3 else (
        "nnz", "ij", None, "marker", "last")
    return {name: items[:, n] for n, name in enumerate(names) if name}


def image(streams):
    """``(starts, words)``: ``streams`` (CISS or dense) laid one after the other in
    memory, each start ``{base, count}`` and its dense-mode fields, and every entry (or
    dense word) as an int by address."""
    counts = [ciss.entries for ciss in streams]
    bases = np.cumsum([0, *counts[:-1]])
    starts = [{"base": int(b), "count": c, **dense_fields(ciss)}
              for b, c, ciss in zip(bases, counts, streams, strict=True)]
    return starts, [word for ciss in streams for word in entry_ints(ciss)]


def memory(streams, tags, window, rng):
    """``(starts, expected reads, responses, after)`` of ``streams`` laid one after
    the other in memory (:func:`image`), read by a TLU of ``tags`` tags, answered out of
    order within ``window`` reads (at most ``tags``)."""
    starts, words = image(streams)
    loads = [range(start["base"], start["base"] + start["count"]) for start in starts]
    return starts, *answers(loads, words, tags, window, rng)


def answers(loads, words, tags, window, rng):
    """``(reads, responses, after)`` of ``loads`` (each the word addresses it reads, in
    order) from memory ``words``: the reads a reader of ``tags`` tags (the TLU's, the
    MLU's) makes (``{addr, tag}``, tags from 0 each load), the memory's answers (``{tag,
    data}``) out of order within ``window`` reads, and for each the reads it waits
    for."""
    reads, responses, after = [], [], []
    for addrs in loads:
        done = len(reads)
        reads += [{"addr": a, "tag": n % tags} for n, a in enumerate(addrs)]
        for n in out_of_order(len(addrs), window, rng):
            responses.append({"tag": int(n) % tags, "data": words[addrs[n]]})
            after.append(done + int(n) + 1)
    return reads, responses, np.array(after, dtype=np.int64)


@dataclass(frozen=True)
class TluRun:
    cycles: int
    reads: list
    lanes: list         # per row: its items in order


class TluBench(Bench):
    """CISS ``streams`` through ``component``, one after the other. The ``memory``:
    ``"random"`` answers out of order within ``window`` reads (default: the TLU's tags),
    its reads taken at ``rates["request"]`` and checked; ``"dram"`` is a
    :class:`~sparseforge.tb.dram.DramPort` of ``timing`` (default: DDR4-2400 at 1 GHz)
    with as many reads in flight as the TLU has tags (the run's ``reads`` are then
    ``None``: the lanes check them)."""

    def __init__(self, component, streams, seed, rates=None, window=None, memory="random",
                 timing=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "request", "response", "lanes"), RATE),
                 **(rates or {})}
        self.want = [[item for ciss in streams for item in _rows(stream_lanes(ciss, p))]
                     for p in range(component.pes)]
        self.sinks = [self.sink_on(f"lanes__{p}", rates["lanes"], len(self.want[p]))
                      for p in range(component.pes)]
        if memory not in ("random", "dram"):
            raise ParameterError(f"memory={memory!r}: expected 'random' or 'dram'")
        self.sources = (self._dram(streams, rates, timing) if memory == "dram" else
                        self._random(streams, rates, window))
        self.drivers = [*self.sources, *self.sinks]

    def _dram(self, streams, rates, timing):
        """The sources, and the memory as a DDR4 memory."""
        starts, words = image(streams)
        self.reads = None
        self.memory = DramPort("mem", np.array(words, dtype=object), self.codecs, timing,
                               self.component.tags)
        return [self.source_on("start", starts, rates["start"]), self.memory]

    def _random(self, streams, rates, window):
        """The sources, the memory's answers one of them; its reads into a sink."""
        tags = self.component.tags
        starts, self.reads, responses, after = memory(
            streams, tags, window or tags, np.random.default_rng(self.seed))
        self.sinks.insert(0, self.sink_on("mem__request", rates["request"], len(self.reads)))
        return [self.source_on("start", starts, rates["start"]),
                self.source_on("mem__response", responses, rates["response"],
                               after={"mem__request": after})]

    def from_outputs(self, cycles, outputs):
        """The :class:`TluRun` of what the sinks took."""
        return TluRun(cycles, outputs.get("mem__request"),
                      [outputs[f"lanes__{p}"] for p in range(self.component.pes)])


def _rows(columns):
    """Column arrays as a list of item dicts."""
    names = list(columns)
    return [dict(zip(names, (int(v) for v in row), strict=True))
            for row in zip(*(columns[n] for n in names), strict=True)]


def simulate(component, streams, seed, rates=None, engine="native", work_dir=None,
             window=None, memory="random", timing=None):
    """``(run, bench)`` of CISS ``streams`` through the TLU ``component``, from a
    ``memory`` as :class:`TluBench` says."""
    bench = TluBench(component, streams, seed, rates, window, memory, timing)
    return native.simulate(bench, engine, work_dir), bench
