"""MINT's RLC-to-COO converter (MINT Section V-B2, Figure 8d).

Figure 8d: the RLC pairs stream in (step 1); each pair's run plus one is its
distance from the previous element, the first pair's run alone is its own position
(step 2); a prefix sum over the distances gives each pair's row-major position
(step 3); dividing it by the column count K gives the row and the remainder the
column (step 4); the values join their coordinates on the way out (step 5).

Here the pairs come ``lanes`` to a vector into the prefix-sum unit
(:mod:`~sparseforge.hw.prefix_sum`), whose running carry joins the vectors; the
values travel beside it in a FIFO (:class:`~sparseforge.hw.stream_units.Beside`).
A filler (value 0) only moves the position: :class:`Serializer` drops it and
sends the nonzeros on one a cycle, so one divide/modulo lane
(:mod:`~sparseforge.hw.divider`) serves them where the paper has eight, and it
divides nonzeros only.
"""


from amaranth.hdl import Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .divider import DivMod
from .interfaces import divmod_layout, prefix_sum_layouts, struct
from .pipeline import Pipeline, stages
from .prefix_sum import PrefixSum, kogge_stone
from .stream_units import Beside, any_of, lowest


class Serializer(wiring.Component):
    """Sends a vector's marked items on one a cycle, in lane order; the rest are dropped.

    Parameters
    ----------
    item : the shape of an item.
    lanes : L, items per vector.

    Members
    -------
    vectors : In(stream({items[L], mask, last}))
        ``mask`` bit ``i`` marks item ``i``.
    items : Out(stream({item, last}))
        The marked items, vector after vector; ``last`` on the final marked
        item of a vector whose ``last`` is set.

    A vector with no marked item is taken at once, even while the one before
    drains, and its ``last`` with it: a sequence's final vector must mark its
    final item. Latency 2 cycles (the vector's register, then the output's);
    throughput one item a cycle: a vector of k >= 1 marked items holds the input
    for k cycles. One-hot selection (a lowest-set-bit and an AND-OR) picks the item.
    """

    def __init__(self, item, lanes):
        self.item, self.lanes = item, lanes
        super().__init__({
            "vectors": In(stream.Signature(data.StructLayout({
                "items": data.ArrayLayout(item, lanes), "mask": lanes, "last": 1}))),
            "items": Out(stream.Signature(data.StructLayout({"item": item, "last": 1}))),
        })

    def elaborate(self, platform):
        m = Module()
        given, out = self.vectors.payload, self.items
        held = Signal(data.ArrayLayout(self.item, self.lanes))
        mask, held_last = Signal(self.lanes), Signal()
        pick, rest = lowest(m, mask)
        chosen = Signal(Shape.cast(self.item).width)
        m.d.comb += chosen.eq(any_of(Mux(pick[i], Value.cast(held[i]), 0)
                                   for i in range(self.lanes)))
        free, done = ~out.valid | out.ready, ~rest.any()
        emit = free & mask.any()
        take = ~mask.any() | (free & done)                     # the held vector is through
        m.d.comb += self.vectors.ready.eq(take | ~given.mask.any())
        with m.If(self.vectors.valid & take & given.mask.any()):
            m.d.sync += [held.eq(given.items), mask.eq(given.mask), held_last.eq(given.last)]
        with m.Elif(take):
            m.d.sync += mask.eq(0)
        with m.Elif(emit):
            m.d.sync += mask.eq(rest)
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(emit):
            m.d.sync += [out.valid.eq(1), out.payload.item.eq(chosen),
                         out.payload.last.eq(held_last & done)]
        return m


def rlc_vector_layout(lanes, run_bits, value_width):
    """A vector into RLC-to-COO: ``lanes`` x :func:`~sparseforge.sw.wire.rlc_pair`, then
    :func:`~sparseforge.sw.wire.rlc_end`'s ``last``."""
    return data.StructLayout({
        "pairs": data.ArrayLayout(struct(wire.rlc_pair(run_bits, value_width)), lanes),
        **{f.name: f.width for f in wire.rlc_end()}})


