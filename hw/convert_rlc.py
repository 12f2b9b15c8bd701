# amaranth: UnusedElaboratable=no
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

Dense to RLC (:class:`DenseToRlc`) is the other way, from a flat dense stream (what ZVC to
Dense emits) into the vectors RLC to COO takes: zero detection and a segmented prefix sum
over the lanes give each element its distance from the nonzero before it, so each nonzero
its run and each filler its lane (:class:`RunLengths`); fillers after a vector's last
nonzero wait as a count for the next pair (:class:`Fillers`), since the zeros after a
matrix's last nonzero take none; the Dense converters' prefix sum and compactor
(:mod:`~sparseforge.hw.convert_dense`) pack the pairs ``lanes`` a vector, and
:class:`EndMarker` holds each back until it knows whether it is the matrix's final one.
"""


from amaranth.hdl import Cat, Const, Module, Mux, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .convert_dense import LEVELS, Compactor, NonzeroPositions, take_positions
from .divider import DivMod
from .interfaces import dense_layout, divmod_layout, prefix_sum_layouts, struct
from .mint_units import ZeroDetect, popcount
from .pipeline import Pipeline, stages
from .prefix_sum import PrefixSum, kogge_stone
from .stream_units import Beside, Lockstep, Queue, Skid, any_of, at_most_one, lowest

QUEUE = 8
"""Events the queue between :class:`RunLengths` and :class:`Fillers` holds."""


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
        free, done = ~out.valid | out.ready, at_most_one(mask)   # the pick is the last
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
    """A vector into RLC-to-COO (and out of Dense-to-RLC): ``lanes`` x
    :func:`~sparseforge.sw.wire.rlc_pair`, then :func:`~sparseforge.sw.wire.rlc_end`'s
    ``last``."""
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

    Clock: above 100 MHz at both report configurations (the synthesis report). The
    serializer's handshake into the scan side's FIFO, the 8-lane configuration's critical
    path while its test of the held vector's last marked item was the carry chain of
    ``mask & (mask - 1)``, tests it with a tree of pairs
    (:func:`~sparseforge.hw.stream_units.at_most_one`).
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


class EndMarker(wiring.Component):
    """Holds back the latest kept item until it is known whether it is a sequence's final
    one: ``last`` goes on the final kept item, which a converter learns of only at the
    sequence's end (its trailing zeros, fill or empty words emit nothing).

    Parameters
    ----------
    item : the shape of an item.

    Members
    -------
    given : In(stream({item, keep, end}))
        An item with ``keep`` is sent on; one without is dropped. ``end`` closes the
        sequence (its item, if kept, the final one); a sequence of no kept item sends
        nothing.
    taken : Out(stream({item, last}))
        The kept items in order, ``last`` on each sequence's final one.

    Latency and throughput: an item leaves (registered) when the next kept item or its
    sequence's end arrives; one item a cycle, and one cycle more for an item that is
    kept and ends its sequence while another waits.
    """

    def __init__(self, item):
        self.item = item
        super().__init__({
            "given": In(stream.Signature(data.StructLayout({"item": item, "keep": 1,
                                                            "end": 1}))),
            "taken": Out(stream.Signature(data.StructLayout({"item": item, "last": 1}))),
        })

    def elaborate(self, platform):
        m = Module()
        given, out = self.given.payload, self.taken
        held, holding, closing = Signal(self.item), Signal(), Signal()
        free = ~out.valid | out.ready
        m.d.comb += self.given.ready.eq(free & ~closing)
        accept = self.given.valid & free & ~closing
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(closing & free):                      # the held item ends its sequence
            m.d.sync += [out.valid.eq(1), out.payload.item.eq(held), out.payload.last.eq(1),
                         holding.eq(0), closing.eq(0)]
        with m.Elif(accept & given.keep & holding):     # the held one is not the final
            m.d.sync += [out.valid.eq(1), out.payload.item.eq(held), out.payload.last.eq(0),
                         held.eq(given.item), closing.eq(given.end)]
        with m.Elif(accept & given.keep & given.end):
            m.d.sync += [out.valid.eq(1), out.payload.item.eq(given.item),
                         out.payload.last.eq(1)]
        with m.Elif(accept & given.keep):
            m.d.sync += [held.eq(given.item), holding.eq(1)]
        with m.Elif(accept & given.end & holding):
            m.d.sync += [out.valid.eq(1), out.payload.item.eq(held), out.payload.last.eq(1),
                         holding.eq(0)]
        return m


class RunLengths(wiring.Component):
    """Each element's distance from the nonzero before it, and the RLC pairs of a dense
    vector (Eyeriss's run-length coding, MINT Section II): the first half of Dense to RLC.

    An element ``d`` positions after the matrix's previous nonzero (the first element
    counting from position -1) is, when nonzero, a pair of run ``d - 1 mod 2**run_bits``;
    when zero and ``d`` is a multiple of ``2**run_bits``, the end of a filler
    ``(2**run_bits - 1, 0)``, which covers the ``2**run_bits`` positions through it
    (:class:`~sparseforge.sw.conversion.RLC`). Only ``d`` modulo ``2**run_bits`` matters,
    so every sum here has ``run_bits`` bits. A filler is real only if a nonzero follows
    it: those before the vector's last nonzero go out in their lanes, the others are
    counted, and the count goes with the next vector that holds a pair (the matrix's
    trailing ones never go out).

    ``d`` is a segmented prefix sum over the lanes: lane ``i`` counts 1 and restarts
    after a nonzero in lane ``i - 1``, on the Kogge-Stone network of
    :func:`~.prefix_sum.kogge_stone`; the offset row adds the carry (the zeros since the
    last nonzero, modulo ``2**run_bits``) to the lanes with no nonzero before them.

    Parameters
    ----------
    lanes : L, elements per vector (a power of two).
    run_bits, width, value_width : as :class:`DenseToRlc`'s.
    levels : scan levels between pipeline registers.

    Members
    -------
    dense : In(stream({lanes[L], last}))
    events : Out(stream({pairs[L], fillers, last}))
        One per vector that holds a pair or ends the matrix: ``pairs`` its pairs and
        fillers in their lanes, (0, 0) in the others; ``fillers`` those that come before
        them, modulo ``2**width``; ``last`` as given.

    Latency and throughput: zero detection's 2 cycles, the scan's
    ``ceil(log2 L / levels)``, the offset row's and the count's: one vector a cycle.
    """

    def __init__(self, lanes, run_bits, width, value_width, levels=1):
        self.lanes, self.run_bits, self.width = lanes, run_bits, width
        self.value_width, self.levels = value_width, levels
        self.pair = struct(wire.rlc_pair(run_bits, value_width))
        self.detect = Lockstep({"detect": ZeroDetect(lanes=lanes, width=value_width)}, 1)
        super().__init__({
            "dense": In(stream.Signature(dense_layout(lanes, value_width, rows=False))),
            "events": Out(stream.Signature(event_layout(lanes, run_bits, width,
                                                        value_width))),
        })

    def elaborate(self, platform):
        m = Module()
        L, B = self.lanes, self.run_bits
        m.submodules.detect = detect = self.detect
        m.d.comb += [detect.given.valid.eq(self.dense.valid),
                     self.dense.ready.eq(detect.given.ready),
                     detect.given.payload.detect.eq(self.dense.payload.lanes),
                     detect.given.payload.tag.eq(self.dense.payload.last)]
        found = detect.taken.payload
        scanned = stream.Signature(data.StructLayout({
            "pairs": data.ArrayLayout(self.pair, L), "trail": range(L + 1), "holds": 1,
            "last": 1})).create()
        pipe = Pipeline(m, detect.taken, scanned)
        mask = found.detect.mask

        def level(pairs):
            # After stride s a count is at most 2s: its bits, or B where fewer.
            bits = min(B, (2 * (pairs[0][0] - pairs[0][1])).bit_length())

            def combine(state):
                lanes = list(state["lanes"])
                for dst, src in pairs:
                    restart, count = state["lanes"][dst]
                    before, counted = state["lanes"][src]
                    lanes[dst] = (restart | before,
                                  pipe.wire(Mux(restart, count, (count + counted)[:bits]), "d"))
                return {**state, "lanes": lanes}
            return combine

        first = {"lanes": [(mask[i - 1] if i else Const(0), Const(1, 1)) for i in range(L)],
                 "values": list(found.detect.values), "mask": mask, "last": found.tag}
        local = pipe.network(first, [level(p) for p in kogge_stone(L)], self.levels)

        # The offset row: the carry joins the lanes with no nonzero before them.
        carry = Signal(B)
        distance = [pipe.wire(Mux(restart, count, (carry + count)[:B]), f"distance{i}")
                    for i, (restart, count) in enumerate(local["lanes"])]
        nonzero = local["mask"]
        with m.If(pipe.advance & pipe.valid):
            m.d.sync += carry.eq(Mux(local["last"] | nonzero[-1], 0, distance[-1]))
        filler = Const((1 << B) - 1, self.pair.size)
        pairs, ends = [], []
        for i in range(L):
            later = nonzero[i + 1:].any() if i + 1 < L else Const(0)
            end = pipe.wire(~nonzero[i] & (distance[i] == 0), f"filler{i}")
            pair = Cat((distance[i] - 1)[:B], local["values"][i])
            pairs.append(Mux(nonzero[i], pair, Mux(end & later, filler, 0)))
            ends.append(end & ~later)
        out = pipe.stage({"pairs": pairs, "trail": popcount(Cat(ends), pipe.wire),
                          "holds": nonzero.any(), "last": local["last"]})
        pipe.finish()
        m.d.comb += [scanned.payload.pairs[i].eq(p) for i, p in enumerate(out["pairs"])]
        m.d.comb += [scanned.payload.trail.eq(out["trail"]),
                     scanned.payload.holds.eq(out["holds"]),
                     scanned.payload.last.eq(out["last"])]

        # The count of fillers waiting for a pair; vectors of none pass no event. (A vector
        # holds a pair where it holds a nonzero: a filler goes in a lane only before one.)
        waiting = Signal(self.width)
        given, events = scanned.payload, self.events
        holds = given.holds
        free = ~events.valid | events.ready
        m.d.comb += scanned.ready.eq(free)
        with m.If(scanned.valid & free):
            m.d.sync += [waiting.eq(Mux(given.last, 0, Mux(holds, 0, waiting) + given.trail)),
                         events.valid.eq(holds | given.last),
                         events.payload.pairs.eq(given.pairs),
                         events.payload.fillers.eq(Mux(holds, waiting, 0)),
                         events.payload.fill.eq(holds & (waiting != 0)),
                         events.payload.last.eq(given.last)]
        with m.Elif(events.ready):
            m.d.sync += events.valid.eq(0)
        return m


def event_layout(lanes, run_bits, width, value_width):
    """A vector of RLC pairs in their lanes ((0, 0) in a lane of none), the ``fillers``
    that come before them (``fill`` where there are any), and ``last``:
    :class:`RunLengths`' events."""
    return data.StructLayout({
        "pairs": data.ArrayLayout(struct(wire.rlc_pair(run_bits, value_width)), lanes),
        "fillers": width, "fill": 1, "last": 1})


