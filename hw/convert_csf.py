"""MINT's Dense-to-CSF converter for 3-D tensors (MINT Section V-B4, Figure 8f), and the
COO-to-CSF and CSF-to-COO converters that share its level records.

A dense tensor streams in, ``L`` elements a vector in row-major order; the CSF tree comes
out level by level, one vector a cycle, through a pipeline of the MINT building blocks:

1. zero detection (Fig. 8f step 2): :class:`~sparseforge.hw.mint_units.ZeroDetect`, the
   vector's nonzero mask.
2. coordinates (step 3): :class:`LaneCoordinates` keeps each lane's ``(i, j, k)`` and
   steps it by ``L`` elements a vector. The paper divides each position by the modes'
   sizes; with ``dim2 >= L`` a vector crosses at most one fiber boundary, so a compare
   and an add or subtract per lane do it, and no divider is needed.
3. the tree's nodes (steps 5-6): :class:`TreeMarks` marks a leaf where the element is
   nonzero, a level-1 node (fiber) where a leaf is its fiber's first and a level-0 node
   (slice) where it is its slice's first.
4. prefix sums per level (step 6): three exclusive prefix-sum units in lockstep
   (:class:`~sparseforge.hw.stream_units.Lockstep`), before a register slice
   (:class:`~sparseforge.hw.stream_units.Skid`), count the nodes of each level: at a
   node's lane, the next level's sum is the index of its first child, its fptr entry.
5. the levels (step 7): one record per level per vector that holds a node of that level,
   ``L`` lanes ``{id, data}`` and a mask, out on ``level0`` .. ``level2``; the memory
   controller appends the masked lanes to fids/fptr (values at the leaves).

COO to CSF (:class:`CooToCsf`) is Fig. 8f after its COO step: sorted records, one a cycle,
whose coordinates compared with the previous nonzero's say where a slice and a fiber begin
(:class:`FiberStarts`), each level's nodes packed into the same level records
(:class:`LevelPacker`). CSF to COO (:class:`CsfToCoo`) takes those records back, each level
one node a cycle, and walks the tree (:class:`TreeWalk`): one record a leaf.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .convert_rlc import Serializer
from .interfaces import struct
from .mint_units import ZeroDetect
from .pipeline import Pipeline
from .prefix_sum import PrefixSum
from .stream_units import Lockstep, Skid

MODES = 3
"""Modes of the tensors the converter takes."""


def lane_layout(index_width):
    """One lane of :class:`LaneCoordinates`: its element's ``coord`` (mode 0 first),
    whether it is in the tensor (``valid``) and whether it begins a fiber or a slice."""
    return data.StructLayout({"coord": data.ArrayLayout(index_width, MODES), "valid": 1,
                              "fiber": 1, "slice": 1})


class LaneCoordinates(wiring.Component):
    """The coordinates of each lane of the next vector of a 3-D tensor (Section V-B4, step 3).

    Each lane keeps its element's ``(i, j, k)`` and flags in registers; a step moves every
    lane ``L`` elements on: ``k + L`` wraps past ``dim2`` at most once (``dim2 >= L``),
    carrying into ``j``, which carries into ``i``. The next flags are equalities with the
    sizes less one (the lane wraps exactly onto a fiber's start where ``k = dim2 - L``),
    computed beside the step; so is ``last``: the vector after the one holding the element
    ``L`` before the last element is the last vector.

    Parameters
    ----------
    lanes : L, elements a vector.
    index_width : bits of a coordinate; a mode's size is at most ``2**index_width``.

    Members
    -------
    dims : In(:func:`~sparseforge.sw.wire.tensor_shape`)
        The tensor's sizes, sampled on ``start``; ``dim2`` at least ``L``.
    start : In(1)
        Starts a tensor: lane ``l`` at ``(0, 0, l)``.
    step : In(1)
        The vector is taken: move on to the next.
    lanes : Out(L x :func:`lane_layout`)
        Registers.
    last : Out(1)
        The vector holds the tensor's last element. A register.

    Latency and throughput: outputs change on the cycle after ``start`` or ``step``; one
    step a cycle. Between registers: a compare, an add or subtract and a multiplexer;
    equalities and an OR of the lanes.
    """

    def __init__(self, lanes, index_width):
        self.lanes_n, self.index_width = lanes, index_width
        super().__init__({
            "dims": In(struct(wire.tensor_shape(index_width + 1, MODES))),
            "start": In(1), "step": In(1),
            "lanes": Out(data.ArrayLayout(lane_layout(index_width), lanes)),
            "last": Out(1)})

    def elaborate(self, platform):
        m = Module()
        L, w = self.lanes_n, self.index_width
        top = [Signal(w + 1, name=f"top{mode}") for mode in (0, 1)]   # sizes less one
        k_back = Signal(w + 1)                              # dim2 - L: a wrap steps k back
        # The element L before the last: a vector holding it is followed by the last one.
        trigger = [Signal(w + 2, name=f"trigger{mode}") for mode in range(MODES)]
        near = []                                           # lanes holding the trigger
        with m.If(self.start):
            size = [self.dims.dim0, self.dims.dim1, self.dims.dim2]
            back = size[2] <= L         # it lies in the fiber before the last one
            m.d.sync += [t.eq(d - 1) for t, d in zip(top, size[:2], strict=True)]
            m.d.sync += [k_back.eq(size[2] - L), self.last.eq((size[0] == 1) & (size[1] == 1)
                                                              & (size[2] == L)),
                         trigger[2].eq(Mux(back, 2 * size[2] - 1 - L, size[2] - 1 - L)),
                         trigger[1].eq(Mux(back, Mux(size[1] == 1, 0, size[1] - 2),
                                           size[1] - 1)),
                         trigger[0].eq(Mux(back & (size[1] == 1), size[0] - 2, size[0] - 1))]
        for lane in range(L):
            out = self.lanes[lane]
            i = Signal(w + 1, name=f"i{lane}")
            j, k = Signal(w, name=f"j{lane}"), Signal(w, name=f"k{lane}")
            flags = Signal(data.StructLayout({"valid": 1, "fiber": 1, "slice": 1}),
                           name=f"flags{lane}")
            m.d.comb += [out.coord[0].eq(i), out.coord[1].eq(j), out.coord[2].eq(k),
                         out.valid.eq(flags.valid), out.fiber.eq(flags.fiber),
                         out.slice.eq(flags.slice)]
            near.append(flags.valid & (i == trigger[0]) & (j == trigger[1])
                        & (k == trigger[2]))
            wrap, onto, j_wrap = k >= k_back, k == k_back, j == top[1]
            with m.If(self.step):
                m.d.sync += [k.eq(Mux(wrap, k - k_back, k + L)),
                             j.eq(Mux(wrap, Mux(j_wrap, 0, j + 1), j)),
                             i.eq(Mux(wrap & j_wrap, i + 1, i)),
                             flags.valid.eq(flags.valid & ~(wrap & j_wrap & (i == top[0]))),
                             flags.fiber.eq(onto), flags.slice.eq(onto & j_wrap)]
            with m.If(self.start):
                m.d.sync += [i.eq(0), j.eq(0), k.eq(lane),
                             flags.eq(flags.shape().const({"valid": 1, "fiber": lane == 0,
                                                           "slice": lane == 0}))]
        with m.If(self.step):
            m.d.sync += self.last.eq(Cat(*near).any())
        return m


def marks_layouts(lanes):
    """:class:`TreeMarks`' payloads: ``{leaves, fiber_starts, slice_starts}`` in (a bit per
    lane); out, the nodes of each level (``level0`` slices .. ``level2`` leaves) and
    ``held``, a bit per level: the vector holds a node of it."""
    given = data.StructLayout({"leaves": lanes, "fiber_starts": lanes, "slice_starts": lanes})
    return given, data.StructLayout({**{f"level{n}": lanes for n in range(MODES)},
                                     "held": MODES})


def firsts(leaves, starts, carry):
    """The lanes holding the first leaf of their segment (segments begin where ``starts``
    is set; ``carry``: the segment open before lane 0 already has one), and whether the
    last lane's segment has one: a segmented OR, lane by lane."""
    seen, out = carry, []
    for leaf, start in zip(leaves, starts, strict=True):
        seen = Mux(start, 0, seen)
        out.append(leaf & ~seen)
        seen = seen | leaf
    return Cat(*out), seen


