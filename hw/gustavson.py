"""The Gustavson SpGEMM engine: C = A·B, both sparse, row by row (HYTE Section 2).

Gustavson's dataflow computes C's row i as the sum, over A's nonzeros A(i, k), of B's
row k scaled by A(i, k): A is read once in row order, B's rows as A's columns name them,
and C's rows leave whole. HYTE tiles it (Section 6): B's tile sits in the global buffer,
served by a tensor accessor; here B's rows come over a row-read port
(:class:`RowReadSignature`) that such an accessor, or a reader of B's CSR in memory,
serves later.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .convert_dense import LEVELS, Compactor, NonzeroPositions, take_positions
from .interfaces import RowReadSignature, record_word_layout, struct
from .stream_units import Queue, Skid, any_of, at_most_one, lowest

PES = Param("pes", 2, 1, 16, "PEs, each computing whole rows of C")
COLS = Param("cols", 64, 8, 4096, "columns the accumulator holds (a column tile's width)",
             pow2=True)
LANES = Param("lanes", 4, 2, 16, "columns drained a cycle, and records a word of C",
              pow2=True)
INDEX = Param("index_width", 16, 4, 32, "bits of a row and a column id")
VALUE = Param("value_width", 16, 2, 32, "bits of a value of A and of B (two's complement)")
ACC = Param("acc_width", 32, 4, 64, "bits of a value of C (two's complement)",
            at_least=("value_width", "value_width"))
INFLIGHT = Param("inflight", 32, 4, 256, "B rows a PE requests ahead of their elements")

OUT_QUEUE = 4
"""C words a PE's output queue holds: a PE drains into it while the reorder serves
another, so a row that ends before its turn does not hold its PE's next row back."""


def pe_entry(index_width, value_width):
    """A's entry as a PE takes it: the A stream's ``k``, ``value``, ``row_end``,
    ``empty``, and its job's column ``offset``."""
    return data.StructLayout({"k": index_width, "value": value_width, "row_end": 1,
                              "empty": 1, "offset": index_width})


def c_word(lanes, index_width, acc_width):
    """A word of C: ``lanes`` records ``{col, value}``, framed per row of C
    (:func:`~sparseforge.sw.wire.word_end`: full words, then one with ``last``)."""
    return record_word_layout(wire.csr_entry(index_width, acc_width), lanes)


