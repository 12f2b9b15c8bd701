# amaranth: UnusedElaboratable=no
"""Tensaurus (Section 5, Fig. 5a): an ``rows x cols`` array of PEs fed by a TLU and
scratchpads, its results gathered by an MSU, wired only through the units' interfaces.

A run is a sequence of tiles (Section 5.1): each loads its rows of the operand matrices
(the MLU into one half of every column's scratchpad), then streams its part of the tensor
(the TLU hands lane ``p`` of each CISS entry to PE row ``p``; each PE passes it on to the
next of its row, systolically) while the next tile loads into the other half. The MSU
sums the tiles' drains by output tile (Section 5.2.5): a run's output rows are split
into output tiles of at most ``out_rows`` rows, each the sum of its own input tiles, whose
slices are numbered from the output tile's first row; once an output tile's last input
tile has drained, the MSU writes it to memory from one half of its buffer while the next
output tile sums into the other.
PE ``(p, q)`` reads its column's scratchpad through port ``p`` and drains into the
MSU's input ``p * cols + q``; chunk ``t`` of PE column ``q`` is the row's chunk ``t *
cols + q``, in the scratchpads and in the output alike.

In TTMc (``Y[i, u, w] = sum B[j, u] C[k, w] A[i, j, k]``) the columns split C's rank
as above while B's row goes whole to every column (the MLU broadcasts it); a PE's OSR
holds ``olen = r1 * tlen`` chunks, chunk ``u * tlen + t`` for ``Y[i, u]``'s chunk ``t``,
and the MSU, built for ``olen`` chunks a PE, places it at the row's chunk ``(u * tlen +
t) * cols + q``: output row ``i`` is ``Y[i]`` flattened, ``u`` by ``u``.
"""

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ...core.params import Param, check_params
from ...core.registry import block
from ...sw.wire import TensaurusKernel
from ..interfaces import (
    MemoryWritePortSignature,
    TaggedMemoryPortSignature,
    ciss_entry_layout,
    mlu_start_layout,
    spm_chunks,
)
from ..stream_units import MemoryPortSignature
from ..tensaurus_control import TensaurusControl
from ..tensaurus_mlu import TensaurusMlu, mlu_word_layout
from ..tensaurus_msu import TensaurusMsu
from ..tensaurus_pe import TensaurusPe
from ..tensaurus_spm import TensaurusSpm
from ..tensaurus_tlu import TensaurusTlu


def tensaurus_job_layout(iw, addr_width):
    """A tile of a Tensaurus run: its part of the tensor (``entries`` words at
    ``tensor_base``: CISS entries or, with ``dense``, dense words of ``jn x kn`` a slice
    group, as :func:`~sparseforge.hw.tensaurus_tlu.tlu_start_layout` says), its rows of
    the operand matrices as :func:`~.interfaces.mlu_start_layout` says (the accelerator
    picks the half, the kernel says whether B is broadcast), its output tile (``out_rows``
    rows, written from word ``out_base``; its slices are numbered from the output tile's
    first row), ``closes`` on the output tile's last input tile (after it the output tile
    is written), and ``last`` on the run's final tile."""
    return data.StructLayout({"tensor_base": addr_width, "entries": addr_width,
                              "dense": 1, "jn": iw + 1, "kn": iw + 1,
                              **{name: field.shape for name, field in
                                 mlu_start_layout(iw, addr_width)
                                 if name not in ("half", "broadcast")},
                              "out_base": addr_width, "out_rows": iw + 1, "closes": 1,
                              "last": 1})


