# amaranth: UnusedElaboratable=no
"""The Tensaurus matrix load unit (Tensaurus Section 5.2.2, Fig. 5a): reads the dense
operand matrices from a memory that answers out of order, in words of ``cols`` chunks
("in chunks of c·VLEN·dw bits"), and writes each chunk into the scratchpad of the PE
column that computes it.

A matrix row of rank ``R = tlen * cols * vlen`` is ``tlen * cols`` chunks of ``vlen``
values; chunk ``g`` belongs to PE column ``g % cols``, which holds it as its chunk
``g // cols`` (the matrices are tiled along their columns and banked along their rows,
Fig. 6a). In memory a row is ``tlen`` words (:func:`~sparseforge.sw.wire.mlu_words`):
word ``t`` holds chunks ``t * cols .. t * cols + cols - 1``, one for each column, so one
read fills every column at once: **one read loads ``cols`` chunks** (it loaded one).

In TTMc every column needs the whole of B's row (its ``r1`` values are replicated over
the PE's lanes, Section 5.2.4), and SpMV's b likewise: a load with ``broadcast`` writes
each of operand 1's rows, ``b_chunks`` chunks, into every column's scratchpad as chunks
``0 .. b_chunks - 1`` (Section 5.2.3 keeps B in the first column only; here each
column's PEs read their own). Such a row is laid out as any other, ``ceil(b_chunks /
cols)`` words (the last padded with zero chunks), and each word's chunks go to every
column one after another. Every column takes every chunk and a column's fill stream takes
one a cycle, so ``b_chunks`` cycles a row is the floor whatever the layout; packing
``cols`` chunks a word keeps the row's reads and memory ``cols`` times fewer than a chunk
a word would, and the host lays out every matrix the same way.

Reads go through a :class:`~sparseforge.hw.stream_units.Reorder` of ``tags`` words: one
walk of (operand, row, word) issues the reads, a second places the words the buffer
hands back in order.
"""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import (
    TaggedMemoryPortSignature,
    chunk_layout,
    mlu_start_layout,
    spm_fill_layout,
)
from .stream_units import Reorder


def mlu_word_layout(cols, vlen, dw):
    """A word of the MLU's memory: ``cols`` chunks (:func:`~.interfaces.chunk_layout`),
    chunk 0 lowest, as :func:`~sparseforge.sw.wire.mlu_words` packs them."""
    return data.ArrayLayout(chunk_layout(vlen, dw), cols)


class MluSignature(wiring.Signature):
    """A Tensaurus matrix load unit (Section 5.2.2), seen from it.

    - ``start`` (stream in, :func:`~.interfaces.mlu_start_layout`): taken once the previous
      load has been written whole; ``base0`` and ``base1`` are word addresses.
    - ``mem`` (out, :class:`~.interfaces.TaggedMemoryPortSignature`): words of ``cols``
      chunks (:func:`mlu_word_layout`), answered in any order; a row is ``tlen`` words (a
      broadcast row ``ceil(b_chunks / cols)``), row after row; a load's ``n``-th read is
      tagged ``n % tags``.
    - ``fills`` (``cols`` streams out, :func:`~.interfaces.spm_fill_layout`): a row of
      ``tlen * cols`` chunks is split: its chunk ``g`` goes to column ``g % cols``'s
      scratchpad as its chunk ``g // cols``; a broadcast row (operand 1 with
      ``broadcast``) is ``b_chunks`` chunks, each to every column's scratchpad as its
      chunk ``g``; into the start's ``half``.
    """

    def __init__(self, cols, iw, tlen, vlen, dw, addr_width, b_chunks=1, tags=8):
        fill = spm_fill_layout(iw, max(tlen, b_chunks), vlen, dw)
        word = mlu_word_layout(cols, vlen, dw)
        super().__init__({
            "start": In(stream.Signature(mlu_start_layout(iw, addr_width))),
            "mem": Out(TaggedMemoryPortSignature(addr_width, word.size, ceil_log2(tags))),
            "fills": Out(stream.Signature(fill)).array(cols),
        })


