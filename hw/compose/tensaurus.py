# amaranth: UnusedElaboratable=no
"""Tensaurus (Section 5, Fig. 5a): an ``rows x cols`` array of PEs fed by a TLU and
scratchpads, its results gathered by an MSU, wired only through the units' interfaces.

A run is a sequence of tiles (Section 5.1): each loads its rows of the operand matrices
(the MLU into one half of every column's scratchpad), then streams its part of the tensor
(the TLU hands lane ``p`` of each CISS entry to PE row ``p``; each PE passes it on to the
next of its row, systolically) while the next tile loads into the other half. The MSU
sums the tiles' drains and, after the last tile, sends the output. The MSU holds every
output row: the output is not tiled.
PE ``(p, q)`` reads its column's scratchpad through port ``p`` and drains into the
MSU's input ``p * cols + q``; chunk ``t`` of PE column ``q`` is the row's chunk ``t *
cols + q``, in the scratchpads and in the output alike.

In TTMc (``Y[i, u, w] = sum B[j, u] C[k, w] A[i, j, k]``) the columns split C's rank
as above while B's row goes whole to every column (the MLU broadcasts it); a PE's OSR
holds ``olen = r1 * tlen`` chunks, chunk ``u * tlen + t`` for ``Y[i, u]``'s chunk ``t``,
and the MSU, built for ``olen`` chunks a PE, places it at the row's chunk ``(u * tlen +
t) * cols + q``: output row ``i`` is ``Y[i]`` flattened, ``u`` by ``u``.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from ...params import Param, check_params
from ...registry import block
from ..interfaces import TensaurusKernel, TensaurusSignature, spm_chunks
from ..tensaurus_mlu import TensaurusMlu
from ..tensaurus_msu import TensaurusMsu
from ..tensaurus_pe import TensaurusPe
from ..tensaurus_spm import TensaurusSpm
from ..tensaurus_tlu import TensaurusTlu


@block("tensaurus")
class Tensaurus(wiring.Component):
    """The Tensaurus accelerator: TLU, MLU, scratchpads, an ``rows x cols`` PE array and
    the MSU.

    Parameters
    ----------
    rows, cols : the PE array (r x c); CISS entries have ``rows`` lanes.
    vlen, tlen : each PE's lanes and chunks: a matrix row has ``R = tlen * cols * vlen``
        values.
    r1 : B's rank in TTMc (each PE's OSR holds ``r1 * tlen`` chunks).
    dw, iw, acc_width : bits of a value, an index and an accumulator.
    order : 3 for tensors (SpMTTKRP, SpTTMc and SpMM kernels), 2 for matrices (SpMM,
        SpMV).
    tags : the TLU's reads in flight.
    banks : banks of each scratchpad.
    spm_rows : matrix rows each scratchpad holds per operand.
    out_rows : output rows the MSU holds.
    addr_width : bits of a memory address.

    Members
    -------
    kernel, start, tensor_mem, matrix_mem, out, stats
        As :class:`~sparseforge.hw.interfaces.TensaurusSignature` says.

    Throughput: each PE one chunk operation a cycle while its scratchpad answers; the
    MLU one chunk a cycle while loading; the TLU one entry a cycle.
    """

    PARAMS = (Param("rows", 2, 1, 16, "PE rows (r)"), Param("cols", 2, 1, 16, "PE columns (c)"),
              Param("vlen", 2, 1, 16, "lanes of each PE (VLEN)"),
              Param("tlen", 2, 1, 64, "chunks of each PE's TSR (TLEN)"),
              Param("r1", 1, 1, 64, "B's rank in TTMc: the OSR holds r1 * tlen chunks"),
              Param("dw", 16, 2, 32, "bits of a value"), Param("iw", 16, 1, 32, "bits of an index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("order", 3, 2, 3, "tensor modes: 3, or 2 for matrices"),
              Param("tags", 8, 2, 256, "TLU reads in flight", pow2=True),
              Param("banks", 2, 1, 16, "banks of each scratchpad", pow2=True),
              Param("spm_rows", 64, 1, 1 << 16, "matrix rows a scratchpad holds per operand"),
              Param("out_rows", 64, 1, 1 << 20, "output rows the MSU holds"),
              Param("addr_width", 24, 1, 40, "bits of a memory address"))
    REPORT = ({"spm_rows": 64, "out_rows": 64},)
    PAPER = "Table 2 (28 nm): 2.3 mm2 for 8 x 8 PEs of VLEN 4"
    PARTS = (("PE", "tensaurus_pe", ("rows", "cols"), 27.2),
             ("SPM", "tensaurus_spm", ("cols",), 36.2 + 2.8),
             ("MSU", "tensaurus_msu", (), 33.0), ("TLU", "tensaurus_tlu", (), 0.4),
             ("MLU", "tensaurus_mlu", (), 0.4))
    """Table 2's components (the SPM with its crossbar): block, the parameters whose
    product counts its instances here, and the paper's share of the area in percent."""

    def __init__(self, rows=2, cols=2, vlen=2, tlen=2, r1=1, dw=16, iw=16, acc_width=32,
                 order=3, tags=8, banks=2, spm_rows=64, out_rows=64, addr_width=24):
        v = check_params(self.PARAMS, {
            "rows": rows, "cols": cols, "vlen": vlen, "tlen": tlen, "r1": r1, "dw": dw,
            "iw": iw,
            "acc_width": acc_width, "order": order, "tags": tags, "banks": banks,
            "spm_rows": spm_rows, "out_rows": out_rows, "addr_width": addr_width})
        for name, value in v.items():
            setattr(self, name, value)
        r, c = self.rows, self.cols
        self.tlu = TensaurusTlu(pes=r, dw=dw, iw=iw, order=order, tags=tags,
                                addr_width=addr_width)
        self.olen = r1 * tlen
        self.mlu = TensaurusMlu(cols=c, tlen=tlen, vlen=vlen, dw=dw, iw=iw,
                                addr_width=addr_width, b_chunks=-(-r1 // vlen))
        self.spms = [TensaurusSpm(ports=r, banks=banks, rows=spm_rows,
                                  tlen=spm_chunks(tlen, vlen, r1), vlen=vlen, dw=dw, iw=iw)
                     for _ in range(c)]
        # Each PE keeps enough operations in flight to cover its scratchpad's round trip.
        self.pes = [[TensaurusPe(vlen=vlen, tlen=tlen, r1=r1, dw=dw, iw=iw,
                                 acc_width=acc_width, order=order,
                                 queue=self.spms[0].latency + 2)
                     for _ in range(c)] for _ in range(r)]
        self.msu = TensaurusMsu(rows=r, cols=c, tlen=self.olen, vlen=vlen, iw=iw,
                                acc_width=acc_width, depth=out_rows)
        super().__init__(TensaurusSignature(r, c, vlen, tlen, dw, iw, acc_width, order, tags,
                                            addr_width, r1))

    def elaborate(self, platform):
        m = Module()
        tlu, mlu, msu = self.tlu, self.mlu, self.msu
        m.submodules.tlu, m.submodules.mlu, m.submodules.msu = tlu, mlu, msu
        wiring.connect(m, wiring.flipped(self.tensor_mem), tlu.mem)
        wiring.connect(m, wiring.flipped(self.matrix_mem), mlu.mem)
        wiring.connect(m, msu.out, wiring.flipped(self.out))
        for q, spm in enumerate(self.spms):
            m.submodules[f"spm{q}"] = spm
            wiring.connect(m, mlu.fills[q], spm.fill)
        for p, row in enumerate(self.pes):
            wiring.connect(m, tlu.lanes[p], row[0].lane)
            for q, pe in enumerate(row):
                m.submodules[f"pe{p}_{q}"] = pe
                m.d.comb += pe.kernel.eq(self.kernel)
                wiring.connect(m, pe.spm, self.spms[q].ports[p])
                wiring.connect(m, pe.drain, msu.drains[p * self.cols + q])
                if q + 1 < self.cols:
                    wiring.connect(m, pe.forward, row[q + 1].lane)
                else:
                    m.d.comb += pe.forward.ready.eq(1)
        self._control(m)
        return m

    def _control(self, m):
        """A run, tile by tile: a tile's matrices load into one half of the scratchpads
        while the tile before it computes from the other; a tile computes once it has
        loaded and the one before has ended (every PE's ``last`` drained and the MSU's
        inputs released). The MSU keeps its sums from tile to tile and sends them after
        the run's last tile."""
        tlu, mlu, msu, stats = self.tlu, self.mlu, self.msu, self.stats
        job_shape = self.start.payload.shape()
        l_job, c_job = Signal(job_shape), Signal(job_shape)
        l_half, c_half = Signal(), Signal()     # l_half flips with each tile: halves alternate
        loading, waiting, loaded = Signal(), Signal(), Signal()     # the load stage L
        computing, streaming = Signal(), Signal()                   # the compute stage C
        busy, closing = Signal(), Signal()      # a run goes; its last tile has been taken
        drains = [pe.drain for row in self.pes for pe in row]
        ended = Signal(len(drains))             # the PEs that drained their ``last``
        load_cycles, compute_cycles = Signal(32), Signal(32)

        take = self.start.valid & self.start.ready
        m.d.comb += [
            self.start.ready.eq(~loading & ~waiting & ~loaded & ~closing & ~stats.valid),
            stats.payload.load_cycles.eq(load_cycles),
            stats.payload.compute_cycles.eq(compute_cycles),
        ]
        with m.If(busy):
            with m.If(computing):
                m.d.sync += compute_cycles.eq(compute_cycles + 1)
            with m.Else():
                m.d.sync += load_cycles.eq(load_cycles + 1)
        with m.If(stats.ready):
            m.d.sync += stats.valid.eq(0)
        with m.If(take):
            m.d.sync += [l_job.eq(self.start.payload), l_half.eq(~l_half), loading.eq(1),
                         busy.eq(1), closing.eq(self.start.payload.last)]
            with m.If(~busy):
                m.d.sync += [load_cycles.eq(0), compute_cycles.eq(0)]

        # L: the MLU takes a start only once its previous load has been written whole.
        m.d.comb += [mlu.start.valid.eq(loading), mlu.start.payload.base0.eq(l_job.base0),
                     mlu.start.payload.rows0.eq(l_job.rows0),
                     mlu.start.payload.base1.eq(l_job.base1),
                     mlu.start.payload.rows1.eq(l_job.rows1),
                     mlu.start.payload.half.eq(l_half),
                     mlu.start.payload.broadcast.eq(self.kernel == TensaurusKernel.TTMC)]
        with m.If(mlu.start.valid & mlu.start.ready):
            m.d.sync += [loading.eq(0), waiting.eq(1)]
        with m.If(waiting & mlu.start.ready):
            m.d.sync += [waiting.eq(0), loaded.eq(1)]
        with m.If(loaded & ~computing):
            m.d.sync += [loaded.eq(0), computing.eq(1), streaming.eq(1), c_job.eq(l_job),
                         c_half.eq(l_half)]

        # C: stream the tile from its half; the MSU sends the output after the last.
        m.d.comb += [tlu.start.valid.eq(streaming), tlu.start.payload.base.eq(c_job.tensor_base),
                     tlu.start.payload.count.eq(c_job.entries),
                     msu.out_rows.eq(Mux(c_job.last, c_job.out_rows, 0))]
        for spm in self.spms:
            m.d.comb += spm.read_half.eq(c_half)
        with m.If(tlu.start.valid & tlu.start.ready):
            m.d.sync += streaming.eq(0)
        for n, drain in enumerate(drains):
            with m.If(drain.valid & drain.ready & drain.payload.last):
                m.d.sync += ended[n].eq(1)
        with m.If(computing & ~c_job.last & ended.all() & ~msu.closing):
            m.d.sync += [computing.eq(0), ended.eq(0)]
        with m.If(self.out.valid & self.out.ready & self.out.payload.last):
            m.d.sync += [computing.eq(0), ended.eq(0), busy.eq(0), closing.eq(0),
                         stats.valid.eq(1)]
