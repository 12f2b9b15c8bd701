"""MINT's converters that expand toward Dense: CSR to COO and COO to Dense (MINT Section V).

CSR to COO gives each CSR nonzero its row: the row pointers go through the
:class:`~sparseforge.hw.convert_csc.RowCounter` of CSR to CSC (Fig. 8c step 8), whose
entries leave one a cycle; one record is held back so the matrix's final one leaves with
``last`` once every pointer is in.

COO to Dense is the inverse of RLC to COO's step 4 (Fig. 8d): a record's row-major
position is ``row * cols + col``. The records come sorted, so :class:`Linearize` keeps
the position where the current row starts and moves it on by ``cols`` a row, rows in
jumps of up to ``lanes`` a cycle (``cols`` shifted: no multiplier); :class:`Fill` then
walks the dense vectors, writing each record's value into its lane and sending a vector
of zeros where no record falls.

ZVC to Dense's :class:`~sparseforge.hw.convert_dense.Expander` does not fit COO to Dense.
It places *packed* values, L to a word across vectors, by the prefix sums of a mask; a
record already carries its lane, so packing values into words only for the expander to
unpack them would add a packer and the expander's ``2L``:1 multiplexer per lane for what
a lane's write enable does. Worse, a value word completes only with the L-th value after
it, which may lie many vectors later: the expander would wait for it while the vectors
before it stand still, and the records that complete it could not be read, a deadlock
unless a buffer as deep as the longest gap sat between.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .convert_csc import RowCounter
from .interfaces import dense_layout, struct
from .stream_units import Skid, any_of

WIDTH = Param("width", 32, 4, 64, "bits of a row, a column, a pointer and a position")
VALUE_WIDTH = Param("value_width", 32, 1, 64, "bits of a value (passed through as it is)")
LANES = Param("lanes", 8, 2, 32, "values per dense vector (L)", pow2=True)


def coo_records(width, value_width):
    """The COO record stream: :func:`~sparseforge.sw.wire.coo_record`, as RLC to COO
    emits it."""
    return stream.Signature(struct(wire.coo_record(width, value_width)))


def matrix_shape(width):
    """A matrix's header into COO to Dense: :func:`~sparseforge.sw.wire.csr_shape` with
    ``rows`` and ``cols`` of ``width`` bits and ``nnz`` of ``width + 1``."""
    return struct(wire.csr_shape(width, width, width + 1))


def position_layout(width, value_width):
    """A record's row-major ``position`` with its ``value``, or (``end``) the matrix's end:
    ``position`` is then its final element's."""
    return data.StructLayout({"position": width, "value": value_width, "end": 1})


class CsrToCooSignature(wiring.Signature):
    """A CSR-to-COO converter, seen from it: rows, columns and pointers of ``width`` bits,
    ``value_width``-bit values. Protocol, per matrix:

    - ``row_ptr`` (stream in, :func:`~sparseforge.sw.wire.pointer`): the ``rows + 1`` row
      pointers, the first 0, ``last`` on the final one (as CSR to BSR takes them).
    - ``entries`` (stream in, :func:`~sparseforge.sw.wire.csr_entry`): the nonzeros
      ``{col, value}`` in CSR order.
    - ``records`` (stream out, :func:`~sparseforge.sw.wire.coo_record`): one ``{row, col,
      value, last}`` per nonzero in CSR (row-major) order, ``last`` on the matrix's final
      one; a matrix with no nonzeros emits nothing.
    """

    def __init__(self, width, value_width):
        super().__init__({
            "row_ptr": In(stream.Signature(struct(wire.pointer(width)))),
            "entries": In(stream.Signature(struct(wire.csr_entry(width, value_width)))),
            "records": Out(coo_records(width, value_width)),
        })