class Fillers(wiring.Component):
    """Sends the fillers an event waits for, ``lanes`` a cycle, then its pairs.

    Parameters
    ----------
    lanes, run_bits, width, value_width : as :class:`DenseToRlc`'s.

    Members
    -------
    events : In(stream(:func:`event_layout`))
    vectors : Out(stream({values[L], last, tag}))
        Per event, ``ceil(fillers / L)`` vectors of fillers (the last one's first
        ``fillers % L`` lanes), then one of its pairs with its ``last``: ``tag`` the
        pairs, (0, 0) in a lane of none, and ``values`` a bit a lane, set where a pair
        is (:class:`~.convert_dense.NonzeroPositions`' input, whose zero detection then
        finds them whatever the pairs' width).

    Latency and throughput: 1 cycle (registered); an event of ``f`` fillers holds the
    input for ``ceil(f / L) + 1`` cycles.
    """

    def __init__(self, lanes, run_bits, width, value_width):
        self.lanes, self.run_bits, self.width = lanes, run_bits, width
        pair = run_bits + value_width
        super().__init__({
            "events": In(stream.Signature(event_layout(lanes, run_bits, width,
                                                       value_width))),
            "vectors": Out(stream.Signature(data.StructLayout({
                "values": data.ArrayLayout(1, lanes), "last": 1,
                "tag": data.ArrayLayout(pair, lanes)}))),
        })

    def elaborate(self, platform):
        m = Module()
        L = self.lanes
        given, out = self.events.payload, self.vectors
        # The fillers left of the head event, and whether there are any (a register: the
        # input's ready does not wait on a comparison of the count).
        started, rest, more = Signal(), Signal(self.width), Signal()
        left = Signal(self.width)
        m.d.comb += left.eq(Mux(started, rest, given.fillers))
        filling = Mux(started, more, given.fill)
        free = ~out.valid | out.ready
        m.d.comb += self.events.ready.eq(free & ~filling)
        filler = Const((1 << self.run_bits) - 1, self.run_bits)
        with m.If(self.events.valid & free & filling):
            m.d.sync += [out.valid.eq(1), out.payload.last.eq(0), started.eq(1),
                         rest.eq(left - L), more.eq(left > L)]
            m.d.sync += [out.payload.tag[i].eq(Mux(left >= i + 1, filler, 0)) for i in range(L)]
            m.d.sync += [out.payload.values[i].eq(left >= i + 1) for i in range(L)]
        with m.Elif(self.events.valid & free):
            m.d.sync += [out.valid.eq(1), out.payload.tag.eq(given.pairs),
                         out.payload.last.eq(given.last), started.eq(0)]
            m.d.sync += [out.payload.values[i].eq(given.pairs[i].as_value().any())
                         for i in range(L)]
        with m.Elif(out.ready):
            m.d.sync += out.valid.eq(0)
        return m