class TreeMarks(wiring.Component):
    """The CSF tree's nodes in a vector (Section V-B4, Fig. 8f steps 5-6).

    A leaf is a nonzero element; a fiber node (level 1) is a fiber's first leaf and a
    slice node (level 0) a slice's first leaf, across vectors: whether the fiber and the
    slice open at the vector's end hold a leaf is carried to the next vector. (A tensor's
    first lane begins a fiber and a slice, so nothing carries from one tensor to the next.)

    Parameters
    ----------
    lanes : L, elements a vector.

    Members
    -------
    given : In(stream({leaves, fiber_starts, slice_starts}))
        A bit per lane: nonzero elements, lanes that begin a fiber, lanes that begin a
        slice (a slice's first lane begins a fiber too).
    marked : Out(stream({level0, level1, level2, held}))
        The lanes holding a slice node, a fiber node, a leaf; whether any lane does.

    Latency and throughput: 1 cycle; one vector a cycle while ``marked`` is taken. The
    segmented OR is ``L`` gates deep.
    """

    latency = 1

    def __init__(self, lanes):
        given, marked = marks_layouts(lanes)
        super().__init__({"given": In(stream.Signature(given)),
                          "marked": Out(stream.Signature(marked))})

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.given, self.marked)
        given = self.given.payload
        fiber_seen, slice_seen = Signal(), Signal()
        fibers, fiber_open = firsts(given.leaves, given.fiber_starts, fiber_seen)
        slices, slice_open = firsts(given.leaves, given.slice_starts, slice_seen)
        with m.If(pipe.advance & pipe.valid):
            m.d.sync += [fiber_seen.eq(fiber_open), slice_seen.eq(slice_open)]
        nodes = [slices, fibers, given.leaves]
        out = pipe.stage({**{f"level{n}": mask for n, mask in enumerate(nodes)},
                          "held": Cat(mask.any() for mask in nodes)})
        pipe.finish()
        m.d.comb += [self.marked.payload[name].eq(value) for name, value in out.items()]
        return m


