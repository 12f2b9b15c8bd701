"""MINT's CSR-to-CSC converter (MINT Section V-B1, Figure 8c).

The converter is the paper's counting sort, in four phases per matrix:

1. *count*: the column ids arrive a chunk of N at a time (Fig. 8c step 1).
   :class:`ChunkGroups` splits a chunk into the groups of ids that share a counter word
   (a word holds N columns' counts); the cluster counter turns a group into the word's
   increments (steps 2-3), added to the word in the counter memory (step 4).
2. *scan*: the counter words go through the exclusive prefix-sum unit (step 5): the
   column pointers, sent out on ``col_ptr`` and written back as each column's next free
   slot.
3. *scatter*: the CSR entries arrive again with the row pointers. :class:`RowCounter`
   gives each entry its row (step 8); the entry goes through the same cluster counter and
   read-modify-write as a one-id group, which reads its column's slot and increments it
   (steps 6-7), and its ``{row, value}`` is written to the scratchpad at that slot (steps
   9-10). Entries are placed in CSR order, so rows come out ascending within a column.
   From COO (the ``from_coo`` mode) the entries arrive as records carrying their own row
   (:func:`~sparseforge.sw.wire.coo_record`) and the row counter is bypassed; the phases
   are the same, so one build serves both.
4. *drain*: the scratchpad streams out in order on ``csc``, while the matrix's counters
   are cleared. The counters have two banks, a matrix's in turn, so the next matrix counts
   and scans in the other one meanwhile (MINT pipelines its chunks so); its scatter waits
   for the drain, which needs the scratchpad. Back to back, a matrix costs about
   ``max(count + scan, drain) + scatter`` where alone it costs their sum.

The sort is stable: a column's entries come out in the order they arrived. So records in
any order are sorted as radix sorts are, least significant key first: a pass keyed on the
row, then one keyed on the column (the host plans them; a pass keyed on the row is the
block's on the transposed view, the two coordinates swapped as the records are presented).
Records whose rows already ascend within each column (row-major order, say) take the one
pass keyed on the column.

Presenting the input twice: the block does not buffer its input. The CSR ``col_ids`` are
read once for the count and the CSR entries once for the scatter, as the paper's MINT reads
them (steps 1 and 6); buffering them would take a second ``max_nnz``-deep memory and save
nothing, since no entry can be placed before the last one is counted.

Larger matrices: the block's buffers are its parameters' (``max_cols`` columns' counters,
a ``max_nnz``-entry scratchpad), never a matrix's. A matrix with more columns or nonzeros
goes through in passes of whole columns, each a matrix of its own to the block, planned and
joined by the host (:mod:`sparseforge.sw.passes`): a column's entries all land in one pass,
so the passes' CSC outputs follow one another and only their pointers move.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .buffet import ReadStage
from .interfaces import cluster_layouts, prefix_sum_layouts, struct
from .mint_units import ClusterCounter
from .mux import mux
from .pipeline import Pipeline
from .prefix_sum import PrefixSum
from .stream_units import Lockstep, any_of, at_most_one, lowest


def group_layout(lanes, col_width):
    """A group of :class:`ChunkGroups`: its counter ``word`` and, as the cluster counter
    takes it, ``chunk``: each lane's column within the word and the group's lanes."""
    return data.StructLayout({"word": col_width - exact_log2(lanes),
                              "chunk": cluster_layouts(lanes, lanes)[0]})


def csc_pointer_layout(lanes, ptr_width):
    """A vector of CSC column pointers: ``ptr[lanes]``, and ``last`` on a matrix's final one."""
    return data.StructLayout({"ptr": data.ArrayLayout(ptr_width, lanes), "last": 1})


class ChunkGroups(wiring.Component):
    """A chunk of column ids as groups that share a counter word (Section V-B1, Fig. 8c).

    Column ``c`` is lane ``c % lanes`` of counter word ``c // lanes``. Each cycle the unit
    gives out one group, in the order of their first lanes: the word, every lane's column
    within its word, and the mask of the chunk's ids in that word, which is what the
    cluster counter takes. The paper sorts a chunk and counts each value (steps 2-3);
    grouping by word counts them into the counter memory's words without the sort, and a
    chunk whose ids share words (a dense stretch of a row) takes fewer cycles than ids.

    Parameters
    ----------
    lanes : ids a chunk and columns a word (a power of two).
    col_width : bits of a column id.

    Members
    -------
    chunk : In(stream({ids[lanes], mask}))
        ``mask`` bit ``i`` set where lane ``i`` holds an id.
    groups : Out(stream(:func:`group_layout`))
        The chunk's groups, lowest first lane first.

    Latency and throughput: a chunk is taken on the cycle its last group goes out (or
    while the unit is empty); its first group is out on the next cycle. One group a cycle:
    ``lanes`` ids a cycle at best, one at worst. The pairwise word comparisons are made as
    a chunk comes in, and registered with it as each lane's group and the groups' first
    lanes; a cycle's loop is a lowest-bit pick among those.
    """

    def __init__(self, lanes, col_width):
        self.lanes, self.col_width = lanes, col_width
        chunk = data.StructLayout({"ids": data.ArrayLayout(col_width, lanes), "mask": lanes})
        super().__init__({"chunk": In(stream.Signature(chunk)),
                          "groups": Out(stream.Signature(group_layout(lanes, col_width)))})

    def elaborate(self, platform):
        m = Module()
        lanes, bits = self.lanes, exact_log2(self.lanes)
        given, out = self.chunk.payload, self.groups
        ids = Signal.like(given.ids)
        leaders = Signal(lanes)                 # the first lane of each group still to go out
        same = [Signal(lanes, name=f"same{i}") for i in range(lanes)]   # lane i's group
        first, rest = lowest(m, leaders)
        m.d.comb += [
            out.valid.eq(leaders.any()),
            out.payload.word.eq(any_of(Mux(first[i], ids[i][bits:], 0) for i in range(lanes))),
            out.payload.chunk.mask.eq(any_of(Mux(first[i], same[i], 0) for i in range(lanes))),
            self.chunk.ready.eq(~leaders.any() | (out.ready & at_most_one(leaders))),
        ]
        m.d.comb += [out.payload.chunk.indices[i].eq(ids[i][:bits]) for i in range(lanes)]
        with m.If(out.valid & out.ready):
            m.d.sync += leaders.eq(rest)
        with m.If(self.chunk.valid & self.chunk.ready):
            words = [c[bits:] for c in given.ids]
            shared = [[(words[i] == words[j]) & given.mask[j] for j in range(lanes)]
                      for i in range(lanes)]
            m.d.sync += [ids.eq(given.ids),
                         leaders.eq(Cat(given.mask[i] & ~any_of(shared[i][:i])
                                        for i in range(lanes)))]
            m.d.sync += [same[i].eq(Cat(shared[i])) for i in range(lanes)]
        return m