class TensaurusSignature(wiring.Signature):
    """The Tensaurus accelerator (Section 5, Fig. 5a), seen from it.

    - ``kernel`` (in, :class:`~sparseforge.sw.wire.TensaurusKernel`): held while a run goes.
    - ``start`` (stream in, :func:`tensaurus_job_layout`): a run's tiles, one item
      each; a tile is taken while the one before it computes (its matrices load into
      the scratchpads' other half), a run's first once the previous run's stats are
      taken.
    - ``tensor_mem`` (out, :class:`~.interfaces.TaggedMemoryPortSignature`): the TLU's
      CISS reads.
    - ``matrix_mem`` (out, :class:`~.interfaces.TaggedMemoryPortSignature`): the MLU's
      reads, a word of ``cols`` chunks each (:func:`~sparseforge.hw.tensaurus_mlu.
      mlu_word_layout`), answered in any order.
    - ``out_mem`` (out, :class:`~.interfaces.MemoryWritePortSignature`, a word of
      ``vlen`` accumulators a chunk, :func:`~sparseforge.sw.wire.tensaurus_out_word`):
      the output, each output tile once its last input tile has drained, row by row, each
      row ``r1 * tlen * cols`` chunks (in MTTKRP and MM the first ``tlen * cols`` hold
      it), row ``i``'s chunk ``g`` of an output tile at ``out_base + i * chunks + g``.
    - ``direct`` (in): held while a run goes: the run accumulates its output directly in
      memory (Section 5.2.5), as one output tile of all its rows, each drain added to its
      word there (read through ``out_read``, written through ``out_mem``; the output's
      words start at zero) instead of summed in the MSU's buffer.
    - ``out_read`` (out, :class:`~sparseforge.hw.stream_units.MemoryPortSignature`): the
      direct mode's reads of output words, in order.
    - ``stats`` (stream out): after each run's last write, its cycles from its first
      tile to that write split into those no tile computed, waiting for matrices to
      load (``load_cycles``), and the rest (``compute_cycles``); the next run starts once
      it is taken.
    """

    def __init__(self, rows, cols, vlen, dw, iw, acc_width, order, tags, addr_width):
        entry = ciss_entry_layout(rows, dw, iw, order)
        super().__init__({
            "kernel": In(TensaurusKernel),
            "start": In(stream.Signature(tensaurus_job_layout(iw, addr_width))),
            "tensor_mem": Out(TaggedMemoryPortSignature(addr_width, entry.size,
                                                        ceil_log2(tags))),
            "matrix_mem": Out(TaggedMemoryPortSignature(
                addr_width, mlu_word_layout(cols, vlen, dw).size, ceil_log2(tags))),
            "out_mem": Out(MemoryWritePortSignature(addr_width, vlen * acc_width)),
            "direct": In(1),
            "out_read": Out(MemoryPortSignature(addr_width, vlen * acc_width)),
            "stats": Out(stream.Signature(data.StructLayout({"load_cycles": 32,
                                                             "compute_cycles": 32}))),
        })