def csf_level_layout(lanes, id_width, data_width, count_width):
    """A CSF level record: ``lanes`` x :func:`~sparseforge.sw.wire.csf_node`, then
    :func:`~sparseforge.sw.wire.csf_level_end`'s ``{mask, last, total}``."""
    return data.StructLayout({
        "lanes": data.ArrayLayout(struct(wire.csf_node(id_width, data_width)), lanes),
        **{f.name: f.width for f in wire.csf_level_end(lanes, count_width)}})


def level_streams(flow, lanes, index_width, count_width, value_width):
    """The members ``level0`` .. ``level2`` of a CSF converter, streams of
    :func:`csf_level_layout` records flowing ``flow`` (``Out`` from Dense-to-CSF and
    COO-to-CSF, ``In`` to CSF-to-COO): pointers at levels 0 and 1, values at level 2."""
    return {f"level{n}": flow(stream.Signature(csf_level_layout(
        lanes, index_width, value_width if n == MODES - 1 else count_width, count_width)))
        for n in range(MODES)}


class DenseToCsfSignature(wiring.Signature):
    """A Dense-to-CSF converter of 3-D tensors, seen from it: ``lanes`` elements a vector,
    coordinates of ``index_width`` bits, node counts and pointers of ``count_width`` bits,
    ``value_width``-bit values.

    A tensor is one ``shape``, then its elements. Protocol, per tensor:

    - ``shape`` (stream in, :func:`~sparseforge.sw.wire.tensor_shape`): ``dim0..dim2``,
      each from 1 to ``2**index_width``, ``dim2`` at least ``lanes``; taken between
      tensors.
    - ``dense`` (stream in, ``lanes`` values): the elements in row-major order, lane 0
      first, ``ceil(dim0 * dim1 * dim2 / lanes)`` vectors; lanes past the last element
      are ignored.
    - ``level0``, ``level1``, ``level2`` (streams out, :func:`csf_level_layout`): the
      tree's levels (mode 0 to mode 2), one record per vector that holds a node of that
      level, and a record for the tensor's last vector on every level. A record's lanes
      whose ``mask`` bit is set are its nodes, in order: ``id`` is the node's fids entry,
      ``data`` its fptr entry (the index of its first child on the next level) or, on
      ``level2``, its value's bits. ``total`` counts the level's nodes so far: on the
      ``last`` record of ``level1`` and ``level2``, the final entries of ``fptr0`` and
      ``fptr1``. Counts and pointers wrap modulo ``2**count_width``.
    """

    def __init__(self, lanes, index_width, count_width, value_width):
        super().__init__({
            "shape": In(stream.Signature(struct(wire.tensor_shape(index_width + 1)))),
            "dense": In(stream.Signature(data.ArrayLayout(value_width, lanes))),
            **level_streams(Out, lanes, index_width, count_width, value_width),
        })


class _CsfConverter(wiring.Component):
    """A converter to or from CSF: its widths from ``PARAMS`` (Dense-to-CSF's) and its
    ``SIGNATURE`` built from them."""

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.index_width = v["lanes"], v["index_width"]
        self.count_width, self.value_width = v["count_width"], v["value_width"]
        super().__init__(self.SIGNATURE(self.lanes, self.index_width, self.count_width,
                                        self.value_width))