class RowCounter(wiring.Component):
    """The row of each CSR entry, from the row pointers (Section V-B1, Fig. 8c step 8).

    Counts the entries passed against the current row's end: entry ``k`` is in row ``r``
    where ``row_ptr[r] <= k < row_ptr[r + 1]``. Once the current row is exhausted the unit
    takes the next pointer; an entry that opens a row goes out on the cycle its row's
    pointer is taken, so an empty row costs one cycle and a full one none.

    Parameters
    ----------
    max_rows : most rows of a matrix.
    ptr_width : bits of a pointer (and of the entries passed).
    entry : the layout of an entry (passed through).

    Members
    -------
    rows : In(range(max_rows + 1))
        The matrix's rows; hold it while the matrix passes.
    restart : In(1)
        Starts a matrix: no row taken, no entry passed.
    row_ptr : In(stream(ptr_width))
        ``row_ptr[1 .. rows]``.
    csr : In(stream(entry))
    entries : Out(stream({row, entry}))
        Each entry with its row, from a register.
    done : Out(1)
        Every row's pointer is taken and every entry before the last pointer has gone out.

    Latency and throughput: 1 cycle; one entry a cycle while ``entries`` is taken, and a
    cycle for each empty row.
    """

    def __init__(self, max_rows, ptr_width, entry):
        self.max_rows, self.ptr_width = max_rows, ptr_width
        out = data.StructLayout({"row": ceil_log2(max_rows), "entry": entry})
        super().__init__({"rows": In(range(max_rows + 1)), "restart": In(1),
                          "row_ptr": In(stream.Signature(ptr_width)),
                          "csr": In(stream.Signature(entry)),
                          "entries": Out(stream.Signature(out)), "done": Out(1)})

    def elaborate(self, platform):
        m = Module()
        taken = Signal(range(self.max_rows + 1))          # row pointers taken
        end = Signal(self.ptr_width)                      # the last one: the current row's end
        passed = Signal(self.ptr_width)                   # entries passed
        in_row, more = Signal(), Signal()
        opens = Signal()                                  # the next row starts with this entry
        advance, go = Signal(), Signal()                  # the output loads; an entry goes
        out = self.entries
        m.d.comb += [
            in_row.eq(passed < end),
            more.eq(taken != self.rows),
            self.row_ptr.ready.eq(~in_row & more),
            opens.eq(self.row_ptr.valid & self.row_ptr.ready & (self.row_ptr.payload > passed)),
            advance.eq(~out.valid | out.ready),
            go.eq(advance & (in_row | opens)),
            self.csr.ready.eq(go),
            self.done.eq(~more & ~in_row & ~out.valid),
        ]
        with m.If(advance):
            m.d.sync += [out.valid.eq(self.csr.valid & go),
                         out.payload.row.eq(Mux(in_row, taken - 1, taken)),
                         out.payload.entry.eq(self.csr.payload)]
        with m.If(self.row_ptr.valid & self.row_ptr.ready):
            m.d.sync += [end.eq(self.row_ptr.payload), taken.eq(taken + 1)]
        with m.If(self.csr.valid & self.csr.ready):
            m.d.sync += passed.eq(passed + 1)
        with m.If(self.restart):
            m.d.sync += [taken.eq(0), end.eq(0), passed.eq(0)]
        return m


