# amaranth: UnusedElaboratable=no
"""The Tensaurus matrix store unit (Tensaurus Sections 5.1 and 5.2.5, Fig. 5a): it sums the
PEs' drained OSR chunks across the input tiles of an output tile in one half of a double
buffer and, once the output tile's last input tile has drained, writes the finished half
to memory (clearing it) while the next output tile sums into the other half.

Each half is ``banks`` block RAMs (a :class:`Bank` holds one of each half) of words of
``vlen`` accumulators: output row ``i`` (of its output tile)'s chunk ``g = t * cols + q``
(PE column ``q``'s chunk ``t``) is in bank ``q mod banks``, at its word ``(i * tlen + t) *
line + q // banks`` (``line = ceil(cols / banks)``, a bank's words of one ``(i, t)``). With
one bank that is word ``i * tlen * cols + g``. The halves are separate RAMs, not halves of
one, so the write-back has ports of its own and never takes a cycle from the drains.

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
comparator. :class:`Unload` reads the finished half's rows out through that half's RAM
ports, each chunk from its bank, clearing each word as it goes, and writes them to memory
as consecutive words from the output tile's base
(:func:`~sparseforge.sw.wire.tensaurus_out_word`).

For very sparse tensors the paper's MSU "can be configured to directly accumulate the
results in the main memory": the output is then one tile, however many rows, so the
tensor's tiles are larger and the matrices reused more. In that mode (``direct``, chosen
per run) :class:`Direct` adds each drain to its word in memory, a read and a write, and
the buffer is unused.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import MemoryWritePortSignature, chunk_bits, pe_drain_layout
from .stream_units import MemoryPortSignature, RoundRobin, Skid, any_of


def times(value, k):
    """``value * k`` for a constant ``k >= 1`` as shifted adds (a word address needs no
    multiplier, nor a DSP)."""
    terms = [value << b for b in range(k.bit_length()) if k >> b & 1]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def take_drains(m, drains, done, release, cols, enable=1):
    """``(item, column, take)``: one drain a cycle from ``drains`` while ``enable``,
    round-robin; ``take`` when one is taken, ``item`` it and ``column`` its input's column
    (input ``k``'s is ``k % cols``).

    The grant comes from a :class:`~sparseforge.hw.stream_units.RoundRobin` whose grant is
    a register, so with ``enable`` a register's, each input's ``ready`` is too and not
    behind the arbitration. An input whose ``last`` is taken is ``done`` (held, ready
    low) until ``release``."""
    m.submodules.arbiter = arbiter = RoundRobin(n=len(drains), registered=True)
    grant = arbiter.grant
    valid = Cat(d.valid for d in drains)
    m.d.comb += arbiter.requests.eq(valid & ~done)
    for i, d in enumerate(drains):
        m.d.comb += d.ready.eq(grant[i] & ~done[i] & enable)    # all done while streaming
        with m.If(d.valid & d.ready & d.payload.last):
            m.d.sync += done[i].eq(1)
    with m.If(release):
        m.d.sync += done.eq(0)
    item = Signal.like(drains[0].payload, name="item")
    column = Signal(range(max(cols, 2)), name="column")
    picked, which = 0, 0
    for i, d in enumerate(drains):
        picked = picked | Mux(grant[i], d.payload.as_value(), 0)
        which = which | Mux(grant[i], i % cols, 0)
    m.d.comb += [item.eq(picked), column.eq(which)]
    return item, column, (valid & grant & ~done).any() & enable


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
        adds = self.adds
        item, j, take = take_drains(m, self.drains, self.done, self.release, self.cols)
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
        The RAM's read data, registered at C.
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
        c_lanes, c_word = Signal(width), Signal(width)
        w1_valid, w1_addr = Signal(), Signal.like(c_addr, name="w1_addr")
        w1_data, w2_data = Signal(width), Signal(width)
        use_w1, use_w2, use_word = Signal(), Signal(), Signal()

        m.d.sync += [c_word.eq(self.word), b_valid.eq(adds.valid), b.eq(adds.payload)]
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
    """A bank of the output buffer: a block RAM of each half; its inputs' drains are added
    into the accumulating half through :class:`Gather` and :class:`Accumulate`, while
    :class:`Unload` reads (and clears) the other.

    Parameters
    ----------
    rows, cols, line, tlen, vlen, iw, acc_width, depth : as :class:`Gather`'s.

    Members
    -------
    drains, release, done : as :class:`Gather`'s.
    half : In(1)
        The half the drains add into; it changes only while no drain is on its way and
        no read of the other half is.
    read : In(stream(addr), always ready)
        :class:`Unload`'s read of a word of the other half, cleared as it is read.
    word : Out(vlen * acc_width)
        The other half's read data: the word last read, held while no read is made.
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
            "half": In(1),
            "read": In(stream.Signature(self.abits, always_ready=True)),
            "word": Out(vlen * acc_width),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = data.ArrayLayout(self.acc_width, self.vlen)   # as bits: sums wrap alike
        m.submodules.gather = gather = Gather(*self.params)
        m.submodules.accumulate = accumulate = Accumulate(self.abits, self.vlen,
                                                          self.acc_width)
        for drain, port in zip(self.drains, gather.drains, strict=True):
            wiring.connect(m, wiring.flipped(drain), port)
        wiring.connect(m, gather.adds, accumulate.adds)
        adds, write, read, half = gather.adds, accumulate.write, self.read, self.half
        words = []
        for h in range(2):
            m.submodules[f"half{h}"] = store = Memory(shape=lanes, depth=self.words, init=[])
            rd, wr = store.read_port(), store.write_port()
            mine = half == h                                # the drains' half
            m.d.comb += [
                rd.addr.eq(Mux(mine, adds.payload.addr, read.payload)),
                rd.en.eq(mine | read.valid),
                wr.addr.eq(Mux(mine, write.payload.addr, read.payload)),
                wr.data.eq(Mux(mine, write.payload.data, 0)),   # Unload clears
                wr.en.eq(Mux(mine, write.valid, read.valid)),
            ]
            words.append(rd.data.as_value())
        m.d.comb += [
            gather.release.eq(self.release), self.done.eq(gather.done),
            accumulate.word.eq(Mux(half, words[1], words[0])),
            self.word.eq(Mux(half, words[0], words[1])),
            self.busy.eq(accumulate.busy),
        ]
        return m


class Direct(wiring.Component):
    """The direct-to-memory mode (Section 5.2.5: "the MSU can be configured to directly
    accumulate the results in the main memory"): each drain is a read-modify-write of its
    output word in memory, at ``base + row * chunks + g`` as the write-back lays it (its
    output tile's rows are all its run's, the buffer unused).

    - P: once ``go`` (the tile's item offered: its ``base`` and ``rows``), a drain is
      taken (:func:`take_drains`) and its word's address registered;
    - I: through a :class:`~sparseforge.hw.stream_units.Skid` to the head register, it is
      read once a slot of the ``reads`` in flight is free and no slot holds its word: a
      drain to a word waits until the last one's sum is written, so its read sees it. The
      slots holding its word are found as it enters the head and cleared as they retire,
      so the issue waits on registers, not on comparators;
    - W: the answers come in order; each, plus its slot's lanes (read ahead into a
      register), is written from a register, and the slot is freed when the write is
      taken.

    Parameters
    ----------
    rows, cols, tlen, vlen, iw, acc_width : as :class:`TensaurusMsu`'s.
    reads : reads in flight.
    addr_width : bits of a memory address.

    Members
    -------
    drains, release, done : as :class:`Gather`'s.
    go : In(1)
        The tile's ``base`` and ``rows`` are offered: drains may be taken.
    base : In(addr_width)
    rows : In(iw + 1)
        A drain to a row at or past ``rows`` (or a chunk past ``tlen``) is dropped.
    read : Out(:class:`~sparseforge.hw.stream_units.MemoryPortSignature`)
    write : Out(:class:`~.interfaces.MemoryWritePortSignature`)
    busy : Out(1)
        A drain is on its way to memory.
    """

    def __init__(self, rows, cols, tlen, vlen, iw, acc_width, reads, addr_width):
        self.cols, self.tlen, self.vlen, self.acc_width = cols, tlen, vlen, acc_width
        self.reads, self.addr_width = reads, addr_width
        width = vlen * acc_width
        drain = stream.Signature(pe_drain_layout(iw, tlen, vlen, acc_width))
        super().__init__({
            "drains": In(drain).array(rows * cols),
            "release": In(1),
            "done": Out(rows * cols),
            "go": In(1),
            "base": In(addr_width),
            "rows": In(iw + 1),
            "read": Out(MemoryPortSignature(addr_width, width)),
            "write": Out(MemoryWritePortSignature(addr_width, width)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        V, A, n = self.vlen, self.acc_width, self.reads
        word = write_layout(self.addr_width, V * A)
        m.submodules.skid = skid = Skid(word)
        p = skid.i
        # P: the drain's word, registered into the skid.
        p_moves = ~p.valid | p.ready
        item, j, take = take_drains(m, self.drains, self.done, self.release, self.cols,
                                    self.go & p_moves)
        inside = (item.row < self.rows) & (item.chunk < self.tlen)
        # Each term named at its own width, as Gather's (Verilator -Wall): the chunk's
        # column, and the offset, below len(row) bits times a row's chunks.
        column = times(item.chunk, self.cols)
        chunk = Signal(len(column), name="chunk")
        offset = Signal(len(item.row) + ceil_log2(self.tlen * self.cols), name="offset")
        m.d.comb += [chunk.eq(column),
                     offset.eq(times(item.row, self.tlen * self.cols) + chunk + j)]
        with m.If(p_moves):
            m.d.sync += [p.valid.eq(take & ~item.last & inside),
                         p.payload.addr.eq(self.base + offset),
                         p.payload.data.eq(item.lanes.as_value())]

        # I: the drain at the head (``head``), with the slots that hold its word (``match``),
        # found as it enters and cleared as they retire, so no comparator is behind its
        # issue; a slot each read in flight, freed once its sum is written.
        held = Signal(n)
        where = Array(Signal(self.addr_width, name=f"addr{s}") for s in range(n))
        lanes = Array(Signal(V * A, name=f"lanes{s}") for s in range(n))
        issued, answered, retired = (Signal(range(n), name=name)
                                     for name in ("issued", "answered", "retired"))
        head, match = Signal(word, name="head"), Signal(n, name="match")
        waiting = Signal()
        o, request, write = skid.o, self.read.request, self.write.request
        free = ~any_of(held[s] & (issued == s) for s in range(n))
        issue = waiting & ~match.any() & free & (~request.valid | request.ready)
        retire = write.valid & write.ready
        gone = Signal(n, name="gone")                        # the slot retiring, one-hot
        m.d.comb += gone.eq(Mux(retire, Const(1, n) << retired, 0))
        load = ~waiting | issue
        m.d.comb += o.ready.eq(load)
        with m.If(load):
            m.d.sync += [waiting.eq(o.valid), head.eq(o.payload),
                         match.eq(Cat((held[s] & ~gone[s] & (where[s] == o.payload.addr))
                                      | (issue & (issued == s) & (head.addr == o.payload.addr))
                                      for s in range(n)))]
        with m.Else():
            m.d.sync += match.eq(match & ~gone)
        with m.If(issue):
            m.d.sync += [request.valid.eq(1), request.payload.eq(head.addr),
                         where[issued].eq(head.addr), lanes[issued].eq(head.data),
                         issued.eq(issued + 1)]
        with m.Elif(request.ready):
            m.d.sync += request.valid.eq(0)

        # W: the answer plus the slot's lanes, written. The lanes of the slot answered next
        # are a register (``add``), read ahead and given the issue's lanes when it fills
        # that slot, so the sums start at flip-flops rather than after the slots' choice.
        response = self.read.response
        m.d.comb += response.ready.eq(~write.valid | write.ready)
        answers = response.valid & response.ready
        ahead = Signal(range(n), name="ahead")
        old, add = response.payload, Signal(V * A, name="add")
        m.d.comb += ahead.eq(Mux(answers, answered + 1, answered))
        m.d.sync += add.eq(Mux(issue & (issued == ahead), head.data, lanes[ahead]))
        with m.If(answers):
            m.d.sync += [write.valid.eq(1), write.payload.addr.eq(where[answered]),
                         write.payload.data.eq(Cat((old[v * A:(v + 1) * A]
                                                    + add[v * A:(v + 1) * A])[:A]
                                                   for v in range(V))),
                         answered.eq(answered + 1)]
        with m.Elif(write.ready):
            m.d.sync += write.valid.eq(0)
        with m.If(retire):
            m.d.sync += retired.eq(retired + 1)
        m.d.sync += held.eq((held & ~gone) | Mux(issue, Const(1, n) << issued, 0))
        m.d.comb += self.busy.eq(p.valid | o.valid | waiting | held.any())
        return m


class Unload(wiring.Component):
    """The write-back: once started, reads (and clears) the words of rows ``0 .. rows - 1``
    of the finished half in order, each from its bank, and writes each to memory, at
    ``base`` and on, one word a cycle while the write port takes them.

    A word read is in its bank's RAM's read register (R), then in the write request's
    register; R holds (the read port disabled) while the request waits. The request's
    data is the chunk's bank's R, picked by a register.

    Parameters
    ----------
    cols, tlen, vlen, iw, acc_width, banks : as :class:`TensaurusMsu`'s.
    abits : bits of a word's address in its bank.
    addr_width : bits of a memory address.

    Members
    -------
    start : In(1)
        Write ``rows`` rows from ``base`` (taken on this cycle; ignored while
        ``writing``, none with ``rows`` 0).
    base : In(addr_width)
    rows : In(iw + 1)
    words : In(vlen * acc_width) x banks
        Each bank's read data of the finished half.
    read : Out(stream({bank, addr}), always ready)
        A word read and cleared (``valid``), its bank and its address there.
    mem : Out(:class:`~.interfaces.MemoryWritePortSignature`)
        Row ``i``'s chunk ``g`` at ``base + i * chunks + g``, in address order.
    writing : Out(1)
        From the cycle after ``start`` until the last write is taken.
    """

    def __init__(self, cols, tlen, vlen, iw, acc_width, banks, abits, addr_width):
        self.cols, self.chunks, self.iw, self.banks = cols, tlen * cols, iw, banks
        self.addr_width = addr_width
        read = data.StructLayout({"bank": range(banks), "addr": abits})
        super().__init__({
            "start": In(1),
            "base": In(addr_width),
            "rows": In(iw + 1),
            "words": In(vlen * acc_width).array(banks),
            "read": Out(stream.Signature(read, always_ready=True)),
            "mem": Out(MemoryWritePortSignature(addr_width, vlen * acc_width)),
            "writing": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        C, request, writing = self.chunks, self.mem.request, self.writing
        issue, o_addr = self.read.valid, self.read.payload.addr
        rows, o_row, o_chunk = Signal(self.iw + 1), Signal(self.iw), Signal(chunk_bits(C))
        o_col = Signal(range(max(self.cols, 2)))        # the chunk's PE column
        o_bank = o_col[:ceil_log2(self.banks)]
        o_mem, reading, o_last = Signal(self.addr_width), Signal(), Signal()
        meta = data.StructLayout({"addr": self.addr_width, "last": 1,
                                  "bank": range(self.banks)})
        r_valid, r_meta = Signal(), Signal(meta)
        final = (o_chunk == C - 1) & (o_row == rows - 1)
        wraps = o_col == self.cols - 1
        # A line's columns take the banks in turn: the address steps after each round, and
        # after the line's last column (to the next line's first word, ``line`` on).
        step = (o_bank == self.banks - 1) | wraps
        moves = ~request.valid | request.ready
        m.d.comb += [issue.eq(reading & (~r_valid | moves)),
                     self.read.payload.bank.eq(o_bank)]
        with m.If(self.start & ~writing & (self.rows != 0)):
            m.d.sync += [writing.eq(1), reading.eq(1), rows.eq(self.rows), o_mem.eq(self.base),
                         o_addr.eq(0), o_row.eq(0), o_chunk.eq(0), o_col.eq(0)]
        with m.If(issue):
            m.d.sync += [o_addr.eq(o_addr + step), o_col.eq(Mux(wraps, 0, o_col + 1)),
                         o_mem.eq(o_mem + 1), r_meta.addr.eq(o_mem), r_meta.last.eq(final),
                         r_meta.bank.eq(o_bank)]
            with m.If(o_chunk == C - 1):
                m.d.sync += [o_chunk.eq(0), o_row.eq(o_row + 1)]
            with m.Else():
                m.d.sync += o_chunk.eq(o_chunk + 1)
            with m.If(final):
                m.d.sync += reading.eq(0)
        with m.If(moves):
            m.d.sync += [request.valid.eq(r_valid), request.payload.addr.eq(r_meta.addr),
                         o_last.eq(r_meta.last),
                         request.payload.data.eq(any_of(Mux(r_meta.bank == b, word, 0)
                                                        for b, word in enumerate(self.words)))]
        m.d.sync += r_valid.eq(issue | (r_valid & ~moves))
        with m.If(request.valid & request.ready & o_last):
            m.d.sync += writing.eq(0)
        return m


def msu_tile_layout(iw, addr_width):
    """An input tile as the MSU closes it: the rows of its output tile, that output tile's
    ``base`` address in memory, and ``closes`` on the output tile's last input tile."""
    return data.StructLayout({"base": addr_width, "rows": iw + 1, "closes": 1})


class MsuSignature(wiring.Signature):
    """A Tensaurus matrix store unit (Section 5.2.5), seen from it.

    - ``drains`` (``rows x cols`` streams in, :func:`~.interfaces.pe_drain_layout`): PE
      ``(r, q)``'s drains at index ``r * cols + q``; its chunk ``t`` is the row's chunk
      ``t * cols + q`` of row ``row`` of the current output tile. Each input sends its
      ``last`` at an input tile's end and is held (ready low) until the tile is closed.
    - ``tiles`` (stream in, :func:`msu_tile_layout`): one item an input tile, taken on the
      cycle the tile is closed: once every input has sent its ``last`` and its drains are
      in the buffer, and, if it ``closes`` its output tile, once the other half is
      written. Then, if it closes, the half's rows ``0 .. rows - 1`` go to memory and the
      next output tile adds into the other half.
    - ``out_mem`` (out, :class:`~.interfaces.MemoryWritePortSignature`, a word a chunk):
      each closed output tile's rows in order, each its ``tlen * cols`` chunks, chunk
      ``g`` of row ``i`` at ``base + i * chunks + g``: the sum of every drain of that
      chunk in the output tile's input tiles (0 if none).
    - ``writing`` (out): an output tile is being written, from the cycle after its tile
      item is taken to its last write taken.
    - ``direct`` (in): held while a run goes: the run accumulates directly in memory
      (Section 5.2.5). Each drain of a row below its tile's ``rows`` is then added to its
      word in memory (read through ``out_read``, ``{vlen x acc}`` words in order, and
      written through ``out_mem``), the memory's output words starting at zero; the
      buffer is unused, and a tile is closed once its drains' writes are taken. A direct
      tile's item is offered before its drains are taken (they wait for it) and held.
    - ``out_read`` (out, :class:`~sparseforge.hw.stream_units.MemoryPortSignature`): the
      direct mode's reads of output words.
    """

    def __init__(self, rows, cols, iw, tlen, vlen, acc_width, addr_width):
        drain = stream.Signature(pe_drain_layout(iw, tlen, vlen, acc_width))
        super().__init__({
            "drains": In(drain).array(rows * cols),
            "tiles": In(stream.Signature(msu_tile_layout(iw, addr_width))),
            "out_mem": Out(MemoryWritePortSignature(addr_width, vlen * acc_width)),
            "writing": Out(1),
            "direct": In(1),
            "out_read": Out(MemoryPortSignature(addr_width, vlen * acc_width)),
        })


@block("tensaurus_msu")
class TensaurusMsu(wiring.Component):
    """A Tensaurus MSU: ``rows x cols`` drain streams accumulated in a double buffer, each
    half ``banks`` block RAMs of ``depth`` output rows, each output tile written to memory
    from one half while the next adds into the other.

    Parameters
    ----------
    rows, cols : the PE array's ``r x c``; PE ``(r, q)`` drains into input ``r * cols + q``
        and its chunk ``t`` is the row's chunk ``t * cols + q``.
    tlen : TLEN, chunks a PE holds of an output row (a row has ``tlen * cols``).
    vlen : VLEN, lanes of a chunk.
    iw : bits of a row index.
    acc_width : bits of an accumulator (signed; sums wrap).
    depth : output rows a half holds: an output tile's rows at most.
    banks : banks of each half, a power of two, at most ``cols``: PE column ``q``'s
        chunks are in bank ``q mod banks`` (the module's docstring says why).
    reads : output words read in flight in the direct mode (:class:`Direct`).
    addr_width : bits of a memory address.

    Members
    -------
    drains : In(stream({row, chunk, lanes, last})) x (rows * cols)
        A drain without ``last`` adds its lanes into row ``row``'s chunk ``chunk * cols
        + q`` of the accumulating half; one with ``last`` ends the input's tile. A drain
        outside the half (``row >= depth`` or ``chunk >= tlen``) is taken and dropped;
        one to a row at or past its output tile's ``rows`` stays in the half, and adds to
        that row of the next output tile the half takes.
    tiles, out_mem, writing
        As :class:`~sparseforge.hw.tensaurus_msu.MsuSignature` says; each word is cleared
        as it is read, so the half starts the next output tile from zero. The buffer
        starts at zero from configuration: a reset does not clear it. ``rows`` at most
        ``depth`` (rows beyond the half read undefined words).
    direct, out_read
        The direct mode, as the signature says: :class:`Direct` takes the drains, one a
        cycle, the banks none, and ``writing`` stays low; ``out_read`` stays silent in
        the buffered mode.

    Latency and throughput: one drain a cycle in each bank, whichever of its inputs (the
    PEs of its columns) offer them, round-robin among those that wait (a lone input is
    granted every cycle; a waiting one before any other of its bank is granted twice): up
    to ``banks`` drains a cycle, while the write-back goes on. A drain is written 3 cycles
    after it is taken; an input tile is closed on the cycle after its last ``last`` is
    taken, or once its drains are written (3 cycles after the last drain taken), and an
    output tile's first write is offered 3 cycles after it is closed, then one a cycle
    while the port takes them; the request is a register, its data the chunk's bank's
    read register picked by a register. An output tile waits for the write-back only at
    its last input tile's close, and only while the other half is still being written.

    Clock: below 100 MHz on the ECP5 with two banks, the default (the synthesis report).
    In each configuration placed the critical path is the write-back's: a bank's block
    RAM read (the RAM's own clock-to-out, before its read register) into the word
    :class:`Unload` writes; with two banks through the choice of half and bank, and so
    the longest. Cutting it needs the RAM's output register, a cycle more on the
    write-back that the exact cycle model must count. The direct mode's address sums and
    the drains' round robin, critical on earlier code, are no longer.
    """

    PARAMS = (Param("rows", 2, 1, 16, "PE array rows (r)"),
              Param("cols", 2, 1, 16, "PE array columns (c)"),
              Param("tlen", 2, 1, 64, "chunks of an output row each PE holds (TLEN)"),
              Param("vlen", 4, 1, 16, "lanes of a chunk (VLEN)"),
              Param("iw", 16, 1, 32, "bits of a row index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("depth", 256, 1, 1 << 20, "output rows each half holds"),
              Param("banks", 2, 1, 16, "banks of each half, at most cols", pow2=True),
              Param("reads", 4, 2, 64, "output words read in flight in the direct mode",
                    pow2=True),
              Param("addr_width", 24, 1, 40, "bits of a memory address"))
    REPORT = ({"banks": 1}, {}, *({"rows": 4, "cols": 4, "tlen": 1, "vlen": 2, "depth": 512,
                                   "banks": banks} for banks in (1, 4)))
    PAPER = "Table 2 (28 nm): MSU 0.759 mm2, 33.0%"

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.rows, self.cols, self.tlen, self.vlen = v["rows"], v["cols"], v["tlen"], v["vlen"]
        self.iw, self.acc_width, self.depth = v["iw"], v["acc_width"], v["depth"]
        self.banks, self.reads, self.addr_width = v["banks"], v["reads"], v["addr_width"]
        if self.banks > self.cols:
            raise ParameterError(f"parameter banks={self.banks}: expected at most cols="
                                 f"{self.cols} (bank b holds PE columns b, b + banks, ...)")
        self.inputs = self.rows * self.cols
        self.chunks = self.tlen * self.cols                 # chunks of an output row
        self.line = -(-self.cols // self.banks)             # a bank's words of a row's t
        self.words = self.depth * self.chunks               # of a half
        self.abits = max(1, ceil_log2(self.depth * self.tlen * self.line))  # in a bank
        super().__init__(MsuSignature(self.rows, self.cols, self.iw, self.tlen, self.vlen,
                                      self.acc_width, self.addr_width))

    def bank_inputs(self, b):
        """The inputs bank ``b`` takes: PE ``(p, q)``'s for ``q = b, b + banks, ...``."""
        return [p * self.cols + q for p in range(self.rows)
                for q in range(b, self.cols, self.banks)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.unload = unload = Unload(self.cols, self.tlen, self.vlen, self.iw,
                                              self.acc_width, self.banks, self.abits,
                                              self.addr_width)
        m.submodules.direct = direct = Direct(self.rows, self.cols, self.tlen, self.vlen,
                                              self.iw, self.acc_width, self.reads,
                                              self.addr_width)
        read, tiles, writing, mode = unload.read, self.tiles, unload.writing, self.direct
        half = Signal()                             # the half the drains add into
        release = tiles.valid & tiles.ready         # the input tile is closed
        done, busy = [], []
        for b in range(self.banks):
            inputs = self.bank_inputs(b)
            m.submodules[f"bank{b}"] = bank = Bank(
                self.rows, len(inputs) // self.rows, self.line, self.tlen, self.vlen,
                self.iw, self.acc_width, self.depth)
            for n, port in zip(inputs, bank.drains, strict=True):
                self._route(m, self.drains[n], port, direct.drains[n])
            m.d.comb += [
                bank.release.eq(release), bank.half.eq(half),
                bank.read.valid.eq(read.valid & (read.payload.bank == b)),
                bank.read.payload.eq(read.payload.addr), unload.words[b].eq(bank.word),
            ]
            done.append(bank.done)
            busy.append(bank.busy)
        wiring.connect(m, direct.read, wiring.flipped(self.out_read))
        # The write port: the write-back's, or in the direct mode the sums'.
        out, written = self.out_mem.request, direct.write.request
        m.d.comb += [
            out.valid.eq(Mux(mode, written.valid, unload.mem.request.valid)),
            out.payload.eq(Mux(mode, written.payload, unload.mem.request.payload)),
            written.ready.eq(mode & out.ready),
            unload.mem.request.ready.eq(~mode & out.ready),
        ]
        # An output tile's last input tile waits for the other half to be written.
        drained = Mux(mode, direct.done.all() & ~direct.busy,
                      Cat(done).all() & ~Cat(busy).any())
        m.d.comb += [
            direct.go.eq(mode & tiles.valid), direct.release.eq(release),
            direct.base.eq(tiles.payload.base), direct.rows.eq(tiles.payload.rows),
            tiles.ready.eq(drained & ~(tiles.payload.closes & writing)),
            unload.start.eq(release & tiles.payload.closes & ~mode),
            unload.base.eq(tiles.payload.base), unload.rows.eq(tiles.payload.rows),
            self.writing.eq(writing),
        ]
        with m.If(unload.start):
            m.d.sync += half.eq(~half)
        return m

    def _route(self, m, drain, bank, direct):
        """Input ``drain`` to its ``bank``'s port, or in the direct mode to ``direct``."""
        mode = self.direct
        m.d.comb += [bank.valid.eq(drain.valid & ~mode), direct.valid.eq(drain.valid & mode),
                     bank.payload.eq(drain.payload), direct.payload.eq(drain.payload),
                     drain.ready.eq(Mux(mode, direct.ready, bank.ready))]