@block("dense_to_csf")
class DenseToCsf(_CsfConverter):
    """Dense to CSF for 3-D tensors, L elements a cycle: a prefix sum per level (Fig. 8f).

    MINT Section V-B4: zero detection, coordinates, tree marks and a prefix sum per level.
    The module docstring gives the pipeline. A tensor is a ``shape`` and its elements; the
    levels' records reproduce :class:`sparseforge.sw.conversion.CSF`: append the masked
    lanes of each level's records, ``id`` to ``fids``, ``data`` to ``fptr`` (levels 0 and
    1) or ``values`` (level 2), then close ``fptr0`` and ``fptr1`` with the ``total`` of
    the ``last`` record of level 1 and level 2.

    Parameters
    ----------
    lanes : L, elements a vector (a power of two); a tensor's ``dim2`` is at least L.
    index_width : bits of a coordinate: modes of up to ``2**index_width``.
    count_width : bits of node counts and pointers: a tensor's nonzeros are below
        ``2**count_width``.
    value_width : bits of a value (carried, never interpreted, but for comparing with 0:
        a float's bits, where -0.0 would be a nonzero; hosts send it as 0).

    Members
    -------
    shape : In(stream(:func:`~sparseforge.sw.wire.tensor_shape`))
    dense : In(stream(L x value))
    level0, level1, level2 : Out(stream(:func:`~sparseforge.hw.convert_csf.csf_level_layout`))
        As :class:`~sparseforge.hw.convert_csf.DenseToCsfSignature` says.

    Latency and throughput: a vector's records are out ``2 + 1 + P + 1 + 1`` cycles after
    it is taken (zero detection, marks, the prefix sums' latency P, a register slice, the
    output registers); one vector (``L`` elements) a cycle while the records it makes are
    taken. Each level has its own output register: a level taken late holds the vector
    only once its register is full. Between registers: the lanes' coordinate steps; the
    segmented OR of the tree marks (``L`` gates); the prefix sums' adders; the stall path
    from the outputs' readiness to the register slice.

    Clock: below 100 MHz on the ECP5 (the synthesis report). The critical path is the
    stall: at 8 lanes the prefix sums' tag's handshake into the enables of the lanes'
    coordinate registers, four fifths routing; at 16 lanes the stall path from the
    register slice back to ``dense.ready`` through the prefix sums, marks and zero
    detection, longer still.
    """

    PARAMS = (
        Param("lanes", 8, 1, 16, "elements a vector (L); a tensor's dim2 is at least L",
              pow2=True),
        Param("index_width", 12, 1, 32, "bits of a coordinate (modes up to 2**index_width)"),
        Param("count_width", 20, 1, 48, "bits of node counts and pointers (fewer nonzeros "
              "than 2**count_width)"),
        Param("value_width", 32, 1, 64, "bits of a value"),
    )
    REPORT = ({}, {"lanes": 16})
    SIGNATURE = DenseToCsfSignature

    def elaborate(self, platform):
        m = Module()
        L, levels = self.lanes, [f"level{n}" for n in range(MODES)]
        carried = {"ids": data.ArrayLayout(data.ArrayLayout(self.index_width, MODES), L),
                   "values": data.ArrayLayout(self.value_width, L), "last": 1}
        m.submodules.detect = detect = ZeroDetect(lanes=L, width=self.value_width)
        m.submodules.coords = coords = LaneCoordinates(L, self.index_width)
        m.submodules.marks = marks = Lockstep({"marks": TreeMarks(L)},
                                              data.StructLayout(carried))
        m.submodules.sums = sums = Lockstep(
            {name: PrefixSum(lanes=L, width=self.count_width) for name in levels},
            data.StructLayout({**carried, "masks": marks_layouts(L)[1]}))
        wiring.connect(m, wiring.flipped(self.dense), detect.values)

        # Coordinates join each detected vector once the tensor's shape is in.
        armed = Signal()
        given, lanes, found = marks.given, coords.lanes, detect.detect
        m.d.comb += [
            self.shape.ready.eq(~armed), coords.start.eq(self.shape.valid & ~armed),
            coords.dims.eq(self.shape.payload),
            given.valid.eq(found.valid & armed), found.ready.eq(given.ready & armed),
            coords.step.eq(given.valid & given.ready),
            given.payload.marks.leaves.eq(found.payload.mask & Cat(x.valid for x in lanes)),
            given.payload.marks.fiber_starts.eq(Cat(x.fiber for x in lanes)),
            given.payload.marks.slice_starts.eq(Cat(x.slice for x in lanes)),
            given.payload.tag.values.eq(found.payload.values),
            given.payload.tag.last.eq(coords.last),
        ]
        m.d.comb += [given.payload.tag.ids[n].eq(x.coord) for n, x in enumerate(lanes)]
        with m.If(coords.start):
            m.d.sync += armed.eq(1)
        with m.If(coords.step & coords.last):
            m.d.sync += armed.eq(0)

        # Each level counts its nodes; a register slice after the counts cuts the stall path
        # from the outputs to the input in two.
        marked, counting = marks.taken, sums.given
        m.submodules.cut = cut = Skid(sums.taken.payload.shape())
        wiring.connect(m, sums.taken, cut.i)
        m.d.comb += [counting.valid.eq(marked.valid), marked.ready.eq(counting.ready),
                     counting.payload.tag.masks.eq(marked.payload.marks)]
        m.d.comb += [counting.payload.tag[name].eq(marked.payload.tag[name]) for name in carried]
        for name in levels:
            m.d.comb += counting.payload[name].last.eq(marked.payload.tag.last)
            m.d.comb += [counting.payload[name].counts[n].eq(bit)
                         for n, bit in enumerate(marked.payload.marks[name])]

        # The levels' records, each level's from the counts of the level below.
        counted = cut.o
        tag = counted.payload.tag
        m.submodules.records = records = LevelRecords(L, self.index_width, self.count_width,
                                                      self.value_width)
        for name in levels:
            wiring.connect(m, getattr(records, name), wiring.flipped(getattr(self, name)))
        out = records.records
        m.d.comb += [out.valid.eq(counted.valid), counted.ready.eq(out.ready)]
        for n, name in enumerate(levels):
            record = out.payload[name]
            m.d.comb += [record.mask.eq(tag.masks[name]), record.last.eq(tag.last),
                         record.total.eq(counted.payload[name].total)]
            for lane in range(L):
                child = (tag.values[lane] if n == MODES - 1
                         else counted.payload[levels[n + 1]].sums[lane])
                m.d.comb += [record.lanes[lane].id.eq(tag.ids[lane][n]),
                             record.lanes[lane].data.eq(child)]
        return m


