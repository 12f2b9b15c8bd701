# amaranth: UnusedElaboratable=no
"""The Tensaurus matrix load unit (Tensaurus Section 5.2.2, Fig. 5a): reads the dense
operand matrices chunk by chunk and writes each chunk into the scratchpad of the PE
column that computes it.

A matrix row of rank ``R = tlen * cols * vlen`` is ``tlen * cols`` chunks of ``vlen``
values; chunk ``g`` belongs to PE column ``g % cols``, which holds it as its chunk
``g // cols`` (the matrices are tiled along their columns and banked along their rows,
Fig. 6a). In TTMc every column needs the whole of B's row (its ``r1`` values are
replicated over the PE's lanes, Section 5.2.4): a load with ``broadcast`` writes each of
operand 1's rows, ``b_chunks`` chunks, into every column's scratchpad as chunks ``0 ..
b_chunks - 1`` (Section 5.2.3 keeps B in the first column only; here each column's PEs
read their own). Reads go out in order and their answers come back in order, so one walk
of (operand, row, chunk) issues the reads and a second, a response behind, places them.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import MemoryPortSignature, chunk_layout, mlu_start_layout, spm_fill_layout


class MluSignature(wiring.Signature):
    """A Tensaurus matrix load unit (Section 5.2.2), seen from it.

    - ``start`` (stream in, :func:`~.interfaces.mlu_start_layout`): taken once the previous load has
      been written whole.
    - ``mem`` (out, :class:`~.interfaces.MemoryPortSignature`): chunk words
      (:func:`~.interfaces.chunk_layout`); a matrix row is ``chunks`` words in order, row
      after row.
    - ``fills`` (``cols`` streams out, :func:`~.interfaces.spm_fill_layout`): a row of
      ``tlen * cols`` chunks is split: its chunk ``g`` goes to column ``g % cols``'s
      scratchpad as its chunk ``g // cols``; a broadcast row (operand 1 with
      ``broadcast``) is ``b_chunks`` chunks, each to every column's scratchpad as its
      chunk ``g``; into the start's ``half``.
    """

    def __init__(self, cols, iw, tlen, vlen, dw, addr_width, b_chunks=1):
        fill = spm_fill_layout(iw, max(tlen, b_chunks), vlen, dw)
        super().__init__({
            "start": In(stream.Signature(mlu_start_layout(iw, addr_width))),
            "mem": Out(MemoryPortSignature(addr_width, chunk_layout(vlen, dw).size)),
            "fills": Out(stream.Signature(fill)).array(cols),
        })


class _Walk:
    """A position (operand, row, column, chunk) in a load, and its step to the next."""

    def __init__(self, m, name, iw, cols, tlen, b_chunks):
        self.operand = Signal(name=f"{name}_operand")
        self.row = Signal(iw + 1, name=f"{name}_row")
        self.q = Signal(range(max(cols, 2)), name=f"{name}_q")
        self.t = Signal(range(max(tlen, b_chunks, 2)), name=f"{name}_t")
        self.m, self.cols, self.tlen, self.b_chunks = m, cols, tlen, b_chunks

    def reset(self):
        return [self.operand.eq(0), self.row.eq(0), self.q.eq(0), self.t.eq(0)]

    def broadcast(self, job):
        """Whether the walk is in a broadcast row (all columns at once, ``q`` held 0)."""
        return self.operand & job.broadcast

    def step(self, job):
        """Move to the next chunk: along the row, then the next row, then operand 1."""
        whole = self.broadcast(job)
        with self.m.If(~whole & (self.q != self.cols - 1)):
            self.m.d.sync += self.q.eq(self.q + 1)
        with self.m.Elif(self.t != Mux(whole, self.b_chunks - 1, self.tlen - 1)):
            self.m.d.sync += [self.q.eq(0), self.t.eq(self.t + 1)]
        with self.m.Elif(~self.operand & (self.row + 1 == job.rows0)):
            self.m.d.sync += [self.q.eq(0), self.t.eq(0), self.row.eq(0), self.operand.eq(1)]
        with self.m.Else():
            self.m.d.sync += [self.q.eq(0), self.t.eq(0), self.row.eq(self.row + 1)]

    def at_end(self, rows1):
        """Whether the walk is past the last chunk of operand 1 (or it has none)."""
        return self.operand & (self.row == rows1)


@block("tensaurus_mlu")
class TensaurusMlu(wiring.Component):
    """The MLU: dense matrices from memory into the PE columns' scratchpads.

    Parameters
    ----------
    cols : PE columns (scratchpads).
    tlen : chunks of a row each PE column holds.
    b_chunks : chunks of a broadcast row (B's in TTMc).
    vlen : values of a chunk.
    dw, iw : bits of a value and of a row index.
    addr_width : bits of a memory address (one chunk word each).

    Members
    -------
    start : In(stream({base0, rows0, base1, rows1, broadcast}))
    mem : Out(MemoryPortSignature)
    fills : Out(stream(spm fill)) x cols
        As :class:`~sparseforge.hw.tensaurus_mlu.MluSignature` says.

    Latency and throughput: one read a cycle; one fill a cycle while the column it goes
    to takes it (a broadcast one once every column has; each column takes it once).
    ``start`` is taken again once every fill of the load has left.
    """

    PARAMS = (Param("cols", 2, 1, 16, "PE columns"),
              Param("tlen", 2, 1, 64, "chunks of a row each column holds"),
              Param("b_chunks", 1, 1, 64, "chunks of a row broadcast to every column"),
              Param("vlen", 4, 1, 16, "values of a chunk"),
              Param("dw", 16, 2, 32, "bits of a value"),
              Param("iw", 16, 1, 32, "bits of a row index"),
              Param("addr_width", 24, 1, 40, "bits of a memory address"))
    REPORT = ({},)
    PAPER = "Table 2 (28 nm): MLU 0.009 mm2, 0.4%"

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.cols, self.tlen, self.vlen = v["cols"], v["tlen"], v["vlen"]
        self.b_chunks = v["b_chunks"]
        self.dw, self.iw, self.addr_width = v["dw"], v["iw"], v["addr_width"]
        super().__init__(MluSignature(self.cols, self.iw, self.tlen, self.vlen, self.dw,
                                      self.addr_width, self.b_chunks))

    def elaborate(self, platform):
        m = Module()
        busy = Signal()
        job = Signal(self.start.payload.shape())
        rows0, rows1 = job.rows0, job.rows1
        reads = _Walk(m, "read", self.iw, self.cols, self.tlen, self.b_chunks)
        fills = _Walk(m, "fill", self.iw, self.cols, self.tlen, self.b_chunks)
        addr = Signal(self.addr_width)

        start = self.start
        m.d.comb += start.ready.eq(~busy)
        with m.If(start.valid & start.ready):
            go = start.payload
            m.d.sync += [busy.eq(1), job.eq(go), *reads.reset(), *fills.reset(),
                         addr.eq(Mux(go.rows0 == 0, go.base1, go.base0))]
            # An operand with no rows is skipped from the start.
            with m.If(go.rows0 == 0):
                m.d.sync += [reads.operand.eq(1), fills.operand.eq(1)]

        request = self.mem.request
        last_of_0 = ~reads.operand & (reads.row + 1 == rows0) & (
            reads.q == self.cols - 1) & (reads.t == self.tlen - 1)
        m.d.comb += [request.valid.eq(busy & ~reads.at_end(rows1)),
                     request.payload.eq(addr)]
        with m.If(request.valid & request.ready):
            reads.step(job)
            m.d.sync += addr.eq(Mux(last_of_0, job.base1, addr + 1))

        # A chunk goes to its column, or (broadcast) to each column that has not taken it.
        response = self.mem.response
        whole = fills.broadcast(job)
        sent = Signal(self.cols)
        taken = Signal(self.cols)
        ready = 0
        for q, out in enumerate(self.fills):
            here = Mux(whole, ~sent[q], fills.q == q)
            m.d.comb += [out.valid.eq(response.valid & here),
                         out.payload.half.eq(job.half), out.payload.operand.eq(fills.operand),
                         out.payload.row.eq(fills.row), out.payload.chunk.eq(fills.t),
                         out.payload.lanes.eq(response.payload),
                         taken[q].eq(out.valid & out.ready)]
            ready |= (fills.q == q) & out.ready
        every = (sent | Cat(out.ready for out in self.fills)).all()
        m.d.comb += response.ready.eq(Mux(whole, every, ready))
        with m.If(response.valid & response.ready):
            fills.step(job)
            m.d.sync += sent.eq(0)
        with m.Elif(whole):
            m.d.sync += sent.eq(sent | taken)
        with m.If(busy & fills.at_end(rows1)):
            m.d.sync += busy.eq(0)
        return m