class _Walk:
    """A word's place (operand, row, ``t``: its word of the row) in a load, and the step
    to the next; a broadcast row is ``b_words`` words, any other ``tlen``. ``ended``: the
    walk is past operand 1's last word (or the load has none), a register set where the
    walk moves, so what waits for it waits on no compare with the job."""

    def __init__(self, m, name, iw, tlen, b_words):
        self.operand = Signal(name=f"{name}_operand")
        self.row = Signal(iw + 1, name=f"{name}_row")
        self.t = Signal(range(max(tlen, b_words, 2)), name=f"{name}_t")
        self.ended = Signal(name=f"{name}_ended")
        self.m, self.tlen, self.b_words = m, tlen, b_words

    def reset(self, go):
        """From a load's first word (operand 1's when operand 0 has no rows)."""
        return [self.operand.eq(go.rows0 == 0), self.row.eq(0), self.t.eq(0),
                self.ended.eq((go.rows0 == 0) & (go.rows1 == 0))]

    def broadcast(self, job):
        """Whether the walk is in a broadcast row."""
        return self.operand & job.broadcast

    def row_end(self, job):
        """Whether the word is its row's last."""
        return self.t == Mux(self.broadcast(job), self.b_words - 1, self.tlen - 1)

    def step(self, job):
        """Move to the next word: along the row, then the next row, then operand 1."""
        with self.m.If(~self.row_end(job)):
            self.m.d.sync += self.t.eq(self.t + 1)
        with self.m.Elif(~self.operand & (self.row + 1 == job.rows0)):
            self.m.d.sync += [self.t.eq(0), self.row.eq(0), self.operand.eq(1),
                              self.ended.eq(job.rows1 == 0)]
        with self.m.Else():
            self.m.d.sync += [self.t.eq(0), self.row.eq(self.row + 1),
                              self.ended.eq(self.operand & (self.row + 1 == job.rows1))]