class PathEntry(wiring.Component):
    """The counting path's entry (Section V-B1, Fig. 8c steps 2 and 6): a group of column ids
    while counting, or an entry while scattering, into the cluster counter through a
    register; and the count of the items on the path not yet settled.

    A group is its word's ids, tagged with the word; an entry is a one-id group of its
    column, tagged with its lane and ``{row, value}`` (``scatter``), so :class:`Increment`
    places it at its column's slot. The path is never stalled: the read-modify-write takes
    an item a cycle.

    Parameters
    ----------
    lanes, col_width : ids a chunk and columns a word; bits of a column id.
    entries : the layout of an entry with its row (:class:`RowCounter`'s ``entries``).
    tag : the tag's layout ``{word, lane, entry, scatter}``.
    most : the most items on the path at once (it sizes their count).

    Members
    -------
    groups : In(stream(:func:`group_layout`))
        Taken while ``count`` is high.
    entries : In(stream(entries))
        Taken while ``scatter`` is high.
    count, scatter : In(1)
        The phase; at most one high.
    given : Out(stream({counter, tag}))
        The item taken on the cycle before, from a register; ``ready`` is not looked at.
    settled : In(1)
        An item's last write is done on this cycle (:class:`Increment`'s ``settled``).
    empty : Out(1)
        No item is on the path.

    Latency and throughput: 1 cycle; one item a cycle.
    """

    def __init__(self, lanes, col_width, entries, tag, most):
        self.lanes, self.most = lanes, most
        given = data.StructLayout({"counter": cluster_layouts(lanes, lanes)[0], "tag": tag})
        super().__init__({"groups": In(stream.Signature(group_layout(lanes, col_width))),
                          "entries": In(stream.Signature(entries)),
                          "count": In(1), "scatter": In(1),
                          "given": Out(stream.Signature(given)),
                          "settled": In(1), "empty": Out(1)})

    def elaborate(self, platform):
        m = Module()
        bits = exact_log2(self.lanes)
        inflight = Signal(range(self.most + 1))            # groups and entries not settled
        layout = self.given.payload.shape()
        counting = data.View(layout, Signal(layout.size, name="counting"))
        placing = data.View(layout, Signal(layout.size, name="placing"))
        group, entries, enter = self.groups.payload, self.entries.payload, Signal()
        col = entries.entry.col
        m.d.comb += [counting.counter.eq(group.chunk), counting.tag.word.eq(group.word),
                     placing.counter.indices[0].eq(col[:bits]), placing.counter.mask.eq(1),
                     placing.tag.word.eq(col[bits:]), placing.tag.lane.eq(col[:bits]),
                     placing.tag.scatter.eq(1), placing.tag.entry.row.eq(entries.row),
                     placing.tag.entry.value.eq(entries.entry.value),
                     self.groups.ready.eq(self.count), self.entries.ready.eq(self.scatter),
                     enter.eq(self.groups.valid & self.groups.ready
                              | self.entries.valid & self.entries.ready),
                     self.empty.eq(inflight == 0)]
        m.d.sync += [inflight.eq(inflight + enter - self.settled),
                     self.given.valid.eq(enter),
                     self.given.payload.eq(Mux(self.scatter, placing, counting))]
        return m


def covers(words, cols, lanes):
    """Whether ``words`` counter words of ``lanes`` columns reach column ``cols``: the words
    to scan and clear for a matrix of ``cols`` columns (col_ptr[cols] included)."""
    return (words << exact_log2(lanes)) > cols


def counter_ports(words, lanes, ptr_width):
    """The counter memory's read and write port signatures: ``words`` words of ``lanes``
    counters of ``ptr_width`` bits."""
    shape = {"addr_width": ceil_log2(words), "shape": data.ArrayLayout(ptr_width, lanes)}
    return ReadPort.Signature(**shape), WritePort.Signature(**shape)


class Increment(wiring.Component):
    """The counter words' read-modify-write, and the placement of entries (Section V-B1,
    Fig. 8c steps 4, 6-7 and 9-10).

    An item is a counter word's increments (the cluster counter's histogram) with its tag:
    the word and, for an entry being placed (``scatter``), its lane and ``{row, value}``.
    The word is read on the cycle the item arrives; the memory's output is registered, so
    its counts are there two cycles later, when the word is written back incremented. The
    two items before may have written the same word since the read: their writes are kept
    for a cycle each and the newest one of the word replaces what was read (forwarding).
    An entry's slot is its lane's count before the increment (the column's next free
    slot), registered; the entry is written there on the cycle after.

    Parameters
    ----------
    words, lanes, ptr_width : the counter memory: ``words`` words of ``lanes`` counters.
    max_nnz : the scratchpad's depth.
    tag : the tag's layout ``{word, lane, entry, scatter}``.

    Members
    -------
    items : In(stream({counter: increments[lanes], tag}))
        Always ready.
    read, write : In(the counter memory's read and write ports; the read port need not be
        transparent)
    place : In(the scratchpad's write port)
    settled : Out(1)
        An item's last write is done on this cycle.

    Latency and throughput: the word is written 2 cycles after its item arrives, an entry 3
    cycles after; one item a cycle. Between registers: the memory's read; the forwarding
    comparators (a cycle ahead); the forwarding multiplexers and ``lanes`` adders; the
    slot's multiplexer.
    """

    def __init__(self, words, lanes, ptr_width, max_nnz, tag):
        self.lanes = lanes
        read, write = counter_ports(words, lanes, ptr_width)
        items = data.StructLayout({"counter": data.ArrayLayout(range(lanes + 1), lanes),
                                   "tag": tag})
        place = WritePort.Signature(addr_width=ceil_log2(max_nnz), shape=tag["entry"].shape)
        super().__init__({"items": In(stream.Signature(items)), "read": In(read),
                          "write": In(write), "place": In(place), "settled": Out(1)})

    def elaborate(self, platform):
        m = Module()
        item = self.items.payload

        def later(value, name):
            """``value`` one and two cycles later."""
            shape = value.shape()
            once, twice = Signal(shape, name=f"{name}1"), Signal(shape, name=f"{name}2")
            m.d.sync += [once.eq(value), twice.eq(once)]
            return once, twice

        _, valid = later(self.items.valid, "valid")
        _, increments = later(item.counter, "increments")
        at = later(item.tag, "at")
        fetched = Signal(self.read.data.shape())            # the memory's output, registered
        written = later(self.write.en, "written")           # the writes of the items before
        addresses = later(at[1].word, "address")
        words = later(self.write.data, "word")
        # Which of those two writes is of the item's word, found a cycle ahead: the write on
        # this cycle and the one before it are the two before the item's own on the next.
        hits = Signal(2)
        counts = Signal(self.write.data.shape())            # the word's counts before
        m.d.sync += hits.eq(Cat(valid & (at[1].word == at[0].word),
                                written[0] & (addresses[0] == at[0].word)))
        m.d.comb += [
            counts.eq(Mux(hits[0], words[0], Mux(hits[1], words[1], fetched))),
            self.items.ready.eq(1), self.read.en.eq(1), self.read.addr.eq(item.tag.word),
            self.write.en.eq(valid), self.write.addr.eq(at[1].word),
            *(self.write.data[i].eq(counts[i] + increments[i]) for i in range(self.lanes)),
        ]
        m.d.sync += [fetched.eq(self.read.data), self.settled.eq(valid),
                     self.place.en.eq(valid & at[1].scatter),
                     self.place.addr.eq(mux(at[1].lane, list(counts))),
                     self.place.data.eq(at[1].entry)]
        return m


