# amaranth: UnusedElaboratable=no
"""The Gustavson SpGEMM engine attached to memory: ``accel``'s engine for C = A·B.

The engine (:class:`~sparseforge.hw.gustavson.Gustavson`) computes rows of C from a
stream of A's rows and reads of B's rows by id; here both come from the CSRs the user
stored, through :class:`~sparseforge.hw.csr_reader.CsrRowReader` s, and C goes back to
memory as the engine's words and its rows' lengths:

- the **sequencer** walks the tile list (one :func:`~sparseforge.sw.wire.gustavson_job`
  word a column tile of B, :mod:`sparseforge.sw.accel_spgemm`): each word is the
  engine's job, and A's rows ``0 .. rows - 1`` are requested again for it;
- **A's reader** answers them as the engine's A stream (a row's ``last`` its
  ``row_end``, the job's final row's its ``last``);
- **B's readers**, one a PE, serve the PEs' row reads: a reader of its own (its row
  pointer, column id and value ports) rather than one shared, so the PEs never wait on
  each other's rows and no arbiter sits between them and the master, at three of the
  master's in-order ports a PE;
- the **writer** writes every word of C as the engine emits it (``lanes`` records,
  ``count``, ``last``), one after another from ``words_base``, and at each row's
  ``last`` word the row's length (its records' count) at ``lengths_base``, a word a row
  of C a tile. Lengths, not row pointers: a length is what the row's own words add up
  to, needing no sum carried across rows and tiles, and the column tiles' rows of C
  interleave in C's final CSR anyway, so the host merges the tiles and takes one prefix
  sum over the lengths for C's ``indptr``.

``stats`` carries one item when the run's last row length has been taken by its write
port (:class:`~sparseforge.hw.accel_control.RunStatus` then waits for every write to
land).

**With HYTE's buffer** (``buffer`` words, HYTE Sections 6.2-6.4) B's tiles are held on
chip: a :class:`~.hyte_tiling.HyteTiling` walks the job the host wrote into the
registers (its static schedule) and tunes B's shape from the counts its accessor takes,
fetching each tile's segments of B from memory at the positions kept across tiles; a
:class:`~..hyte_rows.HyteRows` serves the engine's reads of B's rows from the accessor
(the bypassed rest of a row from memory). One PE: the accessor has one read port, and an
arbiter in front of it would only share it. The tile list gives way to the controller's
commands: per command the sequencer writes it to the tile log (the host reads C's rows
by it) and runs the engine's job over the tile's rows of A, its column offset the tile's
j. B's tile stays in the accessor across the commands that keep it (the same k and j
bounds: only A's tile moved, :func:`~sparseforge.sw.hyte_schedule.hyte_fetches`), which
neither fetch nor count it and whose jobs read the held segments: the reuse HYTE's
inter-tile order is chosen for. A command that does not keep it has the last tile evicted (its
job's rows written) before its own is fetched, so a fetch begins on an empty accessor
and no read meets another tile's segments; the run's last tile is evicted at its end.
A's rows have
segment positions of their own (Section 6.2's, for A), on chip: the :class:`Cursors`
keep, for each row of the last job's tile (up to ``cursors`` of them, a build
parameter), where its elements past that
job's k tile begin, so a job of the same rows whose k tile begins where the last ended
(k inner to i in the order, :func:`~sparseforge.sw.accel_spgemm.a_cursors`) reads its
rows from there to their ends, their pointers not read. Any other job (the first k tile
of a sweep; every job where i moves inside k, its tile of A new each time) reads its
rows whole. A :class:`KRange` keeps the elements in the tile's k range:
C's rows are partial sums over k's tiles, written as they are and summed by the host as
it reads C (the merging HYTE prices; A and C are not held in the buffer here); a partial
row of no records is not written, and each written row's length goes with its id
(:func:`~sparseforge.sw.wire.spgemm_row_length`). The
positions unit reads B's column ids, row pointers and the kept entries through one port,
:data:`TAGS` in its address's top two bits splitting it (:class:`Route`); its writes of
the kept entries go out posted, and the row server reads a bypassed row's entry back
(the positions unit wrote it before sending the row's segment): the master orders those
reads after those writes (:attr:`Spgemm.after`, the master's
:class:`~..axi_master.ReadFence`), since its write path queues a write before the bus
and AXI orders no read after a write. An entry read whose column bounds are not the
tile's is the run's ``fault``, its status's error.

Why the buffer can be slower than B's rows read from memory here (the figures:
``sparseforge bench accel --spgemm``, whose ``k untiled`` run reads A and writes C once,
as the build without a buffer does): a tile's fetch begins only once the last tile is
evicted, so the job's first reads of B wait for its first segments' round trips (after
them the fetch keeps pace: the positions unit works rows ahead, a fetch costing about
its reads, and the words stream into the accessor back to back); a row past the
buffer's capacity bypasses it, so its words are read twice, by the fetch (which counts
them) and again, after its kept entry, by the row server; and the row server serves B's
rows back to back but pays the accessor's latency once a row (a row's end is known only
from the answer that ends it, and B's rows here hold a few elements), the bypassed
rows' round trips overlapping the next rows'. With a buffer that holds B whole, the
``k untiled`` run beats the build without one.
On top, every k tile streams its rows of A to their ends through the
:class:`KRange` filter (whole for the first of a sweep, from their cursors for the
others: a row's end is known, the end of its segment in the tile is not until its
element past it is read), the engine waiting for the elements it keeps while it drops
the rest, and writes C's partial rows: so small k tiles, which keep B's tile within a
small buffer, cost more in A and C than they save in B.
"""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ...core.errors import ParameterError
from ...sw import wire
from ...sw.hyte_schedule import A_CURSORS
from ...sw.wire import HyteMode
from ..csr_reader import CsrRowReader
from ..gustavson import Gustavson
from ..hyte_controller import hyte_config_layout, hyte_tile_layout
from ..hyte_rows import HyteRows
from ..interfaces import MemoryWritePortSignature, struct
from ..stream_units import MemoryPortSignature, Queue, Zip, port_through
from .hyte_tiling import HyteTiling

