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
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...sw import wire
from ..csr_reader import CsrRowReader
from ..gustavson import Gustavson
from ..interfaces import MemoryWritePortSignature
from ..stream_units import MemoryPortSignature, Queue, Zip


def spgemm_config_layout(addr_width, iw):
    """What the registers give the engine: the tile list's words, A's rows, and where C's
    words and row lengths go (word addresses)."""
    return data.StructLayout({"tiles_count": addr_width,
                              "rows": iw + 1, "words_base": addr_width,
                              "lengths_base": addr_width})


class Spgemm(wiring.Component):
    """A Gustavson engine of ``pes`` PEs (its other parameters: ``cols``, ``lanes``,
    ``inflight``, ``index_width``, ``value_width``, ``acc_width``) reading and writing
    memory at word addresses of ``addr_width`` bits.

    Members
    -------
    config : In(:func:`spgemm_config_layout`), held while a run goes.
    start : In(1), a pulse starting a run; ``busy`` : Out(1), until its last job is sent.
    stats : Out(stream(1)), one item after the run's last write is taken.
    tiles, a_ptr, a_col, a_value, b_ptr0, b_col0, b_value0, ... : the in-order read
        ports (Out(MemoryPortSignature)), each an array of the run's from index 0;
        :attr:`reads` lists them in order as ``(member, word width, the register of the
        array's base without its _base)``.
    c_words, c_lengths : Out(MemoryWritePortSignature), C's words and row lengths.
    """

    def __init__(self, pes, addr_width, **engine):
        self.engine = Gustavson(pes=pes, **engine)
        e, A = self.engine, addr_width
        iw, vw = e.index_width, e.value_width
        self.addr_width = A
        self.word = self.engine.c.payload.shape()        # a word of C
        fields = {"col": iw, "value": vw}
        self.a_reader = CsrRowReader(index_width=iw, value_width=vw, addr_width=A,
                                     inflight=e.inflight)
        self.b_readers = [CsrRowReader(index_width=iw, value_width=vw, addr_width=A,
                                       inflight=e.inflight) for _ in range(pes)]
        self.zips = [Zip(A, fields) for _ in range(pes + 1)]
        arrays = (("ptr", "rowptr", A), ("col", "colid", iw), ("value", "values", vw))
        self.reads = [("tiles", wire.width(wire.gustavson_job(iw)), "tiles")]
        self.reads += [(f"a_{name}", w, f"a_{array}") for name, array, w in arrays]
        self.reads += [(f"b_{name}{p}", w, f"b_{array}") for p in range(pes)
                       for name, array, w in arrays]
        super().__init__({
            "config": In(spgemm_config_layout(A, iw)),
            "start": In(1), "busy": Out(1),
            "stats": Out(stream.Signature(1)),
            **{name: Out(MemoryPortSignature(A, w)) for name, w, _ in self.reads},
            "c_words": Out(MemoryWritePortSignature(A, self.word.size)),
            "c_lengths": Out(MemoryWritePortSignature(A, iw)),
        })

    def ports(self):
        """The in-order read ports, in :attr:`reads` order."""
        return [getattr(self, name) for name, _, _ in self.reads]

    def elaborate(self, platform):
        m = Module()
        engine, cfg, A = self.engine, self.config, self.addr_width
        iw = engine.index_width
        m.submodules.engine = engine
        readers = [self.a_reader, *self.b_readers]
        for k, (reader, zip_) in enumerate(zip(readers, self.zips, strict=True)):
            m.submodules[f"reader{k}"], m.submodules[f"zip{k}"] = reader, zip_
            wiring.connect(m, reader.elements, zip_.port)
            for field, port in (("ptr", reader.ptr), ("col", zip_.part("col")),
                                ("value", zip_.part("value"))):
                member = f"a_{field}" if k == 0 else f"b_{field}{k - 1}"
                wiring.connect(m, port, wiring.flipped(getattr(self, member)))
        for p, reader in enumerate(self.b_readers):
            wiring.connect(m, engine.b[p], reader.rows)
        begin = self.start & ~self.busy

        # -- the sequencer: a tile word, the engine's job, A's rows again ------------------
        addr, left, row = Signal(A), Signal(A), Signal(iw + 1)
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

        # -- A's answers as the engine's A stream ------------------------------------------
        answer, a = self.a_reader.rows.response, engine.a
        a_row = Signal(iw + 1)
        final = a_row + 1 == cfg.rows
        m.d.comb += [a.valid.eq(answer.valid), answer.ready.eq(a.ready),
                     a.payload.k.eq(answer.payload.col), a.payload.value.eq(answer.payload.value),
                     a.payload.row_end.eq(answer.payload.last),
                     a.payload.empty.eq(answer.payload.empty),
                     a.payload.last.eq(answer.payload.last & final)]
        with m.If(a.valid & a.ready & answer.payload.last):
            m.d.sync += a_row.eq(Mux(final, 0, a_row + 1))

        # -- the writer: C's words, and each row's length through a queue ------------------
        # (the queue keeps the two write ports' valids apart: the master's round robin
        # grants by valid, so a valid that waited on the other port's ready would loop)
        c, words = engine.c, self.c_words.request
        m.submodules.lengths = lengths = Queue(
            self.c_lengths.request.payload.shape(), depth=2, latency=1)
        wiring.connect(m, lengths.o, wiring.flipped(self.c_lengths.request))
        n, total, c_row = Signal(A), Signal(iw), Signal(A)
        tile_row, tiles_done, finished = Signal(iw + 1), Signal(A), Signal()
        end = c.payload.last
        m.d.comb += [words.payload.addr.eq(cfg.words_base + n), words.payload.data.eq(c.payload),
                     words.valid.eq(c.valid & (~end | lengths.i.ready)),
                     lengths.i.payload.addr.eq(cfg.lengths_base + c_row),
                     lengths.i.payload.data.eq(total + c.payload.count),
                     lengths.i.valid.eq(c.valid & end & words.ready),
                     c.ready.eq(words.ready & (~end | lengths.i.ready))]
        with m.If(c.valid & c.ready):
            m.d.sync += [n.eq(n + 1), total.eq(Mux(end, 0, total + c.payload.count))]
            with m.If(end):
                m.d.sync += [c_row.eq(c_row + 1), tile_row.eq(tile_row + 1)]
                with m.If(tile_row + 1 == cfg.rows):
                    m.d.sync += [tile_row.eq(0), tiles_done.eq(tiles_done + 1)]
                    with m.If(tiles_done + 1 == cfg.tiles_count):
                        m.d.sync += finished.eq(1)
        m.d.comb += self.stats.valid.eq(finished & ~lengths.o.valid)
        with m.If(self.stats.valid & self.stats.ready):
            m.d.sync += finished.eq(0)
        with m.If(begin):
            m.d.sync += [a_row.eq(0), n.eq(0), total.eq(0), c_row.eq(0), tile_row.eq(0),
                         tiles_done.eq(0), finished.eq(0)]
        return m