class RlcToCooSignature(wiring.Signature):
    """An RLC-to-COO converter, seen from it: ``lanes`` pairs a vector, ``run_bits``-bit
    runs, row-major positions, rows and columns of ``width`` bits, ``value_width``-bit
    values. Protocol:

    - ``pairs`` (stream in, :func:`rlc_vector_layout`): a matrix's RLC pairs in order,
      ``lanes`` a vector, ``last`` on its final vector; lanes after the final pair hold
      (0, 0). A matrix with no nonzeros sends no vector.
    - ``columns`` (in, ``width`` bits): the matrix's column count (the paper's K),
      held while its vectors stream in.
    - ``records`` (stream out, :func:`~sparseforge.sw.wire.coo_record`): one
      ``{row, col, value, last}`` per nonzero, in row-major order, ``last`` on the
      matrix's final one. Fillers (value 0) emit nothing.
    """

    def __init__(self, lanes, run_bits, width, value_width):
        super().__init__({
            "pairs": In(stream.Signature(rlc_vector_layout(lanes, run_bits, value_width))),
            "columns": In(width),
            "records": Out(stream.Signature(struct(wire.coo_record(width, value_width)))),
        })


@block("rlc_to_coo")
class RlcToCoo(wiring.Component):
    """RLC to COO: RLC pairs in, L a vector; one (row, col, value) record a cycle out.

    MINT Section V-B2, Figure 8d.

    Parameters
    ----------
    lanes : L, RLC pairs per input vector (a power of two: the prefix sum's lanes).
    run_bits : bits of a run (Eyeriss's 5).
    width : P, bits of a row-major position, of the column count and of a row and
        a column: a matrix of up to ``2**P`` elements and fewer than ``2**P``
        columns. Positions are summed modulo ``2**P``, so a run field wider than
        P costs nothing.
    value_width : bits of a value; they pass through as they are, and 0 is a filler.

    Members
    -------
    pairs : In(stream({pairs[L] {run, value}, last}))
    columns : In(P)
    records : Out(stream({row, col, value, last}))
        As :class:`~sparseforge.hw.convert_rlc.RlcToCooSignature` says.

    Structure: the distances (step 2: ``run + 1``, ``run`` for a matrix's first
    pair, the first flagged after reset and after each ``last``) go through a
    Kogge-Stone :class:`~sparseforge.hw.prefix_sum.PrefixSum` of L lanes, inclusive,
    which restarts after ``last``; the values and their nonzero mask wait
    :class:`Beside` it; a :class:`Serializer` drops the fillers; one
    :class:`~sparseforge.hw.divider.DivMod` lane divides each nonzero's position by
    ``columns``, its value and ``last`` waiting beside it.

    Latency and throughput: ``latency = scan + 3 + P`` cycles from a vector's
    transfer to its first record while nothing stalls (``scan = log2 L + 1``, the
    prefix sum's). Up to one vector a cycle in and one record a cycle out: a vector
    holding k nonzeros holds the input for k cycles, and one of fillers only passes
    while the nonzeros before it leave, so a matrix of z nonzeros in v =
    ``ceil(pairs / L)`` vectors takes between ``max(v, z)`` and ``v + z`` cycles.
    Where its gaps are short next to ``L * 2**run_bits``, that is one nonzero a cycle;
    each gap of g zeros takes ``g // 2**run_bits`` fillers, so a matrix whose runs
    are short for its sparsity is bound by its pairs, L a cycle.

    Clock: at 8 lanes the critical path is the serializer's handshake into the scan
    side's FIFO (8 logic levels, mostly routing), wide enough at 8 lanes of 32-bit
    pairs to spread over the die; it sits at the 100 MHz line (the synthesis report).
    """

    PARAMS = (
        Param("lanes", 8, 2, 64, "RLC pairs per input vector (L)", pow2=True),
        Param("run_bits", 5, 1, 32, "bits of a run"),
        Param("width", 32, 2, 64, "bits of a position, the column count, a row and a column"),
        Param("value_width", 32, 1, 64, "bits of a value"),
    )
    REPORT = ({"lanes": 8, "run_bits": 5, "width": 32, "value_width": 32},
              {"lanes": 4, "run_bits": 5, "width": 24, "value_width": 16})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.run_bits = v["lanes"], v["run_bits"]
        self.width, self.value_width = v["width"], v["value_width"]
        # The prefix sum's latency (one register a network level, and the offset row's),
        # the serializer's 2 and the output register, the divider's (a bit a stage).
        self.latency = stages(len(kogge_stone(self.lanes)), 1) + 1 + 3 + self.width
        super().__init__(RlcToCooSignature(self.lanes, self.run_bits, self.width,
                                           self.value_width))

    def elaborate(self, platform):
        m = Module()
        L, P, V = self.lanes, self.width, self.value_width
        m.submodules.scan = scan = PrefixSum(lanes=L, width=P, variant="kogge_stone", inclusive=1)
        m.submodules.divider = divider = DivMod(lanes=1, width=P)
        counts, sums = prefix_sum_layouts(L, P)
        values = data.StructLayout({"values": data.ArrayLayout(V, L), "mask": L})
        m.submodules.scan_side = scan_side = Beside(counts, sums, values, scan.latency)
        wiring.connect(m, scan_side.to_pipe, scan.counts)
        wiring.connect(m, scan.sums, scan_side.from_pipe)
        side = data.StructLayout({"value": V, "last": 1})
        m.submodules.divider_side = divider_side = Beside(data.ArrayLayout(P, 1),
                                                          divmod_layout(1, P), side,
                                                          divider.latency)
        wiring.connect(m, divider_side.to_pipe, divider.dividends)
        wiring.connect(m, divider.results, divider_side.from_pipe)
        m.d.comb += divider.divisor.eq(self.columns)

        # Steps 1-3: the distances into the prefix sum, the values beside it.
        given, enter = self.pairs.payload, scan_side.enter
        first = Signal(init=1)                      # the next vector starts a matrix
        with m.If(self.pairs.valid & self.pairs.ready):
            m.d.sync += first.eq(given.last)
        m.d.comb += [enter.valid.eq(self.pairs.valid), self.pairs.ready.eq(enter.ready),
                     enter.payload.data.last.eq(given.last)]
        for i, pair in enumerate(given.pairs):
            # Each computed lane a signal of its own, so the Verilog names it.
            distance = Signal(self.run_bits + 1, name=f"distance{i}")
            nonzero = Signal(name=f"nonzero{i}")
            m.d.comb += [distance.eq(pair.run + (~first if i == 0 else 1)),
                         nonzero.eq(pair.value != 0),
                         enter.payload.data.counts[i].eq(distance),
                         enter.payload.side.values[i].eq(pair.value),
                         enter.payload.side.mask[i].eq(nonzero)]

        # The fillers dropped, the nonzeros one a cycle.
        m.submodules.serializer = serializer = Serializer(
            data.StructLayout({"position": P, "value": V}), L)
        scanned, vectors = scan_side.leave, serializer.vectors
        m.d.comb += [
            vectors.valid.eq(scanned.valid), scanned.ready.eq(vectors.ready),
            vectors.payload.mask.eq(scanned.payload.side.mask),
            vectors.payload.last.eq(scanned.payload.data.last),
        ]
        for i in range(L):
            m.d.comb += [vectors.payload.items[i].position.eq(scanned.payload.data.sums[i]),
                         vectors.payload.items[i].value.eq(scanned.payload.side.values[i])]

        # Step 4: row and column of each nonzero; step 5: its value joins them.
        nonzeros, enter = serializer.items, divider_side.enter
        m.d.comb += [
            enter.valid.eq(nonzeros.valid), nonzeros.ready.eq(enter.ready),
            enter.payload.data[0].eq(nonzeros.payload.item.position),
            enter.payload.side.value.eq(nonzeros.payload.item.value),
            enter.payload.side.last.eq(nonzeros.payload.last),
        ]
        # The record, registered (the values come out of block RAM).
        done, out = divider_side.leave, self.records
        pipe = Pipeline(m, done, out)
        record = pipe.stage({"row": done.payload.data[0].quotient,
                             "col": done.payload.data[0].remainder,
                             "value": done.payload.side.value, "last": done.payload.side.last})
        pipe.finish()
        m.d.comb += [out.payload[name].eq(value) for name, value in record.items()]
        return m
