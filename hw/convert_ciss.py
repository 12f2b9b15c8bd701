"""MINT's converter to Tensaurus's compute format: CSR to CISS in line (MINT Section V,
Tensaurus Section 4, Fig. 3d).

The block reads a matrix as its user stores it, in CSR, and emits the CISS entries
:func:`sparseforge.sw.ciss.encode` makes of it for ``P`` PEs, entry for entry: each
nonempty row (a mode-0 slice) goes, in index order, to the lane that frees first (the
least-loaded, ties to the lower lane); the lane carries the row's header and then its
``(j, value)`` elements, one an entry; a lane with no row left is idle.

How the CSR arrives, and why. Entry ``n`` needs the ``n``-th item of every lane at once:
``P`` rows read side by side. Streaming the CSR in row order cannot give them with
buffers of fixed size, since a row longer than the others would have to wait whole while
the rows after it go by. So the block takes the row pointers alone as a stream (they say
every row's place and length, which is all the schedule needs), and each lane reads its
rows' elements itself, through its own in-order memory port
(:class:`~sparseforge.hw.stream_units.MemoryPortSignature`, an element's address its
index in the CSR, the parent adding the matrix's base; a
:class:`~sparseforge.hw.stream_units.Reorder` in front makes one of a memory that
answers out of order). The units:

1. :class:`SliceLengths`: ``row_ptr[1 .. rows]`` to the nonempty rows, each its index,
   first element and length (a subtraction of pointers: CSR already holds the prefix sums
   and the lengths that the cluster counter and the prefix-sum unit make of COO).
2. :class:`LeastLoaded`: each row to the lane whose stream ends first (the sum of its
   rows' lengths plus headers, the entry it frees at), one row a cycle, by comparators
   between every pair of lanes, kept as running differences of their ends so that the
   choice is a few gates.
3. :class:`LaneFetch`, one a lane: its rows from a short queue; one read a cycle for
   each element, up to ``inflight`` reads ahead of the output (a queue beside the memory
   keeps them in order, a row's first read carrying its header).
4. :class:`Interleave`: an entry once every lane that owes an item has it; a lane that
   owes none is idle once every row is scheduled (until then a row may still come to
   it). After the last entry, the entry count on ``count``.

:class:`CsrTileToCiss` converts one tile of the matrix at a time, a band of rows and a
window of columns, as a Tensaurus run streams A's tiles (Section 5.1): its
:class:`WindowLengths` reads the band's row pointers itself and finds each row's part of
the window by counting over its column ids, keeping a cursor per band row between the
band's windows, and hands the rows to the same schedule, lanes and join.

The host's side (:mod:`sparseforge.sw.ciss_csr`) refuses a CSR the block would convert
differently from the encoder (columns out of order or repeated, stored zeros, indices
past the widths), in one line.

Buffers are fixed by the parameters: per lane a queue of two rows, one of ``inflight``
reads and two skid registers (its reads, its items); a matrix of any size whose indices
fit passes through the same build.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .interfaces import ciss_entry_layout, struct
from .stream_units import MemoryPortSignature, Queue, Skid


def slice_layout(iw, addr_width):
    """A nonempty row as the schedule takes it: its index ``row``, first element ``base``
    (its row pointer) and ``count`` of elements."""
    return data.StructLayout({"row": iw, "base": addr_width, "count": addr_width})


class SliceLengths(wiring.Component):
    """The nonempty rows of a CSR matrix from its row pointers (Tensaurus Section 4: the
    slices handed out).

    Parameters
    ----------
    iw, addr_width : bits of a row index and of a pointer.

    Members
    -------
    rows : In(iw)
        The matrix's rows, taken with ``restart``.
    restart : In(1)
        Starts a matrix: no pointer taken, the previous one 0.
    row_ptr : In(stream(addr_width))
        ``row_ptr[1 .. rows]``.
    slices : Out(stream(:func:`slice_layout`))
        The nonempty rows in order, from a register.
    done : Out(1)
        Every pointer is taken and every slice has gone.

    Latency and throughput: 1 cycle; one pointer a cycle (an empty row too). Whether a
    pointer is still to come is a register, so ``done`` is two registers' NOR.
    """

    def __init__(self, iw, addr_width):
        super().__init__({"rows": In(iw), "restart": In(1),
                          "row_ptr": In(stream.Signature(addr_width)),
                          "slices": Out(stream.Signature(slice_layout(iw, addr_width))),
                          "done": Out(1)})

    def elaborate(self, platform):
        m = Module()
        taken = Signal.like(self.rows, name="taken")      # pointers taken
        final = Signal.like(self.rows, name="final")      # rows - 1
        prev = Signal.like(self.row_ptr.payload, name="prev")   # the last: the next row's base
        ptr, out = self.row_ptr, self.slices
        load, more = Signal(), Signal()                   # more: a pointer is to come
        m.d.comb += [load.eq(~out.valid | out.ready), ptr.ready.eq(more & load),
                     self.done.eq(~more & ~out.valid)]
        with m.If(load):
            m.d.sync += [out.valid.eq(ptr.valid & ptr.ready & (ptr.payload != prev)),
                         out.payload.row.eq(taken), out.payload.base.eq(prev),
                         out.payload.count.eq(ptr.payload - prev)]
        with m.If(ptr.valid & ptr.ready):
            m.d.sync += [prev.eq(ptr.payload), taken.eq(taken + 1), more.eq(taken != final)]
        with m.If(self.restart):
            m.d.sync += [taken.eq(0), prev.eq(0), out.valid.eq(0), final.eq(self.rows - 1),
                         more.eq(self.rows != 0)]
        return m


class LeastLoaded(wiring.Component):
    """Each slice to the lane that frees first (Tensaurus Section 4's least-loaded PE).

    A lane's end is the entry its stream ends at: the lengths of its slices, each with its
    header. A slice goes to the lane of the smallest end (ties to the lower lane, as
    :func:`sparseforge.sw.ciss.schedule`), which starts it there; that end grows by the
    slice's length and header.

    The ends are kept as their comparisons: for each pair of lanes ``p < q`` a register
    holds ``end[p] - end[q] - 1``, whose sign says that ``p`` comes before ``q``. The
    chosen lane (a register too) comes before every other, an AND of sign bits; taking
    a slice adds its length and header to the differences of its lane (and subtracts it
    from those against it). So the loop from one choice to the next is one adder and a
    few gates, where a comparator tree over the ends and the chosen end's adder (the
    direct way) chain ``log2 P + 1`` carry chains and kept the block under half the clock.
    ``P (P - 1) / 2`` differences of ``addr_width + 2`` bits: two ends differ by at most
    the longest row and its header.

    Parameters
    ----------
    pes : P, lanes.
    iw, addr_width : bits of a row index and of a pointer.

    Members
    -------
    slices : In(stream(:func:`slice_layout`))
    assign : Out(stream(:func:`slice_layout`)) x P
        Each slice on its lane's stream; the slice is taken when that lane takes it.
    restart : In(1)
        Every end back to 0.

    Latency and throughput: none (the slice goes to its lane on the cycle it is taken);
    one slice a cycle.
    """

    def __init__(self, pes, iw, addr_width):
        self.pes, self.addr_width = pes, addr_width
        layout = slice_layout(iw, addr_width)
        super().__init__({"slices": In(stream.Signature(layout)),
                          "assign": Out(stream.Signature(layout)).array(pes),
                          "restart": In(1)})

    def elaborate(self, platform):
        m = Module()
        P, given = self.pes, self.slices
        pairs = [(p, q) for p in range(P) for q in range(p + 1, P)]
        ahead = {(p, q): Signal(signed(self.addr_width + 2), init=-1, name=f"ahead_{p}_{q}")
                 for p, q in pairs}                      # end[p] - end[q] - 1: p before q
        taken, width = Signal(), self.addr_width + 2
        # The chosen lane is a register too, the AND of the differences' signs: each
        # difference's next value (the chosen lane's step added) is made from registers,
        # and a taken slice loads it and the AND of its signs.
        chosen = Signal(P, init=1)                      # all ends 0: the lowest lane
        moved = {pair: Signal.like(ahead[pair], name=f"moved_{pair[0]}_{pair[1]}")
                 for pair in pairs}

        def first(sign):
            return Cat(Cat(*(sign[p, q] for q in range(p + 1, P)),
                           *(~sign[q, p] for q in range(p))).all() for p in range(P))

        m.d.comb += [given.ready.eq((chosen & Cat(a.ready for a in self.assign)).any()),
                     taken.eq(given.valid & given.ready)]
        # The step is the count and one: ``+ step`` the count with a carry in, ``- step``
        # the count inverted (``-1 - count``), so each next value is one carry chain.
        count = Signal(width)
        m.d.comb += count.eq(given.payload.count)
        for p, q in pairs:
            term = Mux(chosen[p], count, Mux(chosen[q], ~count, 0))
            m.d.comb += moved[p, q].eq(ahead[p, q] + term + chosen[p])
        for p, out in enumerate(self.assign):
            m.d.comb += [out.valid.eq(given.valid & chosen[p]), out.payload.eq(given.payload)]
        with m.If(self.restart):
            m.d.sync += [*(ahead[pair].eq(-1) for pair in pairs), chosen.eq(1)]
        with m.Elif(taken):
            m.d.sync += [*(ahead[pair].eq(moved[pair]) for pair in pairs),
                         chosen.eq(first({pair: moved[pair][-1] for pair in pairs}))]
        return m


class LaneFetch(wiring.Component):
    """One lane of the CISS stream: its slices' headers and elements, read in order.

    Its slices wait in a queue of two. A slice is taken with the read of its first
    element, once the last element of the one before has been read; then each element's
    read, one a cycle, while the order queue has room. Each read's place goes into the
    order queue, the first of a slice marked with the slice's row: at the queue's head it
    leaves its header first, then its element with the read's answer, through a skid
    register (so the entry's join reaches no further back than it). The reads go out
    through a skid register too, so the memory's ``ready`` (an arbiter's grant over
    other ports) reaches only it: the read before a slice's header leaves with it, so
    the register's cycle costs the lane's items none.

    Parameters
    ----------
    iw, dw, addr_width : bits of an index, a value and an address.
    inflight : reads the order queue holds: in flight, ahead of the output.
    order : 2 for a matrix; 3 for a tensor, whose elements carry their ``k`` too.

    Members
    -------
    slices : In(stream(:func:`slice_layout`))
    origin : In(iw)
        Subtracted from every element's column: a window's first column, 0 for a whole
        matrix. Held while the lane owes items.
    mem : Out(MemoryPortSignature(addr_width, csr entry))
        Reads of ``{col, value}`` (:func:`~sparseforge.sw.wire.csr_entry`), or for a
        tensor ``{col, k, value}`` (:func:`~sparseforge.sw.wire.tensor_entry`), by element
        index.
    items : Out(stream(lane))
        The lane's items (a CISS entry's lane): a header ``{nnz 0, ij row}`` or an element
        ``{nnz value, ij col - origin}`` (and its ``k`` as read, for a tensor).
    busy : Out(1)
        An item is owed: a slice waits, an element is still to read or an item to leave.
        From registers. A lane's items follow one another without a gap, so a busy lane
        owes the next entry an item, and a lane not busy is at its end.

    Latency and throughput: one item a cycle while the memory answers within
    ``inflight - 2`` cycles; an element is out on the cycle after its answer (a header two
    cycles after its slice is taken).
    """

    def __init__(self, iw, dw, addr_width, inflight, order=2):
        self.iw, self.inflight, self.order = iw, inflight, order
        lane = ciss_entry_layout(1, dw, iw, order).elem_shape
        self.element = struct(wire.element_entry(iw, dw, order))
        super().__init__({"slices": In(stream.Signature(slice_layout(iw, addr_width))),
                          "origin": In(iw),
                          "mem": Out(MemoryPortSignature(addr_width, self.element.size)),
                          "items": Out(stream.Signature(lane)), "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        order = data.StructLayout({"first": 1, "row": self.iw})
        m.submodules.slices = slices = Queue(self.slices.payload.shape(), depth=2, latency=1)
        m.submodules.order = queue = Queue(order, depth=self.inflight, latency=1)
        m.submodules.out = skid = Skid(self.items.payload.shape())
        m.submodules.reads = reads = Skid(self.mem.request.payload.shape())
        wiring.connect(m, wiring.flipped(self.slices), slices.i)
        wiring.connect(m, skid.o, wiring.flipped(self.items))
        wiring.connect(m, reads.o, wiring.flipped(self.mem.request))
        given = slices.o
        left = Signal.like(given.payload.count, name="left")     # elements still to read
        addr = Signal.like(given.payload.base, name="addr")      # the next one's
        reading = Signal()                                          # left != 0, registered
        request, response = reads.i, self.mem.response
        fetched, opened = Signal(), Signal()
        m.d.comb += self.busy.eq(given.valid | reading | queue.o.valid | skid.o.valid)
        m.d.comb += [request.valid.eq((reading | given.valid) & queue.i.ready),
                     request.payload.eq(Mux(reading, addr, given.payload.base)),
                     fetched.eq(request.valid & request.ready),
                     given.ready.eq(~reading & fetched), opened.eq(given.valid & given.ready),
                     queue.i.valid.eq(fetched), queue.i.payload.first.eq(~reading),
                     queue.i.payload.row.eq(given.payload.row)]
        with m.If(opened):                            # a slice holds at least one element
            m.d.sync += [left.eq(given.payload.count - 1), addr.eq(given.payload.base + 1),
                         reading.eq(given.payload.count != 1)]
        with m.Elif(fetched):
            m.d.sync += [left.eq(left - 1), addr.eq(addr + 1), reading.eq(left != 1)]
        head, out = queue.o.payload, skid.i
        said = Signal()                             # the head's header has left
        header = Signal()                           # the head's header is to leave
        element = data.View(self.element, response.payload)
        col = Signal(self.iw)                       # the element's column in the window
        m.d.comb += [header.eq(head.first & ~said), col.eq(element.col - self.origin),
                     out.valid.eq(queue.o.valid & (header | response.valid)),
                     out.payload.nnz.eq(Mux(header, 0, element.value)),
                     out.payload.ij.eq(Mux(header, head.row, col)),
                     *([out.payload.k.eq(Mux(header, 0, element.k))]
                       if self.order == 3 else []),
                     response.ready.eq(queue.o.valid & ~header & out.ready),
                     queue.o.ready.eq(out.valid & out.ready & ~header)]
        with m.If(out.valid & out.ready):
            m.d.sync += said.eq(header)
        return m


class Interleave(wiring.Component):
    """The lanes' items joined into CISS entries, idle lanes filled in, and the count.

    Each entry holds an item of every lane but those done: a lane is done once, every
    slice scheduled, it is not busy (:class:`LaneFetch`'s ``busy``: it owes no item), a
    state it then keeps to the matrix's end, so ``done`` is registered (a cycle after the
    lane's last item). Until then the entry waits for the lane (a slice may still start
    on it). The matrix ends when every lane is done.

    Parameters
    ----------
    pes, dw, iw, addr_width : the entry (P lanes of ``dw``-bit values, ``iw``-bit
        indices); entries are counted in ``addr_width + 1`` bits.
    order : the entry's (2 for a matrix, 3 for a tensor: a lane's ``k`` too).

    Members
    -------
    lanes : In(stream(lane)) x P
    busy : In(P)
        The lanes that owe an item.
    scheduled : In(1)
        No slice is left to schedule (none is on its way to a lane).
    active, restart : In(1)
        A matrix is on; start counting from 0.
    ciss : Out(stream(:func:`~.interfaces.ciss_entry_layout`))
        The entries, from a :class:`~.stream_units.Skid`: the consumer's ``ready`` reaches
        no further than its registers, and the join waits on its free register alone.
    count : Out(stream(addr_width + 1))
        The matrix's entries, after its last one is taken.

    Latency and throughput: 1 cycle; one entry a cycle while every lane not done has its
    item. Between registers: the AND of the lanes' ``valid`` (or done), to every lane's
    ``ready``.
    """

    def __init__(self, pes, dw, iw, addr_width, order=2):
        self.pes, self.idle, self.order = pes, wire.CissWire(pes, dw, iw, order).idle, order
        entry = ciss_entry_layout(pes, dw, iw, order)
        super().__init__({"lanes": In(stream.Signature(entry.elem_shape)).array(pes),
                          "busy": In(pes), "scheduled": In(1), "active": In(1),
                          "restart": In(1), "ciss": Out(stream.Signature(entry)),
                          "count": Out(stream.Signature(addr_width + 1))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.out = skid = Skid(self.ciss.payload.shape())
        wiring.connect(m, skid.o, wiring.flipped(self.ciss))
        n = Signal.like(self.count.payload, name="n")              # entries sent
        done = Signal(self.pes)             # lanes idle to the end: not busy, all scheduled
        valid = Cat(lane.valid for lane in self.lanes)
        out, go = skid.i, Signal()
        m.d.comb += [go.eq(self.active & valid.any() & (valid | done).all() & out.ready),
                     out.valid.eq(go),
                     self.count.valid.eq(self.active & done.all() & ~self.ciss.valid),
                     self.count.payload.eq(n)]
        for p, lane in enumerate(self.lanes):
            m.d.comb += [lane.ready.eq(go),
                         out.payload[p].nnz.eq(Mux(valid[p], lane.payload.nnz, 0)),
                         out.payload[p].ij.eq(Mux(valid[p], lane.payload.ij, self.idle))]
            if self.order == 3:
                m.d.comb += out.payload[p].k.eq(Mux(valid[p], lane.payload.k, 0))
        m.d.sync += done.eq(Mux(self.restart | ~self.active | ~self.scheduled, 0,
                                ~self.busy))
        with m.If(go):
            m.d.sync += n.eq(n + 1)
        with m.If(self.restart):
            m.d.sync += n.eq(0)
        return m


class CsrToCissSignature(wiring.Signature):
    """A CSR-to-CISS converter, seen from it: ``pes`` lanes, ``dw``-bit values,
    ``iw``-bit indices, ``addr_width``-bit element indices.

    Per matrix:

    - ``rows`` (stream in, ``iw`` bits): the matrix's rows; taken while the converter is
      idle (between matrices).
    - ``row_ptr`` (stream in, ``addr_width`` bits): ``row_ptr[1 .. rows]`` (``row_ptr[0]``
      is 0).
    - ``mem`` (``pes`` memory ports out, :class:`~.stream_units.MemoryPortSignature`):
      lane ``p`` reads the elements ``{col, value}``
      (:func:`~sparseforge.sw.wire.csr_entry`) of its rows by their index in the CSR, in
      order, and takes the answers in order.
    - ``ciss`` (stream out, :func:`~.interfaces.ciss_entry_layout` of order 2): the CISS
      entries, as :func:`sparseforge.sw.ciss.encode` lays them out.
    - ``count`` (stream out, ``addr_width + 1`` bits): the number of entries, after the
      last one (0 for a matrix without nonzeros).
    """

    def __init__(self, pes, dw, iw, addr_width):
        super().__init__({
            "rows": In(stream.Signature(iw)),
            "row_ptr": In(stream.Signature(addr_width)),
            "mem": Out(MemoryPortSignature(addr_width, iw + dw)).array(pes),
            "ciss": Out(stream.Signature(ciss_entry_layout(pes, dw, iw, order=2))),
            "count": Out(stream.Signature(addr_width + 1)),
        })


def _schedule_and_fetch(m, block, lengths, given, order=2):
    """The converters' back half, after their slice lengths unit ``lengths``: the
    least-loaded schedule, a :class:`LaneFetch` a lane, the :class:`Interleave` into
    ``block``'s ``ciss`` and ``count`` (entries of ``order``); a conversion starts when
    ``given`` (its input stream, whose payload the caller hands ``lengths``) comes while
    idle and ends with its count. Returns the lanes and the conversion's start."""
    P, A = block.pes, block.addr_width
    m.submodules.schedule = schedule = LeastLoaded(P, block.iw, A)
    m.submodules.interleave = join = Interleave(P, block.dw, block.iw, A, order)
    wiring.connect(m, lengths.slices, schedule.slices)
    lanes = []
    for p in range(P):
        m.submodules[f"lane{p}"] = lane = LaneFetch(block.iw, block.dw, A, block.inflight,
                                                    order)
        wiring.connect(m, schedule.assign[p], lane.slices)
        wiring.connect(m, lane.mem, wiring.flipped(block.mem[p]))
        wiring.connect(m, lane.items, join.lanes[p])
        m.d.comb += join.busy[p].eq(lane.busy)
        lanes.append(lane)
    wiring.connect(m, join.ciss, wiring.flipped(block.ciss))
    wiring.connect(m, join.count, wiring.flipped(block.count))
    active, start = Signal(), Signal()
    m.d.comb += [given.ready.eq(~active), start.eq(given.valid & ~active),
                 join.scheduled.eq(lengths.done), join.active.eq(active)]
    m.d.comb += [unit.restart.eq(start) for unit in (lengths, schedule, join)]
    with m.If(start):
        m.d.sync += active.eq(1)
    with m.If(block.count.valid & block.count.ready):
        m.d.sync += active.eq(0)
    return lanes, start


