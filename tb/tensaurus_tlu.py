# amaranth: UnusedElaboratable=no
"""Testbench of the Tensaurus TLU (``tensaurus_tlu``) and the memory it reads: CISS
streams in a memory image that answers reads out of order.

The memory's responses are the reads' answers in a random order that never runs more
than a window ahead of the reads (each offered only once its read has been made, and
then at random): :func:`out_of_order`. The composite's bench
(:mod:`sparseforge.tb.tensaurus`) uses the same memory.
"""

from dataclasses import dataclass

import numpy as np

from ..sw import wire
from ..sw.tensaurus_job import DenseStream
from . import native
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


def memory(streams, tags, window, rng):
    """``(starts, expected reads, responses, after)`` of ``streams`` (CISS or dense)
    laid one after the other in memory, read by a TLU of ``tags`` tags, answered out of
    order within ``window`` reads (at most ``tags``)."""
    starts, reads, responses, after, base, done = [], [], [], [], 0, 0
    for ciss in streams:
        entries = entry_ints(ciss)
        starts.append({"base": base, "count": len(entries), **dense_fields(ciss)})
        reads += [{"addr": base + n, "tag": n % tags} for n in range(len(entries))]
        for n in out_of_order(len(entries), window, rng):
            responses.append({"tag": int(n) % tags, "data": entries[n]})
            after.append(done + int(n) + 1)
        base, done = base + len(entries), done + len(entries)
    return starts, reads, responses, np.array(after, dtype=np.int64)


@dataclass(frozen=True)
class TluRun:
    cycles: int
    reads: list
    lanes: list         # per row: its items in order


class TluBench(Bench):
    """CISS ``streams`` through ``component``, one after the other; the memory answers
    out of order within ``window`` reads (default: the TLU's tags)."""

    def __init__(self, component, streams, seed, rates=None, window=None):
        super().__init__(component, seed)
        rates = {**dict.fromkeys(("start", "request", "response", "lanes"), RATE),
                 **(rates or {})}
        starts, self.reads, responses, after = memory(
            streams, component.tags, window or component.tags, np.random.default_rng(seed))
        self.want = [[item for ciss in streams for item in _rows(stream_lanes(ciss, p))]
                     for p in range(component.pes)]
        self.sources = [self.source_on("start", starts, rates["start"]),
                        self.source_on("mem__response", responses, rates["response"],
                                       after={"mem__request": after})]
        self.sinks = [self.sink_on("mem__request", rates["request"], len(self.reads))]
        self.sinks += [self.sink_on(f"lanes__{p}", rates["lanes"], len(self.want[p]))
                       for p in range(component.pes)]
        self.drivers = [*self.sources, *self.sinks]

    def from_outputs(self, cycles, outputs):
        """The :class:`TluRun` of what the sinks took."""
        return TluRun(cycles, outputs["mem__request"],
                      [outputs[f"lanes__{p}"] for p in range(self.component.pes)])


def _rows(columns):
    """Column arrays as a list of item dicts."""
    names = list(columns)
    return [dict(zip(names, (int(v) for v in row), strict=True))
            for row in zip(*(columns[n] for n in names), strict=True)]


def simulate(component, streams, seed, rates=None, engine="native", work_dir=None,
             window=None):
    """``(run, bench)`` of CISS ``streams`` through the TLU ``component``."""
    bench = TluBench(component, streams, seed, rates, window)
    return native.simulate(bench, engine, work_dir), bench