COUNT_WIDTH = 16
"""Bits of the HYTE accessor's segment lengths and counts, and of its ``bufsize``."""

DI, DJ, DK = (wire.HYTE_DIMS.index(d) for d in "ijk")
TAGS = {"col": 0, "ptr": 1, "kept": 2}
"""The arrays HYTE's positions unit reads through its one port, by the top two bits of
its address: B's column ids (so the tile fetcher's reads, at the same ``cols_base``,
need no tag), B's row pointers, the kept entries."""


def spgemm_config_layout(addr_width, iw, buffer=0):
    """What the registers give the engine: the tile list's words, A's rows, and where C's
    words and row lengths go (word addresses); with HYTE's buffer of ``buffer`` words,
    where the kept entries and the tile log lie, the tiling job and B's capacity."""
    hyte = {"kept_base": addr_width, "log_base": addr_width,
            "tiling": hyte_config_layout(iw, COUNT_WIDTH),
            "capacity": range(buffer + 1)} if buffer else {}
    return data.StructLayout({"tiles_count": addr_width,
                              "rows": iw + 1, "words_base": addr_width,
                              "lengths_base": addr_width, **hyte})


class KRange(wiring.Component):
    """A's rows with only their elements of columns in ``[lo, hi)``: a tile's k range.

    An element is held back until the next one of its row says whether it was the
    row's last kept; a row left with none answers one ``empty`` element. One element a
    cycle, and a cycle more where a row's last element was kept.

    Members
    -------
    i, o : In / Out(stream(:func:`~sparseforge.sw.wire.row_element`)), rows as a
        :class:`~..interfaces.RowReadSignature` answers them.
    lo, hi : In, held while rows pass.
    """

    def __init__(self, iw, vw):
        layout = struct(wire.row_element(iw, vw))
        super().__init__({"i": In(stream.Signature(layout)),
                          "o": Out(stream.Signature(layout)),
                          "lo": In(iw), "hi": In(iw + 1)})

    def elaborate(self, platform):
        m = Module()
        x, o = self.i.payload, self.o
        keep = ~x.empty & (x.col >= self.lo) & (x.col < self.hi)
        held, have, end = Signal.like(x), Signal(), Signal()
        m.d.comb += [o.payload.col.eq(held.col), o.payload.value.eq(held.value)]
        with m.If(have & end):                      # the held element ends its row
            m.d.comb += [o.valid.eq(1), o.payload.last.eq(1)]
            with m.If(o.ready):
                m.d.sync += have.eq(0)
        with m.Elif(self.i.valid & keep):           # the held one is not the last
            take = ~have | o.ready
            m.d.comb += [o.valid.eq(have), self.i.ready.eq(take)]
            with m.If(take):
                m.d.sync += [held.eq(x), have.eq(1), end.eq(x.last)]
        with m.Elif(self.i.valid & x.last):         # dropped, ending the row
            m.d.comb += [o.valid.eq(1), o.payload.last.eq(1), o.payload.empty.eq(~have),
                         self.i.ready.eq(o.ready)]
            with m.If(~have):
                m.d.comb += [o.payload.col.eq(0), o.payload.value.eq(0)]
            with m.If(o.ready):
                m.d.sync += have.eq(0)
        with m.Else():
            m.d.comb += self.i.ready.eq(1)          # dropped
        return m