class LevelRecords(wiring.Component):
    """A vector's records on the three CSF levels, each into its own output register.

    A vector makes a record on a level where it holds a node of it (a ``mask`` bit) or
    ends the tensor (``last``). Each level's register is taken on its own stream; the
    vector moves on once every record it makes is loaded, so a level taken late holds
    the vector only once its register is full.

    Parameters
    ----------
    lanes, index_width, count_width, value_width : as :class:`DenseToCsf`'s.

    Members
    -------
    records : In(stream({level0, level1, level2}))
        Each a :func:`csf_level_layout` record, sent on its level if it makes one.
    level0, level1, level2 : Out(stream(:func:`csf_level_layout`))

    Latency and throughput: 1 cycle; one vector a cycle while its records are taken.
    """

    def __init__(self, lanes, index_width, count_width, value_width):
        levels = level_streams(Out, lanes, index_width, count_width, value_width)
        super().__init__({
            "records": In(stream.Signature(data.StructLayout(
                {name: member.signature.members["payload"].shape
                 for name, member in levels.items()}))),
            **levels})

    def elaborate(self, platform):
        m = Module()
        given = self.records
        sent = Signal(MODES)                                # records of this vector loaded
        done, loads = [], []
        for n in range(MODES):
            out, record = getattr(self, f"level{n}"), given.payload[f"level{n}"]
            free, need = ~out.valid | out.ready, record.mask.any() | record.last
            load = Signal(name=f"load{n}")
            m.d.comb += load.eq(given.valid & need & ~sent[n] & free)
            with m.If(free):
                m.d.sync += [out.valid.eq(load), out.payload.eq(record)]
            done.append(~need | sent[n] | free)
            loads.append(load)
        m.d.comb += given.ready.eq(Cat(*done).all())
        with m.If(given.valid & given.ready):
            m.d.sync += sent.eq(0)
        with m.Else():
            m.d.sync += sent.eq(sent | Cat(*loads))
        return m


# -- COO to CSF: the tree built from sorted records, one a cycle ------------------------------

def marked_layout(index_width, value_width):
    """:class:`FiberStarts`' output: the ``record`` as given and whether it is a ``leaf``
    (a nonzero), begins a ``fiber`` and begins a ``slice``."""
    return data.StructLayout({"record": struct(wire.tensor_record(index_width, value_width)),
                              "leaf": 1, "fiber": 1, "slice": 1})