class PointerScan(wiring.Component):
    """The column pointers: the counter words through the exclusive prefix sum (Section
    V-B1, Fig. 8c step 5).

    Reads the counter words from 0, one in flight (:class:`~sparseforge.hw.buffet.ReadStage`),
    through a register into the prefix-sum unit; each vector of pointers goes out on
    ``col_ptr`` and, as it is taken, is written back over its word: each column's next free
    slot.

    Parameters
    ----------
    words, lanes, ptr_width : the counter memory: ``words`` words of ``lanes`` counters.
    max_cols : most columns.

    Members
    -------
    start : In(1)
        Starts a matrix's scan at word 0; it runs until ``done``.
    cols : In(range(max_cols + 1))
        The matrix's columns: the scan covers the words up to column ``cols``. Hold it.
    read, write : In(the counter memory's read and write ports)
    col_ptr : Out(stream(:func:`csc_pointer_layout`))
    done : Out(1)
        The last vector is taken on this cycle.

    scan_counts, scan_sums : Out and In(stream(:func:`~.interfaces.prefix_sum_layouts`))
        With ``shared_scan`` only: the words to an exclusive prefix sum outside, and its
        sums back, in order (a converter that shares its prefix sum).

    Latency and throughput: a word's pointers are out the prefix sum's latency and two
    cycles after it is read; one word a cycle while ``col_ptr`` is taken.
    """

    def __init__(self, words, lanes, ptr_width, max_cols, shared_scan=False):
        self.words, self.lanes, self.ptr_width = words, lanes, ptr_width
        self.shared_scan = shared_scan
        read, write = counter_ports(words, lanes, ptr_width)
        counts, sums = prefix_sum_layouts(lanes, ptr_width)
        shared = ({"scan_counts": Out(stream.Signature(counts)),
                   "scan_sums": In(stream.Signature(sums))} if shared_scan else {})
        super().__init__({"start": In(1), "cols": In(range(max_cols + 1)), "read": In(read),
                          "write": In(write), "done": Out(1),
                          "col_ptr": Out(stream.Signature(csc_pointer_layout(lanes,
                                                                             ptr_width))),
                          **shared})

    def elaborate(self, platform):
        m = Module()
        bits = ceil_log2(self.words)
        m.submodules.reads = reads = ReadStage(self.words, self.lanes * self.ptr_width, bits)
        if self.shared_scan:
            sums = SimpleNamespace(counts=self.scan_counts, sums=self.scan_sums)
        else:
            m.submodules.sums = sums = PrefixSum(lanes=self.lanes, width=self.ptr_width)
        running = Signal()
        asked = Signal(range(self.words + 1))               # words asked for
        stored = Signal(range(self.words + 1))              # pointer words written back
        out = self.col_ptr
        # the memory's output is registered before the prefix sum; the word held for it is
        # the one asked for last
        given = Pipeline(m, reads.read_data, sums.counts)
        word = given.stage({"counts": reads.read_data.payload,
                            "last": covers(asked, self.cols, self.lanes)})
        given.finish()
        m.d.comb += [
            reads.read.valid.eq(running & ~covers(asked, self.cols, self.lanes)),
            reads.read.payload.eq(asked), reads.addr.eq(asked), reads.present.eq(1),
            self.read.addr.eq(reads.mem.addr), self.read.en.eq(reads.mem.en),
            reads.mem.data.eq(self.read.data),
            sums.counts.payload.counts.eq(word["counts"]),
            sums.counts.payload.last.eq(word["last"]),
            out.valid.eq(sums.sums.valid), sums.sums.ready.eq(out.ready),
            out.payload.ptr.eq(sums.sums.payload.sums), out.payload.last.eq(sums.sums.payload.last),
            self.write.en.eq(out.valid & out.ready), self.write.addr.eq(stored),
            self.write.data.eq(sums.sums.payload.sums),
            self.done.eq(out.valid & out.ready & out.payload.last),
        ]
        with m.If(reads.read.valid & reads.read.ready):
            m.d.sync += asked.eq(asked + 1)
        with m.If(self.write.en):
            m.d.sync += stored.eq(stored + 1)
        with m.If(self.done):
            m.d.sync += running.eq(0)
        with m.If(self.start):
            m.d.sync += [running.eq(1), asked.eq(0), stored.eq(0)]
        return m


