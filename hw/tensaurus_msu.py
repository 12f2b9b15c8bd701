# amaranth: UnusedElaboratable=no
"""The Tensaurus matrix store unit (Tensaurus Sections 5.1 and 5.2.5, Fig. 5a): it sums the
PEs' drained OSR chunks across input tiles in an output buffer and, once every PE is
done, streams the output rows out, clearing them for the next run.

The buffer is one block RAM of ``depth * tlen * cols`` words of ``vlen`` accumulators;
output row ``i``'s chunk ``g`` is word ``i * tlen * cols + g``. The drains reach it
through a read-modify-write pipeline that takes one a cycle:

- A: a round-robin arbiter, its grant a register, takes one drain a cycle; the drain's
  word address is registered and presented to the RAM's read port;
- B: the RAM gives the word; the address is compared with the two writes the read
  missed (its own cycle's and the next one's);
- C: the word, registered, or the newer sum of a missed write (the bypass), plus the
  drain's lanes, is written back.

So the adder sits between registers, neither behind the RAM's read path nor behind a
comparator.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.utils import ceil_log2

from ..params import Param, check_params
from ..registry import block
from .interfaces import MsuSignature, chunk_bits, pe_drain_layout


def times(value, k):
    """``value * k`` for a constant ``k >= 1`` as shifted adds (a word address needs no
    multiplier, nor a DSP)."""
    terms = [value << b for b in range(k.bit_length()) if k >> b & 1]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def lowest(bits):
    """The lowest set bit of ``bits`` (one-hot), 0 if none."""
    return (bits & (~bits + 1))[:len(bits)]


@block("tensaurus_msu")
class TensaurusMsu(wiring.Component):
    """A Tensaurus MSU: ``rows x cols`` drain streams accumulated in one block RAM of
    ``depth`` output rows, then streamed out row by row.

    Parameters
    ----------
    rows, cols : the PE array's ``r x c``; PE ``(r, q)`` drains into input ``r * cols + q``
        and its chunk ``t`` is the row's chunk ``t * cols + q``.
    tlen : TLEN, chunks a PE holds of an output row (a row has ``tlen * cols``).
    vlen : VLEN, lanes of a chunk.
    iw : bits of a row index.
    acc_width : bits of an accumulator (signed; sums wrap).
    depth : output rows the buffer holds.

    Members
    -------
    drains : In(stream({row, chunk, lanes, last})) x (rows * cols)
        A drain without ``last`` adds its lanes into row ``row``'s chunk ``chunk * cols
        + q``; one with ``last`` ends the input's run. Inputs are held (ready low) from
        their ``last`` until the run's output is out. A drain outside the buffer (``row
        >= depth`` or ``chunk >= tlen``) is taken and dropped.
    out_rows : In(iw + 1)
        Rows to stream out, held while a run goes; at most ``depth`` (rows beyond the
        buffer read undefined words). Rows at or beyond it keep their sums for a later
        run.
    out : Out(stream({row, chunk, lanes, last}))
        As :class:`~sparseforge.hw.interfaces.MsuSignature` says; each chunk is cleared
        as it is read, so the next run starts from zero. The buffer starts at zero from
        configuration: a reset does not clear it.
    closing : Out(1)
        High from an input's ``last`` until the inputs are released: with ``out_rows``
        0 the sums stay for the next tile and the inputs are released at once.

    Latency and throughput: one drain a cycle, whichever inputs offer them, round-robin
    among those that wait (a lone input is granted every cycle; a waiting one before any
    other is granted twice); a drain is written 3 cycles after it is taken. The output
    starts 6 cycles after the last ``last`` (and the drains before it) are taken, then
    one chunk a cycle while ``out`` is taken; ``out`` is registered.
    """

    PARAMS = (Param("rows", 2, 1, 16, "PE array rows (r)"),
              Param("cols", 2, 1, 16, "PE array columns (c)"),
              Param("tlen", 2, 1, 64, "chunks of an output row each PE holds (TLEN)"),
              Param("vlen", 4, 1, 16, "lanes of a chunk (VLEN)"),
              Param("iw", 16, 1, 32, "bits of a row index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("depth", 256, 1, 1 << 20, "output rows the buffer holds"))
    REPORT = ({}, {"rows": 4, "cols": 4, "tlen": 1, "vlen": 2, "depth": 512})
    PAPER = "Table 2 (28 nm): MSU 0.759 mm2, 33.0%"

    def __init__(self, rows=2, cols=2, tlen=2, vlen=4, iw=16, acc_width=32, depth=256):
        v = check_params(self.PARAMS, {"rows": rows, "cols": cols, "tlen": tlen,
                                       "vlen": vlen, "iw": iw, "acc_width": acc_width,
                                       "depth": depth})
        self.rows, self.cols, self.tlen, self.vlen = v["rows"], v["cols"], v["tlen"], v["vlen"]
        self.iw, self.acc_width, self.depth = v["iw"], v["acc_width"], v["depth"]
        self.inputs = self.rows * self.cols
        self.chunks = self.tlen * self.cols                 # chunks of an output row
        self.words = self.depth * self.chunks
        self.abits = max(1, ceil_log2(self.words))
        super().__init__(MsuSignature(self.rows, self.cols, self.iw, self.tlen, self.vlen,
                                      self.acc_width))

    def elaborate(self, platform):
        m = Module()
        lanes = data.ArrayLayout(self.acc_width, self.vlen)   # as bits: sums wrap alike
        m.submodules.store = store = Memory(shape=lanes, depth=self.words, init=[])
        rd, wr = store.read_port(), store.write_port()
        streaming = Signal()            # the output phase: drains held
        issue = Signal()                # an output read (and its clearing write) now
        o_addr = Signal(self.abits)
        moves = Signal()                # the output register loads

        a = self._arbiter(m)
        busy, c_valid, c_addr, c_word, sum_ = self._accumulate(m, a, rd, ~streaming | moves)
        m.d.comb += [
            rd.addr.eq(Mux(streaming, o_addr, a["addr"])),
            rd.en.eq(~streaming | issue),
            wr.addr.eq(Mux(streaming, o_addr, c_addr)),
            wr.data.eq(sum_),           # 0 while streaming: stage C is empty
            wr.en.eq(Mux(streaming, issue, c_valid)),
        ]
        self._stream_out(m, a["done"], busy, c_word, streaming, issue, o_addr, moves)
        m.d.comb += self.closing.eq(a["done"].any() | streaming)
        return m

    def _arbiter(self, m):
        """Stage A: the granted drain, its word address registered (``valid`` only for a
        drain to accumulate; a ``last`` marks its input ``done``)."""
        N, C = self.inputs, self.chunks
        drains = self.drains
        done = Signal(N)
        grant = Signal(N, init=1)       # one-hot: the input that may transfer this cycle
        valid = Cat(d.valid for d in drains)
        for i, d in enumerate(drains):
            m.d.comb += d.ready.eq(grant[i] & ~done[i])     # all done while streaming
            with m.If(d.valid & d.ready & d.payload.last):
                m.d.sync += done[i].eq(1)

        # Next grant: the first waiting input after this one (it still waits next cycle:
        # a stream holds valid until its transfer); this one again if no other waits.
        others = valid & ~done & ~grant
        after = Signal(N)
        m.d.comb += after.eq(~(grant | (grant - 1)))
        pick = Mux((others & after).any(), others & after, others)
        with m.If(others.any()):
            m.d.sync += grant.eq(lowest(pick))

        item = Signal(pe_drain_layout(self.iw, self.tlen, self.vlen, self.acc_width))
        q = Signal(range(max(self.cols, 2)))
        picked, which = 0, 0
        for i, d in enumerate(drains):
            picked = picked | Mux(grant[i], d.payload.as_value(), 0)
            which = which | Mux(grant[i], i % self.cols, 0)
        m.d.comb += [item.eq(picked), q.eq(which)]
        take = (valid & grant & ~done).any()
        inside = (item.row < self.depth) & (item.chunk < self.tlen)

        a = {"valid": Signal(), "addr": Signal(self.abits),
             "lanes": Signal(self.vlen * self.acc_width), "done": done}
        m.d.sync += [
            a["valid"].eq(take & ~item.last & inside),
            a["addr"].eq(times(item.row, C) + times(item.chunk, self.cols) + q),
            a["lanes"].eq(item.lanes.as_value()),
        ]
        return a

    def _accumulate(self, m, a, rd, word_en):
        """Stages B and C: the word read, the bypass from the writes it missed, the sum.
        C's word register loads on ``word_en`` (it is the output register too).

        A read sees the writes made before its cycle, not the one on it. The drain adds at
        C two cycles after its read, so the writes of its read's cycle and the next (the
        two cycles before C) are missed; they are taken from ``w2`` and ``w1``, the newest
        first."""
        V, A = self.vlen, self.acc_width
        width = V * A
        b_valid, b_addr, b_lanes = Signal(), Signal(self.abits), Signal(width)
        c_valid, c_addr, c_lanes, c_word = Signal(), Signal(self.abits), Signal(width), \
            Signal(width)
        w1_valid, w1_addr, w1_data = Signal(), Signal(self.abits), Signal(width)
        w2_data = Signal(width)
        use_w1, use_w2, use_word = Signal(), Signal(), Signal()

        with m.If(word_en):
            m.d.sync += c_word.eq(rd.data.as_value())
        m.d.sync += [b_valid.eq(a["valid"]), b_addr.eq(a["addr"]), b_lanes.eq(a["lanes"])]
        # B: compare with the write being made (C's) and the one before (w1): those are
        # w1 and w2 when this drain is at C. An empty stage C carries zeros.
        hit1 = c_valid & (b_addr == c_addr)
        hit2 = w1_valid & (b_addr == w1_addr)
        m.d.sync += [
            c_valid.eq(b_valid), c_addr.eq(b_addr),
            c_lanes.eq(Mux(b_valid, b_lanes, 0)),
            use_w1.eq(b_valid & hit1),
            use_w2.eq(b_valid & ~hit1 & hit2),
            use_word.eq(b_valid & ~hit1 & ~hit2),
        ]
        # C: the newest value of the word, plus the drain; 0 + 0 when C is empty.
        old, sum_ = Signal(width), Signal(width)
        m.d.comb += old.eq(Mux(use_w1, w1_data, 0) | Mux(use_w2, w2_data, 0) |
                           Mux(use_word, c_word, 0))
        m.d.comb += sum_.eq(Cat((old[v * A:(v + 1) * A] + c_lanes[v * A:(v + 1) * A])[:A]
                                for v in range(V)))
        m.d.sync += [
            w1_valid.eq(c_valid), w1_addr.eq(c_addr), w1_data.eq(sum_),
            w2_data.eq(w1_data),
        ]
        busy = b_valid | c_valid        # (A is empty once the last end is registered)
        return busy, c_valid, c_addr, c_word, sum_

    def _stream_out(self, m, done, busy, word, streaming, issue, o_addr, moves):
        """The output phase: once every input is done and the pipeline is empty, read
        (and clear) the words of rows ``0 .. out_rows - 1`` in order. A word read is in
        the RAM's read register (R), then in ``word`` (stage C's, the output register); R
        holds (the read port disabled) while the output register waits."""
        C, out = self.chunks, self.out
        o_row, o_chunk = Signal(self.iw), Signal(chunk_bits(C))
        reading = Signal()
        meta = data.StructLayout({"row": self.iw, "chunk": chunk_bits(C), "last": 1})
        r_valid, r_meta, o_meta = Signal(), Signal(meta), Signal(meta)
        final = (o_chunk == C - 1) & (o_row == self.out_rows - 1)
        m.d.comb += [
            moves.eq(~out.valid | out.ready),
            issue.eq(streaming & reading & (~r_valid | moves)),
            out.payload.row.eq(o_meta.row), out.payload.chunk.eq(o_meta.chunk),
            out.payload.last.eq(o_meta.last), out.payload.lanes.eq(word),
        ]
        with m.If(~streaming & done.all() & ~busy):
            with m.If(self.out_rows == 0):
                m.d.sync += done.eq(0)
            with m.Else():
                m.d.sync += [streaming.eq(1), reading.eq(1), o_addr.eq(0), o_row.eq(0),
                             o_chunk.eq(0)]
        with m.If(issue):
            m.d.sync += [o_addr.eq(o_addr + 1), r_meta.row.eq(o_row),
                         r_meta.chunk.eq(o_chunk), r_meta.last.eq(final)]
            with m.If(o_chunk == C - 1):
                m.d.sync += [o_chunk.eq(0), o_row.eq(o_row + 1)]
            with m.Else():
                m.d.sync += o_chunk.eq(o_chunk + 1)
            with m.If(final):
                m.d.sync += reading.eq(0)
        with m.If(moves):
            m.d.sync += [out.valid.eq(r_valid), o_meta.eq(r_meta)]
        m.d.sync += r_valid.eq(issue | (r_valid & ~moves))
        with m.If(out.valid & out.ready & out.payload.last):
            m.d.sync += [streaming.eq(0), done.eq(0)]
