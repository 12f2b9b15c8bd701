"""Testbenches for the MINT building blocks: vectors in, each result checked as it arrives.

Every MINT block is a pipeline with one input stream and one output stream,
one output per input, in order. :class:`PipelineBench` streams the inputs
under random stalls on both streams and compares each output with what the
behavioural model (:mod:`sparseforge.sim.models.mint`) says for it. The
``*_bench`` functions build it for one block from the block's own inputs;
:func:`random_bench` from a random workload, for the cocotb test as well.
"""

from dataclasses import dataclass

import numpy as np

from ..hw.divider import DivMod
from ..hw.mint_units import ClusterCounter, ZeroDetect
from ..hw.prefix_sum import PrefixSum
from ..hw.sorter import Sorter
from ..sim.models import mint as model
from ..sim.runners import cocotb_run, cocotb_test
from ..sw import wire
from .streams import Bench


@dataclass(frozen=True)
class PipelineResult:
    """What one run of a one-in, one-out pipeline produced, from its handshakes."""

    cycles: int
    taken: list         # the cycle each input was accepted on
    given: list         # the cycle each output was taken on
    outputs: list       # every output, as plain Python


class Sampled:
    """Drives input ``port`` with ``values[n]`` while ``source`` presents its item ``n``,
    and with random bits otherwise: a setting the design must sample with each item."""

    def __init__(self, port, source, values, rng, width):
        self.port, self.source, self.values = port, source, values
        self.rng, self.width = rng, width
        self.fired = None

    def idle(self, io):
        io.set(self.port, 0)

    def drive(self, io, cycle):
        value = (int(self.values[self.source.next]) if self.source.presenting
                 else self.rng.getrandbits(self.width))
        io.set(self.port, value)

    def sample(self, io, cycle):
        pass


class PipelineBench(Bench):
    """Streams ``items`` into stream ``source``; each output on ``sink`` must equal
    ``expected`` (plain Python, in order). ``rates`` gives each stream's probability of
    acting on a cycle (default 0.7)."""

    def __init__(self, component, source, items, sink, expected, seed, rates=None):
        super().__init__(component, seed)
        rates = {source: 0.7, sink: 0.7, **(rates or {})}
        self.source = self.source_on(source, items, rates[source])
        self.sink = self.sink_on(sink, rates[sink], len(expected))
        self.expected = expected
        self.outputs = {sink: expected}
        self.drivers = [self.source, self.sink]

    def check(self, io, cycle):
        got = self.sink.fired
        if got is None:
            return
        n = len(self.sink.received) - 1
        if n >= len(self.expected):
            self.fail(f"{self.sink.name}: output {n} with no input outstanding")
        if got != self.expected[n]:
            self.fail(f"{self.sink.name} output {n}: got {got}, model says {self.expected[n]}")

    def finished(self):
        return len(self.sink.received) == len(self.expected)

    def result(self):
        return PipelineResult(self.cycle, [c for c, _ in self.source.accepted],
                              [c for c, _ in self.sink.received],
                              [v for _, v in self.sink.received])


def _ints(array):
    return [int(v) for v in array]


def prefix_sum_bench(component, counts, last, seed, rates=None):
    """``counts`` ``[n, N]`` and ``last`` ``[n]`` into a
    :class:`~sparseforge.hw.prefix_sum.PrefixSum`."""
    sums, totals = model.prefix_sums(counts, last, component.width, component.inclusive)
    items = [{"counts": _ints(c), "last": int(e)} for c, e in zip(counts, last, strict=True)]
    expected = [{"sums": _ints(s), "total": int(t), "last": int(e)}
                for s, t, e in zip(sums, totals, last, strict=True)]
    return PipelineBench(component, "counts", items, "sums", expected, seed, rates)


def divmod_bench(component, dividends, divisors, seed, rates=None):
    """``dividends`` ``[n, L]`` into a :class:`~sparseforge.hw.divider.DivMod`, vector ``v``
    presented with ``divisors[v]`` (and random bits while no vector is presented)."""
    quotients, remainders = model.divmod_lanes(dividends, divisors, component.width)
    expected = [[{"quotient": int(q), "remainder": int(r)} for q, r in zip(qs, rs, strict=True)]
                for qs, rs in zip(quotients, remainders, strict=True)]
    bench = PipelineBench(component, "dividends", [_ints(x) for x in dividends], "results",
                          expected, seed, rates)
    bench.drivers.append(Sampled("divisor", bench.source, divisors, bench.rng, component.width))
    return bench