class GustavsonPe(wiring.Component):
    """One PE: rows of A in, each row's C out, compacted.

    Per A(i, k) it requests B's row k (up to ``inflight`` ahead, each entry's value and
    flags waiting in a queue for the row's elements), and each element ``{col, b}`` goes
    down a pipeline that never stalls:

    - S1: the column's place in the tile (``col`` modulo ``cols``; an element of another
      tile, its high bits not the job offset's, writes nothing); the accumulator's read;
    - S2: the product ``a * b``, registered; the read word's lane, and whether the
      column is occupied (the bitmap, corrected by the write in S3 now);
    - S3: the sum, written back: the product alone on a column's first hit, else the
      product plus the old value, which is the write of one or two cycles ago where that
      was to this column (the bypass: the read in S1 could not see it).

    The accumulator is ``lanes`` banks of ``cols / lanes`` words (column ``c`` in bank
    ``c % lanes``), so a drain reads a group of ``lanes`` columns a cycle; its contents
    are never cleared: the occupancy bitmap says which are this row's. When a row's
    last element has been written, the PE drains: each cycle the lowest group with an
    occupied column is read (its bits cleared), its unoccupied lanes zeroed, and the
    vector goes through MINT's zero detection and prefix sum
    (:class:`~.convert_dense.NonzeroPositions`) to its compactor
    (:class:`~.convert_dense.Compactor`), which packs ``{col, value}`` into words; a row
    with nothing occupied sends one empty vector, so every row of C ends with one
    ``last`` word. Zero detection drops a sum that cancelled to 0.

    Why a dense accumulator and not a merger of sorted rows (GAMMA's): a PE takes one
    element a cycle whatever the order of columns, with one adder and block RAM, where
    a merger needs a comparator tree over as many rows as A's row holds and buffers each
    one; the cost is the drain, a cycle per occupied group of ``lanes`` columns, and the
    tile's width, bounded by ``cols`` (wider B goes in column tiles, HYTE's j tiling).

    Parameters
    ----------
    cols, lanes, index_width, value_width, acc_width, inflight, levels: as
    :class:`Gustavson`'s.

    Members
    -------
    a : In(stream(:func:`pe_entry`))
    b : Out(RowReadSignature)
    c : Out(stream(:func:`c_word`))

    Latency and throughput: one B element a cycle; a row's drain starts 4 cycles after
    its last element is taken and takes one cycle per occupied group (at least 1); the
    next row's elements are taken once its last vector has left for the compactor.
    """

    def __init__(self, cols, lanes, index_width, value_width, acc_width, inflight,
                 levels=1):
        self.cols, self.lanes, self.index_width = cols, lanes, index_width
        self.value_width, self.acc_width, self.inflight = value_width, acc_width, inflight
        self.record = struct(wire.csr_entry(index_width, acc_width))
        self.nonzeros = NonzeroPositions(lanes, acc_width,
                                         data.StructLayout({"base": index_width}), levels)
        self.compactor = Compactor(lanes, self.record.size, levels)
        super().__init__({
            "a": In(stream.Signature(pe_entry(index_width, value_width))),
            "b": Out(RowReadSignature(index_width, value_width)),
            "c": Out(stream.Signature(c_word(lanes, index_width, acc_width))),
        })

    def elaborate(self, platform):
        m = Module()
        L, cols, iw, vw, aw = (self.lanes, self.cols, self.index_width, self.value_width,
                               self.acc_width)
        lb, cb = exact_log2(L), exact_log2(cols)
        groups = cols // L

        # -- issue: a row of B requested per entry, the entry queued for its elements ----
        side = data.StructLayout({"value": vw, "row_end": 1, "empty": 1, "offset": iw})
        m.submodules.side = waiting = Queue(side, depth=self.inflight, latency=1)
        entry, request = self.a.payload, self.b.request
        m.d.comb += [
            request.payload.row.eq(entry.k),
            request.valid.eq(self.a.valid & waiting.i.ready & ~entry.empty),
            waiting.i.valid.eq(self.a.valid & (entry.empty | request.ready)),
            self.a.ready.eq(waiting.i.ready & (entry.empty | request.ready)),
            waiting.i.payload.value.eq(entry.value),
            waiting.i.payload.row_end.eq(entry.row_end),
            waiting.i.payload.empty.eq(entry.empty),
            waiting.i.payload.offset.eq(entry.offset),
        ]

        # -- S0: an element (or an empty row of A) taken, unless a row is closing -------
        busy = Signal()          # a row's last item is in the pipeline or draining
        head, element = waiting.o.payload, self.b.response.payload
        take = Signal()
        m.d.comb += [
            take.eq(waiting.o.valid & ~busy & (head.empty | self.b.response.valid)),
            self.b.response.ready.eq(waiting.o.valid & ~busy & ~head.empty),
            waiting.o.ready.eq(take & (head.empty | element.last)),
        ]
        ends = head.row_end & (head.empty | element.last)
        writes = ~head.empty & ~element.empty & (element.col[cb:] == head.offset[cb:])

        # -- S1: the accumulator's read ------------------------------------------------
        v1, w1, end1 = Signal(), Signal(), Signal()
        c1, a1, b1 = Signal(cb), Signal(signed(vw)), Signal(signed(vw))
        m.d.sync += [v1.eq(take), w1.eq(take & writes), end1.eq(take & ends),
                     c1.eq(element.col[:cb]), a1.eq(head.value), b1.eq(element.value)]
        with m.If(take & ends):
            m.d.sync += busy.eq(1)

        banks, reads, writers = [], [], []
        for x in range(L):
            bank = Memory(shape=aw, depth=groups, init=[])
            m.submodules[f"bank{x}"] = bank
            banks.append(bank)
            reads.append(bank.read_port(domain="sync"))
            writers.append(bank.write_port())

        # -- S2: the product; the read lane; occupancy and the bypass's hits -----------
        occ = Signal(cols)
        w2, end2, c2 = Signal(), Signal(), Signal(cb)
        p2 = Signal(signed(2 * vw))
        m.d.sync += [w2.eq(w1), end2.eq(end1), c2.eq(c1), p2.eq(a1 * b1)]
        w3, end3, c3 = Signal(), Signal(), Signal(cb)
        p3, old3 = Signal(signed(2 * vw)), Signal(signed(aw))
        first3, hit1, hit2 = Signal(), Signal(), Signal()
        w4, c4 = Signal(), Signal(cb)          # the write one cycle back
        lane = Array(r.data for r in reads)[c2[:lb]]
        m.d.sync += [w3.eq(w2), end3.eq(end2), c3.eq(c2), p3.eq(p2), old3.eq(lane),
                     first3.eq(~(Array(occ)[c2] | (w3 & (c3 == c2)))),
                     hit1.eq(w3 & (c3 == c2)), hit2.eq(w4 & (c4 == c2))]

        # -- S3: the sum, written back ---------------------------------------------------
        s4, s5 = Signal(signed(aw)), Signal(signed(aw))    # the sums written 1, 2 back
        old = Mux(first3, 0, Mux(hit1, s4, Mux(hit2, s5, old3)))
        total = Signal(signed(aw))
        m.d.comb += total.eq(old + p3)
        m.d.sync += [w4.eq(w3), c4.eq(c3), s4.eq(total), s5.eq(s4)]
        for x, writer in enumerate(writers):
            m.d.comb += [writer.addr.eq(c3[lb:]), writer.data.eq(total),
                         writer.en.eq(w3 & (c3[:lb] == x))]
        written = Signal(cols)
        m.d.comb += written.eq(Mux(w3, Const(1, cols) << c3, 0))

        # -- drain: the lowest occupied group a cycle, to zero detection ----------------
        draining = Signal()
        with m.If(end3):
            m.d.sync += draining.eq(1)
        group_any = Signal(groups)          # the occupied groups: ``occ``'s groups ORed, kept
        first, _ = lowest(m, group_any)     # beside it, so the pick starts at a register
        alone = Signal()                    # the group drained is the last
        m.d.comb += alone.eq(at_most_one(group_any))
        index = Cat(any_of([first[g] for g in range(groups) if g >> b & 1])
                    for b in range(exact_log2(groups)))
        mask = Cat(any_of([first[g] & occ[g * L + x] for g in range(groups)])
                   for x in range(L))
        cleared = Cat(first[g].replicate(L) for g in range(groups))

        vectors = self.nonzeros.vectors
        v_d, g_d, mask_d, last_d = Signal(), Signal(exact_log2(groups)), Signal(L), Signal()
        offset_d = Signal(iw - cb)
        advance = ~v_d | vectors.ready
        issue = draining & advance
        for r in reads:
            m.d.comb += [r.addr.eq(Mux(draining, index, c1[lb:])),
                         r.en.eq(~v_d | vectors.ready)]
        with m.If(issue):
            m.d.sync += [v_d.eq(1), g_d.eq(index), mask_d.eq(mask), last_d.eq(alone)]
            with m.If(alone):
                m.d.sync += draining.eq(0)
        with m.Elif(vectors.ready):
            m.d.sync += v_d.eq(0)
        with m.If(take):
            m.d.sync += offset_d.eq(head.offset[cb:])
        m.d.sync += occ.eq((occ | written) & ~Mux(issue, cleared, 0))
        touched = Cat(w3 & (c3[lb:] == g) for g in range(groups))
        m.d.sync += group_any.eq((group_any | touched) & ~Mux(issue, first, 0))
        with m.If(vectors.valid & vectors.ready & vectors.payload.last):
            m.d.sync += busy.eq(0)
        m.d.comb += [vectors.valid.eq(v_d), vectors.payload.last.eq(last_d),
                     vectors.payload.tag.base.eq(Cat(Const(0, lb), g_d, offset_d))]
        m.d.comb += [vectors.payload.values[x].eq(Mux(mask_d[x], reads[x].data, 0))
                     for x in range(L)]

        # -- compaction: each kept lane's record {col, value} ---------------------------
        m.submodules.nonzeros = nonzeros = self.nonzeros
        m.submodules.compactor = compactor = self.compactor
        found, packed = nonzeros.positions, compactor.vectors
        take_positions(m, found, packed)
        for x in range(L):
            record = data.View(self.record, packed.payload.records[x])
            m.d.comb += [record.col.eq(Cat(Const(x, lb), found.payload.tag.base[lb:])),
                         record.value.eq(found.payload.values[x])]
        words = compactor.words
        m.d.comb += [self.c.valid.eq(words.valid), words.ready.eq(self.c.ready),
                     self.c.payload.eq(words.payload)]
        return m