@block("tensaurus")
class Tensaurus(wiring.Component):
    """The Tensaurus accelerator: TLU, MLU, scratchpads, an ``rows x cols`` PE array and
    the MSU, run tile by tile by a :class:`~sparseforge.hw.tensaurus_control.TensaurusControl`.

    The control takes the run's tiles, starts the MLU and the TLU, picks the half the
    scratchpads read and hands each output tile to the MSU. One-bit inputs (``read_half``,
    ``broadcast``, ``kernel``, the MSU's ``writing`` and ``direct``) are assigned.

    Parameters
    ----------
    rows, cols : the PE array (r x c); CISS entries have ``rows`` lanes.
    vlen, tlen : each PE's lanes and chunks: a matrix row has ``R = tlen * cols * vlen`` values.
    r1 : B's rank in TTMc (each PE's OSR holds ``r1 * tlen`` chunks).
    dw, iw, acc_width : bits of a value, an index and an accumulator.
    order : 3 for tensors (SpMTTKRP, SpTTMc and SpMM kernels), 2 for matrices (SpMM, SpMV).
    tags : the TLU's reads in flight, the MLU's, and the MSU's in the direct mode (at
        most 64).
    banks : banks of each scratchpad.
    spm_rows : matrix rows each scratchpad holds per operand.
    out_rows : output rows each half of the MSU's double buffer holds: an output tile's
        rows at most.
    msu_banks : banks of the MSU's buffer, at most ``cols``: up to that many drains a cycle
        (1, the default, takes one a cycle and fits any array).
    addr_width : bits of a memory address.

    Members
    -------
    kernel, start, tensor_mem, matrix_mem, out_mem, direct, out_read, stats
        As :class:`~sparseforge.hw.compose.tensaurus.TensaurusSignature` says.

    Throughput: each PE one chunk operation a cycle while its scratchpad answers; the
    MLU one word of ``cols`` chunks a cycle while loading; the TLU one entry a cycle.

    Clock: below 100 MHz on the ECP5-25k (the synthesis report): the MSU's direct-mode
    skid through its head's handshake into a scratchpad's queue, or (seeds vary) a PE's
    pending phases into the next; three quarters routing, the units placed apart.
    """

    PARAMS = (Param("rows", 2, 1, 16, "PE rows (r)"), Param("cols", 2, 1, 16, "PE columns (c)"),
              Param("vlen", 2, 1, 16, "lanes of each PE (VLEN)"),
              Param("tlen", 2, 1, 64, "chunks of each PE's TSR (TLEN)"),
              Param("r1", 1, 1, 64, "B's rank in TTMc: the OSR holds r1 * tlen chunks"),
              Param("dw", 16, 2, 32, "bits of a value"), Param("iw", 16, 1, 32, "bits of an index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("order", 3, 2, 3, "tensor modes: 3, or 2 for matrices"),
              Param("tags", 8, 2, 256, "TLU, MLU and MSU reads in flight (each)", pow2=True),
              Param("banks", 2, 1, 16, "banks of each scratchpad", pow2=True),
              Param("spm_rows", 64, 1, 1 << 16, "matrix rows a scratchpad holds per operand"),
              Param("out_rows", 64, 1, 1 << 20, "output rows an MSU half holds"),
              Param("msu_banks", 1, 1, 16, "banks of the MSU's buffer, at most cols", pow2=True),
              Param("addr_width", 24, 1, 40, "bits of a memory address"))
    REPORT = ({"spm_rows": 64, "out_rows": 64},)
    PAPER = "Table 2 (28 nm): 2.3 mm2 for 8 x 8 PEs of VLEN 4"
    PARTS = (("PE", "pes", 27.2), ("SPM", "spms", 36.2 + 2.8), ("MSU", "msu", 33.0),
             ("TLU", "tlu", 0.4), ("MLU", "mlu", 0.4))
    """Table 2's components (the SPM with its crossbar): the attribute holding this
    composite's instances of each, and the paper's share of the area in percent."""

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        for name, value in v.items():
            setattr(self, name, value)
        r, c = self.rows, self.cols
        self.tlu = TensaurusTlu(pes=r, dw=self.dw, iw=self.iw, order=self.order, tags=self.tags,
                                addr_width=self.addr_width)
        self.olen = self.r1 * self.tlen
        self.mlu = TensaurusMlu(cols=c, tlen=self.tlen, vlen=self.vlen, dw=self.dw, iw=self.iw,
                                tags=self.tags,
                                addr_width=self.addr_width, b_chunks=-(-self.r1 // self.vlen))
        self.spms = [TensaurusSpm(ports=r, banks=self.banks, rows=self.spm_rows,
                                  tlen=spm_chunks(self.tlen, self.vlen, self.r1), vlen=self.vlen,
                                  dw=self.dw, iw=self.iw)
                     for _ in range(c)]
        # Each PE keeps enough operations in flight to cover its scratchpad's round trip.
        self.pes = [[TensaurusPe(vlen=self.vlen, tlen=self.tlen, r1=self.r1, dw=self.dw,
                                 iw=self.iw, acc_width=self.acc_width, order=self.order,
                                 queue=self.spms[0].latency + 2)
                     for _ in range(c)] for _ in range(r)]
        self.msu = TensaurusMsu(rows=r, cols=c, tlen=self.olen, vlen=self.vlen, iw=self.iw,
                                acc_width=self.acc_width, depth=self.out_rows,
                                banks=self.msu_banks, reads=min(self.tags, 64),
                                addr_width=self.addr_width)
        signature = TensaurusSignature(r, c, self.vlen, self.dw, self.iw, self.acc_width,
                                       self.order, self.tags, self.addr_width)
        self.control = TensaurusControl(signature, self.mlu.signature, self.tlu.signature,
                                        self.msu.signature)
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        tlu, mlu, msu, control = self.tlu, self.mlu, self.msu, self.control
        m.submodules.tlu, m.submodules.mlu, m.submodules.msu = tlu, mlu, msu
        m.submodules.control = control
        m.d.comb += control.kernel.eq(self.kernel)
        wiring.connect(m, wiring.flipped(self.start), control.start)
        wiring.connect(m, control.stats, wiring.flipped(self.stats))
        wiring.connect(m, control.load, mlu.start)
        wiring.connect(m, control.tensor, tlu.start)
        wiring.connect(m, control.msu_tile, msu.tiles)
        wiring.connect(m, msu.out_mem, wiring.flipped(self.out_mem))
        wiring.connect(m, msu.out_read, wiring.flipped(self.out_read))
        m.d.comb += [control.writing.eq(msu.writing), msu.direct.eq(self.direct)]
        wiring.connect(m, wiring.flipped(self.tensor_mem), tlu.mem)
        wiring.connect(m, wiring.flipped(self.matrix_mem), mlu.mem)
        for q, spm in enumerate(self.spms):
            m.submodules[f"spm{q}"] = spm
            m.d.comb += spm.read_half.eq(control.read_half)
            if self.rows > 1:
                m.d.comb += spm.broadcast.eq(control.broadcast)
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
        return m