def zero_detect_bench(component, values, seed, rates=None):
    """``values`` ``[n, N]`` into a :class:`~sparseforge.hw.mint_units.ZeroDetect`."""
    mask, count = model.zero_detect(values)
    expected = [{"values": _ints(v), "mask": int(m), "count": int(c)}
                for v, m, c in zip(values, mask, count, strict=True)]
    return PipelineBench(component, "values", [_ints(v) for v in values], "detect", expected,
                         seed, rates)


def cluster_bench(component, indices, mask, seed, rates=None):
    """Chunks of ``indices`` ``[n, N]`` (lane ``i`` counted where ``mask[v, i]``) into a
    :class:`~sparseforge.hw.mint_units.ClusterCounter`."""
    counts = model.cluster_counts(indices, mask, component.bins)
    flags = np.asarray(mask, dtype=np.uint64)              # a word's bit i: lane i's
    bits = wire.pack_lanes((wire.Field("mask", 1),), flags.shape[1], (), {"mask": flags})
    items = [{"indices": _ints(x), "mask": b} for x, b in zip(indices, bits, strict=True)]
    return PipelineBench(component, "indices", items, "histogram", [_ints(c) for c in counts],
                         seed, rates)


def sorter_bench(component, keys, data, seed, rates=None):
    """Chunks of ``keys`` and ``data`` ``[n, N]`` into a :class:`~sparseforge.hw.sorter.Sorter`."""
    def records(ks, ds):
        return [{"key": int(k), "data": int(d)} for k, d in zip(ks, ds, strict=True)]

    items = [records(k, d) for k, d in zip(keys, data, strict=True)]
    expected = [records(k, d) for k, d in zip(*model.stable_sort(keys, data), strict=True)]
    return PipelineBench(component, "chunk", items, "sorted", expected, seed, rates)


def _uniform(rng, bits, size):
    """Uniform unsigned ``bits``-bit values (up to 64 bits) as uint64."""
    return rng.integers(0, 1 << bits, size=size, dtype=np.uint64, endpoint=False) if bits < 64 \
        else rng.integers(0, np.iinfo(np.uint64).max, size=size, dtype=np.uint64, endpoint=True)


def _skewed(rng, bits, size):
    """Mostly small values (counts, dimensions, many equal), a quarter of them full-range."""
    small = rng.integers(0, min(1 << bits, 5), size=size).astype(np.uint64)
    return np.where(rng.random(size) < 0.25, _uniform(rng, bits, size), small)


def random_bench(component, vectors, seed, rates=None):
    """A bench of ``vectors`` random inputs for any MINT block, seeded by ``seed``.

    Prefix sums get mostly small counts (a column's nonzeros) and random
    sequence ends; divisors change every few vectors (and include 0);
    values are half zeros; sort keys repeat (ties).
    """
    rng = np.random.default_rng(seed)
    n = vectors
    if isinstance(component, PrefixSum):
        last = rng.random(n) < 0.15
        last[-1] = True
        counts = _skewed(rng, component.width, (n, component.lanes))
        return prefix_sum_bench(component, counts, last, seed, rates)
    if isinstance(component, DivMod):
        dims = _skewed(rng, component.width, n)
        divisors = dims[np.maximum.accumulate(np.where(rng.random(n) < 0.2, np.arange(n), 0))]
        dividends = _uniform(rng, component.width, (n, component.lanes))
        return divmod_bench(component, dividends, divisors, seed, rates)
    if isinstance(component, ZeroDetect):
        values = _uniform(rng, component.width, (n, component.lanes))
        values[rng.random(values.shape) < 0.5] = 0
        return zero_detect_bench(component, values, seed, rates)
    if isinstance(component, ClusterCounter):
        indices = rng.integers(0, component.bins, size=(n, component.lanes))
        return cluster_bench(component, indices, rng.random(indices.shape) < 0.8, seed, rates)
    if isinstance(component, Sorter):
        keys = _skewed(rng, component.key_width, (n, component.lanes))
        data = _uniform(rng, component.data_width, (n, component.lanes))
        return sorter_bench(component, keys, data, seed, rates)
    raise TypeError(f"no MINT bench for {type(component).__name__}")


@cocotb_test
async def random_vectors(dut):
    """Random vectors under random stalls on both streams, every output against the model."""
    await cocotb_run(dut, lambda component, args, seed: random_bench(
        component, args.get("vectors", 500), seed, args.get("rates")))
