"""MINT's counting units: zero detection and the cluster counter (MINT Section V-B).

Dense-to-COO, Dense-to-CSF and ZVC compression first check which values are
nonzero (Figure 8f, step 2: "checks if the elements in dense format are zero
or not"); CSR-to-CSC counts how many of a chunk's ``col_ids`` fall on each
value (Figure 8c, step 3, the cluster counter). Both end in a population
count, a balanced tree of adders.
"""

from amaranth.hdl import Cat, Const, Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import cluster_layouts
from .pipeline import Pipeline


def popcount(bits, wire):
    """How many of ``bits`` (a Value) are set: a balanced tree of adders, each a bit wider,
    each sum named by ``wire(value, name)`` (so the exported Verilog keeps its width)."""
    level = list(bits) or [Const(0, 1)]
    while len(level) > 1:
        level = [wire(level[i] + level[i + 1], "partial") if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def zero_detect_layout(lanes, width):
    """Zero detection's output: the ``values`` as given, the ``mask`` of the nonzero
    ones (bit ``i`` for lane ``i``) and their ``count``."""
    return data.StructLayout({"values": data.ArrayLayout(width, lanes), "mask": lanes,
                              "count": range(lanes + 1)})


class ZeroDetectSignature(wiring.Signature):
    """Zero detection over ``lanes`` values of ``width`` bits a cycle, seen from the unit.

    - ``values`` (stream in, ``lanes`` x ``width`` bits): one vector.
    - ``detect`` (stream out, :func:`zero_detect_layout`): one per vector, in
      order.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "values": In(stream.Signature(data.ArrayLayout(width, lanes))),
            "detect": Out(stream.Signature(zero_detect_layout(lanes, width))),
        })


@block("zero_detect")
class ZeroDetect(wiring.Component):
    """Zero detection: N lanes to a nonzero mask and its count (Section V-B4, Figure 8f).

    Parameters
    ----------
    lanes : N, values per vector.
    width : bits of a value.

    Members
    -------
    values : In(stream(N x width))
    detect : Out(stream({values, mask, count}))
        As :class:`~sparseforge.hw.mint_units.ZeroDetectSignature` says:
        the values as given, ``mask`` bit ``i`` set where value ``i`` is
        nonzero, ``count`` the number of nonzero values.

    Latency and throughput: 2 cycles (the comparators, then the population
    count); one vector per cycle while ``detect`` is taken.
    """

    PARAMS = (
        Param("lanes", 8, 1, 64, "values per vector (N)"),
        Param("width", 16, 1, 64, "bits of a value"),
    )
    REPORT = ({"lanes": 16, "width": 16},)
    latency = 2

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width = v["lanes"], v["width"]
        super().__init__(ZeroDetectSignature(self.lanes, self.width))

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.values, self.detect)
        values = list(self.values.payload)
        compared = pipe.stage({"values": values, "mask": Cat(v != 0 for v in values)})
        counted = pipe.stage({**compared, "count": popcount(compared["mask"], pipe.wire)})
        pipe.finish()
        out = self.detect.payload
        m.d.comb += [out.values[i].eq(v) for i, v in enumerate(counted["values"])]
        m.d.comb += [out.mask.eq(counted["mask"]), out.count.eq(counted["count"])]
        return m


class ClusterCountSignature(wiring.Signature):
    """A cluster counter: the histogram of a chunk of ``lanes`` indices into ``bins`` bins.

    - ``indices`` (stream in, :func:`~sparseforge.hw.interfaces.cluster_layouts`): one chunk; lanes
      whose ``mask`` bit is clear hold no index (a partial chunk).
    - ``histogram`` (stream out): one per chunk, in order: per bin value
      ``b``, how many of the chunk's indices equal ``b``.
    """

    def __init__(self, lanes, bins):
        indices, histogram = cluster_layouts(lanes, bins)
        super().__init__({"indices": In(stream.Signature(indices)),
                          "histogram": Out(stream.Signature(histogram))})


@block("cluster_counter")
class ClusterCounter(wiring.Component):
    """The cluster counter: the histogram of a chunk of N indices (Section V-B1, Figure 8c).

    Counts, for each bin value ``b``, the chunk's indices equal to ``b``:
    a decoder per lane, then a population count per bin.

    Parameters
    ----------
    lanes : N, indices per chunk.
    bins : the bin values ``0 .. bins - 1`` (a power of two: indices are
        ``log2(bins)`` bits).

    Members
    -------
    indices : In(stream({indices[N], mask}))
        ``mask`` bit ``i`` set where lane ``i`` holds an index.
    histogram : Out(stream(bins x count))
        As :class:`~sparseforge.hw.mint_units.ClusterCountSignature` says.

    Latency and throughput: 2 cycles (the decoders, then the population
    counts); one chunk per cycle while ``histogram`` is taken.
    """

    PARAMS = (
        Param("lanes", 8, 1, 64, "indices per chunk (N)"),
        Param("bins", 16, 2, 64, "bin values (indices are log2(bins) bits)", pow2=True),
    )
    REPORT = ({"lanes": 16, "bins": 16},)
    latency = 2

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.bins = v["lanes"], v["bins"]
        super().__init__(ClusterCountSignature(self.lanes, self.bins))

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.indices, self.histogram)
        given = self.indices.payload
        hits = pipe.stage([Cat((index == b) & keep
                               for index, keep in zip(given.indices, given.mask, strict=True))
                           for b in range(self.bins)])
        counts = pipe.stage([popcount(bits, pipe.wire) for bits in hits])
        pipe.finish()
        m.d.comb += [self.histogram.payload[b].eq(c) for b, c in enumerate(counts)]
        return m