class Cursors(wiring.Component):
    """A's segment positions (HYTE Section 6.2) for the rows of A's tile, on chip: where
    each row's next k tile begins, so a k tile reads its rows of A from there.

    It sits on A's reader's row-pointer port (``up``; ``down`` the memory's). Each job
    reads its rows in order, two pointers a row. Without ``use`` the reads go to memory,
    and their answers are kept: row ``n`` of the job's ``lo`` and ``hi``. With ``use``
    they are answered here, a row's first with its ``lo`` plus its ``count`` (where the
    last job's k tile ended in it), its second with its ``hi``, and the first is kept as
    the row's new ``lo``. Either way the row's ``count`` becomes the number of its
    elements the reader answers (``seen``) with columns below ``end`` (the job's k tile's
    end). So a job whose rows are the last job's and whose k tile begins where the last
    ended may ``use`` the cursors: its rows are read from their first element in its k
    tile to their ends, their pointers not read. Only the first ``entries`` rows of a job
    are kept.

    Members
    -------
    up : In(MemoryPortSignature(addr_width, addr_width)); down : Out(the same).
    use, end : In, held for a job; start : In(1), a pulse before its first read.
    seen : In(1), an element of the job's rows answered this cycle, its ``col``, ``last``
        and ``empty`` (:func:`~sparseforge.sw.wire.row_element`) In too.

    Latency and throughput: without ``use``, none (the port passes through); with it, a
    pointer every two cycles (the memory's synchronous read, then the answer).
    """

    def __init__(self, entries, addr_width, iw):
        self.entries, self.addr_width, self.iw = entries, addr_width, iw
        port = MemoryPortSignature(addr_width, addr_width)
        super().__init__({"up": In(port), "down": Out(port), "use": In(1), "end": In(iw + 1),
                          "start": In(1), "seen": In(1), "col": In(iw), "last": In(1),
                          "empty": In(1)})

    def elaborate(self, platform):
        m = Module()
        A, N = self.addr_width, self.entries
        up, down = self.up, self.down
        m.submodules.lo = lo = Memory(shape=A, depth=N, init=[])
        m.submodules.hi = hi = Memory(shape=A, depth=N, init=[])
        m.submodules.count = count = Memory(shape=self.iw + 1, depth=N, init=[])
        lo_w, hi_w, count_w = lo.write_port(), hi.write_port(), count.write_port()
        lo_r, hi_r, count_r = lo.read_port(), hi.read_port(), count.read_port()
        # Rows of the job answered (pointers) and ended (elements), and the second pointer.
        asked, ended = Signal(self.iw + 1), Signal(self.iw + 1)
        second, answering, tally = Signal(), Signal(), Signal(self.iw + 1)
        cursor = lo_r.data + count_r.data
        taken = up.response.valid & up.response.ready       # a pointer answered
        m.d.comb += [lo_r.addr.eq(asked), hi_r.addr.eq(asked), count_r.addr.eq(asked),
                     lo_w.addr.eq(asked), hi_w.addr.eq(asked), count_w.addr.eq(ended)]
        with m.If(~self.use):
            m.d.comb += port_through(up, down)
            m.d.comb += [lo_w.data.eq(down.response.payload), hi_w.data.eq(down.response.payload),
                         lo_w.en.eq(taken & ~second & (asked < N)),
                         hi_w.en.eq(taken & second & (asked < N))]
        with m.Else():
            # A read taken, then answered from the memories' outputs for row ``asked``.
            m.d.comb += [up.request.ready.eq(~answering),
                         up.response.valid.eq(answering),
                         up.response.payload.eq(Mux(second, hi_r.data, cursor))]
            with m.If(up.request.valid & up.request.ready):
                m.d.sync += answering.eq(1)
            m.d.comb += [lo_w.data.eq(cursor), lo_w.en.eq(taken & ~second)]
            with m.If(taken):
                m.d.sync += answering.eq(0)
        with m.If(taken):
            m.d.sync += [second.eq(~second), asked.eq(asked + second)]
        # Each row's elements below the k tile's end, counted as the reader answers them.
        below = self.seen & ~self.empty & (self.col < self.end)
        m.d.comb += [count_w.data.eq(tally + below),
                     count_w.en.eq(self.seen & self.last & (ended < N))]
        with m.If(self.seen):
            m.d.sync += tally.eq(Mux(self.last, 0, tally + below))
            with m.If(self.last):
                m.d.sync += ended.eq(ended + 1)
        with m.If(self.start):
            m.d.sync += [asked.eq(0), ended.eq(0), second.eq(0), tally.eq(0),
                         answering.eq(0)]
        return m