@block("tensaurus_mlu")
class TensaurusMlu(wiring.Component):
    """The MLU: dense matrices from an out-of-order memory into the PE columns'
    scratchpads, ``cols`` chunks a read.

    Parameters
    ----------
    cols : PE columns (scratchpads), chunks of a memory word.
    tlen : chunks of a row each PE column holds (words of a row).
    b_chunks : chunks of a broadcast row (B's in TTMc).
    vlen : values of a chunk.
    dw, iw : bits of a value and of a row index.
    tags : reads in flight, the reorder buffer's words (a power of two).
    addr_width : bits of a memory address (one word each).

    Members
    -------
    start : In(stream({base0, rows0, base1, rows1, half, broadcast}))
    mem : Out(TaggedMemoryPortSignature)
    fills : Out(stream(spm fill)) x cols
        As :class:`~sparseforge.hw.tensaurus_mlu.MluSignature` says.

    Latency and throughput: one read a cycle while the reorder buffer has a free slot (at
    full rate for a memory answering ``L`` cycles after a read with ``tags >= L + 2``).
    The head word goes out once it is there: each of its ``cols`` chunks to its column,
    or each chunk of a broadcast word to every column in turn; every column takes its
    fill when it is ready, and the word (or chunk) moves on once every column has, so a
    stalled column holds the others and nothing is lost. With no stalls: one word and
    ``cols`` fills a cycle (one broadcast chunk to every column a cycle). ``start`` is
    taken again once every fill of the load has left.
    """

    PARAMS = (Param("cols", 2, 1, 16, "PE columns (chunks of a memory word)"),
              Param("tlen", 2, 1, 64, "chunks of a row each column holds"),
              Param("b_chunks", 1, 1, 64, "chunks of a row broadcast to every column"),
              Param("vlen", 4, 1, 16, "values of a chunk"),
              Param("dw", 16, 2, 32, "bits of a value"),
              Param("iw", 16, 1, 32, "bits of a row index"),
              Param("tags", 8, 2, 256, "reads in flight (reorder buffer words)", pow2=True),
              Param("addr_width", 24, 1, 40, "bits of a memory address"))
    REPORT = ({}, {"cols": 8, "tlen": 1, "vlen": 4, "dw": 16, "tags": 16})
    PAPER = "Table 2 (28 nm): MLU 0.009 mm2, 0.4%"

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.cols, self.tlen, self.vlen = v["cols"], v["tlen"], v["vlen"]
        self.b_chunks, self.tags = v["b_chunks"], v["tags"]
        self.b_words = -(-self.b_chunks // self.cols)
        self.dw, self.iw, self.addr_width = v["dw"], v["iw"], v["addr_width"]
        self.word = mlu_word_layout(self.cols, self.vlen, self.dw)
        super().__init__(MluSignature(self.cols, self.iw, self.tlen, self.vlen, self.dw,
                                      self.addr_width, self.b_chunks, self.tags))

    def elaborate(self, platform):
        m = Module()
        busy = Signal()
        job = Signal(self.start.payload.shape())
        reads = _Walk(m, "read", self.iw, self.tlen, self.b_words)
        fills = _Walk(m, "fill", self.iw, self.tlen, self.b_words)
        m.submodules.rob = rob = Reorder(self.addr_width, self.word.size, self.tags)
        wiring.connect(m, rob.mem, wiring.flipped(self.mem))
        m.d.comb += rob.restart.eq(~busy)

        start = self.start
        m.d.comb += start.ready.eq(~busy)
        with m.If(start.valid & start.ready):
            m.d.sync += [busy.eq(1), job.eq(start.payload), *reads.reset(start.payload),
                         *fills.reset(start.payload)]
        self._reads(m, busy, job, reads, start, rob.port.request)
        self._fills(m, job, fills, rob.port.response)
        with m.If(busy & fills.ended):
            m.d.sync += busy.eq(0)
        return m

    def _reads(self, m, busy, job, reads, start, request):
        """Each word of the load in order, operand 0's from ``base0``, then operand 1's
        from ``base1``."""
        addr = Signal(self.addr_width)
        go = start.payload
        with m.If(start.valid & start.ready):
            m.d.sync += addr.eq(Mux(go.rows0 == 0, go.base1, go.base0))
        last_of_0 = ~reads.operand & (reads.row + 1 == job.rows0) & reads.row_end(job)
        m.d.comb += [request.valid.eq(busy & ~reads.ended), request.payload.eq(addr)]
        with m.If(request.valid & request.ready):
            reads.step(job)
            m.d.sync += addr.eq(Mux(last_of_0, job.base1, addr + 1))

    def _fills(self, m, job, fills, response):
        """The head word to the columns: chunk ``q`` to column ``q``, or (broadcast) chunk
        ``part`` to every column, each column taking it once (``sent``); the word leaves
        after its last part."""
        word = data.View(self.word, response.payload)
        whole = fills.broadcast(job)
        part = Signal(range(self.cols), name="part")
        shared = Signal(self.word.elem_shape, name="shared")     # a broadcast word's part
        m.d.comb += shared.eq(Array(word)[part])
        sent, taken = Signal(self.cols, name="sent"), Signal(self.cols, name="taken")
        last_part = ~whole | (part == self.cols - 1) | (
            fills.row_end(job) & (part == (self.b_chunks - 1) % self.cols))
        # The chunk the word's part is, ``t`` or ``t * cols + part``, counted in a
        # register: each part sent moves it on, a row's last back to 0.
        chunk = Signal.like(self.fills[0].payload.chunk, name="fill_chunk")
        for q, out in enumerate(self.fills):
            m.d.comb += [out.valid.eq(response.valid & ~sent[q]),
                         out.payload.half.eq(job.half), out.payload.operand.eq(fills.operand),
                         out.payload.row.eq(fills.row), out.payload.chunk.eq(chunk),
                         out.payload.lanes.eq(Mux(whole, shared, word[q])),
                         taken[q].eq(out.valid & out.ready)]
        every = (sent | Cat(out.ready for out in self.fills)).all()
        m.d.comb += response.ready.eq(every & last_part)
        with m.If(response.valid & every):
            m.d.sync += [sent.eq(0), part.eq(Mux(last_part, 0, part + 1)),
                         chunk.eq(Mux(last_part & fills.row_end(job), 0, chunk + 1))]
            with m.If(last_part):
                fills.step(job)
        with m.Elif(response.valid):
            m.d.sync += sent.eq(sent | taken)