@block("csr_to_coo")
class CsrToCoo(wiring.Component):
    """CSR to COO: row pointers and nonzeros in, one (row, col, value) record a cycle out.

    MINT Section V-B (the row of each nonzero, Fig. 8c step 8).

    Parameters
    ----------
    width : bits of a row, a column index and a pointer (up to ``2**width`` rows and
        columns, fewer than ``2**width`` nonzeros).
    value_width : bits of a value (passed through).

    Members
    -------
    row_ptr, entries : In(stream)
    records : Out(stream({row, col, value, last}))
        As :class:`~sparseforge.hw.convert_expand.CsrToCooSignature` says.

    Structure: a matrix's first pointer (0) is dropped and the rest go to a
    :class:`~sparseforge.hw.convert_csc.RowCounter`, told the matrix has one row more
    than it has taken until the pointer with ``last`` is in; the counter's entries pass
    through a one-record hold, which sends a record when the next comes, and the final
    one with ``last`` once the counter is done, when the counter starts again.

    Latency and throughput: one record a cycle; an empty row costs a cycle, and a matrix
    two more (its first pointer, the restart). A record is out 3 cycles after its entry
    (the counter's register, the hold, the output register), the final one once the
    matrix's last pointer is in.
    """

    PARAMS = (WIDTH, VALUE_WIDTH)
    REPORT = ({"width": 32, "value_width": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.width, self.value_width = v["width"], v["value_width"]
        super().__init__(CsrToCooSignature(self.width, self.value_width))

    def elaborate(self, platform):
        m = Module()
        W = self.width
        m.submodules.rows = rows = RowCounter(1 << W, W, self.entries.payload.shape())
        wiring.connect(m, wiring.flipped(self.entries), rows.csr)

        # The pointers: row_ptr[0] dropped, row_ptr[1 .. rows] to the counter.
        # The counter's ``rows`` is the pointers it has taken, and one more until the pointer
        # with last is in: a register, counting the pointers but that one.
        given = self.row_ptr
        first = Signal(init=1)                  # the next pointer is a matrix's row_ptr[0]
        ended = Signal()                        # the pointer with last is in
        told = Signal(W + 1, init=1)            # the counter's rows
        m.d.comb += [rows.rows.eq(told),
                     rows.row_ptr.valid.eq(given.valid & ~first & ~ended),
                     rows.row_ptr.payload.eq(given.payload.ptr),
                     given.ready.eq(first | (~ended & rows.row_ptr.ready))]
        with m.If(given.valid & given.ready):
            m.d.sync += [first.eq(0), ended.eq(given.payload.last)]
            with m.If(first & given.payload.last):
                m.d.sync += told.eq(0)
            with m.Elif(~first & ~given.payload.last):
                m.d.sync += told.eq(told + 1)

        # The hold: a record leaves when the next comes, or with last when the counter is done.
        got, out = rows.entries, self.records
        held = Signal()
        record = Signal(data.StructLayout({"row": W, "entry": self.entries.payload.shape()}))
        free = ~out.valid | out.ready
        m.d.comb += got.ready.eq(~held | free)
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        send = [out.valid.eq(1), out.payload.row.eq(record.row),
                out.payload.col.eq(record.entry.col), out.payload.value.eq(record.entry.value)]
        with m.If(got.valid & got.ready):
            m.d.sync += [held.eq(1), record.eq(got.payload)]
            with m.If(held):
                m.d.sync += [*send, out.payload.last.eq(0)]
        with m.Elif(rows.done & (~held | free)):
            m.d.comb += rows.restart.eq(1)
            m.d.sync += [held.eq(0), first.eq(1), ended.eq(0), told.eq(1)]
            with m.If(held):
                m.d.sync += [*send, out.payload.last.eq(1)]
        return m


class Linearize(wiring.Component):
    """Each record's row-major position, ``row * cols + col``, from sorted records
    (the inverse of Fig. 8d step 4).

    ``base`` is the position where row ``row`` starts, and a register holds the next row's
    start, ``base + cols``. A record of the current row or the next leaves at its row's
    start plus ``col`` on the cycle it is taken. One of a later row waits while the rows
    between are passed, each cycle ``2**j`` of them (``lanes`` where ``lanes`` or more
    remain, else the highest power of two among those left): ``base`` grows by ``cols <<
    j``, so ``log2 lanes + 1`` shifts of ``cols`` and an adder do the multiply. After a
    matrix's records the same walk goes to row ``rows``, whose start less one is the
    matrix's final position, sent with ``end``.

    Parameters
    ----------
    lanes : the longest jump, in rows (a power of two).
    width : P, bits of a row, a column and a position (positions modulo ``2**P``).
    value_width : bits of a value.

    Members
    -------
    shape : In(stream(:func:`matrix_shape`))
        ``rows`` and ``cols`` (both at least 1, ``rows * cols`` at most ``2**P``) and
        ``nnz``: 0 when no record comes, else the records end at the one with ``last``.
    records : In(stream({row, col, value, last}))
        Sorted row-major, no position twice.
    positions : Out(stream(:func:`position_layout`))
        One per record, then the matrix's end, from a register.

    Throughput: a record a cycle within a row and into the next; a record ``g > 1`` rows
    after the one before takes ``g // lanes`` cycles and one per bit set in ``g %
    lanes``, and three (its take, the test of its jump count, its send); the end as a
    record of row ``rows``; a matrix a cycle more for its shape.
    """

    def __init__(self, lanes, width, value_width):
        self.lanes, self.width = lanes, width
        super().__init__({
            "shape": In(stream.Signature(matrix_shape(width))),
            "records": In(coo_records(width, value_width)),
            "positions": Out(stream.Signature(position_layout(width, value_width))),
        })

    def elaborate(self, platform):
        m = Module()
        P, k = self.width, exact_log2(self.lanes)
        loaded, more = Signal(), Signal()       # a shape is held; records still to come
        rows, cols = Signal(P), Signal(P)
        row, base = Signal(P), Signal(P)        # the row reached and its start
        row_next, base_next = Signal(P), Signal(P)      # the row after it and its start
        waiting = Signal()                      # an item waits while rows are passed:
        jumps, rest = Signal(P - k), Signal(k)  # the rows to pass, lanes at a time and then
        sized, no_jumps = Signal(), Signal()    # ``jumps == 0`` is known, and true
        col = Signal(P)                         # its column (its value and end wait in out)
        out, given = self.positions, self.records
        vw = len(given.payload.value)
        free = ~out.valid | out.ready
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)

        # The item placed next: a record, or once they are through the end, row ``rows``'s
        # start less one.
        item = data.StructLayout({"row": P, "col": P, "value": vw, "end": 1})
        head = Signal(item)
        m.d.comb += [self.shape.ready.eq(~loaded),
                     given.ready.eq(loaded & more & ~waiting & free),
                     head.eq(Mux(more, Cat(given.payload.row, given.payload.col,
                                           given.payload.value, 0),
                                 Cat(rows, Const(-1, P), Const(0, vw), 1)))]
        take = loaded & ~waiting & free & (given.valid | ~more)
        gap = Signal(P)                         # rows from the one reached to the item's
        m.d.comb += gap.eq(head.row - row)
        m.d.sync += base_next.eq(base + cols)
        # Where the head goes, worked out for a record and for the end at once and then
        # picked by ``more`` (a register): the pick ends these paths rather than starting them.
        here, following = Signal(), Signal()    # the head's row is the row reached, the next
        m.d.comb += [here.eq(Mux(more, given.payload.row == row, rows == row)),
                     following.eq(Mux(more, given.payload.row == row_next, rows == row_next))]
        with m.If(self.shape.valid & self.shape.ready):
            m.d.sync += [loaded.eq(1), more.eq(self.shape.payload.nnz != 0),
                         rows.eq(self.shape.payload.rows), cols.eq(self.shape.payload.cols),
                         row.eq(0), base.eq(0), row_next.eq(1),
                         base_next.eq(self.shape.payload.cols)]
        with m.If(given.valid & given.ready):
            m.d.sync += more.eq(~given.payload.last)
        # A take loads every register that does not depend on where the head goes (a
        # record of the row reached or the next leaves at once, one further waits), so
        # the compares enable only the output's valid, the row start and the wait.
        at_base, at_next = Signal(P), Signal(P)
        m.d.comb += [at_base.eq(base + head.col), at_next.eq(base_next + head.col)]
        with m.If(take):
            m.d.sync += [out.payload.position.eq(Mux(here, at_base, at_next)),
                         out.payload.value.eq(head.value), out.payload.end.eq(head.end),
                         row.eq(head.row), row_next.eq(head.row + 1),
                         jumps.eq(gap[k:]), rest.eq(gap[:k]), sized.eq(0), col.eq(head.col)]
            with m.If(here | following):
                m.d.sync += out.valid.eq(1)
                with m.If(head.end):
                    m.d.sync += loaded.eq(0)
            with m.Else():
                m.d.sync += waiting.eq(1)
            with m.If(following):
                m.d.sync += [base.eq(base_next), base_next.eq(base_next + cols)]
        # The walk: first jumps of lanes rows, each a shift of cols; then the rest, a row
        # count below lanes, its highest bit a cycle. The first cycle learns whether any
        # jump is due, so no cycle's loop tests all of jumps.
        above = [rest[j + 1:].any() for j in range(k)]          # a higher bit set in rest
        with m.If(waiting & ~sized):
            m.d.sync += [sized.eq(1), no_jumps.eq(jumps == 0)]
        with m.Elif(waiting & ~no_jumps):
            m.d.sync += [jumps.eq(jumps - 1), no_jumps.eq(jumps == 1),
                         base.eq(base + (cols << k))]
        with m.Elif(waiting & (rest != 0)):
            m.d.sync += [rest.eq(Cat(rest[j] & above[j] for j in range(k))),
                         base.eq(base + any_of(Mux(rest[j] & ~above[j], cols << j, 0)
                                               for j in range(k)))]
        with m.Elif(waiting & free):
            m.d.sync += [out.valid.eq(1), out.payload.position.eq(base + col), waiting.eq(0)]
            with m.If(out.payload.end):
                m.d.sync += loaded.eq(0)
        return m


class Fill(wiring.Component):
    """The dense vectors of a matrix from its positions: each record's value written into
    its lane, zeros elsewhere (COO to Dense).

    Vector ``v`` holds positions ``v * L`` to ``v * L + L - 1``. A record of the vector
    being gathered is written into its lane; one past it sends the vector (and may be
    written into the next, cleared, on the same cycle); the end sends vectors until the
    one holding the matrix's final position, with ``last``.

    Parameters
    ----------
    lanes : L, values per vector (a power of two).
    width, value_width : bits of a position and of a value.

    Members
    -------
    positions : In(stream(:func:`position_layout`))
    dense : Out(stream(:func:`~sparseforge.hw.interfaces.dense_layout`, flat))
        ``ceil(rows * cols / L)`` vectors a matrix, ``last`` on its final one, lanes past
        its final position 0.

    Latency and throughput: one vector a cycle while ``dense`` is taken, and a record a
    cycle within a vector: the first record of a vector is written as the vector before
    leaves. A vector is out on the cycle after its last record's successor arrives.
    """

    def __init__(self, lanes, width, value_width):
        self.lanes, self.width = lanes, width
        super().__init__({
            "positions": In(stream.Signature(position_layout(width, value_width))),
            "dense": Out(stream.Signature(dense_layout(lanes, value_width, rows=False))),
        })

    def elaborate(self, platform):
        m = Module()
        L, k = self.lanes, exact_log2(self.lanes)
        given, out = self.positions, self.dense
        vector, after = Signal(self.width - k), Signal(self.width - k, init=1)
        gather = Signal.like(out.payload.lanes)
        item = given.payload
        lane, at = item.position[:k], item.position[k:]
        here, next_ = at == vector, at == after
        free = ~out.valid | out.ready
        write = given.valid & ~item.end & here                  # into the vector gathered
        leave = given.valid & ~write & free                     # the vector goes out
        final = leave & item.end & here
        m.d.comb += given.ready.eq(write | (leave & (next_ & ~item.end | final)))
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        with m.If(write):
            m.d.sync += gather[lane].eq(item.value)
        with m.If(leave):
            m.d.sync += [out.valid.eq(1), out.payload.lanes.eq(gather),
                         out.payload.last.eq(final),
                         vector.eq(Mux(final, 0, after)), after.eq(Mux(final, 1, after + 1))]
            m.d.sync += [gather[i].eq(Mux(~item.end & next_ & (lane == i), item.value, 0))
                         for i in range(L)]
        return m


class CooToDenseSignature(wiring.Signature):
    """A COO-to-Dense converter, seen from it: ``lanes`` values a vector, rows, columns and
    positions of ``width`` bits, ``value_width``-bit values. Protocol, per matrix:

    - ``shape`` (stream in, :func:`matrix_shape`): ``rows`` and ``cols`` (at least 1 each,
      ``rows * cols`` at most ``2**width``) and ``nnz`` (0: no record comes).
    - ``records`` (stream in, :func:`~sparseforge.sw.wire.coo_record`): its nonzeros sorted
      row-major, no position twice, ``last`` on the final one (RLC to COO's and CSR to
      COO's ``records``).
    - ``dense`` (stream out, :func:`~sparseforge.hw.interfaces.dense_layout`, flat): its
      ``rows * cols`` elements row-major, ``lanes`` a vector, ``last`` on the final one,
      lanes past the matrix's end 0.
    """

    def __init__(self, lanes, width, value_width):
        super().__init__({
            "shape": In(stream.Signature(matrix_shape(width))),
            "records": In(coo_records(width, value_width)),
            "dense": Out(stream.Signature(dense_layout(lanes, value_width, rows=False))),
        })


@block("coo_to_dense")
class CooToDense(wiring.Component):
    """COO to Dense: sorted (row, col, value) records in, L elements a cycle out, zeros
    filled between the nonzeros.

    The inverse of MINT's RLC to COO step 4 (Section V-B2, Fig. 8d), as the module
    docstring says: :class:`Linearize` gives each record its row-major position,
    :class:`Fill` writes it into its dense vector. A
    :class:`~sparseforge.hw.stream_units.Skid` on ``records`` gives their ``ready`` from a
    register (a producer's pipeline stalls on it: RLC to COO's would otherwise join
    Linearize's take), and one between the units keeps the dense stream's ``ready`` out
    of Linearize's adder.

    Parameters
    ----------
    lanes : L, values per dense vector (a power of two).
    width : P, bits of a row, a column and a position: up to ``2**P`` elements, fewer
        than ``2**P`` rows and columns.
    value_width : bits of a value (passed through; the fill is 0).

    Members
    -------
    shape, records : In(stream)
    dense : Out(stream({lanes[L], last}))
        As :class:`~sparseforge.hw.convert_expand.CooToDenseSignature` says.

    Latency and throughput: one vector a cycle while ``dense`` is taken, however sparse,
    and a record a cycle within a vector (the first written as the vector before leaves),
    so a matrix of ``v`` vectors and ``z`` records takes about ``max(v, z)`` to ``v + z``
    cycles, plus what :class:`Linearize` spends passing rows: ``g // L`` cycles and up
    to ``log2 L + 3`` more for a gap of ``g > 1`` rows: ahead of the vectors where rows
    hold L elements or more and gaps are long, behind them by a few cycles a record where
    short gaps fall between lone records. Latency: a record is taken by
    :class:`Linearize` a cycle after it arrives, its position is out on the next cycle
    and through the second slice on the one after; its vector leaves when the next
    vector's first item arrives. Between registers: an adder (the position, or the row
    start moving on) in :class:`Linearize`; equality comparators and a lane's write
    enable in :class:`Fill`.

    Clock: above 100 MHz on the ECP5 at the report configuration (the synthesis report).
    The critical path is :class:`Linearize`'s row start: the output's valid, through
    whether an item is taken, choosing the start's next value (the next row's, or the
    walk's sum) into its register, three fifths routing. A take loads every other
    register whatever its row compares say, so they enable only the output's valid, the
    row start and the wait.
    """

    PARAMS = (LANES, WIDTH, VALUE_WIDTH)
    REPORT = ({"lanes": 8, "width": 32, "value_width": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.value_width = v["lanes"], v["width"], v["value_width"]
        super().__init__(CooToDenseSignature(self.lanes, self.width, self.value_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.linearize = linearize = Linearize(self.lanes, self.width, self.value_width)
        m.submodules.fill = fill = Fill(self.lanes, self.width, self.value_width)
        wiring.connect(m, wiring.flipped(self.shape), linearize.shape)
        # Register slices on the records (their ready leaves from a register, not from
        # Linearize's take: a producer's pipeline stalls on it) and between the units (the
        # dense stream's ready stops at Fill).
        m.submodules.taken = taken = Skid(self.records.payload.shape())
        wiring.connect(m, wiring.flipped(self.records), taken.i)
        wiring.connect(m, taken.o, linearize.records)
        m.submodules.slice = between = Skid(position_layout(self.width, self.value_width))
        wiring.connect(m, linearize.positions, between.i)
        wiring.connect(m, between.o, fill.positions)
        wiring.connect(m, fill.dense, wiring.flipped(self.dense))
        return m