class Drain(wiring.Component):
    """The CSC entries out of the scratchpad in order, and the counter words cleared
    (Section V-B1, Fig. 8c step 10).

    Parameters
    ----------
    words, lanes, ptr_width : the counter memory: ``words`` words of ``lanes`` counters.
    max_cols, max_nnz : most columns and nonzeros (the scratchpad's depth).
    entry : the layout of a scratchpad entry ``{row, value}``.

    Members
    -------
    start : In(1)
        Starts a matrix's drain; it runs until ``done``.
    cols, nnz : In
        The matrix's columns and nonzeros, sampled with ``start`` (the next matrix's may
        follow on the cycle after).
    read : In(the scratchpad's read port)
    clear : In(the write port of the matrix's counter bank)
    csc : Out(stream(entry))
    done : Out(1)
        Every entry is out and every word up to column ``cols`` is cleared.
    busy : Out(1)
        From the cycle after ``start`` to ``done``.

    Latency and throughput: one entry a cycle while ``csc`` is taken, from the second cycle
    after ``start`` (the scratchpad's read, then the output register); one word cleared a
    cycle meanwhile.
    """

    def __init__(self, words, lanes, ptr_width, max_cols, max_nnz, entry):
        self.words, self.lanes, self.max_nnz, self.entry = words, lanes, max_nnz, entry
        read = ReadPort.Signature(addr_width=ceil_log2(max_nnz), shape=entry.size)
        super().__init__({"start": In(1), "cols": In(range(max_cols + 1)),
                          "nnz": In(range(max_nnz + 1)), "read": In(read),
                          "clear": In(counter_ports(words, lanes, ptr_width)[1]),
                          "csc": Out(stream.Signature(entry)), "done": Out(1),
                          "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.reads = reads = ReadStage(self.max_nnz, self.entry.size,
                                               ceil_log2(self.max_nnz))
        running = self.busy
        cols, nnz = Signal.like(self.cols), Signal.like(self.nnz)
        asked = Signal(range(self.max_nnz + 1))             # entries asked for
        cleared = Signal(range(self.words + 1))             # counter words cleared
        wiring.connect(m, reads.mem, wiring.flipped(self.read))
        m.d.comb += [
            reads.read.valid.eq(running & (asked != nnz)), reads.read.payload.eq(asked),
            reads.addr.eq(asked), reads.present.eq(1),
            self.clear.en.eq(running & ~covers(cleared, cols, self.lanes)),
            self.clear.addr.eq(cleared),
            self.done.eq(running & (asked == nnz) & ~reads.read_data.valid
                         & ~self.csc.valid & covers(cleared, cols, self.lanes)),
        ]
        out = Pipeline(m, reads.read_data, self.csc)        # the output is registered
        m.d.comb += self.csc.payload.eq(out.stage(reads.read_data.payload))
        out.finish()
        with m.If(reads.read.valid & reads.read.ready):
            m.d.sync += asked.eq(asked + 1)
        with m.If(self.clear.en):
            m.d.sync += cleared.eq(cleared + 1)
        with m.If(self.done):
            m.d.sync += running.eq(0)
        with m.If(self.start):
            m.d.sync += [running.eq(1), asked.eq(0), cleared.eq(0), cols.eq(self.cols),
                         nnz.eq(self.nnz)]
        return m


class CounterShare(wiring.Component):
    """The counter banks' ports shared. The front bank (the matrix being counted, scanned
    and scattered) is the scan's while it scans, else the read-modify-write's; the drain
    clears the matrix before: with two banks in the other one, beside them, so the next
    matrix counts and scans while the one before drains (MINT Section V-B1 pipelines its
    chunks so; the drain needs the counters only to clear them); with one bank through
    its write port while it drains, the next matrix waiting.

    Parameters
    ----------
    words, lanes, ptr_width : a counter bank: ``words`` words of ``lanes`` counters.
    banks : 1 or 2.

    Members
    -------
    front : In(1)
        The front bank (with two); it changes only while nothing is on the counting path.
    scanning, draining : In(1)
        The scan's phase; the drain's.
    read, write : In(each bank's read and write ports).array(banks)
    scan_read, scan_write : Out(the read and write ports, as :class:`PointerScan` takes them)
    increment_read, increment_write : Out(the same, as :class:`Increment` takes them)
    clear : Out(the write port, as :class:`Drain` takes it)
        The scan and the read-modify-write see the front bank's read data; what a user
        drives reaches its bank only in its phase.
    """

    def __init__(self, words, lanes, ptr_width, banks):
        self.banks = banks
        read, write = counter_ports(words, lanes, ptr_width)
        super().__init__({"front": In(1), "scanning": In(1), "draining": In(1),
                          "read": In(read).array(banks), "write": In(write).array(banks),
                          "scan_read": Out(read), "scan_write": Out(write),
                          "increment_read": Out(read), "increment_write": Out(write),
                          "clear": Out(write)})

    def elaborate(self, platform):
        m = Module()

        def use(port, user, fields=("addr", "en", "data")):
            m.d.comb += [getattr(port, name).eq(getattr(user, name)) for name in fields]

        if self.banks == 2:
            data = Mux(self.front, self.read[1].data, self.read[0].data)
            cleared = [self.front != bank for bank in range(2)]
        else:
            data, cleared = self.read[0].data, [self.draining]
        m.d.comb += [self.scan_read.data.eq(data), self.increment_read.data.eq(data)]
        for bank in range(self.banks):
            with m.If(cleared[bank]):
                use(self.write[bank], self.clear)
            with m.Elif(self.scanning):
                use(self.read[bank], self.scan_read, ("addr", "en"))
                use(self.write[bank], self.scan_write)
            with m.Else():
                use(self.read[bank], self.increment_read, ("addr", "en"))
                use(self.write[bank], self.increment_write)
        return m


class CsrToCscSignature(wiring.Signature):
    """A CSR-to-CSC converter, seen from it: ``lanes`` column ids a chunk and pointers a
    vector, at most ``max_rows`` rows, ``max_cols`` columns and ``max_nnz`` nonzeros of
    ``value_width``-bit values. Pointers are ``ceil_log2(max_nnz + 1)`` bits.

    A matrix is one ``shape``, then its CSR (or COO) twice: once as column ids to count,
    once as entries to place. Protocol, per matrix:

    - ``shape`` (stream in, :func:`~sparseforge.sw.wire.csr_shape`): ``rows``, ``cols``
      and ``nnz``; taken once the matrix before is scattered (while it drains, with two
      counter banks; once it is drained, with one).
    - ``col_ids`` (stream in, ``lanes`` column ids): the CSR ``col_ids`` in order,
      ``lanes`` a chunk, ``ceil(nnz / lanes)`` chunks; lanes past the ``nnz``-th id are
      ignored.
    - ``row_ptr`` (stream in, a pointer): ``row_ptr[1 .. rows]``, each row's end.
    - ``csr`` (stream in, :func:`~sparseforge.sw.wire.csr_entry`): the ``nnz`` entries
      ``{col, value}`` in CSR order. ``row_ptr`` and ``csr`` are taken only after every
      pointer is out on ``col_ptr``.
    - ``from_coo`` (in): the mode, sampled as ``shape`` is taken. When set, a matrix is
      COO: ``col_ids`` are its records' columns in the order the records come, and in
      place of ``row_ptr`` and ``csr`` come its records on ``coo``.
    - ``coo`` (stream in, :func:`~sparseforge.sw.wire.coo_record` of
      ``max(ceil_log2(max_rows), ceil_log2(max_cols))``-bit indices): the ``nnz`` records
      ``{row, col, value, last}`` in any order (the order of ``col_ids``), ``last`` on the
      final one; a matrix of no nonzeros sends none. Taken when ``csr`` would be. Stored
      zeros and repeated coordinates are entries like any other (the host drops and
      refuses them); a record whose row or column has bits beyond the block's is taken
      and not placed (its slot keeps what it held).
    - ``col_ptr`` (stream out, :func:`csc_pointer_layout`): ``col_ptr[0 .. cols]`` and
      beyond, ``lanes`` a vector, ``cols // lanes + 1`` vectors, ``last`` on the final
      one; lanes past ``cols`` hold ``nnz``.
    - ``csc`` (stream out, :func:`~sparseforge.sw.wire.csc_entry`): the ``nnz`` entries
      ``{row, value}`` in CSC order (by column, rows ascending within one).
    """

    def __init__(self, lanes, max_rows, max_cols, max_nnz, value_width):
        ptr, col = ceil_log2(max_nnz + 1), ceil_log2(max_cols)
        shape = wire.csr_shape(ceil_log2(max_rows + 1), ceil_log2(max_cols + 1), ptr)
        super().__init__({
            "shape": In(stream.Signature(struct(shape))),
            "col_ids": In(stream.Signature(data.ArrayLayout(col, lanes))),
            "row_ptr": In(stream.Signature(ptr)),
            "csr": In(stream.Signature(struct(wire.csr_entry(col, value_width)))),
            "from_coo": In(1),
            "coo": In(stream.Signature(struct(wire.coo_record(
                max(ceil_log2(max_rows), col), value_width)))),
            "col_ptr": Out(stream.Signature(csc_pointer_layout(lanes, ptr))),
            "csc": Out(stream.Signature(struct(wire.csc_entry(ceil_log2(max_rows),
                                                              value_width)))),
        })


@block("csr_to_csc")
class CsrToCsc(wiring.Component):
    """CSR to CSC by counting sort, one nonzero a cycle: counters and a scratchpad (Fig. 8c).

    MINT Section V-B1. The module docstring gives the four phases (count, scan, scatter,
    drain) and why the CSR is presented twice. Storage: ``banks`` counter banks (with two,
    one for the matrix counted, scanned and scattered and one for the matrix before it,
    cleared as it drains: :class:`CounterShare`), each ``max_cols / lanes + 1`` words of
    ``lanes`` pointer-wide counters (one read port, its output registered, and one write
    port; :class:`Increment` forwards the words still being written), and the scratchpad,
    ``max_nnz`` entries ``{row, value}`` (one write port for the scatter, one read port for
    the drain). All start zeroed (their initial contents); a drain leaves its bank zeroed.
    The second bank is the price of the overlap: a counter bank is ``lanes * ptr_width``
    bits by ``max_cols / lanes + 1`` (13 kbit in the default configuration, beside the
    scratchpad's 172 kbit), and its read data is multiplexed with the first's before the
    read-modify-write's register; ``banks=1`` saves them where block RAM is scarce.

    Parameters
    ----------
    lanes : N, column ids a chunk, columns a counter word, pointers a ``col_ptr`` vector
        (the cluster counter's lanes and bins, the prefix sum's lanes).
    max_rows, max_cols, max_nnz : the largest matrix: rows, columns, nonzeros (the
        scratchpad's depth). Pointers are ``ceil_log2(max_nnz + 1)`` bits.
    value_width : bits of a value (carried, never interpreted: a float's bits).
    banks : counter banks: 2, the next matrix counts and scans while the one before drains;
        1, it waits for the drain.

    Members
    -------
    shape, col_ids, row_ptr, csr, coo : In(stream)
    from_coo : In(1)
    col_ptr, csc : Out(stream)
        As :class:`~sparseforge.hw.convert_csc.CsrToCscSignature` says: per matrix a
        ``shape``, ``ceil(nnz / N)`` chunks of ``col_ids``, then ``cols // N + 1``
        vectors out on ``col_ptr``, then ``rows`` pointers on ``row_ptr`` with ``nnz``
        entries on ``csr`` (or, from COO, ``nnz`` records on ``coo``), then ``nnz``
        entries out on ``csc``.

    Latency and throughput (no stalls): *count* takes one group a cycle (one to N ids: a
    chunk of one counter word's columns in a cycle); the first pointers are out about 15
    cycles after the last chunk (the counting path's 6 cycles, the read and the prefix
    sum); *scan* gives one counter word (N pointers) a cycle; *scatter* takes one entry a
    cycle, and a cycle per empty row (from COO: one record a cycle, no row's cost); the
    first CSC entry is out 11 cycles after the last CSR entry; *drain* gives one entry a
    cycle (and takes at least ``cols // N + 1`` cycles, the clearing), while the next
    matrix is taken, counted and scanned (with two banks). So one nonzero a cycle through
    scatter and drain; a matrix alone takes about ``2 nnz + groups + cols / N + 30``
    cycles, and back to back with two banks about ``max(groups + cols / N + 12 + log2(N),
    nnz + 4) + nnz + 8`` (and a cycle per empty row): :mod:`sparseforge.sim.models.csr_to_csc`
    gives the cycles exactly. On six SuiteSparse matrices back to back (the count at 1.7 to
    2.4 ids a cycle) that is 2.15 cycles a nonzero, 2.54 with one bank (``sparseforge bench
    csc [--banks 1]`` prints the figures).
    Between registers: the counter memory's read; N adders after the forwarding
    multiplexers; the slot multiplexer, registered before it addresses the scratchpad.

    Clock: the default configuration's slowest path is the counter memory's read. A
    scratchpad deeper than 4096 entries spans more block RAMs in depth, whose read
    multiplexer follows the RAMs' output (their own clock-to-out, no output register) in
    the same cycle into the CSC entry's register, and that takes it under 100 MHz (the
    synthesis report gives the figures).
    """

    PARAMS = (
        Param("lanes", 8, 2, 16, "column ids a chunk, counters a word, pointers a vector (N)",
              pow2=True),
        Param("max_rows", 1024, 2, 1 << 24, "most rows of a matrix", pow2=True),
        Param("max_cols", 1024, 32, 1 << 20, "most columns of a matrix", pow2=True),
        Param("max_nnz", 4096, 2, 1 << 20, "most nonzeros of a matrix (scratchpad depth)",
              pow2=True),
        Param("value_width", 32, 1, 64, "bits of a value"),
        Param("banks", 2, 1, 2, "counter banks: with 2 a matrix counts while the one before "
              "drains"),
    )
    REPORT = ({}, {"lanes": 16, "max_rows": 4096, "max_cols": 4096, "max_nnz": 16384})

    def __init__(self, shared_scan=False, **params):
        """``shared_scan``: the column pointers' prefix sum is outside, on ``scan_counts``
        and ``scan_sums`` (:class:`PointerScan`'s), for a converter that shares one."""
        v = check_params(self.PARAMS, params)
        self.lanes, self.max_rows, self.max_cols = v["lanes"], v["max_rows"], v["max_cols"]
        self.max_nnz, self.value_width, self.banks = v["max_nnz"], v["value_width"], v["banks"]
        self.ptr_width = ceil_log2(self.max_nnz + 1)
        self.col_width = ceil_log2(self.max_cols)
        self.words = self.max_cols // self.lanes + 1
        self.shared_scan = shared_scan
        signature = CsrToCscSignature(self.lanes, self.max_rows, self.max_cols,
                                      self.max_nnz, self.value_width)
        if shared_scan:
            counts, sums = prefix_sum_layouts(self.lanes, self.ptr_width)
            signature = wiring.Signature({**signature.members,
                                          "scan_counts": Out(stream.Signature(counts)),
                                          "scan_sums": In(stream.Signature(sums))})
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        N, bits, W = self.lanes, exact_log2(self.lanes), self.ptr_width
        entry = struct(wire.csc_entry(ceil_log2(self.max_rows), self.value_width))
        tag = data.StructLayout({"word": self.col_width - bits, "lane": bits,
                                 "entry": entry, "scatter": 1})
        m.submodules.groups = groups = ChunkGroups(N, self.col_width)
        m.submodules.rows = rows = RowCounter(self.max_rows, W, self.csr.payload.shape())
        m.submodules.count = count = Lockstep({"counter": ClusterCounter(lanes=N, bins=N)}, tag)
        m.submodules.enter = enter = PathEntry(N, self.col_width, rows.entries.payload.shape(),
                                               tag, count.latency + 6)
        m.submodules.increment = increment = Increment(self.words, N, W, self.max_nnz, tag)
        m.submodules.scan = scan = PointerScan(self.words, N, W, self.max_cols,
                                               self.shared_scan)
        if self.shared_scan:
            wiring.connect(m, scan.scan_counts, wiring.flipped(self.scan_counts))
            wiring.connect(m, wiring.flipped(self.scan_sums), scan.scan_sums)
        m.submodules.drain = drain = Drain(self.words, N, W, self.max_cols, self.max_nnz,
                                           entry)
        m.submodules.share = share = CounterShare(self.words, N, W, self.banks)
        for bank in range(self.banks):
            counters = Memory(shape=data.ArrayLayout(W, N), depth=self.words, init=[])
            m.submodules[f"counters{bank}"] = counters
            wiring.connect(m, share.write[bank], counters.write_port())
            wiring.connect(m, share.read[bank], counters.read_port())
        m.submodules.scratch = scratch = Memory(shape=entry.size, depth=self.max_nnz, init=[])
        wiring.connect(m, increment.place, scratch.write_port())
        wiring.connect(m, drain.read, scratch.read_port())
        wiring.connect(m, groups.groups, enter.groups)
        wiring.connect(m, enter.given, count.given)
        wiring.connect(m, count.taken, increment.items)
        wiring.connect(m, scan.read, share.scan_read)
        wiring.connect(m, scan.write, share.scan_write)
        wiring.connect(m, increment.read, share.increment_read)
        wiring.connect(m, increment.write, share.increment_write)
        wiring.connect(m, drain.clear, share.clear)
        wiring.connect(m, scan.col_ptr, wiring.flipped(self.col_ptr))
        wiring.connect(m, drain.csc, wiring.flipped(self.csc))
        shape = Signal.like(self.shape.payload)
        ids_left = Signal.like(shape.nnz)                   # column ids still to count
        from_coo = Signal()                                 # the matrix's mode
        records_done = Signal()                             # its last record is taken
        front = Signal()                                    # the counter bank it counts in
        m.d.comb += [rows.rows.eq(shape.rows), scan.cols.eq(shape.cols),
                     drain.cols.eq(shape.cols), drain.nnz.eq(shape.nnz),
                     enter.settled.eq(increment.settled), share.front.eq(front),
                     share.draining.eq(drain.busy)]
        free = Signal()                                     # the counters can take a matrix
        m.d.comb += free.eq(1 if self.banks == 2 else ~drain.busy)

        with m.FSM() as phase:
            with m.State("idle"):
                m.d.comb += [self.shape.ready.eq(free),
                             rows.restart.eq(self.shape.valid & free)]
                with m.If(self.shape.valid & free):
                    m.d.sync += [shape.eq(self.shape.payload), ids_left.eq(self.shape.payload.nnz),
                                 from_coo.eq(self.from_coo),
                                 records_done.eq(self.shape.payload.nnz == 0)]
                    m.next = "count"
            with m.State("count"):
                chunk, more = groups.chunk, ids_left != 0
                m.d.comb += [chunk.valid.eq(self.col_ids.valid & more),
                             self.col_ids.ready.eq(chunk.ready & more),
                             chunk.payload.ids.eq(self.col_ids.payload),
                             chunk.payload.mask.eq(Cat(ids_left >= i + 1 for i in range(N))),
                             enter.count.eq(1)]
                with m.If(chunk.valid & chunk.ready):
                    m.d.sync += ids_left.eq(Mux(ids_left > N, ids_left - N, 0))
                with m.If(~more & ~groups.groups.valid & enter.empty):
                    m.d.comb += scan.start.eq(1)
                    m.next = "scan"
            with m.State("scan"), m.If(scan.done):
                m.next = "hold"
            with m.State("hold"), m.If(~drain.busy):     # the scratchpad is drained
                m.next = "scatter"
            with m.State("scatter"):
                m.d.comb += enter.scatter.eq(1)
                with m.If(from_coo):                        # records carry their rows
                    record, entries = self.coo.payload, enter.entries.payload
                    # a record beyond the block's indices is taken and not placed: cut to
                    # its low bits it would take another column's slot
                    fits = ((record.row[len(entries.row):] == 0)
                            & (record.col[len(entries.entry.col):] == 0))
                    m.d.comb += [enter.entries.valid.eq(self.coo.valid & ~records_done & fits),
                                 self.coo.ready.eq((enter.entries.ready | ~fits) & ~records_done),
                                 entries.row.eq(record.row), entries.entry.col.eq(record.col),
                                 entries.entry.value.eq(record.value)]
                    with m.If(self.coo.valid & self.coo.ready & record.last):
                        m.d.sync += records_done.eq(1)
                with m.Else():
                    wiring.connect(m, wiring.flipped(self.row_ptr), rows.row_ptr)
                    wiring.connect(m, wiring.flipped(self.csr), rows.csr)
                    wiring.connect(m, rows.entries, enter.entries)
                with m.If(Mux(from_coo, records_done, rows.done) & enter.empty):
                    m.d.comb += drain.start.eq(1)
                    if self.banks == 2:
                        m.d.sync += front.eq(~front)
                    m.next = "idle"

        m.d.comb += share.scanning.eq(phase.ongoing("scan"))
        # the read-modify-write takes an item every cycle (none is in flight while idle)
        m.d.comb += count.taken.ready.eq(~phase.ongoing("idle"))
        return m
