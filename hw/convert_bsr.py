"""MINT's CSR-to-BSR converter (MINT Section V-B3, Figure 8e).

Figure 8e walks the matrix a block row (R rows) at a time (step 1); divide and
modulo find each nonzero's block (step 2); comparators and flags tell a block
already started from a new one, whose column is appended, and zeros fill what
the nonzeros leave of a block (step 3); block row after block row (step 4); a
prefix sum turns the block counts into the block-row pointers (step 5).

A block row's R rows arrive one after another, each sorted by column, and BSR
wants its blocks by block column, a block's elements together: an R-way merge.
Each nonzero waits in the scratchpad bank of its row within the block row
(:class:`Banks`: a FIFO in block RAM per row, built on
``amaranth.lib.memory.Memory``, and its head in a register); each cycle the
comparators of :class:`Merge` pick, among the heads of the block row's rows, the
smallest block column (the lowest row on a tie). The nonzeros then leave grouped
by block, and by row and column within one, so :class:`Assembler` starts a block
where the block column changes (or a block row starts) and sends the block
before when the next starts. The merge needs no sort or histogram: the paper's
cluster counter and sorter group a chunk's indices into bins, which here would be
a block row's block columns, as many as the matrix is wide; the rows arrive
sorted, so comparators over R heads do it at one nonzero a cycle.

The sub-units, in stream order: :class:`RowBlocks` (row pointers to each block
row's row lengths) and a :class:`~sparseforge.hw.stream_units.Queue` of them;
:class:`Tagger` (each nonzero's row within its block row); a
:class:`~sparseforge.hw.divider.DivMod` lane with the values
:class:`~sparseforge.hw.stream_units.Beside` it (block column and column within the
block), between two :class:`~sparseforge.hw.stream_units.Skid` register slices;
:class:`Banks`; :class:`Merge`, its descriptors through another
:class:`~sparseforge.hw.stream_units.Queue`; :class:`Assembler`; and a
:class:`~sparseforge.hw.prefix_sum.PrefixSum` (the block-row pointers).

Longer rows: a bank holds ``depth`` nonzeros, a parameter, never a matrix's row. A matrix
whose rows (but the last of each block row) are longer goes through in passes of whole
block columns, each a matrix of its own to the block, planned and joined by the host
(:mod:`sparseforge.sw.passes`).

BSR to COO (:class:`BsrToCoo`) is the way back: a block row's rows interleave across its
blocks in row-major order, so it reads the block row's blocks from memory R times, a block
a cycle, and takes row ``i`` of each on pass ``i`` (:class:`SliceWalker`, :class:`Slicer`);
the coordinates come from counters, and the fill is dropped as RLC to COO drops its
fillers (:class:`~sparseforge.hw.convert_rlc.Serializer`).
"""

import functools
import operator

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .convert_rlc import EndMarker, Serializer
from .divider import DivMod
from .interfaces import divmod_layout, prefix_sum_layouts, struct
from .prefix_sum import PrefixSum
from .stream_units import Beside, MemoryPortSignature, Queue, Skid, any_of, lowest

QUEUE = 18
"""Block-row descriptors a queue holds beyond the divider's latency."""

TAGS = 8
"""Reads BSR to COO has in flight: its tags' queue, beyond the memory's latency."""


def descriptor_layout(rows, width):
    """A block row: the ``lengths`` of its ``rows`` rows, and ``last`` on a matrix's end
    marker (which has no rows)."""
    return data.StructLayout({"lengths": data.ArrayLayout(width, rows), "last": 1})


def tagged_layout(rows, width, value_width):
    """A nonzero with ``row``, its row within the block row."""
    return data.StructLayout({"col": width, "value": value_width, "row": range(rows)})


def bank_layout(cols, width, value_width):
    """A nonzero in a bank: its ``block_col``, ``col`` within the block, and value."""
    return data.StructLayout({"block_col": width, "col": range(cols), "value": value_width})


def banked_layout(block, width, value_width):
    """A nonzero on its way into the banks: :func:`bank_layout` and its ``row`` (its bank)."""
    return data.StructLayout({**bank_layout(block[1], width, value_width).members,
                              "row": range(block[0])})


def merged_layout(block, width, value_width):
    """A merged nonzero (``entry``) with its ``row`` in the block, or none (an empty block
    row); ``row_end`` on a block row's final one, ``last`` on a matrix's end marker."""
    return data.StructLayout({**bank_layout(block[1], width, value_width).members,
                              "row": range(block[0]), "entry": 1, "row_end": 1, "last": 1})


def _binary(onehot):
    """The index of the set bit of ``onehot``: bit ``b`` is the OR of the bits whose index
    has bit ``b`` set."""
    count = len(onehot)
    return Cat(any_of(onehot[k] for k in range(count) if k >> b & 1)
               for b in range((count - 1).bit_length()))