class DenseToRlcSignature(wiring.Signature):
    """A Dense-to-RLC converter, seen from it: ``lanes`` values of ``value_width`` bits a
    vector in, ``lanes`` RLC pairs of ``run_bits``-bit runs a vector out.

    - ``dense`` (stream in, :func:`~.interfaces.dense_layout`, flat): a matrix's elements
      in row-major order, ``last`` on its final vector (what ZVC to Dense emits).
    - ``pairs`` (stream out, :func:`rlc_vector_layout`): its RLC pairs in order (fillers
      included, as :class:`~sparseforge.sw.conversion.RLC` says), ``lanes`` a vector,
      ``last`` on the final one, whose lanes after the final pair hold (0, 0); a matrix
      of no nonzero sends none (RLC to COO's input).
    """

    def __init__(self, lanes, run_bits, value_width):
        super().__init__({
            "dense": In(stream.Signature(dense_layout(lanes, value_width, rows=False))),
            "pairs": Out(stream.Signature(rlc_vector_layout(lanes, run_bits, value_width))),
        })


@block("dense_to_rlc")
class DenseToRlc(wiring.Component):
    """Dense to RLC: a flat dense stream, L elements a cycle, to RLC pairs, L a vector.

    Eyeriss's run-length coding (MINT Section II) from MINT's building blocks: zero
    detection (:class:`~.mint_units.ZeroDetect`) and a segmented prefix sum over the
    lanes give each nonzero its run (:class:`RunLengths`); a filler goes where a run
    reaches ``2**run_bits``, in its lane where a nonzero follows in the vector, else
    counted and sent before the next pair (:class:`Fillers`); the prefix sum of the
    pairs (:class:`~.convert_dense.NonzeroPositions`) and the
    :class:`~.convert_dense.Compactor` pack them into full vectors, and an
    :class:`EndMarker` puts ``last`` on the final one. A
    :class:`~.stream_units.Queue` of :data:`QUEUE` events joins the first two, and
    :class:`~.stream_units.Skid` register slices cut the stall before the compactor
    and at the output.

    Parameters
    ----------
    lanes : L, elements per input vector and pairs per output vector (a power of two).
    run_bits : bits of a run (Eyeriss's 5).
    width : bits of the count of fillers waiting (a matrix of up to ``2**width``
        elements).
    value_width : bits of a value (a value is zero when all its bits are).
    levels : scan and multiplexer levels between pipeline registers.

    Members
    -------
    dense : In(stream({lanes[L], last}))
    pairs : Out(stream({pairs[L] {run, value}, last}))
        As :class:`~sparseforge.hw.convert_rlc.DenseToRlcSignature` says.

    Throughput: one dense vector a cycle while ``pairs`` is taken. The fillers counted
    after a vector's last nonzero cost :class:`Fillers` ``ceil(f / L)`` cycles before the
    next pair; vectors of no pair pass no event to it, and a queue between the two
    lets the vectors of zeros that made the fillers pay for them. The output is one
    vector a cycle at most: a matrix of ``p`` pairs in ``v`` vectors takes about
    ``max(v, p / L)`` cycles.

    Clock: above 100 MHz on the ECP5-25k at 8 lanes of 5-bit runs and 32-bit values, by a
    few percent (the synthesis report). The critical path is in :class:`Fillers`: the
    fillers left (the held count or the new event's) compared with each lane's index, a
    carry chain of the count's width, into every lane's filler tag.
    """

    PARAMS = (
        Param("lanes", 8, 2, 32, "elements per input vector and pairs per output vector (L)",
              pow2=True),
        Param("run_bits", 5, 1, 32, "bits of a run"),
        Param("width", 32, 2, 64, "bits of the count of fillers waiting"),
        Param("value_width", 32, 1, 64, "bits of a value"),
        LEVELS,
    )
    REPORT = ({"lanes": 8, "run_bits": 5, "width": 32, "value_width": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.run_bits = v["lanes"], v["run_bits"]
        self.width, self.value_width, self.levels = v["width"], v["value_width"], v["levels"]
        L, B, V = self.lanes, self.run_bits, self.value_width
        self.runs = RunLengths(L, B, self.width, V, self.levels)
        self.queue = Queue(event_layout(L, B, self.width, V), depth=QUEUE, latency=2)
        self.fillers = Fillers(L, B, self.width, V)
        self.nonzeros = NonzeroPositions(L, 1, data.ArrayLayout(B + V, L), self.levels)
        self.compactor = Compactor(L, B + V, self.levels)
        self.marker = EndMarker(data.ArrayLayout(B + V, L))
        # Register slices where the stall would otherwise run from the output through the
        # compactor to the prefix sum's stages (and their wide tags) in one cycle.
        self.cut = Skid(self.nonzeros.positions.payload.shape())
        self.out = Skid(rlc_vector_layout(L, B, V))
        super().__init__(DenseToRlcSignature(L, B, V))

    def elaborate(self, platform):
        m = Module()
        m.submodules.runs = runs = self.runs
        m.submodules.queue = queue = self.queue
        m.submodules.fillers = fillers = self.fillers
        m.submodules.nonzeros = nonzeros = self.nonzeros
        m.submodules.compactor = compactor = self.compactor
        m.submodules.marker = marker = self.marker
        m.submodules.cut = cut = self.cut
        m.submodules.out = skid = self.out
        wiring.connect(m, wiring.flipped(self.dense), runs.dense)
        wiring.connect(m, runs.events, queue.i)
        wiring.connect(m, queue.o, fillers.events)
        wiring.connect(m, fillers.vectors, nonzeros.vectors)
        wiring.connect(m, nonzeros.positions, cut.i)
        found, vectors = cut.o, compactor.vectors
        take_positions(m, found, vectors)
        m.d.comb += vectors.payload.records.eq(found.payload.tag)
        # A word's lanes past its count are (0, 0); an empty word only ends the matrix.
        words, given = compactor.words, marker.given
        count = words.payload.count
        m.d.comb += [given.valid.eq(words.valid), words.ready.eq(given.ready),
                     given.payload.keep.eq(count != 0), given.payload.end.eq(words.payload.last)]
        m.d.comb += [given.payload.item[i].eq(Mux(count >= i + 1,
                                                  words.payload.lanes[i], 0))
                     for i in range(self.lanes)]
        taken, out = marker.taken, skid.i
        m.d.comb += [out.valid.eq(taken.valid), taken.ready.eq(out.ready),
                     out.payload.pairs.eq(taken.payload.item),
                     out.payload.last.eq(taken.payload.last)]
        wiring.connect(m, skid.o, wiring.flipped(self.pairs))
        return m