class Route(wiring.Component):
    """One in-order read port onto ``len(widths)`` ports by the top two bits of its
    address (the rest the address there), each answer zero-extended to ``width``; the
    ports' numbers wait in a queue so the answers come back in order.

    Members
    -------
    port : In(MemoryPortSignature(addr_width, width))
    parts : Out(MemoryPortSignature(addr_width, w)) for each of ``widths``
        (``part(n)``), their addresses' top two bits 0.
    """

    def __init__(self, addr_width, width, widths):
        self.addr_width, self.count = addr_width, len(widths)
        super().__init__({"port": In(MemoryPortSignature(addr_width, width)),
                          **{f"part{n}": Out(MemoryPortSignature(addr_width, w))
                             for n, w in enumerate(widths)}})

    def part(self, n):
        return getattr(self, f"part{n}")

    def elaborate(self, platform):
        m = Module()
        A, request, response = self.addr_width, self.port.request, self.port.response
        parts = [self.part(n) for n in range(self.count)]
        m.submodules.order = order = Queue(2, depth=16, latency=1)
        tag, head = request.payload[A - 2:], order.o.payload
        ready = Array(p.request.ready for p in parts)[tag]
        m.d.comb += [order.i.payload.eq(tag), order.i.valid.eq(request.valid & ready),
                     request.ready.eq(order.i.ready & ready),
                     response.valid.eq(order.o.valid
                                       & Array(p.response.valid for p in parts)[head]),
                     response.payload.eq(Array(p.response.payload for p in parts)[head]),
                     order.o.ready.eq(response.valid & response.ready)]
        for n, p in enumerate(parts):
            m.d.comb += [p.request.payload.eq(request.payload[:A - 2]),
                         p.request.valid.eq(request.valid & order.i.ready & (tag == n)),
                         p.response.ready.eq(order.o.valid & (head == n) & response.ready)]
        return m