class Remaining:
    """What is left of a block row, per row: a counter, and flags (registered, off the
    counters' wide compares) for rows with any and with one nonzero left.

    Call :meth:`take` (rows one-hot), then :meth:`load` (it wins), each under its
    condition.
    """

    def __init__(self, rows, width):
        self.count = Signal(data.ArrayLayout(width, rows))
        self.active, self.one = Signal(rows), Signal(rows)

    def take(self, m, rows):
        for k, (count, taken) in enumerate(zip(self.count, rows, strict=True)):
            with m.If(taken):
                m.d.sync += [count.eq(count - 1), self.active[k].eq(~self.one[k]),
                             self.one[k].eq(count == 2)]

    def load(self, m, lengths):
        m.d.sync += [self.count.eq(lengths), self.active.eq(Cat(n != 0 for n in lengths)),
                     self.one.eq(Cat(n == 1 for n in lengths))]


class RowBlocks(wiring.Component):
    """Row pointers to block rows: the lengths of each block row's R rows (Figure 8e, step 1).

    Members
    -------
    row_ptr : In(stream({ptr, last}))
        A matrix's row pointers, the first 0, ``last`` on the final one.
    descriptors : Out(stream({lengths[R], last}))
        One per block row, its rows' lengths (0 for rows past a matrix's end),
        then, after a matrix's final pointer, its end marker: no rows, ``last``.

    Throughput: one pointer a cycle; the end marker holds the input a cycle.
    """

    def __init__(self, rows, width):
        self.rows, self.width = rows, width
        super().__init__({
            "row_ptr": In(stream.Signature(struct(wire.pointer(width)))),
            "descriptors": Out(stream.Signature(descriptor_layout(rows, width))),
        })

    def elaborate(self, platform):
        m = Module()
        R, out, given = self.rows, self.descriptors, self.row_ptr.payload
        first = Signal(init=1)                  # the next pointer starts a matrix
        ending = Signal()                       # the end marker is due
        prev, row = Signal(self.width), Signal(range(R))
        lengths = Signal(data.ArrayLayout(self.width, R))
        free = ~out.valid | out.ready
        m.d.comb += self.row_ptr.ready.eq(free & ~ending)
        length = (given.ptr - prev)[:self.width]
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(ending & free):
            m.d.sync += [out.valid.eq(1), out.payload.eq(0), out.payload.last.eq(1),
                         ending.eq(0)]
        with m.If(self.row_ptr.valid & self.row_ptr.ready):
            m.d.sync += prev.eq(given.ptr)
            with m.If(first):
                m.d.sync += [first.eq(given.last), ending.eq(given.last)]
            with m.Elif((row == R - 1) | given.last):
                m.d.sync += [out.valid.eq(1), out.payload.last.eq(0), lengths.eq(0), row.eq(0)]
                m.d.sync += [out.payload.lengths[k].eq(Mux(row == k, length, lengths[k]))
                             for k in range(R)]
                m.d.sync += [first.eq(given.last), ending.eq(given.last)]
            with m.Else():
                m.d.sync += [lengths[row].eq(length), row.eq(row + 1)]
        return m


class Tagger(wiring.Component):
    """Tags each nonzero with its row within the block row, from the block rows' lengths.

    Members
    -------
    descriptors : In(stream({lengths[R], last}))
    entries : In(stream({col, value}))
    tagged : Out(stream({col, value, row}))
    forward : Out(stream({lengths[R], last}))
        Each descriptor, sent on as it is taken (to the merge).

    Throughput: one nonzero a cycle; the next descriptor is taken with a block
    row's final nonzero, and an empty block row takes a cycle.
    """

    def __init__(self, rows, width, value_width):
        self.rows, self.width = rows, width
        desc = descriptor_layout(rows, width)
        super().__init__({
            "descriptors": In(stream.Signature(desc)),
            "entries": In(stream.Signature(struct(wire.csr_entry(width, value_width)))),
            "tagged": Out(stream.Signature(tagged_layout(rows, width, value_width))),
            "forward": Out(stream.Signature(desc)),
        })

    def elaborate(self, platform):
        m = Module()
        R, given = self.rows, self.entries.payload
        remaining = Remaining(R, self.width)                    # the block row's, per row
        active = remaining.active
        current, _ = lowest(m, active)                          # the row being read
        final = (current & remaining.one).any() & ~(active & ~current).any()
        tagged, forward = self.tagged, self.forward
        m.d.comb += self.entries.ready.eq(active.any() & (~tagged.valid | tagged.ready))
        moved = self.entries.valid & self.entries.ready
        m.d.comb += self.descriptors.ready.eq((~active.any() | (moved & final))
                                              & (~forward.valid | forward.ready))
        with m.If(tagged.ready):
            m.d.sync += tagged.valid.eq(0)
        with m.If(forward.ready):
            m.d.sync += forward.valid.eq(0)
        with m.If(moved):
            m.d.sync += [tagged.valid.eq(1), tagged.payload.col.eq(given.col),
                         tagged.payload.value.eq(given.value),
                         tagged.payload.row.eq(_binary(current))]
            remaining.take(m, current)
        with m.If(self.descriptors.valid & self.descriptors.ready):
            remaining.load(m, self.descriptors.payload.lengths)
            m.d.sync += [forward.valid.eq(1), forward.payload.eq(self.descriptors.payload)]
        return m


