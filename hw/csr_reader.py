"""The CSR row reader: a sparse matrix's rows served by id from its CSR in memory.

A block that reads rows by id (:class:`~.interfaces.RowReadSignature`: the Gustavson
engine's B port, and A's stream into it) needs no addresses: the reader turns a row into
reads of the matrix as the user stores it, ``row_ptr[row]`` and ``row_ptr[row + 1]``,
then ``{col, value}`` of the elements between, and answers the elements with each row's
``last`` (an empty row: one ``empty`` element). It is one server of that port among
others: HYTE's tensor accessor, holding B's tile on chip, serves the same port.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .interfaces import RowReadSignature, struct
from .stream_units import MemoryPortSignature, Queue

RANGES = 4
"""Rows whose pointers are read and whose elements are not all requested yet, at most."""


@block("csr_reader")
class CsrRowReader(wiring.Component):
    """Rows of a CSR in memory, served by id.

    Three steps, each joined to the next by a queue, so every memory port reads a word a
    cycle while its answers keep coming:

    - **pointers**: each row requested is two reads of ``ptr``, ``row`` then ``row + 1``
      (a row's end is re-read as the next row's start: B's rows come in any order, and
      a cache of the last end would save A's stream one read a row at the price of a
      comparator on the path);
    - **elements**: each answered pair ``[lo, hi)`` becomes reads ``lo .. hi - 1`` of
      ``elements`` (``{col, value}``, as a :class:`~.stream_units.Zip` of the column
      ids and the values gives them), each read's ``last`` and ``empty`` queued beside it
      (an empty row, ``hi <= lo``, queues one ``empty`` item, ``col`` and ``value`` 0,
      and reads nothing);
    - **answers**: the head of that queue joined with the element it waits for.

    Parameters
    ----------
    index_width, value_width : bits of a row or column id and of a value.
    addr_width : bits of a word address and of a row pointer (more than index_width).
    inflight : element reads requested ahead of their answers.

    Members
    -------
    rows : In(RowReadSignature(index_width, value_width))
    ptr : Out(MemoryPortSignature(addr_width, addr_width)), the row pointers.
    elements : Out(MemoryPortSignature(addr_width, {col, value})), the elements.

    Throughput: one element a cycle while the memory answers within ``inflight`` reads;
    a row takes two pointer reads, so rows of fewer than two elements are paced by
    ``ptr``. The answer is combinational from the element port's response (a reorder
    buffer's register on the accelerator's master).
    """

    PARAMS = (Param("index_width", 16, 4, 32, "bits of a row or column id"),
              Param("value_width", 16, 2, 32, "bits of a value (two's complement)"),
              Param("addr_width", 24, 5, 48, "bits of a word address and of a row pointer"),
              Param("inflight", 16, 2, 256, "element reads ahead of their answers"))
    REPORT = ({},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.index_width, self.value_width = v["index_width"], v["value_width"]
        self.addr_width, self.inflight = v["addr_width"], v["inflight"]
        if self.addr_width <= self.index_width:
            raise ParameterError(f"parameter addr_width={self.addr_width}: expected more "
                                 f"than index_width={self.index_width} (row + 1 is read)")
        self.element = struct(wire.csr_entry(self.index_width, self.value_width))
        A = self.addr_width
        super().__init__({
            "rows": In(RowReadSignature(self.index_width, self.value_width)),
            "ptr": Out(MemoryPortSignature(A, A)),
            "elements": Out(MemoryPortSignature(A, self.element)),
        })

    def elaborate(self, platform):
        m = Module()
        A = self.addr_width
        request, answer, ptr = self.rows.request, self.rows.response, self.ptr

        # -- pointers: row, then row + 1 -------------------------------------------------
        second = Signal()
        m.d.comb += [ptr.request.valid.eq(request.valid),
                     ptr.request.payload.eq(request.payload.row + second),
                     request.ready.eq(ptr.request.ready & second)]
        with m.If(ptr.request.valid & ptr.request.ready):
            m.d.sync += second.eq(~second)

        span = data.StructLayout({"lo": A, "hi": A})
        m.submodules.ranges = ranges = Queue(span, depth=RANGES, latency=1)
        lo, have = Signal(A), Signal()
        m.d.comb += [ranges.i.payload.lo.eq(lo), ranges.i.payload.hi.eq(ptr.response.payload),
                     ranges.i.valid.eq(ptr.response.valid & have),
                     ptr.response.ready.eq(~have | ranges.i.ready)]
        with m.If(ptr.response.valid & ptr.response.ready):
            m.d.sync += have.eq(~have)
            with m.If(~have):
                m.d.sync += lo.eq(ptr.response.payload)

        # -- elements: lo .. hi - 1, each read's flags queued beside it -----------------
        flags = data.StructLayout({"last": 1, "empty": 1})
        m.submodules.side = side = Queue(flags, depth=self.inflight, latency=1)
        head, reads = ranges.o.payload, self.elements.request
        at, started = Signal(A), Signal()
        here = Mux(started, at, head.lo)
        empty = head.hi <= head.lo
        # ``here + 1 == hi`` as an equality with ``hi - 1``, its subtraction beside the
        # choice of ``here`` rather than after it (they differ only where hi is 0: empty).
        end = Signal(A)
        m.d.comb += end.eq(head.hi - 1)
        final = empty | (here == end)
        m.d.comb += [reads.payload.eq(here),
                     reads.valid.eq(ranges.o.valid & ~empty & side.i.ready),
                     side.i.valid.eq(ranges.o.valid & (empty | reads.ready)),
                     side.i.payload.last.eq(final), side.i.payload.empty.eq(empty),
                     ranges.o.ready.eq(side.i.ready & (empty | reads.ready) & final)]
        with m.If(side.i.valid & side.i.ready):
            m.d.sync += [at.eq(here + 1), started.eq(~final)]

        # -- answers: the flags joined with their element ---------------------------------
        flag, got = side.o.payload, self.elements.response
        ready = side.o.valid & (flag.empty | got.valid)
        m.d.comb += [answer.valid.eq(ready),
                     answer.payload.col.eq(Mux(flag.empty, 0, got.payload.col)),
                     answer.payload.value.eq(Mux(flag.empty, 0, got.payload.value)),
                     answer.payload.last.eq(flag.last), answer.payload.empty.eq(flag.empty),
                     side.o.ready.eq(ready & answer.ready),
                     got.ready.eq(side.o.valid & ~flag.empty & answer.ready)]
        return m
