# amaranth: UnusedElaboratable=no
"""The Tensaurus matrix store unit (Tensaurus Sections 5.1 and 5.2.5, Fig. 5a): it sums the
PEs' drained OSR chunks across input tiles in an output buffer and, once every PE is
done, streams the output rows out, clearing them for the next run.

The buffer is ``banks`` block RAMs (:class:`Bank`) of words of ``vlen`` accumulators:
output row ``i``'s chunk ``g = t * cols + q`` (PE column ``q``'s chunk ``t``) is in bank
``q mod banks``, at its word ``(i * tlen + t) * line + q // banks`` (``line = ceil(cols /
banks)``, a bank's words of one ``(i, t)``). With one bank that is word ``i * tlen * cols
+ g``.

The bank is the PE column because of which drains coincide. The PEs of one PE row work
on the same output row in step (the TLU hands them the same slice, passed along the row
systolically), so they drain together, each its own column's chunks: in different banks,
they are taken on the same cycle. Different PE rows drain different output rows at
unrelated times; they share each bank's arbiter. And a PE always drains into the same
bank, so a bank's arbiter sees only its own inputs and an input's ``ready`` stays a
register's (a bank chosen by the drain's chunk would put a compare behind it). Hence at
most ``cols`` banks: another would hold no column.

Each bank takes its columns' drains through a read-modify-write pipeline that takes one a
cycle:

- A (:class:`Gather`): a round-robin arbiter, its grant a register, takes one drain a
  cycle; the drain's word address is registered and presented to the RAM's read port;
- B (:class:`Accumulate`): the RAM gives the word; the address is compared with the two
  writes the read missed (its own cycle's and the next one's);
- C (:class:`Accumulate`): the word, registered, or the newer sum of a missed write (the
  bypass), plus the drain's lanes, is written back.

So the adder sits between registers, neither behind the RAM's read path nor behind a
comparator. Once every input is done, :class:`Unload` reads the rows out through the
same RAM ports, each chunk from its bank, clearing each word as it goes.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import chunk_bits, msu_out_layout, pe_drain_layout
from .stream_units import RoundRobin, any_of


def times(value, k):
    """``value * k`` for a constant ``k >= 1`` as shifted adds (a word address needs no
    multiplier, nor a DSP)."""
    terms = [value << b for b in range(k.bit_length()) if k >> b & 1]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def add_layout(abits, width):
    """A drain on its way to the buffer: the word ``addr`` to add its ``lanes`` (as bits)
    into."""
    return data.StructLayout({"addr": abits, "lanes": width})


def write_layout(abits, width):
    """A write of the buffer: the word ``addr`` and its new ``data``."""
    return data.StructLayout({"addr": abits, "data": width})


class Gather(wiring.Component):
    """Stage A: takes one drain a cycle from a bank's inputs, round-robin, and registers the
    word of the bank it adds into.

    The grant comes from a :class:`~sparseforge.hw.stream_units.RoundRobin` whose grant is
    a register, so each input's ``ready`` is a register's and not behind the arbitration.

    Parameters
    ----------
    rows, cols : the bank's inputs, ``rows x cols``: input ``k`` is the bank's column ``j
        = k % cols``, its chunk ``t`` of row ``i`` the bank's word ``(i * tlen + t) * line
        + j``.
    line : the bank's words of one ``(i, t)``, at least ``cols``.
    tlen, vlen, iw, acc_width, depth : as :class:`TensaurusMsu`'s.

    Members
    -------
    drains : In(stream({row, chunk, lanes, last})) x (rows * cols)
    release : In(1)
        The inputs done are released (``done`` cleared) at this cycle's end.
    done : Out(rows * cols)
        The inputs whose ``last`` was taken; each is held (ready low) until released.
    adds : Out(stream({addr, lanes}), always ready)
        The drain taken on the cycle before, to add into word ``addr``; none for a
        ``last`` or a drain outside the buffer.
    """

    def __init__(self, rows, cols, line, tlen, vlen, iw, acc_width, depth):
        self.cols, self.line, self.tlen, self.depth = cols, line, tlen, depth
        abits = max(1, ceil_log2(depth * tlen * line))
        drain = stream.Signature(pe_drain_layout(iw, tlen, vlen, acc_width))
        super().__init__({
            "drains": In(drain).array(rows * cols),
            "release": In(1),
            "done": Out(rows * cols),
            "adds": Out(stream.Signature(add_layout(abits, vlen * acc_width),
                                         always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        drains, done, adds = self.drains, self.done, self.adds
        m.submodules.arbiter = arbiter = RoundRobin(n=len(drains), registered=True)
        grant = arbiter.grant
        valid = Cat(d.valid for d in drains)
        m.d.comb += arbiter.requests.eq(valid & ~done)
        for i, d in enumerate(drains):
            m.d.comb += d.ready.eq(grant[i] & ~done[i])     # all done while streaming
            with m.If(d.valid & d.ready & d.payload.last):
                m.d.sync += done[i].eq(1)
        with m.If(self.release):
            m.d.sync += done.eq(0)

        item = Signal.like(drains[0].payload, name="item")
        j = Signal(range(max(self.cols, 2)))
        picked, which = 0, 0
        for i, d in enumerate(drains):
            picked = picked | Mux(grant[i], d.payload.as_value(), 0)
            which = which | Mux(grant[i], i % self.cols, 0)
        m.d.comb += [item.eq(picked), j.eq(which)]
        take = (valid & grant & ~done).any()
        inside = (item.row < self.depth) & (item.chunk < self.tlen)
        column = times(item.chunk, self.line)
        # Named at its own width, so the exported Verilog does not widen it into a wire
        # whose top bits nothing reads (a Verilator -Wall warning).
        offset = Signal(len(column), name="offset")
        m.d.comb += offset.eq(column)
        m.d.sync += [
            adds.valid.eq(take & ~item.last & inside),
            adds.payload.addr.eq(times(item.row, self.tlen * self.line) + offset + j),
            adds.payload.lanes.eq(item.lanes.as_value()),
        ]
        return m


class Accumulate(wiring.Component):
    """Stages B and C: the word read, the bypass from the writes it missed, the sum written
    back.

    A read sees the writes made before its cycle, not the one on it. A drain adds at C two
    cycles after its read, so the writes of its read's cycle and the next (the two cycles
    before C) are missed; they are taken from the two writes before, the newest first.

    Parameters
    ----------
    abits : bits of a word address.
    vlen, acc_width : lanes of a word and bits of each.

    Members
    -------
    adds : In(stream({addr, lanes}), always ready)
        From :class:`Gather`; its address was presented to the RAM's read port.
    word : In(vlen * acc_width)
        The RAM's read data.
    load : In(1)
        C's word register takes ``word`` (it is the output register too).
    held : Out(vlen * acc_width)
        C's word register.
    write : Out(stream({addr, data}), always ready)
        C's sum, written back; ``data`` is 0 while C is empty.
    busy : Out(1)
        A drain is in B or C.
    """

    def __init__(self, abits, vlen, acc_width):
        self.vlen, self.acc_width = vlen, acc_width
        width = vlen * acc_width
        super().__init__({
            "adds": In(stream.Signature(add_layout(abits, width), always_ready=True)),
            "word": In(width),
            "load": In(1),
            "held": Out(width),
            "write": Out(stream.Signature(write_layout(abits, width), always_ready=True)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        V, A = self.vlen, self.acc_width
        width = V * A
        adds, write = self.adds, self.write
        b = Signal.like(adds.payload, name="b")
        b_valid = Signal()
        c_valid, c_addr = write.valid, write.payload.addr
        c_lanes, c_word = Signal(width), self.held
        w1_valid, w1_addr = Signal(), Signal.like(c_addr, name="w1_addr")
        w1_data, w2_data = Signal(width), Signal(width)
        use_w1, use_w2, use_word = Signal(), Signal(), Signal()

        with m.If(self.load):
            m.d.sync += c_word.eq(self.word)
        m.d.sync += [b_valid.eq(adds.valid), b.eq(adds.payload)]
        # B: compare with the write being made (C's) and the one before (w1): those are
        # w1 and w2 when this drain is at C. An empty stage C carries zeros.
        hit1 = c_valid & (b.addr == c_addr)
        hit2 = w1_valid & (b.addr == w1_addr)
        m.d.sync += [
            c_valid.eq(b_valid), c_addr.eq(b.addr),
            c_lanes.eq(Mux(b_valid, b.lanes, 0)),
            use_w1.eq(b_valid & hit1),
            use_w2.eq(b_valid & ~hit1 & hit2),
            use_word.eq(b_valid & ~hit1 & ~hit2),
        ]
        # C: the newest value of the word, plus the drain; 0 + 0 when C is empty.
        old, sum_ = Signal(width), write.payload.data
        m.d.comb += old.eq(Mux(use_w1, w1_data, 0) | Mux(use_w2, w2_data, 0) |
                           Mux(use_word, c_word, 0))
        m.d.comb += sum_.eq(Cat((old[v * A:(v + 1) * A] + c_lanes[v * A:(v + 1) * A])[:A]
                                for v in range(V)))
        m.d.sync += [
            w1_valid.eq(c_valid), w1_addr.eq(c_addr), w1_data.eq(sum_),
            w2_data.eq(w1_data),
        ]
        m.d.comb += self.busy.eq(b_valid | c_valid)  # (A is empty once the last is taken)
        return m


class Bank(wiring.Component):
    """A bank of the output buffer: its block RAM, into which its inputs' drains are added
    through :class:`Gather` and :class:`Accumulate`, and which :class:`Unload` reads.

    Parameters
    ----------
    rows, cols, line, tlen, vlen, iw, acc_width, depth : as :class:`Gather`'s.

    Members
    -------
    drains, release, done : as :class:`Gather`'s.
    streaming : In(1)
        The output phase: the RAM's ports are :class:`Unload`'s.
    read : In(stream(addr), always ready)
        :class:`Unload`'s read of a word of this bank, cleared as it is read.
    load : In(1)
        The output register (:class:`Accumulate`'s word register) takes the word read.
    held : Out(vlen * acc_width)
        The output register.
    busy : Out(1)
        A drain is on its way into the RAM.
    """

    def __init__(self, rows, cols, line, tlen, vlen, iw, acc_width, depth):
        self.params = (rows, cols, line, tlen, vlen, iw, acc_width, depth)
        self.vlen, self.acc_width, self.words = vlen, acc_width, depth * tlen * line
        self.abits = max(1, ceil_log2(self.words))
        drain = stream.Signature(pe_drain_layout(iw, tlen, vlen, acc_width))
        super().__init__({
            "drains": In(drain).array(rows * cols),
            "release": In(1),
            "done": Out(rows * cols),
            "streaming": In(1),
            "read": In(stream.Signature(self.abits, always_ready=True)),
            "load": In(1),
            "held": Out(vlen * acc_width),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = data.ArrayLayout(self.acc_width, self.vlen)   # as bits: sums wrap alike
        m.submodules.store = store = Memory(shape=lanes, depth=self.words, init=[])
        rd, wr = store.read_port(), store.write_port()
        m.submodules.gather = gather = Gather(*self.params)
        m.submodules.accumulate = accumulate = Accumulate(self.abits, self.vlen,
                                                          self.acc_width)
        for drain, port in zip(self.drains, gather.drains, strict=True):
            wiring.connect(m, wiring.flipped(drain), port)
        wiring.connect(m, gather.adds, accumulate.adds)
        streaming, read, write = self.streaming, self.read, accumulate.write
        m.d.comb += [
            gather.release.eq(self.release), self.done.eq(gather.done),
            accumulate.word.eq(rd.data), accumulate.load.eq(self.load),
            self.held.eq(accumulate.held), self.busy.eq(accumulate.busy),
            rd.addr.eq(Mux(streaming, read.payload, gather.adds.payload.addr)),
            rd.en.eq(~streaming | read.valid),
            wr.addr.eq(Mux(streaming, read.payload, write.payload.addr)),
            wr.data.eq(write.payload.data),     # 0 while streaming: stage C is empty
            wr.en.eq(Mux(streaming, read.valid, write.valid)),
        ]
        return m


class Unload(wiring.Component):
    """The output phase: once every input is done and the pipeline is empty, reads (and
    clears) the words of rows ``0 .. out_rows - 1`` in order, each from its bank.

    A word read is in its bank's RAM's read register (R), then in the bank's
    :class:`Accumulate` word register (C's, the output register); R holds (the read port
    disabled) while the output register waits. With several banks ``out.lanes`` is the
    output register of the chunk's bank, picked by a register.

    Parameters
    ----------
    cols, tlen, vlen, iw, acc_width, banks : as :class:`TensaurusMsu`'s.
    abits : bits of a word's address in its bank.

    Members
    -------
    ended : In(1)
        Every input is done.
    busy : In(1)
        A drain is still on its way into the buffer.
    out_rows : In(iw + 1)
    words : In(vlen * acc_width) x banks
        Each bank's output register (C's word register).
    out : Out(stream({row, chunk, lanes, last}))
    release : Out(1)
        The inputs are released: the run's output is out, or there is none.
    streaming : Out(1)
        The output phase: the RAMs' ports are this unit's.
    read : Out(stream({bank, addr}), always ready)
        A word read and cleared (``valid``), its bank and its address there, while
        ``streaming``.
    moves : Out(1)
        The output registers load.
    """

    def __init__(self, cols, tlen, vlen, iw, acc_width, banks, abits):
        self.cols, self.chunks, self.iw, self.banks = cols, tlen * cols, iw, banks
        read = data.StructLayout({"bank": range(banks), "addr": abits})
        super().__init__({
            "ended": In(1),
            "busy": In(1),
            "out_rows": In(iw + 1),
            "words": In(vlen * acc_width).array(banks),
            "out": Out(stream.Signature(msu_out_layout(iw, self.chunks, vlen, acc_width))),
            "release": Out(1),
            "streaming": Out(1),
            "read": Out(stream.Signature(read, always_ready=True)),
            "moves": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        C, out, streaming, moves = self.chunks, self.out, self.streaming, self.moves
        issue, o_addr = self.read.valid, self.read.payload.addr
        o_row, o_chunk = Signal(self.iw), Signal(chunk_bits(C))
        o_col = Signal(range(max(self.cols, 2)))        # the chunk's PE column
        o_bank = o_col[:ceil_log2(self.banks)]
        reading = Signal()
        meta = data.StructLayout({"row": self.iw, "chunk": chunk_bits(C), "last": 1,
                                  "bank": range(self.banks)})
        r_valid, r_meta, o_meta = Signal(), Signal(meta), Signal(meta)
        final = (o_chunk == C - 1) & (o_row == self.out_rows - 1)
        wraps = o_col == self.cols - 1
        # A line's columns take the banks in turn: the address steps after each round, and
        # after the line's last column (to the next line's first word, ``line`` on).
        step = (o_bank == self.banks - 1) | wraps
        starting = ~streaming & self.ended & ~self.busy
        ending = out.valid & out.ready & out.payload.last
        m.d.comb += [
            moves.eq(~out.valid | out.ready),
            issue.eq(streaming & reading & (~r_valid | moves)), self.read.payload.bank.eq(o_bank),
            out.payload.row.eq(o_meta.row), out.payload.chunk.eq(o_meta.chunk),
            out.payload.last.eq(o_meta.last),
            out.payload.lanes.eq(any_of(Mux(o_meta.bank == b, word, 0)
                                      for b, word in enumerate(self.words))),
            self.release.eq((starting & (self.out_rows == 0)) | ending),
        ]
        with m.If(starting & (self.out_rows != 0)):
            m.d.sync += [streaming.eq(1), reading.eq(1), o_addr.eq(0), o_row.eq(0),
                         o_chunk.eq(0), o_col.eq(0)]
        with m.If(issue):
            m.d.sync += [o_addr.eq(o_addr + step), o_col.eq(Mux(wraps, 0, o_col + 1)),
                         r_meta.row.eq(o_row), r_meta.chunk.eq(o_chunk),
                         r_meta.last.eq(final), r_meta.bank.eq(o_bank)]
            with m.If(o_chunk == C - 1):
                m.d.sync += [o_chunk.eq(0), o_row.eq(o_row + 1)]
            with m.Else():
                m.d.sync += o_chunk.eq(o_chunk + 1)
            with m.If(final):
                m.d.sync += reading.eq(0)
        with m.If(moves):
            m.d.sync += [out.valid.eq(r_valid), o_meta.eq(r_meta)]
        m.d.sync += r_valid.eq(issue | (r_valid & ~moves))
        with m.If(ending):
            m.d.sync += streaming.eq(0)
        return m


class MsuSignature(wiring.Signature):
    """A Tensaurus matrix store unit (Section 5.2.5), seen from it.

    - ``drains`` (``rows x cols`` streams in, :func:`~.interfaces.pe_drain_layout`): PE
      ``(r, q)``'s drains at index ``r * cols + q``; its chunk ``t`` is the row's chunk
      ``t * cols + q``.
    - ``out_rows`` (in): rows of the output (held while a run goes).
    - ``out`` (stream out, :func:`~.interfaces.msu_out_layout`): once every input has sent
      its ``last``, rows ``0 .. out_rows - 1``, each its ``tlen * cols`` chunks in order,
      each the sum of every drain of that chunk since the previous output (0 if none).
      With ``out_rows`` 0 nothing is sent and the sums stay: the next tile adds to them.
    - ``closing`` (out): high from the cycle an input's ``last`` is taken until the
      inputs are released (the output sent, or at once with ``out_rows`` 0); a
      controller waits for it to fall before it changes ``out_rows``.
    """

    def __init__(self, rows, cols, iw, tlen, vlen, acc_width):
        drain = stream.Signature(pe_drain_layout(iw, tlen, vlen, acc_width))
        super().__init__({
            "drains": In(drain).array(rows * cols),
            "out_rows": In(iw + 1),
            "out": Out(stream.Signature(msu_out_layout(iw, tlen * cols, vlen, acc_width))),
            "closing": Out(1),
        })


@block("tensaurus_msu")
class TensaurusMsu(wiring.Component):
    """A Tensaurus MSU: ``rows x cols`` drain streams accumulated in ``banks`` block RAMs
    of ``depth`` output rows in all, then streamed out row by row.

    Parameters
    ----------
    rows, cols : the PE array's ``r x c``; PE ``(r, q)`` drains into input ``r * cols + q``
        and its chunk ``t`` is the row's chunk ``t * cols + q``.
    tlen : TLEN, chunks a PE holds of an output row (a row has ``tlen * cols``).
    vlen : VLEN, lanes of a chunk.
    iw : bits of a row index.
    acc_width : bits of an accumulator (signed; sums wrap).
    depth : output rows the buffer holds.
    banks : banks of the buffer, a power of two, at most ``cols``: PE column ``q``'s
        chunks are in bank ``q mod banks`` (the module's docstring says why).

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
        As :class:`~sparseforge.hw.tensaurus_msu.MsuSignature` says; each chunk is cleared
        as it is read, so the next run starts from zero. The buffer starts at zero from
        configuration: a reset does not clear it.
    closing : Out(1)
        High from an input's ``last`` until the inputs are released: with ``out_rows``
        0 the sums stay for the next tile and the inputs are released at once.

    Latency and throughput: one drain a cycle in each bank, whichever of its inputs (the
    PEs of its columns) offer them, round-robin among those that wait (a lone input is
    granted every cycle; a waiting one before any other of its bank is granted twice): up
    to ``banks`` drains a cycle. A drain is written 3 cycles after it is taken. The output
    starts 6 cycles after the last ``last`` (and the drains before it) are taken, then
    one chunk a cycle while ``out`` is taken; ``out`` is registered (with several banks,
    a mux of the banks' registers picked by a register).
    """

    PARAMS = (Param("rows", 2, 1, 16, "PE array rows (r)"),
              Param("cols", 2, 1, 16, "PE array columns (c)"),
              Param("tlen", 2, 1, 64, "chunks of an output row each PE holds (TLEN)"),
              Param("vlen", 4, 1, 16, "lanes of a chunk (VLEN)"),
              Param("iw", 16, 1, 32, "bits of a row index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("depth", 256, 1, 1 << 20, "output rows the buffer holds"),
              Param("banks", 2, 1, 16, "banks of the buffer, at most cols", pow2=True))
    REPORT = ({"banks": 1}, {}, *({"rows": 4, "cols": 4, "tlen": 1, "vlen": 2, "depth": 512,
                                   "banks": banks} for banks in (1, 4)))
    PAPER = "Table 2 (28 nm): MSU 0.759 mm2, 33.0%"

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.rows, self.cols, self.tlen, self.vlen = v["rows"], v["cols"], v["tlen"], v["vlen"]
        self.iw, self.acc_width, self.depth = v["iw"], v["acc_width"], v["depth"]
        self.banks = v["banks"]
        if self.banks > self.cols:
            raise ParameterError(f"parameter banks={self.banks}: expected at most cols="
                                 f"{self.cols} (bank b holds PE columns b, b + banks, ...)")
        self.inputs = self.rows * self.cols
        self.chunks = self.tlen * self.cols                 # chunks of an output row
        self.line = -(-self.cols // self.banks)             # a bank's words of a row's t
        self.words = self.depth * self.chunks
        self.abits = max(1, ceil_log2(self.depth * self.tlen * self.line))  # in a bank
        super().__init__(MsuSignature(self.rows, self.cols, self.iw, self.tlen, self.vlen,
                                      self.acc_width))

    def bank_inputs(self, b):
        """The inputs bank ``b`` takes: PE ``(p, q)``'s for ``q = b, b + banks, ...``."""
        return [p * self.cols + q for p in range(self.rows)
                for q in range(b, self.cols, self.banks)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.unload = unload = Unload(self.cols, self.tlen, self.vlen, self.iw,
                                              self.acc_width, self.banks, self.abits)
        wiring.connect(m, unload.out, wiring.flipped(self.out))
        read, streaming = unload.read, unload.streaming
        done, busy = [], []
        for b in range(self.banks):
            inputs = self.bank_inputs(b)
            m.submodules[f"bank{b}"] = bank = Bank(
                self.rows, len(inputs) // self.rows, self.line, self.tlen, self.vlen,
                self.iw, self.acc_width, self.depth)
            for n, port in zip(inputs, bank.drains, strict=True):
                wiring.connect(m, wiring.flipped(self.drains[n]), port)
            m.d.comb += [
                bank.release.eq(unload.release), bank.streaming.eq(streaming),
                bank.read.valid.eq(read.valid & (read.payload.bank == b)),
                bank.read.payload.eq(read.payload.addr),
                bank.load.eq(~streaming | unload.moves), unload.words[b].eq(bank.held),
            ]
            done.append(bank.done)
            busy.append(bank.busy)
        m.d.comb += [
            unload.ended.eq(Cat(done).all()), unload.busy.eq(Cat(busy).any()),
            unload.out_rows.eq(self.out_rows),
            self.closing.eq(Cat(done).any() | streaming),
        ]
        return m