class Banks(wiring.Component):
    """The scratchpad: a bank per row of a block row, a
    :class:`~sparseforge.hw.stream_units.Queue` (a FIFO in block RAM and a head register).

    Members
    -------
    entries : In(stream({block_col, col, value, row}))
        Each goes to bank ``row``; ``ready`` while that bank has room.
    heads : Out(stream({block_col, col, value})) x R
        Bank ``k``'s oldest nonzero, from a register.

    A bank holds ``depth`` nonzeros and its head: ``depth + 1``. Throughput: one
    nonzero in and one out of each bank a cycle; a nonzero reaches its head 3
    cycles after it is taken (the FIFO's 2, the head register's 1).
    """

    def __init__(self, block, width, value_width, depth):
        self.depth = depth
        self.layout = bank_layout(block[1], width, value_width)
        super().__init__({
            "entries": In(stream.Signature(banked_layout(block, width, value_width))),
            "heads": Out(stream.Signature(self.layout)).array(block[0]),
        })

    def elaborate(self, platform):
        m = Module()
        given = self.entries.payload
        word = Signal(self.layout)
        m.d.comb += [word.block_col.eq(given.block_col), word.col.eq(given.col),
                     word.value.eq(given.value)]
        room = []
        for k, head in enumerate(self.heads):
            m.submodules[f"bank{k}"] = bank = Queue(self.layout, depth=self.depth + 1, latency=3,
                                                    skid=False)
            here = given.row == k
            room.append(here & bank.i.ready)
            m.d.comb += [bank.i.payload.eq(word), bank.i.valid.eq(self.entries.valid & here)]
            wiring.connect(m, bank.o, wiring.flipped(head))
        m.d.comb += self.entries.ready.eq(any_of(room))
        return m


class Merge(wiring.Component):
    """The R-way merge of a block row's rows by block column (Figure 8e's comparators).

    Members
    -------
    descriptors : In(stream({lengths[R], last}))
    heads : In(stream({block_col, col, value})) x R
        Row ``k`` of each block row, in order (:class:`Banks`).
    merged : Out(stream({block_col, col, value, row, entry, row_end, last}))
        The block row's nonzeros (``entry``) by block column, ties by row; a
        block row without any yields one item without an entry. ``row_end`` on a
        block row's final item, ``last`` on a matrix's end marker.

    Throughput: one nonzero a cycle while the heads of the block row's rows are
    there; an empty block row takes a cycle. Each cycle ``R (R - 1) / 2``
    comparators, one per pair of heads (one level, where a tree would chain
    ``log2 R``), pick the nonzero; the last one of a block row takes the next
    descriptor on the same cycle. Latency 1 cycle (the output register).
    """

    def __init__(self, block, width, value_width):
        self.block, self.width = block, width
        self.layout = bank_layout(block[1], width, value_width)
        super().__init__({
            "descriptors": In(stream.Signature(descriptor_layout(block[0], width))),
            "heads": In(stream.Signature(self.layout)).array(block[0]),
            "merged": Out(stream.Signature(merged_layout(block, width, value_width))),
        })

    def elaborate(self, platform):
        m = Module()
        R, heads, out = self.block[0], self.heads, self.merged
        remaining = Remaining(R, self.width)
        loaded, last = Signal(), Signal()
        active = remaining.active
        waiting = any_of(active[k] & ~heads[k].valid for k in range(R))
        # The comparators: row k leaves first where it is active and every other active row
        # holds a larger block column, or an equal one and comes after it. One comparator per
        # pair of rows; the winner's head through a one-hot AND-OR.
        wins = [Signal(name=f"wins{k}") for k in range(R)]
        beats = {}                              # (j, k), j < k: row k leaves before row j
        for j in range(R):
            for k in range(j + 1, R):
                beats[j, k] = active[k] & (~active[j] | (heads[k].payload.block_col
                                                         < heads[j].payload.block_col))
        for k in range(R):
            m.d.comb += wins[k].eq(functools.reduce(operator.and_, [
                active[k], *(beats[j, k] for j in range(k)),
                *(~beats[k, j] for j in range(k + 1, R))]))
        winner = Signal(self.layout)
        m.d.comb += winner.eq(any_of(Mux(wins[k], heads[k].payload.as_value(), 0)
                                   for k in range(R)))
        others = [any_of(active[j] for j in range(R) if j != k) for k in range(R)]
        final = any_of(wins[k] & remaining.one[k] & ~others[k] for k in range(R))
        free = ~out.valid | out.ready
        pop = active.any() & ~waiting & free
        skip = loaded & ~active.any() & free                    # an empty block row
        finish = (pop & final) | skip
        m.d.comb += self.descriptors.ready.eq(~loaded | finish)
        m.d.comb += [heads[k].ready.eq(pop & wins[k]) for k in range(R)]
        remaining.take(m, Cat(head.ready for head in heads))
        with m.If(finish):
            m.d.sync += loaded.eq(0)
        with m.If(self.descriptors.valid & self.descriptors.ready):
            remaining.load(m, self.descriptors.payload.lengths)
            m.d.sync += [loaded.eq(1), last.eq(self.descriptors.payload.last)]
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(pop | skip):
            p = out.payload
            m.d.sync += [out.valid.eq(1), p.block_col.eq(winner.block_col),
                         p.col.eq(winner.col), p.value.eq(winner.value),
                         p.row.eq(_binary(Cat(wins))), p.entry.eq(pop), p.row_end.eq(finish),
                         p.last.eq(skip & last)]
        return m