class FiberStarts(wiring.Component):
    """Which COO records begin a fiber or a slice: MINT's comparators on sorted records.

    In lexicographic order, a nonzero begins a slice (a level-0 node) where its ``i``
    differs from the previous nonzero's, or it is its tensor's first, and a fiber (a
    level-1 node) where it begins a slice or its ``j`` differs; every nonzero is a leaf.
    A record of value 0 is none of these and leaves the previous nonzero's coordinates in
    place; ``last`` makes the next record a tensor's first.

    Parameters
    ----------
    index_width, value_width : bits of a coordinate and of a value.

    Members
    -------
    records : In(stream(:func:`~sparseforge.sw.wire.tensor_record`))
    marked : Out(stream(:func:`marked_layout`))
        One per record, in order.

    Latency and throughput: 1 cycle; one record a cycle while ``marked`` is taken. Between
    registers: two equality comparators of ``index_width`` bits and the value's zero test.
    """

    latency = 1

    def __init__(self, index_width, value_width):
        self.index_width = index_width
        layout = marked_layout(index_width, value_width)
        super().__init__({"records": In(stream.Signature(layout["record"].shape)),
                          "marked": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        pipe = Pipeline(m, self.records, self.marked)
        given = self.records.payload
        prev_i, prev_j = Signal(self.index_width), Signal(self.index_width)
        fresh = Signal(init=1)                          # no nonzero yet in this tensor
        leaf = Signal()
        starts = Signal(2)                              # a slice, a fiber
        m.d.comb += [leaf.eq(given.value != 0),
                     starts[0].eq(leaf & (fresh | (given.i != prev_i))),
                     starts[1].eq(leaf & (starts[0] | (given.j != prev_j)))]
        with m.If(self.records.valid & self.records.ready):
            with m.If(leaf):
                m.d.sync += [prev_i.eq(given.i), prev_j.eq(given.j), fresh.eq(0)]
            with m.If(given.last):
                m.d.sync += fresh.eq(1)
        out = pipe.stage({"record": given, "leaf": leaf, "fiber": starts[1],
                          "slice": starts[0]})
        pipe.finish()
        m.d.comb += [self.marked.payload[name].eq(value) for name, value in out.items()]
        return m


def node_item_layout(id_width, data_width):
    """An item into :class:`LevelPacker`: whether it ``held`` a ``node``
    (:func:`~sparseforge.sw.wire.csf_node`), and ``last``, the tensor's end."""
    return data.StructLayout({"node": struct(wire.csf_node(id_width, data_width)), "held": 1,
                              "last": 1})


class LevelPacker(wiring.Component):
    """A CSF level's nodes, up to one a cycle, packed ``L`` to a level record.

    Nodes fill a record's lanes from lane 0, in order; the record goes out once ``L``
    lanes are full or the tensor ends (``last``: the record then holds the rest, none
    perhaps), so a level of n nodes of which m come before the tensor's final item takes
    ``m // L + 1`` records. ``total`` is the level's nodes through the record.

    Parameters
    ----------
    lanes : L, nodes a record.
    id_width, data_width, count_width : bits of a node's id and data, and of counts.

    Members
    -------
    nodes : In(stream(:func:`node_item_layout`))
    level : Out(stream(:func:`csf_level_layout`))
    count : Out(count_width)
        The level's nodes in this tensor before the item on ``nodes`` (a register): the
        index the item's node takes, the fptr entry of its parent.

    Latency and throughput: the record is out the cycle after its final item is taken; one
    item a cycle, the record being built doubling as the output register, so an item waits
    only while a full record is held. Between registers: an adder, a lane decoder.
    """

    def __init__(self, lanes, id_width, data_width, count_width):
        self.lanes = lanes
        super().__init__({
            "nodes": In(stream.Signature(node_item_layout(id_width, data_width))),
            "level": Out(stream.Signature(csf_level_layout(lanes, id_width, data_width,
                                                           count_width))),
            "count": Out(count_width)})

    def elaborate(self, platform):
        m = Module()
        L, given, out = self.lanes, self.nodes.payload, self.level
        fill = Signal(range(L + 1))                     # lanes of the record filled so far
        free = ~out.valid | out.ready
        base = Signal(range(L + 1))                     # the lane the item's node takes
        m.d.comb += [self.nodes.ready.eq(free), base.eq(Mux(out.valid, 0, fill))]
        with m.If(out.valid & out.ready):
            m.d.sync += [out.valid.eq(0), fill.eq(0), out.payload.mask.eq(0)]
        into = Signal(L)                                # the lane the node goes to, if any
        m.d.comb += into.eq(Cat(given.held & (base == lane) for lane in range(L)))
        with m.If(self.nodes.valid & free):
            held, mask = given.held, Mux(out.valid, 0, out.payload.mask)
            m.d.sync += [fill.eq(base + held), out.payload.mask.eq(mask | into),
                         out.payload.last.eq(given.last),
                         out.payload.total.eq(self.count + held),
                         out.valid.eq((base + held == L) | given.last),
                         self.count.eq(Mux(given.last, 0, self.count + held))]
            for lane in range(L):
                with m.If(into[lane]):
                    m.d.sync += out.payload.lanes[lane].eq(given.node)
        return m


class CooToCsfSignature(wiring.Signature):
    """A COO-to-CSF converter of 3-D tensors, seen from it: :class:`DenseToCsfSignature`'s
    levels out from sorted records in. Protocol, per tensor:

    - ``records`` (stream in, :func:`~sparseforge.sw.wire.tensor_record`): the tensor's
      nonzeros in lexicographic order of ``(i, j, k)``, one per coordinate, ``last`` on the
      final record; a record of value 0 makes no node (a tensor with no nonzeros is one
      such record, with ``last``).
    - ``level0``, ``level1``, ``level2`` (streams out, :func:`csf_level_layout`): as
      :class:`DenseToCsfSignature` says, each record's nodes in lanes from lane 0, ``L``
      a record but the tensor's final record on each level, which holds the rest.
    """

    def __init__(self, lanes, index_width, count_width, value_width):
        super().__init__({
            "records": In(stream.Signature(struct(wire.tensor_record(index_width,
                                                                     value_width)))),
            **level_streams(Out, lanes, index_width, count_width, value_width),
        })


@block("coo_to_csf")
class CooToCsf(_CsfConverter):
    """COO to CSF for 3-D tensors: one sorted record a cycle in, the tree's levels out.

    MINT's Dense-to-CSF (Fig. 8f) after its COO step: the records come sorted, so a
    comparison of each record's coordinates with the previous nonzero's
    (:class:`FiberStarts`) finds the slices and fibers that begin, and a counter per level
    gives each node its index. A slice node's fptr entry is the index of the fiber the same
    record begins (level 1's count), a fiber node's the index of its leaf (level 2's
    count). Each level's :class:`LevelPacker` packs its nodes ``L`` to a record, in
    :class:`DenseToCsf`'s output layouts, so one decoding (append the masked lanes, close
    fptr with the ``last`` records' totals) serves both.

    Parameters
    ----------
    lanes : L, nodes a level record (a power of two).
    index_width : bits of a coordinate: modes of up to ``2**index_width``.
    count_width : bits of node counts and pointers: fewer than ``2**count_width`` nonzeros.
    value_width : bits of a value (carried, compared with 0: a float's -0.0 would be a
        nonzero; hosts send it as 0).

    Members
    -------
    records : In(stream(:func:`~sparseforge.sw.wire.tensor_record`))
    level0, level1, level2 : Out(stream(:func:`csf_level_layout`))
        As :class:`CooToCsfSignature` says.

    Latency and throughput: a record's nodes are in their records' registers 2 cycles after
    it is taken (the comparators' register, the packers'); one record a cycle while the
    levels' full records are taken. The packers take a record together: a full record
    held on one level holds the input. Between registers: the comparators; the packers'
    count adders and lane decoders; the stall path from the levels' ``ready`` through the
    packers to ``records.ready``.
    """

    PARAMS = DenseToCsf.PARAMS
    REPORT = ({},)
    SIGNATURE = CooToCsfSignature

    def elaborate(self, platform):
        m = Module()
        m.submodules.starts = starts = FiberStarts(self.index_width, self.value_width)
        wiring.connect(m, wiring.flipped(self.records), starts.records)
        packers = []
        for n in range(MODES):
            width = self.value_width if n == MODES - 1 else self.count_width
            packer = LevelPacker(self.lanes, self.index_width, width, self.count_width)
            m.submodules[f"pack{n}"] = packer
            wiring.connect(m, packer.level, wiring.flipped(getattr(self, f"level{n}")))
            packers.append(packer)
        marked = starts.marked
        record, ready = marked.payload.record, Signal()
        m.d.comb += [ready.eq(Cat(p.nodes.ready for p in packers).all()),
                     marked.ready.eq(ready)]
        held = [marked.payload.slice, marked.payload.fiber, marked.payload.leaf]
        ids = [record.i, record.j, record.k]
        # a slice's first child is the fiber its record begins, a fiber's the leaf
        children = [packers[1].count, packers[2].count, record.value]
        for n, packer in enumerate(packers):
            item = packer.nodes.payload
            m.d.comb += [packer.nodes.valid.eq(marked.valid & ready), item.held.eq(held[n]),
                         item.last.eq(record.last), item.node.id.eq(ids[n]),
                         item.node.data.eq(children[n])]
        return m


# -- CSF to COO: the tree walked, one leaf a cycle ---------------------------------------------

def level_item_layout(id_width, data_width):
    """A level's nodes one at a time into :class:`TreeWalk`: a node's ``id`` and ``data``
    (its fptr entry, or its value), or, with ``end``, the level's end (``data`` its total)."""
    return data.StructLayout({"id": id_width, "data": data_width, "end": 1})


def walk_input(id_width, data_width):
    """A stream into :class:`TreeWalk`: a :class:`~sparseforge.hw.convert_rlc.Serializer`'s
    items of :func:`level_item_layout`."""
    return stream.Signature(data.StructLayout({"item": level_item_layout(id_width,
                                                                         data_width),
                                               "last": 1}))


class TreeWalk(wiring.Component):
    """Each leaf given its slice's and fiber's ids: the CSF tree walked in order.

    The leaves come in order, and so do the fibers and the slices; a fiber's fptr entry is
    the index of its first leaf, a slice's that of its first fiber. So the fiber at the head
    of its stream begins at leaf ``n`` exactly when its entry equals ``n`` (a comparator),
    and is then taken as the current fiber; the slice at its head begins with it when its
    entry equals the fibers taken so far. Each record is held a cycle, until the next item
    on ``leaves`` says whether it was the tensor's final one (``last``); a tensor with no
    leaf gives one record of value 0, with ``last``.

    Parameters
    ----------
    index_width, count_width, value_width : bits of an id, of a pointer, of a value.

    Members
    -------
    slices, fibers : In(:func:`walk_input` (index_width, count_width))
    leaves : In(:func:`walk_input` (index_width, value_width))
        Each level's nodes in order, then its ``end``.
    records : Out(stream(:func:`~sparseforge.sw.wire.tensor_record`))
        One per leaf, in lexicographic order.

    Latency and throughput: a leaf's record is out 2 cycles after the leaf is taken (the
    held record, the output register), 1 after the next item; one leaf a cycle, and a cycle
    for each tensor's end. A leaf waits for the fiber at its head, and, where that fiber
    begins at it, for the slice at its own. Between registers: two equality comparators of
    ``count_width`` bits into the three ``ready`` s.
    """

    def __init__(self, index_width, count_width, value_width):
        self.index_width, self.count_width = index_width, count_width
        super().__init__({
            "slices": In(walk_input(index_width, count_width)),
            "fibers": In(walk_input(index_width, count_width)),
            "leaves": In(walk_input(index_width, value_width)),
            "records": Out(stream.Signature(struct(wire.tensor_record(index_width,
                                                                      value_width))))})

    def elaborate(self, platform):
        m = Module()
        slices, fibers, leaves, out = self.slices, self.fibers, self.leaves, self.records
        s, f, leaf = slices.payload.item, fibers.payload.item, leaves.payload.item
        leaf_n, fiber_n = Signal(self.count_width), Signal(self.count_width)  # taken so far
        at = [Signal(self.index_width, name=f"current{n}") for n in range(2)]  # slice, fiber
        pending = Signal(out.payload.shape())           # the record held a cycle
        held = Signal()
        new_fiber, new_slice, go = Signal(), Signal(), Signal()
        ready = Mux(leaf.end | new_fiber, slices.valid, 1)
        m.d.comb += [new_fiber.eq(~f.end & (f.data == leaf_n)),
                     new_slice.eq(new_fiber & ~s.end & (s.data == fiber_n)),
                     go.eq(leaves.valid & fibers.valid & ready & (~out.valid | out.ready)),
                     leaves.ready.eq(go), fibers.ready.eq(go & (leaf.end | new_fiber)),
                     slices.ready.eq(go & (leaf.end | new_slice))]
        coords = [Mux(new_slice, s.id, at[0]), Mux(new_fiber, f.id, at[1])]
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(go & leaf.end):
            m.d.sync += [out.valid.eq(1), out.payload.eq(Mux(held, pending, 0)),
                         out.payload.last.eq(1), held.eq(0), leaf_n.eq(0), fiber_n.eq(0)]
        with m.Elif(go):
            m.d.sync += [out.valid.eq(held), out.payload.eq(pending), held.eq(1),
                         leaf_n.eq(leaf_n + 1), fiber_n.eq(fiber_n + new_fiber),
                         pending.i.eq(coords[0]), pending.j.eq(coords[1]),
                         pending.k.eq(leaf.id), pending.value.eq(leaf.data)]
            m.d.sync += [a.eq(c) for a, c in zip(at, coords, strict=True)]
        return m


class CsfToCooSignature(wiring.Signature):
    """A CSF-to-COO converter of 3-D tensors, seen from it: :class:`DenseToCsfSignature`'s
    levels in, sorted records out. Protocol, per tensor:

    - ``level0``, ``level1``, ``level2`` (streams in, :func:`csf_level_layout`): each level's
      nodes in order, in the lanes its records' ``mask`` bits mark (any number a record,
      none included), ``last`` on the level's final record, whose ``total`` is ignored
      (each ``fptr``'s final entry is implied by the nodes). A well-formed CSF tree: every
      node has a child.
    - ``records`` (stream out, :func:`~sparseforge.sw.wire.tensor_record`): a record per
      leaf in lexicographic order, ``last`` on the final one; a tensor with no leaf gives
      one record of value 0, with ``last``.
    """

    def __init__(self, lanes, index_width, count_width, value_width):
        super().__init__({
            **level_streams(In, lanes, index_width, count_width, value_width),
            "records": Out(stream.Signature(struct(wire.tensor_record(index_width,
                                                                      value_width)))),
        })


@block("csf_to_coo")
class CsfToCoo(_CsfConverter):
    """CSF to COO for 3-D tensors: the levels in, one leaf's record a cycle out.

    The inverse of Fig. 8f: each level's records go through a
    :class:`~sparseforge.hw.convert_rlc.Serializer` (its nodes one a cycle, the level's end
    after them as an extra lane marked on the ``last`` record), and :class:`TreeWalk` gives
    each leaf the ids of the slice and fiber it hangs from by comparing the fptr entries at
    the heads of the slice and fiber streams with the counts of leaves and fibers walked.

    Parameters
    ----------
    lanes : L, nodes a level record (a power of two).
    index_width, count_width, value_width : as :class:`DenseToCsf`'s; a tensor's nonzeros
        are below ``2**count_width``.

    Members
    -------
    level0, level1, level2 : In(stream(:func:`csf_level_layout`))
    records : Out(stream(:func:`~sparseforge.sw.wire.tensor_record`))
        As :class:`CsfToCooSignature` says.

    Latency and throughput: a leaf's record is out 4 cycles after its level record is
    taken (the serializer's 2, the walk's 2) when its fiber and slice are at their heads;
    one leaf a cycle, and a cycle for each tensor's end, while ``records`` is taken. The
    levels above run ahead of the leaves in their serializers. Between registers: the
    serializers' lowest-set-bit selection over ``L + 1`` lanes; the walk's comparators of
    the leaf and fiber counts with the fptr entries at the heads, into the three streams'
    ``ready`` and the serializers' registers behind them: the critical path (the synthesis
    report).
    """

    PARAMS = DenseToCsf.PARAMS
    REPORT = ({},)
    SIGNATURE = CsfToCooSignature

    def elaborate(self, platform):
        m = Module()
        L = self.lanes
        m.submodules.walk = walk = TreeWalk(self.index_width, self.count_width,
                                            self.value_width)
        wiring.connect(m, walk.records, wiring.flipped(self.records))
        for n, into in enumerate((walk.slices, walk.fibers, walk.leaves)):
            level = getattr(self, f"level{n}")
            width = self.value_width if n == MODES - 1 else self.count_width
            serial = Serializer(level_item_layout(self.index_width, width), L + 1)
            m.submodules[f"serial{n}"] = serial
            wiring.connect(m, serial.items, into)
            given, vector = level.payload, serial.vectors
            m.d.comb += [vector.valid.eq(level.valid), level.ready.eq(vector.ready),
                         vector.payload.mask.eq(Cat(given.mask, given.last)),
                         vector.payload.last.eq(given.last),
                         vector.payload.items[L].end.eq(1),
                         vector.payload.items[L].data.eq(given.total)]
            m.d.comb += [vector.payload.items[lane].id.eq(given.lanes[lane].id)
                         for lane in range(L)]
            m.d.comb += [vector.payload.items[lane].data.eq(given.lanes[lane].data)
                         for lane in range(L)]
        return m
