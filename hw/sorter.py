"""The MINT chunk sorter: a pipelined odd-even merge sorting network (MINT Section V-B1).

CSR-to-CSC reads a chunk of ``col_ids``, sorts it and counts each value
(Figure 8c, steps 2 and 3); the paper's MINT has "a pipelined sorting
network (input size equal to the number of unique metadata coming in per
cycle)" (Section VII-B). Batcher's odd-even merge sort: ``log2 N (log2 N +
1) / 2`` levels of compare-exchange units, each a list of ``(low, high)``
lanes.
"""

from amaranth.hdl import Cat, Const, Module, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.params import Param, check_params
from ..core.registry import block
from .pipeline import Pipeline, levels_param, stages


def odd_even_merge(lanes):
    """Batcher's odd-even merge sort on ``lanes`` (a power of two): its levels of
    ``(low, high)`` pairs, after which lane ``low`` holds the smaller record."""
    levels = []
    p = 1
    while p < lanes:
        k = p
        while k >= 1:
            levels.append([(i + j, i + j + k)
                           for j in range(k % p, lanes - k, 2 * k)
                           for i in range(min(k, lanes - j - k))
                           if (i + j) // (2 * p) == (i + j + k) // (2 * p)])
            k //= 2
        p *= 2
    return levels


def sort_layout(lanes, key_width, data_width):
    """A chunk to sort: ``lanes`` records ``{key, data}``."""
    return data.ArrayLayout(data.StructLayout({"key": key_width, "data": data_width}), lanes)


class SortSignature(wiring.Signature):
    """A sorting network over chunks of ``lanes`` ``{key, data}`` records, seen from it.

    - ``chunk`` (stream in, :func:`sort_layout`): one chunk. Pad a partial
      chunk's last lanes with the largest key: they sort to the end.
    - ``sorted`` (stream out, the same layout): one per chunk, in order: its
      records by ascending unsigned key; records with equal keys keep their
      input order (a stable sort).
    """

    def __init__(self, lanes, key_width, data_width):
        layout = sort_layout(lanes, key_width, data_width)
        super().__init__({"chunk": In(stream.Signature(layout)),
                          "sorted": Out(stream.Signature(layout))})


@block("sorter")
class Sorter(wiring.Component):
    """A stable pipelined sorting network over chunks of N ``{key, data}`` records (Section V-B1).

    Each compare-exchange compares ``{key, lane}``, the record's key above
    the lane it came in on, so equal keys keep their input order: the output
    is the stable sort (CSR-to-CSC keeps each column's rows in order).

    Parameters
    ----------
    lanes : N, records per chunk (a power of two).
    key_width : bits of an unsigned key.
    data_width : bits of the data carried with each key.
    levels : compare-exchange levels between pipeline registers.

    Members
    -------
    chunk : In(stream(N x {key, data}))
    sorted : Out(stream(N x {key, data}))
        As :class:`~sparseforge.hw.sorter.SortSignature` says: one
        sorted chunk per chunk. Pad a partial chunk's last lanes with the
        largest key.

    Latency and throughput: ``ceil(log2 N (log2 N + 1) / 2 / levels)``
    cycles from a chunk's transfer to its sorted records; one chunk per
    cycle while ``sorted`` is taken. A held output holds the pipeline.
    """

    PARAMS = (
        Param("lanes", 8, 2, 64, "records per chunk (N)", pow2=True),
        Param("key_width", 16, 1, 64, "bits of a key"),
        Param("data_width", 16, 1, 64, "bits of the data carried with a key"),
        levels_param("compare-exchange"),
    )
    REPORT = ({"lanes": 8},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.key_width = v["lanes"], v["key_width"]
        self.data_width, self.levels = v["data_width"], v["levels"]
        self.network = odd_even_merge(self.lanes)
        self.latency = stages(len(self.network), self.levels)
        super().__init__(SortSignature(self.lanes, self.key_width, self.data_width))

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.chunk, self.sorted)
        lane_bits = ceil_log2(self.lanes)
        order = lane_bits + self.key_width      # a record is {lane, key, data}, lane lowest

        def level(pairs):
            def exchange(records):
                out = list(records)
                for low, high in pairs:
                    swap = pipe.wire(records[low][:order] > records[high][:order], "swap")
                    out[low] = Mux(swap, records[high], records[low])
                    out[high] = Mux(swap, records[low], records[high])
                return out
            return exchange

        records = [Cat(Const(i, lane_bits), r.key, r.data)
                   for i, r in enumerate(self.chunk.payload)]
        done = pipe.network(records, [level(pairs) for pairs in self.network], self.levels)
        pipe.finish()
        for out, record in zip(self.sorted.payload, done, strict=True):
            m.d.comb += [out.key.eq(record[lane_bits:order]), out.data.eq(record[order:])]
        return m