class Assembler(wiring.Component):
    """Builds the zero-filled blocks from the merged nonzeros, and counts each block row's
    blocks (Figure 8e, step 3).

    Members
    -------
    merged : In(stream({block_col, col, value, row, entry, row_end, last}))
    blocks : Out(stream(bsr_block))
        A block, sent when the next one starts (another block column, or the
        next block row's first nonzero) or at the matrix's end marker.
    counts : Out(stream({counts[1], last}))
        Each block row's block count at its ``row_end``, ``last`` at the end
        marker's: into the block-row pointers' prefix sum.

    A nonzero that starts a block zero-fills the block's other elements.
    Throughput: one merged item a cycle while ``blocks`` and ``counts`` are taken
    (it waits for both output registers to be free, whatever the item does).
    """

    def __init__(self, block, width, value_width):
        self.block, self.width, self.value_width = block, width, value_width
        super().__init__({
            "merged": In(stream.Signature(merged_layout(block, width, value_width))),
            "blocks": Out(stream.Signature(struct(wire.bsr_block(width, value_width, block)))),
            "counts": Out(stream.Signature(prefix_sum_layouts(1, width)[0])),
        })

    def elaborate(self, platform):
        m = Module()
        (R, C), given, blocks, counts = self.block, self.merged.payload, self.blocks, self.counts
        block_col, count = Signal(self.width), Signal(self.width)
        values = [Signal(self.value_width, name=f"value{k}") for k in range(R * C)]
        started, fresh = Signal(), Signal(init=1)   # a block is being built; a block row starts
        m.d.comb += self.merged.ready.eq((~blocks.valid | blocks.ready)
                                         & (~counts.valid | counts.ready))
        took = self.merged.valid & self.merged.ready
        new = given.entry & (fresh | ~started | (given.block_col != block_col))
        with m.If(blocks.ready):
            m.d.sync += blocks.valid.eq(0)
        with m.If(took & (new | given.last) & started):
            m.d.sync += [blocks.valid.eq(1), blocks.payload.block_col.eq(block_col)]
            m.d.sync += [blocks.payload[f"value{k}"].eq(v) for k, v in enumerate(values)]
        with m.If(took & given.entry):
            with m.If(new):
                m.d.sync += [block_col.eq(given.block_col), started.eq(1)]
            for k, value in enumerate(values):
                with m.If((given.row == k // C) & (given.col == k % C)):
                    m.d.sync += value.eq(given.value)
                with m.Elif(new):
                    m.d.sync += value.eq(0)
        with m.If(took & given.last):
            m.d.sync += started.eq(0)
        with m.If(counts.ready):
            m.d.sync += counts.valid.eq(0)
        with m.If(took & given.row_end):
            m.d.sync += [counts.valid.eq(1), counts.payload.counts[0].eq(count + new),
                         counts.payload.last.eq(given.last), count.eq(0), fresh.eq(1)]
        with m.Elif(took & given.entry):
            m.d.sync += [count.eq(count + new), fresh.eq(0)]
        return m


class CsrToBsrSignature(wiring.Signature):
    """A CSR-to-BSR converter of ``block`` = (R, C) blocks, seen from it: column indices,
    pointers and counts of ``width`` bits, ``value_width``-bit values. Protocol, per
    matrix:

    - ``row_ptr`` (stream in, :func:`~sparseforge.sw.wire.pointer`): the ``rows + 1`` row
      pointers, the first 0, ``last`` on the final one.
    - ``entries`` (stream in, :func:`~sparseforge.sw.wire.csr_entry`): the nonzeros
      ``{col, value}`` in CSR order, columns ascending within a row.
    - ``block_ptr`` (stream out, :func:`~sparseforge.sw.wire.pointer`): the
      ``rows / R + 1`` block-row pointers, the first 0, ``last`` on the final one.
    - ``blocks`` (stream out, :func:`~sparseforge.sw.wire.bsr_block`): each block that
      holds a nonzero, block rows in order and blocks by ascending ``block_col`` within
      one, its ``R x C`` values zero-filled.
    """

    def __init__(self, block, width, value_width):
        super().__init__({
            "row_ptr": In(stream.Signature(struct(wire.pointer(width)))),
            "entries": In(stream.Signature(struct(wire.csr_entry(width, value_width)))),
            "block_ptr": Out(stream.Signature(struct(wire.pointer(width)))),
            "blocks": Out(stream.Signature(struct(wire.bsr_block(width, value_width,
                                                                 block)))),
        })


@block("csr_to_bsr")
class CsrToBsr(wiring.Component):
    """CSR to BSR: row pointers and nonzeros in; block-row pointers and R x C blocks out.

    MINT Section V-B3, Figure 8e. The blocks are zero-filled.

    Parameters
    ----------
    block_rows, block_cols : R and C, the block's size; fixed in the generator (the
        column divide is by the constant C, each block is one output transfer).
    width : bits of a column index, a pointer, a row's length and a block count.
    value_width : bits of a value (passed through; the fill is 0).
    depth : nonzeros a scratchpad bank holds (a power of two). Every row of a
        block row but the last must fit in ``depth + 1``: the merge starts once
        the block row's last row does.

    Members
    -------
    row_ptr, entries : In
    block_ptr, blocks : Out
        As :class:`~sparseforge.hw.convert_bsr.CsrToBsrSignature` says: blocks in
        scipy's ``bsr_array`` order (by block column within a block row), each
        zero-filled, and the block-row pointers.

    Structure (module docstring): row pointers through :class:`RowBlocks` to
    block-row descriptors; nonzeros tagged with their row (:class:`Tagger`), divided
    by C in one :class:`~sparseforge.hw.divider.DivMod` lane (``width`` stages; none
    where C = 1) to block column and column, gathered in :class:`Banks`, merged
    (:class:`Merge`), assembled (:class:`Assembler`); the block counts through a
    one-lane exclusive :class:`~sparseforge.hw.prefix_sum.PrefixSum` to
    ``block_ptr``. Descriptor :class:`~sparseforge.hw.stream_units.Queue` s let the
    pointers run ahead of the tagger (18 block rows) and the tagger ahead of the merge
    (the divider's latency and 18).

    Latency and throughput: one nonzero a cycle in steady state. Each empty block
    row takes a cycle of its own in the tagger and the merge (its pointer goes out
    like any other), and the pointers come in one a cycle, so a matrix of n
    nonzeros, M rows and e empty block rows takes about ``max(n + e, M)`` cycles,
    plus the latency and the last block row's rows before its last, which wait in
    their banks for it. ``latency = 9 + width`` (9 where C = 1): cycles from a
    matrix's final nonzero, if it is alone in its block row, to its final block.
    A block leaves when the next one starts, or at the matrix's end.
    """

    PARAMS = (
        Param("block_rows", 2, 1, 8, "rows of a block (R)"),
        Param("block_cols", 2, 1, 8, "columns of a block (C)"),
        Param("width", 32, 4, 64, "bits of a column index, a pointer and a count"),
        Param("value_width", 32, 1, 64, "bits of a value"),
        Param("depth", 512, 4, 1 << 16, "nonzeros a scratchpad bank holds (one row of a "
              "block row)", pow2=True),
    )
    REPORT = ({"block_rows": 2, "block_cols": 2, "width": 16, "value_width": 32, "depth": 512},
              {"block_rows": 4, "block_cols": 4, "width": 16, "value_width": 16, "depth": 512})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.block = (v["block_rows"], v["block_cols"])
        self.width, self.value_width, self.depth = v["width"], v["value_width"], v["depth"]
        self.latency = 9 + (self.width if self.block[1] > 1 else 0)    # the divider's: W
        super().__init__(CsrToBsrSignature(self.block, self.width, self.value_width))

    def elaborate(self, platform):
        m = Module()
        (R, C), W, V = self.block, self.width, self.value_width
        divider = DivMod(lanes=1, width=W) if C > 1 else None
        ahead = divider.latency if divider else 0
        m.submodules.units = units = CsrBlocks(self.block, W, V, self.depth, ahead)
        for name in ("row_ptr", "entries"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(units, name))
        for name in ("block_ptr", "blocks"):
            wiring.connect(m, getattr(units, name), wiring.flipped(getattr(self, name)))

        # Step 2: the tagged nonzero's column divided by C into its block column and its
        # column within the block, its value and row beside (with C = 1 the column is the
        # block column).
        tagged, entry = units.tagged, units.divided
        if divider is None:
            m.d.comb += [entry.valid.eq(tagged.valid), tagged.ready.eq(entry.ready),
                         entry.payload.block_col.eq(tagged.payload.col),
                         entry.payload.value.eq(tagged.payload.value),
                         entry.payload.row.eq(tagged.payload.row)]
        else:
            m.submodules.divider = divider
            m.submodules.divider_side = beside = Beside(
                data.ArrayLayout(W, 1), divmod_layout(1, W),
                data.StructLayout({"value": V, "row": range(R)}), divider.latency)
            wiring.connect(m, beside.to_pipe, divider.dividends)
            wiring.connect(m, divider.results, beside.from_pipe)
            m.d.comb += divider.divisor.eq(C)
            enter, divided = beside.enter, beside.leave
            m.d.comb += [enter.valid.eq(tagged.valid), tagged.ready.eq(enter.ready),
                         enter.payload.data[0].eq(tagged.payload.col),
                         enter.payload.side.value.eq(tagged.payload.value),
                         enter.payload.side.row.eq(tagged.payload.row),
                         entry.valid.eq(divided.valid), divided.ready.eq(entry.ready),
                         entry.payload.block_col.eq(divided.payload.data[0].quotient),
                         entry.payload.col.eq(divided.payload.data[0].remainder),
                         entry.payload.value.eq(divided.payload.side.value),
                         entry.payload.row.eq(divided.payload.side.row)]
        return m


class CsrBlocks(wiring.Component):
    """Every unit of CSR to BSR (Figure 8e) but its divide (step 2): the nonzeros leave on
    ``tagged`` to be divided by C and come back on ``divided``, so a converter that shares
    its divider (the merged one, :mod:`~sparseforge.hw.mint_merged`) builds the rest alike.

    Parameters
    ----------
    block, width, value_width, depth : as :class:`CsrToBsr`'s.
    ahead : the divide's latency: the tagger runs ahead of the merge by it.

    Members
    -------
    row_ptr, entries : In
    block_ptr, blocks : Out
        As :class:`CsrToBsrSignature` says.
    tagged : Out(stream({col, value, row}))
        Each nonzero with its row within the block row, from a register slice.
    divided : In(stream({block_col, col, value, row}))
        The same nonzeros in order, the column divided by C, into a register slice.
    """

    def __init__(self, block, width, value_width, depth, ahead):
        self.block, self.width, self.value_width = block, width, value_width
        self.depth, self.ahead = depth, ahead
        super().__init__({
            **CsrToBsrSignature(block, width, value_width).members,
            "tagged": Out(stream.Signature(tagged_layout(block[0], width, value_width))),
            "divided": In(stream.Signature(banked_layout(block, width, value_width))),
        })

    def elaborate(self, platform):
        m = Module()
        R, W, V = self.block[0], self.width, self.value_width
        m.submodules.row_blocks = row_blocks = RowBlocks(R, W)
        m.submodules.tagger = tagger = Tagger(R, W, V)
        m.submodules.banks = banks = Banks(self.block, W, V, self.depth)
        m.submodules.merge = merge = Merge(self.block, W, V)
        m.submodules.assembler = assembler = Assembler(self.block, W, V)
        m.submodules.pointers = pointers = PrefixSum(lanes=1, width=W)
        wiring.connect(m, wiring.flipped(self.row_ptr), row_blocks.row_ptr)
        wiring.connect(m, wiring.flipped(self.entries), tagger.entries)
        for bank, head in zip(banks.heads, merge.heads, strict=True):
            wiring.connect(m, bank, head)
        wiring.connect(m, merge.merged, assembler.merged)
        wiring.connect(m, assembler.blocks, wiring.flipped(self.blocks))
        wiring.connect(m, assembler.counts, pointers.counts)

        # Register slices on either side of the divide cut the ready paths.
        m.submodules.tagged = tagged_slice = Skid(tagged_layout(R, W, V))
        m.submodules.divided = divided_slice = Skid(banked_layout(self.block, W, V))
        wiring.connect(m, tagger.tagged, tagged_slice.i)
        wiring.connect(m, divided_slice.o, banks.entries)
        wiring.connect(m, tagged_slice.o, wiring.flipped(self.tagged))
        wiring.connect(m, wiring.flipped(self.divided), divided_slice.i)

        # The descriptors: queued from the row pointers to the tagger, so the pointers of
        # short block rows are read while long ones are tagged; from the tagger to the
        # merge, so the tagger runs ahead by the divider's latency.
        desc = descriptor_layout(R, W)
        m.submodules.rows_queue = rows_queue = Queue(desc, depth=QUEUE, latency=3)
        m.submodules.merge_queue = merge_queue = Queue(desc, depth=self.ahead + QUEUE,
                                                       latency=3)
        wiring.connect(m, row_blocks.descriptors, rows_queue.i)
        wiring.connect(m, rows_queue.o, tagger.descriptors)
        wiring.connect(m, tagger.forward, merge_queue.i)
        wiring.connect(m, merge_queue.o, merge.descriptors)

        # Step 5: the block-row pointers.
        sums, out = pointers.sums, self.block_ptr
        m.d.comb += [out.valid.eq(sums.valid), sums.ready.eq(out.ready),
                     out.payload.ptr.eq(sums.payload.sums[0]),
                     out.payload.last.eq(sums.payload.last)]
        return m


# -- BSR to COO ----------------------------------------------------------------------

def slice_tag_layout(rows, width):
    """A read's tag: the ``row`` of the slice it brings and the ``part`` (the block's row
    within it), or ``end``, a matrix's end marker, which brings none."""
    return data.StructLayout({"row": width, "part": range(rows), "end": 1})


class SliceWalker(wiring.Component):
    """Reads each block row's blocks R times, one a cycle: pass ``i`` for row ``i`` of
    every block, since a block row's rows interleave across its blocks in row-major order.

    Parameters
    ----------
    rows : R, rows of a block.
    width : bits of a pointer, an address and a row.

    Members
    -------
    block_ptr : In(stream({ptr, last}))
        Each matrix's ``rows / R + 1`` block-row pointers, the first 0.
    request : Out(stream(width))
        Block addresses: a matrix's blocks follow the matrix before it in memory, so its
        block ``b`` is at ``b`` plus the blocks of the matrices before it.
    tags : Out(stream(:func:`slice_tag_layout`))
        One per read, in order, and a matrix's end marker after its last read.

    Throughput: one read a cycle; a pointer a cycle for an empty block row, and for a
    matrix's first pointer; a cycle per matrix for its end marker. The rows and
    addresses come from counters (a block row's first row advances by R), never a
    divider.
    """

    def __init__(self, rows, width):
        self.rows, self.width = rows, width
        super().__init__({
            "block_ptr": In(stream.Signature(struct(wire.pointer(width)))),
            "request": Out(stream.Signature(width)),
            "tags": Out(stream.Signature(slice_tag_layout(rows, width))),
        })

    def elaborate(self, platform):
        m = Module()
        R, W = self.rows, self.width
        given, request, tags = self.block_ptr.payload, self.request, self.tags
        opened, started, ending = Signal(), Signal(), Signal()
        prev, cur, base, row = (Signal(W, name=n) for n in ("prev", "cur", "base", "row"))
        part = Signal(range(R))
        at = Signal(W)
        m.d.comb += at.eq(Mux(started, cur, prev))
        following = (at + 1)[:W]

        def row_done():
            """The pointer is through: the next block row, or the matrix's end."""
            m.d.comb += self.block_ptr.ready.eq(1)
            m.d.sync += [prev.eq(given.ptr), started.eq(0), part.eq(0),
                         row.eq(Mux(given.last, 0, row + R))]
            with m.If(given.last):
                m.d.sync += [ending.eq(1), opened.eq(0), base.eq(base + given.ptr)]

        with m.If(ending):
            m.d.comb += [tags.valid.eq(1), tags.payload.end.eq(1)]
            with m.If(tags.ready):
                m.d.sync += ending.eq(0)
        with m.Elif(self.block_ptr.valid & ~opened):        # a matrix's first pointer
            m.d.comb += self.block_ptr.ready.eq(1)
            m.d.sync += [prev.eq(given.ptr), opened.eq(~given.last), ending.eq(given.last)]
        with m.Elif(self.block_ptr.valid & (prev == given.ptr)):       # an empty block row
            row_done()
        with m.Elif(self.block_ptr.valid):
            m.d.comb += [request.valid.eq(tags.ready), tags.valid.eq(request.ready),
                         request.payload.eq(base + at),
                         tags.payload.row.eq(row + part), tags.payload.part.eq(part)]
            with m.If(request.ready & tags.ready):
                with m.If((following == given.ptr) & (part == R - 1)):
                    row_done()
                with m.Elif(following == given.ptr):        # the next pass
                    m.d.sync += [part.eq(part + 1), started.eq(0)]
                with m.Else():
                    m.d.sync += [cur.eq(following), started.eq(1)]
        return m


class Slicer(wiring.Component):
    """Takes row ``part`` of each block read: its C values, their rows and columns
    (``block_col * C + j``, a constant multiple), and which are nonzero.

    Parameters
    ----------
    block : (R, C).
    width, value_width : bits of an index and of a value.

    Members
    -------
    tags : In(stream(:func:`slice_tag_layout`))
    response : In(stream(:func:`~sparseforge.sw.wire.bsr_block`))
        One block word per tag but an end marker, in order.
    slices : Out(stream({item {items[C] {row, col, value}, mask}, keep, end}))
        One per tag: a slice with ``keep`` where a value is nonzero (the
        :class:`~sparseforge.hw.convert_rlc.EndMarker`'s input), the end marker with
        ``end``.

    Latency 1 cycle (registered); one slice a cycle.
    """

    def __init__(self, block, width, value_width):
        self.block, self.width, self.value_width = block, width, value_width
        self.word = struct(wire.bsr_block(width, value_width, block))
        self.item = data.StructLayout({
            "items": data.ArrayLayout(struct(wire.coo_entry(width, value_width)), block[1]),
            "mask": block[1]})
        super().__init__({
            "tags": In(stream.Signature(slice_tag_layout(block[0], width))),
            "response": In(stream.Signature(self.word.size)),
            "slices": Out(stream.Signature(data.StructLayout({"item": self.item, "keep": 1,
                                                              "end": 1}))),
        })

    def elaborate(self, platform):
        m = Module()
        (R, C), W = self.block, self.width
        tag, out = self.tags.payload, self.slices
        word = data.View(self.word, self.response.payload)
        free = ~out.valid | out.ready
        moves = self.tags.valid & free & (tag.end | self.response.valid)
        m.d.comb += [self.tags.ready.eq(moves), self.response.ready.eq(moves & ~tag.end)]
        values = [Array(word[f"value{i * C + j}"] for i in range(R))[tag.part]
                  for j in range(C)]
        # A column below 2**W has a block column below 2**W / C, its top log2(C) bits 0: one
        # past that (a malformed word) saturates to the last column rather than wrapping.
        bits = W - (C.bit_length() - 1)
        block_col, past = word.block_col[:bits], word.block_col[bits:].any()
        mask = Cat(v != 0 for v in values)
        with m.If(moves):
            m.d.sync += [out.valid.eq(1), out.payload.end.eq(tag.end),
                         out.payload.keep.eq(~tag.end & mask.any()),
                         out.payload.item.mask.eq(mask)]
            for j, (value, item) in enumerate(zip(values, out.payload.item.items, strict=True)):
                m.d.sync += [item.row.eq(tag.row), item.value.eq(value),
                             item.col.eq(Mux(past, (1 << W) - 1,
                                                 (block_col * C + j)[:W]))]
        with m.Elif(out.ready):
            m.d.sync += out.valid.eq(0)
        return m


class BsrToCooSignature(wiring.Signature):
    """A BSR-to-COO converter of ``block`` = (R, C) blocks, seen from it: pointers,
    addresses, rows and columns of ``width`` bits, ``value_width``-bit values. Per matrix:

    - ``block_ptr`` (stream in, :func:`~sparseforge.sw.wire.pointer`): the ``rows / R +
      1`` block-row pointers, the first 0, ``last`` on the final one.
    - ``mem`` (memory port out, :class:`~.stream_units.MemoryPortSignature`): block reads
      by address, each answered with the block's word
      (:func:`~sparseforge.sw.wire.bsr_block`, as CSR to BSR emits it); a matrix's
      blocks in memory in BSR order, after the matrix before it's.
    - ``records`` (stream out, :func:`~sparseforge.sw.wire.coo_record`): one ``{row, col,
      value, last}`` per nonzero in row-major order, ``last`` on the matrix's final one;
      the fill's zeros emit nothing, and a matrix of none sends no record.
    """

    def __init__(self, block, width, value_width):
        word = wire.width(wire.bsr_block(width, value_width, block))
        super().__init__({
            "block_ptr": In(stream.Signature(struct(wire.pointer(width)))),
            "mem": Out(MemoryPortSignature(width, word)),
            "records": Out(stream.Signature(struct(wire.coo_record(width, value_width)))),
        })


@block("bsr_to_coo")
class BsrToCoo(wiring.Component):
    """BSR to COO: block-row pointers in, blocks read from memory, one nonzero a cycle out,
    row-major.

    The inverse of MINT's CSR to BSR (Section V-B3, Figure 8e). Row-major order puts row
    ``i`` of every block of a block row before row ``i + 1`` of any, so
    :class:`SliceWalker` reads each block row's blocks R times, a block a cycle, pass
    ``i`` for their row ``i``; a :class:`~.stream_units.Queue` of tags waits for the
    memory's answers; :class:`Slicer` takes each block's row slice, the coordinates from
    counters (block row ``* R + i``, ``block_col * C + j``); an
    :class:`~.convert_rlc.EndMarker` holds the latest slice with a nonzero until the next
    one, or the matrix's end, says whether it ends the matrix; a
    :class:`~.convert_rlc.Serializer` sends its nonzeros one a cycle and drops the fill.

    Parameters
    ----------
    block_rows, block_cols : R and C, the block's size (each block one memory word).
    width : bits of a pointer, a block address, a row and a column.
    value_width : bits of a value (a value is zero, fill, when all its bits are).

    Members
    -------
    block_ptr : In(stream({ptr, last}))
    mem : Out(MemoryPortSignature)
    records : Out(stream({row, col, value, last}))
        As :class:`~sparseforge.hw.convert_bsr.BsrToCooSignature` says.

    Throughput: one block row-slice (a read) a cycle and one nonzero a cycle, while the
    memory answers a read a cycle: a matrix of ``b`` blocks, ``e`` empty block rows and
    ``n`` nonzeros takes between ``max(R b, n)`` and ``R b + n`` cycles, plus ``e`` and
    two a matrix. The memory reads are R per block: each pass reads the whole block word
    for one row of it.
    """

    PARAMS = (
        Param("block_rows", 2, 1, 8, "rows of a block (R)"),
        Param("block_cols", 2, 1, 8, "columns of a block (C)"),
        Param("width", 32, 4, 64, "bits of a pointer, an address, a row and a column"),
        Param("value_width", 32, 1, 64, "bits of a value"),
    )
    REPORT = ({"block_rows": 2, "block_cols": 2, "width": 16, "value_width": 32},
              {"block_rows": 4, "block_cols": 4, "width": 16, "value_width": 16})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.block = (v["block_rows"], v["block_cols"])
        self.width, self.value_width = v["width"], v["value_width"]
        (R, C), W, V = self.block, self.width, self.value_width
        self.walker = SliceWalker(R, W)
        self.queue = Queue(slice_tag_layout(R, W), depth=TAGS, latency=1)
        self.slicer = Slicer(self.block, W, V)
        self.marker = EndMarker(self.slicer.item)
        self.serializer = Serializer(struct(wire.coo_entry(W, V)), C)
        super().__init__(BsrToCooSignature(self.block, W, V))

    def elaborate(self, platform):
        m = Module()
        m.submodules.walker = walker = self.walker
        m.submodules.queue = queue = self.queue
        m.submodules.slicer = slicer = self.slicer
        m.submodules.marker = marker = self.marker
        m.submodules.serializer = serializer = self.serializer
        wiring.connect(m, wiring.flipped(self.block_ptr), walker.block_ptr)
        wiring.connect(m, walker.request, wiring.flipped(self.mem.request))
        wiring.connect(m, walker.tags, queue.i)
        wiring.connect(m, queue.o, slicer.tags)
        wiring.connect(m, wiring.flipped(self.mem.response), slicer.response)
        wiring.connect(m, slicer.slices, marker.given)
        taken, vectors = marker.taken, serializer.vectors
        m.d.comb += [vectors.valid.eq(taken.valid), taken.ready.eq(vectors.ready),
                     vectors.payload.items.eq(taken.payload.item.items),
                     vectors.payload.mask.eq(taken.payload.item.mask),
                     vectors.payload.last.eq(taken.payload.last)]
        nonzeros, out = serializer.items, self.records
        m.d.comb += [out.valid.eq(nonzeros.valid), nonzeros.ready.eq(out.ready),
                     out.payload.row.eq(nonzeros.payload.item.row),
                     out.payload.col.eq(nonzeros.payload.item.col),
                     out.payload.value.eq(nonzeros.payload.item.value),
                     out.payload.last.eq(nonzeros.payload.last)]
        return m