@block("csr_to_ciss")
class CsrToCiss(wiring.Component):
    """CSR to CISS for ``pes`` PEs, one entry a cycle, its rows read in line.

    MINT Section V's conversion to an accelerator's compute format, the format Tensaurus's
    TLU takes (Section 4, Fig. 3d). The module docstring says how the CSR arrives (row
    pointers streamed; each lane reads its rows' elements through its own memory port)
    and why, and gives the units. Storage is fixed by the parameters: per lane a queue of
    two slices, one of ``inflight`` reads and two skids; nothing grows with the matrix.

    Parameters
    ----------
    pes : P, lanes of an entry (PE rows).
    dw, iw : bits of a value and of an index (the entry's layout).
    addr_width : bits of an element's index in the CSR (a row pointer); a matrix has
        fewer than ``2**addr_width`` nonzeros.
    inflight : each lane's reads in flight (its order queue's items).

    Members
    -------
    rows, row_ptr : In(stream)
    mem : Out(MemoryPortSignature) x P
    ciss, count : Out(stream)
        As :class:`~sparseforge.hw.convert_ciss.CsrToCissSignature` says.

    Latency and throughput (the memory answering on the cycle after a read): the first
    entry needs every lane's first row, scheduled one a cycle, and is out ``P + 5``
    cycles after the matrix's first pointer. Then one entry a cycle while the rows keep
    the schedule fed, one row a cycle: rows of at least ``P - 1`` nonzeros on average.
    Shorter rows ask for more than a row a cycle (a row of one nonzero holds its lane two
    entries), so the entry rate falls to ``(1 + nnz / rows) / P`` entries a cycle; an
    empty row costs a cycle of the schedule. The next matrix's first entry follows the
    last one by ``P + 7`` cycles (the count, the next ``rows``, the first rows).
    Between registers: the schedule's loop (a slice's count into every difference's
    carry chain, their sign bits ANDed into the chosen lane's register; the slice taken
    when its lane's queue has room) and the entry's join (each lane's ``valid`` or done,
    from registers, ANDed over the lanes, to every lane's skid, whose held item's enable
    fans out over its bits). At 8 lanes the schedule's loop is the critical path (the
    count through a difference into the choice), at the default configuration the
    entry's join; the synthesis report gives the figures.
    """

    PARAMS = (Param("pes", 4, 1, 64, "PE rows (lanes of an entry)"),
              Param("dw", 32, 2, 64, "bits of a value"),
              Param("iw", 16, 1, 32, "bits of an index"),
              Param("addr_width", 20, 2, 32, "bits of an element index (a row pointer)"),
              Param("inflight", 4, 2, 64, "reads in flight per lane"))
    REPORT = ({}, {"pes": 8, "dw": 16, "iw": 16, "addr_width": 24})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.pes, self.dw, self.iw = v["pes"], v["dw"], v["iw"]
        self.addr_width, self.inflight = v["addr_width"], v["inflight"]
        super().__init__(CsrToCissSignature(self.pes, self.dw, self.iw, self.addr_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.lengths = lengths = SliceLengths(self.iw, self.addr_width)
        wiring.connect(m, wiring.flipped(self.row_ptr), lengths.row_ptr)
        m.d.comb += lengths.rows.eq(self.rows.payload)
        _schedule_and_fetch(m, self, lengths, self.rows)
        return m


AHEAD = 4
"""Band rows' cursors the pre-pass reads ahead of the row it decides (and holds): enough
for a row a cycle past the cursor memory's read and the queue's register."""


def job_layout(iw, addr_width, band):
    """A tile of A as the parent asks for it: the band's first row ``i0`` and its
    ``rows`` (at most ``band``), the window's columns ``k0 <= j < k1``, and ``first``,
    set on a band's first window (the cursors start at the row pointers)."""
    return data.StructLayout({"i0": addr_width, "rows": range(band + 1), "k0": iw,
                              "k1": iw + 1, "first": 1})


def cursor_layout(iw, addr_width):
    """A band row's place between windows: the next element to decide, ``cur``, the row's
    end ``end`` (its next row pointer), the column of the element at ``cur`` where a
    window before read it (``peek`` set), and ``due``: that element is still to read
    (not peeked, before the end), kept where the cursor is set so that the pre-pass's
    read request is a mux of registers, with no compare of ``cur`` and ``end`` before
    the memory port."""
    return data.StructLayout({"cur": addr_width, "end": addr_width, "peek": 1, "col": iw,
                              "due": 1})


class WindowLengths(wiring.Component):
    """The nonempty rows of a tile ``A[i0 : i0 + rows, k0 : k1]`` from a CSR in memory: the
    counting pre-pass over each row's column ids (MINT's CSR to CSC reads its input twice
    too; here the second read is the lanes').

    CSR's row pointers say where a row starts, not where a window starts within it, and
    the schedule needs each row's length within the window before the row is scheduled.
    So each row is scanned from its cursor: an element of column ``c`` is skipped
    (``c < k0``), counted (``k0 <= c < k1``), or stops the row (``c >= k1``, or the row's
    end), and the row is a slice ``{row r, base, count}`` when its count is not 0 (``r``
    counted from ``i0``, ``base`` the first element counted). The cursors, one a band
    row, stay in an on-chip memory of ``band`` entries (:func:`cursor_layout`) between
    the windows of a band, which come in ascending ``k0``: the element that stopped a row
    is kept with its column (``peek``) and decided by the next window without a read, so
    over a band's windows each column id is read once. A job with ``first`` set reads the
    band's row pointers ``row_ptr[i0 .. i0 + rows]`` and starts the cursors there.

    One row at a time, one decision a cycle: a peeked column or the row's end is decided
    on the cycle the row comes up; an element not peeked is read (the request registered)
    and decided on the cycle its answer comes. The cursors are read ahead, in row order,
    into a queue of :data:`AHEAD` (rows after the one decided are not written in the
    window), so a row's cursor is there when the row before it is decided, and the
    memory's output goes to a register, not into the decision. With answers on the cycle
    after their request: 2 cycles a read, 1 for a peeked element, 1 for a row that ends
    at its end without a read. The stopping decision writes the cursor back and hands out
    the slice in the same cycle.

    Handshakes with the units around it start at registers, so no path runs through
    this unit from one of them into another: the read request is a mux of two registers
    (whether a read is due is kept in the cursor, :func:`cursor_layout`), an answer is
    always taken (one that stops its row while the slice's register is full waits in the
    held cursor as a peek, decided on the cycle there is room, as it would have been from
    the memory's answer), and the slices leave through a :class:`~.stream_units.Skid`,
    whose free register alone holds the decision.

    Parameters
    ----------
    iw, dw, addr_width : bits of an index, a value and an element index (a pointer).
    band : the rows of a band at most (the cursor memory's depth).

    Members
    -------
    job : In(:func:`job_layout`)
        The tile, taken with ``restart``.
    restart : In(1)
        Starts the tile.
    ptr : Out(MemoryPortSignature(addr_width, addr_width))
        Reads ``row_ptr[i]`` at ``i``, for a band's first window.
    cols : Out(MemoryPortSignature(addr_width, iw))
        Reads an element's column id by its index.
    slices : Out(stream(:func:`slice_layout`))
        The tile's nonempty rows in order, from a :class:`~.stream_units.Skid`.
    origin : Out(iw)
        The tile's ``k0``, a register held until the next tile.
    done : Out(1)
        Every row of the tile is decided and every slice has gone.
    """

    def __init__(self, iw, dw, addr_width, band):
        self.iw, self.dw, self.addr_width, self.band = iw, dw, addr_width, band
        super().__init__({"job": In(job_layout(iw, addr_width, band)), "restart": In(1),
                          "ptr": Out(MemoryPortSignature(addr_width, addr_width)),
                          "cols": Out(MemoryPortSignature(addr_width, iw)),
                          "slices": Out(stream.Signature(slice_layout(iw, addr_width))),
                          "origin": Out(iw), "done": Out(1)})

    def elaborate(self, platform):
        m = Module()
        cursor = cursor_layout(self.iw, self.addr_width)
        m.submodules.cursors = store = Memory(shape=cursor, depth=self.band, init=[])
        m.submodules.ahead = ahead = Queue(cursor, depth=AHEAD, latency=1)
        wr, rd = store.write_port(), store.read_port()
        job = Signal(job_layout(self.iw, self.addr_width, self.band), name="tile")
        r = Signal(range(self.band + 1), name="r")           # the row being decided
        q = Signal(range(self.band + 1), name="q")           # the next cursor to fetch
        owed = Signal(range(AHEAD + 1))                       # cursors fetched, not taken
        fetching, pending = Signal(), Signal()                # a cursor read, its answer
        asked = Signal(range(self.band + 2))                  # pointers asked for
        asking = Signal()                                     # asked <= rows, registered
        ptr_at = Signal(self.addr_width)                      # i0 + asked
        got = Signal(range(self.band + 2))                    # pointers answered
        prev = Signal(self.addr_width)                        # the last pointer answered
        held = Signal(cursor, name="held")                    # the row's cursor, moved on
        fresh = Signal()                                      # the row's cursor is ahead's
        live = Signal()                                       # the row's cursor is here
        waiting = Signal()                                    # a column read is out
        count = Signal(self.addr_width)
        base = Signal(self.addr_width)
        m.submodules.out = skid = Skid(self.slices.payload.shape())
        wiring.connect(m, skid.o, wiring.flipped(self.slices))
        out, load = skid.i, Signal()
        ptr, cols = self.ptr, self.cols
        at = Signal(cursor, name="at")                        # the row's cursor now
        opens = Signal()                                      # at's element is to read
        start = Signal.like(base)
        m.d.comb += [at.eq(Mux(fresh, ahead.o.payload, held)),
                     live.eq(~fresh | ahead.o.valid),
                     opens.eq(Mux(fresh, ahead.o.valid & ahead.o.payload.due, held.due)),
                     load.eq(out.ready), self.origin.eq(job.k0),
                     rd.addr.eq(q), rd.en.eq(fetching), wr.data.eq(at), wr.addr.eq(r),
                     ahead.i.valid.eq(pending), ahead.i.payload.eq(rd.data),
                     start.eq(Mux(fresh, at.cur, base))]
        m.d.sync += [pending.eq(fetching),
                     owed.eq(owed + fetching - (ahead.o.valid & ahead.o.ready))]
        with m.FSM(name="window"):
            with m.State("DONE"):
                m.d.comb += self.done.eq(~self.slices.valid)
                with m.If(self.restart):
                    m.d.sync += [job.eq(self.job), r.eq(0), q.eq(0), asked.eq(0), got.eq(0),
                                 fresh.eq(1), waiting.eq(0), count.eq(0), asking.eq(1),
                                 ptr_at.eq(self.job.i0)]
                    with m.If(self.job.rows == 0):
                        m.next = "DONE"
                    with m.Elif(self.job.first):
                        m.next = "LOAD"
                    with m.Else():
                        m.next = "SCAN"
            with m.State("LOAD"):                         # row_ptr[i0 .. i0 + rows]
                m.d.comb += [ptr.request.valid.eq(asking), ptr.request.payload.eq(ptr_at),
                             ptr.response.ready.eq(1),
                             wr.addr.eq(got - 1), wr.data.cur.eq(prev),
                             wr.data.end.eq(ptr.response.payload), wr.data.peek.eq(0),
                             wr.data.due.eq(ptr.response.payload != prev)]
                with m.If(ptr.request.valid & ptr.request.ready):
                    m.d.sync += [asked.eq(asked + 1), asking.eq(asked != job.rows),
                                 ptr_at.eq(ptr_at + 1)]
                with m.If(ptr.response.valid):
                    m.d.comb += wr.en.eq(got != 0)
                    m.d.sync += [prev.eq(ptr.response.payload), got.eq(got + 1)]
                    with m.If(got == job.rows):
                        m.next = "SCAN"
            with m.State("SCAN"):
                known, col, ended = Signal(), Signal(self.iw), Signal()
                skip, take, stop = Signal(), Signal(), Signal()
                answer = waiting & cols.response.valid

                def below(k):
                    """The column below ``k``: compared at each of its sources, then
                    chosen, so no mux stands before the comparators' carry chains."""
                    return Mux(at.peek, Mux(fresh, ahead.o.payload.col < k, held.col < k),
                               cols.response.payload < k)

                m.d.comb += [fetching.eq((q != job.rows) & (owed < AHEAD)),
                             ahead.o.ready.eq(fresh),
                             known.eq(live & at.peek | answer),
                             col.eq(Mux(at.peek, at.col, cols.response.payload)),
                             ended.eq(live & ~at.peek & ~opens & ~waiting),
                             skip.eq(known & below(job.k0)),
                             take.eq(known & ~below(job.k0) & below(job.k1)),
                             stop.eq(known & ~below(job.k1) | ended),
                             cols.request.valid.eq(opens & ~waiting),
                             cols.request.payload.eq(at.cur),
                             cols.response.ready.eq(waiting)]
                with m.If(fetching):
                    m.d.sync += q.eq(q + 1)
                with m.If(cols.request.valid & cols.request.ready):
                    m.d.sync += waiting.eq(1)
                with m.If(live):
                    m.d.sync += [held.eq(at), fresh.eq(0), base.eq(start)]
                with m.If(skip | take):
                    m.d.sync += [held.cur.eq(at.cur + 1), held.peek.eq(0), waiting.eq(0),
                                 held.due.eq(at.cur + 1 != at.end)]
                with m.If(skip):
                    m.d.sync += base.eq(at.cur + 1)
                with m.If(take):
                    m.d.sync += count.eq(count + 1)
                with m.If(answer & stop & ~load):         # kept, as a window's peek
                    m.d.sync += [held.peek.eq(1), held.col.eq(cols.response.payload),
                                 held.due.eq(0), waiting.eq(0)]
                with m.If(stop & load):                   # the row's window decided
                    m.d.comb += [wr.en.eq(1), wr.data.peek.eq(known), wr.data.col.eq(col),
                                 wr.data.due.eq(0),
                                 out.valid.eq(count != 0), out.payload.row.eq(r),
                                 out.payload.base.eq(start), out.payload.count.eq(count)]
                    m.d.sync += [count.eq(0), fresh.eq(1), waiting.eq(0), r.eq(r + 1)]
                    with m.If(r + 1 == job.rows):
                        m.next = "DONE"
        return m


class CooPointers(wiring.Component):
    """A band's row pointers from a tensor stored as COO sorted by ``(i, j, k)``: MINT's
    cluster counter and prefix sum for COO (Section V), as the pointers CSR would hold.

    :class:`WindowLengths` asks for ``row_ptr[x]`` for ``x = i0 .. i0 + rows`` in order,
    as of a CSR; in COO ``row_ptr[x]`` is the first element whose i id is ``x`` or more
    (the count of elements before it: the prefix sum of the rows' clusters). So the unit
    walks the i ids forward from a position ``pos``, reading each once, and answers a
    pointer at the first element past it: a cluster's length is the steps between two
    answers, counted rather than summed, since the walk itself is the running sum.

    Bands come in order and cover the slices, so a new band starts where the last one
    stopped (the id read there is kept: the band after starts with it). A band is
    converted again on a later pass over an overbooked Tailor (:class:`~sparseforge.hw.
    accel_control.AccelControl`): a band's first window whose ``i0`` is the last band's
    goes back to that band's first element; a run's first band (``i0 = 0``) to 0.

    Parameters
    ----------
    iw, addr_width : bits of an i id and of an element index.

    Members
    -------
    ptr : In(MemoryPortSignature(addr_width, addr_width))
        The pointers, one request at a time, answered from a register.
    ids : Out(MemoryPortSignature(addr_width, iw))
        Reads the i id of element ``n`` at ``n``.
    nnz : In(addr_width)
        The tensor's elements: ``row_ptr`` of every slice past the last is ``nnz``.
    restart, i0 : In
        A band's first window, and its first slice.

    Throughput: two cycles an element (its read, its answer), one an answer; on a memory
    of round trip ``L``, an element every ``L + 1`` cycles, since each read waits for
    the id before it. So a band's first window waits about ``(nnz + 1) (L + 1)`` cycles
    for its pointers before the pre-pass (itself a j id a round trip) starts: on a DRAM
    the two are most of an accelerator's SpMTTKRP cycles. Reading the ids ahead (they
    are consecutive) would lift it, at the price of reads past a band, which a band
    converted again must discard; one read at a time keeps every read the band's. The
    id's comparison with the asked row is on the memory's answer, then a register.
    """

    def __init__(self, iw, addr_width):
        super().__init__({"ptr": In(MemoryPortSignature(addr_width, addr_width)),
                          "ids": Out(MemoryPortSignature(addr_width, iw)),
                          "nnz": In(addr_width), "restart": In(1), "i0": In(addr_width)})

    def elaborate(self, platform):
        m = Module()
        A = len(self.nnz)
        pos, band_i0, band_pos = Signal(A), Signal(A), Signal(A)
        known, reading = Signal(), Signal()              # the id at pos is held; read out
        id_ = Signal.like(self.ids.response.payload, name="id")
        ask, answer, ids = self.ptr.request, self.ptr.response, self.ids
        x = ask.payload
        load, past, end = Signal(), Signal(), Signal()
        m.d.comb += [load.eq(~answer.valid | answer.ready), past.eq(known & (id_ >= x)),
                     end.eq(pos == self.nnz),
                     ask.ready.eq(ask.valid & (past | end & ~known) & load),
                     ids.request.valid.eq(ask.valid & ~known & ~end & ~reading),
                     ids.request.payload.eq(pos), ids.response.ready.eq(reading)]
        with m.If(load):
            m.d.sync += answer.valid.eq(ask.ready)
        with m.If(ask.ready):
            m.d.sync += answer.payload.eq(pos)
        with m.If(ids.request.valid & ids.request.ready):
            m.d.sync += reading.eq(1)
        with m.If(ids.response.valid):                  # an id below the row: step on
            m.d.sync += [reading.eq(0), id_.eq(ids.response.payload),
                         known.eq(ids.response.payload >= x)]
            with m.If(ids.response.payload < x):
                m.d.sync += pos.eq(pos + 1)
        with m.Elif(ask.valid & known & ~past):
            m.d.sync += [pos.eq(pos + 1), known.eq(0)]
        with m.If(self.restart):
            with m.If(self.i0 == band_i0):
                m.d.sync += [pos.eq(band_pos), known.eq(0)]
            with m.Elif(self.i0 == 0):
                m.d.sync += [pos.eq(0), known.eq(0), band_i0.eq(0), band_pos.eq(0)]
            with m.Else():
                m.d.sync += [band_i0.eq(self.i0), band_pos.eq(pos)]
        return m


class CsrTileToCissSignature(wiring.Signature):
    """A tile converter (CSR tile to CISS), seen from it: ``pes`` lanes, ``dw``-bit
    values, ``iw``-bit indices, ``addr_width``-bit element indices, bands of ``band``
    rows at most.

    Per tile:

    - ``job`` (stream in, :func:`job_layout`): the tile ``A[i0 : i0 + rows, k0 : k1]``;
      ``first`` on a band's first window (the band's later windows follow it in ascending
      ``k0`` without ``first``); taken while the converter is idle (between tiles).
    - ``ptr`` (memory port out, :class:`~.stream_units.MemoryPortSignature`): reads the
      row pointer ``row_ptr[i]`` at ``i``, on a band's first window.
    - ``cols`` (memory port out, ``iw`` bits): the pre-pass's reads of column ids, by
      their element's index in the CSR (the ``col`` of its ``{col, value}``,
      :func:`~sparseforge.sw.wire.csr_entry`, where elements are stored so).
    - ``mem`` (``pes`` memory ports out): lane ``p``'s reads of the elements of its rows,
      as :class:`CsrToCissSignature`'s.
    - ``ciss`` (stream out): the tile's CISS entries, as :func:`sparseforge.sw.ciss.encode`
      lays out the tile with its rows numbered from ``i0`` and its columns from ``k0``.
    - ``count`` (stream out, ``addr_width + 1`` bits): the tile's entries, after its last
      one (0 for a tile without nonzeros).

    Every port's addresses are indices into the CSR's arrays; the parent adds their
    bases, so the ports map onto one memory (or the element ports onto one, the pointers
    onto another).

    With ``order`` 3 the tile is a 3-D tensor's ``T[i0 : i0 + rows, k0 : k1, :]`` (its
    mode-1 window; ``k0`` and ``k1`` bound j) stored as COO sorted by ``(i, j, k)``:
    ``ptr`` reads the i ids (``iw`` bits) by element index, ``cols`` the j ids, each
    lane's ``mem`` ``{col, k, value}`` (:func:`~sparseforge.sw.wire.tensor_entry`), and
    ``nnz`` (in) holds the tensor's elements; ``ciss`` carries order-3 entries.
    """

    def __init__(self, pes, dw, iw, addr_width, band, order=2):
        coo = {"nnz": In(addr_width)} if order == 3 else {}
        super().__init__({
            "job": In(stream.Signature(job_layout(iw, addr_width, band))),
            "ptr": Out(MemoryPortSignature(addr_width, iw if order == 3 else addr_width)),
            "cols": Out(MemoryPortSignature(addr_width, iw)),
            "mem": Out(MemoryPortSignature(
                addr_width, wire.width(wire.element_entry(iw, dw, order)))).array(pes),
            "ciss": Out(stream.Signature(ciss_entry_layout(pes, dw, iw, order))),
            "count": Out(stream.Signature(addr_width + 1)), **coo,
        })


@block("csr_tile_to_ciss")
class CsrTileToCiss(wiring.Component):
    """One tile of a CSR matrix at a time to CISS: a band of rows and a window of columns,
    read from A as stored (Tensaurus Sections 4 and 5.1: the tiles of A a run streams to
    the PE rows; MINT Section V: converted in line).

    A tile is ``A[i0 : i0 + rows, k0 : k1]``: an output tile's rows (Section 5.2.5) and a
    block of B's rows the scratchpads hold (Section 5.1). Its entries are those
    :func:`sparseforge.sw.ciss.encode` makes of the tile with its rows numbered from
    ``i0`` and its columns from ``k0`` (as :mod:`sparseforge.sw.tensaurus_job` tiles a
    run), then the count. :class:`WindowLengths` finds each row's part of the window by
    counting over its column ids (the pre-pass: CSR's row pointers give whole rows only)
    and hands the nonempty rows, as they are decided, to the schedule and the lanes of
    :class:`CsrToCiss` (:class:`LeastLoaded`, :class:`LaneFetch` with the window's
    ``k0`` as origin, :class:`Interleave`), so the lanes read each element of the tile
    a second time, to emit it.

    The parent signals a band's first window with the job's ``first`` bit: its row
    pointers are read and the cursors start there. The band's later windows come in
    ascending ``k0``, without ``first``, and start where the window before left each row.
    The host prepares the jobs and refuses what the block cannot take
    (:func:`sparseforge.sw.ciss_csr.tile_jobs`).

    Reads (the host's model, :func:`sparseforge.sw.ciss_csr.prepass_reads`). Per band,
    on its first window, ``rows + 1`` row pointers. Per window and row, the pre-pass reads
    from where the window before stopped the row up to its first element of column
    ``k1`` or past, which it keeps: so over a band's windows each column id is read once
    (an element is read in the first window whose ``k1`` passes the column before it in
    its row), and per window a row adds at most one read to its window's elements (its
    stopping element), none where a window before read it or the row ends. The lanes
    read each nonzero of the tile once more, to emit it. Per band: ``rows + 1``
    pointers, at most ``nnz(band rows)`` column ids, the tiles' nonzeros.

    Cycles (:func:`sparseforge.sw.ciss_csr.tile_cycles`; memory answering on the cycle
    after each request, no back-pressure), counted from the cycle a job is taken (0):

    - the pre-pass starts ``head = 3 + [first] (rows + 2)`` cycles in (a band's pointers:
      ``rows + 1`` reads, the last answer's cycle; the first cursor's read and queue);
    - row ``r`` costs ``2 reads + peeked + ended`` (its reads in the window; 1 where its
      first element to decide was read by a window before; 1 where it ends within the
      window) and is decided on cycle ``x_r = head + (costs of rows 0 .. r) - 1``;
    - a slice's header, at entry ``s`` (the schedule's start), leaves no earlier than
      ``x_r + 5`` (the slice register, the lane's queue, its order queue, its skid, the
      entry register); entries follow one a cycle, a cycle more at each entry where a
      lane's stream has ended (its ``done`` is a register), and none where some lane is
      idle before ``x_last + 3`` (every row decided);
    - the count is taken on the cycle after the last entry, and no earlier than
      ``x_last + 2``.

    So with ``E`` entries, ``K_e`` the entries up to ``e`` where a lane ended and ``e_idle``
    the first where one is idle, a tile takes
    ``T = max(E + 1 + K_(E-1) + max(max over slices (x_r + 5 - s - K_s), x_last + 3 -
    e_idle - K_(e_idle)), x_last + 3)`` cycles (the term of ``e_idle`` where ``e_idle <
    E``), ``x_last + 3`` without slices (``x_last = 0`` for no rows), and the next job is
    taken on the cycle after.
    The pre-pass, one column id every two cycles, bounds the rate: about ``(2 nnz +
    rows) / E`` cycles an entry, ``2 P`` where rows are long against ``P``. A pre-pass of
    several ports (or words of several column ids) would lift it; one port keeps its
    reads once per element and the block small. The lanes keep up with it unless a
    slice's lane is still behind on the rows before.

    Parameters
    ----------
    pes, dw, iw, addr_width, inflight : as :class:`CsrToCiss`; a matrix has fewer than
        ``2**addr_width`` rows and nonzeros.
    band : the rows of a band at most: the depth of the cursor memory. Below
        ``2**iw - 1``, so a row's index in the tile stays below the idle lane's.

    Members
    -------
    job, ptr, cols, mem, ciss, count
        As :class:`CsrTileToCissSignature` says.

    Between registers: as :class:`CsrToCiss`, and the pre-pass's decision (the column,
    from the cursor queue's register or the memory's answer, against ``k0`` and ``k1``,
    into the cursor's increment, the count and the slice register); the cursor memory's
    output reaches only the queue. The handshakes between the units (the pre-pass's reads
    and slices, each lane's reads, the entries) start and end at registers or a
    :class:`~.stream_units.Skid`, so in a larger design (the accelerator, where the reads
    meet in the AXI master's round robin and the entries go to a Tailor's feed) no path
    crosses from one unit through another.

    Clock: above 100 MHz in both report configurations (the synthesis report). At the
    default one the critical path is a lane's slice queue: its room, through
    :class:`LeastLoaded`'s handshake, into the register slice of the pre-pass's output.
    With eight PE rows it is a slice from the pre-pass's output, through the registered
    choice of lane, into that lane's slice queue. Each is about three quarters
    routing.
    """

    PARAMS = (*CsrToCiss.PARAMS,
              Param("band", 64, 1, 4096, "rows of a band at most (cursor memory depth)"),
              Param("order", 2, 2, 3, "2: a CSR matrix; 3: a COO tensor, windows over j"))
    REPORT = ({}, {"pes": 8, "dw": 16, "iw": 16, "addr_width": 24, "band": 512})

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.pes, self.dw, self.iw = v["pes"], v["dw"], v["iw"]
        self.addr_width, self.inflight, self.band = v["addr_width"], v["inflight"], v["band"]
        self.order = v["order"]
        if self.band >= (1 << self.iw) - 1:
            raise ParameterError(f"band={self.band}: a row's index in the tile must stay "
                                 f"below the idle lane's {(1 << self.iw) - 1} (iw="
                                 f"{self.iw}), so band is at most {(1 << self.iw) - 2}")
        super().__init__(CsrTileToCissSignature(self.pes, self.dw, self.iw, self.addr_width,
                                                self.band, self.order))

    def elaborate(self, platform):
        m = Module()
        m.submodules.lengths = lengths = WindowLengths(self.iw, self.dw, self.addr_width,
                                                       self.band)
        wiring.connect(m, lengths.cols, wiring.flipped(self.cols))
        m.d.comb += lengths.job.eq(self.job.payload)
        lanes, start = _schedule_and_fetch(m, self, lengths, self.job, self.order)
        m.d.comb += [lane.origin.eq(lengths.origin) for lane in lanes]
        if self.order == 2:
            wiring.connect(m, lengths.ptr, wiring.flipped(self.ptr))
        else:
            m.submodules.pointers = pointers = CooPointers(self.iw, self.addr_width)
            wiring.connect(m, lengths.ptr, pointers.ptr)
            wiring.connect(m, pointers.ids, wiring.flipped(self.ptr))
            m.d.comb += [pointers.nnz.eq(self.nnz), pointers.i0.eq(self.job.payload.i0),
                         pointers.restart.eq(start & self.job.payload.first)]
        return m