class Spgemm(wiring.Component):
    """A Gustavson engine of ``pes`` PEs (its other parameters: ``cols``, ``lanes``,
    ``inflight``, ``index_width``, ``value_width``, ``acc_width``) reading and writing
    memory at word addresses of ``addr_width`` bits; with ``buffer`` (words, a power of
    two; 0: none) B's tiles held in HYTE's accessor of that many words, one PE, and A's
    segment positions kept for the first ``cursors`` rows of a tile (:class:`Cursors`).

    Members
    -------
    config : In(:func:`spgemm_config_layout`), held while a run goes.
    start : In(1), a pulse starting a run; ``busy`` : Out(1), until its last job is sent.
    fault : Out(1), a pulse where a kept entry read is not the tile's (HYTE's buffer).
    stats : Out(stream(1)), one item after the run's last write is taken.
    tiles, a_ptr, a_col, a_value, b_ptr0, b_col0, b_value0, ... : the in-order read
        ports (Out(MemoryPortSignature)), each an array of the run's from index 0;
        :attr:`reads` lists them in order as ``(member, word width, the register of the
        array's base without its _base)``.
    c_words, c_lengths (with HYTE also kept_writes, tile_log) :
        Out(MemoryWritePortSignature), at word addresses; :attr:`writes` lists them.

    :attr:`after` names the read ports whose reads must see a write port's earlier
    writes, ``{read: write}`` (with HYTE: the kept entries', read back by the row
    server), for the master to order (its ``after``).
    """

    def __init__(self, pes, addr_width, buffer=0, cursors=A_CURSORS, **engine):
        if buffer and pes != 1:
            raise ParameterError(f"pes={pes}: HYTE's accessor (buffer={buffer}) serves "
                                 "one PE's reads of B")
        if buffer and engine.get("index_width", 16) > COUNT_WIDTH:
            raise ParameterError(f"index_width={engine['index_width']}: with HYTE's buffer a "
                                 f"tile's rows are counted in {COUNT_WIDTH} bits")
        self.engine = Gustavson(pes=pes, **engine)
        e, A = self.engine, addr_width
        iw, vw = e.index_width, e.value_width
        self.addr_width, self.buffer, self.cursor_rows = A, buffer, cursors
        self.word = self.engine.c.payload.shape()        # a word of C
        fields = {"col": iw, "value": vw}
        self.a_reader = CsrRowReader(index_width=iw, value_width=vw, addr_width=A,
                                     inflight=e.inflight)
        arrays = (("ptr", "rowptr", A), ("col", "colid", iw), ("value", "values", vw))
        self.reads = [(f"a_{name}", w, f"a_{array}") for name, array, w in arrays]
        length = wire.width(wire.spgemm_row_length(iw)) if buffer else iw
        self.writes = [("c_words", self.word.size), ("c_lengths", length)]
        self.after = {}
        if buffer:
            self._hyte(fields)
        else:
            self.b_readers = [CsrRowReader(index_width=iw, value_width=vw, addr_width=A,
                                           inflight=e.inflight) for _ in range(pes)]
            self.zips = [Zip(A, fields) for _ in range(pes + 1)]
            self.reads.insert(0, ("tiles", wire.width(wire.gustavson_job(iw)), "tiles"))
            self.reads += [(f"b_{name}{p}", w, f"b_{array}") for p in range(pes)
                           for name, array, w in arrays]
        super().__init__({
            "config": In(spgemm_config_layout(A, iw, buffer)),
            "start": In(1), "busy": Out(1), "fault": Out(1),
            "stats": Out(stream.Signature(1)),
            **{name: Out(MemoryPortSignature(A, w)) for name, w, _ in self.reads},
            **{name: Out(MemoryWritePortSignature(A, w)) for name, w in self.writes},
        })

    def _hyte(self, fields):
        """HYTE's units: the tiling loop, B's rows served from its accessor, A's k
        filter, the positions unit's port routed to its three arrays; their ports."""
        e, A = self.engine, self.addr_width
        iw, vw = e.index_width, e.value_width
        self.tiling = HyteTiling(dim_width=iw, count_width=COUNT_WIDTH, depth=self.buffer,
                                 width=iw + vw, pos_width=A, addr_width=A,
                                 inflight=min(e.inflight, 64), log_most_tj=exact_log2(e.cols))
        self.rows_server = HyteRows(index_width=iw, value_width=vw, count_width=COUNT_WIDTH,
                                    pos_width=A, addr_width=A, inflight=e.inflight)
        self.krange = KRange(iw, vw)
        self.cursors = Cursors(self.cursor_rows, A, iw)
        kept = wire.width(wire.hyte_kept(iw, A))
        self.route = Route(A, kept, [iw, A, kept])         # as TAGS numbers them
        self.zips = [Zip(A, fields) for _ in range(3)]     # A's, the fetcher's, B's rows'
        self.reads += [("pos_col", iw, "b_colid"), ("pos_ptr", A, "b_rowptr"),
                       ("pos_kept", kept, "b_kept"),
                       ("fill_col", iw, "b_colid"), ("fill_value", vw, "b_values"),
                       ("kept", kept, "b_kept"),
                       ("b_col", iw, "b_colid"), ("b_value", vw, "b_values")]
        self.writes += [("kept_writes", kept),
                        ("tile_log", hyte_tile_layout(iw).size)]
        self.after = {"kept": "kept_writes"}

    def ports(self):
        """The in-order read ports, in :attr:`reads` order."""
        return [getattr(self, name) for name, _, _ in self.reads]

    def write_ports(self):
        """The write ports, in :attr:`writes` order."""
        return [getattr(self, name) for name, _ in self.writes]

    def _zip(self, m, k, port, prefix, suffix=""):
        """Zip ``k`` serving ``port``, its parts the ports ``{prefix}col{suffix}`` and
        ``{prefix}value{suffix}``."""
        m.submodules[f"zip{k}"] = zip_ = self.zips[k]
        wiring.connect(m, port, zip_.port)
        for field in ("col", "value"):
            wiring.connect(m, zip_.part(field),
                           wiring.flipped(getattr(self, f"{prefix}{field}{suffix}")))

    def elaborate(self, platform):
        m = Module()
        engine, cfg = self.engine, self.config
        iw = engine.index_width
        m.submodules.engine = engine
        m.submodules.reader0 = self.a_reader
        if self.buffer:
            m.submodules.cursors = cursors = self.cursors
            wiring.connect(m, self.a_reader.ptr, cursors.up)
            wiring.connect(m, cursors.down, wiring.flipped(self.a_ptr))
        else:
            wiring.connect(m, self.a_reader.ptr, wiring.flipped(self.a_ptr))
        self._zip(m, 0, self.a_reader.elements, "a_")
        begin = self.start & ~self.busy
        rows = Signal(iw + 1)           # the job's rows of A
        first = Signal(iw)              # the job's first row of A (HYTE's buffer)
        job_end = Signal()              # the job's last row taken
        answers = self.a_reader.rows.response
        if self.buffer:
            jobs_done = self._elaborate_hyte(m, begin, rows, first, job_end)
            answers = self.krange.o
        else:
            jobs_done = self._elaborate_tiles(m, begin, rows, job_end)

        # -- A's answers as the engine's A stream ------------------------------------------
        a = engine.a
        a_row = Signal(iw + 1)
        final = a_row + 1 == rows
        m.d.comb += [a.valid.eq(answers.valid), answers.ready.eq(a.ready),
                     a.payload.k.eq(answers.payload.col),
                     a.payload.value.eq(answers.payload.value),
                     a.payload.row_end.eq(answers.payload.last),
                     a.payload.empty.eq(answers.payload.empty),
                     a.payload.last.eq(answers.payload.last & final)]
        with m.If(a.valid & a.ready & answers.payload.last):
            m.d.sync += a_row.eq(Mux(final, 0, a_row + 1))

        # -- the writer: C's words, and each row's length through a queue ------------------
        # (the queue keeps the two write ports' valids apart: the master's round robin
        # grants by valid, so a valid that waited on the other port's ready would loop)
        c, words = engine.c, self.c_words.request
        m.submodules.lengths = lengths = Queue(
            self.c_lengths.request.payload.shape(), depth=2, latency=1)
        wiring.connect(m, lengths.o, wiring.flipped(self.c_lengths.request))
        n, total, c_row = Signal(self.addr_width), Signal(iw), Signal(self.addr_width)
        tile_row, finished = Signal(iw + 1), Signal()
        end, length = c.payload.last, Signal(iw)
        # With HYTE's buffer a row's length goes with its id, and an empty partial row
        # (its one word, of no records) is not written at all.
        skip = Signal()
        if self.buffer:
            entry = data.View(struct(wire.spgemm_row_length(iw)), lengths.i.payload.data)
            m.d.comb += [skip.eq(end & (length == 0)), entry.length.eq(length),
                         entry.row.eq(first + tile_row)]
        else:
            m.d.comb += lengths.i.payload.data.eq(length)
        m.d.comb += [length.eq(total + c.payload.count),
                     words.payload.addr.eq(cfg.words_base + n), words.payload.data.eq(c.payload),
                     words.valid.eq(c.valid & ~skip & (~end | lengths.i.ready)),
                     lengths.i.payload.addr.eq(cfg.lengths_base + c_row),
                     lengths.i.valid.eq(c.valid & ~skip & end & words.ready),
                     c.ready.eq(skip | (words.ready & (~end | lengths.i.ready)))]
        with m.If(c.valid & c.ready):
            m.d.sync += [n.eq(n + ~skip), total.eq(Mux(end, 0, length))]
            with m.If(end):
                m.d.sync += [c_row.eq(c_row + ~skip), tile_row.eq(tile_row + 1)]
                with m.If(tile_row + 1 == rows):
                    m.d.sync += tile_row.eq(0)
                    m.d.comb += job_end.eq(1)
        with m.If(jobs_done):
            m.d.sync += finished.eq(1)
        m.d.comb += self.stats.valid.eq(finished & ~lengths.o.valid)
        with m.If(self.stats.valid & self.stats.ready):
            m.d.sync += finished.eq(0)
        with m.If(begin):
            m.d.sync += [a_row.eq(0), n.eq(0), total.eq(0), c_row.eq(0), tile_row.eq(0),
                         finished.eq(0)]
        return m

    def _elaborate_tiles(self, m, begin, rows, job_end):
        """B's column tiles from the tile list, B's rows from memory: the sequencer
        requests A's rows again for each (``rows`` driven here). Returns the run's end,
        the ``job_end`` of its last tile."""
        engine, cfg, A = self.engine, self.config, self.addr_width
        for p, reader in enumerate(self.b_readers):
            m.submodules[f"reader{p + 1}"] = reader
            wiring.connect(m, reader.ptr, wiring.flipped(getattr(self, f"b_ptr{p}")))
            self._zip(m, p + 1, reader.elements, "b_", p)
            wiring.connect(m, engine.b[p], reader.rows)
        m.d.comb += rows.eq(cfg.rows)

        # -- the sequencer: a tile word, the engine's job, A's rows again ------------------
        addr, left, row = Signal(A), Signal(A), Signal(engine.index_width + 1)
        tiles, job, ask = self.tiles, engine.job, self.a_reader.rows.request
        m.d.comb += [tiles.request.payload.eq(addr), job.payload.eq(tiles.response.payload),
                     ask.payload.row.eq(row)]
        with m.FSM():
            with m.State("idle"), m.If(begin & (cfg.tiles_count != 0) & (cfg.rows != 0)):
                m.d.sync += [addr.eq(0), left.eq(cfg.tiles_count)]
                m.next = "read"
            with m.State("read"):
                m.d.comb += [self.busy.eq(1), tiles.request.valid.eq(1)]
                with m.If(tiles.request.ready):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    m.next = "job"
            with m.State("job"):
                m.d.comb += [self.busy.eq(1), job.valid.eq(tiles.response.valid),
                             tiles.response.ready.eq(job.ready)]
                with m.If(job.valid & job.ready):
                    m.d.sync += row.eq(0)
                    m.next = "rows"
            with m.State("rows"):
                m.d.comb += [self.busy.eq(1), ask.valid.eq(1)]
                with m.If(ask.ready):
                    m.d.sync += row.eq(row + 1)
                    with m.If((row + 1 == cfg.rows) & (left == 0)):
                        m.next = "idle"
                    with m.Elif(row + 1 == cfg.rows):
                        m.next = "read"

        tiles_done = Signal(A)
        with m.If(job_end):
            m.d.sync += tiles_done.eq(tiles_done + 1)
        with m.If(begin):
            m.d.sync += tiles_done.eq(0)
        return job_end & (tiles_done + 1 == cfg.tiles_count)

    def _elaborate_hyte(self, m, begin, rows, first, job_end):
        """B's tiles from HYTE's tiling loop (``rows`` and ``first`` driven here): the
        sequencer sends the job to the controller; per tile command it logs the command
        and runs the engine's job over the tile's rows of A (their elements in its k
        range, from A's cursors where they hold its rows) with B's rows served from the
        accessor. A command that does not keep B's tile (``keep``) has the last one
        evicted first (its job's rows were taken), so its fetch and its reads begin on
        an empty accessor; after the run's last job the tile is evicted. Returns the
        run's end, the ``job_end`` of the command that is last along every dimension."""
        engine, cfg, A = self.engine, self.config, self.addr_width
        tiling, server, krange, route = self.tiling, self.rows_server, self.krange, self.route
        cmd = Signal(hyte_tile_layout(engine.index_width))     # the tile being computed
        for name in ("tiling", "rows_server", "krange", "route"):
            m.submodules[name] = getattr(self, name)
        # Memory: the positions unit's port onto B's column ids, row pointers and kept
        # entries; the fetcher's and the row server's elements through zips.
        wiring.connect(m, tiling.memory, route.port)
        for name, tag in TAGS.items():
            wiring.connect(m, route.part(tag), wiring.flipped(getattr(self, f"pos_{name}")))
        self._zip(m, 1, tiling.columns, "fill_")
        self._zip(m, 2, server.elements, "b_")
        # The row server reads a kept entry's positions, its low bits; its bounds must be
        # this tile's (the entry the positions unit wrote for it, landed before the read),
        # else the run's fault.
        asked, answer = server.kept, self.kept
        entry = data.View(struct(wire.hyte_kept(engine.index_width, A)),
                          answer.response.payload)
        stale = (entry.bj != cmd[DJ].begin) | (entry.ej != cmd[DJ].begin + cmd[DJ].t)
        m.d.comb += self.fault.eq(answer.response.valid & asked.response.ready & stale)
        m.d.comb += port_through(asked, answer)
        kept = self.kept_writes.request
        wrote = tiling.writes.request
        m.d.comb += [kept.payload.addr.eq(cfg.kept_base + wrote.payload.addr[:A - 2]),
                     kept.payload.data.eq(wrote.payload.data), kept.valid.eq(wrote.valid),
                     wrote.ready.eq(kept.ready)]
        wiring.connect(m, engine.b[0], server.rows)
        wiring.connect(m, server.read, tiling.read)
        wiring.connect(m, tiling.read_data, server.read_data)
        wiring.connect(m, self.a_reader.rows.response, krange.i)
        a = krange.i
        m.d.comb += [self.cursors.seen.eq(a.valid & a.ready),
                     *(getattr(self.cursors, f).eq(a.payload[f]) for f in ("col", "last",
                                                                            "empty"))]
        shift = A - 2
        m.d.comb += [tiling.mode.eq(HyteMode.BUFFERING), tiling.capacity.eq(cfg.capacity),
                     tiling.ptr_base.eq(TAGS["ptr"] << shift),
                     tiling.cols_base.eq(TAGS["col"] << shift),
                     tiling.kept_base.eq(TAGS["kept"] << shift),
                     server.kept_base.eq(0), server.elements_base.eq(0)]

        # -- the sequencer ------------------------------------------------------------------
        dims = [cfg.tiling.i, cfg.tiling.j, cfg.tiling.k]
        left = [dims[d] - cmd[d].begin for d in range(3)]     # to the dimension's end
        extent = [Mux(cmd[d].t < left[d], cmd[d].t, left[d]) for d in range(3)]
        final = Signal()                # the command is last along every dimension
        row, logged, job_done = Signal(engine.index_width + 1), Signal(A), Signal()
        log, job, evict = self.tile_log.request, engine.job, tiling.evict
        ask = self.a_reader.rows.request
        m.d.comb += [rows.eq(extent[DI]), first.eq(cmd[DI].begin),
                     log.payload.addr.eq(cfg.log_base + logged), log.payload.data.eq(cmd),
                     job.payload.offset.eq(cmd[DJ].begin), ask.payload.row.eq(row),
                     evict.payload.eq(extent[DK]), server.k0.eq(cmd[DK].begin),
                     krange.lo.eq(cmd[DK].begin), krange.hi.eq(cmd[DK].begin + extent[DK]),
                     self.cursors.end.eq(krange.hi), tiling.config.payload.eq(cfg.tiling)]
        m.d.comb += final.eq((cmd[DI].t >= left[DI]) & (cmd[DJ].t >= left[DJ])
                             & (cmd[DK].t >= left[DK]))
        held = Signal()                 # the accessor holds the last command's tile of B
        # A's cursors: the rows and the k tile's end of the last job, if it kept them all;
        # a job of the same rows whose k tile begins there reads its rows from them.
        kept_rows, kept_end = Signal(cmd[DI].shape()), Signal(engine.index_width + 1)
        have = Signal()
        use = Signal()
        m.d.comb += self.cursors.use.eq(use)
        with m.If(job_end):
            m.d.sync += job_done.eq(1)
        with m.FSM():
            with m.State("idle"), m.If(begin):
                m.d.sync += [logged.eq(0), held.eq(0), have.eq(0)]
                m.next = "config"
            with m.State("config"):
                m.d.comb += [self.busy.eq(1), tiling.config.valid.eq(1)]
                with m.If(tiling.config.ready):
                    m.next = "command"
            # A command that keeps B's tile reads the held one; any other has it evicted
            # first, so its fetch begins on an empty accessor.
            with m.State("command"):
                m.d.comb += self.busy.eq(1)
                with m.If(tiling.tile.valid & ~tiling.keep & held):
                    m.next = "evict"
                with m.Else():
                    m.d.comb += tiling.tile.ready.eq(1)
                    with m.If(tiling.tile.valid):
                        m.d.sync += [cmd.eq(tiling.tile.payload), held.eq(1)]
                        m.next = "log"
            with m.State("log"):
                m.d.comb += [self.busy.eq(1), log.valid.eq(1)]
                with m.If(log.ready):
                    m.d.sync += logged.eq(logged + 1)
                    m.next = "job"
            with m.State("job"):
                m.d.comb += [self.busy.eq(1), job.valid.eq(1)]
                with m.If(job.ready):
                    m.d.comb += self.cursors.start.eq(1)
                    m.d.sync += [row.eq(cmd[DI].begin), job_done.eq(0),
                                 use.eq(have & (kept_rows.begin == cmd[DI].begin)
                                        & (kept_rows.t == cmd[DI].t)
                                        & (kept_end == cmd[DK].begin)),
                                 kept_rows.eq(cmd[DI]), kept_end.eq(krange.hi),
                                 have.eq(extent[DI] <= self.cursor_rows)]
                    m.next = "rows"
            with m.State("rows"):
                m.d.comb += [self.busy.eq(1), ask.valid.eq(1)]
                with m.If(ask.ready):
                    m.d.sync += row.eq(row + 1)
                    with m.If(row + 1 == cmd[DI].begin + extent[DI]):
                        m.next = "drain"
            with m.State("drain"):
                m.d.comb += self.busy.eq(1)
                with m.If(job_done & final):
                    m.next = "evict"
                with m.Elif(job_done):
                    m.next = "command"
            with m.State("evict"):
                m.d.comb += [self.busy.eq(1), evict.valid.eq(1)]
                with m.If(evict.ready):
                    m.d.sync += held.eq(0)
                    m.next = "command"
                    with m.If(final):
                        m.next = "idle"
        return job_end & final
