"""MINT's Dense-to-CSF converter for 3-D tensors (MINT Section V-B4, Figure 8f).

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
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
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
        node = csf_level_layout(lanes, index_width, count_width, count_width)
        leaf = csf_level_layout(lanes, index_width, value_width, count_width)
        super().__init__({
            "shape": In(stream.Signature(struct(wire.tensor_shape(index_width + 1)))),
            "dense": In(stream.Signature(data.ArrayLayout(value_width, lanes))),
            "level0": Out(stream.Signature(node)),
            "level1": Out(stream.Signature(node)),
            "level2": Out(stream.Signature(leaf)),
        })


@block("dense_to_csf")
class DenseToCsf(wiring.Component):
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
    from the outputs' readiness to the register slice. At 16 lanes the stall path from the
    register slice back to ``dense.ready`` through the prefix sums, marks and zero
    detection is the critical path and takes it under 100 MHz (the synthesis report).
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

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.index_width = v["lanes"], v["index_width"]
        self.count_width, self.value_width = v["count_width"], v["value_width"]
        super().__init__(DenseToCsfSignature(self.lanes, self.index_width, self.count_width,
                                             self.value_width))

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

        # The levels' records: each into its own output register, taken on its own stream;
        # the vector moves on once every record it makes is loaded.
        counted = cut.o
        tag = counted.payload.tag
        sent = Signal(MODES)                                # records of this vector loaded
        done, loads = [], []
        for n, name in enumerate(levels):
            out = getattr(self, name)
            record = Signal(out.payload.shape(), name=f"record{n}")
            # the vector makes a record on the level: a node of it, or the tensor's end
            free, need = ~out.valid | out.ready, tag.masks.held[n] | tag.last
            load = Signal(name=f"load{n}")
            m.d.comb += [record.mask.eq(tag.masks[name]), record.last.eq(tag.last),
                         record.total.eq(counted.payload[name].total),
                         load.eq(counted.valid & need & ~sent[n] & free)]
            for lane in range(L):
                child = (tag.values[lane] if n == MODES - 1
                         else counted.payload[levels[n + 1]].sums[lane])
                m.d.comb += [record.lanes[lane].id.eq(tag.ids[lane][n]),
                             record.lanes[lane].data.eq(child)]
            with m.If(free):
                m.d.sync += [out.valid.eq(load), out.payload.eq(record)]
            done.append(~need | sent[n] | free)
            loads.append(load)
        m.d.comb += counted.ready.eq(Cat(*done).all())
        with m.If(counted.valid & counted.ready):
            m.d.sync += sent.eq(0)
        with m.Else():
            m.d.sync += sent.eq(sent | Cat(*loads))
        return m