@block("gustavson")
class Gustavson(wiring.Component):
    """Gustavson SpGEMM (HYTE Section 2): C = A·B, integer values, exact; C's rows in
    order, compacted, one column tile of ``cols`` a job.

    A job names its column tile's ``offset`` (a multiple of ``cols``; its low bits are
    not read); its rows of A follow on ``a``, and the PEs compute C's columns ``offset
    .. offset + cols - 1`` of each row; B's elements outside them are read and dropped.
    The host cuts wider B into column tiles and joins C
    (:mod:`sparseforge.sw.gustavson`).

    Rows go to the PEs in turn (round-robin), not to the least loaded: C must leave in
    row order, and in turn the reorder is a pointer that moves to the next PE at each
    row's ``last`` word, with no row tags, no reorder buffer and no record of where
    each row went; a long row holds back the rows after it only as far as its PE's
    neighbours' output queues and request queues reach. Each PE (:class:`GustavsonPe`)
    has its own B port. The output leaves through a register slice.

    Parameters
    ----------
    pes : PEs.
    cols : columns of a tile, the accumulator's words (a power of two, at least
        ``2 * lanes``).
    lanes : columns drained a cycle and records a word of C.
    index_width : bits of a row and a column id (of A, B and C).
    value_width : bits of a value of A and of B; acc_width : of C (at least twice
        ``value_width``: a product fits).
    inflight : B rows a PE requests ahead of their elements: covers the B port's
        latency, and lets the deal run on past a PE busy with a long row (rows go in
        turn, so a PE that takes no entry holds the A stream for all: on GD97_b·GD97_bᵀ
        with 4 PEs and no stalls, 8 took 16% more cycles than the model's, 32 3%).
    levels : adder and multiplexer levels between the compactor's pipeline registers.

    Members
    -------
    job : In(stream(:func:`~sparseforge.sw.wire.gustavson_job`))
        One per job, taken when the previous job's last entry has been.
    a : In(stream(:func:`~sparseforge.sw.wire.gustavson_a_entry`))
        The job's rows of A, ``last`` on its final entry.
    b : Out(RowReadSignature) x pes
        PE p's reads of B's rows (``b__<p>__request``, ``b__<p>__response``).
    c : Out(stream(:func:`c_word`))
        Each row of C, every job's rows in order: ``{col, value}`` in column order,
        ``lanes`` a word, the row's final word with ``last`` (and its ``count``).

    Clock: designed for 100 MHz (the synthesis report gives the figure). The product is
    registered (S2) before the add, and the bank's read data is registered (S2) before its
    lane is chosen, so S3 holds only the three-way bypass multiplexer and the
    ``acc_width`` adder before the bank write. The critical path as placed is the drain's
    pick instead: the occupied groups (a register kept beside the bitmap), their lowest
    set one found (a carry chain over ``cols / lanes``), encoded to the banks' read
    address, and the word read from the banks' distributed RAM into its register. A wider
    tile lengthens the pick's chain: register the pick (one cycle more per row) where
    that path fails.
    """

    PARAMS = (PES, COLS, LANES, INDEX, VALUE, ACC, INFLIGHT, LEVELS)
    REPORT = ({"pes": 2, "cols": 64, "lanes": 4, "index_width": 16, "value_width": 16,
               "acc_width": 32, "inflight": 32},)

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.pes, self.cols, self.lanes = v["pes"], v["cols"], v["lanes"]
        self.index_width, self.value_width = v["index_width"], v["value_width"]
        self.acc_width, self.inflight, self.levels = v["acc_width"], v["inflight"], v["levels"]
        if self.cols < 2 * self.lanes:
            raise ParameterError(f"parameter cols={self.cols}: expected at least 2 x "
                                 f"lanes = {2 * self.lanes}")
        if self.cols >= 1 << self.index_width:
            raise ParameterError(f"parameter cols={self.cols}: expected fewer than "
                                 f"2**index_width = {1 << self.index_width}")
        iw, vw = self.index_width, self.value_width
        super().__init__({
            "job": In(stream.Signature(struct(wire.gustavson_job(iw)))),
            "a": In(stream.Signature(struct(wire.gustavson_a_entry(iw, vw)))),
            "b": Out(RowReadSignature(iw, vw)).array(self.pes),
            "c": Out(stream.Signature(c_word(self.lanes, iw, self.acc_width))),
        })

    def elaborate(self, platform):
        m = Module()
        n, iw, vw = self.pes, self.index_width, self.value_width
        pes = []
        for p in range(n):
            pe = GustavsonPe(self.cols, self.lanes, iw, vw, self.acc_width, self.inflight,
                             self.levels)
            m.submodules[f"pe{p}"] = pe
            pes.append(pe)
            wiring.connect(m, pe.b, wiring.flipped(self.b[p]))

        # -- deal: a job's offset loaded, its rows to the PEs in turn --------------------
        open_, offset, deal = Signal(), Signal(iw), Signal(range(n))
        inputs = []
        for p, pe in enumerate(pes):
            m.submodules[f"in{p}"] = queue = Queue(pe_entry(iw, vw), depth=2, latency=1)
            wiring.connect(m, queue.o, pe.a)
            inputs.append(queue.i)
        entry = self.a.payload
        m.d.comb += self.job.ready.eq(~open_)
        with m.If(self.job.valid & self.job.ready):
            m.d.sync += [open_.eq(1), offset.eq(self.job.payload.offset)]
        m.d.comb += self.a.ready.eq(open_ & Array(q.ready for q in inputs)[deal])
        for p, queue in enumerate(inputs):
            m.d.comb += [queue.valid.eq(self.a.valid & open_ & (deal == p)),
                         queue.payload.k.eq(entry.k), queue.payload.value.eq(entry.value),
                         queue.payload.row_end.eq(entry.row_end),
                         queue.payload.empty.eq(entry.empty), queue.payload.offset.eq(offset)]
        with m.If(self.a.valid & self.a.ready):
            with m.If(entry.row_end):
                m.d.sync += deal.eq(Mux(deal == n - 1, 0, deal + 1))
            with m.If(entry.last):
                m.d.sync += open_.eq(0)

        # -- reorder: C's rows taken from the PEs in the same turn -----------------------
        m.submodules.out = out = Skid(c_word(self.lanes, iw, self.acc_width))
        turn = Signal(range(n))
        outputs = []
        for p, pe in enumerate(pes):
            m.submodules[f"out{p}"] = queue = Queue(pe.c.payload.shape(), depth=OUT_QUEUE,
                                                    latency=1)
            wiring.connect(m, pe.c, queue.i)
            outputs.append(queue.o)
        chosen = Array(outputs)[turn]
        m.d.comb += [out.i.valid.eq(chosen.valid), out.i.payload.eq(chosen.payload)]
        m.d.comb += [o.ready.eq(out.i.ready & (turn == p)) for p, o in enumerate(outputs)]
        with m.If(out.i.valid & out.i.ready & chosen.payload.last):
            m.d.sync += turn.eq(Mux(turn == n - 1, 0, turn + 1))
        wiring.connect(m, out.o, wiring.flipped(self.c))
        return m
